//! What survives restarts: the leader-epoch cache, durable mode (flush.messages=1), and the
//! log manager (log dirs, clean-shutdown marker, KAFKA-851 checkpoints, parallel load).

use super::*;

#[test]
fn leader_epoch_cache_follows_appends_and_survives_reopen() {
    let dir = tempdir();
    let cfg = small_config(2048);
    let mut log = new_log(dir.path(), &cfg);
    for (i, epoch) in [0, 0, 1, 1, 4, 4, 4].into_iter().enumerate() {
        append(
            &mut log,
            simple_batch(&[NOW + i as i64; 2], 300),
            epoch,
            NOW,
        );
    }
    let want = [
        EpochEntry::new(0, 0),
        EpochEntry::new(1, 4),
        EpochEntry::new(4, 8),
    ];
    assert_eq!(log.leader_epochs().entries(), &want);
    assert!(log.segment_count() >= 2);
    assert_eq!(
        log.offset_for_timestamp(-2, 14)
            .unwrap()
            .unwrap()
            .leader_epoch,
        Some(0)
    );
    assert_eq!(
        log.offset_for_timestamp(-1, 14)
            .unwrap()
            .unwrap()
            .leader_epoch,
        Some(4)
    );
    assert_eq!(
        log.offset_for_timestamp(NOW + 2, 14).unwrap(),
        ts_offset(4, NOW + 2, 1)
    );
    assert_eq!(log.leader_epochs().end_offset_for(1, 14), (1, 8));
    // The file is the Kafka checkpoint format.
    let text = std::fs::read_to_string(dir.path().join("leader-epoch-checkpoint")).unwrap();
    assert_eq!(text, "0\n3\n0 0\n1 4\n4 8\n");
    drop(log);
    for (clean, rp) in [(true, 14), (false, 0), (false, 8)] {
        let (log, _) = open(dir.path(), &cfg, clean, rp);
        assert_eq!(
            log.leader_epochs().entries(),
            &want,
            "clean={clean} rp={rp}"
        );
    }
    // A follower append of an older epoch does not add an entry; a newer one does.
    let (mut log, _) = open(dir.path(), &cfg, true, 14);
    let mut b = simple_batch(&[NOW], 5);
    skiff_record::set_base_offset(&mut b, 14);
    skiff_record::set_partition_leader_epoch(&mut b, 2);
    log.append_as_follower(&b, NOW).unwrap();
    assert_eq!(log.leader_epochs().entries(), &want);
    skiff_record::set_base_offset(&mut b, 15);
    skiff_record::set_partition_leader_epoch(&mut b, 6);
    log.append_as_follower(&b, NOW).unwrap();
    assert_eq!(
        log.leader_epochs().latest_entry(),
        Some(EpochEntry::new(6, 15))
    );
    // A follower batch below the log end is refused.
    assert!(log.append_as_follower(&b, NOW).is_err());
}

#[test]
fn durable_mode_syncs_before_acknowledging() {
    let dir = tempdir();
    let mut cfg = small_config(2048);
    cfg.set("flush.messages", "1").unwrap();
    let mut log = new_log(dir.path(), &cfg);
    let info = log
        .append_as_leader(&mut simple_batch(&[NOW; 3], 10), 0, NOW)
        .unwrap();
    assert!(info.needs_sync);
    assert_eq!(log.recovery_point(), 0, "not durable before the sync");
    // The sync runs without the log (a handler releases the log's lock first).
    let sync = log.sync().clone();
    let target = info.last_offset + 1;
    let issued = std::thread::spawn(move || sync.sync_to(target).unwrap())
        .join()
        .unwrap();
    assert_eq!(issued, 1);
    assert_eq!(
        log.sync().sync_to(target).unwrap(),
        0,
        "already durable: no second fsync"
    );
    assert_eq!(log.recovery_point(), 3);
    // Rolls make the old segment durable too.
    for _ in 0..10 {
        let info = log
            .append_as_leader(&mut simple_batch(&[NOW; 2], 300), 0, NOW)
            .unwrap();
        log.sync().sync_to(info.last_offset + 1).unwrap();
        assert_eq!(log.recovery_point(), info.last_offset + 1);
    }
    assert!(log.segment_count() >= 2);

    // Non-durable: no sync asked; the recovery point moves on flush.
    let dir = tempdir();
    let mut log = new_log(dir.path(), &small_config(2048));
    let info = log
        .append_as_leader(&mut simple_batch(&[NOW; 3], 10), 0, NOW)
        .unwrap();
    assert!(!info.needs_sync);
    assert_eq!(log.recovery_point(), 0);
    assert!(!log.flush_due(NOW));
    log.flush(NOW).unwrap();
    assert_eq!(log.recovery_point(), 3);
    let mut cfg = small_config(2048);
    cfg.set("flush.messages", "2").unwrap();
    log.update_config(cfg);
    append(&mut log, simple_batch(&[NOW], 10), 0, NOW);
    assert!(!log.flush_due(NOW));
    append(&mut log, simple_batch(&[NOW], 10), 0, NOW);
    assert!(log.flush_due(NOW), "flush.messages reached");
}

