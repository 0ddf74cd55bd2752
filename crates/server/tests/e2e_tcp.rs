//! End-to-end tests over real TCP against an in-process server: the connection layer's
//! bad-input rules, ApiVersions negotiation, pipelining, and the produce/fetch path.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use common::{Client, DEADLINE, correlation_of, decode, start, start_with};
use skiff_protocol::*;
use skiff_record::{BatchBuilder, BatchOptions, Compression, batches, records};
use uuid::Uuid;

fn batch(values: &[&str]) -> Bytes {
    batch_with(values, Compression::None)
}

fn batch_with(values: &[&str], compression: Compression) -> Bytes {
    let mut b = BatchBuilder::new(BatchOptions {
        compression,
        ..BatchOptions::default()
    });
    let now = skiff_storage::log_manager::now_ms();
    for v in values {
        b.append(now, Some(b"key"), Some(v.as_bytes()), &[]);
    }
    Bytes::from(b.build().unwrap())
}

async fn create_topic(c: &mut Client, name: &str, partitions: i32) -> CreatableTopicResult {
    let req = CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: name.into(),
            num_partitions: partitions,
            replication_factor: -1,
            ..CreatableTopic::default()
        }],
        timeout_ms: 10_000,
        ..CreateTopicsRequest::default()
    };
    match c.call(7, req).await {
        ResponseBody::CreateTopics(r) => r.topics.into_iter().next().unwrap(),
        other => panic!("unexpected {other:?}"),
    }
}

fn produce_request(topic: &str, partition: i32, records: Bytes, acks: i16) -> ProduceRequest {
    ProduceRequest {
        acks,
        timeout_ms: 10_000,
        topic_data: vec![TopicProduceData {
            name: topic.into(),
            partition_data: vec![PartitionProduceData {
                index: partition,
                records: Some(Records::Bytes(records)),
            }],
        }],
        ..ProduceRequest::default()
    }
}

async fn produce(
    c: &mut Client,
    version: i16,
    topic: &str,
    records: Bytes,
) -> PartitionProduceResponse {
    match c
        .call(version, produce_request(topic, 0, records, -1))
        .await
    {
        ResponseBody::Produce(r) => r.responses[0].partition_responses[0].clone(),
        other => panic!("unexpected {other:?}"),
    }
}

fn fetch_request(topic: &str, offset: i64, max_wait_ms: i32, min_bytes: i32) -> FetchRequest {
    FetchRequest {
        max_wait_ms,
        min_bytes,
        max_bytes: 1 << 20,
        session_epoch: -1,
        topics: vec![FetchTopic {
            topic: topic.into(),
            partitions: vec![FetchPartition {
                partition: 0,
                fetch_offset: offset,
                partition_max_bytes: 1 << 20,
                ..FetchPartition::default()
            }],
            ..FetchTopic::default()
        }],
        ..FetchRequest::default()
    }
}

fn fetched(resp: &ResponseBody) -> &PartitionData {
    match resp {
        ResponseBody::Fetch(r) => &r.responses[0].partitions[0],
        other => panic!("unexpected {other:?}"),
    }
}

