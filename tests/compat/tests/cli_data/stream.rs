//! `skiff consume` over transactions and in `--follow` mode: read_committed hides an aborted
//! transaction written by confluent-kafka's transactional producer (read_uncommitted shows it,
//! markers never print), and `--follow --offset end` prints records produced after it started.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use skiff_compat::broker::skiff_binary;
use skiff_compat::{Broker, Python, python};

use super::cli_common::{consume_json, create_topic, skiff_ok};

#[test]
fn cli_data_consume_read_committed_skips_aborted_transactions() {
    let b = Broker::start();
    let bs = b.bootstrap();
    create_topic(&bs, "tx", 1);
    let msgs = |vs: &[&str]| -> Vec<Value> {
        vs.iter()
            .map(|v| json!({"value": v, "partition": 0}))
            .collect()
    };
    let r = python(
        Python::PyPi,
        "txn_ck.py",
        "transactions",
        &json!({"bootstrap": bs, "topic": "tx", "transactional_id": "cli-tx",
        "transactions": [
            {"messages": msgs(&["c1", "c2"]), "commit": true},
            {"messages": msgs(&["a1", "a2"]), "commit": false},
            {"messages": msgs(&["c3"]), "commit": true},
        ]}),
    );
    let outcomes: Vec<&Value> = r["transactions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| &t["outcome"])
        .collect();
    assert_eq!(
        outcomes,
        [&json!("committed"), &json!("aborted"), &json!("committed")]
    );

    let committed = skiff_ok(
        &["consume", "tx", "-b", &bs, "--isolation", "read-committed"],
        b"",
    );
    assert_eq!(committed.stdout, "c1\nc2\nc3\n");
    let all = skiff_ok(&["consume", "tx", "-b", &bs], b"");
    assert_eq!(all.stdout, "c1\nc2\na1\na2\nc3\n");
    // Offsets skip the markers (one after each transaction).
    let lines = consume_json(&["tx", "-b", &bs, "--isolation", "read_committed"]);
    let offsets: Vec<i64> = lines
        .iter()
        .map(|l| l["offset"].as_i64().unwrap())
        .collect();
    assert_eq!(offsets, [0, 1, 6]);
}

#[test]
fn cli_data_consume_follow_prints_new_records() {
    let b = Broker::start();
    let bs = b.bootstrap();
    create_topic(&bs, "f", 1);
    skiff_ok(&["produce", "f", "-b", &bs], b"old\n");
    let mut child = Command::new(skiff_binary())
        .args([
            "consume", "f", "-b", &bs, "--follow", "--offset", "end", "--num", "2",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start skiff consume");
    // Produce one record at a time until the follower has printed two and exited.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut i = 0;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("skiff consume --follow did not stop after 2 new records");
        }
        skiff_ok(
            &["produce", "f", "-b", &bs],
            format!("new-{i}\n").as_bytes(),
        );
        i += 1;
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert!(status.success(), "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(
        !out.contains("old"),
        "--offset end printed an old record: {out}"
    );
    let first: usize = lines[0].trim_start_matches("new-").parse().unwrap();
    assert_eq!(lines[1], format!("new-{}", first + 1), "{out}");
}
