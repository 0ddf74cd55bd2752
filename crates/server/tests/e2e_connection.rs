//! End-to-end tests over real TCP against an in-process server: the connection layer
//! (bad-input rules, ApiVersions negotiation, pipelining, limits, deadlines, shutdown).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use skiff_protocol::*;

#[tokio::test]
async fn e2e_api_versions_v0_v3_v4_and_too_new_falls_back_to_v0() {
    let t = start().await;
    let mut c = Client::connect(t.addr).await;
    for v in [0, 3, 4] {
        let req = ApiVersionsRequest {
            client_software_name: if v >= 3 {
                "skiff-test".into()
            } else {
                String::new()
            },
            client_software_version: if v >= 3 { "1.0".into() } else { String::new() },
        };
        let ResponseBody::ApiVersions(r) = c.call(v, req).await else {
            panic!()
        };
        assert_eq!(r.error_code, 0);
        let ranges: Vec<_> = r
            .api_keys
            .iter()
            .map(|k| (k.api_key, k.min_version, k.max_version))
            .collect();
        // Exactly the served table (pinned to the issues' version ranges by the unit test
        // `handlers::tests::advertised_table_is_exactly_the_brief`).
        let served: Vec<_> = skiff_server::handlers::APIS
            .iter()
            .map(|k| {
                let (min, max) = skiff_server::handlers::advertised_versions(*k).unwrap();
                (*k as i16, min, max)
            })
            .collect();
        assert_eq!(ranges, served);
        assert!(ranges.contains(&(0, 0, 11)) && ranges.contains(&(32, 1, 4)));
    }
    // v5 does not exist for us: a v0-format answer with UNSUPPORTED_VERSION and our ranges.
    let mut frame = Vec::new();
    let body = [0u8; 0];
    let header_len = 2 + 2 + 4 + 2;
    frame.extend_from_slice(&((header_len + body.len()) as i32).to_be_bytes());
    frame.extend_from_slice(&18i16.to_be_bytes());
    frame.extend_from_slice(&5i16.to_be_bytes());
    frame.extend_from_slice(&777i32.to_be_bytes());
    frame.extend_from_slice(&(-1i16).to_be_bytes());
    c.send_raw(&frame).await;
    let resp = c.read_frame().await.unwrap();
    let body = decode(ApiKey::ApiVersions, 0, 777, resp);
    let ResponseBody::ApiVersions(r) = body else {
        panic!()
    };
    assert_eq!(r.error_code, 35);
    assert_eq!(r.api_keys.len(), skiff_server::handlers::APIS.len());
    // The connection stays open.
    let ResponseBody::ApiVersions(r) = c.call(0, ApiVersionsRequest::default()).await else {
        panic!()
    };
    assert_eq!(r.error_code, 0);
    t.server.shutdown().await.unwrap();
}

#[tokio::test]
async fn e2e_bad_frames_close_the_connection() {
    let t = start_with(|s| s.socket_request_bytes_max = 1024).await;
    // B1: claimed size over socket.request.max.bytes.
    let mut c = Client::connect(t.addr).await;
    c.send_raw(&2000i32.to_be_bytes()).await;
    assert!(c.is_closed().await);
    // B3: an HTTP request reads as a huge size.
    let mut c = Client::connect(t.addr).await;
    c.send_raw(b"GET / HTTP/1.1\r\n\r\n").await;
    assert!(c.is_closed().await);
    // B2: below the minimum header size, and negative.
    let mut c = Client::connect(t.addr).await;
    c.send_raw(&[0, 0, 0, 4, 0, 18, 0, 0]).await;
    assert!(c.is_closed().await);
    let mut c = Client::connect(t.addr).await;
    c.send_raw(&(-5i32).to_be_bytes()).await;
    assert!(c.is_closed().await);
    // B5: unknown api key.
    let mut c = Client::connect(t.addr).await;
    let mut f = Vec::new();
    f.extend_from_slice(&10i32.to_be_bytes());
    f.extend_from_slice(&32767i16.to_be_bytes());
    f.extend_from_slice(&0i16.to_be_bytes());
    f.extend_from_slice(&1i32.to_be_bytes());
    f.extend_from_slice(&(-1i16).to_be_bytes());
    c.send_raw(&f).await;
    assert!(c.is_closed().await);
    // B6: a known API at a version we do not serve (Fetch v3), a generated-but-unserved API
    // (JoinGroup), and Produce v2 (advertised for librdkafka, refused like Kafka 4).
    for (key, version) in [(1i16, 3i16), (11, 0), (0, 2)] {
        let mut c = Client::connect(t.addr).await;
        let mut f = Vec::new();
        f.extend_from_slice(&10i32.to_be_bytes());
        f.extend_from_slice(&key.to_be_bytes());
        f.extend_from_slice(&version.to_be_bytes());
        f.extend_from_slice(&1i32.to_be_bytes());
        f.extend_from_slice(&(-1i16).to_be_bytes());
        c.send_raw(&f).await;
        assert!(c.is_closed().await, "api {key} v{version} must close");
    }
    // B8: malformed body (Metadata v1 claiming 1000 topics with no bytes behind).
    let mut c = Client::connect(t.addr).await;
    let mut f = Vec::new();
    f.extend_from_slice(&14i32.to_be_bytes());
    f.extend_from_slice(&3i16.to_be_bytes());
    f.extend_from_slice(&1i16.to_be_bytes());
    f.extend_from_slice(&1i32.to_be_bytes());
    f.extend_from_slice(&(-1i16).to_be_bytes());
    f.extend_from_slice(&1000i32.to_be_bytes());
    c.send_raw(&f).await;
    assert!(c.is_closed().await);
    // Other connections are unaffected.
    let mut c = Client::connect(t.addr).await;
    let ResponseBody::ApiVersions(r) = c.call(3, ApiVersionsRequest::default()).await else {
        panic!()
    };
    assert_eq!(r.error_code, 0);
    t.server.shutdown().await.unwrap();
}

