//! Delayed delivery: header parsing and due-time tables, validation of whole batches (plain and
//! compressed), and the log shell (index file, pending FIFO, DSO, truncation, recovery).

use skiff_record::{BatchBuilder, BatchOptions, Compression, Header};
use skiff_types::{ErrorCode, TopicPartition};

use super::index::{DELIVER_AFTER_SUFFIX, DeliverAfterIndex};
use super::*;
use crate::segment::segment_file;
use crate::validate::{ValidationConfig, validate_client_batch};
use crate::{Log, LogConfig, LogOpenOptions};

const NOW: i64 = 1_700_000_000_000;

const CFG: DelayConfig = DelayConfig {
    max_ms: 900_000,
    default_ms: 0,
    clamp: false,
};

fn due(
    deliver_after: Option<&[u8]>,
    delay: Option<&[u8]>,
    cfg: DelayConfig,
) -> Result<i64, String> {
    let h = DelayHeaders {
        deliver_after: deliver_after.map(Some),
        delay: delay.map(Some),
    };
    record_due(&h, &cfg, NOW).map_err(|e| format!("{}: {}", e.header, e.message))
}

#[test]
#[allow(clippy::type_complexity)]
fn header_value_table() {
    let binary = |n: i64| n.to_be_bytes().to_vec();
    let cases: Vec<(Option<Vec<u8>>, Result<i64, ()>)> = vec![
        (Some(b"0".to_vec()), Ok(0)),
        (Some(b"3000".to_vec()), Ok(3000)),
        (Some(b"00012".to_vec()), Ok(12)),
        (Some(b"9223372036854775807".to_vec()), Ok(i64::MAX)),
        (Some(b"9223372036854775808".to_vec()), Err(())),
        (Some(b"".to_vec()), Err(())),
        (None, Err(())),
        (Some(b"-5".to_vec()), Err(())),
        (Some(b"12a".to_vec()), Err(())),
        (Some(b" 12".to_vec()), Err(())),
        // exactly 8 bytes with a non-digit: big-endian int64
        (Some(binary(3000)), Ok(3000)),
        (Some(binary(NOW)), Ok(NOW)),
        (Some(binary(-1)), Err(())),
        // 8 ASCII digits stay decimal
        (Some(b"12345678".to_vec()), Ok(12_345_678)),
        // 8 bytes of "-" and digits: a negative decimal, not a binary value
        (Some(b"-1000000".to_vec()), Err(())),
        (Some(vec![0u8; 7]), Err(())),
        (Some(vec![0u8; 9]), Err(())),
    ];
    for (v, want) in cases {
        let got = parse_header_value(v.as_deref()).map_err(|_| ());
        assert_eq!(got, want, "{v:?}");
    }
}

