//! JoinGroup for classic groups (Kafka's `classicGroupJoin*`).
//!
//! Mental model: a JoinGroup either gets an immediate answer (an error, MEMBER_ID_REQUIRED
//! with a generated id, or the current generation for a member whose metadata did not change)
//! or is parked on its member until the join phase completes. New dynamic members on v4+ first
//! get MEMBER_ID_REQUIRED (KIP-394) and join as *pending* until they come back with that id.
//! A static member (group.instance.id, KIP-345) that rejoins with an unknown member id replaces
//! its old member id; in a Stable group whose chosen protocol does not change that causes no
//! rebalance, and the old id is fenced (FENCED_INSTANCE_ID).

use skiff_protocol::{JoinGroupRequest, JoinGroupResponse};
use skiff_types::ErrorCode;

use crate::classic::group::{ClassicGroup, ClassicGroupState, Member, Parked, Protocol};
use crate::classic::rebalance::join_error;
use crate::effects::{Effects, RequestContext};
use crate::shard::{Core, Group, GroupCoordinatorShard};
use crate::timer::TimerKey;

/// JoinGroup v4+ requires a member id (KIP-394).
const MEMBER_ID_REQUIRED_MIN_VERSION: i16 = 4;
/// JoinGroup v9+ lets a replaced static leader skip the assignment (KIP-814).
const SKIP_ASSIGNMENT_MIN_VERSION: i16 = 9;

/// A JoinGroup reduced to what the state machine needs.
struct Join<'a> {
    ctx: &'a RequestContext,
    parked: Parked,
    member_id: &'a str,
    instance_id: Option<&'a str>,
    session_timeout_ms: i32,
    rebalance_timeout_ms: i32,
    protocol_type: &'a str,
    protocols: Vec<Protocol>,
}

impl GroupCoordinatorShard {
    /// Handles a JoinGroup (v0-9). The response may come in this call's effects or a later
    /// one's (when the join phase completes).
    pub fn handle_join(
        &mut self,
        ctx: &RequestContext,
        req: &JoinGroupRequest,
        now_ms: i64,
    ) -> Effects {
        self.begin(now_ms);
        self.join(ctx, req);
        self.finish()
    }

    fn join(&mut self, ctx: &RequestContext, req: &JoinGroupRequest) {
        let parked = Parked {
            token: ctx.token,
            version: ctx.api_version,
        };
        let fail =
            |core: &mut Core, code| core.respond_join(parked, join_error(&req.member_id, code));
        if req.group_id.is_empty() {
            return fail(&mut self.core, ErrorCode::InvalidGroupId);
        }
        let cfg = &self.core.config;
        if req.session_timeout_ms < cfg.session_timeout_ms_min
            || req.session_timeout_ms > cfg.session_timeout_ms_max
        {
            return fail(&mut self.core, ErrorCode::InvalidSessionTimeout);
        }
        let join = Join {
            ctx,
            parked,
            member_id: &req.member_id,
            instance_id: req.group_instance_id.as_deref(),
            session_timeout_ms: req.session_timeout_ms,
            // v0 has no rebalance timeout: Kafka uses the session timeout.
            rebalance_timeout_ms: if ctx.api_version == 0 {
                req.session_timeout_ms
            } else {
                req.rebalance_timeout_ms
            },
            protocol_type: &req.protocol_type,
            protocols: req
                .protocols
                .iter()
                .map(|p| Protocol {
                    name: p.name.clone(),
                    metadata: p.metadata.clone(),
                })
                .collect(),
        };
        let unknown_member = join.member_id.is_empty();
        match self.groups.get(&req.group_id) {
            Some(Group::Consumer(c)) if !c.is_empty() => {
                // A classic member of a consumer group (online migration).
                let r = self.classic_join_consumer_group(ctx, req);
                return self.core.respond_join(parked, r);
            }
            Some(Group::Consumer(_)) => {
                // An empty KIP-848 group is replaced by a classic one (Kafka converts it).
                self.delete_consumer_group_records(&req.group_id);
                self.groups.remove(&req.group_id);
            }
            Some(Group::Classic(_)) => {}
            None if !unknown_member => {
                return fail(&mut self.core, ErrorCode::UnknownMemberId);
            }
            None => {}
        }
        let is_new_group = !self.groups.contains_key(&req.group_id);
        if is_new_group {
            let g = ClassicGroup::new(&req.group_id, self.core.now);
            self.groups.insert(req.group_id.clone(), Group::Classic(g));
        }
        let Some(Group::Classic(g)) = self.groups.get_mut(&req.group_id) else {
            return;
        };
        let records_before = self.core.out.records.len();
        let core = &mut self.core;
        if !accept_joining_member(core, g, join.member_id) {
            core.drop_member(g, join.member_id, ErrorCode::UnknownMemberId);
            core.respond_join(parked, join_error("", ErrorCode::GroupMaxSizeReached));
        } else if unknown_member {
            core.join_new_member(g, join);
        } else {
            core.join_existing_member(g, join);
        }
        if is_new_group && self.core.out.records.len() == records_before {
            // Make the new group durable (Kafka writes an empty GroupMetadata record).
            if let Some(Group::Classic(g)) = self.groups.get(&req.group_id) {
                let empty = ClassicGroup {
                    members: Default::default(),
                    protocol_type: None,
                    protocol_name: None,
                    leader: None,
                    generation: 0,
                    ..g.clone()
                };
                self.core.record_group_metadata(&empty);
            }
        }
    }
}

