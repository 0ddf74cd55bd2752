//! Transactions across a three-node Skiff cluster (issue 18), through confluent-kafka (PyPI):
//!
//! - a transaction writes to three partitions led by three different brokers and commits; an
//!   aborted one is invisible at read_committed and visible at read_uncommitted;
//! - the transaction coordinator's node is killed (kill -9) the moment a commit is sent, while
//!   a producer commits transactions over every partition in a loop: every transaction is
//!   visible all-or-nothing at read_committed (each record names its transaction and
//!   partition), the producer carries on through the new coordinator, the killed node comes
//!   back, and a read_committed consumer reaches every high watermark (no hanging transaction);
//! - the W2 transactional workload of design/reliability.md (G6) under kill -9 of a partition
//!   leader and of a coordinator, checked by `logcheck` (`cluster_txn/history.rs`).
//!
//! The cluster (`cluster_txn/nodes.rs`): `__transaction_state` with 3 partitions, RF=3,
//! min ISR 2; `__consumer_offsets` RF=3; timed-out transactions aborted every 500 ms. Scripts:
//! `tests/compat/py/txn_cluster.py`, `txn_ck.py` and the driver's `w2`
//! (`logcheck_driver.py`). Budget: a multi-node scenario, 120 s (`.config/nextest.toml`).
//!
//! These tests found a head-of-line deadlock (fixed): a marker job's WriteTxnMarkers to a
//! remote leader travelled on the one peer connection the coordinator node's replica fetcher
//! also used for that leader, so the marker's acks=-1 wait and the follower fetch it waited
//! for blocked each other until the ISR dropped the coordinator node; with a node down,
//! forever. Marker and verification calls now have connections of their own
//! (`Peers::client_for`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "cluster_txn/history.rs"]
mod history;
#[path = "cluster_txn/nodes.rs"]
mod nodes;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use skiff_compat::{Python, finish_json, python, python_background, read_batches};
use skiff_testkit::cluster::Cluster;

use nodes::TXN_STATE;

const PARTITIONS: i32 = 3;

fn phase(t0: Instant, what: &str) {
    eprintln!("[phase {:>6.2}s] {what}", t0.elapsed().as_secs_f64());
}

/// On a failure: every node's stored batches of `topic` (base..last, producer id/epoch, C for
/// a control batch, T for a transactional one) and its warnings about transactions.
fn stored(cluster: &Cluster, topic: &str) -> String {
    let mut out = String::new();
    for i in 0..3 {
        for p in 0..PARTITIONS {
            let batches: Vec<String> = read_batches(&cluster.partition_dir(i, topic, p))
                .iter()
                .map(|b| {
                    let control = if b.attributes & 0x20 != 0 { "C" } else { "" };
                    let txn = if b.attributes & 0x10 != 0 { "T" } else { "" };
                    let (base, last, pid) = (b.base_offset, b.last_offset, b.producer_id);
                    format!("{base}..{last} {pid}/{}{txn}{control}", b.producer_epoch)
                })
                .collect();
            out += &format!("node {} {topic}-{p}: {batches:?}\n", i + 1);
        }
        let logs = cluster.nodes[i].logs();
        let warn: Vec<&str> = logs
            .lines()
            .filter(|l| {
                let loud = l.contains("WARN") || l.contains("ERROR") || l.contains("DEBUG");
                loud && (l.contains("txn") || l.contains("marker") || l.contains("transaction"))
            })
            .take(40)
            .collect();
        out += &format!("node {} warnings: {warn:#?}\n", i + 1);
        for p in 0..PARTITIONS {
            let mut req = skiff_testkit::client::fetch_request(topic, p, 0, 1 << 20, -1);
            req.isolation_level = 1;
            if let Some(skiff_protocol::ResponseBody::Fetch(f)) =
                nodes::call(cluster.ports[i].0, 12, req)
            {
                let d = &f.responses[0].partitions[0];
                out += &format!(
                    "node {} read_committed fetch {topic}-{p}: error {} hw {} lso {} aborted {:?}\n",
                    i + 1,
                    d.error_code,
                    d.high_watermark,
                    d.last_stable_offset,
                    d.aborted_transactions
                );
            }
        }
    }
    out
}

/// Reads every partition of `topic` from the beginning at `isolation` until each position
/// reaches its high watermark: the values per partition (panics if it never gets there).
fn read_all(cluster: &Cluster, topic: &str, isolation: &str) -> BTreeMap<i32, Vec<String>> {
    let r = python(
        Python::PyPi,
        "txn_cluster.py",
        "read",
        &json!({"bootstrap": cluster.bootstrap(), "topic": topic, "partitions": PARTITIONS,
                "isolation": isolation, "timeout_s": 30}),
    );
    assert_eq!(
        r["done"],
        json!(true),
        "{isolation} consumer never reached every high watermark (a hanging transaction keeps \
         the LSO down): positions {} high {}",
        r["positions"],
        r["high"]
    );
    (0..PARTITIONS)
        .map(|p| {
            let vals = r["values"][p.to_string()].as_array().unwrap();
            let vals = vals.iter().map(|v| v.as_str().unwrap().to_string());
            (p, vals.collect())
        })
        .collect()
}

