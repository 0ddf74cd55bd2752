//! Loading a partition directory, and recovery after an unclean shutdown (spec §2.8).
//!
//! Mental model: `.log` files are the truth; indexes, the leader-epoch cache and in-memory
//! offsets are derived. Loading (1) rolls interrupted cleaner swaps forward (a complete
//! `.log.swap` replaces the segments it covers, see [`crate::swap`]) and deletes leftovers of
//! interrupted operations (`.cleaned`, `.deleted`, `.tmp`), (2) opens every
//! segment, rebuilding any whose index is missing or fails its sanity check, (3) after an unclean
//! shutdown re-validates every batch from the segment holding the recovery point onwards. A
//! batch with a bad header, a bad CRC, a torn length, a non-increasing offset or an offset at
//! or past the next segment's base offset is damage (issue 12, [`crate::integrity`]): the
//! scan resynchronises at the next good batch (or, if none, at the next segment, whose base
//! offset is known), the damaged bytes are moved into a `.corrupt` file, the segment is
//! rewritten without them and the offsets no good batch accounts for are quarantined and
//! logged at ERROR (`LoadReport::quarantined`). Later batches and segments are kept. Only a
//! damaged tail of the *last* segment (nothing good after it: a torn write) is cut, as Kafka
//! does. After a clean
//! shutdown only a last segment whose tail is structurally torn is re-validated, (4) rebuilds a
//! lost leader-epoch checkpoint from the batch headers, (5) derives the log end offset and clamps
//! the recovery point and high watermark; a checkpointed start offset outside [first segment
//! base, log end] is ignored with a warning (segments are the truth: issue 12 item 9).
//!
//! Invariant: after `Log::open` returns, every re-validated segment holds only validated batches
//! (damaged bytes are in `.corrupt` files, their offsets quarantined), and every index entry
//! points at a validated batch boundary.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use skiff_types::TopicPartition;

