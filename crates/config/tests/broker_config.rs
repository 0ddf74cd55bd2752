//! End-to-end tests of loading, precedence, defaults, LogConfig mapping and DescribeConfigs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

use skiff_config::keys::broker_key;
use skiff_config::{
    AlterTarget, BrokerConfig, ConfigError, ConfigSource, ConfigSources, DynamicConfigs, Origin,
    validate_alter,
};

fn props_file(dir: &tempfile::TempDir, text: &str) -> PathBuf {
    let p = dir.path().join("server.properties");
    let mut f = std::fs::File::create(&p).unwrap();
    f.write_all(text.as_bytes()).unwrap();
    p
}

fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn load(
    file: Option<PathBuf>,
    env_pairs: &[(&str, &str)],
    overrides: &[&str],
) -> Result<BrokerConfig, ConfigError> {
    BrokerConfig::load(ConfigSources {
        file,
        env: env(env_pairs),
        overrides: overrides.iter().map(|s| s.to_string()).collect(),
    })
}

#[test]
fn precedence_is_file_then_env_then_override() {
    let dir = tempfile::tempdir().unwrap();
    let f = props_file(
        &dir,
        "num.partitions=2\nlog.retention.hours=10\nmessage.max.bytes=1000\n# comment\n",
    );
    let c = load(Some(f.clone()), &[], &[]).unwrap();
    assert_eq!(c.num_partitions(), 2);
    assert_eq!(c.origin("num.partitions"), Some(Origin::File));
    let c = load(Some(f.clone()), &[("KAFKA_NUM_PARTITIONS", "3")], &[]).unwrap();
    assert_eq!(c.num_partitions(), 3);
    assert_eq!(c.origin("num.partitions"), Some(Origin::Env));
    let c = load(
        Some(f),
        &[("KAFKA_NUM_PARTITIONS", "3")],
        &["num.partitions=4", "num.partitions=5"],
    )
    .unwrap();
    assert_eq!(c.num_partitions(), 5, "later --override wins");
    assert_eq!(c.origin("num.partitions"), Some(Origin::Override));
    assert_eq!(
        c.message_max_bytes(),
        1000,
        "file values without higher layers survive"
    );
}

#[test]
fn env_mapping_and_ignored_launcher_variables() {
    let c = load(
        None,
        &[
            ("KAFKA_LOG_RETENTION_HOURS", "5"),
            ("KAFKA_OPTS", "-Xmx1g"),
            ("KAFKA_HEAP_OPTS", "-Xmx1g"),
            ("KAFKA_JVM_PERFORMANCE_OPTS", "x"),
            ("KAFKA_LOG4J_OPTS", "x"),
            ("KAFKA_JMX_OPTS", "x"),
            ("KAFKA_HOME", "/opt/kafka"),
            ("HOME", "/root"),
        ],
        &[],
    )
    .unwrap();
    assert_eq!(c.get_i64("log.retention.hours"), Some(5));
    // `___` -> `-`: an unknown key built that way is ignored under its mapped name, proving
    // the mapping ran.
    let c = load(None, &[("KAFKA_SKIFF_NO___SUCH", "1")], &[]).unwrap();
    assert_eq!(c.ignored()[0].key, "skiff.no-such");
    // `__` -> `_`
    let c = load(None, &[("KAFKA_SOME__THING", "1")], &[]).unwrap();
    assert_eq!(c.ignored()[0].key, "some_thing");
}

