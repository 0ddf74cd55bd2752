//! Topic lifecycle: auto-creation through Metadata with `num.partitions` (and not when
//! disabled), and CreateTopics/DeleteTopics through confluent-kafka's AdminClient (PyPI and
//! Debian), kafka-python's KafkaAdminClient, the rdkafka crate's AdminClient and kafkajs'
//! admin, each checked against Metadata afterwards.

use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::error::RDKafkaErrorCode;
use serde_json::{Value, json};
use skiff_compat::{Broker, Python, kcat, node, python};

use crate::common::{Out, rd_partition_count, rd_produce, rd_watermarks, rec};

fn one(partition: i32) -> Vec<Out> {
    vec![Out::new(rec(Some("k"), Some("v"), &[]), partition)]
}

const AUTO_TOPICS: [&str; 6] = [
    "auto-rd",
    "auto-kcat",
    "auto-kp",
    "auto-ck",
    "auto-ck-debian",
    "auto-js",
];

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
    // confluent-kafka producers (PyPI and Debian): librdkafka's producer metadata request
    // creates the topic.
    for (py, topic) in [
        (Python::PyPi, "auto-ck"),
        (Python::Debian, "auto-ck-debian"),
    ] {
        let r = python(
            py,
            "ck.py",
            "produce",
            &json!({"bootstrap": b.bootstrap(), "topic": topic, "messages": [{"key": "k", "value": "v", "partition": 2}]}),
        );
        assert_eq!(r["reports"][0]["error"], Value::Null, "{py:?}: {r}");
        assert_eq!(r["reports"][0]["offset"], json!(0), "{py:?}: {r}");
    }
    // kafkajs producer (allowAutoTopicCreation defaults to true).
    let r = node(
        "kafkajs.js",
        "produce",
        &json!({"bootstrap": b.bootstrap(), "topic": "auto-js", "messages": [{"key": "k", "value": "v", "partition": 1}]}),
    );
    assert_eq!(r["reports"][0]["error"], Value::Null, "{r}");
    for topic in AUTO_TOPICS {
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
    for topic in AUTO_TOPICS {
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

#[test]
fn topics_create_delete_kafka_python_admin() {
    let b = Broker::start();
    let bs = b.bootstrap();
    let admin = |command: &str, params: Value| {
        let mut params = params;
        params["bootstrap"] = json!(bs);
        python(Python::PyPi, "admin_kp.py", command, &params)
    };
    let r = admin(
        "create_topics",
        json!({"topics": [
            {"name": "kp-adm", "partitions": 3, "config": {"retention.ms": "3600000"}},
            {"name": "kp-adm-2"},
            {"name": "kp-adm-bad", "partitions": 1, "config": {"retention.ms": "soon"}},
        ]}),
    );
    let t = &r["topics"]["kp-adm"];
    assert_eq!(t["error_code"], json!(0), "{r}");
    assert_eq!(t["num_partitions"], json!(3), "{r}");
    assert_eq!(t["replication_factor"], json!(1), "{r}");
    // CreateTopics v5+ configs as kafka-python reports them (source names for 1 and 5).
    assert_eq!(
        t["configs"]["retention.ms"],
        json!({"value": "3600000", "config_source": "DYNAMIC_TOPIC_CONFIG"}),
        "{r}"
    );
    assert_eq!(
        t["configs"]["segment.bytes"],
        json!({"value": "1073741824", "config_source": "DEFAULT_CONFIG"}),
        "{r}"
    );
    let id = t["topic_id"].as_str().unwrap_or_default().to_owned();
    assert!(
        !id.is_empty() && id != "00000000-0000-0000-0000-000000000000",
        "CreateTopics v7 topic id: {r}"
    );
    // Defaults (-1): num.partitions = 1.
    assert_eq!(r["topics"]["kp-adm-2"]["error_code"], json!(0), "{r}");
    assert_eq!(r["topics"]["kp-adm-2"]["num_partitions"], json!(1), "{r}");
    let bad = &r["topics"]["kp-adm-bad"];
    assert_eq!(bad["error_code"], json!(40), "INVALID_CONFIG: {r}");
    assert!(
        bad["error_message"]
            .as_str()
            .is_some_and(|m| m.contains("retention.ms")),
        "{r}"
    );
    let r = admin(
        "create_topics",
        json!({"topics": [{"name": "kp-adm", "partitions": 1}]}),
    );
    assert_eq!(
        r["topics"]["kp-adm"]["error_code"],
        json!(36),
        "TOPIC_ALREADY_EXISTS: {r}"
    );
    let r = admin(
        "create_topics",
        json!({"topics": [{"name": "kp-validate", "partitions": 2}], "validate_only": true}),
    );
    assert_eq!(r["topics"]["kp-validate"]["error_code"], json!(0), "{r}");

    // Metadata (kafka-python's and the rdkafka crate's) agrees.
    let listed = admin("list_topics", json!({}))["topics"].clone();
    assert_eq!(
        listed["kp-adm"],
        json!({"partitions": 3, "topic_id": id}),
        "{listed}"
    );
    assert_eq!(listed["kp-adm-2"]["partitions"], json!(1), "{listed}");
    assert_eq!(
        listed["kp-validate"],
        Value::Null,
        "validate_only created it: {listed}"
    );
    assert_eq!(listed["kp-adm-bad"], Value::Null, "{listed}");
    assert_eq!(rd_partition_count(&bs, "kp-adm"), Some(3));
    assert_eq!(
        rd_produce(&bs, "kp-adm", &one(2), &[])[0].result,
        Ok((2, 0))
    );

    // Delete one by name and one by topic id (DeleteTopics v6).
    let r = admin(
        "delete_topics",
        json!({"topics": ["kp-adm-2"], "topic_ids": [id]}),
    );
    let mut results = r["topics"].as_array().cloned().unwrap_or_default();
    results.sort_by_key(|t| t["error_code"].as_i64());
    assert_eq!(results.len(), 2, "{r}");
    for t in &results {
        assert_eq!(t["error_code"], json!(0), "{r}");
    }
    let listed = admin("list_topics", json!({}))["topics"].clone();
    assert_eq!(listed["kp-adm"], Value::Null, "{listed}");
    assert_eq!(listed["kp-adm-2"], Value::Null, "{listed}");
    assert_eq!(rd_partition_count(&bs, "kp-adm"), None);
    let r = admin("delete_topics", json!({"topics": ["kp-adm"]}));
    assert_eq!(
        r["topics"][0]["error_code"],
        json!(3),
        "UNKNOWN_TOPIC_OR_PARTITION: {r}"
    );
    let r = admin("delete_topics", json!({"topic_ids": [id]}));
    assert_eq!(
        r["topics"][0]["error_code"],
        json!(100),
        "UNKNOWN_TOPIC_ID: {r}"
    );
}

/// Runs an rdkafka admin future to completion on this thread (the AdminClient's own polling
/// thread resolves it), for at most 30 s.
fn block_on<F: Future>(f: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut f = std::pin::pin!(f);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "rdkafka admin call took over 30 s"
        );
        std::thread::park_timeout(Duration::from_millis(100));
    }
}