#[test]
fn record_due_table() {
    let clamp = DelayConfig { clamp: true, ..CFG };
    let default = DelayConfig {
        default_ms: 2_000,
        ..CFG
    };
    let abs = (NOW + 5_000).to_string();
    let far = (NOW + 1_000_000).to_string();
    let past = (NOW - 5_000).to_string();
    assert_eq!(due(None, None, CFG), Ok(NOW));
    assert_eq!(due(None, None, default), Ok(NOW + 2_000));
    assert_eq!(due(None, Some(b"3000"), CFG), Ok(NOW + 3_000));
    assert_eq!(due(None, Some(b"3000"), default), Ok(NOW + 3_000));
    assert_eq!(due(Some(abs.as_bytes()), None, CFG), Ok(NOW + 5_000));
    assert_eq!(due(Some(past.as_bytes()), None, CFG), Ok(NOW - 5_000));
    // the absolute form wins, even when the relative one is larger or malformed
    assert_eq!(
        due(Some(abs.as_bytes()), Some(b"800000"), CFG),
        Ok(NOW + 5_000)
    );
    assert_eq!(
        due(Some(abs.as_bytes()), Some(b"junk"), CFG),
        Ok(NOW + 5_000)
    );
    // binary 8-byte values
    assert_eq!(
        due(None, Some(&3_000i64.to_be_bytes()), CFG),
        Ok(NOW + 3_000)
    );
    assert_eq!(due(Some(&(NOW + 7).to_be_bytes()), None, CFG), Ok(NOW + 7));
    // the max: reject names the header, clamp caps
    assert_eq!(due(None, Some(b"900000"), CFG), Ok(NOW + 900_000));
    let e = due(None, Some(b"900001"), CFG).unwrap_err();
    assert!(e.starts_with("__delay_ms: ") && e.contains("900001"), "{e}");
    assert_eq!(due(None, Some(b"900001"), clamp), Ok(NOW + 900_000));
    let e = due(Some(far.as_bytes()), None, CFG).unwrap_err();
    assert!(e.starts_with("__deliver_after_ms: "), "{e}");
    assert_eq!(due(Some(far.as_bytes()), None, clamp), Ok(NOW + 900_000));
    // malformed / negative: rejected whatever the policy
    for cfg in [CFG, clamp] {
        assert!(
            due(None, Some(b"-1"), cfg)
                .unwrap_err()
                .contains("negative")
        );
        assert!(due(None, Some(&(-5i64).to_be_bytes()), cfg).is_err());
        assert!(
            due(Some(b"soon"), None, cfg)
                .unwrap_err()
                .starts_with("__deliver_after_ms")
        );
    }
    let null = DelayHeaders {
        deliver_after: None,
        delay: Some(None),
    };
    assert!(record_due(&null, &CFG, NOW).is_err());
}

#[test]
fn observe_keeps_the_last_occurrence_and_ignores_other_keys() {
    let mut h = DelayHeaders::default();
    h.observe(b"__delay_ms", Some(b"1"));
    h.observe(b"x", Some(b"2"));
    h.observe(b"__delay_msx", Some(b"3"));
    h.observe(b"__delay_ms", Some(b"4"));
    assert_eq!(h.delay, Some(Some(&b"4"[..])));
    assert_eq!(h.deliver_after, None);
}

type Rec<'a> = Vec<(&'a str, &'a [u8])>;

