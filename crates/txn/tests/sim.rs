//! Seeded simulation of the transaction coordinator: producers sharing a few transactional ids
//! run InitProducerId / AddPartitionsToTxn (and verify_only) / AddOffsetsToTxn / EndTxn in
//! random order with random (sometimes stale) producer ids and epochs; the clock jumps (so
//! transactions time out and idle ids expire); markers complete after random delays; appends
//! fail (the call's records are dropped and the shard reloads from the log appended so far);
//! the coordinator crashes (reload with the next coordinator epoch, pending marker jobs lost
//! or kept stale).
//!
//! Checked after every durable call (memory == log then):
//! - a producer id's epoch only grows, and a producer id belongs to one transactional id;
//! - a transaction's outcome never flips (keyed by id, producer id and start time);
//! - every MarkerJob names a `Prepare*` transaction with its producer id, epoch, result and
//!   partitions, and carries the current coordinator epoch;
//! - answers agree with the state: InitProducerId NONE -> `Empty` with that epoch; add NONE ->
//!   `Ongoing` holding the partitions; EndTxn NONE -> that result prepared or complete;
//!   verify_only NONE only for partitions of that producer's ongoing transaction;
//! - a crash's replay rebuilds exactly the views the shard had;
//!
//! and at the end (producers stopped, markers delivered, clock past every timeout) every
//! transaction is complete. Runs `SIM_SEEDS` seeds; a failure prints its seed. Replay one with
//! `SKIFF_TXN_SIM_SEED=<seed> cargo nextest run -p skiff-txn -E 'binary(sim)'`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use rand::rngs::StdRng;
use rand::{Rng as _, SeedableRng};
use skiff_protocol::{
    AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, AddPartitionsToTxnTopic,
    AddPartitionsToTxnTransaction, EndTxnRequest, InitProducerIdRequest,
};
use skiff_txn::{
    Effects, MarkerJob, RequestContext, Response, TxnConfig, TxnResult, TxnShard, TxnState, TxnView,
};

const SIM_SEEDS: u64 = 200;
const STEPS: usize = 300;
const IDS: [&str; 3] = ["alpha", "beta", "gamma"];
const PRODUCERS_PER_ID: usize = 2;
const TIMEOUT_MAX_MS: i32 = 4_000;

#[derive(Clone, Debug)]
struct Producer {
    id: &'static str,
    pid: i64,
    epoch: i16,
}

#[derive(Default, Debug)]
struct Coverage {
    commits: u64,
    aborts: u64,
    fenced_by_init: u64,
    timeouts: u64,
    expiries: u64,
    crashes: u64,
    failed_appends: u64,
    verify_none: u64,
    producer_fenced: u64,
}

struct Sim {
    rng: StdRng,
    config: TxnConfig,
    coordinator_epoch: i32,
    shard: TxnShard,
    log: Vec<(Bytes, Option<Bytes>)>,
    now: i64,
    next_pid: i64,
    token: u64,
    producers: Vec<Producer>,
    /// Marker jobs in flight: (due time, job).
    pending: Vec<(i64, MarkerJob)>,
    max_epoch: BTreeMap<i64, i16>,
    pid_owner: BTreeMap<i64, String>,
    outcomes: BTreeMap<(String, i64, i64), TxnResult>,
    cov: Coverage,
}

fn views(s: &TxnShard) -> Vec<TxnView> {
    s.transactional_ids()
        .iter()
        .filter_map(|id| s.describe(id))
        .collect()
}

impl Sim {
    fn new(seed: u64) -> Self {
        let config = TxnConfig {
            transaction_max_timeout_ms: TIMEOUT_MAX_MS,
            transactional_id_expiration_ms: 20_000,
            abort_timed_out_transaction_cleanup_interval_ms: 1_000,
            remove_expired_transaction_cleanup_interval_ms: 5_000,
        };
        let producers = IDS
            .iter()
            .flat_map(|id| {
                (0..PRODUCERS_PER_ID).map(|_| Producer {
                    id,
                    pid: -1,
                    epoch: -1,
                })
            })
            .collect();
        Self {
            rng: StdRng::seed_from_u64(seed),
            shard: TxnShard::new(config.clone(), 1),
            config,
            coordinator_epoch: 1,
            log: Vec::new(),
            now: 0,
            next_pid: 100,
            token: 0,
            producers,
            pending: Vec::new(),
            max_epoch: BTreeMap::new(),
            pid_owner: BTreeMap::new(),
            outcomes: BTreeMap::new(),
            cov: Coverage::default(),
        }
    }