/// Issue 12 item 12: variables that common tooling and images set beside a broker are a
/// warning naming the variable, not a startup error; the file and `--override` stay strict.
#[test]
fn stray_kafka_variables_warn_naming_the_variable_and_the_broker_starts() {
    let stray = [
        (
            "KAFKA_BOOTSTRAP_SERVERS",
            "localhost:9092",
            "bootstrap.servers",
        ),
        ("KAFKA_CLUSTER_ID", "abc", "cluster.id"),
        ("KAFKA_VERSION", "4.1.0", "version"),
    ];
    let pairs: Vec<(&str, &str)> = stray.iter().map(|(v, x, _)| (*v, *x)).collect();
    let mut pairs = pairs;
    pairs.push(("KAFKA_GC_LOG_OPTS", "-Xlog:gc"));
    pairs.push(("KAFKA_DEBUG", "y"));
    pairs.push(("KAFKA_NUM_PARTITIONS", "4"));
    let c = load(None, &pairs, &[]).unwrap();
    assert_eq!(c.num_partitions(), 4, "known variables still apply");
    let ignored: Vec<(&str, &str)> = c
        .ignored()
        .iter()
        .map(|i| (i.key.as_str(), i.source.as_str()))
        .collect();
    for (var, _, key) in stray {
        let source = format!("environment variable {var}");
        assert!(
            ignored.contains(&(key, source.as_str())),
            "{var}: {ignored:?}"
        );
    }
    // Launcher variables are skipped silently, as before.
    assert_eq!(ignored.len(), stray.len(), "{ignored:?}");
    // A near miss keeps its did-you-mean in the warning.
    let c = load(None, &[("KAFKA_LOG_RETENTION_HOUR", "5")], &[]).unwrap();
    assert!(
        c.ignored()[0]
            .reason
            .contains("did you mean `log.retention.hours`"),
        "{:?}",
        c.ignored()
    );
    // The same keys in a file or an --override are still refused.
    let e = load(None, &[], &["bootstrap.servers=x:1"]).unwrap_err();
    assert!(matches!(e, ConfigError::UnknownKey { .. }), "{e}");
    let dir = tempfile::tempdir().unwrap();
    let f = props_file(&dir, "cluster.id=abc\n");
    assert!(load(Some(f), &[], &[]).is_err());
    // An invalid value for a known key from the environment is still an error.
    assert!(load(None, &[("KAFKA_NUM_PARTITIONS", "many")], &[]).is_err());
}

#[test]
fn bitnami_kafka_cfg_variables_map_like_kafka_variables() {
    let c = load(
        None,
        &[
            ("KAFKA_CFG_NUM_PARTITIONS", "6"),
            ("KAFKA_CFG_LOG_RETENTION_HOURS", "7"),
        ],
        &[],
    )
    .unwrap();
    assert_eq!(c.num_partitions(), 6);
    assert_eq!(c.get_i64("log.retention.hours"), Some(7));
    assert_eq!(c.origin("num.partitions"), Some(Origin::Env));
    // Both forms for one key must agree.
    let c = load(
        None,
        &[
            ("KAFKA_CFG_NUM_PARTITIONS", "6"),
            ("KAFKA_NUM_PARTITIONS", "6"),
        ],
        &[],
    )
    .unwrap();
    assert_eq!(c.num_partitions(), 6);
    let e = load(
        None,
        &[
            ("KAFKA_CFG_NUM_PARTITIONS", "6"),
            ("KAFKA_NUM_PARTITIONS", "3"),
        ],
        &[],
    )
    .unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("KAFKA_CFG_NUM_PARTITIONS") && msg.contains("KAFKA_NUM_PARTITIONS"),
        "{msg}"
    );
    // --override still wins over both.
    let c = load(
        None,
        &[("KAFKA_CFG_NUM_PARTITIONS", "6")],
        &["num.partitions=2"],
    )
    .unwrap();
    assert_eq!(c.num_partitions(), 2);
}

/// Keys Kafka itself only warns about (plugin keys) warn from any source.
#[test]
fn plugin_keys_kafka_only_warns_about_are_ignored_with_a_warning() {
    let c = load(
        None,
        &[],
        &[
            "super.users=User:admin",
            "confluent.support.metrics.enable=false",
        ],
    )
    .unwrap();
    let keys: Vec<&str> = c.ignored().iter().map(|i| i.key.as_str()).collect();
    assert_eq!(keys, ["confluent.support.metrics.enable"]);
    assert!(c.ignored().iter().all(|i| i.source == "--override"));
    // Issue 19: the authorizer's own keys are read (by the security plan), not ignored.
    assert_eq!(
        c.passthrough().get("super.users").map(String::as_str),
        Some("User:admin")
    );
}

