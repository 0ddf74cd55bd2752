//! The chaos harness: one 3-node cluster, one RF=3 topic, the W1 workload driver writing a
//! history, a nemesis API (kill -9, restart, SIGSTOP, SIGCONT) that writes the driver's fault
//! and heal markers, and the end of every scenario: heal, wait for a healthy cluster, stop
//! and drain the driver, check the history with `logcheck`.
//!
//! Mental model: a [`Run`] owns everything a scenario touches. The nemesis methods keep a
//! [`Node`] state per process so Metadata is only asked of nodes that can answer (a stopped
//! process accepts connections but never replies), with short socket timeouts so a node
//! that dies mid-question costs a second, not a test. [`Run::faults`] repeats a scenario's
//! round for at least `min_rounds` and at least the fault window: the CI default is short,
//! `SKIFF_CHAOS_SECONDS` lengthens it (`cargo run -p xtask -- chaos`).
//!
//! Evidence: the history lives in a temp dir under the target dir's tmp; if the test panics
//! (or `SKIFF_CHAOS_KEEP` is set) the dir is kept and every node's log copied into it, and
//! the panic message names it.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use skiff_compat::{Background, Python, finish_json, python_background};
use skiff_protocol::{CreatableReplicaAssignment, ResponseBody};
use skiff_testkit::client::{Conn, create_topics_request};
use skiff_testkit::cluster::Cluster;

use crate::probe::{self, http_get, metadata, partitions, poll, secs};
use crate::verdict;

/// The workload's topic: [`PARTITIONS`] partitions, RF=3, `min.insync.replicas=2`.
pub const TOPIC: &str = "chaos";
pub const PARTITIONS: i32 = 3;
const NODES: usize = 3;

/// The text of the last heal marker.
const FINAL_HEAL: &str = "all: every node running";

/// Sends per second of each of the driver's two producers.
const RATE: u32 = 100;

/// A node's process state, as the nemesis left it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Node {
    Up,
    /// SIGSTOP'd: connections are accepted by the kernel but never answered.
    Paused,
    /// Killed (kill -9), not restarted yet.
    Down,
}

/// How the topic is created.
#[derive(Clone, Debug, Default)]
pub struct Setup {
    /// Manual replica assignment (first replica = preferred leader), else striped placement.
    pub assignment: Option<Vec<Vec<i32>>>,
}

/// The fault window: `SKIFF_CHAOS_SECONDS` if set, else `default`.
pub fn window(default: Duration) -> Duration {
    std::env::var("SKIFF_CHAOS_SECONDS")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .map_or(default, Duration::from_secs)
}

/// The history's dir; kept (with the nodes' logs) when the test panics.
struct Evidence {
    dir: Option<tempfile::TempDir>,
    path: PathBuf,
    logs: Vec<PathBuf>,
}

impl Evidence {
    fn new(name: &str) -> Evidence {
        let dir = tempfile::Builder::new()
            .prefix(&format!("chaos-{name}-"))
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .unwrap_or_else(|e| panic!("cannot create the evidence dir: {e}"));
        let path = dir.path().to_path_buf();
        Evidence {
            dir: Some(dir),
            path,
            logs: Vec::new(),
        }
    }

    fn history(&self) -> PathBuf {
        self.path.join("history.jsonl")
    }
}

impl Drop for Evidence {
    fn drop(&mut self) {
        let keep = std::thread::panicking() || std::env::var_os("SKIFF_CHAOS_KEEP").is_some();
        if let (true, Some(dir)) = (keep, self.dir.take()) {
            let path = dir.keep();
            for (i, log) in self.logs.iter().enumerate() {
                let _ = std::fs::copy(log, path.join(format!("node-{}.log", i + 1)));
            }
            eprintln!(
                "chaos evidence kept: {} (history.jsonl, node-N.log)",
                path.display()
            );
        }
    }
}

/// One scenario's cluster, driver and bookkeeping. Fields drop in order: the evidence first
/// (while the nodes' logs still exist), the driver, then the cluster.
pub struct Run {
    pub name: &'static str,
    evidence: Evidence,
    driver: Option<Background>,
    pub cluster: Cluster,
    state: Vec<Node>,
    /// Per node: the length of its log when it was last restarted, until it has logged its
    /// registration with the controller since then.
    unregistered: Vec<Option<usize>>,
    t0: Instant,
    last_phase: Instant,
    phases: Vec<(String, Duration)>,
    notes: Vec<String>,
    faults: usize,
}

