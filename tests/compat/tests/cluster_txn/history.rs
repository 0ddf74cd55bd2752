//! The W2 transactional workload (design/reliability.md, G6) under kill -9, checked by
//! `logcheck`.
//!
//! Mental model: `logcheck_driver.py w2` runs two transactional confluent-kafka producers
//! (1-4 sends over random partitions per transaction, 1 in 8 aborted on purpose) and two
//! read_committed assign-mode consumers, writing a JSON-lines history with `txn` events; the
//! test is the nemesis. Round 1 kills the leader of partition 0, round 2 the transaction
//! coordinator of the first producer's transactional id; each restarts the node once another
//! node took its role over and the producers committed 30 more transactions without it. Each
//! fault and heal is a marker in the history, and the cluster is healthy again (every
//! partition of the topic and of `__transaction_state` led, ISR full) before the next round. Closing the driver's stdin
//! stops the producers and drains every partition at read_committed to its high watermark (so
//! a hanging transaction fails the drain), then `logcheck` must find G1a = 0, torn = 0,
//! precommitted-read = 0 and no other safety anomaly, every committed send seen, and
//! commits after the last heal.
//!
//! Evidence: the history lives in a temp dir under the target's tmp, kept (with the nodes'
//! logs) when the test panics or `SKIFF_CHAOS_KEEP` is set.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use logcheck::Anomaly;
use serde_json::{Value, json};
use skiff_compat::{Background, Python, finish_json, python_background};
use skiff_testkit::cluster::Cluster;

use crate::nodes::{self, TXN_STATE};

const TOPIC: &str = "w2";
const PARTITIONS: i32 = 3;
/// The first producer's transactional id (the driver's prefix, index 0).
const TID: &str = "cluster-w2-0";
/// Transactions the producers must commit while a killed node is down.
const WHILE_DOWN: i64 = 30;

struct Evidence {
    dir: Option<tempfile::TempDir>,
    path: PathBuf,
    logs: Vec<PathBuf>,
}

impl Drop for Evidence {
    fn drop(&mut self) {
        let keep = std::thread::panicking() || std::env::var_os("SKIFF_CHAOS_KEEP").is_some();
        if let (true, Some(dir)) = (keep, self.dir.take()) {
            let path = dir.keep();
            for (i, log) in self.logs.iter().enumerate() {
                let _ = std::fs::copy(log, path.join(format!("node-{}.log", i + 1)));
            }
            eprintln!("W2 evidence kept: {}", path.display());
        }
    }
}

/// Waits for a driver progress line with at least `at_least` committed transactions.
fn wait_ok(driver: &mut Background, at_least: i64, within: Duration) -> i64 {
    driver.wait_for(within, |line| {
        let v: Value = serde_json::from_str(line).ok()?;
        let ok = v["ok"].as_i64()?;
        (ok >= at_least).then_some(ok)
    })
}

fn phase(t0: Instant, what: &str) {
    eprintln!("[phase W2 {:>6.2}s] {what}", t0.elapsed().as_secs_f64());
}

/// Kills node `victim` (1-based), waits until `moved` names another node for its role and the
/// producers have committed [`WHILE_DOWN`] more transactions (past `ok`) with the node down,
/// marks and restarts it, and waits for a healthy cluster; `moved` is polled with the nodes
/// up. Returns the committed count seen while the node was down.
fn kill_round(
    cluster: &mut Cluster,
    driver: &mut Background,
    t0: Instant,
    (victim, ok): (i32, i64),
    role: &str,
    moved: impl Fn(&Cluster, &[bool]) -> Option<i32>,
) -> i64 {
    let v = (victim - 1) as usize;
    let mut up = [true; 3];
    driver.send_line(&format!("fault kill -9 node {victim} ({role})"));
    cluster.nodes[v].kill9();
    up[v] = false;
    let new = nodes::wait_for(
        &format!("a new {role} after node {victim} died"),
        Duration::from_secs(20),
        || moved(cluster, &up),
    );
    phase(
        t0,
        &format!("node {victim} ({role}) killed; node {new} took over"),
    );
    let ok = wait_ok(driver, ok + WHILE_DOWN, Duration::from_secs(30));
    phase(t0, &format!("{ok} committed with node {victim} down"));
    cluster.nodes[v].restart();
    up[v] = true;
    driver.send_line(&format!("heal restart node {victim}"));
    nodes::wait_healthy(cluster, &up, &[TOPIC, TXN_STATE], Duration::from_secs(30));
    phase(t0, &format!("node {victim} restarted; every ISR full"));
    ok
}

