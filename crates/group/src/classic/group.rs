//! One classic (JoinGroup/SyncGroup) group: its state machine, members and protocol choice.
//!
//! Mental model (Kafka's `ClassicGroup`): a group moves
//! `Empty -> PreparingRebalance -> CompletingRebalance -> Stable`, back to `PreparingRebalance`
//! on any membership change, and to `Dead` when deleted. A member is *awaiting join* while its
//! JoinGroup is parked and *awaiting sync* while its SyncGroup is parked; parked requests are
//! held as [`Parked`] (token + api version) and answered by the shard. `pending_join` holds
//! member ids handed out with MEMBER_ID_REQUIRED that have not joined yet; `pending_sync` the
//! members of the new generation that have not sent SyncGroup.
//!
//! Invariants: `static_members` maps each group.instance.id to exactly one member whose
//! `instance_id` is that id; the leader, when set, is a member; members are kept in a
//! `BTreeMap` so every choice (new leader, iteration order) is deterministic. This module is
//! pure data plus queries; timers and responses live in the shard.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use skiff_protocol::{Codec, ConsumerProtocolSubscription, JoinGroupResponseMember, wire};
use skiff_types::ErrorCode;

use crate::effects::RequestToken;

/// The protocol type of Java consumers (and every consumer client).
pub const CONSUMER_PROTOCOL_TYPE: &str = "consumer";

/// Kafka's classic group states.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClassicGroupState {
    Empty,
    PreparingRebalance,
    CompletingRebalance,
    Stable,
    Dead,
}

impl ClassicGroupState {
    /// The name Kafka shows (DescribeGroups, ListGroups).
    pub fn as_str(self) -> &'static str {
        match self {
            ClassicGroupState::Empty => "Empty",
            ClassicGroupState::PreparingRebalance => "PreparingRebalance",
            ClassicGroupState::CompletingRebalance => "CompletingRebalance",
            ClassicGroupState::Stable => "Stable",
            ClassicGroupState::Dead => "Dead",
        }
    }

    fn valid_previous(self) -> &'static [ClassicGroupState] {
        use ClassicGroupState::*;
        match self {
            Empty => &[PreparingRebalance],
            PreparingRebalance => &[Stable, CompletingRebalance, Empty],
            CompletingRebalance => &[PreparingRebalance],
            Stable => &[CompletingRebalance],
            Dead => &[Stable, PreparingRebalance, CompletingRebalance, Empty, Dead],
        }
    }
}

/// A parked request: who to answer and in which version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Parked {
    pub token: RequestToken,
    pub version: i16,
}

/// One protocol a member supports: name and opaque metadata (the subscription).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Protocol {
    pub name: String,
    pub metadata: Bytes,
}

#[derive(Clone, Debug)]
pub(crate) struct Member {
    pub member_id: String,
    pub instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: i32,
    pub session_timeout_ms: i32,
    pub protocol_type: String,
    pub protocols: Vec<Protocol>,
    pub assignment: Bytes,
    pub awaiting_join: Option<Parked>,
    pub awaiting_sync: Option<Parked>,
    /// Joined but never completed a join phase: its session timer is the new-member timeout.
    pub is_new: bool,
}

impl Member {
    /// Whether a heartbeat deadline passing should leave the member alone (Kafka's
    /// `hasSatisfiedHeartbeat`).
    pub fn has_satisfied_heartbeat(&self) -> bool {
        !self.is_new && (self.awaiting_join.is_some() || self.awaiting_sync.is_some())
    }

    pub fn metadata(&self, protocol: &str) -> Bytes {
        self.protocols
            .iter()
            .find(|p| p.name == protocol)
            .map(|p| p.metadata.clone())
            .unwrap_or_default()
    }

    fn vote(&self, candidates: &BTreeSet<&str>) -> Option<&str> {
        self.protocols
            .iter()
            .map(|p| p.name.as_str())
            .find(|n| candidates.contains(n))
    }
}

#[derive(Clone, Debug)]
pub(crate) struct ClassicGroup {
    pub group_id: String,
    pub state: ClassicGroupState,
    pub previous_state: ClassicGroupState,
    pub state_timestamp_ms: Option<i64>,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub generation: i32,
    pub leader: Option<String>,
    pub members: BTreeMap<String, Member>,
    pub static_members: BTreeMap<String, String>,
    pub pending_join: BTreeSet<String>,
    pub pending_sync: BTreeSet<String>,
    pub subscribed_topics: Option<BTreeSet<String>>,
    pub new_member_added: bool,
}