/// Kafka's `acceptJoiningMember`: `group.max.size` counts joining members while preparing a
/// rebalance, and members otherwise.
fn accept_joining_member(core: &Core, g: &ClassicGroup, member_id: &str) -> bool {
    let max = usize::try_from(core.config.group_size_max).unwrap_or(usize::MAX);
    match g.state {
        ClassicGroupState::Empty | ClassicGroupState::Dead => true,
        ClassicGroupState::PreparingRebalance => {
            g.members
                .get(member_id)
                .is_some_and(|m| m.awaiting_join.is_some())
                || g.num_awaiting_join() < max
        }
        ClassicGroupState::CompletingRebalance | ClassicGroupState::Stable => {
            g.members.contains_key(member_id) || g.members.len() < max
        }
    }
}

impl Core {
    fn join_new_member(&mut self, g: &mut ClassicGroup, join: Join<'_>) {
        if g.is(ClassicGroupState::Dead) {
            return self.respond_join(
                join.parked,
                join_error("", ErrorCode::CoordinatorNotAvailable),
            );
        }
        if !g.supports_protocols(join.protocol_type, &join.protocols) {
            return self.respond_join(
                join.parked,
                join_error("", ErrorCode::InconsistentGroupProtocol),
            );
        }
        let new_id = self.generate_member_id(&join.ctx.client_id, join.instance_id);
        if let Some(instance) = join.instance_id {
            match g.static_members.get(instance).cloned() {
                Some(old_id) => self.update_static_member(g, join, &old_id, &new_id),
                None => self.add_member_then_rebalance(g, join, new_id),
            }
        } else if join.ctx.api_version >= MEMBER_ID_REQUIRED_MIN_VERSION {
            g.pending_join.insert(new_id.clone());
            let session = i64::from(join.session_timeout_ms);
            self.reschedule_heartbeat(g, &new_id, session);
            self.respond_join(
                join.parked,
                join_error(&new_id, ErrorCode::MemberIdRequired),
            );
        } else {
            self.add_member_then_rebalance(g, join, new_id);
        }
    }