impl Run {
    /// Starts the cluster, creates the topic, waits until every partition is led with a full
    /// ISR, starts the driver and waits until it has 100 acknowledged sends.
    pub fn start(name: &'static str, setup: Setup) -> Run {
        let t0 = Instant::now();
        let mut evidence = Evidence::new(name);
        let cluster = Cluster::start(
            NODES,
            &[
                ("replica.fetch.backoff.ms", "100"),
                ("replica.lag.time.max.ms", "5000"),
                // The admin port (ephemeral), for the replication state on failures.
                (skiff_testkit::cluster::ADMIN_KEY, "127.0.0.1:0"),
                // The fetchers' skips and divergence answers, in the evidence on a failure.
                (
                    skiff_testkit::cluster::RUST_LOG_KEY,
                    "info,skiff_server::replica=debug",
                ),
            ],
        );
        evidence.logs = cluster
            .nodes
            .iter()
            .map(|n| n.temp_dir().join("broker.log"))
            .collect();
        let mut run = Run {
            name,
            evidence,
            driver: None,
            cluster,
            state: vec![Node::Up; NODES],
            unregistered: vec![None; NODES],
            t0,
            last_phase: t0,
            phases: Vec::new(),
            notes: Vec::new(),
            faults: 0,
        };
        run.cluster
            .wait_brokers(&[0, 1, 2], &[1, 2, 3], Duration::from_secs(30));
        run.phase("cluster up");
        run.create_topic(&setup);
        run.wait_healthy(Duration::from_secs(20), "the new topic");
        run.phase("topic led, ISR full");

        let history = run.evidence.history();
        let seed = u64::from(std::process::id());
        run.driver = Some(python_background(
            Python::PyPi,
            "logcheck_driver.py",
            "w1",
            &json!({
                "bootstrap": run.cluster.bootstrap(), "topic": TOPIC, "partitions": PARTITIONS,
                "history": history.display().to_string(), "producers": 2, "consumers": 2,
                "rate": RATE, "flush_s": 30, "drain_timeout_s": 45, "seed": seed,
                "producer_config": {
                    "message.timeout.ms": 60_000, "request.timeout.ms": 5_000,
                    "retry.backoff.ms": 50, "reconnect.backoff.ms": 50,
                    "reconnect.backoff.max.ms": 500, "topic.metadata.refresh.interval.ms": 1_000,
                },
                "consumer_config": {
                    "reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 500,
                    "topic.metadata.refresh.interval.ms": 1_000,
                },
            }),
        ));
        let ok = run.wait_ok(100, Duration::from_secs(40));
        run.check_responsive();
        run.phase(&format!("warm-up ({ok} acknowledged)"));
        run
    }

    fn create_topic(&mut self, setup: &Setup) {
        const TOPIC_ALREADY_EXISTS: i16 = 36;
        let mut req = create_topics_request(TOPIC, PARTITIONS, &[("min.insync.replicas", "2")]);
        req.topics[0].replication_factor = 3;
        if let Some(a) = &setup.assignment {
            req.topics[0].num_partitions = -1;
            req.topics[0].replication_factor = -1;
            req.topics[0].assignments = a
                .iter()
                .enumerate()
                .map(|(p, ids)| CreatableReplicaAssignment {
                    partition_index: p as i32,
                    broker_ids: ids.clone(),
                })
                .collect();
        }
        let port = self.cluster.ports[0].0;
        let mut retried = false;
        let done = poll(Duration::from_secs(20), || {
            let ResponseBody::CreateTopics(r) = Conn::open(port).call(7, req.clone()) else {
                return None;
            };
            let code = r.topics[0].error_code;
            let ok = code == 0 || (retried && code == TOPIC_ALREADY_EXISTS);
            retried = true;
            ok.then_some(())
        });
        assert!(done.is_some(), "{}: cannot create {TOPIC}", self.name);
    }