#[test]
fn unknown_key_is_rejected_with_did_you_mean() {
    let e = load(None, &[], &["log.retention.hour=5"]).unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("`log.retention.hour`"), "{msg}");
    assert!(msg.contains("did you mean `log.retention.hours`"), "{msg}");
    assert!(msg.contains("--override"), "{msg}");
    // A topic-level name at broker level points at its broker synonym.
    let e = load(None, &[], &["retention.ms=5"]).unwrap_err();
    assert!(
        e.to_string().contains("did you mean `log.retention.ms`"),
        "{e}"
    );
}

#[test]
fn unimplemented_and_passthrough_keys_are_accepted() {
    let c = load(
        None,
        &[],
        &[
            "ssl.keystore.location=/x.jks",
            "num.io.threads=16",
            "listener.name.internal.ssl.keystore.location=/y.jks",
            "listener.name.sasl_ssl.plain.sasl.jaas.config=x required;",
            "rsm.config.bucket=b",
        ],
    )
    .unwrap();
    assert_eq!(c.value("num.io.threads").as_deref(), Some("16"));
    assert_eq!(c.passthrough().len(), 3);
}

#[test]
fn bad_values_are_rejected_with_kafka_wording() {
    let e = load(None, &[], &["num.partitions=abc"]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Invalid value abc for configuration num.partitions: Not a number of type INT"
    );
    assert!(load(None, &[], &["auto.create.topics.enable=yes"]).is_err());
    let e = load(None, &[], &["listeners=localhost:9092"]).unwrap_err();
    assert!(e.to_string().contains("NAME://host:port"), "{e}");
    assert!(
        load(
            None,
            &[],
            &["advertised.listeners=PLAINTEXT://0.0.0.0:9092"]
        )
        .is_err()
    );
    assert!(load(None, &[], &["bogus"]).is_err());
}

#[test]
fn defaults_without_configuration() {
    let c = BrokerConfig::defaults().unwrap();
    assert_eq!(c.listeners()[0].to_string(), "PLAINTEXT://127.0.0.1:9092");
    assert_eq!(
        c.advertised_listeners()[0].to_string(),
        "PLAINTEXT://localhost:9092"
    );
    assert_eq!(c.log_dirs(), vec![PathBuf::from("./skiff-data")]);
    assert_eq!(c.node_id(), 1);
    assert_eq!(c.offsets_topic_replication_factor(), 1);
    assert_eq!(c.transaction_state_log_replication_factor(), 1);
    assert_eq!(c.transaction_state_log_min_isr(), 1);
    assert_eq!(c.group_initial_rebalance_delay_ms(), 0);
    assert!(c.auto_create_topics_enable());
}

