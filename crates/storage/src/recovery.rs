//! Loading a partition directory, and recovery after an unclean shutdown (spec §2.8).
//!
//! Mental model: `.log` files are the truth; indexes, the leader-epoch cache and in-memory
//! offsets are derived. Loading (1) rolls interrupted cleaner swaps forward (a complete
//! `.log.swap` replaces the segments it covers, see [`crate::swap`]) and deletes leftovers of
//! interrupted operations (`.cleaned`, `.deleted`, `.tmp`), (2) opens every
//! segment, rebuilding any whose index is missing or fails its sanity check, (3) after an unclean
//! shutdown re-validates every batch from the segment holding the recovery point onwards: the
//! first batch with a bad header, a bad CRC, a torn length, a non-increasing offset or an offset
//! at or past the next segment's base offset ends the log there (the file is cut at that byte
//! and all later segments are deleted); after a clean
//! shutdown only a last segment whose tail is structurally torn is re-validated, (4) rebuilds a
//! lost leader-epoch checkpoint from the batch headers, (5) derives the log end offset and clamps
//! the start offset, recovery point and high watermark.
//!
//! Invariant: after `Log::open` returns, no byte past a batch that failed validation is reachable,
//! and every index entry points at a validated batch boundary.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use skiff_record::BatchView;
use skiff_types::TopicPartition;

use crate::config::LogConfig;
use crate::delivery::index::DELIVER_AFTER_SUFFIX;
use crate::error::{IoContext, Result};
use crate::leader_epoch::LeaderEpochCache;
use crate::log::{LEADER_EPOCH_FILE, LoadReport, Log, LogOpenOptions, remove_files};
use crate::producer_state::partition::PartitionProducers;
use crate::segment::scan::BatchReader;
use crate::segment::{
    DELETED_SUFFIX, INDEX_SUFFIX, LOG_SUFFIX, LogSegment, TIME_INDEX_SUFFIX, parse_base_offset,
    segment_file,
};
use crate::sync::SyncState;

/// Suffixes of files left by interrupted operations; deleted on load (after interrupted
/// cleaner swaps are rolled forward: `crate::swap::roll_forward_swaps`).
const LEFTOVER_SUFFIXES: &[&str] = &[DELETED_SUFFIX, ".tmp"];

