//! [`KafkaLogStore`]: openraft's log storage over `skiff_storage::Log` (design/replication.md
//! §1.2).
//!
//! Mental model: the Raft log is the partition log of a `__cluster_metadata-0` dir. One entry
//! is one v2 batch ([`crate::codec`]); the entry's term is the batch's `partitionLeaderEpoch`.
//! Raft indexes are dense entry numbers while Kafka offsets count records, so **index ≠
//! offset**: the store keeps `slots`, the `(base offset, term)` of every entry on disk in index
//! order, entry `start_index + i` being `slots[i]`. `slots` is rebuilt from the batch headers on
//! open, starting at the `raft-log-start` file's `(start_index, start_offset)`
//! ([`crate::state_files`]). Beside the log: `quorum-state` (the vote) and `raft-committed`.
//!
//! Operations:
//! - `append`: each entry is encoded, placed at the log end with `append_as_leader` (which
//!   stamps the base offset and the term), then the log is fsynced *before*
//!   `callback.io_completed(Ok)`; the fsync runs on tokio's blocking pool.
//! - `truncate_after(id)` = `Log::truncate_to(base offset of entry id + 1)`, then the active
//!   file and the dir are fsynced (a cut must not come undone by a crash).
//! - `purge(id)`: `raft-log-start` is rewritten first, then the log start moves to the entry
//!   after `id` (`delete_records`); the bytes below it stay in their segment file until a
//!   retention pass deletes whole segments (none runs on the Raft log yet). A purge past the log end (a follower that installed a snapshot of a later entry) restarts
//!   the log empty at the snapshot's end offset ([`KafkaLogStore::note_snapshot`]), so the
//!   next entry gets the same offset as on the leader.
//! - The high watermark is the end of the committed entry (`save_committed`), so a Kafka reader
//!   bounded by it sees committed entries only.
//!
//! Invariants:
//! - no hole: an entry is appended only at `start_index + slots.len()`, except that the first
//!   entry of an empty log may start anywhere (then `raft-log-start` is rewritten first);
//! - an entry is acknowledged only once durable (`SyncState::sync_to` of the log end; a
//!   truncation lowers storage's synced mark, so a re-append below the old mark is fsynced
//!   again);
//! - a torn tail is truncated by `Log::open` (unclean-start recovery) and never becomes a slot;
//!   a batch that does not decode, or a gap between batches, is an error, never skipped.
//!
//! Concurrency: the store and its readers ([`RaftLogStorage::get_log_reader`]) share one
//! `Mutex<Inner>`; reads copy bytes under it (the metadata log is small), no lock is held
//! across an `.await`.

use std::fmt::Debug;
use std::fs::File;
use std::io;
use std::ops::{Bound, RangeBounds};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use openraft::OptionalSend;
use openraft::storage::{IOFlushed, LogState, RaftLogReader, RaftLogStorage};
use parking_lot::Mutex;
use skiff_record::RecordError;
use skiff_storage::checkpoint::write_atomic;
use skiff_storage::{Log, LogConfig, LogOpenOptions};
use skiff_types::TopicPartition;
use skiff_types::clock::Clock;

use crate::codec::{self, invalid};
use crate::state_files::{LogStart, StateFiles};
use crate::types::{Entry, LogId, SkiffRaft, Vote, log_id};

/// The metadata partition's name, as in KRaft.
pub const METADATA_TOPIC: &str = "__cluster_metadata";

/// Bytes asked of `Log::read` at a time when scanning or reading entries.
const READ_CHUNK: usize = 1 << 20;

