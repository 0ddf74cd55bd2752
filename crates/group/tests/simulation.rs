//! Seeded simulation of a classic consumer group: N simulated consumers join, sync, heartbeat,
//! commit, change subscriptions, leave, crash and restart (some as static members) at random
//! times, while the coordinator itself restarts now and then (replaying its log). Checkers run
//! after every step:
//! - generations never decrease (across a coordinator restart: never below the last generation
//!   that reached Stable or Empty, the ones Kafka persists);
//! - members of the current generation that completed SyncGroup own disjoint partitions, and
//!   each got exactly what the leader assigned it;
//! - an OffsetCommit succeeds only for a member of the current generation (or a simple commit
//!   to an empty group), so a zombie from an old generation can never commit;
//! - every request is answered at most once, and after everyone stops, all are answered;
//! - committed offsets equal the model, including after coordinator restarts.
//!
//! Reproduce a failure with `SKIFF_SIM_SEED=<seed> cargo test -p skiff-group --test simulation`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use common::{assignment, decode_assignment, subscription};
use skiff_group::{
    Effects, GroupConfig, GroupCoordinatorShard, RequestContext, RequestToken, Response,
};
use skiff_protocol::{
    Codec, ConsumerProtocolSubscription, HeartbeatRequest, JoinGroupRequest,
    JoinGroupRequestProtocol, LeaveGroupRequest, MemberIdentity, OffsetCommitRequest,
    OffsetCommitRequestPartition, OffsetCommitRequestTopic, SyncGroupRequest,
    SyncGroupRequestAssignment,
};

const GROUP: &str = "sim";
const PARTITIONS: i32 = 6;
const SESSION_MS: i32 = 10_000;
const REBALANCE_MS: i32 = 20_000;
const HEARTBEAT_MS: i64 = 3_000;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Down,
    Idle,
    Joining,
    Syncing,
    Stable,
}

#[derive(Clone, Debug)]
struct Consumer {
    instance: Option<String>,
    join_version: i16,
    incarnation: u32,
    state: State,
    member_id: String,
    generation: i32,
    assignment: Vec<(String, i32)>,
    topics: Vec<String>,
    busy: bool,
    next_heartbeat: i64,
    next_offset: i64,
}

#[derive(Clone, Debug)]
enum Kind {
    Join,
    Sync {
        generation: i32,
    },
    Heartbeat,
    Commit {
        generation: i32,
        member_id: String,
        offsets: Vec<((String, i32), i64)>,
    },
    Leave,
}

struct Sim {
    seed: u64,
    rng: Rng,
    shard: GroupCoordinatorShard,
    config: GroupConfig,
    now: i64,
    next_token: u64,
    log: Vec<(Bytes, Option<Bytes>)>,
    consumers: Vec<Consumer>,
    inflight: BTreeMap<RequestToken, (usize, u32, Kind)>,
    answered: BTreeSet<RequestToken>,
    leader_assignments: BTreeMap<i32, BTreeMap<String, Vec<(String, i32)>>>,
    max_generation: i32,
    max_persisted_generation: i32,
    model_offsets: BTreeMap<(String, i32), i64>,
    commits_ok: u64,
    commits_fenced: u64,
    restarts: u64,
}

impl Sim {
    fn new(seed: u64, n: usize) -> Self {
        let mut rng = Rng(seed);
        let config = GroupConfig {
            session_timeout_ms_min: 1000,
            initial_rebalance_delay_ms: [0, 500, 3000][rng.below(3) as usize],
            ..GroupConfig::default()
        };
        let consumers = (0..n)
            .map(|i| Consumer {
                instance: (i % 3 == 2).then(|| format!("static-{i}")),
                join_version: [3, 5, 7, 9][rng.below(4) as usize],
                incarnation: 0,
                state: State::Idle,
                member_id: String::new(),
                generation: -1,
                assignment: Vec::new(),
                topics: vec!["t".into()],
                busy: false,
                next_heartbeat: 0,
                next_offset: 0,
            })
            .collect();
        Self {
            seed,
            shard: GroupCoordinatorShard::new(config.clone(), seed ^ 0xABCD),
            config,
            rng,
            now: 1_000,
            next_token: 0,
            log: Vec::new(),
            consumers,
            inflight: BTreeMap::new(),
            answered: BTreeSet::new(),
            leader_assignments: BTreeMap::new(),
            max_generation: 0,
            max_persisted_generation: 0,
            model_offsets: BTreeMap::new(),
            commits_ok: 0,
            commits_fenced: 0,
            restarts: 0,
        }
    }

