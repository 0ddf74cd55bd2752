//! Idempotent producers of stock clients against the `skiff` binary (issue 5): kafka-python 3.x
//! with its DEFAULT settings (idempotent since 3.0, KIP-679) and PyPI confluent-kafka with
//! `enable.idempotence=true` each produce N records over several partitions in many batches;
//! every delivery is acknowledged, each record is read back exactly once (by confluent-kafka,
//! assign from offset 0), and the stored batches prove the client really ran idempotently: a
//! producer id on every batch and sequences that continue batch to batch without a gap.
//! Then the same confluent-kafka producer runs continuously across a kill -9 and a SIGTERM
//! restart of the broker (durable topic): no record is stored twice. Control run while writing
//! this test: the same scenario with `enable.idempotence=false` stored duplicates in 3 of 3
//! kill -9 runs, so these restarts do make the client retry appended batches.
//!
//! Uses helper J's harness (`skiff_compat`) and its client scripts `ck.py` / `kp.py`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};
use skiff_compat::{Broker, Python, python, read_batches};

const PARTITIONS: i32 = 3;
const RECORDS: usize = 300;

fn create_topic(b: &Broker, topic: &str) {
    create_topic_with(b, topic, json!({}));
}

fn create_topic_with(b: &Broker, topic: &str, config: Value) {
    let r = python(
        Python::PyPi,
        "ck.py",
        "admin_create",
        &json!({"bootstrap": b.bootstrap(), "topics": [
            {"name": topic, "partitions": PARTITIONS, "config": config}
        ]}),
    );
    assert_eq!(r["results"][topic], Value::Null, "{r}");
}

/// Record `i`: key "k<i>", value "v<i>", to partition i % PARTITIONS.
fn messages() -> Vec<Value> {
    (0..RECORDS)
        .map(|i| {
            json!({
                "key": format!("k{i}"),
                "value": format!("v{i}-{}", "x".repeat(100)),
                "partition": (i as i32) % PARTITIONS,
            })
        })
        .collect()
}

/// Every delivery report is a success; (partition, offset) pairs are distinct and dense.
fn check_reports(r: &Value) {
    let reports = r["reports"].as_array().unwrap();
    assert_eq!(reports.len(), RECORDS);
    let mut per_part: BTreeMap<i64, BTreeSet<i64>> = BTreeMap::new();
    for (i, rep) in reports.iter().enumerate() {
        assert_eq!(rep["error"], Value::Null, "record {i}: {rep}");
        assert_eq!(rep["partition"], json!(i as i32 % PARTITIONS), "{rep}");
        let fresh = per_part
            .entry(rep["partition"].as_i64().unwrap())
            .or_default()
            .insert(rep["offset"].as_i64().unwrap());
        assert!(fresh, "two records acknowledged at one offset: {rep}");
    }
    for (p, offsets) in per_part {
        let n = offsets.len() as i64;
        assert_eq!(offsets, (0..n).collect(), "partition {p}");
    }
}

/// Reads every partition from offset 0 with confluent-kafka: each record exactly once.
fn check_read_back_exactly_once(b: &Broker, topic: &str) {
    let assign: Vec<Value> = (0..PARTITIONS).map(|p| json!([p, 0])).collect();
    let r = python(
        Python::PyPi,
        "ck.py",
        "consume",
        &json!({"bootstrap": b.bootstrap(), "topic": topic, "assign": assign, "timeout_s": 30}),
    );
    assert_eq!(
        r["eof"],
        json!(true),
        "every partition read to its end: {r}"
    );
    assert_eq!(r["errors"], json!([]), "{r}");
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for m in r["messages"].as_array().unwrap() {
        let key = m["key"].as_str().unwrap().to_owned();
        let i: usize = key[1..].parse().unwrap();
        assert_eq!(m["partition"], json!(i as i32 % PARTITIONS), "{m}");
        assert_eq!(
            m["value"],
            json!(format!("v{i}-{}", "x".repeat(100))),
            "{m}"
        );
        *seen.entry(key).or_default() += 1;
    }
    let dups: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).collect();
    assert!(dups.is_empty(), "records read more than once: {dups:?}");
    assert_eq!(seen.len(), RECORDS, "every record read back");
}

/// The stored batches: all idempotent (producer id >= 0), one producer, several batches per
/// partition, sequences from 0 without gaps per partition.
fn check_stored_batches(b: &Broker, topic: &str) {
    let mut producers = BTreeSet::new();
    for p in 0..PARTITIONS {
        let batches = read_batches(&b.partition_dir(topic, p));
        assert!(
            batches.len() >= 2,
            "partition {p}: expected several batches, got {batches:?}"
        );
        let mut next_seq = 0;
        for x in &batches {
            assert!(
                x.producer_id >= 0 && x.producer_epoch >= 0,
                "not idempotent: {x:?}"
            );
            assert_eq!(x.base_sequence, next_seq, "partition {p}: {x:?}");
            next_seq += x.record_count;
            producers.insert(x.producer_id);
        }
        assert_eq!(next_seq as usize, RECORDS / PARTITIONS as usize);
    }
    assert_eq!(producers.len(), 1, "one producer session: {producers:?}");
}

