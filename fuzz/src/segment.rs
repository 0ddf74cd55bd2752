//! `segment_recovery` harness: arbitrary bytes as the files of a partition directory, then
//! `Log::open` after an unclean shutdown and a full read of the recovered log.
//!
//! Input format (every field optional: a short input reads as zeros):
//! ```text
//! flags u8
//!   bit 0: segment 0 has .index/.timeindex files: u16 index_len, u16 timeindex_len follow
//!   bit 1: a second segment exists: u32 log0_len, u32 base1 follow (base1 = max(1, base1))
//!   bit 2: index.interval.bytes = 1 (every batch indexed) instead of 4096
//!   bit 3: recompute the CRC of every whole batch in the .log bytes before writing them, so
//!          mutated headers get past the CRC check and recovery/reads see them
//! then: [index bytes][timeindex bytes][segment 0 .log bytes][segment 1 .log bytes]
//! ```
//! Without bit 1 everything after the index bytes is `00000000000000000000.log`. Lengths are
//! clamped to what is left. [`encode_input`] builds this layout (seed generation).
//!
//! Checks: `Log::open` (clean_shutdown = false, recovery point 0) never panics; if it opens,
//! reading from the log start offset to the log end offset (min_one_message, no byte limit)
//! makes progress on every call (or finds nothing but empty segments from there on: a trailing
//! gap, which Kafka has too), returns only whole batches that pass `BatchView::new` and their
//! CRC, with non-decreasing offsets, and ends at the log end offset (before it only in such a
//! gap). Closing and re-opening (unclean again) must find nothing more to cut and the same
//! offsets: recovery is idempotent. The directory lives on tmpfs (`/dev/shm`) when it exists; one per process.

use std::path::{Path, PathBuf};

use skiff_record::{BatchView, batches, peek_batch_size, recompute_crc};
use skiff_storage::{LoadReport, Log, LogConfig, LogOpenOptions};
use skiff_types::TopicPartition;

use crate::Outcome;

/// Flag bits of the input's first byte.
pub const FLAG_INDEX_FILES: u8 = 1;
pub const FLAG_SECOND_SEGMENT: u8 = 2;
pub const FLAG_DENSE_INDEX: u8 = 4;
pub const FLAG_FIX_CRCS: u8 = 8;

/// A fixed "now" so runs are reproducible.
pub const NOW_MS: i64 = 1_700_000_000_000;

/// The files of one harness input.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SegmentInput {
    pub dense_index: bool,
    /// Recompute every batch CRC of the `.log` bytes before writing them.
    pub fix_crcs: bool,
    /// `.index` and `.timeindex` of segment 0, if any.
    pub indexes: Option<(Vec<u8>, Vec<u8>)>,
    pub log0: Vec<u8>,
    /// Base offset and `.log` bytes of a second segment.
    pub second: Option<(u32, Vec<u8>)>,
}

struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> &'a [u8] {
        let n = n.min(self.0.len());
        let (head, tail) = self.0.split_at(n);
        self.0 = tail;
        head
    }
    fn u8(&mut self) -> u8 {
        self.take(1).first().copied().unwrap_or(0)
    }
    fn u16(&mut self) -> usize {
        let b = self.take(2);
        b.iter().fold(0usize, |acc, &x| (acc << 8) | usize::from(x))
    }
    fn u32(&mut self) -> u32 {
        let b = self.take(4);
        b.iter().fold(0u32, |acc, &x| (acc << 8) | u32::from(x))
    }
}

/// Parses the harness input format (never fails).
pub fn decode_input(data: &[u8]) -> SegmentInput {
    let mut c = Cursor(data);
    let flags = c.u8();
    let index_lens = (flags & FLAG_INDEX_FILES != 0).then(|| (c.u16(), c.u16()));
    let second_hdr = (flags & FLAG_SECOND_SEGMENT != 0).then(|| (c.u32(), c.u32()));
    let indexes = index_lens.map(|(a, b)| (c.take(a).to_vec(), c.take(b).to_vec()));
    let (log0, second) = match second_hdr {
        None => (c.take(usize::MAX).to_vec(), None),
        Some((len0, base1)) => {
            let log0 = c.take(len0 as usize).to_vec();
            (log0, Some((base1.max(1), c.take(usize::MAX).to_vec())))
        }
    };
    SegmentInput {
        dense_index: flags & FLAG_DENSE_INDEX != 0,
        fix_crcs: flags & FLAG_FIX_CRCS != 0,
        indexes,
        log0,
        second,
    }
}

