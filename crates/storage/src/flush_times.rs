//! Log flush latency (issue 20, Kafka's LogFlushRateAndTimeMs): a fixed-bucket histogram of
//! atomics that the storage fills on every log flush and fdatasync, and the server's
//! `/metrics` reads at scrape (`skiff_log_flush_duration_seconds`). Storage cannot depend on
//! the server crate, so this is the hook: [`FLUSH_TIMES`], one per process.
//!
//! Mental model: [`FlushTimes::time`] runs the flush between two reads of the monotonic
//! system [`Clock`] (fsync latency is a property of the device, so a test's manual clock is
//! not used) and adds the elapsed nanoseconds to one bucket, the count and the sum.
//!
//! Invariants: recording is three relaxed atomic adds and never allocates (the clock is
//! created once); bucket `i` counts flushes of at most [`bound_ns`]`(i)` not counted by a
//! lower bucket, the last bucket is +Inf; a snapshot may be torn between buckets (counts only
//! grow, so a scrape sees each bucket at a value it had or later).

use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};

use skiff_types::Clock;

/// Finite buckets: 50 us doubling to 6.55 s; then +Inf.
pub const FINITE_BUCKETS: usize = 18;
const FIRST_BOUND_NS: u64 = 50_000;

/// Every log flush of this process.
pub static FLUSH_TIMES: FlushTimes = FlushTimes::new();

static CLOCK: LazyLock<Clock> = LazyLock::new(Clock::system);

/// The upper bound of finite bucket `i`, in nanoseconds.
pub const fn bound_ns(i: usize) -> u64 {
    FIRST_BOUND_NS << i
}

/// The bucket a flush of `ns` nanoseconds falls in (pure).
pub fn bucket_of(ns: u64) -> usize {
    (0..FINITE_BUCKETS)
        .find(|&i| ns <= bound_ns(i))
        .unwrap_or(FINITE_BUCKETS)
}

/// A histogram of flush durations.
#[derive(Debug)]
pub struct FlushTimes {
    buckets: [AtomicU64; FINITE_BUCKETS + 1],
    count: AtomicU64,
    sum_ns: AtomicU64,
}

/// What a scrape reads: per-bucket (not cumulative) counts, the last one +Inf.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlushSnapshot {
    pub buckets: [u64; FINITE_BUCKETS + 1],
    pub count: u64,
    pub sum_ns: u64,
}

impl Default for FlushTimes {
    fn default() -> Self {
        Self::new()
    }
}

impl FlushTimes {
    pub const fn new() -> Self {
        Self {
            buckets: [const { AtomicU64::new(0) }; FINITE_BUCKETS + 1],
            count: AtomicU64::new(0),
            sum_ns: AtomicU64::new(0),
        }
    }

    /// Runs `flush`, recording how long it took.
    #[inline]
    pub fn time<R>(&self, flush: impl FnOnce() -> R) -> R {
        let start = CLOCK.now();
        let r = flush();
        let ns = CLOCK.now().saturating_duration_since(start).as_nanos();
        self.record_ns(u64::try_from(ns).unwrap_or(u64::MAX));
        r
    }

    /// One flush of `ns` nanoseconds.
    #[inline]
    pub fn record_ns(&self, ns: u64) {
        if let Some(b) = self.buckets.get(bucket_of(ns)) {
            b.fetch_add(1, Ordering::Relaxed);
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_ns.fetch_add(ns, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> FlushSnapshot {
        FlushSnapshot {
            buckets: std::array::from_fn(|i| {
                self.buckets.get(i).map_or(0, |b| b.load(Ordering::Relaxed))
            }),
            count: self.count.load(Ordering::Relaxed),
            sum_ns: self.sum_ns.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_by_upper_bound() {
        for (ns, bucket) in [
            (0, 0),
            (50_000, 0),
            (50_001, 1),
            (100_000, 1),
            (100_001, 2),
            (bound_ns(FINITE_BUCKETS - 1), FINITE_BUCKETS - 1),
            (bound_ns(FINITE_BUCKETS - 1) + 1, FINITE_BUCKETS),
            (u64::MAX, FINITE_BUCKETS),
        ] {
            assert_eq!(bucket_of(ns), bucket, "{ns} ns");
        }
    }

    #[test]
    fn record_counts_bucket_count_and_sum() {
        let h = FlushTimes::new();
        h.record_ns(10);
        h.record_ns(200_000);
        h.time(|| ());
        let s = h.snapshot();
        assert_eq!(s.count, 3);
        assert!(s.sum_ns >= 200_010);
        assert_eq!(s.buckets.iter().sum::<u64>(), 3);
        assert_eq!(s.buckets[bucket_of(200_000)], 1);
    }

    #[test]
    fn a_durable_group_commit_is_timed() {
        let f = tempfile::tempfile().unwrap();
        let sync = crate::sync::SyncState::new(std::sync::Arc::new(f), 10, 0);
        let before = FLUSH_TIMES.snapshot().count;
        assert_eq!(sync.sync_to(10).unwrap(), 1);
        assert!(FLUSH_TIMES.snapshot().count > before);
    }
}
