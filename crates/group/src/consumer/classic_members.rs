//! Classic members inside a consumer group: JoinGroup, SyncGroup, Heartbeat and LeaveGroup
//! served by the consumer group's state machine (Kafka's `classicGroup*ToConsumerGroup`).
//!
//! Mental model: a classic member is a consumer-group member with [`ClassicMeta`]. Its
//! generation id is its member epoch. JoinGroup is answered at once (no join phase): it updates
//! the member's subscription from the embedded protocol, bumps the group epoch when that
//! changed, recomputes the target assignment and moves the member one reconciliation step,
//! using the partitions its subscription says it owns as a heartbeat's owned partitions; the
//! server-side assignor decides, so no member is leader and nobody sends assignments. SyncGroup
//! returns the member's current assignment in its own protocol version. Heartbeat answers
//! REBALANCE_IN_PROGRESS while the member is behind (group epoch ahead, partitions to revoke,
//! or partitions now free to take), which makes the client rejoin. Deadlines: the session
//! (the member's classic session timeout, renewed by Heartbeat and SyncGroup), the rejoin
//! after REBALANCE_IN_PROGRESS and the SyncGroup after a join (both its rebalance timeout);
//! missing one fences the member, which may downgrade the group (`migration`).

use std::collections::BTreeSet;

use skiff_protocol::{
    ConsumerGroupPartitionMetadataKey, ConsumerGroupTargetAssignmentMemberKey, HeartbeatRequest,
    JoinGroupRequest, JoinGroupResponse, LeaveGroupResponse, MemberIdentity, MemberResponse,
    SyncGroupRequest, SyncGroupResponse,
};
use skiff_types::ErrorCode;

use crate::classic::group::CONSUMER_PROTOCOL_TYPE;
use crate::consumer::embedded;
use crate::consumer::group::{
    ClassicMeta, ConsumerGroup, ConsumerMember, MemberState, metadata_value, target_value,
};
use crate::consumer::heartbeat::{Failure, fail, group_of};
use crate::effects::RequestContext;
use crate::records::CoordinatorRecord as R;
use crate::shard::GroupCoordinatorShard;
use crate::timer::{TimerKey, TimerTask};

/// JoinGroup v4+ requires a member id (KIP-394).
const MEMBER_ID_REQUIRED_MIN_VERSION: i16 = 4;

impl ConsumerGroup {
    /// Kafka's `supportsClassicProtocols`: the consumer protocol type, and a protocol every
    /// classic member supports (any, when there are none).
    fn supports_classic_protocols(&self, protocol_type: &str, names: &BTreeSet<&str>) -> bool {
        if protocol_type != CONSUMER_PROTOCOL_TYPE || names.is_empty() {
            return false;
        }
        let classic: Vec<&ClassicMeta> = self
            .members
            .values()
            .filter_map(|m| m.classic.as_ref())
            .collect();
        names.iter().any(|n| {
            classic
                .iter()
                .all(|c| c.protocols.iter().any(|(p, _)| p == n))
        })
    }

    /// Kafka's `waitingOnUnreleasedPartition`: part of the member's target is still held by
    /// another member.
    fn waiting_on_unreleased(&self, m: &ConsumerMember) -> bool {
        let target = self.target.get(&m.member_id).cloned().unwrap_or_default();
        target.iter().any(|(id, ps)| {
            ps.iter().any(|p| {
                !m.assigned.get(id).is_some_and(|a| a.contains(p))
                    && self.partition_epoch(*id, *p) != -1
            })
        })
    }

    /// Kafka's `validateConsumerGroupMember` plus `throwIfMemberDoesNotUseClassicProtocol`.
    fn classic_member(
        &self,
        member_id: &str,
        instance_id: Option<&str>,
    ) -> Result<&ConsumerMember, ErrorCode> {
        let m = match instance_id {
            None => self.members.get(member_id),
            Some(i) => {
                let m = self
                    .static_members
                    .get(i)
                    .and_then(|id| self.members.get(id))
                    .ok_or(ErrorCode::UnknownMemberId)?;
                if m.member_id != member_id {
                    return Err(ErrorCode::FencedInstanceId);
                }
                Some(m)
            }
        };
        m.filter(|m| m.uses_classic_protocol())
            .ok_or(ErrorCode::UnknownMemberId)
    }
}

fn join_failure(member_id: &str, code: ErrorCode) -> JoinGroupResponse {
    crate::classic::rebalance::join_error(member_id, code)
}

