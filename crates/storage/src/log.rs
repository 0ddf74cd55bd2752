//! One partition's log: an ordered map of segments with a single active (last) segment.
//!
//! Mental model (spec §2): offsets are dense and assigned here on leader appends
//! (`baseOffset = log end offset`, `partitionLeaderEpoch` stamped in place: neither is covered
//! by the CRC). The produce path hands over a [`ValidatedBatch`] (header copy + records section
//! borrowed from the request) and [`Log::append_validated`] writes both with one `pwritev`, so
//! an accepted batch is never copied in user space. Bounds: `log_start_offset <= high_watermark <= log_end_offset`; consumers read
//! below a caller-supplied bound (HW/LSO), replicas up to the log end. The `recovery_point` is the
//! offset below which data is known fsynced; an unclean start re-validates only after it.
//!
//! Threads: `Log` is not internally synchronised; the owner wraps it in a mutex. Reads return
//! [`FileSlice`]s (an `Arc<File>` + range) so the bytes can be sent after the lock is released.
//! Durable mode hands out [`SyncState`] to fsync outside the lock (group commit).
//!
//! Invariants: segments are contiguous in offset order and only the last one is appended to;
//! after any successful operation the in-memory offsets agree with the files; an append is
//! either fully written or reported as an error, and an I/O error takes the log dir offline
//! until the log is re-opened ([`crate::log_guard`], [`crate::log_dir`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use skiff_record::EndTxnMarker;
use skiff_types::TopicPartition;

use crate::config::LogConfig;
use crate::error::{IoContext, Result, StorageError};
use crate::leader_epoch::LeaderEpochCache;
use crate::producer_state::partition::PartitionProducers;
use crate::producer_state::{Check, DuplicateBatch};
use crate::retention::{self, RetentionInput, SegmentFacts};
use crate::segment::scan::BatchHeader;
use crate::segment::{DELETED_SUFFIX, LogSegment, RollParams, SegmentOptions};
use crate::sync::SyncState;
use crate::validate::ValidatedBatch;

mod flush;
mod header;
pub mod txn;
pub use flush::FlushPlan;
use header::header_of;
pub(crate) use header::{rebased, validated_header};
pub use txn::AbortedTxnRef;

/// Name of the leader-epoch checkpoint inside a partition directory.
pub const LEADER_EPOCH_FILE: &str = "leader-epoch-checkpoint";

/// Where a load starts from, as read from the log dir's checkpoints.
#[derive(Clone, Copy, Debug)]
pub struct LogOpenOptions {
    pub recovery_point: i64,
    pub log_start_offset: i64,
    pub high_watermark: i64,
    /// Whether the log dir held the clean-shutdown marker.
    pub clean_shutdown: bool,
    pub now_ms: i64,
}

/// What loading did, for logs and tests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadReport {
    /// Corruption handling (issue 12): offset ranges recovery found damaged and quarantined
    /// (their bytes moved to `.corrupt` files), and the `.corrupt` files written.
    pub quarantined: Vec<crate::integrity::quarantine::QuarantinedRange>,
    pub corrupt_files: Vec<PathBuf>,
    pub segments: usize,
    pub recovered_segments: usize,
    pub rebuilt_indexes: usize,
    pub truncated_bytes: u64,
    pub deleted_segments: usize,
    /// compaction (issue 7): interrupted cleaner swaps completed on load.
    pub rolled_forward_swaps: usize,
}

/// The result of one append.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AppendInfo {
    pub base_offset: i64,
    pub last_offset: i64,
    pub max_timestamp: i64,
    pub record_count: i32,
    pub size: usize,
    /// Durable mode: the caller must `sync().sync_to(last_offset + 1)` before acknowledging.
    pub needs_sync: bool,
    /// An idempotent retry of an appended batch: nothing was appended, the offsets and
    /// `max_timestamp` are the original batch's.
    pub duplicate: bool,
}