fn batch_with(records: &[Rec<'_>], compression: Compression) -> Vec<u8> {
    let mut b = BatchBuilder::new(BatchOptions {
        compression,
        ..BatchOptions::default()
    });
    for (i, hs) in records.iter().enumerate() {
        let hs: Vec<Header<'_>> = hs
            .iter()
            .map(|(k, v)| Header {
                key: k.as_bytes(),
                value: Some(v),
            })
            .collect();
        b.append(NOW, Some(format!("k{i}").as_bytes()), Some(b"v"), &hs);
    }
    b.build().unwrap()
}

fn vcfg(d: Option<DelayConfig>) -> ValidationConfig {
    ValidationConfig {
        delivery: d,
        ..ValidationConfig::default()
    }
}

#[test]
#[allow(clippy::type_complexity)]
fn validation_computes_the_batch_due_time() {
    let plain: Rec<'_> = vec![("h", b"v")];
    let d3: Rec<'_> = vec![("__delay_ms", b"3000")];
    let d1: Rec<'_> = vec![("other", b"x"), ("__delay_ms", b"1000")];
    let bad: Rec<'_> = vec![("__delay_ms", b"soon")];
    let long: Rec<'_> = vec![("__delay_ms", b"900001")];
    for codec in [Compression::None, Compression::Zstd, Compression::Lz4] {
        // (records, config, Ok(due) | Err(bad indexes))
        let cases: Vec<(
            Vec<Rec<'_>>,
            Option<DelayConfig>,
            Result<Option<i64>, Vec<i32>>,
        )> = vec![
            (vec![plain.clone()], Some(CFG), Ok(None)),
            (vec![d3.clone()], Some(CFG), Ok(Some(NOW + 3_000))),
            (vec![d3.clone()], None, Ok(None)),
            (vec![bad.clone()], None, Ok(None)),
            (
                vec![plain.clone(), d1.clone(), d3.clone(), plain.clone()],
                Some(CFG),
                Ok(Some(NOW + 3_000)),
            ),
            (
                vec![plain.clone()],
                Some(DelayConfig {
                    default_ms: 500,
                    ..CFG
                }),
                Ok(Some(NOW + 500)),
            ),
            (
                vec![plain.clone(), bad.clone(), d3.clone(), bad.clone()],
                Some(CFG),
                Err(vec![1, 3]),
            ),
            (vec![long.clone()], Some(CFG), Err(vec![0])),
            (
                vec![long.clone()],
                Some(DelayConfig { clamp: true, ..CFG }),
                Ok(Some(NOW + 900_000)),
            ),
        ];
        for (recs, d, want) in cases {
            let bytes = batch_with(&recs, codec);
            let got = validate_client_batch(&bytes, &vcfg(d), NOW);
            match want {
                Ok(due) => {
                    let v = got.unwrap_or_else(|e| panic!("{codec:?} {recs:?}: {e}"));
                    assert_eq!(v.deliver_after_ms, due, "{codec:?} {recs:?}");
                    // the bytes are never modified
                    assert!(v.to_vec() == bytes, "{codec:?} batch changed");
                }
                Err(bad) => {
                    let e = got.unwrap_err();
                    assert_eq!(e.code, ErrorCode::InvalidRecord, "{codec:?} {recs:?}");
                    let idx: Vec<i32> = e.record_errors.iter().map(|r| r.batch_index).collect();
                    assert_eq!(idx, bad);
                    assert!(
                        e.record_errors.iter().all(|r| r
                            .message
                            .as_deref()
                            .is_some_and(|m| m.contains("__delay_ms"))),
                        "{e:?}"
                    );
                }
            }
        }
    }
}

fn log_config(enable: bool) -> LogConfig {
    LogConfig {
        index_interval_bytes: 0,
        delivery_delay_enable: enable,
        ..LogConfig::default()
    }
}

fn open_log(dir: &std::path::Path, cfg: LogConfig, clean: bool, now: i64) -> Log {
    let opts = LogOpenOptions {
        recovery_point: 0,
        log_start_offset: 0,
        high_watermark: 0,
        clean_shutdown: clean,
        now_ms: now,
    };
    Log::open(dir, TopicPartition::new("t", 0), cfg, opts)
        .unwrap()
        .0
}

/// Appends one batch through validation at `now`; returns its base offset.
fn produce(log: &mut Log, recs: &[Rec<'_>], codec: Compression, now: i64) -> i64 {
    let mut b = BatchBuilder::new(BatchOptions {
        compression: codec,
        ..BatchOptions::default()
    });
    for hs in recs {
        let hs: Vec<Header<'_>> = hs
            .iter()
            .map(|(k, v)| Header {
                key: k.as_bytes(),
                value: Some(v),
            })
            .collect();
        b.append(now, Some(b"k"), Some(b"v"), &hs);
    }
    let bytes = b.build().unwrap();
    let v = validate_client_batch(&bytes, &log.config().validation_config(), now).unwrap();
    let info = log.append_validated(&v, 0, now).unwrap();
    log.set_high_watermark(info.last_offset + 1);
    info.base_offset
}

fn pending(log: &Log) -> Vec<(i64, i64)> {
    log.delivery
        .iter()
        .map(|b| (b.base_offset, b.due_ms))
        .collect()
}

#[test]
fn log_tracks_delayed_batches_and_the_dso() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open_log(dir.path(), log_config(true), true, NOW);
    let plain: Rec<'_> = vec![];
    let d3: Rec<'_> = vec![("__delay_ms", b"3000")];
    let d1: Rec<'_> = vec![("__delay_ms", b"1000")];
    assert_eq!(
        produce(
            &mut log,
            &[plain.clone(), plain.clone()],
            Compression::None,
            NOW
        ),
        0
    );
    assert_eq!(log.delivery_stable_offset(NOW), None);
    assert_eq!(
        produce(&mut log, std::slice::from_ref(&d3), Compression::None, NOW),
        2
    );
    assert_eq!(
        produce(
            &mut log,
            std::slice::from_ref(&plain),
            Compression::None,
            NOW
        ),
        3
    );
    assert_eq!(
        produce(
            &mut log,
            &[d1.clone(), plain.clone()],
            Compression::Zstd,
            NOW
        ),
        4
    );
    assert_eq!(pending(&log), [(2, NOW + 3_000), (4, NOW + 1_000)]);
    assert_eq!(log.delivery_stable_offset(NOW + 1_500), Some(2));
    // a read capped at the DSO stops before the delayed batch (a batch boundary)
    let r = log.read(0, 1 << 20, 2, false).unwrap();
    let bytes = r.slice.unwrap().read_to_vec().unwrap();
    assert_eq!(skiff_record::batches(&bytes).count(), 1);
    assert_eq!(log.delivery_next_due(), Some(NOW + 3_000));
    assert_eq!(log.delivery_stable_offset(NOW + 3_000), None);
    let st = log.delivery_status(NOW + 3_000);
    assert_eq!(
        (
            st.pending_batches,
            st.next_due_ms,
            st.delivery_stable_offset,
            st.index_entries
        ),
        (0, None, None, 2)
    );
    let idx = segment_file(dir.path(), 0, DELIVER_AFTER_SUFFIX);
    assert_eq!(std::fs::metadata(&idx).unwrap().len(), 32);

    // the feature off: no cap, headers are opaque for new batches
    let mut cfg = log_config(false);
    log.update_config(cfg.clone());
    produce(
        &mut log,
        std::slice::from_ref(&d3),
        Compression::None,
        NOW + 4_000,
    );
    assert_eq!(log.delivery_stable_offset(NOW + 4_000), None);
    assert_eq!(log.delivery_status(NOW).index_entries, 2);
    // dynamic: back on, the next batch is delayed
    cfg.delivery_delay_enable = true;
    log.update_config(cfg);
    let b = produce(
        &mut log,
        std::slice::from_ref(&d3),
        Compression::None,
        NOW + 5_000,
    );
    assert_eq!(log.delivery_stable_offset(NOW + 5_000), Some(b));

    // truncation drops entries at and above the new end
    log.truncate_to(b).unwrap();
    assert_eq!(log.delivery_stable_offset(NOW + 5_000), None);
    assert_eq!(std::fs::metadata(&idx).unwrap().len(), 32);
}

/// A log with delayed batches across two segments, some still pending at `NOW + 2_500`.
fn build_delayed(dir: &std::path::Path) -> Log {
    let mut log = open_log(dir, log_config(true), true, NOW);
    let plain: Rec<'_> = vec![];
    let abs = (NOW + 10_000).to_string();
    produce(
        &mut log,
        &[vec![("__delay_ms", b"2000")]],
        Compression::None,
        NOW,
    );
    produce(
        &mut log,
        std::slice::from_ref(&plain),
        Compression::None,
        NOW,
    );
    produce(
        &mut log,
        &[vec![("__delay_ms", b"3000")]],
        Compression::Zstd,
        NOW,
    );
    log.roll(NOW).unwrap();
    produce(
        &mut log,
        &[plain.clone(), vec![("__deliver_after_ms", abs.as_bytes())]],
        Compression::None,
        NOW,
    );
    produce(
        &mut log,
        &[vec![("__delay_ms", b"5000")]],
        Compression::Gzip,
        NOW,
    );
    produce(&mut log, &[plain], Compression::None, NOW);
    log
}

#[test]
fn reopen_rebuilds_the_same_pending_state() {
    let later = NOW + 2_500;
    // clean close, then reopen
    let dir = tempfile::tempdir().unwrap();
    let mut log = build_delayed(dir.path());
    log.delivery_stable_offset(later);
    let want = pending(&log);
    assert_eq!(
        want,
        [(2, NOW + 3_000), (3, NOW + 10_000), (5, NOW + 5_000)]
    );
    log.close(later).unwrap();
    drop(log);
    let log = open_log(dir.path(), log_config(true), true, later);
    assert_eq!(pending(&log), want);

    // unclean start with the index files lost: rebuilt from the batches (CreateTime: the
    // append time is taken as at least the segment's last write, set here to the test clock)
    for base in [0, 3] {
        std::fs::remove_file(segment_file(dir.path(), base, DELIVER_AFTER_SUFFIX)).unwrap();
        std::fs::File::options()
            .write(true)
            .open(segment_file(dir.path(), base, ".log"))
            .unwrap()
            .set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_millis(NOW as u64))
            .unwrap();
    }
    drop(log);
    let log = open_log(dir.path(), log_config(true), false, later);
    assert_eq!(pending(&log), want);
    let rebuilt =
        DeliverAfterIndex::open(segment_file(dir.path(), 3, DELIVER_AFTER_SUFFIX)).unwrap();
    assert_eq!(rebuilt.entries(), 2);
    drop(log);

    // a garbled file on a clean start is rebuilt too
    std::fs::write(segment_file(dir.path(), 0, DELIVER_AFTER_SUFFIX), [7u8; 21]).unwrap();
    let mut log = open_log(dir.path(), log_config(true), true, later);
    assert_eq!(pending(&log), want);
    // entries reach the index files: 2 in segment 0, 2 in segment 3
    assert_eq!(log.delivery_status(later).index_entries, 4);
    drop(log);

    // unclean start, index intact: the surviving entries are kept as written
    let log = open_log(dir.path(), log_config(true), false, later);
    assert_eq!(pending(&log), want);
    drop(log);

    // a torn tail: the entry of the cut batch goes
    let seg = segment_file(dir.path(), 3, ".log");
    let len = std::fs::metadata(&seg).unwrap().len();
    let f = std::fs::OpenOptions::new().write(true).open(&seg).unwrap();
    let last = {
        let bytes = std::fs::read(&seg).unwrap();
        let mut pos = 0usize;
        let mut starts = Vec::new();
        while pos < bytes.len() {
            starts.push(pos);
            pos += skiff_record::peek_batch_size(&bytes[pos..])
                .unwrap()
                .unwrap();
        }
        starts[starts.len() - 2] // the __delay_ms=5000 batch
    };
    f.set_len(last as u64 + 10).unwrap();
    assert!(len > last as u64 + 10);
    let log = open_log(dir.path(), log_config(true), false, later);
    assert_eq!(log.log_end_offset(), 5);
    assert_eq!(pending(&log), [(2, NOW + 3_000), (3, NOW + 10_000)]);
    // and entries already due are not pending after a reopen later on
    drop(log);
    let log = open_log(dir.path(), log_config(true), true, NOW + 3_000);
    assert_eq!(pending(&log), [(3, NOW + 10_000)]);
}

