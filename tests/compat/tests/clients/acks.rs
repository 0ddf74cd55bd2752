//! `acks=1` and `acks=0` with stock clients (the idempotent default, `acks=all`, is covered by
//! `idempotent` and the round trips): the rdkafka crate with both, Debian's confluent-kafka
//! (librdkafka 2.0.2) with `acks=0`, kafka-python with `acks=1` and idempotence off. Everything
//! produced is read back, exactly once and in order, by the rdkafka crate.
//!
//! With `acks=0` the broker sends no Produce response, so a producer reports success as soon as
//! the request is written, without an offset (librdkafka: negative, counting up from -1001;
//! confluent-kafka: None): the test then waits (with a deadline) until the high watermark shows
//! every record before reading back.

use std::time::{Duration, Instant};

use rdkafka::Offset;
use serde_json::{Value, json};
use skiff_compat::{Broker, Python, python};

use crate::common::{
    Out, Rec, assert_read_back, create_topic, rd_produce, rd_read, rd_watermarks, rec, specs,
    standard_records,
};

/// The standard records plus 40 numbered ones (several batches with a short linger).
fn records() -> Vec<Rec> {
    let mut recs = standard_records();
    for i in 0..40 {
        recs.push(rec(
            Some(&format!("k{i}")),
            Some(&format!("v{i}")),
            &[("i", Some(&i.to_string()))],
        ));
    }
    recs
}

/// Waits until `topic`-0 holds `n` records (acks=0 gives no other signal).
fn wait_for_end(b: &Broker, topic: &str, n: i64) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (_, high) = rd_watermarks(&b.bootstrap(), topic, 0);
        if high >= n {
            assert_eq!(high, n, "{topic}: more records than were sent");
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{topic}: only {high} of {n} acks=0 records arrived within 20 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn acks_1_and_0_with_the_rdkafka_crate() {
    let b = Broker::start();
    let recs = records();
    let outs: Vec<Out> = recs.iter().map(|r| Out::new(r.clone(), 0)).collect();
    for (topic, acks) in [("acks-1-rd", "1"), ("acks-0-rd", "0")] {
        create_topic(&b, topic, 1, &[]);
        let reports = rd_produce(
            &b.bootstrap(),
            topic,
            &outs,
            &[
                ("acks", acks),
                ("linger.ms", "5"),
                ("batch.num.messages", "10"),
            ],
        );
        for (i, d) in reports.iter().enumerate() {
            match (acks, d.result) {
                ("1", r) => assert_eq!(r, Ok((0, i as i64)), "acks=1 record {i}"),
                (_, Ok((0, offset))) if offset < 0 => {}
                (_, r) => panic!("acks=0 record {i}: {r:?}, want success without an offset"),
            }
        }
        wait_for_end(&b, topic, recs.len() as i64);
        let got = rd_read(&b.bootstrap(), topic, 0, Offset::Beginning);
        assert_read_back(&format!("rdkafka crate acks={acks}"), &got, &recs, 0);
    }
}

#[test]
fn acks_0_with_debian_confluent_kafka() {
    let b = Broker::start();
    let recs = records();
    create_topic(&b, "acks-0-ck", 1, &[]);
    let r = python(
        Python::Debian,
        "ck.py",
        "produce",
        &json!({"bootstrap": b.bootstrap(), "topic": "acks-0-ck", "messages": specs(&recs, 0),
                "config": {"acks": 0, "linger.ms": 5, "batch.num.messages": 10}}),
    );
    let reports = r["reports"].as_array().cloned().unwrap_or_default();
    assert_eq!(reports.len(), recs.len(), "{r}");
    for (i, rep) in reports.iter().enumerate() {
        assert_eq!(rep["error"], Value::Null, "record {i}: {rep}");
        assert_eq!(
            rep["offset"],
            Value::Null,
            "record {i}: no offset with acks=0: {rep}"
        );
    }
    wait_for_end(&b, "acks-0-ck", recs.len() as i64);
    let got = rd_read(&b.bootstrap(), "acks-0-ck", 0, Offset::Beginning);
    assert_read_back("Debian confluent-kafka acks=0", &got, &recs, 0);
}

#[test]
fn acks_1_with_kafka_python_not_idempotent() {
    let b = Broker::start();
    // kafka-python's send() refuses None header values: those are produced empty.
    let mut recs = records();
    for r in &mut recs {
        for h in &mut r.headers {
            h.1.get_or_insert_with(String::new);
        }
    }
    create_topic(&b, "acks-1-kp", 1, &[]);
    let r = python(
        Python::PyPi,
        "kp.py",
        "produce",
        &json!({"bootstrap": b.bootstrap(), "topic": "acks-1-kp", "messages": specs(&recs, 0),
                "config": {"acks": 1, "enable_idempotence": false, "linger_ms": 5, "batch_size": 300}}),
    );
    let reports = r["reports"].as_array().cloned().unwrap_or_default();
    assert_eq!(reports.len(), recs.len(), "{r}");
    for (i, rep) in reports.iter().enumerate() {
        assert_eq!(rep["error"], Value::Null, "record {i}: {rep}");
        assert_eq!(rep["offset"], json!(i), "record {i}: {rep}");
    }
    let got = rd_read(&b.bootstrap(), "acks-1-kp", 0, Offset::Beginning);
    assert_read_back("kafka-python acks=1", &got, &recs, 0);
    // Not idempotent: the stored batches carry no producer id.
    let batches = skiff_compat::read_batches(&b.partition_dir("acks-1-kp", 0));
    assert!(batches.len() > 1, "expected several batches: {batches:?}");
    assert!(
        batches.iter().all(|x| x.producer_id == -1),
        "enable_idempotence=False still sent producer ids: {batches:?}"
    );
}
