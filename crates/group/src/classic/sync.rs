//! SyncGroup, Heartbeat and LeaveGroup for classic groups.
//!
//! Mental model: after the join phase every member sends SyncGroup; followers' requests are
//! parked until the leader's arrives with the assignment, which moves the group to Stable,
//! is written as a GroupMetadata record and answers everyone. Heartbeats only validate and
//! extend the session (and tell members to rejoin while a rebalance is in progress).
//! LeaveGroup removes members (by id, or by group.instance.id for admin removal, KIP-345)
//! and rebalances the rest.

use std::collections::BTreeMap;

use bytes::Bytes;
use skiff_protocol::{
    HeartbeatRequest, HeartbeatResponse, LeaveGroupRequest, LeaveGroupResponse, MemberIdentity,
    MemberResponse, SyncGroupRequest, SyncGroupResponse,
};
use skiff_types::ErrorCode;

use crate::classic::group::{ClassicGroup, ClassicGroupState, Parked};
use crate::classic::rebalance::{join_error, sync_error};
use crate::effects::{Effects, RequestContext, Response};
use crate::shard::{Group, GroupCoordinatorShard};
use crate::timer::TimerKey;

/// LeaveGroup v3+ carries a batch of members (KIP-345).
const LEAVE_BATCH_MIN_VERSION: i16 = 3;

fn inconsistent(requested: Option<&str>, group: Option<&str>) -> bool {
    matches!((requested, group), (Some(r), Some(g)) if r != g)
}

impl GroupCoordinatorShard {
    /// Handles a SyncGroup (v0-5); followers' responses come when the leader's arrives.
    pub fn handle_sync(
        &mut self,
        ctx: &RequestContext,
        req: &SyncGroupRequest,
        now_ms: i64,
    ) -> Effects {
        self.begin(now_ms);
        self.sync(ctx, req);
        self.finish()
    }

    fn sync(&mut self, ctx: &RequestContext, req: &SyncGroupRequest) {
        let parked = Parked {
            token: ctx.token,
            version: ctx.api_version,
        };
        if req.group_id.is_empty() {
            return self
                .core
                .respond_sync(parked, sync_error(ErrorCode::InvalidGroupId));
        }
        if let Some(Group::Consumer(_)) = self.groups.get(&req.group_id) {
            let r = self.classic_sync_consumer_group(req);
            return self.core.respond_sync(parked, r);
        }
        let g = match self.groups.get_mut(&req.group_id) {
            Some(Group::Classic(g)) if !g.is(ClassicGroupState::Empty) => g,
            _ => {
                return self
                    .core
                    .respond_sync(parked, sync_error(ErrorCode::UnknownMemberId));
            }
        };
        let core = &mut self.core;
        if let Err(code) = validate_sync(g, req) {
            return core.respond_sync(parked, sync_error(code));
        }
        match g.state {
            ClassicGroupState::PreparingRebalance => {
                core.respond_sync(parked, sync_error(ErrorCode::RebalanceInProgress));
            }
            ClassicGroupState::CompletingRebalance => {
                if let Some(m) = g.members.get_mut(&req.member_id)
                    && let Some(old) = m.awaiting_sync.replace(parked)
                {
                    core.respond_sync(old, sync_error(ErrorCode::RebalanceInProgress));
                }
                core.remove_pending_sync_member(g, &req.member_id);
                if g.is_leader(&req.member_id) {
                    let mut assignment: BTreeMap<String, Bytes> = BTreeMap::new();
                    for a in &req.assignments {
                        assignment.insert(a.member_id.clone(), a.assignment.clone());
                    }
                    core.set_and_propagate_assignment(g, assignment);
                    g.transition(ClassicGroupState::Stable, core.now);
                    core.record_group_metadata(g);
                }
            }
            ClassicGroupState::Stable => {
                core.remove_pending_sync_member(g, &req.member_id);
                let assignment = g
                    .members
                    .get(&req.member_id)
                    .map(|m| m.assignment.clone())
                    .unwrap_or_default();
                let r = SyncGroupResponse {
                    protocol_type: g.protocol_type.clone(),
                    protocol_name: g.protocol_name.clone(),
                    assignment,
                    ..SyncGroupResponse::default()
                };
                core.respond_sync(parked, r);
            }
            ClassicGroupState::Empty | ClassicGroupState::Dead => {
                core.respond_sync(parked, sync_error(ErrorCode::UnknownMemberId));
            }
        }
    }

    /// Handles a Heartbeat (v0-4).
    pub fn handle_heartbeat(
        &mut self,
        ctx: &RequestContext,
        req: &HeartbeatRequest,
        now_ms: i64,
    ) -> Effects {
        self.begin(now_ms);
        let code = self.heartbeat(req);
        let r = HeartbeatResponse {
            error_code: code.code(),
            ..HeartbeatResponse::default()
        };
        self.core.respond(ctx.token, Response::Heartbeat(r));
        self.finish()
    }

    fn heartbeat(&mut self, req: &HeartbeatRequest) -> ErrorCode {
        if req.group_id.is_empty() {
            return ErrorCode::InvalidGroupId;
        }
        if let Some(Group::Consumer(_)) = self.groups.get(&req.group_id) {
            return self.classic_heartbeat_consumer_group(req);
        }
        let Some(Group::Classic(g)) = self.groups.get_mut(&req.group_id) else {
            return ErrorCode::UnknownMemberId;
        };
        if g.is(ClassicGroupState::Dead) {
            return ErrorCode::CoordinatorNotAvailable;
        }
        if let Err(code) = g.validate_member(&req.member_id, req.group_instance_id.as_deref()) {
            return code;
        }
        if req.generation_id != g.generation {
            return ErrorCode::IllegalGeneration;
        }
        match g.state {
            ClassicGroupState::Empty | ClassicGroupState::Dead => ErrorCode::UnknownMemberId,
            ClassicGroupState::PreparingRebalance => {
                self.core.reschedule_member_heartbeat(g, &req.member_id);
                ErrorCode::RebalanceInProgress
            }
            ClassicGroupState::CompletingRebalance | ClassicGroupState::Stable => {
                self.core.reschedule_member_heartbeat(g, &req.member_id);
                ErrorCode::None
            }
        }
    }

