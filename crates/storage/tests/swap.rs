//! The cleaner's segment swap (compaction, issue 7; spec §3.1 "Swap", §2.8 step 1).
//!
//! A log of five segments gets its first three replaced by one "cleaned" segment holding every
//! other batch of them plus their last batch. The swap is stopped at every step (as if the
//! process died there: nothing is undone, the `Log` is dropped without closing) and in every
//! intermediate file state between steps; reopening after an unclean shutdown must give
//! exactly the old batches (crash before the data file became `.swap`) or exactly the new ones
//! (after), the same log end offset, consistent indexes, and no `.cleaned`, `.swap` or
//! `.deleted` file left over.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;

use common::*;
use skiff_record::BatchView;
use skiff_storage::Log;
use skiff_storage::swap::{CleanedSegment, CleanerCheckpoint, SegmentRef, SwapStep};

const SEGMENT_BYTES: u64 = 2048;

/// Five or more segments of ~600-byte keyed batches.
fn build(dir: &Path) -> Log {
    let config = small_config(SEGMENT_BYTES);
    let (mut log, _) = open(dir, &config, false, 0);
    for i in 0..18u32 {
        let ts = T0 + i64::from(i);
        let key = format!("k{}", i % 4);
        let recs = vec![Rec::new(ts, Some(key.as_bytes()), Some(&[b'v'; 550]))];
        let mut b = build_batch(Default::default(), &recs);
        log.append_as_leader(&mut b, 0, ts).unwrap();
    }
    let end = log.log_end_offset();
    log.set_high_watermark(end);
    assert!(log.segment_count() >= 5, "{} segments", log.segment_count());
    log
}

/// Writes the cleaned segment for the first three segments: every other batch, plus the last.
fn clean_first_three(log: &Log) -> (CleanedSegment, Vec<SegmentRef>) {
    let view = log.clean_view().unwrap();
    let group: Vec<SegmentRef> = view.segments[..3].to_vec();
    let mut out =
        CleanedSegment::create(log.dir(), group[0].base_offset, log.config(), T0).unwrap();
    let mut batches = Vec::new();
    for s in &group {
        let mut scan = s.headers();
        while let Some(h) = scan.next_header().unwrap() {
            batches.push(skiff_storage::swap::read_batch(&s.file, &h).unwrap());
        }
    }
    let n = batches.len();
    for (i, b) in batches.iter().enumerate() {
        if i % 2 == 0 || i == n - 1 {
            out.append(b).unwrap();
        }
    }
    out.finish(None).unwrap();
    (out, group)
}

fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".cleaned") || n.ends_with(".swap") || n.ends_with(".deleted"))
        .collect()
}

fn reopen(dir: &Path) -> Log {
    let (log, _) = open(dir, &small_config(SEGMENT_BYTES), false, 0);
    log
}

fn offsets(batches: &[Vec<u8>]) -> Vec<i64> {
    batches
        .iter()
        .map(|b| BatchView::new(b).unwrap().base_offset())
        .collect()
}

/// The old and the new content, from runs without a crash.
fn references() -> (Vec<Vec<u8>>, Vec<Vec<u8>>, i64) {
    let d = tempdir();
    let log = build(d.path());
    let old = read_all(&log, i64::MAX);
    let end = log.log_end_offset();
    drop(log);
    let d2 = tempdir();
    let mut log = build(d2.path());
    let (cleaned, group) = clean_first_three(&log);
    assert!(log.replace_segments(cleaned, &group, T0).unwrap());
    let live = read_all(&log, i64::MAX);
    check_indexes(&log, &layout(&log));
    drop(log);
    let new = read_all(&reopen(d2.path()), i64::MAX);
    assert_eq!(
        offsets(&live),
        offsets(&new),
        "the swapped log reads the same after a restart"
    );
    assert!(new.len() < old.len());
    (old, new, end)
}

/// Runs the swap up to `stop`, then `tamper` with the files, "crashes" and reopens.
fn crash_at(stop: Option<SwapStep>, tamper: impl Fn(&Path, i64)) -> (Vec<Vec<u8>>, i64) {
    let d = tempdir();
    let mut log = build(d.path());
    let (cleaned, group) = clean_first_three(&log);
    let base = group[0].base_offset;
    if let Some(stop) = stop {
        log.replace_segments_with_hook(cleaned, &group, T0, &mut |s| s != stop)
            .unwrap();
    } else {
        std::mem::forget(cleaned); // crash with the .cleaned files written
    }
    drop(log);
    tamper(d.path(), base);
    let log = reopen(d.path());
    assert_eq!(leftovers(d.path()), Vec::<String>::new(), "stop {stop:?}");
    check_indexes(&log, &layout(&log));
    (read_all(&log, i64::MAX), log.log_end_offset())
}

