//! Table-style tests of the per-batch filter.

use super::*;
use crate::keymap::KeyMap;
use crate::strategy::Rank;
use skiff_record::{Compression, Header};

const NOW: i64 = 1_000_000;

struct R {
    key: Option<&'static str>,
    value: Option<&'static str>,
    ts: i64,
}

fn r(key: &'static str, value: Option<&'static str>, ts: i64) -> R {
    R {
        key: Some(key),
        value,
        ts,
    }
}

fn batch(base: i64, opts: BatchOptions, recs: &[R]) -> Vec<u8> {
    let mut b = BatchBuilder::new(BatchOptions {
        base_offset: base,
        ..opts
    });
    for x in recs {
        let h = [Header {
            key: b"h",
            value: Some(b"x"),
        }];
        b.append(
            x.ts,
            x.key.map(str::as_bytes),
            x.value.map(str::as_bytes),
            &h,
        );
    }
    b.build().unwrap()
}

/// `(offset, key, value, timestamp)` of every record.
type Row = (i64, Option<String>, Option<String>, i64);

fn contents(b: &[u8]) -> Vec<Row> {
    let v = BatchView::new(b).unwrap();
    v.verify_crc().unwrap();
    let data = v.records_data(1 << 20).unwrap();
    records(&data, v.records_count())
        .map(|r| {
            let r = r.unwrap();
            let s = |x: Option<&[u8]>| x.map(|b| String::from_utf8_lossy(b).into_owned());
            (
                v.record_offset(&r),
                s(r.key),
                s(r.value),
                v.record_timestamp(&r),
            )
        })
        .collect()
}

fn map_of(winners: &[(&str, i64)]) -> KeyMap {
    let mut m = KeyMap::new(1 << 16, 0.9, 100, 3);
    for (k, o) in winners {
        m.offer(
            k.as_bytes(),
            Rank {
                version: None,
                offset: *o,
            },
        );
    }
    m
}

fn run(map: &KeyMap, config: &LogConfig, b: &[u8], retain: bool) -> (BatchOutcome, FilterCounts) {
    let ctx = FilterContext {
        map,
        map_end: 1000,
        now_ms: NOW,
        config,
        max_records_bytes: 1 << 20,
    };
    let mut c = FilterCounts::default();
    let out = filter_batch(&ctx, b, retain, &mut c).unwrap();
    (out, c)
}

fn rewritten(o: BatchOutcome) -> Vec<u8> {
    match o {
        BatchOutcome::Rewritten(b) => b,
        other => panic!("expected a rewrite, got {other:?}"),
    }
}

#[test]
fn superseded_records_go_offsets_and_last_offset_delta_stay() {
    let config = LogConfig::default();
    let b = batch(
        10,
        Default::default(),
        &[
            r("a", Some("1"), 5),
            r("b", Some("2"), 6),
            r("a", Some("3"), 7),
        ],
    );
    let map = map_of(&[("a", 12), ("b", 20)]);
    let (out, c) = run(&map, &config, &b, false);
    let out = rewritten(out);
    assert_eq!(
        contents(&out),
        vec![(12, Some("a".into()), Some("3".into()), 7)]
    );
    let v = BatchView::new(&out).unwrap();
    assert_eq!(
        (v.base_offset(), v.last_offset(), v.records_count()),
        (10, 12, 1)
    );
    assert_eq!(
        c,
        FilterCounts {
            records_in: 3,
            records_removed: 2,
            tombstones_removed: 0,
            ..FilterCounts::default()
        }
    );
}