/// (offset, value) of every record in a fetched records field.
fn values(p: &PartitionData) -> Vec<(i64, String)> {
    let bytes = p
        .records
        .as_ref()
        .and_then(|r| r.as_bytes())
        .cloned()
        .unwrap_or_default();
    let mut out = Vec::new();
    for b in batches(&bytes) {
        let (_, view) = b.unwrap();
        let data = view.records_data(1 << 20).unwrap();
        for r in records(&data, view.records_count()) {
            let r = r.unwrap();
            out.push((
                view.base_offset() + i64::from(r.offset_delta),
                String::from_utf8(r.value.unwrap().to_vec()).unwrap(),
            ));
        }
    }
    out
}

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
        assert_eq!(
            ranges,
            vec![
                (0, 0, 11),
                (1, 4, 17),
                (2, 1, 10),
                (3, 0, 12),
                (18, 0, 4),
                (19, 2, 7),
                (20, 1, 6),
                (22, 0, 5)
            ]
        );
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
    assert_eq!(r.api_keys.len(), 8);
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
async fn e2e_produce_fetch_round_trip() {
    let t = start().await;
    let mut c = Client::connect(t.addr).await;
    let created = create_topic(&mut c, "orders", 1).await;
    assert_eq!(created.error_code, 0, "{:?}", created.error_message);
    assert!(!created.topic_id.is_nil());
    let p = produce(&mut c, 9, "orders", batch(&["a", "b", "c"])).await;
    assert_eq!((p.error_code, p.base_offset), (0, 0));
    let p = produce(
        &mut c,
        11,
        "orders",
        batch_with(&["d", "e"], Compression::Gzip),
    )
    .await;
    assert_eq!((p.error_code, p.base_offset, p.log_start_offset), (0, 3, 0));
    let p = produce(&mut c, 3, "orders", batch(&["f"])).await;
    assert_eq!((p.error_code, p.base_offset), (0, 5));

    // Fetch from offset 4: inside the gzip batch, which comes back whole.
    for version in [4i16, 11, 12] {
        let resp = c.call(version, fetch_request("orders", 4, 0, 0)).await;
        let part = fetched(&resp);
        assert_eq!(part.error_code, 0);
        assert_eq!(part.high_watermark, 6);
        assert_eq!(part.last_stable_offset, 6);
        let vals = values(part);
        assert_eq!(
            vals.first().map(|v| v.0),
            Some(3),
            "the whole batch holding offset 4"
        );
        assert_eq!(
            vals.iter().map(|v| v.1.as_str()).collect::<Vec<_>>(),
            vec!["d", "e", "f"]
        );
    }
    // v13+: by topic id.
    let mut req = fetch_request("", 0, 0, 0);
    req.topics[0].topic_id = created.topic_id;
    let resp = c.call(17, req).await;
    let ResponseBody::Fetch(r) = &resp else {
        panic!()
    };
    assert_eq!(r.responses[0].topic_id, created.topic_id);
    assert_eq!(values(fetched(&resp)).len(), 6);
    let mut req = fetch_request("", 0, 0, 0);
    req.topics[0].topic_id = Uuid::new_v4();
    assert_eq!(fetched(&c.call(13, req).await).error_code, 100);
    // Out of range.
    assert_eq!(
        fetched(&c.call(12, fetch_request("orders", 7, 0, 0)).await).error_code,
        1
    );

    // ListOffsets: latest = HW, earliest = 0.
    for (ts, want) in [(-1i64, 6i64), (-2, 0)] {
        let req = ListOffsetsRequest {
            replica_id: -1,
            topics: vec![ListOffsetsTopic {
                name: "orders".into(),
                partitions: vec![ListOffsetsPartition {
                    partition_index: 0,
                    timestamp: ts,
                    ..ListOffsetsPartition::default()
                }],
            }],
            ..ListOffsetsRequest::default()
        };
        let ResponseBody::ListOffsets(r) = c.call(7, req).await else {
            panic!()
        };
        let p = &r.topics[0].partitions[0];
        assert_eq!((p.error_code, p.offset), (0, want));
    }
    // Unknown topic on produce: no auto-create.
    let p = produce(&mut c, 9, "nope", batch(&["x"])).await;
    assert_eq!(p.error_code, 3);
    // zstd before v7 is refused; accepted from v7.
    let p = produce(&mut c, 6, "orders", batch_with(&["z"], Compression::Zstd)).await;
    assert_eq!(p.error_code, 76);
    let p = produce(&mut c, 7, "orders", batch_with(&["z"], Compression::Zstd)).await;
    assert_eq!((p.error_code, p.base_offset), (0, 6));
    // Bad acks.
    let ResponseBody::Produce(r) = c
        .call(9, produce_request("orders", 0, batch(&["x"]), 2))
        .await
    else {
        panic!()
    };
    assert_eq!(r.responses[0].partition_responses[0].error_code, 21);
    // Corrupt CRC: CORRUPT_MESSAGE, nothing appended, connection kept.
    let mut bad = batch(&["x"]).to_vec();
    let last = bad.len() - 1;
    bad[last] ^= 0xff;
    let p = produce(&mut c, 9, "orders", Bytes::from(bad)).await;
    assert_eq!(p.error_code, 2);
    let resp = c.call(12, fetch_request("orders", 0, 0, 0)).await;
    assert_eq!(fetched(&resp).high_watermark, 7);
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
async fn e2e_fetch_long_poll_is_woken_by_produce() {
    let t = start().await;
    let mut producer = Client::connect(t.addr).await;
    create_topic(&mut producer, "wake", 1).await;
    let mut consumer = Client::connect(t.addr).await;
    // Wait up to 60 s for 1 byte: only an append can end this early.
    let (frame, cid) = consumer.frame(12, fetch_request("wake", 0, 60_000, 1));
    let started = Instant::now();
    consumer.send_raw(&frame).await;
    // Make sure the fetch is parked before producing: a pipelined ApiVersions on the same
    // connection would queue behind it, so use the waiter count instead.
    let broker = t.server.broker().clone();
    let deadline = Instant::now() + DEADLINE;
    while broker.waiters.partitions_waited_on() == 0 {
        assert!(Instant::now() < deadline, "fetch never parked");
        tokio::task::yield_now().await;
    }
    let p = produce(&mut producer, 9, "wake", batch(&["hello"])).await;
    assert_eq!(p.error_code, 0);
    let resp = decode(ApiKey::Fetch, 12, cid, consumer.read_frame().await.unwrap());
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "woken by the append, not the deadline"
    );
    assert_eq!(values(fetched(&resp)), vec![(0, "hello".to_string())]);
    t.server.shutdown().await.unwrap();
}

