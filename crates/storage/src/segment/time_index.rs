//! The `.timeindex` file of a segment: a sparse map from max timestamp to offset (KIP-33).
//!
//! Mental model (Kafka's `TimeIndex`, spec §1.5): a flat array of 12-byte entries, each
//! `int64 timestamp | int32 relative offset (offset - base_offset)`, big-endian, no header.
//! An entry `(T, O)` means "T is the largest timestamp in this segment up to and including
//! offset O": any record with a timestamp > T is at an offset > O. Timestamps are strictly
//! increasing within one file and offsets never decrease; an append whose timestamp does not
//! exceed the last entry's is silently skipped (so v0 data with `-1` timestamps leaves the index
//! empty). The last slot is reserved: [`TimeIndex::is_full`] reports full one entry early so
//! the final entry forced in when the segment rolls (`skip_full_check`) always fits.
//!
//! File handling (entries in memory while active, `pwrite` at flush/roll, trim, read-only
//! mapping when sealed, resize, rebuild-on-corruption) is the same as
//! for the offset index: see [`super::offset_index`]. After a crash the caller runs
//! [`TimeIndex::sanity_check`] and rebuilds from the log if it fails.
//!
//! Ownership and threads: owned by one segment, not internally synchronized (`&mut self`
//! for writes, the segment's lock orders them).

use std::io;
use std::path::Path;

use super::offset_index::{IndexError, IndexFile, read_i32, read_i64, relative_offset};

/// Size of one `.timeindex` entry in bytes.
pub const TIME_INDEX_ENTRY_BYTES: usize = 12;

/// A segment's time index. See the module docs.
#[derive(Debug)]
pub struct TimeIndex {
    base_offset: i64,
    file: IndexFile,
}

impl TimeIndex {
    /// Opens `path`, creating it if it does not exist. Same rules as
    /// [`OffsetIndex::open`](super::offset_index::OffsetIndex::open) with 12-byte entries.
    pub fn open(
        path: &Path,
        base_offset: i64,
        max_index_bytes: usize,
        writable: bool,
    ) -> io::Result<Self> {
        let file = IndexFile::open(path, TIME_INDEX_ENTRY_BYTES, max_index_bytes, writable)?;
        Ok(Self { base_offset, file })
    }

    pub fn base_offset(&self) -> i64 {
        self.base_offset
    }

    pub fn entries(&self) -> usize {
        self.file.entries()
    }

    pub fn max_entries(&self) -> usize {
        self.file.max_entries()
    }

    /// `entries >= max_entries - 1`: the last slot is kept for the final entry at roll time.
    pub fn is_full(&self) -> bool {
        self.entries() >= self.max_entries().saturating_sub(1)
    }

    /// Appends `(timestamp, offset)` if `timestamp` is larger than the last entry's (an empty
    /// index's "last timestamp" is `-1`); otherwise does nothing. Errors: the index is full
    /// (unless `skip_full_check`, which may use the reserved last slot, but never more), the
    /// offset is below the last entry's, or it cannot be stored relative to the base offset.
    pub fn maybe_append(
        &mut self,
        timestamp: i64,
        offset: i64,
        skip_full_check: bool,
    ) -> Result<(), IndexError> {
        let full = |idx: &Self| IndexError::Full {
            path: idx.path().to_path_buf(),
            entries: idx.entries(),
        };
        if !skip_full_check && self.is_full() {
            return Err(full(self));
        }
        let (last_ts, last_offset) = self.last_entry();
        if self.entries() > 0 && offset < last_offset {
            return Err(IndexError::OffsetDecreasing {
                path: self.path().to_path_buf(),
                offset,
                last: last_offset,
            });
        }
        if timestamp <= last_ts {
            // Nothing to write: fine even in a trimmed (full) index, e.g. the forced final
            // entry of a reopened rolled segment, which is already there.
            return Ok(());
        }
        if self.entries() >= self.max_entries() {
            return Err(full(self));
        }
        let Some(rel) = relative_offset(self.base_offset, offset) else {
            return Err(IndexError::OffsetOutOfRange {
                path: self.path().to_path_buf(),
                offset,
                base_offset: self.base_offset,
            });
        };
        let mut bytes = [0u8; TIME_INDEX_ENTRY_BYTES];
        bytes[..8].copy_from_slice(&timestamp.to_be_bytes());
        bytes[8..].copy_from_slice(&rel.to_be_bytes());
        self.file.push(&bytes);
        Ok(())
    }

    /// The largest entry with timestamp `<= target_ts` as `(timestamp, offset)`, or
    /// `(-1, base_offset)` if there is none.
    pub fn lookup(&self, target_ts: i64) -> (i64, i64) {
        let n = self.partition_point(|ts, _| ts <= target_ts);
        if n == 0 {
            (-1, self.base_offset)
        } else {
            self.entry(n - 1)
        }
    }