fn storage_err(e: impl std::fmt::Display) -> io::Error {
    io::Error::other(e.to_string())
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Slot {
    offset: i64,
    term: i32,
}

#[derive(Debug)]
struct Inner {
    log: Log,
    files: StateFiles,
    start: LogStart,
    slots: Vec<Slot>,
    vote: Option<Vote>,
    committed: Option<LogId>,
    clock: Clock,
    /// The newest snapshot's last entry and the offset after it (see [`KafkaLogStore::note_snapshot`]).
    snapshot: Option<(LogId, i64)>,
}

/// openraft's log storage over a Kafka partition log (see the module docs). Cloning gives
/// another handle to the same store (that is also the log reader).
#[derive(Clone, Debug)]
pub struct KafkaLogStore {
    inner: Arc<Mutex<Inner>>,
}

/// The log config of the Raft log: fsync per append is done here, never by time; nothing is
/// removed by retention (only `purge` moves the start).
fn raft_log_config() -> LogConfig {
    LogConfig {
        retention_ms: -1,
        retention_bytes: -1,
        ..LogConfig::default()
    }
}

/// Decodes every batch of `bytes` (read from offset `from`) that starts at or after `from`,
/// calling `f(view)`; returns the offset after the last whole batch.
fn for_each_batch(
    bytes: &[u8],
    from: i64,
    mut f: impl FnMut(&skiff_record::BatchView<'_>) -> io::Result<bool>,
) -> io::Result<Option<i64>> {
    let mut next = None;
    for batch in skiff_record::batches(bytes) {
        let view = match batch {
            Ok((_, view)) => view,
            // A read may end inside a batch; the next read starts at it.
            Err(RecordError::Truncated { .. }) => break,
            Err(e) => return Err(invalid(e.to_string())),
        };
        if view.base_offset() < from {
            return Err(invalid(format!(
                "a batch at offset {} straddles the entry boundary {from}",
                view.base_offset()
            )));
        }
        next = Some(view.next_offset());
        if !f(&view)? {
            break;
        }
    }
    Ok(next)
}

impl Inner {
    fn next_index(&self) -> u64 {
        self.start.start_index + self.slots.len() as u64
    }

    fn last_log_id(&self) -> Option<LogId> {
        match self.slots.last() {
            Some(s) => Some(log_id(s.term, self.next_index() - 1)),
            None => self.start.purged,
        }
    }

    /// The Kafka offset where entry `index` starts (the log end for the next index).
    fn offset_of(&self, index: u64) -> Option<i64> {
        let i = index.checked_sub(self.start.start_index)?;
        let i = usize::try_from(i).ok()?;
        match self.slots.get(i) {
            Some(s) => Some(s.offset),
            None if i == self.slots.len() => Some(self.log.log_end_offset()),
            None => None,
        }
    }

    /// The high watermark for `committed`: the end of that entry, clamped to the log.
    fn apply_high_watermark(&mut self) {
        let hw = match &self.committed {
            None => self.log.log_start_offset(),
            Some(c) if c.index < self.start.start_index => self.log.log_start_offset(),
            Some(c) => self
                .offset_of(c.index + 1)
                .unwrap_or_else(|| self.log.log_end_offset()),
        };
        self.log.set_high_watermark(hw);
    }

    /// Rebuilds `slots` from the batches between `start.start_offset` and the log end.
    fn scan(&mut self) -> io::Result<()> {
        self.slots.clear();
        let end = self.log.log_end_offset();
        let mut offset = self.start.start_offset.max(self.log.log_start_offset());
        while offset < end {
            let read = self
                .log
                .read(offset, READ_CHUNK, end, true)
                .map_err(storage_err)?;
            let Some(slice) = read.slice else {
                return Err(invalid(format!(
                    "raft log unreadable at offset {offset} (log end {end})"
                )));
            };
            let bytes = slice.read_to_vec()?;
            let slots = &mut self.slots;
            let mut expect = offset;
            let next = for_each_batch(&bytes, offset, |view| {
                // Entries are dense: a gap (e.g. a removed segment that came back) would shift
                // every later index, so it is corruption, not something to skip.
                if view.base_offset() != expect {
                    return Err(invalid(format!(
                        "raft log gap: a batch at offset {} where {expect} was expected",
                        view.base_offset()
                    )));
                }
                expect = view.next_offset();
                slots.push(Slot {
                    offset: view.base_offset(),
                    term: view.partition_leader_epoch(),
                });
                Ok(true)
            })?;
            match next {
                Some(n) => offset = n,
                None => {
                    return Err(invalid(format!("raft log unreadable at offset {offset}")));
                }
            }
        }
        Ok(())
    }

    /// Entries `[from, to)` (clamped to what is on disk), decoded.
    fn read_entries(&self, from: u64, to: u64) -> io::Result<Vec<Entry>> {
        let from = from.max(self.start.start_index);
        let to = to.min(self.next_index());
        if from >= to {
            return Ok(Vec::new());
        }
        let mut out = Vec::with_capacity(usize::try_from(to - from).unwrap_or(0));
        let end_offset = self
            .offset_of(to)
            .ok_or_else(|| invalid(format!("no offset for entry {to}")))?;
        let mut index = from;
        while index < to {
            let offset = self
                .offset_of(index)
                .ok_or_else(|| invalid(format!("no offset for entry {index}")))?;
            let read = self
                .log
                .read(offset, READ_CHUNK, end_offset, true)
                .map_err(storage_err)?;
            let Some(slice) = read.slice else {
                return Err(invalid(format!("entry {index} missing at offset {offset}")));
            };
            let bytes = slice.read_to_vec()?;
            let before = index;
            for_each_batch(&bytes, offset, |view| {
                let want = self.offset_of(index);
                if want != Some(view.base_offset()) {
                    return Err(invalid(format!(
                        "entry {index}: batch at offset {} where {want:?} was expected",
                        view.base_offset()
                    )));
                }
                out.push(codec::decode(view, index)?);
                index += 1;
                Ok(index < to)
            })?;
            if index == before {
                return Err(invalid(format!(
                    "entry {index} unreadable at offset {offset}"
                )));
            }
        }
        Ok(out)
    }

    /// The active segment's file (fsynced directly after a truncation).
    fn active_file(&self) -> Option<Arc<File>> {
        self.log.segments().last().map(|s| Arc::clone(s.file()))
    }
}

/// How an append is made durable (computed under the lock, run off it).
enum Durability {
    SyncTo(Arc<skiff_storage::sync::SyncState>, i64),
    File(Option<Arc<File>>),
}

impl Durability {
    fn run(self) -> io::Result<()> {
        match self {
            Durability::SyncTo(s, end) => s.sync_to(end).map(|_| ()),
            Durability::File(Some(f)) => f.sync_data(),
            Durability::File(None) => Ok(()),
        }
    }
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> io::Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| io::Error::other(format!("blocking task failed: {e}")))?
}

impl KafkaLogStore {
    /// Opens (creating on first start) the Raft log in the partition dir `dir`: loads the log
    /// (a torn tail is truncated), the start, the vote and the committed id, and rebuilds the
    /// index → offset map from the batch headers.
    pub fn open(dir: &Path, clock: Clock) -> io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let files = StateFiles::new(dir);
        let start = files.read_log_start()?.unwrap_or(LogStart {
            start_index: 0,
            start_offset: 0,
            purged: None,
        });
        let opts = LogOpenOptions {
            recovery_point: 0,
            log_start_offset: start.start_offset,
            high_watermark: 0,
            clean_shutdown: false,
            now_ms: clock.now_ms(),
        };
        let (mut log, report) = Log::open(
            dir,
            TopicPartition::new(METADATA_TOPIC, 0),
            raft_log_config(),
            opts,
        )
        .map_err(storage_err)?;
        if report.truncated_bytes > 0 {
            tracing::warn!(
                bytes = report.truncated_bytes,
                dir = %dir.display(),
                "raft log had a torn tail; truncated"
            );
        }
        if log.log_end_offset() < start.start_offset {
            // Everything was purged up to an offset past what is on disk.
            log.truncate_fully_and_start_at(start.start_offset)
                .map_err(storage_err)?;
        }
        let vote = files.read_vote()?;
        let committed = files.read_committed()?;
        let mut inner = Inner {
            log,
            files,
            start,
            slots: Vec::new(),
            vote,
            committed,
            clock,
            snapshot: None,
        };
        inner.scan()?;
        inner.apply_high_watermark();
        Ok(KafkaLogStore {
            inner: Arc::new(Mutex::new(inner)),
        })
    }

    /// The partition dir.
    pub fn dir(&self) -> PathBuf {
        self.inner.lock().log.dir().to_path_buf()
    }

    /// `(log start offset, log end offset, high watermark)` of the Kafka log.
    pub fn offsets(&self) -> (i64, i64, i64) {
        let g = self.inner.lock();
        (
            g.log.log_start_offset(),
            g.log.log_end_offset(),
            g.log.high_watermark(),
        )
    }

    /// The index of the last entry known committed (as saved), if any.
    pub fn committed_index(&self) -> Option<u64> {
        self.inner.lock().committed.map(|c| c.index)
    }

    /// The index of the first entry on disk (everything before it was purged).
    pub fn start_index(&self) -> u64 {
        self.inner.lock().start.start_index
    }

    /// The store's clock, in ms.
    pub fn now_ms(&self) -> i64 {
        self.inner.lock().clock.now_ms()
    }

    /// A snapshot covering everything up to `last` exists; the log continues at Kafka offset
    /// `end_offset`. A purge up to `last` past the log end (a follower that installed the
    /// snapshot) restarts the log at `end_offset`, so every node keeps the leader's offsets.
    pub fn note_snapshot(&self, last: LogId, end_offset: i64) {
        self.inner.lock().snapshot = Some((last, end_offset));
    }

    /// The Kafka base offset of entry `index`, if it is on disk.
    pub fn base_offset_of(&self, index: u64) -> Option<i64> {
        let g = self.inner.lock();
        let i = usize::try_from(index.checked_sub(g.start.start_index)?).ok()?;
        g.slots.get(i).map(|s| s.offset)
    }

    /// Flushes and closes the Kafka log (the store must not be used afterwards).
    pub fn close(&self) -> io::Result<()> {
        let mut g = self.inner.lock();
        let now = g.clock.now_ms();
        g.log.close(now).map_err(storage_err)
    }

    pub(crate) fn read_range<RB: RangeBounds<u64>>(&self, range: &RB) -> io::Result<Vec<Entry>> {
        let from = match range.start_bound() {
            Bound::Included(&s) => s,
            Bound::Excluded(&s) => s.saturating_add(1),
            Bound::Unbounded => 0,
        };
        let to = match range.end_bound() {
            Bound::Included(&e) => e.saturating_add(1),
            Bound::Excluded(&e) => e,
            Bound::Unbounded => u64::MAX,
        };
        self.inner.lock().read_entries(from, to)
    }
}