impl GroupCoordinatorShard {
    /// A JoinGroup to a non-empty consumer group (Kafka's `classicGroupJoinToConsumerGroup`).
    pub(crate) fn classic_join_consumer_group(
        &mut self,
        ctx: &RequestContext,
        req: &JoinGroupRequest,
    ) -> JoinGroupResponse {
        match self.classic_join(ctx, req) {
            Ok(r) => r,
            Err((code, _)) => join_failure(&req.member_id, code),
        }
    }

    fn classic_join(
        &mut self,
        ctx: &RequestContext,
        req: &JoinGroupRequest,
    ) -> Result<JoinGroupResponse, Failure> {
        let group_id = req.group_id.clone();
        let Some(g) = group_of(&self.groups, &group_id) else {
            return Err(fail(ErrorCode::UnknownMemberId, "group vanished"));
        };
        let unknown = req.member_id.is_empty();
        let member_id = if unknown {
            self.core.new_uuid().to_string()
        } else {
            req.member_id.clone()
        };
        let max = usize::try_from(self.core.config.consumer_group_size_max).unwrap_or(usize::MAX);
        let replacing = req
            .group_instance_id
            .as_ref()
            .is_some_and(|i| g.static_members.contains_key(i));
        if !g.members.contains_key(&member_id) && !replacing && g.members.len() >= max {
            return Err(fail(ErrorCode::GroupMaxSizeReached, "The group is full."));
        }
        let names: BTreeSet<&str> = req.protocols.iter().map(|p| p.name.as_str()).collect();
        if !g.supports_classic_protocols(&req.protocol_type, &names) {
            return Err(fail(
                ErrorCode::InconsistentGroupProtocol,
                "The member's protocols are not supported.",
            ));
        }
        if unknown
            && req.group_instance_id.is_none()
            && ctx.api_version >= MEMBER_ID_REQUIRED_MIN_VERSION
        {
            return Ok(join_failure(&member_id, ErrorCode::MemberIdRequired));
        }
        let Some(first) = req.protocols.first() else {
            return Err(fail(ErrorCode::InconsistentGroupProtocol, "no protocols"));
        };
        let sub = embedded::subscription(&first.metadata).ok_or_else(|| {
            fail(
                ErrorCode::InconsistentGroupProtocol,
                "Malformed embedded consumer protocol in subscription.",
            )
        })?;

        // The member: existing, new, or a static member taking over its instance.
        let (base, replaced) = match &req.group_instance_id {
            None => (
                g.members
                    .get(&member_id)
                    .cloned()
                    .unwrap_or_else(|| ConsumerMember::new(&member_id)),
                None,
            ),
            Some(instance) => {
                let holder = g
                    .static_members
                    .get(instance)
                    .and_then(|id| g.members.get(id))
                    .cloned();
                match holder {
                    None if unknown => (ConsumerMember::new(&member_id), None),
                    None => {
                        return Err(fail(ErrorCode::UnknownMemberId, "Unknown instance id."));
                    }
                    Some(h) if h.member_id == member_id => (h, None),
                    Some(_) if !unknown => {
                        return Err(fail(ErrorCode::FencedInstanceId, "Fenced instance id."));
                    }
                    Some(h) => {
                        let mut b = h.clone();
                        b.member_id = member_id.clone();
                        b.member_epoch = 0;
                        b.previous_member_epoch = 0;
                        (b, Some(h.member_id))
                    }
                }
            }
        };
        let before = g.members.get(&member_id).cloned();
        let mut updated = base.clone();
        updated.instance_id = req.group_instance_id.clone();
        if let Some(rack) = sub.rack_id.clone().filter(|r| !r.is_empty()) {
            updated.rack_id = Some(rack);
        }
        let rebalance_timeout = if ctx.api_version == 0 {
            req.session_timeout_ms
        } else {
            req.rebalance_timeout_ms
        };
        if rebalance_timeout != -1 {
            updated.rebalance_timeout_ms = rebalance_timeout;
        }
        updated.server_assignor = None;
        updated.subscribed_topic_names = sub.topics.iter().cloned().collect();
        updated.client_id = ctx.client_id.clone();
        updated.client_host = ctx.client_host.clone();
        updated.classic = Some(ClassicMeta {
            session_timeout_ms: req.session_timeout_ms,
            protocols: req
                .protocols
                .iter()
                .map(|p| (p.name.clone(), p.metadata.clone()))
                .collect(),
        });

        // 1. Member, subscription metadata, group epoch.
        let mut bump = before.as_ref().is_none_or(|b| {
            b.subscribed_topic_names != updated.subscribed_topic_names
                || b.subscribed_topic_regex != updated.subscribed_topic_regex
        });
        if let Some(old) = &replaced {
            let old_target = g.target.get(old).cloned().unwrap_or_default();
            self.remove_member_records(&group_id, old);
            self.cancel_consumer_timers(&group_id, old);
            self.write_member_metadata(&group_id, &updated);
            self.write_consumer(R::ConsumerGroupTargetAssignmentMember(
                ConsumerGroupTargetAssignmentMemberKey {
                    group_id: group_id.clone(),
                    member_id: member_id.clone(),
                },
                Some(target_value(&old_target)),
            ));
            self.write_current_assignment(&group_id, &updated);
            bump = false;
        } else if before
            .as_ref()
            .is_none_or(|b| b.metadata_value() != updated.metadata_value())
        {
            self.write_member_metadata(&group_id, &updated);
            if before.is_none() {
                self.write_current_assignment(&group_id, &updated);
            }
        }
        let new_metadata = self.subscription_metadata(&group_id);
        if group_of(&self.groups, &group_id)
            .is_some_and(|g| g.subscription_metadata != new_metadata)
        {
            self.write_consumer(R::ConsumerGroupPartitionMetadata(
                ConsumerGroupPartitionMetadataKey {
                    group_id: group_id.clone(),
                },
                Some(metadata_value(&new_metadata)),
            ));
            bump = true;
        }
        if bump {
            self.bump_group_epoch(&group_id);
        }
        // 2. Target assignment; 3. one reconciliation step with the owned partitions.
        self.maybe_update_target_assignment(&group_id);
        let owned = embedded::owned_partitions(&sub, &self.topics);
        self.reconcile(&group_id, &member_id, Some(&owned))?;

        let Some(m) = group_of(&self.groups, &group_id).and_then(|g| g.members.get(&member_id))
        else {
            return Err(fail(ErrorCode::UnknownServerError, "member vanished"));
        };
        let epoch = m.member_epoch;
        let session = i64::from(req.session_timeout_ms.max(1));
        let key = |kind: fn(String, String) -> TimerKey| kind(group_id.clone(), member_id.clone());
        self.core
            .timers
            .cancel(&key(|group, member| TimerKey::ClassicJoin {
                group,
                member,
            }));
        self.core.schedule(
            key(|group, member| TimerKey::ConsumerSession { group, member }),
            session,
            TimerTask::ExpireConsumerSession,
        );
        self.core.schedule(
            key(|group, member| TimerKey::ClassicSync { group, member }),
            i64::from(rebalance_timeout.max(1)),
            TimerTask::FenceClassicMember,
        );
        Ok(JoinGroupResponse {
            member_id,
            generation_id: epoch,
            protocol_type: Some(CONSUMER_PROTOCOL_TYPE.to_string()),
            protocol_name: Some(first.name.clone()),
            leader: String::new(),
            ..JoinGroupResponse::default()
        })
    }

