//! Which part of a log is cleanable, whether the log is due, and how output segments are grouped
//! (spec §3.1 "Log sections", "Choosing a log", "Copying").
//!
//! Mental model: a log is `[log start, first dirty)` clean, `[first dirty, first uncleanable)`
//! cleanable dirty, then the rest. `first dirty` is the `cleaner-offset-checkpoint` entry (reset
//! to the log start when missing or out of `[log start, log end]`). `first uncleanable` is the
//! minimum of the high watermark, the active segment's base, the min-compaction-lag bound (base
//! of the first dirty segment with a record newer than `now - min.compaction.lag.ms`) and
//! `extra_bound`: the log's delivery stable offset (delayed delivery, issue 8; the clean view
//! carries it) so undelivered batches are never compacted, or any tighter bound a caller of
//! `clean_log` passes in `CleanParams`; a bound inside
//! a segment lowers the range to that segment's base (the segment is not cleaned at all).
//! The dirty ratio counts whole segments, as Kafka does.
//!
//! Pure: state + `now` in, a decision out.

use std::ops::Range;

/// What selection needs of one segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegFacts {
    pub base_offset: i64,
    /// Next segment's base, or the log end for the last one.
    pub upper_bound: i64,
    pub size: u64,
    pub index_bytes: u64,
    pub largest_timestamp: i64,
    pub first_batch_timestamp: Option<i64>,
}

/// The inputs of [`cleanable`].
#[derive(Clone, Copy, Debug)]
pub struct SelectInput<'a> {
    /// All segments in offset order, the active one last.
    pub segments: &'a [SegFacts],
    pub log_start_offset: i64,
    pub log_end_offset: i64,
    pub high_watermark: i64,
    pub active_base: i64,
    pub checkpoint: Option<i64>,
    pub now_ms: i64,
    pub min_cleanable_ratio: f64,
    pub min_compaction_lag_ms: i64,
    pub max_compaction_lag_ms: i64,
    /// Extra upper bound of the cleanable range (`i64::MAX` = none; see the module doc).
    pub extra_bound: i64,
}

/// The cleanable sections of a log and whether it is due.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cleanable {
    pub first_dirty: i64,
    pub first_uncleanable: i64,
    pub clean_bytes: u64,
    pub dirty_bytes: u64,
    pub ratio: f64,
    pub max_lag_breached: bool,
    /// `dirty_bytes > 0` and (ratio above the minimum, or max lag breached).
    pub due: bool,
}

/// Computes the cleanable range of one log.
pub fn cleanable(i: &SelectInput<'_>) -> Cleanable {
    let first_dirty = match i.checkpoint {
        Some(c) if c >= i.log_start_offset && c <= i.log_end_offset => c,
        _ => i.log_start_offset,
    };
    // A segment holding the extra bound is not cleaned at all: its batches at or past the
    // bound (delayed delivery's undelivered ones) must stay byte for byte where they are, with
    // their side-file entries, which a cleaned segment does not carry.
    let extra = i
        .segments
        .iter()
        .find(|s| s.base_offset < i.extra_bound && i.extra_bound < s.upper_bound)
        .map_or(i.extra_bound, |s| s.base_offset);
    let mut bound = i
        .high_watermark
        .min(i.active_base)
        .min(extra)
        .min(i.log_end_offset);
    let non_active = || i.segments.iter().filter(|s| s.base_offset < i.active_base);
    if i.min_compaction_lag_ms > 0 {
        let cutoff = i.now_ms.saturating_sub(i.min_compaction_lag_ms);
        if let Some(s) = non_active()
            .filter(|s| s.upper_bound > first_dirty)
            .find(|s| s.largest_timestamp > cutoff)
        {
            bound = bound.min(s.base_offset);
        }
    }
    let first_uncleanable = bound.max(first_dirty);
    let overlapping = |from: i64, to: i64| -> u64 {
        i.segments
            .iter()
            .filter(|s| s.base_offset < to && s.upper_bound > from)
            .map(|s| s.size)
            .sum()
    };
    let clean_bytes = overlapping(i.log_start_offset, first_dirty);
    let dirty_bytes = if first_uncleanable > first_dirty {
        overlapping(first_dirty, first_uncleanable)
    } else {
        0
    };
    let total = clean_bytes + dirty_bytes;
    let ratio = if total == 0 {
        0.0
    } else {
        dirty_bytes as f64 / total as f64
    };
    let max_lag_breached = i.max_compaction_lag_ms < i64::MAX && dirty_bytes > 0 && {
        let cutoff = i.now_ms.saturating_sub(i.max_compaction_lag_ms);
        non_active()
            .filter(|s| s.upper_bound > first_dirty && s.base_offset < first_uncleanable)
            .filter_map(|s| s.first_batch_timestamp)
            .min()
            .is_some_and(|t| t < cutoff)
    };
    Cleanable {
        first_dirty,
        first_uncleanable,
        clean_bytes,
        dirty_bytes,
        ratio,
        max_lag_breached,
        due: dirty_bytes > 0 && (ratio > i.min_cleanable_ratio || max_lag_breached),
    }
}

