//! One clean of one log: the I/O shell around [`crate::select`], [`crate::keymap`] and
//! [`crate::filter`], through storage's swap API only.
//!
//! Steps (spec §3.1, §3.3): take a [`CleanView`] under the log's lock; compute the cleanable
//! range `[first dirty, first uncleanable)` (bounded by the view's delivery stable offset and
//! `CleanParams::extra_bound`, see [`crate::select`]);
//! build the key map without the lock, over the dirty range for `offset` and over the whole
//! range `[first segment, first uncleanable)` for `timestamp`/`header` (where an older clean
//! record can beat a newer dirty one, so a record survives only if it is the key's winner).
//! If the map fills, the range's end is lowered to the record that did not fit (the start is
//! never raised). Then every segment below that end is re-copied, group by group, into a
//! `.cleaned` segment, which is swapped in under the lock (refused if the log changed
//! meanwhile). A single-segment group in which nothing changed is not rewritten. Reads and
//! writes go through a [`Throttle`] (`log.cleaner.io.max.bytes.per.second`).
//!
//! Transactions (issue 18, [`crate::txn`]): the range also stops at the view's first unstable
//! offset, so every transactional batch in it is decided. The key map skips batches of aborted
//! transactions (a [`TxnTracker`] over the map range). The copy walks every segment from the
//! first with one tracker: aborted batches lose their records, markers go once no data of their
//! transaction is left and their delete horizon passed, and each output segment's `.txnindex`
//! is written from the kept ABORT markers whose transaction still had data (never carried over
//! blindly: an entry outliving its marker would hide the producer's later commits). A marker of
//! a producer whose last entry it is (no data batch remembered) is retained, as Kafka does.
//!
//! Test failpoint: with the environment variable `SKIFF_TEST_CLEANER_CRASH_AFTER_SWAP=1` the
//! process aborts right after the first `.cleaned` -> `.swap` rename (kill -9 mid-swap tests).

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use skiff_record::{BatchView, ControlType, Record, parse_end_txn_marker, records};
use skiff_storage::swap::{CleanView, CleanedSegment, SegmentRef, SwapStep};
use skiff_storage::{AbortedTxn, SharedLog, StorageError};

use crate::filter::{BatchOutcome, FilterContext, FilterCounts, filter_data_batch, filter_marker};
use crate::keymap::{KeyMap, Offer};
use crate::select::{Cleanable, SegFacts, SelectInput, cleanable, groups};
use crate::strategy::{Rank, Strategy, version_of};
use crate::txn::TxnTracker;

/// Cleaner-wide settings of one clean.
#[derive(Clone, Copy, Debug)]
pub struct CleanParams {
    /// Key-map budget of this thread (`log.cleaner.dedupe.buffer.size / threads`).
    pub map_bytes: usize,
    /// `log.cleaner.io.buffer.load.factor`.
    pub load_factor: f64,
    pub now_ms: i64,
    /// Upper bound of the cleanable range besides the HW and the active segment (`i64::MAX`
    /// = none; delayed delivery passes its delivery stable offset).
    pub extra_bound: i64,
    /// Seed of the key hash.
    pub seed: u64,
}

/// What one clean did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CleanOutcome {
    pub first_dirty: i64,
    /// The new first dirty offset (the checkpoint).
    pub end: i64,
    pub ratio: f64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub records_removed: u64,
    pub tombstones_removed: u64,
    /// Records of aborted transactions removed (also in `records_removed`).
    pub aborted_records_removed: u64,
    /// Transaction markers removed.
    pub markers_removed: u64,
    pub invalid_header_values: u64,
    pub segments_replaced: usize,
    pub segments_written: usize,
    /// The key map filled before the end of the cleanable range.
    pub map_full: bool,
}

/// Why a clean stopped.
#[derive(Debug)]
pub enum CleanError {
    Storage(StorageError),
    Io(std::io::Error),
    Corrupt(String),
    /// The log changed under the clean (retention, truncation, deletion); retried later.
    Aborted,
    Stopped,
}

impl std::error::Error for CleanError {}

