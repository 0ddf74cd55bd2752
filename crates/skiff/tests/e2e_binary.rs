//! End-to-end tests of the `skiff` binary: ready lines, a request over TCP, SIGTERM and SIGINT
//! shutdown with the clean-shutdown marker, data surviving a restart, configuration errors
//! (exit 2), every `log.dirs` entry formatted with one cluster id (a dir of another cluster
//! refuses the start, exit 2), and `--log-format json`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;

use bytes::{Bytes, BytesMut};
use skiff_protocol::*;
use skiff_testkit::client::DEADLINE;
use skiff_testkit::{Broker, BrokerBuilder};

fn builder(dirs: &[&Path]) -> BrokerBuilder {
    Broker::builder()
        .binary(env!("CARGO_BIN_EXE_skiff"))
        .log_dirs(dirs)
        .rust_log("warn")
}

fn spawn(data: &Path) -> Broker {
    let b = builder(&[data]).start();
    let ready = b.ready_line();
    assert!(
        ready.starts_with("skiff ready listener=PLAINTEXT bind=127.0.0.1:"),
        "{ready}"
    );
    let port = b.port();
    assert!(port > 0);
    assert!(
        ready.ends_with(&format!("advertised=127.0.0.1:{port}")),
        "{ready}"
    );
    b
}

fn call(
    stream: &mut TcpStream,
    correlation_id: i32,
    version: i16,
    body: impl Into<RequestBody>,
) -> ResponseBody {
    let body = body.into();
    let key = body.api_key();
    let header = RequestHeader {
        request_api_key: key as i16,
        request_api_version: version,
        correlation_id,
        client_id: Some("e2e".into()),
    };
    let mut out = BytesMut::new();
    encode_request(&header, &body, &mut out).unwrap();
    stream.write_all(&out).unwrap();
    let mut size = [0u8; 4];
    stream.read_exact(&mut size).unwrap();
    let mut buf = vec![0u8; i32::from_be_bytes(size) as usize];
    stream.read_exact(&mut buf).unwrap();
    let (h, body) = decode_response(key, version, Bytes::from(buf)).unwrap();
    assert_eq!(h.correlation_id, correlation_id);
    body
}

fn connect(port: u16) -> TcpStream {
    let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(DEADLINE)).unwrap();
    s
}

fn sigterm_and_wait(b: Broker) -> std::process::ExitStatus {
    signal_and_wait(b, "TERM")
}

/// Sends `signal` (a `kill` name such as `INT`) and waits at most 30 s for the exit.
fn signal_and_wait(mut b: Broker, signal: &str) -> std::process::ExitStatus {
    b.signal(signal);
    b.wait_exit(DEADLINE)
}

/// `cluster.id` of a log dir's meta.properties.
fn cluster_id_of(dir: &Path) -> String {
    let text = std::fs::read_to_string(dir.join("meta.properties"))
        .unwrap_or_else(|e| panic!("{}: no meta.properties: {e}", dir.display()));
    text.lines()
        .find_map(|l| l.strip_prefix("cluster.id="))
        .unwrap_or_else(|| panic!("no cluster.id in {text}"))
        .to_string()
}

fn batch(value: &str) -> Bytes {
    let mut b = skiff_record::BatchBuilder::new(skiff_record::BatchOptions::default());
    b.append(1_700_000_000_000, None, Some(value.as_bytes()), &[]);
    Bytes::from(b.build().unwrap())
}

#[test]
fn e2e_serve_ready_sigterm_clean_marker_and_restart() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let b = spawn(&data);
    let mut s = connect(b.port());
    let ResponseBody::ApiVersions(r) = call(&mut s, 1, 3, ApiVersionsRequest::default()) else {
        panic!()
    };
    assert_eq!(r.error_code, 0);
    // Auto-create through Metadata, then produce one record.
    let req = MetadataRequest {
        topics: Some(vec![MetadataRequestTopic {
            name: Some("restart".into()),
            ..MetadataRequestTopic::default()
        }]),
        allow_auto_topic_creation: true,
        ..MetadataRequest::default()
    };
    let ResponseBody::Metadata(r) = call(&mut s, 2, 12, req) else {
        panic!()
    };
    assert_eq!(r.topics[0].error_code, 0);
    assert_eq!(r.brokers[0].port, i32::from(b.port()));
    let req = ProduceRequest {
        acks: -1,
        timeout_ms: 5000,
        topic_data: vec![TopicProduceData {
            name: "restart".into(),
            partition_data: vec![PartitionProduceData {
                index: 0,
                records: Some(Records::Bytes(batch("kept"))),
            }],
        }],
        ..ProduceRequest::default()
    };
    let ResponseBody::Produce(r) = call(&mut s, 3, 11, req) else {
        panic!()
    };
    assert_eq!(r.responses[0].partition_responses[0].error_code, 0);
    drop(s);
    let first_port = b.port();
    let status = sigterm_and_wait(b);
    assert!(status.success(), "exit status {status:?}");
    assert!(
        data.join(".kafka_cleanshutdown").exists(),
        "clean-shutdown marker written"
    );

    // Restart: the record is still there, and the marker was consumed.
    let b = spawn(&data);
    assert!(b.ready_line().contains("listener=PLAINTEXT"));
    let _ = first_port;
    assert!(!data.join(".kafka_cleanshutdown").exists());
    let mut s = connect(b.port());
    let req = ListOffsetsRequest {
        replica_id: -1,
        topics: vec![ListOffsetsTopic {
            name: "restart".into(),
            partitions: vec![ListOffsetsPartition {
                partition_index: 0,
                timestamp: -1,
                ..ListOffsetsPartition::default()
            }],
        }],
        ..ListOffsetsRequest::default()
    };
    let ResponseBody::ListOffsets(r) = call(&mut s, 4, 9, req) else {
        panic!()
    };
    assert_eq!(r.topics[0].partitions[0].offset, 1);
    drop(s);
    assert!(sigterm_and_wait(b).success());
}

