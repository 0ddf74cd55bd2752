//! End-to-end tests of the config admin APIs over real TCP against an in-process server with a
//! live (dynamic) configuration, as the binary runs: DescribeConfigs, AlterConfigs and
//! IncrementalAlterConfigs on topics, the cluster default and this broker, their immediate
//! effect on live logs, persistence across a restart, and Kafka's error codes and messages.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod admin_support;
mod common;

use admin_support::*;
use common::*;
use skiff_protocol::*;
use skiff_types::{ErrorCode, TopicPartition};

#[tokio::test]
async fn e2e_admin_topic_configs_describe_alter_incremental() {
    let dir = tempfile::tempdir().unwrap();
    let (server, addr) = start_live(dir.path(), &[]).await;
    let mut c = Client::connect(addr).await;
    assert_eq!(create_topic(&mut c, "t", 1).await.error_code, 0);

    // Every topic key, Kafka's defaults, sources, types and documentation.
    let d = describe(&mut c, 4, TOPIC, "t", None).await;
    assert_eq!(d.error_code, 0);
    assert!(d.configs.len() >= 30, "{} keys", d.configs.len());
    let r = entry(&d, "retention.ms");
    assert_eq!(r.value.as_deref(), Some("604800000"));
    assert_eq!(r.config_source, 5, "DEFAULT_CONFIG");
    assert_eq!(r.config_type, 5, "LONG");
    assert!(!r.read_only && !r.is_sensitive);
    assert!(r.documentation.as_deref().is_some_and(|s| !s.is_empty()));
    assert_eq!(entry(&d, "cleanup.policy").value.as_deref(), Some("delete"));
    assert_eq!(
        entry(&d, "max.message.bytes").value.as_deref(),
        Some("1048588")
    );
    // v1: no type, no documentation; a key filter.
    let d1 = describe(&mut c, 1, TOPIC, "t", Some(&["segment.bytes"])).await;
    assert_eq!(d1.configs.len(), 1);
    assert_eq!(d1.configs[0].config_type, 0);
    assert_eq!(d1.configs[0].documentation.as_deref().unwrap_or(""), "");

    // AlterConfigs sets overrides; they take effect on the live log at once.
    assert_eq!(live_retention_ms(&server, "t"), 604_800_000);
    let ok = alter(
        &mut c,
        TOPIC,
        "t",
        &[
            ("retention.ms", Some("1000")),
            ("segment.ms", Some("60000")),
        ],
        false,
    )
    .await;
    assert_eq!(ok, (0, None));
    assert_eq!(live_retention_ms(&server, "t"), 1000);
    let d = describe(&mut c, 4, TOPIC, "t", Some(&["retention.ms"])).await;
    let r = entry(&d, "retention.ms");
    assert_eq!((r.value.as_deref(), r.config_source), (Some("1000"), 1));
    assert_eq!(r.synonyms[0].source, 1, "DYNAMIC_TOPIC_CONFIG first");
    // Legacy AlterConfigs replaces the whole set: segment.ms goes back to its default.
    assert_eq!(
        alter(&mut c, TOPIC, "t", &[("retention.ms", Some("2000"))], false)
            .await
            .0,
        0
    );
    let d = describe(&mut c, 4, TOPIC, "t", Some(&["segment.ms", "retention.ms"])).await;
    assert_eq!(entry(&d, "segment.ms").config_source, 5);
    assert_eq!(entry(&d, "retention.ms").value.as_deref(), Some("2000"));
    // validate_only changes nothing.
    assert_eq!(
        alter(&mut c, TOPIC, "t", &[("retention.ms", Some("3000"))], true)
            .await
            .0,
        0
    );
    assert_eq!(live_retention_ms(&server, "t"), 2000);

    // Incremental: SET keeps other keys; APPEND/SUBTRACT on lists; DELETE resets.
    assert_eq!(
        incremental(
            &mut c,
            TOPIC,
            "t",
            &[("max.message.bytes", SET, Some("5000"))],
            false
        )
        .await
        .0,
        0
    );
    assert_eq!(
        incremental(
            &mut c,
            TOPIC,
            "t",
            &[("cleanup.policy", APPEND, Some("compact"))],
            false
        )
        .await
        .0,
        0
    );
    let d = describe(&mut c, 4, TOPIC, "t", None).await;
    assert_eq!(
        entry(&d, "cleanup.policy").value.as_deref(),
        Some("delete,compact")
    );
    assert_eq!(entry(&d, "retention.ms").value.as_deref(), Some("2000"));
    assert_eq!(
        entry(&d, "max.message.bytes").value.as_deref(),
        Some("5000")
    );
    assert_eq!(
        incremental(
            &mut c,
            TOPIC,
            "t",
            &[
                ("cleanup.policy", SUBTRACT, Some("delete")),
                ("retention.ms", DELETE, None)
            ],
            false
        )
        .await
        .0,
        0
    );
    let d = describe(&mut c, 4, TOPIC, "t", None).await;
    assert_eq!(
        entry(&d, "cleanup.policy").value.as_deref(),
        Some("compact")
    );
    assert_eq!(entry(&d, "retention.ms").config_source, 5);
    assert_eq!(live_retention_ms(&server, "t"), 604_800_000);
    {
        let log = server
            .broker()
            .replicas
            .log_manager()
            .get(&TopicPartition::new("t", 0))
            .unwrap();
        let l = log.lock();
        assert!(l.config().cleanup_policy_compact && !l.config().cleanup_policy_delete);
        assert_eq!(l.config().max_message_bytes, 5000);
    }

    // Refusals with Kafka's codes and messages.
    let (code, msg) = alter(&mut c, TOPIC, "t", &[("retention.ms", Some("soon"))], false).await;
    assert_eq!(code, ErrorCode::InvalidConfig as i16);
    assert!(msg.unwrap().contains("retention.ms"));
    let (code, msg) = incremental(
        &mut c,
        TOPIC,
        "t",
        &[("no.such.key", SET, Some("1"))],
        false,
    )
    .await;
    assert_eq!(code, ErrorCode::InvalidConfig as i16);
    assert!(msg.unwrap().contains("no.such.key"));
    let (code, msg) = incremental(
        &mut c,
        TOPIC,
        "t",
        &[("retention.ms", APPEND, Some("1"))],
        false,
    )
    .await;
    assert_eq!(code, ErrorCode::InvalidConfig as i16);
    assert_eq!(
        msg.as_deref(),
        Some("Can't APPEND to key retention.ms because its type is not LIST.")
    );
    let (code, msg) = incremental(&mut c, TOPIC, "t", &[("retention.ms", SET, None)], false).await;
    assert_eq!(
        (code, msg.as_deref()),
        (
            ErrorCode::InvalidRequest as i16,
            Some("Null value not supported for : retention.ms")
        )
    );
    let (code, msg) = alter(
        &mut c,
        TOPIC,
        "t",
        &[("retention.ms", Some("1")), ("retention.ms", Some("2"))],
        false,
    )
    .await;
    assert_eq!(
        (code, msg.as_deref()),
        (
            ErrorCode::InvalidRequest as i16,
            Some("Error due to duplicate config keys")
        )
    );
    let (code, msg) = alter(&mut c, TOPIC, "nope", &[("retention.ms", Some("1"))], false).await;
    assert_eq!(
        (code, msg.as_deref()),
        (
            ErrorCode::UnknownTopicOrPartition as i16,
            Some("The topic 'nope' does not exist.")
        )
    );
    let (code, _) = incremental(&mut c, TOPIC, "t", &[("retention.ms", 9, Some("1"))], false).await;
    assert_eq!(code, ErrorCode::InvalidRequest as i16);
    let d = describe(&mut c, 4, TOPIC, "nope", None).await;
    assert_eq!(
        (d.error_code, d.configs.len()),
        (ErrorCode::UnknownTopicOrPartition as i16, 0)
    );
    let d = describe(&mut c, 4, TOPIC, "bad name!", None).await;
    assert_eq!(d.error_code, ErrorCode::InvalidTopicException as i16);
    // The same resource twice: both refused.
    let req = AlterConfigsRequest {
        resources: vec![
            AlterConfigsRequestAlterConfigsResource {
                resource_type: TOPIC,
                resource_name: "t".into(),
                configs: vec![],
            },
            AlterConfigsRequestAlterConfigsResource {
                resource_type: TOPIC,
                resource_name: "t".into(),
                configs: vec![],
            },
        ],
        validate_only: false,
    };
    let ResponseBody::AlterConfigs(r) = c.call(0, req).await else {
        panic!()
    };
    assert!(
        r.responses
            .iter()
            .all(|r| r.error_code == ErrorCode::InvalidRequest as i16)
    );
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn e2e_admin_broker_configs_take_effect_and_persist() {
    let dir = tempfile::tempdir().unwrap();
    let (server, addr) = start_live(dir.path(), &["log.retention.hours=24"]).await;
    let mut c = Client::connect(addr).await;
    assert_eq!(create_topic(&mut c, "plain", 1).await.error_code, 0);
    assert_eq!(live_retention_ms(&server, "plain"), 86_400_000);

    // This broker: every key; static values and synonyms; read-only flags.
    let d = describe(&mut c, 4, BROKER, "1", None).await;
    assert_eq!(d.error_code, 0);
    assert!(d.configs.len() > 200, "{} keys", d.configs.len());
    let np = entry(&d, "num.partitions");
    assert!(np.read_only);
    assert_eq!((np.value.as_deref(), np.config_source), (Some("1"), 5));
    let rh = entry(&d, "log.retention.hours");
    assert_eq!(
        (rh.value.as_deref(), rh.config_source),
        (Some("24"), 4),
        "STATIC_BROKER_CONFIG"
    );
    assert!(entry(&d, "ssl.keystore.password").is_sensitive);
    assert_eq!(entry(&d, "ssl.keystore.password").value, None);
    // Cluster default: empty until set.
    assert_eq!(describe(&mut c, 4, BROKER, "", None).await.configs.len(), 0);
    let d = describe(&mut c, 4, BROKER, "2", None).await;
    assert_eq!(d.error_code, ErrorCode::InvalidRequest as i16);
    assert_eq!(
        d.error_message.as_deref(),
        Some("Unexpected broker id, expected 1 or empty string, but received 2")
    );

    // A dynamic cluster default reaches topics without an override, at once.
    assert_eq!(
        incremental(
            &mut c,
            BROKER,
            "",
            &[("log.retention.ms", SET, Some("5000"))],
            false
        )
        .await,
        (0, None)
    );
    assert_eq!(live_retention_ms(&server, "plain"), 5000);
    let d = describe(&mut c, 4, TOPIC, "plain", Some(&["retention.ms"])).await;
    assert_eq!(
        (
            entry(&d, "retention.ms").value.as_deref(),
            entry(&d, "retention.ms").config_source
        ),
        (Some("5000"), 3)
    );
    let d = describe(&mut c, 4, BROKER, "", None).await;
    assert_eq!(d.configs.len(), 1);
    assert_eq!(
        (d.configs[0].name.as_str(), d.configs[0].config_source),
        ("log.retention.ms", 3)
    );
    // This broker's own layer wins over the default; message.max.bytes reaches new topics.
    assert_eq!(
        alter(
            &mut c,
            BROKER,
            "1",
            &[("message.max.bytes", Some("4096"))],
            false
        )
        .await,
        (0, None)
    );
    assert_eq!(create_topic(&mut c, "later", 1).await.error_code, 0);
    {
        let log = server
            .broker()
            .replicas
            .log_manager()
            .get(&TopicPartition::new("later", 0))
            .unwrap();
        assert_eq!(log.lock().config().max_message_bytes, 4096);
    }
    let big = batch(&[&"x".repeat(5000)]);
    assert_eq!(
        produce(&mut c, 9, "later", big).await.error_code,
        ErrorCode::MessageTooLarge as i16
    );

    // Read-only and per-broker-only keys are refused, naming the fix.
    let (code, msg) = alter(&mut c, BROKER, "1", &[("num.partitions", Some("3"))], false).await;
    assert_eq!(code, ErrorCode::InvalidRequest as i16);
    let msg = msg.unwrap();
    assert!(
        msg.contains("num.partitions") && msg.contains("restart"),
        "{msg}"
    );
    let (code, msg) = incremental(
        &mut c,
        BROKER,
        "",
        &[("listeners", SET, Some("PLAINTEXT://:9"))],
        false,
    )
    .await;
    assert_eq!(code, ErrorCode::InvalidRequest as i16);
    assert!(msg.unwrap().contains("broker id must be specified"));
    let (code, msg) = incremental(
        &mut c,
        BROKER,
        "",
        &[("log.retention.ms", APPEND, Some("1"))],
        false,
    )
    .await;
    assert_eq!(
        (code, msg.as_deref()),
        (
            ErrorCode::InvalidConfig as i16,
            Some("Config value append is not allowed for config key: log.retention.ms")
        )
    );
    let (code, _) = alter(
        &mut c,
        BROKER,
        "7",
        &[("log.retention.ms", Some("1"))],
        false,
    )
    .await;
    assert_eq!(code, ErrorCode::InvalidRequest as i16);
    let (code, _) = incremental(
        &mut c,
        BROKER,
        "",
        &[("log.retention.ms", SET, Some("-7"))],
        true,
    )
    .await;
    assert_eq!(code, ErrorCode::InvalidConfig as i16);
    let (code, _) = incremental(&mut c, 8, "1", &[("root", SET, Some("DEBUG"))], false).await;
    assert_eq!(
        code,
        ErrorCode::InvalidRequest as i16,
        "BROKER_LOGGER is not supported"
    );

    // Restart: the dynamic layers are back before the logs open.
    server.shutdown().await.unwrap();
    let (server, addr) = start_live(dir.path(), &["log.retention.hours=24"]).await;
    let mut c = Client::connect(addr).await;
    assert_eq!(live_retention_ms(&server, "plain"), 5000);
    let d = describe(
        &mut c,
        4,
        BROKER,
        "1",
        Some(&["message.max.bytes", "log.retention.ms"]),
    )
    .await;
    assert_eq!(
        (
            entry(&d, "message.max.bytes").value.as_deref(),
            entry(&d, "message.max.bytes").config_source
        ),
        (Some("4096"), 2)
    );
    assert_eq!(entry(&d, "log.retention.ms").config_source, 3);
    // Removing the default again restores the static value.
    assert_eq!(
        incremental(
            &mut c,
            BROKER,
            "",
            &[("log.retention.ms", DELETE, None)],
            false
        )
        .await
        .0,
        0
    );
    assert_eq!(live_retention_ms(&server, "plain"), 86_400_000);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn e2e_admin_dynamic_connection_limits_apply_now_and_after_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (server, addr) = start_live(dir.path(), &[]).await;
    let mut c = Client::connect(addr).await;
    let set = |key: &'static str,
               v: Option<&'static str>|
     -> [(&'static str, i8, Option<&'static str>); 1] {
        [(key, if v.is_some() { SET } else { DELETE }, v)]
    };
    // max.connections.per.ip: the next connection beyond it is closed at once.
    assert_eq!(
        incremental(
            &mut c,
            BROKER,
            "1",
            &set("max.connections.per.ip", Some("2")),
            false
        )
        .await,
        (0, None)
    );
    let mut second = Client::connect(addr).await;
    assert!(matches!(
        second.call(3, ApiVersionsRequest::default()).await,
        ResponseBody::ApiVersions(_)
    ));
    let mut third = Client::connect(addr).await;
    assert!(third.is_closed().await, "beyond max.connections.per.ip");
    assert_eq!(
        incremental(
            &mut c,
            BROKER,
            "1",
            &set("max.connections.per.ip", None),
            false
        )
        .await
        .0,
        0
    );
    let mut fourth = Client::connect(addr).await;
    assert!(matches!(
        fourth.call(3, ApiVersionsRequest::default()).await,
        ResponseBody::ApiVersions(_)
    ));
    drop((second, third, fourth));
    // Persisted: a per-IP limit of 1 applies again after a restart.
    assert_eq!(
        incremental(
            &mut c,
            BROKER,
            "",
            &set("max.connections.per.ip", Some("1")),
            false
        )
        .await
        .0,
        0
    );
    drop(c);
    server.shutdown().await.unwrap();
    let (server, addr) = start_live(dir.path(), &[]).await;
    let mut a = Client::connect(addr).await;
    assert!(matches!(
        a.call(3, ApiVersionsRequest::default()).await,
        ResponseBody::ApiVersions(_)
    ));
    let mut b = Client::connect(addr).await;
    assert!(
        b.is_closed().await,
        "the persisted per-IP limit applies after a restart"
    );
    // max.connections: lowering it holds back new connections; raising it admits them at once.
    // (Legacy AlterConfigs replaces the layer: the per-IP limit goes away.) The accept loop
    // already holds the slot of the next connection, which is still admitted.
    assert_eq!(
        alter(&mut a, BROKER, "", &[("max.connections", Some("1"))], false)
            .await
            .0,
        0
    );
    let mut reserved = Client::connect(addr).await;
    assert!(matches!(
        reserved.call(3, ApiVersionsRequest::default()).await,
        ResponseBody::ApiVersions(_)
    ));
    let mut waiting = Client::connect(addr).await;
    let (frame, cid) = waiting.frame(3, ApiVersionsRequest::default());
    waiting.send_raw(&frame).await;
    let early =
        tokio::time::timeout(std::time::Duration::from_millis(500), waiting.read_frame()).await;
    assert!(
        early.is_err(),
        "not accepted while max.connections is reached: {early:?}"
    );
    assert_eq!(
        alter(&mut a, BROKER, "", &[("max.connections", Some("5"))], false)
            .await
            .0,
        0
    );
    let answer = waiting
        .read_frame()
        .await
        .expect("accepted once the limit was raised");
    assert_eq!(correlation_of(&answer), cid);
    server.shutdown().await.unwrap();
}
