//! In-memory index lookup latency: `OffsetIndex::lookup` and `TimeIndex::lookup`.
//!
//! Mental model: an index is filled to its capacity at the default `segment.index.bytes`
//! (10 MiB: 1,310,720 offset entries / 873,813 time entries, the worst case binary search),
//! then `lookups` random targets (drawn up front) are looked up. A single lookup takes tens of
//! nanoseconds, close to the cost of reading the clock, so lookups are timed in groups of
//! [`GROUP`] and each group's mean goes into the histogram: the percentiles are of 64-lookup
//! means, which hides single-lookup outliers (cache misses) from the p99.
//! The same is also run on the real offset index of a segment written by the append benchmark.
//! Single-threaded; the index files live in the benchmark directory and are deleted after.

use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result, ensure};
use hdrhistogram::Histogram;
use skiff_storage::segment::offset_index::OffsetIndex;
use skiff_storage::segment::time_index::TimeIndex;

use crate::payload::Rng;

/// Lookups per timed group.
pub const GROUP: usize = 64;

/// Latency figures of one index, in ns per lookup.
#[derive(Debug, Clone, Copy)]
pub struct LookupLatency {
    pub entries: usize,
    pub p50_ns: f64,
    pub p99_ns: f64,
}

/// Times `lookup` on `targets` in groups of [`GROUP`].
fn time_groups<T>(targets: &[i64], mut lookup: impl FnMut(i64) -> T) -> Result<(f64, f64)> {
    let mut hist = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3)?;
    for group in targets.chunks_exact(GROUP) {
        let t0 = Instant::now();
        for &t in group {
            black_box(lookup(black_box(t)));
        }
        let ns = t0.elapsed().as_nanos() as u64;
        hist.saturating_record((ns / GROUP as u64).max(1));
    }
    Ok((
        hist.value_at_quantile(0.5) as f64,
        hist.value_at_quantile(0.99) as f64,
    ))
}

fn random_targets(seed: u64, n: usize, lo: i64, hi: i64) -> Vec<i64> {
    let mut rng = Rng::new(seed);
    let span = (hi - lo).max(1) as u64;
    (0..n).map(|_| lo + rng.below(span) as i64).collect()
}

/// A full offset index at `max_index_bytes`: entry `i` maps offset `16 i` to position `2048 i`.
pub fn offset_index(dir: &Path, max_index_bytes: usize, lookups: usize) -> Result<LookupLatency> {
    let path = dir.join("bench.index");
    let _ = std::fs::remove_file(&path);
    let mut idx = OffsetIndex::open(&path, 0, max_index_bytes, true)
        .with_context(|| format!("creating {}", path.display()))?;
    let mut i: i64 = 0;
    while !idx.is_full() {
        idx.append(i * 16, (i * 2048) as u32)?;
        i += 1;
    }
    let entries = idx.entries();
    let last = idx.last_entry().0;
    ensure!(idx.lookup(last + 5) == (last, ((i - 1) * 2048) as u32));
    let targets = random_targets(0x1D3, lookups, 0, last + 16);
    let (p50, p99) = time_groups(&targets, |t| idx.lookup(t))?;
    drop(idx);
    std::fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
    Ok(LookupLatency {
        entries,
        p50_ns: p50,
        p99_ns: p99,
    })
}

/// A full time index at `max_index_bytes`: entry `i` maps timestamp `10 i + 1` to offset `16 i`.
pub fn time_index(dir: &Path, max_index_bytes: usize, lookups: usize) -> Result<LookupLatency> {
    let path = dir.join("bench.timeindex");
    let _ = std::fs::remove_file(&path);
    let mut idx = TimeIndex::open(&path, 0, max_index_bytes, true)
        .with_context(|| format!("creating {}", path.display()))?;
    let mut i: i64 = 0;
    while !idx.is_full() {
        idx.maybe_append(i * 10 + 1, i * 16, false)?;
        i += 1;
    }
    let entries = idx.entries();
    let (last_ts, last_off) = idx.last_entry();
    ensure!(idx.lookup(last_ts + 3) == (last_ts, last_off));
    let targets = random_targets(0x71E, lookups, 0, last_ts + 10);
    let (p50, p99) = time_groups(&targets, |t| idx.lookup(t))?;
    drop(idx);
    std::fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
    Ok(LookupLatency {
        entries,
        p50_ns: p50,
        p99_ns: p99,
    })
}

/// The same measurement on an index that already exists (a real segment's).
pub fn existing_offset_index(idx: &OffsetIndex, lookups: usize) -> Result<LookupLatency> {
    let lo = idx.base_offset();
    let hi = idx.last_entry().0 + 1;
    let targets = random_targets(0x5E6, lookups, lo, hi);
    let (p50, p99) = time_groups(&targets, |t| idx.lookup(t))?;
    Ok(LookupLatency {
        entries: idx.entries(),
        p50_ns: p50,
        p99_ns: p99,
    })
}

/// The same measurement on a real segment's time index.
pub fn existing_time_index(idx: &TimeIndex, lookups: usize) -> Result<LookupLatency> {
    let lo = if idx.entries() > 0 { idx.entry(0).0 } else { 0 };
    let hi = idx.last_entry().0 + 1;
    let targets = random_targets(0x5E7, lookups, lo, hi);
    let (p50, p99) = time_groups(&targets, |t| idx.lookup(t))?;
    Ok(LookupLatency {
        entries: idx.entries(),
        p50_ns: p50,
        p99_ns: p99,
    })
}
