//! `/metrics` on the admin port (issue 20) after a real produce / group consume / partial
//! commit with a stock client (librdkafka through the `rdkafka` crate), parsed by a
//! Prometheus text parser (`prometheus-parse`):
//!
//! - `skiff_topic_records_in_total` equals the records produced, exactly;
//! - `skiff_topic_bytes_in_total` equals the record-batch bytes in the partitions' `.log`
//!   files, exactly (batches are stored as the producer sent them);
//! - `skiff_topic_bytes_out_total` covers at least every stored byte the consumer read;
//! - Produce and Fetch have latency observations (total and every phase), requests counted
//!   by API and listener, the client software is librdkafka, the connection gauges add up;
//! - `skiff_group_lag_records` equals end offset minus committed summed over the topic's two
//!   partitions, and per partition (`skiff.metrics.partition.series.enable=true`, which this
//!   broker runs with) each partition's lag is its own.
//!
//! One broker, well under 60 s.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::message::Message;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::{Offset, TopicPartitionList};
use skiff_compat::Broker;

const TOPIC: &str = "metered";
const GROUP: &str = "metered-readers";
/// Records per partition, and what the group commits of them.
const RECORDS: [i64; 2] = [120, 80];
const COMMITTED: [i64; 2] = [50, 80];

/// (metric name, sorted labels) -> value.
type Samples = HashMap<(String, Vec<(String, String)>), f64>;

fn scrape(b: &Broker) -> Samples {
    let port = b.admin_port().expect("the admin port is on");
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect to the admin port");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).expect("read /metrics");
    let Some((head, body)) = resp.split_once("\r\n\r\n") else {
        panic!("not an HTTP response: {resp:?}")
    };
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/openmetrics-text"),
        "{head}"
    );
    // A chunked body would carry chunk sizes; axum sends a sized body for a String.
    assert!(body.trim_end().ends_with("# EOF"), "{body}");
    let lines = body.lines().map(|l| Ok(l.to_string()));
    let parsed = prometheus_parse::Scrape::parse(lines).expect("Prometheus text");
    let mut out = Samples::new();
    for s in parsed.samples {
        let mut labels: Vec<(String, String)> = s
            .labels
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        labels.sort();
        let v = match s.value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => v,
            _ => continue,
        };
        out.insert((s.metric, labels), v);
    }
    out
}

fn get(s: &Samples, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let mut l: Vec<(String, String)> = labels
        .iter()
        .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
        .collect();
    l.sort();
    s.get(&(name.to_string(), l)).copied()
}

/// Sum of every sample of `name` whose labels include `having`.
fn sum(s: &Samples, name: &str, having: &[(&str, &str)]) -> f64 {
    s.iter()
        .filter(|((n, l), _)| {
            n == name
                && having
                    .iter()
                    .all(|(k, v)| l.iter().any(|(lk, lv)| lk == k && lv == v))
        })
        .map(|(_, v)| v)
        .sum()
}

/// Bytes of every `.log` segment file of one partition.
fn stored_bytes(b: &Broker, partition: i32) -> u64 {
    std::fs::read_dir(b.partition_dir(TOPIC, partition))
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "log"))
        .map(|e| e.metadata().map_or(0, |m| m.len()))
        .sum()
}

fn produce(bootstrap: &str) {
    let producer: BaseProducer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("linger.ms", "5")
        .set("batch.num.messages", "16")
        .create()
        .unwrap();
    for (p, n) in RECORDS.iter().enumerate() {
        for i in 0..*n {
            // Values of different sizes, so the byte count is not a multiple of anything.
            let value = "v".repeat(10 + (i as usize * 7) % 300);
            let key = format!("k{i}");
            let mut rec = BaseRecord::to(TOPIC)
                .partition(p as i32)
                .key(&key)
                .payload(&value);
            loop {
                match producer.send(rec) {
                    Ok(()) => break,
                    Err((_, r)) => {
                        producer.poll(Duration::from_millis(10));
                        rec = r;
                    }
                }
            }
            producer.poll(Duration::ZERO);
        }
    }
    producer.flush(Duration::from_secs(20)).unwrap();
    assert_eq!(producer.in_flight_count(), 0);
}

/// Reads everything in the group, commits [`COMMITTED`], leaves the group.
fn consume_and_commit(bootstrap: &str) {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", GROUP)
        .set("auto.offset.reset", "earliest")
        .set("enable.auto.commit", "false")
        .create()
        .unwrap();
    consumer.subscribe(&[TOPIC]).unwrap();
    let total: i64 = RECORDS.iter().sum();
    let mut got = 0i64;
    let deadline = Instant::now() + Duration::from_secs(30);
    while got < total {
        assert!(Instant::now() < deadline, "consumed {got} of {total}");
        if let Some(m) = consumer.poll(Duration::from_millis(200)) {
            let m = m.expect("no consumer error");
            assert_eq!(m.topic(), TOPIC);
            got += 1;
        }
    }
    let mut tpl = TopicPartitionList::new();
    for (p, off) in COMMITTED.iter().enumerate() {
        tpl.add_partition_offset(TOPIC, p as i32, Offset::Offset(*off))
            .unwrap();
    }
    consumer.commit(&tpl, CommitMode::Sync).unwrap();
    consumer.unsubscribe();
}