    /// Entry `n` as `(timestamp, absolute offset)`. Panics if `n >= entries()`.
    pub fn entry(&self, n: usize) -> (i64, i64) {
        let b = self.file.slot(n);
        let rel = read_i32(b, 8);
        (
            read_i64(b, 0),
            self.base_offset.saturating_add(i64::from(rel)),
        )
    }

    /// The last entry, or `(-1, base_offset)` if the index is empty.
    pub fn last_entry(&self) -> (i64, i64) {
        match self.entries() {
            0 => (-1, self.base_offset),
            n => self.entry(n - 1),
        }
    }

    /// Drops every entry whose offset is `>= offset`.
    pub fn truncate_to(&mut self, offset: i64) {
        let n = self.partition_point(|_, o| o < offset);
        self.file.set_entries(n);
    }

    pub fn truncate_all(&mut self) {
        self.file.truncate_all();
    }

    /// Writes the file to exactly its `entries * 12` bytes and seals it.
    pub fn trim_to_valid_size(&mut self) -> io::Result<()> {
        self.file.trim_to_valid_size()
    }

    /// Makes the index writable with room for `round_down(max_index_bytes, 12)` bytes of
    /// entries, never below the valid ones.
    pub fn resize(&mut self, max_index_bytes: usize) -> io::Result<()> {
        self.file.resize(max_index_bytes)
    }

    /// Checks the file length was a multiple of 12, timestamps strictly increase, and offsets
    /// never decrease and are `>= base_offset`. A zero-filled tail fails the checks.
    pub fn sanity_check(&self) -> Result<(), IndexError> {
        let corrupt = |reason: String| IndexError::Corrupt {
            path: self.path().to_path_buf(),
            reason,
        };
        self.file.check_length().map_err(corrupt)?;
        let mut prev: Option<(i64, i32)> = None;
        for n in 0..self.entries() {
            let b = self.file.slot(n);
            let (ts, rel) = (read_i64(b, 0), read_i32(b, 8));
            if rel < 0 {
                return Err(corrupt(format!(
                    "entry {n} has negative relative offset {rel}"
                )));
            }
            if let Some((pts, prel)) = prev
                && (ts <= pts || rel < prel)
            {
                return Err(corrupt(format!(
                    "entry {n} ({ts}, {rel}) does not follow ({pts}, {prel})"
                )));
            }
            prev = Some((ts, rel));
        }
        Ok(())
    }

