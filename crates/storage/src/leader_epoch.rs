//! The leader-epoch cache of one partition and its `leader-epoch-checkpoint` file (KIP-101,
//! KIP-279; spec §5.4).
//!
//! Mental model (Kafka's `LeaderEpochFileCache`): an ordered list of `(epoch, start offset)`
//! pairs, "epoch E's first message is at offset S". A leader records `(E, LEO)` when it
//! becomes leader at E; a follower records `(epoch, base offset)` of each appended batch whose
//! epoch is new. The list answers OffsetForLeaderEpoch ([`LeaderEpochCache::end_offset_for`])
//! and "which epoch wrote offset O" ([`LeaderEpochCache::epoch_for_offset`]).
//!
//! Invariant: both epochs and start offsets are strictly increasing along the list. `assign`
//! keeps it by removing conflicting later entries (Kafka: the log is already inconsistent and
//! the newest assignment wins). Epochs and start offsets are never negative.
//!
//! File: `"0\n<count>\n<epoch> <start_offset>\n"*` (see [`crate::checkpoint`]), written whole
//! with tmp + fsync + rename by [`LeaderEpochCache::flush`] (skipped when the file already holds
//! exactly the entries, e.g. on every load of an unchanged log). Mutators do not touch the disk:
//! the owner (the partition log) calls `flush` after a change it needs to be durable (Kafka
//! flushes synchronously after `assign` and lazily after truncation; on load the log re-applies
//! its truncations, so a stale file is repaired). A missing or garbled file loads as an empty
//! cache with a warning; it is rebuilt from the log's batches during recovery. That repair is
//! why the first entry of a new partition is written without fsync
//! ([`LeaderEpochCache::flush_after_append`]); every later change is durable.
//!
//! Thread-safety: plain data, `&mut self` to mutate; the owning log's lock serialises access.

use std::path::{Path, PathBuf};

use crate::checkpoint::{CHECKPOINT_VERSION, CheckpointEntry, CheckpointFile, fields};

/// File name of the cache inside a partition directory.
pub const LEADER_EPOCH_CHECKPOINT_FILE: &str = "leader-epoch-checkpoint";
/// OffsetForLeaderEpoch's "undefined" epoch.
pub const UNDEFINED_EPOCH: i32 = -1;
/// OffsetForLeaderEpoch's "undefined" end offset.
pub const UNDEFINED_EPOCH_OFFSET: i64 = -1;

/// "Epoch `epoch` starts at offset `start_offset`."
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpochEntry {
    pub epoch: i32,
    pub start_offset: i64,
}

impl EpochEntry {
    pub fn new(epoch: i32, start_offset: i64) -> Self {
        Self {
            epoch,
            start_offset,
        }
    }
}

impl CheckpointEntry for EpochEntry {
    fn to_line(&self) -> String {
        format!("{} {}", self.epoch, self.start_offset)
    }

    fn from_line(line: &str) -> Result<Self, String> {
        let [epoch, start] = fields::<2>(line)?;
        let epoch: i32 = epoch
            .parse()
            .ok()
            .filter(|e| *e >= 0)
            .ok_or_else(|| format!("bad epoch {epoch:?}"))?;
        let start_offset: i64 = start
            .parse()
            .ok()
            .filter(|o| *o >= 0)
            .ok_or_else(|| format!("bad start offset {start:?}"))?;
        Ok(Self::new(epoch, start_offset))
    }
}

/// One partition's leader-epoch cache. See the module docs.
#[derive(Debug)]
pub struct LeaderEpochCache {
    file: CheckpointFile,
    entries: Vec<EpochEntry>,
    /// What the file holds as far as this cache knows (read at load or last written), so a
    /// `flush` without a change costs no write and no fsync (issue 12: 5,000 of them per start).
    on_disk: Option<Vec<EpochEntry>>,
}

