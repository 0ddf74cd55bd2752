//! Test harness: drives a shard through its public API like the server runtime would (tokens,
//! a clock, an in-memory `__consumer_offsets` log) and collects responses by token.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod kip848;

use std::collections::BTreeMap;

use bytes::{BufMut, Bytes, BytesMut};
use skiff_group::{
    Effects, GroupConfig, GroupCoordinatorShard, RequestContext, RequestToken, Response,
};
use skiff_protocol::{
    Codec, ConsumerProtocolAssignment, ConsumerProtocolAssignmentTopicPartition,
    ConsumerProtocolSubscription, HeartbeatRequest, JoinGroupRequest, JoinGroupRequestProtocol,
    JoinGroupResponse, LeaveGroupRequest, LeaveGroupResponse, MemberIdentity, OffsetCommitRequest,
    OffsetCommitRequestPartition, OffsetCommitRequestTopic, OffsetCommitResponse,
    OffsetFetchResponseGroup, SyncGroupRequest, SyncGroupRequestAssignment, SyncGroupResponse,
};

pub const GROUP: &str = "g";
pub const SESSION_MS: i32 = 10_000;
pub const REBALANCE_MS: i32 = 30_000;

/// A consumer-protocol subscription to `topics` (version prefix 1 + v1 body).
pub fn subscription(topics: &[&str]) -> Bytes {
    let sub = ConsumerProtocolSubscription {
        topics: topics.iter().map(|t| t.to_string()).collect(),
        ..Default::default()
    };
    let mut out = BytesMut::new();
    out.put_i16(1);
    sub.encode(&mut out, 1).unwrap();
    out.freeze()
}

/// A consumer-protocol assignment (version prefix 0).
pub fn assignment(parts: &[(&str, &[i32])]) -> Bytes {
    let a = ConsumerProtocolAssignment {
        assigned_partitions: parts
            .iter()
            .map(|(t, ps)| ConsumerProtocolAssignmentTopicPartition {
                topic: t.to_string(),
                partitions: ps.to_vec(),
            })
            .collect(),
        ..Default::default()
    };
    let mut out = BytesMut::new();
    out.put_i16(0);
    a.encode(&mut out, 0).unwrap();
    out.freeze()
}

/// Decodes what [`assignment`] encodes.
pub fn decode_assignment(b: &Bytes) -> Vec<(String, i32)> {
    if b.is_empty() {
        return Vec::new();
    }
    let mut buf = b.clone();
    let version = skiff_protocol::wire::read_i16(&mut buf).unwrap();
    let a = ConsumerProtocolAssignment::decode(&mut buf, version.min(3)).unwrap();
    a.assigned_partitions
        .into_iter()
        .flat_map(|tp| {
            tp.partitions
                .into_iter()
                .map(move |p| (tp.topic.clone(), p))
        })
        .collect()
}

pub fn protocols(list: &[(&str, Bytes)]) -> Vec<JoinGroupRequestProtocol> {
    list.iter()
        .map(|(n, m)| JoinGroupRequestProtocol {
            name: n.to_string(),
            metadata: m.clone(),
        })
        .collect()
}

pub fn range_protocol(topics: &[&str]) -> Vec<JoinGroupRequestProtocol> {
    protocols(&[("range", subscription(topics))])
}

pub fn join_req(
    member_id: &str,
    instance: Option<&str>,
    protos: Vec<JoinGroupRequestProtocol>,
) -> JoinGroupRequest {
    JoinGroupRequest {
        group_id: GROUP.into(),
        session_timeout_ms: SESSION_MS,
        rebalance_timeout_ms: REBALANCE_MS,
        member_id: member_id.into(),
        group_instance_id: instance.map(str::to_string),
        protocol_type: "consumer".into(),
        protocols: protos,
        reason: None,
    }
}

pub fn config(delay_ms: i32) -> GroupConfig {
    GroupConfig {
        initial_rebalance_delay_ms: delay_ms,
        session_timeout_ms_min: 1000,
        ..GroupConfig::default()
    }
}

pub struct Harness {
    pub shard: GroupCoordinatorShard,
    pub now: i64,
    pub next_token: u64,
    pub log: Vec<(Bytes, Option<Bytes>)>,
    pub responses: BTreeMap<RequestToken, Response>,
    pub answered: Vec<RequestToken>,
    pub last_deadline: Option<i64>,
}

impl Harness {
    pub fn new(config: GroupConfig) -> Self {
        Self {
            shard: GroupCoordinatorShard::new(config, 42),
            now: 1_000_000,
            next_token: 0,
            log: Vec::new(),
            responses: BTreeMap::new(),
            answered: Vec::new(),
            last_deadline: None,
        }
    }

