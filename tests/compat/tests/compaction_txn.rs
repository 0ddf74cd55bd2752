//! The log cleaner and transactions (issue 18 item 3) against the `skiff` binary, with PyPI
//! confluent-kafka: a transactional producer (`txn_ck.py transactions`) commits `k1`, aborts a
//! later `k1` and a `k3`, commits `k4`, on a compacted topic; 1.1 MB of plain filler rolls the
//! 1 MiB segment. Before the clean a read_uncommitted reader sees the aborted values; the
//! cleaner (backoff 100 ms) must remove them (deadline), after which read_uncommitted and
//! read_committed both see exactly the committed values, `k1` being the committed one (an
//! aborted record never wins its key).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use skiff_compat::{Broker, Python, python};

const TOPIC: &str = "compacted-txn";
const DEADLINE: Duration = Duration::from_secs(40);

fn broker() -> Broker {
    Broker::start_with(&[
        ("log.cleaner.backoff.ms", "100"),
        ("log.retention.check.interval.ms", "1000"),
        ("log.cleaner.dedupe.buffer.size", "16777216"),
        ("transaction.state.log.num.partitions", "4"),
        ("offsets.topic.num.partitions", "4"),
    ])
}

/// `key -> values` of every non-filler record from offset 0 to the end at `isolation`.
fn read(b: &Broker, isolation: &str) -> BTreeMap<String, Vec<String>> {
    let r = python(
        Python::PyPi,
        "ck.py",
        "consume",
        &json!({"bootstrap": b.bootstrap(), "topic": TOPIC, "assign": [[0, 0]], "timeout_s": 20,
                "config": {"isolation.level": isolation}}),
    );
    assert_eq!(r["eof"], json!(true), "{isolation}: no EOF: {r}");
    assert_eq!(r["errors"], json!([]), "{isolation}: {r}");
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for m in r["messages"].as_array().unwrap() {
        let key = m["key"].as_str().unwrap_or_default();
        if key.starts_with("filler") {
            continue;
        }
        out.entry(key.to_string())
            .or_default()
            .push(m["value"].as_str().unwrap_or_default().to_string());
    }
    out
}

fn has_aborted(m: &BTreeMap<String, Vec<String>>) -> bool {
    m.values().flatten().any(|v| v.starts_with("aborted"))
}

fn msg(key: &str, value: &str) -> Value {
    json!({"key": key, "value": value, "partition": 0})
}

#[test]
fn the_cleaner_removes_aborted_records_for_stock_readers() {
    let b = broker();
    let created = python(
        Python::PyPi,
        "compaction_ck.py",
        "create",
        &json!({"bootstrap": b.bootstrap(), "topic": TOPIC, "configs": {
            "cleanup.policy": "compact",
            "segment.bytes": "1048576",
            "min.cleanable.dirty.ratio": "0.01",
        }}),
    );
    assert_eq!(created["ok"], true, "{created}");
    let r = python(
        Python::PyPi,
        "txn_ck.py",
        "transactions",
        &json!({"bootstrap": b.bootstrap(), "topic": TOPIC, "transactional_id": "tx-compact",
        "transactions": [
            {"messages": [msg("k1", "committed-1"), msg("k2", "committed-2")], "commit": true},
            {"messages": [msg("k1", "aborted-1"), msg("k3", "aborted-3")], "commit": false},
            {"messages": [msg("k4", "committed-4")], "commit": true},
        ]}),
    );
    let outcomes: Vec<&str> = r["transactions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["outcome"].as_str().unwrap_or("?"))
        .collect();
    assert_eq!(outcomes, ["committed", "aborted", "committed"], "{r}");
    // The active segment is never cleaned: the aborted values are there until the filler rolls
    // it (read_uncommitted shows them; read_committed does not).
    let before = read(&b, "read_uncommitted");
    assert!(has_aborted(&before), "{before:?}");
    let filled = python(
        Python::PyPi,
        "compaction_ck.py",
        "produce",
        &json!({"bootstrap": b.bootstrap(), "topic": TOPIC, "messages": [],
                "filler": {"count": 1100, "value_len": 1000, "prefix": "filler"}}),
    );
    assert!(filled["last_offset"].as_i64().unwrap() > 1100, "{filled}");

    let committed: BTreeMap<String, Vec<String>> = [
        ("k1", "committed-1"),
        ("k2", "committed-2"),
        ("k4", "committed-4"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), vec![v.to_string()]))
    .collect();
    assert_eq!(read(&b, "read_committed"), committed, "before the clean");

    // The cleaner runs every 100 ms.
    let start = Instant::now();
    loop {
        let all = read(&b, "read_uncommitted");
        if !has_aborted(&all) {
            break;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "aborted records still there after {DEADLINE:?}: {all:?}\nbroker log:\n{}",
            b.logs_tail(40)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    eprintln!(
        "[phase] aborted records cleaned after {:?}",
        start.elapsed()
    );
    // k1: the committed value won although the aborted one was later; nothing aborted shows.
    assert_eq!(read(&b, "read_uncommitted"), committed, "read_uncommitted");
    assert_eq!(read(&b, "read_committed"), committed, "read_committed");

    // The producer's transactional id goes on after the clean.
    let r = python(
        Python::PyPi,
        "txn_ck.py",
        "transactions",
        &json!({"bootstrap": b.bootstrap(), "topic": TOPIC, "transactional_id": "tx-compact",
        "transactions": [{"messages": [msg("k5", "committed-5")], "commit": true}]}),
    );
    assert_eq!(r["transactions"][0]["outcome"], "committed", "{r}");
    let mut want = committed;
    want.insert("k5".into(), vec!["committed-5".into()]);
    assert_eq!(read(&b, "read_committed"), want, "after a new commit");
}
