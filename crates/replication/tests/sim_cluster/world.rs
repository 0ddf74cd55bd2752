//! The replicas and the network: each replica is a `skiff_replication::Partition` beside a
//! [`SimLog`], driven the way `crates/server/src/replica/` drives it (`follow.rs` roles and
//! the follower's side, `read.rs` the leader's answer to a follower's fetch, `append.rs`
//! produce and the group-commit fsync, `isr.rs` AlterPartition, `mod.rs` restart).
//! Endpoints: 0 is the controller, 1..=3 the replicas; each directed link is a FIFO (one
//! TCP connection) that a cut or a crash empties.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use rand::Rng as _;
use rand::rngs::StdRng;
use skiff_replication::{
    AckDecision, Acks, Assignment, Effect, Partition, PartitionConfig, Role, WaitId,
};
use skiff_types::ErrorCode;

use crate::check::History;
use crate::controller::{Controller, Image, REPLICAS, slot};
use crate::fetch::Body;
use crate::log::{Entry, SimLog};

/// A follower's fetch waits this long for an answer (`wait_max_ms` + 5 s in `fetcher.rs`).
pub const FETCH_TIMEOUT_MS: i64 = 5_500;
/// An AlterPartition not answered by then is settled as failed (as built) or sent again.
const ALTER_TIMEOUT_MS: i64 = 5_000;
/// A parked produce's deadline.
const ACK_TIMEOUT_MS: i64 = 30_000;
pub const SESSION_TIMEOUT_MS: i64 = 9_000;

/// Where the simulated server may deviate from the server as built: each `false` field is
/// the fix of a bug this simulation found (see the module docs of `sim_cluster.rs`).
#[derive(Clone, Copy, Debug)]
pub struct Model {
    /// `ReplicaManager::open`: a restarted broker takes its roles from its last image and
    /// serves (produce, follower fetches) at once; `false`: it takes roles only from the
    /// image holding its new registration (the leaderships of its old incarnation moved).
    pub restart_serves_at_once: bool,
    /// `follower_position` on a durable topic: the fetch offset is the fsynced end even when
    /// the log is longer (an ex-leader's unsynced tail); `false`: fsync to the LEO first.
    pub durable_fetch_from_synced_end: bool,
    /// `truncate_locked` to an offset >= LEO does nothing; `false`: the epoch cache is still
    /// truncated to the LEO (Kafka's `UnifiedLog.truncateTo`), dropping an empty epoch.
    pub noop_truncation_keeps_epoch: bool,
    /// `isr.rs`: an AlterPartition that timed out or was refused with any error is settled
    /// with `on_isr_proposal_failed` (the core drops the proposal, additions included);
    /// `false`: Kafka's `Partition.handleAlterPartitionError` and `AlterPartitionManager`:
    /// no answer -> the same request again; INELIGIBLE_REPLICA -> failed; any other error ->
    /// the proposal stays in flight until the next registration is applied.
    pub failed_proposal_resets_isr: bool,
    /// `isr.rs` `settle_isr`: every NONE answer goes to `Partition::on_isr_committed`,
    /// which takes a partition epoch equal to its own and clears the proposal in flight, so
    /// a late answer to an older proposal settles a newer one; `false`: an answer not newer
    /// than the partition epoch the core has is old news, ignored (Kafka ignores an answer
    /// to a proposal that is no longer the pending one).
    pub late_answer_settles_proposal: bool,
    /// `truncate_locked`: a truncation below the HW leaves `replication-offset-checkpoint`
    /// as it was until the next periodic checkpoint, so a crash before it restores an HW
    /// over what the log holds by then (reachable only once a committed entry was lost:
    /// non-durable topic, power loss); `false`: the checkpointed HW is clamped at once.
    pub truncation_keeps_checkpointed_hw: bool,
}

impl Model {
    pub const AS_BUILT: Model = Model {
        restart_serves_at_once: true,
        durable_fetch_from_synced_end: true,
        noop_truncation_keeps_epoch: true,
        failed_proposal_resets_isr: true,
        late_answer_settles_proposal: true,
        truncation_keeps_checkpointed_hw: true,
    };
}

