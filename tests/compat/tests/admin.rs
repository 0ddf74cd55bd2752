//! Admin-client compatibility: confluent-kafka's AdminClient (PyPI) and kafka-python's
//! KafkaAdminClient against the `skiff` binary.
//!
//! - every config of a topic and of the broker is described and compared with Kafka 4.x's
//!   documented key names and defaults ([`TOPIC_DEFAULTS`], [`BROKER_DEFAULTS`]);
//! - topic configs altered (legacy and incremental, both clients) take effect: `retention.ms`
//!   deletes old segments, `message.timestamp.type=LogAppendTime` is what a consumer sees,
//!   `max.message.bytes` refuses then accepts a bigger record; a dynamic cluster default
//!   reaches topics; read-only keys are refused;
//! - CreatePartitions, then produce to the new partitions; DeleteRecords moves the start
//!   offset; DescribeCluster and DescribeLogDirs.
//!
//! Scripts: `tests/compat/py/admin_ck.py`, `admin_kp.py` (admin), `ck.py` (produce/consume).
//! Every test starts its own broker and finishes well under 60 s.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use skiff_compat::{Broker, Python, python};

/// Kafka 4.x topic-level keys and their documented defaults.
const TOPIC_DEFAULTS: &[(&str, &str)] = &[
    ("cleanup.policy", "delete"),
    ("compression.type", "producer"),
    ("compression.gzip.level", "-1"),
    ("compression.lz4.level", "9"),
    ("compression.zstd.level", "3"),
    ("delete.retention.ms", "86400000"),
    ("file.delete.delay.ms", "60000"),
    ("flush.messages", "9223372036854775807"),
    ("flush.ms", "9223372036854775807"),
    ("index.interval.bytes", "4096"),
    ("local.retention.bytes", "-2"),
    ("local.retention.ms", "-2"),
    ("max.compaction.lag.ms", "9223372036854775807"),
    ("max.message.bytes", "1048588"),
    ("message.timestamp.after.max.ms", "3600000"),
    ("message.timestamp.before.max.ms", "9223372036854775807"),
    ("message.timestamp.type", "CreateTime"),
    ("min.cleanable.dirty.ratio", "0.5"),
    ("min.compaction.lag.ms", "0"),
    ("min.insync.replicas", "1"),
    ("preallocate", "false"),
    ("remote.storage.enable", "false"),
    ("retention.bytes", "-1"),
    ("retention.ms", "604800000"),
    ("segment.bytes", "1073741824"),
    ("segment.index.bytes", "10485760"),
    ("segment.jitter.ms", "0"),
    ("segment.ms", "604800000"),
    ("unclean.leader.election.enable", "false"),
];

/// Kafka 4.x broker keys and their documented defaults (none set by the test harness or by
/// Skiff's shipped single-node defaults).
const BROKER_DEFAULTS: &[(&str, &str)] = &[
    ("background.threads", "10"),
    ("compression.type", "producer"),
    ("connections.max.idle.ms", "600000"),
    ("default.replication.factor", "1"),
    ("delete.topic.enable", "true"),
    ("fetch.max.bytes", "57671680"),
    ("group.max.session.timeout.ms", "1800000"),
    ("group.min.session.timeout.ms", "6000"),
    ("log.cleaner.delete.retention.ms", "86400000"),
    ("log.cleaner.enable", "true"),
    ("log.cleaner.threads", "1"),
    ("log.cleanup.policy", "delete"),
    ("log.flush.interval.messages", "9223372036854775807"),
    ("log.index.interval.bytes", "4096"),
    ("log.index.size.max.bytes", "10485760"),
    ("log.message.timestamp.after.max.ms", "3600000"),
    ("log.message.timestamp.type", "CreateTime"),
    ("log.retention.check.interval.ms", "300000"),
    ("log.retention.hours", "168"),
    ("log.roll.hours", "168"),
    ("log.segment.bytes", "1073741824"),
    ("max.connections", "2147483647"),
    ("max.connections.per.ip", "2147483647"),
    ("message.max.bytes", "1048588"),
    ("min.insync.replicas", "1"),
    ("num.io.threads", "8"),
    ("num.network.threads", "3"),
    ("num.partitions", "1"),
    ("num.recovery.threads.per.data.dir", "2"),
    ("offsets.retention.minutes", "10080"),
    ("offsets.topic.num.partitions", "50"),
    ("producer.id.expiration.ms", "86400000"),
    ("queued.max.requests", "500"),
    ("replica.fetch.max.bytes", "1048576"),
    ("socket.receive.buffer.bytes", "102400"),
    ("socket.request.max.bytes", "104857600"),
    ("socket.send.buffer.bytes", "102400"),
    ("transaction.state.log.num.partitions", "50"),
    ("unclean.leader.election.enable", "false"),
];

