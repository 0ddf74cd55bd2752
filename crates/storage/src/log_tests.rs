//! Smoke tests of the `Log` shell; the full behaviour tables live in `tests/`.

use skiff_record::{BatchBuilder, BatchOptions, BatchView};
use skiff_types::TopicPartition;

use crate::{Log, LogConfig, LogOpenOptions};

fn batch(n: usize, ts: i64) -> Vec<u8> {
    let mut b = BatchBuilder::new(BatchOptions::default());
    for i in 0..n {
        let v = format!("value-{i}");
        b.append(ts + i as i64, Some(b"k"), Some(v.as_bytes()), &[]);
    }
    b.build().unwrap()
}

fn open(dir: &std::path::Path, clean: bool) -> Log {
    let opts = LogOpenOptions {
        recovery_point: 0,
        log_start_offset: 0,
        high_watermark: 0,
        clean_shutdown: clean,
        now_ms: 0,
    };
    Log::open(
        dir,
        TopicPartition::new("t", 0),
        LogConfig {
            index_interval_bytes: 0,
            ..LogConfig::default()
        },
        opts,
    )
    .unwrap()
    .0
}

#[test]
fn append_read_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), true);
    for i in 0..10 {
        let mut b = batch(3, 1000 + i * 10);
        let info = log.append_as_leader(&mut b, 5, 0).unwrap();
        assert_eq!(info.base_offset, i * 3);
    }
    assert_eq!(log.log_end_offset(), 30);
    log.set_high_watermark(30);
    let r = log.read(4, 1 << 20, 30, true).unwrap();
    let bytes = r.slice.unwrap().read_to_vec().unwrap();
    let first =
        BatchView::new(&bytes[..skiff_record::peek_batch_size(&bytes).unwrap().unwrap()]).unwrap();
    assert_eq!(first.base_offset(), 3);
    assert_eq!(r.first_batch_offset, 3);
    let t = log.offset_for_timestamp(1031, 30).unwrap().unwrap();
    assert_eq!((t.offset, t.timestamp), (10, 1031));
    assert_eq!(
        log.offset_for_timestamp(-3, 30).unwrap().unwrap().timestamp,
        1092
    );
    log.close(0).unwrap();
    drop(log);
    let log = open(dir.path(), false);
    assert_eq!(log.log_end_offset(), 30);
    assert_eq!(log.leader_epochs().latest_epoch(), Some(5));
    let t = log.offset_for_timestamp(1031, 30).unwrap().unwrap();
    assert_eq!(t.offset, 10);
}

#[test]
fn roll_truncate_and_retention() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), true);
    for i in 0..6 {
        let mut b = batch(2, 100 * i);
        log.append_as_leader(&mut b, 0, 0).unwrap();
        log.roll(0).unwrap();
    }
    assert_eq!(log.segment_count(), 7);
    log.truncate_to(5).unwrap();
    assert_eq!(
        log.log_end_offset(),
        4,
        "the batch holding offset 5 goes whole"
    );
    log.set_high_watermark(4);
    let mut cfg = log.config().clone();
    cfg.retention_ms = 50;
    log.update_config(cfg);
    let deleted = log.apply_retention(1000, i64::MAX).unwrap();
    assert!(deleted >= 1);
    assert!(log.log_start_offset() > 0);
}
