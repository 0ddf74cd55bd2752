//! Seeded simulation (issue 16): three controller nodes over a simulated Raft metadata log,
//! with proposals, partial commits, leader loss (the new leader keeping a random prefix of the
//! old leader's uncommitted proposals, as Raft may, and dropping the rest), node crashes and
//! restarts (replaying the committed log from nothing). The nodes run the real pure core
//! (`skiff_metadata::active::ActiveController` over `handle` and `replay`); the quorum is a
//! model: a committed log, the leader's uncommitted tail, one leader per epoch.
//!
//! Checked after every step:
//! - one active controller per epoch, and epochs only grow, on every node;
//! - every node's image is the replay of exactly the committed prefix it applied (each
//!   committed record applied once, in order), so two nodes at the same offset agree;
//! - the active controller's pending image is its committed image plus its uncommitted
//!   proposals, in order;
//! - a request answered OK was committed (its batch is in the committed log), every request
//!   is answered at most once, and a request answered NOT_CONTROLLER is never also answered OK.
//!
//! Runs `SIM_SEEDS` seeds; a failure prints its seed. Replay one with
//! `SKIFF_SIM_SEED=<seed> cargo test -p skiff-metadata --test controller_sim`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};

use rand::rngs::StdRng;
use rand::{Rng as _, SeedableRng};
use skiff_metadata::active::{ActiveController, Submitted, Token};
use skiff_metadata::{
    Heartbeat, MetadataError, MetadataImage, NO_LEADER, Record, Request, Response, replay,
};
use uuid::Uuid;

const SIM_SEEDS: u64 = 200;
const STEPS: usize = 300;
const NODES: usize = 3;
const CLUSTER: &str = "MkU3OEVBNTcwNTJENDM2Qg";
/// Simulated time per step, and the brokers' session timeout (Kafka's default 9 s).
const STEP_MS: i64 = 500;
const SESSION_MS: i64 = 9000;

/// One committed (or proposed) batch.
#[derive(Clone, Debug)]
struct Batch {
    epoch: i32,
    base: i64,
    records: Vec<Record>,
    /// The request it answers, when the proposer is still waiting for it.
    token: Token,
}

#[derive(Debug)]
struct Node {
    alive: bool,
    /// The highest epoch this node has seen.
    epoch: i32,
    /// Committed batches applied so far (an index into the log).
    applied: usize,
    applied_end: i64,
    image: MetadataImage,
    active: Option<ActiveController>,
}

impl Node {
    fn fresh() -> Self {
        Node {
            alive: true,
            epoch: 0,
            applied: 0,
            applied_end: 0,
            image: MetadataImage::default(),
            active: None,
        }
    }
}

#[derive(Default)]
struct Outcomes {
    ok: BTreeSet<Token>,
    refused: BTreeSet<Token>,
    not_controller: BTreeSet<Token>,
}

struct Sim {
    rng: StdRng,
    log: Vec<Batch>,
    uncommitted: Vec<Batch>,
    epoch: i32,
    leader: Option<usize>,
    leaders: BTreeMap<i32, usize>,
    nodes: Vec<Node>,
    next_token: Token,
    out: Outcomes,
    trace: Vec<String>,
}

fn log_end(log: &[Batch]) -> i64 {
    log.last().map_or(0, |b| b.base + b.records.len() as i64)
}

impl Sim {
    fn new(seed: u64) -> Self {
        Sim {
            rng: StdRng::seed_from_u64(seed),
            log: Vec::new(),
            uncommitted: Vec::new(),
            epoch: 0,
            leader: None,
            leaders: BTreeMap::new(),
            nodes: (0..NODES).map(|_| Node::fresh()).collect(),
            next_token: 1,
            out: Outcomes::default(),
            trace: Vec::new(),
        }
    }

    fn request(&mut self) -> Request {
        let names = ["a", "b", "c", "d"];
        let name = names[self.rng.random_range(0..names.len())].to_string();
        match self.rng.random_range(0..5) {
            0 | 1 => Request::CreateTopic {
                name,
                topic_id: Uuid::from_u128(self.rng.random::<u128>() | 1 << 100),
                partitions: self.rng.random_range(1..4),
                replication_factor: self.rng.random_range(1..=3),
                assignments: Vec::new(),
                configs: BTreeMap::new(),
            },
            2 => Request::DeleteTopic { name },
            3 => Request::SetTopicConfigs {
                name,
                configs: if self.rng.random_bool(0.5) {
                    BTreeMap::from([("retention.ms".to_string(), "1000".to_string())])
                } else {
                    BTreeMap::new()
                },
            },
            _ => Request::CreatePartitions {
                name,
                total: self.rng.random_range(1..6),
                assignments: Vec::new(),
            },
        }
    }