#[test]
fn cluster_txn_across_three_leaders_commits_and_aborts() {
    let t0 = Instant::now();
    let cluster = nodes::start();
    let topic = "txn-spread";
    nodes::create_topic(&cluster, topic, PARTITIONS);
    let leaders = nodes::wait_healthy(&cluster, &[true; 3], &[topic], Duration::from_secs(20));
    assert_eq!(
        leaders.iter().copied().collect::<BTreeSet<_>>(),
        BTreeSet::from([1, 2, 3]),
        "each partition led by another node: {leaders:?}"
    );
    phase(t0, &format!("cluster up; {topic} leaders {leaders:?}"));

    let msgs = |prefix: &str| -> Vec<Value> {
        (0..6)
            .map(|i| json!({"key": format!("{prefix}{i}"), "value": format!("{prefix}{i}"), "partition": i % PARTITIONS}))
            .collect()
    };
    let r = python(
        Python::PyPi,
        "txn_ck.py",
        "transactions",
        &json!({"bootstrap": cluster.bootstrap(), "topic": topic, "transactional_id": "tx-spread",
        "transactions": [
            {"messages": msgs("c1-"), "commit": true},
            {"messages": msgs("a1-"), "commit": false},
            {"messages": msgs("c2-"), "commit": true},
        ]}),
    );
    let outcomes: Vec<&str> = r["transactions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["outcome"].as_str().unwrap_or("?"))
        .collect();
    assert_eq!(
        outcomes,
        ["committed", "aborted", "committed"],
        "{r}\n{}",
        stored(&cluster, topic)
    );
    let coordinator = nodes::wait_coordinator(
        &cluster,
        &[true; 3],
        "tx-spread",
        None,
        Duration::from_secs(10),
    );
    let txn_leaders =
        nodes::wait_healthy(&cluster, &[true; 3], &[TXN_STATE], Duration::from_secs(20));
    assert_eq!(txn_leaders.len(), 3, "{TXN_STATE} partitions");
    phase(
        t0,
        &format!(
            "committed, aborted, committed (coordinator node {coordinator}; {TXN_STATE} leaders {txn_leaders:?}, RF 3)"
        ),
    );

    let expect = |prefixes: &[&str], p: i32| -> Vec<String> {
        prefixes
            .iter()
            .flat_map(|pre| {
                (0..6)
                    .filter(move |i| i % PARTITIONS == p)
                    .map(move |i| format!("{pre}{i}"))
            })
            .collect()
    };
    let uncommitted = read_all(&cluster, topic, "read_uncommitted");
    let committed = read_all(&cluster, topic, "read_committed");
    for p in 0..PARTITIONS {
        assert_eq!(
            committed[&p],
            expect(&["c1-", "c2-"], p),
            "read_committed, partition {p} (leader node {}); read_uncommitted {uncommitted:?}; producer {r}\n{}",
            leaders[p as usize],
            stored(&cluster, topic)
        );
        assert_eq!(
            uncommitted[&p],
            expect(&["c1-", "a1-", "c2-"], p),
            "read_uncommitted, partition {p} (leader node {})",
            leaders[p as usize]
        );
    }
    phase(
        t0,
        "read_committed: both commits on every leader; read_uncommitted: the aborted one too",
    );
}

/// The transactions `loop` of txn_cluster.py ran: (n, outcome) in order.
fn outcomes(result: &Value) -> Vec<(u64, String)> {
    result["txns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let n = t["n"].as_u64().unwrap();
            (n, t["outcome"].as_str().unwrap().to_string())
        })
        .collect()
}

/// Wall-clock seconds: the loop producer stamps its progress lines with them, so a wait takes
/// only lines written after it began (not the backlog of a slow phase).
fn now_s() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Waits for a progress line of the loop producer written after this call began whose
/// `field` (`txn` or `committing`) is at least `at_least` (for `txn`: committed); its n.
fn wait_line(
    bg: &mut skiff_compat::Background,
    field: &str,
    at_least: u64,
    within: Duration,
) -> u64 {
    let since = now_s() - 0.05;
    bg.wait_for(within, |line| {
        let v: Value = serde_json::from_str(line).ok()?;
        let n = v[field].as_u64()?;
        let fresh = v["ts"].as_f64()? >= since;
        let committed = field != "txn" || v["outcome"] == "committed";
        (fresh && committed && n >= at_least).then_some(n)
    })
}