pub fn run() {
    let t0 = Instant::now();
    let mut cluster = nodes::start();
    let dir = tempfile::Builder::new()
        .prefix("cluster-txn-w2-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let evidence = Evidence {
        path: dir.path().to_path_buf(),
        logs: cluster
            .nodes
            .iter()
            .map(|n| n.temp_dir().join("broker.log"))
            .collect(),
        dir: Some(dir),
    };
    let history = evidence.path.join("history.jsonl");
    nodes::create_topic(&cluster, TOPIC, PARTITIONS);
    nodes::wait_coordinator(&cluster, &[true; 3], TID, None, Duration::from_secs(20));
    nodes::wait_healthy(
        &cluster,
        &[true; 3],
        &[TOPIC, TXN_STATE],
        Duration::from_secs(20),
    );
    phase(t0, "cluster up, topic and transaction log led, ISR full");

    let mut driver = python_background(
        Python::PyPi,
        "logcheck_driver.py",
        "w2",
        &json!({
            "bootstrap": cluster.bootstrap(), "topic": TOPIC, "partitions": PARTITIONS,
            "history": history.display().to_string(), "producers": 2, "consumers": 2,
            "rate": 20, "abort_p": 0.125, "transactional_prefix": "cluster-w2",
            "transaction_timeout_ms": 10_000, "drain_timeout_s": 40,
            "seed": u64::from(std::process::id()),
            "producer_config": {
                "request.timeout.ms": 5_000, "retry.backoff.ms": 50, "reconnect.backoff.ms": 50,
                "reconnect.backoff.max.ms": 500, "topic.metadata.refresh.interval.ms": 1_000,
            },
            "consumer_config": {
                "reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 500,
                "topic.metadata.refresh.interval.ms": 1_000,
            },
        }),
    );
    let mut ok = wait_ok(&mut driver, 30, Duration::from_secs(40));
    phase(t0, &format!("warm-up: {ok} transactions committed"));

    // Round 1: the leader of partition 0.
    let leader = nodes::wait_healthy(&cluster, &[true; 3], &[TOPIC], Duration::from_secs(10))[0];
    ok = kill_round(
        &mut cluster,
        &mut driver,
        t0,
        (leader, ok),
        "leader of partition 0",
        |c, up| {
            let l = nodes::leader_of(c, up, TOPIC, 0)?;
            (l != leader).then_some(l)
        },
    );
    ok = wait_ok(&mut driver, ok + 30, Duration::from_secs(40));
    phase(t0, &format!("{ok} committed after round 1"));

    // Round 2: the coordinator of the first producer's transactional id.
    let coordinator =
        nodes::wait_coordinator(&cluster, &[true; 3], TID, None, Duration::from_secs(10));
    ok = kill_round(
        &mut cluster,
        &mut driver,
        t0,
        (coordinator, ok),
        &format!("coordinator of {TID}"),
        |c, up| {
            (0..3).filter(|i| up[*i]).find_map(|i| {
                let n = nodes::txn_coordinator(c.ports[i].0, TID)?;
                (n != coordinator && up[(n - 1) as usize]).then_some(n)
            })
        },
    );
    driver.send_line("heal all: every node running");
    ok = wait_ok(&mut driver, ok + 30, Duration::from_secs(40));
    phase(t0, &format!("{ok} committed after round 2"));

    let result = finish_json(driver, Duration::from_secs(90));
    phase(t0, &format!("driver stopped and drained: {result}"));
    let text = std::fs::read_to_string(&history).unwrap();
    let report = logcheck::check_str(&text).unwrap();
    let count = |a: Anomaly| report.counts.get(&a).copied().unwrap_or(0);
    let s = &report.stats;
    phase(
        t0,
        &format!(
            "logcheck: valid {} all_seen {}; G1a {} torn {} precommitted-read {}; txns ok/fail/indefinite {}/{}/{}; {} polls, {} records; final drain {}",
            report.valid,
            report.all_seen,
            count(Anomaly::G1a),
            count(Anomaly::TornTransaction),
            count(Anomaly::PrecommittedRead),
            s.txns_ok,
            s.txns_fail,
            s.txns_indefinite,
            s.polls_ok,
            s.records_polled,
            s.final_drain
        ),
    );
    let kept = format!("history {}", history.display());
    let anomalies = serde_json::to_string_pretty(&report.anomalies).unwrap();
    assert_eq!(count(Anomaly::G1a), 0, "G1a: {anomalies}\n{kept}");
    assert_eq!(
        count(Anomaly::TornTransaction),
        0,
        "torn: {anomalies}\n{kept}"
    );
    assert_eq!(
        count(Anomaly::PrecommittedRead),
        0,
        "precommitted-read: {anomalies}\n{kept}"
    );
    assert!(report.valid, "safety anomalies: {anomalies}\n{kept}");
    assert!(
        s.final_drain && result["drained"] == json!(true),
        "the read_committed drain never reached every high watermark (a hanging transaction?): {}\n{kept}",
        result["drain_positions"]
    );
    assert!(
        report.all_seen,
        "committed sends never seen: {:?}\n{kept}",
        report.unseen
    );
    assert!(
        s.txns_ok >= 100 && s.txns_fail >= 5,
        "too few transactions to mean something: {s:?}\n{kept}"
    );
}