    /// Records the time since the previous phase under `what` (printed now and at the end).
    pub fn phase(&mut self, what: &str) {
        let d = self.last_phase.elapsed();
        self.last_phase = Instant::now();
        eprintln!(
            "[{} {:>6.1}s] {what} ({})",
            self.name,
            self.t0.elapsed().as_secs_f64(),
            secs(d)
        );
        self.phases.push((what.to_string(), d));
    }

    /// A line for the final summary (and printed now).
    pub fn note(&mut self, text: String) {
        eprintln!(
            "[{} {:>6.1}s]   {text}",
            self.name,
            self.t0.elapsed().as_secs_f64()
        );
        self.notes.push(text);
    }

    fn driver(&mut self) -> &mut Background {
        match self.driver.as_mut() {
            Some(d) => d,
            None => panic!("{}: the driver is not running", self.name),
        }
    }

    /// Waits for a progress line of the driver with at least `at_least` acknowledged sends.
    fn wait_ok(&mut self, at_least: i64, within: Duration) -> i64 {
        self.driver().wait_for(within, |line| {
            let v: Value = serde_json::from_str(line).ok()?;
            let ok = v["ok"].as_i64()?;
            (ok >= at_least).then_some(ok)
        })
    }

    /// Writes a nemesis marker (`fault` or `heal`) into the history.
    pub fn marker(&mut self, f: &str, text: &str) {
        if f == "fault" {
            self.faults += 1;
        }
        eprintln!(
            "[{} {:>6.1}s]   {f}: {text}",
            self.name,
            self.t0.elapsed().as_secs_f64()
        );
        self.driver().send_line(&format!("{f} {text}"));
    }

    /// Repeats `round` (given its number) at least `min_rounds` times and until the fault
    /// window (`window(default)`) has passed.
    pub fn faults(
        &mut self,
        min_rounds: usize,
        default: Duration,
        mut round: impl FnMut(&mut Run, usize),
    ) {
        let window = window(default);
        let started = Instant::now();
        let mut n = 0;
        while n < min_rounds || started.elapsed() < window {
            self.check_responsive();
            round(self, n);
            self.check_alive();
            n += 1;
        }
        self.phase(&format!(
            "faults: {n} rounds, {} fault markers",
            self.faults
        ));
    }

    pub fn state(&self, i: usize) -> Node {
        self.state[i]
    }

    /// Panics (with its log) if a node the nemesis left running has exited: a crash.
    pub fn check_alive(&mut self) {
        for i in 0..NODES {
            if self.state[i] != Node::Down
                && let Some(status) = self.cluster.nodes[i].try_wait()
            {
                self.state[i] = Node::Down;
                panic!(
                    "{}: node {} exited on its own ({status}); log tail:\n{}",
                    self.name,
                    i + 1,
                    self.cluster.nodes[i].logs_tail(60)
                );
            }
        }
    }

    /// Panics if a node the nemesis left running has exited, or has not answered Metadata
    /// for 10 s (hung: its threads' stacks go to the evidence dir when gdb is installed).
    pub fn check_responsive(&mut self) {
        self.check_alive();
        for i in 0..NODES {
            if self.state[i] != Node::Up || poll(Duration::from_secs(10), || self.view(i)).is_some()
            {
                continue;
            }
            let stacks = probe::stacks(
                self.cluster.nodes[i].pid(),
                &self
                    .evidence
                    .path
                    .join(format!("node-{}.stacks.txt", i + 1)),
            );
            panic!(
                "{}: node {} is running (not stopped by the nemesis) but answered no Metadata for 10 s: hung. {stacks}; log tail:\n{}",
                self.name,
                i + 1,
                self.cluster.nodes[i].logs_tail(40)
            );
        }
    }