// ---- the log manager ---------------------------------------------------------------------

fn mgr_config(dirs: &[&Path]) -> LogManagerConfig {
    LogManagerConfig {
        log_dirs: dirs.iter().map(|d| d.to_path_buf()).collect(),
        recovery_threads_per_dir: 4,
        ..LogManagerConfig::default()
    }
}

fn checkpoint(path: &Path) -> std::collections::BTreeMap<TopicPartition, i64> {
    OffsetCheckpointFile::new(path.to_path_buf())
        .read()
        .unwrap()
}

#[test]
fn log_manager_creates_dirs_and_uses_the_clean_shutdown_marker() {
    let tmp = tempdir();
    let dir = tmp.path().join("a").join("b").join("logs");
    let cfg = small_config(2048);
    let config_for = |_: &TopicPartition| small_config(2048);
    let (mgr, reports) = LogManager::open(mgr_config(&[&dir]), &config_for, NOW).unwrap();
    assert!(dir.is_dir(), "log dir created on first start");
    assert!(reports.is_empty());
    for f in [
        RECOVERY_POINT_CHECKPOINT,
        LOG_START_OFFSET_CHECKPOINT,
        REPLICATION_OFFSET_CHECKPOINT,
    ] {
        assert!(checkpoint(&dir.join(f)).is_empty(), "{f} written, empty");
    }
    let a = TopicPartition::new("a", 0);
    {
        let log = mgr.get_or_create(&a, cfg.clone(), NOW).unwrap();
        let mut log = log.lock();
        for _ in 0..10 {
            append(&mut log, simple_batch(&[NOW; 2], 200), 0, NOW);
        }
    }
    assert!(dir.join("a-0").is_dir());
    mgr.shutdown().unwrap();
    assert!(
        dir.join(CLEAN_SHUTDOWN_FILE).exists(),
        "marker written at shutdown"
    );
    drop(mgr);

    let (mgr, reports) = LogManager::open(mgr_config(&[&dir]), &config_for, NOW).unwrap();
    assert!(
        !dir.join(CLEAN_SHUTDOWN_FILE).exists(),
        "marker consumed at start"
    );
    assert_eq!(reports.len(), 1);
    assert_eq!(
        reports[0].1.recovered_segments, 0,
        "clean: nothing re-validated"
    );
    assert_eq!(mgr.get(&a).unwrap().lock().log_end_offset(), 20);
    assert_eq!(
        checkpoint(&dir.join(RECOVERY_POINT_CHECKPOINT)).get(&a),
        Some(&20)
    );
    drop(mgr); // a crash: no marker

    let (mgr, reports) = LogManager::open(mgr_config(&[&dir]), &config_for, NOW).unwrap();
    assert!(
        reports[0].1.recovered_segments >= 1,
        "unclean: the active segment is re-validated"
    );
    assert_eq!(mgr.get(&a).unwrap().lock().log_end_offset(), 20);
}

