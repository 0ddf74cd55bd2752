//! One produce + consume round trip per client: keys, null keys, null values, empty values,
//! non-ASCII bytes, duplicate header keys and null header values are read back exactly (same
//! offsets, same bytes, same header order), by the producing client itself and by the rdkafka
//! crate as an independent reader.

use rdkafka::Offset;
use serde_json::{Value, json};
use skiff_compat::{Broker, Python, node, python};

use crate::common::{
    Out, Rec, assert_read_back, parse_messages, rd_produce, rd_read, specs, standard_records,
};
use crate::kcat;

/// Asserts that a script's delivery reports are all successes at offsets `first..`.
pub fn assert_delivered(who: &str, result: &Value, n: usize, partition: i32, first: i64) {
    let Some(reports) = result["reports"].as_array() else {
        panic!("{who}: no reports in {result}")
    };
    assert_eq!(reports.len(), n, "{who}: one report per record: {result}");
    for (i, r) in reports.iter().enumerate() {
        assert!(r["error"].is_null(), "{who}: record {i} failed: {r}");
        assert_eq!(r["partition"], json!(partition), "{who}: record {i}: {r}");
        assert_eq!(
            r["offset"],
            json!(first + i as i64),
            "{who}: record {i}: {r}"
        );
    }
}

/// Produces `recs` to `topic`-0 with `tests/compat/py/ck.py` under `py` and checks the reports.
pub fn ck_produce(py: Python, b: &Broker, topic: &str, recs: &[Rec], config: Value) -> Value {
    let result = python(
        py,
        "ck.py",
        "produce",
        &json!({"bootstrap": b.bootstrap(), "topic": topic, "messages": specs(recs, 0), "config": config}),
    );
    assert_delivered(
        &format!("{py:?} confluent-kafka"),
        &result,
        recs.len(),
        0,
        0,
    );
    result
}

/// Reads `topic`-`partition` from `offset` to EOF with ck.py under `py`.
pub fn ck_consume(py: Python, b: &Broker, topic: &str, partition: i32, offset: i64) -> Value {
    let result = python(
        py,
        "ck.py",
        "consume",
        &json!({"bootstrap": b.bootstrap(), "topic": topic, "assign": [[partition, offset]]}),
    );
    assert_eq!(
        result["eof"],
        json!(true),
        "{py:?} consumer did not reach EOF: {result}"
    );
    assert_eq!(
        result["errors"],
        json!([]),
        "{py:?} consumer errors: {result}"
    );
    result
}

fn ck_roundtrip(py: Python) {
    let b = Broker::start();
    let topic = "roundtrip";
    let recs = standard_records();
    ck_produce(py, &b, topic, &recs, json!({}));
    let got = parse_messages(&ck_consume(py, &b, topic, 0, 0));
    assert_read_back(&format!("{py:?} confluent-kafka"), &got, &recs, 0);
    let got = rd_read(&b.bootstrap(), topic, 0, Offset::Beginning);
    assert_read_back("rdkafka reading confluent-kafka's records", &got, &recs, 0);
}

#[test]
fn roundtrip_kcat_debian_librdkafka_2_0_2() {
    let b = Broker::start();
    let topic = "roundtrip";
    let recs = standard_records();
    for r in &recs {
        kcat::produce_one(&b, topic, 0, r, &[]);
    }
    let got = kcat::read(&b, topic, 0, "beginning");
    assert_read_back("kcat", &got, &recs, 0);
    let got = rd_read(&b.bootstrap(), topic, 0, Offset::Beginning);
    assert_read_back("rdkafka reading kcat's records", &got, &recs, 0);
}

#[test]
fn roundtrip_confluent_kafka_debian() {
    ck_roundtrip(Python::Debian);
}

#[test]
fn roundtrip_confluent_kafka_pypi() {
    ck_roundtrip(Python::PyPi);
}