/// One partition's log.
#[derive(Debug)]
pub struct Log {
    pub(crate) dir: PathBuf,
    pub(crate) tp: TopicPartition,
    pub(crate) config: LogConfig,
    pub(crate) segments: BTreeMap<i64, LogSegment>,
    pub(crate) log_start_offset: i64,
    pub(crate) log_end_offset: i64,
    pub(crate) recovery_point: i64,
    pub(crate) high_watermark: i64,
    pub(crate) epochs: LeaderEpochCache,
    pub(crate) sync: Arc<SyncState>,
    pub(crate) unflushed_messages: i64,
    pub(crate) last_flush_ms: i64,
    pub(crate) pending_deletes: Vec<(i64, Vec<PathBuf>)>,
    pub(crate) producers: PartitionProducers,
    // delivery delay (issue 8)
    pub(crate) delivery: crate::delivery::PendingDeliveries,
    /// Set (under the log's lock) by `LogManager::delete`: the files are gone or going, and a
    /// new log may take the same directory name; nothing may write through this one again.
    pub(crate) deleted: bool,
    /// Corruption handling (issue 12): quarantined ranges and scrub progress.
    pub(crate) integrity: parking_lot::Mutex<crate::integrity::Integrity>,
    /// issue 12: the health of the log dir holding this log (see [`crate::log_guard`]).
    pub(crate) health: Arc<crate::log_dir::LogDirHealth>,
}

impl Log {
    pub fn topic_partition(&self) -> &TopicPartition {
        &self.tp
    }
    /// Whether the partition was deleted (see `LogManager::delete`).
    pub fn is_deleted(&self) -> bool {
        self.deleted
    }
    pub fn dir(&self) -> &Path {
        &self.dir
    }
    pub fn config(&self) -> &LogConfig {
        &self.config
    }
    pub fn log_start_offset(&self) -> i64 {
        self.log_start_offset
    }
    pub fn log_end_offset(&self) -> i64 {
        self.log_end_offset
    }
    pub fn high_watermark(&self) -> i64 {
        self.high_watermark
    }
    /// Offsets below this are known to be fsynced.
    pub fn recovery_point(&self) -> i64 {
        self.recovery_point
            .max(self.sync.synced().min(self.log_end_offset))
    }
    pub fn leader_epochs(&self) -> &LeaderEpochCache {
        &self.epochs
    }

    /// A new leader records `(epoch, log end)` in its epoch cache before its first append
    /// (Kafka's `makeLeader`), so OffsetForLeaderEpoch and a follower's divergence check see
    /// the epoch at once. An epoch not newer than the latest recorded changes nothing.
    pub fn assign_epoch_start(&mut self, epoch: i32) -> Result<()> {
        let leo = self.log_end_offset;
        if epoch >= 0 && self.epochs.latest_epoch().is_none_or(|e| epoch > e) {
            self.epochs.assign(epoch, leo);
            // Durable when the file already held entries; a first entry is written unsynced
            // (the cache is rebuilt from the batch headers), as after an append.
            self.epochs
                .flush_after_append()
                .at(&self.dir.join(LEADER_EPOCH_FILE))?;
        }
        Ok(())
    }

    pub fn sync(&self) -> &Arc<SyncState> {
        &self.sync
    }
    pub fn segment_count(&self) -> usize {
        self.segments.len()
    }
    pub fn segments(&self) -> impl Iterator<Item = &LogSegment> {
        self.segments.values()
    }
    /// Total bytes of all segments' data files.
    pub fn size_bytes(&self) -> u64 {
        self.segments.values().map(LogSegment::size).sum()
    }

    pub(crate) fn active(&self) -> &LogSegment {
        match self.segments.values().next_back() {
            Some(s) => s,
            None => unreachable!("a log always has an active segment"),
        }
    }

    pub(crate) fn active_mut(&mut self) -> &mut LogSegment {
        match self.segments.values_mut().next_back() {
            Some(s) => s,
            None => unreachable!("a log always has an active segment"),
        }
    }

    pub(crate) fn segment_options(&self, base_offset: i64, now_ms: i64) -> SegmentOptions {
        let jitter = if self.config.segment_jitter_ms > 0 {
            // Deterministic per segment: spreads rolls without a random source.
            (base_offset.unsigned_abs() as i64 ^ 0x5DEE_CE66D)
                .rem_euclid(self.config.segment_jitter_ms)
        } else {
            0
        };
        SegmentOptions {
            index_interval_bytes: self.config.index_interval_bytes,
            max_index_bytes: self.config.segment_index_bytes,
            roll_jitter_ms: jitter,
            now_ms,
        }
    }

