//! Three members in one group over a 6-partition topic, per client: they share the partitions
//! (each owned by exactly one member), one member leaves (close -> LeaveGroup) and the other
//! two take its partitions within the session timeout, a new member joins and gets a share.
//! A member killed with SIGKILL loses its partitions when its session expires.
//! Records are produced before each phase; every one is consumed at least once and, since
//! each member commits after processing, the final commits equal the end offsets and the
//! consumed offsets of every partition have no gap.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};
use skiff_compat::{Python, python};

use crate::{SESSION_MS, by_partition, ck, create_topic, group_broker, group_broker_with, kp};

const PARTITIONS: i32 = 6;
const PER_PHASE: i64 = 60;

/// The shares of one snapshot: member -> partitions. Panics unless every partition is owned
/// by exactly one member and each member owns at least one.
fn shares(result: &Value, phase: &str) -> BTreeMap<String, Vec<i64>> {
    let snap = &result["snapshots"][phase];
    let Some(obj) = snap.as_object() else {
        panic!(
            "no {phase} snapshot (the group never settled): {}",
            result["errors"]
        )
    };
    let shares: BTreeMap<String, Vec<i64>> = obj
        .iter()
        .map(|(m, ps)| {
            let ps = ps
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p.as_i64().unwrap())
                .collect();
            (m.clone(), ps)
        })
        .collect();
    let mut owned: Vec<i64> = shares.values().flatten().copied().collect();
    owned.sort_unstable();
    assert_eq!(
        owned,
        (0..i64::from(PARTITIONS)).collect::<Vec<_>>(),
        "{phase}: not exactly one owner per partition: {shares:?}"
    );
    assert!(
        shares.values().all(|s| !s.is_empty()),
        "{phase}: a member has no share: {shares:?}"
    );
    shares
}

/// At least once and nothing skipped: every produced value was consumed, per partition the
/// consumed offsets are 0..end with no gap, and the final commits are the end offsets.
fn check_delivery(result: &Value, what: &str, phases: i64) {
    let consumed = result["consumed"].as_array().unwrap();
    let seen: BTreeSet<&str> = consumed.iter().map(|c| c[3].as_str().unwrap()).collect();
    let produced = result["produced"].as_array().unwrap();
    assert_eq!(produced.len() as i64, phases * PER_PHASE);
    let missed: Vec<_> = produced
        .iter()
        .filter(|v| !seen.contains(v.as_str().unwrap()))
        .collect();
    assert!(missed.is_empty(), "{what}: never consumed: {missed:?}");
    let ends = by_partition(&result["end_offsets"], PARTITIONS);
    let committed = by_partition(&result["committed"], PARTITIONS);
    assert_eq!(committed, ends, "{what}: committed offsets vs end offsets");
    for (p, end) in ends.iter().enumerate() {
        let offsets: BTreeSet<i64> = consumed
            .iter()
            .filter(|c| c[1].as_i64() == Some(p as i64))
            .map(|c| c[2].as_i64().unwrap())
            .collect();
        assert_eq!(
            offsets,
            (0..*end).collect::<BTreeSet<_>>(),
            "{what}: partition {p} consumed offsets"
        );
    }
    let total: i64 = ends.iter().sum();
    eprintln!(
        "{what}: {} consumed for {total} records ({} redelivered), {} commits fenced by rebalances, partitions moved in {} ms",
        consumed.len(),
        consumed.len() as i64 - total,
        result["commit_failures"],
        result["moved_ms"],
    );
}

fn check(result: &Value, what: &str) {
    assert_eq!(result["errors"], json!([]), "{what}: scenario errors");
    let three = shares(result, "three");
    assert_eq!(
        three.keys().collect::<Vec<_>>(),
        ["m0", "m1", "m2"],
        "{what}"
    );
    let two = shares(result, "two");
    assert_eq!(
        two.keys().collect::<Vec<_>>(),
        ["m0", "m2"],
        "{what}: m1 left"
    );
    let moved = result["moved_ms"].as_i64().unwrap();
    assert!(
        moved < SESSION_MS,
        "{what}: partitions moved after {moved} ms, beyond the session timeout"
    );
    let rejoined = shares(result, "rejoined");
    assert_eq!(
        rejoined.keys().collect::<Vec<_>>(),
        ["m0", "m2", "m3"],
        "{what}: m3 got a share"
    );

    check_delivery(result, what, 3);
}

fn scenario(run: impl FnOnce(&Value) -> Value, what: &str, config: Value) {
    let b = group_broker();
    create_topic(&b, "members", PARTITIONS);
    let params = json!({
        "bootstrap": b.bootstrap(), "topic": "members", "group": what,
        "partitions": PARTITIONS, "per_phase": PER_PHASE, "config": config,
    });
    let result = run(&params);
    check(&result, what);
}

#[test]
fn three_confluent_kafka_consumers_share_rebalance_and_commit() {
    scenario(|p| ck(Python::PyPi, "members", p), "ck-pypi", json!({}));
}

