//! Idempotent-producer state of one partition: the pure decision code (issue 5).
//!
//! Mental model (Kafka 2.5+ `ProducerStateManager` / `ProducerAppendInfo`): for every producer id
//! that wrote to this partition we remember its epoch, the sequence ranges and offsets of its
//! last [`NUM_BATCHES_TO_RETAIN`] batches, its last timestamp, and the transactional fields
//! (coordinator epoch, first offset of the open transaction; transactions in [`txn`]). A leader
//! asks [`ProducerStateManager::check`] *before* assigning offsets:
//!
//! | incoming batch (producer id >= 0)              | answer                                  |
//! |------------------------------------------------|-----------------------------------------|
//! | base sequence < 0                              | INVALID_RECORD (87)                     |
//! | unknown producer id (new, expired)             | append, whatever the sequence           |
//! | same epoch, same (first, last) seq as one of the last 5 | duplicate: the original offsets |
//! | epoch below the entry's                        | INVALID_PRODUCER_EPOCH (47)             |
//! | epoch above the entry's                        | append iff first sequence is 0, else 45 |
//! | same epoch                                     | append iff first = last + 1 (i32 wraps to 0), else 45 |
//! | then: non-transactional while a transaction is open | INVALID_TXN_STATE (48)             |
//!
//! After an append, [`ProducerStateManager::update`] records the batch (followers and log replay
//! call only `update`: no checks, as Kafka's REPLICATION origin). `map_end_offset` is the log
//! offset the state reflects: every batch appended moves it to the batch's next offset, and a
//! snapshot of the state is named after it (see [`snapshot`]).
//!
//! Retention does not drop entries (KIP-360, Kafka 2.4+): a producer whose batches were deleted
//! stays known until it has been idle for `producer.id.expiration.ms`
//! ([`ProducerStateManager::remove_expired`]), so a late retry is still deduplicated or fenced.
//! Truncation does: [`ProducerStateManager::truncate_to`] trims what it can and says when the
//! caller must rebuild from a snapshot and the log instead.
//!
//! No I/O and no clock here: `now` is passed in. Not synchronised: the owning `Log` sits behind
//! a mutex. Invariants: an entry's batches are in offset order, all of the entry's epoch, at most
//! [`NUM_BATCHES_TO_RETAIN`]; producer id `-1` (not idempotent) never has an entry.

pub mod partition;
pub mod snapshot;
pub mod txn;

use std::collections::{BTreeMap, HashMap, VecDeque};

use skiff_record::BatchView;
use skiff_types::ErrorCode;

use crate::segment::scan::BatchHeader;
pub use txn::{CompletedTxn, OpenTxn};

/// How many of a producer's batches are remembered for deduplication (Kafka, and the
/// producer's `max.in.flight.requests.per.connection` limit with idempotence).
pub const NUM_BATCHES_TO_RETAIN: usize = 5;
/// Producer id of a non-idempotent batch.
pub const NO_PRODUCER_ID: i64 = -1;
/// Epoch of an entry that has not seen an epoch (snapshot of an empty entry).
pub const NO_PRODUCER_EPOCH: i16 = -1;
/// Sequence of an entry without batches.
pub const NO_SEQUENCE: i32 = -1;
/// Kafka's default `producer.id.expiration.ms` (1 day).
pub const DEFAULT_PRODUCER_ID_EXPIRATION_MS: i64 = 86_400_000;
/// Kafka's default `producer.id.expiration.check.interval.ms` (10 minutes).
pub const DEFAULT_PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS: i64 = 600_000;

/// `seq + delta` with Kafka's wrap from `i32::MAX` to 0.
pub fn increment_sequence(seq: i32, delta: i32) -> i32 {
    if seq > i32::MAX - delta {
        delta - (i32::MAX - seq) - 1
    } else {
        seq + delta
    }
}

/// `seq - delta` with Kafka's wrap from 0 to `i32::MAX`.
pub fn decrement_sequence(seq: i32, delta: i32) -> i32 {
    if seq < delta {
        i32::MAX - (delta - seq) + 1
    } else {
        seq - delta
    }
}

/// Whether `next` directly follows `last` (0 follows `i32::MAX`).
fn in_sequence(last: i32, next: i32) -> bool {
    i64::from(next) == i64::from(last) + 1 || (next == 0 && last == i32::MAX)
}

/// The producer fields of one batch: all that producer state needs, readable from the 61-byte
/// header alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProducerBatch {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub last_offset_delta: i32,
    pub max_timestamp: i64,
    pub is_transactional: bool,
    pub is_control: bool,
}

