//! The operator CLI's admin commands end to end (issue 20 item 2): `skiff topic`, `skiff
//! cluster`, `skiff config` and `skiff doctor` run as child processes of the built `skiff`
//! binary against real brokers, their `--format json` documents checked field by field.
//! - one broker: the topic lifecycle create -> list -> describe (leader, replicas, ISR, log
//!   start, high watermark after three produced records) -> alter-config -> config get (source
//!   DYNAMIC_TOPIC_CONFIG) -> add-partitions -> trim (the log start moves) -> delete, with the
//!   refusals (duplicate create, delete without --yes, no-op alter);
//! - `cluster info` / `cluster health` (exit 0) / `doctor` (exit 0) on a healthy broker,
//!   `topic list --internal` and the doctor's view of `__consumer_offsets`, and `doctor`
//!   pointed at an HTTP port;
//! - `doctor` names a broker whose advertised listener is a dead port (exit 1), and a TLS
//!   port; one bad address of two bootstrap addresses is a warning;
//! - `cluster health` exits 10 naming the offline partition when the only replica's node of
//!   an RF1 partition stops (a controller+broker node and a broker-only node, so the quorum
//!   survives);
//! - Apache Kafka (the reference node, when the machine has a JVM): topic create, list,
//!   describe and config get work against it too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use skiff_compat::{Broker, BrokerBuilder, KafkaNode, Output};

mod cli_common;
use skiff_protocol::FindCoordinatorRequest;
use skiff_testkit::client::Conn;
use skiff_testkit::cluster::{Cluster, batch};
use skiff_testkit::process::free_port;

/// Runs `skiff ARGS --brokers BOOTSTRAP` to completion (at most [`cli_common::DEADLINE`]).
fn skiff(bootstrap: &str, args: &[&str]) -> Output {
    let mut all = args.to_vec();
    all.extend(["--brokers", bootstrap, "--timeout-ms", "5000"]);
    cli_common::skiff(&all, b"")
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

/// Runs a command with `--format json`, asserts exit `want`, parses stdout.
fn json_exit(bootstrap: &str, args: &[&str], want: i32) -> Value {
    let mut all = args.to_vec();
    all.extend(["--format", "json"]);
    let o = skiff(bootstrap, &all);
    assert_eq!(
        code(&o),
        want,
        "skiff {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        args.join(" "),
        o.stdout,
        o.stderr
    );
    serde_json::from_str(&o.stdout)
        .unwrap_or_else(|e| panic!("skiff {}: not JSON ({e}):\n{}", args.join(" "), o.stdout))
}

fn json(bootstrap: &str, args: &[&str]) -> Value {
    json_exit(bootstrap, args, 0)
}

/// Runs a command that must fail with exit 1: its stderr.
fn fails(bootstrap: &str, args: &[&str]) -> String {
    let o = skiff(bootstrap, args);
    assert_eq!(code(&o), 1, "skiff {} should fail: {o:?}", args.join(" "));
    assert!(
        o.stdout.is_empty(),
        "a failure printed a result: {}",
        o.stdout
    );
    o.stderr
}

/// The doctor's first check with status `fail` (panics with the report when there is none).
fn first_failed_check(report: &Value) -> Value {
    report["checks"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["status"] == "fail"))
        .cloned()
        .unwrap_or_else(|| panic!("no failed check in {report:#}"))
}