    fn join_existing_member(&mut self, g: &mut ClassicGroup, join: Join<'_>) {
        let member_id = join.member_id.to_string();
        if g.is(ClassicGroupState::Dead) {
            return self.respond_join(
                join.parked,
                join_error(&member_id, ErrorCode::CoordinatorNotAvailable),
            );
        }
        if !g.supports_protocols(join.protocol_type, &join.protocols) {
            return self.respond_join(
                join.parked,
                join_error(&member_id, ErrorCode::InconsistentGroupProtocol),
            );
        }
        if g.pending_join.contains(&member_id) {
            if join.instance_id.is_some() {
                // A pending member is never static (Kafka: IllegalStateException).
                return self.respond_join(
                    join.parked,
                    join_error(&member_id, ErrorCode::UnknownServerError),
                );
            }
            return self.add_member_then_rebalance(g, join, member_id);
        }
        if let Err(code) = g.validate_member(&member_id, join.instance_id) {
            return self.respond_join(join.parked, join_error(&member_id, code));
        }
        let matches = g
            .members
            .get(&member_id)
            .is_some_and(|m| m.protocols == join.protocols);
        match g.state {
            ClassicGroupState::PreparingRebalance => self.update_member_then_rebalance(g, join),
            ClassicGroupState::CompletingRebalance if matches => {
                // A retry of a join whose response was lost: answer with the current generation.
                let members = if g.is_leader(&member_id) {
                    g.join_response_members()
                } else {
                    Vec::new()
                };
                let r = current_generation_response(g, &member_id, members);
                self.respond_join(join.parked, r);
            }
            ClassicGroupState::CompletingRebalance => self.update_member_then_rebalance(g, join),
            ClassicGroupState::Stable if g.is_leader(&member_id) || !matches => {
                // The leader rejoining forces a rebalance (its way to react to metadata changes).
                self.update_member_then_rebalance(g, join)
            }
            ClassicGroupState::Stable => {
                let r = current_generation_response(g, &member_id, Vec::new());
                self.respond_join(join.parked, r);
            }
            ClassicGroupState::Empty | ClassicGroupState::Dead => {
                self.respond_join(
                    join.parked,
                    join_error(&member_id, ErrorCode::UnknownMemberId),
                );
            }
        }
    }

    fn add_member_then_rebalance(
        &mut self,
        g: &mut ClassicGroup,
        join: Join<'_>,
        member_id: String,
    ) {
        let member = Member {
            member_id: member_id.clone(),
            instance_id: join.instance_id.map(str::to_string),
            client_id: join.ctx.client_id.clone(),
            client_host: join.ctx.client_host.clone(),
            rebalance_timeout_ms: join.rebalance_timeout_ms,
            session_timeout_ms: join.session_timeout_ms,
            protocol_type: join.protocol_type.to_string(),
            protocols: join.protocols,
            assignment: Default::default(),
            awaiting_join: Some(join.parked),
            awaiting_sync: None,
            is_new: true,
        };
        if g.is(ClassicGroupState::PreparingRebalance)
            && g.previous_state == ClassicGroupState::Empty
        {
            g.new_member_added = true;
        }
        g.add(member);
        // A parked new member cannot heartbeat; it is dropped if the join phase outlasts this.
        let timeout = i64::from(self.config.new_member_join_timeout_ms);
        self.reschedule_heartbeat(g, &member_id, timeout);
        self.maybe_prepare_rebalance_or_complete_join(g);
    }

    fn update_member_then_rebalance(&mut self, g: &mut ClassicGroup, join: Join<'_>) {
        if let Some(m) = g.members.get_mut(join.member_id) {
            m.protocols = join.protocols;
            m.rebalance_timeout_ms = join.rebalance_timeout_ms;
            m.session_timeout_ms = join.session_timeout_ms;
            if let Some(old) = m.awaiting_join.replace(join.parked) {
                // A retry from a new connection displaces the old parked request.
                self.respond_join(
                    old,
                    join_error(join.member_id, ErrorCode::RebalanceInProgress),
                );
            }
        }
        self.maybe_prepare_rebalance_or_complete_join(g);
    }