    /// The alive node catches up with the committed log; the active one answers its waiters.
    fn deliver(&mut self, i: usize) -> Result<(), String> {
        while self.nodes[i].alive && self.nodes[i].applied < self.log.len() {
            let b = self.log[self.nodes[i].applied].clone();
            let node = &mut self.nodes[i];
            if b.base != node.applied_end {
                return Err(format!(
                    "node {i}: batch at {} after {}",
                    b.base, node.applied_end
                ));
            }
            node.image = replay(&node.image, &b.records);
            node.applied += 1;
            node.applied_end += b.records.len() as i64;
            node.epoch = node.epoch.max(b.epoch);
            if let Some(a) = node.active.as_mut() {
                let answered = a
                    .on_committed(b.base, &b.records)
                    .map_err(|e| format!("node {i}: on_committed: {e}"))?;
                for (t, _) in answered {
                    if !self.out.ok.insert(t) {
                        return Err(format!("token {t} answered twice"));
                    }
                }
            }
        }
        Ok(())
    }

    fn step(&mut self, step: usize) -> Result<(), String> {
        let op = self.rng.random_range(0..100);
        match (op, self.leader) {
            (0..=39, Some(l)) => {
                let req = self.request();
                let token = self.next_token;
                self.next_token += 1;
                let start = self.rng.random_range(0..NODES);
                let now = step as i64 * STEP_MS;
                let kind = self.rng.random_range(0..10);
                let id = self.rng.random_range(1..=NODES as i32);
                let incarnation = Uuid::from_u128(
                    u128::from(self.rng.random_range(1..3u8)) + ((id as u128) << 64),
                );
                let (stale, caught_up) = (self.rng.random_bool(0.1), self.rng.random_bool(0.8));
                let (want_fence, want_shut_down) =
                    (self.rng.random_bool(0.05), self.rng.random_bool(0.05));
                let broker_applied = self.nodes[usize::try_from(id).unwrap() - 1].applied_end;
                let a = self.nodes[l]
                    .active
                    .as_mut()
                    .ok_or("leader without controller")?;
                let submitted = match kind {
                    // Broker lifecycle: (re-)registration, heartbeats, session expiry.
                    0 | 1 => a.submit(
                        token,
                        &Request::RegisterBroker {
                            cluster_id: CLUSTER.into(),
                            broker_id: id,
                            incarnation_id: incarnation,
                            endpoints: Vec::new(),
                            rack: None,
                        },
                        now,
                        start,
                    ),
                    2..=4 => match a.pending().broker(id).map(|b| b.epoch) {
                        None => Submitted::Answer(Ok(Response::Done)),
                        Some(epoch) => {
                            let hb = Heartbeat {
                                broker_id: id,
                                broker_epoch: if stale { epoch - 1 } else { epoch },
                                current_metadata_offset: broker_applied - 1 + i64::from(caught_up),
                                want_fence,
                                want_shut_down,
                            };
                            match a.heartbeat(token, &hb, now) {
                                Ok((s, _reply)) => s,
                                Err(e) => Submitted::Answer(Err(e)),
                            }
                        }
                    },
                    5 => match a.fence_expired(token, now) {
                        Some((_, s)) => s,
                        None => Submitted::Answer(Ok(Response::Done)),
                    },
                    _ => a.submit(token, &req, now, start),
                };
                match submitted {
                    Submitted::Answer(Ok(_)) => {
                        self.out.ok.insert(token);
                    }
                    Submitted::Answer(Err(_)) => {
                        self.out.refused.insert(token);
                    }
                    Submitted::Wait => {}
                    Submitted::Propose {
                        base_offset,
                        records,
                    } => {
                        let expected = log_end(&self.log)
                            + self
                                .uncommitted
                                .iter()
                                .map(|b| b.records.len() as i64)
                                .sum::<i64>();
                        if base_offset != expected {
                            return Err(format!("proposal at {base_offset}, log end {expected}"));
                        }
                        self.uncommitted.push(Batch {
                            epoch: self.epoch,
                            base: base_offset,
                            records,
                            token,
                        });
                    }
                }
                self.trace.push(format!("{step}: submit {token} {req:?}"));
            }
            (40..=64, Some(_)) if !self.uncommitted.is_empty() => {
                let k = self.rng.random_range(1..=self.uncommitted.len());
                let committed: Vec<Batch> = self.uncommitted.drain(..k).collect();
                self.trace.push(format!("{step}: commit {k}"));
                self.log.extend(committed);
            }
            (65..=79, _) => {
                let i = self.rng.random_range(0..NODES);
                self.deliver(i)?;
            }
            (80..=83, _) | (_, None) => self.elect(step)?,
            (84..=89, _) => {
                let i = self.rng.random_range(0..NODES);
                if self.leader == Some(i) {
                    self.lose_leadership(step);
                }
                let n = &mut self.nodes[i];
                if n.alive {
                    n.alive = false;
                    n.active = None;
                    self.trace.push(format!("{step}: crash {i}"));
                }
            }
            _ => {
                let i = self.rng.random_range(0..NODES);
                if !self.nodes[i].alive {
                    // Restart: replay the committed log from nothing (epoch from the log).
                    self.nodes[i] = Node::fresh();
                    self.trace.push(format!("{step}: restart {i}"));
                    self.deliver(i)?;
                }
            }
        }
        self.check()
    }

