//! KIP-848 consumer groups (`group.protocol=consumer`): ConsumerGroupHeartbeat with the
//! server-side `uniform` and `range` assignors, ConsumerGroupDescribe, and how these groups
//! take part in offsets, admin APIs, timers and replay.
//!
//! `group` is the data model changed only by records, `assignor` the assignors, `heartbeat`
//! the protocol (membership, leave, fencing), `reconcile` target assignment and convergence. Topic ids and partition counts come from [`TopicInfo`]s the caller keeps
//! current with [`GroupCoordinatorShard::set_topics`]; a heartbeat notices changed topics and
//! rebalances. `topic_regex` resolves regex subscriptions (`SubscribedTopicRegex`).
//! `migration` converts groups online between the protocols (`group.consumer.migration.policy`)
//! and `classic_members` serves JoinGroup/SyncGroup/Heartbeat/LeaveGroup of classic members
//! inside a consumer group; `embedded` reads and writes their embedded consumer protocol. Not
//! supported: rack-aware assignment.

mod assignor;
mod classic_members;
mod embedded;
pub(crate) mod group;
mod heartbeat;
mod migration;
mod reconcile;
mod topic_regex;

use skiff_protocol::{
    ConsumerGroupDescribeResponseAssignment, ConsumerGroupDescribeResponseDescribedGroup,
    ConsumerGroupDescribeResponseTopicPartitions, ConsumerGroupMetadataKey,
    ConsumerGroupPartitionMetadataKey, ConsumerGroupTargetAssignmentMetadataKey, Member,
};
use skiff_types::ErrorCode;

pub(crate) use group::ConsumerGroup;
pub use group::TopicInfo;

use crate::consumer::group::{Assignment, ConsumerMember, MemberState};
use crate::records::CoordinatorRecord;
use crate::shard::{Group, GroupCoordinatorShard};
use crate::timer::{TimerKey, TimerTask};

/// A group's own configs (Kafka's `GroupConfig`, IncrementalAlterConfigs on a GROUP
/// resource) where they replace the broker-wide `group.consumer.*` values. Validated against
/// the broker's bounds by the caller.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GroupOverrides {
    /// `consumer.session.timeout.ms`: used for the session timer armed by each heartbeat.
    pub consumer_session_timeout_ms: Option<i32>,
    /// `consumer.heartbeat.interval.ms`: the interval each heartbeat response tells.
    pub consumer_heartbeat_interval_ms: Option<i32>,
}

/// OffsetCommit v9+ is required of KIP-848 members.
const COMMIT_MEMBER_EPOCH_MIN_VERSION: i16 = 9;

/// ConsumerGroupDescribe v1's `MemberType` (KIP-1043): which protocol a member speaks.
const MEMBER_TYPE_CLASSIC: i8 = 0;
const MEMBER_TYPE_CONSUMER: i8 = 1;

impl ConsumerGroup {
    /// Kafka's `ConsumerGroup.validateOffsetCommit`: a simple commit (epoch < 0) only to an
    /// empty group; otherwise a member, at its current epoch, on OffsetCommit v9+.
    pub(crate) fn validate_offset_commit(
        &self,
        member_id: &str,
        epoch: i32,
        version: i16,
    ) -> Result<(), ErrorCode> {
        if epoch < 0 && self.members.is_empty() {
            return Ok(());
        }
        let Some(m) = self.members.get(member_id) else {
            return Err(ErrorCode::UnknownMemberId);
        };
        if !m.uses_classic_protocol() && version < COMMIT_MEMBER_EPOCH_MIN_VERSION {
            return Err(ErrorCode::UnsupportedVersion);
        }
        validate_member_epoch(m, epoch)
    }

    /// Kafka's `ConsumerGroup.validateOffsetFetch` (OffsetFetch v9 with a member id).
    pub(crate) fn validate_offset_fetch(
        &self,
        member_id: &str,
        epoch: i32,
    ) -> Result<(), ErrorCode> {
        let Some(m) = self.members.get(member_id) else {
            return Err(ErrorCode::UnknownMemberId);
        };
        validate_member_epoch(m, epoch)
    }
}

/// Kafka's `validateMemberEpoch`: a classic member's generation is its member epoch, and a
/// mismatch is ILLEGAL_GENERATION for it, STALE_MEMBER_EPOCH for a consumer-protocol member.
fn validate_member_epoch(m: &ConsumerMember, epoch: i32) -> Result<(), ErrorCode> {
    if epoch == m.member_epoch {
        Ok(())
    } else if m.uses_classic_protocol() {
        Err(ErrorCode::IllegalGeneration)
    } else {
        Err(ErrorCode::StaleMemberEpoch)
    }
}

impl GroupCoordinatorShard {
    /// Replaces the topic metadata KIP-848 assignments are computed from (all topics of the
    /// cluster, or at least every topic a group subscribes to). Groups notice changes on their
    /// next heartbeat.
    pub fn set_topics(&mut self, topics: impl IntoIterator<Item = TopicInfo>) {
        self.topics = topics.into_iter().map(|t| (t.name.clone(), t)).collect();
    }

    /// Replaces the per-group configs (every group with any; groups not named use the
    /// broker's values). Takes effect from each member's next heartbeat, as in Kafka.
    pub fn set_group_overrides(
        &mut self,
        overrides: impl IntoIterator<Item = (String, GroupOverrides)>,
    ) {
        self.group_overrides = overrides.into_iter().collect();
    }

