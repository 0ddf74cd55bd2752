//! Producer state inside a partition [`Log`]: the glue between the pure
//! [`ProducerStateManager`], its snapshot files, and the log's segments.
//!
//! Mental model (Kafka's `UnifiedLog` + `LogLoader.rebuildProducerState`): the state always
//! reflects the log up to its end (`map_end_offset == log_end_offset` after every operation).
//! - leader append: [`Log::check_producer_state`] before offsets are assigned, `update` after;
//!   follower append: `update` only;
//! - roll: the state's offset moves to the new segment's base and a snapshot is written there;
//!   clean close: a snapshot at the log end (fsynced); only the newest
//!   [`SNAPSHOTS_TO_KEEP`](super::snapshot::SNAPSHOTS_TO_KEEP) snapshots are kept;
//! - open (after recovery truncated the log): snapshots above the log end or below the log start
//!   are deleted, the newest valid one is loaded (corrupt ones are deleted), and the batches
//!   from its offset to the log end are replayed from their headers. As in Kafka, a clean start
//!   without any snapshot file (a log written before producer state existed) skips the replay;
//! - truncation: snapshots above the new end go; the state is trimmed in memory when that is
//!   exact, else reloaded from the newest snapshot at or below the end plus a replay;
//! - log start moves (retention, DeleteRecords): snapshots below it go, entries stay (KIP-360).
//! - transactions (issue 18): control batches are applied with their parsed marker (the replay
//!   reads each marker batch's record) so open and completed transactions follow the log; a
//!   segment whose `.txnindex` is missing, damaged or was re-validated by recovery gets its
//!   entries re-derived by the load's replay, which then starts from a snapshot at or below
//!   that segment's base (from the log start if there is none).
//!
//! Not synchronised: lives inside `Log`, which its owner keeps behind a mutex.

use skiff_record::{BatchView, EndTxnMarker};

use super::snapshot::SnapshotFiles;
use super::{Check, ProducerBatch, ProducerEntrySnapshot, ProducerStateManager};
use crate::error::{IoContext, Result, StorageError};
use crate::log::Log;
use crate::log::txn::{is_marker, read_marker};
use crate::segment::scan::BatchHeader;
use crate::segment::txn_index::AbortedTxn;

/// The producer state of one partition and its snapshot files.
#[derive(Debug, Default)]
pub struct PartitionProducers {
    pub(crate) state: ProducerStateManager,
    pub(crate) snapshots: SnapshotFiles,
}

impl Log {
    /// The producer state (read-only).
    pub fn producer_state(&self) -> &ProducerStateManager {
        &self.producers.state
    }

    /// The largest producer id this partition's state has held since it was loaded (snapshot
    /// entries, replayed and appended batches; expiry does not lower it).
    pub fn max_producer_id(&self) -> Option<i64> {
        self.producers.state.max_producer_id()
    }

    /// Every known producer of this partition, in producer-id order (DescribeProducers).
    pub fn active_producers(&self) -> Vec<ProducerEntrySnapshot> {
        self.producers.state.active_producers()
    }

    /// Offsets of the producer snapshot files on disk, ascending.
    pub fn producer_snapshot_offsets(&self) -> Vec<i64> {
        self.producers.snapshots.offsets()
    }

    /// Drops producers idle for `expiration_ms` (`producer.id.expiration.ms`). Returns how many.
    pub fn remove_expired_producers(&mut self, now_ms: i64, expiration_ms: i64) -> usize {
        self.producers.state.remove_expired(now_ms, expiration_ms)
    }

    /// Decides a client batch before the leader assigns offsets: [`Check::Append`], a
    /// duplicate's original placement, or `StorageError::Producer`.
    pub fn check_producer_state(&self, batch: &[u8]) -> Result<Check> {
        let view = BatchView::new(batch).map_err(|e| {
            StorageError::InvalidArgument(format!("append of an invalid batch: {e}"))
        })?;
        Ok(self
            .producers
            .state
            .check(&ProducerBatch::from_view(&view))?)
    }

    /// [`Log::check_producer_state`] for a batch known by its header fields.
    pub(crate) fn check_producer_header(&self, header: &BatchHeader) -> Result<Check> {
        Ok(self
            .producers
            .state
            .check(&ProducerBatch::from_header(header))?)
    }

