//! Table tests for the behaviours of spec §1.8 and §2.10 that storage alone decides, driven the
//! way a Produce/Fetch/ListOffsets/DeleteRecords handler drives storage: validate the client's
//! bytes, append as leader, read under a bound, look offsets up by timestamp. Time is always an
//! explicit `now`; nothing sleeps.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

#[path = "behaviour/durability.rs"]
mod durability;
#[path = "behaviour/offsets.rs"]
mod offsets;
#[path = "behaviour/retention.rs"]
mod retention;

use std::path::Path;

use common::*;
use skiff_record::{BatchView, Compression, TimestampType};
use skiff_storage::checkpoint::OffsetCheckpointFile;
use skiff_storage::leader_epoch::EpochEntry;
use skiff_storage::log::DeleteRecordsError;
use skiff_storage::log_manager::{
    CLEAN_SHUTDOWN_FILE, LOG_START_OFFSET_CHECKPOINT, RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
};
use skiff_storage::read::TimestampOffset;
use skiff_storage::validate::{ValidationConfig, validate_client_batch};
use skiff_storage::{AppendInfo, Log, LogConfig, LogManager, LogManagerConfig, StorageError};
use skiff_types::{ErrorCode, TopicPartition};

/// The broker's "now" in these tests.
const NOW: i64 = T0 + 86_400_000;
const MIN: i64 = 60_000;

fn new_log(dir: &Path, config: &LogConfig) -> Log {
    open(dir, config, true, 0).0
}

/// What a Produce handler does for one partition: validate, then append as leader.
fn produce(
    log: &mut Log,
    batch: &[u8],
    cfg: &ValidationConfig,
    now: i64,
) -> Result<AppendInfo, ErrorCode> {
    let v = validate_client_batch(batch, cfg, now).map_err(|e| e.code)?;
    log.append_validated(&v, 0, now).map_err(|e| e.error_code())
}

fn ts_offset(offset: i64, timestamp: i64, epoch: i32) -> Option<TimestampOffset> {
    Some(TimestampOffset {
        offset,
        timestamp,
        leader_epoch: Some(epoch),
    })
}

fn offsets_of(batches: &[Vec<u8>]) -> Vec<i64> {
    record_timestamps(batches)
        .into_iter()
        .map(|(o, _)| o)
        .collect()
}

// ---- §1.8: timestamps -------------------------------------------------------------------

#[test]
fn offset_for_timestamp_table() {
    // §1.8 #8-#11: timestamps B, B+2000, B+1000 at offsets 0, 1, 2; one batch, three batches,
    // and three segments.
    let b = NOW - 60 * MIN;
    for layout_kind in ["one batch", "three batches", "three segments"] {
        let dir = tempdir();
        let mut log = new_log(
            dir.path(),
            &LogConfig {
                retention_ms: -1,
                ..LogConfig::default()
            },
        );
        let stamps = [b, b + 2000, b + 1000];
        match layout_kind {
            "one batch" => {
                append(&mut log, simple_batch(&stamps, 10), 5, NOW);
            }
            _ => {
                for t in stamps {
                    append(&mut log, simple_batch(&[t], 10), 5, NOW);
                    if layout_kind == "three segments" {
                        log.roll(NOW).unwrap();
                    }
                }
            }
        }
        log.set_high_watermark(3);
        let leo = log.log_end_offset();
        assert_eq!(leo, 3);
        let table: Vec<(i64, i64, Option<TimestampOffset>)> = vec![
            (b + 1500, 3, ts_offset(1, b + 2000, 5)),
            (b + 500, 3, ts_offset(1, b + 2000, 5)),
            (b, 3, ts_offset(0, b, 5)),
            (0, 3, ts_offset(0, b, 5)),
            (b + 1000, 3, ts_offset(1, b + 2000, 5)),
            (b + 2000, 3, ts_offset(1, b + 2000, 5)),
            (b + 2001, 3, None),                // #9: beyond every timestamp
            (-3, 3, ts_offset(1, b + 2000, 5)), // #10
            (
                -2,
                3,
                Some(TimestampOffset {
                    offset: 0,
                    timestamp: -1,
                    leader_epoch: Some(5),
                }),
            ),
            (
                -1,
                3,
                Some(TimestampOffset {
                    offset: 3,
                    timestamp: -1,
                    leader_epoch: Some(5),
                }),
            ),
            // #11: -1 answers the caller's bound (HW / LSO), not the log end.
            (
                -1,
                2,
                Some(TimestampOffset {
                    offset: 2,
                    timestamp: -1,
                    leader_epoch: Some(5),
                }),
            ),
            // Answers at or above the bound are "not found".
            (b + 500, 1, None),
            (-3, 1, None),
            (b, 1, ts_offset(0, b, 5)),
            (b + 1500, 2, ts_offset(1, b + 2000, 5)),
        ];
        for (ts, bound, want) in table {
            assert_eq!(
                log.offset_for_timestamp(ts, bound).unwrap(),
                want,
                "{layout_kind}: ts {ts} bound {bound}"
            );
        }
        assert!(
            log.offset_for_timestamp(-4, 3).is_err(),
            "unknown special timestamp"
        );
    }
}