impl LeaderEpochCache {
    /// Loads the cache from `path` (normally `<partition dir>/leader-epoch-checkpoint`). A
    /// missing file gives an empty cache; a garbled one gives an empty cache and a warning.
    /// Entries are re-applied with [`assign`](Self::assign), so a file with out-of-order
    /// entries is normalised the way Kafka does it.
    pub fn load(path: PathBuf) -> Self {
        let file = CheckpointFile::new(path, CHECKPOINT_VERSION);
        let mut cache = Self {
            file,
            entries: Vec::new(),
            on_disk: None,
        };
        match cache.file.read::<EpochEntry>() {
            Ok(entries) => {
                for e in &entries {
                    cache.assign(e.epoch, e.start_offset);
                }
                cache.on_disk = Some(entries);
            }
            Err(e) => {
                tracing::warn!(error = %e, "ignoring unreadable leader-epoch checkpoint; starting empty");
            }
        }
        cache
    }

    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// Records that `epoch` starts at `start_offset` (Kafka's `assign`). Nothing happens if
    /// `epoch` is the latest epoch and `start_offset` is not smaller than its recorded start
    /// (an epoch, once assigned, keeps its first offset). Otherwise every entry with
    /// `epoch >= epoch` or `start >= start_offset` is removed and the new entry appended.
    /// Negative values are rejected (returns `false`, logs a warning). Returns whether the
    /// cache changed; the caller flushes if it did.
    pub fn assign(&mut self, epoch: i32, start_offset: i64) -> bool {
        if epoch < 0 || start_offset < 0 {
            tracing::warn!(
                epoch,
                start_offset,
                path = %self.path().display(),
                "ignoring invalid leader epoch entry"
            );
            return false;
        }
        if let Some(latest) = self.latest_entry()
            && latest.epoch == epoch
            && start_offset >= latest.start_offset
        {
            return false;
        }
        let keep = self
            .entries
            .iter()
            .rposition(|e| e.epoch < epoch && e.start_offset < start_offset)
            .map_or(0, |i| i + 1);
        let removed = self.entries.split_off(keep);
        // Replacing one entry at the same start offset is the expected "no data was written
        // in the removed epoch" case; anything else means the log diverged.
        if removed.len() > 1
            || removed
                .first()
                .is_some_and(|e| e.start_offset != start_offset)
        {
            tracing::warn!(
                epoch,
                start_offset,
                ?removed,
                path = %self.path().display(),
                "new leader epoch entry truncated conflicting entries"
            );
        }
        self.entries.push(EpochEntry::new(epoch, start_offset));
        true
    }

    pub fn latest_epoch(&self) -> Option<i32> {
        self.latest_entry().map(|e| e.epoch)
    }

    pub fn latest_entry(&self) -> Option<EpochEntry> {
        self.entries.last().copied()
    }

    pub fn earliest_entry(&self) -> Option<EpochEntry> {
        self.entries.first().copied()
    }