    /// A static member rejoined with an unknown member id: replace `old_id` by `new_id`
    /// (Kafka's `updateStaticMemberThenRebalanceOrCompleteJoin`).
    fn update_static_member(
        &mut self,
        g: &mut ClassicGroup,
        join: Join<'_>,
        old_id: &str,
        new_id: &str,
    ) {
        let current_leader = g.leader.clone().unwrap_or_default();
        let Some(mut old) = g.members.remove(old_id) else {
            return;
        };
        // Fence whoever still waits with the old id.
        let fenced = JoinGroupResponse {
            leader: String::new(),
            ..join_error(old_id, ErrorCode::FencedInstanceId)
        };
        self.complete_join_future(&mut old, fenced);
        self.complete_sync_future(
            &mut old,
            crate::classic::rebalance::sync_error(ErrorCode::FencedInstanceId),
        );
        self.timers.cancel(&TimerKey::Heartbeat {
            group: g.group_id.clone(),
            member: old_id.to_string(),
        });
        let mut member = Member {
            member_id: new_id.to_string(),
            awaiting_join: None,
            awaiting_sync: None,
            is_new: false,
            ..old
        };
        member.protocols = join.protocols;
        member.rebalance_timeout_ms = join.rebalance_timeout_ms;
        member.session_timeout_ms = join.session_timeout_ms;
        member.awaiting_join = Some(join.parked);
        g.members.insert(new_id.to_string(), member);
        if g.is_leader(old_id) {
            g.leader = Some(new_id.to_string());
        }
        if let Some(instance) = join.instance_id {
            g.static_members
                .insert(instance.to_string(), new_id.to_string());
        }
        if g.pending_sync.remove(old_id) {
            g.pending_sync.insert(new_id.to_string());
        }
        self.reschedule_member_heartbeat(g, new_id);

        match g.state {
            ClassicGroupState::Stable => {
                let selected = g.select_protocol();
                if g.protocol_name.as_deref().unwrap_or("") == selected.as_deref().unwrap_or("") {
                    // Same protocol: persist the new member id and keep the assignment.
                    self.record_group_metadata(g);
                    let r = if join.ctx.api_version >= SKIP_ASSIGNMENT_MIN_VERSION {
                        let is_leader = g.is_leader(new_id);
                        let members = if is_leader {
                            g.join_response_members()
                        } else {
                            Vec::new()
                        };
                        JoinGroupResponse {
                            skip_assignment: is_leader,
                            ..current_generation_response(g, new_id, members)
                        }
                    } else {
                        // Older clients must not think they lead: report the previous leader id.
                        JoinGroupResponse {
                            leader: current_leader,
                            ..current_generation_response(g, new_id, Vec::new())
                        }
                    };
                    if let Some(m) = g.members.get_mut(new_id) {
                        self.complete_join_future(m, r);
                    }
                } else {
                    self.maybe_prepare_rebalance_or_complete_join(g);
                }
            }
            // The leader may already hold an assignment naming the old id: rebalance.
            ClassicGroupState::CompletingRebalance => self.prepare_rebalance(g),
            ClassicGroupState::PreparingRebalance => self.maybe_complete_join_phase(g),
            ClassicGroupState::Empty | ClassicGroupState::Dead => {
                // Unreachable (a group with members is never Empty); answer rather than hang.
                if let Some(m) = g.members.get_mut(new_id) {
                    self.complete_join_future(m, join_error(new_id, ErrorCode::UnknownMemberId));
                }
            }
        }
    }
}

/// A successful JoinGroup answer describing the group's current generation.
fn current_generation_response(
    g: &ClassicGroup,
    member_id: &str,
    members: Vec<skiff_protocol::JoinGroupResponseMember>,
) -> JoinGroupResponse {
    JoinGroupResponse {
        members,
        member_id: member_id.to_string(),
        generation_id: g.generation,
        protocol_name: g.protocol_name.clone(),
        protocol_type: g.protocol_type.clone(),
        leader: g.leader.clone().unwrap_or_default(),
        skip_assignment: false,
        ..JoinGroupResponse::default()
    }
}