    /// A SyncGroup to a consumer group (Kafka's `classicGroupSyncToConsumerGroup`).
    pub(crate) fn classic_sync_consumer_group(
        &mut self,
        req: &SyncGroupRequest,
    ) -> SyncGroupResponse {
        let error = |code: ErrorCode| crate::classic::rebalance::sync_error(code);
        let Some(g) = group_of(&self.groups, &req.group_id) else {
            return error(ErrorCode::UnknownMemberId);
        };
        let m = match g.classic_member(&req.member_id, req.group_instance_id.as_deref()) {
            Ok(m) => m.clone(),
            Err(code) => return error(code),
        };
        if req.generation_id != m.member_epoch {
            return error(ErrorCode::IllegalGeneration);
        }
        let Some(classic) = &m.classic else {
            return error(ErrorCode::UnknownMemberId);
        };
        let protocol = classic.protocol_name().to_string();
        if req
            .protocol_type
            .as_deref()
            .is_some_and(|t| t != CONSUMER_PROTOCOL_TYPE)
            || req.protocol_name.as_deref().is_some_and(|n| n != protocol)
        {
            return error(ErrorCode::InconsistentGroupProtocol);
        }
        if g.group_epoch > m.member_epoch && m.state != MemberState::UnrevokedPartitions {
            self.schedule_classic_rejoin(&req.group_id, &m);
            return error(ErrorCode::RebalanceInProgress);
        }
        let version = classic
            .protocols
            .first()
            .and_then(|(_, md)| embedded::version_of(md))
            .unwrap_or(0);
        let assignment = embedded::encode_assignment(&m.assigned, &self.topics, version);
        let (group, member) = (req.group_id.clone(), m.member_id.clone());
        self.core.timers.cancel(&TimerKey::ClassicSync {
            group: group.clone(),
            member: member.clone(),
        });
        self.core.schedule(
            TimerKey::ConsumerSession { group, member },
            i64::from(classic.session_timeout_ms.max(1)),
            TimerTask::ExpireConsumerSession,
        );
        SyncGroupResponse {
            protocol_type: req.protocol_type.clone(),
            protocol_name: req.protocol_name.clone(),
            assignment,
            ..SyncGroupResponse::default()
        }
    }

