//! Regression tests for what the `segment_recovery` fuzz target (fuzz/) found. Each case is
//! the minimised finding rebuilt by hand: segment files written directly, then `Log::open`
//! after an unclean shutdown and a full read, as the harness does.
//!
//! Finding 1 (segment_recovery, first 300 s run): recovery validated each segment on its own,
//! so a segment whose CRC-valid batches ran past the *next* segment's base offset was kept.
//! With the later segment cut to nothing, the log end became that segment's base (6) while
//! segment 0 still held offsets 65539..65541, and `Log::read(3, .., upper_bound = 6, ..)`
//! returned that batch: data past the caller's bound (the high watermark for consumers). Now
//! a batch reaching the next segment's base offset is invalid like any damaged batch.
//!
//! Since issue 12 an invalid batch in a sealed segment no longer ends the log: its offsets are
//! quarantined (reads answer `StorageError::Quarantined`), its bytes moved to a `.corrupt` file,
//! and later segments are kept. The property the finding was about stays: no read returns an
//! offset at or past the log end, or past the next segment's base.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use skiff_record::{BatchBuilder, BatchOptions, BatchView, batches, set_base_offset};
use skiff_storage::{Log, LogConfig, LogOpenOptions, StorageError};
use skiff_types::TopicPartition;

const NOW: i64 = 1_700_000_000_000;

/// A CRC-valid uncompressed batch of `n` records starting at `base`.
fn batch(base: i64, n: i32) -> Vec<u8> {
    let mut b = BatchBuilder::new(BatchOptions::default());
    for i in 0..n {
        b.append(NOW + i64::from(i), Some(b"k"), Some(b"v"), &[]);
    }
    let mut bytes = b.build().unwrap();
    set_base_offset(&mut bytes, base); // outside the CRC
    bytes
}

fn open_unclean(dir: &Path) -> (Log, skiff_storage::LoadReport) {
    Log::open(
        dir,
        TopicPartition::new("t", 0),
        LogConfig::default(),
        LogOpenOptions {
            recovery_point: 0,
            log_start_offset: 0,
            high_watermark: 0,
            clean_shutdown: false,
            now_ms: NOW,
        },
    )
    .unwrap()
}

/// Every batch `read` returns from the log start up to the log end, as (base, last) offsets;
/// a quarantined range is listed as `(start, -end)` and jumped over.
fn read_everything(log: &Log) -> Vec<(i64, i64)> {
    let end = log.log_end_offset();
    let mut offset = log.log_start_offset();
    let mut seen = Vec::new();
    while offset < end {
        let r = match log.read(offset, usize::MAX, end, true) {
            Err(StorageError::Quarantined { start, end, .. }) => {
                seen.push((start, -end));
                offset = end;
                continue;
            }
            r => r.unwrap(),
        };
        let Some(slice) = r.slice else { break };
        let bytes = slice.read_to_vec().unwrap();
        for item in batches(&bytes) {
            let (_, v): (usize, BatchView<'_>) = item.unwrap();
            v.verify_crc().unwrap();
            seen.push((v.base_offset(), v.last_offset()));
            offset = v.next_offset();
        }
    }
    seen
}

fn segment(dir: &Path, base: i64) -> std::path::PathBuf {
    dir.join(format!("{base:020}.log"))
}

/// The minimised fuzz input: segment 0 = batches 0..=2 and 65539..=65541 (both CRC-valid),
/// segment 6 = a batch with a bad CRC (recovery cuts it to nothing).
#[test]
fn segment_batches_past_the_next_segment_base_are_cut() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t-0");
    std::fs::create_dir_all(&dir).unwrap();
    let mut seg0 = batch(0, 3);
    seg0.extend_from_slice(&batch(65_539, 3));
    std::fs::write(segment(&dir, 0), &seg0).unwrap();
    let mut seg6 = batch(6, 3);
    let last = seg6.len() - 1;
    seg6[last] ^= 0xff; // CRC mismatch
    std::fs::write(segment(&dir, 6), &seg6).unwrap();

    let (log, report) = open_unclean(&dir);
    let end = log.log_end_offset();
    let read = read_everything(&log);
    assert!(
        read.iter().all(|&(_, last)| last < end),
        "read returned offsets at or past the log end {end}: {read:?}"
    );
    // Offsets 3..6 of segment 0 (the overlapping batch) are quarantined; segment 6's bad batch
    // is the torn tail of the last segment and is cut.
    assert_eq!(read, vec![(0, 2), (3, -6)]);
    assert_eq!(end, 6);
    assert!(report.truncated_bytes > 0);
    assert_eq!(report.corrupt_files.len(), 1);
}

/// The same overlap with a healthy next segment: the overlapping batch is quarantined (moved
/// aside), the next segment is kept.
#[test]
fn overlap_with_a_valid_next_segment_is_quarantined_and_the_next_segment_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t-0");
    std::fs::create_dir_all(&dir).unwrap();
    let mut seg0 = batch(0, 3);
    seg0.extend_from_slice(&batch(3, 4)); // offsets 3..=6 reach segment 5's base
    std::fs::write(segment(&dir, 0), &seg0).unwrap();
    std::fs::write(segment(&dir, 5), batch(5, 2)).unwrap();

    let (log, report) = open_unclean(&dir);
    assert_eq!(read_everything(&log), vec![(0, 2), (3, -5), (5, 6)]);
    assert_eq!(log.log_end_offset(), 7);
    assert_eq!(log.segment_count(), 2);
    assert_eq!(report.deleted_segments, 0);
    assert!(segment(&dir, 5).exists());
    assert_eq!(report.corrupt_files.len(), 1);
}

/// Control: segments that stay below each other's base offsets are kept whole.
#[test]
fn disjoint_segments_are_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t-0");
    std::fs::create_dir_all(&dir).unwrap();
    let mut seg0 = batch(0, 3);
    seg0.extend_from_slice(&batch(3, 2)); // up to 4, segment 5 starts after
    std::fs::write(segment(&dir, 0), &seg0).unwrap();
    std::fs::write(segment(&dir, 5), batch(5, 2)).unwrap();

    let (log, report) = open_unclean(&dir);
    assert_eq!(report.truncated_bytes, 0);
    assert_eq!(read_everything(&log), vec![(0, 2), (3, 4), (5, 6)]);
    assert_eq!(log.log_end_offset(), 7);
}
