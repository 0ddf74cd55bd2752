//! [`TxnShard`]: the transaction coordinator for the transactional ids of one
//! `__transaction_state` partition, as a pure state machine.
//!
//! Mental model (architecture.md: state + input + now -> effects): the shard owns the
//! [`TxnMetadata`] of every id placed on its partition. Every entry point takes `now_ms` (the
//! caller's clock, clamped so it never goes backwards) and returns [`Effects`]; nothing happens
//! between calls. A transition is applied to memory at once and emitted as the record that
//! makes it durable; the runtime appends the records before it sends the responses and starts
//! the markers, and reloads the shard if an append fails (so memory never stays ahead of the
//! log). Two periodic sweeps run from [`TxnShard::tick`]: aborting `Ongoing` transactions past
//! their timeout (every `abort_timed_out_transaction_cleanup_interval_ms`) and forgetting idle
//! ids (every `remove_expired_transaction_cleanup_interval_ms`).
//!
//! Loading: a new shard is empty; the runtime feeds every record of the partition to
//! [`TxnShard::replay`] (answering COORDINATOR_LOAD_IN_PROGRESS meanwhile), then calls
//! [`TxnShard::on_loaded`] once, which resumes the prepared transactions' markers. After that
//! the shard applies its own changes directly: the runtime must not replay them back.
//!
//! Ownership: one shard per partition and coordinator epoch, driven by one task at a time.

use std::collections::BTreeMap;

use crate::config::TxnConfig;
use crate::effects::{Effects, MarkerJob, RequestToken, Response, TxnResult};
use crate::error::TxnError;
use crate::metadata::{NO_EPOCH, TxnMetadata, TxnState};
use crate::records::{decode_record, encode_key, encode_value, metadata_from_value};

/// The transaction coordinator for the transactional ids of one `__transaction_state` partition.
#[derive(Debug)]
pub struct TxnShard {
    pub(crate) config: TxnConfig,
    pub(crate) coordinator_epoch: i32,
    pub(crate) txns: BTreeMap<String, TxnMetadata>,
    /// The largest `now_ms` seen (`i64::MIN` before the first call).
    pub(crate) now: i64,
    pub(crate) out: Effects,
    next_abort_check: Option<i64>,
    next_expire_check: Option<i64>,
}

impl TxnShard {
    /// An empty shard. `coordinator_epoch` is the partition's leader epoch; it travels in every
    /// [`MarkerJob`]. The config should have passed [`TxnConfig::validate`].
    pub fn new(config: TxnConfig, coordinator_epoch: i32) -> Self {
        Self {
            config,
            coordinator_epoch,
            txns: BTreeMap::new(),
            now: i64::MIN,
            out: Effects::default(),
            next_abort_check: None,
            next_expire_check: None,
        }
    }

    pub fn config(&self) -> &TxnConfig {
        &self.config
    }

    /// Replaces the config (a dynamic change); takes effect for later decisions and sweeps.
    pub fn set_config(&mut self, config: TxnConfig) {
        self.config = config;
    }

    pub fn coordinator_epoch(&self) -> i32 {
        self.coordinator_epoch
    }

    /// The ids this shard holds, sorted.
    pub fn transactional_ids(&self) -> Vec<String> {
        self.txns.keys().cloned().collect()
    }

    /// Applies one record of the partition while loading (the last record of an id wins; a
    /// tombstone forgets it). A malformed record is an error the caller logs and skips; the
    /// shard is unchanged by it.
    pub fn replay(&mut self, key: &[u8], value: Option<&[u8]>) -> Result<(), TxnError> {
        let (id, value) = decode_record(key, value)?;
        let metadata = match value {
            None => None,
            Some(v) => metadata_from_value(&v)?,
        };
        match metadata {
            Some(m) => {
                self.txns.insert(id, m);
            }
            None => {
                self.txns.remove(&id);
            }
        }
        Ok(())
    }

