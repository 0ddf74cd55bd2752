//! The cleaner over transactional logs (issue 18): aborted records removed and never winners,
//! committed ones competing by the topic's strategy, markers kept while their data remains and
//! removed only after `delete.retention.ms`, `.txnindex` entries dropped with their data (so
//! READ_COMMITTED never hides a later commit), and open transactions never cleaned.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use parking_lot::Mutex;
use skiff_compaction::{CleanOutcome, CleanParams, Throttle, clean_log};
use skiff_record::{
    BatchBuilder, BatchOptions, ControlType, Header, build_end_txn_marker, records,
};
use skiff_storage::{AbortedTxnRef, Log, LogConfig, LogOpenOptions, SharedLog};
use skiff_types::TopicPartition;

const NOW: i64 = 1_700_000_000_000;
const RETENTION: i64 = 1000;

fn config(strategy: &str) -> LogConfig {
    let mut c = LogConfig {
        segment_bytes: 1 << 20,
        retention_ms: -1,
        cleanup_policy_compact: true,
        cleanup_policy_delete: false,
        min_cleanable_dirty_ratio: 0.0,
        delete_retention_ms: RETENTION,
        ..LogConfig::default()
    };
    c.set("compaction.strategy", strategy).unwrap();
    c
}

fn open(dir: &std::path::Path, c: LogConfig) -> SharedLog {
    open_at(dir, c, 0)
}

/// Opens (or reopens after a clean close) the log with `high_watermark`.
fn open_at(dir: &std::path::Path, c: LogConfig, high_watermark: i64) -> SharedLog {
    let opts = LogOpenOptions {
        recovery_point: 0,
        log_start_offset: 0,
        high_watermark,
        clean_shutdown: true,
        now_ms: NOW,
    };
    let (log, _) = Log::open(dir, TopicPartition::new("t", 0), c, opts).unwrap();
    Arc::new(Mutex::new(log))
}

/// A record: key, value, timestamp, `version` header.
type Rec<'a> = (&'a str, &'a str, i64, i64);

