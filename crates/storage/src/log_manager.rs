//! The log manager: every partition log on this broker, across its log dirs.
//!
//! Mental model (Kafka's LogManager): each log dir holds partition directories plus four
//! checkpoint files and, after an orderly shutdown, the `.kafka_cleanshutdown` marker. Opening
//! reads the marker (then deletes it: a crash from now on is unclean), the checkpoints, and loads
//! every partition in parallel on a bounded number of threads. A background thread ("ticker")
//! applies retention every `log.retention.check.interval.ms`, fsyncs rolled segments and logs
//! whose `flush.messages`/`flush.ms` are due, deletes `.deleted` files after their delay,
//! forgets producer ids idle for `producer.id.expiration.ms`, and rewrites the checkpoints on
//! their intervals.
//!
//! KAFKA-851 invariant: every checkpoint is rewritten in full from the set of logs this broker
//! *hosts* (the `logs` map), never from leadership or liveness state, so a hosted partition is
//! never dropped from `replication-offset-checkpoint`.
//!
//! Log dir failures (issue 12, [`crate::log_dir`]): a dir whose load, write or checkpoint fails
//! with an I/O error goes offline alone (the start fails only if every dir is offline); its
//! partitions are refused and never re-created elsewhere, the ticker probes it and re-opens its
//! logs when space returns (`dirs.rs`). An offline dir gets no clean-shutdown marker.
//!
//! Moving a log between log dirs (AlterReplicaLogDirs): `moves.rs`, copy then swap, finished
//! or undone at start after a crash.
//!
//! Threads: the manager is `Sync`; each log sits behind its own mutex ([`SharedLog`]). fsyncs of
//! rolled segments run without holding a log's mutex.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use skiff_types::TopicPartition;

use crate::checkpoint::OffsetCheckpointFile;
use crate::config::LogConfig;
use crate::error::{IoContext, Result, StorageError};
use crate::log::{LoadReport, Log, LogOpenOptions};
use crate::log_dir::LogDirHealth;

mod dirs;
mod moves;
pub use dirs::{OfflineDir, PROBE_INTERVAL_MS};
use dirs::{offline_reason, scan_log_dir};
pub use moves::{FUTURE_DIR_SUFFIX, MoveOutcome};

/// A log shared between request handlers and the background ticker.
pub type SharedLog = Arc<Mutex<Log>>;

/// What loading reported per partition.
pub type LoadReports = Vec<(TopicPartition, LoadReport)>;

type Loaded = std::result::Result<
    (usize, TopicPartition, Log, LoadReport),
    (usize, TopicPartition, LogConfig, StorageError),
>;

pub const CLEAN_SHUTDOWN_FILE: &str = ".kafka_cleanshutdown";
pub const RECOVERY_POINT_CHECKPOINT: &str = "recovery-point-offset-checkpoint";
pub const LOG_START_OFFSET_CHECKPOINT: &str = "log-start-offset-checkpoint";
pub const REPLICATION_OFFSET_CHECKPOINT: &str = "replication-offset-checkpoint";
/// Threads closing logs at shutdown (issue 12: 5,000 partitions close in parallel).
const CLOSE_THREADS: usize = 32;
/// Partition directories being deleted end with this.
pub const DELETE_DIR_SUFFIX: &str = "-delete";

/// Broker-level settings of the manager (Kafka names in the field docs).
#[derive(Clone, Debug)]
pub struct LogManagerConfig {
    /// `log.dirs`
    pub log_dirs: Vec<PathBuf>,
    /// `num.recovery.threads.per.data.dir` (4.0 default 2)
    pub recovery_threads_per_dir: usize,
    /// `log.retention.check.interval.ms`
    pub retention_check_interval_ms: i64,
    /// `log.flush.offset.checkpoint.interval.ms`
    pub recovery_point_checkpoint_interval_ms: i64,
    /// `log.flush.start.offset.checkpoint.interval.ms`
    pub start_offset_checkpoint_interval_ms: i64,
    /// `replica.high.watermark.checkpoint.interval.ms`
    pub high_watermark_checkpoint_interval_ms: i64,
    /// How often the background thread wakes.
    pub tick_interval_ms: u64,
    /// Partition directory names the log manager must leave alone (e.g. the metadata log).
    pub reserved_dirs: Vec<String>,
    /// `producer.id.expiration.ms`: idle producers are forgotten after this long.
    pub producer_id_expiration_ms: i64,
    /// `producer.id.expiration.check.interval.ms`
    pub producer_id_expiration_check_interval_ms: i64,
    /// The broker's one clock (issue 13): the background ticker, deletes and shutdown read it.
    pub clock: skiff_types::Clock,
}

