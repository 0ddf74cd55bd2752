//! Topic lifecycle: auto-creation through Metadata with `num.partitions` (and not when
//! disabled), and CreateTopics/DeleteTopics through confluent-kafka's AdminClient (PyPI and
//! Debian) and kafkajs' admin.

use rdkafka::error::RDKafkaErrorCode;
use serde_json::{Value, json};
use skiff_compat::{Broker, Python, kcat, node, python};

use crate::common::{Out, rd_partition_count, rd_produce, rd_watermarks, rec};

fn one(partition: i32) -> Vec<Out> {
    vec![Out::new(rec(Some("k"), Some("v"), &[]), partition)]
}

#[test]
fn topics_auto_created_on_metadata_with_num_partitions() {
    let b = Broker::start_with(&[("num.partitions", "3")]);
    // A plain metadata listing creates nothing.
    assert_eq!(rd_partition_count(&b.bootstrap(), "auto-rd"), None);
    // rdkafka crate: produce straight to partition 2 of a topic that does not exist yet.
    let d = rd_produce(&b.bootstrap(), "auto-rd", &one(2), &[]);
    assert_eq!(d[0].result, Ok((2, 0)));
    // kcat (librdkafka 2.0.2).
    let bootstrap = b.bootstrap();
    kcat(&["-P", "-b", &bootstrap, "-t", "auto-kcat"], b"hello\n").assert_success("kcat -P");
    // kafka-python: the producer's metadata request creates the topic.
    let r = python(
        Python::PyPi,
        "kp.py",
        "partitions",
        &json!({"bootstrap": b.bootstrap(), "topic": "auto-kp"}),
    );
    assert_eq!(r["partitions"], json!([0, 1, 2]), "{r}");
    // kafkajs producer (allowAutoTopicCreation defaults to true).
    let r = node(
        "kafkajs.js",
        "produce",
        &json!({"bootstrap": b.bootstrap(), "topic": "auto-js", "messages": [{"key": "k", "value": "v", "partition": 1}]}),
    );
    assert_eq!(r["reports"][0]["error"], Value::Null, "{r}");
    for topic in ["auto-rd", "auto-kcat", "auto-kp", "auto-js"] {
        assert_eq!(
            rd_partition_count(&b.bootstrap(), topic),
            Some(3),
            "{topic}"
        );
    }
    let r = python(
        Python::PyPi,
        "ck.py",
        "list_topics",
        &json!({"bootstrap": b.bootstrap()}),
    );
    for topic in ["auto-rd", "auto-kcat", "auto-kp", "auto-js"] {
        assert_eq!(r["topics"][topic], json!(3), "{topic} in {r}");
    }
}

#[test]
fn topics_not_auto_created_when_disabled() {
    let b = Broker::start_with(&[("auto.create.topics.enable", "false")]);
    let d = rd_produce(
        &b.bootstrap(),
        "no-auto",
        &one(0),
        &[("message.timeout.ms", "2000")],
    );
    assert!(
        matches!(
            d[0].result,
            Err(RDKafkaErrorCode::UnknownTopicOrPartition
                | RDKafkaErrorCode::UnknownTopic
                | RDKafkaErrorCode::MessageTimedOut)
        ),
        "{d:?}"
    );
    assert_eq!(rd_partition_count(&b.bootstrap(), "no-auto"), None);
}

