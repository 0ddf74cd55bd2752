//! Moving a partition's log to another log dir (AlterReplicaLogDirs, issue 15 item 4):
//! copy, then swap, crash-safe.
//!
//! Mental model: Kafka copies into a `<topic>-<partition>.<id>-future` directory of the
//! destination and swaps once the copy has caught up. Here the log's own lock is held for the
//! whole move (its producers and fetchers wait; other partitions are untouched):
//! 1. close the log (everything flushed: segments, indexes, producer snapshot, epochs);
//! 2. copy its files into `<dest>/<name>.<id>-future`, fsync each file and the directory;
//! 3. **commit**: rename the source to `<name>.<millis>-delete` (fsync its parent);
//! 4. rename the future to `<dest>/<name>` (fsync), open it and put it in place of the old
//!    in-memory log (same shared handle, so every holder sees the moved log);
//! 5. point the manager's map at the destination, move the cleaner checkpoint entry, remove
//!    the `-delete` directory, rewrite the checkpoints.
//!
//! Crash safety ([`resolve_moves`], run at start before any dir is scanned): a `-future`
//! directory whose partition is still live in some log dir is an unfinished copy and is
//! removed; one whose partition is live nowhere was committed (step 3 happened) and is renamed
//! into place. Then a live partition that its dir's checkpoints do not list adopts the
//! entries of the dir whose checkpoints list it without hosting it (the source, when the
//! crash came before step 5's rewrite), so its log start offset and high watermark survive.
//!
//! Invariants: at every instant the partition's data is complete in exactly one live
//! directory or (between steps 3 and 4) in a committed future that start-up promotes; the
//! log's lock is taken before the manager's map lock is ever taken by a move, and never while
//! holding it (the map's lock holders lock logs, so the reverse order would deadlock).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use skiff_types::TopicPartition;

use super::{
    DELETE_DIR_SUFFIX, LOG_START_OFFSET_CHECKPOINT, LogManager, RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT, read_checkpoint, write_checkpoint,
};
use crate::error::{IoContext, Result, StorageError};
use crate::log::{Log, LogOpenOptions, fsync_dir};

/// Partition directories being copied into another log dir end with this (Kafka's name).
pub const FUTURE_DIR_SUFFIX: &str = "-future";

/// What [`LogManager::move_log`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MoveOutcome {
    /// The log already lives in that dir.
    AlreadyThere,
    /// The log was copied and now lives there.
    Moved,
}

impl LogManager {
    /// The index in `log.dirs` of `dir` (compared as absolute paths), if it is one.
    pub fn log_dir_index(&self, dir: &Path) -> Option<usize> {
        let want = std::path::absolute(dir).ok()?;
        self.cfg
            .log_dirs
            .iter()
            .position(|d| std::path::absolute(d).is_ok_and(|a| a == want))
    }

    /// Moves hosted partition `tp` into log dir `dest` (an index of `log.dirs`); see the
    /// module docs. Errors: not hosted (`NotHosted`), either dir offline (`LogDirOffline`),
    /// I/O (the destination dir is taken offline if the failure was there).
    pub fn move_log(&self, tp: &TopicPartition, dest: usize) -> Result<MoveOutcome> {
        let Some((src, shared)) = self.logs.read().get(tp).map(|(i, l)| (*i, Arc::clone(l))) else {
            return Err(StorageError::NotHosted(tp.to_string()));
        };
        if src == dest {
            return Ok(MoveOutcome::AlreadyThere);
        }
        for i in [src, dest] {
            if !self.health[i].is_online() {
                return Err(self.offline_error(tp, i));
            }
        }
        let now = self.cfg.clock.now_ms();
        let mut log = shared.lock();
        // Deleted or replaced while we waited for its lock: nothing to move.
        let still_hosted = self
            .logs
            .read()
            .get(tp)
            .is_some_and(|(i, l)| *i == src && Arc::ptr_eq(l, &shared));
        if log.is_deleted() || !still_hosted {
            return Err(StorageError::NotHosted(tp.to_string()));
        }
        log.close(now)?;
        let name = tp.dir_name();
        let (src_root, dest_root) = (&self.cfg.log_dirs[src], &self.cfg.log_dirs[dest]);
        // Unique per move: the time and a process-wide count, in hex (Kafka uses a UUID).
        static MOVES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = MOVES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let future = dest_root.join(format!("{name}.{now:x}{n:04x}{FUTURE_DIR_SUFFIX}"));
        if let Err(e) = copy_dir(log.dir(), &future) {
            let _ = std::fs::remove_dir_all(&future);
            self.health[dest].fail(&format_args!("moving {tp} here: {e}"));
            return Err(e);
        }
        let doomed = src_root.join(format!("{name}.{now}{DELETE_DIR_SUFFIX}"));
        let live_src = src_root.join(&name);
        std::fs::rename(&live_src, &doomed).at(&live_src)?;
        fsync_dir(src_root)?;
        let live_dest = dest_root.join(&name);
        std::fs::rename(&future, &live_dest).at(&future)?;
        fsync_dir(dest_root)?;
        let opts = LogOpenOptions {
            recovery_point: log.recovery_point(),
            log_start_offset: log.log_start_offset(),
            high_watermark: log.high_watermark(),
            clean_shutdown: true,
            now_ms: now,
        };
        let (mut moved, _) = Log::open(&live_dest, tp.clone(), log.config().clone(), opts)?;
        moved.set_health(Arc::clone(&self.health[dest]));
        // A reader of the old log sees the same offsets in the moved one.
        moved.set_high_watermark(opts.high_watermark);
        *log = moved;
        drop(log);
        self.logs
            .write()
            .insert(tp.clone(), (dest, Arc::clone(&shared)));
        self.move_cleaner_checkpoint(tp, src, dest);
        if let Err(e) = std::fs::remove_dir_all(&doomed) {
            tracing::warn!(dir = %doomed.display(), error = %e, "could not remove the moved partition's old dir (retried at next start)");
        }
        self.write_checkpoints()?;
        tracing::info!(%tp, from = %src_root.display(), to = %dest_root.display(), "moved a partition's log");
        Ok(MoveOutcome::Moved)
    }