impl Default for LogManagerConfig {
    fn default() -> Self {
        Self {
            log_dirs: vec![PathBuf::from("./skiff-data")],
            recovery_threads_per_dir: 2,
            retention_check_interval_ms: 300_000,
            recovery_point_checkpoint_interval_ms: 60_000,
            start_offset_checkpoint_interval_ms: 60_000,
            high_watermark_checkpoint_interval_ms: 5_000,
            tick_interval_ms: 200,
            reserved_dirs: vec!["__cluster_metadata-0".to_string()],
            producer_id_expiration_ms: crate::producer_state::DEFAULT_PRODUCER_ID_EXPIRATION_MS,
            producer_id_expiration_check_interval_ms:
                crate::producer_state::DEFAULT_PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS,
            clock: skiff_types::Clock::system(),
        }
    }
}

#[derive(Debug, Default)]
struct Timers {
    last_retention_ms: i64,
    last_recovery_checkpoint_ms: i64,
    last_start_checkpoint_ms: i64,
    last_hw_checkpoint_ms: i64,
    last_producer_expiry_ms: i64,
}

/// All partition logs of this broker.
#[derive(Debug)]
pub struct LogManager {
    cfg: LogManagerConfig,
    logs: RwLock<BTreeMap<TopicPartition, (usize, SharedLog)>>,
    timers: Mutex<Timers>,
    /// Serialises checkpoint writers (ticker vs. shutdown vs. explicit calls) and holds what
    /// each dir's checkpoint files were last written with: the ticker skips a dir whose maps
    /// did not change (an idle broker does not rewrite and fsync identical files every few
    /// seconds).
    checkpoint_lock: Mutex<Vec<Option<CheckpointMaps>>>,
    closed: AtomicBool,
    /// compaction (issue 7): each log dir's `cleaner-offset-checkpoint`, loaded on first use.
    /// Owned here so that deleting a partition drops its entry under the same lock the
    /// cleaner sets entries with: a re-created partition never inherits a first dirty offset.
    cleaner_checkpoints: Mutex<HashMap<PathBuf, crate::swap::CleanerCheckpoint>>,
    /// issue 12: the health of each log dir (same order as `cfg.log_dirs`); every log of a dir
    /// holds the same `Arc`.
    health: Vec<Arc<LogDirHealth>>,
    /// issue 12: partitions found in a dir whose load failed with an I/O error at start: not
    /// hosted (and never re-created elsewhere) until the dir comes back.
    stranded: Mutex<BTreeMap<TopicPartition, (usize, LogConfig)>>,
    /// issue 12: when each offline dir was last probed.
    last_probe_ms: Mutex<Vec<i64>>,
    /// issue 12: a failed re-open of each dir was logged (once per offline period).
    reopen_warned: Mutex<Vec<bool>>,
}

