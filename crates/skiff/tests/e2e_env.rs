//! End-to-end test of the binary's environment handling (issue 12 item 12): variables that
//! common tooling and images set beside a broker (`KAFKA_BOOTSTRAP_SERVERS`, `KAFKA_CLUSTER_ID`,
//! `KAFKA_DEBUG`, `KAFKA_GC_LOG_OPTS`) do not stop the start; each unknown one is a WARN line
//! naming the variable; the Bitnami form `KAFKA_CFG_*` configures the broker.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use skiff_testkit::Broker;

#[test]
fn e2e_stray_kafka_variables_warn_and_kafka_cfg_variables_apply() {
    let mut b = Broker::builder()
        .binary(env!("CARGO_BIN_EXE_skiff"))
        .rust_log("warn")
        .env("KAFKA_BOOTSTRAP_SERVERS", "localhost:9092")
        .env("KAFKA_CLUSTER_ID", "MkU3OEVBNTcwNTJENDM2Qk")
        .env("KAFKA_DEBUG", "y")
        .env("KAFKA_GC_LOG_OPTS", "-Xlog:gc")
        // Bitnami's form: binds the admin port, which adds a ready line.
        .env("KAFKA_CFG_SKIFF_ADMIN_LISTENER", "127.0.0.1:0")
        .start();
    let first = b.ready_line();
    assert!(
        first.starts_with("skiff ready listener=PLAINTEXT"),
        "{first}"
    );
    assert!(b.admin_port().is_some(), "the admin ready line");

    let status = b.sigterm();
    assert_eq!(status.code(), Some(0));
    // The broker's stderr, as the harness keeps it.
    let stderr = b.logs();
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