#[test]
fn log_append_time_rewrites_only_max_timestamp_and_crc() {
    // §1.8 #2, #3: LogAppendTime topic, a compressed batch of 10 records (one stamped 0).
    let cfg = ValidationConfig {
        timestamp_type: TimestampType::LogAppendTime,
        ..ValidationConfig::default()
    };
    let dir = tempdir();
    let mut log = new_log(dir.path(), &LogConfig::default());
    let stamps: Vec<i64> = (0..10)
        .map(|i| if i == 0 { 0 } else { NOW - 5 * MIN + i })
        .collect();
    let client = codec_batch(Compression::Lz4, &stamps, 50);
    let v = validate_client_batch(&client, &cfg, NOW).unwrap();
    assert_eq!(v.log_append_time_ms, NOW);
    assert_eq!(v.max_timestamp, NOW);
    assert!(!v.recompressed, "producer codec kept");
    log.append_validated(&v, 2, NOW).unwrap();
    let stored = read_all(&log, i64::MAX);
    assert_eq!(stored.len(), 1);
    let view = BatchView::new(&stored[0]).unwrap();
    view.verify_crc().unwrap();
    assert_eq!(view.timestamp_type(), TimestampType::LogAppendTime);
    assert_eq!(
        view.compression().unwrap(),
        Compression::Lz4,
        "compressed payload kept"
    );
    assert_eq!(view.max_timestamp(), NOW);
    assert_eq!(
        view.base_timestamp(),
        0,
        "baseTimestamp left as the producer wrote it"
    );
    assert_eq!(view.records_count(), 10);
    // The compressed payload is byte-identical to the producer's.
    let client_view = BatchView::new(&client).unwrap();
    assert_eq!(view.records_bytes(), client_view.records_bytes());
    let recs = record_timestamps(&stored);
    assert_eq!(
        recs,
        (0..10).map(|o| (o, NOW)).collect::<Vec<_>>(),
        "every record reads maxTimestamp"
    );
    assert_eq!(
        log.offset_for_timestamp(NOW, 10).unwrap(),
        ts_offset(0, NOW, 2)
    );
    assert_eq!(log.offset_for_timestamp(NOW + 1, 10).unwrap(), None);
    // Bounds are ignored on a LogAppendTime topic (§1.8 #7).
    let far = simple_batch(&[NOW + 10 * MIN], 5);
    assert!(produce(&mut log, &far, &cfg, NOW).is_ok());
}

