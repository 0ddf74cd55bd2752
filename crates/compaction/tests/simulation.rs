//! Seeded simulation of the cleaner against a model (every strategy, small segments, random
//! produces with tombstones, out-of-order timestamps and versions, rolls, and cleans with key
//! maps from tiny to ample). After every clean:
//! * every surviving record is one that was produced, unchanged, at its offset;
//! * the log end offset is unchanged and the active segment untouched;
//! * each key's winner (highest `(version, offset)` over everything produced) survives.
//!
//! At the end, after rolling and cleaning with an ample map until nothing is dirty, exactly the
//! winners remain below the active segment.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use parking_lot::Mutex;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use skiff_compaction::{CleanParams, Throttle, clean_log};
use skiff_record::{BatchBuilder, BatchOptions, Header, records};
use skiff_storage::{Log, LogConfig, LogOpenOptions, SharedLog};
use skiff_types::TopicPartition;

const NOW: i64 = 1_700_000_000_000;

#[derive(Clone, Debug, PartialEq, Eq)]
struct Rec {
    key: String,
    value: Option<String>,
    ts: i64,
    version: Option<i64>,
}

type Contents = BTreeMap<i64, Rec>;

fn read_all(log: &SharedLog) -> Contents {
    let l = log.lock();
    let mut out = BTreeMap::new();
    let mut next = l.log_start_offset();
    while next < l.log_end_offset() {
        let r = l.read(next, 1 << 20, i64::MAX, true).unwrap();
        let bytes = r.slice.unwrap().read_to_vec().unwrap();
        for b in skiff_record::batches(&bytes) {
            let (_, v) = b.unwrap();
            v.verify_crc().unwrap();
            let data = v.records_data(1 << 24).unwrap();
            for rec in records(&data, v.records_count()) {
                let rec = rec.unwrap();
                let s = |x: &[u8]| String::from_utf8(x.to_vec()).unwrap();
                let version = rec
                    .headers
                    .iter()
                    .rev()
                    .find(|h| h.key == b"v")
                    .and_then(|h| h.value)
                    .map(|b| i64::from_be_bytes(b.try_into().unwrap()));
                let r = Rec {
                    key: s(rec.key.unwrap()),
                    value: rec.value.map(s),
                    ts: v.record_timestamp(&rec),
                    version,
                };
                assert!(
                    out.insert(v.record_offset(&rec), r).is_none(),
                    "duplicate offset"
                );
            }
            next = v.last_offset() + 1;
        }
    }
    out
}

fn rank(strategy: &str, offset: i64, r: &Rec) -> (Option<i64>, i64) {
    match strategy {
        "timestamp" => (Some(r.ts), offset),
        "header:v" => (r.version, offset),
        _ => (None, offset),
    }
}

fn winners(strategy: &str, produced: &Contents) -> BTreeMap<String, i64> {
    let mut w: BTreeMap<String, (Option<i64>, i64)> = BTreeMap::new();
    for (o, r) in produced {
        let k = rank(strategy, *o, r);
        let e = w.entry(r.key.clone()).or_insert(k);
        if k > *e {
            *e = k;
        }
    }
    w.into_iter().map(|(k, (_, o))| (k, o)).collect()
}