fn wait_committed(bg: &mut skiff_compat::Background, at_least: u64, within: Duration) -> u64 {
    wait_line(bg, "txn", at_least, within)
}

#[test]
fn cluster_txn_coordinator_kill9_mid_commit() {
    const PER_PARTITION: usize = 2;
    let t0 = Instant::now();
    let mut cluster = nodes::start();
    let (topic, tid) = ("txn-kill", "tx-kill");
    nodes::create_topic(&cluster, topic, PARTITIONS);
    let mut up = [true; 3];
    // The transaction log exists once a transactional id is looked up.
    let first = nodes::wait_coordinator(&cluster, &up, tid, None, Duration::from_secs(20));
    nodes::wait_healthy(&cluster, &up, &[topic, TXN_STATE], Duration::from_secs(20));
    phase(
        t0,
        &format!("cluster up; {tid} coordinated by node {first}"),
    );

    let mut producer = python_background(
        Python::PyPi,
        "txn_cluster.py",
        "loop",
        &json!({"bootstrap": cluster.bootstrap(), "topic": topic, "partitions": PARTITIONS,
                "transactional_id": tid, "per_partition": PER_PARTITION,
                "transaction_timeout_ms": 10_000}),
    );
    let mut done = wait_committed(&mut producer, 3, Duration::from_secs(30));
    phase(t0, &format!("producer committed transactions 0..={done}"));

    let mut kills = Vec::new();
    for round in 1..=2 {
        let victim = nodes::wait_coordinator(&cluster, &up, tid, None, Duration::from_secs(20));
        // Kill as a commit is sent: right after the producer says it is committing.
        let committing = wait_line(
            &mut producer,
            "committing",
            done + 1,
            Duration::from_secs(20),
        );
        let v = (victim - 1) as usize;
        cluster.nodes[v].kill9();
        up[v] = false;
        kills.push((committing, victim));
        let new =
            nodes::wait_coordinator(&cluster, &up, tid, Some(victim), Duration::from_secs(20));
        phase(
            t0,
            &format!(
                "round {round}: node {victim} (coordinator) killed during commit {committing}; node {new} coordinates"
            ),
        );
        done = wait_committed(&mut producer, committing + 2, Duration::from_secs(40));
        phase(
            t0,
            &format!("round {round}: producer committed up to {done} through node {new}"),
        );
        cluster.nodes[v].restart();
        up[v] = true;
        nodes::wait_healthy(&cluster, &up, &[topic, TXN_STATE], Duration::from_secs(30));
        done = wait_committed(&mut producer, done + 2, Duration::from_secs(30));
        phase(
            t0,
            &format!("round {round}: node {victim} back in every ISR; committed up to {done}"),
        );
    }
    let result = finish_json(producer, Duration::from_secs(60));
    let txns = outcomes(&result);
    phase(
        t0,
        &format!(
            "producer stopped: {} (recreated {})",
            result["counts"], result["recreated"]
        ),
    );

    // All-or-nothing per transaction at read_committed, and the LSO of every partition at its
    // high watermark.
    let committed = read_all(&cluster, topic, "read_committed");
    let mut seen: BTreeMap<u64, BTreeSet<String>> = BTreeMap::new();
    for (p, values) in &committed {
        for v in values {
            let n: u64 = v.split(':').next().and_then(|s| s.parse().ok()).unwrap();
            assert!(
                v.split(':').nth(1) == Some(&p.to_string()),
                "{v} read from {p}"
            );
            assert!(
                seen.entry(n).or_default().insert(v.clone()),
                "{v} read twice"
            );
        }
    }
    let whole = |n: u64| -> BTreeSet<String> {
        (0..PARTITIONS)
            .flat_map(|p| (0..PER_PARTITION).map(move |i| format!("{n}:{p}:{i}")))
            .collect()
    };
    let mut visible = 0;
    for (n, outcome) in &txns {
        let got = seen.remove(n).unwrap_or_default();
        match outcome.as_str() {
            "committed" => assert_eq!(got, whole(*n), "committed transaction {n}"),
            "aborted" => assert!(got.is_empty(), "aborted transaction {n} visible: {got:?}"),
            _ => assert!(
                got.is_empty() || got == whole(*n),
                "transaction {n} ({outcome}) torn: {got:?}"
            ),
        }
        visible += usize::from(!got.is_empty());
    }
    assert!(
        seen.is_empty(),
        "records of transactions never run: {seen:?}"
    );
    let counts = &result["counts"];
    phase(
        t0,
        &format!(
            "read_committed at every high watermark: {visible} of {} transactions whole, the rest absent; kills (commit n, node) {kills:?}; {counts}",
            txns.len()
        ),
    );
}

#[test]
fn cluster_txn_w2_history_under_leader_and_coordinator_kill9() {
    history::run();
}
