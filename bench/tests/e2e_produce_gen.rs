//! `skiff-bench produce` against an in-process broker over TCP, with a tiny volume: the stored
//! log must hold exactly what the generator says it wrote. Idempotent: every batch carries the
//! producer id InitProducerId returned, epoch 0, and base sequences gap-free per partition
//! from 0 (the warm-up batch) with offsets equal to sequences (one producer, fresh topic).
//! Not idempotent: producer id and sequences -1. Small batches and 2 partitions so that each
//! partition takes several batches and several requests are in flight at once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::process::Command;

use skiff_testkit::Conn;
use skiff_testkit::client::records_of;
use skiff_testkit::in_process::Harness;

const PARTITIONS: i32 = 2;
const RECORDS: u64 = 300;
const RECORD_BYTES: usize = 200;

/// This test's reads on a [`Conn`].
trait Batches {
    fn batches(&mut self, topic: &str, partition: i32) -> Vec<(i64, i32, i64, i16, i32)>;
    fn raw_batches(&mut self, topic: &str, partition: i32) -> Vec<Vec<u8>>;
}

impl Batches for Conn {
    /// Every batch of a partition as (base offset, records, producer id, epoch, base sequence).
    fn batches(&mut self, topic: &str, partition: i32) -> Vec<(i64, i32, i64, i16, i32)> {
        self.raw_batches(topic, partition)
            .iter()
            .map(|b| {
                let v = skiff_record::BatchView::new(b).unwrap();
                (
                    v.base_offset(),
                    v.records_count(),
                    v.producer_id(),
                    v.producer_epoch(),
                    v.base_sequence(),
                )
            })
            .collect()
    }

    /// Every batch of a partition, its bytes.
    fn raw_batches(&mut self, topic: &str, partition: i32) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut offset = 0i64;
        loop {
            let p = &self.fetch(topic, partition, offset, 8 << 20);
            assert_eq!(p.error_code, 0);
            let bytes = records_of(p);
            let before = out.len();
            for b in skiff_record::batches(&bytes) {
                let (_, v) = b.unwrap();
                if v.base_offset() < offset {
                    continue;
                }
                out.push(v.bytes().to_vec());
                offset = v.next_offset();
            }
            if out.len() == before || offset >= p.high_watermark {
                return out;
            }
        }
    }
}

/// Runs the generator; returns its `produce:` line as key -> value.
fn generate(addr: SocketAddr, topic: &str, idempotent: bool) -> Vec<(String, String)> {
    generate_with(
        addr,
        topic,
        if idempotent { &["--idempotent"] } else { &[] },
    )
}

fn generate_with(addr: SocketAddr, topic: &str, extra: &[&str]) -> Vec<(String, String)> {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_skiff-bench"));
    cmd.args([
        "produce",
        "--bootstrap",
        &addr.to_string(),
        "--topic",
        topic,
    ])
    .args(["--records", &RECORDS.to_string()])
    .args(["--record-bytes", &RECORD_BYTES.to_string()])
    .args(["--batch-size", "2048", "--max-request-size", "2500"])
    .args(["--max-in-flight", "5"]);
    cmd.args(extra);
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "generator failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("produce: "))
        .unwrap_or_else(|| panic!("no produce line in {stdout:?}"));
    line.split_whitespace()
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap();
            (k.to_string(), v.to_string())
        })
        .collect()
}

fn field<'a>(kv: &'a [(String, String)], key: &str) -> &'a str {
    &kv.iter().find(|(k, _)| k == key).unwrap().1
}