impl LogManager {
    /// Opens every log dir (creating it on first start) and loads all partitions found.
    /// `config_for` gives each partition's effective log config.
    pub fn open(
        cfg: LogManagerConfig,
        config_for: &(dyn Fn(&TopicPartition) -> LogConfig + Sync),
        now: i64,
    ) -> Result<(Arc<Self>, LoadReports)> {
        if cfg.log_dirs.is_empty() {
            return Err(StorageError::InvalidArgument("log.dirs is empty".into()));
        }
        let health: Vec<Arc<LogDirHealth>> = cfg
            .log_dirs
            .iter()
            .map(|d| Arc::new(LogDirHealth::new(d.clone(), cfg.clock.clone())))
            .collect();
        // Moves a crash interrupted are finished or undone before anything is scanned.
        moves::resolve_moves(&cfg.log_dirs)?;
        let mut work = Vec::new();
        let mut per_dir = Vec::new();
        for (i, dir) in cfg.log_dirs.iter().enumerate() {
            let clean = dir.join(CLEAN_SHUTDOWN_FILE).exists();
            match scan_log_dir(&cfg, dir, clean, now) {
                Ok(found) => work.extend(found.into_iter().map(|(path, tp, o)| (i, path, tp, o))),
                // issue 12: a dir that cannot even be listed is offline; the others serve.
                Err(e) => health[i].fail(&e),
            }
            per_dir.push((dir.join(CLEAN_SHUTDOWN_FILE), clean));
        }
        let threads =
            (cfg.recovery_threads_per_dir.max(1) * cfg.log_dirs.len()).min(work.len().max(1));
        let queue = Mutex::new(work);
        let results: Mutex<Vec<Loaded>> = Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| {
                    loop {
                        let Some((i, path, tp, opts)) = queue.lock().pop() else {
                            break;
                        };
                        let r = match Log::open(&path, tp.clone(), config_for(&tp), opts) {
                            Ok((log, rep)) => Ok((i, tp, log, rep)),
                            Err(e) => Err((i, tp.clone(), config_for(&tp), e)),
                        };
                        results.lock().push(r);
                    }
                });
            }
        });
        let mut logs = BTreeMap::new();
        let mut reports = Vec::new();
        let mut stranded = BTreeMap::new();
        for r in results.into_inner() {
            let (i, tp, mut log, rep) = match r {
                Ok(loaded) => loaded,
                // issue 12: an I/O error (e.g. a full disk) takes only that dir offline.
                Err((i, tp, config, e @ StorageError::Io { .. })) => {
                    health[i].fail(&format_args!("loading {tp}: {e}"));
                    stranded.insert(tp, (i, config));
                    continue;
                }
                Err((_, _, _, e)) => return Err(e),
            };
            // Kafka drops producers that expired while the broker was down when it loads them.
            log.remove_expired_producers(now, cfg.producer_id_expiration_ms);
            log.set_health(Arc::clone(&health[i]));
            reports.push((tp.clone(), rep));
            logs.insert(tp, (i, Arc::new(Mutex::new(log))));
        }
        for (i, (marker, clean)) in per_dir.into_iter().enumerate() {
            if clean && let Err(e) = std::fs::remove_file(&marker) {
                health[i].fail(&format_args!("{}: {e}", marker.display()));
            }
        }
        // Kafka refuses to start when every log dir is offline.
        if health.iter().all(|h| !h.is_online()) {
            let why: Vec<String> = health
                .iter()
                .map(|h| format!("{}: {}", h.path().display(), offline_reason(h)))
                .collect();
            return Err(StorageError::InvalidArgument(format!(
                "every log dir is offline, cannot start: {}",
                why.join("; ")
            )));
        }
        let mgr = Arc::new(LogManager {
            cfg,
            logs: RwLock::new(logs),
            timers: Mutex::new(Timers {
                last_retention_ms: now,
                last_recovery_checkpoint_ms: now,
                last_start_checkpoint_ms: now,
                last_hw_checkpoint_ms: now,
                last_producer_expiry_ms: now,
            }),
            checkpoint_lock: Mutex::new(Vec::new()),
            cleaner_checkpoints: Mutex::new(HashMap::new()),
            closed: AtomicBool::new(false),
            last_probe_ms: Mutex::new(vec![now; health.len()]),
            reopen_warned: Mutex::new(vec![false; health.len()]),
            health,
            stranded: Mutex::new(stranded),
        });
        mgr.write_checkpoints()?;
        Ok((mgr, reports))
    }

    /// The broker's clock (from [`LogManagerConfig::clock`]).
    pub fn clock(&self) -> &skiff_types::Clock {
        &self.cfg.clock
    }

    pub fn config(&self) -> &LogManagerConfig {
        &self.cfg
    }

    pub fn get(&self, tp: &TopicPartition) -> Option<SharedLog> {
        self.logs.read().get(tp).map(|(_, l)| Arc::clone(l))
    }

    /// Every hosted log.
    pub fn all(&self) -> Vec<(TopicPartition, SharedLog)> {
        self.logs
            .read()
            .iter()
            .map(|(tp, (_, l))| (tp.clone(), Arc::clone(l)))
            .collect()
    }

    /// The log dir of a hosted partition.
    pub fn dir_of(&self, tp: &TopicPartition) -> Option<PathBuf> {
        self.logs
            .read()
            .get(tp)
            .map(|(i, _)| self.cfg.log_dirs[*i].clone())
    }

    /// compaction (issue 7): the first dirty offset recorded for `tp`, if any.
    pub fn cleaner_checkpoint(&self, tp: &TopicPartition) -> Option<i64> {
        let root = self.dir_of(tp)?;
        let mut c = self.cleaner_checkpoints.lock();
        c.entry(root.clone())
            .or_insert_with(|| crate::swap::CleanerCheckpoint::load(&root))
            .get(tp)
    }

    /// compaction (issue 7): records `offset` as `tp`'s first dirty offset, if `log` is still
    /// the hosted log of `tp` (not deleted, not replaced by a re-created partition). Returns
    /// whether it was recorded. Entries of partitions no longer in that dir are dropped.
    pub fn set_cleaner_checkpoint(
        &self,
        tp: &TopicPartition,
        log: &SharedLog,
        offset: i64,
    ) -> Result<bool> {
        let mut c = self.cleaner_checkpoints.lock();
        let Some(root) = self.dir_of(tp) else {
            return Ok(false);
        };
        if !self.get(tp).is_some_and(|l| Arc::ptr_eq(&l, log)) {
            return Ok(false);
        }
        let cp = c
            .entry(root.clone())
            .or_insert_with(|| crate::swap::CleanerCheckpoint::load(&root));
        let path = root.join(crate::swap::CLEANER_OFFSET_CHECKPOINT);
        cp.set(tp, offset, |t| self.dir_of(t).as_ref() == Some(&root))
            .map_err(|e| StorageError::Io {
                path: path.display().to_string(),
                source: e,
            })?;
        Ok(true)
    }

    /// Returns the log, creating it (in the log dir with the fewest partitions) if needed.
    pub fn get_or_create(
        &self,
        tp: &TopicPartition,
        config: LogConfig,
        now: i64,
    ) -> Result<SharedLog> {
        if let Some(l) = self.get(tp) {
            return Ok(l);
        }
        let mut logs = self.logs.write();
        if let Some((_, l)) = logs.get(tp) {
            return Ok(Arc::clone(l));
        }
        // issue 12: a partition of an offline dir is never re-created elsewhere.
        if let Some(i) = self.stranded.lock().get(tp).map(|(i, _)| *i) {
            return Err(self.offline_error(tp, i));
        }
        let mut counts = vec![0usize; self.cfg.log_dirs.len()];
        for (i, _) in logs.values() {
            counts[*i] += 1;
        }
        // New partitions go to the online dir with the fewest (Kafka skips offline dirs).
        let Some(i) = (0..counts.len())
            .filter(|i| self.health[*i].is_online())
            .min_by_key(|i| counts[*i])
        else {
            return Err(self.offline_error(tp, 0));
        };
        let dir = self.cfg.log_dirs[i].join(tp.dir_name());
        let opts = LogOpenOptions {
            recovery_point: 0,
            log_start_offset: 0,
            high_watermark: 0,
            clean_shutdown: true,
            now_ms: now,
        };
        let (mut log, _) = match Log::open(&dir, tp.clone(), config, opts) {
            Ok(opened) => opened,
            Err(e) => {
                if matches!(e, StorageError::Io { .. }) {
                    self.health[i].fail(&format_args!("creating {tp}: {e}"));
                }
                return Err(e);
            }
        };
        log.set_health(Arc::clone(&self.health[i]));
        let shared = Arc::new(Mutex::new(log));
        logs.insert(tp.clone(), (i, Arc::clone(&shared)));
        Ok(shared)
    }

    /// Stops hosting `tp`: renames its directory to `<dir>.<millis>-delete` and removes it.
    pub fn delete(&self, tp: &TopicPartition) -> Result<bool> {
        let Some((i, log)) = self.logs.write().remove(tp) else {
            return Ok(false);
        };
        // Nothing writes through this log again (an in-flight clean refuses its swap).
        log.lock().deleted = true;
        {
            let root = &self.cfg.log_dirs[i];
            let mut c = self.cleaner_checkpoints.lock();
            let cp = c
                .entry(root.clone())
                .or_insert_with(|| crate::swap::CleanerCheckpoint::load(root));
            if let Err(e) = cp.remove(tp) {
                tracing::warn!(%tp, error = %e, "could not drop the cleaner checkpoint entry");
            }
        }
        let dir = self.cfg.log_dirs[i].join(tp.dir_name());
        let doomed = self.cfg.log_dirs[i].join(format!(
            "{}.{}{}",
            tp.dir_name(),
            self.cfg.clock.now_ms(),
            DELETE_DIR_SUFFIX
        ));
        drop(log);
        std::fs::rename(&dir, &doomed).at(&dir)?;
        if let Err(e) = std::fs::remove_dir_all(&doomed) {
            tracing::warn!(dir = %doomed.display(), error = %e, "could not remove deleted partition dir (retried at next start)");
        }
        self.write_checkpoints()?;
        Ok(true)
    }

    /// One background step at time `now`: flushes, retention, file deletion, checkpoints.
    pub fn tick(&self, now: i64) -> Result<()> {
        // issue 12: offline dirs are probed first; a failure in one dir never stops the others.
        self.probe_offline_dirs(now);
        let logs = self.online_logs();
        for (tp, log) in &logs {
            let plan = {
                let l = log.lock();
                l.inactive_flush_plan()
            };
            if let Some(plan) = plan {
                if let Err(e) = plan.execute() {
                    let l = log.lock();
                    l.health()
                        .fail(&format_args!("{tp}: fsync of rolled segments: {e}"));
                    continue;
                }
                log.lock().complete_flush(&plan);
            }
            let mut l = log.lock();
            if l.flush_due(now)
                && let Err(e) = l.flush(now)
            {
                tracing::debug!(%tp, error = %e, "flush failed");
            }
            l.delete_expired_files(now);
        }
        let (retention, rp, start, hw, expiry) = {
            let mut t = self.timers.lock();
            let due = |last: &mut i64, every: i64| {
                let d = now.saturating_sub(*last) >= every;
                if d {
                    *last = now;
                }
                d
            };
            (
                due(
                    &mut t.last_retention_ms,
                    self.cfg.retention_check_interval_ms,
                ),
                due(
                    &mut t.last_recovery_checkpoint_ms,
                    self.cfg.recovery_point_checkpoint_interval_ms,
                ),
                due(
                    &mut t.last_start_checkpoint_ms,
                    self.cfg.start_offset_checkpoint_interval_ms,
                ),
                due(
                    &mut t.last_hw_checkpoint_ms,
                    self.cfg.high_watermark_checkpoint_interval_ms,
                ),
                due(
                    &mut t.last_producer_expiry_ms,
                    self.cfg.producer_id_expiration_check_interval_ms,
                ),
            )
        };
        if expiry {
            for (tp, log) in &logs {
                let removed = log
                    .lock()
                    .remove_expired_producers(now, self.cfg.producer_id_expiration_ms);
                if removed > 0 {
                    tracing::debug!(%tp, removed, "expired idle producer ids");
                }
            }
        }
        if retention {
            for (tp, log) in &logs {
                let mut l = log.lock();
                if l.check_online().is_err() {
                    continue;
                }
                // delivery delay (issue 8): never remove a batch not yet delivered
                let bound = l.delivery_stable_offset(now).unwrap_or(i64::MAX);
                if let Err(e) = l.apply_retention(now, bound) {
                    tracing::error!(%tp, error = %e, "retention failed");
                }
            }
        }
        if rp || start || hw || retention {
            self.write_checkpoints()?;
        }
        Ok(())
    }

    /// Rewrites all checkpoint files of every online log dir from the hosted logs. A failed
    /// write takes that dir offline (issue 12); the other dirs are still written.
    pub fn write_checkpoints(&self) -> Result<()> {
        let mut written = self.checkpoint_lock.lock();
        written.resize(self.cfg.log_dirs.len(), None);
        let maps = self.checkpoint_maps(None);
        for (i, (dir, m)) in self.cfg.log_dirs.iter().zip(maps).enumerate() {
            if !self.health[i].is_online() {
                written[i] = None;
                continue;
            }
            if written[i].as_ref() == Some(&m) {
                continue; // the files already hold exactly this
            }
            match write_dir_checkpoints(dir, &m) {
                Ok(()) => written[i] = Some(m),
                Err(e) => {
                    written[i] = None;
                    self.health[i].fail(&format_args!("checkpoint: {e}"));
                }
            }
        }
        Ok(())
    }

    /// Rewrites the checkpoints of dir `i` alone, whatever its health (bringing it back).
    pub(crate) fn write_dir_checkpoints(&self, i: usize) -> Result<()> {
        let mut written = self.checkpoint_lock.lock();
        written.resize(self.cfg.log_dirs.len(), None);
        let mut maps = self.checkpoint_maps(Some(i));
        let m = std::mem::take(&mut maps[i]);
        written[i] = None;
        write_dir_checkpoints(&self.cfg.log_dirs[i], &m)?;
        written[i] = Some(m);
        Ok(())
    }

    /// Per dir: (recovery points, log start offsets, high watermarks) of the hosted logs.
    fn checkpoint_maps(&self, only: Option<usize>) -> Vec<CheckpointMaps> {
        let mut maps = vec![CheckpointMaps::default(); self.cfg.log_dirs.len()];
        for (tp, (i, log)) in self.logs.read().iter() {
            if only.is_some_and(|o| o != *i) {
                continue;
            }
            let l = log.lock();
            let m = &mut maps[*i];
            m.0.insert(tp.clone(), l.recovery_point());
            m.1.insert(tp.clone(), l.log_start_offset());
            m.2.insert(tp.clone(), l.high_watermark());
        }
        maps
    }

    /// Orderly shutdown: closes every log, writes checkpoints, then the clean-shutdown markers.
    pub fn shutdown(&self) -> Result<()> {
        if self.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        let now = self.cfg.clock.now_ms();
        // issue 12: logs close in parallel (5,000 partitions: a few fsyncs each); a log that
        // cannot close takes its dir offline, and an offline dir gets no clean-shutdown marker
        // (its next start recovers it), while the other dirs still shut down cleanly.
        let logs = self.online_logs();
        // Closing is mostly waiting for fsyncs: many in flight keep the disk's queue busy.
        let threads = logs.len().clamp(1, CLOSE_THREADS);
        let queue = Mutex::new(logs);
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| {
                    loop {
                        let Some((tp, log)) = queue.lock().pop() else {
                            break;
                        };
                        match log.lock().close(now) {
                            Ok(()) => {}
                            // Its dir went offline meanwhile (logged once, and below).
                            Err(e @ StorageError::LogDirOffline { .. }) => {
                                tracing::debug!(%tp, error = %e, "not closed: log dir offline");
                            }
                            Err(e) => {
                                tracing::error!(%tp, error = %e, "closing log failed; the next start will recover it");
                            }
                        }
                    }
                });
            }
        });
        self.write_checkpoints()?;
        for (i, dir) in self.cfg.log_dirs.iter().enumerate() {
            if !self.health[i].is_online() {
                tracing::error!(log_dir = %dir.display(), reason = %offline_reason(&self.health[i]), "log dir offline at shutdown: no clean-shutdown marker");
                continue;
            }
            let marker = dir.join(CLEAN_SHUTDOWN_FILE);
            crate::checkpoint::write_atomic(&marker, b"{\"version\":0,\"brokerEpoch\":-1}\n")
                .at(&marker)?;
        }
        Ok(())
    }

    /// Starts the background ticker thread. It stops when the handle is dropped or stopped.
    pub fn start_background(self: &Arc<Self>) -> BackgroundHandle {
        let stop = Arc::new(AtomicBool::new(false));
        let mgr = Arc::clone(self);
        let flag = Arc::clone(&stop);
        let every = Duration::from_millis(self.cfg.tick_interval_ms.max(10));
        let thread = std::thread::Builder::new()
            .name("skiff-log-manager".into())
            .spawn(move || {
                while !flag.load(Ordering::Acquire) {
                    std::thread::park_timeout(every);
                    if flag.load(Ordering::Acquire) || mgr.closed.load(Ordering::Acquire) {
                        break;
                    }
                    if let Err(e) = mgr.tick(mgr.cfg.clock.now_ms()) {
                        tracing::error!(error = %e, "log manager background step failed");
                    }
                }
            })
            .ok();
        BackgroundHandle { stop, thread }
    }
}

