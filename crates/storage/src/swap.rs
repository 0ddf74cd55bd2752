//! The segment-swap API the log cleaner builds on (compaction, issue 7; spec §3.1 "Swap", §2.8
//! step 1), and the `cleaner-offset-checkpoint` file.
//!
//! Mental model: the cleaner never mutates a live segment. Under the partition lock it takes a
//! [`CleanView`] (segment files as `Arc<File>` + sizes, offsets, producers' last batches), reads
//! and filters without the lock, writes each output group to a [`CleanedSegment`]
//! (`<base>.log.cleaned` + its indexes, fsynced by [`CleanedSegment::finish`]), then takes the
//! lock again for [`Log::replace_segments`], which only renames:
//! 1. `.cleaned` -> `.swap` (all files of the new segment), fsync the directory;
//! 2. each replaced segment -> `.deleted` (deleted after `file.delete.delay.ms`: in-flight
//!    `FileSlice`s keep their `Arc<File>` and stay readable anyway);
//! 3. `.swap` -> final names, fsync the directory, the new segment enters the segment map.
//!
//! Recovery ([`roll_forward_swaps`], run first by `Log::open`): a `<base>.log.swap` is complete
//! (it was fsynced before step 1), so it wins: every original segment whose base lies in
//! `[base, last offset of the swap]` is deleted, the swap's index files are dropped (they are
//! rebuilt) and the `.swap` suffix is stripped. Every `.cleaned` file and any other `.swap`
//! file is deleted. So after a crash at any point the log is wholly old or wholly new: before
//! step 1 completes for the data file, old; after, new. The cleaner keeps the last batch of
//! every group (empty if need be) so the swap's last offset covers all segments it replaces.
//!
//! An I/O error in step 1 deletes the new files and leaves the log as it was; an error in
//! steps 2-3 leaves the in-memory log short of the renamed segments until the next start,
//! which rolls the swap forward (Kafka takes the log dir offline in that case).
//!
//! Transactions (issue 18): the view also carries the first unstable offset, every segment's
//! `.txnindex` entries and the epochs of producers whose last entry is a marker; a cleaned
//! segment's `.txnindex` is what the cleaner wrote ([`CleanedSegment::write_txn_index`], even
//! empty), else the replaced segments' entries, carried over by the swap.
//!
//! Invariant: `replace_segments` refuses (returns `Ok(false)`) unless every replaced segment is
//! still in the log with the same file and size it had in the view, so a concurrent retention
//! pass, truncation or delete never races with a swap. Offsets never change: the cleaned
//! segment holds a subset of the replaced batches (or emptied copies) at their offsets.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use skiff_types::TopicPartition;

use crate::checkpoint::OffsetCheckpointFile;
use crate::config::LogConfig;
use crate::error::{IoContext, Result, StorageError};
use crate::log::{Log, fsync_dir, remove_files};
use crate::segment::scan::{BatchHeader, BatchReader, HeaderScanner};
use crate::segment::txn_index::AbortedTxn;
use crate::segment::{
    DELETED_SUFFIX, LOG_SUFFIX, LogSegment, SEGMENT_FILE_SUFFIXES, SegmentOptions,
    parse_base_offset, segment_file, segment_file_paths,
};

/// Suffix of a cleaner output segment being written.
pub const CLEANED_SUFFIX: &str = ".cleaned";
/// Suffix of a complete cleaner output segment being swapped in.
pub const SWAP_SUFFIX: &str = ".swap";
/// Per log dir: `<topic> <partition> <first dirty offset>` (Kafka's name and text format).
pub const CLEANER_OFFSET_CHECKPOINT: &str = "cleaner-offset-checkpoint";

/// One segment as the cleaner sees it.
#[derive(Clone, Debug)]
pub struct SegmentRef {
    pub base_offset: i64,
    /// The next segment's base offset, or the log end offset for the last one.
    pub upper_bound: i64,
    pub file: Arc<File>,
    pub size: u64,
    /// Index bytes of the segment (offset index entries * 8), for group sizing.
    pub index_bytes: u64,
    /// Kafka's `largestTimestamp` (max record timestamp, else the file mtime).
    pub largest_timestamp: i64,
    /// The first batch's max timestamp, if any (max.compaction.lag.ms).
    pub first_batch_timestamp: Option<i64>,
}

