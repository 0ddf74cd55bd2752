//! The background scrubber: one throttled std thread (nice 10, like the cleaner threads) that
//! verifies every sealed segment's CRCs once and again every `skiff.log.scrub.interval.ms`.
//!
//! Mental model: each round takes a snapshot of every hosted log's sealed segments (base,
//! size, `Arc<File>`, next base, last verified time) under each log's lock, asks the pure
//! [`next_segment`] which one is due, and verifies it *without* the log lock
//! ([`verify_segment`]; a sealed segment is immutable, and its `Arc<File>` stays readable even
//! if retention deletes it meanwhile), reading at most `io_max_bytes_per_second`. Then, under
//! the lock, if the segment is still there with the same size, every damaged region becomes a
//! quarantined range ([`Log::quarantine`]: logged at ERROR, persisted, counted) and the
//! segment is marked verified in `scrub-checkpoint`, so progress survives restarts. The bytes
//! stay where they are on a running broker (reads jump over them); the next recovery that
//! re-validates the segment moves them aside. Settings are re-read every round.
//!
//! Invariant: the scrubber never writes a segment and never holds a log's lock during I/O.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use super::quarantine::{FoundBy, QuarantinedRange};
use super::scrub::{Candidate, ScrubDecision, next_segment};
use super::verify::{Verification, verify_segment};
use crate::log::Log;
use crate::log_manager::LogManager;

/// `skiff.log.scrub.*`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScrubSettings {
    /// `skiff.log.scrub.enable`
    pub enable: bool,
    /// `skiff.log.scrub.interval.ms`: a verified segment is verified again after this long.
    pub interval_ms: i64,
    /// `skiff.log.scrub.io.max.bytes.per.second`
    pub io_max_bytes_per_second: f64,
    /// `skiff.log.scrub.backoff.ms`: sleep when nothing is due.
    pub backoff_ms: u64,
}

impl Default for ScrubSettings {
    fn default() -> Self {
        Self {
            enable: true,
            interval_ms: 7 * 24 * 3600 * 1000,
            io_max_bytes_per_second: 10.0 * 1024.0 * 1024.0,
            backoff_ms: 30_000,
        }
    }
}

/// Nice value of the scrubber thread (as the cleaner's).
pub const SCRUBBER_NICE: i32 = 10;

type SettingsFn = dyn Fn() -> ScrubSettings + Send + Sync;

struct Shared {
    logs: Arc<LogManager>,
    settings: Box<SettingsFn>,
    stop: AtomicBool,
    sleep: (Mutex<()>, Condvar),
}

/// The running scrubber; stops when dropped.
pub struct Scrubber {
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for Scrubber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scrubber").finish_non_exhaustive()
    }
}

impl Scrubber {
    /// Starts the thread (it idles while `enable` is false).
    pub fn start(
        logs: Arc<LogManager>,
        settings: impl Fn() -> ScrubSettings + Send + Sync + 'static,
    ) -> Scrubber {
        let shared = Arc::new(Shared {
            logs,
            settings: Box::new(settings),
            stop: AtomicBool::new(false),
            sleep: (Mutex::new(()), Condvar::new()),
        });
        let s = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("skiff-scrubber".into())
            .spawn(move || {
                let tid = rustix::thread::gettid();
                if let Err(e) = rustix::process::setpriority_process(Some(tid), SCRUBBER_NICE) {
                    tracing::warn!(error = %e, "cannot lower the scrubber thread's priority");
                }
                run(&s)
            })
            .map_err(|e| tracing::error!(error = %e, "cannot start the scrubber thread"))
            .ok();
        Scrubber { shared, thread }
    }

