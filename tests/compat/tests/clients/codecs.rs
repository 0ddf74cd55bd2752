//! All four codecs (gzip, snappy, lz4, zstd) per producing client: the records read back
//! exactly, and the batches *stored on disk* carry the codec, which proves the client really
//! compressed. That is the librdkafka 2.0.2 quirk (KAFKA-18659): if the broker advertised
//! Produce with min version 3, Debian's kcat and confluent-kafka would silently send
//! uncompressed batches and only the on-disk check would notice.
//!
//! A second librdkafka rule (every version, `rdkafka_feature.c`): its LZ4 feature dates from
//! Kafka 0.8.2 and is keyed on the broker advertising FindCoordinator. Skiff advertises it
//! since the consumer-group APIs (issue 6), so librdkafka-based clients really send lz4; a
//! broker without FindCoordinator would get "lz4" batches uncompressed, which is what
//! [`librdkafka_stores`] expects if the advertisement ever went away (it asks the broker).
//! kafka-python has no such rule.

use rdkafka::Offset;
use serde_json::json;
use skiff_compat::wire::api;
use skiff_compat::{Broker, Python, api_versions, python, read_batches};

use crate::common::{
    Got, Out, Rec, assert_read_back, parse_messages, rd_produce, rd_read, rec, specs,
};
use crate::kcat;
use crate::roundtrip::assert_delivered;

const CODECS: [&str; 4] = ["gzip", "snappy", "lz4", "zstd"];

/// Compressible records (a compressor that does not shrink the batch may send it raw).
fn records(codec: &str) -> Vec<Rec> {
    (0..20)
        .map(|i| {
            let value = format!("{codec} record {i}: {}", "abcdefgh".repeat(16));
            let key = format!("key-{i}");
            rec(Some(&key), Some(&value), &[("codec", Some(codec))])
        })
        .collect()
}

/// Every stored batch of `topic`-0 uses `codec`, and there is at least one.
fn assert_stored_with(b: &Broker, topic: &str, codec: &str) {
    let batches = read_batches(&b.partition_dir(topic, 0));
    assert!(!batches.is_empty(), "{topic}: nothing stored");
    for batch in &batches {
        assert_eq!(
            batch.codec(),
            codec,
            "{topic}: a batch was stored without {codec} compression: {batch:?}"
        );
    }
}

/// The codec a librdkafka-based producer's `codec` batches are stored with on `b`.
fn librdkafka_stores(b: &Broker, codec: &'static str) -> &'static str {
    let find_coordinator = api_versions(&b.bootstrap()).contains_key(&api::FIND_COORDINATOR);
    if codec == "lz4" && !find_coordinator {
        "none"
    } else {
        codec
    }
}

/// Both readers see `recs`; what is stored carries `stored` compression.
fn check(b: &Broker, who: &str, codec: &str, stored: &str, recs: &[Rec], own_read: Vec<Got>) {
    let topic = format!("codec-{codec}");
    assert_read_back(&format!("{who} {codec}"), &own_read, recs, 0);
    let got = rd_read(&b.bootstrap(), &topic, 0, Offset::Beginning);
    assert_read_back(&format!("rdkafka reading {who}'s {codec}"), &got, recs, 0);
    assert_stored_with(b, &topic, stored);
}

#[test]
fn codecs_kcat_debian_librdkafka_2_0_2() {
    let b = Broker::start();
    for codec in CODECS {
        let topic = format!("codec-{codec}");
        // One kcat run per codec: all records go through one producer (and so share batches);
        // kcat reads "key<TAB>value" lines and applies -H to every record.
        let recs = records(codec);
        let lines: Vec<String> = recs
            .iter()
            .map(|r| {
                format!(
                    "{}\t{}",
                    r.key.as_deref().unwrap(),
                    r.value.as_deref().unwrap()
                )
            })
            .collect();
        let header = format!("codec={codec}");
        kcat::produce_lines(
            &b,
            &topic,
            0,
            &lines,
            &["-K", "\t", "-H", &header, "-z", codec],
        );
        let own = kcat::read(&b, &topic, 0, "beginning");
        check(&b, "kcat", codec, librdkafka_stores(&b, codec), &recs, own);
    }
}

fn ck_codecs(py: Python) {
    let b = Broker::start();
    for codec in CODECS {
        let topic = format!("codec-{codec}");
        let recs = records(codec);
        let result = python(
            py,
            "ck.py",
            "produce",
            &json!({
                "bootstrap": b.bootstrap(), "topic": topic, "messages": specs(&recs, 0),
                "config": {"compression.type": codec, "linger.ms": 50},
            }),
        );
        assert_delivered(&format!("{py:?} {codec}"), &result, recs.len(), 0, 0);
        let own = python(
            py,
            "ck.py",
            "consume",
            &json!({"bootstrap": b.bootstrap(), "topic": topic, "assign": [[0, 0]]}),
        );
        let who = format!("{py:?} confluent-kafka");
        check(
            &b,
            &who,
            codec,
            librdkafka_stores(&b, codec),
            &recs,
            parse_messages(&own),
        );
    }
}

#[test]
fn codecs_confluent_kafka_debian_librdkafka_2_0_2() {
    ck_codecs(Python::Debian);
}

#[test]
fn codecs_confluent_kafka_pypi() {
    ck_codecs(Python::PyPi);
}

#[test]
fn codecs_kafka_python() {
    let b = Broker::start();
    for codec in CODECS {
        let topic = format!("codec-{codec}");
        let recs = records(codec);
        let result = python(
            Python::PyPi,
            "kp.py",
            "produce",
            &json!({
                "bootstrap": b.bootstrap(), "topic": topic, "messages": specs(&recs, 0),
                "config": {"compression_type": codec, "linger_ms": 50},
            }),
        );
        assert_delivered(&format!("kafka-python {codec}"), &result, recs.len(), 0, 0);
        let own = python(
            Python::PyPi,
            "kp.py",
            "consume",
            &json!({"bootstrap": b.bootstrap(), "topic": topic, "assign": [[0, 0]]}),
        );
        check(
            &b,
            "kafka-python",
            codec,
            codec,
            &recs,
            parse_messages(&own),
        );
    }
}

#[test]
fn codecs_rdkafka_crate() {
    let b = Broker::start();
    for codec in CODECS {
        let topic = format!("codec-{codec}");
        let recs = records(codec);
        let outs: Vec<Out> = recs.iter().map(|r| Out::new(r.clone(), 0)).collect();
        let reports = rd_produce(
            &b.bootstrap(),
            &topic,
            &outs,
            &[("compression.codec", codec), ("linger.ms", "50")],
        );
        for (i, d) in reports.iter().enumerate() {
            assert_eq!(d.result, Ok((0, i as i64)), "{codec} record {i}");
        }
        let own = rd_read(&b.bootstrap(), &topic, 0, Offset::Beginning);
        check(
            &b,
            "rdkafka crate",
            codec,
            librdkafka_stores(&b, codec),
            &recs,
            own,
        );
    }
}