    /// Writes each running node's admin view of every partition of [`TOPIC`] (role, epochs,
    /// ISR, log end, each follower's fetch state) to the evidence dir; says where.
    fn replication_state(&self) -> String {
        let mut files = Vec::new();
        for i in (0..NODES).filter(|i| self.state[*i] == Node::Up) {
            let Some(port) = self.cluster.nodes[i].admin_port() else {
                continue;
            };
            let views: Vec<String> = (0..PARTITIONS)
                .map(|p| {
                    http_get(port, &format!("/api/v1/partitions/{TOPIC}/{p}"))
                        .unwrap_or_else(|| "no answer".to_string())
                })
                .collect();
            let path = self
                .evidence
                .path
                .join(format!("node-{}.partitions.json", i + 1));
            if std::fs::write(&path, views.join("\n")).is_ok() {
                files.push(path.display().to_string());
            }
        }
        format!("the nodes' admin views of {TOPIC}: {}", files.join(", "))
    }

    pub fn kill(&mut self, i: usize) {
        self.cluster.nodes[i].kill9();
        self.state[i] = Node::Down;
    }

    pub fn restart(&mut self, i: usize) {
        self.unregistered[i] = Some(self.cluster.nodes[i].logs().len());
        self.cluster.nodes[i].restart();
        self.state[i] = Node::Up;
    }

    /// Whether node `i` has registered with the controller since its last restart (until
    /// then its Metadata shows the image it had before, and the controller may still count
    /// its previous incarnation).
    fn registered(&mut self, i: usize) -> bool {
        let Some(from) = self.unregistered[i] else {
            return true;
        };
        let logs = self.cluster.nodes[i].logs();
        let done = logs
            .get(from..)
            .is_some_and(|l| l.contains("registered with the controller"));
        if done {
            self.unregistered[i] = None;
        }
        done
    }

    pub fn pause(&mut self, i: usize) {
        self.cluster.nodes[i].signal("STOP");
        self.state[i] = Node::Paused;
    }

    pub fn resume(&mut self, i: usize) {
        self.cluster.nodes[i].signal("CONT");
        self.state[i] = Node::Up;
    }

    /// The data dir of partition `p` on node `i` (0-based).
    pub fn partition_dir(&self, i: usize, p: i32) -> PathBuf {
        self.cluster
            .temp_dir()
            .join(format!("node-{}", i + 1))
            .join("data")
            .join(format!("{TOPIC}-{p}"))
    }

    /// (partition, leader, ISR) as node `i` sees them, if it answers.
    pub fn view(&self, i: usize) -> Option<Vec<(i32, i32, Vec<i32>)>> {
        if self.state[i] != Node::Up {
            return None;
        }
        metadata(self.cluster.ports[i].0).map(|m| partitions(&m))
    }

    /// The leader of `p` (a node id) as the first running node that names a running leader
    /// other than `except` sees it; polls up to `within`.
    pub fn leader_of(&self, p: i32, except: Option<i32>, within: Duration) -> Option<i32> {
        poll(within, || {
            (0..NODES).find_map(|i| {
                let (_, leader, _) = self.view(i)?.into_iter().find(|x| x.0 == p)?;
                let up = leader > 0 && self.state[(leader - 1) as usize] == Node::Up;
                (up && Some(leader) != except).then_some(leader)
            })
        })
    }

    /// [`Run::leader_of`] within 20 s, panicking if there is none.
    pub fn leader(&self, p: i32) -> i32 {
        self.leader_of(p, None, Duration::from_secs(20))
            .unwrap_or_else(|| panic!("{}: partition {p} has no running leader", self.name))
    }

    /// Watches partition `p` for `d` (the nemesis's pause): the smallest ISR the running
    /// nodes showed, or `None` if none answered.
    pub fn smallest_isr(&self, p: i32, d: Duration) -> Option<usize> {
        let until = Instant::now() + d;
        let mut smallest = None;
        while Instant::now() < until {
            for i in 0..NODES {
                if let Some((_, _, isr)) =
                    self.view(i).and_then(|v| v.into_iter().find(|x| x.0 == p))
                {
                    smallest = Some(smallest.map_or(isr.len(), |s: usize| s.min(isr.len())));
                }
            }
            std::thread::sleep(
                Duration::from_millis(200).min(until.saturating_duration_since(Instant::now())),
            );
        }
        smallest
    }

