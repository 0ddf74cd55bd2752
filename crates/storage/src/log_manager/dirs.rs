//! The log manager's side of log dir health (issue 12 item 4): scanning a dir at start, the
//! queries handlers use, and bringing an offline dir back.
//!
//! Bringing back (every [`PROBE_INTERVAL_MS`] per offline dir, from the ticker): the probe
//! allocates a little real space ([`crate::log_dir::probe`]); if that works, every hosted log of
//! the dir is re-opened from its files with unclean-start recovery (from its recovery point:
//! batch CRCs re-validated, a partial tail batch cut, indexes rebuilt), under its own lock, and
//! replaces the old in-memory log; partitions stranded at start are loaded and hosted; the
//! dir's checkpoints are written; only then is the dir online. A failed re-open leaves the dir
//! offline and is logged once per offline period: an I/O error is retried, anything else needs
//! a restart (said in the log).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;
use skiff_types::TopicPartition;

use super::{
    DELETE_DIR_SUFFIX, LOG_START_OFFSET_CHECKPOINT, LogManager, LogManagerConfig,
    RECOVERY_POINT_CHECKPOINT, REPLICATION_OFFSET_CHECKPOINT, SharedLog, read_checkpoint,
};
use crate::error::{IoContext, Result, StorageError};
use crate::log::{Log, LogOpenOptions};
use crate::log_dir::{DirState, LogDirHealth};

/// How often an offline dir is probed.
pub const PROBE_INTERVAL_MS: i64 = 1_000;

/// One offline log dir, for readiness and DescribeLogDirs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OfflineDir {
    pub dir: PathBuf,
    pub reason: String,
}

pub(super) fn offline_reason(h: &LogDirHealth) -> String {
    match h.state() {
        DirState::Offline { reason, .. } => reason,
        DirState::Online => "online".into(),
    }
}

/// The partition dirs of one log dir with their open options (and `-delete` dirs removed).
pub(super) fn scan_log_dir(
    cfg: &LogManagerConfig,
    dir: &Path,
    clean: bool,
    now: i64,
) -> Result<Vec<(PathBuf, TopicPartition, LogOpenOptions)>> {
    std::fs::create_dir_all(dir).at(dir)?;
    let rp = read_checkpoint(&dir.join(RECOVERY_POINT_CHECKPOINT));
    let lso = read_checkpoint(&dir.join(LOG_START_OFFSET_CHECKPOINT));
    let hw = read_checkpoint(&dir.join(REPLICATION_OFFSET_CHECKPOINT));
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).at(dir)? {
        let entry = entry.at(dir)?;
        if !entry.file_type().at(dir)?.is_dir() {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(DELETE_DIR_SUFFIX) {
            if let Err(e) = std::fs::remove_dir_all(entry.path()) {
                tracing::warn!(dir = %entry.path().display(), error = %e, "could not remove deleted partition dir");
            }
            continue;
        }
        if cfg.reserved_dirs.contains(&name) {
            continue;
        }
        let Some(tp) = TopicPartition::from_dir_name(&name) else {
            tracing::warn!(dir = %entry.path().display(), "ignoring a directory that is not <topic>-<partition>");
            continue;
        };
        let opts = LogOpenOptions {
            recovery_point: rp.get(&tp).copied().unwrap_or(0),
            log_start_offset: lso.get(&tp).copied().unwrap_or(0),
            high_watermark: hw.get(&tp).copied().unwrap_or(0),
            clean_shutdown: clean,
            now_ms: now,
        };
        out.push((entry.path(), tp, opts));
    }
    Ok(out)
}

impl LogManager {
    pub(super) fn offline_error(&self, tp: &TopicPartition, i: usize) -> StorageError {
        let h = &self.health[i.min(self.health.len().saturating_sub(1))];
        StorageError::LogDirOffline {
            tp: tp.to_string(),
            dir: h.path().display().to_string(),
            reason: offline_reason(h),
        }
    }

    /// Hosted logs whose dir is online.
    pub(super) fn online_logs(&self) -> Vec<(TopicPartition, SharedLog)> {
        self.logs
            .read()
            .iter()
            .filter(|(_, (i, _))| self.health[*i].is_online())
            .map(|(tp, (_, l))| (tp.clone(), Arc::clone(l)))
            .collect()
    }

    /// `Err(LogDirOffline)` when `tp` lives in (or was stranded in) an offline dir; `Ok` for
    /// partitions of online dirs and for partitions not hosted anywhere.
    pub fn check_partition_online(&self, tp: &TopicPartition) -> Result<()> {
        if self.health.iter().all(|h| h.is_online()) {
            return Ok(());
        }
        let i = match self.logs.read().get(tp) {
            Some((i, _)) => Some(*i),
            None => self.stranded.lock().get(tp).map(|(i, _)| *i),
        };
        match i {
            Some(i) if !self.health[i].is_online() => Err(self.offline_error(tp, i)),
            _ => Ok(()),
        }
    }

    /// Whether every log dir is online (an atomic load per dir).
    pub fn all_dirs_online(&self) -> bool {
        self.health.iter().all(|h| h.is_online())
    }