#[test]
fn roundtrip_kafka_python() {
    let b = Broker::start();
    // kafka-python's send() refuses None header values ("All headers items must be (str,
    // bytes) tuples"): it produces the set with those headers given an empty value instead...
    let mut own: Vec<Rec> = standard_records();
    for r in &mut own {
        for h in &mut r.headers {
            h.1.get_or_insert_with(String::new);
        }
    }
    let result = python(
        Python::PyPi,
        "kp.py",
        "produce",
        &json!({"bootstrap": b.bootstrap(), "topic": "own", "messages": specs(&own, 0)}),
    );
    assert_delivered("kafka-python", &result, own.len(), 0, 0);
    let read = |topic: &str| {
        let r = python(
            Python::PyPi,
            "kp.py",
            "consume",
            &json!({"bootstrap": b.bootstrap(), "topic": topic, "assign": [[0, 0]]}),
        );
        assert_eq!(
            r["eof"],
            json!(true),
            "kafka-python did not reach the end: {r}"
        );
        parse_messages(&r)
    };
    assert_read_back("kafka-python", &read("own"), &own, 0);
    let got = rd_read(&b.bootstrap(), "own", 0, Offset::Beginning);
    assert_read_back("rdkafka reading kafka-python's records", &got, &own, 0);
    // ...and must still decode the full set (null header values included) written by librdkafka.
    let full = standard_records();
    let outs: Vec<Out> = full.iter().map(|r| Out::new(r.clone(), 0)).collect();
    for d in rd_produce(&b.bootstrap(), "full", &outs, &[]) {
        assert!(d.result.is_ok(), "{d:?}");
    }
    assert_read_back(
        "kafka-python reading librdkafka's records",
        &read("full"),
        &full,
        0,
    );
}

#[test]
fn roundtrip_kafkajs() {
    let b = Broker::start();
    // kafkajs models headers as an object (duplicates only as adjacent arrays) and its
    // producer throws on a null header value, so it produces the set without those...
    let own: Vec<Rec> = standard_records()
        .into_iter()
        .filter(|r| r.key.as_deref() != Some("interleaved"))
        .map(|mut r| {
            r.headers.retain(|h| h.1.is_some());
            r
        })
        .collect();
    let result = node(
        "kafkajs.js",
        "produce",
        &json!({"bootstrap": b.bootstrap(), "topic": "own", "messages": specs(&own, 0)}),
    );
    assert_delivered("kafkajs", &result, own.len(), 0, 0);
    let fetch = |topic: &str| {
        let r = node(
            "kafkajs.js",
            "fetch",
            &json!({"bootstrap": b.bootstrap(), "topic": topic, "partition": 0, "offset": 0}),
        );
        assert_eq!(r["eof"], json!(true), "kafkajs did not reach the end: {r}");
        parse_messages(&r)
    };
    assert_read_back("kafkajs", &fetch("own"), &own, 0);
    let got = rd_read(&b.bootstrap(), "own", 0, Offset::Beginning);
    assert_read_back("rdkafka reading kafkajs' records", &got, &own, 0);
    // ...but decodes null header values and adjacent duplicates written by librdkafka.
    let full: Vec<Rec> = standard_records()
        .into_iter()
        .filter(|r| r.key.as_deref() != Some("interleaved"))
        .collect();
    let outs: Vec<Out> = full.iter().map(|r| Out::new(r.clone(), 0)).collect();
    for d in rd_produce(&b.bootstrap(), "full", &outs, &[]) {
        assert!(d.result.is_ok(), "{d:?}");
    }
    assert_read_back(
        "kafkajs reading librdkafka's records",
        &fetch("full"),
        &full,
        0,
    );
}

#[test]
fn roundtrip_rdkafka_crate() {
    let b = Broker::start();
    let recs = standard_records();
    let outs: Vec<Out> = recs.iter().map(|r| Out::new(r.clone(), 0)).collect();
    let reports = rd_produce(&b.bootstrap(), "roundtrip", &outs, &[]);
    let offsets: Vec<_> = reports.iter().map(|d| d.result).collect();
    let want: Vec<_> = (0..recs.len() as i64).map(|o| Ok((0, o))).collect();
    assert_eq!(offsets, want);
    let got = rd_read(&b.bootstrap(), "roundtrip", 0, Offset::Beginning);
    assert_read_back("rdkafka crate", &got, &recs, 0);
    // A second reader from the middle gets the suffix only.
    let got = rd_read(&b.bootstrap(), "roundtrip", 0, Offset::Offset(3));
    assert_read_back("rdkafka crate from offset 3", &got, &recs[3..], 3);
}