fn ck(command: &str, params: Value) -> Value {
    python(Python::PyPi, "admin_ck.py", command, &params)
}

fn kp(command: &str, params: Value) -> Value {
    python(Python::PyPi, "admin_kp.py", command, &params)
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

fn create_topic(b: &Broker, topic: &str, partitions: i32, configs: Value) {
    let r = ck(
        "create_topic",
        json!({"bootstrap": b.bootstrap(), "topic": topic, "partitions": partitions, "configs": configs}),
    );
    assert_eq!(r["error"], Value::Null, "create {topic}: {r}");
}

/// Produces `messages` (ck.py specs) with confluent-kafka; returns the delivery reports.
fn produce(b: &Broker, topic: &str, messages: Value) -> Vec<Value> {
    let r = python(
        Python::PyPi,
        "ck.py",
        "produce",
        &json!({"bootstrap": b.bootstrap(), "topic": topic, "messages": messages}),
    );
    r["reports"].as_array().cloned().unwrap_or_default()
}

/// Reads partition 0 of `topic` from the beginning with confluent-kafka.
fn consume_all(b: &Broker, topic: &str) -> Vec<Value> {
    let r = python(
        Python::PyPi,
        "ck.py",
        "consume",
        &json!({"bootstrap": b.bootstrap(), "topic": topic, "assign": [[0, -2]]}),
    );
    assert_eq!(r["errors"], json!([]), "{r}");
    r["messages"].as_array().cloned().unwrap_or_default()
}

fn earliest(b: &Broker, topic: &str) -> i64 {
    let r = ck(
        "list_offsets",
        json!({"bootstrap": b.bootstrap(), "topic": topic, "partitions": [0]}),
    );
    r["earliest"]["0"].as_i64().unwrap_or_else(|| panic!("{r}"))
}

fn segment_files(b: &Broker, topic: &str) -> usize {
    std::fs::read_dir(b.partition_dir(topic, 0))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".log"))
        })
        .count()
}

#[test]
fn admin_describe_configs_match_kafka_defaults() {
    let b = Broker::start();
    create_topic(&b, "described", 1, json!({}));
    let bootstrap = b.bootstrap();
    // confluent-kafka: {name: {value, source, read_only, sensitive, ...}}
    let topic = ck(
        "describe",
        json!({"bootstrap": bootstrap, "type": "topic", "name": "described"}),
    );
    let broker = ck(
        "describe",
        json!({"bootstrap": bootstrap, "type": "broker", "name": "1"}),
    );
    // kafka-python: {name: {value, config_source, read_only, is_sensitive, ...}}
    let topic_kp = kp(
        "describe",
        json!({"bootstrap": bootstrap, "type": "topic", "name": "described"}),
    );
    let broker_kp = kp(
        "describe",
        json!({"bootstrap": bootstrap, "type": "broker", "name": "1"}),
    );
    for (what, ck_cfg, kp_cfg, table) in [
        (
            "topic",
            &topic["configs"],
            &topic_kp["configs"],
            TOPIC_DEFAULTS,
        ),
        (
            "broker",
            &broker["configs"],
            &broker_kp["configs"],
            BROKER_DEFAULTS,
        ),
    ] {
        for (key, default) in table {
            let c = &ck_cfg[*key];
            assert_eq!(
                c["value"],
                json!(default),
                "{what} {key} (confluent-kafka): {c}"
            );
            assert_eq!(c["source"], json!("DEFAULT_CONFIG"), "{what} {key}: {c}");
            let k = &kp_cfg[*key];
            assert_eq!(
                k["value"],
                json!(default),
                "{what} {key} (kafka-python): {k}"
            );
            assert_eq!(
                k["config_source"],
                json!("DEFAULT_CONFIG"),
                "{what} {key}: {k}"
            );
        }
    }
    // Every key is described, not only the table's.
    assert!(topic["configs"].as_object().unwrap().len() >= TOPIC_DEFAULTS.len());
    assert!(broker["configs"].as_object().unwrap().len() > 250);
    assert_eq!(
        topic_kp["configs"].as_object().unwrap().len(),
        topic["configs"].as_object().unwrap().len()
    );
    // Flags and sources Kafka reports.
    let bc = &broker["configs"];
    assert_eq!(bc["num.partitions"]["read_only"], json!(true));
    assert_eq!(bc["log.retention.ms"]["read_only"], json!(false));
    assert_eq!(bc["message.max.bytes"]["read_only"], json!(false));
    assert_eq!(bc["ssl.keystore.password"]["sensitive"], json!(true));
    assert_eq!(bc["ssl.keystore.password"]["value"], Value::Null);
    // Values the harness set on the command line are static broker config.
    assert_eq!(
        bc["log.dirs"]["value"],
        json!(b.log_dir().display().to_string())
    );
    assert_eq!(bc["log.dirs"]["source"], json!("STATIC_BROKER_CONFIG"));
    // A topic default's synonyms name the broker key it comes from.
    let cp = &topic["configs"]["cleanup.policy"]["synonyms"];
    assert_eq!(
        cp,
        &json!([["log.cleanup.policy", "delete", "DEFAULT_CONFIG"]]),
        "{cp}"
    );
    // (The cluster-default resource, a BROKER named "", is refused client-side by both Python
    // clients; the server e2e tests cover it over raw TCP.)
}

