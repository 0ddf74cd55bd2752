//! The CLI's data commands, second round (issue 20 item 2), run as the `skiff` binary against a
//! Skiff broker and checked against confluent-kafka (`ck.py` / `groups_ck.py`):
//! - `skiff produce --template` (partition, key, value and headers per record, records that
//!   are not lines) writes exactly what a stock consumer reads; a record that does not match
//!   the template fails the run before anything is sent;
//! - `skiff consume --group G` is a real member: next to a running confluent-kafka member of
//!   the same group the two split a 4-partition topic (disjoint, non-empty, the range
//!   assignment), the CLI's commits show in `group describe --format json`, and once it exits
//!   the group has only the stock member at once (LeaveGroup, not a session timeout);
//! - `skiff group seek --to shift:-N|shift:+N` moves committed offsets relative to themselves,
//!   clamped to the log, with a dry run first that changes nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use skiff_compat::broker::skiff_binary;
use skiff_compat::{Broker, KafkaNode, Python, python_background};

mod cli_common;
use cli_common::{create_topic, kafka_available, skiff, skiff_json, skiff_ok, stock_read};

/// `(partition, key, value, headers)` of stock-read messages, sorted by partition and offset.
fn summary(msgs: &[Value]) -> Vec<(i64, Value, Value, Value)> {
    let mut rows: Vec<(i64, i64, Value, Value, Value)> = msgs
        .iter()
        .map(|m| {
            (
                m["partition"].as_i64().unwrap(),
                m["offset"].as_i64().unwrap(),
                m["key"].clone(),
                m["value"].clone(),
                m["headers"].clone(),
            )
        })
        .collect();
    rows.sort_by_key(|r| (r.0, r.1));
    rows.into_iter()
        .map(|(p, _, k, v, h)| (p, k, v, h))
        .collect()
}

#[test]
fn cli_data2_produce_template_is_read_by_a_stock_client() {
    let b = Broker::start();
    let bs = b.bootstrap();
    create_topic(&bs, "tpl", 3);
    let input = "2|k0|v0|a=1,b=x=y\n0||empty key|\n1|k2|v 2|c=\n2|k3|v3|";
    let out = skiff_ok(
        &[
            "produce",
            "tpl",
            "-b",
            &bs,
            "--template",
            "%p|%k|%v|%h\\n",
            "-H",
            "g=all",
            "--format",
            "json",
        ],
        input.as_bytes(),
    );
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["records"], json!(4), "{doc}");
    assert_eq!(doc["failed"], json!(0), "{doc}");
    let got = summary(&stock_read(&bs, "tpl", 3));
    let want = vec![
        (0, json!(""), json!("empty key"), json!([["g", "all"]])),
        (
            1,
            json!("k2"),
            json!("v 2"),
            json!([["g", "all"], ["c", ""]]),
        ),
        (
            2,
            json!("k0"),
            json!("v0"),
            json!([["g", "all"], ["a", "1"], ["b", "x=y"]]),
        ),
        (2, json!("k3"), json!("v3"), json!([["g", "all"]])),
    ];
    assert_eq!(got, want);

    // Records that are not lines: a value spanning lines, keyed placement by murmur2.
    create_topic(&bs, "tpl2", 1);
    skiff_ok(
        &[
            "produce",
            "tpl2",
            "-b",
            &bs,
            "--template",
            "key=%k;value=%v;",
        ],
        b"key=a;value=line1\nline2;key=b;value=;",
    );
    let got = summary(&stock_read(&bs, "tpl2", 1));
    assert_eq!(
        got,
        vec![
            (0, json!("a"), json!("line1\nline2"), json!([])),
            (0, json!("b"), json!(""), json!([])),
        ]
    );

    // A record that does not match fails the run before anything is sent.
    let bad = skiff(
        &["produce", "tpl2", "-b", &bs, "--template", "%k %v\\n"],
        b"x 1\nnospace\n",
    );
    assert!(!bad.status.success(), "{}", bad.stderr);
    assert!(bad.stderr.contains("record 2 (line 2)"), "{}", bad.stderr);
    assert_eq!(
        stock_read(&bs, "tpl2", 1).len(),
        2,
        "the bad run wrote records"
    );
    // A template naming a partition the topic lacks names the line.
    let bad = skiff(
        &["produce", "tpl2", "-b", &bs, "--template", "%p:%v"],
        b"0:ok\n7:no\n",
    );
    assert!(!bad.status.success());
    assert!(
        bad.stderr.contains("line 2") && bad.stderr.contains("no partition 7"),
        "{}",
        bad.stderr
    );
    assert_eq!(
        stock_read(&bs, "tpl2", 1).len(),
        2,
        "the bad run wrote records"
    );
}