    fn move_cleaner_checkpoint(&self, tp: &TopicPartition, src: usize, dest: usize) {
        let (src_root, dest_root) = (&self.cfg.log_dirs[src], &self.cfg.log_dirs[dest]);
        let mut c = self.cleaner_checkpoints.lock();
        let from = c
            .entry(src_root.clone())
            .or_insert_with(|| crate::swap::CleanerCheckpoint::load(src_root));
        let offset = from.get(tp);
        if let Err(e) = from.remove(tp) {
            tracing::warn!(%tp, error = %e, "could not drop the moved partition's cleaner checkpoint entry");
        }
        let Some(offset) = offset else { return };
        let to = c
            .entry(dest_root.clone())
            .or_insert_with(|| crate::swap::CleanerCheckpoint::load(dest_root));
        if let Err(e) = to.set(tp, offset, |t| {
            t == tp || self.dir_of(t).as_ref() == Some(dest_root)
        }) {
            tracing::warn!(%tp, error = %e, "could not record the moved partition's cleaner checkpoint");
        }
    }
}

/// Copies the files of partition dir `from` into a new dir `to`, each fsynced, then `to`.
fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir(to).at(to)?;
    for entry in std::fs::read_dir(from).at(from)? {
        let entry = entry.at(from)?;
        if !entry.file_type().at(from)?.is_file() {
            continue;
        }
        let target = to.join(entry.file_name());
        std::fs::copy(entry.path(), &target).at(&target)?;
        std::fs::File::open(&target)
            .and_then(|f| f.sync_all())
            .at(&target)?;
    }
    fsync_dir(to)
}

/// The partition a `<name>.<id>-future` directory holds, if `name` is one.
fn future_of(dir_name: &str) -> Option<TopicPartition> {
    let stem = dir_name.strip_suffix(FUTURE_DIR_SUFFIX)?;
    let (name, _id) = stem.rsplit_once('.')?;
    TopicPartition::from_dir_name(name)
}

/// Finishes or undoes moves a crash interrupted (see the module docs). Runs at start, before
/// the dirs are scanned; a dir that cannot be listed is skipped (its scan takes it offline).
pub(super) fn resolve_moves(log_dirs: &[PathBuf]) -> Result<()> {
    let live = |tp: &TopicPartition| log_dirs.iter().any(|d| d.join(tp.dir_name()).is_dir());
    for dir in log_dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(tp) = future_of(&name) else { continue };
            if live(&tp) {
                tracing::warn!(%tp, dir = %entry.path().display(), "removing an unfinished log dir move");
                std::fs::remove_dir_all(entry.path()).at(&entry.path())?;
            } else {
                let target = dir.join(tp.dir_name());
                tracing::warn!(%tp, dir = %target.display(), "finishing a committed log dir move");
                std::fs::rename(entry.path(), &target).at(&target)?;
                fsync_dir(dir)?;
            }
        }
    }
    adopt_checkpoint_entries(log_dirs)
}

const CHECKPOINTS: [&str; 3] = [
    RECOVERY_POINT_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
];

/// A live partition missing from its dir's checkpoints takes the entries another dir lists
/// for it without hosting it (a move's source, before the move rewrote the checkpoints).
fn adopt_checkpoint_entries(log_dirs: &[PathBuf]) -> Result<()> {
    let hosts = |d: &Path, tp: &TopicPartition| d.join(tp.dir_name()).is_dir();
    let lists: Vec<HashMap<TopicPartition, i64>> = log_dirs
        .iter()
        .map(|d| read_checkpoint(&d.join(REPLICATION_OFFSET_CHECKPOINT)))
        .collect();
    for (i, dir) in log_dirs.iter().enumerate() {
        for (j, other) in log_dirs.iter().enumerate() {
            if i == j {
                continue;
            }
            let adopt: Vec<&TopicPartition> = lists[j]
                .keys()
                .filter(|tp| !hosts(other, tp) && hosts(dir, tp) && !lists[i].contains_key(*tp))
                .collect();
            if adopt.is_empty() {
                continue;
            }
            for file in CHECKPOINTS {
                let theirs = read_checkpoint(&other.join(file));
                let mut ours: BTreeMap<TopicPartition, i64> =
                    read_checkpoint(&dir.join(file)).into_iter().collect();
                for tp in &adopt {
                    if let Some(v) = theirs.get(*tp) {
                        ours.insert((*tp).clone(), *v);
                    }
                }
                write_checkpoint(&dir.join(file), &ours)?;
            }
            tracing::warn!(dir = %dir.display(), partitions = adopt.len(), "adopted the checkpoint entries of moved partitions");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn future_dir_names_parse() {
        assert_eq!(
            future_of("orders-3.0123abcd-future"),
            Some(TopicPartition::new("orders", 3))
        );
        assert_eq!(
            future_of("a.b-0.ff-future"),
            Some(TopicPartition::new("a.b", 0))
        );
        assert_eq!(future_of("orders-3"), None);
        assert_eq!(future_of("orders-3.1700000000000-delete"), None);
    }
}
