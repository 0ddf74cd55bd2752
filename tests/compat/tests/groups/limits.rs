//! Group limits and timers set on the broker: with `group.max.size=2` a third confluent-kafka
//! consumer's join is refused with GROUP_MAX_SIZE_REACHED while the first two keep sharing the
//! topic; with `group.initial.rebalance.delay.ms=2000` three kafka-python consumers that start
//! together land in the group's first generation (the first rebalance waited for them).

use serde_json::json;
use skiff_compat::Python;

use crate::{ck, create_topic, group_broker_with, kp};

#[test]
fn group_max_size_refuses_the_third_member() {
    let b = group_broker_with(&[("group.max.size", "2")]);
    create_topic(&b, "capped", 4);
    let r = ck(
        Python::PyPi,
        "max_size",
        &json!({"bootstrap": b.bootstrap(), "topic": "capped", "group": "capped", "partitions": 4, "count": 3, "max": 2}),
    );
    assert_eq!(r["errors"], json!([]), "{r}");
    assert_eq!(r["thread_errors"], json!([]), "{r}");
    let shares = r["shares"].as_object().unwrap();
    assert_eq!(
        shares.keys().collect::<Vec<_>>(),
        ["m0", "m1"],
        "the two members within the limit share the topic: {r}"
    );
    assert_eq!(r["over_assigned"], json!([[]]), "{r}");
    let names: Vec<&str> = r["over_errors"][0]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e[0].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"GROUP_MAX_SIZE_REACHED"),
        "the third member was not told the group is full: {r}"
    );
    assert_eq!(r["within_errors"], json!([[], []]), "{r}");
}

#[test]
fn initial_rebalance_delay_gathers_members_into_one_generation() {
    let b = group_broker_with(&[("group.initial.rebalance.delay.ms", "2000")]);
    create_topic(&b, "delayed", 3);
    let r = kp(
        "initial_delay",
        &json!({"bootstrap": b.bootstrap(), "topic": "delayed", "group": "delayed", "partitions": 3}),
    );
    let mut owned: Vec<i64> = r["shares"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s.as_array().unwrap().iter().map(|p| p.as_i64().unwrap()))
        .collect();
    owned.sort_unstable();
    assert_eq!(owned, vec![0, 1, 2], "one partition each: {r}");
    assert_eq!(
        r["generations"],
        json!([1, 1, 1]),
        "all three joined the first generation: {r}"
    );
    let join_ms = r["join_ms"].as_i64().unwrap();
    assert!(
        join_ms >= 1800,
        "the first rebalance did not wait for the delay ({join_ms} ms): {r}"
    );
}
