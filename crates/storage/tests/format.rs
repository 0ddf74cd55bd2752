//! On-disk format tests: a segment written by Skiff is byte-for-byte Kafka (spec §0.2, §1.5,
//! §2.2, §2.3).
//!
//! The `.log` files are decoded with an independent implementation, the `kafka-protocol`
//! crate's `RecordBatchDecoder` (which also checks each batch's CRC-32C), for every codec, and
//! every field is compared with what was appended. The `.index` / `.timeindex` files are read
//! raw as 8-byte `relOffset|position` and 12-byte `timestamp|relOffset` big-endian entries and
//! compared with Kafka's sparse-index rule replayed over the batches.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;

use bytes::Bytes;
use common::*;
use kafka_protocol::records::{
    Compression as KCompression, RecordBatchDecoder, TimestampType as KTimestampType,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use skiff_record::{BatchOptions, BatchView, Compression};
use skiff_storage::{Log, LogConfig};

const INDEX_INTERVAL: usize = 300;

fn kafka_codec(c: Compression) -> KCompression {
    match c {
        Compression::None => KCompression::None,
        Compression::Gzip => KCompression::Gzip,
        Compression::Snappy => KCompression::Snappy,
        Compression::Lz4 => KCompression::Lz4,
        Compression::Zstd => KCompression::Zstd,
    }
}

/// One appended batch as the test remembers it.
#[derive(Debug)]
struct Appended {
    opts: BatchOptions,
    epoch: i32,
    recs: Vec<Rec>,
    base_offset: i64,
}

/// Random records: keys and values sometimes null, sometimes empty, headers with unique keys
/// (kafka-protocol keeps headers in a map) and null header values.
fn random_records(rng: &mut StdRng, n: usize, ts: &mut i64) -> Vec<Rec> {
    (0..n)
        .map(|i| {
            *ts += rng.random_range(-300..1_000);
            let bytes = |rng: &mut StdRng, max: usize| -> Vec<u8> {
                let len = rng.random_range(0..max);
                (0..len).map(|_| rng.random_range(b'a'..=b'z')).collect()
            };
            let key = match rng.random_range(0..4) {
                0 => None,
                1 => Some(Vec::new()),
                _ => Some(bytes(rng, 40)),
            };
            let value = match rng.random_range(0..5) {
                0 => None,
                _ => Some(bytes(rng, 700)),
            };
            let headers = (0..rng.random_range(0..4))
                .map(|h| {
                    let v = (rng.random_range(0..3) > 0).then(|| bytes(rng, 30));
                    (format!("h{i}-{h}").into_bytes(), v)
                })
                .collect();
            Rec {
                timestamp: *ts,
                key,
                value,
                headers,
            }
        })
        .collect()
}

fn workload(codec: Compression) -> Vec<(BatchOptions, i32, Vec<Rec>)> {
    let mut rng = StdRng::seed_from_u64(codec.id().into());
    let mut ts = T0;
    let mut out = Vec::new();
    // Two producers with contiguous sequences: 4000 idempotent, 4001 transactional.
    let mut next_seq = [0i32; 2];
    for i in 0..30 {
        let n = rng.random_range(1..=8);
        let producer = match i % 7 {
            3 => Some(1),
            _ if i % 3 == 0 => Some(0),
            _ => None,
        };
        let opts = match producer {
            Some(p) => {
                let seq = next_seq[p];
                next_seq[p] += n as i32;
                BatchOptions {
                    compression: codec,
                    is_transactional: p == 1,
                    producer_id: 4_000 + p as i64,
                    producer_epoch: 2 + p as i16,
                    base_sequence: seq,
                    ..BatchOptions::default()
                }
            }
            None => BatchOptions {
                compression: codec,
                ..BatchOptions::default()
            },
        };
        out.push((opts, 3 + i / 12, random_records(&mut rng, n, &mut ts)));
    }
    out
}

fn write_log(dir: &Path, codec: Compression) -> (Log, Vec<Appended>) {
    let config = LogConfig {
        segment_bytes: 8 * 1024,
        index_interval_bytes: INDEX_INTERVAL,
        segment_index_bytes: 4096,
        ..LogConfig::default()
    };
    let (mut log, _) = open(dir, &config, true, 0);
    let mut appended = Vec::new();
    for (opts, epoch, recs) in workload(codec) {
        let mut batch = build_batch(opts.clone(), &recs);
        let info = log.append_as_leader(&mut batch, epoch, T0).unwrap();
        appended.push(Appended {
            opts,
            epoch,
            recs,
            base_offset: info.base_offset,
        });
    }
    log.close(T0).unwrap();
    (log, appended)
}

fn check_codec(codec: Compression) {
    let dir = tempdir();
    let (log, appended) = write_log(dir.path(), codec);
    assert!(log.segment_count() >= 3, "{codec:?}: several segments");
    let mut expected = appended.iter().peekable();
    let mut next_offset = 0;
    let mut index_entries = 0;
    for seg in log.segments() {
        let name = seg
            .log_path()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        assert_eq!(name, format!("{:020}.log", seg.base_offset()));
        let data = std::fs::read(seg.log_path()).unwrap();
        assert_eq!(data.len() as u64, seg.size());
        let mut buf = Bytes::from(data.clone());
        let sets = RecordBatchDecoder::decode_all(&mut buf)
            .unwrap_or_else(|e| panic!("{codec:?}: kafka-protocol rejects {name}: {e}"));
        assert!(!sets.is_empty());
        assert_eq!(
            sets[0].records[0].offset,
            seg.base_offset(),
            "{name}: named after its first offset"
        );
        let mut pos = 0usize;
        for set in sets {
            let a = expected.next().expect("no more batches than appended");
            assert_eq!(set.version, 2);
            assert_eq!(set.compression, kafka_codec(codec));
            assert_eq!(set.records.len(), a.recs.len());
            assert_eq!(a.base_offset, next_offset, "dense offsets");
            for (k, (r, want)) in set.records.iter().zip(&a.recs).enumerate() {
                let what = format!("{codec:?} batch at {} record {k}", a.base_offset);
                assert_eq!(r.offset, a.base_offset + k as i64, "{what}: offset");
                assert_eq!(r.timestamp, want.timestamp, "{what}: timestamp");
                assert_eq!(r.timestamp_type, KTimestampType::Creation, "{what}");
                assert_eq!(r.key.as_deref(), want.key.as_deref(), "{what}: key");
                assert_eq!(r.value.as_deref(), want.value.as_deref(), "{what}: value");
                let headers: Vec<(Vec<u8>, Option<Vec<u8>>)> = r
                    .headers
                    .iter()
                    .map(|(k, v)| (k.as_bytes().to_vec(), v.as_ref().map(|b| b.to_vec())))
                    .collect();
                assert_eq!(headers, want.headers, "{what}: headers");
                assert_eq!(r.producer_id, a.opts.producer_id, "{what}: producer id");
                assert_eq!(
                    r.producer_epoch, a.opts.producer_epoch,
                    "{what}: producer epoch"
                );
                let seq = if a.opts.base_sequence < 0 {
                    -1
                } else {
                    a.opts.base_sequence + k as i32
                };
                if a.opts.base_sequence >= 0 {
                    assert_eq!(r.sequence, seq, "{what}: sequence");
                }
                assert_eq!(
                    r.transactional, a.opts.is_transactional,
                    "{what}: transactional"
                );
                assert!(!r.control && !r.delete_horizon, "{what}");
                assert_eq!(r.partition_leader_epoch, a.epoch, "{what}: leader epoch");
            }
            // Header fields kafka-protocol does not surface, read raw.
            let size =
                i32::from_be_bytes(data[pos + 8..pos + 12].try_into().unwrap()) as usize + 12;
            let view = BatchView::new(&data[pos..pos + size]).unwrap();
            let raw = &data[pos..pos + view.size()];
            let be_i64 = |at: usize| i64::from_be_bytes(raw[at..at + 8].try_into().unwrap());
            let be_i32 = |at: usize| i32::from_be_bytes(raw[at..at + 4].try_into().unwrap());
            assert_eq!(be_i64(0), a.base_offset, "baseOffset");
            assert_eq!(be_i32(8) as usize + 12, raw.len(), "batchLength");
            assert_eq!(raw[16], 2, "magic");
            assert_eq!(be_i32(23), a.recs.len() as i32 - 1, "lastOffsetDelta");
            assert_eq!(
                be_i64(27),
                a.recs[0].timestamp,
                "baseTimestamp = first record's"
            );
            let max_ts = a.recs.iter().map(|r| r.timestamp).max().unwrap();
            assert_eq!(be_i64(35), max_ts, "maxTimestamp");
            assert_eq!(be_i32(57), a.recs.len() as i32, "recordsCount");
            assert_eq!(
                i16::from_be_bytes([raw[21], raw[22]]) & 0x07,
                i16::from(codec.id())
            );
            pos += raw.len();
            next_offset = a.base_offset + a.recs.len() as i64;
        }
        assert_eq!(pos, data.len(), "{name}: nothing after the last batch");
        index_entries += check_index_files(seg.log_path(), seg.base_offset(), &data);
    }
    assert!(
        expected.peek().is_none(),
        "every appended batch is in a segment"
    );
    assert!(
        index_entries >= 5,
        "{codec:?}: test needs non-trivial indexes ({index_entries})"
    );
    assert_eq!(log.log_end_offset(), next_offset);
}

/// Replays Kafka's sparse-index rule over the batches of a closed segment and compares the
/// result with the raw `.index` and `.timeindex` files.
fn check_index_files(log_path: &Path, base: i64, data: &[u8]) -> usize {
    let mut want_index: Vec<(i32, u32)> = Vec::new();
    let mut want_time: Vec<(i64, i32)> = Vec::new();
    let mut since_last = 0usize;
    let (mut max_ts, mut offset_of_max) = (-1i64, base);
    let push_time = |want_time: &mut Vec<(i64, i32)>, ts: i64, off: i64| {
        if ts > want_time.last().map_or(-1, |e| e.0) {
            want_time.push((ts, (off - base) as i32));
        }
    };
    for b in skiff_record::batches(data) {
        let (pos, v) = b.unwrap();
        if v.max_timestamp() > max_ts {
            max_ts = v.max_timestamp();
            offset_of_max = v.last_offset();
        }
        if since_last > INDEX_INTERVAL {
            want_index.push(((v.last_offset() - base) as i32, pos as u32));
            push_time(&mut want_time, max_ts, offset_of_max);
            since_last = 0;
        }
        since_last += v.size();
    }
    // The final entry forced in when the segment became inactive.
    push_time(&mut want_time, max_ts, offset_of_max);

    let index = std::fs::read(log_path.with_extension("index")).unwrap();
    assert_eq!(
        index.len(),
        want_index.len() * 8,
        "closed .index is trimmed to its entries"
    );
    let got: Vec<(i32, u32)> = index
        .chunks(8)
        .map(|e| {
            (
                i32::from_be_bytes(e[..4].try_into().unwrap()),
                u32::from_be_bytes(e[4..].try_into().unwrap()),
            )
        })
        .collect();
    assert_eq!(got, want_index, "{}", log_path.display());

    let time = std::fs::read(log_path.with_extension("timeindex")).unwrap();
    assert_eq!(
        time.len(),
        want_time.len() * 12,
        "closed .timeindex is trimmed to its entries"
    );
    let got: Vec<(i64, i32)> = time
        .chunks(12)
        .map(|e| {
            (
                i64::from_be_bytes(e[..8].try_into().unwrap()),
                i32::from_be_bytes(e[8..].try_into().unwrap()),
            )
        })
        .collect();
    assert_eq!(got, want_time, "{}", log_path.display());
    want_index.len()
}

#[test]
fn uncompressed_segments_decode_with_kafka_protocol() {
    check_codec(Compression::None);
}

#[test]
fn gzip_segments_decode_with_kafka_protocol() {
    check_codec(Compression::Gzip);
}

#[test]
fn snappy_segments_decode_with_kafka_protocol() {
    check_codec(Compression::Snappy);
}

#[test]
fn lz4_segments_decode_with_kafka_protocol() {
    check_codec(Compression::Lz4);
}

#[test]
fn zstd_segments_decode_with_kafka_protocol() {
    check_codec(Compression::Zstd);
}

/// issue 12 items 4 and 11: an active segment's index files are never preallocated (a sparse
/// 10 MiB mapping per index zero-filled the page cache under 5,000 partitions and raised SIGBUS
/// on a full disk); they hold exactly the written entries, the format Kafka reads.
#[test]
fn active_segment_index_is_never_preallocated_and_exact_after_close() {
    let dir = tempdir();
    let config = LogConfig {
        index_interval_bytes: 100,
        segment_index_bytes: 1000,
        ..LogConfig::default()
    };
    let (mut log, _) = open(dir.path(), &config, true, 0);
    for i in 0..5 {
        append(&mut log, simple_batch(&[T0 + i, T0 + i + 1], 100), 0, T0);
    }
    let index = seg_file(dir.path(), 0, ".index");
    let time = seg_file(dir.path(), 0, ".timeindex");
    let len = |p: &std::path::Path| std::fs::metadata(p).unwrap().len();
    // Entries live in memory until a flush: no preallocation, no sparse tail.
    assert_eq!((len(&index), len(&time)), (0, 0));
    log.flush(T0).unwrap();
    assert_eq!(
        (len(&index), len(&time)),
        (4 * 8, 4 * 12),
        "flush writes them"
    );
    log.close(T0).unwrap();
    let entries = log.segments().next().unwrap().offset_index().entries() as u64;
    assert_eq!(
        entries, 4,
        "an entry for every append after more than 100 bytes"
    );
    assert_eq!(len(&index), entries * 8);
    // The last regular entry already holds the maximum: no extra final entry.
    assert_eq!(len(&time), 4 * 12);
    drop(log);
    // Reopened as active: the files keep exactly their entries, appends continue.
    let (mut log, _) = open(dir.path(), &config, true, 0);
    assert_eq!((len(&index), len(&time)), (4 * 8, 4 * 12));
    append(&mut log, simple_batch(&[T0 + 9], 100), 0, T0);
    log.close(T0).unwrap();
    // No offset entry yet (the interval counts from the reopen); the forced final time entry.
    assert_eq!((len(&index), len(&time)), (4 * 8, 5 * 12));
}

#[test]
fn index_entry_needs_more_than_index_interval_bytes() {
    // Kafka: an entry is added when strictly more than index.interval.bytes were appended
    // since the last one, checked before counting the current batch.
    let size = simple_batch(&[T0], 50).len();
    let dir = tempdir();
    let config = LogConfig {
        index_interval_bytes: size,
        ..LogConfig::default()
    };
    let (mut log, _) = open(dir.path(), &config, true, 0);
    for i in 0..7 {
        append(&mut log, simple_batch(&[T0 + i], 50), 0, T0);
    }
    log.close(T0).unwrap();
    let index = std::fs::read(seg_file(dir.path(), 0, ".index")).unwrap();
    let entries: Vec<(i32, u32)> = index
        .chunks(8)
        .map(|e| {
            (
                i32::from_be_bytes(e[..4].try_into().unwrap()),
                u32::from_be_bytes(e[4..].try_into().unwrap()),
            )
        })
        .collect();
    // Batches 2, 4, 6 (0-based) start after 2*size bytes without an entry.
    let s = size as u32;
    assert_eq!(entries, vec![(2, 2 * s), (4, 4 * s), (6, 6 * s)]);
}