    fn ctx(&mut self, c: usize, version: i16, kind: Kind) -> RequestContext {
        self.next_token += 1;
        let token = RequestToken(self.next_token);
        self.consumers[c].busy = true;
        self.inflight
            .insert(token, (c, self.consumers[c].incarnation, kind));
        RequestContext {
            token,
            api_version: version,
            client_id: format!("consumer-{c}"),
            client_host: "/10.0.0.1".into(),
        }
    }

    fn send_join(&mut self, c: usize) {
        let con = &self.consumers[c];
        let protocols = vec![JoinGroupRequestProtocol {
            name: "range".into(),
            metadata: subscription(&con.topics.iter().map(String::as_str).collect::<Vec<_>>()),
        }];
        let version = if con.instance.is_some() {
            con.join_version.max(5)
        } else {
            con.join_version
        };
        let req = JoinGroupRequest {
            group_id: GROUP.into(),
            session_timeout_ms: SESSION_MS,
            rebalance_timeout_ms: REBALANCE_MS,
            member_id: con.member_id.clone(),
            group_instance_id: con.instance.clone(),
            protocol_type: "consumer".into(),
            protocols,
            reason: None,
        };
        self.consumers[c].state = State::Joining;
        let ctx = self.ctx(c, version, Kind::Join);
        let e = self.shard.handle_join(&ctx, &req, self.now);
        self.absorb(e);
    }

    fn send_sync(
        &mut self,
        c: usize,
        generation: i32,
        assignments: Vec<SyncGroupRequestAssignment>,
    ) {
        let con = &self.consumers[c];
        let req = SyncGroupRequest {
            group_id: GROUP.into(),
            generation_id: generation,
            member_id: con.member_id.clone(),
            group_instance_id: con.instance.clone(),
            protocol_type: Some("consumer".into()),
            protocol_name: Some("range".into()),
            assignments,
        };
        self.consumers[c].state = State::Syncing;
        let ctx = self.ctx(c, 5, Kind::Sync { generation });
        let e = self.shard.handle_sync(&ctx, &req, self.now);
        self.absorb(e);
    }

    fn send_heartbeat(&mut self, c: usize) {
        let con = &self.consumers[c];
        let req = HeartbeatRequest {
            group_id: GROUP.into(),
            generation_id: con.generation,
            member_id: con.member_id.clone(),
            group_instance_id: con.instance.clone(),
        };
        self.consumers[c].next_heartbeat = self.now + HEARTBEAT_MS;
        let ctx = self.ctx(c, 4, Kind::Heartbeat);
        let e = self.shard.handle_heartbeat(&ctx, &req, self.now);
        self.absorb(e);
    }

    fn send_commit(&mut self, c: usize) {
        let con = &mut self.consumers[c];
        con.next_offset += 1 + (self.rng.below(10) as i64);
        let offset = con.next_offset;
        let offsets: Vec<((String, i32), i64)> = con
            .assignment
            .iter()
            .map(|tp| (tp.clone(), offset))
            .collect();
        let generation = con.generation;
        let req = OffsetCommitRequest {
            group_id: GROUP.into(),
            generation_id_or_member_epoch: generation,
            member_id: con.member_id.clone(),
            group_instance_id: con.instance.clone(),
            retention_time_ms: -1,
            topics: offsets
                .iter()
                .map(|((t, p), o)| OffsetCommitRequestTopic {
                    name: t.clone(),
                    partitions: vec![OffsetCommitRequestPartition {
                        partition_index: *p,
                        committed_offset: *o,
                        committed_leader_epoch: -1,
                        committed_metadata: Some(format!("c{c}")),
                    }],
                })
                .collect(),
        };
        let member_id = con.member_id.clone();
        let ctx = self.ctx(
            c,
            8,
            Kind::Commit {
                generation,
                member_id,
                offsets,
            },
        );
        let e = self.shard.handle_offset_commit(&ctx, &req, self.now);
        self.absorb(e);
    }