    pub fn absorb(&mut self, e: Effects) -> Effects {
        self.log.extend(e.records.iter().cloned());
        for (t, r) in &e.responses {
            assert!(!self.answered.contains(t), "token {t:?} answered twice");
            self.answered.push(*t);
            self.responses.insert(*t, r.clone());
        }
        self.last_deadline = e.next_deadline;
        e
    }

    pub fn ctx(&mut self, version: i16) -> RequestContext {
        self.next_token += 1;
        RequestContext {
            token: RequestToken(self.next_token),
            api_version: version,
            client_id: "client".into(),
            client_host: "/127.0.0.1".into(),
        }
    }

    pub fn advance(&mut self, ms: i64) -> Effects {
        self.now += ms;
        let e = self.shard.tick(self.now);
        self.absorb(e)
    }

    pub fn join_with(&mut self, version: i16, req: &JoinGroupRequest) -> RequestToken {
        let ctx = self.ctx(version);
        let e = self.shard.handle_join(&ctx, req, self.now);
        self.absorb(e);
        ctx.token
    }

    pub fn join(
        &mut self,
        version: i16,
        member_id: &str,
        instance: Option<&str>,
        topics: &[&str],
    ) -> RequestToken {
        self.join_with(
            version,
            &join_req(member_id, instance, range_protocol(topics)),
        )
    }

    pub fn take(&mut self, t: RequestToken) -> Option<Response> {
        self.responses.remove(&t)
    }

    pub fn join_response(&mut self, t: RequestToken) -> Option<JoinGroupResponse> {
        match self.take(t)? {
            Response::JoinGroup(r) => Some(r),
            other => panic!("not a join response: {other:?}"),
        }
    }

    pub fn sync_response(&mut self, t: RequestToken) -> Option<SyncGroupResponse> {
        match self.take(t)? {
            Response::SyncGroup(r) => Some(r),
            other => panic!("not a sync response: {other:?}"),
        }
    }

    /// JoinGroup v5 with an unknown member id: MEMBER_ID_REQUIRED, then the real (parked) join.
    pub fn join_new(&mut self, topics: &[&str]) -> (String, RequestToken) {
        let t = self.join(5, "", None, topics);
        let r = self
            .join_response(t)
            .expect("MEMBER_ID_REQUIRED is immediate");
        assert_eq!(r.error_code, 79);
        let t2 = self.join(5, &r.member_id, None, topics);
        (r.member_id, t2)
    }

    pub fn sync(
        &mut self,
        generation: i32,
        member_id: &str,
        instance: Option<&str>,
        assignments: &[(&str, Bytes)],
    ) -> RequestToken {
        let ctx = self.ctx(5);
        let req = SyncGroupRequest {
            group_id: GROUP.into(),
            generation_id: generation,
            member_id: member_id.into(),
            group_instance_id: instance.map(str::to_string),
            protocol_type: Some("consumer".into()),
            protocol_name: Some("range".into()),
            assignments: assignments
                .iter()
                .map(|(m, a)| SyncGroupRequestAssignment {
                    member_id: m.to_string(),
                    assignment: a.clone(),
                })
                .collect(),
        };
        let e = self.shard.handle_sync(&ctx, &req, self.now);
        self.absorb(e);
        ctx.token
    }

    pub fn heartbeat(&mut self, generation: i32, member_id: &str, instance: Option<&str>) -> i16 {
        let ctx = self.ctx(4);
        let req = HeartbeatRequest {
            group_id: GROUP.into(),
            generation_id: generation,
            member_id: member_id.into(),
            group_instance_id: instance.map(str::to_string),
        };
        let e = self.shard.handle_heartbeat(&ctx, &req, self.now);
        self.absorb(e);
        match self.take(ctx.token) {
            Some(Response::Heartbeat(r)) => r.error_code,
            other => panic!("no heartbeat response: {other:?}"),
        }
    }

    pub fn leave(&mut self, version: i16, members: &[(&str, Option<&str>)]) -> LeaveGroupResponse {
        let ctx = self.ctx(version);
        let req = LeaveGroupRequest {
            group_id: GROUP.into(),
            member_id: members.first().map(|m| m.0.to_string()).unwrap_or_default(),
            members: if version >= 3 {
                members
                    .iter()
                    .map(|(m, i)| MemberIdentity {
                        member_id: m.to_string(),
                        group_instance_id: i.map(str::to_string),
                        reason: None,
                    })
                    .collect()
            } else {
                Vec::new()
            },
        };
        let e = self.shard.handle_leave(&ctx, &req, self.now);
        self.absorb(e);
        match self.take(ctx.token) {
            Some(Response::LeaveGroup(r)) => r,
            other => panic!("no leave response: {other:?}"),
        }
    }

