//! Moving a partition's log between log dirs (AlterReplicaLogDirs, issue 15 item 4): the data,
//! offsets and log start survive the move and a restart; a crash at each step of the move is
//! finished or undone at the next start, never losing the log.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};

use skiff_storage::log_manager::{FUTURE_DIR_SUFFIX, MoveOutcome};
use skiff_storage::{LogConfig, LogManager, LogManagerConfig, StorageError};
use skiff_types::TopicPartition;

fn open(dirs: &[&Path]) -> std::sync::Arc<LogManager> {
    let cfg = LogManagerConfig {
        log_dirs: dirs.iter().map(|d| d.to_path_buf()).collect(),
        ..LogManagerConfig::default()
    };
    LogManager::open(cfg, &|_| LogConfig::default(), 0)
        .unwrap()
        .0
}

/// A log of 10 batches (2 records each) with its log start moved to 4 and HW at the end, in
/// dir `d0` of a manager over `d0` and `d1`.
fn populated(d0: &Path, d1: &Path) -> (std::sync::Arc<LogManager>, TopicPartition) {
    let mgr = open(&[d0, d1]);
    let tp = TopicPartition::new("mv", 0);
    // The first partition goes to the first dir (both empty).
    let log = mgr.get_or_create(&tp, LogConfig::default(), 0).unwrap();
    assert_eq!(mgr.dir_of(&tp), Some(d0.to_path_buf()));
    {
        let mut l = log.lock();
        for i in 0..10 {
            let mut b = common::simple_batch(&[1_000 + i, 1_001 + i], 100);
            l.append_as_leader(&mut b, 0, 0).unwrap();
        }
        let end = l.log_end_offset();
        l.set_high_watermark(end);
        l.delete_records(4).unwrap();
    }
    mgr.write_checkpoints().unwrap();
    (mgr, tp)
}

fn offsets(mgr: &LogManager, tp: &TopicPartition) -> (i64, i64, i64, usize) {
    let log = mgr.get(tp).unwrap();
    let l = log.lock();
    let batches = common::read_all(&l, l.log_end_offset()).len();
    (
        l.log_start_offset(),
        l.log_end_offset(),
        l.high_watermark(),
        batches,
    )
}

#[test]
fn a_move_keeps_the_data_and_offsets_and_survives_a_restart() {
    let root = tempfile::tempdir().unwrap();
    let (d0, d1) = (root.path().join("d0"), root.path().join("d1"));
    let (mgr, tp) = populated(&d0, &d1);
    let before = offsets(&mgr, &tp);
    assert_eq!((before.0, before.1, before.2), (4, 20, 20));
    let handle = mgr.get(&tp).unwrap();
    assert_eq!(mgr.move_log(&tp, 0).unwrap(), MoveOutcome::AlreadyThere);
    assert_eq!(mgr.move_log(&tp, 1).unwrap(), MoveOutcome::Moved);
    assert_eq!(mgr.dir_of(&tp), Some(d1.clone()));
    assert!(d1.join("mv-0").is_dir() && !d0.join("mv-0").exists());
    assert_eq!(offsets(&mgr, &tp), before);
    // Holders of the shared handle see the moved log, and it appends into the new dir.
    let info = handle
        .lock()
        .append_as_leader(&mut common::simple_batch(&[2_000], 10), 0, 0)
        .unwrap();
    assert_eq!(info.base_offset, 20);
    assert_eq!(handle.lock().dir(), d1.join("mv-0"));
    handle.lock().set_high_watermark(21);
    mgr.shutdown().unwrap();
    drop((mgr, handle));
    let mgr = open(&[&d0, &d1]);
    assert_eq!(mgr.dir_of(&tp), Some(d1.clone()));
    assert_eq!(offsets(&mgr, &tp), (4, 21, 21, before.3 + 1));
    // Not hosted: REPLICA_NOT_AVAILABLE's error.
    let err = mgr
        .move_log(&TopicPartition::new("nope", 0), 0)
        .unwrap_err();
    assert!(matches!(err, StorageError::NotHosted(_)), "{err}");
}

/// Copies the partition dir as the move's step 2 left it.
fn fake_future(d0: &Path, d1: &Path) -> PathBuf {
    let future = d1.join(format!("mv-0.00ff{FUTURE_DIR_SUFFIX}"));
    common::copy_dir(&d0.join("mv-0"), &future);
    future
}

#[test]
fn a_crash_before_the_commit_keeps_the_source_and_drops_the_copy() {
    let root = tempfile::tempdir().unwrap();
    let (d0, d1) = (root.path().join("d0"), root.path().join("d1"));
    let (mgr, tp) = populated(&d0, &d1);
    let before = offsets(&mgr, &tp);
    mgr.shutdown().unwrap();
    drop(mgr);
    let future = fake_future(&d0, &d1);
    let mgr = open(&[&d0, &d1]);
    assert!(!future.exists(), "the unfinished copy is removed");
    assert_eq!(mgr.dir_of(&tp), Some(d0.clone()));
    assert_eq!(offsets(&mgr, &tp), before);
}

#[test]
fn a_crash_after_the_commit_finishes_the_move_with_the_offsets() {
    for promoted_before_crash in [false, true] {
        let root = tempfile::tempdir().unwrap();
        let (d0, d1) = (root.path().join("d0"), root.path().join("d1"));
        let (mgr, tp) = populated(&d0, &d1);
        let before = offsets(&mgr, &tp);
        mgr.shutdown().unwrap();
        drop(mgr);
        // No clean-shutdown marker: the crash came mid-move.
        for d in [&d0, &d1] {
            let _ = std::fs::remove_file(d.join(".kafka_cleanshutdown"));
        }
        let future = fake_future(&d0, &d1);
        // Step 3 (the commit): the source renamed to -delete.
        std::fs::rename(d0.join("mv-0"), d0.join("mv-0.17-delete")).unwrap();
        if promoted_before_crash {
            // Step 4 happened too; the checkpoints were not rewritten yet.
            std::fs::rename(&future, d1.join("mv-0")).unwrap();
        }
        let mgr = open(&[&d0, &d1]);
        assert_eq!(mgr.dir_of(&tp), Some(d1.clone()), "{promoted_before_crash}");
        assert!(!future.exists() && !d0.join("mv-0.17-delete").exists());
        // The log start and HW came with it (adopted from the source dir's checkpoints).
        assert_eq!(offsets(&mgr, &tp), before, "{promoted_before_crash}");
    }
}
