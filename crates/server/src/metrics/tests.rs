//! Unit tests of the recorded families, the scrape's pure lag arithmetic, and the produce /
//! fetch accounting through the real handlers and `/metrics` route (no socket).

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use bytes::Bytes;
use prometheus_client::encoding::text::encode;
use skiff_protocol::{ApiKey, HeartbeatResponse, RequestBody, ResponseBody};
use tokio::sync::watch;
use tower::ServiceExt;

use super::scrape::{LagRow, TopicLag, aggregate_lag, partition_lag};
use super::*;
use crate::admin_http::{AdminState, router};
use crate::broker::Broker;
use crate::handlers::{self, ListenerInfo, Reply, RequestContext};
use crate::settings::{ServerSettings, StorageTopicConfigs};

/// (metric name, sorted labels) -> value, from a Prometheus text parser.
type Samples = HashMap<(String, Vec<(String, String)>), f64>;

fn parse(text: &str) -> Samples {
    let lines = text.lines().map(|l| Ok(l.to_string()));
    let scrape = prometheus_parse::Scrape::parse(lines).unwrap();
    let mut out = Samples::new();
    for s in scrape.samples {
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

fn get(samples: &Samples, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let mut l: Vec<(String, String)> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    l.sort();
    samples.get(&(name.to_string(), l)).copied()
}

fn encoded(m: &Metrics) -> Samples {
    let mut s = String::new();
    encode(&mut s, m.registry()).unwrap();
    parse(&s)
}

#[test]
fn recorded_families_encode_with_their_names_and_labels() {
    let m = Metrics::new();
    let t = m.topic("orders");
    t.bytes_in(100);
    t.bytes_in(20);
    t.records_in(3);
    t.bytes_out(50);
    m.topic("orders").bytes_out(1); // the cached handle is the same series
    m.replication_bytes_out(7);
    let conn = m.connection_opened("PLAINTEXT");
    conn.request(ApiKey::Produce, 9);
    conn.request(ApiKey::Produce, 9);
    conn.request(ApiKey::Fetch, 12);
    let clock = skiff_types::Clock::manual(0);
    let s0 = stamp(&clock);
    clock.advance(std::time::Duration::from_millis(2));
    let s1 = stamp(&clock);
    m.latency(ApiKey::Produce, &RequestTimes::new(s0, s0, s1), s1, s1);
    m.errors(
        ApiKey::Heartbeat,
        &ResponseBody::Heartbeat(HeartbeatResponse {
            error_code: 27,
            ..Default::default()
        }),
    );
    let s = encoded(&m);
    let topic = [("topic", "orders")];
    assert_eq!(get(&s, "skiff_topic_bytes_in_total", &topic), Some(120.0));
    assert_eq!(get(&s, "skiff_topic_records_in_total", &topic), Some(3.0));
    assert_eq!(get(&s, "skiff_topic_bytes_out_total", &topic), Some(51.0));
    assert_eq!(get(&s, "skiff_replication_bytes_out_total", &[]), Some(7.0));
    let produce = [
        ("api", "Produce"),
        ("version", "9"),
        ("listener", "PLAINTEXT"),
    ];
    assert_eq!(get(&s, "skiff_requests_total", &produce), Some(2.0));
    assert_eq!(
        get(
            &s,
            "skiff_request_errors_total",
            &[("api", "Heartbeat"), ("error", "REBALANCE_IN_PROGRESS")]
        ),
        Some(1.0)
    );
    let l = [("listener", "PLAINTEXT")];
    assert_eq!(get(&s, "skiff_connections", &l), Some(1.0));
    assert_eq!(
        get(
            &s,
            "skiff_request_duration_seconds_count",
            &[("api", "Produce")]
        ),
        Some(1.0)
    );
    assert!(
        (get(
            &s,
            "skiff_request_duration_seconds_sum",
            &[("api", "Produce")]
        )
        .unwrap()
            - 0.002)
            .abs()
            < 1e-9
    );
    for phase in PHASES {
        let labels = [("api", "Produce"), ("phase", phase)];
        assert_eq!(
            get(&s, "skiff_request_phase_duration_seconds_count", &labels),
            Some(1.0),
            "{phase}"
        );
    }
    drop(conn);
    let s = encoded(&m);
    assert_eq!(get(&s, "skiff_connections", &l), Some(0.0));
    assert_eq!(get(&s, "skiff_connections_created_total", &l), Some(1.0));
    assert_eq!(get(&s, "skiff_connections_closed_total", &l), Some(1.0));
    // A deleted topic's series go away.
    m.retain_topics(|t| t != "orders");
    assert_eq!(
        get(&encoded(&m), "skiff_topic_bytes_in_total", &topic),
        None
    );
}

#[test]
fn partition_lag_table() {
    // (committed, end, lag)
    let cases = [(5, 10, 5), (10, 10, 0), (12, 10, 0), (-1, 10, 0), (0, 0, 0)];
    for (committed, end, lag) in cases {
        assert_eq!(partition_lag(committed, end), lag, "{committed} {end}");
    }
}

#[test]
fn lag_sums_records_and_takes_the_oldest_unconsumed_age() {
    let row = |g: &str, t: &str, p, committed, end, ts| LagRow {
        group: g.into(),
        topic: t.into(),
        partition: p,
        committed,
        end,
        oldest_unconsumed_ms: ts,
    };
    let rows = [
        row("g", "a", 0, 5, 10, Some(1_000)),
        row("g", "a", 1, 0, 3, Some(4_000)),
        row("g", "a", 2, 7, 7, Some(0)), // no lag: its age is not counted
        row("g", "b", 0, 9, 9, None),
        row("h", "a", 0, 2, 4, None),
    ];
    let lag = aggregate_lag(&rows, 10_000);
    let key = |g: &str, t: &str| (g.to_string(), t.to_string());
    assert_eq!(
        lag[&key("g", "a")],
        TopicLag {
            records: 8,
            seconds: 9.0
        }
    );
    assert_eq!(
        lag[&key("g", "b")],
        TopicLag {
            records: 0,
            seconds: 0.0
        }
    );
    assert_eq!(
        lag[&key("h", "a")],
        TopicLag {
            records: 2,
            seconds: 0.0
        }
    );
}

fn batch(values: &[&str]) -> Bytes {
    let mut b = skiff_record::BatchBuilder::new(skiff_record::BatchOptions::default());
    for (i, v) in values.iter().enumerate() {
        b.append(1_700_000_000_000 + i as i64, None, Some(v.as_bytes()), &[]);
    }
    Bytes::from(b.build().unwrap())
}

fn call(broker: &Arc<Broker>, version: i16, body: RequestBody) -> ResponseBody {
    let listener = ListenerInfo {
        name: "PLAINTEXT".into(),
        advertised_host: "127.0.0.1".into(),
        advertised_port: 9092,
        controller: false,
    };
    let ctx = RequestContext {
        broker,
        listener: &listener,
        peer: "127.0.0.1:1".parse().unwrap(),
        api_version: version,
        correlation_id: 1,
        principal: &skiff_auth::principal::KafkaPrincipal::anonymous(),
        client_id: None,
    };
    match handlers::dispatch(&ctx, body) {
        Reply::Now(b) => b,
        other => panic!("expected an immediate answer, got {other:?}"),
    }
}

#[tokio::test]
async fn produce_and_fetch_are_counted_exactly_and_served_on_the_admin_port() {
    let dir = tempfile::tempdir().unwrap();
    let (_tx, rx) = watch::channel(false);
    let broker = Broker::open(
        ServerSettings::with_log_dir(dir.path()),
        Arc::new(StorageTopicConfigs::default()),
        rx.clone(),
    )
    .unwrap();
    broker.create_topic("t", 1, Default::default()).unwrap();
    let (b1, b2) = (batch(&["a", "bb", "ccc"]), batch(&["dddd"]));
    let sent = (b1.len() + b2.len()) as f64;
    for b in [b1, b2] {
        let req = skiff_testkit::client::produce_request("t", 0, b, 1);
        let ResponseBody::Produce(r) = call(&broker, 9, RequestBody::Produce(req)) else {
            panic!("not a Produce response")
        };
        assert_eq!(r.responses[0].partition_responses[0].error_code, 0);
    }
    // An unknown topic creates no series.
    let req = skiff_testkit::client::produce_request("nope", 0, batch(&["x"]), 1);
    call(&broker, 9, RequestBody::Produce(req));
    let req = skiff_testkit::client::fetch_request("t", 0, 0, 1 << 20, -1);
    let ResponseBody::Fetch(f) = call(&broker, 12, RequestBody::Fetch(req)) else {
        panic!("not a Fetch response")
    };
    let served = f.responses[0].partitions[0]
        .records
        .as_ref()
        .map_or(0, |r| r.len()) as f64;
    assert_eq!(served, sent, "the fetch returns both batches");

    let state = AdminState::new(rx);
    state.set_broker(&broker);
    state.set_listeners_bound();
    let resp = router(Arc::clone(&state))
        .oneshot(Request::get("/metrics").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(
        resp.headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok()),
        Some(CONTENT_TYPE)
    );
    let bytes = axum::body::to_bytes(resp.into_body(), 1 << 22)
        .await
        .unwrap();
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    assert!(text.ends_with("# EOF\n"), "{text}");
    let s = parse(&text);
    let t = [("topic", "t")];
    assert_eq!(get(&s, "skiff_topic_bytes_in_total", &t), Some(sent));
    assert_eq!(get(&s, "skiff_topic_records_in_total", &t), Some(4.0));
    assert_eq!(get(&s, "skiff_topic_bytes_out_total", &t), Some(sent));
    assert_eq!(
        get(&s, "skiff_topic_bytes_in_total", &[("topic", "nope")]),
        None
    );
    assert_eq!(get(&s, "skiff_partitions", &[]), Some(1.0));
    assert_eq!(get(&s, "skiff_partitions_leader", &[]), Some(1.0));
    assert_eq!(get(&s, "skiff_partitions_under_replicated", &[]), Some(0.0));
    assert_eq!(get(&s, "skiff_partitions_offline", &[]), Some(0.0));
    assert_eq!(get(&s, "skiff_controller_active", &[]), Some(1.0));
    assert!(get(&s, "skiff_response_bytes_total", &[("path", "sendfile")]).is_some());
    docs_cover(&text);
    // Per-partition series are off by default.
    assert!(
        !text.contains("skiff_log_end_offset"),
        "per-partition series must be opt-in"
    );
}

/// Every `skiff_*` name in `text` (the `_total` / `_bucket` / `_count` / `_sum` sample names
/// reduced to their family), sorted.
fn metric_names(text: &str) -> Vec<String> {
    let mut names: Vec<String> = text
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with("skiff_"))
        .map(|w| {
            ["_bucket", "_count", "_sum"]
                .iter()
                .fold(w, |w, s| w.strip_suffix(s).unwrap_or(w))
                .to_string()
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

/// docs/metrics.md names every family a scrape shows, and every metric the Grafana
/// dashboard queries is documented.
fn docs_cover(scrape: &str) {
    let docs_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs");
    let doc = std::fs::read_to_string(docs_dir.join("metrics.md")).unwrap();
    let documented = metric_names(&doc);
    let is_documented = |n: &str| {
        documented
            .iter()
            .any(|d| d == n || d.strip_suffix("_total") == Some(n))
    };
    let families: Vec<String> = scrape
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split(' ').next())
        .map(str::to_string)
        .collect();
    assert!(families.len() > 20, "{families:?}");
    for f in &families {
        assert!(is_documented(f), "{f} is not in docs/metrics.md");
    }
    let dashboard = std::fs::read_to_string(docs_dir.join("grafana-dashboard.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&dashboard).unwrap();
    let used = metric_names(&json.to_string());
    assert!(used.len() > 10, "{used:?}");
    for m in &used {
        assert!(
            documented.contains(m),
            "the dashboard queries {m}, which docs/metrics.md does not list"
        );
    }
}

#[test]
fn isr_change_table() {
    for (before, after, change) in [
        (3, 2, Some(IsrChange::Shrink)),
        (2, 1, Some(IsrChange::Shrink)),
        (1, 3, Some(IsrChange::Expand)),
        (2, 3, Some(IsrChange::Expand)),
        (3, 3, None),
    ] {
        assert_eq!(isr_change(before, after), change, "{before} -> {after}");
    }
    let m = Metrics::new();
    m.isr_changed(3, 2);
    m.isr_changed(2, 1);
    m.isr_changed(1, 2);
    m.isr_changed(2, 2);
    let s = encoded(&m);
    assert_eq!(get(&s, "skiff_isr_shrinks_total", &[]), Some(2.0));
    assert_eq!(get(&s, "skiff_isr_expands_total", &[]), Some(1.0));
}

#[test]
fn a_log_flush_moves_the_flush_histogram() {
    let dir = tempfile::tempdir().unwrap();
    let (_tx, rx) = watch::channel(false);
    let broker = Broker::open(
        ServerSettings::with_log_dir(dir.path()),
        Arc::new(StorageTopicConfigs::default()),
        rx,
    )
    .unwrap();
    broker.create_topic("f", 1, Default::default()).unwrap();
    let count = |b: &Arc<Broker>| {
        let text = render(b).unwrap();
        get(&parse(&text), "skiff_log_flush_duration_seconds_count", &[]).unwrap()
    };
    let before = count(&broker);
    let req = skiff_testkit::client::produce_request("f", 0, batch(&["a"]), 1);
    let ResponseBody::Produce(r) = call(&broker, 9, RequestBody::Produce(req)) else {
        panic!("not a Produce response")
    };
    assert_eq!(r.responses[0].partition_responses[0].error_code, 0);
    let log = broker
        .replicas
        .log_manager()
        .get(&skiff_types::TopicPartition::new("f".to_string(), 0))
        .unwrap();
    log.lock().flush(0).unwrap();
    assert!(count(&broker) > before, "the flush's fdatasyncs are timed");
}
