//! Startup safety of the `skiff` binary (issue 12 items 1, 2, 5, 10), each over the real binary:
//! - a second broker on a log dir another broker holds exits 2 naming the dir and the holder's
//!   pid, and touches nothing (the first keeps producing and fetching; no clean-shutdown
//!   marker appears), also when only the second of two log dirs is held;
//! - a TLS/SASL listener or an authorizer is a configuration error (exit 2), not a plaintext
//!   broker;
//! - a log dir with partition data but without (or with a garbled) `meta.properties` is refused
//!   (exit 2, the fix in the message) instead of being adopted under a new cluster id;
//! - after the metadata log lost its tail (the last ProducerIdsRecord), a new idempotent
//!   producer gets an id above every id the partitions' producer state knows, and its first
//!   batch is accepted.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use bytes::Bytes;
use skiff_testkit::{Broker, BrokerBuilder, Conn};

const TOPIC: &str = "safe";

/// A broker on `dirs` with extra `KEY=VALUE` overrides.
fn serve(dirs: &[&Path], extra: &[&str]) -> BrokerBuilder {
    let mut b = Broker::builder()
        .binary(env!("CARGO_BIN_EXE_skiff"))
        .log_dirs(dirs)
        .rust_log("warn");
    for e in extra {
        let (k, v) = e.split_once('=').unwrap();
        b = b.set(k, v);
    }
    b
}

fn spawn(dirs: &[&Path]) -> Broker {
    serve(dirs, &[]).start()
}

/// Runs a broker that must refuse to start: its exit code (`None` if it was still running
/// after the deadline, then killed) and its stderr.
fn run_refused(b: &mut BrokerBuilder) -> (Option<i32>, String) {
    let r = b.run_refused();
    (r.code, r.stderr)
}

fn sigterm(mut b: Broker) {
    let status = b.sigterm();
    assert!(status.success(), "{status:?}");
}

/// This test's calls on a [`Conn`].
trait Safe {
    fn produce_one(&mut self, pid: i64, seq: i32, value: &str) -> (i16, i64);
    fn values(&mut self) -> Vec<String>;
}

impl Safe for Conn {
    /// Produces one record `value` (idempotent when `pid >= 0`): (error code, base offset).
    fn produce_one(&mut self, pid: i64, seq: i32, value: &str) -> (i16, i64) {
        let mut b = skiff_record::BatchBuilder::new(skiff_record::BatchOptions {
            producer_id: pid,
            producer_epoch: if pid >= 0 { 0 } else { -1 },
            base_sequence: if pid >= 0 { seq } else { -1 },
            ..skiff_record::BatchOptions::default()
        });
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64;
        b.append(now, None, Some(value.as_bytes()), &[]);
        Conn::produce(self, TOPIC, 0, Bytes::from(b.build().unwrap()))
    }

    /// Every record value of the partition, in offset order.
    fn values(&mut self) -> Vec<String> {
        let p = &self.fetch(TOPIC, 0, 0, 1 << 20);
        assert_eq!(p.error_code, 0);
        let bytes = p
            .records
            .as_ref()
            .and_then(|r| r.as_bytes())
            .cloned()
            .unwrap_or_default();
        let mut out = Vec::new();
        for b in skiff_record::batches(&bytes) {
            let (_, view) = b.unwrap();
            let data = view.records_data(1 << 20).unwrap();
            for r in skiff_record::records(&data, view.records_count()) {
                out.push(String::from_utf8(r.unwrap().value.unwrap().to_vec()).unwrap());
            }
        }
        out
    }
}

/// issue 12 item 1: a second broker on a live broker's log dir exits 2 naming the dir and
/// the live broker's pid; the live broker's files are untouched and it keeps serving.
#[test]
fn e2e_second_broker_on_the_same_log_dir_exits_2_and_the_first_is_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let first = spawn(&[&data]);
    let mut c = Conn::open(first.port());
    c.create_topic(TOPIC, 1, &[]);
    assert_eq!(c.produce_one(-1, 0, "before").0, 0);
    let meta = std::fs::read(data.join("meta.properties")).unwrap();

    let (code, err) = run_refused(&mut serve(&[&data], &[]));
    assert_eq!(code, Some(2), "the second broker must refuse: {err}");
    let lock = std::fs::read_to_string(data.join(".lock")).unwrap();
    assert_eq!(lock.trim(), first.pid().to_string(), "the holder's pid");
    assert!(err.contains(&data.display().to_string()), "{err}");
    assert!(err.contains(&format!("pid {}", first.pid())), "{err}");
    assert!(
        !data.join(".kafka_cleanshutdown").exists(),
        "no clean-shutdown marker written"
    );
    assert_eq!(std::fs::read(data.join("meta.properties")).unwrap(), meta);

    // The first broker still produces and fetches.
    assert_eq!(c.produce_one(-1, 0, "after"), (0, 1));
    assert_eq!(c.values(), ["before", "after"]);
    drop(c);
    sigterm(first);
    assert!(data.join(".kafka_cleanshutdown").exists());
    // Released at exit: the dir starts again.
    let again = spawn(&[&data]);
    assert_eq!(Conn::open(again.port()).values(), ["before", "after"]);
    sigterm(again);
}

