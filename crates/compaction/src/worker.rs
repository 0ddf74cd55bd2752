//! The background cleaner: `log.cleaner.threads` std threads (never on the async runtime).
//!
//! Mental model: each thread loops: pick the compacted log with the highest dirty ratio that
//! is due ([`crate::select`]) and not being cleaned by another thread, clean it
//! ([`crate::clean`]), record the outcome in [`CleanerStats`] and the log dir's
//! `cleaner-offset-checkpoint`; when nothing is due, sleep `log.cleaner.backoff.ms`
//! (interruptible by [`LogCleaner::stop`]). Settings are re-read every round from a closure the
//! server supplies, so dynamic changes of the backoff, throttle and map budget apply at the next
//! clean; the thread count is fixed at start. The cleanable range needs no extra bound from
//! the caller: each log's [`skiff_storage::swap::CleanView`] carries its delivery stable offset
//! (delayed delivery), read under the log lock with the rest of the view.
//!
//! Invariants: a log is cleaned by at most one thread at a time; the checkpoint of a log only
//! moves after its clean's swaps completed; a log whose clean failed, found nothing to do or
//! made no progress (a timestamp/header key map that fills before the first dirty offset) is
//! skipped for a while (10 backoffs, 1 s - 5 min; one backoff; one backoff) instead of being
//! retried in a loop that starves the other logs ([`retry_after`]).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use skiff_storage::{LogManager, SharedLog};
use skiff_types::TopicPartition;

use crate::clean::{CleanError, CleanOutcome, CleanParams, Throttle, clean_log, cleanable_of};
use crate::stats::CleanerStats;
use crate::strategy::Strategy;

/// Broker-level cleaner settings (`log.cleaner.*`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CleanerSettings {
    pub enable: bool,
    pub threads: usize,
    pub backoff_ms: u64,
    pub dedupe_buffer_bytes: usize,
    pub load_factor: f64,
    pub io_max_bytes_per_second: f64,
}

impl Default for CleanerSettings {
    fn default() -> Self {
        Self {
            enable: true,
            threads: 1,
            backoff_ms: 15_000,
            dedupe_buffer_bytes: 128 << 20,
            load_factor: 0.9,
            io_max_bytes_per_second: f64::MAX,
        }
    }
}

type SettingsFn = dyn Fn() -> CleanerSettings + Send + Sync;

struct Shared {
    logs: Arc<LogManager>,
    stats: Arc<CleanerStats>,
    settings: Box<SettingsFn>,
    stop: AtomicBool,
    busy: Mutex<HashSet<TopicPartition>>,
    /// Logs whose last clean failed or made no progress, skipped until this time (ms).
    skip_until: Mutex<HashMap<TopicPartition, i64>>,
    sleep: (Mutex<()>, Condvar),
    seed: u64,
}

/// The running cleaner.
pub struct LogCleaner {
    shared: Arc<Shared>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for LogCleaner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogCleaner")
            .field("threads", &self.threads.len())
            .finish()
    }
}

impl LogCleaner {
    /// Starts the threads (none if `enable` is false or `threads` is 0).
    pub fn start(
        logs: Arc<LogManager>,
        stats: Arc<CleanerStats>,
        settings: impl Fn() -> CleanerSettings + Send + Sync + 'static,
    ) -> LogCleaner {
        let first = settings();
        // The key map's hash seed: differs between starts (a manual clock makes it replayable).
        let seed = (logs.clock().now_ms() as u64).rotate_left(17) ^ u64::from(std::process::id());
        let shared = Arc::new(Shared {
            logs,
            stats,
            settings: Box::new(settings),
            stop: AtomicBool::new(false),
            busy: Mutex::new(HashSet::new()),
            skip_until: Mutex::new(HashMap::new()),
            sleep: (Mutex::new(()), Condvar::new()),
            seed,
        });
        let n = if first.enable { first.threads } else { 0 };
        let mut threads = Vec::new();
        for i in 0..n {
            let s = Arc::clone(&shared);
            match std::thread::Builder::new()
                .name(format!("skiff-cleaner-{i}"))
                .spawn(move || {
                    lower_priority();
                    run(&s)
                }) {
                Ok(t) => threads.push(t),
                Err(e) => tracing::error!(error = %e, "cannot start a log cleaner thread"),
            }
        }
        tracing::info!(threads = threads.len(), "log cleaner started");
        LogCleaner { shared, threads }
    }

    pub fn stats(&self) -> &Arc<CleanerStats> {
        &self.shared.stats
    }

    /// Stops the threads (an in-progress clean is abandoned; its `.cleaned` files deleted).
    pub fn stop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        {
            let _g = self.shared.sleep.0.lock();
            self.shared.sleep.1.notify_all();
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }

