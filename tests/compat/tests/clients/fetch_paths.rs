//! The fetch paths a stock consumer must actually use, proven by the broker's counters
//! (`GET /api/v1/stats` on the admin port): kafka-python 3 opens an incremental fetch session
//! (KIP-227) and then fetches incrementally within it, and record bytes go from the segment
//! files to the socket with `sendfile` (at least every stored byte a reader consumed), while the
//! bytes written from user-space buffers stay well below the record bytes. If sessions stop
//! being created or served, or fetch data stops going through `sendfile`, this fails.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use rdkafka::Offset;
use serde_json::{Value, json};
use skiff_compat::{Broker, Python, python};

use crate::common::{Out, create_topic, rd_produce, rd_read, rec};

const RECORDS: usize = 300;
const VALUE_BYTES: usize = 1000;

/// `GET /api/v1/stats` over a plain HTTP/1.1 request.
fn stats(b: &Broker) -> Value {
    let port = b
        .admin_port()
        .expect("the broker runs with skiff.admin.listener");
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect to the admin port");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"GET /api/v1/stats HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp)
        .expect("read the admin response");
    let Some((head, body)) = resp.split_once("\r\n\r\n") else {
        panic!("not an HTTP response: {resp:?}")
    };
    assert!(head.starts_with("HTTP/1.1 200"), "{resp}");
    serde_json::from_str(body).unwrap_or_else(|e| panic!("stats body is not JSON ({e}): {body}"))
}

fn counter(v: &Value, path: &[&str]) -> u64 {
    let mut cur = v;
    for p in path {
        cur = &cur[*p];
    }
    cur.as_u64()
        .unwrap_or_else(|| panic!("no counter {path:?} in {v}"))
}

/// Bytes of every `.log` segment file of `topic`-0: what a full read must transfer.
fn stored_bytes(b: &Broker, topic: &str) -> u64 {
    std::fs::read_dir(b.partition_dir(topic, 0))
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "log"))
        .map(|e| e.metadata().map_or(0, |m| m.len()))
        .sum()
}

#[test]
fn fetch_sessions_and_sendfile_are_used_by_stock_consumers() {
    let b = Broker::start_with(&[("skiff.admin.listener", "127.0.0.1:0")]);
    create_topic(&b, "paths", 1, &[]);
    let outs: Vec<Out> = (0..RECORDS)
        .map(|i| {
            let mut o = Out::new(rec(Some(&format!("k{i}")), None, &[]), 0);
            o.value_len = Some(VALUE_BYTES);
            o
        })
        .collect();
    // Batches of 10 records (~10 KB each), so a small fetch size really takes many fetches.
    let reports = rd_produce(
        &b.bootstrap(),
        "paths",
        &outs,
        &[("linger.ms", "20"), ("batch.num.messages", "10")],
    );
    assert!(reports.iter().all(|d| d.result.is_ok()));
    let stored = stored_bytes(&b, "paths");
    assert!(stored > (RECORDS * VALUE_BYTES) as u64, "{stored}");
    let batches = skiff_compat::read_batches(&b.partition_dir("paths", 0)).len();
    assert!(batches >= 20, "{batches} batches");

    // kafka-python, with a small per-partition fetch size so the read takes many fetches.
    let before = stats(&b);
    let r = python(
        Python::PyPi,
        "kp.py",
        "consume",
        &json!({"bootstrap": b.bootstrap(), "topic": "paths", "assign": [[0, 0]], "values": false,
                "config": {"max_partition_fetch_bytes": 20000}}),
    );
    assert_eq!(r["eof"], json!(true), "{r}");
    assert_eq!(r["messages"].as_array().map(Vec::len), Some(RECORDS));
    let after = stats(&b);
    let delta = |path: &[&str], from: &Value, to: &Value| counter(to, path) - counter(from, path);
    assert!(
        delta(&["fetch_sessions", "created"], &before, &after) >= 1,
        "kafka-python opened no fetch session: {before} -> {after}"
    );
    assert!(
        delta(&["fetch_sessions", "incremental_fetches"], &before, &after) >= 2,
        "kafka-python made no incremental fetches: {before} -> {after}"
    );
    assert!(
        delta(&["sendfile", "bytes"], &before, &after) >= stored,
        "kafka-python's records did not go by sendfile ({stored} stored): {before} -> {after}"
    );

    // The rdkafka crate (sessionless fetches): the same bytes by sendfile, and far fewer bytes
    // written from user space than the records it read.
    let got = rd_read(&b.bootstrap(), "paths", 0, Offset::Beginning);
    assert_eq!(got.len(), RECORDS);
    let last = stats(&b);
    assert!(
        delta(&["sendfile", "bytes"], &after, &last) >= stored,
        "the rdkafka crate's records did not go by sendfile ({stored} stored): {after} -> {last}"
    );
    assert!(
        delta(&["sendfile", "regions"], &after, &last) >= 1,
        "{after} -> {last}"
    );
    assert!(
        delta(&["copied_bytes"], &after, &last) < stored / 4,
        "record bytes were copied through user space ({stored} stored): {after} -> {last}"
    );
}