impl ProducerBatch {
    /// The fields of a parsed batch.
    pub fn from_view(v: &BatchView<'_>) -> Self {
        Self {
            producer_id: v.producer_id(),
            producer_epoch: v.producer_epoch(),
            base_sequence: v.base_sequence(),
            last_offset_delta: v.last_offset_delta(),
            max_timestamp: v.max_timestamp(),
            is_transactional: v.is_transactional(),
            is_control: v.is_control(),
        }
    }

    /// The fields of a scanned header (log replay).
    pub fn from_header(h: &BatchHeader) -> Self {
        Self {
            producer_id: h.producer_id,
            producer_epoch: h.producer_epoch,
            base_sequence: h.base_sequence,
            last_offset_delta: i32::try_from(h.last_offset - h.base_offset).unwrap_or(i32::MAX),
            max_timestamp: h.max_timestamp,
            is_transactional: h.is_transactional(),
            is_control: h.is_control(),
        }
    }

    /// Whether the batch carries producer state (idempotent or transactional).
    pub fn has_producer_id(&self) -> bool {
        self.producer_id >= 0
    }

    /// The sequence of the batch's last record.
    pub fn last_sequence(&self) -> i32 {
        increment_sequence(self.base_sequence, self.last_offset_delta.max(0))
    }
}

/// One remembered batch of a producer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchMetadata {
    pub first_seq: i32,
    pub last_seq: i32,
    pub last_offset: i64,
    /// `last_offset - first_offset`.
    pub offset_delta: i32,
    /// The batch's max timestamp.
    pub timestamp: i64,
}

impl BatchMetadata {
    pub fn first_offset(&self) -> i64 {
        self.last_offset - i64::from(self.offset_delta)
    }
}

/// What a producer is known to have written to this partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProducerEntry {
    pub producer_id: i64,
    pub epoch: i16,
    /// Oldest first; all of `epoch`; at most [`NUM_BATCHES_TO_RETAIN`].
    batches: VecDeque<BatchMetadata>,
    pub coordinator_epoch: i32,
    /// Max timestamp of the last batch (or marker): what expiry measures idleness from.
    pub last_timestamp: i64,
    /// First offset of the producer's open transaction.
    pub current_txn_first_offset: Option<i64>,
    /// Offset of the last transaction marker applied (in memory only; after a snapshot load
    /// a producer that ever saw a marker is assumed to have one just below the snapshot, so a
    /// truncation below it rebuilds the state instead of guessing).
    pub last_marker_offset: Option<i64>,
}

impl ProducerEntry {
    /// An entry that has seen nothing yet.
    pub fn empty(producer_id: i64) -> Self {
        Self {
            producer_id,
            epoch: NO_PRODUCER_EPOCH,
            batches: VecDeque::with_capacity(NUM_BATCHES_TO_RETAIN),
            coordinator_epoch: -1,
            last_timestamp: -1,
            current_txn_first_offset: None,
            last_marker_offset: None,
        }
    }

    /// The remembered batches, oldest first.
    pub fn batches(&self) -> impl ExactSizeIterator<Item = &BatchMetadata> {
        self.batches.iter()
    }

    pub fn last_batch(&self) -> Option<&BatchMetadata> {
        self.batches.back()
    }

    pub fn last_seq(&self) -> i32 {
        self.batches.back().map_or(NO_SEQUENCE, |b| b.last_seq)
    }

    /// Last offset of the last remembered batch, `-1` if none.
    pub fn last_data_offset(&self) -> i64 {
        self.batches.back().map_or(-1, |b| b.last_offset)
    }

    fn bump_epoch(&mut self, epoch: i16) {
        if self.epoch != epoch {
            self.batches.clear();
            self.epoch = epoch;
        }
    }

    fn push(&mut self, b: BatchMetadata) {
        if self.batches.len() == NUM_BATCHES_TO_RETAIN {
            self.batches.pop_front();
        }
        self.batches.push_back(b);
    }

    fn find_duplicate(&self, batch: &ProducerBatch) -> Option<&BatchMetadata> {
        if batch.producer_epoch != self.epoch {
            return None;
        }
        let last = batch.last_sequence();
        self.batches
            .iter()
            .find(|b| b.first_seq == batch.base_sequence && b.last_seq == last)
    }
}

/// The answer for an incoming leader batch that passed the checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    /// Append it (then call [`ProducerStateManager::update`]).
    Append,
    /// A retry of an already appended batch: append nothing, answer with these offsets.
    Duplicate(DuplicateBatch),
}