#[tokio::test]
async fn e2e_metadata_auto_creates_and_reports_listener() {
    let t = start_with(|s| s.default_partitions = 3).await;
    let mut c = Client::connect(t.addr).await;
    let req = MetadataRequest {
        topics: Some(vec![
            MetadataRequestTopic {
                name: Some("auto".into()),
                ..MetadataRequestTopic::default()
            },
            MetadataRequestTopic {
                name: Some("bad name!".into()),
                ..MetadataRequestTopic::default()
            },
        ]),
        allow_auto_topic_creation: true,
        ..MetadataRequest::default()
    };
    let ResponseBody::Metadata(r) = c.call(12, req).await else {
        panic!()
    };
    assert_eq!(r.brokers.len(), 1);
    assert_eq!(r.brokers[0].host, "localhost");
    assert_eq!(r.brokers[0].port, i32::from(t.addr.port()));
    assert_eq!(r.controller_id, r.brokers[0].node_id);
    assert!(r.cluster_id.is_some());
    assert_eq!(r.topics[0].error_code, 0);
    assert_eq!(r.topics[0].partitions.len(), 3);
    assert!(!r.topics[0].topic_id.is_nil());
    assert_eq!(r.topics[0].partitions[2].leader_id, r.brokers[0].node_id);
    assert_eq!(r.topics[1].error_code, 17);
    // Without the flag (v4+): UNKNOWN_TOPIC_OR_PARTITION.
    let req = MetadataRequest {
        topics: Some(vec![MetadataRequestTopic {
            name: Some("other".into()),
            ..MetadataRequestTopic::default()
        }]),
        allow_auto_topic_creation: false,
        ..MetadataRequest::default()
    };
    let ResponseBody::Metadata(r) = c.call(9, req).await else {
        panic!()
    };
    assert_eq!(r.topics[0].error_code, 3);
    // v0 with an empty list lists everything.
    let ResponseBody::Metadata(r) = c
        .call(
            0,
            MetadataRequest {
                topics: Some(vec![]),
                ..MetadataRequest::default()
            },
        )
        .await
    else {
        panic!()
    };
    assert_eq!(
        r.topics
            .iter()
            .map(|t| t.name.clone().unwrap())
            .collect::<Vec<_>>(),
        vec!["auto".to_string()]
    );
    t.server.shutdown().await.unwrap();
}