fn simulate(seed: u64, strategy: &str) {
    let mut rng = StdRng::seed_from_u64(seed);
    // In memory when possible: every clean fsyncs its output and the directory.
    let shm = std::path::Path::new("/dev/shm");
    let dir = if shm.is_dir() {
        tempfile::tempdir_in(shm).unwrap()
    } else {
        tempfile::tempdir().unwrap()
    };
    let mut config = LogConfig {
        segment_bytes: 700,
        retention_ms: -1,
        cleanup_policy_compact: true,
        cleanup_policy_delete: false,
        min_cleanable_dirty_ratio: 0.0,
        delete_retention_ms: i64::MAX / 4,
        ..LogConfig::default()
    };
    config.set("compaction.strategy", strategy).unwrap();
    let opts = LogOpenOptions {
        recovery_point: 0,
        log_start_offset: 0,
        high_watermark: 0,
        clean_shutdown: true,
        now_ms: NOW,
    };
    let (log, _) = Log::open(dir.path(), TopicPartition::new("t", 0), config, opts).unwrap();
    let log: SharedLog = Arc::new(Mutex::new(log));
    let mut produced: Contents = BTreeMap::new();
    let mut ckpt = None;
    let mut cleans = 0;
    for _ in 0..150 {
        match rng.random_range(0..100) {
            0..70 => {
                let mut b = BatchBuilder::new(BatchOptions::default());
                let base = log.lock().log_end_offset();
                let n = rng.random_range(1..4);
                for i in 0..n {
                    let r = Rec {
                        key: format!("k{}", rng.random_range(0..6)),
                        value: (!rng.random_bool(0.15)).then(|| format!("v{base}-{i}")),
                        ts: NOW - rng.random_range(0..1000),
                        version: rng.random_bool(0.8).then(|| rng.random_range(-3..4)),
                    };
                    let v = r.version.map(i64::to_be_bytes);
                    let h: Vec<Header<'_>> = v
                        .iter()
                        .map(|v| Header {
                            key: b"v",
                            value: Some(v),
                        })
                        .collect();
                    b.append(
                        r.ts,
                        Some(r.key.as_bytes()),
                        r.value.as_deref().map(str::as_bytes),
                        &h,
                    );
                    produced.insert(base + i, r);
                }
                let mut bytes = b.build().unwrap();
                let mut l = log.lock();
                l.append_as_leader(&mut bytes, 0, NOW).unwrap();
                let end = l.log_end_offset();
                l.set_high_watermark(end);
            }
            70..80 => log.lock().roll(NOW).unwrap(),
            _ => {
                let map_bytes = if rng.random_bool(0.5) {
                    4 * 32
                } else {
                    1 << 16
                };
                let p = CleanParams {
                    map_bytes,
                    load_factor: 0.75,
                    now_ms: NOW,
                    extra_bound: i64::MAX,
                    seed,
                };
                let (end_before, active_before) = {
                    let l = log.lock();
                    let active = l.segments().last().unwrap().base_offset();
                    (l.log_end_offset(), active)
                };
                let stop = AtomicBool::new(false);
                if let Some(o) = clean_log(
                    &log,
                    ckpt,
                    &p,
                    &mut Throttle::new(f64::MAX, &skiff_types::Clock::system()),
                    &stop,
                )
                .unwrap()
                {
                    ckpt = Some(o.end);
                    cleans += 1;
                }
                let got = read_all(&log);
                for (o, r) in &got {
                    assert_eq!(
                        produced.get(o),
                        Some(r),
                        "seed {seed} {strategy}: offset {o} changed"
                    );
                }
                let l = log.lock();
                assert_eq!(l.log_end_offset(), end_before);
                for (o, r) in produced.range(active_before..) {
                    assert_eq!(
                        got.get(o),
                        Some(r),
                        "seed {seed}: active segment record {o} lost"
                    );
                }
                drop(l);
                for (k, o) in winners(strategy, &produced) {
                    assert!(
                        got.contains_key(&o),
                        "seed {seed} {strategy}: winner of {k} at {o} lost"
                    );
                }
            }
        }
    }
    // Everything cleanable, ample map: exactly the winners remain below the active segment.
    log.lock().roll(NOW).unwrap();
    let p = CleanParams {
        map_bytes: 1 << 20,
        load_factor: 0.75,
        now_ms: NOW,
        extra_bound: i64::MAX,
        seed,
    };
    let stop = AtomicBool::new(false);
    let mut guard = 0;
    while let Some(o) = clean_log(
        &log,
        ckpt,
        &p,
        &mut Throttle::new(f64::MAX, &skiff_types::Clock::system()),
        &stop,
    )
    .unwrap()
    {
        ckpt = Some(o.end);
        guard += 1;
        assert!(guard < 50);
    }
    let got: BTreeSet<i64> = read_all(&log).keys().copied().collect();
    let want: BTreeSet<i64> = winners(strategy, &produced).values().copied().collect();
    assert_eq!(got, want, "seed {seed} {strategy} after {cleans} cleans");
}

#[test]
fn seeded_simulation_of_every_strategy() {
    for seed in 0..30 {
        for strategy in ["offset", "timestamp", "header:v"] {
            simulate(seed, strategy);
        }
    }
}
