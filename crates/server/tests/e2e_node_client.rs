//! The inter-node client (`skiff_server::node_client`, issue 16 item 5) against a real
//! server over TCP: many calls pipelined on one connection, each answered with its own
//! response; versions negotiated from the node's ApiVersions; a version the node does not
//! serve refused locally; a lost node failing the calls in flight, and the next call
//! reconnecting (after the backoff) once the node is back on the same port.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use skiff_protocol::{
    ApiKey, CreatableTopic, CreateTopicsRequest, MetadataRequest, MetadataRequestTopic,
    ResponseBody,
};
use skiff_server::node_client::{NodeClient, NodeClientConfig, NodeClientError};
use skiff_testkit::in_process;

fn config() -> NodeClientConfig {
    NodeClientConfig {
        request_timeout: Duration::from_secs(20),
        ..NodeClientConfig::default()
    }
}

fn create(name: &str) -> CreateTopicsRequest {
    CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: name.into(),
            num_partitions: 1,
            replication_factor: 1,
            ..CreatableTopic::default()
        }],
        timeout_ms: 10_000,
        ..CreateTopicsRequest::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_node_client_pipelines_and_negotiates() {
    let t = in_process::start().await;
    let client = NodeClient::spawn(t.addr.to_string(), config());
    // 64 CreateTopics and 64 Metadata calls at once on one connection.
    let mut calls = Vec::new();
    for i in 0..64 {
        let c = client.clone();
        calls.push(tokio::spawn(async move {
            let ResponseBody::CreateTopics(r) = c.call(create(&format!("t{i}"))).await.unwrap()
            else {
                panic!("not a CreateTopics response")
            };
            assert_eq!(r.topics.len(), 1);
            assert_eq!(r.topics[0].name, format!("t{i}"));
            assert_eq!(r.topics[0].error_code, 0, "{:?}", r.topics[0]);
        }));
        let c = client.clone();
        calls.push(tokio::spawn(async move {
            let req = MetadataRequest {
                topics: Some(vec![MetadataRequestTopic {
                    name: Some(format!("m{i}")),
                    ..MetadataRequestTopic::default()
                }]),
                allow_auto_topic_creation: false,
                ..MetadataRequest::default()
            };
            let ResponseBody::Metadata(r) = c.call(req).await.unwrap() else {
                panic!("not a Metadata response")
            };
            // Its own answer: the topic it asked about (unknown, not auto-created).
            assert_eq!(r.topics.len(), 1);
            assert_eq!(r.topics[0].name.as_deref(), Some(format!("m{i}").as_str()));
            assert_eq!(r.topics[0].error_code, 3);
        }));
    }
    for c in calls {
        c.await.unwrap();
    }
    // Every topic exists: the answers were not crossed.
    let ResponseBody::Metadata(r) = client.call(MetadataRequest::default()).await.unwrap() else {
        panic!()
    };
    assert_eq!(r.topics.len(), 64);
    // The highest version both speak is used; a version the node does not serve is refused
    // here, without being sent (the connection stays usable).
    let (_, hi) = ApiKey::Metadata.supported_versions();
    assert!(client.call_at(hi, MetadataRequest::default()).await.is_ok());
    let e = client
        .call_at(hi + 1, MetadataRequest::default())
        .await
        .unwrap_err();
    assert!(
        matches!(
            e,
            NodeClientError::Unsupported {
                api: ApiKey::Metadata,
                ..
            }
        ),
        "{e}"
    );
    assert!(client.call(MetadataRequest::default()).await.is_ok());
    t.server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_node_client_fails_calls_of_a_lost_node_and_reconnects() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let topic_configs = std::sync::Arc::new(skiff_server::StorageTopicConfigs::default());
    let (server, addr) = in_process::start_on(&data, |_| {}, topic_configs.clone()).await;
    let client = NodeClient::spawn(addr.to_string(), config());
    assert!(client.call(create("before")).await.is_ok());
    server.shutdown().await.unwrap();

    // The node is gone: calls fail (the lost connection, then refused connects), promptly.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let mut saw_connect_error = false;
    while !saw_connect_error {
        assert!(tokio::time::Instant::now() < deadline, "no connect error");
        match client.call(MetadataRequest::default()).await {
            Err(NodeClientError::Connect { .. }) => saw_connect_error = true,
            Err(NodeClientError::Disconnected { .. }) => {}
            other => panic!("a call to a stopped node: {other:?}"),
        }
    }

    // Back on the same port and dir: the next calls reconnect and see the old topic.
    let port = addr.port();
    let (server, again) =
        in_process::start_on(&data, |s| s.listeners[0].bind_port = port, topic_configs).await;
    assert_eq!(again, addr);
    let topics = loop {
        assert!(tokio::time::Instant::now() < deadline, "no reconnect");
        match client.call(MetadataRequest::default()).await {
            Ok(ResponseBody::Metadata(r)) => break r.topics,
            Ok(other) => panic!("{other:?}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    };
    assert!(topics.iter().any(|t| t.name.as_deref() == Some("before")));
    server.shutdown().await.unwrap();
}
