//! Delayed delivery (issue 8, spec §4.4 items 1-5, 7, 8) with stock clients against the
//! `skiff` binary: PyPI confluent-kafka produces and consumes (`delivery_ck.py`), kafka-python
//! answers `end_offsets` (ListOffsets -1), kcat sets the header as a string.
//! Note: librdkafka consumers default to read_committed, so they read up to the
//! LastStableOffset = min(LSO, DSO) and report partition EOF there while a record waits (as
//! behind an open transaction in Kafka); kafka-python's ListOffsets is read_uncommitted.
//!
//! Timing: every timed topic is `message.timestamp.type=LogAppendTime`, so a consumed record's
//! timestamp (and the producer's delivery-report timestamp) is the broker's append time; a
//! record with `__delay_ms=D` is due at `append + D`. Receive times are the consumer's wall
//! clock on the same machine. "Delivered in time" = received in `[due, due + 1 s]`; the
//! consumer polls continuously from before the append (its assignment time is checked), so an
//! early delivery would be seen. Tests run serially (the compat package is in group `e2e`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};
use skiff_compat::{Broker, Python, kcat, python, read_batches};

const SCRIPT: &str = "delivery_ck.py";
/// Slack for the ms rounding of two clocks reading the same time source.
const CLOCK_SLACK_MS: i64 = 2;
/// How late after its due time a record may arrive.
const LATE_MS: i64 = 1_000;

fn broker() -> Broker {
    Broker::start_with(&[
        ("log.cleaner.backoff.ms", "100"),
        ("log.retention.check.interval.ms", "1000"),
        ("skiff.admin.listener", "127.0.0.1:0"),
    ])
}

fn create(b: &Broker, topic: &str, config: Value) {
    let r = python(
        Python::PyPi,
        SCRIPT,
        "create",
        &json!({"bootstrap": b.bootstrap(), "topic": topic, "config": config}),
    );
    assert_eq!(r["error"], Value::Null, "create {topic}: {r}");
}

/// A delay-enabled LogAppendTime topic config plus `extra`.
fn delayed(extra: Value) -> Value {
    let mut c = json!({
        "delivery.delay.enable": "true",
        "message.timestamp.type": "LogAppendTime",
    });
    if let (Some(c), Some(e)) = (c.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            c.insert(k.clone(), v.clone());
        }
    }
    c
}

fn msg(key: &str, headers: &[(&str, &str)]) -> Value {
    json!({"key": key, "value": format!("value-{key}"), "headers": headers.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>()})
}

fn timed(b: &Broker, topic: &str, messages: Vec<Value>, expect: usize, extra: Value) -> Value {
    let mut p = json!({
        "bootstrap": b.bootstrap(), "topic": topic, "messages": messages,
        "expect": expect, "linger_s": 0.5, "timeout_s": 15,
    });
    if let (Some(p), Some(e)) = (p.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            p.insert(k.clone(), v.clone());
        }
    }
    python(Python::PyPi, SCRIPT, "timed", &p)
}

fn produce(b: &Broker, topic: &str, messages: Vec<Value>) -> Vec<Value> {
    let r = python(
        Python::PyPi,
        SCRIPT,
        "produce",
        &json!({"bootstrap": b.bootstrap(), "topic": topic, "messages": messages}),
    );
    r["reports"].as_array().unwrap().clone()
}

