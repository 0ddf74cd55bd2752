//! KIP-848 features of Kafka 4.x that librdkafka's own tests use (issue 15): regex
//! subscriptions resolved by the coordinator (`SubscribedTopicRegex`, librdkafka tests 0033,
//! 0045, 0113's wildcard case), and the online migration of a group between the classic and
//! the consumer protocol (`group.consumer.migration.policy=bidirectional`, Kafka's default).

use serde_json::json;
use skiff_compat::Python;

use crate::{ck, create_topic, group_broker};

/// A `^.*_suffix`-style subscription under `group.protocol=consumer`: the matching topics are
/// assigned and consumed, a non-matching one is not, and a matching topic created later is
/// assigned without a resubscribe.
#[test]
fn a_kip848_regex_subscription_gets_matching_topics_including_new_ones() {
    let b = group_broker();
    let r = ck(
        Python::PyPi,
        "regex",
        &json!({
            "bootstrap": b.bootstrap(), "group": "rx", "topic": "unused", "partitions": 1,
            "pattern": "^rx_.*_suffix",
            "matching": ["rx_a_suffix", "rx_b_suffix"],
            "other": ["rx_a_suffix_not", "other_suffix"],
            "late": "rx_late_suffix",
            "wait_s": 25,
        }),
    );
    assert_eq!(r["errors"], json!([]), "{r}");
    assert_eq!(
        r["phases"]["initial"]["topics"],
        json!(["rx_a_suffix", "rx_b_suffix"]),
        "{r}"
    );
    assert_eq!(
        r["phases"]["late"]["topics"],
        json!(["rx_late_suffix"]),
        "the topic created later is consumed: {r}"
    );
    assert_eq!(
        r["assignment"],
        json!(["rx_a_suffix", "rx_b_suffix", "rx_late_suffix"]),
        "{r}"
    );
}

/// A rolling switch to `group.protocol=consumer`: two classic confluent-kafka members share a
/// topic; a consumer-protocol member joins the same group (the coordinator converts it to a
/// consumer group; librdkafka treated the GROUP_ID_NOT_FOUND it used to get as fatal) and all
/// three share the partitions, committing as they go; when it leaves, the group is classic
/// again and the two classic members share everything. Every record produced is consumed.
#[test]
fn classic_and_consumer_protocol_members_share_a_group_across_an_upgrade_and_a_downgrade() {
    let b = group_broker();
    create_topic(&b, "mig", 6);
    let r = ck(
        Python::PyPi,
        "migration",
        &json!({
            "bootstrap": b.bootstrap(), "group": "mig", "topic": "mig", "partitions": 6,
            "wait_s": 30,
        }),
    );
    for e in ["fatal", "commit_errors", "thread_errors"] {
        assert_eq!(r[e], json!([]), "{e}: {r}");
    }
    let phases = &r["phases"];
    for (phase, kind, members) in [
        ("classic", "classic", 2),
        ("mixed", "consumer", 3),
        ("downgraded", "classic", 2),
    ] {
        let p = &phases[phase];
        assert_eq!(p["type"], json!(kind), "{phase}: {r}");
        assert_eq!(p["all_consumed"], json!(true), "{phase}: {r}");
        let assigned = p["assigned"].as_object().expect("assignments");
        assert_eq!(assigned.len(), members, "{phase}: {r}");
        let mut all: Vec<i64> = assigned
            .values()
            .flat_map(|v| v.as_array().cloned().unwrap_or_default())
            .filter_map(|x| x.as_i64())
            .collect();
        assert!(
            assigned
                .values()
                .all(|v| v.as_array().is_some_and(|a| !a.is_empty())),
            "{phase}: every member has partitions: {r}"
        );
        all.sort_unstable();
        assert_eq!(
            all,
            (0..6).collect::<Vec<_>>(),
            "{phase}: disjoint and complete: {r}"
        );
    }
}