impl std::fmt::Display for CleanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CleanError::Storage(e) => write!(f, "storage: {e}"),
            CleanError::Io(e) => write!(f, "i/o: {e}"),
            CleanError::Corrupt(e) => write!(f, "unreadable batch: {e}"),
            CleanError::Aborted => f.write_str("the log changed during the clean"),
            CleanError::Stopped => f.write_str("the cleaner is stopping"),
        }
    }
}

impl From<StorageError> for CleanError {
    fn from(e: StorageError) -> Self {
        CleanError::Storage(e)
    }
}
impl From<std::io::Error> for CleanError {
    fn from(e: std::io::Error) -> Self {
        CleanError::Io(e)
    }
}

/// Limits cleaner I/O to `rate` bytes per second (reads plus writes).
#[derive(Debug)]
pub struct Throttle {
    rate: f64,
    clock: skiff_types::Clock,
    start: Instant,
    bytes: f64,
}

/// How long to wait after `bytes` in `elapsed` to stay at or below `rate` bytes/s.
pub fn throttle_delay(bytes: f64, elapsed: Duration, rate: f64) -> Duration {
    if !(rate.is_finite() && rate > 0.0) {
        return Duration::ZERO;
    }
    let due = bytes / rate;
    let el = elapsed.as_secs_f64();
    if due > el {
        Duration::from_secs_f64((due - el).min(10.0))
    } else {
        Duration::ZERO
    }
}

impl Throttle {
    /// A throttle of `rate` bytes/s from now on `clock`.
    pub fn new(rate: f64, clock: &skiff_types::Clock) -> Self {
        Self {
            rate,
            clock: clock.clone(),
            start: clock.now(),
            bytes: 0.0,
        }
    }

    /// Accounts `n` bytes and sleeps if ahead of the rate.
    pub fn account(&mut self, n: u64) {
        self.bytes += n as f64;
        let d = throttle_delay(
            self.bytes,
            self.clock.now().saturating_duration_since(self.start),
            self.rate,
        );
        if !d.is_zero() {
            std::thread::sleep(d);
        }
    }
}

/// Selection facts of a view's segments.
pub fn facts(view: &CleanView) -> Vec<SegFacts> {
    view.segments
        .iter()
        .map(|s| SegFacts {
            base_offset: s.base_offset,
            upper_bound: s.upper_bound,
            size: s.size,
            index_bytes: s.index_bytes,
            largest_timestamp: s.largest_timestamp,
            first_batch_timestamp: s.first_batch_timestamp,
        })
        .collect()
}

/// The cleanable range of `view` with its config's thresholds.
pub fn cleanable_of(
    view: &CleanView,
    checkpoint: Option<i64>,
    now_ms: i64,
    extra_bound: i64,
) -> Cleanable {
    let f = facts(view);
    cleanable(&SelectInput {
        segments: &f,
        log_start_offset: view.log_start_offset,
        log_end_offset: view.log_end_offset,
        high_watermark: view.high_watermark,
        active_base: view.active_base,
        checkpoint,
        now_ms,
        min_cleanable_ratio: view.config.min_cleanable_dirty_ratio,
        min_compaction_lag_ms: view.config.min_compaction_lag_ms,
        max_compaction_lag_ms: view.config.max_compaction_lag_ms,
        // The view's own delivery stable offset and first unstable offset (an open or not yet
        // replicated transaction) bound the range too (taken with the view).
        extra_bound: extra_bound
            .min(view.delivery_stable_offset.unwrap_or(i64::MAX))
            .min(view.first_unstable_offset.unwrap_or(i64::MAX)),
    })
}

/// Largest decompressed batch the cleaner handles.
const MAX_RECORDS_BYTES: usize = 256 << 20;

fn corrupt(e: impl std::fmt::Display) -> CleanError {
    CleanError::Corrupt(e.to_string())
}