    /// Replaces the config (dynamic topic config change). Takes effect on the next operation.
    pub fn update_config(&mut self, config: LogConfig) {
        // delivery delay (issue 8): switching the feature off releases every waiting batch
        // for good (switching it on again does not withhold what consumers could read).
        if self.config.delivery_delay_enable && !config.delivery_delay_enable {
            self.delivery.clear();
        }
        self.config = config;
    }

    /// Base offset of the batch holding `offset` (`offset` itself when no batch does, e.g. at
    /// the log end or on a read error).
    pub(crate) fn batch_base_containing(&self, offset: i64) -> i64 {
        self.segments
            .range(..=offset)
            .next_back()
            .and_then(|(_, seg)| seg.translate_offset(offset).ok().flatten())
            .map_or(offset, |h| h.base_offset.min(offset))
    }

    /// Sets the high watermark, clamped to `[log_start_offset, log_end_offset]`. It never moves
    /// backwards except by truncation.
    pub fn set_high_watermark(&mut self, hw: i64) {
        self.high_watermark = hw.clamp(self.log_start_offset, self.log_end_offset);
        // transactions: completed ones whose marker the HW passed are stable now
        self.producers
            .state
            .on_high_watermark_updated(self.high_watermark);
    }

    /// Appends a validated client batch as leader: assigns `baseOffset = log end offset` and
    /// stamps `leader_epoch`, both in place (outside the CRC). A batch with a producer id is
    /// first checked against the producer state: a retry of one of the producer's last 5
    /// batches appends nothing and answers `duplicate: true` with the original offsets; a
    /// sequence or epoch violation is `StorageError::Producer`.
    pub(crate) fn append_as_leader_unguarded(
        &mut self,
        batch: &mut [u8],
        leader_epoch: i32,
        now_ms: i64,
    ) -> Result<AppendInfo> {
        let header = header_of(batch)?;
        let marker = self.check_leader_marker(&header, batch)?; // transactions (issue 18)
        if let Check::Duplicate(d) = self.check_producer_header(&header)? {
            return Ok(self.duplicate(&d, header.records_count));
        }
        let base = self.log_end_offset;
        skiff_record::set_base_offset(batch, base);
        skiff_record::set_partition_leader_epoch(batch, leader_epoch);
        let header = rebased(&header, base, leader_epoch)?;
        self.append_split(&header, batch, &[], marker.as_ref(), now_ms)
    }

    /// [`Log::append_as_leader`] for the output of
    /// [`validate_client_batch`](crate::validate::validate_client_batch), without copying it:
    /// the 61-byte header is copied and stamped with the base offset and `leader_epoch`, then
    /// written together with the (borrowed) records section in one `pwritev`.
    pub(crate) fn append_validated_unguarded(
        &mut self,
        batch: &ValidatedBatch<'_>,
        leader_epoch: i32,
        now_ms: i64,
    ) -> Result<AppendInfo> {
        let mut bytes = batch.header;
        let body: &[u8] = &batch.body;
        let header = validated_header(&bytes, body.len())?;
        if let Check::Duplicate(d) = self.check_producer_header(&header)? {
            return Ok(self.duplicate(&d, header.records_count));
        }
        let base = self.log_end_offset;
        skiff_record::set_base_offset(&mut bytes, base);
        skiff_record::set_partition_leader_epoch(&mut bytes, leader_epoch);
        let header = rebased(&header, base, leader_epoch)?;
        let info = self.append_split(&header, &bytes, body, None, now_ms)?;
        // delivery delay (issue 8)
        if let Some(due) = batch.deliver_after_ms {
            self.record_delayed_batch(&info, due)?;
        }
        Ok(info)
    }

    /// The answer to an idempotent retry: the original batch's placement, nothing appended.
    pub(crate) fn duplicate(&self, d: &DuplicateBatch, records_count: i32) -> AppendInfo {
        AppendInfo {
            base_offset: d.first_offset,
            last_offset: d.last_offset,
            max_timestamp: d.timestamp,
            record_count: records_count.max(0),
            size: 0,
            needs_sync: self.config.is_durable(),
            duplicate: true,
        }
    }

