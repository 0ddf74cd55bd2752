//! Apache Kafka as the reference (issue 14): the pinned Kafka of `scripts/kafka-reference.sh`,
//! started as a KRaft single node for differential tests, and its tools' main classes.
//!
//! Mental model: [`KafkaNode::start`] formats a fresh temp dir (`format DIR PORT CTRL_PORT`) on
//! two free loopback ports and starts the node (`start DIR`, which returns once the listener
//! accepts); dropping the node stops it (`stop DIR`: SIGTERM, then SIGKILL after 30 s). Nothing
//! is global: a test may start one next to a Skiff broker and send both the same scenario.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use crate::clients::repo_root;
use crate::process::{Output, run};

const INSTALL: &str = "run ./scripts/test.sh (it fetches Apache Kafka with Maven) or scripts/kafka-reference.sh fetch";

/// How long one reference-script call may take (a cold JVM, a Maven fetch on a new machine).
const SCRIPT_DEADLINE: Duration = Duration::from_secs(120);

fn script() -> Command {
    Command::new(repo_root().join("scripts/kafka-reference.sh"))
}

/// Runs a Kafka main class (a tool) with `args`; the caller checks the exit status.
pub fn kafka_tool(class: &str, args: &[&str]) -> Output {
    kafka_tool_input(class, args, b"")
}

/// [`kafka_tool`] with `stdin` as the tool's standard input (the console producer's lines).
pub fn kafka_tool_input(class: &str, args: &[&str], stdin: &[u8]) -> Output {
    let mut cmd = script();
    cmd.arg("run").arg(class).args(args);
    run(&mut cmd, stdin, SCRIPT_DEADLINE, class, INSTALL)
}

use skiff_testkit::process::free_port;

/// A running Apache Kafka KRaft single node.
#[derive(Debug)]
pub struct KafkaNode {
    dir: tempfile::TempDir,
    port: u16,
}

impl KafkaNode {
    /// Formats and starts a node on free ports; panics (with Kafka's log) if it cannot.
    pub fn start() -> KafkaNode {
        let dir = tempfile::Builder::new()
            .prefix("kafka-ref-")
            .tempdir()
            .unwrap_or_else(|e| panic!("cannot create a temp dir: {e}"));
        let (port, controller) = (free_port(), free_port());
        let path = dir.path().display().to_string();
        let mut format = script();
        format
            .arg("format")
            .arg(&path)
            .arg(port.to_string())
            .arg(controller.to_string());
        run(&mut format, b"", SCRIPT_DEADLINE, "kafka format", INSTALL)
            .assert_success("kafka-reference.sh format");
        let mut start = script();
        start.arg("start").arg(&path);
        let out = run(&mut start, b"", SCRIPT_DEADLINE, "kafka start", INSTALL);
        if !out.status.success() {
            let log = std::fs::read_to_string(dir.path().join("kafka.log")).unwrap_or_default();
            panic!("Apache Kafka did not start: {}\n{log}", out.stderr);
        }
        KafkaNode { dir, port }
    }

    pub fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The node's own log (`kafka.log` in its dir).
    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("kafka.log")
    }
}

impl Drop for KafkaNode {
    fn drop(&mut self) {
        let mut stop = script();
        stop.arg("stop").arg(self.dir.path());
        let _ = run(&mut stop, b"", SCRIPT_DEADLINE, "kafka stop", INSTALL);
    }
}

/// A running Apache Kafka KRaft cluster of combined broker + controller nodes (node ids 1..N,
/// static voters; `format-cluster` / `start-cluster` of the reference script), the reference
/// for the cluster issues. Dropping it stops every node.
#[derive(Debug)]
pub struct KafkaCluster {
    dir: tempfile::TempDir,
    ports: Vec<u16>,
}

impl KafkaCluster {
    /// Formats and starts `nodes` nodes on free ports; panics (with the logs) if one cannot.
    pub fn start(nodes: usize) -> KafkaCluster {
        assert!(nodes >= 1, "a cluster has at least one node");
        let dir = tempfile::Builder::new()
            .prefix("kafka-ref-cluster-")
            .tempdir()
            .unwrap_or_else(|e| panic!("cannot create a temp dir: {e}"));
        // Hold every listener until all ports are chosen, so no two nodes get the same one.
        let listeners: Vec<TcpListener> = (0..2 * nodes)
            .map(|_| {
                TcpListener::bind("127.0.0.1:0")
                    .unwrap_or_else(|e| panic!("no free loopback port: {e}"))
            })
            .collect();
        let mut all: Vec<u16> = listeners
            .iter()
            .map(|l| {
                l.local_addr()
                    .map(|a| a.port())
                    .unwrap_or_else(|e| panic!("no local address: {e}"))
            })
            .collect();
        drop(listeners);
        let controllers = all.split_off(nodes);
        let join = |p: &[u16]| p.iter().map(u16::to_string).collect::<Vec<_>>().join(",");
        let path = dir.path().display().to_string();
        let mut format = script();
        format
            .arg("format-cluster")
            .arg(&path)
            .arg(join(&all))
            .arg(join(&controllers));
        run(
            &mut format,
            b"",
            SCRIPT_DEADLINE,
            "kafka format-cluster",
            INSTALL,
        )
        .assert_success("kafka-reference.sh format-cluster");
        let cluster = KafkaCluster { dir, ports: all };
        let mut start = script();
        start.arg("start-cluster").arg(&path);
        let out = run(
            &mut start,
            b"",
            SCRIPT_DEADLINE,
            "kafka start-cluster",
            INSTALL,
        );
        if !out.status.success() {
            let logs: String = (1..=nodes)
                .map(|id| {
                    let log = std::fs::read_to_string(cluster.log_path(id)).unwrap_or_default();
                    format!("--- node {id}:\n{log}\n")
                })
                .collect();
            panic!(
                "the Apache Kafka cluster did not start: {}\n{logs}",
                out.stderr
            );
        }
        cluster
    }

    /// Every node's listener, comma-separated (a client's bootstrap list).
    pub fn bootstrap(&self) -> String {
        self.ports
            .iter()
            .map(|p| format!("127.0.0.1:{p}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Node `id`'s (1-based) listener.
    pub fn node_bootstrap(&self, id: usize) -> String {
        format!("127.0.0.1:{}", self.ports[id - 1])
    }

    fn node_dir(&self, id: usize) -> PathBuf {
        assert!(
            (1..=self.ports.len()).contains(&id),
            "no node {id} in a cluster of {}",
            self.ports.len()
        );
        self.dir.path().join(format!("node-{id}"))
    }

    /// Node `id`'s own log.
    pub fn log_path(&self, id: usize) -> PathBuf {
        self.node_dir(id).join("kafka.log")
    }

    /// Stops node `id` (SIGTERM: Kafka's controlled shutdown) and waits for its exit.
    pub fn stop_node(&self, id: usize) {
        let mut stop = script();
        stop.arg("stop").arg(self.node_dir(id));
        run(&mut stop, b"", SCRIPT_DEADLINE, "kafka stop", INSTALL)
            .assert_success("kafka-reference.sh stop");
    }
}

impl Drop for KafkaCluster {
    fn drop(&mut self) {
        let mut stop = script();
        stop.arg("stop-cluster").arg(self.dir.path());
        let _ = run(
            &mut stop,
            b"",
            SCRIPT_DEADLINE,
            "kafka stop-cluster",
            INSTALL,
        );
    }
}