    pub fn stop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        {
            let _g = self.shared.sleep.0.lock();
            self.shared.sleep.1.notify_all();
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Scrubber {
    fn drop(&mut self) {
        self.stop();
    }
}

fn run(shared: &Shared) {
    while !shared.stop.load(Ordering::Acquire) {
        let settings = (shared.settings)();
        let worked = settings.enable && scrub_one(shared, &settings);
        if !worked {
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

/// A sealed segment as seen under its log's lock.
struct Sealed {
    base: i64,
    size: u64,
    next_base: i64,
    file: Arc<std::fs::File>,
    verified_at_ms: Option<i64>,
}

/// Verifies the next due segment, if any. Returns whether it did.
fn scrub_one(shared: &Shared, settings: &ScrubSettings) -> bool {
    let mut cands = Vec::new();
    let mut snaps = Vec::new();
    for (i, (_, log)) in shared.logs.all().into_iter().enumerate() {
        let l = log.lock();
        if l.is_deleted() {
            continue;
        }
        for s in l.sealed_segments() {
            cands.push(Candidate {
                partition: i,
                base: s.base,
                verified_at_ms: s.verified_at_ms,
            });
            snaps.push((Arc::clone(&log), s));
        }
    }
    let ScrubDecision::Verify(i) =
        next_segment(&cands, shared.logs.clock().now_ms(), settings.interval_ms)
    else {
        return false;
    };
    let (log, snap) = &snaps[i];
    let clock = shared.logs.clock();
    let started = clock.now();
    let rate = settings.io_max_bytes_per_second.max(1.0);
    let stop = &shared.stop;
    let result = verify_segment(
        &snap.file,
        snap.base,
        snap.size,
        Some(snap.next_base),
        |h| {
            // Throttle: never ahead of `rate` bytes per second since the start of this segment.
            let due = Duration::from_secs_f64(h.end_position() as f64 / rate);
            while let Some(wait) = due.checked_sub(clock.now().saturating_duration_since(started)) {
                if stop.load(Ordering::Acquire) {
                    return Ok(false);
                }
                let mut g = shared.sleep.0.lock();
                shared
                    .sleep
                    .1
                    .wait_for(&mut g, wait.min(Duration::from_millis(100)));
            }
            Ok(!stop.load(Ordering::Acquire))
        },
    );
    match result {
        Ok(v) if !v.aborted => {
            log.lock()
                .record_scrub(snap.base, snap.size, snap.next_base, &v, clock.now_ms())
        }
        Ok(_) => {}
        Err(e) => {
            tracing::error!(base = snap.base, error = %e, "scrubbing a segment failed");
        }
    }
    true
}

impl Log {
    /// The sealed segments (all but the active one).
    fn sealed_segments(&self) -> Vec<Sealed> {
        let bases: Vec<i64> = self.segments.keys().copied().collect();
        let integrity = self.integrity.lock();
        bases
            .windows(2)
            .filter_map(|w| {
                let seg = self.segments.get(&w[0])?;
                Some(Sealed {
                    base: w[0],
                    size: seg.size(),
                    next_base: w[1],
                    file: Arc::clone(seg.file()),
                    verified_at_ms: integrity.scrub.verified_at(w[0]),
                })
            })
            .collect()
    }

    /// Records a scrub of segment `base` (verified at `size` bytes): quarantines its damage,
    /// marks it verified. Ignored if the segment changed meanwhile (deleted, swapped, grown).
    pub fn record_scrub(
        &self,
        base: i64,
        size: u64,
        next_base: i64,
        v: &Verification,
        now_ms: i64,
    ) {
        let Some(seg) = self.segments.get(&base) else {
            return;
        };
        if seg.size() != size || self.deleted {
            return;
        }
        let mut found = Vec::new();
        for d in &v.damages {
            found.push(QuarantinedRange {
                start_offset: d.start_offset,
                end_offset: d.end_offset,
                segment: base,
                position: d.position,
                len: d.len,
                reason: d.reason,
                found_by: FoundBy::Scrub,
            });
        }
        if let Some(t) = v.tail {
            found.push(QuarantinedRange {
                start_offset: t.start_offset,
                end_offset: next_base.max(t.start_offset),
                segment: base,
                position: t.position,
                len: size - t.position,
                reason: t.reason,
                found_by: FoundBy::Scrub,
            });
        }
        let mut new = 0;
        for r in found {
            if self.quarantine(r) {
                new += 1;
            }
        }
        let live: Vec<i64> = self.segments.keys().copied().collect();
        let mut i = self.integrity.lock();
        i.scrub.corrupt_found += new;
        i.scrub.bytes_verified += size;
        if let Err(e) = i.scrub.mark(base, now_ms, &live) {
            tracing::warn!(tp = %self.tp, error = %e, "could not save scrub progress");
        }
        tracing::debug!(tp = %self.tp, base, size, damaged = new, "scrubbed a segment");
    }
}