#[test]
fn retention_stops_at_the_dso() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = build_delayed(dir.path());
    log.roll(NOW).unwrap();
    let mut cfg = log.config().clone();
    cfg.retention_ms = 1;
    log.update_config(cfg);
    let later = NOW + 2_500;
    let dso = log.delivery_stable_offset(later).unwrap();
    assert_eq!(dso, 2);
    assert_eq!(log.apply_retention(later, dso).unwrap(), 0);
    assert_eq!(log.log_start_offset(), 0);
    let dso = log.delivery_stable_offset(NOW + 3_000).unwrap();
    assert_eq!(dso, 3);
    assert_eq!(log.apply_retention(NOW + 3_000, dso).unwrap(), 1);
    assert_eq!(log.log_start_offset(), 3);
}

#[test]
fn followers_build_the_index_on_delay_enabled_topics_only() {
    // A leader's batch (LogAppendTime: max timestamp = append time) replicated as is.
    let leader_dir = tempfile::tempdir().unwrap();
    let mut leader = open_log(leader_dir.path(), log_config(true), true, NOW);
    produce(&mut leader, &[vec![]], Compression::None, NOW);
    produce(
        &mut leader,
        &[vec![("__delay_ms", b"4000")]],
        Compression::Zstd,
        NOW,
    );
    let r = leader.read(0, 1 << 20, i64::MAX, false).unwrap();
    let bytes = r.slice.unwrap().read_to_vec().unwrap();
    for (enable, want) in [(true, vec![(1, NOW + 4_000)]), (false, vec![])] {
        let dir = tempfile::tempdir().unwrap();
        let mut f = open_log(dir.path(), log_config(enable), true, NOW);
        for b in skiff_record::batches(&bytes) {
            let (_, view) = b.unwrap();
            f.append_as_follower(view.bytes(), NOW).unwrap();
        }
        assert_eq!(pending(&f), want, "enable={enable}");
    }
}

