//! Broker restarts under load: a non-idempotent confluent-kafka producer (PyPI, acks=all,
//! unlimited retries) produces continuously to three partitions while the broker is stopped
//! (SIGTERM, clean) or killed (SIGKILL, recovery) and started again on the same port and log
//! dir. Afterwards every acknowledged record is read back at its acknowledged offset, in
//! acknowledgement order per partition, and nothing appears that was never sent (duplicates
//! are tolerated: a non-idempotent retry may append a batch twice).

use std::collections::BTreeMap;
use std::time::Duration;

use rdkafka::Offset;
use serde_json::{Value, json};
use skiff_compat::{Background, Broker, Python, finish_json, python_background};

use crate::common::{create_topic, rd_read};

const PARTITIONS: i32 = 3;
/// Records the producer must have acknowledged before the restart, and again after it.
const ACKED_EACH_SIDE: i64 = 300;

fn wait_acked(p: &mut Background, at_least: i64) -> i64 {
    p.wait_for(Duration::from_secs(40), |line| {
        let v: Value = serde_json::from_str(line).ok()?;
        let acked = v["acked"].as_i64()?;
        (acked >= at_least).then_some(acked)
    })
}

fn restart_during_production(kill: bool) {
    let mut b = Broker::start();
    create_topic(&b, "restart", PARTITIONS, &[]);
    let mut producer = python_background(
        Python::PyPi,
        "ck.py",
        "produce_continuously",
        &json!({
            "bootstrap": b.bootstrap(), "topic": "restart", "partitions": PARTITIONS,
            "config": {
                "acks": "all", "enable.idempotence": false, "retries": 1_000_000,
                "message.timeout.ms": 50_000, "request.timeout.ms": 5_000,
                "retry.backoff.ms": 50, "reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 500,
                "linger.ms": 5,
            },
        }),
    );
    let before = wait_acked(&mut producer, ACKED_EACH_SIDE);
    if kill {
        b.kill9();
    } else {
        let status = b.stop();
        assert!(status.success(), "SIGTERM exit status {status:?}");
        assert!(
            b.has_clean_shutdown_marker(),
            "no clean-shutdown marker after SIGTERM"
        );
    }
    b.restart();
    // The producer reconnects by itself and keeps going.
    wait_acked(&mut producer, before + ACKED_EACH_SIDE);
    let result = finish_json(producer, Duration::from_secs(50));

    assert_eq!(
        result["unflushed"],
        json!(0),
        "records left unacknowledged: {}",
        result["unflushed"]
    );
    assert_eq!(result["failures"], json!([]), "deliveries failed");
    let sent = result["sent"].as_i64().unwrap();
    let acks = result["acks"].as_array().unwrap();
    assert_eq!(acks.len() as i64, sent, "every sent record acknowledged");

    // What is stored, per partition: offset -> value.
    let mut stored: BTreeMap<i32, BTreeMap<i64, i64>> = BTreeMap::new();
    let mut copies: BTreeMap<i64, usize> = BTreeMap::new();
    for p in 0..PARTITIONS {
        let got = rd_read(&b.bootstrap(), "restart", p, Offset::Beginning);
        let offsets: Vec<i64> = got.iter().map(|g| g.offset).collect();
        assert_eq!(
            offsets,
            (0..got.len() as i64).collect::<Vec<_>>(),
            "partition {p}: offsets not dense"
        );
        let map = stored.entry(p).or_default();
        for g in got {
            let v: i64 = g
                .rec
                .value
                .as_deref()
                .and_then(|s| s.parse().ok())
                .unwrap_or_else(|| {
                    panic!(
                        "partition {p} offset {}: a value never sent: {:?}",
                        g.offset, g.rec.value
                    )
                });
            assert!(
                (0..sent).contains(&v),
                "partition {p} offset {}: value {v} was never sent",
                g.offset
            );
            assert_eq!(
                v % i64::from(PARTITIONS),
                i64::from(p),
                "value {v} was sent to another partition"
            );
            map.insert(g.offset, v);
            *copies.entry(v).or_default() += 1;
        }
    }
    // Every acknowledged record is there, at its acknowledged offset, and per partition the
    // acknowledgement order is the offset order.
    let mut last: BTreeMap<i64, i64> = BTreeMap::new();
    for a in acks {
        let (p, off, v) = (
            a[0].as_i64().unwrap(),
            a[1].as_i64().unwrap(),
            a[2].as_str().unwrap(),
        );
        let v: i64 = v.parse().unwrap();
        let prev = last.insert(p, off);
        assert!(
            prev.is_none_or(|prev| prev < off),
            "partition {p}: ack at offset {off} after one at {prev:?}"
        );
        assert_eq!(
            stored[&(p as i32)].get(&off),
            Some(&v),
            "partition {p}: acknowledged record {v} is not at its acknowledged offset {off}"
        );
    }
    let dups = copies.values().filter(|n| **n > 1).count();
    eprintln!(
        "restart ({}): {sent} sent and acknowledged ({before} before the restart), {} stored, {dups} duplicated by retries",
        if kill { "SIGKILL" } else { "SIGTERM" },
        copies.values().sum::<usize>()
    );
}

#[test]
fn restart_sigterm_mid_production_keeps_every_acknowledged_record() {
    restart_during_production(false);
}

#[test]
fn restart_sigkill_mid_production_keeps_every_acknowledged_record() {
    restart_during_production(true);
}
