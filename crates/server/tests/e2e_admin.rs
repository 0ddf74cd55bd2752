//! End-to-end tests of the admin APIs over real TCP against an in-process server running with a
//! live (dynamic) configuration, as the binary does: DescribeConfigs, AlterConfigs,
//! IncrementalAlterConfigs (topics, the cluster default, this broker; effect on live logs;
//! persistence across a restart), CreatePartitions, DeleteRecords, DescribeCluster,
//! DescribeLogDirs and OffsetForLeaderEpoch, with Kafka's error codes and messages.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::sync::Arc;

use common::*;
use skiff_config::{BrokerConfig, ConfigSources};
use skiff_protocol::*;
use skiff_server::{LiveConfig, Server, ServerSettings};
use skiff_types::{ErrorCode, TopicPartition};

const TOPIC: i8 = 2;
const BROKER: i8 = 4;
const SET: i8 = 0;
const DELETE: i8 = 1;
const APPEND: i8 = 2;
const SUBTRACT: i8 = 3;

/// A server on `dir` with a live configuration built from `overrides`.
async fn start_live(dir: &Path, overrides: &[&str]) -> (Server, std::net::SocketAddr) {
    let data = dir.join("data");
    let mut all = vec![format!("log.dirs={}", data.display())];
    all.extend(overrides.iter().map(|s| s.to_string()));
    let cfg = BrokerConfig::load(ConfigSources {
        overrides: all,
        ..ConfigSources::default()
    })
    .unwrap();
    let settings = ServerSettings::with_log_dir(&data);
    let server = Server::start(settings, Arc::new(LiveConfig::new(cfg)))
        .await
        .unwrap();
    let addr = server.listeners()[0].local_addr;
    (server, addr)
}

async fn describe(
    c: &mut Client,
    version: i16,
    resource_type: i8,
    name: &str,
    keys: Option<&[&str]>,
) -> DescribeConfigsResult {
    let req = DescribeConfigsRequest {
        resources: vec![DescribeConfigsResource {
            resource_type,
            resource_name: name.into(),
            configuration_keys: keys.map(|k| k.iter().map(|s| s.to_string()).collect()),
        }],
        include_synonyms: true,
        include_documentation: version >= 3,
    };
    match c.call(version, req).await {
        ResponseBody::DescribeConfigs(r) => r.results.into_iter().next().unwrap(),
        other => panic!("unexpected {other:?}"),
    }
}

fn entry<'a>(r: &'a DescribeConfigsResult, name: &str) -> &'a DescribeConfigsResourceResult {
    r.configs
        .iter()
        .find(|e| e.name == name)
        .unwrap_or_else(|| panic!("{name} not described"))
}

/// Legacy AlterConfigs of one resource: (error code, message).
async fn alter(
    c: &mut Client,
    resource_type: i8,
    name: &str,
    configs: &[(&str, Option<&str>)],
    validate_only: bool,
) -> (i16, Option<String>) {
    let req = AlterConfigsRequest {
        resources: vec![AlterConfigsRequestAlterConfigsResource {
            resource_type,
            resource_name: name.into(),
            configs: configs
                .iter()
                .map(|(k, v)| AlterConfigsRequestAlterableConfig {
                    name: (*k).into(),
                    value: v.map(str::to_string),
                })
                .collect(),
        }],
        validate_only,
    };
    match c.call(2, req).await {
        ResponseBody::AlterConfigs(r) => {
            let r = &r.responses[0];
            (r.error_code, r.error_message.clone())
        }
        other => panic!("unexpected {other:?}"),
    }
}

/// IncrementalAlterConfigs of one resource: (error code, message).
async fn incremental(
    c: &mut Client,
    resource_type: i8,
    name: &str,
    ops: &[(&str, i8, Option<&str>)],
    validate_only: bool,
) -> (i16, Option<String>) {
    let req = IncrementalAlterConfigsRequest {
        resources: vec![IncrementalAlterConfigsRequestAlterConfigsResource {
            resource_type,
            resource_name: name.into(),
            configs: ops
                .iter()
                .map(|(k, op, v)| IncrementalAlterConfigsRequestAlterableConfig {
                    name: (*k).into(),
                    config_operation: *op,
                    value: v.map(str::to_string),
                })
                .collect(),
        }],
        validate_only,
    };
    match c.call(1, req).await {
        ResponseBody::IncrementalAlterConfigs(r) => {
            let r = &r.responses[0];
            (r.error_code, r.error_message.clone())
        }
        other => panic!("unexpected {other:?}"),
    }
}