#[test]
fn timestamp_bounds_reject_whole_batches() {
    // §1.8 #4, #5, #6, #12 and §2.10 #12 (validation answers; nothing is appended on error).
    let default = ValidationConfig::default();
    let after_1m = ValidationConfig {
        after_max_ms: MIN,
        ..ValidationConfig::default()
    };
    let before_1m = ValidationConfig {
        before_max_ms: MIN,
        ..ValidationConfig::default()
    };
    let small = ValidationConfig {
        max_message_bytes: 500,
        ..ValidationConfig::default()
    };
    let mut nonzero_base = simple_batch(&[NOW], 10);
    skiff_record::set_base_offset(&mut nonzero_base, 7);
    let mut bad_crc = simple_batch(&[NOW], 10);
    *bad_crc.last_mut().unwrap() ^= 1;
    let five = simple_batch(&[NOW, NOW, NOW + 2 * 60 * MIN, NOW, NOW], 10);
    type Case<'a> = (
        &'a str,
        Vec<u8>,
        &'a ValidationConfig,
        Result<(), ErrorCode>,
    );
    let cases: Vec<Case<'_>> = vec![
        (
            "#4 now+10min, after=1min",
            simple_batch(&[NOW + 10 * MIN], 10),
            &after_1m,
            Err(ErrorCode::InvalidTimestamp),
        ),
        (
            "#4 now+30s, after=1min",
            simple_batch(&[NOW + MIN / 2], 10),
            &after_1m,
            Ok(()),
        ),
        (
            "#5 now-1h, before=1min",
            simple_batch(&[NOW - 60 * MIN], 10),
            &before_1m,
            Err(ErrorCode::InvalidTimestamp),
        ),
        (
            "#5 now-10s, before=1min",
            simple_batch(&[NOW - 10_000], 10),
            &before_1m,
            Ok(()),
        ),
        (
            "#6 one bad record of five",
            five.clone(),
            &default,
            Err(ErrorCode::InvalidTimestamp),
        ),
        (
            "#12 now+2h, default after=1h",
            simple_batch(&[NOW + 120 * MIN], 10),
            &default,
            Err(ErrorCode::InvalidTimestamp),
        ),
        (
            "now+59min, default after=1h",
            simple_batch(&[NOW + 59 * MIN], 10),
            &default,
            Ok(()),
        ),
        (
            "ts -1 is not checked",
            simple_batch(&[-1], 10),
            &after_1m,
            Ok(()),
        ),
        (
            "very old is fine by default",
            simple_batch(&[1], 10),
            &default,
            Ok(()),
        ),
        (
            "2.10#12 non-zero baseOffset",
            nonzero_base,
            &default,
            Err(ErrorCode::InvalidRecord),
        ),
        (
            "2.10#12 bad CRC",
            bad_crc,
            &default,
            Err(ErrorCode::CorruptMessage),
        ),
        (
            "2.10#12 > max.message.bytes",
            simple_batch(&[NOW], 600),
            &small,
            Err(ErrorCode::MessageTooLarge),
        ),
        (
            "just under max.message.bytes",
            simple_batch(&[NOW], 400),
            &small,
            Ok(()),
        ),
    ];
    for (what, batch, cfg, want) in cases {
        let dir = tempdir();
        let mut log = new_log(dir.path(), &LogConfig::default());
        let got = produce(&mut log, &batch, cfg, NOW).map(|_| ());
        assert_eq!(got, want, "{what}");
        let expect_leo = if want.is_ok() { 1 } else { 0 };
        assert_eq!(
            log.log_end_offset(),
            expect_leo,
            "{what}: nothing appended on error"
        );
        assert_eq!(
            log.size_bytes(),
            if want.is_ok() { batch.len() as u64 } else { 0 },
            "{what}"
        );
    }
    // #6: the response names the bad record.
    let err = validate_client_batch(&five, &default, NOW).unwrap_err();
    assert_eq!(
        err.record_errors
            .iter()
            .map(|e| e.batch_index)
            .collect::<Vec<_>>(),
        vec![2]
    );
}