#[test]
fn admin_alter_topic_configs_take_effect() {
    let b = Broker::start_with(&[("log.retention.check.interval.ms", "200")]);
    let bootstrap = b.bootstrap();
    let started = now_ms();

    // retention.ms (confluent-kafka incremental SET) -> old segments deleted.
    create_topic(&b, "ret", 1, json!({"segment.bytes": "1048576"}));
    let old = started - 2 * 3_600_000;
    let big: Vec<Value> = (0..3)
        .map(|_| json!({"key": "k", "value_len": 600_000, "partition": 0, "timestamp": old}))
        .collect();
    let reports = produce(&b, "ret", Value::Array(big));
    assert!(reports.iter().all(|r| r["error"].is_null()), "{reports:?}");
    assert!(
        segment_files(&b, "ret") >= 3,
        "3 records of 600 KB roll 1 MiB segments"
    );
    assert_eq!(
        earliest(&b, "ret"),
        0,
        "7-day default keeps 2-hour-old records"
    );
    let r = ck(
        "incremental",
        json!({"bootstrap": bootstrap, "type": "topic", "name": "ret", "ops": [["retention.ms", "SET", "3600000"]]}),
    );
    assert_eq!(r["error"], Value::Null, "{r}");
    let deadline = Instant::now() + Duration::from_secs(20);
    while earliest(&b, "ret") < 3 {
        assert!(
            Instant::now() < deadline,
            "retention.ms=1h did not delete the 2-hour-old segments"
        );
        std::thread::sleep(Duration::from_millis(100)); // polling the retention pass
    }
    assert!(segment_files(&b, "ret") <= 2, "the old segments are gone");
    let d = kp(
        "describe",
        json!({"bootstrap": bootstrap, "type": "topic", "name": "ret"}),
    );
    assert_eq!(d["configs"]["retention.ms"]["value"], json!("3600000"));
    assert_eq!(
        d["configs"]["retention.ms"]["config_source"],
        json!("DYNAMIC_TOPIC_CONFIG")
    );

    // message.timestamp.type (kafka-python incremental) -> LogAppendTime seen by a consumer.
    create_topic(&b, "ts", 1, json!({}));
    // One minute old: within the 7-day retention (a 1970 timestamp would be deleted).
    let minute_ago = started - 60_000;
    let r = produce(
        &b,
        "ts",
        json!([{"key": "a", "value": "before", "partition": 0, "timestamp": minute_ago}]),
    );
    assert!(r[0]["error"].is_null(), "{r:?}");
    let r = kp(
        "alter",
        json!({"bootstrap": bootstrap, "type": "topic", "name": "ts", "incremental": true,
               "configs": {"message.timestamp.type": ["SET", "LogAppendTime"]}}),
    );
    assert_eq!(r["error"], Value::Null, "{r}");
    let r = produce(
        &b,
        "ts",
        json!([{"key": "b", "value": "after", "partition": 0, "timestamp": minute_ago}]),
    );
    assert!(r[0]["error"].is_null(), "{r:?}");
    let got = consume_all(&b, "ts");
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0]["timestamp_type"], json!("CreateTime"));
    assert_eq!(got[0]["timestamp"], json!(minute_ago));
    assert_eq!(
        got[1]["timestamp_type"],
        json!("LogAppendTime"),
        "{}",
        got[1]
    );
    assert!(
        got[1]["timestamp"].as_i64().unwrap() >= started,
        "{}",
        got[1]
    );

    // max.message.bytes (confluent-kafka legacy AlterConfigs, then kafka-python legacy).
    create_topic(&b, "size", 1, json!({}));
    let r = ck(
        "alter",
        json!({"bootstrap": bootstrap, "type": "topic", "name": "size", "configs": {"max.message.bytes": "2000"}}),
    );
    assert_eq!(r["error"], Value::Null, "{r}");
    let five_k = json!([{"key": "k", "value_len": 5000, "partition": 0}]);
    let refused = produce(&b, "size", five_k.clone());
    assert_eq!(
        refused[0]["error"],
        json!("MSG_SIZE_TOO_LARGE"),
        "{refused:?}"
    );
    let r = kp(
        "alter",
        json!({"bootstrap": bootstrap, "type": "topic", "name": "size", "incremental": false,
               "configs": {"max.message.bytes": "10000"}}),
    );
    assert_eq!(r["error"], Value::Null, "{r}");
    let accepted = produce(&b, "size", five_k);
    assert_eq!(accepted[0]["error"], Value::Null, "{accepted:?}");

    // A dynamic broker config reaches topics without an override.
    let r = ck(
        "incremental",
        json!({"bootstrap": bootstrap, "type": "broker", "name": "1", "ops": [["log.retention.ms", "SET", "7200000"]]}),
    );
    assert_eq!(r["error"], Value::Null, "{r}");
    let d = ck(
        "describe",
        json!({"bootstrap": bootstrap, "type": "topic", "name": "ts"}),
    );
    assert_eq!(
        d["configs"]["retention.ms"]["value"],
        json!("7200000"),
        "{d}"
    );
    assert_eq!(
        d["configs"]["retention.ms"]["source"],
        json!("DYNAMIC_BROKER_CONFIG")
    );
    // Refusals: read-only key (needs a restart), invalid topic value.
    let r = ck(
        "incremental",
        json!({"bootstrap": bootstrap, "type": "broker", "name": "1", "ops": [["num.partitions", "SET", "3"]]}),
    );
    assert_eq!(r["error"], json!("INVALID_REQUEST"), "{r}");
    assert!(r["message"].as_str().unwrap().contains("restart"), "{r}");
    let r = ck(
        "incremental",
        json!({"bootstrap": bootstrap, "type": "topic", "name": "ts", "ops": [["retention.ms", "SET", "soon"]]}),
    );
    assert_eq!(r["error"], json!("INVALID_CONFIG"), "{r}");
}

