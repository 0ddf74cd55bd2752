//! Timestamp types and bounds (spec §1.3, §1.8 #1-#7, #12): CreateTime topics keep the
//! producer's timestamps, LogAppendTime topics show broker time to consumers *and* in the
//! producer's delivery report, and one out-of-range timestamp rejects its whole batch.

use rdkafka::Offset;
use rdkafka::error::RDKafkaErrorCode;
use rdkafka::message::Timestamp;
use serde_json::{Value, json};
use skiff_compat::{Broker, Python, python, read_batches};

use crate::common::{
    Out, create_topic, now_ms, parse_messages, rd_produce, rd_read, rd_watermarks, rec,
};
use crate::kcat;

fn timed_specs(timestamps: &[i64]) -> Value {
    Value::Array(
        timestamps
            .iter()
            .enumerate()
            .map(|(i, ts)| json!({"key": format!("k{i}"), "value": format!("v{i}"), "partition": 0, "timestamp": ts}))
            .collect(),
    )
}

fn timed_outs(timestamps: &[i64]) -> Vec<Out> {
    timestamps
        .iter()
        .enumerate()
        .map(|(i, ts)| {
            let mut o = Out::new(rec(Some(&format!("k{i}")), Some(&format!("v{i}")), &[]), 0);
            o.timestamp = Some(*ts);
            o
        })
        .collect()
}

fn ck_produce_timed(py: Python, b: &Broker, topic: &str, ts: &[i64], config: Value) -> Vec<Value> {
    let r = python(
        py,
        "ck.py",
        "produce",
        &json!({"bootstrap": b.bootstrap(), "topic": topic, "messages": timed_specs(ts), "config": config}),
    );
    r["reports"].as_array().cloned().unwrap_or_default()
}

fn kp_produce_timed(b: &Broker, topic: &str, ts: &[i64], config: Value) -> Vec<Value> {
    let r = python(
        Python::PyPi,
        "kp.py",
        "produce",
        &json!({"bootstrap": b.bootstrap(), "topic": topic, "messages": timed_specs(ts), "config": config}),
    );
    r["reports"].as_array().cloned().unwrap_or_default()
}

/// (type, timestamp) of every record of `topic`-0 as each reader sees it: the rdkafka crate,
/// PyPI confluent-kafka, Debian confluent-kafka, kafka-python and kcat must all agree.
fn seen_by_all_readers(b: &Broker, topic: &str) -> Vec<(String, i64)> {
    let rd: Vec<(String, i64)> = rd_read(&b.bootstrap(), topic, 0, Offset::Beginning)
        .into_iter()
        .map(|g| (g.timestamp_type.unwrap_or_default(), g.timestamp))
        .collect();
    let params = json!({"bootstrap": b.bootstrap(), "topic": topic, "assign": [[0, 0]]});
    for (who, result) in [
        (
            "PyPI confluent-kafka",
            python(Python::PyPi, "ck.py", "consume", &params),
        ),
        (
            "Debian confluent-kafka",
            python(Python::Debian, "ck.py", "consume", &params),
        ),
        (
            "kafka-python",
            python(Python::PyPi, "kp.py", "consume", &params),
        ),
    ] {
        let got: Vec<(String, i64)> = parse_messages(&result)
            .into_iter()
            .map(|g| (g.timestamp_type.unwrap_or_default(), g.timestamp))
            .collect();
        assert_eq!(
            got, rd,
            "{who} sees other timestamps than the rdkafka crate"
        );
    }
    let got: Vec<(String, i64)> = kcat::read(b, topic, 0, "beginning")
        .into_iter()
        .map(|g| (g.timestamp_type.unwrap_or_default(), g.timestamp))
        .collect();
    assert_eq!(got, rd, "kcat sees other timestamps than the rdkafka crate");
    rd
}