    /// Rebuilds the shard from the log with the next coordinator epoch; returns the load's
    /// effects (committed through `commit` by the caller).
    fn reload(&mut self) -> Result<Effects, String> {
        self.coordinator_epoch += 1;
        let mut s = TxnShard::new(self.config.clone(), self.coordinator_epoch);
        for (k, v) in &self.log {
            s.replay(k, v.as_deref())
                .map_err(|e| format!("own record does not replay: {e}"))?;
        }
        self.shard = s;
        Ok(self.shard.on_loaded(self.now))
    }

    /// The runtime: append the records (or fail and reload), then check the invariants.
    /// Returns whether the call's effects are durable.
    fn commit(&mut self, e: Effects, may_fail: bool) -> Result<bool, String> {
        if may_fail && !e.records.is_empty() && self.rng.random_bool(0.05) {
            self.cov.failed_appends += 1;
            let loaded = self.reload()?;
            self.commit(loaded, false)?;
            return Ok(false);
        }
        self.log.extend(e.records.iter().cloned());
        self.check_state()?;
        for job in &e.markers {
            self.check_job(job)?;
            let due = self.now + self.rng.random_range(0..3_000);
            self.pending.push((due, job.clone()));
        }
        Ok(true)
    }

    fn check_job(&self, job: &MarkerJob) -> Result<(), String> {
        let v = self
            .shard
            .describe(&job.transactional_id)
            .ok_or_else(|| format!("marker job for an unknown id: {job:?}"))?;
        let expected_state = match job.result {
            TxnResult::Commit => TxnState::PrepareCommit,
            TxnResult::Abort => TxnState::PrepareAbort,
        };
        if v.state != expected_state
            || v.producer_id != job.producer_id
            || v.producer_epoch != job.producer_epoch
            || v.partitions != job.partitions
            || job.partitions.is_empty()
            || job.coordinator_epoch != self.coordinator_epoch
        {
            return Err(format!("marker job {job:?} does not match {v:?}"));
        }
        Ok(())
    }

    fn check_state(&mut self) -> Result<(), String> {
        for v in views(&self.shard) {
            let max = self
                .max_epoch
                .entry(v.producer_id)
                .or_insert(v.producer_epoch);
            if v.producer_epoch < *max {
                return Err(format!("epoch went back from {max}: {v:?}"));
            }
            *max = v.producer_epoch;
            let owner = self
                .pid_owner
                .entry(v.producer_id)
                .or_insert_with(|| v.transactional_id.clone());
            if *owner != v.transactional_id {
                return Err(format!("producer id owned by {owner} too: {v:?}"));
            }
            let result = match v.state {
                TxnState::PrepareCommit | TxnState::CompleteCommit => Some(TxnResult::Commit),
                TxnState::PrepareAbort | TxnState::CompleteAbort => Some(TxnResult::Abort),
                _ => None,
            };
            if let Some(result) = result {
                let key = (
                    v.transactional_id.clone(),
                    v.producer_id,
                    v.start_timestamp_ms,
                );
                let was = *self.outcomes.entry(key).or_insert(result);
                if was != result {
                    return Err(format!("outcome flipped from {was:?}: {v:?}"));
                }
            }
        }
        Ok(())
    }

    fn ctx(&mut self, version: i16) -> RequestContext {
        self.token += 1;
        RequestContext::new(self.token, version)
    }

    fn only_codes(e: &Effects) -> Result<Vec<i16>, String> {
        match e.responses.as_slice() {
            [(_, r)] => Ok(r.error_codes()),
            other => Err(format!("expected one response, got {other:?}")),
        }
    }

    fn random_parts(&mut self) -> Vec<(String, i32)> {
        let n = self.rng.random_range(1..=3);
        let mut set = BTreeSet::new();
        for _ in 0..n {
            let topic = ["a", "b"][self.rng.random_range(0..2)].to_string();
            set.insert((topic, self.rng.random_range(0..3)));
        }
        set.into_iter().collect()
    }

