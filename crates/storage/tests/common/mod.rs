//! Shared helpers of the storage integration tests: building batches, opening logs with
//! explicit options, reading a whole log back through `Log::read` (CRC-checking every batch),
//! and comparing a log's layout and lookups against an expected one.
//!
//! Every test file compiles this module separately, so not every helper is used everywhere.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use skiff_record::{BatchBuilder, BatchOptions, BatchView, Compression, Header, TimestampType};
use skiff_storage::read::TimestampOffset;
use skiff_storage::{LoadReport, Log, LogConfig, LogOpenOptions};
use skiff_types::TopicPartition;

/// A wall-clock-like base for record timestamps (2023-11-14).
pub const T0: i64 = 1_700_000_000_000;

/// A temporary directory, in memory (`/dev/shm`) when available: the crash tests reopen logs
/// thousands of times and every open and close fsyncs checkpoint files.
pub fn tempdir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir()
        && let Ok(d) = tempfile::Builder::new()
            .prefix("skiff-storage-")
            .tempdir_in(shm)
    {
        return d;
    }
    tempfile::tempdir().unwrap()
}

pub fn tp() -> TopicPartition {
    TopicPartition::new("t", 0)
}

/// A config with small segments and a dense sparse index so that a few KiB of data exercise
/// rolls and index lookups.
pub fn small_config(segment_bytes: u64) -> LogConfig {
    LogConfig {
        segment_bytes,
        index_interval_bytes: 512,
        segment_index_bytes: 4096,
        retention_ms: -1,
        ..LogConfig::default()
    }
}

pub fn opts(clean: bool, recovery_point: i64, now_ms: i64) -> LogOpenOptions {
    LogOpenOptions {
        recovery_point,
        log_start_offset: 0,
        high_watermark: i64::MAX,
        clean_shutdown: clean,
        now_ms,
    }
}

pub fn open(dir: &Path, config: &LogConfig, clean: bool, recovery_point: i64) -> (Log, LoadReport) {
    Log::open(dir, tp(), config.clone(), opts(clean, recovery_point, T0)).unwrap()
}

/// One record to put in a batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rec {
    pub timestamp: i64,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub headers: Vec<(Vec<u8>, Option<Vec<u8>>)>,
}

impl Rec {
    pub fn new(timestamp: i64, key: Option<&[u8]>, value: Option<&[u8]>) -> Self {
        Self {
            timestamp,
            key: key.map(<[u8]>::to_vec),
            value: value.map(<[u8]>::to_vec),
            headers: Vec::new(),
        }
    }

    pub fn value(timestamp: i64, value: &[u8]) -> Self {
        Self::new(timestamp, None, Some(value))
    }
}

/// Encodes `recs` as one client batch (base offset 0) with `opts`.
pub fn build_batch(opts: BatchOptions, recs: &[Rec]) -> Vec<u8> {
    let mut b = BatchBuilder::new(opts);
    for r in recs {
        let headers: Vec<Header<'_>> = r
            .headers
            .iter()
            .map(|(k, v)| Header {
                key: k,
                value: v.as_deref(),
            })
            .collect();
        b.append(r.timestamp, r.key.as_deref(), r.value.as_deref(), &headers);
    }
    b.build().unwrap()
}

/// An uncompressed CreateTime batch of records with the given timestamps and value size.
pub fn simple_batch(timestamps: &[i64], value_len: usize) -> Vec<u8> {
    let recs: Vec<Rec> = timestamps
        .iter()
        .enumerate()
        .map(|(i, t)| Rec::value(*t, &vec![b'a' + (i % 26) as u8; value_len]))
        .collect();
    build_batch(BatchOptions::default(), &recs)
}

pub fn codec_batch(codec: Compression, timestamps: &[i64], value_len: usize) -> Vec<u8> {
    let recs: Vec<Rec> = timestamps
        .iter()
        .enumerate()
        .map(|(i, t)| Rec::value(*t, &vec![b'a' + (i % 26) as u8; value_len]))
        .collect();
    build_batch(
        BatchOptions {
            compression: codec,
            ..BatchOptions::default()
        },
        &recs,
    )
}

/// A batch as stored: which segment, where, its offsets and exact bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stored {
    pub segment: i64,
    pub position: u64,
    pub base_offset: i64,
    pub last_offset: i64,
    pub bytes: Vec<u8>,
}

/// Every batch of every segment file of `log`, read straight from the files (not via `read`).
pub fn layout(log: &Log) -> Vec<Stored> {
    let mut out = Vec::new();
    for seg in log.segments() {
        let data = std::fs::read(seg.log_path()).unwrap();
        let data = &data[..seg.size() as usize];
        for b in skiff_record::batches(data) {
            let (pos, view) = b.unwrap();
            out.push(Stored {
                segment: seg.base_offset(),
                position: pos as u64,
                base_offset: view.base_offset(),
                last_offset: view.last_offset(),
                bytes: view.bytes().to_vec(),
            });
        }
    }
    out
}

