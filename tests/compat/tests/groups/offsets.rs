//! Committed offsets through stock admin clients: OffsetDelete (API 47) with kafka-python's
//! `KafkaAdminClient.delete_group_offsets` on an empty group (the partition's offset goes back
//! to -1, the others stay), on a group whose live member is subscribed to the topic
//! (GROUP_SUBSCRIBED_TO_TOPIC, nothing deleted; a topic it is not subscribed to is deleted) and
//! on an unknown group (GROUP_ID_NOT_FOUND). Metadata strings committed with confluent-kafka's
//! `TopicPartition(..., metadata=...)` come back from `committed()`, also after a restart.

use serde_json::json;
use skiff_compat::Python;

use crate::{ck, create_topic, group_broker, kp};

#[test]
fn kafka_python_deletes_group_offsets_only_when_no_member_is_subscribed() {
    let b = group_broker();
    create_topic(&b, "od", 2);
    create_topic(&b, "od-other", 1);
    let r = kp(
        "offset_delete",
        &json!({
            "bootstrap": b.bootstrap(), "topic": "od", "other": "od-other", "partitions": 2,
            "group": "unused", "group_empty": "od-empty", "group_busy": "od-busy",
            "group_unknown": "od-nobody",
        }),
    );
    assert_eq!(r["empty_assigned"], json!(true), "{r}");
    assert_eq!(r["empty_before"], json!({"0": 1, "1": 1}), "{r}");
    assert_eq!(r["empty_result"], json!({"od/0": "NoError"}), "{r}");
    assert_eq!(
        r["empty_after"],
        json!({"0": -1, "1": 1}),
        "only the deleted partition's offset is gone: {r}"
    );
    assert_eq!(r["busy_assigned"], json!(true), "{r}");
    assert_eq!(
        r["busy_result"],
        json!({"od-other/0": "NoError", "od/0": "GroupSubscribedToTopicError"}),
        "{r}"
    );
    assert_eq!(
        r["busy_after"],
        json!({"0": 1, "1": 1}),
        "a subscribed topic's offsets stay: {r}"
    );
    assert_eq!(r["unknown_error"], json!("GroupIdNotFoundError"), "{r}");
}

#[test]
fn confluent_kafka_commit_metadata_round_trips_across_a_restart() {
    let mut b = group_broker();
    create_topic(&b, "meta", 3);
    let long = "x".repeat(300);
    let base =
        json!({"bootstrap": b.bootstrap(), "topic": "meta", "group": "meta", "partitions": 3});
    let mut commit = base.clone();
    commit["offsets"] = json!({"0": [5, "checkpoint ✓ 0"], "1": [7, long]});
    let r = ck(Python::PyPi, "commit_metadata", &commit);
    assert_eq!(r["committed"].as_array().map(Vec::len), Some(2), "{r}");
    let check = |r: &serde_json::Value, when: &str| {
        let c = &r["committed"];
        assert_eq!(c["0"], json!([5, "checkpoint ✓ 0"]), "{when}: {r}");
        assert_eq!(c["1"], json!([7, long]), "{when}: {r}");
        // librdkafka's "no commit" is OFFSET_INVALID (-1001), with no (or empty) metadata.
        assert_eq!(c["2"][0], json!(-1001), "{when}: {r}");
        assert!(c["2"][1].is_null() || c["2"][1] == json!(""), "{when}: {r}");
    };
    check(&ck(Python::PyPi, "committed_metadata", &base), "before");
    assert!(b.stop().success());
    b.restart();
    check(
        &ck(Python::PyPi, "committed_metadata", &base),
        "after the restart",
    );
}

/// Issue 15 item 5 (librdkafka test 0030): offsets for a topic the cluster does not have, or
/// for a partition beyond a topic's count, are refused per partition with
/// UNKNOWN_TOPIC_OR_PARTITION and not stored, as Kafka's KafkaApis does; the known partition
/// in the same request is committed. Both OffsetCommit paths: a consumer's commit and
/// AdminClient.alter_consumer_group_offsets.
#[test]
fn confluent_kafka_commit_for_unknown_topic_or_partition_is_refused_per_partition() {
    let b = group_broker();
    create_topic(&b, "known2", 2);
    let p = json!({
        "bootstrap": b.bootstrap(),
        "group": "unknown-commit",
        "offsets": [["no-such-topic", 0, 5], ["no-such-topic", 1, 6], ["known2", 1, 7], ["known2", 2, 8]],
    });
    let r = ck(Python::PyPi, "commit_unknown", &p);
    let per_partition = json!([
        ["no-such-topic", 0, "UNKNOWN_TOPIC_OR_PART"],
        ["no-such-topic", 1, "UNKNOWN_TOPIC_OR_PART"],
        ["known2", 1, null],
        ["known2", 2, "UNKNOWN_TOPIC_OR_PART"]
    ]);
    // librdkafka's sync commit raises on the first partition error; either way no partition
    // of the unknown topic may be answered NONE.
    match &r["commit"] {
        serde_json::Value::Array(_) => assert_eq!(r["commit"], per_partition, "{r}"),
        e => assert_eq!(e["error"], json!("UNKNOWN_TOPIC_OR_PART"), "{r}"),
    }
    // Nothing stored for the refused partitions (-1001: librdkafka's "no committed offset").
    assert_eq!(
        r["committed"],
        json!([
            ["no-such-topic", 0, -1001],
            ["no-such-topic", 1, -1001],
            ["known2", 1, 7],
            ["known2", 2, -1001]
        ]),
        "{r}"
    );
    // AlterConsumerGroupOffsets answers per partition, in the client's own order.
    let sorted = |v: &serde_json::Value| {
        let mut a = v.as_array().cloned().unwrap_or_default();
        a.sort_by_key(|e| e.to_string());
        a
    };
    match &r["alter"] {
        serde_json::Value::Array(_) => {
            assert_eq!(sorted(&r["alter"]), sorted(&per_partition), "{r}")
        }
        e => assert_eq!(e["error"], json!("UNKNOWN_TOPIC_OR_PART"), "{r}"),
    }
}