    /// Writes the entries the file lacks (`pwrite`) and `fdatasync`s it.
    pub fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }

    pub fn path(&self) -> &Path {
        self.file.path()
    }

    pub fn rename_to(&mut self, new_path: &Path) -> io::Result<()> {
        self.file.rename_to(new_path)
    }

    /// Unmaps and deletes the file (a missing file is fine).
    pub fn delete(self) -> io::Result<()> {
        self.file.delete()
    }

    /// Bytes of valid entries, `entries * 12`.
    pub fn size_bytes(&self) -> usize {
        self.file.size_bytes()
    }

    /// Number of leading entries for which `pred(timestamp, offset)` holds (binary search;
    /// `pred` must be true on a prefix).
    fn partition_point(&self, pred: impl Fn(i64, i64) -> bool) -> usize {
        let (mut lo, mut hi) = (0, self.entries());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let (ts, o) = self.entry(mid);
            if pred(ts, o) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MAX: usize = 12 * 64;

    fn model_lookup(entries: &[(i64, i64)], base: i64, target: i64) -> (i64, i64) {
        entries
            .iter()
            .rev()
            .find(|(t, _)| *t <= target)
            .copied()
            .unwrap_or((-1, base))
    }

    #[test]
    fn new_file_is_empty_not_preallocated() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("0.timeindex");
        let idx = TimeIndex::open(&path, 40, 12 * 10 + 11, true).unwrap();
        // issue 12: no sparse preallocation; capacity is a count, not a file length.
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
        assert_eq!((idx.entries(), idx.max_entries()), (0, 10));
        assert_eq!(idx.last_entry(), (-1, 40));
        assert_eq!(idx.lookup(i64::MAX), (-1, 40));
        idx.sanity_check().unwrap();
    }

    #[test]
    fn append_lookup_and_skip_rules() {
        let dir = tempfile::tempdir().unwrap();
        let mut idx = TimeIndex::open(&dir.path().join("0.timeindex"), 100, MAX, true).unwrap();
        // No-timestamp data is never indexed.
        idx.maybe_append(-1, 100, false).unwrap();
        assert_eq!(idx.entries(), 0);
        idx.maybe_append(1000, 105, false).unwrap();
        // Same or smaller timestamp: skipped, even at a later offset.
        idx.maybe_append(1000, 110, false).unwrap();
        idx.maybe_append(900, 111, false).unwrap();
        assert_eq!(idx.entries(), 1);
        idx.maybe_append(2000, 120, false).unwrap();
        // Same offset with a larger timestamp is fine (offsets need only not decrease).
        idx.maybe_append(2500, 120, false).unwrap();
        assert!(matches!(
            idx.maybe_append(3000, 119, false),
            Err(IndexError::OffsetDecreasing { .. })
        ));
        assert!(matches!(
            idx.maybe_append(3000, 100 + i64::from(i32::MAX) + 1, false),
            Err(IndexError::OffsetOutOfRange { .. })
        ));
        assert_eq!(idx.entries(), 3);
        for (target, want) in [
            (i64::MIN, (-1, 100)),
            (999, (-1, 100)),
            (1000, (1000, 105)),
            (1999, (1000, 105)),
            (2000, (2000, 120)),
            (2499, (2000, 120)),
            (2500, (2500, 120)),
            (i64::MAX, (2500, 120)),
        ] {
            assert_eq!(idx.lookup(target), want, "target {target}");
        }
        assert_eq!(idx.last_entry(), (2500, 120));
        assert_eq!(idx.entry(0), (1000, 105));
        assert_eq!(idx.size_bytes(), 36);
        idx.sanity_check().unwrap();
    }

    #[test]
    fn offset_below_base_is_rejected_on_empty_index() {
        let dir = tempfile::tempdir().unwrap();
        let mut idx = TimeIndex::open(&dir.path().join("0.timeindex"), 100, MAX, true).unwrap();
        assert!(matches!(
            idx.maybe_append(5, 99, false),
            Err(IndexError::OffsetOutOfRange { .. })
        ));
        assert_eq!(idx.entries(), 0);
    }

    #[test]
    fn full_keeps_the_last_slot_for_the_final_entry() {
        let dir = tempfile::tempdir().unwrap();
        let mut idx = TimeIndex::open(&dir.path().join("0.timeindex"), 0, 12 * 3, true).unwrap();
        idx.maybe_append(10, 1, false).unwrap();
        assert!(!idx.is_full());
        idx.maybe_append(20, 2, false).unwrap();
        assert!(idx.is_full(), "2 of 3 slots used is full");
        assert!(matches!(
            idx.maybe_append(30, 3, false),
            Err(IndexError::Full { entries: 2, .. })
        ));
        idx.maybe_append(30, 3, true).unwrap();
        assert_eq!(idx.last_entry(), (30, 3));
        // No slot left at all: even skip_full_check fails instead of writing out of bounds.
        assert!(matches!(
            idx.maybe_append(40, 4, true),
            Err(IndexError::Full { entries: 3, .. })
        ));
        let mut tiny = TimeIndex::open(&dir.path().join("1.timeindex"), 0, 11, true).unwrap();
        assert!(tiny.is_full());
        assert!(tiny.maybe_append(1, 0, true).is_err());
    }

    #[test]
    fn truncate_to_drops_entries_at_or_above() {
        let dir = tempfile::tempdir().unwrap();
        let mut idx = TimeIndex::open(&dir.path().join("0.timeindex"), 0, MAX, true).unwrap();
        for (t, o) in [(10, 5), (20, 5), (30, 9), (40, 15)] {
            idx.maybe_append(t, o, false).unwrap();
        }
        idx.truncate_to(16);
        assert_eq!(idx.entries(), 4);
        idx.truncate_to(15);
        assert_eq!(idx.last_entry(), (30, 9));
        idx.truncate_to(6);
        assert_eq!(idx.entries(), 2, "both entries at offset 5 stay");
        idx.truncate_to(5);
        assert_eq!(idx.last_entry(), (-1, 0));
        // After truncation, smaller timestamps are accepted again.
        idx.maybe_append(7, 3, false).unwrap();
        assert_eq!(idx.lookup(100), (7, 3));
        idx.truncate_all();
        assert_eq!(idx.entries(), 0);
    }

    #[test]
    fn trim_reopen_and_resize() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("0.timeindex");
        let mut idx = TimeIndex::open(&path, 1000, MAX, true).unwrap();
        for (t, o) in [(100, 1000), (200, 1010), (300, 1030)] {
            idx.maybe_append(t, o, false).unwrap();
        }
        idx.trim_to_valid_size().unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 36);
        let before: Vec<_> = (0..400).map(|t| idx.lookup(t)).collect();
        idx.flush().unwrap();
        drop(idx);
        let idx = TimeIndex::open(&path, 1000, MAX, false).unwrap();
        idx.sanity_check().unwrap();
        assert_eq!(before, (0..400).map(|t| idx.lookup(t)).collect::<Vec<_>>());
        drop(idx);
        let mut idx = TimeIndex::open(&path, 1000, MAX, true).unwrap();
        assert_eq!((idx.entries(), idx.max_entries()), (3, 64));
        idx.maybe_append(400, 1040, false).unwrap();
        idx.trim_to_valid_size().unwrap();
        assert!(idx.is_full());
        idx.resize(MAX).unwrap();
        assert!(!idx.is_full());
        assert_eq!(idx.last_entry(), (400, 1040));
        let renamed = dir.path().join("0.timeindex.deleted");
        idx.rename_to(&renamed).unwrap();
        assert!(!path.exists() && renamed.exists());
        idx.delete().unwrap();
        assert!(!renamed.exists());
    }

    #[test]
    fn sanity_check_catches_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("0.timeindex");
        let write = |entries: &[(i64, i32)], extra: &[u8]| {
            let mut v = Vec::new();
            for (t, r) in entries {
                v.extend_from_slice(&t.to_be_bytes());
                v.extend_from_slice(&r.to_be_bytes());
            }
            v.extend_from_slice(extra);
            std::fs::write(&path, v).unwrap();
        };
        let check = || TimeIndex::open(&path, 0, MAX, true).unwrap().sanity_check();
        write(&[(10, 0), (20, 0), (30, 4)], &[]);
        check().unwrap();
        write(&[(10, 0), (20, 4)], &[0; 24]);
        assert!(
            matches!(check(), Err(IndexError::Corrupt { .. })),
            "zero tail"
        );
        write(&[(10, 0), (10, 4)], &[]);
        assert!(check().is_err(), "timestamp repeats");
        write(&[(10, 5), (20, 4)], &[]);
        assert!(check().is_err(), "offset goes back");
        write(&[(10, -3)], &[]);
        assert!(check().is_err(), "offset below base");
        write(&[(10, 3)], &[9; 5]);
        assert!(check().is_err(), "length not a multiple of 12");
    }

    #[test]
    fn garbage_and_deleted_files_never_panic() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("0.timeindex");
        let mut seed = 0x9e37_79b9_u64;
        for len in [0usize, 5, 12, 13, 120, 500, 768, 1000] {
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                    (seed >> 33) as u8
                })
                .collect();
            std::fs::write(&path, &bytes).unwrap();
            let mut idx = TimeIndex::open(&path, i64::MAX - 1, MAX, true).unwrap();
            assert_eq!(idx.entries(), len / 12);
            let _ = idx.sanity_check();
            for t in [i64::MIN, -1, 0, i64::MAX] {
                let _ = idx.lookup(t);
            }
            let _ = idx.maybe_append(i64::MAX, i64::MAX, true);
            idx.truncate_to(0);
        }
        std::fs::remove_file(&path).unwrap();
        let idx = TimeIndex::open(&path, 0, MAX, true).unwrap();
        assert_eq!(idx.entries(), 0);
        assert!(path.exists());
    }

    proptest! {
        #[test]
        fn lookup_matches_brute_force(
            base in 0i64..1_000_000,
            steps in proptest::collection::vec((-20i64..100, 0i64..30), 0..60),
            targets in proptest::collection::vec(-50i64..4000, 1..40),
            cut in 0i64..2500,
        ) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("0.timeindex");
            let mut idx = TimeIndex::open(&path, base, MAX, true).unwrap();
            let mut model: Vec<(i64, i64)> = Vec::new();
            let (mut ts, mut off) = (0i64, base);
            for (dt, doff) in steps {
                // Timestamps wander (some appends are skipped); offsets never go back.
                ts += dt;
                off += doff;
                idx.maybe_append(ts, off, false).unwrap();
                if ts > model.last().map_or(-1, |e| e.0) {
                    model.push((ts, off));
                }
            }
            prop_assert_eq!(idx.entries(), model.len());
            for t in &targets {
                prop_assert_eq!(idx.lookup(*t), model_lookup(&model, base, *t));
            }
            idx.sanity_check().unwrap();

            idx.trim_to_valid_size().unwrap();
            drop(idx);
            let mut idx = TimeIndex::open(&path, base, MAX, false).unwrap();
            for t in &targets {
                prop_assert_eq!(idx.lookup(*t), model_lookup(&model, base, *t));
            }

            idx.truncate_to(base + cut);
            model.retain(|(_, o)| *o < base + cut);
            prop_assert_eq!(idx.entries(), model.len());
            for t in &targets {
                prop_assert_eq!(idx.lookup(*t), model_lookup(&model, base, *t));
            }
        }
    }
}
