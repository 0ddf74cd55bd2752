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

/// A log shared between request handlers and the background ticker.
pub type SharedLog = Arc<Mutex<Log>>;

/// What loading reported per partition.
pub type LoadReports = Vec<(TopicPartition, LoadReport)>;

type Loaded = Result<(usize, TopicPartition, Log, LoadReport)>;

pub const CLEAN_SHUTDOWN_FILE: &str = ".kafka_cleanshutdown";
pub const RECOVERY_POINT_CHECKPOINT: &str = "recovery-point-offset-checkpoint";
pub const LOG_START_OFFSET_CHECKPOINT: &str = "log-start-offset-checkpoint";
pub const REPLICATION_OFFSET_CHECKPOINT: &str = "replication-offset-checkpoint";
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
    /// Serialises checkpoint writers (ticker vs. shutdown vs. explicit calls).
    checkpoint_lock: Mutex<()>,
    closed: AtomicBool,
    /// compaction (issue 7): each log dir's `cleaner-offset-checkpoint`, loaded on first use.
    /// Owned here so that deleting a partition drops its entry under the same lock the
    /// cleaner sets entries with: a re-created partition never inherits a first dirty offset.
    cleaner_checkpoints: Mutex<HashMap<PathBuf, crate::swap::CleanerCheckpoint>>,
}

/// Wall-clock milliseconds.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
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
        let mut work = Vec::new();
        let mut per_dir = Vec::new();
        for (i, dir) in cfg.log_dirs.iter().enumerate() {
            std::fs::create_dir_all(dir).at(dir)?;
            let marker = dir.join(CLEAN_SHUTDOWN_FILE);
            let clean = marker.exists();
            let rp = read_checkpoint(&dir.join(RECOVERY_POINT_CHECKPOINT));
            let lso = read_checkpoint(&dir.join(LOG_START_OFFSET_CHECKPOINT));
            let hw = read_checkpoint(&dir.join(REPLICATION_OFFSET_CHECKPOINT));
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
                work.push((i, entry.path(), tp, opts));
            }
            per_dir.push((marker, clean));
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
                        let r = Log::open(&path, tp.clone(), config_for(&tp), opts)
                            .map(|(log, rep)| (i, tp, log, rep));
                        results.lock().push(r);
                    }
                });
            }
        });
        let mut logs = BTreeMap::new();
        let mut reports = Vec::new();
        for r in results.into_inner() {
            let (i, tp, mut log, rep) = r?;
            // Kafka drops producers that expired while the broker was down when it loads them.
            log.remove_expired_producers(now, cfg.producer_id_expiration_ms);
            reports.push((tp.clone(), rep));
            logs.insert(tp, (i, Arc::new(Mutex::new(log))));
        }
        for (marker, clean) in per_dir {
            if clean {
                std::fs::remove_file(&marker).at(&marker)?;
            }
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
            checkpoint_lock: Mutex::new(()),
            cleaner_checkpoints: Mutex::new(HashMap::new()),
            closed: AtomicBool::new(false),
        });
        mgr.write_checkpoints()?;
        Ok((mgr, reports))
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
        let mut counts = vec![0usize; self.cfg.log_dirs.len()];
        for (i, _) in logs.values() {
            counts[*i] += 1;
        }
        let i = (0..counts.len()).min_by_key(|i| counts[*i]).unwrap_or(0);
        let dir = self.cfg.log_dirs[i].join(tp.dir_name());
        let opts = LogOpenOptions {
            recovery_point: 0,
            log_start_offset: 0,
            high_watermark: 0,
            clean_shutdown: true,
            now_ms: now,
        };
        let (log, _) = Log::open(&dir, tp.clone(), config, opts)?;
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
            now_ms(),
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
        let logs = self.all();
        for (tp, log) in &logs {
            let plan = {
                let l = log.lock();
                l.inactive_flush_plan()
            };
            if let Some(plan) = plan {
                plan.execute().map_err(|e| StorageError::Io {
                    path: tp.to_string(),
                    source: e,
                })?;
                log.lock().complete_flush(&plan);
            }
            let mut l = log.lock();
            if l.flush_due(now) {
                l.flush(now)?;
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

    /// Rewrites all checkpoint files of every log dir from the hosted logs.
    pub fn write_checkpoints(&self) -> Result<()> {
        let _one = self.checkpoint_lock.lock();
        let n = self.cfg.log_dirs.len();
        let mut rp = vec![BTreeMap::new(); n];
        let mut lso = vec![BTreeMap::new(); n];
        let mut hw = vec![BTreeMap::new(); n];
        for (tp, (i, log)) in self.logs.read().iter() {
            let l = log.lock();
            rp[*i].insert(tp.clone(), l.recovery_point());
            lso[*i].insert(tp.clone(), l.log_start_offset());
            hw[*i].insert(tp.clone(), l.high_watermark());
        }
        for (i, dir) in self.cfg.log_dirs.iter().enumerate() {
            write_checkpoint(&dir.join(RECOVERY_POINT_CHECKPOINT), &rp[i])?;
            write_checkpoint(&dir.join(LOG_START_OFFSET_CHECKPOINT), &lso[i])?;
            write_checkpoint(&dir.join(REPLICATION_OFFSET_CHECKPOINT), &hw[i])?;
        }
        Ok(())
    }

    /// Orderly shutdown: closes every log, writes checkpoints, then the clean-shutdown markers.
    pub fn shutdown(&self) -> Result<()> {
        if self.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        let now = now_ms();
        for (tp, log) in self.all() {
            if let Err(e) = log.lock().close(now) {
                tracing::error!(%tp, error = %e, "closing log failed; the next start will recover it");
                return Err(e);
            }
        }
        self.write_checkpoints()?;
        for dir in &self.cfg.log_dirs {
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
                    if let Err(e) = mgr.tick(now_ms()) {
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

fn write_checkpoint(path: &Path, entries: &BTreeMap<TopicPartition, i64>) -> Result<()> {
    OffsetCheckpointFile::new(path.to_path_buf())
        .write(entries)
        .at(path)
}
