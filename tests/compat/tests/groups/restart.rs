//! Committed offsets survive broker restarts: a consumer commits part of a topic, the broker
//! is stopped (SIGTERM, clean) or killed (SIGKILL, no shutdown at all) and started again on the
//! same port and log dir, and a new consumer of the group starts exactly at the commits (the
//! coordinator replays `__consumer_offsets` before serving) and reads the rest.

use std::collections::BTreeSet;

use serde_json::{Value, json};
use skiff_compat::Python;

use crate::{by_partition, ck, create_topic, group_broker};

const PARTITIONS: i32 = 3;
const RECORDS: i64 = 30;

/// (partition, offset) of every consumed record.
fn consumed(r: &Value) -> Vec<(i64, i64)> {
    r["consumed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c[0].as_i64().unwrap(), c[1].as_i64().unwrap()))
        .collect()
}

fn commit_restart_resume(kill: bool) {
    let mut b = group_broker();
    create_topic(&b, "resume", PARTITIONS);
    let base = json!({"bootstrap": b.bootstrap(), "topic": "resume", "group": "resumer", "partitions": PARTITIONS});
    let with = |extra: Value| {
        let mut p = base.clone();
        p.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        p
    };
    ck(Python::PyPi, "produce", &with(json!({"count": RECORDS})));
    let first = ck(Python::PyPi, "consume", &with(json!({"count": 12})));
    assert_eq!(first["commit_errors"], json!([]));
    let first = consumed(&first);
    assert!(first.len() >= 12);
    let before = by_partition(
        &ck(Python::PyPi, "committed", &base)["committed"],
        PARTITIONS,
    );
    for (p, c) in before.iter().enumerate() {
        let next = first
            .iter()
            .filter(|(q, _)| *q == p as i64)
            .map(|(_, o)| o + 1)
            .max();
        assert_eq!(
            Some(*c).filter(|c| *c >= 0),
            next,
            "partition {p}: commit = last consumed + 1"
        );
    }

    if kill {
        b.kill9();
    } else {
        assert!(b.stop().success());
    }
    b.restart();
    let after = by_partition(
        &ck(Python::PyPi, "committed", &base)["committed"],
        PARTITIONS,
    );
    assert_eq!(after, before, "commits after the restart");
    let remaining = RECORDS - first.len() as i64;
    let second = consumed(&ck(
        Python::PyPi,
        "consume",
        &with(json!({"count": remaining})),
    ));
    for (p, c) in before.iter().enumerate() {
        let start = *c.max(&0);
        let offsets: Vec<i64> = second
            .iter()
            .filter(|(q, _)| *q == p as i64)
            .map(|(_, o)| *o)
            .collect();
        assert!(
            offsets.iter().all(|o| *o >= start),
            "partition {p}: read {offsets:?} again although {start} was committed"
        );
    }
    let all: BTreeSet<(i64, i64)> = first.iter().chain(&second).copied().collect();
    assert_eq!(
        all.len() as i64,
        RECORDS,
        "every record consumed once across the restart"
    );
    assert_eq!(second.len() as i64, remaining, "nothing consumed twice");
}

#[test]
fn commits_survive_sigterm_restart_and_consumption_resumes() {
    commit_restart_resume(false);
}

#[test]
fn commits_survive_sigkill_restart_and_consumption_resumes() {
    commit_restart_resume(true);
}
