//! Transactions in the producer state (KIP-98): markers, open and unreplicated transactions.
//!
//! Mental model (Kafka's `ProducerAppendInfo.appendEndTxnMarker` and the `ongoingTxns` /
//! `unreplicatedTxns` maps of `ProducerStateManager`):
//! - a transactional data batch opens a transaction for its producer at its first offset
//!   (`ProducerEntry::current_txn_first_offset`, and `ongoing`: first offset -> producer id);
//! - an end-transaction marker (a control batch, [`ProducerStateManager::update_marker`])
//!   closes it: the entry takes the marker's epoch and coordinator epoch, the transaction moves
//!   to `unreplicated` as a [`CompletedTxn`] until the high watermark passes the marker
//!   ([`ProducerStateManager::on_high_watermark_updated`]);
//! - the first unstable offset is the smallest first offset of both maps: a READ_COMMITTED
//!   reader stops there (the caller takes `min(HW, first unstable offset)` as the LSO);
//! - a leader checks a marker before appending it ([`ProducerStateManager::check_marker`]):
//!
//! | marker (producer id known)                      | answer                                 |
//! |-------------------------------------------------|----------------------------------------|
//! | producer epoch below the entry's                | INVALID_PRODUCER_EPOCH (47)            |
//! | coordinator epoch below the entry's             | TRANSACTION_COORDINATOR_FENCED (52)    |
//! | otherwise (also: unknown producer id)           | append                                 |
//!
//! Pure, like the rest of the module: offsets in, decisions out, no I/O. Invariant: `ongoing`
//! holds exactly the entries' `current_txn_first_offset`s; `unreplicated` only transactions
//! whose marker is at or above the last high watermark seen.

use skiff_record::{ControlType, EndTxnMarker};

use super::{ProducerBatch, ProducerEntry, ProducerError, ProducerStateManager};

/// A transaction closed by a marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompletedTxn {
    pub producer_id: i64,
    pub first_offset: i64,
    /// The marker's offset.
    pub last_offset: i64,
    pub is_aborted: bool,
}

/// An open transaction (operators' view).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenTxn {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub first_offset: i64,
}

impl ProducerStateManager {
    /// Decides a marker for `producer_id` at `producer_epoch` written by a coordinator at
    /// `coordinator_epoch`, before the leader appends it (see the module table).
    pub fn check_marker(
        &self,
        producer_id: i64,
        producer_epoch: i16,
        coordinator_epoch: i32,
    ) -> Result<(), ProducerError> {
        let Some(entry) = self.producers.get(&producer_id) else {
            return Ok(());
        };
        if producer_epoch < entry.epoch {
            return Err(ProducerError::InvalidProducerEpoch {
                producer_id,
                epoch: producer_epoch,
                current_epoch: entry.epoch,
            });
        }
        if coordinator_epoch < entry.coordinator_epoch {
            return Err(ProducerError::TransactionCoordinatorFenced {
                producer_id,
                coordinator_epoch,
                current_coordinator_epoch: entry.coordinator_epoch,
            });
        }
        Ok(())
    }

    /// Records a control batch appended at `offset` (a marker is one record). With a parsed
    /// `marker`, the entry takes its coordinator epoch. Closes the producer's open
    /// transaction, if any, and returns it (it stays unstable until the high watermark passes
    /// `offset`). Control batches without a producer id only move `map_end_offset`.
    pub fn update_marker(
        &mut self,
        batch: &ProducerBatch,
        marker: Option<&EndTxnMarker>,
        offset: i64,
    ) -> Option<CompletedTxn> {
        self.map_end_offset = self.map_end_offset.max(offset.saturating_add(1));
        if !batch.has_producer_id() {
            return None;
        }
        self.max_producer_id = self.max_producer_id.max(Some(batch.producer_id));
        let entry = self
            .producers
            .entry(batch.producer_id)
            .or_insert_with(|| ProducerEntry::empty(batch.producer_id));
        entry.bump_epoch(batch.producer_epoch);
        entry.last_timestamp = batch.max_timestamp;
        entry.last_marker_offset = Some(offset);
        if let Some(m) = marker {
            entry.coordinator_epoch = m.coordinator_epoch;
        }
        let first_offset = entry.current_txn_first_offset.take()?;
        self.ongoing.remove(&first_offset);
        let done = CompletedTxn {
            producer_id: batch.producer_id,
            first_offset,
            last_offset: offset,
            is_aborted: marker.is_some_and(|m| m.control_type == ControlType::Abort),
        };
        self.unreplicated.insert(first_offset, done);
        Some(done)
    }