#[test]
fn kafka_documented_defaults_spot_checks() {
    for (k, v) in [
        ("num.partitions", Some("1")),
        ("log.segment.bytes", Some("1073741824")),
        ("log.retention.hours", Some("168")),
        ("log.retention.ms", None),
        ("message.max.bytes", Some("1048588")),
        ("offsets.topic.num.partitions", Some("50")),
        ("offsets.topic.replication.factor", Some("3")),
        ("group.min.session.timeout.ms", Some("6000")),
        ("group.max.session.timeout.ms", Some("1800000")),
        ("group.initial.rebalance.delay.ms", Some("3000")),
        ("default.replication.factor", Some("1")),
        ("auto.create.topics.enable", Some("true")),
        ("socket.request.max.bytes", Some("104857600")),
        ("connections.max.idle.ms", Some("600000")),
        ("log.retention.check.interval.ms", Some("300000")),
        ("num.recovery.threads.per.data.dir", Some("2")),
        ("log.message.timestamp.after.max.ms", Some("3600000")),
        ("transaction.state.log.min.isr", Some("2")),
        ("transaction.max.timeout.ms", Some("900000")),
        ("replica.lag.time.max.ms", Some("30000")),
        ("log.dir", Some("/tmp/kafka-logs")),
        ("listeners", Some("PLAINTEXT://:9092")),
        ("producer.id.expiration.ms", Some("86400000")),
        (
            "group.coordinator.rebalance.protocols",
            Some("classic,consumer,streams"),
        ),
        ("node.id", None),
    ] {
        assert_eq!(
            broker_key(k)
                .unwrap_or_else(|| panic!("{k} missing"))
                .default,
            v,
            "{k}"
        );
    }
    // Keys Kafka 4.x removed are unknown.
    for gone in [
        "zookeeper.connect",
        "log.message.format.version",
        "inter.broker.protocol.version",
    ] {
        assert!(broker_key(gone).is_none(), "{gone}");
    }
    assert!(broker_key("ssl.keystore.password").unwrap().sensitive());
    assert_eq!(
        broker_key("log.retention.hours").unwrap().mode,
        skiff_config::DynamicMode::ReadOnly
    );
    assert_eq!(
        broker_key("log.retention.ms").unwrap().mode,
        skiff_config::DynamicMode::ClusterWide
    );
    assert_eq!(
        broker_key("listeners").unwrap().mode,
        skiff_config::DynamicMode::PerBroker
    );
}

#[test]
fn log_config_defaults_honour_ms_over_minutes_over_hours() {
    let c = BrokerConfig::defaults().unwrap();
    assert_eq!(c.log_config_defaults().retention_ms, 168 * 3_600_000);
    let c = load(None, &[], &["log.retention.hours=2"]).unwrap();
    assert_eq!(c.log_config_defaults().retention_ms, 2 * 3_600_000);
    let c = load(
        None,
        &[],
        &["log.retention.hours=2", "log.retention.minutes=3"],
    )
    .unwrap();
    assert_eq!(c.log_config_defaults().retention_ms, 3 * 60_000);
    let c = load(
        None,
        &[],
        &[
            "log.retention.hours=2",
            "log.retention.minutes=3",
            "log.retention.ms=7",
        ],
    )
    .unwrap();
    assert_eq!(c.log_config_defaults().retention_ms, 7);
    let c = load(
        None,
        &[],
        &[
            "log.roll.hours=1",
            "log.segment.bytes=2097152",
            "message.max.bytes=500",
        ],
    )
    .unwrap();
    let l = c.log_config_defaults();
    assert_eq!(l.segment_ms, 3_600_000);
    assert_eq!(l.segment_bytes, 2_097_152);
    assert_eq!(l.max_message_bytes, 500);
    assert_eq!(l.timestamp_after_max_ms, 3_600_000);
}

#[test]
fn topic_log_config_applies_and_validates_overrides() {
    let c = load(None, &[], &["log.retention.hours=2"]).unwrap();
    let mut o = BTreeMap::new();
    o.insert("segment.bytes".to_string(), "1048576".to_string());
    o.insert("cleanup.policy".to_string(), "compact".to_string());
    let l = c.topic_log_config(&o).unwrap();
    assert_eq!(l.segment_bytes, 1_048_576);
    assert!(l.cleanup_policy_compact && !l.cleanup_policy_delete);
    assert_eq!(
        l.retention_ms,
        2 * 3_600_000,
        "non-overridden keys follow the broker"
    );
    o.insert("min.insync.replicas".to_string(), "0".to_string());
    let e = c.topic_log_config(&o).unwrap_err();
    assert_eq!(e.error_code(), skiff_types::ErrorCode::InvalidConfig);
    assert!(e.to_string().contains("min.insync.replicas"), "{e}");
    let mut o = BTreeMap::new();
    o.insert("delivery.delay.enable".to_string(), "true".to_string());
    o.insert("retention.ms".to_string(), "60000".to_string());
    let e = c.topic_log_config(&o).unwrap_err();
    assert!(e.to_string().contains("delivery.delay.max.ms"), "{e}");
}

