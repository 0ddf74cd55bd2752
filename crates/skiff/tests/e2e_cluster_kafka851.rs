//! KAFKA-851 (issue 17 item 6), as real processes: a follower that starts while its
//! partition's leader is offline keeps the partition, with the HW it had, in its
//! `replication-offset-checkpoint` (Kafka's bug wrote only partitions with a live leader, so
//! a restart lost the follower's HW). Three controller-only voters keep the quorum alive;
//! the partition (RF=2) lives on the two broker-only nodes:
//! - 5 acks=all writes reach both replicas; the follower's checkpoint shows HW 5;
//! - the follower is killed, the ISR shrinks to the leader, 3 more writes; the leader is
//!   killed: the partition is offline;
//! - the follower restarts: it hosts the partition with no leader to fetch from; after the
//!   checkpoint interval (a new topic on it forces a rewrite) its checkpoint still lists the
//!   partition with HW 5;
//! - the leader returns: the follower fetches from its log end (5), catches up to 8 and
//!   rejoins the ISR.
//!
//! Every wait polls with a deadline; per-phase timings are printed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use skiff_protocol::ResponseBody;
use skiff_testkit::client::create_topics_request;
use skiff_testkit::cluster::{Cluster, batch};
use skiff_testkit::{Conn, wait_until};

const TOPIC: &str = "k851";
const BROKERS: [usize; 2] = [3, 4];

/// (leader, isr) of partition 0 of `topic` in node `i`'s Metadata ((-1, []) if not listed).
fn registration(c: &Cluster, i: usize, topic: &str) -> (i32, Vec<i32>) {
    let m = c.metadata(i);
    let Some(p) = m
        .topics
        .iter()
        .find(|t| t.name.as_deref() == Some(topic))
        .and_then(|t| t.partitions.first())
    else {
        return (-1, Vec::new());
    };
    let mut isr = p.isr_nodes.clone();
    isr.sort_unstable();
    (p.leader_id, isr)
}

/// The HW node `i` checkpointed for `topic`-0, if it lists the partition.
fn checkpointed_hw(c: &Cluster, i: usize, topic: &str) -> Option<i64> {
    let path = c
        .temp_dir()
        .join(format!("node-{}", i + 1))
        .join("data")
        .join("replication-offset-checkpoint");
    let text = std::fs::read_to_string(path).ok()?;
    text.lines().skip(2).find_map(|line| {
        let mut f = line.split(' ');
        match (f.next(), f.next(), f.next()) {
            (Some(t), Some("0"), Some(hw)) if t == topic => hw.parse().ok(),
            _ => None,
        }
    })
}

fn create(c: &Cluster, via: usize, topic: &str, rf: i16) {
    let mut req = create_topics_request(topic, 1, &[]);
    req.topics[0].replication_factor = rf;
    let ResponseBody::CreateTopics(r) = Conn::open(c.ports[via].0).call(7, req) else {
        panic!("not a CreateTopics response")
    };
    assert_eq!(r.topics[0].error_code, 0, "{:?}", r.topics[0].error_message);
}

fn produce_at(c: &Cluster, i: usize, value: &str) {
    let port = c.ports[i].0;
    wait_until(
        &format!("{value} acknowledged"),
        Duration::from_secs(10),
        || (Conn::open(port).produce(TOPIC, 0, batch(value)).0 == 0).then_some(()),
    );
}

