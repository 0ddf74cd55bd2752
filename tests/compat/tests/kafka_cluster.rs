//! The 3-node Apache Kafka reference cluster (issue 14 item 1), the oracle for the cluster
//! issues (#16 quorum, #17 replication): `scripts/kafka-reference.sh format-cluster` /
//! `start-cluster` bring up three combined broker + controller nodes with static voters, and
//! this test checks that they form the cluster the later differential tests need:
//! - the metadata quorum has three voters and a leader (`kafka-metadata-quorum describe --status`);
//! - a topic of replication factor 3 gets every partition's ISR full (polled with a deadline);
//! - records produced with acks=all (min.insync.replicas=2) through kcat read back in order;
//! - after node 3's controlled shutdown, node 3 leaves every ISR and leads nothing, and acks=all
//!   produce still succeeds with two in-sync replicas; every record reads back.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use skiff_compat::{KafkaCluster, kafka_tool, kcat};

const TOPIC: &str = "replicated";
const DEADLINE: Duration = Duration::from_secs(45);

/// Partition -> (leader, ISR) from `kafka-topics --describe`.
fn describe(bootstrap: &str) -> BTreeMap<u32, (String, Vec<u32>)> {
    let out = kafka_tool(
        "org.apache.kafka.tools.TopicCommand",
        &[
            "--bootstrap-server",
            bootstrap,
            "--describe",
            "--topic",
            TOPIC,
        ],
    );
    out.assert_success("kafka-topics --describe");
    let mut parts = BTreeMap::new();
    for line in out.stdout.lines().filter(|l| l.contains("Partition:")) {
        let field = |name: &str| -> String {
            let fields: Vec<&str> = line.split('\t').map(str::trim).collect();
            fields
                .iter()
                .find_map(|f| f.strip_prefix(name))
                .map(|v| v.trim().to_string())
                .unwrap_or_else(|| panic!("no {name} in {line:?}"))
        };
        let isr: Vec<u32> = field("Isr:")
            .split(',')
            .filter(|s| !s.is_empty())
            .map(|s| s.parse().unwrap())
            .collect();
        parts.insert(
            field("Partition:").parse().unwrap(),
            (field("Leader:"), isr),
        );
    }
    parts
}

/// Polls `describe` until `ok` holds for every partition of the three; panics at the deadline.
fn await_partitions(bootstrap: &str, what: &str, ok: impl Fn(&str, &[u32]) -> bool) {
    let start = Instant::now();
    loop {
        let parts = describe(bootstrap);
        if parts.len() == 3 && parts.values().all(|(l, isr)| ok(l, isr)) {
            println!("{what}: {parts:?} after {:?}", start.elapsed());
            return;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "{what}: not reached in {DEADLINE:?}: {parts:?}"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

fn produce(bootstrap: &str, from: usize, to: usize) {
    let input: String = (from..to).map(|i| format!("k{i}:v{i}\n")).collect();
    kcat(
        &[
            "-P", "-b", bootstrap, "-t", TOPIC, "-K", ":", "-X", "acks=all", "-p", "0",
        ],
        input.as_bytes(),
    )
    .assert_success("kcat produce (acks=all)");
}

fn consume_all(bootstrap: &str) -> Vec<String> {
    let out = kcat(
        &[
            "-C",
            "-b",
            bootstrap,
            "-t",
            TOPIC,
            "-p",
            "0",
            "-o",
            "beginning",
            "-e",
            "-q",
            "-f",
            "%k:%s\n",
        ],
        b"",
    );
    out.assert_success("kcat consume");
    out.stdout.lines().map(str::to_string).collect()
}

#[test]
fn kafka_reference_cluster_of_three_replicates_and_survives_a_controlled_shutdown() {
    let t0 = Instant::now();
    let cluster = KafkaCluster::start(3);
    println!("phase: cluster formatted and started in {:?}", t0.elapsed());
    let all = cluster.bootstrap();

    let quorum = kafka_tool(
        "org.apache.kafka.tools.MetadataQuorumCommand",
        &["--bootstrap-server", &all, "describe", "--status"],
    );
    quorum.assert_success("kafka-metadata-quorum describe --status");
    let voters = quorum
        .stdout
        .lines()
        .find(|l| l.starts_with("CurrentVoters:"))
        .unwrap_or_else(|| panic!("no CurrentVoters in {}", quorum.stdout));
    for id in 1..=3 {
        assert!(
            voters.contains(&format!("\"id\": {id},")),
            "voter {id}: {voters}"
        );
    }
    assert!(
        quorum.stdout.lines().any(|l| l.starts_with("LeaderId:")),
        "no quorum leader: {}",
        quorum.stdout
    );

    kafka_tool(
        "org.apache.kafka.tools.TopicCommand",
        &[
            "--bootstrap-server",
            &all,
            "--create",
            "--topic",
            TOPIC,
            "--partitions",
            "3",
            "--replication-factor",
            "3",
            "--config",
            "min.insync.replicas=2",
        ],
    )
    .assert_success("kafka-topics --create (RF 3)");
    await_partitions(&all, "every ISR full", |_, isr| isr.len() == 3);
    println!("phase: RF-3 topic in sync at {:?}", t0.elapsed());

    produce(&all, 0, 30);
    let expected: Vec<String> = (0..30).map(|i| format!("k{i}:v{i}")).collect();
    assert_eq!(consume_all(&all), expected);

    cluster.stop_node(3);
    let survivors = format!(
        "{},{}",
        cluster.node_bootstrap(1),
        cluster.node_bootstrap(2)
    );
    await_partitions(&survivors, "node 3 out of every ISR", |leader, isr| {
        isr.len() == 2 && !isr.contains(&3) && leader != "3" && leader != "none"
    });
    println!("phase: node 3 stopped, ISRs shrunk at {:?}", t0.elapsed());
    produce(&survivors, 30, 60);
    let expected: Vec<String> = (0..60).map(|i| format!("k{i}:v{i}")).collect();
    assert_eq!(consume_all(&survivors), expected);
    println!("phase: done at {:?}", t0.elapsed());
}