    /// The producer's id and epoch, sometimes stale or wrong.
    fn credentials(&mut self, p: usize) -> (i64, i16) {
        let pr = &self.producers[p];
        match self.rng.random_range(0..20) {
            0 => (pr.pid, pr.epoch.saturating_sub(1)),
            1 => (pr.pid + 1, pr.epoch),
            _ => (pr.pid, pr.epoch),
        }
    }

    fn step_producer(&mut self, p: usize) -> Result<(), String> {
        let id = self.producers[p].id;
        match self.rng.random_range(0..10) {
            0 | 1 => self.do_init(p),
            2..=4 => {
                let (pid, epoch) = self.credentials(p);
                let parts = self.random_parts();
                let verify_only = self.rng.random_bool(0.2);
                self.do_add(id, pid, epoch, parts, verify_only)
            }
            5 => {
                let (pid, epoch) = self.credentials(p);
                let partition = self.rng.random_range(0..3);
                let version = self.rng.random_range(0..=4);
                let ctx = self.ctx(version);
                let req = AddOffsetsToTxnRequest {
                    transactional_id: id.into(),
                    producer_id: pid,
                    producer_epoch: epoch,
                    group_id: "g".into(),
                };
                let e = self.shard.add_offsets(&ctx, &req, partition, self.now);
                let codes = Self::only_codes(&e)?;
                if self.commit(e, true)? && codes == [0] {
                    let part = ("__consumer_offsets".to_string(), partition);
                    self.expect_ongoing(id, pid, epoch, &[part])?;
                }
                Ok(())
            }
            _ => {
                let (pid, epoch) = self.credentials(p);
                let commit = self.rng.random_bool(0.6);
                self.do_end(id, pid, epoch, commit)
            }
        }
    }

    fn do_init(&mut self, p: usize) -> Result<(), String> {
        let id = self.producers[p].id;
        let version = self.rng.random_range(0..=5);
        let expected = if version >= 3 && self.producers[p].pid >= 0 && self.rng.random_bool(0.5) {
            (self.producers[p].pid, self.producers[p].epoch)
        } else {
            (-1, -1)
        };
        let ctx = self.ctx(version);
        let req = InitProducerIdRequest {
            transactional_id: Some(id.into()),
            transaction_timeout_ms: self.rng.random_range(500..=TIMEOUT_MAX_MS),
            producer_id: expected.0,
            producer_epoch: expected.1,
        };
        let was_ongoing = self
            .shard
            .describe(id)
            .is_some_and(|v| v.state == TxnState::Ongoing);
        let mut next = self.next_pid;
        let e = self.shard.init_producer_id(&ctx, &req, self.now, &mut || {
            next += 1;
            Ok(next)
        });
        self.next_pid = next;
        let (code, pid, epoch) = match e.responses.as_slice() {
            [(_, Response::InitProducerId(r))] => (r.error_code, r.producer_id, r.producer_epoch),
            other => return Err(format!("init answered {other:?}")),
        };
        if !self.commit(e, true)? {
            return Ok(());
        }
        match code {
            0 => {
                let v = self.shard.describe(id).ok_or("init NONE but no state")?;
                if (v.state, v.producer_id, v.producer_epoch) != (TxnState::Empty, pid, epoch) {
                    return Err(format!("init answered {pid}/{epoch} but state is {v:?}"));
                }
                self.producers[p].pid = pid;
                self.producers[p].epoch = epoch;
            }
            51 if was_ongoing => self.cov.fenced_by_init += 1,
            47 | 90 => self.cov.producer_fenced += 1,
            _ => {}
        }
        Ok(())
    }