impl ClassicGroup {
    pub fn new(group_id: &str, now_ms: i64) -> Self {
        Self {
            group_id: group_id.to_string(),
            state: ClassicGroupState::Empty,
            previous_state: ClassicGroupState::Empty,
            state_timestamp_ms: Some(now_ms),
            protocol_type: None,
            protocol_name: None,
            generation: 0,
            leader: None,
            members: BTreeMap::new(),
            static_members: BTreeMap::new(),
            pending_join: BTreeSet::new(),
            pending_sync: BTreeSet::new(),
            subscribed_topics: None,
            new_member_added: false,
        }
    }

    pub fn is(&self, s: ClassicGroupState) -> bool {
        self.state == s
    }

    pub fn transition(&mut self, to: ClassicGroupState, now_ms: i64) {
        assert!(
            to.valid_previous().contains(&self.state),
            "invalid classic group transition {:?} -> {:?} for {}",
            self.state,
            to,
            self.group_id
        );
        self.previous_state = self.state;
        self.state = to;
        self.state_timestamp_ms = Some(now_ms);
    }

    /// Kafka's `canRebalance`: PreparingRebalance may be entered from here.
    pub fn can_rebalance(&self) -> bool {
        ClassicGroupState::PreparingRebalance
            .valid_previous()
            .contains(&self.state)
    }

    pub fn is_leader(&self, member_id: &str) -> bool {
        self.leader.as_deref() == Some(member_id)
    }

    pub fn num_awaiting_join(&self) -> usize {
        self.members
            .values()
            .filter(|m| m.awaiting_join.is_some())
            .count()
    }

    pub fn has_all_members_joined(&self) -> bool {
        self.members.len() == self.num_awaiting_join() && self.pending_join.is_empty()
    }

    /// The group's rebalance timeout: the largest of its members' (at least 1 ms, so a timer
    /// that re-arms itself always moves time forward).
    pub fn rebalance_timeout_ms(&self) -> i64 {
        let max = self
            .members
            .values()
            .map(|m| m.rebalance_timeout_ms)
            .max()
            .unwrap_or(0);
        i64::from(max).max(1)
    }

    pub fn uses_consumer_protocol(&self) -> bool {
        self.protocol_type.as_deref() == Some(CONSUMER_PROTOCOL_TYPE)
    }

    /// How many members support each protocol name.
    fn protocol_support(&self) -> BTreeMap<&str, usize> {
        let mut counts = BTreeMap::new();
        for m in self.members.values() {
            for p in &m.protocols {
                *counts.entry(p.name.as_str()).or_insert(0) += 1;
            }
        }
        counts
    }

    /// Kafka's `supportsProtocols`: an empty group takes any non-empty type and protocol list;
    /// otherwise the type must match and one protocol must be supported by every member.
    pub fn supports_protocols(&self, protocol_type: &str, protocols: &[Protocol]) -> bool {
        if self.is(ClassicGroupState::Empty) {
            return !protocol_type.is_empty() && !protocols.is_empty();
        }
        if self.protocol_type.as_deref() != Some(protocol_type) {
            return false;
        }
        let support = self.protocol_support();
        let n = self.members.len();
        protocols
            .iter()
            .any(|p| support.get(p.name.as_str()).copied().unwrap_or(0) == n)
    }

    /// Kafka's `selectProtocol`: among protocols every member supports, each member votes for
    /// its most preferred one; most votes wins (ties: the lexicographically smallest name).
    pub fn select_protocol(&self) -> Option<String> {
        let n = self.members.len();
        let candidates: BTreeSet<&str> = self
            .protocol_support()
            .into_iter()
            .filter(|(_, c)| *c == n)
            .map(|(name, _)| name)
            .collect();
        let mut votes: BTreeMap<&str, usize> = BTreeMap::new();
        for m in self.members.values() {
            if let Some(v) = m.vote(&candidates) {
                *votes.entry(v).or_insert(0) += 1;
            }
        }
        let mut best: Option<(&str, usize)> = None;
        for (name, count) in votes {
            if best.is_none_or(|(_, c)| count > c) {
                best = Some((name, count));
            }
        }
        best.map(|(name, _)| name.to_string())
    }