impl RaftLogReader<SkiffRaft> for KafkaLogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, io::Error> {
        self.read_range(&range)
    }

    async fn read_vote(&mut self) -> Result<Option<Vote>, io::Error> {
        Ok(self.inner.lock().vote)
    }
}

impl RaftLogStorage<SkiffRaft> for KafkaLogStore {
    type LogReader = KafkaLogStore;

    async fn get_log_state(&mut self) -> Result<LogState<SkiffRaft>, io::Error> {
        let g = self.inner.lock();
        Ok(LogState {
            last_purged_log_id: g.start.purged,
            last_log_id: g.last_log_id(),
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote) -> Result<(), io::Error> {
        let (path, json) = self.inner.lock().files.vote_write(vote)?;
        blocking(move || write_atomic(&path, &json)).await?;
        self.inner.lock().vote = Some(*vote);
        Ok(())
    }

    async fn save_committed(&mut self, committed: Option<LogId>) -> Result<(), io::Error> {
        let (path, json) = self
            .inner
            .lock()
            .files
            .committed_write(committed.as_ref())?;
        blocking(move || write_atomic(&path, &json)).await?;
        let mut g = self.inner.lock();
        g.committed = committed;
        g.apply_high_watermark();
        Ok(())
    }

    async fn read_committed(&mut self) -> Result<Option<LogId>, io::Error> {
        Ok(self.inner.lock().committed)
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: IOFlushed<SkiffRaft>,
    ) -> Result<(), io::Error>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let durability = {
            let mut g = self.inner.lock();
            for entry in entries {
                let index = entry.log_id.index;
                if g.slots.is_empty() && index != g.start.start_index {
                    // The first entry of an empty log sets where the log starts.
                    let start = LogStart {
                        start_index: index,
                        start_offset: g.log.log_end_offset(),
                        purged: g.start.purged,
                    };
                    g.files.write_log_start(&start)?;
                    g.start = start;
                }
                if index != g.next_index() {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!(
                            "append of entry {index} leaves a hole after {}",
                            g.next_index()
                        ),
                    ));
                }
                let leader_hint = g
                    .vote
                    .filter(|v| v.is_committed() && v.leader_id.term == entry.log_id.leader_id.term)
                    .map(|v| v.leader_id.voted_for.0);
                let now = g.clock.now_ms();
                let mut batch = codec::encode(&entry, leader_hint, now)?;
                let term = entry.log_id.leader_id.term.0;
                let info = g
                    .log
                    .append_as_leader(&mut batch, term, now)
                    .map_err(storage_err)?;
                g.slots.push(Slot {
                    offset: info.base_offset,
                    term,
                });
            }
            let end = g.log.log_end_offset();
            Durability::SyncTo(Arc::clone(g.log.sync()), end)
        };
        match blocking(move || durability.run()).await {
            Ok(()) => {
                callback.io_completed(Ok(()));
                Ok(())
            }
            Err(e) => {
                callback.io_completed(Err(io::Error::new(e.kind(), e.to_string())));
                Err(e)
            }
        }
    }

    async fn truncate_after(&mut self, last_log_id: Option<LogId>) -> Result<(), io::Error> {
        let file = {
            let mut g = self.inner.lock();
            let keep = match last_log_id {
                None => 0,
                Some(id) => (id.index + 1).saturating_sub(g.start.start_index),
            };
            let keep = usize::try_from(keep).unwrap_or(usize::MAX);
            if keep >= g.slots.len() {
                return Ok(());
            }
            let offset = g.slots[keep].offset;
            g.log.truncate_to(offset).map_err(storage_err)?;
            g.slots.truncate(keep);
            if g.log.log_end_offset() != offset {
                return Err(invalid(format!(
                    "truncation to {offset} left the log end at {}",
                    g.log.log_end_offset()
                )));
            }
            g.apply_high_watermark();
            (g.active_file(), g.log.dir().to_path_buf())
        };
        // Make the cut durable now so removed entries cannot come back on restart: the shorter
        // active file, and the dir (segments past the cut were unlinked).
        let (file, dir) = file;
        blocking(move || {
            Durability::File(file).run()?;
            File::open(&dir)?.sync_all()
        })
        .await
    }

    async fn purge(&mut self, log_id: LogId) -> Result<(), io::Error> {
        let mut g = self.inner.lock();
        if g.start.purged.is_some_and(|p| p.index >= log_id.index) {
            return Ok(());
        }
        let drop = (log_id.index + 1).saturating_sub(g.start.start_index);
        let drop = usize::try_from(drop)
            .unwrap_or(usize::MAX)
            .min(g.slots.len());
        let past_end = log_id.index >= g.next_index();
        let new_offset = match g.slots.get(drop) {
            Some(s) => s.offset,
            // Purged past the log end: the log continues where the snapshot covering the
            // purged entries ends (when the store was told), else at its end.
            None => match g.snapshot {
                Some((last, end)) if past_end && last == log_id => end,
                _ => g.log.log_end_offset(),
            },
        };
        let start = LogStart {
            start_index: g.start.start_index.max(log_id.index + 1),
            start_offset: new_offset,
            purged: Some(log_id),
        };
        // The start file first: after a crash the log start is re-applied from it on open.
        g.files.write_log_start(&start)?;
        g.start = start;
        g.slots.drain(..drop);
        if new_offset > g.log.log_end_offset() {
            // Nothing on disk is kept: the log restarts empty at the snapshot's end offset.
            g.log
                .truncate_fully_and_start_at(new_offset)
                .map_err(storage_err)?;
        } else if new_offset > g.log.log_start_offset() {
            // `delete_records` stops at the high watermark; openraft purges applied entries
            // only, but the suite purges freely, so lift it for the move and reset it after.
            let end = g.log.log_end_offset();
            g.log.set_high_watermark(end);
            g.log.delete_records(new_offset).map_err(storage_err)?;
        }
        g.apply_high_watermark();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use openraft::entry::RaftEntry;

    use super::*;
    use crate::types::Op;

    fn blank(term: i32, index: u64) -> Entry {
        Entry::new_blank(log_id(term, index))
    }

    #[tokio::test]
    async fn a_re_append_below_the_old_synced_mark_is_fsynced_again() {
        let tmp = tempfile::tempdir().unwrap();
        let mut s = KafkaLogStore::open(&tmp.path().join("m-0"), Clock::manual(0)).unwrap();
        let entries: Vec<Entry> = (0..5).map(|i| blank(1, i)).collect();
        s.append(entries, IOFlushed::noop()).await.unwrap();
        let synced = s.inner.lock().log.sync().synced();
        assert_eq!(synced, 5, "sync_to covered the appends");
        s.truncate_after(Some(log_id(1, 1))).await.unwrap();
        // The truncation lowered storage's synced mark to the cut.
        assert_eq!(s.inner.lock().log.sync().synced(), 2);
        let again = Entry::new_normal(log_id(2, 2), Op(vec![bytes::Bytes::from_static(b"x")]));
        s.append(vec![again.clone()], IOFlushed::noop())
            .await
            .unwrap();
        let (end, synced) = {
            let g = s.inner.lock();
            (g.log.log_end_offset(), g.log.sync().synced())
        };
        assert_eq!(synced, end, "the re-append was fsynced");
        assert_eq!(s.try_get_log_entries(2..).await.unwrap(), vec![again]);
    }

    #[tokio::test]
    async fn a_purge_past_the_end_restarts_the_log_at_the_snapshot_end() {
        // A follower with entries 0..3 installs a snapshot of entry 9 whose log continues at
        // offset 40 on the leader: its log must continue there too, also after a reopen.
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("m-0");
        let mut s = KafkaLogStore::open(&dir, Clock::manual(0)).unwrap();
        let entries: Vec<Entry> = (0..3).map(|i| blank(1, i)).collect();
        s.append(entries, IOFlushed::noop()).await.unwrap();
        s.note_snapshot(log_id(2, 9), 40);
        s.purge(log_id(2, 9)).await.unwrap();
        assert_eq!(s.start_index(), 10);
        assert_eq!(s.offsets().0, 40);
        assert_eq!(s.offsets().1, 40);
        let next = Entry::new_normal(log_id(2, 10), Op(vec![bytes::Bytes::from_static(b"x")]));
        s.append(vec![next.clone()], IOFlushed::noop())
            .await
            .unwrap();
        assert_eq!(s.base_offset_of(10), Some(40));
        s.close().unwrap();
        drop(s);
        let mut s = KafkaLogStore::open(&dir, Clock::manual(0)).unwrap();
        assert_eq!(s.base_offset_of(10), Some(40));
        assert_eq!(s.try_get_log_entries(0..).await.unwrap(), vec![next]);
        let state = s.get_log_state().await.unwrap();
        assert_eq!(state.last_purged_log_id, Some(log_id(2, 9)));
    }
}