#[tokio::test]
async fn e2e_pipelined_requests_are_answered_in_order() {
    let t = start().await;
    let mut c = Client::connect(t.addr).await;
    create_topic(&mut c, "pipe", 1).await;
    create_topic(&mut c, "idle", 1).await;
    // Mix instant answers with a long-polling fetch that completes only at its deadline, and
    // produces whose effects must follow request order.
    let mut all = Vec::new();
    let mut expected = Vec::new();
    for i in 0..60 {
        let (frame, cid) = match i % 4 {
            0 => c.frame(
                12,
                MetadataRequest {
                    topics: None,
                    ..MetadataRequest::default()
                },
            ),
            1 => c.frame(3, ApiVersionsRequest::default()),
            2 => c.frame(
                9,
                produce_request("pipe", 0, batch(&[&format!("v{i}")]), -1),
            ),
            _ => c.frame(12, fetch_request("idle", 0, 50, 1)),
        };
        all.extend_from_slice(&frame);
        expected.push(cid);
    }
    c.send_raw(&all).await;
    let mut got = Vec::new();
    for _ in 0..expected.len() {
        got.push(correlation_of(&c.read_frame().await.unwrap()));
    }
    assert_eq!(got, expected);
    // Produces were applied in request order: offsets 0..15 hold v2, v6, v10, ...
    let resp = c.call(12, fetch_request("pipe", 0, 0, 0)).await;
    let vals = values(fetched(&resp));
    let want: Vec<(i64, String)> = (0..15).map(|k| (k, format!("v{}", 4 * k + 2))).collect();
    assert_eq!(vals, want);
    t.server.shutdown().await.unwrap();
}

#[tokio::test]
async fn e2e_failed_acks0_produce_closes_connection() {
    let t = start().await;
    let mut c = Client::connect(t.addr).await;
    create_topic(&mut c, "fire", 1).await;
    // A good acks=0 produce: no response, connection stays.
    let (f, _) = c.frame(9, produce_request("fire", 0, batch(&["ok"]), 0));
    c.send_raw(&f).await;
    let resp = c.call(12, fetch_request("fire", 0, 0, 0)).await;
    assert_eq!(values(fetched(&resp)), vec![(0, "ok".to_string())]);
    // A failing one (unknown partition): closed.
    let (f, _) = c.frame(9, produce_request("fire", 5, batch(&["bad"]), 0));
    c.send_raw(&f).await;
    assert!(c.is_closed().await);
    t.server.shutdown().await.unwrap();
}

#[tokio::test]
async fn e2e_shutdown_answers_a_parked_fetch_and_writes_the_clean_marker() {
    let t = start().await;
    let mut c = Client::connect(t.addr).await;
    create_topic(&mut c, "bye", 1).await;
    let (frame, cid) = c.frame(12, fetch_request("bye", 0, 60_000, 1));
    c.send_raw(&frame).await;
    let broker = t.server.broker().clone();
    let deadline = Instant::now() + DEADLINE;
    while broker.replicas.waiters.partitions_waited_on() == 0 {
        assert!(Instant::now() < deadline, "fetch never parked");
        tokio::task::yield_now().await;
    }
    drop(broker);
    let started = Instant::now();
    let dir = t.dir.path().join("data");
    let shutdown = tokio::spawn(t.server.shutdown());
    let resp = decode(ApiKey::Fetch, 12, cid, c.read_frame().await.unwrap());
    assert_eq!(fetched(&resp).error_code, 0);
    tokio::time::timeout(DEADLINE, shutdown)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(30));
    assert!(dir.join(".kafka_cleanshutdown").exists());
}

#[tokio::test]
async fn e2e_connection_limits_and_idle_timeout() {
    let t = start_with(|s| {
        s.connections_per_ip_max = 2;
        s.connection_idle_ms_max = 300;
    })
    .await;
    let mut a = Client::connect(t.addr).await;
    let mut b = Client::connect(t.addr).await;
    // Both are served.
    for c in [&mut a, &mut b] {
        let ResponseBody::ApiVersions(r) = c.call(3, ApiVersionsRequest::default()).await else {
            panic!()
        };
        assert_eq!(r.error_code, 0);
    }
    // A third from the same address is accepted and closed (B19).
    let mut third = Client::connect(t.addr).await;
    assert!(third.is_closed().await);
    // Idle connections are closed after connections.max.idle.ms (B4).
    let started = Instant::now();
    assert!(a.is_closed().await);
    assert!(b.is_closed().await);
    assert!(started.elapsed() < DEADLINE);
    // Their slots are given back (as their tasks finish, just after the close).
    let deadline = Instant::now() + DEADLINE;
    loop {
        let mut again = Client::connect(t.addr).await;
        let (frame, _) = again.frame(3, ApiVersionsRequest::default());
        let sent = tokio::io::AsyncWriteExt::write_all(&mut again.stream, &frame)
            .await
            .is_ok();
        if sent && again.read_frame().await.is_some() {
            break;
        }
        assert!(Instant::now() < deadline, "per-IP slots never came back");
        tokio::task::yield_now().await;
    }
    t.server.shutdown().await.unwrap();
}