#[test]
fn admin_create_partitions_and_produce_to_them() {
    let b = Broker::start();
    let bootstrap = b.bootstrap();
    create_topic(&b, "grow", 1, json!({}));
    let r = ck(
        "create_partitions",
        json!({"bootstrap": bootstrap, "topic": "grow", "count": 3}),
    );
    assert_eq!(r["error"], Value::Null, "{r}");
    let r = kp(
        "create_partitions",
        json!({"bootstrap": bootstrap, "topic": "grow", "count": 5}),
    );
    assert_eq!(r["error"], Value::Null, "{r}");
    let r = ck(
        "partitions",
        json!({"bootstrap": bootstrap, "topic": "grow"}),
    );
    assert_eq!(r["partitions"], json!([0, 1, 2, 3, 4]), "{r}");
    let msgs: Vec<Value> = (0..5)
        .map(|p| json!({"key": "k", "value": format!("p{p}"), "partition": p}))
        .collect();
    let reports = produce(&b, "grow", Value::Array(msgs));
    for (p, rep) in reports.iter().enumerate() {
        assert_eq!(rep["error"], Value::Null, "{rep}");
        assert_eq!(rep["partition"], json!(p), "{rep}");
        assert_eq!(rep["offset"], json!(0), "{rep}");
    }
    let r = kp(
        "create_partitions",
        json!({"bootstrap": bootstrap, "topic": "grow", "count": 4}),
    );
    assert!(
        r["error"]
            .as_str()
            .is_some_and(|e| e.contains("would not be an increase")),
        "{r}"
    );
    let r = ck(
        "create_partitions",
        json!({"bootstrap": bootstrap, "topic": "grow", "count": 5}),
    );
    assert_eq!(r["error"], json!("INVALID_PARTITIONS"), "{r}");
}

