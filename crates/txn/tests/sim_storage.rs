//! Seeded simulation of transactions end to end over the real coordinator ([`TxnShard`]) and
//! real partition logs (`skiff_storage::Log` in temp dirs), with crashes of both (issue 18).
//!
//! World: one coordinator shard whose records go to an in-memory `__transaction_state` (every
//! append durable; a coordinator crash rebuilds the shard by replaying it with the next
//! coordinator epoch, then `on_loaded`); three partitions of topic `t`, each a single-replica
//! `Log` whose high watermark the test moves (often to the log end after an append, sometimes
//! lagging: a produce is acknowledged, and a marker counts as written, only once the high
//! watermark passes it, as acks=all); three producers (two instances sharing the id `alpha`,
//! so a second InitProducerId fences the first, and `beta`) running transactions: InitProducerId,
//! AddPartitionsToTxn, transactional batches appended as leader only to added partitions,
//! EndTxn commit or abort (after their batches are acknowledged, as clients flush first), or
//! abandoning the transaction (the coordinator's timeout aborts it, bumping the epoch).
//! Marker jobs run after random delays, interleaved and reordered, one partition write at a
//! time (a refusal INVALID_PRODUCER_EPOCH / TRANSACTION_COORDINATOR_FENCED counts as done, as
//! the server's `txn/markers.rs` does); a coordinator crash drops its jobs, or keeps some as
//! zombies that still write markers with the old coordinator epoch but can no longer complete.
//! A partition crash closes the log cleanly, or drops it (unclean recovery from the recovery
//! point), or drops it and truncates to the high watermark like a leader change would: lost
//! unacknowledged batches are retried by their (live) producers, lost unacknowledged markers
//! rewritten by their jobs.
//!
//! Checked after every step, per partition, with an independent READ_COMMITTED reader
//! (`sim_storage/reader.rs`, the KIP-98 client algorithm over `first_unstable_offset` and
//! `collect_aborted_txns`):
//! 1. every visible record belongs to a transaction whose EndTxn(commit) was answered NONE (no
//!    aborted, timed-out, fenced or undecided record is ever visible), at the offset the model
//!    has for it;
//! 2. no torn transaction: a transaction visible in a partition is visible there with every
//!    record below the LSO (no hole; a committed transaction interleaved with an older open one
//!    shows up to the LSO and the rest once that one ends, as in Kafka), and once settled
//!    (below) every committed transaction is visible entirely in every partition it wrote;
//! 3. the LSO never goes down, across crashes too. It may not: the test hands the reopened log
//!    the high watermark it had (a checkpoint written at the crash), the LSO is at most that
//!    high watermark, and truncation never goes below it, so nothing below the old LSO can
//!    change (Kafka lets the LSO drop after a restart only together with the high watermark,
//!    from an older checkpoint, which this test does not model);
//!
//! and after quiescing (producers stopped, every job delivered, the clock past every timeout,
//! the high watermark at the log end): no transaction open in the coordinator or in any log,
//! LSO == HW == log end, and each partition shows exactly the records of committed
//! transactions. Runs `SIM_SEEDS` seeds; replay one with
//! `SKIFF_TXN_STORAGE_SIM_SEED=<seed> cargo nextest run -p skiff-txn -E 'binary(sim_storage)'`.
//! `SKIFF_TXN_STORAGE_SIM_MUTATION=ignore-fuo|ignore-aborted` breaks the reader on purpose to
//! show the checks catch it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "sim_storage/reader.rs"]
mod reader;

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use rand::rngs::StdRng;
use rand::{Rng as _, SeedableRng};
use reader::{Mutation, last_stable_offset, read_committed};
use skiff_protocol::{
    AddPartitionsToTxnRequest, AddPartitionsToTxnTopic, EndTxnRequest, InitProducerIdRequest,
};
use skiff_record::{BatchBuilder, BatchOptions, ControlType, build_end_txn_marker};
use skiff_storage::{Log, LogConfig, LogOpenOptions, StorageError};
use skiff_txn::{
    Effects, MarkerJob, RequestContext, Response, TxnConfig, TxnResult, TxnShard, TxnState,
};
use skiff_types::TopicPartition;