    /// Ends loading: arms the sweeps from `now_ms` and resumes every prepared transaction
    /// (Kafka's `loadTransactionsForTxnTopicPartition`): `PrepareCommit` / `PrepareAbort` emit
    /// their [`MarkerJob`] again (or complete at once when they have no partitions); a
    /// replayed `PrepareEpochFence` becomes `PrepareAbort` (a record) and aborts.
    pub fn on_loaded(&mut self, now_ms: i64) -> Effects {
        self.begin(now_ms);
        self.arm_sweeps();
        let fenced: Vec<String> = self
            .txns
            .iter()
            .filter(|(_, m)| m.state == TxnState::PrepareEpochFence)
            .map(|(id, _)| id.clone())
            .collect();
        for id in fenced {
            if let Some(m) = self.txns.get_mut(&id) {
                m.state = TxnState::PrepareAbort;
                m.last_update_ms = self.now;
            }
            self.write(&id);
        }
        let prepared: Vec<String> = self
            .txns
            .iter()
            .filter(|(_, m)| m.state.is_prepare())
            .map(|(id, _)| id.clone())
            .collect();
        for id in prepared {
            self.markers_or_complete(&id);
        }
        self.finish()
    }

    /// Runs the sweeps that are due at `now_ms`: aborts `Ongoing` transactions older than their
    /// timeout with an epoch bump (Kafka's `abortTimedOutTransactions`: the old producer is
    /// fenced), and writes tombstones for ids idle (`Empty` / `Complete*`) for
    /// `transactional_id_expiration_ms`.
    pub fn tick(&mut self, now_ms: i64) -> Effects {
        self.begin(now_ms);
        if self.next_abort_check.is_some_and(|d| d <= self.now) {
            self.abort_timed_out();
            let interval = self.config.abort_timed_out_transaction_cleanup_interval_ms;
            self.next_abort_check = Some(self.now.saturating_add(interval.max(1)));
        }
        if self.next_expire_check.is_some_and(|d| d <= self.now) {
            self.expire_idle();
            let interval = self.config.remove_expired_transaction_cleanup_interval_ms;
            self.next_expire_check = Some(self.now.saturating_add(interval.max(1)));
        }
        self.finish()
    }

    /// Every marker of `transactional_id`'s prepared transaction is written: `CompleteCommit` /
    /// `CompleteAbort` (a record), partitions cleared. Ignored (no effects) unless the id is in
    /// `PrepareCommit` / `PrepareAbort` with this producer id and epoch (a stale or repeated
    /// job).
    pub fn markers_written(
        &mut self,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        now_ms: i64,
    ) -> Effects {
        self.begin(now_ms);
        let current = self.txns.get(transactional_id).is_some_and(|m| {
            m.state.is_prepare()
                && m.producer_id == producer_id
                && m.producer_epoch == producer_epoch
        });
        if current {
            self.complete(transactional_id);
        }
        self.finish()
    }