impl SegmentRef {
    /// Iterates the segment's batch headers (then read whole batches with [`read_batch`]).
    pub fn headers(&self) -> HeaderScanner<'_> {
        HeaderScanner::new(&self.file, 0, self.size)
    }

    /// Iterates the segment's whole batches (chunked reads, header + bytes).
    pub fn batches(&self) -> BatchReader<'_> {
        BatchReader::new(&self.file, 0, self.size)
    }
}

/// Reads one whole batch described by `h` from `file`.
pub fn read_batch(file: &File, h: &BatchHeader) -> std::io::Result<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; h.size as usize];
    file.read_exact_at(&mut buf, h.position)?;
    Ok(buf)
}

/// What the cleaner needs to know about one log, taken under its lock.
#[derive(Clone, Debug)]
pub struct CleanView {
    pub tp: TopicPartition,
    pub dir: PathBuf,
    pub config: LogConfig,
    pub log_start_offset: i64,
    pub log_end_offset: i64,
    pub high_watermark: i64,
    pub active_base: i64,
    /// Every segment, the active one last.
    pub segments: Vec<SegmentRef>,
    /// `(producer id, last offset of its last batch)` of every known producer.
    pub producer_last_batches: Vec<(i64, i64)>,
    /// delivery delay (issue 8): the delivery stable offset when the view was taken (`None`:
    /// nothing waits or the feature is off), read under the same lock as the rest, so a
    /// delayed batch appended after the view is above `high_watermark` anyway.
    pub delivery_stable_offset: Option<i64>,
    /// transactions (issue 18): [`Log::first_unstable_offset`] when the view was taken; the
    /// cleaner never cleans at or past it (Kafka's cleanable range stops at the LSO).
    pub first_unstable_offset: Option<i64>,
    /// Every segment's `.txnindex` entries (aborted transactions), in marker order.
    pub aborted_txns: Vec<AbortedTxn>,
    /// `(producer id, epoch)` of known producers without a remembered data batch (their last
    /// entry is a transaction marker, whose epoch fences): the cleaner keeps such a marker
    /// (Kafka's `isBatchLastRecordOfProducer`, case 3).
    pub producer_marker_epochs: Vec<(i64, i16)>,
}

/// Steps of [`Log::replace_segments`], for crash tests: the hook sees each step after it is
/// done and returns `false` to stop there as if the process died (nothing is undone).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SwapStep {
    /// The new segment's files are all `.swap`.
    Swapped,
    /// The `i`th replaced segment was renamed `.deleted`.
    OldDeleted(usize),
    /// The new segment has its final names.
    Done,
}

/// A cleaner output segment being written (`<base>.log.cleaned` and its indexes).
#[derive(Debug)]
pub struct CleanedSegment {
    dir: PathBuf,
    seg: LogSegment,
    last_offset: Option<i64>,
    /// The cleaner wrote the `.txnindex` itself ([`CleanedSegment::write_txn_index`]): the
    /// swap does not carry the replaced segments' entries over.
    txn_index_written: bool,
}

impl CleanedSegment {
    /// Creates empty `.cleaned` files for a segment at `base_offset` (any leftovers replaced).
    pub fn create(dir: &Path, base_offset: i64, config: &LogConfig, now_ms: i64) -> Result<Self> {
        remove_files(&segment_file_paths(dir, base_offset, CLEANED_SUFFIX));
        let opts = SegmentOptions {
            index_interval_bytes: config.index_interval_bytes,
            max_index_bytes: config.segment_index_bytes,
            roll_jitter_ms: 0,
            now_ms,
        };
        let seg = LogSegment::open_with_suffix(dir, base_offset, opts, true, CLEANED_SUFFIX)?;
        Ok(Self {
            dir: dir.to_path_buf(),
            seg,
            last_offset: None,
            txn_index_written: false,
        })
    }

    pub fn base_offset(&self) -> i64 {
        self.seg.base_offset()
    }
    pub fn size(&self) -> u64 {
        self.seg.size()
    }
    /// Last offset of the last appended batch.
    pub fn last_offset(&self) -> Option<i64> {
        self.last_offset
    }