const SIM_SEEDS: u64 = 150;
const STEPS: usize = 220;
const PARTS: i32 = 3;
const TOPIC: &str = "t";
const T0: i64 = 1_700_000_000_000;
const TIMEOUT_MAX_MS: i32 = 4_000;
/// Producers by transactional id: two instances of `alpha` fence each other.
const PRODUCERS: [&str; 3] = ["alpha", "alpha", "beta"];

/// A transaction of the model: (producer index, its transaction number).
type TxnKey = (usize, u32);

const INVALID_PRODUCER_EPOCH: i16 = 47;
const CONCURRENT_TRANSACTIONS: i16 = 51;
const TRANSACTION_COORDINATOR_FENCED: i16 = 52;

#[derive(Default, Debug)]
struct Coverage {
    commits: u64,
    aborts: u64,
    timeouts: u64,
    fenced_appends: u64,
    coordinator_crashes: u64,
    zombie_refusals: u64,
    clean_restarts: u64,
    unclean_restarts: u64,
    truncations: u64,
    retried_batches: u64,
    lagging_markers: u64,
    visible_records: u64,
}

impl Coverage {
    fn add(&mut self, o: &Coverage) {
        self.commits += o.commits;
        self.aborts += o.aborts;
        self.timeouts += o.timeouts;
        self.fenced_appends += o.fenced_appends;
        self.coordinator_crashes += o.coordinator_crashes;
        self.zombie_refusals += o.zombie_refusals;
        self.clean_restarts += o.clean_restarts;
        self.unclean_restarts += o.unclean_restarts;
        self.truncations += o.truncations;
        self.retried_batches += o.retried_batches;
        self.lagging_markers += o.lagging_markers;
        self.visible_records += o.visible_records;
    }

