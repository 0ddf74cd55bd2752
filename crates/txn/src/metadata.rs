//! One transactional id's state: Kafka's `TransactionMetadata` without the pending-transition
//! machinery (the shard applies a transition at once and emits the record that makes it
//! durable; a failed append reloads the shard from its log instead).
//!
//! Invariants: `partitions` is empty in `Empty` and `Complete*`; `start_ms` is -1 in `Empty`
//! and set (>= 0) from the first added partition until the next InitProducerId; the epoch of a
//! producer id never decreases.

use std::collections::BTreeSet;

/// The states of a transactional id, with Kafka's ids (the log's `transaction_status`) and
/// names (DescribeTransactions / ListTransactions).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TxnState {
    Empty,
    Ongoing,
    PrepareCommit,
    PrepareAbort,
    CompleteCommit,
    CompleteAbort,
    /// Being expired. Kafka never writes it (expiry is a tombstone); replaying it forgets the id.
    Dead,
    /// Kafka's in-memory state while fencing an ongoing transaction; never in a log Kafka writes.
    /// Replaying it keeps it until [`crate::TxnShard::on_loaded`] turns it into `PrepareAbort`.
    PrepareEpochFence,
}

impl TxnState {
    /// Every state, in id order.
    pub const ALL: [TxnState; 8] = [
        TxnState::Empty,
        TxnState::Ongoing,
        TxnState::PrepareCommit,
        TxnState::PrepareAbort,
        TxnState::CompleteCommit,
        TxnState::CompleteAbort,
        TxnState::Dead,
        TxnState::PrepareEpochFence,
    ];

    /// Kafka's `TransactionState.id`.
    pub fn id(self) -> i8 {
        match self {
            TxnState::Empty => 0,
            TxnState::Ongoing => 1,
            TxnState::PrepareCommit => 2,
            TxnState::PrepareAbort => 3,
            TxnState::CompleteCommit => 4,
            TxnState::CompleteAbort => 5,
            TxnState::Dead => 6,
            TxnState::PrepareEpochFence => 7,
        }
    }

    pub fn from_id(id: i8) -> Option<TxnState> {
        TxnState::ALL.into_iter().find(|s| s.id() == id)
    }

    /// Kafka's `TransactionState.name`.
    pub fn name(self) -> &'static str {
        match self {
            TxnState::Empty => "Empty",
            TxnState::Ongoing => "Ongoing",
            TxnState::PrepareCommit => "PrepareCommit",
            TxnState::PrepareAbort => "PrepareAbort",
            TxnState::CompleteCommit => "CompleteCommit",
            TxnState::CompleteAbort => "CompleteAbort",
            TxnState::Dead => "Dead",
            TxnState::PrepareEpochFence => "PrepareEpochFence",
        }
    }

    /// The state named `name` exactly (Kafka's names are case sensitive).
    pub fn from_name(name: &str) -> Option<TxnState> {
        TxnState::ALL.into_iter().find(|s| s.name() == name)
    }

    /// `PrepareCommit` or `PrepareAbort`: markers are being written.
    pub fn is_prepare(self) -> bool {
        matches!(self, TxnState::PrepareCommit | TxnState::PrepareAbort)
    }

    /// States an idle id may expire from (Kafka's `isExpirationAllowed`).
    pub fn expiration_allowed(self) -> bool {
        matches!(
            self,
            TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort
        )
    }
}

/// The epoch at which a producer id is exhausted: clients never get it (or above), so the
/// coordinator can always fence with one more bump (Kafka's `isEpochExhausted`).
pub(crate) const EPOCH_EXHAUSTED: i16 = i16::MAX - 1;

/// Kafka's `RecordBatch.NO_PRODUCER_EPOCH` / `NO_PRODUCER_ID`.
pub(crate) const NO_EPOCH: i16 = -1;
pub(crate) const NO_PRODUCER_ID: i64 = -1;

/// One transactional id's metadata.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TxnMetadata {
    pub producer_id: i64,
    /// The producer id before the last InitProducerId (in memory; log value v1 carries it).
    pub previous_producer_id: i64,
    pub producer_epoch: i16,
    /// The epoch before the last bump, for KIP-360 retries (memory only; -1 after a reload).
    pub last_producer_epoch: i16,
    pub timeout_ms: i32,
    pub state: TxnState,
    pub partitions: BTreeSet<(String, i32)>,
    pub start_ms: i64,
    pub last_update_ms: i64,
}

impl TxnMetadata {
    /// A new id's metadata before its first InitProducerId transition (epoch -1).
    pub fn new(producer_id: i64, timeout_ms: i32, now_ms: i64) -> Self {
        Self {
            producer_id,
            previous_producer_id: NO_PRODUCER_ID,
            producer_epoch: NO_EPOCH,
            last_producer_epoch: NO_EPOCH,
            timeout_ms,
            state: TxnState::Empty,
            partitions: BTreeSet::new(),
            start_ms: -1,
            last_update_ms: now_ms,
        }
    }

    pub fn epoch_exhausted(&self) -> bool {
        self.producer_epoch >= EPOCH_EXHAUSTED
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_names_are_kafkas() {
        let names: Vec<(i8, &str)> = TxnState::ALL.iter().map(|s| (s.id(), s.name())).collect();
        assert_eq!(
            names,
            [
                (0, "Empty"),
                (1, "Ongoing"),
                (2, "PrepareCommit"),
                (3, "PrepareAbort"),
                (4, "CompleteCommit"),
                (5, "CompleteAbort"),
                (6, "Dead"),
                (7, "PrepareEpochFence"),
            ]
        );
        for s in TxnState::ALL {
            assert_eq!(TxnState::from_id(s.id()), Some(s));
            assert_eq!(TxnState::from_name(s.name()), Some(s));
        }
        assert_eq!(TxnState::from_id(8), None);
        assert_eq!(TxnState::from_name("ongoing"), None);
    }
}
