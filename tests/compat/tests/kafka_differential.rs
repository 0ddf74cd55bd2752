//! Differential tests (issue 14 item 4): the same scenario against Apache Kafka (the pinned
//! KRaft single node of `scripts/kafka-reference.sh`) and against Skiff, through the same stock
//! client (PyPI confluent-kafka, `admin_ck.py`), compared field by field. One Kafka start is
//! shared by the scenarios of this file (CI budget).
//!
//! Scenarios so far:
//! - CreateTopics validation: valid, duplicate, bad names, bad partition counts, replication
//!   factor above the broker count, bad and unknown configs (an empty `cleanup.policy` is
//!   valid): the same error code and the same message on both.
//! - ListOffsets earliest / latest on a new topic, after three records and after
//!   DeleteRecords: the same offsets on both.
//! - DescribeConfigs of a new topic, with and without overrides: every key with its value,
//!   source, read-only, sensitive and default flags and synonyms. Documented differences:
//!   Skiff's own keys (KIP-280 `compaction.strategy*`, KIP-1277 `delivery.delay.*`: features
//!   Kafka lacks), and `min.insync.replicas`, which Kafka 4.1's controller writes as a
//!   cluster-level dynamic default at bootstrap (KIP-966, eligible leader replicas), so Kafka
//!   reports it as DYNAMIC_DEFAULT_BROKER_CONFIG; Skiff has no ELR and reports the static
//!   default (same value and flags).
//!
//! - Online group migration (issue 15 item 1, `group.consumer.migration.policy`
//!   bidirectional, both brokers' default): two classic confluent-kafka members, then a
//!   `group.protocol=consumer` member joins the group and later leaves (`groups_ck.py
//!   migration`). Compared per phase: the group type ListGroups reports, how many members
//!   hold partitions, that they cover the topic disjointly, that every record is consumed,
//!   and that no client saw a fatal or commit error. Which member gets which partition is the
//!   assignors' choice and is not compared.
//!
//! A difference fails the test unless the scenario says why Skiff answers otherwise.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};
use skiff_compat::{Broker, KafkaNode, Python, kcat, python};

const SCRIPT: &str = "admin_ck.py";

/// One admin call against `bootstrap`, its JSON answer.
fn admin(bootstrap: &str, command: &str, mut params: Value) -> Value {
    params["bootstrap"] = json!(bootstrap);
    python(Python::PyPi, SCRIPT, command, &params)
}

/// Runs `command` with `params` against both brokers: (kafka, skiff).
fn both(kafka: &str, skiff: &str, command: &str, params: Value) -> (Value, Value) {
    (
        admin(kafka, command, params.clone()),
        admin(skiff, command, params),
    )
}

