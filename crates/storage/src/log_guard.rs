//! The log's writing operations behind its log dir's health (issue 12 item 4).
//!
//! Mental model: every public operation that writes to a log's files is a thin wrapper here
//! around its `*_unguarded` body in [`crate::log`]: it refuses to start while the log dir is
//! offline ([`StorageError::LogDirOffline`], KAFKA_STORAGE_ERROR), and an I/O error from the body
//! takes the dir offline ([`crate::log_dir::LogDirHealth::fail`]) before the log's lock is
//! released, so no later operation writes through a log whose in-memory state may have run
//! ahead of its files (e.g. a batch written but its epoch checkpoint not). The log manager
//! re-opens such logs from disk before the dir comes back online.

use std::sync::Arc;

use crate::error::{Result, StorageError};
use crate::log::{AppendInfo, Log};
use crate::log_dir::{DirState, LogDirHealth};
use crate::validate::ValidatedBatch;

impl Log {
    /// The health of the log dir holding this log.
    pub fn health(&self) -> &Arc<LogDirHealth> {
        &self.health
    }

    pub(crate) fn set_health(&mut self, health: Arc<LogDirHealth>) {
        self.health = health;
    }

    /// `Err(LogDirOffline)` while the log dir is offline.
    pub fn check_online(&self) -> Result<()> {
        if self.health.is_online() {
            return Ok(());
        }
        let reason = match self.health.state() {
            DirState::Offline { reason, .. } => reason,
            DirState::Online => String::new(),
        };
        Err(StorageError::LogDirOffline {
            tp: self.tp.to_string(),
            dir: self.health.path().display().to_string(),
            reason,
        })
    }

    /// Passes `r` through; an I/O error takes the log dir offline.
    fn guard<T>(&self, r: Result<T>) -> Result<T> {
        if let Err(e @ StorageError::Io { .. }) = &r {
            self.fail_dir(e);
        }
        r
    }

    /// Takes the log dir offline for the I/O error `e` (see the module doc).
    pub(crate) fn fail_dir(&self, e: &StorageError) {
        self.health.fail(&format_args!("{}: {e}", self.tp));
    }

    /// [`Log::append_as_leader_unguarded`] unless the log dir is offline.
    pub fn append_as_leader(
        &mut self,
        batch: &mut [u8],
        leader_epoch: i32,
        now_ms: i64,
    ) -> Result<AppendInfo> {
        self.check_online()?;
        let r = self.append_as_leader_unguarded(batch, leader_epoch, now_ms);
        self.guard(r)
    }

    /// [`Log::append_validated_unguarded`] unless the log dir is offline.
    pub fn append_validated(
        &mut self,
        batch: &ValidatedBatch<'_>,
        leader_epoch: i32,
        now_ms: i64,
    ) -> Result<AppendInfo> {
        self.check_online()?;
        let r = self.append_validated_unguarded(batch, leader_epoch, now_ms);
        self.guard(r)
    }

    /// [`Log::append_as_follower_unguarded`] unless the log dir is offline.
    pub fn append_as_follower(&mut self, batch: &[u8], now_ms: i64) -> Result<AppendInfo> {
        self.check_online()?;
        let r = self.append_as_follower_unguarded(batch, now_ms);
        self.guard(r)
    }

    /// [`Log::roll_unguarded`] unless the log dir is offline.
    pub fn roll(&mut self, now_ms: i64) -> Result<()> {
        self.check_online()?;
        let r = self.roll_unguarded(now_ms);
        self.guard(r)
    }

    /// [`Log::cut_at_first_quarantined_unguarded`] unless the log dir is offline.
    pub fn cut_at_first_quarantined(&mut self) -> Result<Option<i64>> {
        self.check_online()?;
        let r = self.cut_at_first_quarantined_unguarded();
        self.guard(r)
    }

    /// [`Log::truncate_to_unguarded`] unless the log dir is offline.
    pub fn truncate_to(&mut self, offset: i64) -> Result<()> {
        self.check_online()?;
        let r = self.truncate_to_unguarded(offset);
        self.guard(r)
    }

    /// [`Log::truncate_fully_and_start_at_unguarded`] unless the log dir is offline.
    pub fn truncate_fully_and_start_at(&mut self, offset: i64) -> Result<()> {
        self.check_online()?;
        let r = self.truncate_fully_and_start_at_unguarded(offset);
        self.guard(r)
    }

    /// [`Log::apply_retention_unguarded`] unless the log dir is offline.
    pub fn apply_retention(&mut self, now_ms: i64, max_removable_offset: i64) -> Result<usize> {
        self.check_online()?;
        let r = self.apply_retention_unguarded(now_ms, max_removable_offset);
        self.guard(r)
    }

    /// [`Log::flush_unguarded`] unless the log dir is offline.
    pub fn flush(&mut self, now_ms: i64) -> Result<()> {
        self.check_online()?;
        let r = self.flush_unguarded(now_ms);
        self.guard(r)
    }

    /// [`Log::close_unguarded`] unless the log dir is offline.
    pub fn close(&mut self, now_ms: i64) -> Result<()> {
        self.check_online()?;
        let r = self.close_unguarded(now_ms);
        self.guard(r)
    }
}