/// Stops the background thread when dropped.
#[derive(Debug)]
pub struct BackgroundHandle {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl BackgroundHandle {
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

impl Drop for BackgroundHandle {
    fn drop(&mut self) {
        self.stop();
    }
}

fn read_checkpoint(path: &Path) -> HashMap<TopicPartition, i64> {
    match OffsetCheckpointFile::new(path.to_path_buf()).read() {
        Ok(m) => m.into_iter().collect(),
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "ignoring an unreadable checkpoint file");
            HashMap::new()
        }
    }
}

/// One dir's recovery points, log start offsets and high watermarks.
type CheckpointMaps = (
    BTreeMap<TopicPartition, i64>,
    BTreeMap<TopicPartition, i64>,
    BTreeMap<TopicPartition, i64>,
);

fn write_dir_checkpoints(dir: &Path, m: &CheckpointMaps) -> Result<()> {
    write_checkpoint(&dir.join(RECOVERY_POINT_CHECKPOINT), &m.0)?;
    write_checkpoint(&dir.join(LOG_START_OFFSET_CHECKPOINT), &m.1)?;
    write_checkpoint(&dir.join(REPLICATION_OFFSET_CHECKPOINT), &m.2)
}

fn write_checkpoint(path: &Path, entries: &BTreeMap<TopicPartition, i64>) -> Result<()> {
    OffsetCheckpointFile::new(path.to_path_buf())
        .write(entries)
        .at(path)
}