/// The original placement of a duplicate batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DuplicateBatch {
    pub first_offset: i64,
    pub last_offset: i64,
    /// The original batch's max timestamp (Kafka answers it as the log append time).
    pub timestamp: i64,
}

/// Why a leader batch is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProducerError {
    #[error(
        "out of order sequence number for producer {producer_id}: {first_seq} (incoming seq. number), {expected} (expected), epoch {epoch}"
    )]
    OutOfOrderSequence {
        producer_id: i64,
        epoch: i16,
        first_seq: i32,
        /// The sequence that would have been accepted.
        expected: i32,
    },
    #[error(
        "epoch {epoch} of producer {producer_id} is smaller than the last seen epoch {current_epoch}"
    )]
    InvalidProducerEpoch {
        producer_id: i64,
        epoch: i16,
        current_epoch: i16,
    },
    #[error(
        "invalid sequence number {base_sequence} in record batch with producerId {producer_id}"
    )]
    InvalidRecord {
        producer_id: i64,
        base_sequence: i32,
    },
    #[error(
        "expected transactional write from producer {producer_id}: its transaction is open since offset {txn_first_offset}"
    )]
    InvalidTxnState {
        producer_id: i64,
        txn_first_offset: i64,
    },
    #[error(
        "transaction marker for producer {producer_id} has coordinator epoch {coordinator_epoch}, below the last seen {current_coordinator_epoch}"
    )]
    TransactionCoordinatorFenced {
        producer_id: i64,
        coordinator_epoch: i32,
        current_coordinator_epoch: i32,
    },
}

impl ProducerError {
    /// OUT_OF_ORDER_SEQUENCE_NUMBER (45), INVALID_PRODUCER_EPOCH (47), INVALID_TXN_STATE (48),
    /// TRANSACTION_COORDINATOR_FENCED (52) or INVALID_RECORD (87).
    pub fn error_code(&self) -> ErrorCode {
        match self {
            ProducerError::OutOfOrderSequence { .. } => ErrorCode::OutOfOrderSequenceNumber,
            ProducerError::InvalidProducerEpoch { .. } => ErrorCode::InvalidProducerEpoch,
            ProducerError::InvalidRecord { .. } => ErrorCode::InvalidRecord,
            ProducerError::InvalidTxnState { .. } => ErrorCode::InvalidTxnState,
            ProducerError::TransactionCoordinatorFenced { .. } => {
                ErrorCode::TransactionCoordinatorFenced
            }
        }
    }
}

/// One active producer as DescribeProducers reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProducerEntrySnapshot {
    pub producer_id: i64,
    pub producer_epoch: i16,
    /// `-1` if the entry has no batch.
    pub last_sequence: i32,
    pub last_timestamp: i64,
    pub coordinator_epoch: i32,
    /// `-1` if no transaction is open.
    pub current_txn_start_offset: i64,
}

/// All producers of one partition.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProducerStateManager {
    producers: HashMap<i64, ProducerEntry>,
    map_end_offset: i64,
    /// The largest producer id this state has held since it was built (snapshot entries and
    /// replayed or appended batches); expiry and truncation never lower it (issue 12 item 10:
    /// the broker never hands out an id at or below it again).
    max_producer_id: Option<i64>,
    /// Open transactions: first offset -> producer id (derived from the entries'
    /// `current_txn_first_offset`, kept in step by every mutation).
    ongoing: BTreeMap<i64, i64>,
    /// Completed transactions whose marker the high watermark has not passed yet, by first
    /// offset (Kafka's `unreplicatedTxns`): still unstable for READ_COMMITTED readers.
    unreplicated: BTreeMap<i64, CompletedTxn>,
}

impl ProducerStateManager {
    /// Empty state reflecting the log up to `map_end_offset`.
    pub fn new(map_end_offset: i64) -> Self {
        Self {
            producers: HashMap::new(),
            map_end_offset,
            max_producer_id: None,
            ongoing: BTreeMap::new(),
            unreplicated: BTreeMap::new(),
        }
    }

