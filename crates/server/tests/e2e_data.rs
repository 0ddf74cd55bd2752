//! End-to-end tests over real TCP against an in-process server: the produce/consume path
//! (produce, fetch, long-poll, sessions, ListOffsets, Metadata, CreateTopics/DeleteTopics,
//! InitProducerId).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod admin_support;
mod common;

use std::time::{Duration, Instant};

use admin_support::start_live;
use bytes::Bytes;
use common::*;
use skiff_protocol::*;
use skiff_record::Compression;
use uuid::Uuid;

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
    while broker.replicas.waiters.partitions_waited_on() == 0 {
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
            .replicas
            .log_manager()
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
async fn e2e_timestamps_list_offsets_and_topic_configs() {
    let t = start().await;
    let mut c = Client::connect(t.addr).await;
    let now = skiff_types::Clock::system().now_ms();
    assert_eq!(create_topic(&mut c, "ts", 1).await.error_code, 0);
    for (i, age) in [3000i64, 2000, 1000].iter().enumerate() {
        let p = produce(&mut c, 9, "ts", batch_at(&[(&format!("t{i}"), now - age)])).await;
        assert_eq!(
            (p.error_code, p.log_append_time_ms),
            (0, -1),
            "CreateTime topics answer -1"
        );
    }
    assert_eq!(
        list_offset(&mut c, 7, "ts", now - 2500).await,
        (0, 1, now - 2000)
    );
    assert_eq!(list_offset(&mut c, 7, "ts", -3).await, (0, 2, now - 1000));
    assert_eq!(
        list_offset(&mut c, 7, "ts", now + 10_000).await,
        (0, -1, -1)
    );
    assert_eq!(list_offset(&mut c, 6, "ts", -3).await.0, 35, "-3 needs v7");
    assert_eq!(list_offset(&mut c, 1, "ts", -1).await, (0, 3, -1));
    // A record two hours in the future: the whole batch is refused, with per-record errors.
    let bad = batch_at(&[("ok", now), ("future", now + 7_200_000)]);
    let ResponseBody::Produce(r) = c.call(9, produce_request("ts", 0, bad, -1)).await else {
        panic!()
    };
    let p = &r.responses[0].partition_responses[0];
    assert_eq!(p.error_code, 32);
    assert_eq!(
        p.record_errors
            .iter()
            .map(|e| e.batch_index)
            .collect::<Vec<_>>(),
        vec![1]
    );
    assert!(p.error_message.is_some());
    assert_eq!(
        list_offset(&mut c, 7, "ts", -1).await.1,
        3,
        "nothing appended"
    );

    // LogAppendTime: the broker's clock wins and is reported.
    let created = create_topic_with(
        &mut c,
        "lat",
        &[("message.timestamp.type", "LogAppendTime")],
    )
    .await;
    assert_eq!(created.error_code, 0, "{:?}", created.error_message);
    let before = skiff_types::Clock::system().now_ms();
    let p = produce(&mut c, 9, "lat", batch_at(&[("x", 1_000)])).await;
    assert_eq!(p.error_code, 0);
    assert!(p.log_append_time_ms >= before);
    let resp = c.call(12, fetch_request("lat", 0, 0, 0)).await;
    let bytes = fetched(&resp)
        .records
        .as_ref()
        .and_then(|r| r.as_bytes())
        .cloned()
        .unwrap();
    let (_, view) = skiff_record::batches(&bytes).next().unwrap().unwrap();
    assert_eq!(
        view.timestamp_type(),
        skiff_record::TimestampType::LogAppendTime
    );
    assert_eq!(view.max_timestamp(), p.log_append_time_ms);

    // Durable topic (flush.messages=1): acknowledged after fsync, then readable.
    assert_eq!(
        create_topic_with(&mut c, "durable", &[("flush.messages", "1")])
            .await
            .error_code,
        0
    );
    let p = produce(&mut c, 9, "durable", batch(&["safe"])).await;
    assert_eq!((p.error_code, p.base_offset), (0, 0));
    let resp = c.call(12, fetch_request("durable", 0, 0, 0)).await;
    assert_eq!(fetched(&resp).high_watermark, 1);
    assert_eq!(values(fetched(&resp)), vec![(0, "safe".to_string())]);
    t.server.shutdown().await.unwrap();
}

#[tokio::test]
async fn e2e_fetch_limits_return_at_least_one_whole_batch() {
    let t = start().await;
    let mut c = Client::connect(t.addr).await;
    create_topic(&mut c, "lim", 1).await;
    for i in 0..3 {
        produce(
            &mut c,
            9,
            "lim",
            batch(&[&format!("a{i}"), &format!("b{i}")]),
        )
        .await;
    }
    // max_bytes far below one batch: still the first whole batch, and only it.
    let mut req = fetch_request("lim", 0, 0, 0);
    req.max_bytes = 10;
    let resp = c.call(12, req).await;
    assert_eq!(
        values(fetched(&resp)),
        vec![(0, "a0".to_string()), (1, "b0".to_string())]
    );
    // partition_max_bytes likewise.
    let mut req = fetch_request("lim", 2, 0, 0);
    req.topics[0].partitions[0].partition_max_bytes = 1;
    let resp = c.call(12, req).await;
    assert_eq!(
        values(fetched(&resp)),
        vec![(2, "a1".to_string()), (3, "b1".to_string())]
    );
    // Metadata v12 by topic id finds the same topic.
    let id = t
        .server
        .broker()
        .image()
        .topic("lim")
        .map(|t| Uuid::from_bytes(t.id))
        .unwrap();
    let req = MetadataRequest {
        topics: Some(vec![MetadataRequestTopic {
            topic_id: id,
            name: None,
        }]),
        ..MetadataRequest::default()
    };
    let ResponseBody::Metadata(r) = c.call(12, req).await else {
        panic!()
    };
    assert_eq!(r.topics[0].name.as_deref(), Some("lim"));
    let req = MetadataRequest {
        topics: Some(vec![MetadataRequestTopic {
            topic_id: Uuid::new_v4(),
            name: None,
        }]),
        ..MetadataRequest::default()
    };
    let ResponseBody::Metadata(r) = c.call(12, req).await else {
        panic!()
    };
    assert_eq!(r.topics[0].error_code, 100);
    t.server.shutdown().await.unwrap();
}

#[tokio::test]
async fn e2e_create_topics_v5_plus_returns_every_config_with_its_source() {
    let dir = tempfile::tempdir().unwrap();
    let (server, addr) = start_live(dir.path(), &[]).await;
    let mut c = Client::connect(addr).await;
    let every_key: std::collections::BTreeSet<&str> = skiff_config::keys::TOPIC_KEYS
        .iter()
        .map(|k| k.name)
        .collect();
    for (version, validate_only) in [(5i16, false), (7, false), (7, true)] {
        let name = format!("cfg-v{version}-{validate_only}");
        let req = CreateTopicsRequest {
            topics: vec![CreatableTopic {
                name: name.clone(),
                num_partitions: 3,
                replication_factor: -1,
                configs: vec![
                    CreatableTopicConfig {
                        name: "retention.ms".into(),
                        value: Some("3600000".into()),
                    },
                    CreatableTopicConfig {
                        name: "cleanup.policy".into(),
                        value: Some("compact".into()),
                    },
                ],
                ..CreatableTopic::default()
            }],
            timeout_ms: 10_000,
            validate_only,
        };
        let ResponseBody::CreateTopics(r) = c.call(version, req).await else {
            panic!()
        };
        let t = &r.topics[0];
        let what = format!("v{version} validate_only={validate_only}");
        assert_eq!(t.error_code, 0, "{what}: {:?}", t.error_message);
        assert_eq!(
            (t.num_partitions, t.replication_factor),
            (3, 1),
            "{what}: the defaulted replication factor is reported"
        );
        let configs = t.configs.as_ref().expect("configs from v5");
        let names: std::collections::BTreeSet<&str> =
            configs.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, every_key, "{what}: every topic key, once");
        assert_eq!(configs.len(), every_key.len(), "{what}");
        let get = |key: &str| {
            let e = configs.iter().find(|e| e.name == key).unwrap();
            (
                e.value.as_deref(),
                e.config_source,
                e.read_only,
                e.is_sensitive,
            )
        };
        // Explicit: DYNAMIC_TOPIC_CONFIG (1); untouched: DEFAULT_CONFIG (5).
        assert_eq!(
            get("retention.ms"),
            (Some("3600000"), 1, false, false),
            "{what}"
        );
        assert_eq!(
            get("cleanup.policy"),
            (Some("compact"), 1, false, false),
            "{what}"
        );
        assert_eq!(
            get("segment.bytes"),
            (Some("1073741824"), 5, false, false),
            "{what}"
        );
        assert_eq!(
            get("max.message.bytes"),
            (Some("1048588"), 5, false, false),
            "{what}"
        );
        assert_eq!(
            configs.iter().filter(|e| e.config_source == 1).count(),
            2,
            "{what}: only the two explicit keys are topic overrides"
        );
        let image_id = server
            .broker()
            .image()
            .topic(&name)
            .map(|t| Uuid::from_bytes(t.id));
        match (version, validate_only) {
            // The topic id is on the wire from v7.
            (7, false) => {
                assert!(!t.topic_id.is_nil(), "{what}");
                assert_eq!(Some(t.topic_id), image_id, "{what}");
            }
            (_, false) => {
                assert!(t.topic_id.is_nil(), "{what}: no topic id before v7");
                assert!(image_id.is_some(), "{what}");
            }
            (_, true) => assert_eq!(image_id, None, "{what}: validate_only created it"),
        }
    }
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn e2e_delete_topics_v6_by_topic_id() {
    let t = start().await;
    let mut c = Client::connect(t.addr).await;
    let doomed = create_topic(&mut c, "by-id", 2).await;
    let kept = create_topic(&mut c, "kept", 1).await;
    assert_eq!((doomed.error_code, kept.error_code), (0, 0));
    assert!(!doomed.topic_id.is_nil());
    let unknown = Uuid::new_v4();
    let delete = |topics: Vec<DeleteTopicState>| DeleteTopicsRequest {
        topics,
        timeout_ms: 10_000,
        ..DeleteTopicsRequest::default()
    };
    let by_id = |id: Uuid| DeleteTopicState {
        name: None,
        topic_id: id,
    };
    let req = delete(vec![
        by_id(doomed.topic_id),
        by_id(unknown),
        // A name and an id together: INVALID_REQUEST, and nothing deleted.
        DeleteTopicState {
            name: Some("kept".into()),
            topic_id: kept.topic_id,
        },
    ]);
    let ResponseBody::DeleteTopics(r) = c.call(6, req).await else {
        panic!()
    };
    let got: Vec<_> = r
        .responses
        .iter()
        .map(|x| (x.name.as_deref(), x.topic_id, x.error_code))
        .collect();
    assert_eq!(
        got,
        vec![
            (Some("by-id"), doomed.topic_id, 0),
            (None, unknown, 100),
            (Some("kept"), kept.topic_id, 42),
        ]
    );
    assert!(r.responses[1].error_message.is_some());
    assert!(r.responses[2].error_message.is_some());
    let broker = t.server.broker();
    assert!(broker.image().topic("by-id").is_none());
    for p in 0..2 {
        assert!(
            broker
                .replicas
                .log_manager()
                .get(&skiff_types::TopicPartition::new("by-id", p))
                .is_none()
        );
    }
    assert!(broker.image().topic("kept").is_some());
    // The deleted id is now unknown; the kept topic goes by id alone.
    let req = delete(vec![by_id(doomed.topic_id), by_id(kept.topic_id)]);
    let ResponseBody::DeleteTopics(r) = c.call(6, req).await else {
        panic!()
    };
    let codes: Vec<_> = r
        .responses
        .iter()
        .map(|x| (x.name.as_deref(), x.error_code))
        .collect();
    assert_eq!(codes, vec![(None, 100), (Some("kept"), 0)]);
    assert!(broker.image().topic("kept").is_none());
    t.server.shutdown().await.unwrap();
}