    /// Handles a LeaveGroup (v0-5; v3+ batches members, v5 carries reasons).
    pub fn handle_leave(
        &mut self,
        ctx: &RequestContext,
        req: &LeaveGroupRequest,
        now_ms: i64,
    ) -> Effects {
        self.begin(now_ms);
        let mut r = self.leave(ctx.api_version, req);
        if ctx.api_version < LEAVE_BATCH_MIN_VERSION {
            // One member, one top-level error.
            if r.error_code == 0 {
                r.error_code = r.members.first().map(|m| m.error_code).unwrap_or(0);
            }
            r.members.clear();
        }
        self.core.respond(ctx.token, Response::LeaveGroup(r));
        self.finish()
    }

    fn leave(&mut self, version: i16, req: &LeaveGroupRequest) -> LeaveGroupResponse {
        let top = |code: ErrorCode| LeaveGroupResponse {
            error_code: code.code(),
            ..LeaveGroupResponse::default()
        };
        if req.group_id.is_empty() {
            return top(ErrorCode::InvalidGroupId);
        }
        let identities: Vec<MemberIdentity> = if version < LEAVE_BATCH_MIN_VERSION {
            vec![MemberIdentity {
                member_id: req.member_id.clone(),
                ..MemberIdentity::default()
            }]
        } else {
            req.members.clone()
        };
        match self.groups.get(&req.group_id) {
            Some(Group::Classic(_)) => {}
            Some(Group::Consumer(_)) => {
                return self.leave_consumer_group(&req.group_id, &identities);
            }
            None => return top(ErrorCode::UnknownMemberId),
        }
        let Some(Group::Classic(g)) = self.groups.get_mut(&req.group_id) else {
            return top(ErrorCode::UnknownMemberId);
        };
        if g.is(ClassicGroupState::Dead) {
            return top(ErrorCode::CoordinatorNotAvailable);
        }
        let core = &mut self.core;
        let mut members = Vec::with_capacity(identities.len());
        let mut any_left = false;
        for id in &identities {
            let code = leave_one(core, g, id);
            any_left |= code == ErrorCode::None;
            members.push(MemberResponse {
                member_id: id.member_id.clone(),
                group_instance_id: id.group_instance_id.clone(),
                error_code: code.code(),
            });
        }
        if any_left {
            match g.state {
                ClassicGroupState::Stable | ClassicGroupState::CompletingRebalance => {
                    core.maybe_prepare_rebalance_or_complete_join(g)
                }
                ClassicGroupState::PreparingRebalance => core.maybe_complete_join_phase(g),
                _ => {}
            }
        }
        LeaveGroupResponse {
            members,
            ..LeaveGroupResponse::default()
        }
    }
}

/// Removes one member named by a LeaveGroup entry; returns its error code.
fn leave_one(
    core: &mut crate::shard::Core,
    g: &mut ClassicGroup,
    id: &MemberIdentity,
) -> ErrorCode {
    let instance = id.group_instance_id.as_deref();
    if id.member_id.is_empty() {
        // Administrative removal by group.instance.id.
        return match instance.and_then(|i| g.static_members.get(i).cloned()) {
            Some(member_id) => {
                remove_current_member(core, g, &member_id);
                ErrorCode::None
            }
            None => ErrorCode::UnknownMemberId,
        };
    }
    if g.pending_join.contains(&id.member_id) {
        g.remove(&id.member_id);
        core.timers.cancel(&TimerKey::Heartbeat {
            group: g.group_id.clone(),
            member: id.member_id.clone(),
        });
        return ErrorCode::None;
    }
    match g.validate_member(&id.member_id, instance) {
        Ok(()) => {
            remove_current_member(core, g, &id.member_id);
            ErrorCode::None
        }
        Err(code) => code,
    }
}

/// Kafka's `removeCurrentMemberFromClassicGroup`: answer its parked join, drop it.
fn remove_current_member(core: &mut crate::shard::Core, g: &mut ClassicGroup, member_id: &str) {
    if let Some(m) = g.members.get_mut(member_id) {
        core.complete_join_future(m, join_error("", ErrorCode::UnknownMemberId));
    }
    core.drop_member(g, member_id, ErrorCode::UnknownMemberId);
}

/// Kafka's `validateSyncGroup`.
fn validate_sync(g: &ClassicGroup, req: &SyncGroupRequest) -> Result<(), ErrorCode> {
    if g.is(ClassicGroupState::Dead) {
        return Err(ErrorCode::CoordinatorNotAvailable);
    }
    g.validate_member(&req.member_id, req.group_instance_id.as_deref())?;
    if req.generation_id != g.generation {
        return Err(ErrorCode::IllegalGeneration);
    }
    if inconsistent(req.protocol_type.as_deref(), g.protocol_type.as_deref())
        || inconsistent(req.protocol_name.as_deref(), g.protocol_name.as_deref())
    {
        return Err(ErrorCode::InconsistentGroupProtocol);
    }
    Ok(())
}
