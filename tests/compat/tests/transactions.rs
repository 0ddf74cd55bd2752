//! Transactions with stock clients against the `skiff` binary (issue 18): confluent-kafka
//! (PyPI and Debian) transactional producers commit and abort; read_committed consumers see
//! exactly the committed records and read_uncommitted ones see everything; a second producer
//! with the same transactional.id fences the first; a producer that dies mid-transaction is
//! aborted by the coordinator after its timeout and the LSO moves on; a
//! consume-transform-produce loop commits its input offsets with its output.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use skiff_compat::{Broker, Python, python};

const SCRIPT: &str = "txn_ck.py";
const PARTITIONS: i32 = 2;

fn broker() -> Broker {
    Broker::start_with(&[
        (
            "transaction.abort.timed.out.transaction.cleanup.interval.ms",
            "500",
        ),
        ("transaction.state.log.num.partitions", "4"),
        ("offsets.topic.num.partitions", "4"),
    ])
}

fn create(b: &Broker, topic: &str) {
    let r = python(
        Python::PyPi,
        "ck.py",
        "admin_create",
        &json!({"bootstrap": b.bootstrap(), "topics": [{"name": topic, "partitions": PARTITIONS}]}),
    );
    assert_eq!(r["results"][topic], Value::Null, "{r}");
}

fn msgs(prefix: &str, n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| json!({"key": format!("{prefix}{i}"), "value": format!("{prefix}-v{i}"), "partition": (i as i32) % PARTITIONS}))
        .collect()
}