fn ck_admin(py: Python) {
    let b = Broker::start();
    let bs = b.bootstrap();
    let create = |topics: Value, validate_only: bool| {
        python(
            py,
            "ck.py",
            "admin_create",
            &json!({"bootstrap": bs, "topics": topics, "validate_only": validate_only}),
        )["results"]
            .clone()
    };
    let delete = |topics: Value| {
        python(
            py,
            "ck.py",
            "admin_delete",
            &json!({"bootstrap": bs, "topics": topics}),
        )["results"]
            .clone()
    };
    let list = || python(py, "ck.py", "list_topics", &json!({"bootstrap": bs}))["topics"].clone();

    let r = create(
        json!([{"name": "adm", "partitions": 4, "config": {"retention.ms": "3600000", "cleanup.policy": "delete"}},
               {"name": "adm-2", "partitions": 1}]),
        false,
    );
    assert_eq!(r, json!({"adm": null, "adm-2": null}), "{py:?} create");
    let r = create(json!([{"name": "adm-validate", "partitions": 2}]), true);
    assert_eq!(r, json!({"adm-validate": null}), "{py:?} validate_only");
    let r = create(json!([{"name": "adm", "partitions": 4}]), false);
    assert_eq!(
        r,
        json!({"adm": "TOPIC_ALREADY_EXISTS"}),
        "{py:?} create twice"
    );
    // INVALID_CONFIG, and the broker's message (naming the key and the value) reaches the
    // application in the error's str().
    let r = python(
        py,
        "ck.py",
        "admin_create",
        &json!({"bootstrap": bs, "topics": [{"name": "adm-bad", "partitions": 1, "config": {"retention.ms": "soon"}}]}),
    );
    assert_eq!(
        r["results"],
        json!({"adm-bad": "INVALID_CONFIG"}),
        "{py:?} bad config"
    );
    let message = r["messages"]["adm-bad"].as_str().unwrap_or_default();
    assert!(
        message.contains("retention.ms") && message.contains("soon"),
        "{py:?}: the INVALID_CONFIG message does not name the key: {r}"
    );
    let topics = list();
    assert_eq!(topics["adm"], json!(4), "{topics}");
    assert_eq!(topics["adm-2"], json!(1), "{topics}");
    assert_eq!(
        topics["adm-validate"],
        Value::Null,
        "validate_only created a topic: {topics}"
    );
    assert_eq!(topics["adm-bad"], Value::Null, "{topics}");
    // The new topic takes records on its last partition.
    assert_eq!(rd_produce(&bs, "adm", &one(3), &[])[0].result, Ok((3, 0)));

    assert_eq!(
        delete(json!(["adm"])),
        json!({"adm": null}),
        "{py:?} delete"
    );
    let topics = list();
    assert_eq!(
        topics["adm"],
        Value::Null,
        "deleted topic still listed: {topics}"
    );
    assert_eq!(topics["adm-2"], json!(1), "{topics}");
    assert_eq!(
        delete(json!(["adm"])),
        json!({"adm": "UNKNOWN_TOPIC_OR_PART"}),
        "{py:?} delete twice"
    );
    // Re-created under the same name, it starts empty with its new partition count.
    assert_eq!(
        create(json!([{"name": "adm", "partitions": 2}]), false),
        json!({"adm": null})
    );
    assert_eq!(list()["adm"], json!(2));
    assert_eq!(rd_watermarks(&bs, "adm", 1), (0, 0));
}

#[test]
fn topics_create_delete_confluent_kafka_admin_pypi() {
    ck_admin(Python::PyPi);
}

#[test]
fn topics_create_delete_confluent_kafka_admin_debian() {
    ck_admin(Python::Debian);
}

#[test]
fn topics_create_delete_kafkajs_admin() {
    let b = Broker::start();
    let bs = b.bootstrap();
    let create = |name: &str, partitions: i32, validate_only: bool| {
        node(
            "kafkajs.js",
            "admin_create",
            &json!({"bootstrap": bs, "validate_only": validate_only,
                    "topics": [{"name": name, "partitions": partitions, "config": {"retention.ms": "60000"}}]}),
        )
    };
    let list = || node("kafkajs.js", "list_topics", &json!({"bootstrap": bs}))["topics"].clone();

    assert_eq!(create("js", 3, false), json!({"created": true}));
    // kafkajs answers false (not an error) for a topic that already exists.
    assert_eq!(create("js", 3, false), json!({"created": false}));
    let r = create("js-validate", 1, true);
    assert!(r.get("error").is_none(), "{r}");
    let topics = list();
    assert_eq!(topics["js"], json!(3), "{topics}");
    assert_eq!(
        topics["js-validate"],
        Value::Null,
        "validateOnly created a topic: {topics}"
    );
    let r = node(
        "kafkajs.js",
        "produce",
        &json!({"bootstrap": bs, "topic": "js", "messages": [{"key": "k", "value": "v", "partition": 2}]}),
    );
    assert_eq!(r["reports"][0]["offset"], json!(0), "{r}");
    let r = node(
        "kafkajs.js",
        "topic_offsets",
        &json!({"bootstrap": bs, "topic": "js"}),
    );
    let mut offsets = r["offsets"].as_array().cloned().unwrap_or_default();
    offsets.sort_by_key(|o| o["partition"].as_i64());
    assert_eq!(
        offsets,
        vec![
            json!({"partition": 0, "low": 0, "high": 0}),
            json!({"partition": 1, "low": 0, "high": 0}),
            json!({"partition": 2, "low": 0, "high": 1}),
        ]
    );

    assert_eq!(
        node(
            "kafkajs.js",
            "admin_delete",
            &json!({"bootstrap": bs, "topics": ["js"]})
        ),
        json!({"deleted": true})
    );
    assert_eq!(list()["js"], Value::Null);
    // A second delete fails with UNKNOWN_TOPIC_OR_PARTITION (which kafkajs retries, so no
    // retries here).
    let r = node(
        "kafkajs.js",
        "admin_delete",
        &json!({"bootstrap": bs, "topics": ["js"], "retries": 0}),
    );
    assert_eq!(r["cause"], json!("UNKNOWN_TOPIC_OR_PARTITION"), "{r}");
}