/// Cleans `log` once. `Ok(None)`: nothing cleanable.
pub fn clean_log(
    log: &SharedLog,
    checkpoint: Option<i64>,
    params: &CleanParams,
    throttle: &mut Throttle,
    stop: &AtomicBool,
) -> Result<Option<CleanOutcome>, CleanError> {
    let view = log.lock().clean_view()?;
    if !view.config.cleanup_policy_compact {
        return Ok(None);
    }
    let c = cleanable_of(&view, checkpoint, params.now_ms, params.extra_bound);
    if c.dirty_bytes == 0 {
        return Ok(None);
    }
    let strategy = Strategy::of(&view.config);
    let first_base = view.segments.first().map_or(0, |s| s.base_offset);
    // Records below the log start offset are deleted: they never compete (and, not being
    // winners, are dropped when their segment is rewritten).
    let map_start = if strategy.needs_whole_range() {
        first_base.max(view.log_start_offset)
    } else {
        c.first_dirty
    };
    let mut out = CleanOutcome {
        first_dirty: c.first_dirty,
        ratio: c.ratio,
        ..CleanOutcome::default()
    };
    let in_range: Vec<&SegmentRef> = view
        .segments
        .iter()
        .filter(|s| s.upper_bound > map_start && s.base_offset < c.first_uncleanable)
        .collect();
    let range_bytes: u64 = in_range.iter().map(|s| s.size).sum();
    let expected_keys = usize::try_from(range_bytes / 24).unwrap_or(usize::MAX);
    let mut map = KeyMap::new(
        params.map_bytes,
        params.load_factor,
        expected_keys,
        params.seed,
    );
    let map_end = build_map(
        &in_range,
        &view.aborted_txns,
        &strategy,
        (map_start, c.first_dirty),
        c.first_uncleanable,
        &mut map,
        throttle,
        stop,
        &mut out,
    )?;
    out.map_full = map_end < c.first_uncleanable;
    if map_end <= c.first_dirty && !strategy.needs_whole_range() {
        return Ok(None);
    }
    out.end = map_end.max(c.first_dirty);
    let f = facts(&view);
    let mut walk = Walk {
        last_batches: view.producer_last_batches.iter().copied().collect(),
        marker_epochs: view.producer_marker_epochs.iter().copied().collect(),
        // Every segment is walked from the first: a marker's data can lie anywhere before it.
        txns: TxnTracker::new(&view.aborted_txns, i64::MIN),
    };
    let ctx = FilterContext {
        map: &map,
        map_end,
        now_ms: params.now_ms,
        config: &view.config,
        max_records_bytes: MAX_RECORDS_BYTES,
    };
    let segment_bytes = view.config.segment_bytes;
    let index_bytes = view.config.segment_index_bytes as u64;
    for g in groups(
        &f,
        map_end.min(view.active_base),
        segment_bytes,
        index_bytes,
    ) {
        let group = &view.segments[g];
        clean_group(
            log,
            &view,
            group,
            &ctx,
            &mut walk,
            params.now_ms,
            throttle,
            stop,
            &mut out,
        )?;
    }
    Ok(Some(out))
}

/// The marker type of a control batch and whether it is empty; an unreadable one is logged and
/// answers `None` (kept as it is).
fn marker_kind(view: &BatchView<'_>) -> (Option<ControlType>, bool) {
    if view.records_count() == 0 {
        return (None, true);
    }
    match parse_end_txn_marker(view) {
        Ok(m) => (m.map(|m| m.control_type), false),
        Err(e) => {
            tracing::warn!(offset = view.base_offset(), error = %e, "cleaner: unreadable control batch kept");
            (None, false)
        }
    }
}

