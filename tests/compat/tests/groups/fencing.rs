//! Fencing: a static member (group.instance.id, KIP-345) that restarts within its session
//! timeout takes its partitions back without a rebalance; a member committing as a generation
//! that a rebalance replaced is refused (ILLEGAL_GENERATION) and changes nothing. Two live
//! consumers with the same group.instance.id: the newer replaces the older, which gets a fatal
//! FENCED_INSTANCE_ID. kafka-python's admin client removes two static members (and reports an
//! unknown instance id) in one batch LeaveGroup (KIP-345), which empties the group.

use serde_json::json;
use skiff_compat::Python;

use crate::{ck, create_topic, group_broker, kp};

#[test]
fn static_member_restart_within_session_timeout_causes_no_rebalance() {
    let b = group_broker();
    create_topic(&b, "static", 6);
    let r = ck(
        Python::PyPi,
        "static",
        &json!({"bootstrap": b.bootstrap(), "topic": "static", "group": "statics", "partitions": 6, "instance": "static-1"}),
    );
    let before = r["static_before"].as_array().unwrap();
    assert!(
        !before.is_empty(),
        "the static member never got partitions: {r}"
    );
    assert_eq!(
        r["static_after"], r["static_before"],
        "the restarted static member gets its partitions back"
    );
    assert_eq!(
        r["watcher_events_after"], r["watcher_events_before"],
        "the other member saw a rebalance when the static member restarted"
    );
    assert!(r["rejoin_ms"].as_i64().unwrap() < 6000, "{r}");
}

#[test]
fn zombie_from_an_old_generation_cannot_commit() {
    let b = group_broker();
    create_topic(&b, "zombie", 2);
    ck(
        Python::PyPi,
        "produce",
        &json!({"bootstrap": b.bootstrap(), "topic": "zombie", "partitions": 2, "count": 10}),
    );
    let r = kp(
        "zombie",
        &json!({"bootstrap": b.bootstrap(), "topic": "zombie", "group": "zombies", "partitions": 2}),
    );
    assert_eq!(r["same_member"], json!(true), "{r}");
    assert!(
        r["new_generation"].as_i64() > r["old_generation"].as_i64(),
        "{r}"
    );
    assert_eq!(r["shares_after"][0].as_array().unwrap().len(), 1, "{r}");
    assert_eq!(r["shares_after"][1].as_array().unwrap().len(), 1, "{r}");
    let error = r["zombie_commit_error"]
        .as_str()
        .unwrap_or_else(|| panic!("the zombie commit succeeded: {r}"));
    assert!(error.contains("IllegalGeneration"), "{error}");
    assert_eq!(
        r["committed"],
        json!({"0": 1, "1": 1}),
        "the zombie's offsets were not stored"
    );
}

#[test]
fn a_second_consumer_with_the_same_instance_id_fences_the_first() {
    let b = group_broker();
    create_topic(&b, "fenced", 3);
    let r = ck(
        Python::PyPi,
        "fenced",
        &json!({"bootstrap": b.bootstrap(), "topic": "fenced", "group": "fenced", "partitions": 3, "instance": "twin"}),
    );
    assert_eq!(r["thread_errors"], json!([]), "{r}");
    assert_eq!(r["a_before"], json!([0, 1, 2]), "{r}");
    assert_eq!(
        r["b_after"],
        json!([0, 1, 2]),
        "the newer twin owns the partitions: {r}"
    );
    let fatal: Vec<&str> = r["a_errors"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e[1] == json!(true))
        .map(|e| e[2].as_str().unwrap())
        .collect();
    assert!(
        fatal.iter().any(|e| e.to_lowercase().contains("fenced")),
        "the older twin got no fatal FENCED_INSTANCE_ID: {r}"
    );
    assert!(
        r["b_errors"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e[1] == json!(false)),
        "the newer twin is healthy: {r}"
    );
}

#[test]
fn admin_client_removes_static_members_in_one_batch() {
    let b = group_broker();
    create_topic(&b, "statics", 2);
    let r = kp(
        "remove_members",
        &json!({
            "bootstrap": b.bootstrap(), "topic": "statics", "group": "removed", "partitions": 2,
            "instances": ["s1", "s2"], "unknown": "ghost",
        }),
    );
    assert_eq!(r["assigned"], json!(true), "{r}");
    assert_eq!(
        r["before"],
        json!({"state": "Stable", "instances": ["s1", "s2"]}),
        "{r}"
    );
    assert_eq!(
        r["removed"],
        json!(["NoError", "NoError", "UnknownMemberIdError"]),
        "two removed, the unknown instance id reported: {r}"
    );
    assert_eq!(
        r["after"],
        json!({"state": "Empty", "instances": []}),
        "{r}"
    );
}