    /// Adds a member (its parked join, if any, is already set on it).
    pub fn add(&mut self, member: Member) {
        if let Some(instance) = &member.instance_id {
            self.static_members
                .insert(instance.clone(), member.member_id.clone());
        }
        if self.members.is_empty() {
            self.protocol_type = Some(member.protocol_type.clone());
        }
        if self.leader.is_none() {
            self.leader = Some(member.member_id.clone());
        }
        self.pending_join.remove(&member.member_id);
        self.members.insert(member.member_id.clone(), member);
    }

    /// Removes a member (answers nothing: the caller completes its parked requests first).
    pub fn remove(&mut self, member_id: &str) -> Option<Member> {
        let removed = self.members.remove(member_id);
        if let Some(m) = &removed
            && let Some(instance) = &m.instance_id
            && self.static_members.get(instance).map(String::as_str) == Some(member_id)
        {
            self.static_members.remove(instance);
        }
        if self.is_leader(member_id) {
            self.leader = self.members.keys().next().cloned();
        }
        self.pending_join.remove(member_id);
        self.pending_sync.remove(member_id);
        removed
    }

    /// Kafka's `maybeElectNewJoinedLeader`: keep a leader that rejoined, else pick the first
    /// member that did; false when nobody (or no leader) is there to lead.
    pub fn maybe_elect_new_joined_leader(&mut self) -> bool {
        let Some(leader) = self.leader.clone() else {
            return false;
        };
        if self
            .members
            .get(&leader)
            .is_some_and(|m| m.awaiting_join.is_some())
        {
            return true;
        }
        match self.members.values().find(|m| m.awaiting_join.is_some()) {
            Some(m) => {
                self.leader = Some(m.member_id.clone());
                true
            }
            None => false,
        }
    }

    /// Kafka's `validateMember`: the instance id (if given) must map to this member id, and
    /// the member must exist.
    pub fn validate_member(
        &self,
        member_id: &str,
        instance_id: Option<&str>,
    ) -> Result<(), ErrorCode> {
        if let Some(instance) = instance_id {
            match self.static_members.get(instance) {
                None => return Err(ErrorCode::UnknownMemberId),
                Some(existing) if existing != member_id => {
                    return Err(ErrorCode::FencedInstanceId);
                }
                Some(_) => {}
            }
        }
        if !self.members.contains_key(member_id) {
            return Err(ErrorCode::UnknownMemberId);
        }
        Ok(())
    }

    /// Members as the leader's JoinGroup response lists them (metadata of the chosen protocol).
    pub fn join_response_members(&self) -> Vec<JoinGroupResponseMember> {
        let protocol = self.protocol_name.clone().unwrap_or_default();
        self.members
            .values()
            .map(|m| JoinGroupResponseMember {
                member_id: m.member_id.clone(),
                group_instance_id: m.instance_id.clone(),
                metadata: m.metadata(&protocol),
            })
            .collect()
    }

    /// Kafka's `computeSubscribedTopics`: the union of the members' subscriptions, parsed with
    /// the consumer protocol's v0 prefix; `None` when unknown (not a consumer group, no
    /// protocol yet, or unparsable metadata).
    pub fn compute_subscribed_topics(&self) -> Option<BTreeSet<String>> {
        if !self.uses_consumer_protocol() {
            return None;
        }
        if self.members.is_empty() {
            return Some(BTreeSet::new());
        }
        let protocol = self.protocol_name.as_deref()?;
        let mut topics = BTreeSet::new();
        for m in self.members.values() {
            let mut buf = m.metadata(protocol);
            wire::read_i16(&mut buf).ok()?;
            let sub = ConsumerProtocolSubscription::decode(&mut buf, 0).ok()?;
            topics.extend(sub.topics);
        }
        Some(topics)
    }

    /// Kafka's `isSubscribedToTopic`: unknown subscriptions count as subscribed for consumer
    /// groups (safe side) and as not subscribed otherwise.
    pub fn is_subscribed_to(&self, topic: &str) -> bool {
        match &self.subscribed_topics {
            Some(topics) => topics.contains(topic),
            None => self.uses_consumer_protocol(),
        }
    }

    /// Kafka's `initNextGeneration`.
    pub fn init_next_generation(&mut self, now_ms: i64) {
        self.generation = self.generation.wrapping_add(1);
        if self.members.is_empty() {
            self.protocol_name = None;
            self.subscribed_topics = self.compute_subscribed_topics();
            self.transition(ClassicGroupState::Empty, now_ms);
        } else {
            self.protocol_name = self.select_protocol();
            self.subscribed_topics = self.compute_subscribed_topics();
            self.transition(ClassicGroupState::CompletingRebalance, now_ms);
        }
        self.pending_sync.clear();
    }
}