#[derive(Clone, Copy, Debug)]
pub struct Cfg {
    pub durable: bool,
    pub min_isr: i32,
    /// A crash loses the unsynced suffix, or an arbitrary part of it (power loss, torn tail);
    /// otherwise a crash keeps what was written (kill -9, the page cache survives).
    pub lossy: bool,
    pub lag_ms: i64,
    pub model: Model,
    /// The weights of the step kinds (produce, fetch, deliver, fsync, HW checkpoint, time,
    /// metadata, fault): each seed has its own mix ("swarm testing").
    pub mix: [u64; 8],
    /// One delivery in this many drops the message instead (0: none).
    pub drop_one_in: u64,
}

#[derive(Clone, Debug)]
pub enum Msg {
    FetchReq {
        seq: u64,
        offset: i64,
        last_epoch: i32,
        leader_epoch: i32,
    },
    FetchResp {
        seq: u64,
        leader_epoch: i32,
        body: Body,
    },
    AlterReq {
        seq: u64,
        broker_epoch: i64,
        leader_epoch: i32,
        partition_epoch: i32,
        isr: Vec<i32>,
        member_epochs: Vec<i64>,
    },
    AlterResp {
        seq: u64,
        result: Result<(i32, Vec<i32>), ErrorCode>,
    },
}

#[derive(Debug)]
pub struct Node {
    pub id: i32,
    pub up: bool,
    pub paused: bool,
    /// Answers produce and follower fetches (see [`Model::restart_serves_at_once`]).
    pub serving: bool,
    pub incarnation: u32,
    /// The broker epoch this incarnation registered with.
    pub registered: Option<i64>,
    /// The image version applied (the metadata log is durable: survives restarts).
    pub applied: usize,
    pub part: Partition,
    pub log: SimLog,
    /// The fetch in flight: (seq, sent at).
    pub fetch: Option<(u64, i64)>,
    /// AlterPartition requests in flight.
    pub alters: Vec<Alter>,
}

/// An AlterPartition in flight (what `isr.rs` sends for an `Effect::ProposeIsr`).
#[derive(Clone, Debug)]
pub struct Alter {
    seq: u64,
    sent_at: i64,
    leader_epoch: i32,
    partition_epoch: i32,
    isr: Vec<i32>,
}

#[derive(Debug)]
pub struct Wait {
    node: usize,
    epoch: i32,
    entries: Vec<(i64, Entry)>,
}

#[derive(Debug)]
pub struct World {
    pub cfg: Cfg,
    pub rng: StdRng,
    pub now: i64,
    pub nodes: Vec<Node>,
    pub ctl: Controller,
    pub links: BTreeMap<(usize, usize), VecDeque<Msg>>,
    pub cut: BTreeSet<(usize, usize)>,
    waits: BTreeMap<u64, Wait>,
    next_payload: u64,
    next_wait: u64,
    pub(crate) next_seq: u64,
    pub hist: History,
    pub trace: Vec<String>,
    /// At most this many records in a fetch answer (larger in the heal phase).
    pub max_fetch: u64,
    /// Counters of what happened (printed by the test: the coverage of the faults).
    pub stats: BTreeMap<&'static str, u64>,
}

fn assignment(img: &Image) -> Assignment {
    Assignment {
        leader_epoch: img.leader_epoch,
        partition_epoch: img.partition_epoch,
        replicas: REPLICAS.to_vec(),
        isr: img.isr.clone(),
    }
}

impl World {
    pub fn new(rng: StdRng, cfg: Cfg) -> Result<Self, String> {
        let pconfig = PartitionConfig {
            min_insync_replicas: cfg.min_isr,
            durable: cfg.durable,
            replica_lag_time_max_ms: cfg.lag_ms,
        };
        let nodes = REPLICAS
            .iter()
            .map(|&id| Node {
                id,
                up: true,
                paused: false,
                serving: true,
                incarnation: 1,
                registered: Some(0),
                applied: 0,
                part: Partition::new(id, pconfig),
                log: SimLog::default(),
                fetch: None,
                alters: Vec::new(),
            })
            .collect();
        let mut w = World {
            cfg,
            rng,
            now: 0,
            nodes,
            ctl: Controller::new(SESSION_TIMEOUT_MS),
            links: BTreeMap::new(),
            cut: BTreeSet::new(),
            waits: BTreeMap::new(),
            next_payload: 1,
            next_wait: 1,
            next_seq: 1,
            hist: History::new(!cfg.durable),
            trace: Vec::new(),
            stats: BTreeMap::new(),
            max_fetch: 12,
        };
        for i in 0..3 {
            w.sync_roles(i)?;
        }
        Ok(w)
    }

