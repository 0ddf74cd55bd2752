//! N combined KRaft nodes as real `skiff serve` processes (issue 16): the one multi-node
//! harness.
//!
//! Mental model: [`Cluster::start`] picks a broker and a controller port per node, writes one
//! properties file per node (Kafka's KRaft keys: `process.roles=broker,controller`, `node.id`,
//! `controller.quorum.voters`, a PLAINTEXT and a CONTROLLER listener, short quorum and broker
//! session timers), formats every node's dir with `skiff format -t <id> -c <file>` and starts
//! every node through the process harness ([`Broker`], so kill -9 / restart / logs work as for
//! one node). [`Cluster::wait_brokers`] polls Metadata (with a deadline) until the cluster
//! shows the wanted brokers.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use skiff_protocol::{MetadataRequest, ResponseBody};
use tempfile::TempDir;

use crate::client::Conn;
use crate::process::{Broker, free_port, skiff_binary};

/// `skiff.admin.listener`: in a cluster's `extra` keys, turns every node's admin port on
/// (ephemeral; [`Broker::admin_port`]), whatever the value.
pub const ADMIN_KEY: &str = "skiff.admin.listener";

/// In a cluster's `extra` keys: every node's `RUST_LOG` (not a broker key; the default is the
/// process harness's, `SKIFF_TEST_LOG` or `info`).
pub const RUST_LOG_KEY: &str = "skiff.test.rust.log";

/// The cluster id every harness cluster is formatted with.
pub const CLUSTER_ID: &str = "c2tpZmYtY2x1c3Rlci0xNg";

/// Timers short enough for tests (Kafka's keys).
pub const TEST_TIMERS: &[(&str, &str)] = &[
    // openraft's election window [500, 1000] ms (the key is its maximum).
    ("controller.quorum.election.timeout.ms", "1000"),
    ("controller.quorum.fetch.timeout.ms", "1000"),
    ("broker.heartbeat.interval.ms", "200"),
    ("broker.session.timeout.ms", "2000"),
    ("offsets.topic.num.partitions", "6"),
];

/// A running cluster (nodes in id order: node `i` has `node.id` `i + 1`).
#[derive(Debug)]
pub struct Cluster {
    pub nodes: Vec<Broker>,
    /// (broker port, controller port) per node.
    pub ports: Vec<(u16, u16)>,
    pub configs: Vec<PathBuf>,
    dir: TempDir,
}

/// One combined node's properties (the documented example shape of a cluster node's file).
pub fn node_properties(
    node_id: usize,
    ports: &[(u16, u16)],
    data: &Path,
    extra: &[(&str, &str)],
) -> String {
    let roles = vec![COMBINED; ports.len()];
    node_properties_roles(node_id, &roles, ports, data, extra)
}

/// `process.roles` of a combined node.
pub const COMBINED: &str = "broker,controller";

/// One node's properties when node `i + 1` has `roles[i]` (`broker,controller`, `broker` or
/// `controller`): the voters are the nodes with the controller role; a broker-only node has
/// only its PLAINTEXT listener, a controller-only node only its CONTROLLER listener.
pub fn node_properties_roles(
    node_id: usize,
    roles: &[&str],
    ports: &[(u16, u16)],
    data: &Path,
    extra: &[(&str, &str)],
) -> String {
    let voters: Vec<String> = ports
        .iter()
        .enumerate()
        .filter(|(i, _)| roles[*i].contains("controller"))
        .map(|(i, (_, c))| format!("{}@127.0.0.1:{c}", i + 1))
        .collect();
    let (port, cport) = ports[node_id - 1];
    let role = roles[node_id - 1];
    let listeners = listeners_of(role, port, cport);
    let mut lines = vec![
        format!("process.roles={role}"),
        format!("node.id={node_id}"),
        format!("controller.quorum.voters={}", voters.join(",")),
        format!("listeners={listeners}"),
        "controller.listener.names=CONTROLLER".to_string(),
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT".to_string(),
    ];
    if role.contains("broker") {
        lines.push("inter.broker.listener.name=PLAINTEXT".to_string());
    }
    lines.push(format!("log.dirs={}", data.display()));
    for (k, v) in TEST_TIMERS.iter().chain(extra) {
        // The admin port is the process harness's to bind (it reads its ready line).
        if *k != ADMIN_KEY && *k != RUST_LOG_KEY {
            lines.push(format!("{k}={v}"));
        }
    }
    lines.join("\n") + "\n"
}

