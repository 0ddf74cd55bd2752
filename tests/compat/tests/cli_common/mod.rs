//! Helpers shared by the CLI's end-to-end tests (`cli_admin`, `cli_data`, `cli_data2`),
//! included by each with `mod cli_common;`.
//!
//! Mental model: every test runs the built `skiff` binary as a child process (the compat
//! crate's `run`, bounded by a deadline, killed when it overruns) and reads its stdout as the
//! user would; stock-client checks go through confluent-kafka (`ck.py`).
//! Invariants: no helper waits without a deadline; a helper that expects success panics with
//! the command line, stdout and stderr, so a failing test says which command failed.
// Each test binary uses a different subset of these helpers.
#![allow(dead_code)]

use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use skiff_compat::broker::skiff_binary;
use skiff_compat::{Output, Python, python, run};

/// How long one `skiff` command may run.
pub const DEADLINE: Duration = Duration::from_secs(45);

/// Runs the `skiff` binary with `args` and `stdin` (at most [`DEADLINE`]).
pub fn skiff(args: &[&str], stdin: &[u8]) -> Output {
    let mut cmd = Command::new(skiff_binary());
    cmd.args(args);
    run(
        &mut cmd,
        stdin,
        DEADLINE,
        &format!("skiff {}", args.join(" ")),
        "build it with `cargo build -p skiff`",
    )
}

/// Runs `skiff ARGS` and asserts it exited 0.
pub fn skiff_ok(args: &[&str], stdin: &[u8]) -> Output {
    let out = skiff(args, stdin);
    out.assert_success(&format!("skiff {}", args.join(" ")));
    out
}

/// `skiff ARGS --format json`: its one JSON document.
pub fn skiff_json(args: &[&str]) -> Value {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--format", "json"]);
    let out = skiff_ok(&all, b"");
    serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("skiff {args:?}: not JSON ({e}):\n{}", out.stdout))
}

/// `skiff consume ARGS --format json`: its JSON lines.
pub fn consume_json(args: &[&str]) -> Vec<Value> {
    let mut all = vec!["consume"];
    all.extend_from_slice(args);
    all.extend(["--format", "json"]);
    let out = skiff_ok(&all, b"");
    out.stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// Creates `name` with `partitions` partitions through confluent-kafka's admin client.
pub fn create_topic(bootstrap: &str, name: &str, partitions: i32) {
    let r = python(
        Python::PyPi,
        "ck.py",
        "admin_create",
        &json!({"bootstrap": bootstrap, "topics": [{"name": name, "partitions": partitions}]}),
    );
    assert_eq!(r["results"][name], Value::Null, "creating {name}: {r}");
}

/// Every record of `topic` (partitions `0..partitions`) as confluent-kafka reads it.
pub fn stock_read(bootstrap: &str, topic: &str, partitions: i32) -> Vec<Value> {
    let assign: Vec<Value> = (0..partitions).map(|p| json!([p, -2])).collect();
    let r = python(
        Python::PyPi,
        "ck.py",
        "consume",
        &json!({"bootstrap": bootstrap, "topic": topic, "assign": assign}),
    );
    assert_eq!(
        r["eof"],
        json!(true),
        "stock consumer did not reach the end: {r}"
    );
    assert_eq!(r["errors"], json!([]), "{r}");
    r["messages"].as_array().cloned().unwrap_or_default()
}

/// Whether the pinned Apache Kafka of `scripts/kafka-reference.sh` can run here (a JVM, and
/// the distribution fetched or Maven to fetch it).
pub fn kafka_available() -> bool {
    let root = skiff_compat::repo_root();
    let fetched = std::fs::read_dir(root.join("target/kafka-ref"))
        .map(|d| {
            d.flatten()
                .any(|e| e.path().join("libs/.complete").exists())
        })
        .unwrap_or(false);
    let mvn = Command::new("mvn")
        .arg("-v")
        .output()
        .is_ok_and(|o| o.status.success());
    let java = Command::new("java")
        .arg("-version")
        .output()
        .is_ok_and(|o| o.status.success());
    java && (fetched || mvn)
}