    /// Records a batch just appended at `[base, last]` (a control batch with its parsed
    /// transaction marker, see [`crate::log::txn`]).
    pub(crate) fn record_producer_batch(
        &mut self,
        header: &BatchHeader,
        base: i64,
        last: i64,
        marker: Option<&EndTxnMarker>,
    ) -> Result<()> {
        if header.is_control() {
            return self.record_marker(header, last, marker);
        }
        self.producers
            .state
            .update(&ProducerBatch::from_header(header), base, last);
        Ok(())
    }

    /// After a roll to `new_base`: the state reflects the log up to there; snapshot it.
    pub(crate) fn snapshot_producers_on_roll(&mut self, new_base: i64) -> Result<()> {
        self.producers.state.advance_map_end_offset(new_base);
        self.write_producer_snapshot(self.config.is_durable())
    }

    /// Clean close: snapshot at the log end, fsynced.
    pub(crate) fn snapshot_producers_on_close(&mut self) -> Result<()> {
        let end = self.log_end_offset;
        self.producers.state.advance_map_end_offset(end);
        self.write_producer_snapshot(true)
    }

    fn write_producer_snapshot(&mut self, sync: bool) -> Result<()> {
        let p = &mut self.producers;
        p.snapshots.write(&p.state, sync).at(&self.dir)?;
        p.snapshots.retain_latest();
        Ok(())
    }

    /// After `truncate_to` set the new log end.
    pub(crate) fn truncate_producer_state(&mut self) -> Result<()> {
        let end = self.log_end_offset;
        self.producers.snapshots.delete_above(end);
        if self.producers.state.truncate_to(end) {
            return Ok(());
        }
        let start = self.log_start_offset.min(end);
        self.producers.state = self
            .producers
            .snapshots
            .load_latest(end)
            .filter(|s| s.map_end_offset() >= start)
            .unwrap_or_else(|| ProducerStateManager::new(start));
        self.replay_producer_batches()?;
        // The replay puts back completed transactions whose markers the HW had already
        // passed; prune them as Kafka's `truncateTo` does (`updateHighWatermark`), or the
        // LSO would drop below transactions that were stable (found by the txn+storage sim).
        self.producers
            .state
            .on_high_watermark_updated(self.high_watermark.min(end));
        Ok(())
    }

    /// After `truncate_fully_and_start_at(offset)`.
    pub(crate) fn reset_producer_state(&mut self, offset: i64) {
        self.producers.state.truncate_fully_and_start_at(offset);
        self.producers.snapshots.delete_all();
    }

    /// After the log start offset moved up.
    pub(crate) fn producer_state_on_log_start(&mut self) {
        let start = self.log_start_offset;
        self.producers.state.truncate_head(start);
        self.producers.snapshots.delete_below(start);
    }

    /// Rebuilds the state on open, after recovery: newest valid snapshot plus a replay. When
    /// some segment's `.txnindex` must be rebuilt (missing, damaged, re-validated), the replay
    /// starts from a snapshot at or below that segment's base, and re-derives its entries.
    pub(crate) fn load_producer_state(&mut self, clean_shutdown: bool) -> Result<()> {
        let (start, end) = (self.log_start_offset, self.log_end_offset);
        let mut snapshots = SnapshotFiles::scan(&self.dir).at(&self.dir)?;
        let rebuild_from = self.txn_index_rebuild_from()?;
        let skip_replay =
            clean_shutdown && snapshots.latest_offset().is_none() && rebuild_from.is_none();
        snapshots.delete_above(end);
        snapshots.delete_below(start);
        let state = if skip_replay {
            ProducerStateManager::new(end)
        } else {
            snapshots
                .load_latest(rebuild_from.unwrap_or(end).min(end))
                .filter(|s| s.map_end_offset() >= start)
                .unwrap_or_else(|| ProducerStateManager::new(start))
        };
        if let Some(from) = rebuild_from {
            tracing::info!(tp = %self.tp, from, replay_from = state.map_end_offset(), "rebuilding transaction indexes");
        }
        self.producers = PartitionProducers { state, snapshots };
        let replayed = self.replay_producer_batches()?;
        self.finish_txn_index_rebuild()?;
        let hw = self.high_watermark;
        self.producers.state.on_high_watermark_updated(hw);
        tracing::debug!(tp = %self.tp, replayed, producers = self.producers.state.len(), "loaded producer state");
        // Like Kafka: snapshot the rebuilt state if it reaches past the newest snapshot.
        if self.producers.snapshots.latest_offset().unwrap_or(0) < end {
            self.write_producer_snapshot(self.config.is_durable())?;
        }
        Ok(())
    }