/// Builds the harness input format (inverse of [`decode_input`] for in-range lengths).
pub fn encode_input(input: &SegmentInput) -> Vec<u8> {
    let mut flags = 0u8;
    if input.indexes.is_some() {
        flags |= FLAG_INDEX_FILES;
    }
    if input.second.is_some() {
        flags |= FLAG_SECOND_SEGMENT;
    }
    if input.dense_index {
        flags |= FLAG_DENSE_INDEX;
    }
    if input.fix_crcs {
        flags |= FLAG_FIX_CRCS;
    }
    let mut out = vec![flags];
    if let Some((idx, tidx)) = &input.indexes {
        let len16 = |v: &Vec<u8>| u16::try_from(v.len()).unwrap_or(u16::MAX);
        out.extend_from_slice(&len16(idx).to_be_bytes());
        out.extend_from_slice(&len16(tidx).to_be_bytes());
    }
    if let Some((base1, _)) = &input.second {
        let len0 = u32::try_from(input.log0.len()).unwrap_or(u32::MAX);
        out.extend_from_slice(&len0.to_be_bytes());
        out.extend_from_slice(&base1.to_be_bytes());
    }
    if let Some((idx, tidx)) = &input.indexes {
        out.extend_from_slice(&idx[..idx.len().min(usize::from(u16::MAX))]);
        out.extend_from_slice(&tidx[..tidx.len().min(usize::from(u16::MAX))]);
    }
    out.extend_from_slice(&input.log0);
    if let Some((_, log1)) = &input.second {
        out.extend_from_slice(log1);
    }
    out
}

/// The log config the harness opens with.
pub fn harness_config(dense_index: bool) -> LogConfig {
    LogConfig {
        segment_index_bytes: 64 * 1024,
        index_interval_bytes: if dense_index { 1 } else { 4096 },
        ..LogConfig::default()
    }
}

