//! Idempotent-producer state across restarts of the `skiff` binary (issue 5): one producer
//! writes batches, the broker is stopped cleanly (SIGTERM) or killed (`kill -9`) and started
//! again on the same log dir. Then a replay of the batches before the restart is deduplicated
//! (same offsets, nothing appended), a sequence gap is still refused (the state is really
//! known, not merely "unknown producer, any sequence accepted"), the next batch is accepted at
//! the next offset, and every record is read back exactly once.
//!
//! The partition uses 1 MiB segments and batches of ~100 KiB, so the log rolls (a snapshot is
//! written at each roll) and the last batches lie after the newest roll snapshot: after a
//! kill -9 the state comes from that snapshot plus a replay of the log after it; after SIGTERM
//! from the snapshot written at close.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use bytes::Bytes;
use skiff_protocol::*;
use skiff_testkit::{Broker, Conn};

const TOPIC: &str = "idem";
/// Records per batch and the size of each value: ~100 KiB batches, rolls at 1 MiB.
const PER_BATCH: usize = 4;
const VALUE_LEN: usize = 25_000;
const OUT_OF_ORDER_SEQUENCE_NUMBER: i16 = 45;

fn spawn(data: &Path) -> Broker {
    Broker::builder()
        .binary(env!("CARGO_BIN_EXE_skiff"))
        .log_dirs(&[data])
        .rust_log("warn")
        .start()
}

fn sigterm(mut b: Broker) {
    assert!(b.sigterm().success());
}

fn kill9(mut b: Broker) {
    let status = b.kill9();
    assert!(!status.success(), "killed, not exited: {status:?}");
}

/// This test's calls on a [`Conn`].
trait Idem {
    fn produce_nth(&mut self, pid: i64, n: usize) -> (i16, i64);
    fn produce_at(&mut self, pid: i64, n: usize, seq: i32) -> (i16, i64);
    fn read_all(&mut self) -> Vec<(i64, usize, usize)>;
    fn describe_producer(&mut self) -> Vec<(i64, i32, i32)>;
}

impl Idem for Conn {
    /// Produces batch number `n` of producer `pid` (sequence `n * PER_BATCH`): (error, base).
    fn produce_nth(&mut self, pid: i64, n: usize) -> (i16, i64) {
        self.produce_at(pid, n, (n * PER_BATCH) as i32)
    }

    fn produce_at(&mut self, pid: i64, n: usize, seq: i32) -> (i16, i64) {
        Conn::produce(self, TOPIC, 0, batch(pid, seq, n))
    }

    /// Every record of the partition as (offset, batch number, index in batch).
    fn read_all(&mut self) -> Vec<(i64, usize, usize)> {
        let mut out = Vec::new();
        let mut offset = 0i64;
        loop {
            let p = &self.fetch(TOPIC, 0, offset, 8 << 20);
            assert_eq!(p.error_code, 0);
            let bytes = p
                .records
                .as_ref()
                .and_then(|r| r.as_bytes())
                .cloned()
                .unwrap_or_default();
            let before = out.len();
            for b in skiff_record::batches(&bytes) {
                let (_, view) = b.unwrap();
                let data = view.records_data(16 << 20).unwrap();
                for r in skiff_record::records(&data, view.records_count()) {
                    let r = r.unwrap();
                    let o = view.base_offset() + i64::from(r.offset_delta);
                    if o < offset {
                        continue;
                    }
                    let key = String::from_utf8(r.key.unwrap().to_vec()).unwrap();
                    let (n, i) = key.split_once('/').unwrap();
                    out.push((o, n.parse().unwrap(), i.parse().unwrap()));
                    offset = o + 1;
                }
            }
            if out.len() == before || offset >= p.high_watermark {
                return out;
            }
        }
    }

    fn describe_producer(&mut self) -> Vec<(i64, i32, i32)> {
        let req = DescribeProducersRequest {
            topics: vec![DescribeProducersRequestTopicRequest {
                name: TOPIC.into(),
                partition_indexes: vec![0],
            }],
        };
        let ResponseBody::DescribeProducers(r) = self.call(0, req) else {
            panic!()
        };
        let p = &r.topics[0].partitions[0];
        assert_eq!(p.error_code, 0);
        p.active_producers
            .iter()
            .map(|s| (s.producer_id, s.producer_epoch, s.last_sequence))
            .collect()
    }
}