/// `group describe --format json`, or `Null` while the group does not exist.
fn describe(bs: &str, group: &str) -> Value {
    let out = skiff(
        &["group", "describe", group, "-b", bs, "--format", "json"],
        b"",
    );
    serde_json::from_str(&out.stdout).unwrap_or(Value::Null)
}

/// `client_id -> assigned partitions of topic` of a Stable group.
fn stable_shares(d: &Value, topic: &str) -> Option<BTreeMap<String, Vec<i64>>> {
    let stable = d["state"]
        .as_str()
        .is_some_and(|s| s.eq_ignore_ascii_case("stable"));
    if !stable {
        return None;
    }
    Some(
        d["members"]
            .as_array()?
            .iter()
            .map(|m| {
                let parts = m["assignments"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|a| a["topic"] == json!(topic))
                    .flat_map(|a| a["partitions"].as_array().cloned().unwrap_or_default())
                    .map(|p| p.as_i64().unwrap())
                    .collect();
                (
                    m["client_id"].as_str().unwrap_or_default().to_owned(),
                    parts,
                )
            })
            .collect(),
    )
}

/// Polls `describe` until `accept` takes it.
fn wait_group<T>(
    bs: &str,
    group: &str,
    what: &str,
    mut accept: impl FnMut(&Value) -> Option<T>,
) -> T {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let d = describe(bs, group);
        if let Some(v) = accept(&d) {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "{group}: {what} never happened: {d}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Starts `skiff consume TOPIC --group GROUP --follow --num N --format json`.
fn spawn_member(bs: &str, topic: &str, group: &str, num: usize) -> Child {
    let num = num.to_string();
    Command::new(skiff_binary())
        .args([
            "consume", topic, "-b", bs, "--group", group, "--follow", "--num", &num, "--format",
            "json",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start skiff consume")
}

/// Waits for `cli` to exit successfully; its JSON lines and stderr.
fn finish_member(mut cli: Child) -> (Vec<Value>, String) {
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = cli.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = cli.kill();
            let mut err = String::new();
            cli.stderr.take().unwrap().read_to_string(&mut err).unwrap();
            panic!("skiff consume --group did not stop after its records: {err}");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let (mut out, mut err) = (String::new(), String::new());
    cli.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    cli.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(status.success(), "{err}");
    let printed = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (printed, err)
}

/// Produces `n` records `pP-I` (I from `first`) to each of partitions `0..partitions` (with
/// `--template`, which names the partition per record).
fn fill(bs: &str, topic: &str, partitions: i32, first: usize, n: usize) {
    let input: String = (0..partitions)
        .flat_map(|p| (first..first + n).map(move |i| format!("{p}|p{p}-{i}\n")))
        .collect();
    skiff_ok(
        &["produce", topic, "-b", bs, "--template", "%p|%v\\n"],
        input.as_bytes(),
    );
}

#[test]
fn cli_data2_consume_group_shares_partitions_with_a_stock_member() {
    let b = Broker::start();
    group_sharing(&b.bootstrap(), "shared", "g-shared");
}

#[test]
fn cli_data2_group_seek_shift_moves_committed_offsets() {
    let b = Broker::start();
    seek_shift(&b.bootstrap(), "s", "g-shift");
}

#[test]
fn cli_data2_against_apache_kafka() {
    if !kafka_available() {
        eprintln!(
            "SKIPPED cli_data2_against_apache_kafka: no Apache Kafka reference here \
             (needs java and scripts/kafka-reference.sh fetch)"
        );
        return;
    }
    let k = KafkaNode::start();
    let bs = k.bootstrap();
    group_sharing(&bs, "k-shared", "k-g-shared");
    seek_shift(&bs, "k-s", "k-g-shift");
}

/// The CLI and a confluent-kafka member in one group of a 4-partition topic, each leading once.
fn group_sharing(bs: &str, topic: &str, group: &str) {
    create_topic(bs, topic, 4);
    // The CLI joins first (it leads the group), following, until it printed 8 records.
    let cli = spawn_member(bs, topic, group, 8);
    let alone = wait_group(bs, group, "the CLI alone with 4 partitions", |d| {
        stable_shares(d, topic).filter(|s| s.len() == 1)
    });
    assert_eq!(alone.get("skiff-cli"), Some(&vec![0, 1, 2, 3]), "{alone:?}");

    // A confluent-kafka member joins: the range assignment splits the topic 2 + 2.
    let stock = python_background(
        Python::PyPi,
        "groups_ck.py",
        "member",
        &json!({"bootstrap": bs, "group": group, "topic": topic, "partitions": 4,
                "member_name": "stock"}),
    );
    let shares = wait_group(bs, group, "two members sharing", |d| {
        stable_shares(d, topic).filter(|s| s.len() == 2 && s.values().all(|p| p.len() == 2))
    });
    let cli_parts: BTreeSet<i64> = shares["skiff-cli"].iter().copied().collect();
    let stock_parts: BTreeSet<i64> = shares["stock"].iter().copied().collect();
    assert!(cli_parts.is_disjoint(&stock_parts), "{shares:?}");
    assert_eq!(cli_parts.len() + stock_parts.len(), 4, "{shares:?}");

    // 4 records per partition: the CLI prints exactly those of its 2 partitions and exits.
    fill(bs, topic, 4, 0, 4);
    let (printed, err) = finish_member(cli);
    let exited = Instant::now();
    assert_eq!(printed.len(), 8, "{printed:?}\n{err}");
    let mut last: BTreeMap<i64, i64> = BTreeMap::new();
    for r in &printed {
        let p = r["partition"].as_i64().unwrap();
        assert!(
            cli_parts.contains(&p),
            "printed a record of partition {p}, not its own: {r}"
        );
        assert_eq!(r["value"].as_str().unwrap()[..3], format!("p{p}-"), "{r}");
        last.insert(p, r["offset"].as_i64().unwrap());
    }
    assert_eq!(last.len(), 2, "both of its partitions: {printed:?}");

    // LeaveGroup: the stock member is alone at once (the CLI's session timeout is 30 s), and
    // the CLI's commits are the group's committed offsets of its partitions.
    let d = wait_group(bs, group, "the stock member alone", |d| {
        stable_shares(d, topic)
            .filter(|s| s.len() == 1 && s.get("stock") == Some(&vec![0, 1, 2, 3]))
            .map(|_| d.clone())
    });
    assert!(
        exited.elapsed() < Duration::from_secs(15),
        "the CLI's member stayed until its session timed out: no LeaveGroup?"
    );
    for p in &cli_parts {
        let row = d["partitions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["topic"] == json!(topic) && r["partition"] == json!(p))
            .unwrap_or_else(|| panic!("no row for partition {p}: {d}"));
        assert_eq!(
            row["committed_offset"],
            json!(last[p] + 1),
            "partition {p}: {d}"
        );
        assert_eq!(row["end_offset"], json!(4), "{d}");
    }

    // The stock member leads now: it assigns with the range assignor over the CLI's
    // subscription, and the CLI reads only what it was given, from the committed offsets.
    let cli = spawn_member(bs, topic, group, 4);
    let shares = wait_group(bs, group, "the CLI joining the stock member", |d| {
        stable_shares(d, topic).filter(|s| s.len() == 2 && s.values().all(|p| p.len() == 2))
    });
    let cli_parts: BTreeSet<i64> = shares["skiff-cli"].iter().copied().collect();
    fill(bs, topic, 4, 4, 2);
    let (printed, err) = finish_member(cli);
    assert_eq!(printed.len(), 4, "{printed:?}\n{err}");
    for r in &printed {
        let p = r["partition"].as_i64().unwrap();
        assert!(
            cli_parts.contains(&p),
            "printed a record of partition {p}: {r}"
        );
        assert!(
            r["offset"].as_i64().unwrap() >= 4,
            "re-read a committed record: {r}"
        );
    }
    drop(stock);
}

/// `group seek --to shift:±N` over a group with committed offsets 10 and 6.
fn seek_shift(bs: &str, topic: &str, group: &str) {
    create_topic(bs, topic, 2);
    let ten: String = (0..10).map(|i| format!("a{i}\n")).collect();
    let six: String = (0..6).map(|i| format!("b{i}\n")).collect();
    skiff_ok(&["produce", topic, "-b", bs, "-p", "0"], ten.as_bytes());
    skiff_ok(&["produce", topic, "-b", bs, "-p", "1"], six.as_bytes());
    // A simple consumer commits 7 on partition 0, then a member reads the remaining 9,
    // commits and leaves, so the group is Empty.
    let out = skiff_ok(
        &[
            "consume",
            topic,
            "-b",
            bs,
            "--group",
            group,
            "-p",
            "0",
            "--no-join",
            "--num",
            "7",
        ],
        b"",
    );
    assert_eq!(out.stdout.lines().count(), 7);
    let out = skiff_ok(
        &["consume", topic, "-b", bs, "--group", group, "--num", "9"],
        b"",
    );
    assert_eq!(out.stdout.lines().count(), 9, "{}", out.stderr);
    let committed = || -> Vec<(i64, Value)> {
        let d = describe(bs, group);
        assert!(d["members"].as_array().is_some_and(Vec::is_empty), "{d}");
        d["partitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["partition"].as_i64().unwrap(),
                    r["committed_offset"].clone(),
                )
            })
            .collect()
    };
    assert_eq!(committed(), [(0, json!(10)), (1, json!(6))]);

    let rows = |doc: &Value| -> Vec<(i64, Value, Value)> {
        doc["partitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["partition"].as_i64().unwrap(),
                    r["current_offset"].clone(),
                    r["new_offset"].clone(),
                )
            })
            .collect()
    };
    let dry = skiff_json(&["group", "seek", group, "-b", bs, "--to", "shift:-4"]);
    assert_eq!(dry["executed"], json!(false));
    assert_eq!(
        rows(&dry),
        [(0, json!(10), json!(6)), (1, json!(6), json!(2))]
    );
    assert_eq!(
        committed(),
        [(0, json!(10)), (1, json!(6))],
        "a dry run changed offsets"
    );
    let done = skiff_json(&[
        "group",
        "seek",
        group,
        "-b",
        bs,
        "--to",
        "shift:-4",
        "--execute",
    ]);
    assert_eq!(done["executed"], json!(true));
    assert_eq!(committed(), [(0, json!(6)), (1, json!(2))]);
    // Clamped to [log start, end].
    let up = skiff_json(&[
        "group",
        "seek",
        group,
        "-b",
        bs,
        "--to",
        "shift:+5",
        "--execute",
    ]);
    assert_eq!(
        rows(&up),
        [(0, json!(6), json!(10)), (1, json!(2), json!(6))]
    );
    let down = skiff_json(&[
        "group",
        "seek",
        group,
        "-b",
        bs,
        "--to",
        "shift:-100",
        "--execute",
    ]);
    assert_eq!(
        rows(&down),
        [(0, json!(10), json!(0)), (1, json!(6), json!(0))]
    );
    assert_eq!(committed(), [(0, json!(0)), (1, json!(0))]);
    // A partition without a committed offset cannot be shifted.
    let fresh = format!("{topic}-new");
    create_topic(bs, &fresh, 1);
    let bad = skiff(
        &[
            "group", "seek", group, "-b", bs, "--to", "shift:-1", "--topic", &fresh,
        ],
        b"",
    );
    assert!(!bad.status.success());
    let want = format!("no committed offset for {fresh}-0");
    assert!(bad.stderr.contains(&want), "{}", bad.stderr);
}

#[test]
fn cli_data2_consume_group_commits_and_leaves_on_ctrl_c() {
    use std::io::BufRead;
    let b = Broker::start();
    let bs = b.bootstrap();
    let (topic, group) = ("int", "g-int");
    create_topic(&bs, topic, 1);
    skiff_ok(&["produce", topic, "-b", &bs], b"a\nb\nc\n");
    let mut cli = Command::new(skiff_binary())
        .args(["consume", topic, "-b", &bs, "--group", group, "--follow"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start skiff consume");
    let mut lines = std::io::BufReader::new(cli.stdout.take().unwrap()).lines();
    for want in ["a", "b", "c"] {
        assert_eq!(lines.next().unwrap().unwrap(), want);
    }
    wait_group(&bs, group, "the CLI a stable member", |d| {
        stable_shares(d, topic).filter(|s| s.len() == 1)
    });
    let pid = cli.id().to_string();
    let sent = Command::new("kill").args(["-INT", &pid]).status().unwrap();
    assert!(sent.success());
    let deadline = Instant::now() + Duration::from_secs(15);
    let status = loop {
        if let Some(s) = cli.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "skiff consume ignored Ctrl-C");
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut err = String::new();
    cli.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(status.success(), "{status:?}: {err}");
    // Left at once (no session timeout) with its position committed.
    let d = describe(&bs, group);
    assert_eq!(d["members"], json!([]), "{d}\n{err}");
    assert_eq!(d["partitions"][0]["committed_offset"], json!(3), "{d}");
}