#[test]
fn topics_create_delete_rdkafka_crate_admin() {
    let b = Broker::start();
    let bs = b.bootstrap();
    let admin: AdminClient<DefaultClientContext> = crate::common::rd_config(&bs, &[])
        .create()
        .expect("rdkafka admin client");
    let opts = AdminOptions::new().operation_timeout(Some(Duration::from_secs(10)));
    let good =
        NewTopic::new("rd-adm", 4, TopicReplication::Fixed(1)).set("retention.ms", "3600000");
    let bad =
        NewTopic::new("rd-adm-bad", 1, TopicReplication::Fixed(1)).set("retention.ms", "soon");
    let r = block_on(admin.create_topics([&good, &bad], &opts)).expect("create_topics");
    assert_eq!(
        r,
        vec![
            Ok("rd-adm".to_owned()),
            Err(("rd-adm-bad".to_owned(), RDKafkaErrorCode::InvalidConfig)),
        ]
    );
    let r = block_on(admin.create_topics([&good], &opts)).expect("create_topics");
    assert_eq!(
        r,
        vec![Err((
            "rd-adm".to_owned(),
            RDKafkaErrorCode::TopicAlreadyExists
        ))]
    );
    let validate = NewTopic::new("rd-validate", 2, TopicReplication::Fixed(1));
    let validate_only = AdminOptions::new()
        .operation_timeout(Some(Duration::from_secs(10)))
        .validate_only(true);
    let r = block_on(admin.create_topics([&validate], &validate_only))
        .expect("create_topics validate_only");
    assert_eq!(r, vec![Ok("rd-validate".to_owned())]);
    let too_many = NewTopic::new("rd-rf3", 1, TopicReplication::Fixed(3));
    let r = block_on(admin.create_topics([&too_many], &opts)).expect("create_topics");
    assert_eq!(
        r,
        vec![Err((
            "rd-rf3".to_owned(),
            RDKafkaErrorCode::InvalidReplicationFactor
        ))]
    );

    assert_eq!(rd_partition_count(&bs, "rd-adm"), Some(4));
    assert_eq!(rd_partition_count(&bs, "rd-adm-bad"), None);
    assert_eq!(rd_partition_count(&bs, "rd-validate"), None);
    assert_eq!(rd_partition_count(&bs, "rd-rf3"), None);
    assert_eq!(
        rd_produce(&bs, "rd-adm", &one(3), &[])[0].result,
        Ok((3, 0))
    );

    let r = block_on(admin.delete_topics(&["rd-adm", "rd-nope"], &opts)).expect("delete_topics");
    assert_eq!(
        r,
        vec![
            Ok("rd-adm".to_owned()),
            Err((
                "rd-nope".to_owned(),
                RDKafkaErrorCode::UnknownTopicOrPartition
            )),
        ]
    );
    assert_eq!(rd_partition_count(&bs, "rd-adm"), None);
}
