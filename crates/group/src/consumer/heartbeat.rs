//! ConsumerGroupHeartbeat (KIP-848): join, reconcile, leave; and the session and rebalance
//! timeouts that fence members.
//!
//! Mental model (Kafka's `consumerGroupHeartbeat`): every heartbeat (1) creates or updates the
//! member and bumps the group epoch when subscriptions or the subscribed topics' metadata
//! changed, (2) recomputes the target assignment when the group epoch is ahead of it, and
//! (3) moves the member one step towards its target: first it must revoke what others need
//! (state UNREVOKED_PARTITIONS, same epoch), then it gets the target epoch and whatever of its
//! target is free (UNRELEASED_PARTITIONS while some is still held by others). A partition is
//! never given to a member while another member still holds it. All changes are written as
//! records and applied through the same code as replay.

use std::collections::BTreeMap;

use skiff_protocol::{
    ConsumerGroupCurrentMemberAssignmentKey, ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse, ConsumerGroupHeartbeatResponseAssignment,
    ConsumerGroupHeartbeatResponseTopicPartitions, ConsumerGroupMemberMetadataKey,
    ConsumerGroupMetadataKey, ConsumerGroupMetadataValue, ConsumerGroupPartitionMetadataKey,
    ConsumerGroupTargetAssignmentMemberKey,
};
use skiff_types::ErrorCode;

use crate::classic::group::ClassicGroupState;
use crate::consumer::group::{
    Assignment, ConsumerGroup, ConsumerMember, LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH, MemberState, TopicInfo, metadata_value, target_value,
};
use crate::consumer::reconcile::validate_epoch;
use crate::consumer::topic_regex::{group_topics, validate as validate_regex};
use crate::effects::{Effects, RequestContext, Response};
use crate::records::CoordinatorRecord as R;
use crate::shard::{Group, GroupCoordinatorShard};
use crate::timer::{TimerKey, TimerTask};

/// ConsumerGroupHeartbeat v1+ requires the client to choose its member id (KIP-1082).
const CLIENT_MEMBER_ID_MIN_VERSION: i16 = 1;

pub(super) type Failure = (ErrorCode, Option<String>);

pub(super) fn fail(code: ErrorCode, msg: impl Into<String>) -> Failure {
    (code, Some(msg.into()))
}

fn invalid(msg: &str) -> Failure {
    fail(ErrorCode::InvalidRequest, msg)
}

pub(super) fn group_of<'a>(
    groups: &'a BTreeMap<String, Group>,
    id: &str,
) -> Option<&'a ConsumerGroup> {
    match groups.get(id) {
        Some(Group::Consumer(g)) => Some(g),
        _ => None,
    }
}

impl GroupCoordinatorShard {
    /// Handles a ConsumerGroupHeartbeat (v0-1).
    pub fn handle_consumer_group_heartbeat(
        &mut self,
        ctx: &RequestContext,
        req: &ConsumerGroupHeartbeatRequest,
        now_ms: i64,
    ) -> Effects {
        self.begin(now_ms);
        let r = self
            .consumer_heartbeat(ctx, req)
            .unwrap_or_else(|(code, message)| ConsumerGroupHeartbeatResponse {
                error_code: code.code(),
                error_message: message,
                ..Default::default()
            });
        self.core
            .respond(ctx.token, Response::ConsumerGroupHeartbeat(r));
        self.finish()
    }

    /// Writes a consumer-group record and applies it (live path of replay).
    pub(crate) fn write_consumer(&mut self, record: R) {
        self.apply_consumer(&record);
        self.core.record(record);
    }

    /// Applies a consumer-group record to memory (replay and live).
    pub(crate) fn apply_consumer(&mut self, record: &R) {
        let id = record.group_id().to_string();
        if !matches!(self.groups.get(&id), Some(Group::Consumer(_))) {
            if matches!(record, R::ConsumerGroupMetadata(_, None)) {
                return;
            }
            self.groups
                .insert(id.clone(), Group::Consumer(ConsumerGroup::new()));
        }
        if let Some(Group::Consumer(g)) = self.groups.get_mut(&id)
            && !g.apply(record)
        {
            self.groups.remove(&id);
        }
    }

