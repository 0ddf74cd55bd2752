//! Table tests of AlterPartition at the controller (`controller/alter_partition.rs`): every
//! error code with the rule that picks it, the record of an accepted change, no record for
//! an unchanged ISR, and "handle then replay" giving exactly the answered state (the new ISR,
//! the partition epoch bumped, the leader and its epoch unchanged but in Skiff's hand-over).

use skiff_protocol::{PartitionChangeRecord, PartitionRecord, TopicRecord};
use skiff_types::ErrorCode;
use uuid::Uuid;

use crate::heartbeat_tests::{change, reg};
use crate::{
    BrokerHeartbeats, Ctx, IsrChange, IsrChangeResult, IsrState, IsrTopic, IsrTopicResult,
    MetadataImage, NO_LEADER_CHANGE, Record, Request, Response, TopicRef, handle, replay,
};

const T: Uuid = Uuid::from_u128(0x7);
const UNKNOWN: Uuid = Uuid::from_u128(0x99);
const CTX: Ctx<'static> = Ctx {
    node_id: 1,
    now_ms: 1_700_000_000_000,
    cluster_id: "c",
    next_offset: 100,
    placement_start: 0,
    heartbeats: &BrokerHeartbeats::new(0, 9000),
};

fn part(p: i32, replicas: &[i32], isr: &[i32], leader: i32, epochs: (i32, i32), lrs: i8) -> Record {
    Record::Partition(PartitionRecord {
        partition_id: p,
        topic_id: T,
        replicas: replicas.to_vec(),
        isr: isr.to_vec(),
        leader,
        leader_epoch: epochs.0,
        partition_epoch: epochs.1,
        leader_recovery_state: lrs,
        ..PartitionRecord::default()
    })
}

/// Topic "t": p0 replicas [1,2,3], ISR [1,2,3], leader 1, leader epoch 5, partition epoch 7;
/// p1 led by 2; p2 replicas [1,2], ISR [1], leader 1 recovering (after an unclean election);
/// p3 replicas [1,2,4,5,6], ISR [1], leader 1. Brokers 1, 2, 3 unfenced at epochs 10, 20,
/// 30; 4 fenced (40); 5 in controlled shutdown (50); 6 never registered.
fn image() -> MetadataImage {
    replay(
        &MetadataImage::default(),
        &[
            reg(1, 10, false),
            reg(2, 20, false),
            reg(3, 30, false),
            reg(4, 40, true),
            reg(5, 50, false),
            change(5, 50, 0, 1),
            Record::Topic(TopicRecord {
                name: "t".into(),
                topic_id: T,
            }),
            part(0, &[1, 2, 3], &[1, 2, 3], 1, (5, 7), 0),
            part(1, &[1, 2, 3], &[1, 2, 3], 2, (0, 0), 0),
            part(2, &[1, 2], &[1], 1, (0, 0), 1),
            part(3, &[1, 2, 4, 5, 6], &[1], 1, (0, 0), 0),
        ],
    )
}

/// A change with broker epochs checked (v3 shape).
fn chg(p: i32, epochs: (i32, i32), isr: &[(i32, i64)]) -> IsrChange {
    IsrChange {
        partition: p,
        leader_epoch: epochs.0,
        partition_epoch: epochs.1,
        new_isr: isr.to_vec(),
        leader_recovery_state: 0,
    }
}

/// `ids` at their registered epochs (broker `i` is at `10 * i`).
fn at(ids: &[i32]) -> Vec<(i32, i64)> {
    ids.iter().map(|i| (*i, i64::from(*i) * 10)).collect()
}

fn p0(isr: &[i32]) -> IsrChange {
    chg(0, (5, 7), &at(isr))
}

fn by_id(changes: Vec<IsrChange>) -> Request {
    on(TopicRef::Id(T), changes)
}

fn on(topic: TopicRef, changes: Vec<IsrChange>) -> Request {
    Request::AlterPartition {
        broker_id: 1,
        broker_epoch: 10,
        topics: vec![IsrTopic {
            topic,
            partitions: changes,
        }],
    }
}

fn isr_record(p: i32, isr: Option<&[i32]>, lrs: i8) -> Record {
    Record::PartitionChange(PartitionChangeRecord {
        partition_id: p,
        topic_id: T,
        isr: isr.map(<[i32]>::to_vec),
        leader: NO_LEADER_CHANGE,
        leader_recovery_state: lrs,
        ..PartitionChangeRecord::default()
    })
}