    /// Appends one whole, valid batch; its offsets must follow the previous batch's.
    pub fn append(&mut self, batch: &[u8]) -> Result<()> {
        let h = BatchHeader::parse(0, batch)
            .filter(|h| h.size as usize == batch.len())
            .ok_or_else(|| StorageError::InvalidArgument("cleaner output batch is torn".into()))?;
        if self.last_offset.is_some_and(|l| h.base_offset <= l)
            || h.base_offset < self.base_offset()
        {
            return Err(StorageError::InvalidArgument(format!(
                "cleaner output batch at {} is out of order",
                h.base_offset
            )));
        }
        self.seg.append(batch, h.last_offset, h.max_timestamp)?;
        self.last_offset = Some(h.last_offset);
        Ok(())
    }

    /// Sets the segment's `.txnindex` to `entries` (the aborted transactions whose ABORT marker
    /// the cleaned segment keeps and whose data it may still hold; marker order, strictly
    /// increasing). Once called, even with no entries, the swap keeps exactly these instead of
    /// carrying the replaced segments' entries over. Flushed by [`CleanedSegment::finish`].
    pub fn write_txn_index(&mut self, entries: Vec<AbortedTxn>) -> Result<()> {
        let in_order = entries
            .windows(2)
            .all(|w| w[0].last_offset < w[1].last_offset)
            && entries.iter().all(|e| e.first_offset <= e.last_offset);
        if !in_order {
            return Err(StorageError::InvalidArgument(
                "cleaner .txnindex entries out of order".into(),
            ));
        }
        let idx = self.seg.txn_index_mut();
        idx.rewrite(entries).at(idx.path())?;
        self.txn_index_written = true;
        Ok(())
    }

    /// Final index entries, trimmed indexes, everything fsynced, mtime set to `mtime` (the
    /// last replaced segment's, as Kafka does). Call without the log lock.
    pub fn finish(&mut self, mtime: Option<std::time::SystemTime>) -> Result<()> {
        self.seg.on_become_inactive()?;
        self.seg.flush()?;
        if let Some(t) = mtime {
            // Best effort: only segments without timestamps use the mtime.
            let _ = self.seg.file().set_modified(t);
        }
        Ok(())
    }

    /// Deletes the `.cleaned` files (an aborted clean).
    pub fn discard(self) {
        let paths = segment_file_paths(&self.dir, self.seg.base_offset(), CLEANED_SUFFIX);
        drop(self.seg);
        remove_files(&paths);
    }
}

impl Log {
    /// The cleaner's view of this log (cheap: `Arc`s and numbers).
    pub fn clean_view(&self) -> Result<CleanView> {
        // (Result kept for views that will need I/O, e.g. delayed delivery's side files.)
        let bases: Vec<i64> = self.segments.keys().copied().collect();
        let mut segments = Vec::with_capacity(bases.len());
        for (i, s) in self.segments.values().enumerate() {
            segments.push(SegmentRef {
                base_offset: s.base_offset(),
                upper_bound: bases.get(i + 1).copied().unwrap_or(self.log_end_offset),
                file: Arc::clone(s.file()),
                size: s.size(),
                index_bytes: s.offset_index().entries() as u64 * 8,
                largest_timestamp: s.largest_timestamp(),
                first_batch_timestamp: s.first_batch_max_timestamp(),
            });
        }
        let producer_last_batches = self
            .producers
            .state
            .entries()
            .into_iter()
            .filter(|e| e.last_data_offset() >= 0)
            .map(|e| (e.producer_id, e.last_data_offset()))
            .collect();
        Ok(CleanView {
            tp: self.tp.clone(),
            dir: self.dir.clone(),
            config: self.config.clone(),
            log_start_offset: self.log_start_offset,
            log_end_offset: self.log_end_offset,
            high_watermark: self.high_watermark,
            active_base: self.active().base_offset(),
            segments,
            producer_last_batches,
            delivery_stable_offset: if self.config.delivery_delay_enable {
                self.delivery.stable_offset()
            } else {
                None
            },
            first_unstable_offset: self.first_unstable_offset(),
            aborted_txns: self
                .segments
                .values()
                .flat_map(|s| s.txn_index().entries().iter().copied())
                .collect(),
            producer_marker_epochs: self
                .producers
                .state
                .entries()
                .into_iter()
                .filter(|e| e.last_data_offset() < 0 && e.epoch >= 0)
                .map(|e| (e.producer_id, e.epoch))
                .collect(),
        })
    }

