//! Online migration between the classic and the consumer protocol
//! (`group.consumer.migration.policy`, Kafka's `convertToConsumerGroup` /
//! `convertToClassicGroup`).
//!
//! Mental model: a group is one protocol's state machine at a time. *Upgrade*: the first
//! ConsumerGroupHeartbeat to a non-empty classic group that uses the consumer embedded
//! protocol turns it into a consumer group holding the classic members (as members with
//! [`ClassicMeta`], at the classic generation, Stable, their last classic assignment as both
//! target and current assignment); parked JoinGroup/SyncGroup requests are answered
//! REBALANCE_IN_PROGRESS and the classic timers dropped. The joining member then bumps the group
//! epoch like any new member, so the classic members learn from their next Heartbeat that they
//! must rejoin (`classic_members`). *Downgrade*: when a member leaves or is fenced and every
//! other member uses the classic protocol, the group turns back into a classic group at the
//! group epoch, Stable, each member's target assignment serialized in its own protocol version,
//! and a rebalance starts. Both conversions are written as records: the old group's tombstones
//! first, then the new group's records, so replay arrives at the same group.

use skiff_protocol::{
    ConsumerGroupMetadataKey, ConsumerGroupMetadataValue, ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMetadataKey, ConsumerGroupTargetAssignmentMetadataValue,
};
use skiff_types::ErrorCode;

use crate::classic::group::{
    CONSUMER_PROTOCOL_TYPE, ClassicGroup, ClassicGroupState, Member, Protocol,
};
use crate::classic::rebalance::{join_error, sync_error};
use crate::consumer::embedded;
use crate::consumer::group::{ClassicMeta, ConsumerMember, MemberState, target_value};
use crate::consumer::heartbeat::{Failure, fail, group_of};
use crate::records::CoordinatorRecord as R;
use crate::shard::{Group, GroupCoordinatorShard};
use crate::timer::{TimerKey, TimerTask};

impl GroupCoordinatorShard {
    /// Converts the non-empty classic group `group_id` into a consumer group, or fails with
    /// GROUP_ID_NOT_FOUND as Kafka does when the policy, the protocol type, the size or the
    /// members' embedded protocol do not allow it.
    pub(super) fn upgrade_classic_group(&mut self, group_id: &str) -> Result<(), Failure> {
        let Some(Group::Classic(g)) = self.groups.get(group_id) else {
            return Ok(());
        };
        let not_consumer = || {
            fail(
                ErrorCode::GroupIdNotFound,
                format!("Group {group_id} is not a consumer group."),
            )
        };
        let max = usize::try_from(self.core.config.consumer_group_size_max).unwrap_or(usize::MAX);
        if !self.core.config.consumer_migration_policy.upgrade_enabled()
            || !g.uses_consumer_protocol()
            || g.members.len() > max
        {
            return Err(not_consumer());
        }
        let malformed = || {
            fail(
                ErrorCode::GroupIdNotFound,
                format!(
                    "Cannot upgrade the classic group {group_id} to consumer group because the embedded consumer protocol is malformed."
                ),
            )
        };
        let mut members = Vec::with_capacity(g.members.len());
        for m in g.members.values() {
            let protocol = g
                .protocol_name
                .clone()
                .or_else(|| m.protocols.first().map(|p| p.name.clone()))
                .unwrap_or_default();
            let sub = embedded::subscription(&m.metadata(&protocol)).ok_or_else(malformed)?;
            let assigned = embedded::assignment(&m.assignment).ok_or_else(malformed)?;
            let mut c = ConsumerMember::new(&m.member_id);
            c.member_epoch = g.generation;
            c.previous_member_epoch = g.generation;
            c.state = MemberState::Stable;
            c.instance_id = m.instance_id.clone();
            c.rack_id = sub.rack_id.clone().filter(|r| !r.is_empty());
            c.rebalance_timeout_ms = m.rebalance_timeout_ms;
            c.client_id = m.client_id.clone();
            c.client_host = m.client_host.clone();
            c.subscribed_topic_names = sub.topics.iter().cloned().collect();
            c.assigned = embedded::to_ids(&assigned, &self.topics);
            c.classic = Some(ClassicMeta {
                session_timeout_ms: m.session_timeout_ms,
                protocols: m
                    .protocols
                    .iter()
                    .map(|p| (p.name.clone(), p.metadata.clone()))
                    .collect(),
            });
            members.push(c);
        }
        let generation = g.generation;
        let Some(Group::Classic(mut g)) = self.groups.remove(group_id) else {
            return Ok(());
        };
        // Parked requests learn that another rebalance started; classic timers go.
        for m in g.members.values_mut() {
            self.core
                .complete_join_future(m, join_error(&m.member_id, ErrorCode::RebalanceInProgress));
            self.core
                .complete_sync_future(m, sync_error(ErrorCode::RebalanceInProgress));
        }
        for member in g.members.keys().chain(g.pending_join.iter()) {
            self.core.timers.cancel(&TimerKey::Heartbeat {
                group: group_id.to_string(),
                member: member.clone(),
            });
        }
        for key in [
            TimerKey::Join {
                group: group_id.to_string(),
            },
            TimerKey::Sync {
                group: group_id.to_string(),
            },
        ] {
            self.core.timers.cancel(&key);
        }
        self.core.record_group_tombstone(group_id);

        // Kafka's `createConsumerGroupRecords`, in its order.
        let id = group_id.to_string();
        for m in &members {
            self.write_member_metadata(group_id, m);
        }
        self.write_consumer(R::ConsumerGroupMetadata(
            ConsumerGroupMetadataKey {
                group_id: id.clone(),
            },
            Some(ConsumerGroupMetadataValue { epoch: generation }),
        ));
        for m in &members {
            self.write_consumer(R::ConsumerGroupTargetAssignmentMember(
                ConsumerGroupTargetAssignmentMemberKey {
                    group_id: id.clone(),
                    member_id: m.member_id.clone(),
                },
                Some(target_value(&m.assigned)),
            ));
        }
        self.write_consumer(R::ConsumerGroupTargetAssignmentMetadata(
            ConsumerGroupTargetAssignmentMetadataKey {
                group_id: id.clone(),
            },
            Some(ConsumerGroupTargetAssignmentMetadataValue {
                assignment_epoch: generation,
            }),
        ));
        for m in &members {
            self.write_current_assignment(group_id, m);
            let session = m.classic.as_ref().map_or(0, |c| c.session_timeout_ms);
            self.core.schedule(
                TimerKey::ConsumerSession {
                    group: id.clone(),
                    member: m.member_id.clone(),
                },
                i64::from(session.max(1)),
                TimerTask::ExpireConsumerSession,
            );
        }
        Ok(())
    }

