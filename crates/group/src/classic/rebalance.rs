//! The classic rebalance machinery: preparing a rebalance, completing the join phase,
//! propagating assignments, and what happens when a heartbeat, join or sync deadline passes.
//!
//! Mental model: these are Kafka's `GroupMetadataManager` procedures (prepareRebalance,
//! completeClassicGroupJoin, propagateAssignment, expire*...) written as methods of [`Core`]
//! that take the one group they act on, so they can arm timers and answer parked requests
//! while the group is borrowed from the shard. Each keeps the group's invariants (see
//! `group.rs`); a parked request is answered exactly once, by taking it out of its member.

use std::collections::BTreeMap;

use bytes::Bytes;
use skiff_protocol::{JoinGroupResponse, SyncGroupResponse};
use skiff_types::ErrorCode;

use crate::classic::group::{ClassicGroup, ClassicGroupState, Member, Parked};
use crate::effects::Response;
use crate::shard::Core;
use crate::timer::{TimerKey, TimerTask};

/// Shapes a JoinGroup response for the version it answers.
pub(crate) fn fit_join(mut r: JoinGroupResponse, version: i16) -> JoinGroupResponse {
    if version < 7 && r.protocol_name.is_none() {
        r.protocol_name = Some(String::new());
    }
    if version < 9 {
        r.skip_assignment = false;
    }
    r
}

/// A JoinGroup error response.
pub(crate) fn join_error(member_id: &str, code: ErrorCode) -> JoinGroupResponse {
    JoinGroupResponse {
        error_code: code.code(),
        member_id: member_id.to_string(),
        protocol_type: None,
        protocol_name: None,
        ..JoinGroupResponse::default()
    }
}

/// A SyncGroup error response.
pub(crate) fn sync_error(code: ErrorCode) -> SyncGroupResponse {
    SyncGroupResponse {
        error_code: code.code(),
        protocol_type: None,
        protocol_name: None,
        ..SyncGroupResponse::default()
    }
}

fn heartbeat_key(g: &ClassicGroup, member_id: &str) -> TimerKey {
    TimerKey::Heartbeat {
        group: g.group_id.clone(),
        member: member_id.to_string(),
    }
}

impl Core {
    pub(crate) fn respond_join(&mut self, p: Parked, r: JoinGroupResponse) {
        self.respond(p.token, Response::JoinGroup(fit_join(r, p.version)));
    }

    pub(crate) fn respond_sync(&mut self, p: Parked, r: SyncGroupResponse) {
        self.respond(p.token, Response::SyncGroup(r));
    }

    /// Answers the member's parked JoinGroup, if any.
    pub(crate) fn complete_join_future(&mut self, m: &mut Member, r: JoinGroupResponse) -> bool {
        match m.awaiting_join.take() {
            Some(p) => {
                self.respond_join(p, r);
                true
            }
            None => false,
        }
    }

    /// Answers the member's parked SyncGroup, if any.
    pub(crate) fn complete_sync_future(&mut self, m: &mut Member, r: SyncGroupResponse) -> bool {
        match m.awaiting_sync.take() {
            Some(p) => {
                self.respond_sync(p, r);
                true
            }
            None => false,
        }
    }

    /// (Re)arms a member's heartbeat deadline.
    pub(crate) fn reschedule_heartbeat(&mut self, g: &ClassicGroup, member_id: &str, ms: i64) {
        self.schedule(
            heartbeat_key(g, member_id),
            ms.max(1),
            TimerTask::ExpireHeartbeat,
        );
    }

    pub(crate) fn reschedule_member_heartbeat(&mut self, g: &ClassicGroup, member_id: &str) {
        if let Some(m) = g.members.get(member_id) {
            let ms = i64::from(m.session_timeout_ms);
            self.reschedule_heartbeat(g, member_id, ms);
        }
    }

    /// Removes a member, answering its parked requests with `code` and dropping its timer.
    pub(crate) fn drop_member(&mut self, g: &mut ClassicGroup, member_id: &str, code: ErrorCode) {
        if let Some(mut m) = g.remove(member_id) {
            self.complete_join_future(&mut m, join_error("", code));
            self.complete_sync_future(&mut m, sync_error(code));
        }
        self.timers.cancel(&heartbeat_key(g, member_id));
    }

    /// Kafka's `maybePrepareRebalanceOrCompleteJoin`.
    pub(crate) fn maybe_prepare_rebalance_or_complete_join(&mut self, g: &mut ClassicGroup) {
        if g.can_rebalance() {
            self.prepare_rebalance(g);
        } else {
            self.maybe_complete_join_phase(g);
        }
    }