#[test]
fn log_manager_config_maps_broker_keys() {
    let c = load(
        None,
        &[],
        &[
            "log.dirs=/a,/b",
            "num.recovery.threads.per.data.dir=3",
            "log.retention.check.interval.ms=1000",
        ],
    )
    .unwrap();
    let m = c.log_manager_config();
    assert_eq!(m.log_dirs, vec![PathBuf::from("/a"), PathBuf::from("/b")]);
    assert_eq!(m.recovery_threads_per_dir, 3);
    assert_eq!(m.retention_check_interval_ms, 1000);
    let c = load(None, &[], &["log.dir=/only"]).unwrap();
    assert_eq!(c.log_dirs(), vec![PathBuf::from("/only")]);
}

#[test]
fn advertised_defaults_replace_wildcards() {
    let c = load(None, &[], &["listeners=PLAINTEXT://0.0.0.0:9092"]).unwrap();
    let a = &c.advertised_listeners()[0];
    assert!(!a.is_wildcard());
    assert_eq!(a.port, 9092);
    let c = load(
        None,
        &[],
        &[
            "listeners=PLAINTEXT://:0",
            "advertised.listeners=PLAINTEXT://kafka.example:9092",
        ],
    )
    .unwrap();
    assert_eq!(c.listeners()[0].port, 0);
    assert_eq!(c.advertised_listeners()[0].host, "kafka.example");
}

#[test]
fn describe_topic_override_synonyms_in_kafka_order() {
    let c = load(None, &[], &["log.retention.minutes=30"]).unwrap();
    let dynamic = DynamicConfigs {
        cluster_default: [("log.retention.ms".to_string(), "5000".to_string())].into(),
        per_broker: BTreeMap::new(),
    };
    let c = c.with_dynamic(dynamic).unwrap();
    let mut o = BTreeMap::new();
    o.insert("retention.ms".to_string(), "1234".to_string());
    let entries = c.describe_topic(&o);
    let r = entries.iter().find(|e| e.name == "retention.ms").unwrap();
    assert_eq!(r.value.as_deref(), Some("1234"));
    assert_eq!(r.source, ConfigSource::DynamicTopicConfig);
    assert!(!r.read_only && !r.sensitive);
    let syn: Vec<(&str, Option<&str>, ConfigSource)> = r
        .synonyms
        .iter()
        .map(|s| (s.name.as_str(), s.value.as_deref(), s.source))
        .collect();
    assert_eq!(
        syn,
        vec![
            (
                "retention.ms",
                Some("1234"),
                ConfigSource::DynamicTopicConfig
            ),
            (
                "log.retention.ms",
                Some("5000"),
                ConfigSource::DynamicDefaultBrokerConfig
            ),
            (
                "log.retention.minutes",
                Some("30"),
                ConfigSource::StaticBrokerConfig
            ),
            (
                "log.retention.hours",
                Some("168"),
                ConfigSource::DefaultConfig
            ),
        ]
    );
    // Without an override the value comes from the broker and the source from the layer.
    let s = c.describe_topic(&BTreeMap::new());
    let r = s.iter().find(|e| e.name == "retention.ms").unwrap();
    assert_eq!(r.value.as_deref(), Some("5000"));
    assert_eq!(r.source, ConfigSource::DynamicDefaultBrokerConfig);
    // Kafka drops synonyms before the primary broker name: nothing set -> no synonyms.
    let d = BrokerConfig::defaults()
        .unwrap()
        .describe_topic(&BTreeMap::new());
    let r = d.iter().find(|e| e.name == "retention.ms").unwrap();
    assert_eq!(r.value.as_deref(), Some("604800000"));
    assert_eq!(r.source, ConfigSource::DefaultConfig);
    assert!(r.synonyms.is_empty());
    let seg = d.iter().find(|e| e.name == "segment.bytes").unwrap();
    assert_eq!(seg.synonyms[0].name, "log.segment.bytes");
    assert_eq!(seg.synonyms[0].source, ConfigSource::DefaultConfig);
    assert_eq!(seg.config_type.describe_id(), 3);
}