    /// Runs one round on the calling thread: cleans every due log once. For tests and tools.
    pub fn clean_due_logs_now(&self) -> usize {
        let settings = (self.shared.settings)();
        let mut n = 0;
        while let Some((tp, log)) = pick(&self.shared, settings.backoff_ms) {
            clean_one(&self.shared, &settings, &tp, &log);
            self.shared.busy.lock().remove(&tp);
            n += 1;
            if n > 10_000 {
                break;
            }
        }
        n
    }
}

impl Drop for LogCleaner {
    fn drop(&mut self) {
        self.stop();
    }
}

fn run(shared: &Shared) {
    while !shared.stop.load(Ordering::Acquire) {
        let settings = (shared.settings)();
        match pick(shared, settings.backoff_ms) {
            Some((tp, log)) => {
                clean_one(shared, &settings, &tp, &log);
                shared.busy.lock().remove(&tp);
            }
            None => {
                let mut g = shared.sleep.0.lock();
                if shared.stop.load(Ordering::Acquire) {
                    break;
                }
                shared
                    .sleep
                    .1
                    .wait_for(&mut g, Duration::from_millis(settings.backoff_ms.max(1)));
            }
        }
    }
}

/// Nice value of the cleaner threads: background work, below the request path (Linux applies
/// `setpriority(PRIO_PROCESS, tid)` to one thread). With the broker confined to fewer cores
/// than threads, the tokio workers then win the CPU and the cleaner takes what is left.
pub const CLEANER_NICE: i32 = 10;

fn lower_priority() {
    let tid = rustix::thread::gettid();
    if let Err(e) = rustix::process::setpriority_process(Some(tid), CLEANER_NICE) {
        tracing::warn!(error = %e, "cannot lower the cleaner thread's priority");
    }
}

fn checkpoint_of(shared: &Shared, tp: &TopicPartition) -> Option<i64> {
    shared.logs.cleaner_checkpoint(tp)
}

/// The due log with the highest dirty ratio, marked busy. Also refreshes every compacted log's
/// dirty ratio in the stats.
fn pick(shared: &Shared, _backoff_ms: u64) -> Option<(TopicPartition, SharedLog)> {
    let now = shared.logs.clock().now_ms();
    shared.skip_until.lock().retain(|_, until| *until > now);
    let mut best: Option<(f64, TopicPartition, SharedLog)> = None;
    let all = shared.logs.all();
    shared.stats.retain(|tp| all.iter().any(|(t, _)| t == tp));
    for (tp, log) in all {
        let view = {
            let l = log.lock();
            if !l.config().cleanup_policy_compact {
                continue;
            }
            match l.clean_view() {
                Ok(v) => v,
                Err(e) => {
                    tracing::warn!(%tp, error = %e, "cleaner cannot inspect the log");
                    continue;
                }
            }
        };
        let ckpt = checkpoint_of(shared, &tp);
        let c = cleanable_of(&view, ckpt, now, i64::MAX);
        let strategy = match Strategy::of(&view.config) {
            Strategy::Offset => "offset".to_string(),
            Strategy::Timestamp => "timestamp".to_string(),
            Strategy::Header(h) => format!("header:{h}"),
        };
        shared.stats.update(&tp, |s| {
            s.dirty_ratio = c.ratio;
            s.first_dirty_offset = c.first_dirty;
            s.strategy = strategy;
        });
        if c.due
            && !shared.busy.lock().contains(&tp)
            && !shared.skip_until.lock().contains_key(&tp)
            && best.as_ref().is_none_or(|(r, _, _)| c.ratio > *r)
        {
            best = Some((c.ratio, tp, log));
        }
    }
    let (_, tp, log) = best?;
    if !shared.busy.lock().insert(tp.clone()) {
        return None;
    }
    Some((tp, log))
}

