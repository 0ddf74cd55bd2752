//! Cooperative-sticky (incremental) rebalancing with confluent-kafka: every member records its
//! on_assign / on_revoke calls. When a member leaves, the survivors revoke nothing and are only
//! given the leaver's partitions; when a member joins, the survivors revoke exactly the
//! partitions it ends up with and keep the rest. The broker's part: it passes each member's
//! owned partitions (subscription metadata) through JoinGroup and lets members keep their
//! partitions across generations.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};
use skiff_compat::Python;

use crate::{ck, create_topic, group_broker};

const PARTITIONS: i32 = 6;

/// A settled snapshot: member -> partitions.
fn snapshot(r: &Value, phase: &str) -> BTreeMap<String, BTreeSet<i64>> {
    let Some(obj) = r["snapshots"][phase].as_object() else {
        panic!("no {phase} snapshot: {r}")
    };
    obj.iter()
        .map(|(m, ps)| {
            let ps = ps.as_array().unwrap().iter().map(|p| p.as_i64().unwrap());
            (m.clone(), ps.collect())
        })
        .collect()
}

/// The partitions `member` was given (`kind` = "assign") or took back ("revoke") in `events`.
fn events_of(events: &Value, member: &str, kind: &str) -> BTreeSet<i64> {
    events
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e[0] == member && e[1] == kind)
        .flat_map(|e| e[2].as_array().unwrap().iter().map(|p| p.as_i64().unwrap()))
        .collect()
}

#[test]
fn cooperative_sticky_survivors_revoke_only_what_moves() {
    let b = group_broker();
    create_topic(&b, "coop", PARTITIONS);
    let r = ck(
        Python::PyPi,
        "cooperative",
        &json!({"bootstrap": b.bootstrap(), "topic": "coop", "group": "coop", "partitions": PARTITIONS}),
    );
    assert_eq!(r["errors"], json!([]), "{r}");
    let three = snapshot(&r, "three");
    let two = snapshot(&r, "two");
    let rejoined = snapshot(&r, "rejoined");
    assert_eq!(three.len(), 3, "{r}");
    let none = BTreeSet::new();

    // m1 leaves: the survivors keep everything and take over exactly m1's partitions.
    let leave = &r["after_leave"];
    let mut taken = BTreeSet::new();
    for s in ["m0", "m2"] {
        assert_eq!(
            events_of(leave, s, "revoke"),
            none,
            "{s} revoked when m1 left: {leave}"
        );
        let got = events_of(leave, s, "assign");
        let expected: BTreeSet<i64> = two[s].difference(&three[s]).copied().collect();
        assert_eq!(got, expected, "{s} was given only new partitions: {leave}");
        assert!(three[s].is_subset(&two[s]), "{s} lost partitions: {r}");
        taken.extend(got);
    }
    assert_eq!(
        taken, three["m1"],
        "the survivors took over m1's share: {leave}"
    );

    // m3 joins: the survivors revoke exactly what m3 gets, and nothing else changes.
    let join = &r["after_join"];
    let mut revoked = BTreeSet::new();
    for s in ["m0", "m2"] {
        let lost = events_of(join, s, "revoke");
        assert!(
            lost.is_subset(&two[s]),
            "{s} revoked what it did not own: {join}"
        );
        assert_eq!(
            events_of(join, s, "assign"),
            none,
            "{s} was given partitions when m3 joined: {join}"
        );
        let kept: BTreeSet<i64> = two[s].difference(&lost).copied().collect();
        assert_eq!(rejoined[s], kept, "{s} keeps all it did not revoke: {r}");
        revoked.extend(lost);
    }
    assert!(!revoked.is_empty(), "m3 got nothing: {r}");
    assert_eq!(
        revoked, rejoined["m3"],
        "only m3's partitions moved: {join}"
    );
    assert_eq!(
        events_of(join, "m3", "assign"),
        rejoined["m3"],
        "m3 was given its share: {join}"
    );
}