    pub fn commit_req(
        &mut self,
        version: i16,
        group: &str,
        generation: i32,
        member_id: &str,
        offsets: &[(&str, i32, i64, Option<&str>)],
    ) -> OffsetCommitResponse {
        let req = OffsetCommitRequest {
            group_id: group.into(),
            generation_id_or_member_epoch: generation,
            member_id: member_id.into(),
            group_instance_id: None,
            retention_time_ms: -1,
            topics: offsets
                .iter()
                .map(|(t, p, o, m)| OffsetCommitRequestTopic {
                    name: t.to_string(),
                    partitions: vec![OffsetCommitRequestPartition {
                        partition_index: *p,
                        committed_offset: *o,
                        committed_leader_epoch: 3,
                        committed_metadata: m.map(str::to_string),
                    }],
                })
                .collect(),
        };
        self.commit_with(version, &req)
    }

    pub fn commit_with(&mut self, version: i16, req: &OffsetCommitRequest) -> OffsetCommitResponse {
        let ctx = self.ctx(version);
        let e = self.shard.handle_offset_commit(&ctx, req, self.now);
        self.absorb(e);
        match self.take(ctx.token) {
            Some(Response::OffsetCommit(r)) => r,
            other => panic!("no commit response: {other:?}"),
        }
    }

    /// The error of every partition of a commit response (in order).
    pub fn commit_errors(r: &OffsetCommitResponse) -> Vec<i16> {
        r.topics
            .iter()
            .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
            .collect()
    }

    pub fn fetch(
        &self,
        group: &str,
        topics: Option<&[(&str, &[i32])]>,
    ) -> OffsetFetchResponseGroup {
        let topics: Option<Vec<skiff_protocol::OffsetFetchRequestTopics>> = topics.map(|ts| {
            ts.iter()
                .map(|(t, ps)| skiff_protocol::OffsetFetchRequestTopics {
                    name: t.to_string(),
                    partition_indexes: ps.to_vec(),
                })
                .collect()
        });
        self.shard.fetch_offsets(group, None, topics.as_deref())
    }

    /// Replays the log into a fresh shard (a broker restart) and arms it.
    pub fn restart(&mut self) {
        let config = self.shard.config().clone();
        let mut shard = GroupCoordinatorShard::new(config, 7);
        for (k, v) in &self.log {
            shard.replay(k, v.as_ref()).unwrap();
        }
        self.shard = shard;
        let e = self.shard.on_loaded(self.now);
        self.absorb(e);
    }

    pub fn state(&self) -> &'static str {
        self.shard
            .group_summary(GROUP)
            .map(|s| s.state)
            .unwrap_or("None")
    }

    pub fn generation(&self) -> i32 {
        self.shard
            .group_summary(GROUP)
            .map(|s| s.generation)
            .unwrap_or(-1)
    }

    /// Forms a Stable group of `n` dynamic members (needs an initial rebalance delay, so they
    /// all make the first generation); returns (member ids, leader, generation).
    pub fn stable_group(&mut self, n: usize, topics: &[&str]) -> (Vec<String>, String, i32) {
        let mut ids = Vec::new();
        let mut tokens = Vec::new();
        for _ in 0..n {
            let (id, t) = self.join_new(topics);
            ids.push(id);
            tokens.push(t);
        }
        let delay = i64::from(self.shard.config().initial_rebalance_delay_ms);
        assert!(delay > 0, "stable_group needs an initial rebalance delay");
        // Each new member extends the initial delay once (Kafka's behaviour).
        for _ in 0..10 {
            if tokens.iter().all(|t| self.responses.contains_key(t)) {
                break;
            }
            self.advance(delay);
        }
        for t in tokens {
            let r = self
                .join_response(t)
                .expect("join answered after the delay");
            assert_eq!(r.error_code, 0, "{r:?}");
        }
        let summary = self.shard.group_summary(GROUP).unwrap();
        assert_eq!(summary.state, "CompletingRebalance", "{summary:?}");
        let leader = summary.leader.clone().unwrap();
        let generation = summary.generation;
        let assignments: Vec<(String, Bytes)> = ids
            .iter()
            .enumerate()
            .map(|(i, id)| (id.clone(), assignment(&[("t", &[i as i32])])))
            .collect();
        let refs: Vec<(&str, Bytes)> = assignments
            .iter()
            .map(|(m, a)| (m.as_str(), a.clone()))
            .collect();
        let followers: Vec<RequestToken> = ids
            .iter()
            .filter(|id| **id != leader)
            .map(|id| self.sync(generation, id, None, &[]))
            .collect();
        let lt = self.sync(generation, &leader, None, &refs);
        assert_eq!(self.sync_response(lt).unwrap().error_code, 0);
        for t in followers {
            assert_eq!(self.sync_response(t).unwrap().error_code, 0);
        }
        assert_eq!(self.state(), "Stable");
        (ids, leader, generation)
    }
}