#[test]
fn timestamps_create_time_topic_keeps_the_producers_time() {
    let b = Broker::start();
    let base = now_ms() - 5 * 60_000;
    let ts: Vec<i64> = (0..5).map(|i| base + i * 1000).collect();

    let reports = rd_produce(&b.bootstrap(), "ct-rdkafka", &timed_outs(&ts), &[]);
    for (d, t) in reports.iter().zip(&ts) {
        assert!(d.result.is_ok(), "{d:?}");
        assert_eq!(
            d.timestamp,
            Timestamp::CreateTime(*t),
            "rdkafka delivery report"
        );
    }
    for (py, topic) in [(Python::PyPi, "ct-ck"), (Python::Debian, "ct-ck-debian")] {
        let reports = ck_produce_timed(py, &b, topic, &ts, json!({}));
        assert_eq!(reports.len(), ts.len(), "{py:?}");
        for (i, r) in reports.iter().enumerate() {
            assert_eq!(r["error"], Value::Null, "{py:?}: {r}");
            assert_eq!(r["timestamp_type"], json!("CreateTime"), "{py:?}: {r}");
            assert_eq!(r["timestamp"], json!(ts[i]), "{py:?}: {r}");
        }
    }
    for (i, r) in kp_produce_timed(&b, "ct-kp", &ts, json!({}))
        .iter()
        .enumerate()
    {
        assert_eq!(r["error"], Value::Null, "{r}");
        assert_eq!(
            r["timestamp"],
            json!(ts[i]),
            "kafka-python RecordMetadata.timestamp: {r}"
        );
    }
    let want: Vec<(String, i64)> = ts.iter().map(|t| ("CreateTime".to_owned(), *t)).collect();
    for topic in ["ct-rdkafka", "ct-ck", "ct-ck-debian", "ct-kp"] {
        assert_eq!(seen_by_all_readers(&b, topic), want, "{topic}");
        for batch in read_batches(&b.partition_dir(topic, 0)) {
            assert!(!batch.log_append_time(), "{topic}: {batch:?}");
        }
    }
}

#[test]
fn timestamps_log_append_time_topic_shows_broker_time_to_consumer_and_producer() {
    let b = Broker::start();
    create_topic(&b, "lat", 1, &[("message.timestamp.type", "LogAppendTime")]);
    // Producer timestamps far outside any bound: ignored on a LogAppendTime topic (§1.8 #7).
    let stale = now_ms() - 400 * 24 * 3_600_000;
    let future = now_ms() + 2 * 3_600_000;
    let ts: Vec<i64> = (0..10)
        .map(|i| if i % 2 == 0 { stale } else { future })
        .collect();
    let before = now_ms();

    // rdkafka crate, one compressed batch of 10 (spec §1.8 #3, with gzip: librdkafka sends
    // lz4 only to brokers that advertise FindCoordinator, see codecs.rs): one broker time for
    // all ten, and the delivery reports carry it.
    let reports = rd_produce(
        &b.bootstrap(),
        "lat",
        &timed_outs(&ts),
        &[("compression.codec", "gzip"), ("linger.ms", "100")],
    );
    let mut acked = Vec::new();
    for d in &reports {
        assert!(d.result.is_ok(), "{d:?}");
        let Timestamp::LogAppendTime(t) = d.timestamp else {
            panic!("rdkafka delivery report is not LogAppendTime: {d:?}")
        };
        acked.push(t);
    }
    assert!(
        acked.iter().all(|t| *t == acked[0]),
        "one batch, one time: {acked:?}"
    );
    // PyPI and Debian confluent-kafka (uncompressed), kafka-python.
    for py in [Python::PyPi, Python::Debian] {
        for r in ck_produce_timed(py, &b, "lat", &ts[..3], json!({})) {
            assert_eq!(r["error"], Value::Null, "{r}");
            assert_eq!(
                r["timestamp_type"],
                json!("LogAppendTime"),
                "{py:?} delivery report {r}"
            );
            acked.push(r["timestamp"].as_i64().unwrap());
        }
    }
    for r in kp_produce_timed(&b, "lat", &ts[..3], json!({})) {
        assert_eq!(r["error"], Value::Null, "{r}");
        acked.push(r["timestamp"].as_i64().unwrap());
    }
    let after = now_ms();
    for t in &acked {
        assert!(
            (before - 2000..=after + 2000).contains(t),
            "acknowledged time {t} is not broker time (produced between {before} and {after})"
        );
    }
    // Every reader sees LogAppendTime with exactly the time the producer was told.
    let seen = seen_by_all_readers(&b, "lat");
    let want: Vec<(String, i64)> = acked
        .iter()
        .map(|t| ("LogAppendTime".to_owned(), *t))
        .collect();
    assert_eq!(seen, want);
    let batches = read_batches(&b.partition_dir("lat", 0));
    assert!(batches.iter().all(|x| x.log_append_time()), "{batches:?}");
    assert_eq!(
        batches[0].codec(),
        "gzip",
        "kept compressed: {:?}",
        batches[0]
    );
}

