//! The per-partition state and its decisions (see the crate docs for the model).
//!
//! Every `&mut self` method keeps the invariants listed in the crate docs before it returns;
//! [`Partition::check_invariants`] states them as code (used by the tests and the simulation).

use skiff_types::{ErrorCode, LeaderEpoch, Offset};

use crate::{AckDecision, Acks, Effect, ReplicaId, Role, WaitId};

/// Topic settings the decisions depend on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartitionConfig {
    /// `min.insync.replicas` (>= 1); the value used is `min(this, replication factor)`.
    pub min_insync_replicas: i32,
    /// `flush.messages=1` (group-commit fsync): only the fsynced prefix counts.
    pub durable: bool,
    /// `replica.lag.time.max.ms`: a follower not caught up for longer leaves the ISR.
    pub replica_lag_time_max_ms: i64,
}

impl Default for PartitionConfig {
    fn default() -> Self {
        Self {
            min_insync_replicas: 1,
            durable: false,
            replica_lag_time_max_ms: 30_000,
        }
    }
}

/// The partition's registration in the metadata image (`PartitionRecord` /
/// `PartitionChangeRecord`): who replicates it and at which epochs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assignment {
    pub leader_epoch: LeaderEpoch,
    pub partition_epoch: i32,
    pub replicas: Vec<ReplicaId>,
    pub isr: Vec<ReplicaId>,
}

impl Assignment {
    /// One replica, this node: today's single-node partition at epoch 0.
    pub fn single(node: ReplicaId) -> Self {
        Self {
            leader_epoch: 0,
            partition_epoch: 0,
            replicas: vec![node],
            isr: vec![node],
        }
    }
}

/// The local log's offsets, as the storage reports them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LocalLog {
    pub log_start_offset: Offset,
    pub log_end_offset: Offset,
    /// What is fsynced; ignored (taken as the LEO) on a topic that is not durable.
    pub durable_end: Offset,
    /// The checkpointed HW (`replication-offset-checkpoint`), clamped on use.
    pub high_watermark: Offset,
}

/// What the leader knows of one follower, from its fetches (Kafka's `Replica`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplicaState {
    pub id: ReplicaId,
    /// The follower's LEO as its last FetchOffset said; -1 until it fetched.
    pub log_end_offset: Offset,
    /// When it last fetched; -1 never.
    pub last_fetch_ms: i64,
    /// The leader's LEO at that fetch.
    pub leader_end_at_last_fetch: Offset,
    /// Kafka's `lastCaughtUpTimeMs` (spec §5.1); -1 never.
    pub last_caught_up_ms: i64,
}

