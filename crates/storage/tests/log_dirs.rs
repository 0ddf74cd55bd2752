//! Log dir health (issue 12 item 4): a dir that cannot be used starts offline and the others
//! serve; the start fails only when every dir is offline, with the reasons; a write that fails
//! takes the dir offline (its logs refuse work) until the ticker's probe succeeds and its logs
//! are re-opened from disk.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use skiff_storage::{LogConfig, LogManager, LogManagerConfig, StorageError};
use skiff_types::{ErrorCode, TopicPartition};

fn cfg(dirs: Vec<std::path::PathBuf>) -> LogManagerConfig {
    LogManagerConfig {
        log_dirs: dirs,
        ..LogManagerConfig::default()
    }
}

#[test]
fn an_unusable_dir_starts_offline_and_new_partitions_go_elsewhere() {
    let root = tempfile::tempdir().unwrap();
    let good = root.path().join("good");
    // A regular file where a log dir should be: it cannot be created or listed.
    let bad = root.path().join("bad");
    std::fs::write(&bad, b"not a dir").unwrap();
    let (mgr, _) = LogManager::open(
        cfg(vec![bad.clone(), good.clone()]),
        &|_| LogConfig::default(),
        0,
    )
    .unwrap();
    let offline = mgr.offline_dirs();
    assert_eq!(offline.len(), 1);
    assert_eq!(offline[0].dir, bad);
    assert!(!mgr.all_dirs_online());
    assert!(!mgr.is_dir_online(&bad) && mgr.is_dir_online(&good));
    // Partitions are created in the online dir only, and serve.
    for p in 0..3 {
        let tp = TopicPartition::new("t", p);
        let log = mgr.get_or_create(&tp, LogConfig::default(), 0).unwrap();
        assert_eq!(mgr.dir_of(&tp), Some(good.clone()));
        mgr.check_partition_online(&tp).unwrap();
        log.lock().roll(0).unwrap();
    }
    mgr.write_checkpoints().unwrap();
    mgr.shutdown().unwrap();
    assert!(good.join(".kafka_cleanshutdown").exists());
}

#[test]
fn the_start_fails_when_every_dir_is_offline() {
    let root = tempfile::tempdir().unwrap();
    let bad = root.path().join("bad");
    std::fs::write(&bad, b"not a dir").unwrap();
    let err = LogManager::open(cfg(vec![bad]), &|_| LogConfig::default(), 0).unwrap_err();
    assert!(
        err.to_string().contains("every log dir is offline"),
        "{err}"
    );
}

#[test]
fn offline_errors_are_kafka_storage_errors() {
    let e = StorageError::LogDirOffline {
        tp: "t-0".into(),
        dir: "/d".into(),
        reason: "No space left on device".into(),
    };
    assert_eq!(e.error_code(), ErrorCode::KafkaStorageError);
}

/// A write failure without a full disk: the partition's leader-epoch checkpoint path is a
/// directory, so the first append's checkpoint write (rename onto it) fails with an I/O error.
#[test]
fn a_failed_write_takes_the_dir_offline_until_the_probe_and_reopen() {
    let root = tempfile::tempdir().unwrap();
    let (d0, d1) = (root.path().join("d0"), root.path().join("d1"));
    let (mgr, _) = LogManager::open(
        cfg(vec![d0.clone(), d1.clone()]),
        &|_| LogConfig::default(),
        0,
    )
    .unwrap();
    let (a, b) = (TopicPartition::new("t", 0), TopicPartition::new("t", 1));
    let la = mgr.get_or_create(&a, LogConfig::default(), 0).unwrap();
    let lb = mgr.get_or_create(&b, LogConfig::default(), 0).unwrap();
    assert_eq!(mgr.dir_of(&b), Some(d1.clone()));
    let blocker = d1.join("t-1").join("leader-epoch-checkpoint");
    std::fs::create_dir(&blocker).unwrap();
    std::fs::write(blocker.join("x"), b"x").unwrap();
    let batch = || common::simple_batch(&[1_000, 1_001], 100);

    let err = lb.lock().append_as_leader(&mut batch(), 0, 0).unwrap_err();
    assert!(matches!(err, StorageError::Io { .. }), "{err}");
    assert_eq!(mgr.offline_dirs().len(), 1);
    assert_eq!(mgr.offline_dirs()[0].dir, d1);
    assert!(mgr.check_partition_online(&b).is_err());
    // The log refuses further work; the other dir's log still appends.
    let err = lb.lock().append_as_leader(&mut batch(), 0, 0).unwrap_err();
    assert!(matches!(err, StorageError::LogDirOffline { .. }), "{err}");
    assert_eq!(err.error_code(), ErrorCode::KafkaStorageError);
    la.lock().append_as_leader(&mut batch(), 0, 0).unwrap();
    mgr.check_partition_online(&a).unwrap();
    // The ticker keeps working for the online dir while the blocker is there...
    mgr.tick(2_000).unwrap();
    assert!(
        !mgr.all_dirs_online(),
        "re-open still fails on the checkpoint"
    );
    // ...and brings the dir back once it can be written again.
    std::fs::remove_dir_all(&blocker).unwrap();
    mgr.tick(4_000).unwrap();
    assert!(mgr.all_dirs_online());
    let info = lb.lock().append_as_leader(&mut batch(), 0, 0).unwrap();
    // The failed append had written its batch before the checkpoint failed: the re-open kept
    // it (whole and valid, never acknowledged), so the next batch follows it.
    assert_eq!(info.base_offset, 2);
    let l = lb.lock();
    assert_eq!(l.log_end_offset(), 4);
    let read = l.read(0, 1 << 20, 4, true).unwrap();
    assert!(read.slice.is_some());
}

/// Checkpoints are rewritten when what they hold changes, not on every tick: an idle
/// broker leaves identical files alone (no rewrite, no fsync).
#[test]
fn unchanged_checkpoints_are_not_rewritten() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("d");
    let (mgr, _) = LogManager::open(cfg(vec![dir.clone()]), &|_| LogConfig::default(), 0).unwrap();
    let tp = TopicPartition::new("t", 0);
    let log = mgr.get_or_create(&tp, LogConfig::default(), 0).unwrap();
    mgr.write_checkpoints().unwrap();
    let file = dir.join("replication-offset-checkpoint");
    let inode = |p: &std::path::Path| {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(p).unwrap().ino()
    };
    let first = inode(&file);
    mgr.write_checkpoints().unwrap();
    assert_eq!(inode(&file), first, "identical content: not replaced");
    {
        let mut l = log.lock();
        l.append_as_leader(&mut common::simple_batch(&[1_000, 1_001], 100), 0, 0)
            .unwrap();
        let end = l.log_end_offset();
        l.set_high_watermark(end);
    }
    mgr.write_checkpoints().unwrap();
    assert_ne!(
        inode(&file),
        first,
        "changed content: replaced (tmp + rename)"
    );
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("t 0 2"), "{text}");
}
