//! Transactions through the `Log` (issue 18): markers on the leader and follower paths, the
//! first unstable offset as the high watermark moves, open transactions, the `.txnindex` and
//! `collect_aborted_txns`, across clean and unclean restarts, lost or damaged index files,
//! truncation, retention and a cleaner swap.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use skiff_record::{BatchBuilder, BatchOptions, ControlType, build_end_txn_marker};
use skiff_storage::swap::{CleanedSegment, read_batch};
use skiff_storage::{
    AbortedTxnRef, AppendInfo, Log, LogConfig, LogOpenOptions, OpenTxn, StorageError,
};
use skiff_types::TopicPartition;

const T0: i64 = 1_700_000_000_000;
const A: i64 = 1;
const B: i64 = 2;

fn config() -> LogConfig {
    LogConfig {
        index_interval_bytes: 256,
        retention_ms: -1,
        ..LogConfig::default()
    }
}

fn open_with(dir: &Path, clean: bool, hw: i64, config: LogConfig) -> Log {
    let opts = LogOpenOptions {
        recovery_point: if clean { i64::MAX } else { 0 },
        log_start_offset: 0,
        high_watermark: hw,
        clean_shutdown: clean,
        now_ms: T0,
    };
    Log::open(dir, TopicPartition::new("txn", 0), config, opts)
        .unwrap()
        .0
}

fn open(dir: &Path, clean: bool, hw: i64) -> Log {
    open_with(dir, clean, hw, config())
}

fn data(pid: i64, seq: i32, n: usize, txn: bool) -> Vec<u8> {
    let mut b = BatchBuilder::new(BatchOptions {
        producer_id: pid,
        producer_epoch: if pid >= 0 { 0 } else { -1 },
        base_sequence: seq,
        is_transactional: txn,
        ..BatchOptions::default()
    });
    for i in 0..n {
        b.append(T0 + i as i64, None, Some(b"v"), &[]);
    }
    b.build().unwrap()
}

fn append(log: &mut Log, mut b: Vec<u8>) -> Result<AppendInfo, StorageError> {
    log.append_as_leader(&mut b, 0, T0)
}

fn marker(
    log: &mut Log,
    pid: i64,
    epoch: i16,
    coord: i32,
    t: ControlType,
) -> Result<AppendInfo, StorageError> {
    append(log, build_end_txn_marker(pid, epoch, coord, t, T0).unwrap())
}

fn open_txn(pid: i64, first: i64) -> OpenTxn {
    OpenTxn {
        producer_id: pid,
        producer_epoch: 0,
        first_offset: first,
    }
}

fn aborted(pid: i64, first: i64) -> AbortedTxnRef {
    AbortedTxnRef {
        producer_id: pid,
        first_offset: first,
    }
}

/// A (pid 1) data at 0..=2, roll, non-transactional data at 3..=4, B (pid 2) data at 5..=6,
/// roll, ABORT for A at 7. Segments: [0, 3), [3, 7), [7, ..).
fn scenario(dir: &Path) -> Log {
    let mut log = open(dir, true, 0);
    append(&mut log, data(A, 0, 3, true)).unwrap();
    assert_eq!(log.first_unstable_offset(), Some(0));
    log.roll(T0).unwrap();
    append(&mut log, data(-1, -1, 2, false)).unwrap();
    append(&mut log, data(B, 0, 2, true)).unwrap();
    assert_eq!(
        log.open_transactions(),
        vec![open_txn(A, 0), open_txn(B, 5)]
    );
    log.roll(T0).unwrap();
    let m = marker(&mut log, A, 0, 3, ControlType::Abort).unwrap();
    assert_eq!(m.base_offset, 7);
    log
}