    /// A Heartbeat to a consumer group (Kafka's `classicGroupHeartbeatToConsumerGroup`).
    pub(crate) fn classic_heartbeat_consumer_group(&mut self, req: &HeartbeatRequest) -> ErrorCode {
        let Some(g) = group_of(&self.groups, &req.group_id) else {
            return ErrorCode::UnknownMemberId;
        };
        let m = match g.classic_member(&req.member_id, req.group_instance_id.as_deref()) {
            Ok(m) => m.clone(),
            Err(code) => return code,
        };
        if req.generation_id != m.member_epoch {
            return ErrorCode::IllegalGeneration;
        }
        let behind = m.member_epoch < g.group_epoch
            || m.state == MemberState::UnrevokedPartitions
            || (m.state == MemberState::UnreleasedPartitions && !g.waiting_on_unreleased(&m));
        let session = m
            .classic
            .as_ref()
            .map_or(1, |c| c.session_timeout_ms.max(1));
        self.core.schedule(
            TimerKey::ConsumerSession {
                group: req.group_id.clone(),
                member: m.member_id.clone(),
            },
            i64::from(session),
            TimerTask::ExpireConsumerSession,
        );
        if behind {
            self.schedule_classic_rejoin(&req.group_id, &m);
            ErrorCode::RebalanceInProgress
        } else {
            ErrorCode::None
        }
    }

    /// The rejoin deadline after REBALANCE_IN_PROGRESS, unless one is already running.
    fn schedule_classic_rejoin(&mut self, group_id: &str, m: &ConsumerMember) {
        let key = TimerKey::ClassicJoin {
            group: group_id.to_string(),
            member: m.member_id.clone(),
        };
        if !self.core.timers.is_scheduled(&key) {
            self.core.schedule(
                key,
                i64::from(m.rebalance_timeout_ms.max(1)),
                TimerTask::FenceClassicMember,
            );
        }
    }

    /// A LeaveGroup naming members of a consumer group (Kafka's
    /// `classicGroupLeaveToConsumerGroup`): only classic members may leave this way.
    pub(crate) fn leave_consumer_group(
        &mut self,
        group_id: &str,
        ids: &[MemberIdentity],
    ) -> LeaveGroupResponse {
        let mut members = Vec::with_capacity(ids.len());
        let mut removed = false;
        for id in ids {
            let found = group_of(&self.groups, group_id).map(|g| {
                let m = match id.group_instance_id.as_deref() {
                    None => g
                        .members
                        .get(&id.member_id)
                        .ok_or(ErrorCode::UnknownMemberId),
                    Some(i) => {
                        let m = g
                            .static_members
                            .get(i)
                            .and_then(|mid| g.members.get(mid))
                            .ok_or(ErrorCode::UnknownMemberId);
                        match m {
                            Ok(m) if !id.member_id.is_empty() && m.member_id != id.member_id => {
                                Err(ErrorCode::FencedInstanceId)
                            }
                            other => other,
                        }
                    }
                };
                m.and_then(|m| {
                    if m.uses_classic_protocol() {
                        Ok(m.member_id.clone())
                    } else {
                        Err(ErrorCode::UnknownMemberId)
                    }
                })
            });
            match found.unwrap_or(Err(ErrorCode::UnknownMemberId)) {
                Ok(member_id) => {
                    self.remove_member_records(group_id, &member_id);
                    self.cancel_consumer_timers(group_id, &member_id);
                    removed = true;
                    members.push(MemberResponse {
                        member_id,
                        group_instance_id: id.group_instance_id.clone(),
                        error_code: 0,
                    });
                }
                Err(code) => members.push(MemberResponse {
                    member_id: id.member_id.clone(),
                    group_instance_id: id.group_instance_id.clone(),
                    error_code: code.code(),
                }),
            }
        }
        if removed && group_of(&self.groups, group_id).is_some() {
            let new_metadata = self.subscription_metadata(group_id);
            if group_of(&self.groups, group_id)
                .is_some_and(|g| g.subscription_metadata != new_metadata)
            {
                self.write_consumer(R::ConsumerGroupPartitionMetadata(
                    ConsumerGroupPartitionMetadataKey {
                        group_id: group_id.to_string(),
                    },
                    Some(metadata_value(&new_metadata)),
                ));
            }
            self.bump_group_epoch(group_id);
        }
        LeaveGroupResponse {
            members,
            ..LeaveGroupResponse::default()
        }
    }
}