    /// Kafka's `lastStableOffset(completedTxn)`, asked right after [`Self::update_marker`]
    /// returned `completed`: the first offset of the oldest transaction still open (another
    /// producer's: `completed`'s is closed now), else the offset after the marker.
    pub fn last_stable_offset(&self, completed: &CompletedTxn) -> i64 {
        self.ongoing
            .iter()
            .find(|(_, pid)| **pid != completed.producer_id)
            .map_or(completed.last_offset + 1, |(first, _)| *first)
    }

    /// The smallest first offset of an open transaction or of a completed one whose marker
    /// is not below the high watermark yet; `None` when there is none.
    pub fn first_unstable_offset(&self) -> Option<i64> {
        let open = self.ongoing.keys().next().copied();
        let unreplicated = self.unreplicated.keys().next().copied();
        match (open, unreplicated) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Forgets completed transactions whose marker is below `high_watermark`.
    pub fn on_high_watermark_updated(&mut self, high_watermark: i64) {
        self.unreplicated
            .retain(|_, t| t.last_offset >= high_watermark);
    }

    /// The open transactions, oldest first.
    pub fn open_transactions(&self) -> Vec<OpenTxn> {
        self.ongoing
            .iter()
            .map(|(first, pid)| OpenTxn {
                producer_id: *pid,
                producer_epoch: self.producers.get(pid).map_or(-1, |e| e.epoch),
                first_offset: *first,
            })
            .collect()
    }

    /// The completed transactions still unstable, by first offset.
    pub fn unreplicated_transactions(&self) -> Vec<CompletedTxn> {
        self.unreplicated.values().copied().collect()
    }

    /// Re-derives `ongoing` from the entries (after a bulk change).
    pub(super) fn reindex_ongoing(&mut self) {
        self.ongoing = self
            .producers
            .values()
            .filter_map(|e| e.current_txn_first_offset.map(|f| (f, e.producer_id)))
            .collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::producer_state::Check;
    use skiff_types::ErrorCode;

    fn data(pid: i64, epoch: i16, seq: i32, txn: bool) -> ProducerBatch {
        ProducerBatch {
            producer_id: pid,
            producer_epoch: epoch,
            base_sequence: seq,
            last_offset_delta: 0,
            max_timestamp: 10,
            is_transactional: txn,
            is_control: false,
        }
    }

    fn marker_batch(pid: i64, epoch: i16) -> ProducerBatch {
        ProducerBatch {
            base_sequence: -1,
            is_control: true,
            ..data(pid, epoch, -1, true)
        }
    }

    fn marker(t: ControlType, coordinator_epoch: i32) -> EndTxnMarker {
        EndTxnMarker {
            control_type: t,
            coordinator_epoch,
        }
    }

    /// Producer 1 at epoch 2, coordinator epoch 5 (one committed transaction at 0..=1), and
    /// an open transaction from offset 2.
    fn state() -> ProducerStateManager {
        let mut m = ProducerStateManager::new(0);
        m.update(&data(1, 2, 0, true), 0, 0);
        m.update_marker(
            &marker_batch(1, 2),
            Some(&marker(ControlType::Commit, 5)),
            1,
        );
        m.update(&data(1, 2, 1, true), 2, 2);
        m
    }

    #[test]
    fn marker_checks() {
        let m = state();
        let cases: &[(&str, i64, i16, i32, Option<ErrorCode>)] = &[
            ("same epochs", 1, 2, 5, None),
            ("newer coordinator", 1, 2, 6, None),
            ("bumped producer epoch", 1, 3, 5, None),
            (
                "fenced producer epoch",
                1,
                1,
                9,
                Some(ErrorCode::InvalidProducerEpoch),
            ),
            (
                "fenced coordinator",
                1,
                2,
                4,
                Some(ErrorCode::TransactionCoordinatorFenced),
            ),
            ("unknown producer", 9, 0, 0, None),
        ];
        for (name, pid, epoch, coord, want) in cases {
            let got = m
                .check_marker(*pid, *epoch, *coord)
                .err()
                .map(|e| e.error_code());
            assert_eq!(got, *want, "{name}");
        }
    }

    #[test]
    fn data_checks_while_a_transaction_is_open() {
        let m = state();
        let cases: &[(&str, ProducerBatch, Result<Check, ErrorCode>)] = &[
            ("transactional next", data(1, 2, 2, true), Ok(Check::Append)),
            (
                "idempotent while open",
                data(1, 2, 2, false),
                Err(ErrorCode::InvalidTxnState),
            ),
            (
                "idempotent, new epoch, while open",
                data(1, 3, 0, false),
                Err(ErrorCode::InvalidTxnState),
            ),
            (
                "old epoch fenced first",
                data(1, 1, 2, false),
                Err(ErrorCode::InvalidProducerEpoch),
            ),
            (
                "sequence checked before the transaction state",
                data(1, 2, 5, false),
                Err(ErrorCode::OutOfOrderSequenceNumber),
            ),
            ("other producer", data(2, 0, 0, false), Ok(Check::Append)),
        ];
        for (name, b, want) in cases {
            assert_eq!(&m.check(b).map_err(|e| e.error_code()), want, "{name}");
        }
        // After the marker, an idempotent batch is fine again.
        let mut m = m;
        m.update_marker(&marker_batch(1, 2), Some(&marker(ControlType::Abort, 5)), 3);
        assert_eq!(m.check(&data(1, 2, 2, false)), Ok(Check::Append));
    }

    #[test]
    fn markers_close_transactions_and_unstable_offsets_follow() {
        let mut m = state();
        assert_eq!(
            m.first_unstable_offset(),
            Some(0),
            "commit at 1 not replicated"
        );
        m.on_high_watermark_updated(2);
        assert_eq!(m.first_unstable_offset(), Some(2), "open txn at 2");
        m.update(&data(7, 0, 0, true), 3, 4);
        m.update(&data(8, 0, 0, false), 5, 5);
        assert_eq!(
            m.open_transactions(),
            vec![
                OpenTxn {
                    producer_id: 1,
                    producer_epoch: 2,
                    first_offset: 2
                },
                OpenTxn {
                    producer_id: 7,
                    producer_epoch: 0,
                    first_offset: 3
                }
            ]
        );
        // Abort producer 1's transaction at 6: producer 7's is still open from 3.
        let done = m
            .update_marker(&marker_batch(1, 2), Some(&marker(ControlType::Abort, 6)), 6)
            .unwrap();
        assert_eq!(
            done,
            CompletedTxn {
                producer_id: 1,
                first_offset: 2,
                last_offset: 6,
                is_aborted: true
            }
        );
        assert_eq!(m.last_stable_offset(&done), 3);
        let e = m.entry(1).unwrap();
        assert_eq!((e.coordinator_epoch, e.current_txn_first_offset), (6, None));
        assert_eq!(m.first_unstable_offset(), Some(2), "abort marker above HW");
        m.on_high_watermark_updated(7);
        assert_eq!(m.first_unstable_offset(), Some(3));
        // Commit producer 7's: nothing else open, LSO = marker + 1.
        let done = m
            .update_marker(
                &marker_batch(7, 0),
                Some(&marker(ControlType::Commit, 6)),
                7,
            )
            .unwrap();
        assert!(!done.is_aborted);
        assert_eq!(m.last_stable_offset(&done), 8);
        assert_eq!(m.first_unstable_offset(), Some(3));
        m.on_high_watermark_updated(8);
        assert_eq!(m.first_unstable_offset(), None);
        // A marker without an open transaction completes nothing.
        assert_eq!(
            m.update_marker(
                &marker_batch(7, 0),
                Some(&marker(ControlType::Commit, 6)),
                8
            ),
            None
        );
    }

    #[test]
    fn truncating_a_marker_asks_for_a_rebuild() {
        let mut m = state();
        m.update_marker(&marker_batch(1, 2), Some(&marker(ControlType::Abort, 5)), 3);
        let mut cut = m.clone();
        assert!(!cut.truncate_to(3), "the abort marker at 3 is cut");
        let mut kept = m.clone();
        assert!(kept.truncate_to(4));
        assert_eq!(kept.first_unstable_offset(), Some(0));
        // Truncating inside an open transaction's data is exact for the others.
        let mut m = state();
        assert!(!m.truncate_to(2), "the open transaction started at 2");
        assert_eq!(m.open_transactions(), vec![]);
    }

    #[test]
    fn snapshot_entries_restore_open_transactions() {
        let m = state();
        let entries: Vec<ProducerEntry> = m.entries().into_iter().cloned().collect();
        let r = ProducerStateManager::from_entries(3, entries);
        assert_eq!(r.open_transactions(), m.open_transactions());
        assert_eq!(r.first_unstable_offset(), Some(2));
    }
}