/// Builds the key map over `[start, end)`, skipping aborted transactions' batches; returns the
/// map's end (lower than `end` if full). Invalid header values are counted from `first_dirty`
/// on (each record once).
#[allow(clippy::too_many_arguments)]
fn build_map(
    segments: &[&SegmentRef],
    aborted: &[AbortedTxn],
    strategy: &Strategy,
    (start, first_dirty): (i64, i64),
    end: i64,
    map: &mut KeyMap,
    throttle: &mut Throttle,
    stop: &AtomicBool,
    out: &mut CleanOutcome,
) -> Result<i64, CleanError> {
    let mut txns = TxnTracker::new(aborted, start);
    for s in segments {
        let mut scan = s.batches();
        while let Some((h, bytes)) = scan.next_batch()? {
            if h.last_offset < start {
                continue;
            }
            if h.base_offset >= end {
                return Ok(end);
            }
            if stop.load(Ordering::Relaxed) {
                return Err(CleanError::Stopped);
            }
            throttle.account(bytes.len() as u64);
            out.bytes_read += bytes.len() as u64;
            let view = BatchView::new(bytes).map_err(corrupt)?;
            if h.is_control() {
                let (kind, empty) = marker_kind(&view);
                txns.on_marker(h.producer_id, h.last_offset, kind, empty);
                continue;
            }
            if txns.on_data(h.producer_id, h.is_transactional(), h.last_offset) {
                // An aborted transaction's records never win (they are removed).
                continue;
            }
            let data = view.records_data(MAX_RECORDS_BYTES).map_err(corrupt)?;
            for rec in records(&data, view.records_count()) {
                let rec: Record<'_> = rec.map_err(corrupt)?;
                let offset = view.record_offset(&rec);
                if offset < start || offset >= end {
                    continue;
                }
                let Some(key) = rec.key else { continue };
                let (version, invalid) = version_of(strategy, &view, &rec);
                out.invalid_header_values += u64::from(invalid && offset >= first_dirty);
                if map.offer(key, Rank { version, offset }) == Offer::Full {
                    tracing::info!(
                        offset,
                        keys = map.len(),
                        "cleaner key map full; cleaning a prefix of the range"
                    );
                    return Ok(offset);
                }
            }
        }
        if scan.stop_reason().is_some() {
            return Err(corrupt(format!("torn segment at {}", s.base_offset)));
        }
    }
    Ok(end)
}

fn crash_after_swap_failpoint() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var("SKIFF_TEST_CLEANER_CRASH_AFTER_SWAP").is_ok_and(|v| v == "1"))
}

/// State of the copy walk over all groups of one clean.
struct Walk {
    /// `(producer id, last offset)` of each producer's last data batch (retained).
    last_batches: HashSet<(i64, i64)>,
    /// `(producer id, epoch)` of producers whose last entry is a marker (retained).
    marker_epochs: HashSet<(i64, i16)>,
    txns: TxnTracker,
}

impl Walk {
    /// Filters one batch: the transaction decisions, then the record filter.
    fn filter(
        &mut self,
        ctx: &FilterContext<'_>,
        h: &skiff_storage::segment::scan::BatchHeader,
        bytes: &[u8],
        group_last: bool,
        counts: &mut FilterCounts,
        txn_index: &mut Vec<AbortedTxn>,
    ) -> Result<BatchOutcome, CleanError> {
        if h.is_control() {
            let view = BatchView::new(bytes).map_err(corrupt)?;
            let (kind, empty) = marker_kind(&view);
            let verdict = self
                .txns
                .on_marker(h.producer_id, h.last_offset, kind, empty);
            txn_index.extend(verdict.index_entry);
            let retain = group_last
                || (h.producer_id >= 0
                    && self
                        .marker_epochs
                        .contains(&(h.producer_id, h.producer_epoch)));
            return filter_marker(ctx, bytes, verdict.removable, retain, counts).map_err(corrupt);
        }
        let aborted = self
            .txns
            .on_data(h.producer_id, h.is_transactional(), h.last_offset);
        let retain = group_last
            || (h.producer_id >= 0 && self.last_batches.contains(&(h.producer_id, h.last_offset)));
        filter_data_batch(ctx, bytes, retain, aborted, counts).map_err(corrupt)
    }
}

