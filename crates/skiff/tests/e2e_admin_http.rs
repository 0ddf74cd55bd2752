//! End-to-end tests of the admin HTTP port and the `skiff admin` CLI against the real binary:
//! with `skiff.admin.listener=127.0.0.1:0` the broker prints an admin ready line, the probes
//! answer, and after a topic is created and records are produced over the Kafka protocol
//! (one idempotent producer) both the JSON API and the CLI (table, block, `--json`) show the
//! right offsets and the producers section; unknown partitions are a 404 / exit 1. Without the
//! key the process listens on exactly one socket (checked in /proc) and prints no admin line;
//! the CLI explains an unreachable port; a malformed value is a configuration error (exit 2).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Output};

use bytes::Bytes;
use serde_json::Value;
use skiff_testkit::client::DEADLINE;
use skiff_testkit::{Broker, Conn};

const TOPIC: &str = "admin-e2e";

fn spawn(data: &Path, admin: bool) -> Broker {
    let b = Broker::builder()
        .binary(env!("CARGO_BIN_EXE_skiff"))
        .log_dirs(&[data])
        .set("log.cleaner.backoff.ms", "100")
        .set("log.retention.check.interval.ms", "1000")
        .admin(admin)
        .rust_log("warn")
        .start();
    let ready = b.ready_line();
    assert!(
        ready.starts_with("skiff ready listener=PLAINTEXT"),
        "{ready}"
    );
    b
}

/// SIGTERM, wait for exit 0, and return every stdout line printed after the ready lines.
fn stop(mut b: Broker) -> Vec<String> {
    let status = b.sigterm();
    assert!(status.success(), "{status:?}");
    b.stdout_after_ready()
}

/// How many TCP sockets process `pid` has in LISTEN state (from /proc).
fn listening_sockets(pid: u32) -> usize {
    let inodes: BTreeSet<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter_map(|l| {
            let l = l.to_string_lossy().to_string();
            Some(l.strip_prefix("socket:[")?.strip_suffix(']')?.to_string())
        })
        .collect();
    let mut n = 0;
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            // sl local rem st tx:rx tr:when retrnsmt uid timeout inode
            if f.len() > 9 && f[3] == "0A" && inodes.contains(f[9]) {
                n += 1;
            }
        }
    }
    n
}

fn http_get(port: u16, path: &str) -> (u16, Value) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(DEADLINE))
        .build()
        .into();
    let mut resp = agent
        .get(format!("http://127.0.0.1:{port}{path}"))
        .call()
        .unwrap();
    let status = resp.status().as_u16();
    let body = resp.body_mut().read_to_string().unwrap();
    (status, serde_json::from_str(&body).unwrap())
}

fn cli(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_skiff"))
        .arg("admin")
        .args(args)
        .output()
        .unwrap()
}

fn stdout_ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// This test's calls on a [`Conn`].
trait Admin {
    fn produce_n(&mut self, partition: i32, records: usize, pid: Option<i64>) -> i64;
}

impl Admin for Conn {
    /// Produces `records` records to `partition` (idempotently when `pid` is set): base offset.
    fn produce_n(&mut self, partition: i32, records: usize, pid: Option<i64>) -> i64 {
        let mut b = skiff_record::BatchBuilder::new(skiff_record::BatchOptions {
            producer_id: pid.unwrap_or(-1),
            producer_epoch: if pid.is_some() { 0 } else { -1 },
            base_sequence: if pid.is_some() { 0 } else { -1 },
            ..skiff_record::BatchOptions::default()
        });
        for i in 0..records {
            b.append(
                1_700_000_000_000,
                None,
                Some(format!("v{i}").as_bytes()),
                &[],
            );
        }
        let (error_code, base_offset) =
            self.produce(TOPIC, partition, Bytes::from(b.build().unwrap()));
        assert_eq!(error_code, 0);
        base_offset
    }
}