    fn all(&self) -> [(&'static str, u64); 12] {
        [
            ("completed commits", self.commits),
            ("completed aborts", self.aborts),
            ("timeout aborts", self.timeouts),
            ("fenced appends refused", self.fenced_appends),
            ("coordinator crashes", self.coordinator_crashes),
            ("zombie markers refused", self.zombie_refusals),
            ("clean restarts", self.clean_restarts),
            ("unclean restarts", self.unclean_restarts),
            ("truncations to the HW", self.truncations),
            ("retried batches", self.retried_batches),
            ("markers waiting for the HW", self.lagging_markers),
            ("visible records", self.visible_records),
        ]
    }
}

/// One partition: its log, and the model of its data records.
#[derive(Debug)]
struct Partition {
    dir: tempfile::TempDir,
    log: Log,
    /// Every data record in the log (offset -> its transaction).
    model: BTreeMap<i64, TxnKey>,
    max_lso: i64,
}

/// A batch appended for a live transaction, kept to retry it if a truncation loses it.
#[derive(Debug, Clone)]
struct Sent {
    part: i32,
    offset: i64,
    bytes: Vec<u8>,
    key: TxnKey,
}

#[derive(Debug)]
struct Producer {
    id: &'static str,
    pid: i64,
    epoch: i16,
    /// Must call InitProducerId before anything else (new, fenced, or abandoned a transaction).
    needs_init: bool,
    /// The producer's current transaction (number, partitions added).
    live: Option<(u32, BTreeSet<i32>)>,
    next_txn: u32,
    seq: BTreeMap<i32, i32>,
    sent: Vec<Sent>,
}

/// A marker job in flight: written offsets wait for the HW; `generation` is the coordinator
/// epoch that emitted it (older = zombie: writes, never completes).
#[derive(Debug)]
struct Job {
    due: i64,
    generation: i32,
    job: MarkerJob,
    done: BTreeSet<i32>,
    written: BTreeMap<i32, i64>,
}

struct Sim {
    rng: StdRng,
    mutation: Mutation,
    config: TxnConfig,
    coordinator_epoch: i32,
    shard: TxnShard,
    txn_log: Vec<(Bytes, Option<Bytes>)>,
    now: i64,
    next_pid: i64,
    token: u64,
    parts: Vec<Partition>,
    producers: Vec<Producer>,
    jobs: Vec<Job>,
    /// Transactions whose EndTxn(commit) was answered NONE.
    committed: BTreeSet<TxnKey>,
    cov: Coverage,
    /// `SKIFF_TXN_STORAGE_SIM_TRACE=1`: print every event (to diagnose a replayed seed).
    trace: bool,
}

fn log_config() -> LogConfig {
    LogConfig {
        segment_bytes: 1_500,
        index_interval_bytes: 256,
        retention_ms: -1,
        ..LogConfig::default()
    }
}

fn open_log(dir: &std::path::Path, part: i32, opts: LogOpenOptions) -> Result<Log, String> {
    Log::open(dir, TopicPartition::new(TOPIC, part), log_config(), opts)
        .map(|(l, _)| l)
        .map_err(|e| format!("open partition {part}: {e}"))
}

fn code_of(e: &StorageError) -> i16 {
    e.error_code().code()
}

fn first_codes(e: &Effects) -> Result<Vec<i16>, String> {
    match e.responses.as_slice() {
        [(_, r)] => Ok(r.error_codes()),
        other => Err(format!("expected one response, got {other:?}")),
    }
}

fn parse_value(v: &[u8]) -> Option<TxnKey> {
    let s = std::str::from_utf8(v).ok()?;
    let mut it = s.split(':');
    let p = it.next()?.parse().ok()?;
    let t = it.next()?.parse().ok()?;
    Some((p, t))
}

impl Sim {
    fn new(seed: u64, mutation: Mutation) -> Result<Self, String> {
        let config = TxnConfig {
            transaction_max_timeout_ms: TIMEOUT_MAX_MS,
            transactional_id_expiration_ms: 30_000,
            abort_timed_out_transaction_cleanup_interval_ms: 1_000,
            remove_expired_transaction_cleanup_interval_ms: 5_000,
        };
        let mut parts = Vec::new();
        for p in 0..PARTS {
            let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
            let opts = LogOpenOptions {
                recovery_point: 0,
                log_start_offset: 0,
                high_watermark: 0,
                clean_shutdown: true,
                now_ms: T0,
            };
            let log = open_log(dir.path(), p, opts)?;
            parts.push(Partition {
                dir,
                log,
                model: BTreeMap::new(),
                max_lso: 0,
            });
        }
        let producers = PRODUCERS
            .iter()
            .map(|id| Producer {
                id,
                pid: -1,
                epoch: -1,
                needs_init: true,
                live: None,
                next_txn: 0,
                seq: BTreeMap::new(),
                sent: Vec::new(),
            })
            .collect();
        Ok(Self {
            rng: StdRng::seed_from_u64(seed),
            mutation,
            shard: TxnShard::new(config.clone(), 1),
            config,
            coordinator_epoch: 1,
            txn_log: Vec::new(),
            now: 0,
            next_pid: 1000,
            token: 0,
            parts,
            producers,
            jobs: Vec::new(),
            committed: BTreeSet::new(),
            cov: Coverage::default(),
            trace: std::env::var_os("SKIFF_TXN_STORAGE_SIM_TRACE").is_some(),
        })
    }

    fn event(&self, what: impl FnOnce() -> String) {
        if self.trace {
            eprintln!("[{}] {}", self.now, what());
        }
    }

    fn ctx(&mut self, version: i16) -> RequestContext {
        self.token += 1;
        RequestContext::new(self.token, version)
    }

    fn now_ms(&self) -> i64 {
        T0 + self.now
    }

    /// The coordinator runtime: records durable first, then jobs start after a random delay.
    fn apply(&mut self, e: &Effects) {
        self.txn_log.extend(e.records.iter().cloned());
        for job in &e.markers {
            let due = self.now + self.rng.random_range(0..2_000);
            self.jobs.push(Job {
                due,
                generation: self.coordinator_epoch,
                job: job.clone(),
                done: BTreeSet::new(),
                written: BTreeMap::new(),
            });
        }
    }

    /// Acknowledges everything appended to partition `i` so far (replication caught up).
    fn replicate(&mut self, i: usize) {
        let log = &mut self.parts[i].log;
        let end = log.log_end_offset();
        if log.high_watermark() != end {
            log.set_high_watermark(end);
            self.event(|| format!("p{i} HW -> {end}"));
        }
    }