/// The answers a log in the scenario's state (HW 8, B still open) must give.
fn check_after_abort(log: &Log, what: &str) {
    assert_eq!(
        log.first_unstable_offset(),
        Some(5),
        "{what}: B is open at 5"
    );
    assert_eq!(log.open_transactions(), vec![open_txn(B, 5)], "{what}");
    let cases: &[(i64, i64, &[AbortedTxnRef])] = &[
        (0, 8, &[aborted(A, 0)]),
        (0, 1, &[aborted(A, 0)]),
        (3, 5, &[aborted(A, 0)]),
        (7, 8, &[aborted(A, 0)]),
        (8, 20, &[]),
        (5, 6, &[aborted(A, 0)]),
    ];
    for (from, to, want) in cases {
        assert_eq!(
            log.collect_aborted_txns(*from, *to),
            *want,
            "{what}: [{from}, {to})"
        );
    }
}

#[test]
fn first_unstable_offset_and_aborted_txns_follow_markers_and_hw() {
    let d = tempfile::tempdir().unwrap();
    let mut log = scenario(d.path());
    assert_eq!(log.open_transactions(), vec![open_txn(B, 5)]);
    // The abort is complete but not replicated: A's data is still unstable.
    log.set_high_watermark(7);
    assert_eq!(log.first_unstable_offset(), Some(0));
    log.set_high_watermark(8);
    check_after_abort(&log, "live");
    // The entry is on disk in the marker's segment: (v0, pid 1, first 0, marker 7, LSO 5).
    let bytes = std::fs::read(d.path().join(format!("{:020}.txnindex", 7))).unwrap();
    let mut want = vec![0u8, 0];
    for x in [A, 0, 7, 5] {
        want.extend_from_slice(&x.to_be_bytes());
    }
    assert_eq!(bytes, want);
    assert_eq!(
        std::fs::read(d.path().join(format!("{:020}.txnindex", 0))).unwrap(),
        b""
    );
    // B commits at 8: stable once the HW passes 8, and nothing more is aborted.
    marker(&mut log, B, 0, 3, ControlType::Commit).unwrap();
    assert_eq!(log.open_transactions(), vec![]);
    log.set_high_watermark(8);
    assert_eq!(
        log.first_unstable_offset(),
        Some(5),
        "commit at 8 not replicated"
    );
    log.set_high_watermark(9);
    assert_eq!(log.first_unstable_offset(), None);
    assert_eq!(log.open_transactions(), vec![]);
    assert_eq!(log.collect_aborted_txns(8, 9), vec![]);
    assert_eq!(log.collect_aborted_txns(0, 9), vec![aborted(A, 0)]);
}

#[test]
fn leader_checks_markers_and_transactional_writes() {
    let d = tempfile::tempdir().unwrap();
    let mut log = scenario(d.path());
    let code = |r: Result<AppendInfo, StorageError>| r.unwrap_err().error_code().code();
    // B is open: an idempotent batch from B is INVALID_TXN_STATE; a transactional one is fine.
    assert_eq!(code(append(&mut log, data(B, 2, 1, false))), 48);
    append(&mut log, data(B, 2, 1, true)).unwrap();
    // Markers (A's entry: epoch 0, coordinator epoch 3 from its abort).
    let cases: &[(&str, i16, i32, Option<i16>)] = &[
        ("older coordinator epoch", 0, 2, Some(52)),
        ("same epochs", 0, 3, None),
        ("bumped producer epoch", 1, 4, None),
        ("older producer epoch", 0, 9, Some(47)),
        ("older coordinator after the bump", 1, 3, Some(52)),
    ];
    for (name, epoch, coord, want) in cases {
        let end = log.log_end_offset();
        let r = marker(&mut log, A, *epoch, *coord, ControlType::Commit);
        match want {
            Some(c) => {
                assert_eq!(code(r), *c, "{name}");
                assert_eq!(log.log_end_offset(), end, "{name}: nothing appended");
            }
            None => assert_eq!(r.unwrap().base_offset, end, "{name}"),
        }
    }
    assert_eq!(log.producer_state().entry(A).unwrap().coordinator_epoch, 4);
}