#[test]
fn kafka_python_default_producer_records_read_back_exactly_once() {
    let b = Broker::start();
    create_topic(&b, "idem-kp");
    // Default idempotence settings (none given); only `batch_size` is lowered so that every
    // partition's 100 records (~11 KiB) take several batches even when the producer is fast
    // enough to fit them all in one default 16 KiB batch.
    let r = python(
        Python::PyPi,
        "kp.py",
        "produce",
        &json!({"bootstrap": b.bootstrap(), "topic": "idem-kp", "messages": messages(),
                "config": {"batch_size": 2048}}),
    );
    check_reports(&r);
    check_read_back_exactly_once(&b, "idem-kp");
    check_stored_batches(&b, "idem-kp");
}

#[test]
fn confluent_kafka_enable_idempotence_records_read_back_exactly_once() {
    let b = Broker::start();
    create_topic(&b, "idem-ck");
    let r = python(
        Python::PyPi,
        "ck.py",
        "produce",
        &json!({
            "bootstrap": b.bootstrap(),
            "topic": "idem-ck",
            "messages": messages(),
            // Small batches so every partition gets several.
            "config": {"enable.idempotence": true, "linger.ms": 5, "batch.size": 2048},
        }),
    );
    assert_eq!(r["unflushed"], json!(0), "{r}");
    check_reports(&r);
    check_read_back_exactly_once(&b, "idem-ck");
    check_stored_batches(&b, "idem-ck");
}

/// Waits until the background producer has acknowledged at least `at_least` records.
fn wait_acked(p: &mut skiff_compat::Background, at_least: i64) -> i64 {
    p.wait_for(std::time::Duration::from_secs(40), |line| {
        let v: Value = serde_json::from_str(line).ok()?;
        let acked = v["acked"].as_i64()?;
        (acked >= at_least).then_some(acked)
    })
}

/// confluent-kafka with `enable.idempotence=true` produces continuously while the broker is
/// killed (kill -9) or stopped (SIGTERM) and restarted: batches appended but not acknowledged
/// when the broker died are retried by the client with their original sequences, and the
/// restarted broker (state from snapshot + log) must answer them as duplicates. Afterwards
/// every sent record is stored exactly once and at its acknowledged offset.
fn idempotent_production_across_restart(kill: bool) {
    let mut b = Broker::start();
    // A durable topic: each produce is answered only after its fsync, so a kill is likely to
    // land between an append and its acknowledgement (a batch the client must retry).
    create_topic_with(&b, "idem-restart", json!({"flush.messages": "1"}));
    let mut producer = skiff_compat::python_background(
        Python::PyPi,
        "ck.py",
        "produce_continuously",
        &json!({
            "bootstrap": b.bootstrap(), "topic": "idem-restart", "partitions": PARTITIONS,
            "config": {
                "enable.idempotence": true, "message.timeout.ms": 50_000,
                "request.timeout.ms": 5_000, "retry.backoff.ms": 50,
                "reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 500, "linger.ms": 5,
            },
        }),
    );
    let before = wait_acked(&mut producer, 300);
    if kill {
        b.kill9();
    } else {
        assert!(b.stop().success());
    }
    b.restart();
    wait_acked(&mut producer, before + 300);
    let result = skiff_compat::finish_json(producer, std::time::Duration::from_secs(50));
    assert_eq!(result["unflushed"], json!(0), "{}", result["unflushed"]);
    assert_eq!(result["failures"], json!([]), "deliveries failed");
    let sent = result["sent"].as_i64().unwrap();
    let acks = result["acks"].as_array().unwrap();
    assert_eq!(acks.len() as i64, sent, "every sent record acknowledged");

    let assign: Vec<Value> = (0..PARTITIONS).map(|p| json!([p, 0])).collect();
    let r = python(
        Python::PyPi,
        "ck.py",
        "consume",
        &json!({"bootstrap": b.bootstrap(), "topic": "idem-restart", "assign": assign, "timeout_s": 30}),
    );
    assert_eq!(r["eof"], json!(true), "{}", r["errors"]);
    // (partition, offset) -> value, and copies per value.
    let mut stored: BTreeMap<(i64, i64), i64> = BTreeMap::new();
    let mut copies: BTreeMap<i64, usize> = BTreeMap::new();
    for m in r["messages"].as_array().unwrap() {
        let v: i64 = m["value"].as_str().unwrap().parse().unwrap();
        stored.insert(
            (
                m["partition"].as_i64().unwrap(),
                m["offset"].as_i64().unwrap(),
            ),
            v,
        );
        *copies.entry(v).or_default() += 1;
    }
    let dups: Vec<_> = copies.iter().filter(|(_, n)| **n > 1).collect();
    assert!(dups.is_empty(), "duplicated by retries: {dups:?}");
    assert_eq!(copies.len() as i64, sent, "every sent record stored once");
    for a in acks {
        let (p, off) = (a[0].as_i64().unwrap(), a[1].as_i64().unwrap());
        let v: i64 = a[2].as_str().unwrap().parse().unwrap();
        assert_eq!(stored.get(&(p, off)), Some(&v), "ack {a}");
    }
    eprintln!(
        "idempotent restart ({}): {sent} sent, acknowledged and stored once ({before} before)",
        if kill { "kill -9" } else { "SIGTERM" }
    );
}

#[test]
fn confluent_kafka_idempotent_across_kill_9_stores_each_record_once() {
    idempotent_production_across_restart(true);
}

#[test]
fn confluent_kafka_idempotent_across_sigterm_stores_each_record_once() {
    idempotent_production_across_restart(false);
}
