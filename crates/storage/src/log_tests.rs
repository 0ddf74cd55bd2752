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

/// The whole log's bytes, segment after segment (also used by `combine_tests`).
pub(crate) fn log_bytes(log: &Log) -> Vec<u8> {
    let mut out = Vec::new();
    for seg in log.segments() {
        out.extend(std::fs::read(seg.log_path()).unwrap());
    }
    out
}

#[test]
fn append_validated_writes_what_append_as_leader_writes() {
    use skiff_record::{Compression, TimestampType};

    use crate::validate::{TargetCompression, ValidationConfig, validate_client_batch};

    let configs = [
        ValidationConfig::default(),
        ValidationConfig {
            timestamp_type: TimestampType::LogAppendTime,
            ..ValidationConfig::default()
        },
        ValidationConfig {
            compression: TargetCompression::Codec {
                codec: Compression::Zstd,
                level: None,
            },
            ..ValidationConfig::default()
        },
    ];
    for cfg in configs {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (mut split, mut whole) = (open(a.path(), true), open(b.path(), true));
        for i in 0..12i64 {
            let codec = Compression::ALL[i as usize % Compression::ALL.len()];
            let mut builder = BatchBuilder::new(BatchOptions {
                compression: codec,
                producer_id: if i % 3 == 0 { 9 } else { -1 },
                producer_epoch: if i % 3 == 0 { 0 } else { -1 },
                base_sequence: if i % 3 == 0 { (i / 3 * 4) as i32 } else { -1 },
                ..BatchOptions::default()
            });
            for r in 0..4 {
                let v = format!("value-{i}-{r}");
                builder.append(1000 + i * 10 + r, Some(b"k"), Some(v.as_bytes()), &[]);
            }
            let client = builder.build().unwrap();
            let v = validate_client_batch(&client, &cfg, 5000 + i).unwrap();
            let x = split.append_validated(&v, 7, 0).unwrap();
            let y = whole.append_as_leader(&mut v.to_vec(), 7, 0).unwrap();
            assert_eq!(x, y, "{cfg:?} batch {i}");
            assert_eq!(x.size, v.size());
            if i == 5 {
                split.roll(0).unwrap();
                whole.roll(0).unwrap();
            }
        }
        assert_eq!(log_bytes(&split), log_bytes(&whole), "{cfg:?}");
        assert_eq!(split.log_end_offset(), 48);
        assert_eq!(split.segment_count(), 2);
        assert_eq!(split.leader_epochs().latest_epoch(), Some(7));
        // Every stored batch is whole, stamped, and has a good CRC.
        let bytes = log_bytes(&split);
        let mut next = 0;
        for item in skiff_record::batches(&bytes) {
            let (_, view) = item.unwrap();
            view.verify_crc().unwrap();
            assert_eq!(
                (view.base_offset(), view.partition_leader_epoch()),
                (next, 7)
            );
            next = view.next_offset();
        }
        assert_eq!(next, 48);
    }
}

#[test]
fn append_validated_detects_duplicates_and_inconsistent_pieces() {
    use crate::validate::{ValidationConfig, validate_client_batch};

    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), true);
    let mut builder = BatchBuilder::new(BatchOptions {
        producer_id: 3,
        producer_epoch: 0,
        base_sequence: 0,
        ..BatchOptions::default()
    });
    builder.append(100, Some(b"k"), Some(b"v"), &[]);
    builder.append(101, Some(b"k"), Some(b"w"), &[]);
    let client = builder.build().unwrap();
    log.append_as_leader(&mut batch(3, 50), 0, 0).unwrap();
    let v = validate_client_batch(&client, &ValidationConfig::default(), 200).unwrap();
    let first = log.append_validated(&v, 0, 0).unwrap();
    assert_eq!((first.base_offset, first.duplicate), (3, false));
    let again = log.append_validated(&v, 0, 0).unwrap();
    assert!(again.duplicate);
    assert_eq!(
        (again.base_offset, again.last_offset, again.size),
        (3, 4, 0)
    );
    assert_eq!(log.log_end_offset(), 5);

    // A body that disagrees with the header's batchLength appends nothing.
    let size_before = log.size_bytes();
    let mut short = validate_client_batch(&batch(2, 300), &ValidationConfig::default(), 400)
        .unwrap()
        .into_owned();
    short.body.to_mut().pop();
    let e = log.append_validated(&short, 0, 0).unwrap_err();
    assert!(e.to_string().contains("disagree"), "{e}");
    let mut bad_magic = validate_client_batch(&batch(2, 300), &ValidationConfig::default(), 400)
        .unwrap()
        .into_owned();
    bad_magic.header[16] = 1;
    assert!(log.append_validated(&bad_magic, 0, 0).is_err());
    assert_eq!(log.size_bytes(), size_before);
    assert_eq!(log.log_end_offset(), 5);
}

/// Truncation lowers the synced mark: records appended again below the old mark are fsynced
/// again (a follower truncating on divergence, the metadata log on a Raft conflict).
#[test]
fn truncation_lowers_the_synced_mark_so_reappends_are_fsynced() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), true);
    for i in 0..4 {
        let mut b = batch(5, 1000 + i * 10);
        log.append_as_leader(&mut b, 0, 0).unwrap();
    }
    let sync = log.sync();
    assert_eq!(sync.sync_to(20).unwrap(), 1);
    assert_eq!(sync.synced(), 20);
    log.truncate_to(10).unwrap();
    assert_eq!(log.sync().synced(), 10);
    let mut b = batch(5, 2000);
    log.append_as_leader(&mut b, 1, 0).unwrap();
    assert_eq!(log.log_end_offset(), 15);
    // Without the lowered mark this returned 0: "already synced" up to 20.
    assert_eq!(log.sync().sync_to(15).unwrap(), 1);
    assert_eq!(log.sync().synced(), 15);
}
