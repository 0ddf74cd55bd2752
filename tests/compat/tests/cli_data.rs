//! The CLI's data commands end to end (issue 20 item 2): `skiff produce`, `skiff consume` and
//! `skiff group list|describe|seek|delete`, run as the `skiff` binary against a Skiff broker
//! and checked against stock clients (confluent-kafka through `ck.py` / `groups_ck.py`):
//! - records `skiff produce` wrote (keys, values, headers) are exactly what confluent-kafka
//!   reads, and keyed records land where Java-compatible partitioning puts them (librdkafka's
//!   `murmur2_random` partitioner for the same keys, and Kafka's own murmur2 vectors);
//! - records confluent-kafka wrote (plain, zstd and lz4 batches, explicit timestamps, headers)
//!   are exactly what `skiff consume --format json` prints, field by field; `--offset -N`,
//!   `@timestamp`, `end` and `--template` give exactly the expected output;
//! - a group committed by a stock consumer: `group list` shows it, `group describe --format
//!   json` has committed/end/lag per partition (lag = end - committed), `group seek` dry run
//!   changes nothing and `--execute` moves the offsets, `consume --group` starts at and
//!   commits the group's offsets, a group with a live member is refused by `seek --execute`
//!   and `delete`, and `group delete` removes an Empty group;
//! - the same produce / consume / group describe against Apache Kafka (the reference node of
//!   `scripts/kafka-reference.sh`), skipped with a message where it is not installed.
//!
//! `cli_data/stream.rs`: read_committed over confluent-kafka transactions, and `--follow`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_common;
#[path = "cli_data/stream.rs"]
mod stream;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use skiff_compat::{Broker, KafkaNode, Python, python, python_background, read_batches};

use cli_common::{
    consume_json, create_topic, kafka_available, skiff, skiff_json, skiff_ok, stock_read,
};

/// Produces `lines` keyed `key-i:value-i` with two headers through `skiff produce`; checks
/// what a stock client reads and returns `key -> partition` as skiff placed them.
fn produce_and_check(
    bootstrap: &str,
    topic: &str,
    partitions: i32,
    n: usize,
) -> BTreeMap<String, i64> {
    let input: String = (0..n).map(|i| format!("key-{i}:value-{i}\n")).collect();
    let out = skiff_ok(
        &[
            "produce",
            topic,
            "-b",
            bootstrap,
            "--key-delimiter",
            ":",
            "-H",
            "h1=a",
            "-H",
            "h2=b=c",
            "--format",
            "json",
        ],
        input.as_bytes(),
    );
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["topic"], json!(topic));
    assert_eq!(doc["records"], json!(n));
    assert_eq!(doc["failed"], json!(0));
    assert_eq!(doc["errors"], json!([]));
    let bytes: usize = (0..n)
        .map(|i| format!("key-{i}").len() + format!("value-{i}").len())
        .sum();
    assert_eq!(doc["bytes"], json!(bytes));
    let per_partition: i64 = doc["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["records"].as_i64().unwrap())
        .sum();
    assert_eq!(per_partition, n as i64);
    assert!(
        out.stderr.contains(&format!("produced {n} records")),
        "{}",
        out.stderr
    );

    let msgs = stock_read(bootstrap, topic, partitions);
    assert_eq!(msgs.len(), n, "{msgs:?}");
    let mut placed = BTreeMap::new();
    for m in &msgs {
        let key = m["key"].as_str().unwrap().to_owned();
        let i: usize = key.trim_start_matches("key-").parse().unwrap();
        assert_eq!(m["value"], json!(format!("value-{i}")), "{m}");
        assert_eq!(m["headers"], json!([["h1", "a"], ["h2", "b=c"]]), "{m}");
        assert_eq!(m["timestamp_type"], json!("CreateTime"), "{m}");
        placed.insert(key, m["partition"].as_i64().unwrap());
    }
    assert_eq!(placed.len(), n, "every key once");
    // Offsets per partition are in input order.
    let mut last: BTreeMap<i64, usize> = BTreeMap::new();
    for m in &msgs {
        let i: usize = m["key"].as_str().unwrap()[4..].parse().unwrap();
        let p = m["partition"].as_i64().unwrap();
        if let Some(prev) = last.insert(p, i) {
            assert!(prev < i, "partition {p}: key-{i} after key-{prev}");
        }
    }
    placed
}