    fn maybe_replicate(&mut self, i: usize) {
        if self.rng.random_bool(0.6) {
            self.replicate(i);
        }
    }

    // ---- producers ----

    fn step_producer(&mut self, p: usize) -> Result<(), String> {
        if self.producers[p].needs_init {
            return self.do_init(p);
        }
        if self.producers[p].live.is_none() {
            return match self.rng.random_range(0..10) {
                0 => self.do_init(p),
                _ => self.do_add(p),
            };
        }
        match self.rng.random_range(0..100) {
            0..=14 => self.do_add(p),
            15..=59 => self.do_produce(p),
            60..=79 => self.do_end(p, true),
            80..=89 => self.do_end(p, false),
            90..=95 => {
                // Abandon: the client dies; the coordinator's timeout aborts the transaction.
                let pr = &mut self.producers[p];
                pr.live = None;
                pr.sent.clear();
                pr.needs_init = true;
                Ok(())
            }
            _ => self.do_init(p),
        }
    }

    fn do_init(&mut self, p: usize) -> Result<(), String> {
        let ctx = self.ctx(4);
        let req = InitProducerIdRequest {
            transactional_id: Some(self.producers[p].id.into()),
            transaction_timeout_ms: self.rng.random_range(1_500..=TIMEOUT_MAX_MS),
            producer_id: -1,
            producer_epoch: -1,
        };
        let mut next = self.next_pid;
        let e = self.shard.init_producer_id(&ctx, &req, self.now, &mut || {
            next += 1;
            Ok(next)
        });
        self.next_pid = next;
        self.apply(&e);
        self.event(|| format!("producer {p} init -> {:?}", e.responses));
        let pr = &mut self.producers[p];
        // A new instance: whatever the old one had in flight is abandoned.
        pr.live = None;
        pr.sent.clear();
        pr.needs_init = true;
        match e.responses.as_slice() {
            [(_, Response::InitProducerId(r))] if r.error_code == 0 => {
                pr.pid = r.producer_id;
                pr.epoch = r.producer_epoch;
                pr.needs_init = false;
                pr.seq.clear();
            }
            [(_, Response::InitProducerId(_))] => {}
            other => return Err(format!("init answered {other:?}")),
        }
        Ok(())
    }

    fn do_add(&mut self, p: usize) -> Result<(), String> {
        let mut chosen = BTreeSet::new();
        for _ in 0..self.rng.random_range(1..=2) {
            chosen.insert(self.rng.random_range(0..PARTS));
        }
        let chosen: Vec<i32> = chosen.into_iter().collect();
        let ctx = self.ctx(3);
        let pr = &self.producers[p];
        let req = AddPartitionsToTxnRequest {
            v3_and_below_transactional_id: pr.id.into(),
            v3_and_below_producer_id: pr.pid,
            v3_and_below_producer_epoch: pr.epoch,
            v3_and_below_topics: vec![AddPartitionsToTxnTopic {
                name: TOPIC.into(),
                partitions: chosen.clone(),
            }],
            ..Default::default()
        };
        let e = self.shard.add_partitions(&ctx, &req, self.now);
        self.apply(&e);
        let codes = first_codes(&e)?;
        self.event(|| format!("producer {p} add {chosen:?} -> {codes:?}"));
        if codes.len() != chosen.len() {
            return Err(format!("add of {chosen:?} answered {codes:?}"));
        }
        let pr = &mut self.producers[p];
        if codes.iter().all(|c| *c == 0) {
            if pr.live.is_none() {
                pr.live = Some((pr.next_txn, BTreeSet::new()));
                pr.next_txn += 1;
            }
            if let Some((_, parts)) = &mut pr.live {
                parts.extend(chosen);
            }
        } else if codes.contains(&CONCURRENT_TRANSACTIONS) && pr.live.is_none() {
            // The previous transaction is still completing: retry later.
        } else {
            pr.live = None;
            pr.sent.clear();
            pr.needs_init = true;
        }
        Ok(())
    }