#[test]
fn e2e_config_error_exits_2_with_message() {
    let out = Command::new(env!("CARGO_BIN_EXE_skiff"))
        .args(["serve", "--override", "log.retention.hour=5"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("log.retention.hour"), "{err}");
    assert!(
        err.contains("log.retention.hours"),
        "did-you-mean in: {err}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn e2e_sigint_exits_0_with_the_clean_shutdown_marker() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let b = spawn(&data);
    let status = signal_and_wait(b, "INT");
    assert_eq!(status.code(), Some(0), "exit status {status:?}");
    assert!(data.join(".kafka_cleanshutdown").exists());
}

#[test]
fn e2e_log_format_json_writes_json_log_lines() {
    let dir = tempfile::tempdir().unwrap();
    let mut b = builder(&[&dir.path().join("data")])
        .serve_args(&["--log-format", "json"])
        .rust_log("info")
        .start();
    let ready = b.ready_line().to_owned();
    assert!(
        ready.starts_with("skiff ready listener=PLAINTEXT"),
        "{ready}"
    );
    b.signal("TERM");
    let status = b.wait_exit(DEADLINE);
    assert!(status.success(), "{status:?}");
    // The broker's stderr, as the harness keeps it.
    let stderr = b.logs();
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(!lines.is_empty(), "no log lines on stderr");
    for line in &lines {
        let v: serde_json::Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("not a JSON log line ({e}): {line}"));
        assert!(
            v["level"].is_string() && v["timestamp"].is_string(),
            "{line}"
        );
    }
    assert!(
        lines
            .iter()
            .any(|l| l.contains("\"INFO\"") && l.contains("logs loaded")),
        "no INFO startup line in:\n{stderr}"
    );
}

#[test]
fn e2e_every_log_dir_is_formatted_and_another_clusters_dir_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (d1, d2) = (dir.path().join("d1"), dir.path().join("d2"));
    let serve = || builder(&[&d1, &d2]);
    let b = serve().start();
    assert!(signal_and_wait(b, "TERM").success());
    let cluster = cluster_id_of(&d1);
    assert!(!cluster.is_empty());
    assert_eq!(
        cluster_id_of(&d2),
        cluster,
        "one cluster id in every log dir"
    );

    // d2 now says it belongs to another cluster: the broker refuses to start, exit 2.
    let other = std::fs::read_to_string(d2.join("meta.properties"))
        .unwrap()
        .replace(
            &format!("cluster.id={cluster}"),
            "cluster.id=SomeOtherClusterId",
        );
    std::fs::write(d2.join("meta.properties"), &other).unwrap();
    let refused = serve().run_refused();
    let (status, err) = (refused.code, refused.stderr);
    assert_eq!(status, Some(2), "{err}");
    assert!(
        err.contains("belongs to another cluster")
            && err.contains("SomeOtherClusterId")
            && err.contains(&cluster)
            && err.contains(&d2.display().to_string()),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(d2.join("meta.properties")).unwrap(),
        other,
        "the foreign dir is left untouched"
    );
}

/// Group bounds Kafka refuses at start (here a KIP-848 session below
/// `group.consumer.min.session.timeout.ms`) are a configuration error: exit 2, Kafka's message.
#[test]
fn e2e_group_bounds_kafka_refuses_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_skiff"))
        .args(["serve", "--override", "listeners=PLAINTEXT://127.0.0.1:0"])
        .arg("--override")
        .arg(format!("log.dirs={}", dir.path().join("data").display()))
        .args(["--override", "group.consumer.session.timeout.ms=6000"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("group.consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}
