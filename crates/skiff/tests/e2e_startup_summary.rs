//! End-to-end test of the startup summary (issue 20 item 4): the binary's stderr has one block
//! of `skiff::startup` INFO lines naming the node, each listener with what it advertises, the
//! data dir with its free space, and every non-default setting with its source, a PASSWORD
//! value redacted; with `--log-format json` the same data are structured fields.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use skiff_testkit::Broker;

const SECRET: &str = "hunter2-not-for-logs";

fn summary_lines(logs: &str) -> Vec<&str> {
    logs.lines()
        .filter(|l| l.contains("skiff::startup"))
        .collect()
}

#[test]
fn e2e_startup_summary_names_listeners_dirs_and_sources() {
    let mut b = Broker::builder()
        .binary(env!("CARGO_BIN_EXE_skiff"))
        .set("num.partitions", "3")
        .set("ssl.keystore.password", SECRET)
        .env("KAFKA_LOG_RETENTION_MS", "3600000")
        .start();
    let port = b.port();
    let dir = b.log_dir().display().to_string();
    assert_eq!(b.sigterm().code(), Some(0));
    let logs = b.logs();
    let lines = summary_lines(&logs);
    let has = |needles: &[&str]| {
        lines
            .iter()
            .any(|l| l.contains("INFO") && needles.iter().all(|n| l.contains(n)))
    };
    assert!(
        has(&["node", "node_id=1", "cluster_id=", "roles=", "version="]),
        "{logs}"
    );
    assert!(
        has(&[
            "listener",
            "name=PLAINTEXT",
            &format!("bind=127.0.0.1:{port}"),
            &format!("advertised=127.0.0.1:{port}"),
        ]),
        "{logs}"
    );
    assert!(
        has(&["data dir", &format!("path={dir}"), "free=", "free_bytes="]),
        "{logs}"
    );
    assert!(
        has(&[
            "setting",
            "key=num.partitions",
            "value=3",
            "source=--override"
        ]),
        "{logs}"
    );
    assert!(
        has(&[
            "setting",
            "key=log.retention.ms",
            "value=3600000",
            "source=env"
        ]),
        "{logs}"
    );
    assert!(
        has(&[
            "setting",
            "key=ssl.keystore.password",
            "value=[redacted]",
            "source=--override"
        ]),
        "{logs}"
    );
    assert!(
        !logs.contains(SECRET),
        "the password reached the log:\n{logs}"
    );
    // Equal to Kafka's default: not listed.
    assert!(!has(&["key=auto.create.topics.enable"]), "{logs}");
    // One block: the summary lines are consecutive.
    let all: Vec<&str> = logs.lines().collect();
    let first = all
        .iter()
        .position(|l| l.contains("skiff::startup"))
        .unwrap();
    assert!(
        all[first..first + lines.len()]
            .iter()
            .all(|l| l.contains("skiff::startup")),
        "{logs}"
    );
}

#[test]
fn e2e_startup_summary_in_json_has_structured_fields() {
    let mut b = Broker::builder()
        .binary(env!("CARGO_BIN_EXE_skiff"))
        .serve_args(&["--log-format", "json"])
        .set("ssl.keystore.password", SECRET)
        .set("num.partitions", "2")
        .start();
    let port = b.port();
    assert_eq!(b.sigterm().code(), Some(0));
    let logs = b.logs();
    assert!(!logs.contains(SECRET), "{logs}");
    let events: Vec<serde_json::Value> = logs
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["target"] == "skiff::startup")
        .collect();
    let field = |msg: &str, key: &str, value: &str| {
        events
            .iter()
            .any(|e| e["fields"]["message"] == msg && e["fields"][key].as_str() == Some(value))
    };
    assert!(
        field("listener", "advertised", &format!("127.0.0.1:{port}")),
        "{logs}"
    );
    assert!(field("listener", "name", "PLAINTEXT"), "{logs}");
    assert!(
        events.iter().any(|e| e["fields"]["message"] == "setting"
            && e["fields"]["key"] == "num.partitions"
            && e["fields"]["value"] == "2"
            && e["fields"]["source"] == "--override"),
        "{logs}"
    );
    assert!(field("setting", "value", "[redacted]"), "{logs}");
    assert!(
        events.iter().any(|e| e["fields"]["message"] == "data dir"
            && e["fields"]["free_bytes"].as_u64().is_some_and(|n| n > 0)),
        "{logs}"
    );
}
