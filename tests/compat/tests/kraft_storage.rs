//! KRaft-mode storage and configuration against Apache Kafka's own `kafka-storage.sh`
//! (`kafka.tools.StorageTool` of the pinned Kafka 4.1), issue 16's format part:
//! - the same KRaft properties file, with one rule broken per row, is refused by Kafka's
//!   StorageTool and by `skiff format` with the same message (Kafka's `KafkaConfig` and
//!   `QuorumConfig` rules: node id among the voters, broker-only not a voter, roles, voter
//!   entries, a quorum named at all, node.id required);
//! - the dir-level refusals agree too: formatting a formatted dir (without and with
//!   `--ignore-formatted`) and a dir of another cluster, on a dir Kafka formatted;
//! - `skiff serve` starts on a dir Kafka's StorageTool formatted (its `meta.properties` and
//!   `bootstrap.checkpoint`), reports Kafka's cluster id through a stock client
//!   (confluent-kafka's DescribeCluster), and kcat produces and consumes through it;
//! - `kafka-metadata-quorum.sh describe --status` through `--bootstrap-server` and through
//!   `--bootstrap-controller` (the CONTROLLER listener answers DescribeCluster as a controller
//!   endpoint, KIP-919): the cluster id, the leader and the voter at its controller endpoint.
//!
//! One documented difference: Kafka 4.1's StorageTool writes any string as the cluster id
//! (KAFKA-17118 dropped its `Uuid.fromString` check); `skiff format` checks the id as
//! `Uuid.fromString` reads one (issue 16), so the rows here use valid ids.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde_json::json;
use skiff_compat::{Broker, Output, Python, kafka_tool, kcat, python, run};

const STORAGE_TOOL: &str = "kafka.tools.StorageTool";
const ID: &str = "MkU3OEVBNTcwNTJENDM2Qg";
const OTHER_ID: &str = "AAAAAAAAAAAAAAAAAAAAAQ";

use skiff_testkit::process::free_port;

fn skiff_format(args: &[&str]) -> Output {
    let mut cmd = Command::new(skiff_testkit::process::skiff_binary());
    cmd.arg("format").args(args).env("RUST_LOG", "warn");
    run(
        &mut cmd,
        b"",
        std::time::Duration::from_secs(30),
        "skiff format",
        "cargo build --workspace",
    )
}

fn kafka_format(args: &[&str]) -> Output {
    let mut all = vec!["format"];
    all.extend_from_slice(args);
    kafka_tool(STORAGE_TOOL, &all)
}

/// The message of the exception a Kafka tool died of (`Exception in thread "main" CLASS: MSG`),
/// or its last stderr line (a terse failure).
fn kafka_message(out: &Output) -> String {
    let err = &out.stderr;
    if let Some(line) = err
        .lines()
        .find_map(|l| l.strip_prefix("Exception in thread \"main\" "))
    {
        return line
            .split_once(": ")
            .map_or(line, |(_, m)| m)
            .trim()
            .to_string();
    }
    err.lines()
        .rev()
        .find(|l| !l.trim().is_empty() && !l.contains("SLF4J"))
        .unwrap_or("")
        .trim()
        .to_string()
}

/// A combined single-voter node's properties on `data` with `edits` applied (`key=` alone
/// removes the key), written to `dir/name`.
fn properties(dir: &Path, name: &str, data: &Path, ports: (u16, u16), edits: &[&str]) -> PathBuf {
    let (port, cport) = ports;
    let mut keys: Vec<(String, String)> = vec![
        ("process.roles".into(), "broker,controller".into()),
        ("node.id".into(), "1".into()),
        (
            "controller.quorum.voters".into(),
            format!("1@127.0.0.1:{cport}"),
        ),
        (
            "listeners".into(),
            format!("PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{cport}"),
        ),
        ("controller.listener.names".into(), "CONTROLLER".into()),
        ("log.dirs".into(), data.display().to_string()),
    ];
    for e in edits {
        let (k, v) = e.split_once('=').unwrap();
        keys.retain(|(key, _)| key != k);
        if !v.is_empty() {
            keys.push((k.to_string(), v.to_string()));
        }
    }
    let body: String = keys.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
    let path = dir.join(name);
    std::fs::write(&path, body).unwrap();
    path
}