fn ok(
    leader_epoch: i32,
    isr: &[i32],
    partition_epoch: i32,
    lrs: i8,
) -> Result<IsrState, ErrorCode> {
    Ok(IsrState {
        leader: 1,
        leader_epoch,
        isr: isr.to_vec(),
        leader_recovery_state: lrs,
        partition_epoch,
    })
}

enum Expect {
    /// The whole request refused.
    Refused(ErrorCode),
    /// Records, then per partition of the one topic (index, answer).
    Answered(Vec<Record>, Vec<(i32, Result<IsrState, ErrorCode>)>),
}
use Expect::{Answered, Refused};

fn err(p: i32, code: ErrorCode) -> Expect {
    Answered(vec![], vec![(p, Err(code))])
}

fn cases() -> Vec<(&'static str, Request, Expect)> {
    use ErrorCode as E;
    let requester = |broker_id, broker_epoch| Request::AlterPartition {
        broker_id,
        broker_epoch,
        topics: vec![IsrTopic {
            topic: TopicRef::Id(T),
            partitions: vec![p0(&[1, 2])],
        }],
    };
    let mut recovering = chg(2, (0, 0), &at(&[1, 2]));
    recovering.leader_recovery_state = 1;
    let mut to_recovering = p0(&[1]);
    to_recovering.leader_recovery_state = 1;
    let mut bad_state = p0(&[1, 2]);
    bad_state.leader_recovery_state = 2;
    let mut recovered = chg(2, (0, 0), &at(&[1]));
    recovered.leader_recovery_state = 0;
    vec![
        // The requester.
        (
            "requester at a stale epoch",
            requester(1, 9),
            Refused(E::StaleBrokerEpoch),
        ),
        (
            "requester not registered",
            requester(6, 60),
            Refused(E::StaleBrokerEpoch),
        ),
        // Topics and partitions.
        (
            "unknown topic id: every partition listed",
            on(
                TopicRef::Id(UNKNOWN),
                vec![p0(&[1]), chg(1, (0, 0), &at(&[1]))],
            ),
            Answered(
                vec![],
                vec![(0, Err(E::UnknownTopicId)), (1, Err(E::UnknownTopicId))],
            ),
        ),
        (
            "nil topic id",
            on(TopicRef::Id(Uuid::nil()), vec![p0(&[1])]),
            err(0, E::UnknownTopicId),
        ),
        (
            "unknown topic name (v0-1)",
            on(TopicRef::Name("nope".into()), vec![p0(&[1])]),
            err(0, E::UnknownTopicOrPartition),
        ),
        (
            "unknown partition",
            by_id(vec![chg(9, (0, 0), &at(&[1]))]),
            err(9, E::UnknownTopicOrPartition),
        ),
        // Epochs and leadership, in Kafka's order.
        (
            "leader epoch ahead",
            by_id(vec![chg(0, (6, 7), &at(&[1]))]),
            err(0, E::NotController),
        ),
        (
            "partition epoch ahead",
            by_id(vec![chg(0, (5, 8), &at(&[1]))]),
            err(0, E::NotController),
        ),
        (
            "leader epoch behind",
            by_id(vec![chg(0, (4, 7), &at(&[1]))]),
            err(0, E::FencedLeaderEpoch),
        ),
        (
            "not the leader",
            by_id(vec![chg(1, (0, 0), &at(&[1, 2]))]),
            err(1, E::InvalidRequest),
        ),
        (
            "not the leader, epoch behind: fenced first",
            by_id(vec![chg(1, (-1, 0), &at(&[1]))]),
            err(1, E::FencedLeaderEpoch),
        ),
        (
            "partition epoch behind",
            by_id(vec![chg(0, (5, 6), &at(&[1, 2]))]),
            err(0, E::InvalidUpdateVersion),
        ),
        // The new ISR's shape.
        (
            "ISR outside the replicas",
            by_id(vec![p0(&[1, 4])]),
            err(0, E::InvalidRequest),
        ),
        (
            "ISR with a duplicate",
            by_id(vec![chg(0, (5, 7), &[(1, 10), (2, 20), (1, 10)])]),
            err(0, E::InvalidRequest),
        ),
        (
            "ISR with a negative id",
            by_id(vec![chg(0, (5, 7), &[(1, 10), (-1, -1)])]),
            err(0, E::InvalidRequest),
        ),
        ("empty ISR", by_id(vec![p0(&[])]), err(0, E::InvalidRequest)),
        // Skiff's hand-over (Kafka: INVALID_REQUEST): the first replica of the new ISR leads.
        (
            "ISR without the leader: a hand-over",
            by_id(vec![p0(&[3, 2])]),
            Answered(
                vec![Record::PartitionChange(PartitionChangeRecord {
                    partition_id: 0,
                    topic_id: T,
                    isr: Some(vec![3, 2]),
                    leader: 2,
                    leader_recovery_state: -1,
                    ..PartitionChangeRecord::default()
                })],
                vec![(
                    0,
                    Ok(IsrState {
                        leader: 2,
                        leader_epoch: 6,
                        isr: vec![3, 2],
                        leader_recovery_state: 0,
                        partition_epoch: 8,
                    }),
                )],
            ),
        ),
        (
            "a hand-over to a fenced member",
            by_id(vec![chg(3, (0, 0), &at(&[4]))]),
            err(3, E::IneligibleReplica),
        ),
        (
            "recovering with two members",
            by_id(vec![recovering]),
            err(2, E::InvalidRequest),
        ),
        (
            "recovered back to recovering",
            by_id(vec![to_recovering]),
            err(0, E::InvalidRequest),
        ),
        (
            "recovery state 2",
            by_id(vec![bad_state]),
            err(0, E::InvalidRequest),
        ),
        // Members that may not be in an ISR.
        (
            "a fenced member",
            by_id(vec![chg(3, (0, 0), &at(&[1, 4]))]),
            err(3, E::IneligibleReplica),
        ),
        (
            "a member in controlled shutdown",
            by_id(vec![chg(3, (0, 0), &at(&[1, 5]))]),
            err(3, E::IneligibleReplica),
        ),
        (
            "an unregistered member",
            by_id(vec![chg(3, (0, 0), &[(1, 10), (6, -1)])]),
            err(3, E::IneligibleReplica),
        ),
        (
            "a member at another epoch (v3)",
            by_id(vec![chg(0, (5, 7), &[(1, 10), (2, 21)])]),
            err(0, E::IneligibleReplica),
        ),
        (
            "ineligible by name (v0-1)",
            on(
                TopicRef::Name("t".into()),
                vec![chg(3, (0, 0), &[(1, -1), (4, -1)])],
            ),
            err(3, E::OperationNotAttempted),
        ),
        // Accepted changes.
        (
            "shrink: the ISR only, leader epoch kept, partition epoch bumped",
            by_id(vec![p0(&[1, 2])]),
            Answered(
                vec![isr_record(0, Some(&[1, 2]), -1)],
                vec![(0, ok(5, &[1, 2], 8, 0))],
            ),
        ),
        (
            "expand, broker epochs unchecked (v0-2)",
            on(
                TopicRef::Name("t".into()),
                vec![chg(3, (0, 0), &[(1, -1), (2, -1)])],
            ),
            Answered(
                vec![isr_record(3, Some(&[1, 2]), -1)],
                vec![(3, ok(0, &[1, 2], 1, 0))],
            ),
        ),
        (
            "the same ISR: no record, the current state",
            by_id(vec![p0(&[1, 2, 3])]),
            Answered(vec![], vec![(0, ok(5, &[1, 2, 3], 7, 0))]),
        ),
        (
            "the same members in another order is a change (Kafka compares lists)",
            by_id(vec![p0(&[2, 1, 3])]),
            Answered(
                vec![isr_record(0, Some(&[2, 1, 3]), -1)],
                vec![(0, ok(5, &[2, 1, 3], 8, 0))],
            ),
        ),
        (
            "recovered after an unclean election: the state only",
            by_id(vec![recovered]),
            Answered(vec![isr_record(2, None, 0)], vec![(2, ok(0, &[1], 1, 0))]),
        ),
        (
            "errors and changes mixed: records for the accepted ones only",
            by_id(vec![
                chg(1, (0, 0), &at(&[1])),
                p0(&[1, 3]),
                chg(3, (0, 0), &at(&[1, 4])),
            ]),
            Answered(
                vec![isr_record(0, Some(&[1, 3]), -1)],
                vec![
                    (1, Err(E::InvalidRequest)),
                    (0, ok(5, &[1, 3], 8, 0)),
                    (3, Err(E::IneligibleReplica)),
                ],
            ),
        ),
        (
            "a partition listed twice: the second is checked against the first's change",
            by_id(vec![p0(&[1, 2]), p0(&[1]), chg(0, (5, 8), &at(&[1]))]),
            Answered(
                vec![
                    isr_record(0, Some(&[1, 2]), -1),
                    isr_record(0, Some(&[1]), -1),
                ],
                vec![
                    (0, ok(5, &[1, 2], 8, 0)),
                    (0, Err(E::InvalidUpdateVersion)),
                    (0, ok(5, &[1], 9, 0)),
                ],
            ),
        ),
    ]
}

