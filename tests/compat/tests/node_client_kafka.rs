//! Skiff's inter-node client (`skiff_server::node_client`, issue 16 item 5) against Apache
//! Kafka itself (the pinned KRaft single node): the connection negotiates versions from
//! Kafka's ApiVersions (v3), pipelines CreateTopics and Metadata calls and gets each its own
//! answer, and a version Kafka's broker does not serve is refused locally. The client is what
//! Skiff nodes will use to reach Kafka-shaped peers (controller RPCs, replica fetches).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use skiff_compat::KafkaNode;
use skiff_protocol::{
    ApiKey, CreatableTopic, CreateTopicsRequest, MetadataRequest, MetadataRequestTopic,
    ResponseBody,
};
use skiff_server::node_client::{NodeClient, NodeClientConfig, NodeClientError};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_client_talks_to_apache_kafka() {
    let started = std::time::Instant::now();
    let kafka = KafkaNode::start();
    eprintln!("phase kafka start: {:?}", started.elapsed());
    let started = std::time::Instant::now();
    let client = NodeClient::spawn(
        kafka.bootstrap(),
        NodeClientConfig {
            request_timeout: Duration::from_secs(30),
            ..NodeClientConfig::default()
        },
    );
    let mut calls = Vec::new();
    for i in 0..16 {
        let c = client.clone();
        calls.push(tokio::spawn(async move {
            let req = CreateTopicsRequest {
                topics: vec![CreatableTopic {
                    name: format!("nc{i}"),
                    num_partitions: 2,
                    replication_factor: 1,
                    ..CreatableTopic::default()
                }],
                timeout_ms: 20_000,
                ..CreateTopicsRequest::default()
            };
            let ResponseBody::CreateTopics(r) = c.call(req).await.unwrap() else {
                panic!("not a CreateTopics response")
            };
            assert_eq!(r.topics[0].name, format!("nc{i}"));
            assert_eq!(r.topics[0].error_code, 0, "{:?}", r.topics[0]);
        }));
    }
    for c in calls {
        c.await.unwrap();
    }
    let req = MetadataRequest {
        topics: Some(
            (0..16)
                .map(|i| MetadataRequestTopic {
                    name: Some(format!("nc{i}")),
                    ..MetadataRequestTopic::default()
                })
                .collect(),
        ),
        ..MetadataRequest::default()
    };
    // Created topics can take a moment to reach Kafka's metadata cache: poll with a deadline.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let ResponseBody::Metadata(r) = client.call(req.clone()).await.unwrap() else {
            panic!("not a Metadata response")
        };
        if r.topics
            .iter()
            .all(|t| t.error_code == 0 && t.partitions.len() == 2)
        {
            assert_eq!(r.topics.len(), 16);
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{:?}", r.topics);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(client.peak_in_flight() > 1, "{}", client.peak_in_flight());
    let (_, hi) = ApiKey::Metadata.supported_versions();
    let e = client
        .call_at(hi + 1, MetadataRequest::default())
        .await
        .unwrap_err();
    assert!(matches!(e, NodeClientError::Unsupported { .. }), "{e}");
    eprintln!("phase calls: {:?}", started.elapsed());
}