#[test]
fn clean_restart_keeps_the_answers() {
    let d = tempfile::tempdir().unwrap();
    let mut log = scenario(d.path());
    log.set_high_watermark(8);
    log.close(T0).unwrap();
    drop(log);
    check_after_abort(&open(d.path(), true, 8), "clean restart");
}

#[test]
fn unclean_restart_and_lost_or_damaged_indexes_rebuild_the_answers() {
    type Tamper = fn(&Path);
    let cases: &[(&str, bool, Tamper)] = &[
        ("crash", false, |_| {}),
        ("crash, index files gone", false, |d| remove_txn_indexes(d)),
        ("crash, index with a stale entry", false, |d| {
            // A valid entry for a marker the crash lost: re-validation drops it.
            let p = d.join(format!("{:020}.txnindex", 7));
            let mut b = std::fs::read(&p).unwrap();
            b.extend_from_slice(&[0, 0]);
            for x in [9i64, 1, 100, 101] {
                b.extend_from_slice(&x.to_be_bytes());
            }
            std::fs::write(p, b).unwrap();
        }),
        ("clean, index files gone", true, |d| remove_txn_indexes(d)),
        ("clean, index entry past the segment", true, |d| {
            let p = d.join(format!("{:020}.txnindex", 7));
            let mut b = std::fs::read(&p).unwrap();
            b.extend_from_slice(&[0, 0]);
            for x in [9i64, 1, 100, 101] {
                b.extend_from_slice(&x.to_be_bytes());
            }
            std::fs::write(p, b).unwrap();
        }),
        ("clean, index torn", true, |d| {
            let p = d.join(format!("{:020}.txnindex", 7));
            let mut b = std::fs::read(&p).unwrap();
            b.extend_from_slice(&[1, 2, 3]);
            std::fs::write(p, b).unwrap();
        }),
        ("clean, index with a bad version", true, |d| {
            let p = d.join(format!("{:020}.txnindex", 7));
            let mut b = std::fs::read(&p).unwrap();
            b[1] = 9;
            std::fs::write(p, b).unwrap();
        }),
    ];
    for (name, clean, tamper) in cases {
        let d = tempfile::tempdir().unwrap();
        let mut log = scenario(d.path());
        log.set_high_watermark(8);
        if *clean {
            log.close(T0).unwrap();
        } else {
            log.flush(T0).unwrap();
        }
        drop(log);
        tamper(d.path());
        let log = open(d.path(), *clean, 8);
        check_after_abort(&log, name);
        // The rebuilt file is back with the entry.
        let len = std::fs::metadata(d.path().join(format!("{:020}.txnindex", 7)))
            .unwrap()
            .len();
        assert_eq!(len, 34, "{name}");
    }
}

fn remove_txn_indexes(dir: &Path) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.to_string_lossy().ends_with(".txnindex") {
            std::fs::remove_file(p).unwrap();
        }
    }
}

#[test]
fn an_open_transaction_survives_restarts() {
    for clean in [true, false] {
        let d = tempfile::tempdir().unwrap();
        let mut log = open(d.path(), true, 0);
        append(&mut log, data(-1, -1, 2, false)).unwrap();
        append(&mut log, data(A, 0, 2, true)).unwrap();
        log.roll(T0).unwrap();
        append(&mut log, data(A, 2, 1, true)).unwrap();
        if clean {
            log.close(T0).unwrap();
        } else {
            log.flush(T0).unwrap();
        }
        drop(log);
        let mut log = open(d.path(), clean, 5);
        assert_eq!(
            log.open_transactions(),
            vec![open_txn(A, 2)],
            "clean {clean}"
        );
        assert_eq!(log.first_unstable_offset(), Some(2));
        marker(&mut log, A, 0, 0, ControlType::Commit).unwrap();
        log.set_high_watermark(6);
        assert_eq!(log.first_unstable_offset(), None);
    }
}