#[test]
fn describe_broker_sources_and_sensitivity() {
    let c = load(
        None,
        &[],
        &["ssl.keystore.password=secret", "log.retention.ms=1000"],
    )
    .unwrap();
    let d = c.describe_broker();
    let pw = d
        .iter()
        .find(|e| e.name == "ssl.keystore.password")
        .unwrap();
    assert!(pw.sensitive);
    assert_eq!(pw.value, None);
    assert!(pw.synonyms.iter().all(|s| s.value.is_none()));
    let lp = d.iter().find(|e| e.name == "listeners").unwrap();
    assert_eq!(lp.source, ConfigSource::StaticBrokerConfig);
    assert_eq!(lp.value.as_deref(), Some("PLAINTEXT://127.0.0.1:9092"));
    let np = d.iter().find(|e| e.name == "num.partitions").unwrap();
    assert_eq!(np.source, ConfigSource::DefaultConfig);
    assert!(np.read_only);
    let hours = d.iter().find(|e| e.name == "log.retention.hours").unwrap();
    // log.retention.ms is set but precedes log.retention.hours, so Kafka drops it.
    assert_eq!(hours.synonyms.len(), 1);
    assert_eq!(hours.synonyms[0].source, ConfigSource::DefaultConfig);
    let ms = d.iter().find(|e| e.name == "log.retention.ms").unwrap();
    assert_eq!(ms.source, ConfigSource::StaticBrokerConfig);
    assert!(!ms.read_only);
    assert_eq!(ms.synonyms.len(), 2);
}

#[test]
fn dynamic_alter_refuses_read_only_and_layers_apply() {
    let e = validate_alter(&AlterTarget::Broker, "log.dirs", Some("/tmp/x")).unwrap_err();
    assert!(
        e.to_string()
            .contains("Cannot update these configs dynamically"),
        "{e}"
    );
    let c = BrokerConfig::defaults().unwrap();
    let mut d = DynamicConfigs::default();
    validate_alter(
        &AlterTarget::ClusterDefault,
        "message.max.bytes",
        Some("2000"),
    )
    .unwrap();
    d.apply(
        &AlterTarget::ClusterDefault,
        &[("message.max.bytes", Some("2000"))],
    );
    let c2 = c.with_dynamic(d.clone()).unwrap();
    assert_eq!(c2.message_max_bytes(), 2000);
    d.apply(&AlterTarget::Broker, &[("message.max.bytes", Some("3000"))]);
    let c3 = c.with_dynamic(d).unwrap();
    assert_eq!(
        c3.message_max_bytes(),
        3000,
        "per-broker beats cluster default"
    );
    let cd = c3.describe_cluster_default();
    assert_eq!(cd.len(), 1);
    assert_eq!(cd[0].value.as_deref(), Some("2000"));
    assert_eq!(cd[0].source, ConfigSource::DynamicDefaultBrokerConfig);
}

#[test]
fn broker_id_is_an_alias_of_node_id() {
    assert_eq!(load(None, &[], &["broker.id=7"]).unwrap().node_id(), 7);
    assert_eq!(load(None, &[], &["node.id=8"]).unwrap().node_id(), 8);
    assert_eq!(
        load(None, &[], &["node.id=8", "broker.id=8"])
            .unwrap()
            .node_id(),
        8
    );
    let e = load(None, &[], &["node.id=8", "broker.id=9"]).unwrap_err();
    assert!(e.to_string().contains("node.id"), "{e}");
}