    /// Appends a batch whose offsets were assigned by a leader (replication, tests).
    /// Its base offset must be at or past the log end.
    pub(crate) fn append_as_follower_unguarded(
        &mut self,
        batch: &[u8],
        now_ms: i64,
    ) -> Result<AppendInfo> {
        let header = header_of(batch)?;
        let due = self.follower_delivery_due(batch, now_ms); // delivery delay (issue 8)
        let marker = self.follower_marker(&header, batch); // transactions (issue 18)
        let info = self.append_split(&header, batch, &[], marker.as_ref(), now_ms)?;
        if let Some(due) = due {
            self.record_delayed_batch(&info, due)?;
        }
        Ok(info)
    }

    /// Appends the batch `head ++ tail` described by `header` (offsets assigned); `marker` is
    /// a control batch's parsed transaction marker.
    fn append_split(
        &mut self,
        header: &BatchHeader,
        head: &[u8],
        tail: &[u8],
        marker: Option<&EndTxnMarker>,
        now_ms: i64,
    ) -> Result<AppendInfo> {
        let size = head.len() + tail.len();
        self.check_append(header, size)?;
        self.maybe_roll(
            size as u64,
            header.max_timestamp,
            header.base_offset,
            header.last_offset,
            now_ms,
        )?;
        self.active_mut()
            .append_split(head, tail, header.last_offset, header.max_timestamp)?;
        let info = self.finish_append_marker(header, size, marker)?;
        self.publish_log_end();
        Ok(info)
    }

    /// The checks before a batch of `size` bytes described by `header` is written.
    pub(crate) fn check_append(&self, header: &BatchHeader, size: usize) -> Result<()> {
        let base = header.base_offset;
        if base < self.log_end_offset {
            return Err(StorageError::InvalidArgument(format!(
                "batch base offset {base} is below the log end offset {}",
                self.log_end_offset
            )));
        }
        if size as u64 > self.config.segment_bytes {
            return Err(StorageError::RecordListTooLarge {
                size,
                segment_bytes: self.config.segment_bytes,
            });
        }
        Ok(())
    }

    /// The in-memory half of an append, after the segment took the batch: the epoch cache,
    /// the log end, the producer state.
    pub(crate) fn finish_append(
        &mut self,
        header: &BatchHeader,
        size: usize,
    ) -> Result<AppendInfo> {
        self.finish_append_marker(header, size, None)
    }

    /// [`Self::finish_append`] of a batch whose transaction marker (if a control batch) was
    /// parsed already.
    pub(crate) fn finish_append_marker(
        &mut self,
        header: &BatchHeader,
        size: usize,
        marker: Option<&EndTxnMarker>,
    ) -> Result<AppendInfo> {
        let base = header.base_offset;
        let last = header.last_offset;
        // LogAppendTime batches carry the append time in maxTimestamp, CreateTime ones the
        // largest record timestamp: either way the header field is the batch's timestamp.
        let max_ts = header.max_timestamp;
        let epoch = header.partition_leader_epoch;
        if epoch >= 0 && self.epochs.latest_epoch().is_none_or(|e| epoch > e) {
            self.epochs.assign(epoch, base);
            self.epochs
                .flush_after_append()
                .at(&self.dir.join(LEADER_EPOCH_FILE))?;
        }
        self.log_end_offset = last + 1;
        self.record_producer_batch(header, base, last, marker)?;
        let records = header.records_count.max(0);
        self.unflushed_messages += i64::from(records);
        let durable = self.config.is_durable();
        Ok(AppendInfo {
            base_offset: base,
            last_offset: last,
            max_timestamp: max_ts,
            record_count: records,
            size,
            needs_sync: durable,
            duplicate: false,
        })
    }

    /// Tells the group-commit state (and so fsyncs outside the lock) the new log end: only
    /// once the bytes below it are written.
    pub(crate) fn publish_log_end(&self) {
        self.sync.publish(self.active().file(), self.log_end_offset);
    }