    /// Waits until the running nodes agree that node `id` leads no partition and is in no ISR
    /// (the controller fenced it); panics after `within`. Returns how long it took.
    pub fn wait_fenced(&mut self, id: i32, within: Duration) -> Duration {
        let started = Instant::now();
        let out = poll(within, || {
            let views: Vec<_> = (0..NODES)
                .filter(|i| self.state[*i] == Node::Up)
                .map(|i| self.view(i))
                .collect();
            let out = views.iter().all(|v| {
                v.as_ref().is_some_and(|v| {
                    v.len() == PARTITIONS as usize
                        && v.iter().all(|(_, l, isr)| *l != id && !isr.contains(&id))
                })
            });
            (!views.is_empty() && out).then_some(())
        });
        assert!(
            out.is_some(),
            "{}: node {id} still leads or is in an ISR {within:?} after it was stopped",
            self.name
        );
        started.elapsed()
    }

    /// Waits until every node runs, has registered since its last restart, and agrees that
    /// every partition has a leader and all three replicas in the ISR; panics after `within`.
    /// Returns how long it took.
    pub fn wait_healthy(&mut self, within: Duration, what: &str) -> Duration {
        let started = Instant::now();
        let mut last = Vec::new();
        let healthy = poll(within, || {
            if !(0..NODES).all(|i| self.registered(i)) {
                return None;
            }
            last = (0..NODES).map(|i| self.view(i)).collect();
            let first = last.first()?.as_ref()?;
            let whole = first.len() == PARTITIONS as usize
                && first.iter().all(|(_, l, isr)| *l > 0 && isr.len() == NODES);
            let agreed = last.iter().all(|v| {
                v.as_ref().is_some_and(|v| {
                    v.iter()
                        .zip(first)
                        .all(|(a, b)| a.0 == b.0 && a.1 == b.1 && a.2.len() == NODES)
                        && v.len() == first.len()
                })
            });
            (whole && agreed).then_some(())
        });
        if healthy.is_none() {
            self.check_responsive();
            let replication = self.replication_state();
            panic!(
                "{}: never healthy ({what}: every node registered, every partition led, ISR full, on every node) within {within:?}; states {:?}; unregistered since restart: {:?}; last views (partition, leader, ISR) per node: {last:?}; {replication}",
                self.name, self.state, self.unregistered
            );
        }
        started.elapsed()
    }

    /// Heals everything: SIGCONT to paused nodes, restarts killed ones, then the final heal
    /// marker; waits until the cluster is healthy and writes are acknowledged again; stops the
    /// driver (it drains) and checks the history. Panics, naming the kept history, on any
    /// safety anomaly or unseen acknowledged write.
    pub fn finish(mut self) {
        for i in 0..NODES {
            match self.state[i] {
                Node::Paused => self.resume(i),
                Node::Down => self.restart(i),
                Node::Up => {}
            }
        }
        self.check_alive();
        self.marker("heal", FINAL_HEAL);
        let took = self.wait_healthy(Duration::from_secs(60), "after the final heal");
        self.phase(&format!(
            "healed: every partition led, ISR full after {}",
            secs(took)
        ));
        // The driver echoes each marker on stderr: progress lines after the echo are fresh.
        self.driver().wait_for(Duration::from_secs(10), |line| {
            let v: Value = serde_json::from_str(line).ok()?;
            (v["nemesis"] == "heal" && v["value"] == FINAL_HEAL).then_some(())
        });
        let ok = self.wait_ok(0, Duration::from_secs(10));
        let resumed = self.wait_ok(ok + 50, Duration::from_secs(45));
        self.phase(&format!("writes resumed ({ok} -> {resumed} acknowledged)"));
        let Some(driver) = self.driver.take() else {
            panic!("{}: the driver is not running", self.name)
        };
        let result = finish_json(driver, Duration::from_secs(150));
        self.phase("driver stopped, flushed and drained");
        let history = self.evidence.history();
        let text = std::fs::read_to_string(&history)
            .unwrap_or_else(|e| panic!("{}: cannot read {}: {e}", self.name, history.display()));
        let report = logcheck::check_str(&text)
            .unwrap_or_else(|e| panic!("{}: {}: {e}", self.name, history.display()));
        self.phase("logcheck");
        let total = self.t0.elapsed();
        verdict::summary(
            self.name,
            &report,
            &result,
            &self.notes,
            &self.phases,
            total,
        );
        verdict::verdict(self.name, &report, &result, &history);
    }
}