    pub fn pconfig(&self) -> PartitionConfig {
        PartitionConfig {
            min_insync_replicas: self.cfg.min_isr,
            durable: self.cfg.durable,
            replica_lag_time_max_ms: self.cfg.lag_ms,
        }
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.rng.random_range(0..n.max(1))
    }

    pub fn between(&mut self, lo: i64, hi: i64) -> i64 {
        if hi <= lo {
            lo
        } else {
            self.rng.random_range(lo..=hi)
        }
    }

    /// Cuts the connection between endpoints `a` and `b`: what was queued on it is lost.
    pub fn cut_link(&mut self, a: usize, b: usize) {
        if a != b {
            self.cut.insert((a.min(b), a.max(b)));
            self.links.retain(|k, _| *k != (a, b) && *k != (b, a));
        }
    }

    /// Restores the connection between endpoints `a` and `b`.
    pub fn heal_link(&mut self, a: usize, b: usize) {
        self.cut.remove(&(a.min(b), a.max(b)));
    }

    pub fn linked(&self, a: usize, b: usize) -> bool {
        !self.cut.contains(&(a.min(b), a.max(b)))
    }

    pub fn count(&mut self, what: &'static str) {
        *self.stats.entry(what).or_default() += 1;
    }

    pub(crate) fn send(&mut self, from: usize, to: usize, msg: Msg) {
        if self.linked(from, to) {
            self.links.entry((from, to)).or_default().push_back(msg);
        } else {
            self.trace
                .push(format!("  {from}->{to} lost (cut): {msg:?}"));
        }
    }

    /// Carries out `i`'s effects (`ReplicaManager::apply`).
    pub(crate) fn apply(&mut self, i: usize, fx: Vec<Effect>) -> Result<(), String> {
        let mut failed_proposal = false;
        for e in fx {
            let n = &mut self.nodes[i];
            match e {
                Effect::HighWatermarkAdvanced { new, .. }
                | Effect::HighWatermarkLowered { new, .. } => {
                    // The leader's HW only rises, and only with |ISR| >= the effective min ISR.
                    let under_min = n.part.isr().len() < n.part.effective_min_isr();
                    if n.part.role() == Role::Leader
                        && (new < n.log.hw || (new > n.log.hw && under_min))
                    {
                        return Err(format!("leader {} HW {} -> {new}", n.id, n.log.hw));
                    }
                    n.log.hw = new.clamp(0, n.log.leo());
                }
                Effect::LogEndAdvanced { .. } => {}
                Effect::AckCompleted { wait, error } => {
                    let Some(w) = self.waits.remove(&wait.0) else {
                        return Err(format!("replica {} completed unknown wait {wait:?}", n.id));
                    };
                    if w.node != i {
                        return Err(format!("replica {} completed another's wait", n.id));
                    }
                    self.trace
                        .push(format!("  ack {wait:?} {error:?} {:?}", w.entries));
                    if error == ErrorCode::None {
                        self.hist.on_ack(&w.entries, w.epoch);
                        self.count("acked (parked)");
                    } else {
                        self.count("ack failed");
                    }
                }
                Effect::ProposeIsr {
                    isr,
                    partition_epoch,
                } => {
                    if n.registered.is_none() {
                        failed_proposal = true; // isr.rs: not registered, settled at once
                        continue;
                    }
                    let leader_epoch = n.part.leader_epoch();
                    self.send_alter(i, leader_epoch, partition_epoch, isr);
                }
            }
        }
        if failed_proposal {
            self.nodes[i].part.on_isr_proposal_failed();
        }
        Ok(())
    }

    /// `isr.rs`'s `send`: the proposal with each member's broker epoch from the image.
    fn send_alter(&mut self, i: usize, leader_epoch: i32, partition_epoch: i32, isr: Vec<i32>) {
        let n = &mut self.nodes[i];
        let Some(broker_epoch) = n.registered else {
            return;
        };
        let img = &self.ctl.versions[n.applied];
        let member_epochs = isr.iter().map(|r| img.broker_epoch[slot(*r)]).collect();
        let seq = self.next_seq;
        self.next_seq += 1;
        n.alters.push(Alter {
            seq,
            sent_at: self.now,
            leader_epoch,
            partition_epoch,
            isr: isr.clone(),
        });
        let msg = Msg::AlterReq {
            seq,
            broker_epoch,
            leader_epoch,
            partition_epoch,
            isr,
            member_epochs,
        };
        self.send(i + 1, 0, msg);
    }