fn clean_one(shared: &Shared, settings: &CleanerSettings, tp: &TopicPartition, log: &SharedLog) {
    let clock = shared.logs.clock();
    let started = clock.now();
    let now = clock.now_ms();
    let params = CleanParams {
        map_bytes: settings.dedupe_buffer_bytes / settings.threads.max(1),
        load_factor: settings.load_factor,
        now_ms: now,
        extra_bound: i64::MAX,
        seed: shared.seed,
    };
    let mut throttle = Throttle::new(settings.io_max_bytes_per_second, clock);
    let ckpt = checkpoint_of(shared, tp);
    let result = clean_log(log, ckpt, &params, &mut throttle, &shared.stop);
    if let Some(until) = retry_after(&result, now, settings.backoff_ms) {
        shared.skip_until.lock().insert(tp.clone(), until);
    }
    match result {
        Ok(Some(o)) => {
            let ms = clock.now().saturating_duration_since(started).as_millis() as u64;
            // Only while `log` is still the hosted log of `tp` (a deleted or re-created
            // partition gets no entry from a clean of the old one).
            if let Err(e) = shared.logs.set_cleaner_checkpoint(tp, log, o.end) {
                tracing::warn!(%tp, error = %e, "cannot write the cleaner checkpoint");
            }
            shared.stats.update(tp, |s| {
                s.first_dirty_offset = o.end;
                s.last_clean_time_ms = Some(now);
                s.last_clean_duration_ms = ms;
                s.cleans += 1;
                s.bytes_read += o.bytes_read;
                s.bytes_written += o.bytes_written;
                s.bytes_cleaned += o.bytes_read + o.bytes_written;
                s.records_removed += o.records_removed;
                s.tombstones_removed += o.tombstones_removed;
                s.aborted_records_removed += o.aborted_records_removed;
                s.markers_removed += o.markers_removed;
                s.invalid_header_values += o.invalid_header_values;
                s.last_error = None;
            });
            let mb = (o.bytes_read + o.bytes_written) as f64 / 1e6;
            tracing::info!(
                %tp,
                first_dirty = o.first_dirty,
                end = o.end,
                dirty_ratio = o.ratio,
                bytes_read = o.bytes_read,
                bytes_written = o.bytes_written,
                records_removed = o.records_removed,
                tombstones_removed = o.tombstones_removed,
                aborted_records_removed = o.aborted_records_removed,
                markers_removed = o.markers_removed,
                invalid_header_values = o.invalid_header_values,
                segments_replaced = o.segments_replaced,
                segments_written = o.segments_written,
                map_full = o.map_full,
                ms,
                mb_per_s = if ms > 0 { mb * 1000.0 / ms as f64 } else { 0.0 },
                "log cleaned"
            );
        }
        Ok(None) | Err(CleanError::Stopped) => {}
        Err(e) => {
            if shared.logs.get(tp).is_some() {
                tracing::warn!(%tp, error = %e, "log clean failed; retried after the backoff");
                shared
                    .stats
                    .update(tp, |s| s.last_error = Some(e.to_string()));
            }
        }
    }
}

/// Until when (ms) a log is skipped after a clean with this result, or `None` when it may be
/// picked again at once. Pure: the decision the cleaner threads apply.
/// - progress (the first dirty offset moved): `None`;
/// - no progress: a whole-range strategy (timestamp, header) whose key map filled before it
///   reached the first dirty offset rewrites the clean part and stays exactly as dirty, so it
///   would be re-picked forever and starve every other log: one backoff;
/// - due but nothing to do (the log changed since the pick): one backoff;
/// - an error: Kafka marks such a log uncleanable; here it is retried after 10 backoffs
///   (1 s to 5 min), so one bad log cannot keep a cleaner thread busy;
/// - stopped: `None` (the cleaner is going away).
pub(crate) fn retry_after(
    result: &Result<Option<CleanOutcome>, CleanError>,
    now: i64,
    backoff_ms: u64,
) -> Option<i64> {
    let backoff = i64::try_from(backoff_ms).unwrap_or(i64::MAX);
    match result {
        Ok(Some(o)) if o.end > o.first_dirty => None,
        Ok(_) => Some(now.saturating_add(backoff)),
        Err(CleanError::Stopped) => None,
        Err(_) => {
            let pause = backoff_ms.saturating_mul(10).clamp(1_000, 300_000);
            Some(now.saturating_add(pause as i64))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (name, clean result, backoff ms, expected skip-until).
    type Case = (
        &'static str,
        Result<Option<CleanOutcome>, CleanError>,
        u64,
        Option<i64>,
    );

    fn outcome(first_dirty: i64, end: i64) -> CleanOutcome {
        CleanOutcome {
            first_dirty,
            end,
            ..CleanOutcome::default()
        }
    }

    #[test]
    fn retry_after_table() {
        let now = 1_000_000;
        let io = || CleanError::Io(std::io::Error::other("disk"));
        let cases: Vec<Case> = vec![
            ("progress", Ok(Some(outcome(10, 20))), 100, None),
            ("progress from 0", Ok(Some(outcome(0, 1))), 100, None),
            (
                "map full, no progress",
                Ok(Some(outcome(10, 10))),
                100,
                Some(now + 100),
            ),
            ("nothing to do", Ok(None), 15_000, Some(now + 15_000)),
            ("stopped", Err(CleanError::Stopped), 100, None),
            (
                "error, short backoff: 1 s floor",
                Err(io()),
                10,
                Some(now + 1_000),
            ),
            ("error: 10 backoffs", Err(io()), 15_000, Some(now + 150_000)),
            (
                "error, long backoff: 5 min cap",
                Err(io()),
                60_000,
                Some(now + 300_000),
            ),
        ];
        for (name, result, backoff, want) in cases {
            assert_eq!(retry_after(&result, now, backoff), want, "{name}");
        }
    }
}