/// Groups the segments with base below `end` (from the first) into runs rewritten as one
/// output segment: summed sizes ≤ `segment_bytes`, summed index bytes ≤ `index_bytes`, offset
/// span ≤ `i32::MAX` (Kafka's `groupSegmentsBySize`). Every group has at least one segment.
pub fn groups(
    segments: &[SegFacts],
    end: i64,
    segment_bytes: u64,
    index_bytes: u64,
) -> Vec<Range<usize>> {
    let n = segments.iter().take_while(|s| s.base_offset < end).count();
    let mut out = Vec::new();
    let mut start = 0;
    while start < n {
        let first = segments[start];
        let (mut size, mut idx) = (first.size, first.index_bytes);
        let mut stop = start + 1;
        while stop < n {
            let s = segments[stop];
            let span = s
                .upper_bound
                .saturating_sub(1)
                .saturating_sub(first.base_offset);
            if size + s.size > segment_bytes
                || idx + s.index_bytes > index_bytes
                || span > i64::from(i32::MAX)
            {
                break;
            }
            size += s.size;
            idx += s.index_bytes;
            stop += 1;
        }
        out.push(start..stop);
        start = stop;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(base: i64, upper: i64, size: u64, ts: i64) -> SegFacts {
        SegFacts {
            base_offset: base,
            upper_bound: upper,
            size,
            index_bytes: 8,
            largest_timestamp: ts,
            first_batch_timestamp: Some(ts - 10),
        }
    }

    fn input(segs: &[SegFacts]) -> SelectInput<'_> {
        SelectInput {
            segments: segs,
            log_start_offset: 0,
            log_end_offset: 400,
            high_watermark: 400,
            active_base: 300,
            checkpoint: None,
            now_ms: 10_000,
            min_cleanable_ratio: 0.5,
            min_compaction_lag_ms: 0,
            max_compaction_lag_ms: i64::MAX,
            extra_bound: i64::MAX,
        }
    }

    fn segs() -> Vec<SegFacts> {
        vec![
            seg(0, 100, 1000, 1000),
            seg(100, 200, 1000, 2000),
            seg(200, 300, 1000, 9000),
            seg(300, 400, 500, 9500),
        ]
    }

    #[test]
    fn sections_and_ratio() {
        let s = segs();
        // (case, tweak, first_dirty, first_uncleanable, clean, dirty, due)
        type Tweak = fn(&mut SelectInput<'_>);
        let table: Vec<(&str, Tweak, i64, i64, u64, u64, bool)> = vec![
            (
                "all dirty, never the active segment",
                |_| {},
                0,
                300,
                0,
                3000,
                true,
            ),
            (
                "checkpoint splits clean and dirty",
                |i| i.checkpoint = Some(200),
                200,
                300,
                2000,
                1000,
                false,
            ),
            (
                "checkpoint past the end resets",
                |i| i.checkpoint = Some(999),
                0,
                300,
                0,
                3000,
                true,
            ),
            (
                "high watermark bounds",
                |i| i.high_watermark = 150,
                0,
                150,
                0,
                2000,
                true,
            ),
            (
                "extra bound (delivery) bounds",
                |i| i.extra_bound = 100,
                0,
                100,
                0,
                1000,
                true,
            ),
            (
                "extra bound inside a segment: that segment is not cleaned",
                |i| i.extra_bound = 150,
                0,
                100,
                0,
                1000,
                true,
            ),
            (
                "min lag keeps young segments",
                |i| i.min_compaction_lag_ms = 5000,
                0,
                200,
                0,
                2000,
                true,
            ),
            (
                "min lag can block everything",
                |i| i.min_compaction_lag_ms = 9_999,
                0,
                0,
                0,
                0,
                false,
            ),
            (
                "nothing dirty",
                |i| i.checkpoint = Some(300),
                300,
                300,
                3000,
                0,
                false,
            ),
            (
                "ratio equal to the minimum is not due",
                |i| {
                    i.checkpoint = Some(150);
                    i.min_cleanable_ratio = 0.5
                },
                150,
                300,
                2000,
                2000,
                false,
            ),
        ];
        for (case, tweak, fd, fu, clean, dirty, due) in table {
            let mut i = input(&s);
            tweak(&mut i);
            let c = cleanable(&i);
            assert_eq!(
                (
                    c.first_dirty,
                    c.first_uncleanable,
                    c.clean_bytes,
                    c.dirty_bytes,
                    c.due
                ),
                (fd, fu, clean, dirty, due),
                "{case}"
            );
        }
    }

    #[test]
    fn max_lag_forces_a_clean_below_the_ratio() {
        let s = segs();
        let mut i = input(&s);
        i.checkpoint = Some(200);
        i.min_cleanable_ratio = 0.9;
        assert!(!cleanable(&i).due);
        i.max_compaction_lag_ms = 1000; // segment 200's first batch is at 8990 < 10000 - 1000
        let c = cleanable(&i);
        assert!(c.max_lag_breached && c.due, "{c:?}");
        i.max_compaction_lag_ms = 2000;
        assert!(!cleanable(&i).due);
    }

    #[test]
    fn grouping_by_size() {
        let s = segs();
        assert_eq!(groups(&s, 300, 2000, 1 << 20), vec![0..2, 2..3]);
        assert_eq!(groups(&s, 300, 999, 1 << 20), vec![0..1, 1..2, 2..3]);
        assert_eq!(groups(&s, 150, 1 << 30, 1 << 20), vec![0..2]);
        assert_eq!(groups(&s, 300, 1 << 30, 16), vec![0..2, 2..3]);
        assert_eq!(groups(&s, 0, 1 << 30, 16), Vec::<Range<usize>>::new());
    }
}