    /// `ReplicaManager::sync_roles` with the image version `i` applied.
    pub fn sync_roles(&mut self, i: usize) -> Result<(), String> {
        let now = self.now;
        let n = &mut self.nodes[i];
        let img = self.ctl.versions[n.applied].clone();
        if !n.serving {
            if n.registered != Some(img.broker_epoch[i]) {
                return Ok(()); // restarted, not caught up with its registration yet
            }
            n.serving = true;
        }
        let a = assignment(&img);
        let same_epoch = n.part.leader_epoch() == a.leader_epoch;
        let durable_end = n.log.synced;
        let mut fx = match (img.leader == n.id, n.part.role()) {
            (true, Role::Leader) if same_epoch => {
                if a.partition_epoch > n.part.partition_epoch() {
                    n.part.on_isr_committed(a.partition_epoch, a.isr, now)
                } else {
                    Vec::new()
                }
            }
            (true, _) => {
                n.log.assign_epoch_start(a.leader_epoch);
                n.part.become_leader(a, n.log.local(durable_end), now)
            }
            (false, Role::Follower { leader })
                if leader == img.leader
                    && same_epoch
                    && a.partition_epoch <= n.part.partition_epoch() =>
            {
                Vec::new()
            }
            (false, _) => n
                .part
                .become_follower(img.leader, a, n.log.local(durable_end)),
        };
        if n.part.role() == Role::Leader {
            let ineligible = REPLICAS
                .iter()
                .copied()
                .filter(|r| *r != n.id && img.fenced[slot(*r)])
                .collect();
            fx.extend(n.part.set_ineligible(ineligible, now));
        }
        self.apply(i, fx)
    }

    /// The replica applies a newer image version, if it can reach the metadata.
    pub fn apply_metadata(&mut self, i: usize, latest: bool) -> Result<(), String> {
        let n = &self.nodes[i];
        let top = self.ctl.version();
        if !n.up || n.paused || !self.linked(i + 1, 0) || n.applied >= top {
            return Ok(());
        }
        let lo = i64::try_from(n.applied).unwrap_or(0) + 1;
        let hi = i64::try_from(top).unwrap_or(0);
        let v = if latest { hi } else { self.between(lo, hi) };
        self.nodes[i].applied = usize::try_from(v).unwrap_or(top);
        self.trace.push(format!("  {} applies v{v}", i + 1));
        self.sync_roles(i)
    }

    /// A producer's acks=all batch of `k` records to replica `i`, if it leads and serves.
    pub fn produce(&mut self, i: usize, k: usize) -> Result<(), String> {
        let now = self.now;
        let n = &mut self.nodes[i];
        if !n.up || n.paused || !n.serving || n.part.role() != Role::Leader {
            return Ok(());
        }
        if let Err(code) = n.part.check_append(Acks::All) {
            self.trace
                .push(format!("  produce to {} refused: {code:?}", n.id));
            self.count("produce refused");
            return Ok(());
        }
        let epoch = n.part.leader_epoch();
        let mut entries = Vec::new();
        for _ in 0..k {
            let e = Entry {
                epoch,
                payload: self.next_payload,
            };
            self.next_payload += 1;
            self.hist.on_append(n.id, n.log.leo(), e)?;
            entries.push((n.log.leo(), e));
            n.log.append(e);
        }
        let fx = n.part.on_leader_append(n.log.leo(), now);
        let wait = self.next_wait;
        self.next_wait += 1;
        let decision =
            n.part
                .await_acks(WaitId(wait), Acks::All, n.log.leo(), now + ACK_TIMEOUT_MS);
        self.trace
            .push(format!("  {} appends {entries:?}: {decision:?}", n.id));
        match decision {
            AckDecision::Done(ErrorCode::None) => {
                self.hist.on_ack(&entries, epoch);
                self.count("acked at once");
            }
            AckDecision::Done(_) => {}
            AckDecision::Parked => {
                self.waits.insert(
                    wait,
                    Wait {
                        node: i,
                        epoch,
                        entries,
                    },
                );
            }
        }
        self.apply(i, fx)
    }