fn rename(dir: &Path, base: i64, from: &str, to: &str) {
    let f = dir.join(format!("{base:020}{from}"));
    if f.exists() {
        std::fs::rename(&f, dir.join(format!("{base:020}{to}"))).unwrap();
    }
}

#[test]
fn a_crash_at_any_swap_step_leaves_the_log_wholly_old_or_wholly_new() {
    let (old, new, end) = references();
    let none = |_: &Path, _: i64| {};
    let cases: Vec<(&str, Option<SwapStep>, bool)> = vec![
        ("cleaned files written", None, false),
        ("renamed to .swap", Some(SwapStep::Swapped), true),
        (
            "first old segment .deleted",
            Some(SwapStep::OldDeleted(0)),
            true,
        ),
        (
            "second old segment .deleted",
            Some(SwapStep::OldDeleted(1)),
            true,
        ),
        (
            "all old segments .deleted",
            Some(SwapStep::OldDeleted(2)),
            true,
        ),
        ("done", Some(SwapStep::Done), true),
    ];
    for (name, stop, want_new) in cases {
        let (got, got_end) = crash_at(stop, none);
        let want = if want_new { &new } else { &old };
        assert_eq!(offsets(&got), offsets(want), "{name}");
        assert!(got == *want, "{name}: bytes differ");
        assert_eq!(got_end, end, "{name}: log end offset");
    }
}

#[test]
fn partial_renames_within_a_step_recover_too() {
    let (old, new, _) = references();
    // Data file .swap, indexes still .cleaned (a crash inside step 1).
    let (got, _) = crash_at(Some(SwapStep::Swapped), |d, b| {
        rename(d, b, ".index.swap", ".index.cleaned");
        rename(d, b, ".timeindex.swap", ".timeindex.cleaned");
    });
    assert!(got == new, "swap data file with cleaned indexes");
    // Data file still .cleaned, an index already .swap: old.
    let (got, _) = crash_at(Some(SwapStep::Swapped), |d, b| {
        rename(d, b, ".log.swap", ".log.cleaned");
    });
    assert!(got == old, "cleaned data file with a swap index");
    // Data file final, indexes still .swap (a crash inside step 3).
    let (got, _) = crash_at(Some(SwapStep::OldDeleted(2)), |d, b| {
        rename(d, b, ".log.swap", ".log");
    });
    assert!(got == new, "final data file with swap indexes");
}

#[test]
fn a_changed_log_refuses_the_swap() {
    let d = tempdir();
    let mut log = build(d.path());
    let (cleaned, group) = clean_first_three(&log);
    let before = read_all(&log, i64::MAX);
    // Retention-like change: the first segment went away since the view was taken.
    let mut stale = group.clone();
    stale[0].size += 1;
    assert!(!log.replace_segments(cleaned, &stale, T0).unwrap());
    assert!(read_all(&log, i64::MAX) == before);
    assert_eq!(leftovers(d.path()), Vec::<String>::new());
}

#[test]
fn cleaner_checkpoint_round_trips_and_drops_unknown_partitions() {
    let d = tempdir();
    let mut c = CleanerCheckpoint::load(d.path());
    assert_eq!(c.get(&tp()), None);
    let other = skiff_types::TopicPartition::new("gone", 0);
    c.set(&other, 5, |_| true).unwrap();
    c.set(&tp(), 42, |t| *t == tp()).unwrap();
    let c = CleanerCheckpoint::load(d.path());
    assert_eq!(c.get(&tp()), Some(42));
    assert_eq!(c.get(&other), None);
    let text = std::fs::read_to_string(d.path().join("cleaner-offset-checkpoint")).unwrap();
    assert_eq!(text, "0\n1\nt 0 42\n");
}

/// Found in review: a crash inside step 2, after the first original's `.log` became
/// `.deleted` but before its indexes were renamed, left those old indexes under the final
/// names; roll-forward took them for the swapped-in segment's, and a reopen that trusts the
/// recovery point failed ("time index is full"). Every file of a replaced base goes now.
#[test]
fn a_crash_inside_step_two_leaves_no_old_index_on_the_new_segment() {
    let (_, new, _) = references();
    let d = tempdir();
    let mut log = build(d.path());
    let (cleaned, group) = clean_first_three(&log);
    let base = group[0].base_offset;
    let end = log.log_end_offset();
    log.replace_segments_with_hook(cleaned, &group, T0, &mut |s| s != SwapStep::Swapped)
        .unwrap();
    drop(log);
    rename(d.path(), base, ".log", ".log.deleted");
    // Unclean, with the recovery point at the end: indexes are trusted, not rebuilt.
    let (log, _) = open(d.path(), &small_config(SEGMENT_BYTES), false, end);
    check_indexes(&log, &layout(&log));
    assert!(read_all(&log, i64::MAX) == new, "the new content");
    assert_eq!(log.log_end_offset(), end);
}

