//! §2.6: retention by time and size, and DeleteRecords moving the log start offset.

use super::*;

#[test]
fn retention_ms_deletes_old_segments_by_record_time() {
    // §2.10 #6: retention.ms=5000 with segment.ms=1000.
    let dir = tempdir();
    let mut cfg = LogConfig::default();
    cfg.set("retention.ms", "5000").unwrap();
    cfg.set("segment.ms", "1000").unwrap();
    let mut log = new_log(dir.path(), &cfg);
    let t = NOW;
    for ts in [t, t + 500, t + 1200, t + 1900, t + 2500, t + 3700] {
        append(&mut log, simple_batch(&[ts], 10), 0, t + 4000);
    }
    let bases: Vec<i64> = log.segments().map(|s| s.base_offset()).collect();
    assert_eq!(bases, vec![0, 2, 4, 5], "message-time rolls");
    // The HW caps retention: a segment whose upper bound is above it stays.
    log.set_high_watermark(3);
    assert_eq!(log.apply_retention(t + 60 * MIN, i64::MAX).unwrap(), 1);
    assert_eq!(log.log_start_offset(), 2);
    log.set_high_watermark(6);
    assert_eq!(
        log.apply_retention(t + 5500, i64::MAX).unwrap(),
        0,
        "segment 2 (max ts t+1900) is 3.6 s old"
    );
    assert_eq!(
        log.apply_retention(t + 6900, i64::MAX).unwrap(),
        0,
        "exactly retention.ms old stays"
    );
    assert_eq!(
        log.apply_retention(t + 6901, i64::MAX).unwrap(),
        1,
        "t+1900 is now > 5 s old"
    );
    assert_eq!(log.log_start_offset(), 4);
    assert_eq!(
        log.offset_for_timestamp(-2, 6).unwrap().unwrap().offset,
        4,
        "beginningOffsets moves to a segment base"
    );
    assert!(matches!(
        log.read(3, 100, 6, true),
        Err(StorageError::OffsetOutOfRange { .. })
    ));
    // .deleted files wait for file.delete.delay.ms.
    assert!(seg_file(dir.path(), 2, ".log.deleted").exists());
    log.delete_expired_files(t + 6901 + 59_999);
    assert!(seg_file(dir.path(), 2, ".log.deleted").exists());
    log.delete_expired_files(t + 6901 + 60_000);
    assert!(!seg_file(dir.path(), 2, ".log.deleted").exists());
    // Everything expired, including the active segment: roll an empty one, delete the rest.
    assert_eq!(log.apply_retention(t + 9000, i64::MAX).unwrap(), 2);
    assert_eq!(
        (
            log.log_start_offset(),
            log.log_end_offset(),
            log.segment_count()
        ),
        (6, 6, 1)
    );
    assert_eq!(log.offset_for_timestamp(-2, 6).unwrap().unwrap().offset, 6);
    assert!(log.read(6, 100, 6, true).unwrap().slice.is_none());
    // The delivery bound (max_removable_offset) also caps retention.
    let dir = tempdir();
    let mut log = new_log(dir.path(), &cfg);
    for ts in [t, t + 2000, t + 4000] {
        append(&mut log, simple_batch(&[ts], 10), 0, t);
    }
    log.set_high_watermark(3);
    assert_eq!(log.apply_retention(t + 60 * MIN, 1).unwrap(), 1);
    assert_eq!(log.log_start_offset(), 1);
}

#[test]
fn retention_bytes_keeps_at_most_one_extra_segment() {
    // §2.10 #7: total size stays <= X + one segment.
    let dir = tempdir();
    let mut cfg = small_config(4096);
    cfg.retention_bytes = 10_000;
    let mut log = new_log(dir.path(), &cfg);
    for round in 0..5 {
        for _ in 0..40 {
            append(&mut log, simple_batch(&[NOW; 2], 200), 0, NOW);
        }
        let leo = log.log_end_offset();
        log.set_high_watermark(leo);
        log.apply_retention(NOW, i64::MAX).unwrap();
        let sizes: Vec<u64> = log.segments().map(|s| s.size()).collect();
        let total: u64 = sizes.iter().sum();
        assert!(
            total <= 10_000 + 4096,
            "round {round}: {total} bytes in {sizes:?}"
        );
        assert!(
            total >= 10_000,
            "round {round}: retention keeps at least retention.bytes"
        );
        assert!(
            total - sizes[0] < 10_000,
            "round {round}: one more segment could not go"
        );
        assert_eq!(
            log.log_start_offset(),
            log.segments().next().unwrap().base_offset()
        );
    }
    // Compact-only topics ignore size and time retention.
    let dir = tempdir();
    let mut cfg = small_config(4096);
    cfg.retention_bytes = 0;
    cfg.set("cleanup.policy", "compact").unwrap();
    let mut log = new_log(dir.path(), &cfg);
    for _ in 0..40 {
        append(&mut log, simple_batch(&[NOW; 2], 200), 0, NOW);
    }
    log.set_high_watermark(80);
    assert_eq!(log.apply_retention(NOW, i64::MAX).unwrap(), 0);
}