    /// The group commit (or the OS writing back) fsyncs part of `i`'s unsynced suffix.
    pub fn fsync(&mut self, i: usize, all: bool) -> Result<(), String> {
        if !self.nodes[i].up || self.nodes[i].paused {
            return Ok(());
        }
        let (lo, hi) = (self.nodes[i].log.synced, self.nodes[i].log.leo());
        let to = if all { hi } else { self.between(lo, hi) };
        let n = &mut self.nodes[i];
        n.log.synced = to;
        if self.cfg.durable {
            let fx = n.part.on_local_synced(to, self.now);
            return self.apply(i, fx);
        }
        Ok(())
    }

    /// Delivers the first message of link `(from, to)`; `false` if it cannot be now.
    pub fn deliver(&mut self, from: usize, to: usize) -> Result<bool, String> {
        if to > 0 && self.nodes[to - 1].paused && self.nodes[to - 1].up {
            return Ok(false);
        }
        let Some(msg) = self
            .links
            .get_mut(&(from, to))
            .and_then(VecDeque::pop_front)
        else {
            return Ok(false);
        };
        if to > 0 && !self.nodes[to - 1].up {
            return Ok(true);
        }
        self.trace.push(format!("  {from}->{to}: {msg:?}"));
        match msg {
            Msg::FetchReq {
                seq,
                offset,
                last_epoch,
                leader_epoch,
            } => {
                let f = i32::try_from(from).unwrap_or(0);
                if let Some(body) =
                    self.answer_fetch(to - 1, f, offset, last_epoch, leader_epoch)?
                {
                    let resp = Msg::FetchResp {
                        seq,
                        leader_epoch,
                        body,
                    };
                    self.send(to, from, resp);
                }
            }
            Msg::FetchResp {
                seq,
                leader_epoch,
                body,
            } => self.on_fetch_response(to - 1, seq, leader_epoch, body)?,
            Msg::AlterReq {
                seq,
                broker_epoch,
                leader_epoch,
                partition_epoch,
                isr,
                member_epochs,
            } => {
                let from_id = i32::try_from(from).unwrap_or(0);
                let result = self.ctl.alter_partition(
                    from_id,
                    broker_epoch,
                    leader_epoch,
                    partition_epoch,
                    &isr,
                    &member_epochs,
                    &mut self.trace,
                );
                self.send(0, from, Msg::AlterResp { seq, result });
            }
            Msg::AlterResp { seq, result } => {
                let n = &mut self.nodes[to - 1];
                let Some(at) = n.alters.iter().position(|a| a.seq == seq) else {
                    return Ok(true); // timed out already: the answer is dropped
                };
                n.alters.remove(at);
                self.count(if result.is_ok() {
                    "ISR change ok"
                } else {
                    "ISR change refused"
                });
                let n = &mut self.nodes[to - 1];
                match result {
                    Ok((pe, _))
                        if pe <= n.part.partition_epoch()
                            && !self.cfg.model.late_answer_settles_proposal => {}
                    Ok((pe, isr)) => {
                        let fx = n.part.on_isr_committed(pe, isr, self.now);
                        self.apply(to - 1, fx)?;
                    }
                    Err(code) => {
                        let definite = code == ErrorCode::IneligibleReplica;
                        if self.cfg.model.failed_proposal_resets_isr || definite {
                            n.part.on_isr_proposal_failed();
                        }
                    }
                }
            }
        }
        Ok(true)
    }

