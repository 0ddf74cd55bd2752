//! Table tests of replica placement: the striped spread and its start offset, fenced and
//! shutting-down brokers, replication-factor errors, manual assignments (CreateTopic and
//! CreatePartitions) with Kafka's messages, and one broker giving today's single-node result.

use std::collections::BTreeMap;

use skiff_protocol::{PartitionRecord, TopicRecord};
use skiff_types::ErrorCode;
use uuid::Uuid;

use crate::heartbeat_tests::{change, reg};
use crate::{BrokerHeartbeats, Ctx, MetadataImage, Record, Request, Response, handle, replay};

const T: Uuid = Uuid::from_u128(0x7);
const OLD: Uuid = Uuid::from_u128(0x8);
static HB: BrokerHeartbeats = BrokerHeartbeats::new(0, 9000);

fn ctx(start: usize) -> Ctx<'static> {
    Ctx {
        node_id: 1,
        now_ms: 1000,
        cluster_id: "c",
        next_offset: 100,
        placement_start: start,
        heartbeats: &HB,
    }
}

/// Brokers `unfenced` and `fenced` registered, `cs` unfenced but in controlled shutdown;
/// topic "old" with one partition on [1, 2].
fn cluster(unfenced: &[i32], fenced: &[i32], cs: &[i32]) -> MetadataImage {
    let mut records = Vec::new();
    for &b in unfenced {
        records.push(reg(b, i64::from(b), false));
    }
    for &b in fenced {
        records.push(reg(b, i64::from(b), true));
    }
    for &b in cs {
        records.push(reg(b, i64::from(b), false));
        records.push(change(b, i64::from(b), 0, 1));
    }
    records.push(Record::Topic(TopicRecord {
        name: "old".into(),
        topic_id: OLD,
    }));
    records.push(Record::Partition(PartitionRecord {
        partition_id: 0,
        topic_id: OLD,
        replicas: vec![1, 2],
        isr: vec![1, 2],
        leader: 1,
        leader_epoch: 0,
        partition_epoch: 0,
        ..PartitionRecord::default()
    }));
    replay(&MetadataImage::default(), &records)
}

fn create(partitions: i32, rf: i16, assignments: &[&[i32]]) -> Request {
    Request::CreateTopic {
        name: "t".into(),
        topic_id: T,
        partitions,
        replication_factor: rf,
        assignments: assignments.iter().map(|a| a.to_vec()).collect(),
        configs: BTreeMap::new(),
    }
}

fn grow(total: i32, assignments: &[&[i32]]) -> Request {
    Request::CreatePartitions {
        name: "old".into(),
        total,
        assignments: assignments.iter().map(|a| a.to_vec()).collect(),
    }
}

/// (replicas, isr, leader) of every partition record, checking the image agrees.
fn placed(img: &MetadataImage, req: &Request, start: usize) -> Vec<(Vec<i32>, Vec<i32>, i32)> {
    let (records, response) = handle(img, req, &ctx(start)).unwrap();
    let next = replay(img, &records);
    let topic = match (req, &response) {
        (Request::CreateTopic { name, .. }, Response::Topic(info)) => {
            assert_eq!(next.topic(name), Some(info));
            name.as_str()
        }
        (Request::CreatePartitions { name, total, .. }, Response::Done) => {
            assert_eq!(next.topic(name).map(|t| t.partitions), Some(*total));
            name.as_str()
        }
        _ => panic!("{response:?}"),
    };
    let out: Vec<_> = records
        .iter()
        .filter_map(|r| match r {
            Record::Partition(p) => {
                assert_eq!((p.leader_epoch, p.partition_epoch), (0, 0));
                let reg = next.partition(topic, p.partition_id).unwrap();
                assert_eq!(
                    (&reg.replicas, &reg.isr, reg.leader),
                    (&p.replicas, &p.isr, p.leader)
                );
                Some((p.replicas.clone(), p.isr.clone(), p.leader))
            }
            _ => None,
        })
        .collect();
    out
}