#[test]
fn metrics_match_a_produce_consume_and_commit_run() {
    let b = Broker::start_with(&[
        ("skiff.admin.listener", "127.0.0.1:0"),
        ("skiff.metrics.partition.series.enable", "true"),
    ]);
    skiff_testkit::client::Conn::open(b.port()).create_topic(TOPIC, 2, &[]);
    produce(&b.bootstrap());
    consume_and_commit(&b.bootstrap());

    let s = scrape(&b);
    let topic = [("topic", TOPIC)];
    let records: i64 = RECORDS.iter().sum();
    assert_eq!(
        get(&s, "skiff_topic_records_in_total", &topic),
        Some(records as f64),
        "records in"
    );
    let stored = stored_bytes(&b, 0) + stored_bytes(&b, 1);
    assert!(stored > 0);
    assert_eq!(
        get(&s, "skiff_topic_bytes_in_total", &topic),
        Some(stored as f64),
        "bytes in = the stored batch bytes"
    );
    let out = get(&s, "skiff_topic_bytes_out_total", &topic).expect("bytes out");
    assert!(out >= stored as f64, "bytes out {out} < stored {stored}");

    for api in ["Produce", "Fetch"] {
        let count = get(&s, "skiff_request_duration_seconds_count", &[("api", api)]);
        assert!(count.is_some_and(|c| c > 0.0), "{api}: {count:?}");
        for phase in ["queue", "local", "remote", "send"] {
            let c = get(
                &s,
                "skiff_request_phase_duration_seconds_count",
                &[("api", api), ("phase", phase)],
            );
            assert!(c.is_some_and(|c| c > 0.0), "{api} {phase}: {c:?}");
        }
        let requests = sum(&s, "skiff_requests_total", &[("api", api)]);
        assert!(requests > 0.0, "{api} requests");
    }
    assert!(
        sum(&s, "skiff_requests_total", &[("api", "OffsetCommit")]) >= 1.0,
        "the commit"
    );
    let created = sum(&s, "skiff_connections_created_total", &[]);
    let closed = sum(&s, "skiff_connections_closed_total", &[]);
    let open = sum(&s, "skiff_connections", &[]);
    assert!(
        created >= 2.0,
        "producer and consumer connections: {created}"
    );
    assert_eq!(created - closed, open, "created - closed = open");
    let librdkafka = s
        .iter()
        .filter(|((n, l), _)| {
            n == "skiff_client_connections_total"
                && l.iter()
                    .any(|(k, v)| k == "software_name" && v.contains("librdkafka"))
        })
        .map(|(_, v)| v)
        .sum::<f64>();
    assert!(librdkafka >= 1.0, "client software: {s:?}");

    let group = [("group", GROUP), ("topic", TOPIC)];
    let lag: i64 = RECORDS.iter().zip(COMMITTED).map(|(n, c)| n - c).sum();
    assert_eq!(
        get(&s, "skiff_group_lag_records", &group),
        Some(lag as f64),
        "lag = end offset - committed, summed over partitions"
    );
    let secs = get(&s, "skiff_group_lag_seconds", &group).expect("lag seconds");
    // Partition 0 lags: the age of its oldest unconsumed batch (written during this test).
    assert!(secs > 0.0 && secs < 600.0, "{secs}");
    for (p, (n, c)) in RECORDS.iter().zip(COMMITTED).enumerate() {
        let part = p.to_string();
        let labels = [
            ("group", GROUP),
            ("topic", TOPIC),
            ("partition", part.as_str()),
        ];
        assert_eq!(
            get(&s, "skiff_group_partition_lag_records", &labels),
            Some((n - c) as f64),
            "partition {p}"
        );
        let hw = [("topic", TOPIC), ("partition", part.as_str())];
        assert_eq!(get(&s, "skiff_log_high_watermark", &hw), Some(*n as f64));
    }
    assert_eq!(
        get(&s, "skiff_partitions", &[]).map(|v| v >= 2.0),
        Some(true)
    );
    assert_eq!(get(&s, "skiff_partitions_offline", &[]), Some(0.0));
    assert_eq!(get(&s, "skiff_partitions_under_replicated", &[]), Some(0.0));
    assert_eq!(get(&s, "skiff_controller_active", &[]), Some(1.0));
    let sendfile = get(&s, "skiff_response_bytes_total", &[("path", "sendfile")]);
    assert!(sendfile.is_some_and(|v| v >= stored as f64), "{sendfile:?}");
}