impl Log {
    /// Opens (creating if needed) the log in `dir`, recovering it if the shutdown was unclean.
    pub fn open(
        dir: &Path,
        tp: TopicPartition,
        config: LogConfig,
        opts: LogOpenOptions,
    ) -> Result<(Log, LoadReport)> {
        std::fs::create_dir_all(dir).at(dir)?;
        let mut report = LoadReport::default();
        // compaction (issue 7): complete or discard interrupted swaps first (spec §2.8 step 1).
        let swapped = crate::swap::roll_forward_swaps(dir)?;
        report.rolled_forward_swaps = swapped.len();
        let mut bases = Vec::new();
        let mut index_files = Vec::new();
        for entry in std::fs::read_dir(dir).at(dir)? {
            let entry = entry.at(dir)?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if LEFTOVER_SUFFIXES.iter().any(|s| name.ends_with(s)) {
                remove_files(&[entry.path()]);
                continue;
            }
            if let Some(base) = parse_base_offset(&name, LOG_SUFFIX) {
                bases.push(base);
            } else if let Some(base) = parse_base_offset(&name, INDEX_SUFFIX)
                .or_else(|| parse_base_offset(&name, TIME_INDEX_SUFFIX))
                // delivery delay (issue 8)
                .or_else(|| parse_base_offset(&name, DELIVER_AFTER_SUFFIX))
            {
                index_files.push((base, entry.path()));
            }
        }
        bases.sort_unstable();
        for (base, path) in index_files {
            if bases.binary_search(&base).is_err() {
                tracing::info!(path = %path.display(), "deleting orphan index file");
                remove_files(&[path]);
            }
        }

        let mut log = Log {
            dir: dir.to_path_buf(),
            tp,
            config,
            segments: BTreeMap::new(),
            log_start_offset: opts.log_start_offset.max(0),
            log_end_offset: 0,
            recovery_point: opts.recovery_point.max(0),
            high_watermark: opts.high_watermark,
            epochs: LeaderEpochCache::load(dir.join(LEADER_EPOCH_FILE)),
            sync: Arc::new(SyncState::new(Arc::new(tempfile_placeholder(dir)?), 0, 0)),
            unflushed_messages: 0,
            last_flush_ms: opts.now_ms,
            pending_deletes: Vec::new(),
            producers: PartitionProducers::default(),
            delivery: Default::default(), // delivery delay (issue 8)
            deleted: false,
            health: Default::default(), // issue 12: set by the log manager
        };

        // A missing, garbled or empty leader-epoch checkpoint is rebuilt from the batches below.
        let epochs_lost = log.epochs.is_empty();

        let mut needs_rebuild = Vec::new();
        for &base in &bases {
            let had_index = segment_file(dir, base, INDEX_SUFFIX).exists()
                && segment_file(dir, base, TIME_INDEX_SUFFIX).exists();
            let seg = LogSegment::open(dir, base, log.segment_options(base, opts.now_ms), false)?;
            let sane = had_index
                && seg.offset_index().sanity_check(seg.size()).is_ok()
                && seg.time_index().sanity_check().is_ok();
            if !sane {
                needs_rebuild.push(base);
            }
            log.segments.insert(base, seg);
        }
        report.segments = log.segments.len();

        // Which segments to re-validate: after an unclean shutdown, every segment that may hold
        // data past the recovery point; always, any segment whose index is unusable.
        let mut to_recover: Vec<i64> = Vec::new();
        if !opts.clean_shutdown {
            let keys: Vec<i64> = log.segments.keys().copied().collect();
            for (i, base) in keys.iter().enumerate() {
                let upper = keys.get(i + 1).copied().unwrap_or(i64::MAX);
                if upper > log.recovery_point {
                    to_recover.push(*base);
                }
            }
        }
        for b in needs_rebuild {
            if !to_recover.contains(&b) {
                to_recover.push(b);
            }
        }
        to_recover.sort_unstable();
        // A clean shutdown is trusted (no CRC pass), but a structurally torn last segment (a
        // partial batch, only possible if the files were damaged after the shutdown) would hide
        // batches from the log end scan and put the next append behind garbage: recover it.
        if let Some((&base, last)) = log.segments.iter().next_back()
            && !to_recover.contains(&base)
        {
            let start = u64::from(last.offset_index().last_entry().1).min(last.size());
            let mut scan = last.headers_from(start);
            while scan.next_header().at(last.log_path())?.is_some() {}
            if scan.stop_reason().is_some() {
                tracing::warn!(tp = %log.tp, base, "torn last segment despite a clean shutdown; recovering it");
                to_recover.push(base);
            }
        }
        for base in to_recover {
            let next_base = log.segments.range(base + 1..).next().map(|(b, _)| *b);
            let Some(seg) = log.segments.get_mut(&base) else {
                continue;
            };
            let truncated = recover_segment(
                seg,
                next_base,
                &mut log.epochs,
                log.config.segment_index_bytes,
            )?;
            report.recovered_segments += 1;
            if truncated > 0 {
                report.truncated_bytes += truncated;
                tracing::warn!(tp = %log.tp, base, truncated, "recovery truncated an invalid tail");
                let later: Vec<i64> = log.segments.range(base + 1..).map(|(b, _)| *b).collect();
                for b in later {
                    if let Some(mut s) = log.segments.remove(&b) {
                        let paths = s.rename_with_suffix(DELETED_SUFFIX)?;
                        remove_files(&paths);
                        report.deleted_segments += 1;
                    }
                }
                break;
            }
        }
        report.rebuilt_indexes = report.recovered_segments;
        if epochs_lost {
            log.rebuild_epochs_from_headers()?;
        }

        log.finish_load(opts)?;
        // Producer state follows the recovered log: snapshot + replay up to its end.
        log.load_producer_state(opts.clean_shutdown)?;
        // delivery delay (issue 8): index sanity / rebuild, pending FIFO
        log.load_delivery_state(opts.clean_shutdown, opts.now_ms)?;
        Ok((log, report))
    }

    /// Re-derives the leader-epoch cache from every batch header (the checkpoint was lost).
    fn rebuild_epochs_from_headers(&mut self) -> Result<()> {
        self.epochs.clear();
        for seg in self.segments.values() {
            let mut scan = seg.headers_from(0);
            while let Some(h) = scan.next_header().at(seg.log_path())? {
                let epoch = h.partition_leader_epoch;
                if epoch >= 0 && self.epochs.latest_epoch().is_none_or(|e| epoch > e) {
                    self.epochs.assign(epoch, h.base_offset);
                }
            }
        }
        if !self.epochs.is_empty() {
            tracing::info!(tp = %self.tp, entries = self.epochs.entries().len(), "rebuilt the leader-epoch cache from the log");
        }
        Ok(())
    }