/// Rewrites one group of segments and swaps it in.
#[allow(clippy::too_many_arguments)]
fn clean_group(
    log: &SharedLog,
    view: &CleanView,
    group: &[SegmentRef],
    ctx: &FilterContext<'_>,
    walk: &mut Walk,
    now_ms: i64,
    throttle: &mut Throttle,
    stop: &AtomicBool,
    out: &mut CleanOutcome,
) -> Result<(), CleanError> {
    let mut cleaned =
        CleanedSegment::create(&view.dir, group[0].base_offset, &view.config, now_ms)?;
    let mut changed = false;
    let mut counts = FilterCounts::default();
    let mut txn_index = Vec::new();
    // The group's last batch is kept (emptied if need be): the output's last offset must be
    // the group's, so recovery's roll-forward covers every replaced segment.
    let last_nonempty = group.iter().rposition(|s| s.size > 0);
    let result = (|| -> Result<(), CleanError> {
        for (si, s) in group.iter().enumerate() {
            let last_segment = Some(si) == last_nonempty;
            let mut scan = s.batches();
            while let Some((h, bytes)) = scan.next_batch()? {
                if stop.load(Ordering::Relaxed) {
                    return Err(CleanError::Stopped);
                }
                throttle.account(bytes.len() as u64);
                out.bytes_read += bytes.len() as u64;
                let group_last = last_segment && h.end_position() == s.size;
                match walk.filter(ctx, &h, bytes, group_last, &mut counts, &mut txn_index)? {
                    BatchOutcome::Unchanged => cleaned.append(bytes)?,
                    BatchOutcome::Rewritten(b) => {
                        changed = true;
                        cleaned.append(&b)?;
                    }
                    BatchOutcome::Dropped => changed = true,
                }
            }
            if scan.stop_reason().is_some() {
                return Err(corrupt(format!("torn segment at {}", s.base_offset)));
            }
        }
        Ok(())
    })();
    if let Err(e) = result {
        cleaned.discard();
        return Err(e);
    }
    out.records_removed += counts.records_removed;
    out.tombstones_removed += counts.tombstones_removed;
    out.aborted_records_removed += counts.aborted_removed;
    out.markers_removed += counts.markers_removed;
    if (!changed && group.len() == 1) || cleaned.last_offset().is_none() {
        cleaned.discard();
        return Ok(());
    }
    if let Err(e) = cleaned.write_txn_index(txn_index) {
        cleaned.discard();
        return Err(e.into());
    }
    throttle.account(cleaned.size());
    out.bytes_written += cleaned.size();
    let mtime = group
        .last()
        .and_then(|s| s.file.metadata().ok())
        .and_then(|m| m.modified().ok());
    cleaned.finish(mtime)?;
    let mut hook = |step: SwapStep| {
        if step == SwapStep::Swapped && crash_after_swap_failpoint() {
            tracing::error!("SKIFF_TEST_CLEANER_CRASH_AFTER_SWAP: aborting mid-swap");
            std::process::abort();
        }
        true
    };
    let swapped = log
        .lock()
        .replace_segments_with_hook(cleaned, group, now_ms, &mut hook)?;
    if !swapped {
        return Err(CleanError::Aborted);
    }
    out.segments_replaced += group.len();
    out.segments_written += 1;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throttle_waits_only_when_ahead_of_the_rate() {
        let s = Duration::from_secs;
        let ms = Duration::from_millis;
        // (bytes so far, elapsed, rate, wait)
        let table = [
            (1_000_000.0, s(1), 1_000_000.0, Duration::ZERO),
            (2_000_000.0, s(1), 1_000_000.0, s(1)),
            (1_500_000.0, ms(500), 1_000_000.0, s(1)),
            (500_000.0, s(1), 1_000_000.0, Duration::ZERO),
            (1e12, s(0), f64::MAX, Duration::ZERO),
            (1e12, s(0), f64::INFINITY, Duration::ZERO),
            (1e12, s(0), 0.0, Duration::ZERO),
            (1e12, s(0), 1.0, s(10)),
        ];
        for (bytes, elapsed, rate, want) in table {
            let got = throttle_delay(bytes, elapsed, rate);
            assert!(
                (got.as_secs_f64() - want.as_secs_f64()).abs() < 1e-6,
                "{bytes} B after {elapsed:?} at {rate} B/s: {got:?}, want {want:?}"
            );
        }
    }
}