impl ReplicaState {
    fn new(id: ReplicaId) -> Self {
        Self {
            id,
            log_end_offset: -1,
            last_fetch_ms: -1,
            leader_end_at_last_fetch: -1,
            last_caught_up_ms: -1,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct PendingAck {
    wait: WaitId,
    acks: Acks,
    end_offset: Offset,
    deadline_ms: i64,
}

/// One partition's replication state on this node.
#[derive(Clone, Debug)]
pub struct Partition {
    local: ReplicaId,
    config: PartitionConfig,
    role: Role,
    leader_epoch: LeaderEpoch,
    partition_epoch: i32,
    replicas: Vec<ReplicaId>,
    isr: Vec<ReplicaId>,
    /// Followers' states (leader role only; every replica but `local`).
    followers: Vec<ReplicaState>,
    /// The ISR of the AlterPartition in flight, if any.
    isr_in_flight: Option<Vec<ReplicaId>>,
    /// The LEO when this node became leader at `leader_epoch` (ISR-eligibility floor).
    leader_epoch_start: Offset,
    /// Replicas whose broker is fenced, in controlled shutdown or unregistered (Kafka's
    /// `isReplicaIsrEligible`): never waited for outside the ISR, never proposed into it.
    ineligible: Vec<ReplicaId>,
    log_start: Offset,
    log_end: Offset,
    durable_end: Offset,
    high_watermark: Offset,
    /// Parked acks, in arrival order.
    pending: Vec<PendingAck>,
}

impl Partition {
    /// A partition with no role yet (nothing hosted, nothing readable).
    pub fn new(local: ReplicaId, config: PartitionConfig) -> Self {
        Self {
            local,
            config,
            role: Role::None,
            leader_epoch: -1,
            partition_epoch: -1,
            replicas: Vec::new(),
            isr: Vec::new(),
            followers: Vec::new(),
            isr_in_flight: None,
            leader_epoch_start: 0,
            ineligible: Vec::new(),
            log_start: 0,
            log_end: 0,
            durable_end: 0,
            high_watermark: 0,
            pending: Vec::new(),
        }
    }

    /// Today's single-node partition: leader at epoch 0 of `{local}` over `log`.
    pub fn single_leader(
        local: ReplicaId,
        config: PartitionConfig,
        log: LocalLog,
        now: i64,
    ) -> (Self, Vec<Effect>) {
        let mut p = Self::new(local, config);
        let effects = p.become_leader(Assignment::single(local), log, now);
        (p, effects)
    }

    pub fn role(&self) -> Role {
        self.role
    }
    pub fn leader_epoch(&self) -> LeaderEpoch {
        self.leader_epoch
    }
    pub fn partition_epoch(&self) -> i32 {
        self.partition_epoch
    }
    pub fn replicas(&self) -> &[ReplicaId] {
        &self.replicas
    }
    pub fn isr(&self) -> &[ReplicaId] {
        &self.isr
    }
    pub fn followers(&self) -> &[ReplicaState] {
        &self.followers
    }
    pub fn high_watermark(&self) -> Offset {
        self.high_watermark
    }
    pub fn log_end_offset(&self) -> Offset {
        self.log_end
    }
    pub fn log_start_offset(&self) -> Offset {
        self.log_start
    }
    /// The fsynced end (the LEO on a topic that is not durable).
    pub fn durable_end(&self) -> Offset {
        self.durable_end
    }
    pub fn config(&self) -> PartitionConfig {
        self.config
    }
    /// The log end when this node became leader at its current epoch.
    pub fn leader_epoch_start(&self) -> Offset {
        self.leader_epoch_start
    }
    /// The number of parked acks.
    pub fn pending_acks(&self) -> usize {
        self.pending.len()
    }

    /// `min(min.insync.replicas, replication factor)`, at least 1.
    pub fn effective_min_isr(&self) -> usize {
        let min = usize::try_from(self.config.min_insync_replicas.max(1)).unwrap_or(1);
        min.min(self.replicas.len().max(1))
    }

    /// The ISR plus any addition in flight (KIP-497).
    pub fn maximal_isr(&self) -> Vec<ReplicaId> {
        let mut out = self.isr.clone();
        if let Some(f) = &self.isr_in_flight {
            for r in f {
                if !out.contains(r) {
                    out.push(*r);
                }
            }
        }
        out
    }

    fn under_min_isr(&self) -> bool {
        self.isr.len() < self.effective_min_isr()
    }

    /// A config change (topic config altered): re-evaluates the HW and parked acks.
    pub fn set_config(&mut self, config: PartitionConfig, now: i64) -> Vec<Effect> {
        self.config = config;
        if !config.durable {
            self.durable_end = self.log_end;
        }
        let mut fx = Vec::new();
        self.after_change(now, &mut fx);
        fx
    }

    // ---- role changes -------------------------------------------------------------------

    /// Becomes (or stays) leader per `assignment` over the local `log` (Kafka's `makeLeader`).
    /// A new leader epoch resets follower states and fails parked acks of the old epoch with
    /// NOT_LEADER_OR_FOLLOWER; the same epoch keeps them (a partition-epoch-only change).
    pub fn become_leader(
        &mut self,
        assignment: Assignment,
        log: LocalLog,
        now: i64,
    ) -> Vec<Effect> {
        let mut fx = Vec::new();
        let new_epoch = self.role != Role::Leader || assignment.leader_epoch != self.leader_epoch;
        if new_epoch {
            self.fail_all(ErrorCode::NotLeaderOrFollower, &mut fx);
        }
        let old_hw = self.high_watermark;
        self.set_local(log);
        let ceiling = self.acked_end();
        // A new epoch starts from the checkpoint; the same epoch never moves the HW back.
        let start = if new_epoch {
            log.high_watermark
        } else {
            log.high_watermark.max(old_hw)
        };
        self.high_watermark = start.clamp(self.log_start, ceiling);
        self.role = Role::Leader;
        self.leader_epoch = assignment.leader_epoch;
        self.partition_epoch = assignment.partition_epoch;
        self.isr_in_flight = None;
        let old_followers = std::mem::take(&mut self.followers);
        self.followers = assignment
            .replicas
            .iter()
            .filter(|r| **r != self.local)
            .map(|r| match old_followers.iter().find(|f| f.id == *r) {
                Some(f) if !new_epoch => *f,
                // Kafka's makeLeader: ISR members count as caught up now, others never.
                _ => ReplicaState {
                    last_caught_up_ms: if assignment.isr.contains(r) { now } else { -1 },
                    ..ReplicaState::new(*r)
                },
            })
            .collect();
        if new_epoch {
            self.leader_epoch_start = self.log_end;
        }
        self.replicas = assignment.replicas;
        self.isr = assignment.isr;
        push_hw_change(old_hw, self.high_watermark, &mut fx);
        self.after_change(now, &mut fx);
        fx
    }

    /// Becomes a follower of `leader` (Kafka's `makeFollower`): parked acks fail with
    /// NOT_LEADER_OR_FOLLOWER, the HW is the checkpointed one clamped to the log.
    pub fn become_follower(
        &mut self,
        leader: ReplicaId,
        assignment: Assignment,
        log: LocalLog,
    ) -> Vec<Effect> {
        let mut fx = Vec::new();
        self.fail_all(ErrorCode::NotLeaderOrFollower, &mut fx);
        let old_hw = self.high_watermark;
        self.set_local(log);
        self.high_watermark = log.high_watermark.clamp(self.log_start, self.log_end);
        self.role = Role::Follower { leader };
        self.leader_epoch = assignment.leader_epoch;
        self.partition_epoch = assignment.partition_epoch;
        self.replicas = assignment.replicas;
        self.isr = assignment.isr;
        self.followers.clear();
        self.isr_in_flight = None;
        push_hw_change(old_hw, self.high_watermark, &mut fx);
        fx
    }

    /// Stops hosting the partition in any role; parked acks fail with NOT_LEADER_OR_FOLLOWER.
    pub fn resign(&mut self) -> Vec<Effect> {
        let mut fx = Vec::new();
        self.fail_all(ErrorCode::NotLeaderOrFollower, &mut fx);
        self.role = Role::None;
        self.followers.clear();
        self.isr_in_flight = None;
        fx
    }

    fn set_local(&mut self, log: LocalLog) {
        self.log_start = log.log_start_offset.max(0);
        self.log_end = log.log_end_offset.max(self.log_start);
        self.durable_end = if self.config.durable {
            log.durable_end.clamp(self.log_start, self.log_end)
        } else {
            self.log_end
        };
    }

    /// The committed ISR changed (a `PartitionChangeRecord` at the same leader epoch was
    /// applied): the in-flight proposal is settled, the HW and parked acks re-evaluated. An
    /// older partition epoch than the current one changes nothing.
    pub fn on_isr_committed(
        &mut self,
        partition_epoch: i32,
        isr: Vec<ReplicaId>,
        now: i64,
    ) -> Vec<Effect> {
        if partition_epoch <= self.partition_epoch {
            // The registration already applied, or an older one (a late AlterPartition answer
            // after the image brought it): nothing new, and a newer proposal in flight stays.
            return Vec::new();
        }
        self.partition_epoch = partition_epoch;
        self.isr = isr;
        self.isr_in_flight = None;
        let mut fx = Vec::new();
        self.after_change(now, &mut fx);
        fx
    }

    /// The replicas whose brokers may not join the ISR now (fenced, shutting down, gone), from
    /// the metadata image: a caught-up follower among them no longer holds the HW back.
    pub fn set_ineligible(&mut self, ids: Vec<ReplicaId>, now: i64) -> Vec<Effect> {
        let mut fx = Vec::new();
        if ids == self.ineligible {
            return fx;
        }
        self.ineligible = ids;
        self.after_change(now, &mut fx);
        fx
    }

    /// This leader's log has a hole (a quarantined range): it proposes an ISR without
    /// itself, which the controller takes as a hand-over to another member (issue 17 item 8).
    /// Nothing while another proposal is in flight or no other member is in the ISR.
    pub fn hand_over(&mut self) -> Vec<Effect> {
        let mut fx = Vec::new();
        let others: Vec<ReplicaId> = self
            .isr
            .iter()
            .copied()
            .filter(|r| *r != self.local)
            .collect();
        if self.role == Role::Leader && self.isr_in_flight.is_none() && !others.is_empty() {
            self.propose(others, &mut fx);
        }
        fx
    }

    /// The AlterPartition in flight was refused or lost: another may be proposed.
    pub fn on_isr_proposal_failed(&mut self) {
        self.isr_in_flight = None;
    }

    /// The ISR proposal in flight, if any (a sender resends it while its outcome is unknown).
    pub fn isr_in_flight(&self) -> Option<&[ReplicaId]> {
        self.isr_in_flight.as_deref()
    }

    // ---- leader: appends and acks -------------------------------------------------------

    /// May a batch with these acks be appended now? NOT_LEADER_OR_FOLLOWER unless leader;
    /// with `acks=-1`, NOT_ENOUGH_REPLICAS while `|ISR| < effective min ISR` (nothing is
    /// written then).
    pub fn check_append(&self, acks: Acks) -> Result<(), ErrorCode> {
        if self.role != Role::Leader {
            return Err(ErrorCode::NotLeaderOrFollower);
        }
        if acks == Acks::All && self.under_min_isr() {
            return Err(ErrorCode::NotEnoughReplicas);
        }
        Ok(())
    }

    /// The leader appended: its log now ends at `log_end_offset`. On a topic that is not
    /// durable the batch counts at once; on a durable one it waits for
    /// [`Partition::on_local_synced`].
    pub fn on_leader_append(&mut self, log_end_offset: Offset, now: i64) -> Vec<Effect> {
        let mut fx = Vec::new();
        if log_end_offset > self.log_end {
            fx.push(Effect::LogEndAdvanced {
                old: self.log_end,
                new: log_end_offset,
            });
            self.log_end = log_end_offset;
        }
        if !self.config.durable {
            self.durable_end = self.log_end;
        }
        self.after_change(now, &mut fx);
        fx
    }

    /// The group commit fsynced everything below `synced` (the storage's `SyncState::synced`).
    pub fn on_local_synced(&mut self, synced: Offset, now: i64) -> Vec<Effect> {
        let synced = synced.min(self.log_end);
        if synced > self.durable_end {
            self.durable_end = synced;
        }
        let mut fx = Vec::new();
        self.after_change(now, &mut fx);
        fx
    }

    /// An fsync up to `target` failed: parked acks that needed it (end in
    /// `(durable end, target]`) fail with KAFKA_STORAGE_ERROR; the HW stays.
    pub fn on_local_sync_failed(&mut self, target: Offset) -> Vec<Effect> {
        let mut fx = Vec::new();
        let floor = self.durable_end;
        self.pending.retain(|p| {
            let hit = p.end_offset > floor && p.end_offset <= target;
            if hit {
                fx.push(Effect::AckCompleted {
                    wait: p.wait,
                    error: ErrorCode::KafkaStorageError,
                });
            }
            !hit
        });
        fx
    }

    /// Waits until `acks` holds for a batch ending at `end_offset` (last offset + 1; for an
    /// idempotent duplicate, the original's). Answers at once when it already holds (or for
    /// `acks=0`), else parks `wait` until `deadline_ms` (REQUEST_TIMED_OUT from
    /// [`Partition::tick`]).
    pub fn await_acks(
        &mut self,
        wait: WaitId,
        acks: Acks,
        end_offset: Offset,
        deadline_ms: i64,
    ) -> AckDecision {
        if self.role != Role::Leader {
            return AckDecision::Done(ErrorCode::NotLeaderOrFollower);
        }
        let p = PendingAck {
            wait,
            acks,
            end_offset,
            deadline_ms,
        };
        match self.ack_result(&p) {
            Some(code) => AckDecision::Done(code),
            None => {
                self.pending.push(p);
                AckDecision::Parked
            }
        }
    }

    /// `None` while not satisfied.
    fn ack_result(&self, p: &PendingAck) -> Option<ErrorCode> {
        match p.acks {
            Acks::None => Some(ErrorCode::None),
            Acks::Leader => (self.acked_end() >= p.end_offset).then_some(ErrorCode::None),
            Acks::All => (self.high_watermark >= p.end_offset).then(|| {
                if self.maximal_isr().len() >= self.effective_min_isr() {
                    ErrorCode::None
                } else {
                    ErrorCode::NotEnoughReplicasAfterAppend
                }
            }),
        }
    }

    /// The leader's own acknowledged end: what counts towards acks=1 and the HW.
    fn acked_end(&self) -> Offset {
        if self.config.durable {
            self.durable_end
        } else {
            self.log_end
        }
    }

    // ---- leader: follower fetches and the ISR ------------------------------------------

    /// A follower fetched at `fetch_offset` (its LEO; its synced end on a durable topic) at
    /// `now` (Kafka's `updateFollowerFetchState` + `maybeExpandIsr` + HW). NOT_LEADER_OR_FOLLOWER
    /// unless leader and `replica` is a follower of this partition.
    pub fn on_follower_fetch(
        &mut self,
        replica: ReplicaId,
        fetch_offset: Offset,
        now: i64,
    ) -> Result<Vec<Effect>, ErrorCode> {
        if self.role != Role::Leader {
            return Err(ErrorCode::NotLeaderOrFollower);
        }
        let leader_end = self.log_end;
        let Some(f) = self.followers.iter_mut().find(|f| f.id == replica) else {
            return Err(ErrorCode::NotLeaderOrFollower);
        };
        let fetch_offset = fetch_offset.min(leader_end);
        if fetch_offset >= leader_end {
            f.last_caught_up_ms = now;
        } else if f.leader_end_at_last_fetch >= 0 && fetch_offset >= f.leader_end_at_last_fetch {
            f.last_caught_up_ms = f.last_caught_up_ms.max(f.last_fetch_ms);
        }
        // A follower whose log end went back below the HW lost committed data (a repair cut
        // at a quarantined range, a lost unsynced tail): out of sync at once, so it is not
        // elected before it has the range whole again (issue 17 item 8; Kafka waits out
        // `replica.lag.time.max.ms`).
        let lost_committed = f.log_end_offset > fetch_offset && fetch_offset < self.high_watermark;
        if lost_committed {
            f.last_caught_up_ms = -1;
        }
        f.log_end_offset = fetch_offset;
        f.last_fetch_ms = now;
        f.leader_end_at_last_fetch = leader_end;
        let mut fx = Vec::new();
        if lost_committed && self.isr.contains(&replica) && self.isr_in_flight.is_none() {
            let isr = self.isr.iter().copied().filter(|r| *r != replica).collect();
            self.propose(isr, &mut fx);
        }
        let eligible = fetch_offset >= self.high_watermark
            && fetch_offset >= self.leader_epoch_start
            && !self.ineligible.contains(&replica);
        if eligible && !self.isr.contains(&replica) && self.isr_in_flight.is_none() {
            let mut isr = self.isr.clone();
            isr.push(replica);
            self.propose(isr, &mut fx);
        }
        self.after_change(now, &mut fx);
        Ok(fx)
    }

    fn propose(&mut self, isr: Vec<ReplicaId>, fx: &mut Vec<Effect>) {
        self.isr_in_flight = Some(isr.clone());
        fx.push(Effect::ProposeIsr {
            isr,
            partition_epoch: self.partition_epoch,
        });
    }

    fn caught_up(&self, f: &ReplicaState, now: i64) -> bool {
        f.log_end_offset >= self.log_end
            || (f.last_caught_up_ms >= 0
                && now - f.last_caught_up_ms <= self.config.replica_lag_time_max_ms)
    }

    // ---- follower ------------------------------------------------------------------------

    /// A follower appended fetched data (its log ends at `log_end_offset`, fsynced to
    /// `durable_end`) and the leader said its HW is `leader_high_watermark`.
    pub fn on_fetched_as_follower(
        &mut self,
        log_end_offset: Offset,
        durable_end: Offset,
        leader_high_watermark: Offset,
    ) -> Vec<Effect> {
        let mut fx = Vec::new();
        if log_end_offset > self.log_end {
            fx.push(Effect::LogEndAdvanced {
                old: self.log_end,
                new: log_end_offset,
            });
            self.log_end = log_end_offset;
        }
        self.durable_end = if self.config.durable {
            durable_end.clamp(self.log_start, self.log_end)
        } else {
            self.log_end
        };
        let target = leader_high_watermark.min(self.log_end);
        if target > self.high_watermark {
            fx.push(Effect::HighWatermarkAdvanced {
                old: self.high_watermark,
                new: target,
            });
            self.high_watermark = target;
        }
        fx
    }

    /// The local log was truncated to end at `log_end_offset` (KIP-279 divergence, a follower
    /// operation): the LEO, durable end and HW are clamped to it.
    pub fn on_truncated(&mut self, log_end_offset: Offset) -> Vec<Effect> {
        let mut fx = Vec::new();
        let end = log_end_offset.max(0);
        self.log_end = end;
        self.log_start = self.log_start.min(end);
        self.durable_end = self.durable_end.min(end);
        if self.high_watermark > end {
            fx.push(Effect::HighWatermarkLowered {
                old: self.high_watermark,
                new: end,
            });
            self.high_watermark = end;
        }
        fx
    }

    /// The log start offset moved (DeleteRecords, retention, a follower's reset); the HW is
    /// raised to it if below.
    pub fn on_log_start_advanced(&mut self, log_start_offset: Offset) -> Vec<Effect> {
        let mut fx = Vec::new();
        if log_start_offset <= self.log_start {
            return fx;
        }
        self.log_start = log_start_offset;
        if self.log_end < log_start_offset {
            self.log_end = log_start_offset;
        }
        self.durable_end = self.durable_end.max(log_start_offset);
        push_hw_change(
            self.high_watermark,
            self.high_watermark.max(log_start_offset),
            &mut fx,
        );
        self.high_watermark = self.high_watermark.max(log_start_offset);
        fx
    }

    // ---- time ---------------------------------------------------------------------------

    /// Time passed: parked acks past their deadline answer REQUEST_TIMED_OUT; on the leader,
    /// followers in the ISR not caught up for `replica.lag.time.max.ms` are proposed out of it
    /// (Kafka's `maybeShrinkIsr`; the task runs every lag/2, any caller period works).
    pub fn tick(&mut self, now: i64) -> Vec<Effect> {
        let mut fx = Vec::new();
        self.pending.retain(|p| {
            let expired = p.deadline_ms <= now;
            if expired {
                fx.push(Effect::AckCompleted {
                    wait: p.wait,
                    error: ErrorCode::RequestTimedOut,
                });
            }
            !expired
        });
        if self.role == Role::Leader && self.isr_in_flight.is_none() {
            let out: Vec<ReplicaId> = self
                .followers
                .iter()
                .filter(|f| self.isr.contains(&f.id) && !self.caught_up(f, now))
                .map(|f| f.id)
                .collect();
            if !out.is_empty() {
                let isr = self
                    .isr
                    .iter()
                    .copied()
                    .filter(|r| !out.contains(r))
                    .collect();
                self.propose(isr, &mut fx);
            }
        }
        fx
    }

    /// The earliest deadline of a parked ack, for the caller's timer.
    pub fn next_deadline(&self) -> Option<i64> {
        self.pending.iter().map(|p| p.deadline_ms).min()
    }

    // ---- requests -----------------------------------------------------------------------

    /// A request's CurrentLeaderEpoch (-1 = not checked): FENCED_LEADER_EPOCH if older than
    /// ours, UNKNOWN_LEADER_EPOCH if newer, NONE otherwise.
    pub fn check_leader_epoch(&self, requested: LeaderEpoch) -> ErrorCode {
        if requested < 0 || requested == self.leader_epoch {
            ErrorCode::None
        } else if requested > self.leader_epoch {
            ErrorCode::UnknownLeaderEpoch
        } else {
            ErrorCode::FencedLeaderEpoch
        }
    }

    // ---- internals ----------------------------------------------------------------------

    /// Recomputes the leader's HW and completes the parked acks that now hold.
    fn after_change(&mut self, now: i64, fx: &mut Vec<Effect>) {
        if self.role == Role::Leader {
            self.maybe_advance_hw(now, fx);
        }
        if self.pending.is_empty() {
            return;
        }
        let mut still = Vec::with_capacity(self.pending.len());
        for p in std::mem::take(&mut self.pending) {
            match self.ack_result(&p) {
                Some(error) => fx.push(Effect::AckCompleted {
                    wait: p.wait,
                    error,
                }),
                None => still.push(p),
            }
        }
        self.pending = still;
    }

    /// Kafka's `maybeIncrementLeaderHW`: min acknowledged end over the maximal ISR and the
    /// caught-up followers; no move while under min ISR; never backwards.
    fn maybe_advance_hw(&mut self, now: i64, fx: &mut Vec<Effect>) {
        if self.under_min_isr() {
            return;
        }
        let maximal = self.maximal_isr();
        let mut target = self.acked_end();
        for f in &self.followers {
            if maximal.contains(&f.id)
                || (self.caught_up(f, now) && !self.ineligible.contains(&f.id))
            {
                target = target.min(f.log_end_offset.max(0));
            }
        }
        if target > self.high_watermark {
            fx.push(Effect::HighWatermarkAdvanced {
                old: self.high_watermark,
                new: target,
            });
            self.high_watermark = target;
        }
    }

    fn fail_all(&mut self, error: ErrorCode, fx: &mut Vec<Effect>) {
        for p in self.pending.drain(..) {
            fx.push(Effect::AckCompleted {
                wait: p.wait,
                error,
            });
        }
    }

    /// The invariants of the crate docs, as a check: `Err` names the first one broken.
    pub fn check_invariants(&self) -> Result<(), String> {
        let (s, hw, d, e) = (
            self.log_start,
            self.high_watermark,
            self.durable_end,
            self.log_end,
        );
        if !(0 <= s && s <= hw && hw <= e) {
            return Err(format!("log_start {s} <= hw {hw} <= leo {e} broken"));
        }
        if d > e {
            return Err(format!("durable end {d} > leo {e}"));
        }
        if self.role == Role::Leader && hw > self.acked_end() {
            return Err(format!(
                "leader hw {hw} above its acknowledged end {}",
                self.acked_end()
            ));
        }
        if self.role != Role::Leader && !self.pending.is_empty() {
            return Err("parked acks without the leader role".to_string());
        }
        Ok(())
    }
}

fn push_hw_change(old: Offset, new: Offset, fx: &mut Vec<Effect>) {
    if new > old {
        fx.push(Effect::HighWatermarkAdvanced { old, new });
    } else if new < old {
        fx.push(Effect::HighWatermarkLowered { old, new });
    }
}
