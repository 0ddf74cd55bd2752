//! What the cleaner knows of transactions while it walks a log in offset order (issue 18; Kafka's
//! `CleanedTransactionMetadata`).
//!
//! Mental model: the aborted transactions are known up front (the `.txnindex` entries of the
//! clean view, each `(producer, first offset, ABORT marker offset)`), and the cleaned range never
//! reaches the first unstable offset, so every transactional batch the cleaner decides on
//! belongs to a decided transaction. Walking batches in order, a [`TxnTracker`]:
//! * makes an aborted transaction *ongoing* once a batch reaches its first offset, until its
//!   producer's ABORT marker; a transactional data batch of a producer with an ongoing aborted
//!   transaction is aborted ([`TxnTracker::on_data`] answers `true`): its records never enter
//!   the key map and are removed;
//! * remembers, per producer, whether a transactional data batch was seen since that
//!   producer's previous marker; a marker ([`TxnTracker::on_marker`]) is *removable* only if
//!   none was (no data of its transaction is left before it). A removable marker still waits
//!   for its delete horizon ([`crate::filter::filter_marker`]);
//! * yields the `.txnindex` entry of each ABORT marker whose transaction still had data in this
//!   pass; entries of transactions whose data is gone are dropped with the cleaned segment's
//!   index (a kept entry whose marker is later removed could hide the producer's next committed
//!   transaction from READ_COMMITTED readers, so entries never outlive their marker's need).
//!
//! Stricter than Kafka on one point: Kafka removes an ABORT marker it has no index entry for
//! even if data of that producer was seen; here any data seen since the producer's previous
//! marker keeps the marker, so a lost index entry can never unhide aborted data.
//!
//! Invariant: a tracker must see every batch from the offset it was built for, in order
//! (markers included), or a producer's transactions would be attributed to the wrong marker.
//!
//! Pure: no I/O.

use std::collections::{HashMap, HashSet, VecDeque};

use skiff_record::ControlType;
use skiff_storage::AbortedTxn;

/// Transaction state of one walk over a log.
#[derive(Debug, Default)]
pub struct TxnTracker {
    /// Aborted transactions not reached yet, by first offset.
    pending: VecDeque<AbortedTxn>,
    /// Producer -> its aborted transaction under way.
    ongoing_aborted: HashMap<i64, AbortedTxn>,
    /// Producers with a transactional data batch seen since their previous marker.
    with_data: HashSet<i64>,
}

/// What to do with one control batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MarkerVerdict {
    /// No data of its transaction was seen before it: it may go once its delete horizon passed.
    pub removable: bool,
    /// The `.txnindex` entry to keep with it (an ABORT whose transaction still had data).
    pub index_entry: Option<AbortedTxn>,
}

impl TxnTracker {
    /// A tracker for a walk starting at `from_offset`: `aborted` are `.txnindex` entries (any
    /// order); those whose marker lies below `from_offset` are ignored (their data too).
    pub fn new(aborted: &[AbortedTxn], from_offset: i64) -> Self {
        let mut pending: Vec<AbortedTxn> = aborted
            .iter()
            .filter(|a| a.last_offset >= from_offset)
            .copied()
            .collect();
        pending.sort_by_key(|a| (a.first_offset, a.last_offset));
        Self {
            pending: pending.into(),
            ..Self::default()
        }
    }

    fn reach(&mut self, offset: i64) {
        while self
            .pending
            .front()
            .is_some_and(|a| a.first_offset <= offset)
        {
            if let Some(a) = self.pending.pop_front() {
                self.ongoing_aborted.entry(a.producer_id).or_insert(a);
            }
        }
    }

    /// A data batch ending at `last_offset`; `true` if it belongs to an aborted transaction.
    pub fn on_data(&mut self, producer_id: i64, is_transactional: bool, last_offset: i64) -> bool {
        self.reach(last_offset);
        if !is_transactional || producer_id < 0 {
            return false;
        }
        self.with_data.insert(producer_id);
        self.ongoing_aborted.contains_key(&producer_id)
    }