/// Reads the whole log from its start to `bound` through `Log::read`, checking that every slice
/// starts at a batch boundary, that every returned batch has a valid CRC and that offsets only
/// increase. Returns the batches' bytes in order.
pub fn read_all(log: &Log, bound: i64) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = Vec::new();
    let mut next = log.log_start_offset();
    let end = bound.min(log.log_end_offset());
    let mut guard = 0;
    while next < end {
        guard += 1;
        assert!(guard < 100_000, "read loop does not progress at {next}");
        let r = log.read(next, 1 << 20, bound, true).unwrap();
        let Some(slice) = r.slice else {
            panic!("read({next}) below the bound {end} returned nothing");
        };
        let bytes = slice.read_to_vec().unwrap();
        let mut got_any = false;
        for b in skiff_record::batches(&bytes) {
            let (_, view) = b.unwrap_or_else(|e| panic!("read({next}) returned a bad batch: {e}"));
            view.verify_crc()
                .unwrap_or_else(|e| panic!("read({next}) returned a batch failing its CRC: {e}"));
            assert!(
                view.last_offset() >= next,
                "batch {} below the fetch offset {next}",
                view.base_offset()
            );
            if let Some(prev) = out.last() {
                let prev = BatchView::new(prev).unwrap();
                assert!(view.base_offset() > prev.last_offset(), "offsets go back");
            }
            assert!(
                view.base_offset() < end,
                "read returned offset {} at/after the bound {end}",
                view.base_offset()
            );
            next = view.last_offset() + 1;
            out.push(view.bytes().to_vec());
            got_any = true;
        }
        assert!(
            got_any,
            "read({next}) returned a slice without a whole batch"
        );
    }
    out
}

/// Every (offset, timestamp) of the records in `batches`, in offset order.
pub fn record_timestamps(batches: &[Vec<u8>]) -> Vec<(i64, i64)> {
    let mut out = Vec::new();
    for b in batches {
        let v = BatchView::new(b).unwrap();
        let data = v.records_data(64 << 20).unwrap();
        for r in skiff_record::records(&data, v.records_count()) {
            let r = r.unwrap();
            out.push((v.record_offset(&r), v.record_timestamp(&r)));
        }
    }
    out
}

/// The timestamps worth asking `offset_for_timestamp` about for a log holding `batches`:
/// -1, -2, -3, 0, every record timestamp and its neighbours, and one beyond the maximum.
pub fn probe_timestamps(batches: &[Vec<u8>]) -> Vec<i64> {
    let mut ts = vec![-1, -2, -3, 0];
    let mut max = 0;
    for (_, t) in record_timestamps(batches) {
        ts.extend([t - 1, t, t + 1]);
        max = max.max(t);
    }
    ts.push(max + 1_000_000);
    ts.sort_unstable();
    ts.dedup();
    ts
}

pub fn lookups(log: &Log, timestamps: &[i64], bound: i64) -> Vec<(i64, Option<TimestampOffset>)> {
    timestamps
        .iter()
        .map(|t| (*t, log.offset_for_timestamp(*t, bound).unwrap()))
        .collect()
}

/// Checks that each segment's indexes are sane and agree with its data: for every stored batch,
/// `translate_offset` of its first and last offset lands on its position, and the offset index
/// never points past it.
pub fn check_indexes(log: &Log, stored: &[Stored]) {
    check_indexes_of(log, stored, None);
}

/// [`check_indexes`], translating offsets only in segment `only` if given (all are
/// sanity-checked).
pub fn check_indexes_of(log: &Log, stored: &[Stored], only: Option<i64>) {
    for seg in log.segments() {
        seg.offset_index().sanity_check(seg.size()).unwrap();
        seg.time_index().sanity_check().unwrap();
        if only.is_some_and(|b| b != seg.base_offset()) {
            continue;
        }
        for s in stored.iter().filter(|s| s.segment == seg.base_offset()) {
            for o in [s.base_offset, s.last_offset] {
                let h = seg
                    .translate_offset(o)
                    .unwrap()
                    .unwrap_or_else(|| panic!("offset {o} not found in segment {}", s.segment));
                assert_eq!(h.position, s.position, "translate_offset({o})");
                let (io, ipos) = seg.offset_index().lookup(o);
                assert!(
                    io <= o && u64::from(ipos) <= s.position,
                    "index lookup({o}) = ({io}, {ipos})"
                );
            }
        }
    }
}

/// Copies every regular file of `from` into `to` (created if needed), replacing what is there.
pub fn copy_dir(from: &Path, to: &Path) {
    if to.exists() {
        std::fs::remove_dir_all(to).unwrap();
    }
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// `<dir>/<20-digit base><suffix>`.
pub fn seg_file(dir: &Path, base: i64, suffix: &str) -> PathBuf {
    dir.join(format!("{base:020}{suffix}"))
}

/// Appends a batch as leader and returns its stored bytes (offsets assigned).
pub fn append(log: &mut Log, mut batch: Vec<u8>, epoch: i32, now: i64) -> Vec<u8> {
    log.append_as_leader(&mut batch, epoch, now).unwrap();
    batch
}

pub fn ts_type(batch: &[u8]) -> TimestampType {
    BatchView::new(batch).unwrap().timestamp_type()
}