    /// Swaps `cleaned` (finished) in for `replaced` (consecutive segments of a [`CleanView`],
    /// the first at `cleaned`'s base). Returns `Ok(false)`, discarding `cleaned`, if the log
    /// changed since the view. See the module doc for the steps.
    pub fn replace_segments(
        &mut self,
        cleaned: CleanedSegment,
        replaced: &[SegmentRef],
        now_ms: i64,
    ) -> Result<bool> {
        self.replace_segments_with_hook(cleaned, replaced, now_ms, &mut |_| true)
    }

    /// [`Log::replace_segments`] with a crash-test hook (see [`SwapStep`]).
    pub fn replace_segments_with_hook(
        &mut self,
        mut cleaned: CleanedSegment,
        replaced: &[SegmentRef],
        now_ms: i64,
        hook: &mut dyn FnMut(SwapStep) -> bool,
    ) -> Result<bool> {
        let active_base = self.active().base_offset();
        // A deleted partition's directory may already hold a new log of the same name.
        let unchanged = !self.deleted
            && !replaced.is_empty()
            && replaced[0].base_offset == cleaned.base_offset()
            && replaced.iter().all(|r| {
                r.base_offset < active_base
                    && self
                        .segments
                        .get(&r.base_offset)
                        .is_some_and(|s| Arc::ptr_eq(s.file(), &r.file) && s.size() == r.size)
            })
            && replaced
                .windows(2)
                .all(|w| w[0].upper_bound == w[1].base_offset)
            && cleaned
                .last_offset()
                .is_some_and(|l| replaced.iter().all(|r| r.base_offset <= l));
        if !unchanged {
            cleaned.discard();
            return Ok(false);
        }
        // transactions (issue 18): a cleaned segment whose `.txnindex` the cleaner did not
        // write takes the replaced segments' entries (their data is kept as it was).
        if let Err(e) = self.carry_txn_index(&mut cleaned, replaced) {
            cleaned.discard();
            return Err(e);
        }
        let dir = self.dir.clone();
        if let Err(e) = cleaned
            .seg
            .set_file_suffix(&dir, SWAP_SUFFIX)
            .and_then(|_| fsync_dir(&dir))
        {
            // Nothing was replaced yet: drop the new files so a restart cannot roll them
            // forward over segments that may change in the meantime.
            let base = cleaned.base_offset();
            drop(cleaned);
            remove_files(&segment_file_paths(&dir, base, SWAP_SUFFIX));
            remove_files(&segment_file_paths(&dir, base, CLEANED_SUFFIX));
            return Err(e);
        }
        if !hook(SwapStep::Swapped) {
            return Ok(true);
        }
        for (i, r) in replaced.iter().enumerate() {
            // Out of the map only once renamed: an error leaves it serving (the restart then
            // rolls the swap forward over it).
            if let Some(old) = self.segments.get_mut(&r.base_offset) {
                let paths = old.rename_with_suffix(DELETED_SUFFIX)?;
                self.segments.remove(&r.base_offset);
                let due = now_ms.saturating_add(self.config.file_delete_delay_ms);
                self.pending_deletes.push((due, paths));
            }
            if !hook(SwapStep::OldDeleted(i)) {
                return Ok(true);
            }
        }
        let mut seg = cleaned.seg;
        seg.set_file_suffix(&dir, "")?;
        fsync_dir(&dir)?;
        self.segments.insert(seg.base_offset(), seg);
        hook(SwapStep::Done);
        Ok(true)
    }
}

impl Log {
    /// Copies the replaced segments' aborted transactions into `cleaned`'s (fsynced) index
    /// unless the cleaner wrote the index itself.
    fn carry_txn_index(&self, cleaned: &mut CleanedSegment, replaced: &[SegmentRef]) -> Result<()> {
        if cleaned.txn_index_written || !cleaned.seg.txn_index().entries().is_empty() {
            return Ok(());
        }
        let carried: Vec<_> = replaced
            .iter()
            .filter_map(|r| self.segments.get(&r.base_offset))
            .flat_map(|s| s.txn_index().entries().iter().copied())
            .collect();
        if carried.is_empty() {
            return Ok(());
        }
        let idx = cleaned.seg.txn_index_mut();
        idx.rewrite(carried)
            .and_then(|()| idx.flush())
            .at(idx.path())
    }
}