#[tokio::test]
async fn e2e_create_delete_topics_and_producer_ids() {
    let t = start().await;
    let mut c = Client::connect(t.addr).await;
    let req = CreateTopicsRequest {
        topics: vec![
            CreatableTopic {
                name: "a".into(),
                num_partitions: 2,
                replication_factor: 1,
                ..CreatableTopic::default()
            },
            CreatableTopic {
                name: "b".into(),
                num_partitions: 1,
                replication_factor: 3,
                ..CreatableTopic::default()
            },
            CreatableTopic {
                name: "c".into(),
                num_partitions: 1,
                replication_factor: -1,
                configs: vec![CreatableTopicConfig {
                    name: "segment.bytes".into(),
                    value: Some("x".into()),
                }],
                ..CreatableTopic::default()
            },
            CreatableTopic {
                name: "d".into(),
                num_partitions: 0,
                replication_factor: -1,
                ..CreatableTopic::default()
            },
        ],
        timeout_ms: 1000,
        validate_only: false,
    };
    let ResponseBody::CreateTopics(r) = c.call(5, req).await else {
        panic!()
    };
    let codes: Vec<_> = r
        .topics
        .iter()
        .map(|t| (t.name.as_str(), t.error_code))
        .collect();
    assert_eq!(codes, vec![("a", 0), ("b", 38), ("c", 40), ("d", 37)]);
    assert_eq!(r.topics[0].num_partitions, 2);
    assert!(
        r.topics[2]
            .error_message
            .as_deref()
            .unwrap()
            .contains("segment.bytes")
    );
    // Again: already exists.
    assert_eq!(create_topic(&mut c, "a", 1).await.error_code, 36);
    // validate_only creates nothing.
    let req = CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: "v".into(),
            num_partitions: 1,
            replication_factor: 1,
            ..CreatableTopic::default()
        }],
        timeout_ms: 1000,
        validate_only: true,
    };
    let ResponseBody::CreateTopics(r) = c.call(7, req).await else {
        panic!()
    };
    assert_eq!(r.topics[0].error_code, 0);
    assert!(t.server.broker().image().topic("v").is_none());
    // Delete by name (v4) and unknown.
    let req = DeleteTopicsRequest {
        topic_names: vec!["a".into(), "zz".into()],
        timeout_ms: 1000,
        ..DeleteTopicsRequest::default()
    };
    let ResponseBody::DeleteTopics(r) = c.call(4, req).await else {
        panic!()
    };
    let codes: Vec<_> = r.responses.iter().map(|t| t.error_code).collect();
    assert_eq!(codes, vec![0, 3]);
    assert!(t.server.broker().image().topic("a").is_none());
    assert!(
        t.server
            .broker()
            .logs
            .get(&skiff_types::TopicPartition::new("a", 0))
            .is_none()
    );
    // InitProducerId: fresh ids, epoch 0.
    let mut ids = Vec::new();
    for v in [0i16, 5] {
        let ResponseBody::InitProducerId(r) = c
            .call(
                v,
                InitProducerIdRequest {
                    transactional_id: None,
                    transaction_timeout_ms: 60_000,
                    ..InitProducerIdRequest::default()
                },
            )
            .await
        else {
            panic!()
        };
        assert_eq!((r.error_code, r.producer_epoch), (0, 0));
        ids.push(r.producer_id);
    }
    assert_ne!(ids[0], ids[1]);
    t.server.shutdown().await.unwrap();
}

#[tokio::test]
async fn e2e_incremental_fetch_session() {
    let t = start().await;
    let mut c = Client::connect(t.addr).await;
    create_topic(&mut c, "s1", 1).await;
    create_topic(&mut c, "s2", 1).await;
    produce(&mut c, 9, "s1", batch(&["x"])).await;
    let mut req = fetch_request("s1", 0, 0, 0);
    req.topics.push(FetchTopic {
        topic: "s2".into(),
        partitions: vec![FetchPartition {
            partition: 0,
            fetch_offset: 0,
            partition_max_bytes: 1 << 20,
            ..FetchPartition::default()
        }],
        ..FetchTopic::default()
    });
    req.session_id = 0;
    req.session_epoch = 0;
    let ResponseBody::Fetch(r) = c.call(12, req).await else {
        panic!()
    };
    assert_ne!(r.session_id, 0);
    assert_eq!(
        r.responses.len(),
        2,
        "a full response lists every partition"
    );
    let session = r.session_id;
    // Incremental, epoch 1: s1 moves to offset 1; nothing changed -> empty response.
    let mut inc = fetch_request("s1", 1, 0, 0);
    inc.session_id = session;
    inc.session_epoch = 1;
    let ResponseBody::Fetch(r) = c.call(12, inc).await else {
        panic!()
    };
    assert_eq!((r.error_code, r.session_id), (0, session));
    assert!(r.responses.is_empty(), "{r:?}");
    // New data on s2 shows up, s1 stays silent.
    produce(&mut c, 9, "s2", batch(&["y"])).await;
    let mut inc = FetchRequest {
        session_id: session,
        session_epoch: 2,
        max_bytes: 1 << 20,
        ..FetchRequest::default()
    };
    inc.topics.clear();
    let ResponseBody::Fetch(r) = c.call(12, inc).await else {
        panic!()
    };
    assert_eq!(r.responses.len(), 1);
    assert_eq!(r.responses[0].topic, "s2");
    // Wrong epoch and unknown session.
    let bad = FetchRequest {
        session_id: session,
        session_epoch: 9,
        ..FetchRequest::default()
    };
    let ResponseBody::Fetch(r) = c.call(12, bad).await else {
        panic!()
    };
    assert_eq!(r.error_code, 71);
    let bad = FetchRequest {
        session_id: session + 1000,
        session_epoch: 1,
        ..FetchRequest::default()
    };
    let ResponseBody::Fetch(r) = c.call(12, bad).await else {
        panic!()
    };
    assert_eq!(r.error_code, 70);
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
    while broker.waiters.partitions_waited_on() == 0 {
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