#[test]
fn admin_delete_records_moves_the_start_offset() {
    let b = Broker::start();
    let bootstrap = b.bootstrap();
    create_topic(&b, "del", 1, json!({}));
    let msgs: Vec<Value> = (0..10)
        .map(|i| json!({"key": "k", "value": format!("v{i}"), "partition": 0}))
        .collect();
    produce(&b, "del", Value::Array(msgs));
    let r = ck(
        "delete_records",
        json!({"bootstrap": bootstrap, "topic": "del", "partition": 0, "offset": 4}),
    );
    assert_eq!(
        (r["error"].clone(), r["low_watermark"].clone()),
        (Value::Null, json!(4)),
        "{r}"
    );
    assert_eq!(earliest(&b, "del"), 4);
    let got = consume_all(&b, "del");
    assert_eq!(
        got.first().map(|m| m["offset"].clone()),
        Some(json!(4)),
        "{got:?}"
    );
    assert_eq!(got.len(), 6);
    let r = kp(
        "delete_records",
        json!({"bootstrap": bootstrap, "topic": "del", "partition": 0, "offset": 7}),
    );
    assert_eq!(
        (r["error"].clone(), r["low_watermark"].clone()),
        (Value::Null, json!(7)),
        "{r}"
    );
    let r = ck(
        "delete_records",
        json!({"bootstrap": bootstrap, "topic": "del", "partition": 0, "offset": -1}),
    );
    assert_eq!(
        r["low_watermark"],
        json!(10),
        "-1 = the high watermark: {r}"
    );
    assert_eq!(earliest(&b, "del"), 10);
    create_topic(&b, "compacted", 1, json!({"cleanup.policy": "compact"}));
    let r = ck(
        "delete_records",
        json!({"bootstrap": bootstrap, "topic": "compacted", "partition": 0, "offset": -1}),
    );
    assert_eq!(r["error"], json!("POLICY_VIOLATION"), "{r}");
}

#[test]
fn admin_describe_cluster_and_log_dirs() {
    let b = Broker::start();
    let bootstrap = b.bootstrap();
    create_topic(&b, "dirs", 2, json!({}));
    produce(
        &b,
        "dirs",
        json!([{"key": "k", "value": "hello", "partition": 1}]),
    );
    let c = ck("describe_cluster", json!({"bootstrap": bootstrap}));
    let cluster_id = c["cluster_id"].as_str().unwrap().to_owned();
    assert_eq!(cluster_id.len(), 22, "{c}");
    assert_eq!(c["controller"], json!(1), "{c}");
    assert_eq!(c["nodes"], json!([[1, "127.0.0.1", b.port()]]), "{c}");
    // librdkafka sends DescribeCluster as Metadata v10 with IncludeClusterAuthorizedOperations
    // (issue 15 item 7): every CLUSTER operation with no authorizer, as Kafka answers.
    assert_eq!(
        c["authorized_operations"],
        json!([
            "ALTER",
            "ALTER_CONFIGS",
            "CLUSTER_ACTION",
            "CREATE",
            "DESCRIBE",
            "DESCRIBE_CONFIGS",
            "IDEMPOTENT_WRITE"
        ]),
        "{c}"
    );
    let k = kp("describe_cluster", json!({"bootstrap": bootstrap}));
    assert_eq!(k["cluster_id"], json!(cluster_id), "{k}");
    assert_eq!(k["controller_id"], json!(1), "{k}");
    assert_eq!(k["brokers"][0]["port"], json!(b.port()), "{k}");
    assert!(
        k["authorized_operations"]
            .as_array()
            .unwrap()
            .contains(&json!("DESCRIBE")),
        "{k}"
    );
    let d = kp("describe_log_dirs", json!({"bootstrap": bootstrap}));
    let brokers = d["brokers"].as_array().unwrap();
    assert_eq!(brokers.len(), 1, "{d}");
    let dirs = brokers[0]["log_dirs"].as_array().unwrap();
    assert_eq!(dirs.len(), 1, "{d}");
    assert_eq!(dirs[0]["error_code"], json!(0));
    assert_eq!(
        dirs[0]["log_dir"],
        json!(b.log_dir().display().to_string()),
        "{d}"
    );
    assert!(dirs[0]["usable_bytes"].as_i64().unwrap() > 0, "{d}");
    let topic = dirs[0]["topics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == json!("dirs"))
        .unwrap_or_else(|| panic!("{d}"));
    let mut sizes: Vec<(i64, i64)> = topic["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["partition_index"].as_i64().unwrap(),
                p["partition_size"].as_i64().unwrap(),
            )
        })
        .collect();
    sizes.sort_unstable();
    assert_eq!(sizes.len(), 2, "{d}");
    assert_eq!(sizes[0], (0, 0));
    assert!(sizes[1].1 > 0, "partition 1 holds a batch: {d}");
}