#[test]
fn cli_data_produce_is_read_by_a_stock_client_with_java_partitioning() {
    let b = Broker::start();
    let bs = b.bootstrap();
    create_topic(&bs, "p", 3);
    create_topic(&bs, "p-java", 3);
    let placed = produce_and_check(&bs, "p", 3, 40);

    // librdkafka's murmur2_random is the Java client's partitioner for keyed records.
    let messages: Vec<Value> = placed
        .keys()
        .map(|k| json!({"key": k, "value": "x"}))
        .collect();
    let r = python(
        Python::PyPi,
        "ck.py",
        "produce",
        &json!({"bootstrap": bs, "topic": "p-java", "messages": messages,
                "config": {"partitioner": "murmur2_random"}}),
    );
    for (key, report) in placed.keys().zip(r["reports"].as_array().unwrap()) {
        assert_eq!(report["error"], Value::Null, "{report}");
        assert_eq!(
            report["partition"].as_i64(),
            placed.get(key).copied(),
            "key {key}: the Java partitioner and skiff disagree"
        );
    }

    // Kafka's murmur2 vectors: "foobar" -> -790332482 -> partition 0 of 3,
    // "a-little-bit-long-string" -> -985981536 -> partition 2 of 3.
    skiff_ok(
        &["produce", "p", "-b", &bs, "-K", "="],
        b"foobar=1\na-little-bit-long-string=2\n",
    );
    let got = consume_json(&["p", "-b", &bs, "--offset", "-1"]);
    let by_key: BTreeMap<&str, i64> = got
        .iter()
        .map(|r| (r["key"].as_str().unwrap(), r["partition"].as_i64().unwrap()))
        .collect();
    assert_eq!(by_key.get("foobar"), Some(&0), "{got:?}");
    assert_eq!(by_key.get("a-little-bit-long-string"), Some(&2), "{got:?}");

    // --partition, --file, --compression and acks=0.
    let file = b.temp_dir().join("lines.txt");
    std::fs::write(&file, "one\ntwo\nthree\n").unwrap();
    let f = file.display().to_string();
    for acks in ["1", "0"] {
        skiff_ok(
            &[
                "produce",
                "p",
                "-b",
                &bs,
                "--file",
                &f,
                "-p",
                "1",
                "--compression",
                "zstd",
                "--acks",
                acks,
            ],
            b"",
        );
    }
    let tail = consume_json(&["p", "-b", &bs, "-p", "1", "--offset", "-6"]);
    let values: Vec<&str> = tail.iter().map(|r| r["value"].as_str().unwrap()).collect();
    assert_eq!(values, ["one", "two", "three", "one", "two", "three"]);
    let codecs: Vec<&str> = read_batches(&b.partition_dir("p", 1))
        .iter()
        .map(|x| x.codec())
        .collect();
    assert!(codecs.contains(&"zstd"), "{codecs:?}");

    // A record the broker refuses fails alone, reported with its input line; exit 1.
    let r = python(
        Python::PyPi,
        "ck.py",
        "admin_create",
        &json!({"bootstrap": bs, "topics": [{"name": "small", "partitions": 1,
                "config": {"max.message.bytes": "200"}}]}),
    );
    assert_eq!(r["results"]["small"], Value::Null, "{r}");
    let input = format!("first\n{}\nthird\n", "x".repeat(500));
    let out = skiff(
        &[
            "produce",
            "small",
            "-b",
            &bs,
            "--max-batch-bytes",
            "1",
            "--format",
            "json",
        ],
        input.as_bytes(),
    );
    assert_eq!(out.status.code(), Some(1), "{}", out.stderr);
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        (doc["records"].clone(), doc["failed"].clone()),
        (json!(2), json!(1))
    );
    assert_eq!(doc["errors"][0]["line"], json!(2), "{doc}");
    let error = doc["errors"][0]["error"].as_str().unwrap();
    assert!(error.contains("MESSAGE_TOO_LARGE"), "{error}");
    assert!(
        out.stderr.contains("1 of 3 records were not produced"),
        "{}",
        out.stderr
    );
    let values: Vec<Value> = consume_json(&["small", "-b", &bs])
        .iter()
        .map(|r| r["value"].clone())
        .collect();
    assert_eq!(values, [json!("first"), json!("third")]);

    // Failures say what to do and exit non-zero.
    let missing = skiff(&["produce", "nope", "-b", &bs], b"x\n");
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        missing.stderr.contains("topic nope does not exist"),
        "{}",
        missing.stderr
    );
    let bad = skiff(&["produce", "p", "-b", &bs, "-K", ":"], b"k:v\nnokey\n");
    assert_eq!(bad.status.code(), Some(1));
    assert!(
        bad.stderr.contains("line 2 has no key delimiter"),
        "{}",
        bad.stderr
    );
}