#[test]
fn unchanged_batches_are_copied_and_records_past_the_map_end_kept() {
    let config = LogConfig::default();
    let b = batch(
        10,
        Default::default(),
        &[r("a", Some("1"), 5), r("b", Some("2"), 6)],
    );
    assert_eq!(
        run(&map_of(&[("a", 10), ("b", 11)]), &config, &b, false).0,
        BatchOutcome::Unchanged
    );
    // Keys only in the clean section (absent from an offset-strategy map) are kept.
    assert_eq!(
        run(&map_of(&[]), &config, &b, false).0,
        BatchOutcome::Unchanged
    );
    let ctx_map = map_of(&[("a", 99), ("b", 99)]);
    let ctx = FilterContext {
        map: &ctx_map,
        map_end: 11,
        now_ms: NOW,
        config: &config,
        max_records_bytes: 1 << 20,
    };
    let mut c = FilterCounts::default();
    let out = rewritten(filter_batch(&ctx, &b, false, &mut c).unwrap());
    assert_eq!(
        contents(&out).iter().map(|r| r.0).collect::<Vec<_>>(),
        vec![11],
        "11 >= map end is kept"
    );
}

#[test]
fn tombstones_get_a_horizon_then_expire_losing_ones_go_at_once() {
    let config = LogConfig {
        delete_retention_ms: 500,
        ..LogConfig::default()
    };
    let b = batch(
        0,
        Default::default(),
        &[r("a", None, 40), r("b", None, 41), r("c", Some("v"), 42)],
    );
    // a's tombstone wins, b's loses to a later record.
    let map = map_of(&[("a", 0), ("b", 9), ("c", 2)]);
    let (out, c) = run(&map, &config, &b, false);
    let out = rewritten(out);
    let v = BatchView::new(&out).unwrap();
    assert_eq!(v.delete_horizon_ms(), Some(NOW + 500));
    assert_eq!(
        contents(&out),
        vec![
            (0, Some("a".into()), None, 40),
            (2, Some("c".into()), Some("v".into()), 42)
        ],
        "record timestamps survive the horizon in baseTimestamp"
    );
    assert_eq!(c.tombstones_removed, 1);
    // Next pass before the horizon: nothing changes.
    let ctx = |now| FilterContext {
        map: &map,
        map_end: 1000,
        now_ms: now,
        config: &config,
        max_records_bytes: 1 << 20,
    };
    let mut c = FilterCounts::default();
    assert_eq!(
        filter_batch(&ctx(NOW + 499), &out, false, &mut c).unwrap(),
        BatchOutcome::Unchanged
    );
    // At the horizon the tombstone goes.
    let again = rewritten(filter_batch(&ctx(NOW + 500), &out, false, &mut c).unwrap());
    assert_eq!(
        contents(&again),
        vec![(2, Some("c".into()), Some("v".into()), 42)]
    );
}

#[test]
fn empty_batches_are_dropped_unless_retained() {
    let config = LogConfig::default();
    let opts = BatchOptions {
        producer_id: 7,
        producer_epoch: 2,
        base_sequence: 40,
        ..Default::default()
    };
    let b = batch(100, opts, &[r("a", Some("1"), 5), r("a", Some("2"), 9)]);
    let map = map_of(&[("a", 500)]);
    assert_eq!(run(&map, &config, &b, false).0, BatchOutcome::Dropped);
    let out = rewritten(run(&map, &config, &b, true).0);
    let v = BatchView::new(&out).unwrap();
    v.verify_crc().unwrap();
    assert_eq!(
        (
            v.base_offset(),
            v.last_offset(),
            v.records_count(),
            v.base_timestamp(),
            v.max_timestamp()
        ),
        (100, 101, 0, -1, 9)
    );
    assert_eq!(
        (v.producer_id(), v.producer_epoch(), v.base_sequence()),
        (7, 2, 40)
    );
}