#[test]
fn checkpoints_list_every_hosted_partition() {
    // KAFKA-851: every hosted partition, even one that never got an append.
    let tmp = tempdir();
    let (d1, d2) = (tmp.path().join("d1"), tmp.path().join("d2"));
    let config_for = |_: &TopicPartition| small_config(2048);
    let (mgr, _) = LogManager::open(mgr_config(&[&d1, &d2]), &config_for, NOW).unwrap();
    let busy = TopicPartition::new("busy", 0);
    let idle = TopicPartition::new("idle", 3);
    let gone = TopicPartition::new("gone", 1);
    for tp in [&busy, &idle, &gone] {
        mgr.get_or_create(tp, small_config(2048), NOW).unwrap();
    }
    {
        let log = mgr.get(&busy).unwrap();
        let mut log = log.lock();
        for _ in 0..5 {
            append(&mut log, simple_batch(&[NOW; 2], 10), 0, NOW);
        }
        log.set_high_watermark(8);
        log.delete_records(3).unwrap();
    }
    assert!(mgr.delete(&gone).unwrap());
    mgr.write_checkpoints().unwrap();
    let check = |mgr: &LogManager| {
        let mut listed = std::collections::BTreeMap::new();
        for d in [&d1, &d2] {
            for f in [
                RECOVERY_POINT_CHECKPOINT,
                LOG_START_OFFSET_CHECKPOINT,
                REPLICATION_OFFSET_CHECKPOINT,
            ] {
                for (tp, off) in checkpoint(&d.join(f)) {
                    listed.insert((f, tp.clone()), off);
                    assert_eq!(
                        mgr.dir_of(&tp).as_deref(),
                        Some(d.as_path()),
                        "{tp} in the right dir's {f}"
                    );
                }
            }
        }
        for f in [
            RECOVERY_POINT_CHECKPOINT,
            LOG_START_OFFSET_CHECKPOINT,
            REPLICATION_OFFSET_CHECKPOINT,
        ] {
            assert!(
                listed.contains_key(&(f, idle.clone())),
                "{f} lists the idle partition"
            );
            assert!(
                listed.contains_key(&(f, busy.clone())),
                "{f} lists the busy partition"
            );
            assert!(
                !listed.contains_key(&(f, gone.clone())),
                "{f} drops a deleted partition"
            );
        }
        assert_eq!(listed[&(LOG_START_OFFSET_CHECKPOINT, busy.clone())], 3);
        assert_eq!(listed[&(REPLICATION_OFFSET_CHECKPOINT, busy.clone())], 8);
        assert_eq!(listed[&(REPLICATION_OFFSET_CHECKPOINT, idle.clone())], 0);
    };
    check(&mgr);
    assert_ne!(
        mgr.dir_of(&busy),
        mgr.dir_of(&idle),
        "new logs spread over the log dirs"
    );
    mgr.shutdown().unwrap();
    drop(mgr);
    let (mgr, _) = LogManager::open(mgr_config(&[&d1, &d2]), &config_for, NOW).unwrap();
    check(&mgr);
    assert_eq!(mgr.get(&busy).unwrap().lock().log_start_offset(), 3);
    assert_eq!(mgr.get(&busy).unwrap().lock().high_watermark(), 8);
    assert!(mgr.get(&gone).is_none());
}

#[test]
fn many_partitions_load_in_parallel() {
    let tmp = tempdir();
    let dir = tmp.path().join("logs");
    let config_for = |_: &TopicPartition| small_config(2048);
    let tps: Vec<TopicPartition> = (0..40)
        .map(|i| TopicPartition::new(format!("t{}", i % 4), i / 4))
        .collect();
    {
        let (mgr, _) = LogManager::open(mgr_config(&[&dir]), &config_for, NOW).unwrap();
        for (i, tp) in tps.iter().enumerate() {
            let log = mgr.get_or_create(tp, small_config(2048), NOW).unwrap();
            let mut log = log.lock();
            for _ in 0..=i % 5 {
                append(&mut log, simple_batch(&[NOW; 3], 300), 0, NOW);
            }
        }
        mgr.shutdown().unwrap();
    }
    for clean in [true, false] {
        if !clean {
            // Simulate a crash after the last clean start.
            let (mgr, _) = LogManager::open(mgr_config(&[&dir]), &config_for, NOW).unwrap();
            drop(mgr);
        }
        let (mgr, reports) = LogManager::open(mgr_config(&[&dir]), &config_for, NOW).unwrap();
        assert_eq!(reports.len(), 40);
        for (i, tp) in tps.iter().enumerate() {
            let log = mgr.get(tp).unwrap_or_else(|| panic!("{tp} loaded"));
            let log = log.lock();
            assert_eq!(
                log.log_end_offset(),
                3 * (i as i64 % 5 + 1),
                "{tp} clean={clean}"
            );
            read_all(&log, i64::MAX);
        }
        let recovered: usize = reports.iter().map(|(_, r)| r.recovered_segments).sum();
        if clean {
            assert_eq!(recovered, 0);
        } else {
            assert!(recovered >= 40);
        }
        mgr.shutdown().unwrap();
    }
}