    fn maybe_roll(
        &mut self,
        incoming: u64,
        max_ts: i64,
        base: i64,
        last: i64,
        now_ms: i64,
    ) -> Result<()> {
        if self.roll_needed(incoming, max_ts, base, last, now_ms) {
            self.roll_at(base, now_ms)?;
        }
        Ok(())
    }

    /// Whether a batch of `incoming` bytes at `base..=last` must go to a new segment.
    pub(crate) fn roll_needed(
        &self,
        incoming: u64,
        max_ts: i64,
        base: i64,
        last: i64,
        now_ms: i64,
    ) -> bool {
        let params = RollParams {
            segment_bytes: self.config.segment_bytes,
            segment_ms: self.config.segment_ms,
            incoming_bytes: incoming,
            incoming_max_timestamp: max_ts,
            incoming_last_offset: last,
            now_ms,
        };
        let active = self.active();
        let must_roll = active.should_roll(&params)
            // A gap bigger than the relative offset range also needs a new segment.
            || base - active.base_offset() > i64::from(i32::MAX);
        must_roll && (active.size() > 0 || active.base_offset() != base)
    }

    /// Rolls a new active segment at the log end offset.
    pub(crate) fn roll_unguarded(&mut self, now_ms: i64) -> Result<()> {
        let base = self.log_end_offset;
        if self.active().size() == 0 && self.active().base_offset() == base {
            return Ok(());
        }
        self.roll_at(base, now_ms)
    }

    pub(crate) fn roll_at(&mut self, new_base: i64, now_ms: i64) -> Result<()> {
        if self.segments.contains_key(&new_base) {
            // Only an empty active segment can sit at the log end; reuse it.
            return Ok(());
        }
        let durable = self.config.is_durable();
        {
            let old = self.active_mut();
            old.on_become_inactive()?;
            if durable {
                old.flush()?;
            }
        }
        let opts = self.segment_options(new_base, now_ms);
        let seg = LogSegment::open(&self.dir, new_base, opts, true)?;
        if durable {
            fsync_dir(&self.dir)?;
            self.sync.mark_synced(self.log_end_offset);
            self.recovery_point = self.recovery_point.max(self.log_end_offset);
        }
        let file = Arc::clone(seg.file());
        self.segments.insert(new_base, seg);
        self.sync.publish(&file, self.log_end_offset);
        self.snapshot_producers_on_roll(new_base)?;
        tracing::debug!(tp = %self.tp, base = new_base, "rolled new segment");
        Ok(())
    }

    /// Removes everything at offsets ≥ `offset` (replica truncation). A batch containing
    /// `offset` is removed whole, so the new log end can be below `offset`.
    pub(crate) fn truncate_to_unguarded(&mut self, offset: i64) -> Result<()> {
        if offset >= self.log_end_offset {
            // Nothing to cut but an epoch that starts at the log end (a leader that wrote
            // nothing in it): Kafka's `truncateTo` drops it from the epoch cache too.
            if offset == self.log_end_offset
                && self
                    .epochs
                    .latest_entry()
                    .is_some_and(|e| e.start_offset >= offset)
            {
                self.epochs.truncate_from_end(offset);
                self.epochs.flush().at(&self.dir.join(LEADER_EPOCH_FILE))?;
            }
            return Ok(());
        }
        let first_base = self.segments.keys().next().copied().unwrap_or(0);
        if offset < first_base {
            return self.truncate_fully_and_start_at(offset);
        }
        let doomed: Vec<i64> = self.segments.range(offset + 1..).map(|(b, _)| *b).collect();
        for base in doomed {
            if let Some(mut seg) = self.segments.remove(&base) {
                let paths = seg.rename_with_suffix(DELETED_SUFFIX)?;
                remove_files(&paths);
            }
        }
        let new_end = {
            let active = self.active_mut();
            active.truncate_to(offset)?;
            let mut end = active.base_offset();
            let start = u64::from(active.offset_index().last_entry().1);
            let mut scan = active.headers_from(start);
            while let Some(h) = scan.next_header().at(active.log_path())? {
                end = h.next_offset();
            }
            end
        };
        self.log_end_offset = new_end;
        let max_index = self.config.segment_index_bytes;
        self.active_mut().make_active(max_index)?;
        self.truncate_producer_state()?;
        self.after_truncation()
    }

