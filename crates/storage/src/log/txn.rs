//! Transactions in a partition [`Log`] (KIP-98, issue 18): markers on append, the first
//! unstable offset, open transactions, and the aborted-transaction search over `.txnindex`.
//!
//! Mental model (Kafka's `UnifiedLog` / `LocalLog.collectAbortedTransactions`):
//! - every append of a control batch with a producer id (leader, follower, replay) reads the
//!   marker from the batch's one record and hands it to the producer state
//!   ([`ProducerStateManager::update_marker`](crate::ProducerStateManager::update_marker));
//!   a leader first checks it ([`check_marker`](crate::ProducerStateManager::check_marker));
//! - an ABORT that closed a transaction adds `(producer, first offset, marker offset, last
//!   stable offset)` to the `.txnindex` of the segment holding the marker (written through,
//!   fsynced with the segment);
//! - `first_unstable_offset` comes from the producer state (open transactions, and completed
//!   ones until the high watermark passes their marker; `set_high_watermark` prunes those);
//! - `collect_aborted_txns` walks the segments from the one holding `start_offset` and stops
//!   once an entry's last stable offset reaches the upper bound, as Kafka does.
//!
//! Not synchronised: lives inside `Log`, behind its owner's mutex.

use skiff_record::{BatchView, EndTxnMarker, parse_end_txn_marker};

use crate::error::{IoContext, Result, StorageError};
use crate::log::Log;
use crate::producer_state::{OpenTxn, ProducerBatch};
use crate::segment::LogSegment;
use crate::segment::scan::BatchHeader;
use crate::segment::txn_index::{AbortedTxn, collect_aborted};

/// One aborted transaction a READ_COMMITTED fetch must filter (FetchResponse's
/// `AbortedTransactions`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AbortedTxnRef {
    pub producer_id: i64,
    pub first_offset: i64,
}

/// Whether a batch header is a marker candidate (a control batch with a producer id).
pub(crate) fn is_marker(h: &BatchHeader) -> bool {
    h.is_control() && h.producer_id >= 0
}

/// The marker in a whole control batch, `None` for other batches and other control types.
pub(crate) fn marker_of(batch: &[u8]) -> Result<Option<EndTxnMarker>> {
    let view = BatchView::new(batch)
        .map_err(|e| StorageError::InvalidArgument(format!("append of an invalid batch: {e}")))?;
    if view.producer_id() < 0 {
        return Ok(None);
    }
    parse_end_txn_marker(&view)
        .map_err(|e| StorageError::InvalidArgument(format!("invalid transaction marker: {e}")))
}

/// The marker of the control batch at `h` in `seg` (log replay). A batch that cannot be read
/// or parsed is logged and closes the transaction without a type (as a commit would).
pub(crate) fn read_marker(seg: &LogSegment, h: &BatchHeader) -> Option<EndTxnMarker> {
    let parsed = seg.read_batch(h).and_then(|b| marker_of(&b));
    match parsed {
        Ok(m) => m,
        Err(e) => {
            tracing::warn!(path = %seg.log_path().display(), offset = h.base_offset, error = %e, "unreadable transaction marker");
            None
        }
    }
}

impl Log {
    /// The smallest offset a READ_COMMITTED reader may not pass yet: the first offset of the
    /// oldest open transaction or of a completed one whose marker is not below the high
    /// watermark, never below the log start (as Kafka's `maybeIncrementFirstUnstableOffset`).
    /// `None` when there is none (the LSO is then the high watermark).
    pub fn first_unstable_offset(&self) -> Option<i64> {
        self.producers
            .state
            .first_unstable_offset()
            .map(|f| f.max(self.log_start_offset))
    }

    /// The open transactions, oldest first (operators' view, DescribeProducers).
    pub fn open_transactions(&self) -> Vec<OpenTxn> {
        self.producers.state.open_transactions()
    }

    /// The aborted transactions overlapping `[start_offset, upper_bound_offset)`: entries whose
    /// marker is at or after `start_offset` and whose first offset is below the upper bound,
    /// from the segment holding `start_offset` on (Kafka's `collectAbortedTransactions`): a
    /// marker may lie in any later segment, so the walk ends only when an entry's last stable
    /// offset reaches the upper bound, or at the log end.
    pub fn collect_aborted_txns(
        &self,
        start_offset: i64,
        upper_bound_offset: i64,
    ) -> Vec<AbortedTxnRef> {
        let first = self
            .segments
            .range(..=start_offset)
            .next_back()
            .map_or(i64::MIN, |(b, _)| *b);
        let mut found = Vec::new();
        for seg in self.segments.range(first..).map(|(_, s)| s) {
            let entries = seg.txn_index().entries();
            if collect_aborted(entries, start_offset, upper_bound_offset, &mut found) {
                break;
            }
        }
        found
            .into_iter()
            .map(|t| AbortedTxnRef {
                producer_id: t.producer_id,
                first_offset: t.first_offset,
            })
            .collect()
    }

    /// Leader check of a marker batch before offsets are assigned (WriteTxnMarkers): its
    /// producer and coordinator epochs against the producer's. Returns the parsed marker.
    pub(crate) fn check_leader_marker(
        &self,
        header: &BatchHeader,
        batch: &[u8],
    ) -> Result<Option<EndTxnMarker>> {
        if !is_marker(header) {
            return Ok(None);
        }
        let marker = marker_of(batch)?;
        if let Some(m) = &marker {
            self.producers.state.check_marker(
                header.producer_id,
                header.producer_epoch,
                m.coordinator_epoch,
            )?;
        }
        Ok(marker)
    }

    /// A follower's marker: parsed leniently (the leader accepted it; refusing here would
    /// stop replication).
    pub(crate) fn follower_marker(
        &self,
        header: &BatchHeader,
        batch: &[u8],
    ) -> Option<EndTxnMarker> {
        if !is_marker(header) {
            return None;
        }
        marker_of(batch).unwrap_or_else(|e| {
            tracing::warn!(tp = %self.tp, offset = header.base_offset, error = %e, "replicated an unparseable transaction marker");
            None
        })
    }

    /// Records a control batch appended at `offset` (the active segment holds it): producer
    /// state, and a `.txnindex` entry if it aborted an open transaction.
    pub(crate) fn record_marker(
        &mut self,
        header: &BatchHeader,
        offset: i64,
        marker: Option<&EndTxnMarker>,
    ) -> Result<()> {
        let batch = ProducerBatch::from_header(header);
        let state = &mut self.producers.state;
        let Some(done) = state.update_marker(&batch, marker, offset) else {
            return Ok(());
        };
        if !done.is_aborted {
            return Ok(());
        }
        let entry = AbortedTxn {
            producer_id: done.producer_id,
            first_offset: done.first_offset,
            last_offset: done.last_offset,
            last_stable_offset: state.last_stable_offset(&done),
        };
        let durable = self.config.is_durable();
        let idx = self.active_mut().txn_index_mut();
        idx.append(entry).at(idx.path())?;
        // Durable topics: the entry is on disk before the marker's fdatasync (group commit)
        // can acknowledge it; a synced marker is below the recovery point and its segment is
        // not re-validated after a power cut, so a lost entry would never come back. (The
        // file itself was created, and its directory entry synced, with the segment.)
        if durable {
            idx.flush().at(idx.path())?;
        }
        Ok(())
    }
}