#[test]
fn alter_partition_table() {
    let image = image();
    for (name, request, expect) in cases() {
        let got = handle(&image, &request, &CTX);
        match (got, expect) {
            (Err(e), Refused(code)) => assert_eq!(e.error_code(), code, "{name}: {e}"),
            (Ok((records, Response::AlterPartition(topics))), Answered(want_records, want)) => {
                assert_eq!(records, want_records, "{name}: records");
                let Request::AlterPartition { topics: asked, .. } = &request else {
                    unreachable!()
                };
                let want = IsrTopicResult {
                    topic: asked[0].topic.clone(),
                    partitions: want
                        .into_iter()
                        .map(|(partition, result)| IsrChangeResult { partition, result })
                        .collect(),
                };
                assert_eq!(topics, vec![want], "{name}: answer");
            }
            (got, _) => panic!("{name}: unexpected {got:?}"),
        }
    }
}

/// Replaying an accepted change exposes exactly the answered state: the new ISR, the leader
/// and its epoch unchanged, the partition epoch one up per record.
#[test]
fn handle_then_replay_gives_the_answered_state() {
    let image = image();
    let mut checked = 0;
    for (name, request, _) in cases() {
        let Ok((records, Response::AlterPartition(topics))) = handle(&image, &request, &CTX) else {
            continue;
        };
        let next = replay(&image, &records);
        for t in &topics {
            // The last answer per partition is what the image ends with.
            for (i, r) in t.partitions.iter().enumerate() {
                let later = t.partitions[i + 1..]
                    .iter()
                    .any(|l| l.partition == r.partition && l.result.is_ok());
                let (Ok(state), false) = (&r.result, later) else {
                    continue;
                };
                let before = image.partition("t", r.partition).unwrap();
                let after = next.partition("t", r.partition).unwrap();
                assert_eq!(&after.isr, &state.isr, "{name}");
                assert_eq!(after.partition_epoch, state.partition_epoch, "{name}");
                assert_eq!(
                    after.leader_recovery_state, state.leader_recovery_state,
                    "{name}"
                );
                assert_eq!(
                    (after.leader, after.leader_epoch),
                    (state.leader, state.leader_epoch),
                    "{name}"
                );
                // Unchanged, but in a hand-over (the leader left the ISR): one election.
                let handed_over = !state.isr.contains(&before.leader);
                assert_eq!(
                    (after.leader != before.leader, after.leader_epoch),
                    (handed_over, before.leader_epoch + i32::from(handed_over)),
                    "{name}"
                );
                let changes = records
                    .iter()
                    .filter(|rec| matches!(rec, Record::PartitionChange(c) if c.partition_id == r.partition))
                    .count() as i32;
                assert_eq!(
                    after.partition_epoch,
                    before.partition_epoch + changes,
                    "{name}"
                );
                assert_eq!(after.replicas, before.replicas, "{name}");
                checked += 1;
            }
        }
        // A refused partition is untouched.
        for t in &topics {
            for r in t.partitions.iter().filter(|r| r.result.is_err()) {
                if !records.iter().any(|rec| matches!(rec, Record::PartitionChange(c) if c.partition_id == r.partition)) {
                    assert_eq!(next.partition("t", r.partition), image.partition("t", r.partition), "{name}");
                }
            }
        }
    }
    assert_eq!(checked, 8, "every accepted partition was checked");
}

/// The records encode and decode as KRaft frames (the ISR and the recovery state survive).
#[test]
fn alter_partition_records_round_trip() {
    let (records, _) = handle(&image(), &by_id(vec![p0(&[1, 2])]), &CTX).unwrap();
    for r in records {
        assert_eq!(Record::decode(r.encode().unwrap()).unwrap(), Some(r));
    }
}
