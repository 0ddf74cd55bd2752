//! Tests of flat combining: a grouped append answers and writes exactly what one-by-one
//! appends do (offsets, duplicates, refusals, rolls, bytes on disk), and the combiner answers
//! every job once, with its own answer, under contention.

use std::sync::atomic::{AtomicUsize, Ordering};

use skiff_record::{BatchBuilder, BatchOptions};
use skiff_types::TopicPartition;

use crate::combine::Combiner;
use crate::log_tests::log_bytes;
use crate::validate::{ValidatedBatch, ValidationConfig, validate_client_batch};
use crate::{AppendInfo, Log, LogConfig, LogOpenOptions};

fn open(dir: &std::path::Path, segment_bytes: u64) -> Log {
    let opts = LogOpenOptions {
        recovery_point: 0,
        log_start_offset: 0,
        high_watermark: 0,
        clean_shutdown: true,
        now_ms: 0,
    };
    let cfg = LogConfig {
        index_interval_bytes: 0,
        segment_bytes,
        ..LogConfig::default()
    };
    Log::open(dir, TopicPartition::new("t", 0), cfg, opts)
        .unwrap()
        .0
}

/// Batch `i`: 4 records; every third from producer 9 (sequence `seq`), the rest plain.
fn client_batch(i: i64, seq: Option<i32>) -> Vec<u8> {
    let mut b = BatchBuilder::new(BatchOptions {
        producer_id: if seq.is_some() { 9 } else { -1 },
        producer_epoch: if seq.is_some() { 0 } else { -1 },
        base_sequence: seq.unwrap_or(-1),
        ..BatchOptions::default()
    });
    for r in 0..4 {
        let v = format!("value-{i}-{r}-{}", "x".repeat((i as usize * 37) % 300));
        b.append(1000 + i * 10 + r, Some(b"k"), Some(v.as_bytes()), &[]);
    }
    b.build().unwrap()
}

/// Plain batches, an idempotent producer with a retry (duplicate) inside the group and a
/// sequence gap (refused), in groups of 1..=7, with segments small enough to roll inside a
/// group: the grouped log answers and holds exactly what the one-by-one log does.
#[test]
fn grouped_append_matches_one_by_one_appends() {
    let cfg = ValidationConfig::default();
    let mut clients = Vec::new();
    let mut seq = 0;
    for i in 0..60i64 {
        let s = if i % 3 == 0 {
            let s = if i == 33 { seq + 5 } else { seq }; // a gap: OUT_OF_ORDER_SEQUENCE
            if i != 33 {
                seq += 4;
            }
            Some(s)
        } else {
            None
        };
        clients.push(client_batch(i, s));
        if i == 12 || i == 40 {
            clients.push(client_batch(i, Some(seq - 4))); // a retry of the last batch
        }
    }
    for segment_bytes in [1 << 20, 4000] {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (mut grouped, mut single) =
            (open(a.path(), segment_bytes), open(b.path(), segment_bytes));
        let validated: Vec<ValidatedBatch<'_>> = clients
            .iter()
            .map(|c| validate_client_batch(c, &cfg, 5000).unwrap())
            .collect();
        let (mut at, mut size) = (0, 1);
        let mut answers = Vec::new();
        while at < validated.len() {
            let end = (at + size).min(validated.len());
            let group: Vec<&ValidatedBatch<'_>> = validated[at..end].iter().collect();
            answers.extend(grouped.append_validated_group(&group, 3, 0));
            at = end;
            size = size % 7 + 1;
        }
        assert_eq!(answers.len(), validated.len());
        let mut refused = 0;
        let mut duplicates = 0;
        for (i, (v, g)) in validated.iter().zip(&answers).enumerate() {
            let s = single.append_validated(v, 3, 0);
            match (g, &s) {
                (Ok(x), Ok(y)) => {
                    assert_eq!(x, y, "batch {i} (segment.bytes {segment_bytes})");
                    duplicates += usize::from(x.duplicate);
                }
                (Err(x), Err(y)) => {
                    assert_eq!(x.error_code(), y.error_code(), "batch {i}: {x} / {y}");
                    refused += 1;
                }
                _ => panic!("batch {i}: grouped {g:?}, one by one {s:?}"),
            }
        }
        assert_eq!(
            (refused, duplicates),
            (1, 2),
            "the gap is refused, both retries answered as duplicates"
        );
        assert_eq!(log_bytes(&grouped), log_bytes(&single));
        assert_eq!(grouped.log_end_offset(), single.log_end_offset());
        assert_eq!(grouped.segment_count(), single.segment_count());
        if segment_bytes == 4000 {
            assert!(
                grouped.segment_count() > 5,
                "the small segments rolled inside groups"
            );
        }
        // The offset index of the grouped log finds every batch.
        grouped.set_high_watermark(grouped.log_end_offset());
        for offset in (0..grouped.log_end_offset()).step_by(7) {
            let r = grouped
                .read(offset, 1 << 16, grouped.log_end_offset(), true)
                .unwrap();
            assert!(r.first_batch_offset <= offset, "offset {offset}");
        }
        // And the group-commit state heard the log end.
        grouped.sync().sync_to(grouped.log_end_offset()).unwrap();
        assert_eq!(grouped.sync().synced(), grouped.log_end_offset());
    }
}

