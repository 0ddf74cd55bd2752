//! AlterPartition at the active controller: a partition leader asks to change its ISR (Kafka
//! 4.x's `ReplicationControlManager.alterPartition` with `PartitionChangeBuilder`, metadata
//! version 4.0-IV0: no ELR, no leader-epoch bump on an ISR shrink).
//!
//! Mental model: the leader broker keeps the ISR; the controller only checks that the leader
//! is who it claims to be, that it saw the latest registration of the partition, and that
//! every broker it puts in the ISR may be there, then writes the new ISR as a
//! `PartitionChangeRecord`. The request is answered per partition, each with its own error
//! or the partition's state once the change is replayed; only a stale requester fails the
//! whole request.
//!
//! Rules, in Kafka's order:
//! - The requester must be registered at `broker_epoch` (else STALE_BROKER_EPOCH, the whole
//!   request, no records; Kafka's `ClusterControlManager.checkBrokerEpoch`).
//! - Per topic: unknown -> UNKNOWN_TOPIC_ID when named by id (v2+), UNKNOWN_TOPIC_OR_PARTITION
//!   when named by name (v0-1), for every partition listed.
//! - Per partition (`validateAlterPartitionData`): unknown -> UNKNOWN_TOPIC_OR_PARTITION; a
//!   leader or partition epoch above the controller's -> NOT_CONTROLLER (the requester has
//!   seen a newer controller); a lower leader epoch -> FENCED_LEADER_EPOCH; the requester not
//!   the leader -> INVALID_REQUEST; a lower partition epoch -> INVALID_UPDATE_VERSION; an ISR
//!   with a negative or duplicate id or a broker outside the replicas, or an empty one ->
//!   INVALID_REQUEST; leader recovery state RECOVERING with more than one
//!   ISR member, or RECOVERED -> RECOVERING -> INVALID_REQUEST; an ISR member unregistered,
//!   in controlled shutdown, fenced, or (v3) at another broker epoch than the one given (-1 =
//!   not checked) -> INELIGIBLE_REPLICA (v2+) / OPERATION_NOT_ATTEMPTED (v0-1).
//! - Accepted: one `PartitionChangeRecord` carrying the new ISR (when it differs from the
//!   current one, order included, as Kafka compares lists) and the leader recovery state
//!   (when it differs); the leader is unchanged (`NO_LEADER_CHANGE`), so replay bumps the
//!   partition epoch only. Nothing differs -> no record, the current state is answered.
//!
//! Skiff extension, the hand-over (issue 17 item 8): a leader whose log has a hole
//! (a quarantined range) while another ISR member has the range whole asks for an ISR without
//! itself; Kafka's controller answers INVALID_REQUEST (no Kafka broker sends it), Skiff's
//! accepts it when the rest holds and makes the first replica of the new ISR, in assignment
//! order, the leader (leader epoch + 1, as any election). The old leader becomes a follower,
//! cuts its log at the hole and fetches the rest again (`skiff_storage::integrity`).
//!
//! Invariants: an error writes nothing for its partition; the state answered for an
//! accepted partition is exactly what replaying the records exposes (each partition is
//! validated against the state the earlier entries of the same request left it in, so a
//! partition listed twice is checked against its first change: Kafka validates both against
//! the committed state); the leader changes only in a hand-over.
//!
//! Not modelled: reassignments completing through an ISR change (Kafka's NEW_LEADER_ELECTED;
//! Skiff does not run reassignments), ELR, unclean elections. A leader recovery state that
//! is neither 0 nor 1 is INVALID_REQUEST for its partition (Kafka fails the request).

use std::collections::BTreeMap;

use skiff_protocol::PartitionChangeRecord;
use skiff_types::ErrorCode;
use uuid::Uuid;

use crate::MetadataError;
use crate::controller::{Response, check_broker_epoch};
use crate::frame::Record;
use crate::image::{MetadataImage, NO_LEADER_CHANGE, PartitionInfo, TopicId};