#[test]
fn truncation_below_an_abort_marker_reopens_the_transaction() {
    let d = tempfile::tempdir().unwrap();
    let mut log = scenario(d.path());
    log.set_high_watermark(7);
    log.truncate_to(7).unwrap();
    assert_eq!(
        log.open_transactions(),
        vec![open_txn(A, 0), open_txn(B, 5)]
    );
    assert_eq!(log.first_unstable_offset(), Some(0));
    assert_eq!(log.collect_aborted_txns(0, 10), vec![]);
    assert_eq!(
        std::fs::metadata(d.path().join(format!("{:020}.txnindex", 7)))
            .unwrap()
            .len(),
        0
    );
    // A new abort appends cleanly, and a restart agrees.
    marker(&mut log, A, 0, 3, ControlType::Abort).unwrap();
    log.set_high_watermark(8);
    check_after_abort(&log, "re-aborted");
    log.close(T0).unwrap();
    drop(log);
    check_after_abort(&open(d.path(), true, 8), "re-aborted, restarted");
}

#[test]
fn follower_markers_index_aborts() {
    let d = tempfile::tempdir().unwrap();
    let leader = scenario(d.path());
    let f = tempfile::tempdir().unwrap();
    let mut follower = open(f.path(), true, 0);
    while follower.log_end_offset() < leader.log_end_offset() {
        let from = follower.log_end_offset();
        let r = leader.read(from, 1 << 20, i64::MAX, true).unwrap();
        let bytes = r.slice.unwrap().read_to_vec().unwrap();
        for b in skiff_record::batches(&bytes) {
            follower
                .append_as_follower(b.unwrap().1.bytes(), T0)
                .unwrap();
        }
    }
    follower.set_high_watermark(8);
    check_after_abort(&follower, "follower");
}

#[test]
fn retention_stops_at_the_first_unstable_offset() {
    let cfg = LogConfig {
        retention_ms: 1,
        ..config()
    };
    let d = tempfile::tempdir().unwrap();
    drop(scenario(d.path()));
    let later = T0 + 3_600_000;
    // Before the abort is replicated A is unstable from 0: nothing goes.
    let mut log = open_with(d.path(), true, 7, cfg.clone());
    assert_eq!(log.first_unstable_offset(), Some(0));
    assert_eq!(log.apply_retention(later, i64::MAX).unwrap(), 0);
    // Once it is, B (open at 5) holds its segment [3, 7): only [0, 3) goes.
    log.set_high_watermark(8);
    assert_eq!(log.apply_retention(later, i64::MAX).unwrap(), 1);
    assert_eq!(log.log_start_offset(), 3);
    assert_eq!(log.open_transactions(), vec![open_txn(B, 5)]);
    // DeleteRecords past B's start: the first unstable offset never lies below the log start.
    assert_eq!(log.delete_records(6).unwrap(), 6);
    assert_eq!(log.first_unstable_offset(), Some(6));
    assert_eq!(
        log.apply_retention(later, i64::MAX).unwrap(),
        0,
        "B's segment holds 6"
    );
}

#[test]
fn a_cleaner_swap_keeps_the_aborted_txns() {
    let d = tempfile::tempdir().unwrap();
    let mut log = scenario(d.path());
    append(&mut log, data(-1, -1, 1, false)).unwrap();
    log.roll(T0).unwrap();
    log.set_high_watermark(9);
    // Swap the segments [3, 7) and [7, 9) for one copy of them.
    let view = log.clean_view().unwrap();
    let group: Vec<_> = view.segments[1..3].to_vec();
    let mut cleaned = CleanedSegment::create(d.path(), 3, &config(), T0).unwrap();
    for s in &group {
        let mut scan = s.headers();
        while let Some(h) = scan.next_header().unwrap() {
            cleaned.append(&read_batch(&s.file, &h).unwrap()).unwrap();
        }
    }
    cleaned.finish(None).unwrap();
    assert!(log.replace_segments(cleaned, &group, T0).unwrap());
    check_after_abort(&log, "swapped");
    log.close(T0).unwrap();
    drop(log);
    assert!(!d.path().join(format!("{:020}.txnindex", 7)).exists());
    check_after_abort(&open(d.path(), true, 9), "swapped, restarted");
}