    fn do_produce(&mut self, p: usize) -> Result<(), String> {
        let pr = &self.producers[p];
        let Some((txn, parts)) = &pr.live else {
            return Ok(());
        };
        let parts: Vec<i32> = parts.iter().copied().collect();
        let part = parts[self.rng.random_range(0..parts.len())];
        let key = (p, *txn);
        let seq = pr.seq.get(&part).copied().unwrap_or(0);
        let n = self.rng.random_range(1..=3);
        let mut b = BatchBuilder::new(BatchOptions {
            producer_id: pr.pid,
            producer_epoch: pr.epoch,
            base_sequence: seq,
            is_transactional: true,
            ..BatchOptions::default()
        });
        for i in 0..n {
            let value = format!("{p}:{}:{seq}-{i}", key.1);
            b.append(self.now_ms(), None, Some(value.as_bytes()), &[]);
        }
        let bytes = b.build().map_err(|e| format!("build: {e}"))?;
        match self.append_data(part, bytes.clone(), key)? {
            Some(offset) => {
                let pr = &mut self.producers[p];
                pr.seq.insert(part, seq + n);
                pr.sent.push(Sent {
                    part,
                    offset,
                    bytes,
                    key,
                });
                self.maybe_replicate(part as usize);
            }
            None => self.fence(p),
        }
        Ok(())
    }

    /// Appends a producer's batch; `None` when the partition fenced it (a newer epoch there).
    fn append_data(
        &mut self,
        part: i32,
        mut bytes: Vec<u8>,
        key: TxnKey,
    ) -> Result<Option<i64>, String> {
        let now = self.now_ms();
        let pt = &mut self.parts[part as usize];
        let r = pt.log.append_as_leader(&mut bytes, 0, now);
        let trace = self.trace;
        if trace {
            eprintln!(
                "[{}] {key:?} data to p{part} -> {:?}",
                self.now,
                r.as_ref().map(|i| (i.base_offset, i.last_offset))
            );
        }
        match r {
            Ok(info) if info.duplicate => Err(format!("a new batch of {key:?} was a duplicate")),
            Ok(info) => {
                for o in info.base_offset..=info.last_offset {
                    pt.model.insert(o, key);
                }
                Ok(Some(info.base_offset))
            }
            Err(e) if code_of(&e) == INVALID_PRODUCER_EPOCH => {
                self.cov.fenced_appends += 1;
                Ok(None)
            }
            Err(e) => Err(format!("append of {key:?} to partition {part}: {e}")),
        }
    }

    fn fence(&mut self, p: usize) {
        let pr = &mut self.producers[p];
        pr.live = None;
        pr.sent.clear();
        pr.needs_init = true;
    }