/// Issue 15 item 2: an empty `cleanup.policy` (no deletion, no compaction: kept forever) is
/// accepted by every way of setting it, as Kafka does (a blank list is an empty list), and
/// described as "" from DYNAMIC_TOPIC_CONFIG; an empty element inside a list is still refused.
#[test]
fn admin_empty_cleanup_policy_is_accepted_everywhere() {
    let b = Broker::start();
    let bootstrap = b.bootstrap();
    let described = |topic: &str| {
        let d = ck(
            "describe",
            json!({"bootstrap": bootstrap, "type": "topic", "name": topic}),
        );
        d["configs"]["cleanup.policy"].clone()
    };
    let empty = |c: &Value, how: &str| {
        assert!(
            c["value"] == json!("") || c["value"].is_null(),
            "{how}: {c}"
        );
        assert_eq!(c["source"], json!("DYNAMIC_TOPIC_CONFIG"), "{how}: {c}");
    };
    // CreateTopics.
    create_topic(&b, "keep-create", 1, json!({"cleanup.policy": ""}));
    empty(&described("keep-create"), "CreateTopics");
    // IncrementalAlterConfigs SUBTRACT of the last value, and SET "".
    create_topic(&b, "keep-sub", 1, json!({"cleanup.policy": "delete"}));
    let r = ck(
        "incremental",
        json!({"bootstrap": bootstrap, "type": "topic", "name": "keep-sub",
               "ops": [["cleanup.policy", "SUBTRACT", "delete"]]}),
    );
    assert_eq!(r["error"], Value::Null, "{r}");
    empty(&described("keep-sub"), "SUBTRACT");
    create_topic(&b, "keep-set", 1, json!({}));
    let r = ck(
        "incremental",
        json!({"bootstrap": bootstrap, "type": "topic", "name": "keep-set",
               "ops": [["cleanup.policy", "SET", ""]]}),
    );
    assert_eq!(r["error"], Value::Null, "{r}");
    empty(&described("keep-set"), "SET");
    // Legacy AlterConfigs.
    create_topic(&b, "keep-alter", 1, json!({}));
    let r = ck(
        "alter",
        json!({"bootstrap": bootstrap, "type": "topic", "name": "keep-alter",
               "configs": {"cleanup.policy": ""}}),
    );
    assert_eq!(r["error"], Value::Null, "{r}");
    empty(&described("keep-alter"), "AlterConfigs");
    // An empty element is not an empty list.
    let r = ck(
        "create_topic",
        json!({"bootstrap": bootstrap, "topic": "bad-policy", "configs": {"cleanup.policy": "compact,"}}),
    );
    assert_eq!(r["error"], json!("INVALID_CONFIG"), "{r}");
}

