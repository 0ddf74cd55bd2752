//! Log dir health at start (issue 12 item 4): a dir that cannot be used starts offline and the
//! others serve; the start fails only when every dir is offline, with the reasons.
#![allow(clippy::unwrap_used, clippy::expect_used)]

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