#[test]
fn three_debian_librdkafka_2_0_2_consumers_share_rebalance_and_commit() {
    scenario(|p| ck(Python::Debian, "members", p), "ck-debian", json!({}));
}

#[test]
fn three_cooperative_sticky_consumers_rebalance_incrementally() {
    scenario(
        |p| ck(Python::PyPi, "members", p),
        "ck-cooperative",
        json!({"partition.assignment.strategy": "cooperative-sticky"}),
    );
}

#[test]
fn three_kafka_python_consumers_share_rebalance_and_commit() {
    scenario(|p| kp("members", p), "kafka-python", json!({}));
}

#[test]
fn three_kip848_consumers_share_rebalance_and_commit() {
    scenario(
        |p| ck(Python::PyPi, "members", p),
        "ck-kip848",
        json!({"group.protocol": "consumer"}),
    );
}

#[test]
fn a_crashed_member_s_partitions_move_when_its_session_expires() {
    let b = group_broker();
    create_topic(&b, "members", PARTITIONS);
    let params = json!({
        "bootstrap": b.bootstrap(), "topic": "members", "group": "crash",
        "partitions": PARTITIONS, "per_phase": PER_PHASE,
    });
    let result = ck(Python::PyPi, "crash", &params);
    assert_eq!(result["errors"], json!([]), "scenario errors");
    assert_eq!(shares(&result, "three").len(), 3);
    assert_eq!(
        shares(&result, "two").keys().collect::<Vec<_>>(),
        ["m0", "m2"]
    );
    // SIGKILL sends no LeaveGroup: the coordinator notices when the session (6 s, heartbeats
    // every 500 ms) expires, and the survivors rejoin on their next heartbeat.
    let moved = result["moved_ms"].as_i64().unwrap();
    assert!(
        (SESSION_MS - 1000..SESSION_MS + 3000).contains(&moved),
        "partitions moved {moved} ms after the crash (session timeout {SESSION_MS} ms)"
    );
    check_delivery(&result, "crash", 2);
}

/// A group's own `consumer.session.timeout.ms` (GROUP config, issue 15 item 3) is the session
/// the coordinator fences KIP-848 members by: the broker's is 40 s, the group's 6 s, and a
/// crashed member's partitions move after about 6 s (the scenario gives up after 25 s).
#[test]
fn a_kip848_group_s_own_session_timeout_fences_a_crashed_member() {
    let b = group_broker_with(&[("group.consumer.session.timeout.ms", "40000")]);
    create_topic(&b, "members", PARTITIONS);
    let r = python(
        Python::PyPi,
        "admin_ck.py",
        "incremental",
        &json!({"bootstrap": b.bootstrap(), "type": "group", "name": "crash848",
                "ops": [["consumer.session.timeout.ms", "SET", SESSION_MS.to_string()]]}),
    );
    assert_eq!(r["error"], Value::Null, "{r}");
    let params = json!({
        "bootstrap": b.bootstrap(), "topic": "members", "group": "crash848",
        "partitions": PARTITIONS, "per_phase": PER_PHASE,
        "config": {"group.protocol": "consumer"},
    });
    let result = ck(Python::PyPi, "crash", &params);
    assert_eq!(result["errors"], json!([]), "scenario errors");
    let moved = result["moved_ms"].as_i64().unwrap();
    assert!(
        (SESSION_MS - 1000..SESSION_MS + 4000).contains(&moved),
        "partitions moved {moved} ms after the crash (group session timeout {SESSION_MS} ms)"
    );
    check_delivery(&result, "crash848", 2);
}

#[test]
fn three_kafkajs_consumers_share_rebalance_and_commit() {
    scenario(
        |p| skiff_compat::node("groups_kafkajs.js", "members", p),
        "kafkajs",
        json!({}),
    );
}

/// Every share of `phase` is one contiguous run of partitions, and the shares' sizes differ by
/// at most one: the shape of the `range` assignor.
fn assert_range_shaped(result: &Value, phase: &str) {
    let all = shares(result, phase);
    for (member, ps) in &all {
        let mut ps = ps.clone();
        ps.sort_unstable();
        assert!(
            ps.windows(2).all(|w| w[1] == w[0] + 1),
            "{phase}: {member} got {ps:?}, not a range: {all:?}"
        );
    }
    let sizes: Vec<usize> = all.values().map(Vec::len).collect();
    let (min, max) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
    assert!(max - min <= 1, "{phase}: unbalanced ranges {all:?}");
}

#[test]
fn three_kip848_consumers_with_the_range_assignor_get_contiguous_ranges() {
    let mut seen = None;
    scenario(
        |p| {
            let mut p = p.clone();
            // Snapshots once the members have reconciled to the target (unchanged for 1.5 s).
            p["settle_ms"] = json!(1500);
            let r = ck(Python::PyPi, "members", &p);
            seen = Some(r.clone());
            r
        },
        "ck-kip848-range",
        json!({"group.protocol": "consumer", "group.remote.assignor": "range"}),
    );
    let result = seen.unwrap();
    for phase in ["three", "two", "rejoined"] {
        assert_range_shaped(&result, phase);
    }
}