#[test]
fn compressed_batches_keep_their_codec_and_log_append_time_its_timestamp() {
    let config = LogConfig::default();
    for codec in [
        Compression::Lz4,
        Compression::Gzip,
        Compression::Zstd,
        Compression::Snappy,
    ] {
        let opts = BatchOptions {
            compression: codec,
            ..Default::default()
        };
        let b = batch(0, opts, &[r("a", Some("1"), 5), r("a", Some("2"), 6)]);
        let out = rewritten(run(&map_of(&[("a", 1)]), &config, &b, false).0);
        assert_eq!(BatchView::new(&out).unwrap().compression().unwrap(), codec);
        assert_eq!(
            contents(&out),
            vec![(1, Some("a".into()), Some("2".into()), 6)]
        );
    }
    let opts = BatchOptions {
        timestamp_type: TimestampType::LogAppendTime,
        ..Default::default()
    };
    let mut b = batch(0, opts, &[r("a", Some("1"), 5), r("b", Some("2"), 6)]);
    set_max_timestamp(&mut b, TimestampType::LogAppendTime, 777);
    let out = rewritten(run(&map_of(&[("a", 5), ("b", 1)]), &config, &b, false).0);
    let v = BatchView::new(&out).unwrap();
    assert_eq!(
        (v.timestamp_type(), v.max_timestamp()),
        (TimestampType::LogAppendTime, 777)
    );
    assert_eq!(
        contents(&out),
        vec![(1, Some("b".into()), Some("2".into()), 777)]
    );
}

#[test]
fn keyless_records_are_dropped() {
    let config = LogConfig::default();
    let b = batch(
        0,
        Default::default(),
        &[
            R {
                key: None,
                value: Some("x"),
                ts: 1,
            },
            r("a", Some("1"), 2),
        ],
    );
    let out = rewritten(run(&map_of(&[("a", 1)]), &config, &b, false).0);
    assert_eq!(contents(&out).len(), 1);
}

/// A COMMIT/ABORT marker batch at `offset` (as the transaction coordinator writes it), with an
/// optional delete horizon already set by an earlier clean.
fn marker_at(offset: i64, abort: bool, horizon: Option<i64>) -> Vec<u8> {
    let t = if abort {
        skiff_record::ControlType::Abort
    } else {
        skiff_record::ControlType::Commit
    };
    let mut b = BatchBuilder::new(BatchOptions {
        base_offset: offset,
        is_transactional: true,
        is_control: true,
        producer_id: 7,
        producer_epoch: 2,
        delete_horizon_ms: horizon,
        ..BatchOptions::default()
    });
    let key = skiff_record::control::control_key(t);
    let value = skiff_record::control::end_txn_marker_value(5);
    b.append(NOW - 50, Some(&key), Some(&value), &[]);
    b.build().unwrap()
}

#[test]
fn markers_get_a_horizon_once_removable_and_go_after_it() {
    let config = LogConfig {
        delete_retention_ms: 100,
        ..LogConfig::default()
    };
    let map = map_of(&[]);
    #[derive(Debug, PartialEq)]
    enum Want {
        Unchanged,
        Dropped,
        /// Rewritten with this delete horizon.
        Horizon(i64),
    }
    // (name, offset, horizon already set, removable, retain, want)
    let table = [
        ("data left: kept", 10, None, false, false, Want::Unchanged),
        (
            "data left, horizon passed: kept",
            10,
            Some(NOW - 1),
            false,
            false,
            Want::Unchanged,
        ),
        (
            "removable: horizon set",
            10,
            None,
            true,
            false,
            Want::Horizon(NOW + 100),
        ),
        (
            "removable, before the horizon: kept",
            10,
            Some(NOW + 1),
            true,
            false,
            Want::Unchanged,
        ),
        (
            "removable, at the horizon: dropped",
            10,
            Some(NOW),
            true,
            false,
            Want::Dropped,
        ),
        (
            "removable, horizon passed, retained: kept whole",
            10,
            Some(NOW - 1),
            true,
            true,
            Want::Unchanged,
        ),
        (
            "past the map end: not examined",
            1000,
            Some(NOW - 1),
            true,
            false,
            Want::Unchanged,
        ),
    ];
    for (name, offset, horizon, removable, retain, want) in table {
        for abort in [false, true] {
            let b = marker_at(offset, abort, horizon);
            let ctx = FilterContext {
                map: &map,
                map_end: 1000,
                now_ms: NOW,
                config: &config,
                max_records_bytes: 1 << 20,
            };
            let mut c = FilterCounts::default();
            let got = match filter_marker(&ctx, &b, removable, retain, &mut c).unwrap() {
                BatchOutcome::Unchanged => Want::Unchanged,
                BatchOutcome::Dropped => Want::Dropped,
                BatchOutcome::Rewritten(out) => {
                    let v = BatchView::new(&out).unwrap();
                    v.verify_crc().unwrap();
                    let orig = BatchView::new(&b).unwrap();
                    // Everything but the horizon (and so the CRC) is the marker's.
                    assert!(v.is_control() && v.is_transactional(), "{name}");
                    assert_eq!(
                        (v.base_offset(), v.last_offset(), v.producer_id()),
                        (orig.base_offset(), orig.last_offset(), orig.producer_id()),
                        "{name}"
                    );
                    assert_eq!(v.producer_epoch(), orig.producer_epoch(), "{name}");
                    assert_eq!(v.max_timestamp(), orig.max_timestamp(), "{name}");
                    assert_eq!(
                        skiff_record::parse_end_txn_marker(&v).unwrap(),
                        skiff_record::parse_end_txn_marker(&orig).unwrap(),
                        "{name}"
                    );
                    Want::Horizon(v.delete_horizon_ms().unwrap())
                }
            };
            assert_eq!(got, want, "{name} (abort: {abort})");
            assert_eq!(
                c.markers_removed,
                u64::from(want == Want::Dropped),
                "{name}"
            );
        }
    }
}