/// The `listeners` value of a node with `role`.
fn listeners_of(role: &str, port: u16, cport: u16) -> String {
    match (role.contains("broker"), role.contains("controller")) {
        (true, false) => format!("PLAINTEXT://127.0.0.1:{port}"),
        (false, true) => format!("CONTROLLER://127.0.0.1:{cport}"),
        _ => format!("PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{cport}"),
    }
}

impl Cluster {
    /// Formats and starts `n` combined nodes with [`TEST_TIMERS`] plus `extra` keys.
    pub fn start(n: usize, extra: &[(&str, &str)]) -> Cluster {
        Cluster::start_roles(&vec![COMBINED; n], extra)
    }

    /// Formats and starts one node per entry of `roles` (node `i + 1` has `roles[i]`). A
    /// controller-only node's "broker port" in [`Cluster::ports`] is its CONTROLLER port (it
    /// answers Metadata there).
    pub fn start_roles(roles: &[&str], extra: &[(&str, &str)]) -> Cluster {
        let n = roles.len();
        let dir = tempfile::Builder::new()
            .prefix("skiff-cluster-")
            .tempdir()
            .unwrap_or_else(|e| panic!("cannot create a temp dir: {e}"));
        let mut ports: Vec<(u16, u16)> = (0..n).map(|_| (free_port(), free_port())).collect();
        let mut configs = Vec::new();
        let mut datas = Vec::new();
        for id in 1..=n {
            let data = dir.path().join(format!("node-{id}")).join("data");
            let file = dir.path().join(format!("node-{id}.properties"));
            std::fs::create_dir_all(dir.path().join(format!("node-{id}")))
                .unwrap_or_else(|e| panic!("mkdir: {e}"));
            std::fs::write(
                &file,
                node_properties_roles(id, roles, &ports, &data, extra),
            )
            .unwrap_or_else(|e| panic!("write {}: {e}", file.display()));
            let out = Command::new(skiff_binary())
                .args(["format", "-t", CLUSTER_ID, "-c"])
                .arg(&file)
                .env("RUST_LOG", "warn")
                .output()
                .unwrap_or_else(|e| panic!("skiff format: {e}"));
            assert!(
                out.status.success(),
                "skiff format node {id}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            configs.push(file);
            datas.push(data);
        }
        // Voters first (each prints its ready line before a leader is elected); a
        // broker-only node's start waits until the voters serve it the metadata log.
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|i| !roles[*i].contains("controller"));
        let mut nodes: Vec<Option<Broker>> = (0..n).map(|_| None).collect();
        for i in order {
            let (port, cport) = ports[i];
            let file = configs[i].display().to_string();
            let mut builder = Broker::builder()
                .admin(extra.iter().any(|(k, _)| *k == ADMIN_KEY))
                .log_dirs(&[&datas[i]])
                .serve_args(&["--config", &file])
                .set("listeners", &listeners_of(roles[i], port, cport));
            if let Some((_, filter)) = extra.iter().find(|(k, _)| *k == RUST_LOG_KEY) {
                builder = builder.rust_log(filter);
            }
            nodes[i] = Some(builder.start());
        }
        for (i, role) in roles.iter().enumerate() {
            if !role.contains("broker") {
                ports[i].0 = ports[i].1;
            }
        }
        Cluster {
            nodes: nodes.into_iter().flatten().collect(),
            ports,
            configs,
            dir,
        }
    }

