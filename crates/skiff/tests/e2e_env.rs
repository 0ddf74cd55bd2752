//! End-to-end test of the binary's environment handling (issue 12 item 12): variables that
//! common tooling and images set beside a broker (`KAFKA_BOOTSTRAP_SERVERS`, `KAFKA_CLUSTER_ID`,
//! `KAFKA_DEBUG`, `KAFKA_GC_LOG_OPTS`) do not stop the start; each unknown one is a WARN line
//! naming the variable; the Bitnami form `KAFKA_CFG_*` configures the broker.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const DEADLINE: Duration = Duration::from_secs(30);

#[test]
fn e2e_stray_kafka_variables_warn_and_kafka_cfg_variables_apply() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_skiff"))
        .args(["serve", "--override", "listeners=PLAINTEXT://127.0.0.1:0"])
        .arg("--override")
        .arg(format!("log.dirs={}", dir.path().join("data").display()))
        .env("RUST_LOG", "warn")
        .env("KAFKA_BOOTSTRAP_SERVERS", "localhost:9092")
        .env("KAFKA_CLUSTER_ID", "MkU3OEVBNTcwNTJENDM2Qk")
        .env("KAFKA_DEBUG", "y")
        .env("KAFKA_GC_LOG_OPTS", "-Xlog:gc")
        // Bitnami's form: binds the admin port, which adds a ready line.
        .env("KAFKA_CFG_SKIFF_ADMIN_LISTENER", "127.0.0.1:0")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = common::stdout_lines(&mut child);
    let first = lines.recv_timeout(DEADLINE).expect("a ready line");
    assert!(
        first.starts_with("skiff ready listener=PLAINTEXT"),
        "{first}"
    );
    let admin = lines.recv_timeout(DEADLINE).expect("the admin ready line");
    assert!(
        admin.starts_with("skiff ready admin bind=127.0.0.1:"),
        "{admin}"
    );

    let mut stderr_pipe = child.stderr.take().unwrap();
    let stderr = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr_pipe.read_to_string(&mut s);
        s
    });
    assert!(
        Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .unwrap()
            .success()
    );
    let deadline = Instant::now() + DEADLINE;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "no exit after SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0));
    let stderr = stderr.join().unwrap();
    for var in ["KAFKA_BOOTSTRAP_SERVERS", "KAFKA_CLUSTER_ID"] {
        assert!(
            stderr
                .lines()
                .any(|l| l.contains("WARN") && l.contains(&format!("environment variable {var}"))),
            "no warning naming {var} in:\n{stderr}"
        );
    }
    // Launcher variables are known and skipped without a warning.
    assert!(!stderr.contains("KAFKA_DEBUG"), "{stderr}");
    assert!(!stderr.contains("KAFKA_GC_LOG_OPTS"), "{stderr}");
}