    /// Kafka's `prepareRebalance`: cancel a sync phase, enter PreparingRebalance, and either
    /// wait `group.initial.rebalance.delay.ms` (a group coming from Empty) or the rebalance
    /// timeout for members to rejoin.
    pub(crate) fn prepare_rebalance(&mut self, g: &mut ClassicGroup) {
        if g.is(ClassicGroupState::CompletingRebalance) {
            self.reset_and_propagate_assignment_with_error(g, ErrorCode::RebalanceInProgress);
        }
        self.remove_sync_expiration(g);
        let initial = g.is(ClassicGroupState::Empty);
        if initial {
            let delay_ms = i64::from(self.config.initial_rebalance_delay_ms);
            let remaining_ms = (g.rebalance_timeout_ms() - delay_ms).max(0);
            self.schedule(
                TimerKey::Join {
                    group: g.group_id.clone(),
                },
                delay_ms,
                TimerTask::InitialRebalance {
                    delay_ms,
                    remaining_ms,
                },
            );
        }
        g.transition(ClassicGroupState::PreparingRebalance, self.now);
        if !initial {
            self.maybe_complete_join_else_schedule(g);
        }
    }

    fn maybe_complete_join_else_schedule(&mut self, g: &mut ClassicGroup) {
        if g.has_all_members_joined() {
            self.complete_join(g);
        } else {
            let timeout = g.rebalance_timeout_ms();
            self.schedule(
                TimerKey::Join {
                    group: g.group_id.clone(),
                },
                timeout,
                TimerTask::CompleteJoin,
            );
        }
    }

    /// Kafka's `maybeCompleteJoinPhase`: complete when everyone rejoined, except during the
    /// initial rebalance (which waits for its delay).
    pub(crate) fn maybe_complete_join_phase(&mut self, g: &mut ClassicGroup) {
        if g.is(ClassicGroupState::PreparingRebalance)
            && g.previous_state != ClassicGroupState::Empty
            && g.has_all_members_joined()
        {
            self.complete_join(g);
        }
    }

    /// Kafka's `tryCompleteInitialRebalanceElseSchedule`: extend the initial delay while new
    /// members keep arriving, up to the rebalance timeout.
    pub(crate) fn try_complete_initial_rebalance(
        &mut self,
        g: &mut ClassicGroup,
        delay_ms: i64,
        remaining_ms: i64,
    ) {
        if g.new_member_added && remaining_ms != 0 {
            g.new_member_added = false;
            let configured = i64::from(self.config.initial_rebalance_delay_ms);
            let new_delay = configured.min(remaining_ms);
            let new_remaining = (remaining_ms - delay_ms).max(0);
            self.schedule(
                TimerKey::Join {
                    group: g.group_id.clone(),
                },
                new_delay,
                TimerTask::InitialRebalance {
                    delay_ms: new_delay,
                    remaining_ms: new_remaining,
                },
            );
        } else {
            self.complete_join(g);
        }
    }

    /// Kafka's `completeClassicGroupJoin`: drop dynamic members that did not rejoin, start the
    /// next generation, answer every parked JoinGroup (the leader gets the member list) and
    /// wait for SyncGroup.
    pub(crate) fn complete_join(&mut self, g: &mut ClassicGroup) {
        self.timers.cancel(&TimerKey::Join {
            group: g.group_id.clone(),
        });
        let gone: Vec<String> = g
            .members
            .values()
            .filter(|m| m.awaiting_join.is_none() && m.instance_id.is_none())
            .map(|m| m.member_id.clone())
            .collect();
        for id in gone {
            self.drop_member(g, &id, ErrorCode::UnknownMemberId);
        }
        if g.is(ClassicGroupState::Dead) {
            return;
        }
        if !g.maybe_elect_new_joined_leader() && !g.members.is_empty() {
            // Only static members that have not rejoined are left: wait for them (or for their
            // sessions to expire).
            let timeout = g.rebalance_timeout_ms();
            self.schedule(
                TimerKey::Join {
                    group: g.group_id.clone(),
                },
                timeout,
                TimerTask::CompleteJoin,
            );
            return;
        }
        g.init_next_generation(self.now);
        if g.is(ClassicGroupState::Empty) {
            self.record_group_metadata(g);
            return;
        }
        let ids: Vec<String> = g.members.keys().cloned().collect();
        let all_members = g.join_response_members();
        for id in ids {
            let response = JoinGroupResponse {
                members: if g.is_leader(&id) {
                    all_members.clone()
                } else {
                    Vec::new()
                },
                member_id: id.clone(),
                generation_id: g.generation,
                protocol_name: g.protocol_name.clone(),
                protocol_type: g.protocol_type.clone(),
                leader: g.leader.clone().unwrap_or_default(),
                skip_assignment: false,
                ..JoinGroupResponse::default()
            };
            if let Some(m) = g.members.get_mut(&id) {
                self.complete_join_future(m, response);
                m.is_new = false;
            }
            self.reschedule_member_heartbeat(g, &id);
            g.pending_sync.insert(id);
        }
        self.schedule_pending_sync(g);
    }

