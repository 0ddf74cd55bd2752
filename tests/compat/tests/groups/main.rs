//! Consumer groups with stock clients (issue 6): subscribe-mode consumers of confluent-kafka
//! (PyPI 2.x and Debian's 1.7.0 on librdkafka 2.0.2), kafka-python, kafkajs and kcat's
//! balanced consumer against the `skiff` binary, classic protocol and KIP-848
//! (`group.protocol=consumer`).
//!
//! The client side lives in `tests/compat/py/groups_*.py` and
//! `tests/compat/js/groups_kafkajs.js` (one JSON result line per command, see the harness);
//! these tests judge the results. Modules by subject:
//! - `members`: three members (confluent-kafka, kafka-python, KIP-848 with the default and the
//!   `range` assignor, kafkajs) share a 6-partition topic, one leaves, one joins, one crashes;
//!   every partition has exactly one owner, nothing produced is missed, commits reach the end
//!   offsets;
//! - `restart`: commit, restart the broker (SIGTERM, SIGKILL), resume from the commits;
//! - `fencing`: static membership restarts without a rebalance; a zombie of an old generation
//!   cannot commit; a second live consumer with the same group.instance.id fences the first;
//!   the admin client removes static members in one batch LeaveGroup;
//! - `cooperative`: cooperative-sticky members rebalance incrementally (survivors revoke only
//!   what moves);
//! - `limits`: `group.max.size` refuses one member too many; `group.initial.rebalance.delay.ms`
//!   gathers members that start together into one generation;
//! - `offsets`: OffsetDelete through kafka-python's admin client; commit metadata round-trips
//!   through confluent-kafka, across a restart;
//! - `admin`: list / describe / delete groups and lag through AdminClient; a KIP-848 group
//!   through ConsumerGroupDescribe; listings filtered by state and type;
//! - `kcat`: `kcat -G` (librdkafka 2.0.2) consumes, commits and resumes;
//! - `kip848`: regex subscriptions resolved by the coordinator.
//!
//! Session timeouts are short (6 s, heartbeats every 500 ms) so rebalances are quick; every
//! test finishes well under 60 s. nextest runs this package one test at a time.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod admin;
mod cooperative;
mod fencing;
mod kcat;
mod kip848;
mod limits;
mod members;
mod offsets;
mod restart;

use serde_json::{Value, json};
use skiff_compat::{Broker, Python, python};

/// The session timeout the scripts' classic consumers use.
pub const SESSION_MS: i64 = 6000;

/// A broker whose group settings allow short sessions and quick KIP-848 heartbeats.
pub fn group_broker() -> Broker {
    group_broker_with(&[])
}

/// [`group_broker`] with more `--override` settings.
pub fn group_broker_with(extra: &[(&str, &str)]) -> Broker {
    let mut overrides = vec![
        ("group.min.session.timeout.ms", "1000"),
        // As on Kafka, a KIP-848 session below 45 s needs its lower bounds lowered too.
        ("group.consumer.min.session.timeout.ms", "6000"),
        ("group.consumer.session.timeout.ms", "6000"),
        ("group.consumer.min.heartbeat.interval.ms", "500"),
        ("group.consumer.heartbeat.interval.ms", "500"),
    ];
    overrides.extend_from_slice(extra);
    Broker::start_with(&overrides)
}

/// Runs a `groups_ck.py` command.
pub fn ck(py: Python, command: &str, params: &Value) -> Value {
    python(py, "groups_ck.py", command, params)
}

/// Runs a `groups_kp.py` command.
pub fn kp(command: &str, params: &Value) -> Value {
    python(Python::PyPi, "groups_kp.py", command, params)
}

/// Creates `topic` with `partitions` partitions (confluent-kafka's AdminClient).
pub fn create_topic(b: &Broker, topic: &str, partitions: i32) {
    let r = ck(
        Python::PyPi,
        "create_topic",
        &json!({"bootstrap": b.bootstrap(), "topic": topic, "partitions": partitions}),
    );
    assert_eq!(r["created"], json!(topic));
}

/// `{"0": n, ...}` as a vector indexed by partition.
pub fn by_partition(v: &Value, partitions: i32) -> Vec<i64> {
    (0..partitions)
        .map(|p| {
            v[p.to_string()]
                .as_i64()
                .unwrap_or_else(|| panic!("no partition {p} in {v}"))
        })
        .collect()
}