#[test]
fn cli_data_consume_prints_stock_records_exactly() {
    let b = Broker::start();
    let bs = b.bootstrap();
    create_topic(&bs, "c", 1);
    // 30 records in three deliveries: uncompressed, zstd, lz4; explicit timestamps.
    let base_ts: i64 = 1_700_000_000_000;
    let expected: Vec<(String, String, i64)> = (0..30)
        .map(|i| (format!("k{i}"), format!("v{i}"), base_ts + i * 1000))
        .collect();
    for (chunk, codec) in [(0..10, "none"), (10..20, "zstd"), (20..30, "lz4")] {
        let messages: Vec<Value> = expected[chunk]
            .iter()
            .map(|(k, v, ts)| {
                json!({"key": k, "value": v, "partition": 0, "timestamp": ts,
                       "headers": [["src", "ck"], ["n", v]]})
            })
            .collect();
        let r = python(
            Python::PyPi,
            "ck.py",
            "produce",
            &json!({"bootstrap": bs, "topic": "c", "messages": messages,
                    "config": {"compression.type": codec, "linger.ms": 50}}),
        );
        assert!(
            r["reports"]
                .as_array()
                .unwrap()
                .iter()
                .all(|x| x["error"].is_null()),
            "{r}"
        );
    }
    let codecs: Vec<&str> = read_batches(&b.partition_dir("c", 0))
        .iter()
        .map(|x| x.codec())
        .collect();
    assert!(
        codecs.contains(&"zstd") && codecs.contains(&"lz4"),
        "{codecs:?}"
    );

    let all = consume_json(&["c", "-b", &bs, "--offset", "beginning", "--num", "30"]);
    assert_eq!(all.len(), 30);
    for (i, (r, (k, v, ts))) in all.iter().zip(&expected).enumerate() {
        let want = json!({
            "topic": "c", "partition": 0, "offset": i, "timestamp": ts,
            "timestamp_type": "CreateTime", "key": k, "value": v,
            "headers": [{"key": "src", "value": "ck"}, {"key": "n", "value": v}],
        });
        assert_eq!(r, &want, "record {i}");
    }
    // --num stops early; the default --offset is the beginning.
    let two = consume_json(&["c", "-b", &bs, "-n", "2"]);
    assert_eq!(
        two.iter()
            .map(|r| r["offset"].as_i64().unwrap())
            .collect::<Vec<_>>(),
        [0, 1]
    );
    // -2: the last two records.
    let last = consume_json(&["c", "-b", &bs, "--offset", "-2"]);
    assert_eq!(
        last.iter()
            .map(|r| r["offset"].as_i64().unwrap())
            .collect::<Vec<_>>(),
        [28, 29]
    );
    // @ts: from the first record at or after the time (offset 5 has base_ts + 5000).
    let at = format!("@{}", base_ts + 4500);
    let from_ts = consume_json(&["c", "-b", &bs, "--offset", &at]);
    assert_eq!(from_ts.len(), 25);
    assert_eq!(from_ts[0]["offset"], json!(5));
    // A time after every record: nothing; `end`: nothing; an absolute offset.
    let late = format!("@{}", base_ts + 1_000_000);
    assert!(consume_json(&["c", "-b", &bs, "--offset", &late]).is_empty());
    let end = skiff_ok(&["consume", "c", "-b", &bs, "--offset", "end"], b"");
    assert_eq!(end.stdout, "");
    let exact = consume_json(&["c", "-b", &bs, "--offset", "27"]);
    assert_eq!(exact.len(), 3);

    // Values one per line by default, and a kcat-like template.
    let plain = skiff_ok(&["consume", "c", "-b", &bs, "--offset", "-3"], b"");
    assert_eq!(plain.stdout, "v27\nv28\nv29\n");
    let t = skiff_ok(
        &[
            "consume",
            "c",
            "-b",
            &bs,
            "--offset",
            "12",
            "--num",
            "2",
            "--template",
            "%t|%p|%o|%k|%v|%T|%h\\n",
        ],
        b"",
    );
    assert_eq!(
        t.stdout,
        format!(
            "c|0|12|k12|v12|{}|src=ck,n=v12\nc|0|13|k13|v13|{}|src=ck,n=v13\n",
            base_ts + 12_000,
            base_ts + 13_000
        )
    );
    // A partition the topic does not have is a usage error.
    let bad = skiff(&["consume", "c", "-b", &bs, "-p", "4"], b"");
    assert_eq!(bad.status.code(), Some(1));
    assert!(bad.stderr.contains("has no partition 4"), "{}", bad.stderr);
}