#[test]
fn kafka_differential_create_topics_and_list_offsets() {
    let kafka = KafkaNode::start();
    let skiff = Broker::start();
    let (k, s) = (kafka.bootstrap(), skiff.bootstrap());

    // ---- CreateTopics validation: the error code of each request -------------------------
    let long_name = "x".repeat(250);
    let cases: Vec<(&str, Value)> = vec![
        ("valid", json!({"topic": "d-valid", "partitions": 3})),
        ("duplicate", json!({"topic": "d-valid", "partitions": 3})),
        ("name with a space", json!({"topic": "bad name"})),
        ("name of 250 characters", json!({"topic": long_name})),
        ("name '..'", json!({"topic": ".."})),
        (
            "replication factor 2 on one broker",
            json!({"topic": "d-rf", "replication_factor": 2}),
        ),
        (
            "retention.ms not a number",
            json!({"topic": "d-c1", "configs": {"retention.ms": "abc"}}),
        ),
        (
            "cleanup.policy unknown",
            json!({"topic": "d-c2", "configs": {"cleanup.policy": "bogus"}}),
        ),
        // Issue 15 item 2: a blank list is an empty policy (kept forever); an empty element
        // is not.
        (
            "cleanup.policy empty",
            json!({"topic": "d-c2e", "configs": {"cleanup.policy": ""}}),
        ),
        (
            "cleanup.policy with an empty element",
            json!({"topic": "d-c2f", "configs": {"cleanup.policy": "compact,"}}),
        ),
        (
            "compression.type unknown",
            json!({"topic": "d-c3", "configs": {"compression.type": "brotli"}}),
        ),
        (
            "min.insync.replicas 0",
            json!({"topic": "d-c4", "configs": {"min.insync.replicas": "0"}}),
        ),
        (
            "unknown config key",
            json!({"topic": "d-c5", "configs": {"no.such.config": "1"}}),
        ),
        (
            "segment.bytes below the minimum",
            json!({"topic": "d-c6", "configs": {"segment.bytes": "100"}}),
        ),
        (
            "compression.lz4.level above the maximum",
            json!({"topic": "d-c7", "configs": {"compression.lz4.level": "18"}}),
        ),
        (
            "max.message.bytes negative",
            json!({"topic": "d-c8", "configs": {"max.message.bytes": "-1"}}),
        ),
    ];
    let mut differences = Vec::new();
    for (what, params) in &cases {
        let (kr, sr) = both(&k, &s, "create_topic", params.clone());
        println!("{what}: kafka {kr} | skiff {sr}");
        // The whole answer: error code and message.
        if kr != sr {
            differences.push(format!("{what}: kafka {kr} vs skiff {sr}"));
        }
    }
    assert!(
        differences.is_empty(),
        "CreateTopics differs from Apache Kafka:\n{}",
        differences.join("\n")
    );

    // ---- ListOffsets earliest / latest ------------------------------------------------------
    let offsets = |bootstrap: &str| {
        admin(
            bootstrap,
            "list_offsets",
            json!({"topic": "d-valid", "partitions": [0, 1, 2]}),
        )
    };
    let (kr, sr) = (offsets(&k), offsets(&s));
    assert_eq!(kr, sr, "a new topic's offsets");
    for bootstrap in [&k, &s] {
        kcat(
            &["-P", "-b", bootstrap, "-t", "d-valid", "-p", "1"],
            b"a\nb\nc\n",
        )
        .assert_success("kcat -P");
    }
    let (kr, sr) = (offsets(&k), offsets(&s));
    assert_eq!(kr["latest"]["1"], 3, "kafka: {kr}");
    assert_eq!(kr, sr, "offsets after three records");
    let (kd, sd) = both(
        &k,
        &s,
        "delete_records",
        json!({"topic": "d-valid", "partition": 1, "offset": 2}),
    );
    assert_eq!(kd, sd, "DeleteRecords");
    let (kr, sr) = (offsets(&k), offsets(&s));
    assert_eq!(kr["earliest"]["1"], 2, "kafka: {kr}");
    assert_eq!(kr, sr, "offsets after DeleteRecords");

    // ---- DescribeConfigs of a new topic ----------------------------------------------------
    for (topic, configs) in [
        ("d-plain", json!({})),
        (
            "d-overrides",
            json!({"retention.ms": "1000", "cleanup.policy": "compact", "max.message.bytes": "2048"}),
        ),
    ] {
        let (kc, sc) = both(
            &k,
            &s,
            "create_topic",
            json!({"topic": topic, "configs": configs}),
        );
        assert_eq!((&kc["error"], &sc["error"]), (&Value::Null, &Value::Null));
        let (kd, sd) = both(&k, &s, "describe", json!({"type": "topic", "name": topic}));
        let (kd, sd) = (&kd["configs"], &sd["configs"]);
        let (kmap, smap) = (kd.as_object().unwrap(), sd.as_object().unwrap());
        let skiff_only: Vec<&String> = smap.keys().filter(|k| !kmap.contains_key(*k)).collect();
        let kafka_only: Vec<&String> = kmap.keys().filter(|k| !smap.contains_key(*k)).collect();
        assert!(
            kafka_only.is_empty(),
            "{topic}: keys Skiff lacks: {kafka_only:?}"
        );
        for key in &skiff_only {
            assert!(
                key.starts_with("compaction.strategy") || key.starts_with("delivery.delay."),
                "{topic}: undocumented Skiff-only key {key}"
            );
        }
        let mut differences = Vec::new();
        for (key, kv) in kmap {
            let sv = &smap[key];
            if key == "min.insync.replicas" && kv["source"] == "DYNAMIC_DEFAULT_BROKER_CONFIG" {
                for field in ["value", "read_only", "sensitive"] {
                    assert_eq!(kv[field], sv[field], "{topic} {key} {field}");
                }
                continue;
            }
            if kv != sv {
                differences.push(format!("{key}:\n  kafka {kv}\n  skiff {sv}"));
            }
        }
        assert!(
            differences.is_empty(),
            "{topic}: DescribeConfigs differs from Apache Kafka:\n{}",
            differences.join("\n")
        );
    }

    // ---- Online migration classic -> consumer -> classic -------------------------------------
    let migration = |bootstrap: &str| {
        admin(
            bootstrap,
            "create_topic",
            json!({"topic": "d-mig", "partitions": 6}),
        );
        let r = python(
            Python::PyPi,
            "groups_ck.py",
            "migration",
            &json!({
                "bootstrap": bootstrap, "group": "d-mig", "topic": "d-mig", "partitions": 6,
                "wait_s": 40,
            }),
        );
        // The shape of each phase, without who holds what.
        let mut shape = json!({});
        for phase in ["classic", "mixed", "downgraded"] {
            let p = &r["phases"][phase];
            let assigned = p["assigned"].as_object().cloned().unwrap_or_default();
            let mut all: Vec<i64> = assigned
                .values()
                .flat_map(|v| v.as_array().cloned().unwrap_or_default())
                .filter_map(|x| x.as_i64())
                .collect();
            all.sort_unstable();
            shape[phase] = json!({
                "type": p["type"],
                "members_holding": assigned.values().filter(|v| v.as_array().is_some_and(|a| !a.is_empty())).count(),
                "partitions": all,
                "all_consumed": p["all_consumed"],
            });
        }
        for e in ["fatal", "commit_errors", "thread_errors"] {
            shape[e] = r[e].clone();
        }
        println!("migration on {bootstrap}: {r}");
        shape
    };
    let (km, sm) = (migration(&k), migration(&s));
    assert_eq!(
        km, sm,
        "online migration differs from Apache Kafka: kafka {km} vs skiff {sm}"
    );
    assert_eq!(km["mixed"]["type"], json!("consumer"), "{km}");
    drop(kafka);
}