    /// Time passes by `dt`: replicas tick (ISR shrink, acks deadlines, AlterPartition
    /// timeouts) and talk to the controller (registration, heartbeats), which then fences
    /// expired sessions.
    pub fn pass_time(&mut self, dt: i64) -> Result<(), String> {
        self.now += dt;
        let now = self.now;
        for i in 0..3 {
            if !self.nodes[i].up || self.nodes[i].paused {
                continue;
            }
            let n = &mut self.nodes[i];
            let fx = n.part.tick(now);
            let (expired, alive): (Vec<Alter>, Vec<Alter>) = std::mem::take(&mut n.alters)
                .into_iter()
                .partition(|a| now - a.sent_at > ALTER_TIMEOUT_MS);
            n.alters = alive;
            for a in expired {
                let n = &mut self.nodes[i];
                if self.cfg.model.failed_proposal_resets_isr {
                    n.part.on_isr_proposal_failed();
                } else if n.part.role() == Role::Leader && n.part.leader_epoch() == a.leader_epoch {
                    self.count("AlterPartition sent again");
                    self.send_alter(i, a.leader_epoch, a.partition_epoch, a.isr);
                }
            }
            self.apply(i, fx)?;
            if !self.linked(i + 1, 0) {
                continue;
            }
            let n = &mut self.nodes[i];
            let id = n.id;
            if n.registered.is_some() && self.ctl.incarnation[i] == n.incarnation {
                self.ctl.heartbeat(id, n.applied, now, &mut self.trace);
            } else if let Ok(epoch) = self.ctl.register(id, n.incarnation, now, &mut self.trace) {
                n.registered = Some(epoch);
            }
        }
        self.ctl.expire(now, &mut self.trace);
        Ok(())
    }

    /// A crash: in-flight messages and parked produces are lost; a lossy crash keeps a
    /// random prefix of the unsynced suffix (all of it, none, or a torn part).
    pub fn crash(&mut self, i: usize) {
        let (synced, leo) = (self.nodes[i].log.synced, self.nodes[i].log.leo());
        let keep = match (self.cfg.lossy, self.below(3)) {
            (false, _) => leo,
            (true, 0) => synced,
            (true, _) => self.between(synced, leo),
        };
        self.crash_keeping(i, keep);
    }

    /// A crash that keeps the first `keep` entries (at least the synced ones).
    pub fn crash_keeping(&mut self, i: usize, keep: i64) {
        let (synced, leo) = (self.nodes[i].log.synced, self.nodes[i].log.leo());
        let keep = keep.clamp(synced, leo);
        if keep < leo {
            self.count("crashes losing data");
        }
        self.count("crashes");
        let n = &mut self.nodes[i];
        self.hist.on_crash(n.id, &n.log, keep);
        n.log.crash(keep);
        n.up = false;
        n.paused = false;
        n.fetch = None;
        n.alters.clear();
        self.waits.retain(|_, w| w.node != i);
        self.links.retain(|(a, b), _| *a != i + 1 && *b != i + 1);
        self.trace.push(format!(
            "  {} keeps {keep} of {leo} (synced {synced})",
            i + 1
        ));
    }

    /// Delivers every queued message, and what they cause, checking after each.
    pub fn deliver_all(&mut self) -> Result<(), String> {
        while let Some(&(from, to)) = self
            .links
            .iter()
            .find(|((_, to), q)| !q.is_empty() && (*to == 0 || !self.nodes[to - 1].paused))
            .map(|(k, _)| k)
        {
            self.deliver(from, to)?;
            History::check(self)?;
        }
        Ok(())
    }

    /// `n` rounds: every follower fetches, every message is delivered.
    pub fn fetch_rounds(&mut self, n: usize) -> Result<(), String> {
        for _ in 0..n {
            for i in 0..3 {
                self.send_fetch(i);
            }
            self.deliver_all()?;
        }
        Ok(())
    }

    /// `ReplicaManager::open` + `install`: a new core from the recovered log and the last
    /// applied image, durable to the log end; a new incarnation, registered later. With the
    /// fix of [`Model::restart_serves_at_once`], no role (nothing served, nothing fetched)
    /// until the replica applied the image with its new registration.
    pub fn restart(&mut self, i: usize) -> Result<(), String> {
        let (now, pconfig) = (self.now, self.pconfig());
        let serves = self.cfg.model.restart_serves_at_once;
        let n = &mut self.nodes[i];
        n.up = true;
        n.incarnation += 1;
        n.registered = None;
        n.serving = serves;
        n.part = Partition::new(n.id, pconfig);
        if !serves {
            return Ok(());
        }
        let img = &self.ctl.versions[n.applied];
        let local = n.log.local(n.log.leo());
        let fx = if img.leader == n.id {
            n.part.become_leader(assignment(img), local, now)
        } else {
            n.part.become_follower(img.leader, assignment(img), local)
        };
        self.apply(i, fx)
    }
}