/// Found in review: the negative-decimal check ran after the 8-byte binary case.
#[test]
fn an_eight_byte_negative_decimal_names_a_negative_value() {
    let e = parse_header_value(Some(b"-1000000")).unwrap_err();
    assert!(e.contains("negative"), "{e}");
}

/// Found in review: DeleteRecords to an offset inside a waiting batch released the rest of
/// that batch (and a restart did the same); it keeps waiting now.
#[test]
fn delete_records_inside_a_waiting_batch_keeps_it_waiting() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open_log(dir.path(), log_config(true), true, NOW);
    let d: Rec<'_> = vec![("__delay_ms", b"60000")];
    produce(&mut log, &[vec![]], Compression::None, NOW); // 0
    let b = produce(&mut log, &[d, vec![], vec![]], Compression::None, NOW); // 1..3
    log.delete_records(2).unwrap();
    assert_eq!(log.delivery_stable_offset(NOW + 1), Some(b));
    let bound = log.high_watermark().min(b);
    assert!(log.read(2, 1 << 20, bound, true).unwrap().slice.is_none());
    log.close(NOW + 2).unwrap();
    drop(log);
    let mut log = open_log(dir.path(), log_config(true), true, NOW + 3);
    assert_eq!(log.delivery_stable_offset(NOW + 3), Some(b));
}

