//! One KIP-848 consumer group: members, target assignment, partition ownership, and how each
//! `__consumer_offsets` record changes them.
//!
//! Mental model (Kafka's `ConsumerGroup`): the coordinator keeps a *group epoch* (bumped on
//! every membership or subscription change), a *target assignment* computed by a server-side
//! assignor at some *assignment epoch*, and each member's *current assignment* with its member
//! epoch. Members converge to the target one heartbeat at a time: a partition moves only after
//! its previous owner has revoked it ([`ConsumerGroup::partition_epochs`] records who owns what,
//! at which epoch). Group state: Empty (no members), Assigning (group epoch ahead of the
//! assignment epoch), Reconciling (a member not yet at the assignment epoch), Stable.
//!
//! Invariant: this state is changed *only* by [`ConsumerGroup::apply`] with the records the
//! coordinator writes (live and on replay alike), so memory is exactly what the log says.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use skiff_protocol::{
    ClassicMemberMetadata, ClassicProtocol, ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupCurrentMemberAssignmentValueTopicPartitions, ConsumerGroupMemberMetadataValue,
    ConsumerGroupPartitionMetadataValue, ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMemberValueTopicPartition,
};
use uuid::Uuid;

use crate::records::CoordinatorRecord;
use crate::shard::GroupSummary;

/// Partitions by topic id.
pub(crate) type Assignment = BTreeMap<Uuid, BTreeSet<i32>>;

/// A member epoch meaning "left" (dynamic members, and tombstoned assignments).
pub(crate) const LEAVE_GROUP_MEMBER_EPOCH: i32 = -1;
/// A member epoch meaning "a static member left temporarily and may come back".
pub(crate) const LEAVE_GROUP_STATIC_MEMBER_EPOCH: i32 = -2;

/// A topic as the coordinator knows it from cluster metadata.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopicInfo {
    pub topic_id: Uuid,
    pub name: String,
    pub partitions: i32,
}

/// Kafka's `MemberState` (persisted as an int8).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MemberState {
    Stable,
    UnrevokedPartitions,
    UnreleasedPartitions,
    Unknown,
}

impl MemberState {
    pub fn value(self) -> i8 {
        match self {
            MemberState::Stable => 0,
            MemberState::UnrevokedPartitions => 1,
            MemberState::UnreleasedPartitions => 2,
            MemberState::Unknown => 127,
        }
    }

    fn from_value(v: i8) -> Self {
        match v {
            0 => MemberState::Stable,
            1 => MemberState::UnrevokedPartitions,
            2 => MemberState::UnreleasedPartitions,
            _ => MemberState::Unknown,
        }
    }
}

/// What a member that speaks the classic protocol (JoinGroup/SyncGroup/Heartbeat) inside a
/// consumer group keeps (Kafka's `ClassicMemberMetadata`): its session timeout and the
/// protocols of its last JoinGroup, the first of which names the protocol it was given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ClassicMeta {
    pub session_timeout_ms: i32,
    /// (name, metadata) in the member's order of preference; never empty.
    pub protocols: Vec<(String, Bytes)>,
}

impl ClassicMeta {
    fn value(&self) -> ClassicMemberMetadata {
        ClassicMemberMetadata {
            session_timeout_ms: self.session_timeout_ms,
            supported_protocols: self
                .protocols
                .iter()
                .map(|(name, metadata)| ClassicProtocol {
                    name: name.clone(),
                    metadata: metadata.clone(),
                })
                .collect(),
        }
    }