/// This process's scratch root (tmpfs when available).
pub fn scratch_root() -> PathBuf {
    let base = Path::new("/dev/shm");
    let base = if base.is_dir() {
        base.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    base.join(format!("skiff-fuzz-{}", std::process::id()))
}

fn segment_name(base: u64, suffix: &str) -> String {
    format!("{base:020}{suffix}")
}

/// Writes `input` as a fresh partition directory `<root>/t-0` and returns its path.
pub fn write_partition_dir(root: &Path, input: &SegmentInput) -> PathBuf {
    let dir = root.join("t-0");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let log_bytes = |bytes: &[u8]| {
        let mut bytes = bytes.to_vec();
        if input.fix_crcs {
            fix_crcs(&mut bytes);
        }
        bytes
    };
    std::fs::write(dir.join(segment_name(0, ".log")), log_bytes(&input.log0)).expect("write .log");
    if let Some((idx, tidx)) = &input.indexes {
        std::fs::write(dir.join(segment_name(0, ".index")), idx).expect("write .index");
        std::fs::write(dir.join(segment_name(0, ".timeindex")), tidx).expect("write .timeindex");
    }
    if let Some((base1, log1)) = &input.second {
        std::fs::write(
            dir.join(segment_name(u64::from(*base1), ".log")),
            log_bytes(log1),
        )
        .expect("write second .log");
    }
    dir
}

/// Recomputes the CRC of every whole batch from the start of `log` (stops at the first
/// impossible or torn length).
pub fn fix_crcs(log: &mut [u8]) {
    let mut pos = 0usize;
    while let Ok(Some(size)) = peek_batch_size(&log[pos..]) {
        let Some(end) = pos.checked_add(size).filter(|&e| e <= log.len()) else {
            break;
        };
        recompute_crc(&mut log[pos..end]);
        pos = end;
    }
}

fn open(dir: &Path, dense_index: bool) -> skiff_storage::error::Result<(Log, LoadReport)> {
    Log::open(
        dir,
        TopicPartition::new("t", 0),
        harness_config(dense_index),
        LogOpenOptions {
            recovery_point: 0,
            log_start_offset: 0,
            high_watermark: 0,
            clean_shutdown: false,
            now_ms: NOW_MS,
        },
    )
}

/// Runs the harness on one input; panics on a broken invariant.
pub fn check_segment_recovery(data: &[u8]) -> Outcome {
    let input = decode_input(data);
    let root = scratch_root();
    let dir = write_partition_dir(&root, &input);
    let outcome = run(&dir, input.dense_index);
    let _ = std::fs::remove_dir_all(&dir);
    outcome
}

fn run(dir: &Path, dense_index: bool) -> Outcome {
    let (mut log, report) = match open(dir, dense_index) {
        Ok(opened) => opened,
        Err(e) => {
            let _ = e.to_string();
            return "open_failed";
        }
    };
    let (start, end) = (log.log_start_offset(), log.log_end_offset());
    let batches_read = read_all(&log);
    log.close(NOW_MS).expect("close after recovery");
    drop(log);

    let (log2, report2) = open(dir, dense_index).expect("re-open of a recovered log");
    assert_eq!(
        report2.truncated_bytes, 0,
        "second recovery cut more bytes: {report2:?}"
    );
    assert_eq!(
        report2.deleted_segments, 0,
        "second recovery deleted segments: {report2:?}"
    );
    assert_eq!(
        (log2.log_start_offset(), log2.log_end_offset()),
        (start, end),
        "offsets changed across a re-open"
    );
    assert_eq!(read_all(&log2), batches_read, "a re-open reads differently");
    match (report.truncated_bytes > 0, batches_read > 0) {
        (false, true) => "opened_intact",
        (false, false) => "opened_empty",
        (true, true) => "truncated_partly",
        (true, false) => "truncated_to_empty",
    }
}

/// Reads every batch from the log start to the log end; returns how many were read.
fn read_all(log: &Log) -> usize {
    let end = log.log_end_offset();
    let mut offset = log.log_start_offset();
    let mut count = 0usize;
    while offset < end {
        let r = log
            .read(offset, usize::MAX, end, true)
            .unwrap_or_else(|e| panic!("read at {offset} (log end {end}) failed: {e}"));
        let Some(slice) = r.slice else {
            // Only legitimate as a trailing gap: empty segments whose base offsets lie beyond
            // the last batch (the log end is the active segment's base). Kafka has the same.
            assert!(
                log.segments()
                    .all(|s| s.base_offset() <= offset || s.size() == 0),
                "read at {offset} returned nothing although a later segment holds data"
            );
            break;
        };
        let bytes = slice.read_to_vec().expect("read the returned file region");
        let mut first = true;
        let mut pos_end = 0usize;
        for item in batches(&bytes) {
            let (pos, view) = item.unwrap_or_else(|e| {
                panic!("read at {offset} returned a bad batch after {pos_end} bytes: {e}")
            });
            check_batch(&view, offset, first);
            assert_eq!(pos, pos_end);
            pos_end = pos + view.size();
            first = false;
            offset = view.next_offset();
            count += 1;
        }
        assert_eq!(pos_end, bytes.len(), "read returned a partial batch");
        assert!(!first, "read at {offset} returned bytes without a batch");
    }
    assert!(
        offset <= end,
        "a batch read ends past the log end offset {end}"
    );
    count
}

fn check_batch(view: &BatchView<'_>, offset: i64, first: bool) {
    if let Err(e) = view.verify_crc() {
        panic!(
            "read returned a batch with a bad CRC at offset {}: {e}",
            view.base_offset()
        );
    }
    if first {
        assert!(
            view.last_offset() >= offset,
            "first batch returned for offset {offset} ends at {}",
            view.last_offset()
        );
    } else {
        assert!(
            view.base_offset() >= offset,
            "batch at {} overlaps the previous one (next offset {offset})",
            view.base_offset()
        );
    }
}