fn topic_names(list: &Value) -> Vec<String> {
    list["topics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn cli_admin_topic_lifecycle_and_configs() {
    let b = Broker::start();
    let bs = b.bootstrap();
    let bs = bs.as_str();
    let node = json(bs, &["cluster", "info"])["brokers"][0]["id"]
        .as_i64()
        .unwrap();

    // create (a dry run first: nothing is created).
    let dry = json(bs, &["topic", "create", "t1", "-p", "3", "--dry-run"]);
    assert_eq!(dry["dry_run"], true);
    assert!(!topic_names(&json(bs, &["topic", "list"])).contains(&"t1".to_owned()));
    let c = json(
        bs,
        &[
            "topic",
            "create",
            "t1",
            "--partitions",
            "3",
            "--replication-factor",
            "1",
            "--config",
            "cleanup.policy=delete",
        ],
    );
    assert_eq!(c["name"], "t1");
    assert_eq!(c["partitions"], 3);
    assert_eq!(c["replication_factor"], 1);
    assert_eq!(c["dry_run"], false);
    assert_eq!(c["topic_id"].as_str().unwrap().len(), 22, "{c}");
    assert_eq!(c["configs"]["cleanup.policy"], "delete");
    let e = fails(bs, &["topic", "create", "t1", "-p", "3"]);
    assert!(
        e.contains("TOPIC_ALREADY_EXISTS") && e.contains("skiff topic describe t1"),
        "{e}"
    );

    // list
    let list = json(bs, &["topic", "list"]);
    let t = list["topics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "t1")
        .unwrap();
    assert_eq!(t["partitions"], 3);
    assert_eq!(t["replication_factor"], 1);
    assert_eq!(t["internal"], false);
    assert_eq!(t["topic_id"], c["topic_id"]);

    // describe after three records on partition 0 and one on partition 2.
    let mut conn = Conn::open(b.port());
    for v in ["a", "b", "c"] {
        assert_eq!(conn.produce("t1", 0, batch(v)).0, 0);
    }
    assert_eq!(conn.produce("t1", 2, batch("z")).0, 0);
    let d = json(bs, &["topic", "describe", "t1"]);
    assert_eq!(d["name"], "t1");
    assert_eq!(d["partition_count"], 3);
    assert_eq!(d["replication_factor"], 1);
    assert_eq!(d["internal"], false);
    let parts = d["partitions"].as_array().unwrap();
    assert_eq!(parts.len(), 3);
    for (i, p) in parts.iter().enumerate() {
        assert_eq!(p["partition"], i as i64);
        assert_eq!(p["leader"], node);
        assert_eq!(p["replicas"], serde_json::json!([node]));
        assert_eq!(p["isr"], serde_json::json!([node]));
        assert_eq!(p["offline_replicas"], serde_json::json!([]));
        assert_eq!(p["log_start_offset"], 0);
        assert!(p.get("error").is_none(), "{p}");
    }
    let hws: Vec<i64> = parts
        .iter()
        .map(|p| p["high_watermark"].as_i64().unwrap())
        .collect();
    assert_eq!(hws, [3, 0, 1]);
    assert_eq!(d["configs"]["cleanup.policy"], "delete");
    assert!(
        skiff(bs, &["topic", "describe", "t1"])
            .stdout
            .contains("HIGH-WATERMARK")
    );
    let e = fails(bs, &["topic", "describe", "nope"]);
    assert!(e.contains("UNKNOWN_TOPIC_OR_PARTITION"), "{e}");

    // alter-config, then config get shows the value with its source.
    let a = json(
        bs,
        &[
            "topic",
            "alter-config",
            "t1",
            "--set",
            "retention.ms=3600000",
            "--delete",
            "cleanup.policy",
        ],
    );
    assert_eq!(a["resource_type"], "topic");
    assert_eq!(a["set"]["retention.ms"], "3600000");
    assert_eq!(a["deleted"], serde_json::json!(["cleanup.policy"]));
    let e = fails(bs, &["topic", "alter-config", "t1"]);
    assert!(e.contains("nothing to change"), "{e}");
    let g = json(bs, &["config", "get", "--topic", "t1"]);
    assert_eq!(g["resource_type"], "topic");
    assert_eq!(g["resource_name"], "t1");
    let entry = |g: &Value, key: &str| -> Value {
        g["configs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == key)
            .cloned()
            .unwrap_or_else(|| panic!("no {key} in {g}"))
    };
    let r = entry(&g, "retention.ms");
    assert_eq!(r["value"], "3600000");
    assert_eq!(r["source"], "DYNAMIC_TOPIC_CONFIG");
    assert_eq!(r["sensitive"], false);
    assert_eq!(r["synonyms"][0]["source"], "DYNAMIC_TOPIC_CONFIG");
    let cp = entry(&g, "cleanup.policy");
    assert_eq!(cp["source"], "DEFAULT_CONFIG", "{cp}");
    // config set on the topic, filtered get.
    json(
        bs,
        &[
            "config",
            "set",
            "--topic",
            "t1",
            "max.message.bytes=2000000",
        ],
    );
    let g = json(
        bs,
        &[
            "config",
            "get",
            "--topic",
            "t1",
            "--key",
            "max.message.bytes",
        ],
    );
    assert_eq!(g["configs"].as_array().unwrap().len(), 1, "{g}");
    assert_eq!(entry(&g, "max.message.bytes")["value"], "2000000");
    assert_eq!(
        entry(&g, "max.message.bytes")["source"],
        "DYNAMIC_TOPIC_CONFIG"
    );
    // broker configs: one broker, and the defaults.
    let g = json(bs, &["config", "get", "--broker", &node.to_string()]);
    assert_eq!(g["resource_type"], "broker");
    assert!(g["configs"].as_array().unwrap().len() > 20, "{g}");
    assert!(entry(&g, "log.retention.hours")["value"].is_string());
    json(bs, &["config", "get", "--broker-default"]);

    // add-partitions
    let grown = json(bs, &["topic", "add-partitions", "t1", "--total", "5"]);
    assert_eq!(grown["previous_partitions"], 3);
    assert_eq!(grown["partitions"], 5);
    assert_eq!(json(bs, &["topic", "describe", "t1"])["partition_count"], 5);
    let e = fails(bs, &["topic", "add-partitions", "t1", "--total", "2"]);
    assert!(e.contains("INVALID_PARTITIONS"), "{e}");

    // trim: partition 0's log start moves to 2; the others keep theirs.
    let tr = json(
        bs,
        &["topic", "trim", "t1", "--before", "2", "--partition", "0"],
    );
    assert_eq!(
        tr["partitions"],
        serde_json::json!([{"partition": 0, "low_watermark": 2}])
    );
    let d = json(bs, &["topic", "describe", "t1"]);
    assert_eq!(d["partitions"][0]["log_start_offset"], 2);
    assert_eq!(d["partitions"][0]["high_watermark"], 3);
    assert_eq!(d["partitions"][2]["log_start_offset"], 0);
    let e = fails(
        bs,
        &["topic", "trim", "t1", "--before", "10", "--partition", "0"],
    );
    assert!(e.contains("OFFSET_OUT_OF_RANGE"), "{e}");

    // delete: refused without --yes (stdin is not a terminal), then done.
    let e = fails(bs, &["topic", "delete", "t1"]);
    assert!(e.contains("--yes"), "{e}");
    assert!(topic_names(&json(bs, &["topic", "list"])).contains(&"t1".to_owned()));
    let del = json(bs, &["topic", "delete", "t1", "--yes"]);
    assert_eq!(del["deleted"], serde_json::json!(["t1"]));
    let gone = Instant::now() + Duration::from_secs(20);
    while topic_names(&json(bs, &["topic", "list"])).contains(&"t1".to_owned()) {
        assert!(Instant::now() < gone, "t1 still listed after delete");
        std::thread::sleep(Duration::from_millis(100));
    }
    let e = fails(bs, &["topic", "delete", "t1", "--yes"]);
    assert!(e.contains("UNKNOWN_TOPIC_OR_PARTITION"), "{e}");
}

#[test]
fn cli_admin_cluster_info_health_and_doctor_on_a_healthy_broker() {
    let b = BrokerBuilder::new().admin(true).start();
    let bs = b.bootstrap();
    let bs = bs.as_str();
    let info = json(bs, &["cluster", "info", "--api-versions"]);
    let brokers = info["brokers"].as_array().unwrap();
    assert_eq!(brokers.len(), 1);
    let id = brokers[0]["id"].as_i64().unwrap();
    assert_eq!(brokers[0]["port"], i64::from(b.port()));
    assert_eq!(info["controller_id"], id);
    assert_eq!(brokers[0]["controller"], true);
    assert!(
        info["cluster_id"].as_str().is_some_and(|c| !c.is_empty()),
        "{info}"
    );
    let apis = brokers[0]["api_versions"].as_array().unwrap();
    let produce = apis.iter().find(|a| a["api_key"] == 0).unwrap();
    assert_eq!(produce["name"], "Produce");
    assert!(produce["max_version"].as_i64().unwrap() >= 9);

    let h = json(bs, &["cluster", "health"]);
    assert_eq!(h["healthy"], true, "{h}");
    assert_eq!(h["reasons"], serde_json::json!([]));
    assert_eq!(h["brokers"], serde_json::json!([id]));
    assert_eq!(h["brokers_down"], serde_json::json!([]));
    assert_eq!(h["controller_id"], id);

    let d = json(bs, &["doctor"]);
    assert_eq!(d["ok"], true, "{d:#}");
    let checks = d["checks"].as_array().unwrap();
    for kind in ["dns", "tcp", "protocol", "apis", "metadata", "advertised"] {
        let c = checks
            .iter()
            .find(|c| c["check"] == kind)
            .unwrap_or_else(|| panic!("no {kind} check in {d:#}"));
        assert_eq!(c["status"], "ok", "{c}");
    }
    let text = skiff(bs, &["doctor"]).stdout;
    assert!(text.contains("OK") && !text.contains("FAIL  "), "{text}");

    // The first group lookup creates __consumer_offsets: internal, listed only with
    // --internal, and the doctor judges its replication.
    let mut conn = Conn::open(b.port());
    let _ = conn.call(
        3,
        FindCoordinatorRequest {
            key: "g".into(),
            key_type: 0,
            coordinator_keys: Vec::new(),
        },
    );
    let until = Instant::now() + Duration::from_secs(20);
    let offsets = loop {
        let all = json(bs, &["topic", "list", "--internal"]);
        if let Some(t) = all["topics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "__consumer_offsets")
        {
            break t.clone();
        }
        assert!(Instant::now() < until, "no __consumer_offsets: {all}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(offsets["internal"], true);
    assert_eq!(offsets["replication_factor"], 1);
    assert!(!topic_names(&json(bs, &["topic", "list"])).contains(&"__consumer_offsets".into()));
    let d = json(bs, &["doctor"]);
    let c = d["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == "internal_topic" && c["target"] == "__consumer_offsets")
        .cloned()
        .unwrap();
    assert_eq!(c["status"], "ok", "{c}");
    assert_eq!(c["detail"], "replication factor 1 with 1 brokers", "{c}");

    // Pointed at the admin (HTTP) port, the doctor says so.
    let http = format!("127.0.0.1:{}", b.admin_port().unwrap());
    let d = json_exit(&http, &["doctor"], 1);
    let c = first_failed_check(&d);
    assert_eq!(c["check"], "protocol", "{d:#}");
    assert!(c["detail"].as_str().unwrap().contains("HTTP"), "{c}");
}

/// A broker process started from the testkit's command line (the testkit's `Broker` refuses
/// a ready line that advertises another address, which is this test's point); killed on drop.
struct Raw(std::process::Child);

impl Drop for Raw {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts a broker with `overrides`: the process and its listener port.
fn start_raw(dir: &std::path::Path, overrides: &[(&str, &str)]) -> (Raw, u16) {
    use std::io::{BufRead, BufReader};
    let data = dir.join("data");
    let mut cmd = BrokerBuilder::new()
        .log_dirs(&[data.as_path()])
        .overrides(overrides)
        .command();
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let mut child = Raw(cmd.spawn().expect("spawn skiff serve"));
    let stdout = child.0.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let _ = tx.send(line);
        }
    });
    loop {
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("no ready line within 30 s");
        if line.starts_with("skiff ready listener=PLAINTEXT") {
            return (child, skiff_testkit::process::port_of(&line));
        }
    }
}

#[test]
fn cli_admin_doctor_names_a_wrong_advertised_listener() {
    let dir = tempfile::tempdir().unwrap();
    let dead = free_port();
    let advertised = format!("PLAINTEXT://localhost:{dead}");
    let (_broker, port) = start_raw(dir.path(), &[("advertised.listeners", &advertised)]);
    let bs = format!("127.0.0.1:{port}");
    let o = skiff(&bs, &["doctor"]);
    assert_eq!(code(&o), 1, "{o:?}");
    assert!(
        o.stdout.contains(&format!(
            "broker 1 advertises localhost:{dead} but nothing answers there"
        )) && o
            .stdout
            .contains("set advertised.listeners to an address clients can reach"),
        "{}",
        o.stdout
    );
    let d = json_exit(&bs, &["doctor"], 1);
    assert_eq!(d["ok"], false);
    let fail: Vec<&Value> = d["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == "fail")
        .collect();
    assert_eq!(fail.len(), 1, "{d:#}");
    assert_eq!(fail[0]["check"], "advertised");
    assert_eq!(fail[0]["target"], format!("localhost:{dead}"));
    // The bootstrap steps themselves passed.
    for kind in ["dns", "tcp", "protocol", "metadata"] {
        assert!(
            d["checks"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["check"] == kind && c["status"] == "ok"),
            "{kind}: {d:#}"
        );
    }
}

#[test]
fn cli_admin_cluster_health_exits_10_on_an_offline_partition() {
    // Node 1 a controller-only voter, brokers 2 and 3: stopping broker 3 keeps the quorum.
    let mut cluster = Cluster::start_roles(&["controller", "broker", "broker"], &[]);
    cluster.wait_brokers(&[1, 2], &[2, 3], Duration::from_secs(30));
    let bs = format!("127.0.0.1:{}", cluster.ports[1].0);
    let bs = bs.as_str();
    json(bs, &["topic", "create", "solo", "-p", "4", "-r", "1"]);
    // Healthy once both partitions have leaders.
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        let o = skiff(bs, &["cluster", "health", "--format", "json"]);
        if code(&o) == 0 {
            let h: Value = serde_json::from_str(&o.stdout).unwrap();
            assert_eq!(h["healthy"], true);
            assert_eq!(h["brokers"], serde_json::json!([2, 3]));
            break;
        }
        assert!(Instant::now() < until, "never healthy: {o:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let m = cluster.metadata(1);
    let on_three: Vec<i32> = skiff_testkit::cluster::leaders(&m, "solo")
        .into_iter()
        .filter(|(_, l)| *l == 3)
        .map(|(p, _)| p)
        .collect();
    assert!(
        !on_three.is_empty(),
        "no partition of solo on node 3: {m:?}"
    );
    cluster.nodes[2].stop();
    let until = Instant::now() + Duration::from_secs(30);
    let h = loop {
        let o = skiff(bs, &["cluster", "health", "--format", "json"]);
        if code(&o) == 10 {
            break serde_json::from_str::<Value>(&o.stdout).unwrap();
        }
        assert!(Instant::now() < until, "never unhealthy: {o:?}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(h["healthy"], false);
    assert_eq!(h["brokers_down"], serde_json::json!([3]), "{h:#}");
    let leaderless: Vec<(String, i64)> = h["leaderless_partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["topic"].as_str().unwrap().to_owned(),
                p["partition"].as_i64().unwrap(),
            )
        })
        .collect();
    for p in &on_three {
        assert!(
            leaderless.contains(&("solo".into(), i64::from(*p))),
            "{h:#}"
        );
        let reason = format!("partition solo-{p} is offline");
        assert!(
            h["reasons"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r.as_str().unwrap().contains(&reason)),
            "{h:#}"
        );
    }
    let text = skiff(bs, &["cluster", "health"]);
    assert_eq!(code(&text), 10);
    assert!(text.stdout.contains("is offline"), "{}", text.stdout);
}

/// A doctor pointed at a TLS port (a server that answers a plaintext Kafka request with a TLS
/// alert record, as TLS listeners do) says TLS; with a good second bootstrap address the bad
/// one is a warning and the exit is 0.
#[test]
fn cli_admin_doctor_detects_tls_and_tolerates_one_bad_bootstrap() {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let tls = format!("127.0.0.1:{}", listener.local_addr().unwrap().port());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { break };
            let mut buf = [0_u8; 64];
            let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
            if s.read(&mut buf).is_ok_and(|n| n > 0) {
                // Alert record, TLS 1.2, fatal (2) unexpected_message (10).
                let _ = s.write_all(&[21, 3, 3, 0, 2, 2, 10]);
            }
        }
    });
    let d = json_exit(&tls, &["doctor"], 1);
    let c = first_failed_check(&d);
    assert_eq!(c["check"], "protocol", "{d:#}");
    assert!(c["detail"].as_str().unwrap().contains("TLS"), "{c}");
    assert!(c["fix"].as_str().unwrap().contains("TLS"), "{c}");

    let b = Broker::start();
    let both = format!("{tls},{}", b.bootstrap());
    let d = json(&both, &["doctor"]);
    assert_eq!(d["ok"], true, "{d:#}");
    let warned = d["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["target"] == tls.as_str() && c["check"] == "protocol")
        .cloned()
        .unwrap();
    assert_eq!(warned["status"], "warn", "{d:#}");
}

/// Whether the machine can run the reference Kafka (a JVM).
fn have_java() -> bool {
    Command::new("java")
        .arg("-version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn cli_admin_against_apache_kafka() {
    if !have_java() {
        eprintln!("skipped: no JVM here to run the reference Apache Kafka");
        return;
    }
    let k = KafkaNode::start();
    let bs = k.bootstrap();
    let bs = bs.as_str();
    let c = json(
        bs,
        &[
            "topic",
            "create",
            "kt",
            "-p",
            "2",
            "-r",
            "1",
            "--config",
            "retention.ms=7200000",
        ],
    );
    assert_eq!(
        (c["partitions"].clone(), c["replication_factor"].clone()),
        (2.into(), 1.into())
    );
    assert_eq!(c["topic_id"].as_str().unwrap().len(), 22);
    let list = json(bs, &["topic", "list"]);
    assert!(topic_names(&list).contains(&"kt".to_owned()), "{list}");
    // Kafka's leader serves ListOffsets a moment after the topic is in Metadata (until then
    // `describe` reports the partition's error with null offsets): poll until it does.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let d = loop {
        let d = json(bs, &["topic", "describe", "kt"]);
        let ready = d["partitions"]
            .as_array()
            .is_some_and(|ps| ps.iter().all(|p| !p["log_start_offset"].is_null()));
        if ready || std::time::Instant::now() > deadline {
            break d;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert_eq!(d["partition_count"], 2);
    assert_eq!(d["configs"]["retention.ms"], "7200000");
    let node = json(bs, &["cluster", "info"])["brokers"][0]["id"].clone();
    for p in d["partitions"].as_array().unwrap() {
        assert_eq!(p["leader"], node, "{d:#}");
        assert_eq!(p["log_start_offset"], 0);
        assert_eq!(p["high_watermark"], 0);
    }
    let g = json(
        bs,
        &["config", "get", "--topic", "kt", "--key", "retention.ms"],
    );
    assert_eq!(g["configs"][0]["value"], "7200000");
    assert_eq!(g["configs"][0]["source"], "DYNAMIC_TOPIC_CONFIG");
    let h = json(bs, &["cluster", "health"]);
    assert_eq!(h["healthy"], true, "{h:#}");
    let e = fails(bs, &["topic", "create", "kt", "-p", "1"]);
    assert!(e.contains("TOPIC_ALREADY_EXISTS"), "{e}");
}