    /// All entries, epochs and start offsets strictly increasing.
    pub fn entries(&self) -> &[EpochEntry] {
        &self.entries
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The epoch that wrote `offset`: the entry with the largest start `<= offset`, or `None`
    /// if `offset` is below the first entry (or the cache is empty).
    pub fn epoch_for_offset(&self, offset: i64) -> Option<i32> {
        let n = self.entries.partition_point(|e| e.start_offset <= offset);
        n.checked_sub(1).map(|i| self.entries[i].epoch)
    }

    /// OffsetForLeaderEpoch (Kafka's `endOffsetFor`): `(epoch, end offset)` for
    /// `requested_epoch`, where the end offset is the start of the first epoch larger than
    /// the request, or `log_end_offset` if the request is the latest epoch.
    ///
    /// * `requested_epoch == -1`, an empty cache, or a request above the latest epoch:
    ///   `(-1, -1)`.
    /// * the latest epoch: `(requested_epoch, log_end_offset)`.
    /// * below every known epoch: `(requested_epoch, first entry's start)`.
    /// * otherwise: `(largest known epoch <= requested, start of the next known epoch)`.
    pub fn end_offset_for(&self, requested_epoch: i32, log_end_offset: i64) -> (i32, i64) {
        const UNDEFINED: (i32, i64) = (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET);
        if requested_epoch == UNDEFINED_EPOCH {
            return UNDEFINED;
        }
        if self.latest_epoch() == Some(requested_epoch) {
            return (requested_epoch, log_end_offset);
        }
        // First entry with epoch > requested.
        let higher = self.entries.partition_point(|e| e.epoch <= requested_epoch);
        let Some(next) = self.entries.get(higher) else {
            return UNDEFINED;
        };
        match higher.checked_sub(1) {
            None => (requested_epoch, next.start_offset),
            Some(floor) => (self.entries[floor].epoch, next.start_offset),
        }
    }

    /// Removes every entry with `start_offset >= end_offset` (log truncated to `end_offset`).
    /// A negative `end_offset` (undefined) does nothing.
    pub fn truncate_from_end(&mut self, end_offset: i64) {
        if end_offset < 0 {
            return;
        }
        let keep = self
            .entries
            .partition_point(|e| e.start_offset < end_offset);
        if keep < self.entries.len() {
            let removed = self.entries.split_off(keep);
            tracing::debug!(
                end_offset,
                ?removed,
                "truncated leader epoch cache from end"
            );
        }
    }

    /// The log start moved to `start_offset`: entries starting at or below it are removed and
    /// the last of them is re-added starting at `start_offset` (so the epoch covering the new
    /// log start is kept). `truncate_from_start(6)` keeps an entry starting at 6.
    pub fn truncate_from_start(&mut self, start_offset: i64) {
        let n = self
            .entries
            .partition_point(|e| e.start_offset <= start_offset);
        if n == 0 {
            return;
        }
        let epoch = self.entries[n - 1].epoch;
        self.entries.drain(..n - 1);
        self.entries[0] = EpochEntry::new(epoch, start_offset);
    }

    /// Removes all entries (in memory; call [`flush`](Self::flush) to persist).
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// Atomically rewrites the checkpoint file with the current entries, unless it already
    /// holds exactly them.
    pub fn flush(&mut self) -> std::io::Result<()> {
        if self.on_disk.as_ref() == Some(&self.entries) {
            return Ok(());
        }
        self.file.write(self.entries.iter())?;
        self.on_disk = Some(self.entries.clone());
        Ok(())
    }

    /// The flush after an append assigned a new epoch. When the file held no entry (a new
    /// partition's first batch) it is written without fsync: losing it in a crash leaves an
    /// empty or unreadable file, which loads as an empty cache, and recovery rebuilds an empty
    /// cache from the batch headers, so nothing is lost (issue 12 item 11: 5,000 new
    /// partitions no longer pay 5,000 fsync pairs on their first produce). Any later change
    /// (the file already holds an entry the log relies on) is written durably by
    /// [`flush`](Self::flush).
    pub fn flush_after_append(&mut self) -> std::io::Result<()> {
        if self.on_disk.as_ref().is_some_and(|d| !d.is_empty()) {
            return self.flush();
        }
        if self.on_disk.as_ref() == Some(&self.entries) {
            return Ok(());
        }
        self.file.write_unsynced(self.entries.iter())?;
        self.on_disk = Some(self.entries.clone());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const UNDEF: (i32, i64) = (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET);

    /// `(epoch, start offset)` pairs as written in tables.
    type Pairs = &'static [(i32, i64)];

    fn e(epoch: i32, start: i64) -> EpochEntry {
        EpochEntry::new(epoch, start)
    }

    /// A cache on a fresh temp dir (kept alive by the returned guard).
    fn cache() -> (tempfile::TempDir, LeaderEpochCache) {
        let dir = tempfile::tempdir().unwrap();
        let c = LeaderEpochCache::load(dir.path().join(LEADER_EPOCH_CHECKPOINT_FILE));
        (dir, c)
    }

    fn cache_with(entries: &[(i32, i64)]) -> (tempfile::TempDir, LeaderEpochCache) {
        let (d, mut c) = cache();
        for (ep, off) in entries {
            c.assign(*ep, *off);
        }
        (d, c)
    }

    #[test]
    fn assign_table() {
        // (assignments, expected entries) — mirrors LeaderEpochFileCacheTest.
        let cases: &[(Pairs, Pairs, &str)] = &[
            (&[(2, 10)], &[(2, 10)], "add epoch"),
            (
                &[(2, 9), (2, 10)],
                &[(2, 9)],
                "same epoch keeps first offset",
            ),
            (&[(2, 6), (2, 7)], &[(2, 6)], "no update if unchanged epoch"),
            (
                &[(2, 9), (3, 9)],
                &[(3, 9)],
                "new epoch, same offset replaces",
            ),
            (
                &[(2, 6), (3, 5)],
                &[(3, 5)],
                "offset goes back: conflicting removed",
            ),
            (
                &[(1, 5), (2, 6), (1, 7)],
                &[(1, 7)],
                "epoch goes back: later removed",
            ),
            (
                &[(5, 11), (6, 12), (7, 13), (7, 12)],
                &[(5, 11), (7, 12)],
                "latest epoch with earlier start",
            ),
            (
                &[(1, 11), (1, 12), (2, 13), (2, 14), (3, 15), (3, 16)],
                &[(1, 11), (2, 13), (3, 15)],
                "follower appends",
            ),
            (&[(0, 0), (1, 0)], &[(1, 0)], "leader changes with no data"),
            (&[(-1, 5), (2, -1)], &[], "negative values rejected"),
        ];
        for (assign, want, what) in cases {
            let (_d, c) = cache_with(assign);
            let want: Vec<_> = want.iter().map(|(a, b)| e(*a, *b)).collect();
            assert_eq!(c.entries(), want.as_slice(), "{what}");
        }
    }

    /// The first entry is written (unsynced), later ones durably; both are read back.
    #[test]
    fn flush_after_append_writes_the_file() {
        let (d, mut c) = cache();
        let path = d.path().join(LEADER_EPOCH_CHECKPOINT_FILE);
        c.assign(0, 0);
        c.flush_after_append().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"0\n1\n0 0\n");
        c.flush_after_append().unwrap();
        c.assign(3, 7);
        c.flush_after_append().unwrap();
        let again = LeaderEpochCache::load(path);
        assert_eq!(again.entries(), &[e(0, 0), e(3, 7)]);
    }

    #[test]
    fn assign_reports_change() {
        let (_d, mut c) = cache();
        assert!(c.assign(2, 6));
        assert!(!c.assign(2, 6));
        assert!(!c.assign(2, 8));
        assert!(c.assign(2, 5));
        assert!(c.assign(3, 8));
        assert!(!c.assign(-1, 9));
        assert_eq!(c.entries(), &[e(2, 5), e(3, 8)]);
    }

    #[test]
    fn end_offset_for_table() {
        // (assignments, requested epoch, log end offset, expected) — Kafka's test cases.
        type Case = (Pairs, i32, i64, (i32, i64), &'static str);
        let cases: &[Case] = &[
            (&[(2, 10)], 2, 11, (2, 11), "latest epoch -> LEO"),
            (
                &[(2, 11), (2, 12)],
                2,
                14,
                (2, 14),
                "latest epoch, repeated",
            ),
            (
                &[(2, 11), (3, 12)],
                -1,
                0,
                UNDEF,
                "undefined epoch requested",
            ),
            (&[], 0, 0, UNDEF, "empty cache"),
            (&[], -1, 73, UNDEF, "empty cache, undefined epoch"),
            (
                &[(5, 11), (6, 12), (7, 13)],
                4,
                0,
                (4, 11),
                "below first epoch",
            ),
            (
                &[(5, 11), (6, 12), (7, 13), (7, 12)],
                5,
                0,
                (5, 12),
                "after conflict 5",
            ),
            (
                &[(5, 11), (6, 12), (7, 13), (7, 12)],
                6,
                0,
                (5, 12),
                "after conflict 6",
            ),
            (
                &[(1, 11), (2, 13), (3, 15)],
                2,
                17,
                (2, 15),
                "previous epoch",
            ),
            (&[(0, 10), (2, 13), (4, 17)], 1, 0, (0, 13), "gap below"),
            (&[(0, 10), (2, 13), (4, 17)], 2, 0, (2, 17), "exact older"),
            (&[(0, 10), (2, 13), (4, 17)], 3, 0, (2, 17), "gap above"),
            (&[(2, 100)], 3, 100, UNDEF, "above latest"),
            (&[(2, 6)], 2, 7, (2, 7), "epochs not starting at 0"),
            (
                &[(1, 5), (2, 6), (1, 7)],
                1,
                8,
                (1, 8),
                "after epoch regression",
            ),
            (&[(1, 5), (2, 6), (1, 7)], 2, 8, UNDEF, "removed epoch"),
            (&[(0, 0), (1, 0)], 1, 0, (1, 0), "leader change, latest"),
            (
                &[(0, 0), (1, 0)],
                0,
                5,
                (0, 0),
                "epoch replaced at same offset",
            ),
            (&[(0, 0), (1, 0), (2, 5)], 1, 10, (1, 5), "middle epoch"),
            (&[(0, 0), (1, 3), (2, 6)], 0, 9, (0, 3), "follower epochs"),
        ];
        for (assign, req, leo, want, what) in cases {
            let (_d, c) = cache_with(assign);
            assert_eq!(c.end_offset_for(*req, *leo), *want, "{what}");
        }
    }

    #[test]
    fn epoch_for_offset_table() {
        let (_d, c) = cache_with(&[(0, 10), (1, 20), (5, 30)]);
        for (offset, want) in [
            (25, Some(1)),
            (20, Some(1)),
            (30, Some(5)),
            (50, Some(5)),
            (10, Some(0)),
            (5, None),
            (-1, None),
        ] {
            assert_eq!(c.epoch_for_offset(offset), want, "offset {offset}");
        }
        let (_d, empty) = cache();
        assert_eq!(empty.epoch_for_offset(0), None);
    }

    #[test]
    fn truncate_from_end_table() {
        let base: &[(i32, i64)] = &[(2, 6), (3, 8), (4, 11)];
        for (end, want, what) in [
            (8, vec![e(2, 6)], "on epoch boundary (inclusive)"),
            (9, vec![e(2, 6), e(3, 8)], "between boundaries"),
            (11, vec![e(2, 6), e(3, 8)], "at last start"),
            (12, vec![e(2, 6), e(3, 8), e(4, 11)], "beyond last start"),
            (6, vec![], "at first start"),
            (0, vec![], "zero"),
            (
                -1,
                vec![e(2, 6), e(3, 8), e(4, 11)],
                "undefined does nothing",
            ),
        ] {
            let (_d, mut c) = cache_with(base);
            c.truncate_from_end(end);
            assert_eq!(c.entries(), want.as_slice(), "{what}");
        }
        let (_d, mut c) = cache_with(&[(2, 10), (4, 15), (10, 20)]);
        c.truncate_from_end(18);
        assert_eq!(c.latest_epoch(), Some(4));
        let (_d, mut empty) = cache();
        empty.truncate_from_end(7);
        assert!(empty.is_empty());
    }

    #[test]
    fn truncate_from_start_table() {
        let base: &[(i32, i64)] = &[(2, 6), (3, 8), (4, 11)];
        for (start, want, what) in [
            (8, vec![e(3, 8), e(4, 11)], "on epoch boundary keeps it"),
            (9, vec![e(3, 9), e(4, 11)], "between boundaries moves it up"),
            (1, vec![e(2, 6), e(3, 8), e(4, 11)], "before first: nothing"),
            (6, vec![e(2, 6), e(3, 8), e(4, 11)], "at first: nothing"),
            (11, vec![e(4, 11)], "at last keeps last"),
            (15, vec![e(4, 15)], "beyond last moves last"),
            (
                -1,
                vec![e(2, 6), e(3, 8), e(4, 11)],
                "undefined does nothing",
            ),
        ] {
            let (_d, mut c) = cache_with(base);
            c.truncate_from_start(start);
            assert_eq!(c.entries(), want.as_slice(), "{what}");
        }
        let (_d, mut c) = cache_with(&[(0, 0), (1, 7), (2, 10)]);
        c.truncate_from_start(5);
        assert_eq!(c.entries(), &[e(0, 5), e(1, 7), e(2, 10)]);
        let (_d, mut empty) = cache();
        empty.truncate_from_start(7);
        assert!(empty.is_empty());
    }

    #[test]
    fn accessors_and_clear() {
        let (_d, mut c) = cache();
        assert_eq!(
            (c.latest_epoch(), c.latest_entry(), c.earliest_entry()),
            (None, None, None)
        );
        c.assign(2, 6);
        c.assign(3, 8);
        assert_eq!(c.latest_epoch(), Some(3));
        assert_eq!(c.latest_entry(), Some(e(3, 8)));
        assert_eq!(c.earliest_entry(), Some(e(2, 6)));
        c.clear();
        assert!(c.is_empty());
        assert_eq!(c.end_offset_for(3, 10), UNDEF);
    }

    #[test]
    fn persists_between_instances() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LEADER_EPOCH_CHECKPOINT_FILE);
        let mut c = LeaderEpochCache::load(path.clone());
        c.assign(2, 6);
        c.assign(3, 8);
        c.assign(4, 11);
        c.flush().unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "0\n3\n2 6\n3 8\n4 11\n"
        );
        assert_eq!(LeaderEpochCache::load(path.clone()).entries(), c.entries());
        // Truncations persist once flushed (Kafka's shouldWriteCheckpointOnTruncation).
        c.truncate_from_end(11);
        c.truncate_from_start(8);
        c.flush().unwrap();
        assert_eq!(LeaderEpochCache::load(path.clone()).entries(), &[e(3, 8)]);
        // Unflushed changes are not on disk.
        c.assign(9, 20);
        assert_eq!(LeaderEpochCache::load(path.clone()).entries(), &[e(3, 8)]);
        c.clear();
        c.flush().unwrap();
        assert!(LeaderEpochCache::load(path).is_empty());
    }

    #[test]
    fn garbled_or_missing_file_loads_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LEADER_EPOCH_CHECKPOINT_FILE);
        assert!(LeaderEpochCache::load(path.clone()).is_empty(), "missing");
        for bytes in [
            &b""[..],
            b"0\n2\n1 5\n",
            b"1\n1\n1 5\n",
            b"0\n1\n1 five\n",
            b"0\n1\n-1 5\n",
            b"0\n1\n1 -5\n",
            b"0\n1\n1 5 7\n",
            b"0\n1\n99999999999 5\n",
            b"\xff\xff\xff",
            &[0u8; 64],
        ] {
            std::fs::write(&path, bytes).unwrap();
            let c = LeaderEpochCache::load(path.clone());
            assert!(c.is_empty(), "{bytes:?}");
            // The cache stays usable and flushing repairs the file.
            let mut c = c;
            c.assign(1, 0);
            c.flush().unwrap();
            assert_eq!(LeaderEpochCache::load(path.clone()).entries(), &[e(1, 0)]);
        }
    }

    #[test]
    fn flush_without_a_change_writes_nothing() {
        let (dir, mut c) = cache();
        let path = dir.path().join(LEADER_EPOCH_CHECKPOINT_FILE);
        c.assign(3, 10);
        c.flush().unwrap();
        let written = std::fs::read(&path).unwrap();
        // Loaded, unchanged: flush is a no-op (a marker shows the file was not rewritten).
        let mut c = LeaderEpochCache::load(path.clone());
        std::fs::write(&path, b"marker").unwrap();
        c.flush().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"marker");
        // A change is written.
        c.assign(4, 20);
        c.flush().unwrap();
        assert_ne!(std::fs::read(&path).unwrap(), written);
        assert_eq!(LeaderEpochCache::load(path).entries().len(), 2);
    }

    #[test]
    fn load_normalises_non_monotonic_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LEADER_EPOCH_CHECKPOINT_FILE);
        // Written by hand: epoch 3 at 10, then epoch 2 at 12 (epoch regression).
        std::fs::write(&path, "0\n3\n1 0\n3 10\n2 12\n").unwrap();
        let c = LeaderEpochCache::load(path);
        assert_eq!(c.entries(), &[e(1, 0), e(2, 12)]);
    }
}