#[test]
fn delete_records_moves_the_log_start_offset() {
    // §2.6 DeleteRecords, §2.10 #8.
    let dir = tempdir();
    let mut log = new_log(dir.path(), &small_config(2048));
    for i in 0..20 {
        append(&mut log, simple_batch(&[NOW + i; 4], 100), 0, NOW);
    }
    log.set_high_watermark(60);
    assert_eq!(log.delete_records(5).unwrap(), 5);
    assert_eq!(log.offset_for_timestamp(-2, 60).unwrap().unwrap().offset, 5);
    assert!(matches!(
        log.read(3, 1 << 20, 60, true),
        Err(StorageError::OffsetOutOfRange { .. })
    ));
    // A read at the new start returns the whole batch holding it (4..7); clients drop 4.
    let r = log.read(5, 1 << 20, 60, true).unwrap();
    assert_eq!(r.first_batch_offset, 4);
    // Timestamp lookups never answer below the start offset.
    assert_eq!(log.offset_for_timestamp(0, 60).unwrap().unwrap().offset, 5);
    // -3: the newest timestamp is at 76, above the HW bound 60 (not found) but below 80.
    assert_eq!(
        log.offset_for_timestamp(-3, 80).unwrap(),
        ts_offset(76, NOW + 19, 0)
    );
    assert_eq!(log.offset_for_timestamp(-3, 60).unwrap(), None);
    // Never moves back; above the HW or negative is OFFSET_OUT_OF_RANGE.
    assert_eq!(log.delete_records(2).unwrap(), 5);
    assert!(matches!(
        log.delete_records(61),
        Err(DeleteRecordsError::OffsetOutOfRange { .. })
    ));
    assert!(matches!(
        log.delete_records(-5),
        Err(DeleteRecordsError::OffsetOutOfRange { .. })
    ));
    // -1 = up to the HW; whole segments below go at the next retention pass.
    assert_eq!(log.delete_records(-1).unwrap(), 60);
    let segments_before = log.segment_count();
    let deleted = log.apply_retention(NOW, i64::MAX).unwrap();
    assert!(deleted > 0 && log.segment_count() == segments_before - deleted);
    assert!(log.segments().next().unwrap().base_offset() <= 60);
    assert_eq!(log.log_start_offset(), 60);
    assert_eq!(
        read_all(&log, 80)
            .first()
            .map(|b| BatchView::new(b).unwrap().base_offset()),
        Some(60)
    );
    // The start offset survives a reopen through the checkpointed value.
    log.close(NOW).unwrap();
    drop(log);
    let (log, _) = Log::open(
        dir.path(),
        tp(),
        small_config(2048),
        skiff_storage::LogOpenOptions {
            log_start_offset: 60,
            ..opts(true, 80, NOW)
        },
    )
    .unwrap();
    assert_eq!(log.log_start_offset(), 60);

    // Compact-only topic: POLICY_VIOLATION; compact,delete is allowed.
    for (policy, allowed) in [
        ("compact", false),
        ("compact,delete", true),
        ("delete", true),
    ] {
        let dir = tempdir();
        let mut cfg = LogConfig::default();
        cfg.set("cleanup.policy", policy).unwrap();
        let mut log = new_log(dir.path(), &cfg);
        append(&mut log, simple_batch(&[NOW; 3], 10), 0, NOW);
        log.set_high_watermark(3);
        let r = log.delete_records(2);
        assert_eq!(r.is_ok(), allowed, "{policy}: {r:?}");
        if !allowed {
            assert!(matches!(r, Err(DeleteRecordsError::PolicyViolation)));
            assert_eq!(log.log_start_offset(), 0);
        }
    }
}