/// `LeaderRecoveryState.RECOVERED`.
const RECOVERED: i8 = 0;
/// `LeaderRecoveryState.RECOVERING` (after an unclean election).
const RECOVERING: i8 = 1;
/// An ISR member's broker epoch that is not checked (requests before v3).
pub const UNCHECKED_BROKER_EPOCH: i64 = -1;

/// How an AlterPartition entry names its topic: by id (v2+) or by name (v0-1). The version
/// class also picks the error codes that differ between them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TopicRef {
    Id(Uuid),
    Name(String),
}

/// One partition's requested change (Kafka's `AlterPartitionRequest.PartitionData`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IsrChange {
    pub partition: i32,
    /// The leader epoch the requester leads at.
    pub leader_epoch: i32,
    /// The partition epoch of the registration the requester last saw.
    pub partition_epoch: i32,
    /// The new ISR: (broker id, broker epoch or [`UNCHECKED_BROKER_EPOCH`]).
    pub new_isr: Vec<(i32, i64)>,
    /// 0: recovered; 1: recovering after an unclean election.
    pub leader_recovery_state: i8,
}

/// One topic's changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IsrTopic {
    pub topic: TopicRef,
    pub partitions: Vec<IsrChange>,
}

/// A partition's registration as answered to the leader.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IsrState {
    pub leader: i32,
    pub leader_epoch: i32,
    pub isr: Vec<i32>,
    pub leader_recovery_state: i8,
    pub partition_epoch: i32,
}

/// One partition's answer: its state after the change, or why it was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IsrChangeResult {
    pub partition: i32,
    pub result: Result<IsrState, ErrorCode>,
}

/// One topic's answers, in request order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IsrTopicResult {
    pub topic: TopicRef,
    pub partitions: Vec<IsrChangeResult>,
}

/// The records and per-partition answers of an AlterPartition from `broker_id` (module docs).
pub(crate) fn alter_partition(
    image: &MetadataImage,
    broker_id: i32,
    broker_epoch: i64,
    topics: &[IsrTopic],
) -> Result<(Vec<Record>, Response), MetadataError> {
    check_broker_epoch(image, broker_id, broker_epoch)?;
    let mut records = Vec::new();
    // Partitions changed by earlier entries of this request, as they will replay.
    let mut changed: BTreeMap<(TopicId, i32), PartitionInfo> = BTreeMap::new();
    let mut answers = Vec::with_capacity(topics.len());
    for t in topics {
        let by_id = matches!(t.topic, TopicRef::Id(_));
        let topic = match &t.topic {
            TopicRef::Id(id) if id.is_nil() => None,
            TopicRef::Id(id) => image.topic_by_id(id.as_bytes()),
            TopicRef::Name(name) => image.topic(name),
        };
        let mut partitions = Vec::with_capacity(t.partitions.len());
        for change in &t.partitions {
            let result = match topic {
                None if by_id => Err(ErrorCode::UnknownTopicId),
                None => Err(ErrorCode::UnknownTopicOrPartition),
                Some(info) => {
                    let key = (info.id, change.partition);
                    let current = changed
                        .get(&key)
                        .or_else(|| image.partition(&info.name, change.partition))
                        .cloned();
                    match current {
                        None => Err(ErrorCode::UnknownTopicOrPartition),
                        Some(mut p) => validate(image, broker_id, &p, change, by_id).map(|()| {
                            if let Some(r) = change_record(info.id, &p, change) {
                                p.merge(&r);
                                records.push(Record::PartitionChange(r));
                                changed.insert(key, p.clone());
                            }
                            state(&p)
                        }),
                    }
                }
            };
            partitions.push(IsrChangeResult {
                partition: change.partition,
                result,
            });
        }
        answers.push(IsrTopicResult {
            topic: t.topic.clone(),
            partitions,
        });
    }
    Ok((records, Response::AlterPartition(answers)))
}