/// Many threads through one combiner: each job is answered once, with its own answer, and
/// groups of more than one job happen.
#[test]
fn combiner_answers_every_job_once() {
    let combiner: Combiner<u64, u64> = Combiner::new();
    let runs = AtomicUsize::new(0);
    let largest = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let (combiner, runs, largest) = (&combiner, &runs, &largest);
            s.spawn(move || {
                for i in 0..2000u64 {
                    let job = t * 1_000_000 + i;
                    let answer = combiner.run(job, |jobs| {
                        runs.fetch_add(jobs.len(), Ordering::Relaxed);
                        largest.fetch_max(jobs.len(), Ordering::Relaxed);
                        std::hint::black_box((0..2000).sum::<u64>());
                        jobs.into_iter().map(|j| j * 2 + 1).collect()
                    });
                    assert_eq!(answer, job * 2 + 1);
                }
            });
        }
    });
    assert_eq!(
        runs.load(Ordering::Relaxed),
        8000,
        "every job ran exactly once"
    );
    assert!(
        largest.load(Ordering::Relaxed) >= 2,
        "contended jobs were combined into groups"
    );
}

/// Four producer threads appending through the combiner to one log: dense offsets, every
/// batch whole with a good CRC, every answer's offsets its own batch's.
#[test]
fn combined_producers_build_a_dense_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = parking_lot::Mutex::new(open(dir.path(), 1 << 16));
    let cfg = ValidationConfig::default();
    let combiner: Combiner<ValidatedBatch<'_>, crate::error::Result<AppendInfo>> = Combiner::new();
    let clients: Vec<Vec<u8>> = (0..400).map(|i| client_batch(i, None)).collect();
    std::thread::scope(|s| {
        for t in 0..4usize {
            let (log, combiner, clients, cfg) = (&log, &combiner, &clients, &cfg);
            s.spawn(move || {
                for c in clients.iter().skip(t).step_by(4) {
                    let v = validate_client_batch(c, cfg, 5000).unwrap();
                    let info = combiner
                        .run(v, |jobs| {
                            let group: Vec<&ValidatedBatch<'_>> = jobs.iter().collect();
                            log.lock().append_validated_group(&group, 1, 0)
                        })
                        .unwrap();
                    assert_eq!(info.last_offset - info.base_offset, 3);
                }
            });
        }
    });
    let log = log.into_inner();
    assert_eq!(log.log_end_offset(), 1600);
    let bytes = log_bytes(&log);
    let mut next = 0;
    for item in skiff_record::batches(&bytes) {
        let (_, view) = item.unwrap();
        view.verify_crc().unwrap();
        assert_eq!(view.base_offset(), next);
        next = view.next_offset();
    }
    assert_eq!(next, 1600);
}