/// The `partitions` of `group describe --format json`, as (topic, partition, committed, end,
/// lag) rows.
fn lag_rows(bootstrap: &str, group: &str) -> Vec<(String, i64, Value, Value, Value)> {
    let d = skiff_json(&["group", "describe", group, "-b", bootstrap]);
    assert_eq!(d["group"], json!(group));
    d["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["topic"].as_str().unwrap().to_owned(),
                p["partition"].as_i64().unwrap(),
                p["committed_offset"].clone(),
                p["end_offset"].clone(),
                p["lag"].clone(),
            )
        })
        .collect()
}

fn row(t: &str, p: i64, committed: i64, end: i64) -> (String, i64, Value, Value, Value) {
    (
        t.to_owned(),
        p,
        json!(committed),
        json!(end),
        json!(end - committed),
    )
}

/// A stock consumer of `group` commits `offsets` (`partition -> offset`) of `topic`.
fn stock_commit(
    bootstrap: &str,
    group: &str,
    topic: &str,
    partitions: i32,
    offsets: &[(i32, i64)],
) {
    let offsets: serde_json::Map<String, Value> = offsets
        .iter()
        .map(|(p, o)| (p.to_string(), json!([o, ""])))
        .collect();
    python(
        Python::PyPi,
        "groups_ck.py",
        "commit_metadata",
        &json!({"bootstrap": bootstrap, "group": group, "topic": topic,
                "partitions": partitions, "offsets": offsets}),
    );
}

/// Produces 10 records to partition 0 and 6 to partition 1 of `topic` with skiff.
fn fill_group_topic(bootstrap: &str, topic: &str) {
    let ten: String = (0..10).map(|i| format!("a{i}\n")).collect();
    let six: String = (0..6).map(|i| format!("b{i}\n")).collect();
    skiff_ok(
        &["produce", topic, "-b", bootstrap, "-p", "0"],
        ten.as_bytes(),
    );
    skiff_ok(
        &["produce", topic, "-b", bootstrap, "-p", "1"],
        six.as_bytes(),
    );
}