/// transactions (issue 18): the view names the first unstable offset, every `.txnindex` entry
/// and the producers whose last entry is a marker; an index the cleaner writes (even empty)
/// replaces the replaced segments' entries, and survives a restart.
#[test]
fn the_cleaner_writes_the_txnindex_and_the_view_names_transactions() {
    use skiff_record::{BatchOptions, ControlType, build_end_txn_marker};
    use skiff_storage::AbortedTxn;
    let d = tempdir();
    let config = small_config(1 << 20);
    let (mut log, _) = open(d.path(), &config, true, 0);
    let txn = |pid: i64, seq: i32| BatchOptions {
        producer_id: pid,
        producer_epoch: 0,
        base_sequence: seq,
        is_transactional: true,
        ..BatchOptions::default()
    };
    let rec = || vec![Rec::new(T0, Some(b"k"), Some(b"v"))];
    append(&mut log, build_batch(txn(1, 0), &rec()), 0, T0); // 0: A
    // A's abort bumps its epoch (a coordinator timeout): A has no data batch left in memory.
    let abort = build_end_txn_marker(1, 1, 3, ControlType::Abort, T0).unwrap();
    append(&mut log, abort, 0, T0); // 1
    append(&mut log, build_batch(Default::default(), &rec()), 0, T0); // 2
    log.roll(T0).unwrap();
    append(&mut log, build_batch(txn(2, 0), &rec()), 0, T0); // 3: B, open
    log.set_high_watermark(4);
    let entry = AbortedTxn {
        producer_id: 1,
        first_offset: 0,
        last_offset: 1,
        last_stable_offset: 2,
    };
    let view = log.clean_view().unwrap();
    assert_eq!(view.first_unstable_offset, Some(3));
    assert_eq!(view.aborted_txns, vec![entry]);
    assert_eq!(view.producer_marker_epochs, vec![(1, 1)]);
    assert_eq!(view.producer_last_batches, vec![(2, 3)]);

    // A copy of [0, 3) with the ABORT and its data, but an index written empty.
    let group = view.segments[..1].to_vec();
    let copy = |index: Option<Vec<AbortedTxn>>| {
        let mut out = CleanedSegment::create(d.path(), 0, &config, T0).unwrap();
        let mut scan = group[0].headers();
        while let Some(h) = scan.next_header().unwrap() {
            out.append(&skiff_storage::swap::read_batch(&group[0].file, &h).unwrap())
                .unwrap();
        }
        if let Some(e) = index {
            out.write_txn_index(e).unwrap();
        }
        out.finish(None).unwrap();
        out
    };
    let mut bad = copy(None);
    let twice = vec![entry, entry];
    assert!(bad.write_txn_index(twice).is_err(), "out of order");
    bad.discard();
    assert!(
        log.replace_segments(copy(Some(vec![])), &group, T0)
            .unwrap()
    );
    assert_eq!(log.collect_aborted_txns(0, 4), vec![]);
    assert_eq!(log.clean_view().unwrap().aborted_txns, vec![]);
    // Not written: carried over. Written: exactly what was written.
    let group = log.clean_view().unwrap().segments[..1].to_vec();
    assert!(
        log.replace_segments(copy(Some(vec![entry])), &group, T0)
            .unwrap()
    );
    assert_eq!(log.clean_view().unwrap().aborted_txns, vec![entry]);
    let group = log.clean_view().unwrap().segments[..1].to_vec();
    assert!(log.replace_segments(copy(None), &group, T0).unwrap());
    assert_eq!(log.clean_view().unwrap().aborted_txns, vec![entry]);
    let group = log.clean_view().unwrap().segments[..1].to_vec();
    assert!(
        log.replace_segments(copy(Some(vec![])), &group, T0)
            .unwrap()
    );
    log.close(T0).unwrap();
    drop(log);
    let (log, _) = open(d.path(), &config, true, 0);
    assert_eq!(log.clean_view().unwrap().aborted_txns, vec![]);
}
