//! Exclusive locks on log dirs (issue 12 item 1; Kafka's `.lock` file per log dir).
//!
//! Mental model: a broker takes a `flock(LOCK_EX | LOCK_NB)` on `<dir>/.lock` for every log
//! dir before anything reads or writes the dir (recovery, `meta.properties`, the clean-shutdown
//! marker) and holds it for as long as it runs; the kernel releases it when the process exits,
//! however it exits. Having the lock, the holder writes its pid into the file, so a second
//! process that fails to get the lock can name the holder. Two brokers on one dir would
//! otherwise recover, truncate and mmap each other's live files (the first then dies of
//! SIGBUS).
//!
//! Invariants: the file is never truncated before the lock is held (that would erase the
//! holder's pid); it is a plain file at the top of the dir, so the log manager (which loads
//! only `<topic>-<n>` directories) never takes it for a partition and no cleanup deletes it.
//! `flock` locks belong to the open file description: a second `DirLock::acquire` of the same
//! dir in the same process fails too, as it must.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use rustix::fs::{FlockOperation, flock};

/// The lock file's name in every log dir (Kafka's).
pub const LOCK_FILE: &str = ".lock";

/// Why a dir could not be locked.
#[derive(Debug, thiserror::Error)]
pub enum DirLockError {
    /// Another process (or another broker in this process) holds the lock.
    #[error(
        "Failed to acquire lock on file {LOCK_FILE} in {dir}: another broker is using this \
         directory ({}); two brokers must never share a log dir: stop the other one or give \
         this one its own log.dirs",
        holder_text(.holder_pid)
    )]
    Held {
        dir: PathBuf,
        holder_pid: Option<u32>,
    },
    #[error("cannot lock log dir {dir}: {source}")]
    Io {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

fn holder_text(pid: &Option<u32>) -> String {
    match pid {
        Some(pid) => format!("held by pid {pid}"),
        None => "holder's pid unknown".to_string(),
    }
}

/// A held lock on one dir; released when dropped (or when the process ends).
#[derive(Debug)]
pub struct DirLock {
    dir: PathBuf,
    _file: File,
}

impl DirLock {
    /// Creates `dir` if needed and locks it, writing this process's pid into the lock file.
    pub fn acquire(dir: &Path) -> Result<DirLock, DirLockError> {
        let io = |source: std::io::Error| DirLockError::Io {
            dir: dir.to_path_buf(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(io)?;
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(dir.join(LOCK_FILE))
            .map_err(io)?;
        match flock(&file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(rustix::io::Errno::WOULDBLOCK) => {
                return Err(DirLockError::Held {
                    dir: dir.to_path_buf(),
                    holder_pid: read_pid(&mut file),
                });
            }
            Err(e) => return Err(io(e.into())),
        }
        file.set_len(0).map_err(io)?;
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        file.write_all(format!("{}\n", std::process::id()).as_bytes())
            .map_err(io)?;
        Ok(DirLock {
            dir: dir.to_path_buf(),
            _file: file,
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// The pid a holder wrote into the lock file, if readable.
fn read_pid(file: &mut File) -> Option<u32> {
    let mut text = String::new();
    file.seek(SeekFrom::Start(0)).ok()?;
    file.take(64).read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}

/// Locks every dir in order; on failure the locks already taken are released.
pub fn lock_dirs(dirs: &[PathBuf]) -> Result<Vec<DirLock>, DirLockError> {
    dirs.iter().map(|d| DirLock::acquire(d)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_locked_dir_names_its_holder_and_is_free_again_after_release() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("d");
        let held = DirLock::acquire(&dir).unwrap();
        assert_eq!(held.dir(), dir);
        let text = std::fs::read_to_string(dir.join(LOCK_FILE)).unwrap();
        assert_eq!(text, format!("{}\n", std::process::id()));
        // A second open file description cannot take it, even in this process.
        match DirLock::acquire(&dir) {
            Err(DirLockError::Held { dir: d, holder_pid }) => {
                assert_eq!(d, dir);
                assert_eq!(holder_pid, Some(std::process::id()));
            }
            other => panic!("{other:?}"),
        }
        let msg = DirLock::acquire(&dir).unwrap_err().to_string();
        assert!(msg.contains(&dir.display().to_string()), "{msg}");
        assert!(
            msg.contains(&format!("pid {}", std::process::id())),
            "{msg}"
        );
        // The failed attempt did not erase the holder's pid.
        assert_eq!(std::fs::read_to_string(dir.join(LOCK_FILE)).unwrap(), text);
        drop(held);
        let again = DirLock::acquire(&dir).unwrap();
        drop(again);
    }

    #[test]
    fn lock_dirs_is_all_or_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let a = tmp.path().join("a");
        let b = tmp.path().join("b");
        let held_b = DirLock::acquire(&b).unwrap();
        // A stale pid from an earlier holder is replaced by the real one.
        std::fs::create_dir_all(&a).unwrap();
        std::fs::write(a.join(LOCK_FILE), "999999999\n").unwrap();
        match lock_dirs(&[a.clone(), b.clone()]) {
            Err(DirLockError::Held { dir, .. }) => assert_eq!(dir, b),
            other => panic!("{other:?}"),
        }
        // `a` was released again when `b` failed.
        let held_a = DirLock::acquire(&a).unwrap();
        drop((held_a, held_b));
        let both = lock_dirs(&[a.clone(), b]).unwrap();
        assert_eq!(both.len(), 2);
        assert_eq!(
            std::fs::read_to_string(a.join(LOCK_FILE)).unwrap(),
            format!("{}\n", std::process::id())
        );
    }
}