    /// The protocol the member was given: its first (Kafka answers the first supported one).
    pub fn protocol_name(&self) -> &str {
        self.protocols.first().map_or("", |(n, _)| n.as_str())
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ConsumerMember {
    pub member_id: String,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub subscribed_topic_names: BTreeSet<String>,
    /// The member's regex subscription (RE2/J syntax, matched against whole topic names), if
    /// any; resolved against the coordinator's topics by the shard.
    pub subscribed_topic_regex: Option<String>,
    pub rebalance_timeout_ms: i32,
    pub server_assignor: Option<String>,
    pub member_epoch: i32,
    pub previous_member_epoch: i32,
    pub state: MemberState,
    pub assigned: Assignment,
    pub pending_revocation: Assignment,
    /// Set for a member that uses the classic protocol (joined with JoinGroup, or was a
    /// member of the classic group this one was converted from).
    pub classic: Option<ClassicMeta>,
}

impl ConsumerMember {
    pub fn new(member_id: &str) -> Self {
        Self {
            member_id: member_id.to_string(),
            instance_id: None,
            rack_id: None,
            client_id: String::new(),
            client_host: String::new(),
            subscribed_topic_names: BTreeSet::new(),
            subscribed_topic_regex: None,
            rebalance_timeout_ms: -1,
            server_assignor: None,
            member_epoch: 0,
            previous_member_epoch: 0,
            state: MemberState::Stable,
            assigned: Assignment::new(),
            pending_revocation: Assignment::new(),
            classic: None,
        }
    }

    pub fn uses_classic_protocol(&self) -> bool {
        self.classic.is_some()
    }

    /// The subscription part as a record value.
    pub fn metadata_value(&self) -> ConsumerGroupMemberMetadataValue {
        ConsumerGroupMemberMetadataValue {
            instance_id: self.instance_id.clone(),
            rack_id: self.rack_id.clone(),
            client_id: self.client_id.clone(),
            client_host: self.client_host.clone(),
            subscribed_topic_names: self.subscribed_topic_names.iter().cloned().collect(),
            subscribed_topic_regex: self.subscribed_topic_regex.clone(),
            rebalance_timeout_ms: self.rebalance_timeout_ms,
            server_assignor: self.server_assignor.clone(),
            classic_member_metadata: self.classic.as_ref().map(ClassicMeta::value),
        }
    }

    /// The current-assignment part as a record value.
    pub fn assignment_value(&self) -> ConsumerGroupCurrentMemberAssignmentValue {
        let tps = |a: &Assignment| {
            a.iter()
                .map(
                    |(id, ps)| ConsumerGroupCurrentMemberAssignmentValueTopicPartitions {
                        topic_id: *id,
                        partitions: ps.iter().copied().collect(),
                    },
                )
                .collect()
        };
        ConsumerGroupCurrentMemberAssignmentValue {
            member_epoch: self.member_epoch,
            previous_member_epoch: self.previous_member_epoch,
            state: self.state.value(),
            assigned_partitions: tps(&self.assigned),
            partitions_pending_revocation: tps(&self.pending_revocation),
        }
    }

    fn same_metadata(&self, other: &ConsumerMember) -> bool {
        self.metadata_value() == other.metadata_value()
    }

    pub fn is_reconciled_to(&self, epoch: i32) -> bool {
        self.state == MemberState::Stable && self.member_epoch == epoch
    }
}

/// A target assignment as a record value.
pub(crate) fn target_value(a: &Assignment) -> ConsumerGroupTargetAssignmentMemberValue {
    ConsumerGroupTargetAssignmentMemberValue {
        topic_partitions: a
            .iter()
            .map(
                |(id, ps)| ConsumerGroupTargetAssignmentMemberValueTopicPartition {
                    topic_id: *id,
                    partitions: ps.iter().copied().collect(),
                },
            )
            .collect(),
    }
}

#[derive(Clone, Debug, Default)]
pub(crate) struct ConsumerGroup {
    pub group_epoch: i32,
    pub assignment_epoch: i32,
    /// Subscribed topics as known when the group epoch was last bumped, by name.
    pub subscription_metadata: BTreeMap<String, TopicInfo>,
    pub members: BTreeMap<String, ConsumerMember>,
    pub static_members: BTreeMap<String, String>,
    pub target: BTreeMap<String, Assignment>,
    /// Who holds each partition (assigned or pending revocation): the holder's member epoch.
    pub partition_epochs: BTreeMap<(Uuid, i32), i32>,
}

impl ConsumerGroup {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Kafka's group state name.
    pub fn state_name(&self) -> &'static str {
        if self.members.is_empty() {
            "Empty"
        } else if self.group_epoch > self.assignment_epoch {
            "Assigning"
        } else if self
            .members
            .values()
            .any(|m| !m.is_reconciled_to(self.assignment_epoch))
        {
            "Reconciling"
        } else {
            "Stable"
        }
    }

    pub fn summary(&self) -> GroupSummary {
        GroupSummary {
            group_type: "consumer",
            state: self.state_name(),
            generation: self.group_epoch,
            protocol_type: "consumer".into(),
            protocol_name: None,
            leader: None,
            members: self.members.keys().cloned().collect(),
        }
    }

    /// Every regex some member subscribes with.
    pub fn subscribed_regexes(&self) -> BTreeSet<&str> {
        self.members
            .values()
            .filter_map(|m| m.subscribed_topic_regex.as_deref())
            .collect()
    }

    /// Whether some member subscribes to `topic`: by name, or through a regex (the regex
    /// matches are in the subscription metadata, a persisted record, so this holds after a
    /// reload too).
    pub fn is_subscribed_to(&self, topic: &str) -> bool {
        self.subscription_metadata.contains_key(topic)
            || self
                .members
                .values()
                .any(|m| m.subscribed_topic_names.contains(topic))
    }

    /// The epoch of the member holding a partition, -1 when free.
    pub fn partition_epoch(&self, topic_id: Uuid, partition: i32) -> i32 {
        self.partition_epochs
            .get(&(topic_id, partition))
            .copied()
            .unwrap_or(-1)
    }

    fn release(&mut self, m: &ConsumerMember) {
        for a in [&m.assigned, &m.pending_revocation] {
            for (id, ps) in a {
                for p in ps {
                    if self.partition_epochs.get(&(*id, *p)) == Some(&m.member_epoch) {
                        self.partition_epochs.remove(&(*id, *p));
                    }
                }
            }
        }
    }

    fn hold(&mut self, m: &ConsumerMember) {
        for a in [&m.assigned, &m.pending_revocation] {
            for (id, ps) in a {
                for p in ps {
                    self.partition_epochs.insert((*id, *p), m.member_epoch);
                }
            }
        }
    }

    /// Applies one consumer-group record (live and replay). Returns false for a tombstone of
    /// the group itself (the caller drops the group).
    pub fn apply(&mut self, record: &CoordinatorRecord) -> bool {
        use CoordinatorRecord as R;
        match record {
            R::ConsumerGroupMetadata(_, Some(v)) => self.group_epoch = v.epoch,
            R::ConsumerGroupMetadata(_, None) => return false,
            R::ConsumerGroupPartitionMetadata(_, v) => {
                self.subscription_metadata =
                    v.as_ref().map(metadata_from_value).unwrap_or_default();
            }
            R::ConsumerGroupMemberMetadata(k, Some(v)) => {
                let m = self
                    .members
                    .entry(k.member_id.clone())
                    .or_insert_with(|| ConsumerMember::new(&k.member_id));
                m.instance_id = v.instance_id.clone().filter(|s| !s.is_empty());
                m.rack_id = v.rack_id.clone().filter(|s| !s.is_empty());
                m.client_id = v.client_id.clone();
                m.client_host = v.client_host.clone();
                m.subscribed_topic_names = v.subscribed_topic_names.iter().cloned().collect();
                m.subscribed_topic_regex =
                    v.subscribed_topic_regex.clone().filter(|s| !s.is_empty());
                m.rebalance_timeout_ms = v.rebalance_timeout_ms;
                m.server_assignor = v.server_assignor.clone().filter(|s| !s.is_empty());
                // An absent tag decodes as an empty struct: a classic member has a protocol.
                m.classic = v
                    .classic_member_metadata
                    .as_ref()
                    .filter(|c| !c.supported_protocols.is_empty())
                    .map(|c| ClassicMeta {
                        session_timeout_ms: c.session_timeout_ms,
                        protocols: c
                            .supported_protocols
                            .iter()
                            .map(|p| (p.name.clone(), p.metadata.clone()))
                            .collect(),
                    });
                if let Some(instance) = m.instance_id.clone() {
                    self.static_members.insert(instance, k.member_id.clone());
                }
            }
            R::ConsumerGroupMemberMetadata(k, None) => {
                if let Some(m) = self.members.remove(&k.member_id) {
                    self.release(&m);
                    if let Some(instance) = &m.instance_id
                        && self.static_members.get(instance) == Some(&k.member_id)
                    {
                        self.static_members.remove(instance);
                    }
                }
            }
            R::ConsumerGroupTargetAssignmentMetadata(_, v) => {
                self.assignment_epoch = v.as_ref().map_or(-1, |v| v.assignment_epoch);
            }
            R::ConsumerGroupTargetAssignmentMember(k, Some(v)) => {
                self.target.insert(
                    k.member_id.clone(),
                    assignment_from(
                        v.topic_partitions
                            .iter()
                            .map(|t| (t.topic_id, &t.partitions)),
                    ),
                );
            }
            R::ConsumerGroupTargetAssignmentMember(k, None) => {
                self.target.remove(&k.member_id);
            }
            R::ConsumerGroupCurrentMemberAssignment(k, v) => {
                let Some(old) = self.members.get(&k.member_id).cloned() else {
                    if v.is_none() {
                        return true;
                    }
                    let mut m = ConsumerMember::new(&k.member_id);
                    if let Some(v) = v {
                        set_assignment(&mut m, v);
                    }
                    self.hold(&m);
                    self.members.insert(k.member_id.clone(), m);
                    return true;
                };
                self.release(&old);
                let mut m = old;
                match v {
                    Some(v) => set_assignment(&mut m, v),
                    None => {
                        m.member_epoch = LEAVE_GROUP_MEMBER_EPOCH;
                        m.previous_member_epoch = LEAVE_GROUP_MEMBER_EPOCH;
                        m.assigned.clear();
                        m.pending_revocation.clear();
                    }
                }
                self.hold(&m);
                self.members.insert(k.member_id.clone(), m);
            }
            // Other record types do not belong to consumer groups.
            R::OffsetCommit(..) | R::GroupMetadata(..) => {}
        }
        true
    }

    /// Whether a member's metadata differs from what is stored (new members always differ).
    pub fn metadata_changed(&self, m: &ConsumerMember) -> bool {
        self.members
            .get(&m.member_id)
            .is_none_or(|old| !old.same_metadata(m))
    }
}

fn set_assignment(m: &mut ConsumerMember, v: &ConsumerGroupCurrentMemberAssignmentValue) {
    m.member_epoch = v.member_epoch;
    m.previous_member_epoch = v.previous_member_epoch;
    m.state = MemberState::from_value(v.state);
    m.assigned = assignment_from(
        v.assigned_partitions
            .iter()
            .map(|t| (t.topic_id, &t.partitions)),
    );
    m.pending_revocation = assignment_from(
        v.partitions_pending_revocation
            .iter()
            .map(|t| (t.topic_id, &t.partitions)),
    );
}

fn assignment_from<'a>(tps: impl Iterator<Item = (Uuid, &'a Vec<i32>)>) -> Assignment {
    let mut a = Assignment::new();
    for (id, ps) in tps {
        if !ps.is_empty() {
            a.entry(id).or_default().extend(ps.iter().copied());
        }
    }
    a
}

fn metadata_from_value(v: &ConsumerGroupPartitionMetadataValue) -> BTreeMap<String, TopicInfo> {
    v.topics
        .iter()
        .map(|t| {
            (
                t.topic_name.clone(),
                TopicInfo {
                    topic_id: t.topic_id,
                    name: t.topic_name.clone(),
                    partitions: t.num_partitions,
                },
            )
        })
        .collect()
}

/// Subscription metadata as a record value.
pub(crate) fn metadata_value(
    m: &BTreeMap<String, TopicInfo>,
) -> ConsumerGroupPartitionMetadataValue {
    ConsumerGroupPartitionMetadataValue {
        topics: m
            .values()
            .map(|t| skiff_protocol::TopicMetadata {
                topic_id: t.topic_id,
                topic_name: t.name.clone(),
                num_partitions: t.partitions,
                partition_metadata: Vec::new(),
            })
            .collect(),
    }
}