/// Found in review: truncating inside a waiting batch kept its index entry, so a plain batch
/// appended at that offset was withheld after a restart.
#[test]
fn truncation_inside_a_waiting_batch_drops_its_index_entry() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open_log(dir.path(), log_config(true), true, NOW);
    let d: Rec<'_> = vec![("__delay_ms", b"600000")];
    produce(&mut log, &[vec![]], Compression::None, NOW); // 0
    produce(&mut log, &[d, vec![], vec![]], Compression::None, NOW); // 1..3
    log.truncate_to(2).unwrap(); // the batch 1..3 goes whole
    assert_eq!(log.log_end_offset(), 1);
    produce(&mut log, &[vec![]], Compression::None, NOW + 1); // plain, at 1
    log.close(NOW + 2).unwrap();
    drop(log);
    let mut log = open_log(dir.path(), log_config(true), true, NOW + 3);
    assert_eq!(log.delivery_stable_offset(NOW + 3), None);
    assert!(pending(&log).is_empty());
}

/// Switching the feature off releases waiting batches for good: switching it on again does
/// not withhold what consumers could already read.
#[test]
fn switching_the_feature_off_releases_waiting_batches_for_good() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open_log(dir.path(), log_config(true), true, NOW);
    let d: Rec<'_> = vec![("__delay_ms", b"600000")];
    let b = produce(&mut log, &[d], Compression::None, NOW);
    assert_eq!(log.delivery_stable_offset(NOW + 1), Some(b));
    log.update_config(log_config(false));
    assert_eq!(log.delivery_stable_offset(NOW + 2), None);
    log.update_config(log_config(true));
    assert_eq!(log.delivery_stable_offset(NOW + 3), None);
}

