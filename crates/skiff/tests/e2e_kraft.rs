//! KRaft-mode start of the `skiff` binary (issue 16, the format and configuration part), each
//! over the real binary:
//! - `skiff format --random-cluster-id` prints Kafka-shaped ids; `skiff format` writes
//!   `meta.properties` in every log dir, refuses a second run (exit 1, Kafka's message) unless
//!   `--ignore-formatted`, refuses a bad id (exit 2, `Uuid.fromString`'s message) and a dir a
//!   running broker holds;
//! - a combined single-voter node (`process.roles=broker,controller`, a CONTROLLER listener)
//!   starts on formatted dirs and answers Metadata with the formatted cluster id;
//! - refused starts (exit 2, nothing written): an unformatted dir in KRaft mode, a dir formatted
//!   for another node id (both ids named), a broker-only node, and
//!   Kafka's own rule breaks (controller not among the voters).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output};

use skiff_protocol::{DescribeClusterRequest, MetadataRequest, ResponseBody};
use skiff_testkit::{Broker, BrokerBuilder, Conn};

const ID: &str = "MkU3OEVBNTcwNTJENDM2Qg";

use skiff_testkit::process::free_port;

/// `skiff format ARGS...` with a deadline-free short run (it does no network I/O).
fn format(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_skiff"))
        .arg("format")
        .args(args)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A Kafka-style properties file for a combined single-voter node on `data`, controller port
/// `cport` (the PLAINTEXT listener comes from the test broker's overrides).
fn properties(dir: &Path, data: &Path, cport: u16, extra: &[&str]) -> std::path::PathBuf {
    let mut body = format!(
        "process.roles=broker,controller\nnode.id=1\n\
         controller.quorum.voters=1@127.0.0.1:{cport}\n\
         listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:{cport}\n\
         controller.listener.names=CONTROLLER\nlog.dirs={}\n",
        data.display()
    );
    for e in extra {
        body.push_str(e);
        body.push('\n');
    }
    let path = dir.join("server.properties");
    std::fs::write(&path, body).unwrap();
    path
}

/// A `skiff serve --config FILE` node; the builder's own listener override is replaced by the
/// file's two listeners.
fn node(file: &Path, data: &Path, cport: u16) -> BrokerBuilder {
    Broker::builder()
        .binary(env!("CARGO_BIN_EXE_skiff"))
        .log_dirs(&[data])
        .serve_args(&["--config", file.to_str().unwrap()])
        .set(
            "listeners",
            &format!("PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:{cport}"),
        )
        .rust_log("warn")
}

#[test]
fn e2e_random_cluster_ids_look_like_kafkas() {
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..5 {
        let out = format(&["--random-cluster-id"]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let id = text(&out.stdout).trim().to_string();
        assert_eq!(id.len(), 22, "{id}");
        assert!(!id.starts_with('-'), "{id}");
        assert!(
            id.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
            "{id}"
        );
        seen.insert(id);
    }
    assert_eq!(seen.len(), 5);
    // --random-cluster-id formats nothing, so it takes no config.
    let out = format(&["--random-cluster-id", "--config", "x.properties"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn e2e_format_then_serve_a_combined_single_voter_node() {
    let t = tempfile::tempdir().unwrap();
    let (data, more) = (t.path().join("data"), t.path().join("more"));
    let cport = free_port();
    let file = properties(t.path(), &data, cport, &[]);
    let dirs = format!("log.dirs={},{}", data.display(), more.display());

    // A bad id: Kafka's Uuid.fromString message, exit 2, nothing formatted.
    let out = format(&[
        "--cluster-id",
        "not an id",
        "--config",
        file.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("Illegal base64 character 20"),
        "{}",
        text(&out.stderr)
    );
    assert!(!data.join("meta.properties").exists());

    let out = format(&["-t", ID, "-c", file.to_str().unwrap(), "--override", &dirs]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(&format!(
            "Formatting metadata directory {} with cluster.id {ID}.",
            data.display()
        )) && stdout.contains(&format!("Formatting data directory {}", more.display())),
        "{stdout}"
    );
    for d in [&data, &more] {
        let meta = std::fs::read_to_string(d.join("meta.properties")).unwrap();
        assert!(
            meta.contains(&format!("cluster.id={ID}\n")) && meta.contains("node.id=1\n"),
            "{meta}"
        );
    }
    // Again: Kafka's refusal (exit 1); with --ignore-formatted nothing to do.
    let out = format(&["-t", ID, "-c", file.to_str().unwrap(), "--override", &dirs]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains(&format!(
            "Log directory {} is already formatted. Use --ignore-formatted to ignore this directory and format the others.",
            data.display()
        )),
        "{}",
        text(&out.stderr)
    );
    let out = format(&[
        "-t",
        ID,
        "-c",
        file.to_str().unwrap(),
        "--override",
        &dirs,
        "-g",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("All of the log directories are already formatted."));

    let b = node(&file, &data, cport).start();
    let ResponseBody::Metadata(m) = Conn::open(b.port()).call(12, MetadataRequest::default())
    else {
        panic!("not a Metadata response")
    };
    assert_eq!(m.cluster_id.as_deref(), Some(ID));
    assert_eq!(m.brokers.len(), 1);
    assert_eq!(m.brokers[0].node_id, 1);
    // The CONTROLLER listener is a controller endpoint (KIP-919): DescribeCluster for
    // controllers lists the voter there; for brokers it is the wrong endpoint type.
    let mut c = Conn::open(cport);
    let ResponseBody::DescribeCluster(r) = c.call(
        1,
        DescribeClusterRequest {
            include_cluster_authorized_operations: false,
            endpoint_type: 2,
        },
    ) else {
        panic!("not a DescribeCluster response")
    };
    assert_eq!((r.error_code, r.endpoint_type, r.controller_id), (0, 2, 1));
    assert_eq!(r.cluster_id, ID);
    let b0 = &r.brokers[0];
    assert_eq!(
        (b0.broker_id, b0.host.as_str(), b0.port),
        (1, "127.0.0.1", i32::from(cport))
    );
    let ResponseBody::DescribeCluster(r) = c.call(
        1,
        DescribeClusterRequest {
            include_cluster_authorized_operations: false,
            endpoint_type: 1,
        },
    ) else {
        panic!("not a DescribeCluster response")
    };
    assert_eq!(r.error_code, 114, "MISMATCHED_ENDPOINT_TYPE");
    assert_eq!(
        r.error_message.as_deref(),
        Some(
            "The request was sent to an endpoint of type CONTROLLER, but we wanted an endpoint of type BROKER"
        )
    );
    // A running node's dirs cannot be formatted under it: the lock holder is named.
    let out = format(&["-t", ID, "-c", file.to_str().unwrap(), "-g"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains(&b.pid().to_string()),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn e2e_kraft_starts_that_are_refused() {
    let t = tempfile::tempdir().unwrap();
    let data = t.path().join("data");
    let cport = free_port();
    let file = properties(t.path(), &data, cport, &[]);

    // Unformatted: KRaft nodes never format themselves.
    let r = node(&file, &data, cport).run_refused();
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr.contains("No `meta.properties` found in")
            && r.stderr.contains("skiff format --cluster-id"),
        "{}",
        r.stderr
    );
    assert!(!data.join("meta.properties").exists());

    // Formatted for node 1, started as node 2 (a voter, so Kafka's rules pass).
    let out = format(&["-t", ID, "-c", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let r = node(&file, &data, cport)
        .set("node.id", "2")
        .set("controller.quorum.voters", &format!("2@127.0.0.1:{cport}"))
        .run_refused();
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("Stored node id 1 doesn't match previous node id 2"),
        "{}",
        r.stderr
    );

    // (overrides, needle): valid for Kafka but not runnable yet, then a Kafka rule broken.
    let cases: [(&[(&str, &str)], &str); 2] = [
        (
            &[
                ("controller.quorum.voters", ""),
                ("controller.quorum.bootstrap.servers", "127.0.0.1:1"),
            ],
            "asks for a dynamic quorum (KIP-853), which is not implemented by Skiff yet",
        ),
        (
            &[("controller.quorum.voters", "2@127.0.0.1:1")],
            "requirement failed: If process.roles contains the 'controller' role, the node id 1 must be included in the set of voters controller.quorum.voters=Set(2)",
        ),
    ];
    let meta = std::fs::read_to_string(data.join("meta.properties")).unwrap();
    for (overrides, needle) in cases {
        let r = node(&file, &data, cport).overrides(overrides).run_refused();
        assert_eq!(r.code, Some(2), "{overrides:?}: {}", r.stderr);
        assert!(r.stderr.contains(needle), "{overrides:?}: {}", r.stderr);
    }
    assert_eq!(
        std::fs::read_to_string(data.join("meta.properties")).unwrap(),
        meta,
        "a refused start writes nothing"
    );
    assert!(!data.join("__cluster_metadata-0").exists());
}

/// Two consecutive free loopback ports (client, controller), for `skiff dev --base-port`.
fn free_port_pair() -> u16 {
    for _ in 0..50 {
        let p = free_port();
        if p < u16::MAX && TcpListener::bind(("127.0.0.1", p + 1)).is_ok() {
            return p;
        }
    }
    panic!("no two consecutive free ports")
}

/// Starts `skiff dev` on `data` and returns it with its cluster ready line.
fn dev(data: &Path, port: u16) -> (std::process::Child, String) {
    use std::io::BufRead;
    let mut child = Command::new(env!("CARGO_BIN_EXE_skiff"))
        .args(["dev", "--base-port", &port.to_string(), "--data"])
        .arg(data)
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let out = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let Ok(line) = rx.recv_timeout(left) else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("no cluster ready line within 30 s");
        };
        if line.starts_with("skiff ready cluster ") {
            return (child, line);
        }
    }
}

#[test]
fn e2e_skiff_dev_one_node_ready_line_clients_and_ctrl_c() {
    let t = tempfile::tempdir().unwrap();
    let data = t.path().join("dev");
    let port = free_port_pair();
    let (mut child, line) = dev(&data, port);
    let id = std::fs::read_to_string(data.join("cluster.id")).unwrap();
    assert_eq!(
        line,
        format!(
            "skiff ready cluster bootstrap=localhost:{port} cluster.id={}",
            id.trim()
        )
    );
    // The per-node file is the documented example of a cluster configuration.
    let props = std::fs::read_to_string(data.join("node-1/server.properties")).unwrap();
    assert!(
        props.contains("process.roles=broker,controller\n")
            && props.contains(&format!(
                "controller.quorum.voters=1@localhost:{}\n",
                port + 1
            )),
        "{props}"
    );
    let ResponseBody::Metadata(m) = Conn::open(port).call(12, MetadataRequest::default()) else {
        panic!("not a Metadata response")
    };
    assert_eq!(m.cluster_id.as_deref(), Some(id.trim()));
    assert_eq!(m.brokers[0].port, i32::from(port));
    // Ctrl-C stops every node cleanly.
    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    assert!(data.join("node-1/data/.kafka_cleanshutdown").exists());
    // Again on the same dir: the same cluster id, the data kept.
    let (mut child, again) = dev(&data, port);
    assert_eq!(again, line);
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(child.wait().unwrap().success());
}