#[test]
fn kafka_storage_tool_and_skiff_format_refuse_the_same_configs_alike() {
    let t = tempfile::tempdir().unwrap();
    let data = t.path().join("data");
    let ports = (free_port(), free_port());
    let cport = ports.1;
    let plain = format!("listeners=PLAINTEXT://127.0.0.1:{}", ports.0);
    let rows: Vec<(&str, Vec<String>)> = vec![
        (
            "controller not among the voters",
            vec!["controller.quorum.voters=2@127.0.0.1:1,3@127.0.0.1:2".into()],
        ),
        (
            "broker-only among the voters",
            vec!["process.roles=broker".into(), plain.clone()],
        ),
        (
            "unknown role",
            vec!["process.roles=broker,zookeeper".into()],
        ),
        (
            "duplicate role",
            vec![
                "process.roles=broker,broker".into(),
                plain.clone(),
                "controller.quorum.voters=2@127.0.0.1:1".into(),
            ],
        ),
        (
            "voter without a port",
            vec!["controller.quorum.voters=1@localhost".into()],
        ),
        ("no quorum at all", vec!["controller.quorum.voters=".into()]),
        ("no node.id", vec!["node.id=".into()]),
        (
            "broker-only binding the controller listener",
            vec![
                "process.roles=broker".into(),
                format!("controller.quorum.voters=2@127.0.0.1:{cport}"),
            ],
        ),
    ];
    for (i, (name, edits)) in rows.iter().enumerate() {
        let started = Instant::now();
        let edits: Vec<&str> = edits.iter().map(String::as_str).collect();
        let file = properties(t.path(), &format!("{i}.properties"), &data, ports, &edits);
        let file = file.to_str().unwrap();
        let kafka = kafka_format(&["-t", ID, "-c", file]);
        let skiff = skiff_format(&["-t", ID, "-c", file]);
        let want = kafka_message(&kafka);
        assert!(
            !kafka.status.success() && !want.is_empty(),
            "{name}: Kafka {kafka:?}"
        );
        assert_eq!(skiff.status.code(), Some(2), "{name}: {}", skiff.stderr);
        assert!(
            skiff.stderr.contains(&want),
            "{name}: Kafka says {want:?}, Skiff says {:?}",
            skiff.stderr
        );
        assert!(!data.join("meta.properties").exists(), "{name}");
        eprintln!("row {name}: {:?}", started.elapsed());
    }
}