    /// The leader steps down: its waiters get NOT_CONTROLLER; Raft resolves its tail: a random
    /// prefix reached a majority and stays (committed under the next leader), the rest is lost.
    fn lose_leadership(&mut self, step: usize) {
        let Some(l) = self.leader.take() else { return };
        if let Some(a) = self.nodes[l].active.take() {
            let (refused, _, _) = a.resign();
            for (t, e) in refused {
                assert!(matches!(e, MetadataError::NotController));
                self.out.not_controller.insert(t);
            }
        }
        let keep = self.rng.random_range(0..=self.uncommitted.len());
        let kept: Vec<Batch> = self.uncommitted.drain(..).take(keep).collect();
        self.trace.push(format!(
            "{step}: leader {l} lost; {keep} of its proposals kept"
        ));
        self.log.extend(kept);
    }

    /// A new epoch with a random alive leader, which becomes active once it applied the log.
    fn elect(&mut self, step: usize) -> Result<(), String> {
        self.lose_leadership(step);
        let alive: Vec<usize> = (0..NODES).filter(|&i| self.nodes[i].alive).collect();
        if alive.len() * 2 <= NODES {
            return Ok(()); // no majority: no leader
        }
        let l = alive[self.rng.random_range(0..alive.len())];
        self.epoch += 1;
        if let Some(prev) = self.leaders.insert(self.epoch, l) {
            return Err(format!("epoch {} had leader {prev}, now {l}", self.epoch));
        }
        self.deliver(l)?;
        let n = &mut self.nodes[l];
        n.epoch = self.epoch;
        n.active = Some(ActiveController::new(
            i32::try_from(l).unwrap() + 1,
            self.epoch,
            CLUSTER,
            n.image.clone(),
            n.applied_end,
            step as i64 * STEP_MS,
            SESSION_MS,
        ));
        self.leader = Some(l);
        self.trace
            .push(format!("{step}: node {l} leads epoch {}", self.epoch));
        Ok(())
    }

    fn check(&self) -> Result<(), String> {
        // Epochs only grow and never pass the quorum's.
        for (i, n) in self.nodes.iter().enumerate() {
            if n.epoch > self.epoch {
                return Err(format!("node {i} at epoch {} > {}", n.epoch, self.epoch));
            }
            if let Some(a) = &n.active
                && (self.leader != Some(i) || a.epoch() != self.epoch)
            {
                return Err(format!(
                    "node {i} active at epoch {} but the leader is {:?} at {}",
                    a.epoch(),
                    self.leader,
                    self.epoch
                ));
            }
        }
        // Every node's image is the replay of its committed prefix.
        let mut reference = MetadataImage::default();
        let mut images = vec![reference.clone()];
        for b in &self.log {
            reference = replay(&reference, &b.records);
            images.push(reference.clone());
        }
        // Leadership in the committed image: a leader is one of the replicas and of the ISR,
        // and unfenced; a fenced broker leads nothing.
        for name in reference.topics.keys() {
            for (p, info) in reference.partitions(name) {
                if info.leader == NO_LEADER {
                    continue;
                }
                if !info.replicas.contains(&info.leader) || !info.isr.contains(&info.leader) {
                    return Err(format!(
                        "{name}-{p}: leader {} outside replicas/ISR {info:?}",
                        info.leader
                    ));
                }
                if reference.broker(info.leader).is_none_or(|b| b.fenced) {
                    return Err(format!(
                        "{name}-{p}: led by fenced or unknown broker {}",
                        info.leader
                    ));
                }
            }
        }
        for (i, n) in self.nodes.iter().enumerate().filter(|(_, n)| n.alive) {
            if n.image != images[n.applied] {
                return Err(format!(
                    "node {i}: image differs from the replay of {} batches",
                    n.applied
                ));
            }
            if let Some(a) = &n.active {
                // Its committed image, the committed batches not delivered to it yet, then
                // the proposals still uncommitted.
                let mut pending = a.committed().clone();
                for b in self.log[n.applied..].iter().chain(&self.uncommitted) {
                    pending = replay(&pending, &b.records);
                }
                if &pending != a.pending() {
                    return Err(format!(
                        "node {i}: pending image is not committed + proposals"
                    ));
                }
            }
        }
        // Answers: OK only when committed (or a no-op), never twice, never also NOT_CONTROLLER.
        let committed: BTreeSet<Token> = self.log.iter().map(|b| b.token).collect();
        let proposed: BTreeSet<Token> = self
            .log
            .iter()
            .chain(&self.uncommitted)
            .map(|b| b.token)
            .collect();
        for t in &self.out.ok {
            if proposed.contains(t) && !committed.contains(t) {
                return Err(format!("token {t} answered OK but not committed"));
            }
            if self.out.not_controller.contains(t) || self.out.refused.contains(t) {
                return Err(format!("token {t} answered twice"));
            }
        }
        Ok(())
    }
}