    /// Deletes every segment and restarts the log empty at `offset`.
    pub(crate) fn truncate_fully_and_start_at_unguarded(&mut self, offset: i64) -> Result<()> {
        let bases: Vec<i64> = self.segments.keys().copied().collect();
        for base in bases {
            if let Some(mut seg) = self.segments.remove(&base) {
                let paths = seg.rename_with_suffix(DELETED_SUFFIX)?;
                remove_files(&paths);
            }
        }
        let opts = self.segment_options(offset, 0);
        let seg = LogSegment::open(&self.dir, offset, opts, true)?;
        self.segments.insert(offset, seg);
        self.log_start_offset = offset;
        self.log_end_offset = offset;
        self.reset_producer_state(offset);
        self.epochs.clear();
        self.epochs.flush().at(&self.dir.join(LEADER_EPOCH_FILE))?;
        self.after_truncation()
    }

    pub(crate) fn after_truncation(&mut self) -> Result<()> {
        let end = self.log_end_offset;
        self.delivery.truncate_from(end); // delivery delay (issue 8)
        self.epochs.truncate_from_end(end);
        self.epochs.flush().at(&self.dir.join(LEADER_EPOCH_FILE))?;
        self.recovery_point = self.recovery_point.min(end);
        self.high_watermark = self.high_watermark.clamp(self.log_start_offset, end);
        self.log_start_offset = self.log_start_offset.min(end);
        self.prune_quarantine(); // issue 12
        let file = Arc::clone(self.active().file());
        self.sync.publish(&file, end);
        // Re-appended records below the old synced end must be fsynced again.
        self.sync.truncated(end);
        Ok(())
    }

    /// DeleteRecords: moves the log start offset up to `offset` (`-1` = the high watermark).
    /// Returns the new log start offset. Whole segments below it go at the next retention pass.
    pub fn delete_records(&mut self, offset: i64) -> Result<i64, DeleteRecordsError> {
        if !self.config.cleanup_policy_delete {
            return Err(DeleteRecordsError::PolicyViolation);
        }
        let target = if offset == -1 {
            self.high_watermark
        } else {
            offset
        };
        if target < 0 || target > self.high_watermark {
            return Err(DeleteRecordsError::OffsetOutOfRange {
                offset,
                high_watermark: self.high_watermark,
            });
        }
        if target > self.log_start_offset {
            self.log_start_offset = target;
            // delivery delay (issue 8): a waiting batch that `target` cuts into keeps waiting
            // (its offsets from `target` on are still readable).
            let base = self.batch_base_containing(target);
            self.delivery.drop_below(base);
            self.producer_state_on_log_start();
            self.epochs.truncate_from_start(target);
            self.epochs
                .flush()
                .at(&self.dir.join(LEADER_EPOCH_FILE))
                .map_err(DeleteRecordsError::Storage)?;
        }
        Ok(self.log_start_offset)
    }

    /// Facts retention decides on, in offset order.
    pub fn segment_facts(&self) -> Vec<SegmentFacts> {
        let bases: Vec<i64> = self.segments.keys().copied().collect();
        self.segments
            .values()
            .enumerate()
            .map(|(i, s)| SegmentFacts {
                base_offset: s.base_offset(),
                size: s.size(),
                largest_timestamp: s.largest_timestamp(),
                upper_bound: bases.get(i + 1).copied().unwrap_or(self.log_end_offset),
            })
            .collect()
    }

