//! Log compaction with KIP-280 strategies (issue 7) against the `skiff` binary, with PyPI
//! confluent-kafka (`compaction_ck.py`): keyed records produced out of timestamp order to a
//! `timestamp` topic and out of version order (header `version`) to a `header` topic, then
//! 1.1 MB of distinct-key filler so the 1 MiB segments (4.x's minimum) roll; the cleaner
//! (backoff 100 ms, `min.cleanable.dirty.ratio=0.01`) must leave exactly one record per key,
//! the one the strategy says, at its original offset, with the end offset unchanged, while a
//! consumer reading the topic in a loop sees no error and no duplicate offset. The `offset`
//! strategy keeps the last record and its tombstones expire after `delete.retention.ms`
//! (later cleans forced by `max.compaction.lag.ms`).
//! Invalid strategy configs get INVALID_CONFIG. Finally the broker dies in the middle of a
//! swap (test failpoint: abort right after `.cleaned` -> `.swap`) and restarts: nothing is
//! lost and the log is compacted.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use skiff_compat::{Broker, Python, finish_json, python, python_background};

const SCRIPT: &str = "compaction_ck.py";
const FILLER: usize = 1100;
const DEADLINE: Duration = Duration::from_secs(40);

fn broker() -> Broker {
    Broker::start_with(&[
        ("log.cleaner.backoff.ms", "100"),
        ("log.retention.check.interval.ms", "1000"),
        ("log.cleaner.dedupe.buffer.size", "16777216"),
        ("skiff.admin.listener", "127.0.0.1:0"),
    ])
}

/// The operator view (`skiff admin partition T 0`, over the admin HTTP port) of a cleaned
/// partition: its `cleaner` section names the strategy and counts what was removed.
fn assert_cleaner_view(b: &Broker, topic: &str, strategy: &str, removed_at_least: u64) {
    let doc = b.admin_cli(&["partition", topic, "0"]);
    let c = &doc["sections"]["cleaner"];
    assert_eq!(c["strategy"], strategy, "{doc}");
    assert!(c["cleans"].as_u64().unwrap_or(0) >= 1, "{doc}");
    assert!(c["last_clean_time_ms"].as_i64().is_some(), "{doc}");
    assert!(c["bytes_cleaned"].as_u64().unwrap_or(0) > 0, "{doc}");
    let removed = c["records_removed"].as_u64().unwrap_or(0);
    assert!(removed >= removed_at_least, "{removed} removed: {doc}");
    assert_eq!(c["last_error"], Value::Null, "{doc}");
}

fn create(b: &Broker, topic: &str, configs: Value) -> Value {
    python(
        Python::PyPi,
        SCRIPT,
        "create",
        &json!({"bootstrap": b.bootstrap(), "topic": topic, "configs": configs}),
    )
}

fn compacted(extra: &[(&str, &str)]) -> Value {
    let mut c = json!({
        "cleanup.policy": "compact",
        "segment.bytes": "1048576",
        "min.cleanable.dirty.ratio": "0.01",
    });
    for (k, v) in extra {
        c[*k] = json!(v);
    }
    c
}

fn produce(b: &Broker, topic: &str, messages: &[Value], filler: bool) -> i64 {
    let mut p = json!({"bootstrap": b.bootstrap(), "topic": topic, "messages": messages});
    if filler {
        p["filler"] = json!({"count": FILLER, "value_len": 1000, "prefix": "filler"});
    }
    let r = python(Python::PyPi, SCRIPT, "produce", &p);
    r["last_offset"].as_i64().unwrap()
}

/// `(records, end offset)`; a record is `[offset, key, value, ts, version]`.
fn read(b: &Broker, topic: &str) -> (Vec<Value>, i64) {
    let r = python(
        Python::PyPi,
        SCRIPT,
        "read",
        &json!({"bootstrap": b.bootstrap(), "topic": topic}),
    );
    (
        r["records"].as_array().unwrap().clone(),
        r["end"].as_i64().unwrap(),
    )
}

/// The non-filler records by key: key -> [(offset, value)].
fn by_key(records: &[Value]) -> BTreeMap<String, Vec<(i64, Value)>> {
    let mut m: BTreeMap<String, Vec<(i64, Value)>> = BTreeMap::new();
    for r in records {
        let key = r[1].as_str().unwrap();
        if !key.starts_with("filler") && !key.starts_with("tick") {
            m.entry(key.to_string())
                .or_default()
                .push((r[0].as_i64().unwrap(), r[2].clone()));
        }
    }
    m
}

fn fillers(records: &[Value]) -> usize {
    records
        .iter()
        .filter(|r| r[1].as_str().unwrap().starts_with("filler"))
        .count()
}