#[test]
fn timestamps_one_out_of_range_record_rejects_its_whole_batch() {
    let b = Broker::start();
    create_topic(
        &b,
        "bounded",
        1,
        &[("message.timestamp.after.max.ms", "60000")],
    );
    let now = now_ms();
    // Five records, same partition, lingering into one batch; the middle one is 10 min ahead.
    let ts = [now, now + 1, now + 600_000, now + 2, now + 3];

    let reports = rd_produce(
        &b.bootstrap(),
        "bounded",
        &timed_outs(&ts),
        &[("linger.ms", "500")],
    );
    for d in &reports {
        assert_eq!(
            d.result,
            Err(RDKafkaErrorCode::InvalidTimestamp),
            "rdkafka crate: {d:?}"
        );
    }
    // confluent-kafka connects first ("warmup"): librdkafka 2.0.2 may otherwise send the first
    // record alone while its connection comes up, and that batch is (rightly) accepted.
    for py in [Python::PyPi, Python::Debian] {
        let r = python(
            py,
            "ck.py",
            "produce",
            &json!({"bootstrap": b.bootstrap(), "topic": "bounded", "messages": timed_specs(&ts),
                    "config": {"linger.ms": 500}, "warmup": true}),
        );
        let reports = r["reports"].as_array().cloned().unwrap_or_default();
        assert_eq!(reports.len(), ts.len(), "{py:?}: {r}");
        for rep in &reports {
            assert_eq!(
                rep["error"],
                json!("INVALID_TIMESTAMP"),
                "{py:?} confluent-kafka: {rep}; stored: {:?}",
                read_batches(&b.partition_dir("bounded", 0))
            );
        }
    }
    // kafka-python reads Produce v8's per-record errors (KIP-467): the bad record fails with
    // INVALID_TIMESTAMP, its batch mates with "part of a batch which had ... invalid records".
    for (i, r) in kp_produce_timed(&b, "bounded", &ts, json!({"linger_ms": 500}))
        .iter()
        .enumerate()
    {
        if i == 2 {
            assert_eq!(r["error"], json!("INVALID_TIMESTAMP"), "kafka-python: {r}");
            assert_eq!(r["errno"], json!(32), "kafka-python: {r}");
        } else {
            assert_eq!(r["error"], json!("KafkaError"), "kafka-python: {r}");
            let msg = r["message"].as_str().unwrap_or_default();
            assert!(
                msg.contains("part of a batch which had one more more invalid records"),
                "kafka-python: {r}"
            );
        }
    }
    // Nothing of any of those batches was appended.
    assert_eq!(rd_watermarks(&b.bootstrap(), "bounded", 0), (0, 0));
    assert_eq!(
        rd_read(&b.bootstrap(), "bounded", 0, Offset::Beginning),
        vec![]
    );
    assert_eq!(read_batches(&b.partition_dir("bounded", 0)), vec![]);
    // The partition still takes good records, starting at offset 0.
    let good = rd_produce(&b.bootstrap(), "bounded", &timed_outs(&[now_ms()]), &[]);
    assert_eq!(good[0].result, Ok((0, 0)));

    // Kafka 4's default bound (message.timestamp.after.max.ms = 1 h, §1.8 #12): now+2h is
    // rejected, now+30min accepted.
    let r = rd_produce(
        &b.bootstrap(),
        "defaults",
        &timed_outs(&[now_ms() + 2 * 3_600_000]),
        &[],
    );
    assert_eq!(r[0].result, Err(RDKafkaErrorCode::InvalidTimestamp));
    let r = rd_produce(
        &b.bootstrap(),
        "defaults",
        &timed_outs(&[now_ms() + 1_800_000]),
        &[],
    );
    assert_eq!(r[0].result, Ok((0, 0)));
}