    /// `127.0.0.1:p1,127.0.0.1:p2,...` (the broker listeners).
    pub fn bootstrap(&self) -> String {
        self.ports
            .iter()
            .map(|(p, _)| format!("127.0.0.1:{p}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    pub fn temp_dir(&self) -> &Path {
        self.dir.path()
    }

    /// The directory of `topic`-`partition`'s segment files on node `i` (0-based).
    pub fn partition_dir(&self, i: usize, topic: &str, partition: i32) -> std::path::PathBuf {
        self.dir
            .path()
            .join(format!("node-{}", i + 1))
            .join("data")
            .join(format!("{topic}-{partition}"))
    }

    /// Metadata v12 (all topics) from node `i` (0-based).
    pub fn metadata(&self, i: usize) -> skiff_protocol::MetadataResponse {
        let mut c = Conn::open(self.ports[i].0);
        match c.call(
            12,
            MetadataRequest {
                topics: None,
                ..MetadataRequest::default()
            },
        ) {
            ResponseBody::Metadata(m) => m,
            other => panic!("Metadata answered {other:?}"),
        }
    }

    /// Polls node `i`'s Metadata until `ok` holds (deadline `within`); the last answer.
    pub fn wait_metadata(
        &self,
        i: usize,
        within: Duration,
        what: &str,
        ok: impl Fn(&skiff_protocol::MetadataResponse) -> bool,
    ) -> skiff_protocol::MetadataResponse {
        let until = skiff_types::Clock::system().now() + within;
        loop {
            let m = self.metadata(i);
            if ok(&m) {
                return m;
            }
            if skiff_types::Clock::system().now() >= until {
                panic!(
                    "node {} never showed {what} within {within:?}: {m:?}",
                    i + 1
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Creates `name` through node `via` (0-based), retrying NOT_CONTROLLER-class answers
    /// until `within`; the time it took. A retry that finds the topic created
    /// (TOPIC_ALREADY_EXISTS after a failed attempt: its answer was lost in a failover, as
    /// with Kafka) succeeded.
    pub fn create_via(
        &self,
        via: usize,
        name: &str,
        partitions: i32,
        within: Duration,
    ) -> Duration {
        const TOPIC_ALREADY_EXISTS: i16 = 36;
        let clock = skiff_types::Clock::system();
        let started = clock.now();
        let mut retried = false;
        loop {
            let t = Conn::open(self.ports[via].0).create_topic_result(name, partitions, &[]);
            let took = clock.now().saturating_duration_since(started);
            if t.error_code == 0 || (retried && t.error_code == TOPIC_ALREADY_EXISTS) {
                return took;
            }
            retried = true;
            assert!(
                took < within,
                "create {name} via node {}: {} {:?} after {took:?}",
                via + 1,
                t.error_code,
                t.error_message
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Node `i`'s (0-based) broker epoch: what the active controller answered its latest
    /// BrokerRegistration, as the node logged it (`registered with the controller
    /// broker_epoch=N`, INFO). Panics if the node has not registered (or logs below INFO).
    pub fn broker_epoch(&self, i: usize) -> i64 {
        let logs = self.nodes[i].logs();
        let line = logs
            .lines()
            .rev()
            .find(|l| l.contains("registered with the controller"))
            .unwrap_or_else(|| panic!("node {} logged no registration", i + 1));
        line.split_whitespace()
            .find_map(|w| w.strip_prefix("broker_epoch="))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("node {}: no broker_epoch in {line:?}", i + 1))
    }

    /// Waits until the Metadata of each node in `on` (0-based) lists exactly the broker ids
    /// `ids` and a controller.
    pub fn wait_brokers(&self, on: &[usize], ids: &[i32], within: Duration) {
        for &i in on {
            self.wait_metadata(i, within, &format!("brokers {ids:?}"), |m| {
                let mut got: Vec<i32> = m.brokers.iter().map(|b| b.node_id).collect();
                got.sort_unstable();
                got == ids && m.controller_id >= 0
            });
        }
    }
}

/// (partition, leader) of `topic` in `m`, by partition.
pub fn leaders(m: &skiff_protocol::MetadataResponse, topic: &str) -> Vec<(i32, i32)> {
    let mut v: Vec<(i32, i32)> = m
        .topics
        .iter()
        .filter(|t| t.name.as_deref() == Some(topic))
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(|p| (p.partition_index, p.leader_id))
        })
        .collect();
    v.sort_unstable();
    v
}

/// One uncompressed batch of one record with `value`.
pub fn batch(value: &str) -> bytes::Bytes {
    let mut b = skiff_record::BatchBuilder::new(skiff_record::BatchOptions::default());
    b.append(0, None, Some(value.as_bytes()), &[]);
    match b.build() {
        Ok(built) => bytes::Bytes::from(built),
        Err(e) => panic!("a one-record batch: {e}"),
    }
}