fn live_retention_ms(server: &Server, topic: &str) -> i64 {
    let log = server
        .broker()
        .logs
        .get(&TopicPartition::new(topic, 0))
        .unwrap();
    log.lock().config().retention_ms
}

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
            .logs
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
            .logs
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
async fn e2e_admin_create_partitions_and_delete_records() {
    let dir = tempfile::tempdir().unwrap();
    let (server, addr) = start_live(dir.path(), &[]).await;
    let mut c = Client::connect(addr).await;
    assert_eq!(create_topic(&mut c, "p", 1).await.error_code, 0);
    let grow = |name: &str, count: i32, assignments: Option<Vec<Vec<i32>>>, validate_only: bool| {
        CreatePartitionsRequest {
            topics: vec![CreatePartitionsTopic {
                name: name.into(),
                count,
                assignments: assignments.map(|a| {
                    a.into_iter()
                        .map(|broker_ids| CreatePartitionsAssignment { broker_ids })
                        .collect()
                }),
            }],
            timeout_ms: 10_000,
            validate_only,
        }
    };
    let result = |r: ResponseBody| match r {
        ResponseBody::CreatePartitions(r) => {
            let t = r.results.into_iter().next().unwrap();
            (t.error_code, t.error_message)
        }
        other => panic!("unexpected {other:?}"),
    };
    assert_eq!(result(c.call(3, grow("p", 3, None, true)).await).0, 0);
    assert_eq!(
        server.broker().image().topic("p").unwrap().partitions,
        1,
        "validate_only"
    );
    assert_eq!(
        result(c.call(3, grow("p", 3, None, false)).await),
        (0, None)
    );
    assert_eq!(server.broker().image().topic("p").unwrap().partitions, 3);
    assert!(
        server
            .broker()
            .logs
            .get(&TopicPartition::new("p", 2))
            .is_some()
    );
    let resp = c
        .call(9, produce_request("p", 2, batch(&["two"]), -1))
        .await;
    let ResponseBody::Produce(r) = resp else {
        panic!()
    };
    assert_eq!(r.responses[0].partition_responses[0].error_code, 0);
    let (code, msg) = result(c.call(0, grow("p", 3, None, false)).await);
    assert_eq!(
        (code, msg.as_deref()),
        (
            ErrorCode::InvalidPartitions as i16,
            Some("Topic already has 3 partition(s).")
        )
    );
    let (code, msg) = result(c.call(0, grow("p", 2, None, false)).await);
    assert_eq!(
        (code, msg.as_deref()),
        (
            ErrorCode::InvalidPartitions as i16,
            Some("The topic p currently has 3 partition(s); 2 would not be an increase.")
        )
    );
    let (code, msg) = result(c.call(1, grow("p", 5, Some(vec![vec![1]]), false)).await);
    assert_eq!(
        (code, msg.as_deref()),
        (
            ErrorCode::InvalidReplicaAssignment as i16,
            Some(
                "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified."
            )
        )
    );
    let (code, _) = result(c.call(1, grow("p", 4, Some(vec![vec![2]]), false)).await);
    assert_eq!(code, ErrorCode::InvalidReplicaAssignment as i16);
    assert_eq!(
        result(c.call(2, grow("p", 4, Some(vec![vec![1]]), false)).await).0,
        0
    );
    assert_eq!(
        result(c.call(2, grow("nope", 4, None, false)).await).0,
        ErrorCode::UnknownTopicOrPartition as i16
    );
    assert_eq!(
        result(c.call(2, grow("p", i32::MAX, None, false)).await).0,
        ErrorCode::InvalidPartitions as i16
    );

    // DeleteRecords: start offset moves, reads below it are out of range.
    assert_eq!(create_topic(&mut c, "d", 1).await.error_code, 0);
    for _ in 0..5 {
        produce(&mut c, 9, "d", batch(&["a", "b"])).await;
    }
    let delete = |topic: &str, partition: i32, offset: i64| DeleteRecordsRequest {
        topics: vec![DeleteRecordsTopic {
            name: topic.into(),
            partitions: vec![DeleteRecordsPartition {
                partition_index: partition,
                offset,
            }],
        }],
        timeout_ms: 10_000,
    };
    let outcome = |r: ResponseBody| match r {
        ResponseBody::DeleteRecords(r) => {
            let p = &r.topics[0].partitions[0];
            (p.error_code, p.low_watermark)
        }
        other => panic!("unexpected {other:?}"),
    };
    assert_eq!(outcome(c.call(2, delete("d", 0, 3)).await), (0, 3));
    assert_eq!(list_offset(&mut c, 1, "d", -2).await.1, 3);
    let resp = c.call(12, fetch_request("d", 0, 0, 0)).await;
    assert_eq!(
        fetched(&resp).error_code,
        ErrorCode::OffsetOutOfRange as i16
    );
    let resp = c.call(12, fetch_request("d", 3, 0, 0)).await;
    assert_eq!(fetched(&resp).log_start_offset, 3);
    assert_eq!(
        values(fetched(&resp))
            .iter()
            .filter(|(o, _)| *o >= 3)
            .count(),
        7
    );
    assert_eq!(
        outcome(c.call(1, delete("d", 0, 2)).await),
        (0, 3),
        "never backwards"
    );
    assert_eq!(
        outcome(c.call(0, delete("d", 0, 11)).await),
        (ErrorCode::OffsetOutOfRange as i16, -1)
    );
    assert_eq!(
        outcome(c.call(0, delete("d", 0, -5)).await),
        (ErrorCode::OffsetOutOfRange as i16, -1)
    );
    assert_eq!(
        outcome(c.call(2, delete("d", 0, -1)).await),
        (0, 10),
        "-1 = high watermark"
    );
    assert_eq!(
        outcome(c.call(2, delete("d", 1, 0)).await).0,
        ErrorCode::UnknownTopicOrPartition as i16
    );
    assert_eq!(
        outcome(c.call(2, delete("zz", 0, 0)).await),
        (ErrorCode::UnknownTopicOrPartition as i16, -1)
    );
    assert_eq!(
        create_topic_with(&mut c, "compacted", &[("cleanup.policy", "compact")])
            .await
            .error_code,
        0
    );
    assert_eq!(
        outcome(c.call(2, delete("compacted", 0, -1)).await).0,
        ErrorCode::PolicyViolation as i16
    );
    // The new start offset survives a restart.
    server.shutdown().await.unwrap();
    let (server, addr) = start_live(dir.path(), &[]).await;
    let mut c = Client::connect(addr).await;
    assert_eq!(list_offset(&mut c, 1, "d", -2).await.1, 10);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn e2e_admin_describe_cluster_log_dirs_and_leader_epochs() {
    let dir = tempfile::tempdir().unwrap();
    let (server, addr) = start_live(dir.path(), &[]).await;
    let mut c = Client::connect(addr).await;
    assert_eq!(create_topic(&mut c, "e", 2).await.error_code, 0);
    produce(&mut c, 9, "e", batch(&["a", "b", "c"])).await;

    for v in [0i16, 1] {
        let ResponseBody::DescribeCluster(r) = c
            .call(
                v,
                DescribeClusterRequest {
                    include_cluster_authorized_operations: true,
                    endpoint_type: 1,
                },
            )
            .await
        else {
            panic!()
        };
        assert_eq!(r.error_code, 0);
        assert_eq!(r.cluster_id, server.broker().cluster_id());
        assert_eq!(r.controller_id, 1);
        assert_eq!(r.brokers.len(), 1);
        assert_eq!(
            (
                r.brokers[0].broker_id,
                r.brokers[0].host.as_str(),
                r.brokers[0].port
            ),
            (1, "localhost", i32::from(addr.port()))
        );
        assert_ne!(r.cluster_authorized_operations & (1 << 8), 0, "DESCRIBE");
    }
    let ResponseBody::DescribeCluster(r) = c
        .call(
            1,
            DescribeClusterRequest {
                include_cluster_authorized_operations: false,
                endpoint_type: 2,
            },
        )
        .await
    else {
        panic!()
    };
    assert_eq!(r.error_code, ErrorCode::MismatchedEndpointType as i16);
    let ResponseBody::DescribeCluster(r) = c
        .call(
            1,
            DescribeClusterRequest {
                include_cluster_authorized_operations: false,
                endpoint_type: 9,
            },
        )
        .await
    else {
        panic!()
    };
    assert_eq!(r.error_code, ErrorCode::UnsupportedEndpointType as i16);

    for v in [1i16, 4] {
        let ResponseBody::DescribeLogDirs(r) =
            c.call(v, DescribeLogDirsRequest { topics: None }).await
        else {
            panic!()
        };
        assert_eq!(r.results.len(), 1);
        let d = &r.results[0];
        assert_eq!(d.error_code, 0);
        assert_eq!(Path::new(&d.log_dir), dir.path().join("data"));
        let e = d.topics.iter().find(|t| t.name == "e").unwrap();
        let mut parts: Vec<(i32, i64, i64)> = e
            .partitions
            .iter()
            .map(|p| (p.partition_index, p.partition_size, p.offset_lag))
            .collect();
        parts.sort_unstable();
        assert_eq!(parts[0].0, 0);
        assert!(
            parts[0].1 > 61,
            "a batch of 3 records is on disk: {}",
            parts[0].1
        );
        assert_eq!((parts[1].0, parts[1].1, parts[1].2), (1, 0, 0));
        if v == 4 {
            assert!(d.total_bytes > 0 && d.usable_bytes > 0 && d.usable_bytes <= d.total_bytes);
        }
    }
    let req = DescribeLogDirsRequest {
        topics: Some(vec![DescribableLogDirTopic {
            topic: "e".into(),
            partitions: vec![1, 7],
        }]),
    };
    let ResponseBody::DescribeLogDirs(r) = c.call(3, req).await else {
        panic!()
    };
    let topics = &r.results[0].topics;
    assert_eq!(topics.len(), 1);
    assert_eq!(
        topics[0]
            .partitions
            .iter()
            .map(|p| p.partition_index)
            .collect::<Vec<_>>(),
        vec![1]
    );

    let epochs = |partition: i32, current: i32, epoch: i32| OffsetForLeaderEpochRequest {
        replica_id: -1,
        topics: vec![OffsetForLeaderTopic {
            topic: "e".into(),
            partitions: vec![OffsetForLeaderPartition {
                partition,
                current_leader_epoch: current,
                leader_epoch: epoch,
            }],
        }],
    };
    let answer = |r: ResponseBody| match r {
        ResponseBody::OffsetForLeaderEpoch(r) => {
            let p = &r.topics[0].partitions[0];
            (p.error_code, p.leader_epoch, p.end_offset)
        }
        other => panic!("unexpected {other:?}"),
    };
    for v in [2i16, 3, 4] {
        assert_eq!(answer(c.call(v, epochs(0, 0, 0)).await), (0, 0, 3));
        assert_eq!(
            answer(c.call(v, epochs(1, -1, 0)).await),
            (0, 0, 0),
            "empty partition, current epoch"
        );
        assert_eq!(
            answer(c.call(v, epochs(0, 0, 5)).await),
            (0, -1, -1),
            "unknown future epoch"
        );
        assert_eq!(
            answer(c.call(v, epochs(0, 3, 0)).await).0,
            ErrorCode::UnknownLeaderEpoch as i16
        );
        assert_eq!(
            answer(c.call(v, epochs(9, -1, 0)).await).0,
            ErrorCode::UnknownTopicOrPartition as i16
        );
    }
    server.shutdown().await.unwrap();
}