    /// Runs one retention pass. `max_removable_offset` is the delayed-delivery bound (or
    /// `i64::MAX`). Returns the number of segments deleted.
    pub(crate) fn apply_retention_unguarded(
        &mut self,
        now_ms: i64,
        max_removable_offset: i64,
    ) -> Result<usize> {
        // transactions (issue 18): never past the first unstable offset
        let max_removable_offset = self
            .first_unstable_offset()
            .map_or(max_removable_offset, |f| f.min(max_removable_offset));
        let facts = self.segment_facts();
        let decision = retention::decide(
            &facts,
            &RetentionInput {
                now_ms,
                high_watermark: self.high_watermark,
                log_start_offset: self.log_start_offset,
                retention_ms: self.config.retention_ms,
                retention_bytes: self.config.retention_bytes,
                policy_delete: self.config.cleanup_policy_delete,
                max_removable_offset,
            },
        );
        if decision.count == 0 {
            return Ok(0);
        }
        if decision.count == facts.len() {
            // Everything is deletable: roll an empty active segment first (spec §2.6).
            if self.active().size() == 0 {
                if decision.count == 1 {
                    return Ok(0);
                }
            } else {
                self.roll(now_ms)?;
            }
        }
        let doomed: Vec<i64> = facts
            .iter()
            .take(decision.count)
            .map(|f| f.base_offset)
            .collect();
        let mut deleted = 0;
        for base in doomed {
            if self.segments.len() <= 1 {
                break;
            }
            if let Some(mut seg) = self.segments.remove(&base) {
                let paths = seg.rename_with_suffix(DELETED_SUFFIX)?;
                self.pending_deletes.push((
                    now_ms.saturating_add(self.config.file_delete_delay_ms),
                    paths,
                ));
                deleted += 1;
            }
        }
        let first = self
            .segments
            .keys()
            .next()
            .copied()
            .unwrap_or(self.log_end_offset);
        if first > self.log_start_offset {
            self.log_start_offset = first;
            self.delivery.drop_below(first); // delivery delay (issue 8): a segment base
            self.producer_state_on_log_start();
            self.epochs.truncate_from_start(first);
            self.epochs.flush().at(&self.dir.join(LEADER_EPOCH_FILE))?;
        }
        self.prune_quarantine(); // issue 12: ranges of deleted segments go with them
        tracing::info!(tp = %self.tp, deleted, reason = ?decision.reason, log_start = self.log_start_offset, "retention deleted segments");
        self.delete_expired_files(now_ms);
        Ok(deleted)
    }

    /// Physically deletes `.deleted` files whose delay has passed.
    pub fn delete_expired_files(&mut self, now_ms: i64) {
        self.pending_deletes.retain(|(due, paths)| {
            if *due <= now_ms {
                remove_files(paths);
                false
            } else {
                true
            }
        });
    }

    /// Flushes everything (recovery point = log end offset).
    pub(crate) fn flush_unguarded(&mut self, now_ms: i64) -> Result<()> {
        crate::flush_times::FLUSH_TIMES.time(|| self.flush_segments())?;
        self.recovery_point = self.log_end_offset;
        self.sync.mark_synced(self.log_end_offset);
        self.unflushed_messages = 0;
        self.last_flush_ms = now_ms;
        Ok(())
    }

    /// The fdatasyncs of a flush: inactive segments not yet flushed, then the active one.
    fn flush_segments(&mut self) -> Result<()> {
        if let Some(plan) = self.inactive_flush_plan() {
            plan.execute().at(&self.dir)?;
            self.complete_flush(&plan);
        }
        self.active_mut().flush()
    }

    /// Orderly close: final index entries, trimmed indexes, everything flushed.
    pub(crate) fn close_unguarded(&mut self, now_ms: i64) -> Result<()> {
        self.active_mut().on_become_inactive()?;
        self.flush(now_ms)?;
        self.snapshot_producers_on_close()?;
        self.epochs.flush().at(&self.dir.join(LEADER_EPOCH_FILE))?;
        Ok(())
    }
}

/// Errors of [`Log::delete_records`].
#[derive(Debug, thiserror::Error)]
pub enum DeleteRecordsError {
    #[error("the topic's cleanup.policy does not include delete")]
    PolicyViolation,
    #[error("offset {offset} is above the high watermark {high_watermark} or negative")]
    OffsetOutOfRange { offset: i64, high_watermark: i64 },
    #[error(transparent)]
    Storage(StorageError),
}

pub(crate) fn fsync_dir(dir: &Path) -> Result<()> {
    std::fs::File::open(dir).and_then(|d| d.sync_all()).at(dir)
}

pub(crate) fn remove_files(paths: &[PathBuf]) {
    for p in paths {
        if let Err(e) = std::fs::remove_file(p)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(path = %p.display(), error = %e, "could not delete file");
        }
    }
}
