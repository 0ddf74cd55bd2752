//! Offset lookups: offsetsForTimes (spec §1.8 #8-#10) and "read the last m messages" by
//! seeking to end-m (spec §2.9, §2.10 #3 and #11), with every client that exposes them.

use rdkafka::Offset;
use serde_json::{Value, json};
use skiff_compat::{Broker, Python, node, python, read_batches};

use crate::common::{
    Got, Out, create_topic, now_ms, parse_messages, rd_offsets_for_times, rd_produce, rd_read, rec,
};
use crate::kcat;

#[test]
fn offsets_for_times_finds_the_first_offset_at_or_after_a_time() {
    let b = Broker::start();
    // retention.ms=-1: the hour-old timestamps must not make time retention delete the data.
    create_topic(&b, "times", 1, &[("retention.ms", "-1")]);
    let base = now_ms() - 3_600_000;
    // Offsets 0, 1, 2 with timestamps B, B+2000, B+1000 (out of order on purpose).
    let outs: Vec<Out> = [base, base + 2000, base + 1000]
        .iter()
        .enumerate()
        .map(|(i, ts)| {
            let mut o = Out::new(rec(None, Some(&format!("t{i}")), &[]), 0);
            o.timestamp = Some(*ts);
            o
        })
        .collect();
    // One record per request, so each is its own batch.
    for o in &outs {
        let d = rd_produce(&b.bootstrap(), "times", std::slice::from_ref(o), &[]);
        assert!(d[0].result.is_ok(), "{d:?}");
    }
    assert_eq!(read_batches(&b.partition_dir("times", 0)).len(), 3);

    // (query, expected offset): the smallest offset whose timestamp >= the query; past every
    // timestamp there is none (librdkafka: -1, kafka-python: None, kafkajs: the end offset).
    let cases = [
        (base - 10_000, Some(0)),
        (base, Some(0)),
        (base + 500, Some(1)),
        (base + 1500, Some(1)),
        (base + 2000, Some(1)),
        (base + 2001, None),
    ];
    // The rdkafka crate: Offset::End (-1) past every timestamp.
    let ts: Vec<i64> = cases.iter().map(|(t, _)| *t).collect();
    let got = rd_offsets_for_times(&b.bootstrap(), "times", 0, &ts);
    for ((t, want), got) in cases.iter().zip(&got) {
        let want = want.map_or(Offset::End, Offset::Offset);
        assert_eq!(*got, want, "rdkafka crate offsets_for_times({t})");
    }
    // kcat -Q -t topic:partition:timestamp (librdkafka 2.0.2): "offset -1" past every timestamp.
    for (t, want) in &cases {
        assert_eq!(
            kcat::query_offset(&b, "times", 0, *t),
            want.unwrap_or(-1),
            "kcat -Q at {t}"
        );
    }
    let queries: Vec<Value> = cases.iter().map(|(t, _)| json!([0, t])).collect();
    let params = json!({"bootstrap": b.bootstrap(), "topic": "times", "queries": queries});
    for py in [Python::PyPi, Python::Debian] {
        let r = python(py, "ck.py", "offsets_for_times", &params);
        for (i, (t, want)) in cases.iter().enumerate() {
            let got = &r["results"][i];
            assert_eq!(got["error"], Value::Null, "{py:?} query {t}: {got}");
            assert_eq!(
                got["offset"],
                json!(want.unwrap_or(-1)),
                "{py:?} query {t}: {got}"
            );
        }
    }
    let r = python(Python::PyPi, "kp.py", "offsets_for_times", &params);
    let stamps = [base, base + 2000, base + 1000];
    for (i, (t, want)) in cases.iter().enumerate() {
        let got = &r["results"][i];
        match want {
            Some(o) => {
                assert_eq!(got["offset"], json!(o), "kafka-python query {t}: {got}");
                assert_eq!(
                    got["timestamp"],
                    json!(stamps[*o as usize]),
                    "kafka-python query {t}: {got}"
                );
            }
            None => assert_eq!(got["offset"], Value::Null, "kafka-python query {t}: {got}"),
        }
    }
    let r = node(
        "kafkajs.js",
        "offsets_for_times",
        &json!({"bootstrap": b.bootstrap(), "topic": "times", "timestamps": ts}),
    );
    for (i, (t, want)) in cases.iter().enumerate() {
        assert_eq!(
            r["results"][i],
            json!([{"partition": 0, "offset": want.unwrap_or(3)}]),
            "kafkajs query {t}"
        );
    }
    // ListOffsets -3 (max timestamp, v7+; §1.8 #10), -2 and -1 via the Admin API of PyPI's
    // confluent-kafka.
    let r = python(
        Python::PyPi,
        "ck.py",
        "list_offsets",
        &json!({"bootstrap": b.bootstrap(), "topic": "times",
                "specs": [[0, "max_timestamp"], [0, "earliest"], [0, "latest"], [0, base + 1500]]}),
    );
    assert_eq!(r["results"][0]["offset"], json!(1), "max timestamp: {r}");
    assert_eq!(
        r["results"][0]["timestamp"],
        json!(base + 2000),
        "max timestamp: {r}"
    );
    assert_eq!(r["results"][1]["offset"], json!(0), "earliest: {r}");
    assert_eq!(r["results"][2]["offset"], json!(3), "latest: {r}");
    assert_eq!(r["results"][3]["offset"], json!(1), "for_timestamp: {r}");
    assert_eq!(
        r["results"][3]["timestamp"],
        json!(base + 2000),
        "for_timestamp: {r}"
    );
}