/// issue 12 item 1: with two log dirs of which only the second is held by another broker, the
/// start is refused naming the second dir; the first dir is neither formatted nor recovered.
#[test]
fn e2e_only_the_second_log_dir_locked_exits_2() {
    let tmp = tempfile::tempdir().unwrap();
    let (d1, d2) = (tmp.path().join("d1"), tmp.path().join("d2"));
    let holder = spawn(&[&d2]);
    let (code, err) = run_refused(&mut serve(&[&d1, &d2], &[]));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains(&d2.display().to_string()), "{err}");
    assert!(err.contains(&format!("pid {}", holder.pid())), "{err}");
    assert!(!d1.join("meta.properties").exists(), "d1 untouched");
    assert!(!d1.join("__cluster_metadata-0").exists(), "d1 untouched");
    sigterm(holder);
}

/// issue 12 item 2, issue 19: security Skiff cannot honour is a configuration error, never a
/// broker less safe than configured: a SASL listener left with GSSAPI only (Kafka's default),
/// a TLS listener without its key, an authorizer other than the StandardAuthorizer, a Java
/// principal builder. Nothing is written.
#[test]
fn e2e_unimplemented_security_exits_2() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    // (overrides, words the message must contain)
    let cases: [(&[&str], &[&str]); 4] = [
        (
            &[
                "listeners=SASL_SSL://127.0.0.1:0",
                "ssl.client.auth=required",
            ],
            &["sasl.enabled.mechanisms", "SASL_SSL", "GSSAPI"],
        ),
        (
            &[
                "listener.security.protocol.map=PLAINTEXT:SSL",
                "ssl.keystore.type=PEM",
            ],
            &["listener PLAINTEXT", "ssl.keystore.location"],
        ),
        (
            &["authorizer.class.name=kafka.security.authorizer.AclAuthorizer"],
            &[
                "authorizer.class.name",
                "removed in Kafka 4",
                "StandardAuthorizer",
            ],
        ),
        (
            &["principal.builder.class=com.example.MyBuilder"],
            &["principal.builder.class", "Java plugin"],
        ),
    ];
    for (overrides, needles) in cases {
        let (code, err) = run_refused(&mut serve(&[&data], overrides));
        assert_eq!(code, Some(2), "{overrides:?}: {err}");
        for n in needles {
            assert!(err.contains(n), "{overrides:?}: {err}");
        }
    }
    assert!(!data.exists(), "nothing was written");
}

/// issue 12 item 5: a log dir holding partition data without (or with a garbled)
/// meta.properties is refused with the fix in the message and left untouched; with the file
/// restored the broker starts with its data.
#[test]
fn e2e_data_without_meta_properties_exits_2() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let b = spawn(&[&data]);
    let mut c = Conn::open(b.port());
    c.create_topic(TOPIC, 1, &[]);
    assert_eq!(c.produce_one(-1, 0, "kept").0, 0);
    drop(c);
    sigterm(b);
    let meta = std::fs::read(data.join("meta.properties")).unwrap();

    std::fs::remove_file(data.join("meta.properties")).unwrap();
    let (code, err) = run_refused(&mut serve(&[&data], &[]));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("No `meta.properties` found"), "{err}");
    assert!(err.contains(&data.display().to_string()), "{err}");
    assert!(err.contains("Restore"), "the fix is in the message: {err}");
    assert!(
        !data.join("meta.properties").exists(),
        "no new cluster id written"
    );

    std::fs::write(data.join("meta.properties"), "garbage\n").unwrap();
    let (code, err) = run_refused(&mut serve(&[&data], &[]));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("meta.properties has no cluster.id"), "{err}");
    assert_eq!(
        std::fs::read(data.join("meta.properties")).unwrap(),
        b"garbage\n"
    );

    std::fs::write(data.join("meta.properties"), &meta).unwrap();
    let b = spawn(&[&data]);
    assert_eq!(Conn::open(b.port()).values(), ["kept"]);
    sigterm(b);
    assert_eq!(std::fs::read(data.join("meta.properties")).unwrap(), meta);
}

/// Cuts the metadata log's last segment before its last batch (the lost tail).
fn drop_last_metadata_batch(data: &Path) {
    let dir = data.join("__cluster_metadata-0");
    let mut logs: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    logs.sort();
    let last = logs.last().unwrap();
    let bytes = std::fs::read(last).unwrap();
    let starts: Vec<usize> = skiff_record::batches(&bytes)
        .map(|b| b.unwrap().0)
        .collect();
    let cut = *starts.last().expect("a metadata batch");
    let f = std::fs::OpenOptions::new().write(true).open(last).unwrap();
    f.set_len(cut as u64).unwrap();
    f.sync_all().unwrap();
}

/// issue 12 item 10: the metadata log loses its tail (the ProducerIdsRecord of the block the
/// first producer's id came from); after the restart a new idempotent producer gets a larger
/// id than the one the partition's producer state knows, and its first batch is accepted
/// (the reused id would fail with OUT_OF_ORDER_SEQUENCE_NUMBER).
#[test]
fn e2e_producer_ids_are_not_reused_after_the_metadata_tail_is_lost() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let b = spawn(&[&data]);
    let mut c = Conn::open(b.port());
    c.create_topic(TOPIC, 1, &[]);
    let old = c.init_producer_id();
    for seq in 0..3 {
        assert_eq!(
            c.produce_one(old, seq, &format!("old-{seq}")),
            (0, i64::from(seq))
        );
    }
    drop(c);
    sigterm(b);
    drop_last_metadata_batch(&data);

    let b = spawn(&[&data]);
    let mut c = Conn::open(b.port());
    let new = c.init_producer_id();
    assert!(
        new > old,
        "producer id {new} reused (the old producer had {old})"
    );
    assert_eq!(
        c.produce_one(new, 0, "new-0"),
        (0, 3),
        "a new producer's first batch"
    );
    assert_eq!(c.values(), ["old-0", "old-1", "old-2", "new-0"]);
    drop(c);
    sigterm(b);
}