    fn validate_heartbeat(
        &self,
        version: i16,
        req: &ConsumerGroupHeartbeatRequest,
    ) -> Result<(), Failure> {
        if req.group_id.is_empty() {
            return Err(invalid("GroupId can't be empty."));
        }
        if req.instance_id.as_deref() == Some("") {
            return Err(invalid("InstanceId can't be empty."));
        }
        if req.rack_id.as_deref() == Some("") {
            return Err(invalid("RackId can't be empty."));
        }
        match req.member_epoch {
            e if e > 0 || e == LEAVE_GROUP_MEMBER_EPOCH => {
                if req.member_id.is_empty() {
                    return Err(invalid("MemberId can't be empty."));
                }
            }
            0 => {
                if version >= CLIENT_MEMBER_ID_MIN_VERSION && req.member_id.is_empty() {
                    return Err(invalid("MemberId can't be empty."));
                }
                if req.rebalance_timeout_ms == -1 {
                    return Err(invalid(
                        "RebalanceTimeoutMs must be provided in first request.",
                    ));
                }
                if req.topic_partitions.as_ref().is_none_or(|t| !t.is_empty()) {
                    return Err(invalid("TopicPartitions must be empty when (re-)joining."));
                }
                if req.subscribed_topic_names.is_none() && req.subscribed_topic_regex.is_none() {
                    return Err(invalid(
                        "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.",
                    ));
                }
            }
            LEAVE_GROUP_STATIC_MEMBER_EPOCH => {
                if req.member_id.is_empty() {
                    return Err(invalid("MemberId can't be empty."));
                }
                if req.instance_id.is_none() {
                    return Err(invalid("InstanceId can't be null."));
                }
            }
            _ => return Err(invalid("MemberEpoch is invalid.")),
        }
        if let Some(a) = &req.server_assignor
            && !self.core.config.consumer_assignors.contains(a)
        {
            return Err(fail(
                ErrorCode::UnsupportedAssignor,
                format!("ServerAssignor {a} is not supported."),
            ));
        }
        Ok(())
    }