    /// The earliest sweep deadline.
    pub fn next_deadline(&self) -> Option<i64> {
        match (self.next_abort_check, self.next_expire_check) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    // ---- internals shared by the request handlers ----

    /// Starts a call: clamps the clock and arms the sweeps if nothing armed them yet.
    pub(crate) fn begin(&mut self, now_ms: i64) {
        self.now = self.now.max(now_ms);
        if self.next_abort_check.is_none() || self.next_expire_check.is_none() {
            self.arm_sweeps();
        }
    }

    pub(crate) fn finish(&mut self) -> Effects {
        let mut effects = std::mem::take(&mut self.out);
        effects.next_deadline = self.next_deadline();
        effects
    }

    fn arm_sweeps(&mut self) {
        let abort = self.config.abort_timed_out_transaction_cleanup_interval_ms;
        let expire = self.config.remove_expired_transaction_cleanup_interval_ms;
        self.next_abort_check = Some(self.now.saturating_add(abort.max(1)));
        self.next_expire_check = Some(self.now.saturating_add(expire.max(1)));
    }

    pub(crate) fn respond(&mut self, token: RequestToken, response: Response) {
        self.out.responses.push((token, response));
    }

    /// Queues the record of `id`'s current metadata. One that cannot be encoded (impossible
    /// for metadata built from decoded input) is dropped rather than panicking.
    pub(crate) fn write(&mut self, id: &str) {
        let Some(m) = self.txns.get(id) else { return };
        match (encode_key(id), encode_value(m)) {
            (Ok(k), Ok(v)) => self.out.records.push((k, Some(v))),
            (Err(e), _) | (_, Err(e)) => debug_assert!(false, "unencodable txn record: {e}"),
        }
    }

    /// `Ongoing` -> `PrepareCommit` / `PrepareAbort` (a record), then markers.
    pub(crate) fn prepare(&mut self, id: &str, result: TxnResult) {
        let now = self.now;
        let Some(m) = self.txns.get_mut(id) else {
            return;
        };
        m.state = match result {
            TxnResult::Commit => TxnState::PrepareCommit,
            TxnResult::Abort => TxnState::PrepareAbort,
        };
        m.last_update_ms = now;
        self.write(id);
        self.markers_or_complete(id);
    }

    /// Aborts `id`'s ongoing transaction with an epoch bump (Kafka's `prepareFenceProducerEpoch`
    /// then `PrepareAbort`): the producer holding the old epoch is fenced.
    pub(crate) fn fence_and_abort(&mut self, id: &str) {
        let Some(m) = self.txns.get_mut(id) else {
            return;
        };
        // A client never holds i16::MAX (exhausted at MAX-1), so the bump always fits; at MAX
        // the epoch stays (nobody can hold it).
        m.producer_epoch = m.producer_epoch.saturating_add(1);
        m.last_producer_epoch = NO_EPOCH;
        self.prepare(id, TxnResult::Abort);
    }

    /// Emits the prepared transaction's [`MarkerJob`], or completes it at once when it has no
    /// partitions (Kafka's marker channel does the same).
    fn markers_or_complete(&mut self, id: &str) {
        let Some(m) = self.txns.get(id) else { return };
        let result = match m.state {
            TxnState::PrepareCommit => TxnResult::Commit,
            TxnState::PrepareAbort => TxnResult::Abort,
            _ => return,
        };
        if m.partitions.is_empty() {
            self.complete(id);
            return;
        }
        let job = MarkerJob {
            transactional_id: id.to_string(),
            producer_id: m.producer_id,
            producer_epoch: m.producer_epoch,
            coordinator_epoch: self.coordinator_epoch,
            result,
            partitions: m.partitions.iter().cloned().collect(),
        };
        self.out.markers.push(job);
    }

    /// `Prepare*` -> `Complete*` (a record), partitions cleared (Kafka's `prepareComplete`).
    fn complete(&mut self, id: &str) {
        let now = self.now;
        let Some(m) = self.txns.get_mut(id) else {
            return;
        };
        m.state = match m.state {
            TxnState::PrepareCommit => TxnState::CompleteCommit,
            TxnState::PrepareAbort => TxnState::CompleteAbort,
            _ => return,
        };
        m.partitions.clear();
        m.last_update_ms = now;
        self.write(id);
    }

    fn abort_timed_out(&mut self) {
        let now = self.now;
        let timed_out: Vec<String> = self
            .txns
            .iter()
            .filter(|(_, m)| {
                m.state == TxnState::Ongoing
                    && m.start_ms.saturating_add(i64::from(m.timeout_ms)) < now
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in timed_out {
            self.fence_and_abort(&id);
        }
    }

    fn expire_idle(&mut self) {
        let horizon = self
            .now
            .saturating_sub(self.config.transactional_id_expiration_ms);
        let expired: Vec<String> = self
            .txns
            .iter()
            .filter(|(_, m)| m.state.expiration_allowed() && m.last_update_ms <= horizon)
            .map(|(id, _)| id.clone())
            .collect();
        for id in expired {
            match encode_key(&id) {
                Ok(k) => self.out.records.push((k, None)),
                Err(e) => {
                    debug_assert!(false, "unencodable txn key: {e}");
                    continue;
                }
            }
            self.txns.remove(&id);
        }
    }
}