/// Load step 1 (spec §2.8): completes every interrupted swap in `dir` and deletes `.cleaned`
/// files and swap leftovers. Returns the bases of the segments that were swapped in (their
/// indexes were dropped and must be rebuilt).
pub(crate) fn roll_forward_swaps(dir: &Path) -> Result<Vec<i64>> {
    let mut swaps = Vec::new();
    let mut leftovers = Vec::new();
    let mut originals = Vec::new();
    for entry in std::fs::read_dir(dir).at(dir)? {
        let entry = entry.at(dir)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(base) = parse_base_offset(&name, &format!("{LOG_SUFFIX}{SWAP_SUFFIX}")) {
            swaps.push(base);
        } else if name.ends_with(CLEANED_SUFFIX) || name.ends_with(SWAP_SUFFIX) {
            leftovers.push(entry.path());
        } else if let Some(base) = SEGMENT_FILE_SUFFIXES
            .iter()
            .find_map(|suffix| parse_base_offset(&name, suffix))
        {
            // Any file of a segment counts: a crash inside step 2 may have renamed an
            // original's `.log` to `.deleted` but left its indexes under their final names,
            // and those must not be taken for the swapped-in segment's.
            originals.push(base);
        }
    }
    remove_files(&leftovers);
    originals.sort_unstable();
    originals.dedup();
    swaps.sort_unstable();
    for &base in &swaps {
        let swap_path = segment_file(dir, base, &format!("{LOG_SUFFIX}{SWAP_SUFFIX}"));
        let file = File::open(&swap_path).at(&swap_path)?;
        let size = file.metadata().at(&swap_path)?.len();
        let mut scan = HeaderScanner::new(&file, 0, size);
        let mut last = base;
        while let Some(h) = scan.next_header().at(&swap_path)? {
            last = h.last_offset;
        }
        for &orig in originals.iter().filter(|o| (base..=last).contains(*o)) {
            tracing::info!(dir = %dir.display(), orig, swap = base, "recovery: replacing a segment by its interrupted swap");
            remove_files(&segment_file_paths(dir, orig, ""));
        }
        std::fs::rename(&swap_path, segment_file(dir, base, LOG_SUFFIX)).at(&swap_path)?;
    }
    if !swaps.is_empty() {
        fsync_dir(dir)?;
    }
    Ok(swaps)
}

/// The `cleaner-offset-checkpoint` of one log dir: first dirty offset per partition.
#[derive(Debug)]
pub struct CleanerCheckpoint {
    file: OffsetCheckpointFile,
    entries: BTreeMap<TopicPartition, i64>,
}

impl CleanerCheckpoint {
    /// Reads `<log_dir>/cleaner-offset-checkpoint`; a missing or garbled file is empty.
    pub fn load(log_dir: &Path) -> Self {
        let file = OffsetCheckpointFile::new(log_dir.join(CLEANER_OFFSET_CHECKPOINT));
        let entries = match file.read() {
            Ok(e) => e,
            Err(e) => {
                if file.path().exists() {
                    tracing::warn!(path = %file.path().display(), error = %e, "unreadable cleaner checkpoint; starting from the log starts");
                }
                BTreeMap::new()
            }
        };
        Self { file, entries }
    }

    pub fn get(&self, tp: &TopicPartition) -> Option<i64> {
        self.entries.get(tp).copied()
    }

    pub fn entries(&self) -> &BTreeMap<TopicPartition, i64> {
        &self.entries
    }

    /// Drops one entry (a deleted partition) and writes the file atomically if it had one.
    pub fn remove(&mut self, tp: &TopicPartition) -> std::io::Result<()> {
        if self.entries.remove(tp).is_some() {
            self.file.write(&self.entries)?;
        }
        Ok(())
    }

    /// Sets one entry (dropping entries `keep` rejects, e.g. deleted partitions) and writes the
    /// file atomically.
    pub fn set(
        &mut self,
        tp: &TopicPartition,
        offset: i64,
        keep: impl Fn(&TopicPartition) -> bool,
    ) -> std::io::Result<()> {
        self.entries.insert(tp.clone(), offset);
        self.entries.retain(|t, _| keep(t));
        self.file.write(&self.entries)
    }
}