    /// The base of the first non-empty segment whose `.txnindex` must be rebuilt (missing,
    /// damaged, re-validated, or pointing outside the segment); empty segments' indexes are
    /// rewritten empty at once.
    fn txn_index_rebuild_from(&mut self) -> Result<Option<i64>> {
        let mut from = None;
        let bases: Vec<i64> = self.segments.keys().copied().collect();
        let end = self.log_end_offset;
        for (i, seg) in self.segments.values_mut().enumerate() {
            // An entry whose marker lies outside the segment (a marker lost with its data)
            // makes the whole index suspect.
            let upper = bases.get(i + 1).copied().unwrap_or(end);
            let base = seg.base_offset();
            if seg
                .txn_index()
                .entries()
                .iter()
                .any(|e| e.last_offset < base || e.last_offset >= upper)
            {
                tracing::warn!(path = %seg.txn_index().path().display(), "transaction index points outside its segment; rebuilding it");
                seg.txn_index_mut().mark_for_rebuild();
            }
            if !seg.txn_index().needs_rebuild() {
                continue;
            }
            if seg.size() == 0 {
                let idx = seg.txn_index_mut();
                idx.rewrite(Vec::new()).at(idx.path())?;
            } else if from.is_none() {
                from = Some(seg.base_offset());
            }
        }
        Ok(from)
    }

    /// After the replay: indexes the replay could not reach (segments wholly below the log
    /// start) are left empty.
    fn finish_txn_index_rebuild(&mut self) -> Result<()> {
        for seg in self.segments.values_mut() {
            if seg.txn_index().needs_rebuild() {
                let idx = seg.txn_index_mut();
                idx.rewrite(Vec::new()).at(idx.path())?;
            }
        }
        Ok(())
    }

    /// Applies every batch from the state's offset to the log end (no checks; markers are
    /// read from their batches). Segments whose `.txnindex` is marked for rebuild get their
    /// entries re-derived. Returns the number of batches applied.
    fn replay_producer_batches(&mut self) -> Result<usize> {
        let from = self
            .producers
            .state
            .map_end_offset()
            .max(self.log_start_offset);
        let end = self.log_end_offset;
        let mut applied = 0;
        if from < end {
            let first = self
                .segments
                .range(..=from)
                .next_back()
                .map_or(i64::MIN, |(b, _)| *b);
            let mut rebuilt: Vec<(i64, Vec<AbortedTxn>)> = Vec::new();
            for seg in self.segments.range(first..).map(|(_, s)| s) {
                let position = if seg.base_offset() < from {
                    seg.position_of(from)?
                } else {
                    0
                };
                let rebuild = seg.txn_index().needs_rebuild();
                let mut aborted = Vec::new();
                let state = &mut self.producers.state;
                let mut scan = seg.headers_from(position);
                while let Some(h) = scan.next_header().at(seg.log_path())? {
                    if h.last_offset < from || h.base_offset >= end {
                        continue;
                    }
                    applied += 1;
                    let batch = ProducerBatch::from_header(&h);
                    if !is_marker(&h) {
                        state.update(&batch, h.base_offset, h.last_offset);
                        continue;
                    }
                    let marker = read_marker(seg, &h);
                    let done = state.update_marker(&batch, marker.as_ref(), h.last_offset);
                    if let Some(done) = done.filter(|d| d.is_aborted && rebuild) {
                        aborted.push(AbortedTxn {
                            producer_id: done.producer_id,
                            first_offset: done.first_offset,
                            last_offset: done.last_offset,
                            last_stable_offset: state.last_stable_offset(&done),
                        });
                    }
                }
                if rebuild {
                    rebuilt.push((seg.base_offset(), aborted));
                }
            }
            for (base, entries) in rebuilt {
                if let Some(seg) = self.segments.get_mut(&base) {
                    let idx = seg.txn_index_mut();
                    idx.rewrite(entries).at(idx.path())?;
                }
            }
        }
        self.producers.state.advance_map_end_offset(end);
        Ok(applied)
    }
}