/// Batch `n` of producer `pid` at sequence `seq`: keys "n/i", values of VALUE_LEN bytes.
fn batch(pid: i64, seq: i32, n: usize) -> Bytes {
    let mut b = skiff_record::BatchBuilder::new(skiff_record::BatchOptions {
        producer_id: pid,
        producer_epoch: 0,
        base_sequence: seq,
        ..skiff_record::BatchOptions::default()
    });
    let value = vec![b'a' + (n % 26) as u8; VALUE_LEN];
    // A recent timestamp: producers idle (by their last batch's timestamp) for longer than
    // producer.id.expiration.ms are dropped when the state is loaded, as in Kafka.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    for i in 0..PER_BATCH {
        b.append(now, Some(format!("{n}/{i}").as_bytes()), Some(&value), &[]);
    }
    Bytes::from(b.build().unwrap())
}

fn snapshot_offsets(dir: &Path) -> Vec<i64> {
    let mut v: Vec<i64> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".snapshot")?.parse().ok()
        })
        .collect();
    v.sort_unstable();
    v
}

fn partition_dir(data: &Path) -> PathBuf {
    data.join(format!("{TOPIC}-0"))
}

/// Writes `batches` batches; returns the producer id and each batch's base offset.
fn write_before_restart(data: &Path, batches: usize) -> (Broker, i64, Vec<i64>) {
    let b = spawn(data);
    let mut c = Conn::open(b.port());
    c.create_topic(TOPIC, 1, &[("segment.bytes", "1048576")]);
    let pid = c.init_producer_id();
    let mut bases = Vec::new();
    for n in 0..batches {
        let (code, base) = c.produce_nth(pid, n);
        assert_eq!(code, 0, "batch {n}");
        assert_eq!(base, (n * PER_BATCH) as i64);
        bases.push(base);
    }
    (b, pid, bases)
}

/// After the restart: replays of the batch before the restart (and of `also_replayed`) are
/// deduplicated, a gap is refused, the next batch is accepted, and every record is there
/// exactly once.
fn check_after_restart(data: &Path, pid: i64, bases: &[i64], also_replayed: &[usize]) {
    let b = spawn(data);
    let mut c = Conn::open(b.port());
    let batches = bases.len();
    let last_seq = (batches * PER_BATCH - 1) as i32;
    assert_eq!(c.describe_producer(), vec![(pid, 0, last_seq)]);
    // Replays of the last batch before the restart (twice) and of older remembered ones.
    let mut replays = vec![batches - 1];
    replays.extend_from_slice(also_replayed);
    replays.push(batches - 1);
    for n in replays {
        assert_eq!(c.produce_nth(pid, n), (0, bases[n]), "replay of batch {n}");
    }
    // The state is known: skipping a batch is a gap.
    let (code, _) = c.produce_at(pid, batches, (batches * PER_BATCH + 1) as i32);
    assert_eq!(code, OUT_OF_ORDER_SEQUENCE_NUMBER);
    // The next batch is accepted at the next offset, then deduplicated in turn.
    let next = (batches * PER_BATCH) as i64;
    assert_eq!(c.produce_nth(pid, batches), (0, next));
    assert_eq!(c.produce_nth(pid, batches), (0, next));
    let got = c.read_all();
    let want: Vec<(i64, usize, usize)> = (0..=batches)
        .flat_map(|n| (0..PER_BATCH).map(move |i| ((n * PER_BATCH + i) as i64, n, i)))
        .collect();
    assert_eq!(got.len(), want.len(), "one copy of each record");
    assert_eq!(got, want);
    drop(c);
    sigterm(b);
}

#[test]
fn e2e_idempotent_producer_state_survives_a_clean_restart() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (b, pid, bases) = write_before_restart(&data, 14);
    sigterm(b);
    // Clean close snapshots the state at the log end. A Kafka snapshot holds each producer's
    // LAST batch only, so that is the one a retry can still match after a clean restart.
    let end = (14 * PER_BATCH) as i64;
    let snaps = snapshot_offsets(&partition_dir(&data));
    assert_eq!(snaps.last(), Some(&end), "snapshots {snaps:?}");
    check_after_restart(&data, pid, &bases, &[]);
}

#[test]
fn e2e_idempotent_producer_state_survives_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (b, pid, bases) = write_before_restart(&data, 14);
    kill9(b);
    // The newest snapshot is the roll's: of the last 5 batches, the oldest is in it and the
    // newest lies after it (recovered by replaying the log).
    let snaps = snapshot_offsets(&partition_dir(&data));
    let newest = *snaps
        .last()
        .expect("a snapshot written at the segment roll");
    assert!(
        bases[14 - 5] < newest && newest <= bases[14 - 1],
        "snapshots {snaps:?}, batch bases {bases:?}"
    );
    // Batch 9 is the snapshot's last batch, 10-13 are replayed from the log: all 5 remembered.
    check_after_restart(&data, pid, &bases, &[14 - 5, 14 - 3]);
}