#[test]
fn cli_data_groups_list_describe_seek_consume_delete() {
    let b = Broker::start();
    let bs = b.bootstrap();
    create_topic(&bs, "g", 2);
    fill_group_topic(&bs, "g");
    stock_commit(&bs, "grp", "g", 2, &[(0, 4), (1, 1)]);

    let list = skiff_json(&["group", "list", "-b", &bs]);
    let grp = list["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["group"] == json!("grp"))
        .unwrap_or_else(|| panic!("grp not listed: {list}"))
        .clone();
    assert_eq!(grp["state"], json!("Empty"), "{grp}");
    assert_eq!(grp["protocol_type"], json!("consumer"), "{grp}");

    let d = skiff_json(&["group", "describe", "grp", "-b", &bs]);
    assert_eq!(d["state"], json!("Empty"));
    assert_eq!(d["members"], json!([]));
    assert_eq!(d["total_lag"], json!(6 + 5));
    assert_eq!(
        lag_rows(&bs, "grp"),
        [row("g", 0, 4, 10), row("g", 1, 1, 6)]
    );
    let text = skiff_ok(&["group", "describe", "grp", "-b", &bs], b"");
    assert!(text.stdout.contains("LAG"), "{}", text.stdout);

    // Dry run: a table of current -> new, nothing committed.
    let dry = skiff_json(&["group", "seek", "grp", "--to", "start", "-b", &bs]);
    assert_eq!(dry["executed"], json!(false));
    assert_eq!(
        dry["partitions"],
        json!([
            {"topic": "g", "partition": 0, "current_offset": 4, "new_offset": 0},
            {"topic": "g", "partition": 1, "current_offset": 1, "new_offset": 0},
        ])
    );
    assert_eq!(
        lag_rows(&bs, "grp"),
        [row("g", 0, 4, 10), row("g", 1, 1, 6)]
    );
    let exec = skiff_json(&[
        "group",
        "seek",
        "grp",
        "--to",
        "start",
        "--execute",
        "-b",
        &bs,
    ]);
    assert_eq!(exec["executed"], json!(true));
    assert_eq!(
        lag_rows(&bs, "grp"),
        [row("g", 0, 0, 10), row("g", 1, 0, 6)]
    );
    // An offset past the end is clamped to it; -N and @ts too.
    skiff_json(&[
        "group",
        "seek",
        "grp",
        "--to",
        "99",
        "--topic",
        "g",
        "--execute",
        "-b",
        &bs,
    ]);
    assert_eq!(
        lag_rows(&bs, "grp"),
        [row("g", 0, 10, 10), row("g", 1, 6, 6)]
    );
    skiff_json(&["group", "seek", "grp", "--to", "-3", "--execute", "-b", &bs]);
    assert_eq!(
        lag_rows(&bs, "grp"),
        [row("g", 0, 7, 10), row("g", 1, 3, 6)]
    );
    skiff_json(&["group", "seek", "grp", "--to", "@0", "--execute", "-b", &bs]);
    assert_eq!(
        lag_rows(&bs, "grp"),
        [row("g", 0, 0, 10), row("g", 1, 0, 6)]
    );

    // consume --group starts at the committed offsets and commits after printing.
    skiff_json(&["group", "seek", "grp", "--to", "4", "--execute", "-b", &bs]);
    let out = skiff_ok(
        &["consume", "g", "-b", &bs, "--group", "grp", "-p", "0"],
        b"",
    );
    assert_eq!(out.stdout, "a4\na5\na6\na7\na8\na9\n");
    let out = skiff_ok(
        &[
            "consume", "g", "-b", &bs, "--group", "grp", "-n", "1", "-p", "1",
        ],
        b"",
    );
    assert_eq!(out.stdout, "b4\n");
    assert_eq!(
        lag_rows(&bs, "grp"),
        [row("g", 0, 10, 10), row("g", 1, 5, 6)]
    );
    // --no-commit leaves the offsets alone.
    let out = skiff_ok(
        &["consume", "g", "-b", &bs, "-g", "grp", "--no-commit"],
        b"",
    );
    assert_eq!(out.stdout, "b5\n");
    assert_eq!(
        lag_rows(&bs, "grp"),
        [row("g", 0, 10, 10), row("g", 1, 5, 6)]
    );

    // A group with a live member (classic, and KIP-848 `group.protocol=consumer`, which
    // Kafka 4 describes only through ConsumerGroupDescribe): described with its member and
    // assignment; seek --execute and delete refuse.
    create_topic(&bs, "live-t", 1);
    live_member_is_described_and_protected(&bs, "live", json!({}));
    live_member_is_described_and_protected(&bs, "live848", json!({"group.protocol": "consumer"}));

    // delete removes an Empty group; deleting it again says it does not exist.
    let del = skiff_json(&["group", "delete", "grp", "-b", &bs]);
    assert_eq!(
        del["groups"],
        json!([{"group": "grp", "deleted": true, "error": null}])
    );
    let list = skiff_json(&["group", "list", "-b", &bs]);
    assert!(
        !list["groups"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["group"] == json!("grp")),
        "{list}"
    );
    let again = skiff(&["group", "delete", "grp", "-b", &bs], b"");
    assert_eq!(again.status.code(), Some(1));
    assert!(
        again.stdout.contains("group grp does not exist"),
        "{}",
        again.stdout
    );
    let gone = skiff(&["group", "describe", "grp", "-b", &bs], b"");
    assert_eq!(gone.status.code(), Some(1));
}

/// Runs one stock member of `group` on `live-t` (with `config`), waits until `group describe`
/// shows it holding partition 0 in a stable group, and checks that `seek --execute` and
/// `delete` refuse the group while it runs.
fn live_member_is_described_and_protected(bs: &str, group: &str, config: Value) {
    let mut member = python_background(
        Python::PyPi,
        "groups_ck.py",
        "member",
        &json!({"bootstrap": bs, "group": group, "topic": "live-t", "partitions": 1,
                "member_name": "live-member", "config": config}),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    let described = loop {
        // Until the member joined, the group does not exist (exit 1).
        let out = skiff(
            &["group", "describe", group, "-b", bs, "--format", "json"],
            b"",
        );
        let d: Value = serde_json::from_str(&out.stdout).unwrap_or(Value::Null);
        let assigned =
            d["members"][0]["assignments"] == json!([{"topic": "live-t", "partitions": [0]}]);
        let stable = d["state"]
            .as_str()
            .is_some_and(|s| s.eq_ignore_ascii_case("stable"));
        if stable && assigned {
            break d;
        }
        assert!(
            Instant::now() < deadline,
            "{group}: the member never settled: {d} {}",
            out.stderr
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(described["members"][0]["client_id"], json!("live-member"));
    assert_eq!(described["protocol_type"], json!("consumer"));
    let seek = [
        "group",
        "seek",
        group,
        "--to",
        "start",
        "--topic",
        "live-t",
        "--execute",
        "-b",
        bs,
    ];
    let refused = skiff(&seek, b"");
    assert_eq!(refused.status.code(), Some(1), "{group}");
    assert!(
        refused.stderr.contains("has active members"),
        "{}",
        refused.stderr
    );
    let refused = skiff(&["group", "delete", group, "-b", bs], b"");
    assert_eq!(refused.status.code(), Some(1), "{group}");
    assert!(
        refused.stdout.contains("has active members"),
        "{}",
        refused.stdout
    );
    member.send_line("");
    drop(member);
}

#[test]
fn cli_data_against_apache_kafka() {
    if !kafka_available() {
        eprintln!(
            "SKIPPED cli_data_against_apache_kafka: no Apache Kafka reference here \
             (needs java and scripts/kafka-reference.sh fetch)"
        );
        return;
    }
    let k = KafkaNode::start();
    let bs = k.bootstrap();
    create_topic(&bs, "kp", 3);
    let placed = produce_and_check(&bs, "kp", 3, 20);
    let consumed = consume_json(&["kp", "-b", &bs, "--offset", "beginning"]);
    assert_eq!(consumed.len(), 20);
    for r in &consumed {
        let key = r["key"].as_str().unwrap();
        assert_eq!(r["partition"].as_i64(), placed.get(key).copied(), "{r}");
        assert_eq!(
            r["headers"],
            json!([{"key": "h1", "value": "a"}, {"key": "h2", "value": "b=c"}])
        );
    }

    create_topic(&bs, "kg", 2);
    fill_group_topic(&bs, "kg");
    stock_commit(&bs, "kgrp", "kg", 2, &[(0, 4), (1, 1)]);
    let list = skiff_json(&["group", "list", "-b", &bs]);
    assert!(
        list["groups"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["group"] == json!("kgrp")),
        "{list}"
    );
    assert_eq!(
        lag_rows(&bs, "kgrp"),
        [row("kg", 0, 4, 10), row("kg", 1, 1, 6)]
    );
    skiff_json(&[
        "group",
        "seek",
        "kgrp",
        "--to",
        "end",
        "--execute",
        "-b",
        &bs,
    ]);
    assert_eq!(
        lag_rows(&bs, "kgrp"),
        [row("kg", 0, 10, 10), row("kg", 1, 6, 6)]
    );
    create_topic(&bs, "live-t", 1);
    live_member_is_described_and_protected(&bs, "k848", json!({"group.protocol": "consumer"}));
    let del = skiff_json(&["group", "delete", "kgrp", "-b", &bs]);
    assert_eq!(del["groups"][0]["deleted"], json!(true), "{del}");
}