    /// Restores entries (from a snapshot) as the state at `map_end_offset`.
    pub fn from_entries(
        map_end_offset: i64,
        entries: impl IntoIterator<Item = ProducerEntry>,
    ) -> Self {
        let producers: HashMap<i64, ProducerEntry> = entries
            .into_iter()
            .filter(|e| e.producer_id >= 0)
            .map(|mut e| {
                if e.coordinator_epoch >= 0 && e.last_marker_offset.is_none() {
                    e.last_marker_offset = Some(map_end_offset - 1);
                }
                (e.producer_id, e)
            })
            .collect();
        let max_producer_id = producers.keys().copied().max();
        let mut s = Self {
            producers,
            map_end_offset,
            max_producer_id,
            ongoing: BTreeMap::new(),
            unreplicated: BTreeMap::new(),
        };
        s.reindex_ongoing();
        s
    }

    /// The largest producer id seen since this state was built (see the field), `None` if
    /// no idempotent batch or snapshot entry was ever seen.
    pub fn max_producer_id(&self) -> Option<i64> {
        self.max_producer_id
    }

    /// The log offset this state reflects (exclusive).
    pub fn map_end_offset(&self) -> i64 {
        self.map_end_offset
    }

    /// Moves the reflected offset up, e.g. to a new segment's base offset on roll.
    pub fn advance_map_end_offset(&mut self, offset: i64) {
        self.map_end_offset = self.map_end_offset.max(offset);
    }

    pub fn len(&self) -> usize {
        self.producers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.producers.is_empty()
    }

    pub fn entry(&self, producer_id: i64) -> Option<&ProducerEntry> {
        self.producers.get(&producer_id)
    }

    /// Entries in producer-id order.
    pub fn entries(&self) -> Vec<&ProducerEntry> {
        let mut v: Vec<&ProducerEntry> = self.producers.values().collect();
        v.sort_unstable_by_key(|e| e.producer_id);
        v
    }

    /// Every known producer, in producer-id order (DescribeProducers).
    pub fn active_producers(&self) -> Vec<ProducerEntrySnapshot> {
        self.entries()
            .into_iter()
            .map(|e| ProducerEntrySnapshot {
                producer_id: e.producer_id,
                producer_epoch: e.epoch,
                last_sequence: e.last_seq(),
                last_timestamp: e.last_timestamp,
                coordinator_epoch: e.coordinator_epoch,
                current_txn_start_offset: e.current_txn_first_offset.unwrap_or(-1),
            })
            .collect()
    }

    /// Decides a client batch before the leader assigns offsets (see the module table).
    /// Batches without a producer id, and control batches, are always [`Check::Append`].
    pub fn check(&self, batch: &ProducerBatch) -> Result<Check, ProducerError> {
        if !batch.has_producer_id() || batch.is_control {
            return Ok(Check::Append);
        }
        if batch.base_sequence < 0 {
            return Err(ProducerError::InvalidRecord {
                producer_id: batch.producer_id,
                base_sequence: batch.base_sequence,
            });
        }
        let Some(entry) = self.producers.get(&batch.producer_id) else {
            return Ok(Check::Append);
        };
        if let Some(dup) = entry.find_duplicate(batch) {
            return Ok(Check::Duplicate(DuplicateBatch {
                first_offset: dup.first_offset(),
                last_offset: dup.last_offset,
                timestamp: dup.timestamp,
            }));
        }
        if batch.producer_epoch < entry.epoch {
            return Err(ProducerError::InvalidProducerEpoch {
                producer_id: batch.producer_id,
                epoch: batch.producer_epoch,
                current_epoch: entry.epoch,
            });
        }
        Self::check_sequence(entry, batch)?;
        // Kafka checks the transaction state after epoch and sequence ("Expected
        // transactional write").
        if let Some(first) = entry.current_txn_first_offset
            && !batch.is_transactional
        {
            return Err(ProducerError::InvalidTxnState {
                producer_id: batch.producer_id,
                txn_first_offset: first,
            });
        }
        Ok(Check::Append)
    }

    /// The sequence rule of [`Self::check`] for a known producer at an epoch not below its own.
    fn check_sequence(entry: &ProducerEntry, batch: &ProducerBatch) -> Result<(), ProducerError> {
        let out_of_order = |expected| ProducerError::OutOfOrderSequence {
            producer_id: batch.producer_id,
            epoch: batch.producer_epoch,
            first_seq: batch.base_sequence,
            expected,
        };
        if entry.epoch == NO_PRODUCER_EPOCH {
            // Nothing known about sequences (a snapshot of an empty entry): any is fine.
            return Ok(());
        }
        if batch.producer_epoch != entry.epoch {
            return if batch.base_sequence == 0 {
                Ok(())
            } else {
                Err(out_of_order(0))
            };
        }
        let last = entry.last_seq();
        if in_sequence(last, batch.base_sequence) {
            Ok(())
        } else {
            Err(out_of_order(increment_sequence(last, 1)))
        }
    }