fn p(replicas: &[i32], isr: &[i32], leader: i32) -> (Vec<i32>, Vec<i32>, i32) {
    (replicas.to_vec(), isr.to_vec(), leader)
}

#[test]
fn automatic_placement_table() {
    let four = cluster(&[4, 1, 3, 2], &[], &[]);
    let some_fenced = cluster(&[1, 3], &[2], &[]);
    let shutting = cluster(&[1, 3], &[], &[2]);
    let one = cluster(&[1], &[], &[]);
    let cases: Vec<(&str, &MetadataImage, Request, usize, Vec<_>)> = vec![
        (
            "striped over brokers sorted by id, leader = first replica",
            &four,
            create(4, 2, &[]),
            0,
            vec![
                p(&[1, 2], &[1, 2], 1),
                p(&[2, 3], &[2, 3], 2),
                p(&[3, 4], &[3, 4], 3),
                p(&[4, 1], &[4, 1], 4),
            ],
        ),
        (
            "the start offset rotates the stripe",
            &four,
            create(3, 3, &[]),
            5,
            vec![
                p(&[2, 3, 4], &[2, 3, 4], 2),
                p(&[3, 4, 1], &[3, 4, 1], 3),
                p(&[4, 1, 2], &[4, 1, 2], 4),
            ],
        ),
        (
            "fenced brokers never lead",
            &some_fenced,
            create(2, 2, &[]),
            0,
            vec![p(&[1, 3], &[1, 3], 1), p(&[3, 1], &[3, 1], 3)],
        ),
        (
            "fenced brokers are followers once the unfenced run out, outside the ISR",
            &some_fenced,
            create(2, 3, &[]),
            0,
            vec![p(&[1, 3, 2], &[1, 3], 1), p(&[3, 1, 2], &[3, 1], 3)],
        ),
        (
            "brokers in controlled shutdown are not used",
            &shutting,
            create(3, 2, &[]),
            0,
            vec![
                p(&[1, 3], &[1, 3], 1),
                p(&[3, 1], &[3, 1], 3),
                p(&[1, 3], &[1, 3], 1),
            ],
        ),
        (
            "one broker: every partition on it whatever the start (today's result)",
            &one,
            create(3, 1, &[]),
            usize::MAX,
            vec![p(&[1], &[1], 1), p(&[1], &[1], 1), p(&[1], &[1], 1)],
        ),
        (
            "create partitions: the topic's replication factor (2), ids from 1",
            &four,
            grow(3, &[]),
            1,
            vec![p(&[2, 3], &[2, 3], 2), p(&[3, 4], &[3, 4], 3)],
        ),
    ];
    for (name, img, req, start, want) in cases {
        assert_eq!(placed(img, &req, start), want, "{name}");
    }
    // Partition ids of grown partitions continue the topic's.
    let (records, _) = handle(&four, &grow(3, &[]), &ctx(0)).unwrap();
    let ids: Vec<i32> = records
        .iter()
        .filter_map(|r| match r {
            Record::Partition(p) => Some(p.partition_id),
            _ => None,
        })
        .collect();
    assert_eq!(ids, vec![1, 2]);
}

#[test]
fn manual_assignments_are_honoured() {
    let img = cluster(&[1, 2], &[3], &[]);
    let cases: Vec<(&str, Request, Vec<_>)> = vec![
        (
            "as given, leader = first active replica",
            create(-1, -1, &[&[2, 1], &[1, 2]]),
            vec![p(&[2, 1], &[2, 1], 2), p(&[1, 2], &[1, 2], 1)],
        ),
        (
            "a fenced broker is allowed, out of the ISR, never leader",
            create(-1, -1, &[&[3, 1]]),
            vec![p(&[3, 1], &[1], 1)],
        ),
        (
            "create partitions by hand",
            grow(3, &[&[2, 3], &[1, 2]]),
            vec![p(&[2, 3], &[2], 2), p(&[1, 2], &[1, 2], 1)],
        ),
    ];
    for (name, req, want) in cases {
        assert_eq!(placed(&img, &req, 0), want, "{name}");
    }
}