    /// A control batch of `producer_id` ending at `last_offset`. `kind`: the marker's type,
    /// `None` for another control type or an unreadable one (kept, state unchanged); `empty`:
    /// the batch holds no record (a marker a cleaner already emptied: removable).
    pub fn on_marker(
        &mut self,
        producer_id: i64,
        last_offset: i64,
        kind: Option<ControlType>,
        empty: bool,
    ) -> MarkerVerdict {
        self.reach(last_offset);
        if empty {
            return MarkerVerdict {
                removable: true,
                index_entry: None,
            };
        }
        let Some(kind) = kind else {
            return MarkerVerdict {
                removable: false,
                index_entry: None,
            };
        };
        let had_data = self.with_data.remove(&producer_id);
        let aborted = match kind {
            ControlType::Abort => self.ongoing_aborted.remove(&producer_id),
            ControlType::Commit => None,
        };
        MarkerVerdict {
            removable: !had_data,
            index_entry: aborted.filter(|_| had_data),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(pid: i64, first: i64, marker: i64) -> AbortedTxn {
        AbortedTxn {
            producer_id: pid,
            first_offset: first,
            last_offset: marker,
            last_stable_offset: marker + 1,
        }
    }

    /// One step of a walk: a data batch or a marker.
    #[derive(Clone, Copy, Debug)]
    enum Step {
        /// (producer, transactional, last offset) -> aborted?
        Data(i64, bool, i64, bool),
        /// (producer, offset, kind, empty) -> (removable, index entry)
        Marker(
            i64,
            i64,
            Option<ControlType>,
            bool,
            bool,
            Option<AbortedTxn>,
        ),
    }
    use Step::*;

    const AB: Option<ControlType> = Some(ControlType::Abort);
    const CO: Option<ControlType> = Some(ControlType::Commit);

    #[test]
    fn walks_decide_aborted_data_and_removable_markers() {
        // (name, index entries, walk start, steps)
        let table: Vec<(&str, Vec<AbortedTxn>, i64, Vec<Step>)> = vec![
            (
                "commit then abort of one producer, then a plain write",
                vec![a(1, 3, 5)],
                0,
                vec![
                    Data(1, true, 1, false),
                    Marker(1, 2, CO, false, false, None),
                    Data(1, true, 4, true),
                    Marker(1, 5, AB, false, false, Some(a(1, 3, 5))),
                    Data(-1, false, 6, false),
                ],
            ),
            (
                "markers whose data is gone are removable, their entry dropped",
                vec![a(1, 3, 5)],
                0,
                vec![
                    Marker(1, 2, CO, false, true, None),
                    Marker(1, 5, AB, false, true, None),
                ],
            ),
            (
                "interleaved producers: only the aborted one's batches are aborted",
                vec![a(2, 1, 4)],
                0,
                vec![
                    Data(1, true, 0, false),
                    Data(2, true, 1, true),
                    Data(1, true, 2, false),
                    Marker(1, 3, CO, false, false, None),
                    Marker(2, 4, AB, false, false, Some(a(2, 1, 4))),
                    Data(2, true, 5, false),
                    Marker(2, 6, CO, false, false, None),
                ],
            ),
            (
                "the producer's next transaction after an abort is not aborted",
                vec![a(1, 0, 1)],
                0,
                vec![
                    Data(1, true, 0, true),
                    Marker(1, 1, AB, false, false, Some(a(1, 0, 1))),
                    Data(1, true, 2, false),
                    Marker(1, 3, CO, false, false, None),
                ],
            ),
            (
                "entries whose marker lies below the walk's start are ignored",
                vec![a(1, 0, 1)],
                2,
                vec![
                    Data(1, true, 2, false),
                    Marker(1, 3, CO, false, false, None),
                ],
            ),
            (
                "an abort spanning the walk's start is still aborted",
                vec![a(1, 0, 5)],
                3,
                vec![
                    Data(1, true, 4, true),
                    Marker(1, 5, AB, false, false, Some(a(1, 0, 5))),
                ],
            ),
            (
                "an abort without index entry but with data keeps its marker",
                vec![],
                0,
                vec![
                    Data(1, true, 0, false),
                    Marker(1, 1, AB, false, false, None),
                ],
            ),
            (
                "other control types are kept; emptied control batches are removable",
                vec![],
                0,
                vec![
                    Data(1, true, 0, false),
                    Marker(1, 1, None, false, false, None),
                    Marker(1, 2, CO, false, false, None),
                    Marker(1, 3, CO, true, true, None),
                ],
            ),
            (
                "non-transactional batches of a producer are not transaction data",
                vec![],
                0,
                vec![
                    Data(1, false, 0, false),
                    Marker(1, 1, CO, false, true, None),
                ],
            ),
        ];
        for (name, entries, from, steps) in table {
            let mut t = TxnTracker::new(&entries, from);
            for (i, step) in steps.into_iter().enumerate() {
                match step {
                    Data(pid, txn, last, want) => {
                        assert_eq!(t.on_data(pid, txn, last), want, "{name}: step {i}");
                    }
                    Marker(pid, at, kind, empty, removable, entry) => {
                        let v = t.on_marker(pid, at, kind, empty);
                        assert_eq!(
                            v,
                            MarkerVerdict {
                                removable,
                                index_entry: entry
                            },
                            "{name}: step {i}"
                        );
                    }
                }
            }
        }
    }
}