/// Found in review: on a CreateTime topic a rebuilt (or follower-built) due time counted from
/// the producer's timestamp, so an old timestamp released the batch early after an index loss.
/// The append time is now taken as at least the segment's last write (the local clock on a
/// follower): late, never early.
#[test]
fn a_rebuilt_create_time_due_is_never_early() {
    // Real wall time: the rebuilt due time is compared with the segment file's mtime.
    let wall = skiff_types::Clock::system().now_ms();
    let dir = tempfile::tempdir().unwrap();
    let mut log = open_log(dir.path(), log_config(true), true, wall);
    let mut b = BatchBuilder::new(BatchOptions::default());
    let h = Header {
        key: b"__delay_ms",
        value: Some(b"60000"),
    };
    b.append(wall - 600_000, Some(b"k"), Some(b"v"), &[h]);
    let bytes = b.build().unwrap();
    let v = validate_client_batch(&bytes, &log.config().validation_config(), wall).unwrap();
    let base = log.append_validated(&v, 0, wall).unwrap().base_offset;
    let end = log.log_end_offset();
    log.set_high_watermark(end);
    drop(log); // kill -9, and the index is lost too
    std::fs::remove_file(segment_file(dir.path(), 0, DELIVER_AFTER_SUFFIX)).unwrap();
    let mut log = open_log(dir.path(), log_config(true), false, wall + 1000);
    assert_eq!(log.delivery_stable_offset(wall + 1000), Some(base));
    let due = pending(&log)[0].1;
    assert!(
        due >= wall + 60_000 - 1000,
        "due {due} is before the append + delay"
    );
    // A follower appending the same batch now withholds it as long.
    let r = log.read(0, 1 << 20, i64::MAX, false).unwrap();
    let stored = r.slice.unwrap().read_to_vec().unwrap();
    let fdir = tempfile::tempdir().unwrap();
    let mut f = open_log(fdir.path(), log_config(true), true, wall);
    f.append_as_follower(&stored, wall + 5).unwrap();
    assert!(pending(&f)[0].1 >= wall + 60_000);
}

/// A durable topic (`flush.messages=1`) writes a delayed batch's index entry, and a new index
/// file's directory entry, to disk before the data's fsync acknowledges it. Reopened as after
/// a crash at the recovery point (nothing re-validated), the waiting batch is known from its
/// entry alone. (That the entry is fsynced, not just written, needs a power-cut harness.)
#[test]
fn a_durable_topic_keeps_delayed_entries_without_a_rebuild() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = log_config(true);
    cfg.set("flush.messages", "1").unwrap();
    let mut log = open_log(dir.path(), cfg.clone(), true, NOW);
    let d3: Rec<'_> = vec![("__delay_ms", b"3000")];
    let plain: Rec<'_> = vec![];
    assert_eq!(produce(&mut log, &[d3], Compression::None, NOW), 0);
    assert_eq!(produce(&mut log, &[plain], Compression::None, NOW), 1);
    let end = log.log_end_offset();
    log.sync().sync_to(end).unwrap();
    drop(log);
    let opts = LogOpenOptions {
        recovery_point: end,
        log_start_offset: 0,
        high_watermark: end,
        clean_shutdown: false,
        now_ms: NOW + 1,
    };
    let (mut log, _) = Log::open(dir.path(), TopicPartition::new("t", 0), cfg, opts).unwrap();
    assert_eq!(pending(&log), [(0, NOW + 3_000)]);
    assert_eq!(log.delivery_stable_offset(NOW + 1), Some(0));
}
