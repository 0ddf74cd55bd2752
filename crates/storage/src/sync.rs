//! Group commit for durable mode (`flush.messages=1`).
//!
//! Mental model: appends write into the page cache under the log's lock and publish
//! `(active file, log end offset)` here. A producer that must not be acknowledged before its data
//! is on disk calls [`SyncState::sync_to`] *after* releasing the log's lock. One fdatasync runs at
//! a time; whoever gets the lock syncs everything written so far, so appends that arrived while the
//! previous fsync ran share the next one (group commit across requests and partitions of a file).
//!
//! Invariant: `synced` only grows and never passes what was written before the fsync began. A roll
//! fsyncs the old segment under the log's lock and marks its end synced before a new file is
//! published, so a waiter whose data sat in the old file is satisfied without touching it.

use std::fs::File;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use parking_lot::Mutex;

/// Shared durable-sync state of one log.
#[derive(Debug)]
pub struct SyncState {
    current: Mutex<(Arc<File>, i64)>,
    synced: AtomicI64,
    fsync_lock: Mutex<()>,
}

impl SyncState {
    pub fn new(file: Arc<File>, written_end: i64, synced_end: i64) -> Self {
        Self {
            current: Mutex::new((file, written_end)),
            synced: AtomicI64::new(synced_end),
            fsync_lock: Mutex::new(()),
        }
    }

    /// Publishes the active file and how far it holds data (called under the log's lock).
    pub fn publish(&self, file: &Arc<File>, written_end: i64) {
        let mut cur = self.current.lock();
        if !Arc::ptr_eq(&cur.0, file) {
            cur.0 = Arc::clone(file);
        }
        cur.1 = written_end;
    }

    /// Records that everything below `end` is durable (after an fsync done elsewhere).
    pub fn mark_synced(&self, end: i64) {
        self.synced.fetch_max(end, Ordering::AcqRel);
    }

    /// The log was truncated to `end`: nothing at or above it is durable any more (a record
    /// appended there again must be fsynced again). Taken under the fsync lock, so an fsync
    /// that read the old end cannot mark it synced afterwards.
    pub fn truncated(&self, end: i64) {
        let _one_at_a_time = self.fsync_lock.lock();
        self.synced.fetch_min(end, Ordering::AcqRel);
    }

    /// The offset below which every record is known durable.
    pub fn synced(&self) -> i64 {
        self.synced.load(Ordering::Acquire)
    }

    /// Blocks until every record below `target` is fdatasynced. Returns the number of fsyncs this
    /// call issued (0 if another caller's fsync covered it).
    pub fn sync_to(&self, target: i64) -> std::io::Result<u32> {
        if self.synced() >= target {
            return Ok(0);
        }
        let _one_at_a_time = self.fsync_lock.lock();
        if self.synced() >= target {
            return Ok(0);
        }
        let (file, end) = {
            let cur = self.current.lock();
            (Arc::clone(&cur.0), cur.1)
        };
        crate::flush_times::FLUSH_TIMES.time(|| file.sync_data())?;
        self.mark_synced(end);
        Ok(1)
    }
}
