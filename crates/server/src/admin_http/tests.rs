//! The admin routes end to end in process (router + handlers + JSON), without a socket.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::{Value, json};
use tower::ServiceExt;

use super::*;
use crate::settings::{ServerSettings, StorageTopicConfigs};

async fn get(state: &Arc<AdminState>, uri: &str) -> (StatusCode, Value) {
    let resp = router(Arc::clone(state))
        .oneshot(Request::get(uri).body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = resp.status();
    assert_eq!(
        resp.headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok()),
        Some("application/json"),
        "{uri}"
    );
    let bytes = axum::body::to_bytes(resp.into_body(), 1 << 20)
        .await
        .unwrap();
    (status, serde_json::from_slice(&bytes).unwrap())
}

fn open_broker(dir: &std::path::Path, shutdown: watch::Receiver<bool>) -> Arc<Broker> {
    Broker::open(
        ServerSettings::with_log_dir(dir),
        Arc::new(StorageTopicConfigs::default()),
        shutdown,
    )
    .unwrap()
}

#[tokio::test]
async fn probes_follow_startup_and_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    let (tx, rx) = watch::channel(false);
    let state = AdminState::new(rx.clone());
    assert_eq!(
        get(&state, "/livez").await,
        (StatusCode::OK, json!({"status": "ok"}))
    );
    let (code, body) = get(&state, "/readyz").await;
    assert_eq!(code, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(body["status"], "not_ready");
    assert_eq!(
        body["reasons"],
        json!([model::reason::LOADING, model::reason::LISTENERS])
    );
    let (code, body) = get(&state, "/api/v1/partitions").await;
    assert_eq!(code, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(body["error"], "not_ready");

    let broker = open_broker(dir.path(), rx);
    state.set_broker(&broker);
    let (code, body) = get(&state, "/readyz").await;
    assert_eq!(code, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(body["reasons"], json!([model::reason::LISTENERS]));
    state.set_listeners_bound();
    assert_eq!(
        get(&state, "/readyz").await,
        (StatusCode::OK, json!({"status": "ok"}))
    );
    assert_eq!(
        get(&state, "/v1/status/ready").await,
        (StatusCode::OK, json!({"status": "ok"})),
        "Redpanda's alias"
    );

    tx.send(true).unwrap();
    let (code, body) = get(&state, "/readyz").await;
    assert_eq!(code, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(body["reasons"], json!([model::reason::SHUTTING_DOWN]));
    assert_eq!(get(&state, "/livez").await.0, StatusCode::OK);
}

#[tokio::test]
async fn partitions_list_and_detail() {
    let dir = tempfile::tempdir().unwrap();
    let (_tx, rx) = watch::channel(false);
    let state = AdminState::new(rx.clone());
    let broker = open_broker(dir.path(), rx);
    state.set_broker(&broker);
    state.set_listeners_bound();
    broker.create_topic("b", 2, Default::default()).unwrap();
    broker.create_topic("a", 1, Default::default()).unwrap();
    let tp = TopicPartition::new("b", 1);
    let mut builder = skiff_record::BatchBuilder::new(skiff_record::BatchOptions::default());
    builder.append(1_700_000_000_000, Some(b"k"), Some(b"v1"), &[]);
    builder.append(1_700_000_000_001, Some(b"k"), Some(b"v2"), &[]);
    let mut batch = builder.build().unwrap();
    let info = broker.image().topic("b").cloned().unwrap();
    broker
        .replicas
        .append_records(&info, tp.partition, &mut batch, broker.now_ms())
        .unwrap();

    let (code, body) = get(&state, "/api/v1/partitions").await;
    assert_eq!(code, StatusCode::OK);
    let doc: PartitionList = serde_json::from_value(body).unwrap();
    let names: Vec<(String, i32)> = doc
        .partitions
        .iter()
        .map(|p| (p.topic.clone(), p.partition))
        .collect();
    assert_eq!(
        names,
        vec![("a".into(), 0), ("b".into(), 0), ("b".into(), 1)],
        "sorted by topic, then partition"
    );
    let b1 = &doc.partitions[2];
    assert_eq!(
        (b1.log_start_offset, b1.log_end_offset, b1.high_watermark),
        (0, 2, 2)
    );
    assert_eq!(b1.segment_count, 1);
    assert_eq!(b1.size_bytes, batch.len() as u64);
    assert_eq!(doc.partitions[0].log_end_offset, 0);

    let (code, body) = get(&state, "/api/v1/partitions/b/1").await;
    assert_eq!(code, StatusCode::OK);
    assert_eq!(body["topic"], "b");
    assert_eq!(body["log_end_offset"], 2);
    assert_eq!(body["sections"]["producers"]["active"], 0);
    let detail: PartitionDetail = serde_json::from_value(body).unwrap();
    assert_eq!(&detail.summary, b1);

    let (code, body) = get(&state, "/api/v1/partitions/b/7").await;
    assert_eq!(code, StatusCode::NOT_FOUND);
    assert_eq!(body["error"], "not_found");
    assert!(body["message"].as_str().unwrap().contains("b-7"), "{body}");
    assert_eq!(
        get(&state, "/api/v1/partitions/nope/0").await.0,
        StatusCode::NOT_FOUND
    );
    let (code, body) = get(&state, "/api/v1/partitions/b/x").await;
    assert_eq!(code, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"], "bad_request");
    let (code, body) = get(&state, "/api/v1/nothing").await;
    assert_eq!(code, StatusCode::NOT_FOUND);
    assert_eq!(body["error"], "not_found");
}

#[tokio::test]
async fn bound_server_stops_on_shutdown() {
    let (_tx, rx) = watch::channel(false);
    let state = AdminState::new(rx);
    let admin = AdminHttp::bind("127.0.0.1", 0, state).await.unwrap();
    let addr = admin.local_addr();
    assert!(addr.port() > 0);
    assert_eq!(admin.ready_line(), format!("skiff ready admin bind={addr}"));
    // An idle keep-alive connection must not hold shutdown open.
    let idle = tokio::net::TcpStream::connect(addr).await.unwrap();
    tokio::time::timeout(
        Duration::from_millis(ADMIN_SHUTDOWN_MS_MAX + 2_000),
        admin.shutdown(),
    )
    .await
    .unwrap();
    drop(idle);
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "port closed after shutdown"
    );
}

/// The `delivery` section: present on a delay-enabled topic with its pending batch and next
/// due time, absent on a plain topic.
#[tokio::test]
async fn delivery_section_shows_pending_delayed_batches() {
    let dir = tempfile::tempdir().unwrap();
    let (_tx, rx) = watch::channel(false);
    let state = AdminState::new(rx.clone());
    let broker = open_broker(dir.path(), rx);
    state.set_broker(&broker);
    state.set_listeners_bound();
    let configs = [("delivery.delay.enable".to_string(), "true".to_string())]
        .into_iter()
        .collect();
    broker.create_topic("delayed", 1, configs).unwrap();
    broker.create_topic("plain", 1, Default::default()).unwrap();
    let tp = TopicPartition::new("delayed", 0);
    let now = broker.now_ms();
    let mut builder = skiff_record::BatchBuilder::new(skiff_record::BatchOptions::default());
    let header = skiff_record::Header {
        key: b"__delay_ms",
        value: Some(b"600000"),
    };
    builder.append(now, Some(b"k"), Some(b"v"), &[header]);
    let batch = builder.build().unwrap();
    let info = broker.image().topic("delayed").cloned().unwrap();
    broker
        .replicas
        .append_client(
            &info,
            tp.partition,
            &bytes::Bytes::from(batch),
            skiff_replication::Acks::All,
            now,
        )
        .unwrap();

    let (code, body) = get(&state, "/api/v1/partitions/delayed/0").await;
    assert_eq!(code, StatusCode::OK);
    let d = &body["sections"]["delivery"];
    assert_eq!(d["enabled"], true, "{body}");
    assert_eq!(d["pending_batches"], 1, "{body}");
    assert_eq!(d["delivery_stable_offset"], 0, "{body}");
    assert_eq!(d["high_watermark"], 1, "{body}");
    let due = d["next_due_ms"].as_i64().unwrap();
    assert!(
        (now + 600_000..now + 601_000).contains(&due),
        "{due} vs {now}"
    );

    let (_, body) = get(&state, "/api/v1/partitions/plain/0").await;
    assert!(body["sections"].get("delivery").is_none(), "{body}");
}

#[tokio::test]
async fn stats_reports_the_counters() {
    let dir = tempfile::tempdir().unwrap();
    let (_tx, rx) = watch::channel(false);
    let state = AdminState::new(rx.clone());
    assert_eq!(
        get(&state, "/api/v1/stats").await.0,
        StatusCode::SERVICE_UNAVAILABLE
    );
    let broker = open_broker(dir.path(), rx);
    state.set_broker(&broker);
    broker.stats.fetch_session_created();
    broker.stats.incremental_fetch();
    broker.stats.sent_by_sendfile(4096);
    broker.stats.copied(10);
    assert_eq!(
        get(&state, "/api/v1/stats").await,
        (
            StatusCode::OK,
            json!({
                "fetch_sessions": {"created": 1, "incremental_fetches": 1, "cached": 0},
                "sendfile": {"regions": 1, "bytes": 4096},
                "copied_bytes": 10,
                "replication": {"leader_partitions": 0, "under_replicated_partitions": 0,
                                "under_min_isr_partitions": 0},
            })
        )
    );
}