    fn schedule_pending_sync(&mut self, g: &ClassicGroup) {
        let timeout = g.rebalance_timeout_ms();
        self.schedule(
            TimerKey::Sync {
                group: g.group_id.clone(),
            },
            timeout,
            TimerTask::ExpireSync {
                generation: g.generation,
            },
        );
    }

    pub(crate) fn remove_sync_expiration(&mut self, g: &mut ClassicGroup) {
        g.pending_sync.clear();
        self.timers.cancel(&TimerKey::Sync {
            group: g.group_id.clone(),
        });
    }

    /// Kafka's `removePendingSyncMember`.
    pub(crate) fn remove_pending_sync_member(&mut self, g: &mut ClassicGroup, member_id: &str) {
        g.pending_sync.remove(member_id);
        let done = match g.state {
            ClassicGroupState::CompletingRebalance | ClassicGroupState::Stable => {
                g.pending_sync.is_empty()
            }
            _ => true,
        };
        if done {
            self.timers.cancel(&TimerKey::Sync {
                group: g.group_id.clone(),
            });
        }
    }

    pub(crate) fn reset_and_propagate_assignment_with_error(
        &mut self,
        g: &mut ClassicGroup,
        code: ErrorCode,
    ) {
        for m in g.members.values_mut() {
            m.assignment = Bytes::new();
        }
        self.propagate_assignment(g, code);
    }

    pub(crate) fn set_and_propagate_assignment(
        &mut self,
        g: &mut ClassicGroup,
        mut assignment: BTreeMap<String, Bytes>,
    ) {
        for m in g.members.values_mut() {
            m.assignment = assignment.remove(&m.member_id).unwrap_or_default();
        }
        self.propagate_assignment(g, ErrorCode::None);
    }

    /// Answers every parked SyncGroup with the member's assignment (or the error), and
    /// restarts the session of each member answered.
    fn propagate_assignment(&mut self, g: &mut ClassicGroup, code: ErrorCode) {
        let ok = code == ErrorCode::None;
        let (protocol_type, protocol_name) = if ok {
            (g.protocol_type.clone(), g.protocol_name.clone())
        } else {
            (None, None)
        };
        let mut answered = Vec::new();
        for m in g.members.values_mut() {
            let r = SyncGroupResponse {
                error_code: code.code(),
                protocol_type: protocol_type.clone(),
                protocol_name: protocol_name.clone(),
                assignment: m.assignment.clone(),
                ..SyncGroupResponse::default()
            };
            if self.complete_sync_future(m, r) {
                answered.push(m.member_id.clone());
            }
        }
        for id in answered {
            self.reschedule_member_heartbeat(g, &id);
        }
    }

    /// A heartbeat deadline passed (Kafka's `expireClassicGroupMemberHeartbeat`).
    pub(crate) fn expire_heartbeat(&mut self, g: &mut ClassicGroup, member_id: &str) {
        if g.is(ClassicGroupState::Dead) {
            return;
        }
        if g.pending_join.contains(member_id) {
            g.remove(member_id);
            if g.is(ClassicGroupState::PreparingRebalance) && g.has_all_members_joined() {
                self.complete_join(g);
            }
            return;
        }
        let Some(m) = g.members.get(member_id) else {
            return;
        };
        if m.has_satisfied_heartbeat() {
            return;
        }
        self.remove_member_and_update_group(g, member_id);
    }

    /// Kafka's `removeMemberAndUpdateClassicGroup`.
    pub(crate) fn remove_member_and_update_group(&mut self, g: &mut ClassicGroup, member_id: &str) {
        self.drop_member(g, member_id, ErrorCode::UnknownMemberId);
        match g.state {
            ClassicGroupState::Stable | ClassicGroupState::CompletingRebalance => {
                self.maybe_prepare_rebalance_or_complete_join(g)
            }
            ClassicGroupState::PreparingRebalance if g.has_all_members_joined() => {
                self.complete_join(g)
            }
            _ => {}
        }
    }

    /// The sync deadline passed (Kafka's `expirePendingSync`): members that never sent
    /// SyncGroup are removed and the group rebalances.
    pub(crate) fn expire_pending_sync(&mut self, g: &mut ClassicGroup, generation: i32) {
        if generation != g.generation {
            return;
        }
        if !matches!(
            g.state,
            ClassicGroupState::CompletingRebalance | ClassicGroupState::Stable
        ) {
            return;
        }
        if g.pending_sync.is_empty() {
            return;
        }
        let pending: Vec<String> = g.pending_sync.iter().cloned().collect();
        for id in pending {
            self.drop_member(g, &id, ErrorCode::UnknownMemberId);
        }
        self.prepare_rebalance(g);
    }
}