/// Appends one batch (the high watermark follows the log end unless `hold_hw`).
fn append_batch(log: &SharedLog, opts: BatchOptions, recs: &[Rec<'_>], hold_hw: bool) {
    let mut b = BatchBuilder::new(opts);
    for (k, v, ts, version) in recs {
        let ver = version.to_be_bytes();
        let h = [Header {
            key: b"version",
            value: Some(&ver),
        }];
        b.append(*ts, Some(k.as_bytes()), Some(v.as_bytes()), &h);
    }
    let mut bytes = b.build().unwrap();
    let mut l = log.lock();
    l.append_as_leader(&mut bytes, 0, NOW).unwrap();
    if !hold_hw {
        let end = l.log_end_offset();
        l.set_high_watermark(end);
    }
}

fn put(log: &SharedLog, recs: &[Rec<'_>]) {
    append_batch(log, BatchOptions::default(), recs, false);
}

/// A transactional producer's batches (one sequence counter per producer id).
struct Txn {
    pid: i64,
    seq: i32,
}

impl Txn {
    fn new(pid: i64) -> Self {
        Self { pid, seq: 0 }
    }

    fn send(&mut self, log: &SharedLog, recs: &[Rec<'_>]) {
        let opts = BatchOptions {
            producer_id: self.pid,
            producer_epoch: 0,
            base_sequence: self.seq,
            is_transactional: true,
            ..BatchOptions::default()
        };
        self.seq += recs.len() as i32;
        append_batch(log, opts, recs, false);
    }

    fn end(&self, log: &SharedLog, t: ControlType) {
        let mut m = build_end_txn_marker(self.pid, 0, 3, t, NOW).unwrap();
        let mut l = log.lock();
        l.append_as_leader(&mut m, 0, NOW).unwrap();
        let end = l.log_end_offset();
        l.set_high_watermark(end);
    }
}

fn roll(log: &SharedLog) {
    log.lock().roll(NOW).unwrap();
}

fn clean_at(log: &SharedLog, ckpt: &mut Option<i64>, now: i64) -> Option<CleanOutcome> {
    let p = CleanParams {
        map_bytes: 1 << 20,
        load_factor: 0.9,
        now_ms: now,
        extra_bound: i64::MAX,
        seed: 42,
    };
    let stop = AtomicBool::new(false);
    let clock = skiff_types::Clock::system();
    let out = clean_log(log, *ckpt, &p, &mut Throttle::new(f64::MAX, &clock), &stop).unwrap();
    if let Some(o) = &out {
        *ckpt = Some(o.end);
    }
    out
}

/// What the log holds, in offset order.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Entry {
    /// `(offset, key, value)` of a data record.
    Data(i64, String, String),
    /// `(offset, producer id, type)` of a marker.
    Marker(i64, i64, ControlType),
}

fn read_all(log: &SharedLog) -> Vec<Entry> {
    let l = log.lock();
    let mut out = Vec::new();
    let mut next = l.log_start_offset();
    while next < l.log_end_offset() {
        let r = l.read(next, 1 << 20, i64::MAX, true).unwrap();
        let bytes = r.slice.unwrap().read_to_vec().unwrap();
        for b in skiff_record::batches(&bytes) {
            let (_, v) = b.unwrap();
            v.verify_crc().unwrap();
            if v.is_control() {
                let m = skiff_record::parse_end_txn_marker(&v).unwrap().unwrap();
                out.push(Entry::Marker(
                    v.base_offset(),
                    v.producer_id(),
                    m.control_type,
                ));
            } else {
                let data = v.records_data(1 << 24).unwrap();
                for rec in records(&data, v.records_count()) {
                    let rec = rec.unwrap();
                    let s = |x: Option<&[u8]>| String::from_utf8_lossy(x.unwrap()).into_owned();
                    out.push(Entry::Data(v.record_offset(&rec), s(rec.key), s(rec.value)));
                }
            }
            next = v.last_offset() + 1;
        }
    }
    out
}

/// What a READ_COMMITTED reader of the whole log sees (Kafka's consumer): the fetch names
/// the aborted transactions (`collect_aborted_txns`); at each batch of a producer (data or
/// marker) the named transactions whose first offset it reached make their producers
/// "aborted", an ABORT marker clears its producer, and transactional data of an aborted
/// producer is skipped.
fn read_committed(log: &SharedLog) -> Vec<(String, String)> {
    let mut aborted = aborted_txns(log);
    let pids = producers_by_offset(log);
    let mut skipping = std::collections::HashSet::new();
    let mut out = Vec::new();
    for e in read_all(log) {
        let (o, pid) = match &e {
            Entry::Data(o, ..) => (*o, pids[o]),
            Entry::Marker(o, pid, _) => (*o, *pid),
        };
        if pid >= 0 {
            aborted.retain(|a| {
                let reached = a.first_offset <= o;
                if reached {
                    skipping.insert(a.producer_id);
                }
                !reached
            });
        }
        match e {
            Entry::Data(_, k, v) => {
                if pid < 0 || !skipping.contains(&pid) {
                    out.push((k, v));
                }
            }
            Entry::Marker(_, pid, ControlType::Abort) => {
                skipping.remove(&pid);
            }
            Entry::Marker(..) => {}
        }
    }
    out
}

fn producers_by_offset(log: &SharedLog) -> std::collections::HashMap<i64, i64> {
    let l = log.lock();
    let mut out = std::collections::HashMap::new();
    let mut next = l.log_start_offset();
    while next < l.log_end_offset() {
        let r = l.read(next, 1 << 20, i64::MAX, true).unwrap();
        let bytes = r.slice.unwrap().read_to_vec().unwrap();
        for b in skiff_record::batches(&bytes) {
            let (_, v) = b.unwrap();
            for o in v.base_offset()..=v.last_offset() {
                out.insert(o, v.producer_id());
            }
            next = v.last_offset() + 1;
        }
    }
    out
}

/// `(base, last, producer id, records, control)` of every batch.
fn batches(log: &SharedLog) -> Vec<(i64, i64, i64, i32, bool)> {
    let l = log.lock();
    let mut out = Vec::new();
    let mut next = l.log_start_offset();
    while next < l.log_end_offset() {
        let r = l.read(next, 1 << 20, i64::MAX, true).unwrap();
        let bytes = r.slice.unwrap().read_to_vec().unwrap();
        for b in skiff_record::batches(&bytes) {
            let (_, v) = b.unwrap();
            out.push((
                v.base_offset(),
                v.last_offset(),
                v.producer_id(),
                v.records_count(),
                v.is_control(),
            ));
            next = v.last_offset() + 1;
        }
    }
    out
}

fn data(o: i64, k: &str, v: &str) -> Entry {
    Entry::Data(o, k.into(), v.into())
}

fn kv(k: &str, v: &str) -> (String, String) {
    (k.into(), v.into())
}

fn aborted_txns(log: &SharedLog) -> Vec<AbortedTxnRef> {
    let l = log.lock();
    l.collect_aborted_txns(l.log_start_offset(), l.log_end_offset())
}

#[test]
fn aborted_records_go_committed_win_and_markers_outlive_their_data() {
    let d = tempfile::tempdir().unwrap();
    let log = open(d.path(), config("offset"));
    let mut p = Txn::new(1);
    p.send(&log, &[("k1", "committed", NOW, 0)]); // 0
    p.end(&log, ControlType::Commit); // 1
    p.send(
        &log,
        &[("k1", "aborted", NOW, 0), ("k3", "aborted", NOW, 0)],
    ); // 2-3
    p.end(&log, ControlType::Abort); // 4
    put(&log, &[("k2", "plain", NOW, 0)]); // 5
    p.send(&log, &[("k4", "committed", NOW, 0)]); // 6
    p.end(&log, ControlType::Commit); // 7
    put(&log, &[("k5", "plain", NOW, 0)]); // 8
    roll(&log);
    let mut ckpt = None;

    let o = clean_at(&log, &mut ckpt, NOW).unwrap();
    assert_eq!((o.aborted_records_removed, o.markers_removed), (2, 0));
    assert_eq!(
        read_all(&log),
        vec![
            data(0, "k1", "committed"),
            Entry::Marker(1, 1, ControlType::Commit),
            Entry::Marker(4, 1, ControlType::Abort),
            data(5, "k2", "plain"),
            data(6, "k4", "committed"),
            Entry::Marker(7, 1, ControlType::Commit),
            data(8, "k5", "plain"),
        ],
        "the aborted k1 lost to the committed one although later; markers all kept"
    );
    let committed = vec![
        kv("k1", "committed"),
        kv("k2", "plain"),
        kv("k4", "committed"),
        kv("k5", "plain"),
    ];
    assert_eq!(read_committed(&log), committed);
    // The entry stays while its marker does (its data went in this very pass).
    assert_eq!(
        aborted_txns(&log),
        vec![AbortedTxnRef {
            producer_id: 1,
            first_offset: 2
        }]
    );

    // The cleaned segment's .txnindex is on disk: a restart answers the same.
    let end = log.lock().log_end_offset();
    log.lock().close(NOW).unwrap();
    drop(log);
    let log = open_at(d.path(), config("offset"), end);
    assert_eq!(aborted_txns(&log).len(), 1);
    assert_eq!(read_committed(&log), committed);

    // Second pass: the abort has no data left: its marker gets a horizon, its entry goes.
    put(&log, &[("k6", "plain", NOW, 0)]); // 9
    roll(&log);
    let o = clean_at(&log, &mut ckpt, NOW).unwrap();
    assert_eq!(o.markers_removed, 0);
    assert_eq!(aborted_txns(&log), vec![]);
    assert!(read_all(&log).contains(&Entry::Marker(4, 1, ControlType::Abort)));

    // The committed k1 is superseded: its record goes, but its COMMIT was seen with data in
    // this pass; the ABORT's horizon (NOW + 1000) is not reached at NOW + 999.
    put(&log, &[("k1", "plain", NOW, 0)]); // 10
    roll(&log);
    let o = clean_at(&log, &mut ckpt, NOW + RETENTION - 1).unwrap();
    assert_eq!(o.markers_removed, 0);
    let all = read_all(&log);
    assert!(!all.contains(&data(0, "k1", "committed")));
    assert!(all.contains(&Entry::Marker(1, 1, ControlType::Commit)));
    assert!(all.contains(&Entry::Marker(4, 1, ControlType::Abort)));

    // At the horizon the ABORT goes; the first COMMIT (no data left) gets its own horizon.
    put(&log, &[("k7", "plain", NOW, 0)]); // 11
    roll(&log);
    let o = clean_at(&log, &mut ckpt, NOW + RETENTION).unwrap();
    assert_eq!(o.markers_removed, 1);
    let all = read_all(&log);
    assert!(!all.contains(&Entry::Marker(4, 1, ControlType::Abort)));
    assert!(all.contains(&Entry::Marker(1, 1, ControlType::Commit)));

    // Later still, the first COMMIT goes too; the second one stays while k4 does, however late.
    put(&log, &[("k8", "plain", NOW, 0)]); // 12
    roll(&log);
    let o = clean_at(&log, &mut ckpt, NOW + 100 * RETENTION).unwrap();
    assert_eq!(o.markers_removed, 1);
    assert_eq!(
        read_all(&log),
        vec![
            data(5, "k2", "plain"),
            data(6, "k4", "committed"),
            Entry::Marker(7, 1, ControlType::Commit),
            data(8, "k5", "plain"),
            data(9, "k6", "plain"),
            data(10, "k1", "plain"),
            data(11, "k7", "plain"),
            data(12, "k8", "plain"),
        ]
    );
    assert_eq!(aborted_txns(&log), vec![]);
    assert_eq!(read_committed(&log).len(), 7);

    // The producer goes on after all that: its next transaction is accepted and readable.
    p.send(&log, &[("k9", "committed", NOW, 0)]);
    p.end(&log, ControlType::Commit);
    assert!(read_committed(&log).contains(&kv("k9", "committed")));
}

#[test]
fn committed_records_compete_by_the_strategy_and_aborted_ones_never_win() {
    // k1: committed (version 1, ts +1), then aborted (version 9, ts +9, later offset).
    // k2: committed (version 5, ts +5), then plain (version 3, ts +3, later offset).
    // (strategy, k2's winner)
    let table = [
        ("offset", "plain"),
        ("timestamp", "committed"),
        ("header:version", "committed"),
    ];
    for (strategy, k2) in table {
        let d = tempfile::tempdir().unwrap();
        let log = open(d.path(), config(strategy));
        let mut p = Txn::new(1);
        let mut q = Txn::new(2);
        p.send(&log, &[("k1", "committed", NOW + 1, 1)]);
        p.send(&log, &[("k2", "committed", NOW + 5, 5)]);
        p.end(&log, ControlType::Commit);
        q.send(&log, &[("k1", "aborted", NOW + 9, 9)]);
        q.end(&log, ControlType::Abort);
        put(&log, &[("k2", "plain", NOW + 3, 3)]);
        put(&log, &[("k3", "plain", NOW, 0)]);
        roll(&log);
        let mut ckpt = None;
        // Twice: the whole-range strategies compare against the clean section too.
        clean_at(&log, &mut ckpt, NOW).unwrap();
        put(&log, &[("k4", "plain", NOW, 0)]);
        roll(&log);
        clean_at(&log, &mut ckpt, NOW).unwrap();
        let mut got = read_committed(&log);
        got.sort();
        assert_eq!(
            got,
            vec![
                kv("k1", "committed"),
                kv("k2", k2),
                kv("k3", "plain"),
                kv("k4", "plain")
            ],
            "{strategy}"
        );
        // The aborting producer's last batch is kept, emptied (its sequence state).
        let q_batches: Vec<_> = batches(&log)
            .into_iter()
            .filter(|b| b.2 == 2 && !b.4)
            .collect();
        assert_eq!(q_batches, vec![(3, 3, 2, 0, false)], "{strategy}");
        let raw: Vec<Entry> = read_all(&log);
        assert!(
            !raw.iter()
                .any(|e| matches!(e, Entry::Data(_, _, v) if v == "aborted")),
            "{strategy}: {raw:?}"
        );
    }
}

#[test]
fn an_open_transaction_bounds_the_clean() {
    let d = tempfile::tempdir().unwrap();
    let log = open(d.path(), config("offset"));
    put(&log, &[("k1", "v1", NOW, 0)]); // 0
    put(&log, &[("k1", "v2", NOW, 0)]); // 1
    roll(&log);
    let mut p = Txn::new(1);
    p.send(&log, &[("k1", "open", NOW, 0)]); // 2
    put(&log, &[("k1", "v3", NOW, 0)]); // 3
    put(&log, &[("k1", "v4", NOW, 0)]); // 4
    roll(&log);
    put(&log, &[("k2", "v1", NOW, 0)]); // 5
    roll(&log);
    assert_eq!(log.lock().first_unstable_offset(), Some(2));
    let mut ckpt = None;
    let o = clean_at(&log, &mut ckpt, NOW).unwrap();
    assert_eq!(
        o.end, 2,
        "the range stops at the open transaction's segment"
    );
    assert_eq!(
        read_all(&log),
        vec![
            data(1, "k1", "v2"),
            data(2, "k1", "open"),
            data(3, "k1", "v3"),
            data(4, "k1", "v4"),
            data(5, "k2", "v1"),
        ],
        "nothing at or after the open transaction's first offset is cleaned"
    );
    // Once it commits, the rest is cleaned: the committed record loses to the later plain one.
    p.end(&log, ControlType::Commit); // 6
    roll(&log);
    assert_eq!(log.lock().first_unstable_offset(), None);
    clean_at(&log, &mut ckpt, NOW).unwrap();
    assert_eq!(
        read_all(&log),
        vec![
            data(4, "k1", "v4"),
            data(5, "k2", "v1"),
            Entry::Marker(6, 1, ControlType::Commit),
        ]
    );
}

#[test]
fn a_marker_not_yet_replicated_bounds_the_clean() {
    let d = tempfile::tempdir().unwrap();
    let log = open(d.path(), config("offset"));
    let mut p = Txn::new(1);
    put(&log, &[("k1", "v1", NOW, 0)]); // 0
    roll(&log);
    p.send(&log, &[("k1", "aborted", NOW, 0)]); // 1 (HW -> 2)
    roll(&log);
    {
        // The ABORT is appended (its .txnindex entry too) but the high watermark stays at 2.
        let mut m = build_end_txn_marker(1, 0, 3, ControlType::Abort, NOW).unwrap();
        log.lock().append_as_leader(&mut m, 0, NOW).unwrap(); // 2
    }
    append_batch(&log, BatchOptions::default(), &[("k1", "v2", NOW, 0)], true); // 3
    roll(&log);
    assert_eq!(log.lock().first_unstable_offset(), Some(1));
    let mut ckpt = None;
    let o = clean_at(&log, &mut ckpt, NOW);
    assert!(o.as_ref().is_none_or(|o| o.end <= 1), "{o:?}");
    assert!(read_all(&log).contains(&data(1, "k1", "aborted")));
}

#[test]
fn the_background_cleaner_counts_aborted_records_and_markers() {
    use skiff_compaction::{CleanerSettings, CleanerStats, LogCleaner};
    use skiff_storage::{LogManager, LogManagerConfig};
    let d = tempfile::tempdir().unwrap();
    let mgr_cfg = LogManagerConfig {
        log_dirs: vec![d.path().to_path_buf()],
        ..LogManagerConfig::default()
    };
    let logs = LogManager::open(mgr_cfg, &|_| config("offset"), NOW)
        .unwrap()
        .0;
    let tp = TopicPartition::new("t", 0);
    let log = logs.get_or_create(&tp, config("offset"), NOW).unwrap();
    let mut p = Txn::new(1);
    p.send(
        &log,
        &[("k1", "aborted", NOW, 0), ("k2", "aborted", NOW, 0)],
    );
    p.end(&log, ControlType::Abort);
    put(&log, &[("k3", "plain", NOW, 0)]);
    roll(&log);
    let stats = Arc::new(CleanerStats::new());
    let settings = CleanerSettings {
        threads: 0,
        ..CleanerSettings::default()
    };
    let cleaner = LogCleaner::start(Arc::clone(&logs), Arc::clone(&stats), move || settings);
    assert_eq!(cleaner.clean_due_logs_now(), 1);
    let s = stats.get(&tp).unwrap();
    assert_eq!(
        (
            s.aborted_records_removed,
            s.records_removed,
            s.markers_removed
        ),
        (2, 2, 0),
        "{s:?}"
    );
    assert!(s.last_error.is_none(), "{s:?}");
}