#[test]
fn keys_skiff_acts_on_are_marked_implemented() {
    use skiff_config::Support;
    for k in [
        "listeners",
        "advertised.listeners",
        "log.dirs",
        "log.dir",
        "node.id",
        "broker.id",
        "num.partitions",
        "default.replication.factor",
        "auto.create.topics.enable",
        "socket.request.max.bytes",
        "connections.max.idle.ms",
        "max.connections",
        "max.connections.per.ip",
        "message.max.bytes",
        "log.segment.bytes",
        "log.retention.hours",
        "log.retention.ms",
        "log.roll.hours",
        "log.cleanup.policy",
        "offsets.topic.num.partitions",
        "transaction.state.log.min.isr",
        "producer.id.expiration.ms",
        "num.recovery.threads.per.data.dir",
        "log.retention.check.interval.ms",
        "log.flush.offset.checkpoint.interval.ms",
        "replica.high.watermark.checkpoint.interval.ms",
    ] {
        assert_eq!(broker_key(k).unwrap().support, Support::Implemented, "{k}");
    }
    // Issue 6: the group/offsets keys the coordinator reads, and the ones it ignores.
    for k in [
        "group.min.session.timeout.ms",
        "group.initial.rebalance.delay.ms",
        "group.consumer.assignors",
        "offsets.retention.minutes",
        "offset.metadata.max.bytes",
        "group.consumer.min.session.timeout.ms",
        "group.consumer.max.heartbeat.interval.ms",
    ] {
        assert_eq!(broker_key(k).unwrap().support, Support::Implemented, "{k}");
    }
    assert_eq!(
        broker_key("group.coordinator.threads").unwrap().support,
        Support::NotImplemented
    );
    assert_eq!(
        broker_key("group.share.max.size").unwrap().support,
        Support::Planned
    );
    assert_eq!(
        broker_key("num.io.threads").unwrap().support,
        Support::NotImplemented
    );
}

#[test]
fn effective_properties_names_sources_and_hides_passwords() {
    let c = load(
        None,
        &[("KAFKA_NUM_PARTITIONS", "3")],
        &["ssl.key.password=pw"],
    )
    .unwrap();
    let p = c.effective_properties();
    assert!(
        p.contains("# from the environment\nnum.partitions=3\n"),
        "{p}"
    );
    assert!(p.contains("ssl.key.password=[hidden]"), "{p}");
    assert!(!p.contains("=pw"), "{p}");
    assert!(
        p.contains("# from Skiff's defaults\nlog.dirs=./skiff-data\n"),
        "{p}"
    );
}

/// Issue 12 item 2: a dynamic layer is held to the startup safety rule too (an
/// IncrementalAlterConfigs may not install what `skiff serve` would refuse).
#[test]
fn dynamic_layers_are_checked_too() {
    let c = load(None, &[], &["max.connections.per.ip=100"]).unwrap();
    let lower = DynamicConfigs {
        cluster_default: [(
            "max.connections.per.ip.overrides".to_string(),
            "10.0.0.1:0".to_string(),
        )]
        .into(),
        per_broker: BTreeMap::new(),
    };
    let err = c.with_dynamic(lower).unwrap_err().to_string();
    assert!(err.contains("max.connections.per.ip.overrides"), "{err}");
    let sasl = DynamicConfigs {
        cluster_default: BTreeMap::new(),
        per_broker: [(
            "listener.security.protocol.map".to_string(),
            "PLAINTEXT:SASL_SSL".to_string(),
        )]
        .into(),
    };
    let err = c.with_dynamic(sasl).unwrap_err().to_string();
    assert!(err.contains("PLAINTEXT"), "{err}");
    let higher = DynamicConfigs {
        cluster_default: [(
            "max.connections.per.ip.overrides".to_string(),
            "10.0.0.1:500".to_string(),
        )]
        .into(),
        per_broker: BTreeMap::new(),
    };
    assert!(c.with_dynamic(higher).is_ok());
}