    /// Records a batch appended at `[first_offset, last_offset]` (leader after [`Self::check`],
    /// follower, log replay). Batches without a producer id only move `map_end_offset`.
    /// Control batches go to [`Self::update_marker`] without a parsed marker (callers that
    /// have the batch body call it themselves).
    pub fn update(&mut self, batch: &ProducerBatch, first_offset: i64, last_offset: i64) {
        if batch.is_control {
            self.update_marker(batch, None, last_offset);
            return;
        }
        self.map_end_offset = self.map_end_offset.max(last_offset.saturating_add(1));
        if !batch.has_producer_id() {
            return;
        }
        self.max_producer_id = self.max_producer_id.max(Some(batch.producer_id));
        let entry = self
            .producers
            .entry(batch.producer_id)
            .or_insert_with(|| ProducerEntry::empty(batch.producer_id));
        entry.bump_epoch(batch.producer_epoch);
        entry.last_timestamp = batch.max_timestamp;
        let offset_delta = i32::try_from(last_offset - first_offset).unwrap_or(i32::MAX);
        entry.push(BatchMetadata {
            first_seq: batch.base_sequence,
            last_seq: batch.last_sequence(),
            last_offset,
            offset_delta,
            timestamp: batch.max_timestamp,
        });
        if batch.is_transactional && entry.current_txn_first_offset.is_none() {
            entry.current_txn_first_offset = Some(first_offset);
            self.ongoing.insert(first_offset, batch.producer_id);
        }
    }

    /// Forgets everything at offsets ≥ `offset` (replica or recovery truncation; the log's new
    /// end is `offset`). Returns `true` if the result is exact; `false` if some producer lost
    /// every remembered batch (or its open transaction), so what it had before is unknown here:
    /// the caller must rebuild from a snapshot at or below `offset` plus the log.
    pub fn truncate_to(&mut self, offset: i64) -> bool {
        if offset >= self.map_end_offset {
            return true;
        }
        self.map_end_offset = offset;
        // A cut marker reopens its transaction: only a rebuild knows the transaction's start.
        let mut exact = !self.unreplicated.values().any(|t| t.last_offset >= offset);
        self.unreplicated.retain(|_, t| t.last_offset < offset);
        self.producers.retain(|_, e| {
            if e.last_marker_offset.is_some_and(|o| o >= offset) {
                exact = false;
                e.last_marker_offset = None;
            }
            let txn_above = e.current_txn_first_offset.is_some_and(|o| o >= offset);
            let before = e.batches.len();
            while e.batches.back().is_some_and(|b| b.last_offset >= offset) {
                e.batches.pop_back();
            }
            if txn_above {
                exact = false;
                e.current_txn_first_offset = None;
            }
            match e.batches.back() {
                Some(b) => {
                    if e.batches.len() != before {
                        e.last_timestamp = b.timestamp;
                    }
                    true
                }
                None => {
                    // Either every batch was above `offset` (what came before is unknown), or
                    // the entry had none (a marker or a snapshot entry we cannot place).
                    exact = false;
                    false
                }
            }
        });
        self.reindex_ongoing();
        exact
    }

    /// The log start moved up to `log_start` (retention, DeleteRecords). Entries stay (KIP-360):
    /// only the reflected offset is moved up if it was below.
    pub fn truncate_head(&mut self, log_start: i64) {
        self.advance_map_end_offset(log_start);
    }

    /// Clears everything; the log restarts empty at `offset`.
    pub fn truncate_fully_and_start_at(&mut self, offset: i64) {
        self.producers.clear();
        self.ongoing.clear();
        self.unreplicated.clear();
        self.map_end_offset = offset;
    }

    /// Whether an entry has been idle for `expiration_ms` (an open transaction keeps it).
    pub fn is_expired(entry: &ProducerEntry, now_ms: i64, expiration_ms: i64) -> bool {
        entry.current_txn_first_offset.is_none()
            && now_ms.saturating_sub(entry.last_timestamp) >= expiration_ms
    }

    /// Drops producers idle for `expiration_ms` (`producer.id.expiration.ms`). Returns how many.
    pub fn remove_expired(&mut self, now_ms: i64, expiration_ms: i64) -> usize {
        let before = self.producers.len();
        self.producers
            .retain(|_, e| !Self::is_expired(e, now_ms, expiration_ms));
        before - self.producers.len()
    }
}

#[cfg(test)]
mod tests;