#[test]
fn placement_errors_with_kafkas_messages() {
    let one = cluster(&[1], &[], &[]);
    let all_fenced = cluster(&[], &[1, 2], &[]);
    let mixed = cluster(&[1, 2], &[3], &[]);
    use ErrorCode::{
        InvalidReplicaAssignment as Ira, InvalidReplicationFactor as Irf, InvalidRequest,
    };
    let cases: Vec<(&MetadataImage, Request, ErrorCode, &str)> = vec![
        (
            &one,
            create(1, 0, &[]),
            Irf,
            "Replication factor must be larger than 0, or -1 to use the default value.",
        ),
        (
            &one,
            create(1, 3, &[]),
            Irf,
            "Unable to replicate the partition 3 time(s): The target replication factor of 3 cannot be reached because only 1 broker(s) are registered.",
        ),
        (
            &all_fenced,
            create(1, 1, &[]),
            Irf,
            "Unable to replicate the partition 1 time(s): All brokers are currently fenced.",
        ),
        (
            &one,
            grow(2, &[]),
            Irf,
            "The target replication factor of 2 cannot be reached because only 1 broker(s) are registered.",
        ),
        (
            &mixed,
            create(1, -1, &[&[1]]),
            InvalidRequest,
            "A manual partition assignment was specified, but numPartitions was not set to -1.",
        ),
        (
            &mixed,
            create(-1, 1, &[&[1]]),
            InvalidRequest,
            "A manual partition assignment was specified, but replication factor was not set to -1.",
        ),
        (
            &mixed,
            create(-1, -1, &[&[]]),
            Ira,
            "The manual partition assignment includes an empty replica list.",
        ),
        (
            &mixed,
            create(-1, -1, &[&[1, 9]]),
            Ira,
            "The manual partition assignment includes broker 9, but no such broker is registered.",
        ),
        (
            &mixed,
            create(-1, -1, &[&[2, 1, 2]]),
            Ira,
            "The manual partition assignment includes the broker 2 more than once.",
        ),
        (
            &mixed,
            create(-1, -1, &[&[9, 1, 1]]),
            Ira,
            "The manual partition assignment includes the broker 1 more than once.",
        ),
        (
            &mixed,
            create(-1, -1, &[&[1, 2], &[1]]),
            Ira,
            "The manual partition assignment includes a partition with 1 replica(s), but this is not consistent with previous partitions, which have 2 replica(s).",
        ),
        (
            &mixed,
            create(-1, -1, &[&[1], &[3]]),
            Ira,
            "All brokers specified in the manual partition assignment for partition 1 are fenced or in controlled shutdown.",
        ),
        (
            &mixed,
            grow(3, &[&[1, 2]]),
            Ira,
            "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified.",
        ),
        (
            &mixed,
            grow(2, &[&[1]]),
            Ira,
            "The manual partition assignment includes a partition with 1 replica(s), but this is not consistent with previous partitions, which have 2 replica(s).",
        ),
        (
            &mixed,
            grow(2, &[&[3, 3]]),
            Ira,
            "The manual partition assignment includes the broker 3 more than once.",
        ),
        (
            &all_fenced,
            grow(3, &[&[1, 2], &[2, 1]]),
            Ira,
            "All brokers specified in the manual partition assignment for partition 1 are fenced or in controlled shutdown.",
        ),
    ];
    for (img, req, code, msg) in cases {
        let e = handle(img, &req, &ctx(0)).unwrap_err();
        assert_eq!(
            (e.error_code(), e.to_string().as_str()),
            (code, msg),
            "{req:?}"
        );
    }
}