    fn send_leave(&mut self, c: usize) {
        let con = &self.consumers[c];
        let req = LeaveGroupRequest {
            group_id: GROUP.into(),
            member_id: String::new(),
            members: vec![MemberIdentity {
                member_id: con.member_id.clone(),
                group_instance_id: con.instance.clone(),
                reason: None,
            }],
        };
        let ctx = self.ctx(c, 5, Kind::Leave);
        let e = self.shard.handle_leave(&ctx, &req, self.now);
        self.absorb(e);
    }

    fn absorb(&mut self, e: Effects) {
        self.log.extend(e.records.iter().cloned());
        if let Some(d) = e.next_deadline {
            assert!(
                d >= self.now - 1,
                "seed {}: deadline {d} in the past of {}",
                self.seed,
                self.now
            );
        }
        for (token, response) in e.responses {
            assert!(
                self.answered.insert(token),
                "seed {}: token {token:?} answered twice",
                self.seed
            );
            let (c, incarnation, kind) = self.inflight.remove(&token).unwrap_or_else(|| {
                panic!("seed {}: response to unknown token {token:?}", self.seed)
            });
            self.check_commit(c, &kind, &response);
            if incarnation != self.consumers[c].incarnation {
                continue; // the process that sent it is gone
            }
            self.consumers[c].busy = false;
            self.on_response(c, kind, response);
        }
    }

    fn on_response(&mut self, c: usize, kind: Kind, response: Response) {
        match (kind, response) {
            (Kind::Join, Response::JoinGroup(r)) => match r.error_code {
                0 => {
                    let con = &mut self.consumers[c];
                    con.member_id = r.member_id.clone();
                    con.generation = r.generation_id;
                    let assignments = if r.leader == r.member_id && !r.skip_assignment {
                        self.assign(r.generation_id, &r.members)
                    } else {
                        Vec::new()
                    };
                    self.send_sync(c, r.generation_id, assignments);
                }
                79 => {
                    self.consumers[c].member_id = r.member_id;
                    self.send_join(c);
                }
                82 => self.consumers[c].state = State::Down, // fenced: a fatal error for clients
                25 | 22 => self.reset(c),
                _ => self.consumers[c].state = State::Idle,
            },
            (Kind::Sync { generation }, Response::SyncGroup(r)) => match r.error_code {
                0 => {
                    let got = decode_assignment(&r.assignment);
                    let con = &self.consumers[c];
                    if let Some(expected) = self.leader_assignments.get(&generation) {
                        let want = expected.get(&con.member_id).cloned().unwrap_or_default();
                        // A replaced static member keeps its predecessor's assignment.
                        if con.instance.is_none() {
                            assert_eq!(
                                got, want,
                                "seed {}: consumer {c} got another assignment",
                                self.seed
                            );
                        }
                    }
                    let con = &mut self.consumers[c];
                    con.assignment = got;
                    con.state = State::Stable;
                    con.next_heartbeat = self.now + HEARTBEAT_MS;
                }
                82 => self.consumers[c].state = State::Down,
                25 | 22 => self.reset(c),
                _ => self.consumers[c].state = State::Idle,
            },
            (Kind::Heartbeat, Response::Heartbeat(r)) => match r.error_code {
                0 => {}
                27 => self.consumers[c].state = State::Idle,
                82 => self.consumers[c].state = State::Down,
                _ => self.reset(c),
            },
            (Kind::Commit { .. }, Response::OffsetCommit(_)) => {}
            (Kind::Leave, Response::LeaveGroup(_)) => self.reset(c),
            (kind, other) => panic!("seed {}: {kind:?} answered with {other:?}", self.seed),
        }
    }

    fn reset(&mut self, c: usize) {
        let con = &mut self.consumers[c];
        con.member_id.clear();
        con.generation = -1;
        con.assignment.clear();
        con.state = State::Idle;
    }

