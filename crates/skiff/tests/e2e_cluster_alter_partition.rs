//! AlterPartition at the active controller (issue 17), over TCP against 3 real `skiff serve`
//! processes, a topic with replication factor 3:
//! - the partition's leader, at its broker epoch (as the controller answered its
//!   registration), shrinks the ISR to 2 replicas through the active controller's CONTROLLER
//!   port (v3, each member at its broker epoch): NONE, the leader and its epoch unchanged,
//!   the partition epoch 0 -> 1; every node's Metadata then shows the new ISR;
//! - the same request again, now at a stale partition epoch: INVALID_UPDATE_VERSION (95);
//! - a stale broker epoch: STALE_BROKER_EPOCH (77) for the whole request; a voter that is not
//!   the active controller: NOT_CONTROLLER (41).
//!
//! The leader's own AlterPartition (a caught-up follower rejoining on its next fetch) could
//! undo the shrink; followers' idle fetches wait 10 s here, far longer than the checks.
//!
//! Every wait polls with a deadline; per-phase timings are printed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use skiff_protocol::{
    AlterPartitionRequest, AlterPartitionRequestPartitionData, AlterPartitionRequestTopicData,
    AlterPartitionResponse, BrokerState, MetadataResponse, MetadataResponseTopic, ResponseBody,
};
use skiff_testkit::Conn;
use skiff_testkit::client::create_topics_request;
use skiff_testkit::cluster::Cluster;

const TOPIC: &str = "isr";
const NOT_CONTROLLER: i16 = 41;
const STALE_BROKER_EPOCH: i16 = 77;
const INVALID_UPDATE_VERSION: i16 = 95;

/// ([`TOPIC`], leader, leader epoch, ISR) of its partition 0 in `m`.
fn partition0(m: &MetadataResponse) -> Option<(&MetadataResponseTopic, i32, i32, Vec<i32>)> {
    let t = m.topics.iter().find(|t| t.name.as_deref() == Some(TOPIC))?;
    let p = t.partitions.iter().find(|p| p.partition_index == 0)?;
    Some((t, p.leader_id, p.leader_epoch, p.isr_nodes.clone()))
}

/// AlterPartition v3 to `port`: `broker` at `broker_epoch` sets partition 0 of `topic` (by
/// id) to `isr`.
fn alter(
    port: u16,
    (broker, broker_epoch): (i32, i64),
    topic: &MetadataResponseTopic,
    (leader_epoch, partition_epoch): (i32, i32),
    isr: &[(i32, i64)],
) -> AlterPartitionResponse {
    let req = AlterPartitionRequest {
        broker_id: broker,
        broker_epoch,
        topics: vec![AlterPartitionRequestTopicData {
            topic_id: topic.topic_id,
            partitions: vec![AlterPartitionRequestPartitionData {
                partition_index: 0,
                leader_epoch,
                partition_epoch,
                new_isr_with_epochs: isr
                    .iter()
                    .map(|(broker_id, broker_epoch)| BrokerState {
                        broker_id: *broker_id,
                        broker_epoch: *broker_epoch,
                    })
                    .collect(),
                ..AlterPartitionRequestPartitionData::default()
            }],
            ..AlterPartitionRequestTopicData::default()
        }],
    };
    match Conn::open(port).call(3, req) {
        ResponseBody::AlterPartition(r) => r,
        other => panic!("AlterPartition answered {other:?}"),
    }
}