/// Polls until `done(records)` holds (deadline [`DEADLINE`]); returns the last read.
fn wait_for(
    b: &Broker,
    topic: &str,
    what: &str,
    done: impl Fn(&[Value]) -> bool,
) -> (Vec<Value>, i64) {
    let start = Instant::now();
    loop {
        let (recs, end) = read(b, topic);
        if done(&recs) {
            return (recs, end);
        }
        assert!(
            start.elapsed() < DEADLINE,
            "{topic}: {what} not reached within {DEADLINE:?}; keys now {:?}\nbroker log:\n{}",
            by_key(&recs),
            b.logs_tail(40)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn msg(key: &str, value: Option<&str>, ts: Option<i64>, version: Option<i64>) -> Value {
    json!({"key": key, "value": value, "ts": ts, "version": version})
}

/// `expected`: key -> (offset, value) of the one record that must remain.
fn one_per_key(expected: &BTreeMap<String, (i64, Value)>) -> impl Fn(&[Value]) -> bool + '_ {
    move |recs| {
        let got = by_key(recs);
        got.len() == expected.len()
            && got
                .iter()
                .all(|(k, v)| v.len() == 1 && expected.get(k) == Some(&v[0]))
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

#[test]
fn timestamp_and_header_strategies_keep_the_highest_version_for_a_stock_client() {
    let b = broker();
    // Precise INVALID_CONFIG for bad strategies.
    let bad = create(&b, "bad", compacted(&[("compaction.strategy", "newest")]));
    assert_eq!(bad["error"], "INVALID_CONFIG", "{bad}");
    assert!(
        bad["message"]
            .as_str()
            .unwrap()
            .contains("compaction.strategy"),
        "{bad}"
    );
    let bad = create(&b, "bad", compacted(&[("compaction.strategy", "header")]));
    assert_eq!(
        bad["error"], "INVALID_CONFIG",
        "header without a name: {bad}"
    );
    for (t, s) in [("ts", "timestamp"), ("hdr", "header:version")] {
        let r = create(&b, t, compacted(&[("compaction.strategy", s)]));
        assert_eq!(r["ok"], true, "{r}");
    }

    let t0 = now_ms() - 600_000;
    // timestamp: (key, value, ts) in log order; the highest timestamp wins, ties to the later.
    let ts_msgs = [
        ("a", "a-300", 300),
        ("a", "a-100", 100),
        ("a", "a-200", 200),
        ("b", "b-50", 50),
        ("b", "b-60", 60),
        ("c", "c-9", 9),
        ("c", "c-9-later", 9),
    ];
    let ts_winners = ["a-300", "b-60", "c-9-later"];
    let messages: Vec<Value> = ts_msgs
        .iter()
        .map(|(k, v, ts)| msg(k, Some(v), Some(t0 + ts), None))
        .collect();
    // header: (key, value, version) in log order (spec §3.5 #10 and the KIP's rules).
    let hdr_msgs: Vec<(&str, Option<&str>, Option<i64>)> = vec![
        ("a", Some("A5"), Some(5)),
        ("a", Some("B3"), Some(3)),
        ("a", Some("Cnone"), None),
        ("d", Some("D5"), Some(5)),
        ("d", Some("D5-again"), Some(5)),
        ("n", Some("none1"), None),
        ("n", Some("none2"), None),
        ("o", Some("o-none"), None),
        ("o", Some("o7"), Some(7)),
        ("o", Some("o-none2"), None),
        ("t", Some("t9"), Some(9)),
        ("t", None, Some(1)),
    ];
    let hdr_winners = ["A5", "D5-again", "none2", "o7", "t9"];
    let hdr_messages: Vec<Value> = hdr_msgs
        .iter()
        .map(|(k, v, ver)| msg(k, *v, None, *ver))
        .collect();

    let reader = python_background(
        Python::PyPi,
        SCRIPT,
        "reader",
        &json!({"bootstrap": b.bootstrap(), "topic": "ts"}),
    );
    let ts_last = produce(&b, "ts", &messages, true);
    let hdr_last = produce(&b, "hdr", &hdr_messages, true);

    let expect =
        |msgs: Vec<(String, String)>, winners: &[&str]| -> BTreeMap<String, (i64, Value)> {
            msgs.iter()
                .enumerate()
                .filter(|(_, (_, v))| winners.contains(&v.as_str()))
                .map(|(i, (k, v))| (k.clone(), (i as i64, json!(v))))
                .collect()
        };
    let ts_expected = expect(
        ts_msgs.iter().map(|m| (m.0.into(), m.1.into())).collect(),
        &ts_winners,
    );
    let hdr_expected = expect(
        hdr_msgs
            .iter()
            .map(|m| (m.0.into(), m.1.unwrap_or("").into()))
            .collect(),
        &hdr_winners,
    );
    let (recs, end) = wait_for(
        &b,
        "ts",
        "one record per key by timestamp",
        one_per_key(&ts_expected),
    );
    assert_eq!(end, ts_last + 1, "end offset unchanged");
    assert_eq!(fillers(&recs), FILLER, "distinct keys all survive");
    let (recs, end) = wait_for(
        &b,
        "hdr",
        "one record per key by header",
        one_per_key(&hdr_expected),
    );
    assert_eq!(end, hdr_last + 1, "end offset unchanged");
    assert_eq!(fillers(&recs), FILLER);
    assert_cleaner_view(
        &b,
        "ts",
        "timestamp",
        (ts_msgs.len() - ts_winners.len()) as u64,
    );
    assert_cleaner_view(
        &b,
        "hdr",
        "header:version",
        (hdr_msgs.len() - hdr_winners.len()) as u64,
    );

    let r = finish_json(reader, Duration::from_secs(30));
    assert_eq!(
        (r["errors"].as_i64(), r["duplicates"].as_i64()),
        (Some(0), Some(0)),
        "{r}"
    );
    assert!(r["passes"].as_i64().unwrap() >= 1, "{r}");
}

#[test]
fn offset_strategy_keeps_the_last_record_and_tombstones_expire() {
    let b = broker();
    // Ticks roll tiny segments (segment.ms) far below the dirty ratio: max.compaction.lag.ms
    // is what makes the later cleans happen.
    let cfg = compacted(&[
        ("delete.retention.ms", "2000"),
        ("segment.ms", "1000"),
        ("max.compaction.lag.ms", "1000"),
    ]);
    assert_eq!(create(&b, "off", cfg)["ok"], true);
    let messages = [
        msg("k", Some("k1"), None, None),
        msg("j", Some("j1"), None, None),
        msg("k", Some("k2"), None, None),
        msg("j", None, None, None),
    ];
    let last = produce(&b, "off", &messages, true);
    let expected: BTreeMap<String, (i64, Value)> = [
        ("k".to_string(), (2, json!("k2"))),
        ("j".to_string(), (3, Value::Null)),
    ]
    .into();
    let (_, end) = wait_for(
        &b,
        "off",
        "last record per key, tombstone visible",
        one_per_key(&expected),
    );
    assert_eq!(end, last + 1);
    // Later cleans (time-rolled segments of small ticks) drop the tombstone after its horizon.
    let start = Instant::now();
    let mut tick = 0;
    loop {
        produce(
            &b,
            "off",
            &[msg(&format!("tick-{tick}"), Some("t"), None, None)],
            false,
        );
        tick += 1;
        let (recs, _) = read(&b, "off");
        let keys = by_key(&recs);
        if !keys.contains_key("j") {
            assert_eq!(keys.get("k"), Some(&vec![(2, json!("k2"))]));
            assert_eq!(fillers(&recs), FILLER);
            break;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "tombstone never expired; log:\n{}",
            b.logs_tail(40)
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

#[test]
fn a_crash_in_the_middle_of_a_swap_loses_nothing() {
    // The failpoint makes the broker abort right after the first .cleaned -> .swap rename.
    // SAFETY: nextest runs each test in its own process; nothing else reads the environment
    // concurrently here (the broker child inherits it at spawn).
    unsafe { std::env::set_var("SKIFF_TEST_CLEANER_CRASH_AFTER_SWAP", "1") };
    let mut b = broker();
    unsafe { std::env::remove_var("SKIFF_TEST_CLEANER_CRASH_AFTER_SWAP") };
    assert_eq!(create(&b, "crash", compacted(&[]))["ok"], true);
    let messages: Vec<Value> = (0..30)
        .map(|i| msg(&format!("k{}", i % 5), Some(&format!("v{i}")), None, None))
        .collect();
    let last = produce(&b, "crash", &messages, true);
    let start = Instant::now();
    while !b.logs().contains("aborting mid-swap") {
        assert!(
            start.elapsed() < DEADLINE,
            "the cleaner never swapped; log:\n{}",
            b.logs_tail(40)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    b.kill9(); // reap the aborted process
    let dir = b.partition_dir("crash", 0);
    let swaps: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".swap"))
        .collect();
    assert!(
        !swaps.is_empty(),
        "the crash left no .swap file in {}",
        dir.display()
    );
    b.restart();
    // Recovery rolled the swap forward (not a later clean: the log says so), so the segment
    // is wholly new, and nothing acknowledged is lost.
    assert!(
        b.logs()
            .contains("replacing a segment by its interrupted swap"),
        "no roll-forward on restart; log:\n{}",
        b.logs_tail(40)
    );
    let (recs, end) = read(&b, "crash");
    assert_eq!(end, last + 1);
    assert_eq!(fillers(&recs), FILLER);
    let keys = by_key(&recs);
    for k in 0..5 {
        let v = &keys[&format!("k{k}")];
        assert_eq!(v.len(), 1, "k{k}: {v:?}");
        assert_eq!(v[0], ((25 + k) as i64, json!(format!("v{}", 25 + k))));
    }
}

fn alter(b: &Broker, topic: &str, key: &str, value: &str) -> Value {
    python(
        Python::PyPi,
        "admin_ck.py",
        "incremental",
        &json!({"bootstrap": b.bootstrap(), "type": "topic", "name": topic,
                "ops": [[key, "SET", value]]}),
    )
}

#[test]
fn the_strategy_is_a_dynamic_topic_config() {
    let b = broker();
    assert_eq!(create(&b, "dyn", compacted(&[]))["ok"], true);
    let bad = alter(&b, "dyn", "compaction.strategy", "header:");
    assert_eq!(bad["error"], "INVALID_CONFIG", "{bad}");
    let bad = alter(&b, "dyn", "compaction.strategy", "header");
    assert_eq!(
        bad["error"], "INVALID_CONFIG",
        "header without a name: {bad}"
    );
    // Switched before anything is cleaned: the next clean keeps the highest timestamp, where
    // the default offset strategy would keep the later, older record.
    let r = alter(&b, "dyn", "compaction.strategy", "timestamp");
    assert_eq!(r["error"], Value::Null, "{r}");
    let t0 = now_ms() - 600_000;
    let messages = [
        msg("k", Some("ts500"), Some(t0 + 500), None),
        msg("k", Some("ts100"), Some(t0 + 100), None),
    ];
    let last = produce(&b, "dyn", &messages, true);
    let expected: BTreeMap<String, (i64, Value)> = [("k".to_string(), (0, json!("ts500")))].into();
    let (_, end) = wait_for(&b, "dyn", "the timestamp winner", one_per_key(&expected));
    assert_eq!(end, last + 1);
}

/// Delayed delivery (issue 8) x compaction: the cleaner's range stops at the delivery stable
/// offset, so a record that consumers cannot read yet never supersedes an older one. k=v1,
/// then k=v2 with `__delay_ms=8000`, then filler that rolls the 1 MiB segment: without the
/// bound the cleaner would clean that segment at once (v2 in the key map, v1 removed). With
/// it, v1 stays on disk until v2 is due (checked every 100 ms until 1.5 s before), and after
/// the due time a clean removes v1 and a full read shows only v2.
#[test]
fn a_delayed_record_waiting_for_delivery_does_not_compact_away_older_ones() {
    let b = broker();
    let r = create(&b, "dd", compacted(&[("delivery.delay.enable", "true")]));
    assert_eq!(r["ok"], true, "{r}");
    let mut v2 = msg("k", Some("v2"), None, None);
    v2["headers"] = json!([["__delay_ms", "8000"]]);
    let before = now_ms();
    let last = produce(&b, "dd", &[msg("k", Some("v1"), None, None), v2], true);
    assert_eq!(last, FILLER as i64 + 1);
    let due_not_before = before + 8_000;

    // While v2 waits: the cleaner looks at the log (its section appears) but v1's batch
    // stays whole on disk.
    let v1_on_disk = || {
        skiff_compat::read_batches(&b.partition_dir("dd", 0))
            .iter()
            .any(|x| x.base_offset == 0 && x.record_count == 1)
    };
    let mut seen_by_cleaner = false;
    while now_ms() < due_not_before - 1_500 {
        assert!(v1_on_disk(), "v1 compacted away while v2 was undelivered");
        let doc = b.admin_cli(&["partition", "dd", "0"]);
        assert_eq!(
            doc["sections"]["delivery"]["delivery_stable_offset"], 1,
            "{doc}"
        );
        seen_by_cleaner |= doc["sections"]["cleaner"]["strategy"] == "offset";
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(seen_by_cleaner, "the cleaner never looked at the log");

    // After the due time: v1 goes, v2 stays, the end offset is unchanged.
    let expected: BTreeMap<String, (i64, Value)> = [("k".to_string(), (1, json!("v2")))].into();
    let (recs, end) = wait_for(&b, "dd", "only v2 left", one_per_key(&expected));
    assert!(now_ms() >= due_not_before, "v2 read before its due time");
    assert_eq!(end, last + 1, "end offset unchanged");
    assert_eq!(fillers(&recs), FILLER, "distinct keys all survive");
    assert!(!v1_on_disk());
}
