//! `max.message.bytes` (topic) and `message.max.bytes` (broker default): a batch of exactly
//! the limit is accepted, one byte over is rejected with MESSAGE_TOO_LARGE (10) and not stored;
//! consumers whose fetch limits are smaller than a batch still get it (KIP-74).
//!
//! Size arithmetic for an uncompressed v2 batch holding one record with a null key, no headers
//! and a V-byte value (V in 8192..1048575, so its zigzag varint takes 3 bytes): 61 bytes of
//! batch header + record = length varint (3) + attributes (1) + timestamp delta (1) + offset
//! delta (1) + key length -1 (1) + value length (3) + V + header count (1) = V + 72 bytes.
//! The producers' own limits are raised (librdkafka `message.max.bytes`, kafka-python
//! `max_request_size`) so the broker is the one that decides.

use rdkafka::Offset;
use rdkafka::error::RDKafkaErrorCode;
use serde_json::json;
use skiff_compat::{Broker, Python, kcat, python, read_batches};

use crate::common::{Out, create_topic, rd_produce, rd_read, rd_read_with, rec};

const OVERHEAD: usize = 72;

fn sized(value_len: usize) -> Out {
    let mut o = Out::new(rec(None, None, &[]), 0);
    o.value_len = Some(value_len);
    o
}

/// Produces one single-record batch per size with the rdkafka crate.
fn rd_sizes(b: &Broker, topic: &str, sizes: &[usize]) -> Vec<Result<(i32, i64), RDKafkaErrorCode>> {
    sizes
        .iter()
        .map(|n| {
            rd_produce(
                &b.bootstrap(),
                topic,
                &[sized(*n)],
                &[("message.max.bytes", "10000000"), ("linger.ms", "0")],
            )[0]
            .result
        })
        .collect()
}

#[test]
fn max_message_bytes_accepts_the_limit_and_rejects_one_byte_more() {
    let b = Broker::start_with(&[("message.max.bytes", "30000")]);
    let limit = 20_000usize;
    create_topic(
        &b,
        "limited",
        1,
        &[("max.message.bytes", &limit.to_string())],
    );

    let results = rd_sizes(
        &b,
        "limited",
        &[
            limit - OVERHEAD - 1000,
            limit - OVERHEAD,
            limit - OVERHEAD + 1,
            100_000,
        ],
    );
    assert_eq!(
        results,
        vec![
            Ok((0, 0)),
            Ok((0, 1)),
            Err(RDKafkaErrorCode::MessageSizeTooLarge),
            Err(RDKafkaErrorCode::MessageSizeTooLarge),
        ],
        "rdkafka crate against max.message.bytes={limit}"
    );
    let stored: Vec<i64> = read_batches(&b.partition_dir("limited", 0))
        .iter()
        .map(|x| x.last_offset)
        .collect();
    assert_eq!(
        stored,
        vec![0, 1],
        "only the two accepted batches are stored"
    );

    // The same boundary through confluent-kafka (PyPI and Debian) and kafka-python.
    let specs = json!([
        {"key": null, "value_len": limit - OVERHEAD, "partition": 0},
        {"key": null, "value_len": limit - OVERHEAD + 1, "partition": 0},
    ]);
    let mut next = 2;
    for py in [Python::PyPi, Python::Debian] {
        let r = python(
            py,
            "ck.py",
            "produce",
            &json!({"bootstrap": b.bootstrap(), "topic": "limited", "messages": specs,
                    "config": {"message.max.bytes": 10000000, "linger.ms": 0, "batch.num.messages": 1}}),
        );
        assert_eq!(r["reports"][0]["error"], json!(null), "{py:?}: {r}");
        assert_eq!(r["reports"][0]["offset"], json!(next), "{py:?}: {r}");
        assert_eq!(
            r["reports"][1]["error"],
            json!("MSG_SIZE_TOO_LARGE"),
            "{py:?}: {r}"
        );
        next += 1;
    }
    let r = python(
        Python::PyPi,
        "kp.py",
        "produce",
        &json!({"bootstrap": b.bootstrap(), "topic": "limited", "messages": specs,
                "config": {"max_request_size": 10000000, "linger_ms": 0, "batch_size": 1}}),
    );
    assert_eq!(r["reports"][0]["error"], json!(null), "kafka-python: {r}");
    assert_eq!(r["reports"][0]["offset"], json!(next), "kafka-python: {r}");
    // errno 10 = MESSAGE_TOO_LARGE from the broker (kafka-python's own size check raises
    // from send() instead, which would fail the script).
    assert_eq!(r["reports"][1]["errno"], json!(10), "kafka-python: {r}");
    next += 1;
    // kcat (librdkafka 2.0.2), one run per record: at the limit it exits 0; one byte over, the
    // broker's MESSAGE_TOO_LARGE comes back as a failed delivery (stderr, non-zero exit).
    let bootstrap = b.bootstrap();
    let kcat_one = |len: usize| {
        kcat(
            &[
                "-P",
                "-b",
                &bootstrap,
                "-t",
                "limited",
                "-p",
                "0",
                "-X",
                "message.max.bytes=10000000",
            ],
            format!("{}\n", "x".repeat(len)).as_bytes(),
        )
    };
    kcat_one(limit - OVERHEAD).assert_success("kcat -P at max.message.bytes");
    next += 1;
    let over = kcat_one(limit - OVERHEAD + 1);
    assert!(
        !over.status.success() && over.stderr.contains("Message size too large"),
        "kcat -P one byte over max.message.bytes: {over:?}"
    );

    // What was accepted reads back whole.
    let got = rd_read(&b.bootstrap(), "limited", 0, Offset::Beginning);
    let lens: Vec<usize> = got
        .iter()
        .map(|g| g.rec.value.as_ref().map_or(0, String::len))
        .collect();
    let mut want = vec![limit - OVERHEAD - 1000];
    want.resize(next as usize, limit - OVERHEAD);
    assert_eq!(lens, want);

    // A batch bigger than the consumer's fetch limits still comes back whole when it is the
    // first one of the fetch (KIP-74), or consumers could never pass it.
    let got = rd_read_with(
        &b.bootstrap(),
        "limited",
        0,
        Offset::Beginning,
        &[("max.partition.fetch.bytes", "1000")],
    );
    assert_eq!(
        got.len(),
        want.len(),
        "librdkafka with max.partition.fetch.bytes=1000"
    );
    let r = python(
        Python::PyPi,
        "kp.py",
        "consume",
        &json!({"bootstrap": b.bootstrap(), "topic": "limited", "assign": [[0, 0]], "values": false,
                "config": {"max_partition_fetch_bytes": 1000, "fetch_max_bytes": 1000}}),
    );
    let lens: Vec<usize> = r["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["value_len"].as_u64().unwrap() as usize)
        .collect();
    assert_eq!(
        lens, want,
        "kafka-python with fetch limits of 1000 bytes: {r}"
    );

    // Auto-created topics take the broker's message.max.bytes (30000 here).
    let results = rd_sizes(
        &b,
        "broker-default",
        &[30_000 - OVERHEAD, 30_000 - OVERHEAD + 1],
    );
    assert_eq!(
        results,
        vec![Ok((0, 0)), Err(RDKafkaErrorCode::MessageSizeTooLarge)]
    );
}