    fn do_add(
        &mut self,
        id: &'static str,
        pid: i64,
        epoch: i16,
        parts: Vec<(String, i32)>,
        verify_only: bool,
    ) -> Result<(), String> {
        let topics: Vec<AddPartitionsToTxnTopic> = parts
            .iter()
            .map(|(t, p)| AddPartitionsToTxnTopic {
                name: t.clone(),
                partitions: vec![*p],
            })
            .collect();
        let batched = verify_only || self.rng.random_bool(0.2);
        let (version, req) = if batched {
            let txn = AddPartitionsToTxnTransaction {
                transactional_id: id.into(),
                producer_id: pid,
                producer_epoch: epoch,
                verify_only,
                topics,
            };
            let req = AddPartitionsToTxnRequest {
                transactions: vec![txn],
                ..Default::default()
            };
            (5, req)
        } else {
            let req = AddPartitionsToTxnRequest {
                v3_and_below_transactional_id: id.into(),
                v3_and_below_producer_id: pid,
                v3_and_below_producer_epoch: epoch,
                v3_and_below_topics: topics,
                ..Default::default()
            };
            (self.rng.random_range(0..=3), req)
        };
        let ctx = self.ctx(version);
        let before = self.shard.describe(id);
        let e = self.shard.add_partitions(&ctx, &req, self.now);
        let codes = Self::only_codes(&e)?;
        if codes.len() != parts.len() {
            return Err(format!(
                "{} answers for {} partitions",
                codes.len(),
                parts.len()
            ));
        }
        if verify_only {
            if !e.records.is_empty() {
                return Err("verify_only wrote a record".into());
            }
            for (part, code) in parts.iter().zip(&codes) {
                let member = before.as_ref().is_some_and(|v| {
                    v.producer_id == pid && v.producer_epoch == epoch && v.partitions.contains(part)
                });
                if (*code == 0) != member && !(member && *code == 51) {
                    return Err(format!("verify {part:?} -> {code}, state {before:?}"));
                }
                if *code == 0 {
                    self.cov.verify_none += 1;
                }
            }
        }
        if self.commit(e, true)? && !verify_only && codes.iter().all(|c| *c == 0) {
            self.expect_ongoing(id, pid, epoch, &parts)?;
        }
        Ok(())
    }

    fn expect_ongoing(
        &self,
        id: &str,
        pid: i64,
        epoch: i16,
        parts: &[(String, i32)],
    ) -> Result<(), String> {
        let v = self.shard.describe(id).ok_or("add NONE but no state")?;
        let holds = parts.iter().all(|p| v.partitions.contains(p));
        if v.state != TxnState::Ongoing
            || v.producer_id != pid
            || v.producer_epoch != epoch
            || !holds
        {
            return Err(format!("add NONE for {parts:?} but state is {v:?}"));
        }
        Ok(())
    }

    fn do_end(&mut self, id: &str, pid: i64, epoch: i16, commit: bool) -> Result<(), String> {
        let version = self.rng.random_range(0..=4);
        let ctx = self.ctx(version);
        let req = EndTxnRequest {
            transactional_id: id.into(),
            producer_id: pid,
            producer_epoch: epoch,
            committed: commit,
        };
        let e = self.shard.end_txn(&ctx, &req, self.now);
        let codes = Self::only_codes(&e)?;
        if !self.commit(e, true)? {
            return Ok(());
        }
        if codes == [0] {
            let v = self.shard.describe(id).ok_or("end NONE but no state")?;
            let ok = match commit {
                true => matches!(v.state, TxnState::PrepareCommit | TxnState::CompleteCommit),
                false => matches!(v.state, TxnState::PrepareAbort | TxnState::CompleteAbort),
            };
            if !ok || v.producer_id != pid || v.producer_epoch != epoch {
                return Err(format!("end(commit={commit}) NONE but state is {v:?}"));
            }
        }
        Ok(())
    }

    fn deliver_markers(&mut self, all: bool) -> Result<(), String> {
        let now = self.now;
        let (due, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|(t, _)| all || *t <= now);
        self.pending = rest;
        for (_, job) in due {
            let before = self.shard.describe(&job.transactional_id);
            let e = self.shard.markers_written(
                &job.transactional_id,
                job.producer_id,
                job.producer_epoch,
                self.now,
            );
            if !e.records.is_empty() {
                let b = before.ok_or("completed an unknown id")?;
                if !b.state.is_prepare() {
                    return Err(format!("markers_written completed {b:?}"));
                }
                match b.state {
                    TxnState::PrepareCommit => self.cov.commits += 1,
                    _ => self.cov.aborts += 1,
                }
            }
            self.commit(e, !all)?;
        }
        Ok(())
    }

