//! Fencing: a static member (group.instance.id, KIP-345) that restarts within its session
//! timeout takes its partitions back without a rebalance; a member committing as a generation
//! that a rebalance replaced is refused (ILLEGAL_GENERATION) and changes nothing.

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
