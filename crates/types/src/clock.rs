//! The one clock (issue 13 item 3).
//!
//! Mental model: a [`Clock`] is created once, in `skiff serve` (or by a test), and passed down to
//! everything that needs the time. It answers two questions:
//! - [`Clock::now_ms`]: wall time, milliseconds since the Unix epoch, for record timestamps,
//!   retention, delivery due times, scrub schedules and anything persisted;
//! - [`Clock::now`]: monotonic time, for timeouts, deadlines, sessions and elapsed times.
//!
//! A system clock reads the operating system; a manual clock (tests, simulations) moves only when
//! told to ([`Clock::advance`], [`Clock::set_wall_ms`]). Cloning is cheap (one `Arc`) and every
//! clone sees the same time.
//!
//! Invariants: this file (and files whose path contains `clock`) is the only place outside
//! integration tests that reads `SystemTime::now` / `Instant::now`; `cargo run -p xtask -- tidy`
//! enforces it. A manual clock's monotonic time never goes backwards (`advance` takes a
//! `Duration`); its wall time may jump either way, like a real one.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::TimestampMs;

/// Wall and monotonic time, shared by everything created from one start.
#[derive(Clone, Debug)]
pub struct Clock {
    inner: Arc<Inner>,
}

#[derive(Debug)]
enum Inner {
    System,
    Manual {
        wall_ms: AtomicI64,
        /// Nanoseconds added to `base` (monotonic).
        elapsed_ns: AtomicU64,
        base: Instant,
    },
}

impl Default for Clock {
    fn default() -> Self {
        Self::system()
    }
}

impl Clock {
    /// The operating system's clocks.
    pub fn system() -> Self {
        Self {
            inner: Arc::new(Inner::System),
        }
    }

    /// A clock that stands still at wall time `wall_ms` until moved.
    pub fn manual(wall_ms: TimestampMs) -> Self {
        Self {
            inner: Arc::new(Inner::Manual {
                wall_ms: AtomicI64::new(wall_ms),
                elapsed_ns: AtomicU64::new(0),
                base: Instant::now(),
            }),
        }
    }

    /// Is this a manual clock?
    pub fn is_manual(&self) -> bool {
        matches!(*self.inner, Inner::Manual { .. })
    }

    /// Wall time in milliseconds since the Unix epoch (0 if the system clock is before it).
    pub fn now_ms(&self) -> TimestampMs {
        match &*self.inner {
            Inner::System => SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
                .unwrap_or(0),
            Inner::Manual { wall_ms, .. } => wall_ms.load(Ordering::SeqCst),
        }
    }

    /// Monotonic time.
    pub fn now(&self) -> Instant {
        match &*self.inner {
            Inner::System => Instant::now(),
            Inner::Manual {
                elapsed_ns, base, ..
            } => *base + Duration::from_nanos(elapsed_ns.load(Ordering::SeqCst)),
        }
    }

    /// Moves a manual clock's wall and monotonic time forward by `d`.
    ///
    /// # Panics
    /// On a system clock (a programming error: only tests and simulations move time).
    pub fn advance(&self, d: Duration) {
        match &*self.inner {
            Inner::System => panic!("Clock::advance on the system clock"),
            Inner::Manual {
                wall_ms,
                elapsed_ns,
                ..
            } => {
                let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
                elapsed_ns.fetch_add(ns, Ordering::SeqCst);
                let ms = i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
                wall_ms.fetch_add(ms, Ordering::SeqCst);
            }
        }
    }

    /// Sets a manual clock's wall time (monotonic time does not move): a clock jump.
    ///
    /// # Panics
    /// On a system clock.
    pub fn set_wall_ms(&self, ms: TimestampMs) {
        match &*self.inner {
            Inner::System => panic!("Clock::set_wall_ms on the system clock"),
            Inner::Manual { wall_ms, .. } => wall_ms.store(ms, Ordering::SeqCst),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let c = Clock::manual(1_000);
        let t0 = c.now();
        assert_eq!(c.now_ms(), 1_000);
        assert_eq!(c.now(), t0);
        let shared = c.clone();
        shared.advance(Duration::from_millis(250));
        assert_eq!(c.now_ms(), 1_250);
        assert_eq!(c.now() - t0, Duration::from_millis(250));
        c.set_wall_ms(10);
        assert_eq!(shared.now_ms(), 10, "wall time may jump back");
        assert_eq!(
            c.now() - t0,
            Duration::from_millis(250),
            "monotonic did not"
        );
        assert!(c.is_manual());
    }

    #[test]
    fn system_clock_is_after_2020() {
        let c = Clock::system();
        assert!(c.now_ms() > 1_577_836_800_000);
        assert!(!c.is_manual());
        let a = c.now();
        assert!(c.now() >= a);
    }
}