/// What one seed exercised (summed over the seeds and required non-zero, so a sim that stops
/// reaching a path fails instead of passing vacuously).
#[derive(Default, Debug)]
struct Coverage {
    committed_batches: usize,
    answered_ok_after_commit: usize,
    not_controller: usize,
    led_partitions: usize,
    fenced_brokers: usize,
    elections: usize,
}

fn run(seed: u64) -> Result<Coverage, String> {
    let mut sim = Sim::new(seed);
    for step in 0..STEPS {
        sim.step(step).map_err(|e| {
            let tail: Vec<&String> = sim.trace.iter().rev().take(12).collect();
            format!("{e}\nlast steps (newest first): {tail:#?}")
        })?;
    }
    // Liveness of the model: with every node up and a leader, all of it commits and answers.
    for i in 0..NODES {
        if !sim.nodes[i].alive {
            sim.nodes[i] = Node::fresh();
        }
        sim.deliver(i)?;
    }
    if sim.leader.is_none() {
        sim.elect(STEPS)?;
    }
    let pending: Vec<Batch> = sim.uncommitted.drain(..).collect();
    sim.log.extend(pending);
    for i in 0..NODES {
        sim.deliver(i)?;
    }
    sim.check()?;
    let ends: BTreeSet<i64> = sim.nodes.iter().map(|n| n.applied_end).collect();
    if ends.len() != 1 {
        return Err(format!("nodes ended at different offsets: {ends:?}"));
    }
    if let Some(l) = sim.leader
        && let Some(a) = &sim.nodes[l].active
        && a.waiting() != 0
    {
        return Err(format!("{} requests never answered", a.waiting()));
    }
    let image = &sim.nodes[0].image;
    let committed: BTreeSet<Token> = sim.log.iter().map(|b| b.token).collect();
    Ok(Coverage {
        committed_batches: sim.log.len(),
        answered_ok_after_commit: sim.out.ok.intersection(&committed).count(),
        not_controller: sim.out.not_controller.len(),
        led_partitions: image
            .topics
            .keys()
            .flat_map(|t| image.partitions(t).map(|(_, p)| p.leader))
            .filter(|l| *l != NO_LEADER)
            .count(),
        fenced_brokers: image.brokers().filter(|b| b.fenced).count(),
        elections: sim.leaders.len(),
    })
}

#[test]
fn three_controllers_over_a_simulated_quorum() {
    let seeds: Vec<u64> = match std::env::var("SKIFF_SIM_SEED") {
        Ok(s) => vec![s.parse().expect("SKIFF_SIM_SEED is a number")],
        Err(_) => (0..SIM_SEEDS).collect(),
    };
    let single = seeds.len() == 1;
    let mut total = Coverage::default();
    for seed in seeds {
        match run(seed) {
            Err(e) => panic!("seed {seed} failed (replay: SKIFF_SIM_SEED={seed}): {e}"),
            Ok(c) => {
                total.committed_batches += c.committed_batches;
                total.answered_ok_after_commit += c.answered_ok_after_commit;
                total.not_controller += c.not_controller;
                total.led_partitions += c.led_partitions;
                total.fenced_brokers += c.fenced_brokers;
                total.elections += c.elections;
            }
        }
    }
    eprintln!("coverage over the seeds: {total:?}");
    if !single {
        let c = &total;
        for (what, n) in [
            ("committed batches", c.committed_batches),
            ("OK answers after commit", c.answered_ok_after_commit),
            ("NOT_CONTROLLER answers", c.not_controller),
            ("led partitions at the end", c.led_partitions),
            ("fenced brokers at the end", c.fenced_brokers),
            ("elections", c.elections),
        ] {
            assert!(n > 0, "the simulation never reached: {what} ({c:?})");
        }
    }
}