    /// The session timeout of a KIP-848 group's members.
    pub(crate) fn consumer_session_timeout_ms(&self, group_id: &str) -> i32 {
        self.group_overrides
            .get(group_id)
            .and_then(|o| o.consumer_session_timeout_ms)
            .unwrap_or(self.core.config.consumer_session_timeout_ms)
    }

    /// The heartbeat interval of a KIP-848 group's members.
    pub(crate) fn consumer_heartbeat_interval_ms(&self, group_id: &str) -> i32 {
        self.group_overrides
            .get(group_id)
            .and_then(|o| o.consumer_heartbeat_interval_ms)
            .unwrap_or(self.core.config.consumer_heartbeat_interval_ms)
    }

    /// ConsumerGroupDescribe's answer for one group (GROUP_ID_NOT_FOUND for unknown groups and
    /// classic groups).
    pub fn describe_consumer_group(
        &self,
        group_id: &str,
    ) -> ConsumerGroupDescribeResponseDescribedGroup {
        let mut out = ConsumerGroupDescribeResponseDescribedGroup {
            group_id: group_id.to_string(),
            ..Default::default()
        };
        let g = match self.groups.get(group_id) {
            Some(Group::Consumer(g)) => g,
            Some(Group::Classic(_)) => {
                out.error_code = ErrorCode::GroupIdNotFound.code();
                out.error_message = Some(format!("Group {group_id} is not a consumer group."));
                return out;
            }
            None => {
                out.error_code = ErrorCode::GroupIdNotFound.code();
                out.error_message = Some(format!("Group {group_id} not found."));
                return out;
            }
        };
        let describe = |a: &Assignment| ConsumerGroupDescribeResponseAssignment {
            topic_partitions: a
                .iter()
                .map(|(id, ps)| ConsumerGroupDescribeResponseTopicPartitions {
                    topic_id: *id,
                    topic_name: self
                        .topics
                        .values()
                        .find(|t| t.topic_id == *id)
                        .map(|t| t.name.clone())
                        .unwrap_or_default(),
                    partitions: ps.iter().copied().collect(),
                })
                .collect(),
        };
        out.group_state = g.state_name().to_string();
        out.group_epoch = g.group_epoch;
        out.assignment_epoch = g.assignment_epoch;
        out.assignor_name = self.preferred_assignor(g);
        out.members = g
            .members
            .values()
            .map(|m| Member {
                member_id: m.member_id.clone(),
                instance_id: m.instance_id.clone(),
                rack_id: m.rack_id.clone(),
                member_epoch: m.member_epoch,
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                subscribed_topic_names: m.subscribed_topic_names.iter().cloned().collect(),
                subscribed_topic_regex: m.subscribed_topic_regex.clone(),
                assignment: describe(&m.assigned),
                target_assignment: describe(
                    &g.target.get(&m.member_id).cloned().unwrap_or_default(),
                ),
                // KIP-1043 (v1): a member still on the classic protocol during a migration.
                member_type: if m.classic.is_some() {
                    MEMBER_TYPE_CLASSIC
                } else {
                    MEMBER_TYPE_CONSUMER
                },
            })
            .collect();
        out
    }

    pub(crate) fn replay_consumer(&mut self, record: CoordinatorRecord) {
        if matches!(self.groups.get(record.group_id()), Some(Group::Classic(_))) {
            // The log converted this group: the classic group's tombstone came first.
            self.groups.remove(record.group_id());
        }
        self.apply_consumer(&record);
    }

    /// Restarts loaded members' sessions (and revocation deadlines).
    pub(crate) fn on_loaded_consumer(&mut self) {
        let mut timers = Vec::new();
        for (gid, group) in &self.groups {
            let Group::Consumer(g) = group else { continue };
            for m in g.members.values() {
                timers.push((
                    gid.clone(),
                    m.member_id.clone(),
                    m.state,
                    m.member_epoch,
                    m.rebalance_timeout_ms,
                    m.classic.as_ref().map(|c| c.session_timeout_ms),
                ));
            }
        }
        for (group, member, state, epoch, rebalance_ms, classic_session) in timers {
            let session = i64::from(
                classic_session
                    .unwrap_or_else(|| self.consumer_session_timeout_ms(&group))
                    .max(1),
            );
            self.core.schedule(
                TimerKey::ConsumerSession {
                    group: group.clone(),
                    member: member.clone(),
                },
                session,
                TimerTask::ExpireConsumerSession,
            );
            if state == MemberState::UnrevokedPartitions {
                self.core.schedule(
                    TimerKey::ConsumerRebalance { group, member },
                    i64::from(rebalance_ms.max(1)),
                    TimerTask::ExpireConsumerRebalance {
                        member_epoch: epoch,
                    },
                );
            }
        }
    }

    /// Writes every tombstone of a consumer group (which removes it).
    pub(crate) fn delete_consumer_group_records(&mut self, group_id: &str) {
        let members: Vec<String> = match self.groups.get(group_id) {
            Some(Group::Consumer(g)) => g.members.keys().cloned().collect(),
            _ => return,
        };
        for m in members {
            self.remove_member_records(group_id, &m);
        }
        let id = group_id.to_string();
        self.write_consumer(CoordinatorRecord::ConsumerGroupTargetAssignmentMetadata(
            ConsumerGroupTargetAssignmentMetadataKey {
                group_id: id.clone(),
            },
            None,
        ));
        self.write_consumer(CoordinatorRecord::ConsumerGroupPartitionMetadata(
            ConsumerGroupPartitionMetadataKey {
                group_id: id.clone(),
            },
            None,
        ));
        self.write_consumer(CoordinatorRecord::ConsumerGroupMetadata(
            ConsumerGroupMetadataKey { group_id: id },
            None,
        ));
    }
}