    fn do_end(&mut self, p: usize, commit: bool) -> Result<(), String> {
        let Some((txn, parts)) = self.producers[p].live.clone() else {
            return Ok(());
        };
        // The client flushes first: every batch acknowledged (the HW passed it).
        for part in &parts {
            self.replicate(*part as usize);
        }
        let ctx = self.ctx(3);
        let pr = &self.producers[p];
        let req = EndTxnRequest {
            transactional_id: pr.id.into(),
            producer_id: pr.pid,
            producer_epoch: pr.epoch,
            committed: commit,
        };
        let e = self.shard.end_txn(&ctx, &req, self.now);
        self.apply(&e);
        let codes = first_codes(&e)?;
        self.event(|| {
            format!(
                "producer {p} end {txn} commit={commit} -> {codes:?} jobs {:?}",
                e.markers
            )
        });
        let pr = &mut self.producers[p];
        pr.live = None;
        pr.sent.clear();
        if codes == [0] {
            if commit {
                self.committed.insert((p, txn));
            }
        } else {
            pr.needs_init = true;
        }
        Ok(())
    }
}

#[path = "sim_storage/world.rs"]
mod world;

#[test]
fn transactions_over_real_logs_with_crashes() {
    // One seed to replay, or `SKIFF_TXN_STORAGE_SIM_SEEDS=<n>` for a longer soak.
    let seeds: Vec<u64> = match std::env::var("SKIFF_TXN_STORAGE_SIM_SEED") {
        Ok(s) => vec![s.parse().expect("SKIFF_TXN_STORAGE_SIM_SEED is a number")],
        Err(_) => match std::env::var("SKIFF_TXN_STORAGE_SIM_SEEDS") {
            Ok(n) => (0..n.parse().expect("SKIFF_TXN_STORAGE_SIM_SEEDS is a number")).collect(),
            Err(_) => (0..SIM_SEEDS).collect(),
        },
    };
    let mutation = match std::env::var("SKIFF_TXN_STORAGE_SIM_MUTATION").as_deref() {
        Ok("ignore-fuo") => Mutation::IgnoreFirstUnstable,
        Ok("ignore-aborted") => Mutation::IgnoreAborted,
        _ => Mutation::None,
    };
    let single = seeds.len() == 1;
    let mut total = Coverage::default();
    for seed in seeds {
        let mut sim = Sim::new(seed, mutation).expect("setup");
        if let Err(e) = sim.run() {
            panic!("seed {seed} failed (replay: SKIFF_TXN_STORAGE_SIM_SEED={seed}): {e}");
        }
        total.add(&sim.cov);
    }
    eprintln!("coverage over the seeds: {total:?}");
    if !single {
        for (what, n) in total.all() {
            assert!(n > 0, "the simulation never exercised {what}");
        }
    }
}

/// The end-txn marker type of a job's result.
fn control_type(r: TxnResult) -> ControlType {
    match r {
        TxnResult::Commit => ControlType::Commit,
        TxnResult::Abort => ControlType::Abort,
    }
}

/// States in which a transactional id has nothing in flight.
fn is_settled(s: TxnState) -> bool {
    matches!(
        s,
        TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort
    )
}

/// Builds a marker control batch for `job` (the server's `write_local`).
fn marker_batch(job: &MarkerJob, now_ms: i64) -> Result<Vec<u8>, String> {
    build_end_txn_marker(
        job.producer_id,
        job.producer_epoch,
        job.coordinator_epoch,
        control_type(job.result),
        now_ms,
    )
    .map_err(|e| format!("marker: {e}"))
}

/// Regression test of a storage bug this simulation found (seed 4, fixed): when `Log::truncate_to`
/// cannot truncate the producer state exactly (here: it cuts a marker, even one that closed
/// nothing) it rebuilds it from a snapshot plus a replay, and the replayed markers put their
/// completed transactions back among the unreplicated ones without pruning them by the high
/// watermark (`truncate_producer_state` lacks the `on_high_watermark_updated(hw)` that
/// `load_producer_state` does): the first unstable offset dropped to a long-stable committed
/// transaction until the next `set_high_watermark`.
#[test]
fn truncating_a_no_op_marker_keeps_the_lso() {
    let d = tempfile::tempdir().unwrap();
    let opts = LogOpenOptions {
        recovery_point: 0,
        log_start_offset: 0,
        high_watermark: 0,
        clean_shutdown: true,
        now_ms: T0,
    };
    let mut log = open_log(d.path(), 0, opts).unwrap();
    let mut data = BatchBuilder::new(BatchOptions {
        producer_id: 7,
        producer_epoch: 1,
        base_sequence: 0,
        is_transactional: true,
        ..BatchOptions::default()
    });
    data.append(T0, None, Some(b"v"), &[]);
    let marker = |epoch: i16, coordinator_epoch: i32| {
        build_end_txn_marker(7, epoch, coordinator_epoch, ControlType::Commit, T0).unwrap()
    };
    log.append_as_leader(&mut data.build().unwrap(), 0, T0)
        .unwrap();
    log.append_as_leader(&mut marker(1, 4), 0, T0).unwrap();
    log.set_high_watermark(2);
    // A later transaction of the producer with no data here: its marker closes nothing.
    log.append_as_leader(&mut marker(5, 7), 0, T0).unwrap();
    assert_eq!(log.first_unstable_offset(), None);
    log.truncate_to(2).unwrap();
    assert_eq!(log.high_watermark(), 2);
    assert_eq!(
        log.first_unstable_offset(),
        None,
        "the transaction at 0 was stable (its marker at 1 below the HW 2)"
    );
}