fn i(v: &Value) -> i64 {
    v.as_i64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

/// Checks that `rec` (a received record) arrived in `[due, due + LATE_MS]`.
fn assert_in_window(rec: &Value, due: i64, what: &str) {
    let recv = i(&rec["recv_ms"]);
    assert!(
        recv + CLOCK_SLACK_MS >= due,
        "{what}: delivered {} ms before its due time: {rec}",
        due - recv
    );
    assert!(
        recv <= due + LATE_MS,
        "{what}: delivered {} ms after its due time: {rec}",
        recv - due
    );
}

#[test]
fn delivery_delayed_record_waits_and_blocks_later_records() {
    // §4.4 #1 and #2: R (__delay_ms=3000) at N, S (no header) at N+1, separate batches.
    let b = broker();
    create(&b, "d1", delayed(json!({})));
    let r = timed(
        &b,
        "d1",
        vec![msg("r", &[("__delay_ms", "3000")]), msg("s", &[])],
        2,
        // Long polls of 5 s: a prompt delivery proves the DSO timer woke the waiting fetch.
        json!({"consumer_config": {"fetch.wait.max.ms": 5000}}),
    );
    let reports = r["reports"].as_array().unwrap();
    assert_eq!(reports[0]["error"], Value::Null, "{r}");
    assert_eq!(reports[1]["error"], Value::Null, "{r}");
    assert_eq!((i(&reports[0]["offset"]), i(&reports[1]["offset"])), (0, 1));
    let got = r["received"].as_array().unwrap();
    let offsets: Vec<i64> = got.iter().map(|m| i(&m["offset"])).collect();
    assert_eq!(offsets, [0, 1], "delivery order: {r}");
    let append = i(&got[0]["timestamp"]);
    assert!(
        append >= i(&reports[0]["sent_ms"]) - CLOCK_SLACK_MS
            && append <= i(&reports[0]["ack_ms"]) + CLOCK_SLACK_MS
    );
    let due = append + 3_000;
    assert_in_window(&got[0], due, "R");
    eprintln!(
        "R delivered {} ms after its due time",
        i(&got[0]["recv_ms"]) - due
    );
    // Both were stored (acknowledged) long before R's due time: only consumers wait.
    assert!(i(&reports[0]["ack_ms"]) < due - 1_000, "{r}");
    assert!(i(&reports[1]["ack_ms"]) < due - 1_000, "{r}");
    assert!(
        i(&got[1]["recv_ms"]) + CLOCK_SLACK_MS >= due,
        "S before R's due: {r}"
    );
    assert!(i(&got[1]["recv_ms"]) >= i(&got[0]["recv_ms"]));
    // The headers come back unchanged.
    assert_eq!(got[0]["headers"], json!([["__delay_ms", "3000"]]));
    assert_eq!(got[1]["headers"], json!([]));
    assert_eq!(r["errors"], json!([]), "{r}");
}

#[test]
fn delivery_header_has_no_effect_without_the_feature() {
    // §4.4 #3.
    let b = broker();
    create(
        &b,
        "plain",
        json!({"message.timestamp.type": "LogAppendTime"}),
    );
    let r = timed(
        &b,
        "plain",
        vec![msg(
            "r",
            &[("__delay_ms", "3000"), ("__deliver_after_ms", "junk")],
        )],
        1,
        json!({}),
    );
    assert_eq!(r["reports"][0]["error"], Value::Null, "{r}");
    let got = &r["received"][0];
    let waited = i(&got["recv_ms"]) - i(&got["timestamp"]);
    assert!(waited < 1_500, "delivered {waited} ms after append: {r}");
    assert_eq!(
        got["headers"],
        json!([["__delay_ms", "3000"], ["__deliver_after_ms", "junk"]])
    );
}

#[test]
fn delivery_over_the_max_with_reject_fails_the_batch_and_appends_nothing() {
    // §4.4 #4, plus a malformed and a negative value (INVALID_RECORD too).
    let b = broker();
    create(&b, "rej", delayed(json!({"delivery.delay.max.ms": "1000"})));
    let reports = produce(
        &b,
        "rej",
        vec![
            msg("too-long", &[("__delay_ms", "5000")]),
            msg("malformed", &[("__delay_ms", "soon")]),
            msg("negative", &[("__delay_ms", "-1")]),
        ],
    );
    for rep in &reports {
        assert_eq!(rep["code"], json!(87), "{rep}");
        assert_eq!(rep["error"], json!("INVALID_RECORD"), "{rep}");
    }
    assert!(read_batches(&b.partition_dir("rej", 0)).is_empty());
    // A record within the max goes to offset 0: nothing of the refused batches was appended.
    let ok = produce(&b, "rej", vec![msg("ok", &[("__delay_ms", "500")])]);
    assert_eq!(
        (ok[0]["error"].clone(), i(&ok[0]["offset"])),
        (Value::Null, 0)
    );
    assert_eq!(read_batches(&b.partition_dir("rej", 0)).len(), 1);
    // Policy clamp (set on the live topic): the same request is accepted, due at the max.
    let a = python(
        Python::PyPi,
        SCRIPT,
        "alter",
        &json!({"bootstrap": b.bootstrap(), "topic": "rej",
                "config": {"delivery.delay.exceed.policy": "clamp"}}),
    );
    assert_eq!(a["error"], Value::Null, "{a}");
    let r = timed(
        &b,
        "rej",
        vec![msg("clamped", &[("__delay_ms", "5000")])],
        2,
        json!({}),
    );
    assert_eq!(r["reports"][0]["error"], Value::Null, "{r}");
    let got = &r["received"][1];
    assert_eq!(i(&got["offset"]), 1, "{r}");
    assert_in_window(
        got,
        i(&got["timestamp"]) + 1_000,
        "clamped to delivery.delay.max.ms",
    );
}

#[test]
fn delivery_end_offsets_return_the_dso_while_a_record_waits() {
    // §4.4 #5 with kafka-python's end_offsets (ListOffsets -1).
    let b = broker();
    create(&b, "eo", delayed(json!({})));
    let reports = produce(
        &b,
        "eo",
        vec![
            msg("a", &[]),
            msg("b", &[]),
            msg("r", &[("__delay_ms", "3000")]),
        ],
    );
    assert_eq!(i(&reports[2]["offset"]), 2, "{reports:?}");
    // LogAppendTime topic: the delivery report carries the append time.
    let due = i(&reports[2]["timestamp"]) + 3_000;
    // The operator view while R waits: one pending batch, due at `due`, DSO = R's offset.
    let view = b.admin_cli(&["partition", "eo", "0"]);
    let d = &view["sections"]["delivery"];
    assert_eq!(
        (
            d["pending_batches"].as_i64(),
            d["delivery_stable_offset"].as_i64()
        ),
        (Some(1), Some(2)),
        "{view}"
    );
    assert_eq!(d["high_watermark"], 3, "{view}");
    assert!(
        (i(&d["next_due_ms"]) - due).abs() <= CLOCK_SLACK_MS,
        "{view} vs due {due}"
    );
    let r = python(
        Python::PyPi,
        SCRIPT,
        "end_offsets",
        &json!({"bootstrap": b.bootstrap(), "topic": "eo", "until": 3, "timeout_s": 15}),
    );
    let samples = r["samples"].as_array().unwrap();
    let first = &samples[0];
    assert_eq!(i(&first[1]), 2, "end offset while R waits: {r}");
    assert!(
        i(&first[0]) < due - 500,
        "first sample too late to prove anything: {r}"
    );
    let last = samples.last().unwrap();
    assert_eq!(i(&last[1]), 3, "end offset after the due time: {r}");
    // A sample is timed when its request was sent; the answer came after that.
    assert!(
        i(&last[0]) + 100 >= due,
        "HW answered before the due time: {r}"
    );
    assert!(i(&last[0]) <= due + LATE_MS, "{r}");
    assert_eq!(samples.len(), 2, "the end offset moved only once: {r}");
}

#[test]
fn delivery_zstd_batch_with_one_delayed_record_is_delivered_whole() {
    // §4.4 #8: 100 records in one zstd batch, record 37 with __delay_ms=3000.
    let b = broker();
    create(&b, "z", delayed(json!({})));
    let messages: Vec<Value> = (0..100)
        .map(|n| {
            let key = format!("k{n}");
            if n == 37 {
                msg(&key, &[("__delay_ms", "3000")])
            } else {
                msg(&key, &[("h", &format!("v{n}"))])
            }
        })
        .collect();
    let r = timed(
        &b,
        "z",
        messages,
        100,
        json!({"one_batch": true, "producer_config": {"compression.type": "zstd"}}),
    );
    let batches = read_batches(&b.partition_dir("z", 0));
    assert_eq!(batches.len(), 1, "{batches:?}");
    assert_eq!((batches[0].codec(), batches[0].record_count), ("zstd", 100));
    let got = r["received"].as_array().unwrap();
    assert_eq!(got.len(), 100, "{r}");
    let due = i(&got[0]["timestamp"]) + 3_000;
    for (n, m) in got.iter().enumerate() {
        assert_eq!(i(&m["offset"]), n as i64);
        assert_in_window(m, due, &format!("record {n}"));
        let want = if n == 37 {
            json!([["__delay_ms", "3000"]])
        } else {
            json!([["h", format!("v{n}")]])
        };
        assert_eq!(m["headers"], want, "record {n}");
    }
    // check.crcs=true: librdkafka verified every CRC and reported no error.
    assert_eq!(r["errors"], json!([]), "{r}");
}

#[test]
fn delivery_default_delay_applies_to_records_without_a_header() {
    let b = broker();
    create(
        &b,
        "dflt",
        delayed(json!({"delivery.delay.default.ms": "2000"})),
    );
    let r = timed(&b, "dflt", vec![msg("plain", &[])], 1, json!({}));
    let got = &r["received"][0];
    assert_in_window(got, i(&got["timestamp"]) + 2_000, "header-less record");
}

#[test]
fn delivery_config_is_dynamic() {
    // AlterConfigs on a live topic changes what the next batch does.
    let b = broker();
    create(
        &b,
        "dyn",
        json!({"message.timestamp.type": "LogAppendTime"}),
    );
    let r = timed(
        &b,
        "dyn",
        vec![msg("a", &[("__delay_ms", "2000")])],
        1,
        json!({}),
    );
    let got = &r["received"][0];
    assert!(i(&got["recv_ms"]) - i(&got["timestamp"]) < 1_000, "{r}");
    let a = python(
        Python::PyPi,
        SCRIPT,
        "alter",
        &json!({"bootstrap": b.bootstrap(), "topic": "dyn", "config": {"delivery.delay.enable": "true"}}),
    );
    assert_eq!(a["error"], Value::Null, "{a}");
    let r = timed(
        &b,
        "dyn",
        vec![msg("b", &[("__delay_ms", "2000")])],
        1,
        json!({"offset": 1}),
    );
    let got = &r["received"][0];
    assert_eq!(i(&got["offset"]), 1, "{r}");
    assert_in_window(got, i(&got["timestamp"]) + 2_000, "after enabling");
}

/// §4.4 #7: a group that committed up to N; R at N waits across a restart (SIGTERM: the
/// flushed index is loaded; kill -9 with the index file deleted: recovery rebuilds it), then
/// reaches the group exactly once.
fn restart_scenario(kill9: bool) {
    const DELAY: i64 = 9_000;
    let mut b = broker();
    create(&b, "rs", delayed(json!({})));
    produce(&b, "rs", vec![msg("a", &[]), msg("b", &[]), msg("c", &[])]);
    let group = json!({"bootstrap": b.bootstrap(), "topic": "rs", "group": "g",
                       "expect": 3, "linger_s": 0, "timeout_s": 20});
    let first = python(Python::PyPi, SCRIPT, "consume_group", &group);
    assert_eq!(first["committed"], json!([3]), "{first}");
    let reports = produce(
        &b,
        "rs",
        vec![msg("r", &[("__delay_ms", &DELAY.to_string())])],
    );
    assert_eq!(i(&reports[0]["offset"]), 3, "{reports:?}");
    let due = i(&reports[0]["timestamp"]) + DELAY;
    if kill9 {
        b.kill9();
        // Lose the index too: the unclean start must rebuild it from the batches' headers
        // (on this LogAppendTime topic the batch timestamp is the exact append time).
        let mut removed = 0;
        for e in std::fs::read_dir(b.partition_dir("rs", 0)).unwrap() {
            let path = e.unwrap().path();
            if path.extension().is_some_and(|x| x == "deliverafter") {
                std::fs::remove_file(&path).unwrap();
                removed += 1;
            }
        }
        assert_eq!(removed, 1, "one segment with a delayed batch");
    } else {
        let status = b.stop();
        assert!(status.success(), "{status:?}");
        assert!(b.has_clean_shutdown_marker());
    }
    b.restart();
    let second = python(
        Python::PyPi,
        SCRIPT,
        "consume_group",
        &json!({"bootstrap": b.bootstrap(), "topic": "rs", "group": "g",
                "expect": 1, "linger_s": 1.5, "timeout_s": 25}),
    );
    let assigned = i(&second["assigned_ms"]);
    assert!(
        assigned < due - 1_000,
        "the group consumer got its assignment too late to prove withholding: {second}"
    );
    let got = second["received"].as_array().unwrap();
    assert_eq!(
        got.len(),
        1,
        "exactly once, nothing before it re-delivered: {second}"
    );
    assert_eq!(i(&got[0]["offset"]), 3);
    assert_eq!(
        got[0]["headers"],
        json!([["__delay_ms", DELAY.to_string()]])
    );
    assert_in_window(&got[0], due, "R after the restart");
    assert_eq!(second["committed"], json!([4]), "{second}");
    assert!(
        b.logs().contains("delivery state loaded"),
        "the broker logged its pending state on load"
    );
}

#[test]
fn delivery_clean_restart_keeps_withholding_then_delivers_once() {
    restart_scenario(false);
}

#[test]
fn delivery_kill9_restart_keeps_withholding_then_delivers_once() {
    restart_scenario(true);
}

#[test]
fn delivery_retention_below_the_max_is_invalid_config() {
    // A finite retention.ms below delivery.delay.max.ms could delete records before delivery.
    let b = broker();
    let bad = python(
        Python::PyPi,
        SCRIPT,
        "create",
        &json!({"bootstrap": b.bootstrap(), "topic": "ret",
                "config": {"delivery.delay.enable": "true", "retention.ms": "1000"}}),
    );
    assert_eq!(bad["error"], json!("INVALID_CONFIG"), "{bad}");
    create(
        &b,
        "ret",
        json!({"delivery.delay.enable": "true", "retention.ms": "-1"}),
    );
    let alter = |config: Value| {
        python(
            Python::PyPi,
            SCRIPT,
            "alter",
            &json!({"bootstrap": b.bootstrap(), "topic": "ret", "config": config}),
        )
    };
    assert_eq!(
        alter(json!({"retention.ms": "1000"}))["error"],
        json!("INVALID_CONFIG")
    );
    assert_eq!(
        alter(json!({"delivery.delay.max.ms": "1000", "retention.ms": "1000"}))["error"],
        Value::Null
    );
    assert_eq!(
        alter(json!({"delivery.delay.exceed.policy": "drop"}))["error"],
        json!("INVALID_CONFIG")
    );
}

#[test]
fn delivery_kcat_string_header_delays_and_comes_back_unchanged() {
    // kcat (librdkafka) sets headers as strings: the ASCII form of the contract.
    let b = broker();
    create(&b, "kc", delayed(json!({})));
    let bootstrap = b.bootstrap();
    kcat(
        &[
            "-P",
            "-b",
            &bootstrap,
            "-t",
            "kc",
            "-p",
            "0",
            "-H",
            "__delay_ms=2000",
        ],
        b"hello\n",
    )
    .assert_success("kcat -P");
    // -c 1: exits after one record. (Not -e: librdkafka defaults to read_committed, whose end
    // is the LastStableOffset, here min(LSO, DSO) = 0: kcat would see EOF at once, the same as
    // behind an open transaction in Kafka.)
    let out = kcat(
        &[
            "-C",
            "-b",
            &bootstrap,
            "-t",
            "kc",
            "-p",
            "0",
            "-o",
            "beginning",
            "-c",
            "1",
            "-J",
        ],
        b"",
    );
    let finished = wall_ms();
    out.assert_success("kcat -C");
    let line = out.stdout.lines().find(|l| l.starts_with('{')).unwrap();
    let m: Value = serde_json::from_str(line).unwrap();
    assert_eq!(m["offset"], json!(0), "{m}");
    assert_eq!(m["headers"], json!(["__delay_ms", "2000"]), "{m}");
    assert_eq!(m["payload"], json!("hello"), "{m}");
    let due = i(&m["ts"]) + 2_000;
    assert!(
        finished >= due,
        "kcat finished {} ms before the due time",
        due - finished
    );
    assert!(
        finished <= due + 2 * LATE_MS,
        "kcat finished {} ms after due",
        finished - due
    );
}

fn wall_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