/// Keys read from every partition from offset 0 until EOF at `isolation`.
fn read_keys(b: &Broker, topic: &str, isolation: &str) -> Vec<String> {
    let assign: Vec<Value> = (0..PARTITIONS).map(|p| json!([p, 0])).collect();
    let r = python(
        Python::PyPi,
        "ck.py",
        "consume",
        &json!({"bootstrap": b.bootstrap(), "topic": topic, "assign": assign, "timeout_s": 20,
                "config": {"isolation.level": isolation}}),
    );
    assert_eq!(
        r["eof"],
        json!(true),
        "{isolation} consumer did not reach the end: {r}"
    );
    assert_eq!(r["errors"], json!([]), "{r}");
    r["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["key"].as_str().unwrap().to_string())
        .collect()
}

fn keys(prefixes: &[(&str, usize)]) -> BTreeSet<String> {
    prefixes
        .iter()
        .flat_map(|(p, n)| (0..*n).map(move |i| format!("{p}{i}")))
        .collect()
}

fn commit_and_abort(py: Python) {
    let started = Instant::now();
    let b = broker();
    let topic = "txn-commit-abort";
    create(&b, topic);
    let r = python(
        py,
        SCRIPT,
        "transactions",
        &json!({"bootstrap": b.bootstrap(), "topic": topic, "transactional_id": "tx-ca",
        "transactions": [
            {"messages": msgs("c1-", 6), "commit": true},
            {"messages": msgs("a1-", 5), "commit": false},
            {"messages": msgs("c2-", 4), "commit": true},
        ]}),
    );
    let outcomes: Vec<&str> = r["transactions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["outcome"].as_str().unwrap_or("?"))
        .collect();
    assert_eq!(outcomes, ["committed", "aborted", "committed"], "{r}");
    eprintln!("[phase] produce {:?}", started.elapsed());
    let committed: BTreeSet<String> = read_keys(&b, topic, "read_committed").into_iter().collect();
    assert_eq!(committed, keys(&[("c1-", 6), ("c2-", 4)]), "read_committed");
    let all = read_keys(&b, topic, "read_uncommitted");
    assert_eq!(
        all.len(),
        15,
        "read_uncommitted sees every data record: {all:?}"
    );
    assert_eq!(
        all.into_iter().collect::<BTreeSet<_>>(),
        keys(&[("c1-", 6), ("a1-", 5), ("c2-", 4)])
    );
    eprintln!("[phase] consume {:?}", started.elapsed());
}

#[test]
fn pypi_confluent_kafka_commit_and_abort() {
    commit_and_abort(Python::PyPi);
}

#[test]
fn debian_confluent_kafka_commit_and_abort() {
    commit_and_abort(Python::Debian);
}

#[test]
fn a_second_producer_fences_the_first() {
    let b = broker();
    let topic = "txn-fence";
    create(&b, topic);
    let r = python(
        Python::PyPi,
        SCRIPT,
        "fence",
        &json!({"bootstrap": b.bootstrap(), "topic": topic, "transactional_id": "tx-fence",
                "messages": msgs("a-", 4), "b_messages": msgs("b-", 3)}),
    );
    let a = &r["a"];
    assert_ne!(a, &json!("committed"), "the fenced producer committed: {r}");
    let name = a["name"].as_str().unwrap_or_default();
    assert!(
        ["_FENCED", "PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH"].contains(&name),
        "fenced producer's error: {r}"
    );
    assert_eq!(a["fatal"], json!(true), "{r}");
    let committed: BTreeSet<String> = read_keys(&b, topic, "read_committed").into_iter().collect();
    assert_eq!(
        committed,
        keys(&[("b-", 3)]),
        "only the new producer's records: {r}"
    );
}

#[test]
fn a_producer_dying_mid_transaction_is_aborted_after_its_timeout() {
    let started = Instant::now();
    let b = broker();
    let topic = "txn-hang";
    create(&b, topic);
    let r = python(
        Python::PyPi,
        SCRIPT,
        "hang",
        &json!({"bootstrap": b.bootstrap(), "topic": topic, "transactional_id": "tx-hang",
                "transaction_timeout_ms": 2000, "messages": msgs("h-", 4)}),
    );
    assert_eq!(r["reports"].as_array().unwrap().len(), 4, "{r}");
    // Committed records after the hung ones: visible only once the hung txn is aborted.
    let after = python(
        Python::PyPi,
        SCRIPT,
        "transactions",
        &json!({"bootstrap": b.bootstrap(), "topic": topic, "transactional_id": "tx-after",
                "transactions": [{"messages": msgs("ok-", 4), "commit": true}]}),
    );
    assert_eq!(
        after["transactions"][0]["outcome"],
        json!("committed"),
        "{after}"
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let got: BTreeSet<String> = read_keys(&b, topic, "read_committed").into_iter().collect();
        if got == keys(&[("ok-", 4)]) {
            break;
        }
        assert!(
            got.is_empty(),
            "read_committed saw a hung or partial txn: {got:?}"
        );
        assert!(
            Instant::now() < deadline,
            "the hung transaction was never aborted (LSO stuck)"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    eprintln!("[phase] LSO advanced after {:?}", started.elapsed());
}

#[test]
fn consume_transform_produce_commits_offsets_with_the_output() {
    let b = broker();
    let (input, output) = ("txn-ctp-in", "txn-ctp-out");
    create(&b, input);
    create(&b, output);
    let produced = python(
        Python::PyPi,
        "ck.py",
        "produce",
        &json!({"bootstrap": b.bootstrap(), "topic": input, "messages": msgs("in-", 20)}),
    );
    assert_eq!(produced["unflushed"], json!(0), "{produced}");
    // Run 1 aborts its last transaction: its output is invisible and its input offsets are
    // not committed, so run 2 (same group) reprocesses exactly those records.
    let ctp = |total: i64, abort_last: bool| {
        python(
            Python::PyPi,
            SCRIPT,
            "ctp",
            &json!({"bootstrap": b.bootstrap(), "input": input, "output": output, "group": "ctp-g",
                    "transactional_id": "tx-ctp", "total": total, "batch": 5,
                    "partitions": PARTITIONS, "abort_last": abort_last}),
        )
    };
    let committed_sum = |r: &Value| -> i64 {
        (0..PARTITIONS)
            .map(|p| r["committed"][p.to_string()].as_i64().unwrap_or(-1).max(0))
            .sum()
    };
    let r1 = ctp(20, true);
    assert_eq!(r1["consumed"], json!(20), "{r1}");
    let committed = committed_sum(&r1);
    assert!(
        (1..20).contains(&committed),
        "the aborted transaction's input offsets must not be committed: {r1}"
    );
    let out: BTreeSet<String> = read_keys(&b, output, "read_committed")
        .into_iter()
        .collect();
    assert_eq!(
        out.len() as i64,
        committed,
        "output and committed input agree: {r1} {out:?}"
    );
    let r2 = ctp(20 - committed, false);
    assert_eq!(committed_sum(&r2), 20, "{r2}");
    let out: BTreeSet<String> = read_keys(&b, output, "read_committed")
        .into_iter()
        .collect();
    assert_eq!(out, keys(&[("in-", 20)]), "{r2}");
}

#[test]
fn kafka_python_commit_and_abort() {
    let b = broker();
    let topic = "txn-kp";
    create(&b, topic);
    let r = python(
        Python::PyPi,
        "txn_kp.py",
        "transactions",
        &json!({"bootstrap": b.bootstrap(), "topic": topic, "transactional_id": "tx-kp",
        "transactions": [
            {"messages": msgs("c1-", 4), "commit": true},
            {"messages": msgs("a1-", 3), "commit": false},
            {"messages": msgs("c2-", 2), "commit": true},
        ]}),
    );
    assert_eq!(
        r["transactions"],
        json!([{"outcome": "committed"}, {"outcome": "aborted"}, {"outcome": "committed"}]),
        "{r}"
    );
    let read = |isolation: &str| {
        let c = python(
            Python::PyPi,
            "txn_kp.py",
            "consume",
            &json!({"bootstrap": b.bootstrap(), "topic": topic, "partitions": [0, 1], "isolation": isolation}),
        );
        assert_eq!(c["eof"], json!(true), "{c}");
        c["keys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k.as_str().unwrap().to_string())
            .collect::<BTreeSet<_>>()
    };
    assert_eq!(read("read_committed"), keys(&[("c1-", 4), ("c2-", 2)]));
    assert_eq!(
        read("read_uncommitted"),
        keys(&[("c1-", 4), ("a1-", 3), ("c2-", 2)])
    );
    // kcat (librdkafka's CLI) reads at read_committed too and produces in a transaction.
    let out = skiff_compat::kcat(
        &[
            "-b",
            &b.bootstrap(),
            "-C",
            "-t",
            topic,
            "-e",
            "-q",
            "-f",
            "%k\n",
            "-X",
            "isolation.level=read_committed",
        ],
        b"",
    );
    assert!(out.status.success(), "{out:?}");
    let got: BTreeSet<String> = out.stdout.lines().map(str::to_string).collect();
    assert_eq!(got, keys(&[("c1-", 4), ("c2-", 2)]));
}

#[test]
fn kcat_produces_in_a_transaction() {
    let b = broker();
    let topic = "txn-kcat";
    create(&b, topic);
    let out = skiff_compat::kcat(
        &[
            "-b",
            &b.bootstrap(),
            "-P",
            "-t",
            topic,
            "-K",
            ":",
            "-p",
            "0",
            "-X",
            "transactional.id=tx-kcat",
        ],
        b"k1:v1\nk2:v2\nk3:v3\n",
    );
    assert!(out.status.success(), "{out:?}");
    let read = |isolation: &str| {
        let out = skiff_compat::kcat(
            &[
                "-b",
                &b.bootstrap(),
                "-C",
                "-t",
                topic,
                "-p",
                "0",
                "-e",
                "-q",
                "-f",
                "%k\n",
                "-X",
                &format!("isolation.level={isolation}"),
            ],
            b"",
        );
        assert!(out.status.success(), "{out:?}");
        out.stdout.lines().map(str::to_string).collect::<Vec<_>>()
    };
    assert_eq!(read("read_committed"), ["k1", "k2", "k3"]);
    // The commit marker is in the log: DescribeProducers-level proof is in the storage
    // tests; here the log end is past the three records (records + one control batch).
    let wm = python(
        Python::PyPi,
        "ck.py",
        "watermarks",
        &json!({"bootstrap": b.bootstrap(), "topic": topic, "partitions": [0]}),
    );
    assert_eq!(
        wm["watermarks"]["0"],
        json!([0, 4]),
        "three records and a COMMIT marker: {wm}"
    );
}