#[test]
fn skiff_format_and_serve_on_a_dir_kafkas_storage_tool_formatted() {
    let t = tempfile::tempdir().unwrap();
    let data = t.path().join("data");
    let ports = (free_port(), free_port());
    let file = properties(t.path(), "server.properties", &data, ports, &[]);
    let file = file.to_str().unwrap();
    let started = Instant::now();
    kafka_format(&["-t", ID, "-c", file]).assert_success("kafka-storage format");
    let kafka_meta = std::fs::read_to_string(data.join("meta.properties")).unwrap();
    for line in ["version=1", "node.id=1", &format!("cluster.id={ID}")] {
        assert!(kafka_meta.lines().any(|l| l == line), "{kafka_meta}");
    }
    assert!(data.join("bootstrap.checkpoint").is_file());

    // Formatting again: the same refusal on both; --ignore-formatted: nothing to do on both.
    let kafka = kafka_format(&["-t", ID, "-c", file]);
    let skiff = skiff_format(&["-t", ID, "-c", file]);
    let want = kafka_message(&kafka);
    assert!(want.contains("is already formatted"), "{want}");
    assert_eq!(skiff.status.code(), kafka.status.code(), "{}", skiff.stderr);
    assert!(
        skiff.stderr.contains(&want),
        "{want:?} vs {:?}",
        skiff.stderr
    );
    let kafka = kafka_format(&["-t", ID, "-c", file, "--ignore-formatted"]);
    let skiff = skiff_format(&["-t", ID, "-c", file, "--ignore-formatted"]);
    kafka.assert_success("kafka-storage format -g");
    assert!(skiff.status.success(), "{}", skiff.stderr);
    let done = "All of the log directories are already formatted.";
    assert!(kafka.stdout.contains(done) && skiff.stdout.contains(done));
    // Another cluster's id: refused by both, even with --ignore-formatted.
    let kafka = kafka_format(&["-t", OTHER_ID, "-c", file, "-g"]);
    let skiff = skiff_format(&["-t", OTHER_ID, "-c", file, "-g"]);
    let want = kafka_message(&kafka);
    assert!(want.starts_with("Invalid cluster.id in: "), "{want}");
    assert_eq!(skiff.status.code(), kafka.status.code(), "{}", skiff.stderr);
    assert!(
        skiff.stderr.contains(&want),
        "{want:?} vs {:?}",
        skiff.stderr
    );
    assert_eq!(
        std::fs::read_to_string(data.join("meta.properties")).unwrap(),
        kafka_meta
    );
    eprintln!("phase storage tool: {:?}", started.elapsed());

    // Skiff serves the Kafka-formatted dir, with Kafka's cluster id.
    let started = Instant::now();
    let b = Broker::builder()
        .log_dirs(&[&data])
        .serve_args(&["--config", file])
        .set(
            "listeners",
            &format!("PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:{}", ports.1),
        )
        .start();
    let bootstrap = b.bootstrap();
    let cluster = python(
        Python::PyPi,
        "admin_ck.py",
        "describe_cluster",
        &json!({ "bootstrap": bootstrap }),
    );
    assert_eq!(cluster["cluster_id"], json!(ID), "{cluster}");
    let out = kcat(
        &["-b", &bootstrap, "-t", "kraft", "-P", "-K:"],
        b"a:1\nb:2\nc:3\n",
    );
    out.assert_success("kcat -P");
    let out = kcat(
        &[
            "-b",
            &bootstrap,
            "-t",
            "kraft",
            "-C",
            "-o",
            "beginning",
            "-e",
            "-f",
            "%k=%s\n",
        ],
        b"",
    );
    out.assert_success("kcat -C");
    assert_eq!(out.stdout, "a=1\nb=2\nc=3\n");
    assert_eq!(
        std::fs::read_to_string(data.join("meta.properties")).unwrap(),
        kafka_meta,
        "Skiff keeps Kafka's meta.properties as written"
    );
    eprintln!("phase serve: {:?}", started.elapsed());

    // kafka-metadata-quorum through the broker listener and through the controller listener
    // (KIP-919: DescribeCluster answers as a controller endpoint there).
    let started = Instant::now();
    let controller = format!("127.0.0.1:{}", ports.1);
    for bootstrap_flag in [
        ["--bootstrap-server", bootstrap.as_str()],
        ["--bootstrap-controller", controller.as_str()],
    ] {
        let mut args = bootstrap_flag.to_vec();
        args.extend(["describe", "--status"]);
        let out = kafka_tool("org.apache.kafka.tools.MetadataQuorumCommand", &args);
        out.assert_success("kafka-metadata-quorum describe --status");
        let field = |name: &str| {
            out.stdout
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .map(str::trim)
                .unwrap_or_else(|| panic!("no {name} in {}", out.stdout))
                .to_string()
        };
        assert_eq!(field("ClusterId:"), ID);
        assert_eq!(field("LeaderId:"), "1");
        assert_eq!(
            field("CurrentVoters:"),
            format!("[{{\"id\": 1, \"endpoints\": [\"CONTROLLER://{controller}\"]}}]")
        );
        assert_eq!(field("CurrentObservers:"), "[]");
    }
    eprintln!("phase metadata quorum tool: {:?}", started.elapsed());
}