use crate::config::LogConfig;
use crate::delivery::index::DELIVER_AFTER_SUFFIX;
use crate::error::{IoContext, Result};
use crate::integrity::quarantine::{FoundBy, QuarantinedRange};
use crate::integrity::verify::{Verification, verify_segment};
use crate::integrity::{Integrity, corrupt_file};
use crate::leader_epoch::LeaderEpochCache;
use crate::log::{LEADER_EPOCH_FILE, LoadReport, Log, LogOpenOptions, remove_files};
use crate::producer_state::partition::PartitionProducers;
use crate::segment::txn_index::TXN_INDEX_SUFFIX;
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
                .or_else(|| parse_base_offset(&name, TXN_INDEX_SUFFIX))
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
            integrity: parking_lot::Mutex::new(Integrity::load(dir)),
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
            let seg_opts = log.segment_options(base, opts.now_ms);
            let max_index = log.config.segment_index_bytes;
            let Some(seg) = log.segments.get_mut(&base) else {
                continue;
            };
            let outcome = recover_segment(seg, next_base, &mut log.epochs, max_index)?;
            report.recovered_segments += 1;
            if outcome.is_clean() {
                continue;
            }
            // issue 12: only the torn tail of the last segment is cut; damage anywhere else is
            // moved aside and quarantined, and the scan goes on (later segments are kept).
            let fix = set_aside(dir, seg, &outcome, next_base)?;
            report.truncated_bytes += fix.torn_tail_bytes;
            if fix.torn_tail_bytes > 0 {
                tracing::warn!(tp = %log.tp, base, truncated = fix.torn_tail_bytes, "recovery truncated a torn tail");
            }
            report
                .corrupt_files
                .extend(fix.corrupt_files.iter().cloned());
            if fix.rewritten {
                log.segments.remove(&base);
                let mut seg = LogSegment::open(dir, base, seg_opts, false)?;
                let again = recover_segment(&mut seg, next_base, &mut log.epochs, max_index)?;
                if !again.is_clean() {
                    // Cannot happen (the kept bytes were verified); never serve past it anyway.
                    tracing::error!(tp = %log.tp, base, "segment still damaged after setting damage aside; cutting it there");
                    seg.truncate_file(first_damage(&again))?;
                }
                log.segments.insert(base, seg);
            }
            for r in fix.ranges {
                tracing::error!(
                    tp = %log.tp,
                    segment = base,
                    start_offset = r.start_offset,
                    end_offset = r.end_offset,
                    records = r.records(),
                    reason = r.reason.as_str(),
                    "recovery found corrupt data: offsets lost, damaged bytes kept in a .corrupt file, later data kept"
                );
                report.quarantined.push(r);
            }
        }
        report.rebuilt_indexes = report.recovered_segments;
        if epochs_lost {
            log.rebuild_epochs_from_headers()?;
        }

        {
            let mut integrity = log.integrity.lock();
            for r in &report.quarantined {
                integrity.quarantine.insert(*r);
            }
            if !report.quarantined.is_empty()
                && let Err(e) = integrity.quarantine.persist()
            {
                tracing::error!(tp = %log.tp, error = %e, "could not write the quarantine record");
            }
        }
        log.finish_load(opts)?;
        log.prune_quarantine();
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
        // issue 12 item 9: segments are the truth. A checkpointed start offset outside
        // [first segment base, log end] is ignored (Kafka would delete the whole log).
        let first = self.segments.keys().next().copied().unwrap_or(0);
        if self.log_start_offset > end || self.log_start_offset < first {
            if self.log_start_offset > end {
                tracing::warn!(tp = %self.tp, checkpoint = self.log_start_offset, first_segment = first, log_end = end, "log-start-offset checkpoint is beyond the log end; ignoring it (the segments are kept)");
            }
            self.log_start_offset = first;
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

/// Re-validates every batch of `seg`, rebuilding its indexes from the good batches
/// ([`verify_segment`]: damaged regions are located and skipped, the file is not changed). A
/// batch reaching `next_base` (the next segment's base offset) is invalid too: kept, it would
/// overlap the next segment.
pub(crate) fn recover_segment(
    seg: &mut LogSegment,
    next_base: Option<i64>,
    epochs: &mut LeaderEpochCache,
    max_index_bytes: usize,
) -> Result<Verification> {
    let file = Arc::clone(seg.file());
    let size = seg.size();
    let base = seg.base_offset();
    // Rebuild into full-size index files; load trims them again if the segment is not active.
    seg.make_active(max_index_bytes)?;
    seg.reset_indexes();
    // transactions: re-derived by the producer-state load's replay
    seg.txn_index_mut().mark_for_rebuild();
    let path = seg.log_path().to_path_buf();
    let outcome = verify_segment(&file, base, size, next_base, |h| {
        if h.partition_leader_epoch >= 0
            && epochs
                .latest_epoch()
                .is_none_or(|e| h.partition_leader_epoch > e)
        {
            epochs.assign(h.partition_leader_epoch, h.base_offset);
        }
        seg.reindex_batch(h)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        Ok(true)
    })
    .at(&path)?;
    if !outcome.is_clean() {
        tracing::warn!(path = %path.display(), damages = outcome.damages.len(), tail = ?outcome.tail, "invalid batches found during recovery");
    }
    Ok(outcome)
}

/// Position of the first damaged byte of a verification that is not clean.
fn first_damage(v: &Verification) -> u64 {
    v.damages
        .first()
        .map(|d| d.position)
        .or(v.tail.map(|t| t.position))
        .unwrap_or(v.valid_end)
}

/// What [`set_aside`] did to one segment.
#[derive(Debug, Default)]
struct SetAside {
    /// Bytes cut as the torn tail of the last segment.
    torn_tail_bytes: u64,
    /// Whether the segment file was rewritten (it must be reopened and re-indexed).
    rewritten: bool,
    corrupt_files: Vec<PathBuf>,
    /// Lost offset ranges (non-empty ones), located in the rewritten file.
    ranges: Vec<QuarantinedRange>,
}

/// issue 12: moves the damaged regions of `seg` into `.corrupt` files and rewrites the segment
/// without them (`<base>.log.tmp`, fsync, rename, dir fsync: a crash in between leaves the old
/// file, which the next recovery treats the same way). A damaged tail of the last segment is a
/// torn write and is cut; a damaged tail of a sealed segment loses the offsets up to the next
/// segment's base.
fn set_aside(
    dir: &Path,
    seg: &mut LogSegment,
    v: &Verification,
    next_base: Option<i64>,
) -> Result<SetAside> {
    let base = seg.base_offset();
    let size = seg.size();
    let mut out = SetAside::default();
    // (position, len, lost offsets, reason) of every region moved aside, in file order.
    let mut regions: Vec<(u64, u64, i64, i64, crate::integrity::verify::DamageReason)> = v
        .damages
        .iter()
        .map(|d| (d.position, d.len, d.start_offset, d.end_offset, d.reason))
        .collect();
    let mut keep_end = size;
    if let Some(t) = v.tail {
        match next_base {
            None => {
                out.torn_tail_bytes = size - t.position;
                keep_end = t.position;
            }
            Some(n) => regions.push((t.position, size - t.position, t.start_offset, n, t.reason)),
        }
    }
    if regions.is_empty() {
        seg.truncate_file(keep_end)?;
        return Ok(out);
    }
    let file = Arc::clone(seg.file());
    for &(pos, len, ..) in &regions {
        let path = corrupt_file(dir, base, pos);
        copy_range(&file, pos, len, &path).at(&path)?;
        out.corrupt_files.push(path);
    }
    let tmp = segment_file(dir, base, &format!("{LOG_SUFFIX}.tmp"));
    let mut kept = Vec::new();
    let mut at = 0u64;
    let mut removed = 0u64;
    for &(pos, len, start, end, reason) in &regions {
        kept.push((at, pos - at));
        if end > start {
            out.ranges.push(QuarantinedRange {
                start_offset: start,
                end_offset: end,
                segment: base,
                position: pos - removed,
                len: 0,
                reason,
                found_by: FoundBy::Recovery,
            });
        }
        removed += len;
        at = pos + len;
    }
    if at < keep_end {
        kept.push((at, keep_end - at));
    }
    write_ranges(&file, &kept, &tmp).at(&tmp)?;
    std::fs::rename(&tmp, seg.log_path()).at(&tmp)?;
    crate::log::fsync_dir(dir)?;
    out.rewritten = true;
    Ok(out)
}

/// Copies `[pos, pos + len)` of `src` into a new file at `dst` (fsynced).
fn copy_range(src: &std::fs::File, pos: u64, len: u64, dst: &Path) -> std::io::Result<()> {
    write_ranges(src, &[(pos, len)], dst)
}

/// Writes the concatenation of `ranges` of `src` into `dst` (created or truncated), fsynced.
fn write_ranges(src: &std::fs::File, ranges: &[(u64, u64)], dst: &Path) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::FileExt;
    let mut out = std::fs::File::create(dst)?;
    let mut buf = vec![0u8; 1 << 20];
    for &(pos, len) in ranges {
        let mut done = 0u64;
        while done < len {
            let n = (len - done).min(buf.len() as u64) as usize;
            src.read_exact_at(&mut buf[..n], pos + done)?;
            out.write_all(&buf[..n])?;
            done += n as u64;
        }
    }
    out.sync_all()
}