fn offsets(got: &[Got]) -> Vec<i64> {
    got.iter().map(|g| g.offset).collect()
}

#[test]
fn seek_to_end_minus_m_reads_exactly_the_last_m() {
    let b = Broker::start();
    // 100 records in batches of 7 (0-6, ..., 84-90, 91-97, 98-99): offset 90 is the last record
    // of a batch that starts at 84, so a fetch at 90 returns six records the client must drop.
    let outs: Vec<Out> = (0..100)
        .map(|i| Out::new(rec(Some(&format!("k{i}")), Some(&format!("v{i}")), &[]), 0))
        .collect();
    let reports = rd_produce(
        &b.bootstrap(),
        "tail",
        &outs,
        &[("linger.ms", "200"), ("batch.num.messages", "7")],
    );
    assert!(reports.iter().all(|d| d.result.is_ok()));
    let batches = read_batches(&b.partition_dir("tail", 0));
    assert!(
        batches
            .iter()
            .any(|x| x.base_offset < 90 && x.last_offset >= 90),
        "expected a batch straddling offset 90: {batches:?}"
    );
    let want: Vec<i64> = (90..100).collect();
    let check = |who: &str, got: &[Got]| {
        assert_eq!(offsets(got), want, "{who}");
        for g in got {
            assert_eq!(g.rec.value, Some(format!("v{}", g.offset)), "{who}");
        }
    };

    // kcat -o -10 (librdkafka's logical OFFSET_TAIL(10)).
    check("kcat -o -10", &kcat::read(&b, "tail", 0, "-10"));
    // The rdkafka crate and confluent-kafka with OFFSET_TAIL(10) = -2010.
    check(
        "rdkafka crate",
        &rd_read(&b.bootstrap(), "tail", 0, Offset::OffsetTail(10)),
    );
    for py in [Python::PyPi, Python::Debian] {
        let r = python(
            py,
            "ck.py",
            "consume",
            &json!({"bootstrap": b.bootstrap(), "topic": "tail", "assign": [[0, -2010]]}),
        );
        check(&format!("{py:?} confluent-kafka"), &parse_messages(&r));
    }
    // The explicit recipe: end offset (ListOffsets -1), then seek(end - 10).
    let r = python(
        Python::PyPi,
        "ck.py",
        "watermarks",
        &json!({"bootstrap": b.bootstrap(), "topic": "tail", "partitions": [0]}),
    );
    assert_eq!(r["watermarks"]["0"], json!([0, 100]));
    let r = python(
        Python::PyPi,
        "ck.py",
        "consume",
        &json!({"bootstrap": b.bootstrap(), "topic": "tail", "assign": [[0, 90]]}),
    );
    check("confluent-kafka seek(90)", &parse_messages(&r));
    // kafka-python: seek_to_end(), position(), seek(position - 10).
    let r = python(
        Python::PyPi,
        "kp.py",
        "consume",
        &json!({"bootstrap": b.bootstrap(), "topic": "tail", "assign": [[0, {"from_end": 10}]]}),
    );
    assert_eq!(r["end_offsets"]["0"], json!(100));
    check("kafka-python", &parse_messages(&r));
    // kafkajs: ListOffsets latest, then Fetch at end - 10.
    let r = node(
        "kafkajs.js",
        "fetch",
        &json!({"bootstrap": b.bootstrap(), "topic": "tail", "partition": 0, "offset": {"from_end": 10}}),
    );
    assert_eq!(r["high_watermark"], json!(100));
    check("kafkajs", &parse_messages(&r));
}
