//! Log dir health (issue 12 item 4): each log dir is online or offline, as in Kafka's
//! `LogDirFailureChannel`.
//!
//! Mental model: any I/O error from a write to a log dir (append, roll, index write, flush,
//! checkpoint, fsync) takes the whole dir offline, because a full or failing disk fails every
//! partition on it and a log whose write failed half-way can't be trusted in memory. While it is
//! offline every log in the dir refuses work with [`crate::StorageError::LogDirOffline`]
//! (KAFKA_STORAGE_ERROR to Produce, Fetch and ListOffsets); the other dirs keep serving. The
//! transition is logged once at ERROR. The log manager's ticker probes an offline dir with a
//! small real allocation ([`probe`]); when it succeeds the dir's logs are re-opened from disk
//! with unclean-start recovery (a partial batch at the tail is cut, indexes are rebuilt) and the
//! dir comes back online. If re-opening fails, the dir stays offline and the log says a restart
//! is needed.
//!
//! [`DirState`] + [`DirState::on_write_error`] / [`DirState::on_recovered`] are the pure
//! decision; [`LogDirHealth`] is the shared cell a [`crate::Log`] and the manager hold; the
//! probe is the only I/O here.
//!
//! Invariant: a dir goes online -> offline only through `on_write_error` (logged once), and
//! offline -> online only after every log of it was re-opened.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;

/// The state of one log dir.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum DirState {
    #[default]
    Online,
    Offline {
        /// The first error, e.g. `No space left on device (os error 28) on /data/t-0/...log`.
        reason: String,
        since_ms: i64,
    },
}

/// What the caller must do after a state change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transition {
    /// Nothing changed (already in that state).
    None,
    /// Log this at ERROR: the dir just went offline.
    WentOffline,
    /// Log this at INFO: the dir is back.
    CameOnline,
}

impl DirState {
    pub fn is_online(&self) -> bool {
        matches!(self, DirState::Online)
    }

    /// A write failed with `reason` at `now_ms`. Only the first failure is kept.
    pub fn on_write_error(&mut self, reason: String, now_ms: i64) -> Transition {
        match self {
            DirState::Online => {
                *self = DirState::Offline {
                    reason,
                    since_ms: now_ms,
                };
                Transition::WentOffline
            }
            DirState::Offline { .. } => Transition::None,
        }
    }

    /// Every log of the dir was re-opened after a successful probe.
    pub fn on_recovered(&mut self) -> Transition {
        match self {
            DirState::Online => Transition::None,
            DirState::Offline { .. } => {
                *self = DirState::Online;
                Transition::CameOnline
            }
        }
    }
}

/// The shared health of one log dir. Cheap to read on every request (an atomic).
#[derive(Debug, Default)]
pub struct LogDirHealth {
    path: PathBuf,
    offline: AtomicBool,
    state: Mutex<DirState>,
    /// The broker's clock: when the dir went offline.
    clock: skiff_types::Clock,
}

impl LogDirHealth {
    pub fn new(path: PathBuf, clock: skiff_types::Clock) -> Self {
        Self {
            path,
            clock,
            offline: AtomicBool::default(),
            state: Mutex::default(),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn is_online(&self) -> bool {
        !self.offline.load(Ordering::Acquire)
    }

    pub fn state(&self) -> DirState {
        self.state.lock().clone()
    }

    /// Takes the dir offline because of `error` (logged at ERROR the first time only).
    pub fn fail(&self, error: &dyn std::fmt::Display) {
        let mut s = self.state.lock();
        let now = self.clock.now_ms();
        if s.on_write_error(error.to_string(), now) == Transition::WentOffline {
            self.offline.store(true, Ordering::Release);
            tracing::error!(
                log_dir = %self.path.display(),
                error = %error,
                "log dir offline after an I/O error (a load or a write); its partitions answer \
                 KAFKA_STORAGE_ERROR until the dir passes a probe write and its logs are re-opened"
            );
        }
    }

    /// Brings the dir back (its logs were re-opened).
    pub fn recovered(&self) {
        let mut s = self.state.lock();
        if s.on_recovered() == Transition::CameOnline {
            self.offline.store(false, Ordering::Release);
            tracing::info!(log_dir = %self.path.display(), "log dir back online");
        }
    }
}

/// Name of the probe file [`probe`] creates and removes.
pub const PROBE_FILE: &str = ".skiff-space-probe";
/// Bytes [`probe`] allocates: enough that a dir which passes is not full again at once.
pub const PROBE_BYTES: u64 = 1 << 20;

/// Whether `dir` can take writes again: allocates [`PROBE_BYTES`] for real (`fallocate`),
/// fsyncs and removes the file.
pub fn probe(dir: &Path) -> io::Result<()> {
    let path = dir.join(PROBE_FILE);
    let result = (|| {
        let f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)?;
        rustix::fs::fallocate(&f, rustix::fs::FallocateFlags::empty(), 0, PROBE_BYTES)?;
        f.sync_all()
    })();
    let _ = std::fs::remove_file(&path);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transitions_table() {
        let off = |r: &str| DirState::Offline {
            reason: r.into(),
            since_ms: 5,
        };
        // (start, event, want state, want transition)
        type Case = (DirState, Option<&'static str>, DirState, Transition);
        let cases: Vec<Case> = vec![
            (
                DirState::Online,
                Some("ENOSPC"),
                off("ENOSPC"),
                Transition::WentOffline,
            ),
            // The first reason is kept; no second ERROR line.
            (off("ENOSPC"), Some("EIO"), off("ENOSPC"), Transition::None),
            (
                off("ENOSPC"),
                None,
                DirState::Online,
                Transition::CameOnline,
            ),
            (DirState::Online, None, DirState::Online, Transition::None),
        ];
        for (start, event, want, want_t) in cases {
            let mut s = start.clone();
            let t = match event {
                Some(r) => s.on_write_error(r.into(), 5),
                None => s.on_recovered(),
            };
            assert_eq!((s, t), (want, want_t), "from {start:?} on {event:?}");
        }
    }

    #[test]
    fn health_cell_follows_the_state() {
        let h = LogDirHealth::new("/x".into(), skiff_types::Clock::manual(1_000));
        assert!(h.is_online());
        h.fail(&"disk full");
        h.fail(&"again");
        assert!(!h.is_online());
        assert!(
            matches!(h.state(), DirState::Offline { reason, .. } if reason == "disk full"),
            "first reason kept"
        );
        h.recovered();
        assert!(h.is_online());
    }

    #[test]
    fn probe_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        probe(dir.path()).unwrap();
        assert!(!dir.path().join(PROBE_FILE).exists());
        assert!(probe(&dir.path().join("missing")).is_err());
    }
}