#[test]
fn e2e_cluster_alter_partition_shrinks_the_isr_at_the_controller() {
    let t0 = Instant::now();
    // A leader that replicates re-adds a caught-up follower on its next fetch (Kafka does
    // too); idle followers' fetches wait 10 s, so the shrunk ISR stays while it is checked.
    let c = Cluster::start(3, &[("replica.fetch.wait.max.ms", "10000")]);
    c.wait_brokers(&[0, 1, 2], &[1, 2, 3], Duration::from_secs(30));
    eprintln!("phase start+register: {:?}", t0.elapsed());

    let t = Instant::now();
    let mut req = create_topics_request(TOPIC, 1, &[]);
    req.topics[0].replication_factor = 3;
    let ResponseBody::CreateTopics(r) = Conn::open(c.ports[0].0).call(7, req) else {
        panic!("not a CreateTopics response")
    };
    assert_eq!(r.topics[0].error_code, 0, "{:?}", r.topics[0].error_message);
    let m = c.wait_metadata(
        0,
        Duration::from_secs(15),
        "the topic led by an ISR of 3",
        |m| partition0(m).is_some_and(|(_, leader, _, isr)| leader > 0 && isr.len() == 3),
    );
    let (topic, leader, leader_epoch, isr) = partition0(&m).unwrap();
    let controller = m.controller_id;
    assert!((1..=3).contains(&controller), "controller {controller}");
    let cport = c.ports[(controller - 1) as usize].1;
    let epochs: Vec<i64> = (0..3).map(|i| c.broker_epoch(i)).collect();
    let epoch_of = |id: i32| epochs[(id - 1) as usize];
    eprintln!(
        "phase topic: leader {leader} (epoch {leader_epoch}), ISR {isr:?}, controller \
         {controller}, broker epochs {epochs:?}: {:?}",
        t.elapsed()
    );

    // The leader shrinks the ISR to itself and one follower (in the current ISR's order).
    let t = Instant::now();
    let follower = *isr.iter().find(|r| **r != leader).unwrap();
    let new_isr: Vec<i32> = isr
        .iter()
        .copied()
        .filter(|r| *r == leader || *r == follower)
        .collect();
    let with_epochs: Vec<(i32, i64)> = new_isr.iter().map(|r| (*r, epoch_of(*r))).collect();
    let me = (leader, epoch_of(leader));
    let r = alter(cport, me, topic, (leader_epoch, 0), &with_epochs);
    assert_eq!(r.error_code, 0, "{r:?}");
    assert_eq!(r.topics.len(), 1, "{r:?}");
    assert_eq!(r.topics[0].topic_id, topic.topic_id, "the topic id echoed");
    let p = &r.topics[0].partitions[0];
    assert_eq!(
        (p.partition_index, p.error_code, p.leader_id, p.leader_epoch),
        (0, 0, leader, leader_epoch),
        "accepted, leader and leader epoch unchanged: {r:?}"
    );
    assert_eq!(p.isr, new_isr, "{r:?}");
    assert_eq!(
        p.partition_epoch, 1,
        "the partition epoch bumped once: {r:?}"
    );
    assert_eq!(p.leader_recovery_state, 0, "{r:?}");
    for i in 0..3 {
        c.wait_metadata(i, Duration::from_secs(10), "the shrunk ISR", |m| {
            partition0(m).is_some_and(|(_, l, le, isr)| {
                (l, le, isr.as_slice()) == (leader, leader_epoch, new_isr.as_slice())
            })
        });
    }
    eprintln!(
        "phase ISR {isr:?} -> {new_isr:?}, seen by every node: {:?}",
        t.elapsed()
    );

    // Refusals: the same change at the old partition epoch, a stale broker epoch, a voter
    // that is not the active controller. None of them changes the ISR.
    let t = Instant::now();
    let r = alter(cport, me, topic, (leader_epoch, 0), &with_epochs);
    assert_eq!(r.error_code, 0, "{r:?}");
    assert_eq!(
        r.topics[0].partitions[0].error_code, INVALID_UPDATE_VERSION,
        "a stale partition epoch: {r:?}"
    );
    let r = alter(
        cport,
        (leader, me.1 - 1),
        topic,
        (leader_epoch, 1),
        &with_epochs,
    );
    assert_eq!(r.error_code, STALE_BROKER_EPOCH, "{r:?}");
    assert!(r.topics.is_empty(), "{r:?}");
    let other = (0..3).find(|i| *i as i32 + 1 != controller).unwrap();
    let r = alter(c.ports[other].1, me, topic, (leader_epoch, 1), &with_epochs);
    assert_eq!(
        r.error_code,
        NOT_CONTROLLER,
        "node {} answered {r:?}",
        other + 1
    );
    let m = c.metadata((controller - 1) as usize);
    assert_eq!(
        partition0(&m).map(|p| p.3),
        Some(new_isr.clone()),
        "the refusals changed nothing"
    );
    eprintln!("phase refusals: {:?}", t.elapsed());
}