    /// The leader's assignor: partitions of each topic round-robin over its subscribers.
    fn assign(
        &mut self,
        generation: i32,
        members: &[skiff_protocol::JoinGroupResponseMember],
    ) -> Vec<SyncGroupRequestAssignment> {
        let mut subs: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for m in members {
            let mut buf = m.metadata.clone();
            let v = skiff_protocol::wire::read_i16(&mut buf).unwrap();
            let s = ConsumerProtocolSubscription::decode(&mut buf, v).unwrap();
            for t in s.topics {
                subs.entry(t).or_default().push(m.member_id.clone());
            }
        }
        let mut plan: BTreeMap<String, Vec<(String, i32)>> = members
            .iter()
            .map(|m| (m.member_id.clone(), Vec::new()))
            .collect();
        for (topic, mut ms) in subs {
            ms.sort();
            for p in 0..PARTITIONS {
                let owner = &ms[p as usize % ms.len()];
                plan.get_mut(owner).unwrap().push((topic.clone(), p));
            }
        }
        self.leader_assignments.insert(generation, plan.clone());
        plan.into_iter()
            .map(|(m, parts)| {
                let mut by_topic: BTreeMap<String, Vec<i32>> = BTreeMap::new();
                for (t, p) in parts {
                    by_topic.entry(t).or_default().push(p);
                }
                let refs: Vec<(&str, &[i32])> = by_topic
                    .iter()
                    .map(|(t, ps)| (t.as_str(), ps.as_slice()))
                    .collect();
                SyncGroupRequestAssignment {
                    member_id: m,
                    assignment: assignment(&refs),
                }
            })
            .collect()
    }

    /// A commit succeeded only if the committer belongs to the current generation.
    fn check_commit(&mut self, c: usize, kind: &Kind, response: &Response) {
        let (
            Kind::Commit {
                generation,
                member_id,
                offsets,
            },
            Response::OffsetCommit(r),
        ) = (kind, response)
        else {
            return;
        };
        let ok = r
            .topics
            .iter()
            .all(|t| t.partitions.iter().all(|p| p.error_code == 0));
        if !ok {
            self.commits_fenced += 1;
            return;
        }
        if offsets.is_empty() {
            return;
        }
        let s = self
            .shard
            .group_summary(GROUP)
            .expect("a commit to a live group");
        assert!(
            *generation == s.generation && s.members.contains(member_id),
            "seed {}: consumer {c} committed with generation {generation} as {member_id}, group is {s:?}",
            self.seed
        );
        for (tp, o) in offsets {
            self.model_offsets.insert(tp.clone(), *o);
        }
        self.commits_ok += 1;
    }

    fn check_invariants(&mut self) {
        let Some(s) = self.shard.group_summary(GROUP) else {
            return;
        };
        assert!(
            s.generation >= self.max_generation,
            "seed {}: generation went back: {s:?}",
            self.seed
        );
        self.max_generation = s.generation;
        if s.state == "Stable" || s.state == "Empty" {
            self.max_persisted_generation = self.max_persisted_generation.max(s.generation);
        }
        let mut owners: BTreeMap<(String, i32), usize> = BTreeMap::new();
        for (i, con) in self.consumers.iter().enumerate() {
            if con.state != State::Stable || con.generation != s.generation {
                continue;
            }
            for tp in &con.assignment {
                if let Some(other) = owners.insert(tp.clone(), i) {
                    panic!(
                        "seed {}: {tp:?} owned by consumers {other} and {i} in generation {}",
                        self.seed, s.generation
                    );
                }
            }
        }
    }

    fn check_offsets(&self) {
        for ((t, p), o) in &self.model_offsets {
            let got = self.shard.committed_offset(GROUP, t, *p).map(|x| x.offset);
            assert_eq!(
                got,
                Some(*o),
                "seed {}: committed offset of {t}-{p}",
                self.seed
            );
        }
    }

    /// The coordinator restarts: in-flight requests fail (NOT_COORDINATOR), state is replayed.
    fn restart_coordinator(&mut self) {
        self.restarts += 1;
        for (token, (c, incarnation, kind)) in std::mem::take(&mut self.inflight) {
            self.answered.insert(token);
            if incarnation == self.consumers[c].incarnation {
                self.consumers[c].busy = false;
                if matches!(kind, Kind::Join | Kind::Sync { .. }) {
                    self.consumers[c].state = State::Idle;
                }
            }
        }
        let mut shard = GroupCoordinatorShard::new(self.config.clone(), self.rng.next());
        for (k, v) in &self.log {
            shard.replay(k, v.as_ref()).unwrap();
        }
        self.shard = shard;
        let e = self.shard.on_loaded(self.now);
        self.absorb(e);
        self.check_offsets();
        let loaded = self.shard.group_summary(GROUP).map_or(0, |s| s.generation);
        assert!(
            loaded >= self.max_persisted_generation,
            "seed {}: restart lost generation {} (loaded {loaded})",
            self.seed,
            self.max_persisted_generation
        );
        self.max_generation = loaded;
    }