#[test]
fn e2e_admin_http_and_cli_show_partition_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let b = spawn(&dir.path().join("data"), true);
    let admin = b.admin_port().unwrap();
    assert_eq!(
        listening_sockets(b.pid()),
        2,
        "the Kafka and the admin port"
    );
    assert_eq!(
        http_get(admin, "/livez"),
        (200, serde_json::json!({"status": "ok"}))
    );
    assert_eq!(
        http_get(admin, "/readyz"),
        (200, serde_json::json!({"status": "ok"})),
        "ready once the ready lines are printed"
    );

    let mut c = Conn::open(b.port());
    c.create_topic(TOPIC, 2, &[]);
    assert_eq!(c.produce_n(0, 2, None), 0);
    let pid = c.init_producer_id();
    assert_eq!(c.produce_n(1, 3, Some(pid)), 0);
    assert_eq!(c.produce_n(0, 1, None), 2);

    // JSON: the list.
    let (status, list) = http_get(admin, "/api/v1/partitions");
    assert_eq!(status, 200);
    let find = |p: i64| {
        list["partitions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["topic"] == TOPIC && e["partition"] == p)
            .cloned()
            .unwrap_or_else(|| panic!("{TOPIC}-{p} missing in {list}"))
    };
    let (p0, p1) = (find(0), find(1));
    for (p, end) in [(&p0, 3), (&p1, 3)] {
        assert_eq!(p["log_start_offset"], 0, "{p}");
        assert_eq!(p["log_end_offset"], end, "{p}");
        assert_eq!(p["high_watermark"], end, "{p}");
        assert_eq!(p["segment_count"], 1, "{p}");
        assert!(p["size_bytes"].as_u64().unwrap() > 61, "{p}");
    }

    // JSON: one partition with its sections.
    let (status, d) = http_get(admin, &format!("/api/v1/partitions/{TOPIC}/1"));
    assert_eq!(status, 200);
    assert_eq!(d["log_end_offset"], 3);
    assert_eq!(d["sections"]["producers"]["active"], 1, "{d}");
    assert_eq!(
        d["sections"]["producers"]["producers"][0]["producer_id"],
        pid
    );
    assert_eq!(
        d["sections"]["producers"]["producers"][0]["last_sequence"],
        2
    );
    let (_, d0) = http_get(admin, &format!("/api/v1/partitions/{TOPIC}/0"));
    assert_eq!(d0["sections"]["producers"]["active"], 0, "{d0}");
    let (status, e) = http_get(admin, &format!("/api/v1/partitions/{TOPIC}/9"));
    assert_eq!(status, 404);
    assert_eq!(e["error"], "not_found");

    // CLI: table, block, raw JSON, error.
    let url = format!("http://127.0.0.1:{admin}");
    let table = stdout_ok(&cli(&["--url", &url, "partitions"]));
    let rows: Vec<Vec<&str>> = table
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows[0][0], "TOPIC", "{table}");
    for p in ["0", "1"] {
        let row = rows
            .iter()
            .find(|r| r[0] == TOPIC && r[1] == p)
            .unwrap_or_else(|| panic!("no row for {TOPIC}-{p} in\n{table}"));
        assert_eq!(&row[2..5], ["0", "3", "3"], "{table}");
        assert_eq!(row[6], "1", "{table}");
    }
    let block = stdout_ok(&cli(&["--url", &url, "partition", TOPIC, "1"]));
    assert!(
        block.starts_with(&format!("partition {TOPIC}-1\n")),
        "{block}"
    );
    assert!(block.contains("log end offset    3\n"), "{block}");
    assert!(block.contains("high watermark    3\n"), "{block}");
    assert!(block.contains("section producers\n"), "{block}");
    assert!(block.contains("\"active\": 1"), "{block}");
    let raw = stdout_ok(&cli(&["partition", TOPIC, "1", "--json", "--url", &url]));
    let raw: Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(raw, d, "--json prints the API's document");
    let missing = cli(&["--url", &url, "partition", TOPIC, "9"]);
    assert_eq!(missing.status.code(), Some(1));
    let err = String::from_utf8_lossy(&missing.stderr);
    assert!(err.contains(&format!("{TOPIC}-9")), "{err}");

    drop(c);
    let rest = stop(b);
    assert!(rest.is_empty(), "nothing else on stdout: {rest:?}");
    assert!(
        TcpStream::connect(("127.0.0.1", admin)).is_err(),
        "admin port closed after shutdown"
    );
}

#[test]
fn e2e_admin_port_is_off_unless_configured() {
    let dir = tempfile::tempdir().unwrap();
    let b = spawn(&dir.path().join("data"), false);
    let mut c = Conn::open(b.port());
    c.create_topic(TOPIC, 1, &[]);
    assert_eq!(
        listening_sockets(b.pid()),
        1,
        "only the Kafka listener is bound"
    );
    drop(c);
    let rest = stop(b);
    assert!(
        rest.iter().all(|l| !l.contains("admin")),
        "no admin ready line: {rest:?}"
    );

    // Nothing listens on the CLI's port: a clear hint.
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", free.local_addr().unwrap());
    drop(free);
    let out = cli(&["--url", &url, "partitions"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is skiff.admin.listener set"), "{err}");
    assert!(err.contains(&url), "{err}");

    // A malformed value is a configuration error.
    let out = Command::new(env!("CARGO_BIN_EXE_skiff"))
        .args(["serve", "--override", "skiff.admin.listener=9644"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("skiff.admin.listener"), "{err}");
    assert!(out.stdout.is_empty());
}