    /// Derives offsets after the segments are known good.
    fn finish_load(&mut self, opts: LogOpenOptions) -> Result<()> {
        if self.segments.is_empty() {
            let start = self.log_start_offset;
            let seg = LogSegment::open(
                &self.dir,
                start,
                self.segment_options(start, opts.now_ms),
                true,
            )?;
            self.segments.insert(start, seg);
        }
        let end = {
            let last = self.active();
            let start = u64::from(last.offset_index().last_entry().1).min(last.size());
            let mut end = last.base_offset();
            let mut scan = last.headers_from(start);
            while let Some(h) = scan.next_header().at(last.log_path())? {
                end = h.next_offset();
            }
            end
        };
        self.log_end_offset = end;
        if end < self.log_start_offset {
            tracing::warn!(tp = %self.tp, end, start = self.log_start_offset, "log ends before its start offset; restarting it empty");
            let start = self.log_start_offset;
            self.truncate_fully_and_start_at(start)?;
        }
        let last_base = self.active().base_offset();
        for seg in self.segments.values_mut() {
            seg.load_tail_state()?;
            if seg.base_offset() != last_base {
                seg.on_become_inactive()?;
            }
        }
        let max_index = self.config.segment_index_bytes;
        self.active_mut().make_active(max_index)?;
        let first = self.segments.keys().next().copied().unwrap_or(0);
        self.log_start_offset = self.log_start_offset.max(first);
        self.recovery_point = self.recovery_point.min(self.log_end_offset);
        self.high_watermark = opts
            .high_watermark
            .clamp(self.log_start_offset, self.log_end_offset);
        self.epochs.truncate_from_end(self.log_end_offset);
        self.epochs.truncate_from_start(self.log_start_offset);
        self.epochs.flush().at(&self.dir.join(LEADER_EPOCH_FILE))?;
        let file = Arc::clone(self.active().file());
        self.sync = Arc::new(SyncState::new(
            file,
            self.log_end_offset,
            self.recovery_point,
        ));
        Ok(())
    }
}

/// A throwaway handle used only until the real active segment is known.
fn tempfile_placeholder(dir: &Path) -> Result<std::fs::File> {
    std::fs::File::open(dir).at(dir)
}

/// Re-validates every batch of `seg`, rebuilding its indexes; cuts the file at the first invalid
/// batch. A batch reaching `next_base` (the next segment's base offset) is invalid too: kept, it
/// would overlap the next segment and be served past the log end if that segment is cut.
/// Returns the number of bytes cut.
pub(crate) fn recover_segment(
    seg: &mut LogSegment,
    next_base: Option<i64>,
    epochs: &mut LeaderEpochCache,
    max_index_bytes: usize,
) -> Result<u64> {
    let file = Arc::clone(seg.file());
    let size = seg.size();
    let base = seg.base_offset();
    // Rebuild into full-size index files; load trims them again if the segment is not active.
    seg.make_active(max_index_bytes)?;
    seg.reset_indexes();
    let mut valid = 0u64;
    let mut next_expected = base;
    let mut reader = BatchReader::new(&file, 0, size);
    while let Some((h, bytes)) = reader.next_batch().at(seg.log_path())? {
        let ok = BatchView::new(bytes).is_ok_and(|v| v.verify_crc().is_ok())
            && h.base_offset >= next_expected
            && next_base.is_none_or(|n| h.last_offset < n)
            && h.last_offset - base <= i64::from(i32::MAX);
        if !ok {
            tracing::warn!(path = %seg.log_path().display(), position = h.position, "invalid batch found during recovery");
            break;
        }
        if h.partition_leader_epoch >= 0
            && epochs
                .latest_epoch()
                .is_none_or(|e| h.partition_leader_epoch > e)
        {
            epochs.assign(h.partition_leader_epoch, h.base_offset);
        }
        seg.reindex_batch(&h)?;
        valid = h.end_position();
        next_expected = h.next_offset();
    }
    if let Some(stop) = reader.stop_reason() {
        tracing::warn!(path = %seg.log_path().display(), ?stop, "recovery stopped at a torn or invalid tail");
    }
    let cut = size - valid;
    seg.truncate_file(valid)?;
    Ok(cut)
}