#[test]
fn e2e_cluster_kafka_851_offline_leader_keeps_the_followers_checkpoint() {
    let t0 = Instant::now();
    let mut c = Cluster::start_roles(
        &["controller", "controller", "controller", "broker", "broker"],
        &[
            ("replica.fetch.backoff.ms", "100"),
            ("replica.high.watermark.checkpoint.interval.ms", "200"),
        ],
    );
    c.wait_brokers(&BROKERS, &[4, 5], Duration::from_secs(30));
    create(&c, 3, TOPIC, 2);
    let (leader, _) = wait_until(
        "the topic led with 2 in sync",
        Duration::from_secs(15),
        || {
            let (l, isr) = registration(&c, 3, TOPIC);
            (l > 0 && isr.len() == 2).then_some((l, isr))
        },
    );
    let l = (leader - 1) as usize;
    let f = if l == 3 { 4 } else { 3 };
    for i in 0..5 {
        produce_at(&c, l, &format!("a{i}"));
    }
    wait_until(
        "the follower checkpointing HW 5",
        Duration::from_secs(10),
        || (checkpointed_hw(&c, f, TOPIC) == Some(5)).then_some(()),
    );
    eprintln!("phase RF=2 on brokers 4+5, 5 writes: {:?}", t0.elapsed());

    // A manual assignment over the registered brokers is honoured (replica order included).
    let mut req = create_topics_request("k851-manual", -1, &[]);
    req.topics[0].replication_factor = -1;
    req.topics[0].assignments = vec![skiff_protocol::CreatableReplicaAssignment {
        partition_index: 0,
        broker_ids: vec![5, 4],
    }];
    let ResponseBody::CreateTopics(r) = Conn::open(c.ports[3].0).call(7, req) else {
        panic!("not a CreateTopics response")
    };
    assert_eq!(r.topics[0].error_code, 0, "{:?}", r.topics[0].error_message);
    wait_until(
        "the manual assignment in Metadata",
        Duration::from_secs(10),
        || {
            let m = c.metadata(3);
            let p = m
                .topics
                .iter()
                .find(|t| t.name.as_deref() == Some("k851-manual"))?
                .partitions
                .first()?
                .clone();
            (p.replica_nodes == vec![5, 4] && p.leader_id == 5).then_some(())
        },
    );

    // CreatePartitions by hand too (through the controller: the broker forwards it).
    let req = skiff_protocol::CreatePartitionsRequest {
        topics: vec![skiff_protocol::CreatePartitionsTopic {
            name: "k851-manual".into(),
            count: 2,
            assignments: Some(vec![skiff_protocol::CreatePartitionsAssignment {
                broker_ids: vec![4, 5],
            }]),
        }],
        timeout_ms: 10_000,
        validate_only: false,
    };
    let ResponseBody::CreatePartitions(r) = Conn::open(c.ports[4].0).call(3, req) else {
        panic!("not a CreatePartitions response")
    };
    assert_eq!(
        r.results[0].error_code, 0,
        "{:?}",
        r.results[0].error_message
    );
    wait_until(
        "the new partition placed by hand",
        Duration::from_secs(10),
        || {
            let m = c.metadata(4);
            let p = m
                .topics
                .iter()
                .find(|t| t.name.as_deref() == Some("k851-manual"))?
                .partitions
                .iter()
                .find(|p| p.partition_index == 1)?
                .clone();
            (p.replica_nodes == vec![4, 5]).then_some(())
        },
    );

    // The follower dies; the leader goes on alone, then dies too: the partition is offline.
    let t = Instant::now();
    c.nodes[f].kill9();
    wait_until(
        "the ISR shrunk to the leader",
        Duration::from_secs(15),
        || (registration(&c, 0, TOPIC).1 == vec![leader]).then_some(()),
    );
    for i in 0..3 {
        produce_at(&c, l, &format!("b{i}"));
    }
    c.nodes[l].kill9();
    wait_until("the partition offline", Duration::from_secs(15), || {
        (registration(&c, 0, TOPIC).0 == -1).then_some(())
    });
    eprintln!("phase follower then leader killed: {:?}", t.elapsed());

    // The follower restarts while the leader is offline; a new topic on it forces its
    // checkpoint to be rewritten after the interval: the offline-led partition stays, HW 5.
    let t = Instant::now();
    c.nodes[f].restart();
    c.wait_brokers(&[f], &[(f + 1) as i32], Duration::from_secs(30));
    create(&c, f, "k851-other", 1);
    wait_until(
        "the follower checkpointing the new topic",
        Duration::from_secs(10),
        || checkpointed_hw(&c, f, "k851-other").map(|_| ()),
    );
    assert_eq!(
        checkpointed_hw(&c, f, TOPIC),
        Some(5),
        "KAFKA-851: the follower's checkpoint lost the partition whose leader is offline"
    );
    eprintln!(
        "phase follower restarted with the leader offline: {:?}",
        t.elapsed()
    );

    // The leader returns; the follower fetches from its log end and catches up.
    let t = Instant::now();
    c.nodes[l].restart();
    wait_until(
        "the follower back in the ISR",
        Duration::from_secs(20),
        || {
            let (ld, isr) = registration(&c, 0, TOPIC);
            (ld == leader && isr.len() == 2).then_some(())
        },
    );
    wait_until(
        "the follower checkpointing HW 8",
        Duration::from_secs(10),
        || (checkpointed_hw(&c, f, TOPIC) == Some(8)).then_some(()),
    );
    assert!(
        !c.nodes[f].logs().contains("restarting the log there"),
        "the follower fetched from scratch"
    );
    eprintln!("phase leader back, follower caught up: {:?}", t.elapsed());

    for n in &mut c.nodes {
        assert!(n.sigterm().success());
    }
    eprintln!("total: {:?}", t0.elapsed());
}