    fn step(&mut self) {
        let dt = if self.rng.chance(3) {
            5_000 + self.rng.below(10_000)
        } else {
            self.rng.below(1_500)
        };
        self.now += dt as i64;
        let e = self.shard.tick(self.now);
        self.absorb(e);
        // Background heartbeats of live members.
        for c in 0..self.consumers.len() {
            let con = &self.consumers[c];
            if con.state == State::Stable && !con.busy && con.next_heartbeat <= self.now {
                self.send_heartbeat(c);
            }
        }
        let c = self.rng.below(self.consumers.len() as u64) as usize;
        let (state, busy) = (self.consumers[c].state, self.consumers[c].busy);
        let roll = self.rng.below(100);
        match state {
            State::Down => {
                if roll < 15 && !self.consumers[c].member_id.is_empty() {
                    // A zombie: the "crashed" process is only partitioned away and still
                    // commits with its old member id and generation.
                    self.send_commit(c);
                } else if roll < 40 {
                    let con = &mut self.consumers[c];
                    con.incarnation += 1;
                    con.busy = false;
                    con.member_id.clear();
                    con.generation = -1;
                    con.assignment.clear();
                    con.state = State::Idle;
                }
            }
            _ if roll < 3 => {
                // Crash: whatever it had in flight is answered to nobody.
                let con = &mut self.consumers[c];
                con.state = State::Down;
                con.incarnation += 1;
                con.busy = false;
            }
            State::Idle if !busy => self.send_join(c),
            State::Stable if !busy => {
                if roll < 40 {
                    self.send_commit(c);
                } else if roll < 44 {
                    self.send_leave(c);
                } else if roll < 48 {
                    let con = &mut self.consumers[c];
                    con.topics = if con.topics.len() == 1 {
                        vec!["t".into(), "u".into()]
                    } else {
                        vec!["t".into()]
                    };
                    self.send_join(c);
                } else if roll < 52 {
                    self.send_join(c); // a plain rejoin (a leader's forces a rebalance)
                } else if roll < 70 {
                    self.send_heartbeat(c);
                }
            }
            _ => {}
        }
        if self.rng.chance(1) {
            self.restart_coordinator();
        }
        self.check_invariants();
    }

    fn finish(&mut self) {
        self.check_offsets();
        // Everyone stops: every parked request must still be answered, and the group empties.
        for con in &mut self.consumers {
            con.state = State::Down;
            con.incarnation += 1;
        }
        for _ in 0..20 {
            self.now += 60_000;
            let e = self.shard.tick(self.now);
            self.absorb(e);
        }
        assert!(
            self.inflight.is_empty(),
            "seed {}: never answered: {:?}",
            self.seed,
            self.inflight.keys()
        );
        if let Some(s) = self.shard.group_summary(GROUP) {
            assert_eq!(
                (s.state, s.members.len()),
                ("Empty", 0),
                "seed {}",
                self.seed
            );
        }
    }
}

fn run(seed: u64, consumers: usize, steps: usize) -> Sim {
    let mut sim = Sim::new(seed, consumers);
    for _ in 0..steps {
        sim.step();
    }
    sim.finish();
    sim
}

#[test]
fn seeded_consumer_group_simulation_keeps_its_invariants() {
    let seeds: Vec<u64> = match std::env::var("SKIFF_SIM_SEED") {
        Ok(s) => vec![s.parse().expect("SKIFF_SIM_SEED is a u64")],
        Err(_) => (1..=16).collect(),
    };
    let (mut ok, mut fenced, mut generations, mut restarts) = (0, 0, 0, 0);
    for seed in seeds {
        let sim = run(seed, 3 + (seed % 5) as usize, 1_500);
        ok += sim.commits_ok;
        fenced += sim.commits_fenced;
        generations += sim.max_generation as u64;
        restarts += sim.restarts;
    }
    eprintln!(
        "commits ok {ok}, fenced {fenced}, generations {generations}, coordinator restarts {restarts}"
    );
    // The runs must actually exercise the interesting paths.
    assert!(ok > 100, "successful commits: {ok}");
    assert!(fenced > 10, "fenced commits: {fenced}");
    assert!(generations > 100, "generations: {generations}");
    assert!(restarts > 5, "coordinator restarts: {restarts}");
}