    /// Kafka's `validateOnlineDowngradeWithFencedMember`: whether removing `leaving` should
    /// turn the group back into a classic group.
    fn downgrade_allowed(&self, group_id: &str, leaving: &str) -> bool {
        let Some(g) = group_of(&self.groups, group_id) else {
            return false;
        };
        let all_classic = g
            .members
            .values()
            .all(|m| m.member_id == leaving || m.uses_classic_protocol());
        let max = usize::try_from(self.core.config.group_size_max).unwrap_or(usize::MAX);
        all_classic
            && g.members.len() > 1
            && self
                .core
                .config
                .consumer_migration_policy
                .downgrade_enabled()
            && g.members.len() - 1 <= max
    }

    /// Removes `leaving` by turning the consumer group into a classic group of its other
    /// (classic) members, when the policy allows; false when it does not apply.
    pub(crate) fn maybe_downgrade(&mut self, group_id: &str, leaving: &str) -> bool {
        if !self.downgrade_allowed(group_id, leaving) {
            return false;
        }
        let Some(cg) = group_of(&self.groups, group_id).cloned() else {
            return false;
        };
        let mut g = ClassicGroup::new(group_id, self.core.now);
        g.generation = cg.group_epoch;
        g.protocol_type = Some(CONSUMER_PROTOCOL_TYPE.to_string());
        for m in cg.members.values().filter(|m| m.member_id != leaving) {
            let Some(classic) = &m.classic else { continue };
            g.add(Member {
                member_id: m.member_id.clone(),
                instance_id: m.instance_id.clone(),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                rebalance_timeout_ms: m.rebalance_timeout_ms,
                session_timeout_ms: classic.session_timeout_ms,
                protocol_type: CONSUMER_PROTOCOL_TYPE.to_string(),
                protocols: classic
                    .protocols
                    .iter()
                    .map(|(name, metadata)| Protocol {
                        name: name.clone(),
                        metadata: metadata.clone(),
                    })
                    .collect(),
                assignment: bytes::Bytes::new(),
                awaiting_join: None,
                awaiting_sync: None,
                is_new: false,
            });
        }
        g.protocol_name = g.select_protocol();
        g.subscribed_topics = g.compute_subscribed_topics();
        let protocol = g.protocol_name.clone().unwrap_or_default();
        for m in g.members.values_mut() {
            let version = embedded::version_of(&m.metadata(&protocol)).unwrap_or(0);
            let target = cg.target.get(&m.member_id).cloned().unwrap_or_default();
            m.assignment = embedded::encode_assignment(&target, &self.topics, version);
        }
        // A Stable group at the consumer group's epoch (Kafka's `fromConsumerGroup`).
        g.transition(ClassicGroupState::PreparingRebalance, self.core.now);
        g.transition(ClassicGroupState::CompletingRebalance, self.core.now);
        g.transition(ClassicGroupState::Stable, self.core.now);

        let members: Vec<String> = cg.members.keys().cloned().collect();
        self.delete_consumer_group_records(group_id);
        for member in &members {
            self.cancel_consumer_timers(group_id, member);
        }
        self.core.record_group_metadata(&g);
        for member in g.members.keys() {
            self.core.reschedule_member_heartbeat(&g, member);
        }
        self.core.prepare_rebalance(&mut g);
        self.groups.insert(group_id.to_string(), Group::Classic(g));
        true
    }
}