fn run(idempotent: bool) {
    let mut h = Harness::start(|_| {});
    let addr = h.addr;
    let topic = if idempotent { "gen-on" } else { "gen-off" };
    let mut c = Conn::open_as(addr, "e2e-produce-gen");
    c.create_topic(topic, PARTITIONS, &[]);

    let kv = generate(addr, topic, idempotent);
    let pid: i64 = field(&kv, "producer_id").parse().unwrap();
    let requests: u64 = field(&kv, "requests").parse().unwrap();
    let per_batch: i32 = field(&kv, "records_per_batch").parse().unwrap();
    assert_eq!(field(&kv, "records"), RECORDS.to_string());
    assert!(
        per_batch > 1 && per_batch < 10,
        "records per batch {per_batch}"
    );
    if idempotent {
        assert!(pid >= 0, "producer id {pid}");
    } else {
        assert_eq!(pid, -1);
    }
    // max.request.size fits one batch: one batch per request, so far more requests than the
    // 5 in flight.
    assert!(requests > 20, "{requests} requests");

    let mut total = 0u64;
    for p in 0..PARTITIONS {
        let batches = c.batches(topic, p);
        assert!(
            batches.len() > 5,
            "partition {p}: {} batches",
            batches.len()
        );
        // Warm-up batch of one record first.
        assert_eq!(batches[0].1, 1, "partition {p} warm-up batch");
        let mut next = 0i64;
        for &(base, count, bpid, epoch, seq) in &batches {
            assert_eq!(base, next, "partition {p}: offsets gap-free");
            assert_eq!(bpid, pid, "partition {p}: producer id");
            if idempotent {
                assert_eq!(epoch, 0);
                assert_eq!(i64::from(seq), base, "partition {p}: sequence = offset");
            } else {
                assert_eq!((epoch, seq), (-1, -1));
            }
            assert!(count <= per_batch);
            next = base + i64::from(count);
            total += count as u64;
        }
    }
    assert_eq!(total, RECORDS + PARTITIONS as u64, "every record once");
    drop(c);
    h.shutdown();
}

#[test]
fn e2e_idempotent_generator_writes_gap_free_sequences() {
    run(true);
}

#[test]
fn e2e_plain_generator_writes_no_producer_id() {
    run(false);
}

/// `--keys 7 --delay-percent 25 --delay-ms 123456`: every record has a key of the 7-key space,
/// keys cycle in production order (each partition's records are contiguous runs of that
/// order), and exactly the first record of every 4th timed batch carries
/// `__delay_ms: 123456`; the warm-up batches carry no header. (The broker's default topic
/// config has delays off, so the headers are stored as sent.)
#[test]
fn e2e_generator_keys_and_delay_headers() {
    let mut h = Harness::start(|_| {});
    let addr = h.addr;
    let topic = "gen-keys";
    let mut c = Conn::open_as(addr, "e2e-produce-gen");
    c.create_topic(topic, PARTITIONS, &[]);
    let kv = generate_with(
        addr,
        topic,
        &[
            "--keys",
            "7",
            "--delay-percent",
            "25",
            "--delay-ms",
            "123456",
        ],
    );
    let batches: u64 = field(&kv, "batches").parse().unwrap();
    let delayed: u64 = field(&kv, "delayed_batches").parse().unwrap();
    assert!(batches > 20, "{batches} batches");
    assert_eq!(delayed, batches / 4, "every 4th batch");

    let (mut seen_delayed, mut keys, mut total) = (0u64, std::collections::BTreeSet::new(), 0);
    for p in 0..PARTITIONS {
        let raw = c.raw_batches(topic, p);
        for (i, b) in raw.iter().enumerate() {
            let v = skiff_record::BatchView::new(b).unwrap();
            let data = v.records_data(usize::MAX).unwrap();
            let recs: Vec<_> = skiff_record::records(&data, v.records_count())
                .map(|r| r.unwrap())
                .collect();
            let mut prev: Option<u64> = None;
            for (j, r) in recs.iter().enumerate() {
                let key = std::str::from_utf8(r.key.expect("a key")).unwrap();
                let k: u64 = key.strip_prefix('k').unwrap().parse().unwrap();
                assert!(k < 7, "{key}");
                if let Some(pk) = prev {
                    assert_eq!(k, (pk + 1) % 7, "keys cycle within a batch");
                }
                prev = Some(k);
                keys.insert(k);
                total += 1;
                if j == 0 && !r.headers.is_empty() {
                    assert!(i > 0, "partition {p}: the warm-up batch has no header");
                    assert_eq!(r.headers.len(), 1);
                    assert_eq!(r.headers[0].key, b"__delay_ms");
                    assert_eq!(r.headers[0].value, Some(&b"123456"[..]));
                    seen_delayed += 1;
                } else {
                    assert!(r.headers.is_empty(), "only a batch's first record");
                }
            }
        }
    }
    assert_eq!(seen_delayed, delayed, "delayed batches stored");
    assert_eq!(keys.len(), 7);
    assert_eq!(total, RECORDS + PARTITIONS as u64);
    drop(c);
    h.shutdown();
}