    fn consumer_heartbeat(
        &mut self,
        ctx: &RequestContext,
        req: &ConsumerGroupHeartbeatRequest,
    ) -> Result<ConsumerGroupHeartbeatResponse, Failure> {
        self.validate_heartbeat(ctx.api_version, req)?;
        if req.member_epoch < 0 {
            return self.consumer_leave(req);
        }
        let group_id = req.group_id.clone();
        match self.groups.get(&group_id) {
            Some(Group::Classic(g)) if g.is(ClassicGroupState::Empty) => {
                // An empty classic group becomes a consumer group.
                self.core.record_group_tombstone(&group_id);
                self.groups.remove(&group_id);
            }
            Some(Group::Classic(_)) => {
                if req.member_epoch != 0 {
                    return Err(fail(
                        ErrorCode::GroupIdNotFound,
                        format!("Group {group_id} is not a consumer group."),
                    ));
                }
                // A classic group with members converts online (the migration policy allows).
                self.upgrade_classic_group(&group_id)?;
            }
            Some(Group::Consumer(_)) => {}
            None if req.member_epoch != 0 => {
                return Err(fail(
                    ErrorCode::UnknownMemberId,
                    format!("Group {group_id} has no such member."),
                ));
            }
            None => {}
        }
        let created = !self.groups.contains_key(&group_id);
        if created {
            self.groups
                .insert(group_id.clone(), Group::Consumer(ConsumerGroup::new()));
        }
        let member_id = if req.member_id.is_empty() {
            self.core.new_uuid().to_string()
        } else {
            req.member_id.clone()
        };
        let (before, base, replaced) = match self.resolve_member(req, &member_id) {
            Ok(x) => x,
            Err(e) => {
                if created {
                    self.groups.remove(&group_id);
                }
                return Err(e);
            }
        };

        // 1. The member's subscription, the group's subscription metadata and epoch.
        let mut updated = base.clone();
        if let Some(i) = &req.instance_id {
            updated.instance_id = Some(i.clone());
        }
        if let Some(r) = &req.rack_id {
            updated.rack_id = Some(r.clone());
        }
        if req.rebalance_timeout_ms != -1 {
            updated.rebalance_timeout_ms = req.rebalance_timeout_ms;
        }
        if let Some(a) = &req.server_assignor {
            updated.server_assignor = Some(a.clone());
        }
        if let Some(names) = &req.subscribed_topic_names {
            updated.subscribed_topic_names = names.iter().cloned().collect();
        }
        if let Some(regex) = &req.subscribed_topic_regex {
            // "" clears the regex (Kafka stores the empty string as "no regex").
            updated.subscribed_topic_regex = (!regex.is_empty()).then(|| regex.clone());
            if updated.subscribed_topic_regex != base.subscribed_topic_regex
                && let Some(r) = &updated.subscribed_topic_regex
                && let Err(message) = validate_regex(r)
            {
                if created {
                    self.groups.remove(&group_id);
                }
                return Err(fail(ErrorCode::InvalidRegularExpression, message));
            }
        }
        updated.client_id = ctx.client_id.clone();
        updated.client_host = ctx.client_host.clone();
        let mut bump = updated.subscribed_topic_names != base.subscribed_topic_names
            || updated.subscribed_topic_regex != base.subscribed_topic_regex;
        if let Some(old) = &replaced {
            let old_target = group_of(&self.groups, &group_id)
                .and_then(|g| g.target.get(old))
                .cloned()
                .unwrap_or_default();
            self.remove_member_records(&group_id, old);
            self.write_member_metadata(&group_id, &updated);
            self.write_consumer(R::ConsumerGroupTargetAssignmentMember(
                ConsumerGroupTargetAssignmentMemberKey {
                    group_id: group_id.clone(),
                    member_id: member_id.clone(),
                },
                Some(target_value(&old_target)),
            ));
            self.write_current_assignment(&group_id, &base);
        } else if before.is_none() {
            self.write_member_metadata(&group_id, &updated);
        } else if before.as_ref() != Some(&base) {
            // A member rejoining from scratch (epoch 0): it holds nothing any more.
            self.write_member_metadata(&group_id, &updated);
            self.write_current_assignment(&group_id, &base);
        } else if group_of(&self.groups, &group_id).is_some_and(|g| g.metadata_changed(&updated)) {
            self.write_member_metadata(&group_id, &updated);
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

        // 2. The target assignment.
        self.maybe_update_target_assignment(&group_id);

        // 3. Reconcile the member towards its target.
        self.reconcile(&group_id, &member_id, req.topic_partitions.as_deref())?;
        let session = i64::from(self.consumer_session_timeout_ms(&group_id));
        self.core.schedule(
            TimerKey::ConsumerSession {
                group: group_id.clone(),
                member: member_id.clone(),
            },
            session,
            TimerTask::ExpireConsumerSession,
        );

        let Some(m) = group_of(&self.groups, &group_id).and_then(|g| g.members.get(&member_id))
        else {
            return Err(fail(ErrorCode::UnknownServerError, "member vanished"));
        };
        let full = req.member_epoch == 0
            || (req.rebalance_timeout_ms != -1
                && (req.subscribed_topic_names.is_some() || req.subscribed_topic_regex.is_some())
                && req.topic_partitions.is_some());
        let changed = before.as_ref().is_none_or(|b| b.assigned != m.assigned);
        Ok(ConsumerGroupHeartbeatResponse {
            member_id: Some(member_id.clone()),
            member_epoch: m.member_epoch,
            heartbeat_interval_ms: self.consumer_heartbeat_interval_ms(&group_id),
            assignment: (full || changed).then(|| response_assignment(&m.assigned)),
            ..Default::default()
        })
    }

    /// Finds or creates the member a heartbeat is about. Returns (the stored member, the base
    /// to update, the id of a static member being replaced).
    #[allow(clippy::type_complexity)]
    fn resolve_member(
        &self,
        req: &ConsumerGroupHeartbeatRequest,
        member_id: &str,
    ) -> Result<(Option<ConsumerMember>, ConsumerMember, Option<String>), Failure> {
        let Some(g) = group_of(&self.groups, &req.group_id) else {
            return Err(fail(ErrorCode::UnknownServerError, "group vanished"));
        };
        let existing = g.members.get(member_id).cloned();
        let max = usize::try_from(self.core.config.consumer_group_size_max).unwrap_or(usize::MAX);
        let replacing_static = req
            .instance_id
            .as_ref()
            .is_some_and(|i| g.static_members.contains_key(i));
        if existing.is_none() && !replacing_static && g.members.len() >= max {
            return Err(fail(
                ErrorCode::GroupMaxSizeReached,
                "The consumer group has reached its maximum size.",
            ));
        }
        let rejoin = |m: &ConsumerMember, keep: bool| {
            let mut b = m.clone();
            b.member_epoch = 0;
            b.previous_member_epoch = 0;
            b.state = MemberState::Stable;
            b.pending_revocation.clear();
            if !keep {
                b.assigned.clear();
            }
            b
        };
        match &req.instance_id {
            None => match (req.member_epoch, existing) {
                (0, None) => Ok((None, ConsumerMember::new(member_id), None)),
                (0, Some(m)) => Ok((Some(m.clone()), rejoin(&m, false), None)),
                (_, None) => Err(fail(
                    ErrorCode::UnknownMemberId,
                    format!("Member {member_id} is not a member of the group."),
                )),
                (epoch, Some(m)) => {
                    validate_epoch(&m, epoch, req.topic_partitions.as_deref())?;
                    Ok((Some(m.clone()), m, None))
                }
            },
            Some(instance) => {
                let holder = g
                    .static_members
                    .get(instance)
                    .and_then(|id| g.members.get(id))
                    .cloned();
                if req.member_epoch == 0 {
                    return match holder {
                        None => Ok((
                            existing.clone(),
                            existing.map_or_else(
                                || ConsumerMember::new(member_id),
                                |m| rejoin(&m, false),
                            ),
                            None,
                        )),
                        Some(h)
                            if h.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH
                                && h.member_id != member_id =>
                        {
                            Err(fail(
                                ErrorCode::UnreleasedInstanceId,
                                format!(
                                    "Instance id {instance} is still in use by member {}.",
                                    h.member_id
                                ),
                            ))
                        }
                        Some(h) if h.member_id == member_id => {
                            let keep = h.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH;
                            Ok((Some(h.clone()), rejoin(&h, keep), None))
                        }
                        Some(h) => {
                            // The instance came back under a new member id: it takes over the
                            // old member's assignment.
                            let mut b = rejoin(&h, true);
                            b.member_id = member_id.to_string();
                            Ok((None, b, Some(h.member_id)))
                        }
                    };
                }
                let Some(h) = holder else {
                    return Err(fail(
                        ErrorCode::UnknownMemberId,
                        format!("Instance id {instance} is unknown."),
                    ));
                };
                if h.member_id != member_id {
                    return Err(fail(
                        ErrorCode::FencedInstanceId,
                        format!("Static member {member_id} was fenced by {}.", h.member_id),
                    ));
                }
                validate_epoch(&h, req.member_epoch, req.topic_partitions.as_deref())?;
                Ok((Some(h.clone()), h, None))
            }
        }
    }

    pub(super) fn write_member_metadata(&mut self, group_id: &str, m: &ConsumerMember) {
        self.write_consumer(R::ConsumerGroupMemberMetadata(
            ConsumerGroupMemberMetadataKey {
                group_id: group_id.to_string(),
                member_id: m.member_id.clone(),
            },
            Some(m.metadata_value()),
        ));
    }

    pub(super) fn write_current_assignment(&mut self, group_id: &str, m: &ConsumerMember) {
        self.write_consumer(R::ConsumerGroupCurrentMemberAssignment(
            ConsumerGroupCurrentMemberAssignmentKey {
                group_id: group_id.to_string(),
                member_id: m.member_id.clone(),
            },
            Some(m.assignment_value()),
        ));
    }

    /// Tombstones for one member, in Kafka's order.
    pub(crate) fn remove_member_records(&mut self, group_id: &str, member_id: &str) {
        let g = group_id.to_string();
        let m = member_id.to_string();
        self.write_consumer(R::ConsumerGroupCurrentMemberAssignment(
            ConsumerGroupCurrentMemberAssignmentKey {
                group_id: g.clone(),
                member_id: m.clone(),
            },
            None,
        ));
        self.write_consumer(R::ConsumerGroupTargetAssignmentMember(
            ConsumerGroupTargetAssignmentMemberKey {
                group_id: g.clone(),
                member_id: m.clone(),
            },
            None,
        ));
        self.write_consumer(R::ConsumerGroupMemberMetadata(
            ConsumerGroupMemberMetadataKey {
                group_id: g,
                member_id: m,
            },
            None,
        ));
    }

    pub(super) fn bump_group_epoch(&mut self, group_id: &str) {
        let epoch = group_of(&self.groups, group_id)
            .map_or(0, |g| g.group_epoch)
            .saturating_add(1);
        self.write_consumer(R::ConsumerGroupMetadata(
            ConsumerGroupMetadataKey {
                group_id: group_id.to_string(),
            },
            Some(ConsumerGroupMetadataValue { epoch }),
        ));
    }

    /// The subscribed topics that exist, from the current topic metadata (names, and what the
    /// members' regexes match now).
    pub(super) fn subscription_metadata(&self, group_id: &str) -> BTreeMap<String, TopicInfo> {
        let Some(g) = group_of(&self.groups, group_id) else {
            return BTreeMap::new();
        };
        group_topics(g, &self.resolve_regexes(g))
            .into_iter()
            .filter_map(|n| self.topics.get(&n).map(|t| (n, t.clone())))
            .collect()
    }

    fn consumer_leave(
        &mut self,
        req: &ConsumerGroupHeartbeatRequest,
    ) -> Result<ConsumerGroupHeartbeatResponse, Failure> {
        let Some(g) = group_of(&self.groups, &req.group_id) else {
            return Err(fail(ErrorCode::UnknownMemberId, "Unknown group."));
        };
        let member_id = match &req.instance_id {
            None => {
                if !g.members.contains_key(&req.member_id) {
                    return Err(fail(ErrorCode::UnknownMemberId, "Unknown member."));
                }
                req.member_id.clone()
            }
            Some(instance) => {
                let Some(holder) = g.static_members.get(instance).cloned() else {
                    return Err(fail(
                        ErrorCode::UnknownMemberId,
                        format!("Instance id {instance} is unknown."),
                    ));
                };
                if holder != req.member_id {
                    return Err(fail(
                        ErrorCode::FencedInstanceId,
                        "Fenced by another member.",
                    ));
                }
                if req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH {
                    // A temporary leave: keep the assignment for the session timeout.
                    if let Some(m) = g.members.get(&holder).cloned() {
                        let mut left = m;
                        left.member_epoch = LEAVE_GROUP_STATIC_MEMBER_EPOCH;
                        left.pending_revocation.clear();
                        self.write_current_assignment(&req.group_id, &left);
                    }
                    return Ok(ConsumerGroupHeartbeatResponse {
                        member_id: Some(holder),
                        member_epoch: LEAVE_GROUP_STATIC_MEMBER_EPOCH,
                        ..Default::default()
                    });
                }
                holder
            }
        };
        self.fence_consumer_member(&req.group_id, &member_id);
        Ok(ConsumerGroupHeartbeatResponse {
            member_id: Some(member_id),
            member_epoch: req.member_epoch,
            ..Default::default()
        })
    }

    /// Removes a member (Kafka's `consumerGroupFenceMember`): tombstones, the subscription
    /// metadata without it, and a group epoch bump.
    pub(crate) fn fence_consumer_member(&mut self, group_id: &str, member_id: &str) {
        if !group_of(&self.groups, group_id).is_some_and(|g| g.members.contains_key(member_id)) {
            return;
        }
        if self.maybe_downgrade(group_id, member_id) {
            return;
        }
        self.remove_member_records(group_id, member_id);
        let new_metadata = self.subscription_metadata(group_id);
        if group_of(&self.groups, group_id).is_some_and(|g| g.subscription_metadata != new_metadata)
        {
            self.write_consumer(R::ConsumerGroupPartitionMetadata(
                ConsumerGroupPartitionMetadataKey {
                    group_id: group_id.to_string(),
                },
                Some(metadata_value(&new_metadata)),
            ));
        }
        self.bump_group_epoch(group_id);
        self.cancel_consumer_timers(group_id, member_id);
    }

    pub(super) fn cancel_consumer_timers(&mut self, group_id: &str, member_id: &str) {
        let (g, m) = (group_id.to_string(), member_id.to_string());
        self.core.timers.cancel(&TimerKey::ConsumerSession {
            group: g.clone(),
            member: m.clone(),
        });
        self.core.timers.cancel(&TimerKey::ConsumerRebalance {
            group: g.clone(),
            member: m.clone(),
        });
        self.core.timers.cancel(&TimerKey::ClassicJoin {
            group: g.clone(),
            member: m.clone(),
        });
        self.core.timers.cancel(&TimerKey::ClassicSync {
            group: g,
            member: m,
        });
    }

    pub(crate) fn expire_consumer_session(&mut self, group_id: &str, member_id: &str) {
        self.fence_consumer_member(group_id, member_id);
    }

    pub(crate) fn expire_consumer_rebalance(
        &mut self,
        group_id: &str,
        member_id: &str,
        epoch: i32,
    ) {
        let still = group_of(&self.groups, group_id)
            .and_then(|g| g.members.get(member_id))
            .is_some_and(|m| {
                m.member_epoch == epoch && m.state == MemberState::UnrevokedPartitions
            });
        if still {
            self.fence_consumer_member(group_id, member_id);
        }
    }
}

fn response_assignment(a: &Assignment) -> ConsumerGroupHeartbeatResponseAssignment {
    ConsumerGroupHeartbeatResponseAssignment {
        topic_partitions: a
            .iter()
            .map(|(id, ps)| ConsumerGroupHeartbeatResponseTopicPartitions {
                topic_id: *id,
                partitions: ps.iter().copied().collect(),
            })
            .collect(),
    }
}