    /// Every offline log dir with the first error that took it offline.
    pub fn offline_dirs(&self) -> Vec<OfflineDir> {
        self.health
            .iter()
            .filter(|h| !h.is_online())
            .map(|h| OfflineDir {
                dir: h.path().to_path_buf(),
                reason: offline_reason(h),
            })
            .collect()
    }

    /// Whether the configured log dir `dir` is online (unknown dirs: `true`).
    pub fn is_dir_online(&self, dir: &Path) -> bool {
        self.health
            .iter()
            .find(|h| h.path() == dir)
            .is_none_or(|h| h.is_online())
    }

    /// Probes each offline dir whose probe is due and brings it back if it can take writes.
    pub(super) fn probe_offline_dirs(&self, now: i64) {
        for (i, h) in self.health.iter().enumerate() {
            if h.is_online() {
                continue;
            }
            {
                let mut last = self.last_probe_ms.lock();
                if now.saturating_sub(last[i]) < PROBE_INTERVAL_MS {
                    continue;
                }
                last[i] = now;
            }
            let dir = &self.cfg.log_dirs[i];
            if let Err(e) = crate::log_dir::probe(dir) {
                tracing::debug!(log_dir = %dir.display(), error = %e, "offline log dir still refuses writes");
                continue;
            }
            match self.bring_back(i, now) {
                Ok(n) => {
                    h.recovered();
                    tracing::info!(log_dir = %dir.display(), logs = n, "log dir re-opened after a write failure");
                }
                Err(e) => self.warn_reopen_failed(i, &e),
            }
        }
    }

    fn warn_reopen_failed(&self, i: usize, e: &StorageError) {
        let dir = self.cfg.log_dirs[i].display();
        let mut warned = self.reopen_warned.lock();
        if warned[i] {
            tracing::debug!(log_dir = %dir, error = %e, "re-opening the offline log dir failed again");
            return;
        }
        warned[i] = true;
        if matches!(e, StorageError::Io { .. }) {
            tracing::warn!(log_dir = %dir, error = %e, "re-opening the offline log dir failed; retried while it stays offline");
        } else {
            tracing::error!(log_dir = %dir, error = %e, "the offline log dir cannot be re-opened; a restart is needed to recover it");
        }
    }

    /// Re-opens every log of dir `i` from disk (see the module docs). Returns how many.
    fn bring_back(&self, i: usize, now: i64) -> Result<usize> {
        let health = Arc::clone(&self.health[i]);
        let hosted: Vec<(TopicPartition, SharedLog)> = self
            .logs
            .read()
            .iter()
            .filter(|(_, (d, _))| *d == i)
            .map(|(tp, (_, l))| (tp.clone(), Arc::clone(l)))
            .collect();
        let mut n = 0;
        for (tp, log) in hosted {
            let mut l = log.lock();
            if l.is_deleted() {
                continue;
            }
            let opts = LogOpenOptions {
                recovery_point: l.recovery_point(),
                log_start_offset: l.log_start_offset(),
                high_watermark: l.high_watermark(),
                clean_shutdown: false,
                now_ms: now,
            };
            let (mut fresh, report) = Log::open(l.dir(), tp.clone(), l.config().clone(), opts)?;
            fresh.set_health(Arc::clone(&health));
            if report.truncated_bytes > 0 {
                tracing::warn!(%tp, truncated = report.truncated_bytes, "re-open cut a partial tail");
            }
            *l = fresh;
            n += 1;
        }
        let stranded: Vec<(TopicPartition, crate::LogConfig)> = self
            .stranded
            .lock()
            .iter()
            .filter(|(_, (d, _))| *d == i)
            .map(|(tp, (_, c))| (tp.clone(), c.clone()))
            .collect();
        if !stranded.is_empty() {
            let dir = &self.cfg.log_dirs[i];
            let rp = read_checkpoint(&dir.join(RECOVERY_POINT_CHECKPOINT));
            let lso = read_checkpoint(&dir.join(LOG_START_OFFSET_CHECKPOINT));
            let hw = read_checkpoint(&dir.join(REPLICATION_OFFSET_CHECKPOINT));
            for (tp, config) in stranded {
                let opts = LogOpenOptions {
                    recovery_point: rp.get(&tp).copied().unwrap_or(0),
                    log_start_offset: lso.get(&tp).copied().unwrap_or(0),
                    high_watermark: hw.get(&tp).copied().unwrap_or(0),
                    clean_shutdown: false,
                    now_ms: now,
                };
                let (mut log, _) = Log::open(&dir.join(tp.dir_name()), tp.clone(), config, opts)?;
                log.set_health(Arc::clone(&health));
                // A single node leads its partitions: the high watermark is the log end.
                let leo = log.log_end_offset();
                log.set_high_watermark(leo);
                self.stranded.lock().remove(&tp);
                self.logs.write().insert(tp, (i, Arc::new(Mutex::new(log))));
                n += 1;
            }
        }
        self.write_dir_checkpoints(i)?;
        self.reopen_warned.lock()[i] = false;
        Ok(n)
    }
}