    fn tick(&mut self, may_fail: bool) -> Result<(), String> {
        let before = views(&self.shard);
        let e = self.shard.tick(self.now);
        let tombstones = e.records.iter().filter(|(_, v)| v.is_none()).count() as u64;
        let timeouts = e.records.len() as u64 - tombstones;
        if self.commit(e, may_fail)? {
            self.cov.expiries += tombstones;
            self.cov.timeouts += timeouts;
            for b in before {
                if let Some(after) = self.shard.describe(&b.transactional_id)
                    && b.state == TxnState::Ongoing
                    && after.state == TxnState::PrepareAbort
                    && after.producer_epoch != b.producer_epoch.saturating_add(1)
                {
                    return Err(format!("timeout abort without a bump: {b:?} -> {after:?}"));
                }
            }
        }
        Ok(())
    }

    fn crash(&mut self) -> Result<(), String> {
        self.cov.crashes += 1;
        let before = views(&self.shard);
        if self.rng.random_bool(0.5) {
            self.pending.clear();
        }
        self.coordinator_epoch += 1;
        let mut s = TxnShard::new(self.config.clone(), self.coordinator_epoch);
        for (k, v) in &self.log {
            s.replay(k, v.as_deref())
                .map_err(|e| format!("own record does not replay: {e}"))?;
        }
        if views(&s) != before {
            return Err(format!("replay differs:\n{:?}\nvs\n{before:?}", views(&s)));
        }
        self.shard = s;
        let e = self.shard.on_loaded(self.now);
        self.commit(e, false)?;
        Ok(())
    }

    fn run(&mut self) -> Result<(), String> {
        for _ in 0..STEPS {
            self.now += self.rng.random_range(1..400);
            match self.rng.random_range(0..100) {
                0..=59 => {
                    let p = self.rng.random_range(0..self.producers.len());
                    self.step_producer(p)?;
                }
                60..=74 => self.deliver_markers(false)?,
                75..=89 => self.tick(true)?,
                90..=95 => {
                    self.now += self.rng.random_range(0..8_000);
                    self.tick(true)?;
                }
                _ => self.crash()?,
            }
        }
        // Quiesce: no producers, every marker delivered, the clock past every timeout.
        for _ in 0..4 {
            self.deliver_markers(true)?;
            self.now += i64::from(TIMEOUT_MAX_MS) + 2 * 1_000;
            self.tick(false)?;
        }
        self.deliver_markers(true)?;
        for v in views(&self.shard) {
            if !matches!(
                v.state,
                TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort
            ) {
                return Err(format!("never completed: {v:?}"));
            }
        }
        if !self.pending.is_empty() {
            return Err("markers left".into());
        }
        Ok(())
    }
}

#[test]
fn producers_markers_timeouts_and_crashes() {
    let seeds: Vec<u64> = match std::env::var("SKIFF_TXN_SIM_SEED") {
        Ok(s) => vec![s.parse().expect("SKIFF_TXN_SIM_SEED is a number")],
        Err(_) => (0..SIM_SEEDS).collect(),
    };
    let single = seeds.len() == 1;
    let mut total = Coverage::default();
    for seed in seeds {
        let mut sim = Sim::new(seed);
        if let Err(e) = sim.run() {
            panic!("seed {seed} failed (replay: SKIFF_TXN_SIM_SEED={seed}): {e}");
        }
        let c = &sim.cov;
        total.commits += c.commits;
        total.aborts += c.aborts;
        total.fenced_by_init += c.fenced_by_init;
        total.timeouts += c.timeouts;
        total.expiries += c.expiries;
        total.crashes += c.crashes;
        total.failed_appends += c.failed_appends;
        total.verify_none += c.verify_none;
        total.producer_fenced += c.producer_fenced;
    }
    eprintln!("coverage over the seeds: {total:?}");
    if !single {
        let c = &total;
        for (what, n) in [
            ("completed commits", c.commits),
            ("completed aborts", c.aborts),
            ("fenced by a second InitProducerId", c.fenced_by_init),
            ("timeout aborts", c.timeouts),
            ("expired ids", c.expiries),
            ("crashes", c.crashes),
            ("failed appends", c.failed_appends),
            ("verify_only NONE", c.verify_none),
            ("InitProducerId fenced (KIP-360)", c.producer_fenced),
        ] {
            assert!(n > 0, "the simulation never exercised {what}");
        }
    }
}