#[test]
fn aborted_batches_lose_every_record_below_the_map_end() {
    let config = LogConfig::default();
    // Winners by offset: the aborted records would win if they were looked up.
    let map = map_of(&[("a", 10), ("b", 11)]);
    let txn = BatchOptions {
        is_transactional: true,
        producer_id: 7,
        producer_epoch: 2,
        base_sequence: 0,
        ..BatchOptions::default()
    };
    let b = batch(
        10,
        txn,
        &[
            r("a", Some("x"), NOW),
            r("b", None, NOW),
            r("c", Some("y"), NOW),
        ],
    );
    // (name, map end, retain, kept offsets, dropped whole)
    let table: [(&str, i64, bool, Vec<i64>, bool); 4] = [
        ("all below the map end", 1000, false, vec![], true),
        ("retained: kept empty", 1000, true, vec![], false),
        ("straddling the map end", 12, false, vec![12], false),
        ("past the map end", 10, false, vec![10, 11, 12], false),
    ];
    for (name, map_end, retain, kept, dropped) in table {
        let ctx = FilterContext {
            map: &map,
            map_end,
            now_ms: NOW,
            config: &config,
            max_records_bytes: 1 << 20,
        };
        let mut c = FilterCounts::default();
        let out = filter_data_batch(&ctx, &b, retain, true, &mut c).unwrap();
        let removed = 3 - kept.len() as u64;
        assert_eq!(c.aborted_removed, removed, "{name}");
        assert_eq!(c.records_removed, removed, "{name}");
        match out {
            BatchOutcome::Dropped => assert!(dropped, "{name}"),
            BatchOutcome::Unchanged => assert_eq!(kept.len(), 3, "{name}"),
            BatchOutcome::Rewritten(o) => {
                assert!(!dropped, "{name}");
                let got: Vec<i64> = contents(&o).into_iter().map(|r| r.0).collect();
                assert_eq!(got, kept, "{name}");
                let v = BatchView::new(&o).unwrap();
                assert_eq!((v.base_offset(), v.last_offset()), (10, 12), "{name}");
                assert!(v.is_transactional() && v.producer_id() == 7, "{name}");
            }
        }
    }
    // The same batch, not aborted, keeps its winners.
    let ctx = FilterContext {
        map: &map,
        map_end: 1000,
        now_ms: NOW,
        config: &config,
        max_records_bytes: 1 << 20,
    };
    let mut c = FilterCounts::default();
    let out = filter_data_batch(&ctx, &b, false, false, &mut c).unwrap();
    let got: Vec<i64> = contents(&rewritten(out)).into_iter().map(|r| r.0).collect();
    assert_eq!(got, vec![10, 11, 12]);
}