/// Per-group configs (ConfigResource GROUP, issue 15 item 3) through confluent-kafka's admin
/// client: every key described (DEFAULT_CONFIG with the broker's value until set), SET and
/// DELETE stored as GROUP_CONFIG, Kafka's refusals (bounds from the broker's
/// `group.consumer.min/max.*`, unknown keys, APPEND), and the configs survive a restart. The
/// coordinator using them is tested in groups/members.rs.
#[test]
fn admin_group_configs_are_described_bounded_and_persisted() {
    let mut b = Broker::start_with(&[("group.consumer.heartbeat.interval.ms", "6000")]);
    let describe = |b: &Broker, group: &str| {
        let d = ck(
            "describe",
            json!({"bootstrap": b.bootstrap(), "type": "group", "name": group}),
        );
        assert_eq!(d["error"], Value::Null, "{d}");
        d["configs"].clone()
    };
    let alter = |b: &Broker, ops: Value| {
        ck(
            "incremental",
            json!({"bootstrap": b.bootstrap(), "type": "group", "name": "g-cfg", "ops": ops}),
        )
    };
    let d = describe(&b, "g-cfg");
    let names: Vec<&String> = d.as_object().unwrap().keys().collect();
    assert_eq!(
        names,
        [
            "consumer.heartbeat.interval.ms",
            "consumer.session.timeout.ms",
            "share.auto.offset.reset",
            "share.heartbeat.interval.ms",
            "share.isolation.level",
            "share.record.lock.duration.ms",
            "share.session.timeout.ms",
            "streams.heartbeat.interval.ms",
            "streams.num.standby.replicas",
            "streams.session.timeout.ms",
        ]
    );
    let hb = &d["consumer.heartbeat.interval.ms"];
    assert_eq!(
        (&hb["value"], &hb["source"]),
        (&json!("6000"), &json!("DEFAULT_CONFIG")),
        "the broker's value is the default: {hb}"
    );
    let r = alter(
        &b,
        json!([
            ["consumer.session.timeout.ms", "SET", "50000"],
            ["share.auto.offset.reset", "SET", "by_duration:PT1H"]
        ]),
    );
    assert_eq!(r["error"], Value::Null, "{r}");
    // Refusals, each with Kafka's code and message; nothing of a refused request is stored.
    for (ops, code, message) in [
        (
            json!([["consumer.session.timeout.ms", "SET", "70000"]]),
            "INVALID_CONFIG",
            "consumer.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms",
        ),
        (
            json!([["nosuch.key", "SET", "1"]]),
            "INVALID_CONFIG",
            "Unknown group config name: nosuch.key",
        ),
        (
            json!([["consumer.session.timeout.ms", "APPEND", "1"]]),
            "INVALID_CONFIG",
            "Can't APPEND to key consumer.session.timeout.ms because its type is not LIST.",
        ),
        (
            json!([["share.isolation.level", "SET", "bogus"]]),
            "INVALID_CONFIG",
            "Invalid value bogus for configuration share.isolation.level: String must be one of: read_committed, read_uncommitted",
        ),
    ] {
        let r = alter(&b, ops.clone());
        assert_eq!(r["error"], json!(code), "{ops}: {r}");
        assert_eq!(r["message"], json!(message), "{ops}: {r}");
    }
    let check = |b: &Broker, when: &str| {
        let d = describe(b, "g-cfg");
        let s = &d["consumer.session.timeout.ms"];
        assert_eq!(
            (&s["value"], &s["source"]),
            (&json!("50000"), &json!("GROUP_CONFIG")),
            "{when}: {s}"
        );
        assert_eq!(
            d["share.auto.offset.reset"]["value"],
            json!("by_duration:PT1H")
        );
        assert_eq!(
            d["share.isolation.level"]["source"],
            json!("DEFAULT_CONFIG")
        );
        // Another group is untouched.
        let other = describe(b, "g-other");
        assert_eq!(
            other["consumer.session.timeout.ms"]["source"],
            json!("DEFAULT_CONFIG")
        );
    };
    check(&b, "after SET");
    b.stop();
    b.restart();
    check(&b, "after a restart");
    let r = alter(&b, json!([["share.auto.offset.reset", "DELETE", null]]));
    assert_eq!(r["error"], Value::Null, "{r}");
    let d = describe(&b, "g-cfg");
    assert_eq!(
        (
            &d["share.auto.offset.reset"]["value"],
            &d["share.auto.offset.reset"]["source"]
        ),
        (&json!("latest"), &json!("DEFAULT_CONFIG"))
    );
}