/// Kafka's `validateAlterPartitionData` for one partition (rules and order in the module docs).
fn validate(
    image: &MetadataImage,
    broker_id: i32,
    p: &PartitionInfo,
    change: &IsrChange,
    by_id: bool,
) -> Result<(), ErrorCode> {
    if change.leader_epoch > p.leader_epoch || change.partition_epoch > p.partition_epoch {
        return Err(ErrorCode::NotController);
    }
    if change.leader_epoch < p.leader_epoch {
        return Err(ErrorCode::FencedLeaderEpoch);
    }
    if broker_id != p.leader {
        return Err(ErrorCode::InvalidRequest);
    }
    if change.partition_epoch < p.partition_epoch {
        return Err(ErrorCode::InvalidUpdateVersion);
    }
    let isr: Vec<i32> = change.new_isr.iter().map(|(id, _)| *id).collect();
    // Skiff's hand-over (module docs): a new ISR without the leader is allowed, not empty.
    if !isr_within_replicas(&p.replicas, &isr) || isr.is_empty() {
        return Err(ErrorCode::InvalidRequest);
    }
    if !isr.contains(&p.leader) && change.leader_recovery_state != RECOVERED {
        return Err(ErrorCode::InvalidRequest);
    }
    let recovery = change.leader_recovery_state;
    if recovery != RECOVERED && recovery != RECOVERING {
        return Err(ErrorCode::InvalidRequest);
    }
    if recovery == RECOVERING && (isr.len() > 1 || p.leader_recovery_state == RECOVERED) {
        return Err(ErrorCode::InvalidRequest);
    }
    let ineligible = change.new_isr.iter().any(|(id, epoch)| {
        image.broker(*id).is_none_or(|b| {
            b.in_controlled_shutdown
                || b.fenced
                || (*epoch != UNCHECKED_BROKER_EPOCH && *epoch != b.epoch)
        })
    });
    if ineligible {
        return Err(if by_id {
            ErrorCode::IneligibleReplica
        } else {
            ErrorCode::OperationNotAttempted
        });
    }
    Ok(())
}

/// Kafka's `Replicas.validateIsr`: no negative or duplicate id, every member a replica.
fn isr_within_replicas(replicas: &[i32], isr: &[i32]) -> bool {
    let mut sorted = isr.to_vec();
    sorted.sort_unstable();
    sorted.windows(2).all(|w| w[0] != w[1])
        && sorted.iter().all(|id| *id >= 0 && replicas.contains(id))
}

/// The record of an accepted change, `None` when nothing differs.
fn change_record(
    topic_id: TopicId,
    p: &PartitionInfo,
    change: &IsrChange,
) -> Option<PartitionChangeRecord> {
    let isr: Vec<i32> = change.new_isr.iter().map(|(id, _)| *id).collect();
    // A hand-over: the first replica (preferred order) of the new ISR leads; all of them
    // passed the eligibility check.
    let leader = if isr.contains(&p.leader) {
        NO_LEADER_CHANGE
    } else {
        p.replicas
            .iter()
            .copied()
            .find(|r| isr.contains(r))
            .unwrap_or(NO_LEADER_CHANGE)
    };
    let isr = (isr != p.isr).then_some(isr);
    let recovery = change.leader_recovery_state;
    let leader_recovery_state = if recovery != p.leader_recovery_state {
        recovery
    } else {
        -1
    };
    if isr.is_none() && leader_recovery_state == -1 {
        return None;
    }
    Some(PartitionChangeRecord {
        partition_id: change.partition,
        topic_id: Uuid::from_bytes(topic_id),
        isr,
        leader,
        leader_recovery_state,
        ..PartitionChangeRecord::default()
    })
}

fn state(p: &PartitionInfo) -> IsrState {
    IsrState {
        leader: p.leader,
        leader_epoch: p.leader_epoch,
        isr: p.isr.clone(),
        leader_recovery_state: p.leader_recovery_state,
        partition_epoch: p.partition_epoch,
    }
}
