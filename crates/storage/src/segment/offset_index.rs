//! The `.index` file of a segment: a sparse map from offset to byte position in the `.log`.
//!
//! Mental model (Kafka's `OffsetIndex`/`AbstractIndex`, spec §2.3): a flat array of 8-byte
//! entries, each `int32 relative offset (offset - base_offset) | int32 position`, big-endian,
//! no header, no checksum. While the segment is active the entries live in memory (at most
//! `max_index_bytes / 8` of them) and reach the file by `pwrite` at flush and roll; the file is
//! never preallocated or sparse (issue 12: sparse mmaps zero-filled the page cache and raised
//! SIGBUS on a full disk). When the segment rolls the file is written and trimmed to exactly
//! `entries * 8` bytes and mapped read-only; [`OffsetIndex::resize`] makes it writable again if
//! the segment becomes active again. See [`super::index_file`].
//!
//! The index is a *rebuildable cache* of the `.log`: it is never trusted blindly after a crash.
//! [`OffsetIndex::open`] accepts whatever is on disk (a missing file is created empty; an
//! existing file counts `len / 8` entries, including any zero-filled tail an older version's
//! preallocation left), and
//! [`OffsetIndex::sanity_check`] tells the caller whether the content is usable. If it is not,
//! the caller calls [`OffsetIndex::truncate_all`] and rebuilds the entries from the log.
//!
//! Ownership and threads: owned by one segment. Not internally synchronized: reads take
//! `&self`, writes take `&mut self`, and the owning segment's lock orders them.
//!
//! Invariants kept by the writers (checked on load by `sanity_check`): relative offsets are
//! strictly increasing and `>= 0`; positions are strictly increasing and inside the log.
//!
//! This file also holds [`IndexError`], shared with the time index.

use std::io;
use std::path::{Path, PathBuf};

pub(crate) use super::index_file::IndexFile;

/// Size of one `.index` entry in bytes.
pub const OFFSET_INDEX_ENTRY_BYTES: usize = 8;

/// Errors of the segment indexes (`.index` and `.timeindex`). I/O errors are plain
/// [`std::io::Error`]s on the functions that touch the file system.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// No room for another entry; the segment must roll.
    #[error("index {path} is full ({entries} entries)")]
    Full { path: PathBuf, entries: usize },
    /// An offset-index append whose offset is not larger than the last entry's.
    #[error("offset {offset} is not larger than the last indexed offset {last} in {path}")]
    OffsetNotIncreasing {
        path: PathBuf,
        offset: i64,
        last: i64,
    },
    /// A time-index append whose offset is smaller than the last entry's.
    #[error("offset {offset} is smaller than the last indexed offset {last} in {path}")]
    OffsetDecreasing {
        path: PathBuf,
        offset: i64,
        last: i64,
    },
    /// `offset - base_offset` is negative or does not fit an `i32`; the segment must roll.
    #[error("offset {offset} cannot be stored relative to base offset {base_offset} in {path}")]
    OffsetOutOfRange {
        path: PathBuf,
        offset: i64,
        base_offset: i64,
    },
    /// The file's content is not a valid index; the caller should rebuild it from the log.
    #[error("corrupt index {path}: {reason}")]
    Corrupt { path: PathBuf, reason: String },
}

/// `offset - base_offset` as a relative offset, if it fits `0..=i32::MAX`.
pub(crate) fn relative_offset(base_offset: i64, offset: i64) -> Option<i32> {
    let rel = offset.checked_sub(base_offset)?;
    i32::try_from(rel).ok().filter(|r| *r >= 0)
}

pub(crate) fn read_i32(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

pub(crate) fn read_i64(b: &[u8], at: usize) -> i64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    i64::from_be_bytes(a)
}

/// A segment's offset index. See the module docs.
#[derive(Debug)]
pub struct OffsetIndex {
    base_offset: i64,
    file: IndexFile,
}

impl OffsetIndex {
    /// Opens `path`, creating it if it does not exist.
    ///
    /// A new file is created empty. An existing file has `len / 8` entries (whatever they
    /// contain: call [`sanity_check`](Self::sanity_check)). If `writable`, the entries are read
    /// into memory and appends may add up to `round_down(max_index_bytes, 8) / 8` in all (never
    /// below the existing ones); otherwise the file is mapped read-only and the index is full.
    pub fn open(
        path: &Path,
        base_offset: i64,
        max_index_bytes: usize,
        writable: bool,
    ) -> io::Result<Self> {
        let file = IndexFile::open(path, OFFSET_INDEX_ENTRY_BYTES, max_index_bytes, writable)?;
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

    pub fn is_full(&self) -> bool {
        self.entries() >= self.max_entries()
    }

    /// Appends `(offset, position)`. `offset` must be larger than the last entry's offset
    /// and fit `base_offset..=base_offset + i32::MAX`, and the index must not be full.
    pub fn append(&mut self, offset: i64, position: u32) -> Result<(), IndexError> {
        if self.is_full() {
            return Err(IndexError::Full {
                path: self.path().to_path_buf(),
                entries: self.entries(),
            });
        }
        if self.entries() > 0 {
            let (last, _) = self.last_entry();
            if offset <= last {
                return Err(IndexError::OffsetNotIncreasing {
                    path: self.path().to_path_buf(),
                    offset,
                    last,
                });
            }
        }
        let Some(rel) = relative_offset(self.base_offset, offset) else {
            return Err(IndexError::OffsetOutOfRange {
                path: self.path().to_path_buf(),
                offset,
                base_offset: self.base_offset,
            });
        };
        let mut bytes = [0u8; OFFSET_INDEX_ENTRY_BYTES];
        bytes[..4].copy_from_slice(&rel.to_be_bytes());
        bytes[4..].copy_from_slice(&position.to_be_bytes());
        self.file.push(&bytes);
        Ok(())
    }

    /// The largest entry whose offset is `<= target`, or `(base_offset, 0)` if there is none.
    pub fn lookup(&self, target: i64) -> (i64, u32) {
        // Number of entries with offset <= target (entries are sorted by offset).
        let n = self.count_below(target.saturating_add(1));
        if n == 0 {
            (self.base_offset, 0)
        } else {
            self.entry(n - 1)
        }
    }

    /// Entry `n` as `(absolute offset, position)`. Panics if `n >= entries()`.
    pub fn entry(&self, n: usize) -> (i64, u32) {
        let b = self.file.slot(n);
        (self.absolute(read_i32(b, 0)), read_i32(b, 4) as u32)
    }

    /// The last entry, or `(base_offset, 0)` if the index is empty.
    pub fn last_entry(&self) -> (i64, u32) {
        match self.entries() {
            0 => (self.base_offset, 0),
            n => self.entry(n - 1),
        }
    }

    /// Drops every entry whose offset is `>= offset`.
    pub fn truncate_to(&mut self, offset: i64) {
        let n = self.count_below(offset);
        self.file.set_entries(n);
    }

    pub fn truncate_all(&mut self) {
        self.file.truncate_all();
    }

    /// Writes the file to exactly its `entries * 8` bytes and seals it (then full, read-only).
    pub fn trim_to_valid_size(&mut self) -> io::Result<()> {
        self.file.trim_to_valid_size()
    }

    /// Makes the index writable with room for `round_down(max_index_bytes, 8)` bytes of
    /// entries, never below the valid ones. Used when a segment becomes active again.
    pub fn resize(&mut self, max_index_bytes: usize) -> io::Result<()> {
        self.file.resize(max_index_bytes)
    }

    /// Checks that the index can be trusted for a log of `log_size` bytes: the file length
    /// was a multiple of 8, relative offsets are `>= 0` and strictly increasing, positions are
    /// strictly increasing and `< log_size`. A zero-filled tail fails the checks.
    pub fn sanity_check(&self, log_size: u64) -> Result<(), IndexError> {
        let corrupt = |reason: String| IndexError::Corrupt {
            path: self.path().to_path_buf(),
            reason,
        };
        self.file.check_length().map_err(corrupt)?;
        let mut prev: Option<(i32, u32)> = None;
        for n in 0..self.entries() {
            let b = self.file.slot(n);
            let (rel, pos) = (read_i32(b, 0), read_i32(b, 4) as u32);
            if rel < 0 {
                return Err(corrupt(format!(
                    "entry {n} has negative relative offset {rel}"
                )));
            }
            if u64::from(pos) >= log_size {
                return Err(corrupt(format!(
                    "entry {n} has position {pos} beyond the log size {log_size}"
                )));
            }
            if let Some((prel, ppos)) = prev
                && (rel <= prel || pos <= ppos)
            {
                return Err(corrupt(format!(
                    "entry {n} ({rel}, {pos}) does not increase after ({prel}, {ppos})"
                )));
            }
            prev = Some((rel, pos));
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

    /// Bytes of valid entries, `entries * 8`.
    pub fn size_bytes(&self) -> usize {
        self.file.size_bytes()
    }

    fn absolute(&self, rel: i32) -> i64 {
        self.base_offset.saturating_add(i64::from(rel))
    }

    /// Number of leading entries whose offset is `< offset` (binary search).
    fn count_below(&self, offset: i64) -> usize {
        let (mut lo, mut hi) = (0, self.entries());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.entry(mid).0 < offset {
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

    const MAX: usize = 8 * 64;

    fn open_in(dir: &tempfile::TempDir, base: i64) -> OffsetIndex {
        OffsetIndex::open(&dir.path().join("0.index"), base, MAX, true).unwrap()
    }

    /// Brute-force reference for `lookup`.
    fn model_lookup(entries: &[(i64, u32)], base: i64, target: i64) -> (i64, u32) {
        entries
            .iter()
            .rev()
            .find(|(o, _)| *o <= target)
            .copied()
            .unwrap_or((base, 0))
    }

    #[test]
    fn new_file_is_empty_not_preallocated() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("0.index");
        let idx = OffsetIndex::open(&path, 100, 8 * 10 + 5, true).unwrap();
        // issue 12: no sparse preallocation; capacity is a count, not a file length.
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
        assert_eq!(
            (idx.entries(), idx.max_entries(), idx.size_bytes()),
            (0, 10, 0)
        );
        assert_eq!(idx.base_offset(), 100);
        assert_eq!(idx.last_entry(), (100, 0));
        assert_eq!(idx.lookup(150), (100, 0));
        assert!(!idx.is_full());
        idx.sanity_check(0).unwrap();
    }

    #[test]
    fn append_and_lookup_table() {
        let dir = tempfile::tempdir().unwrap();
        let mut idx = open_in(&dir, 1000);
        for (o, p) in [(1000, 0), (1005, 100), (1010, 250), (1100, 4000)] {
            idx.append(o, p).unwrap();
        }
        for (target, want) in [
            (0, (1000, 0)),
            (999, (1000, 0)),
            (1000, (1000, 0)),
            (1004, (1000, 0)),
            (1005, (1005, 100)),
            (1009, (1005, 100)),
            (1010, (1010, 250)),
            (1099, (1010, 250)),
            (1100, (1100, 4000)),
            (i64::MAX, (1100, 4000)),
            (i64::MIN, (1000, 0)),
        ] {
            assert_eq!(idx.lookup(target), want, "target {target}");
        }
        assert_eq!(idx.entry(1), (1005, 100));
        assert_eq!(idx.last_entry(), (1100, 4000));
        assert_eq!(idx.size_bytes(), 32);
    }

    #[test]
    fn append_rejects_bad_offsets() {
        let dir = tempfile::tempdir().unwrap();
        let mut idx = open_in(&dir, 1000);
        assert!(matches!(
            idx.append(999, 0),
            Err(IndexError::OffsetOutOfRange { .. })
        ));
        let too_far = 1000 + i64::from(i32::MAX) + 1;
        assert!(matches!(
            idx.append(too_far, 0),
            Err(IndexError::OffsetOutOfRange { .. })
        ));
        idx.append(1000 + i64::from(i32::MAX), 7).unwrap();
        assert!(matches!(
            idx.append(1000 + i64::from(i32::MAX), 8),
            Err(IndexError::OffsetNotIncreasing { .. })
        ));
        assert_eq!(idx.entries(), 1);

        let mut idx = OffsetIndex::open(&dir.path().join("1.index"), 0, MAX, true).unwrap();
        idx.append(5, 10).unwrap();
        assert!(matches!(
            idx.append(5, 20),
            Err(IndexError::OffsetNotIncreasing { .. })
        ));
        assert!(matches!(
            idx.append(4, 20),
            Err(IndexError::OffsetNotIncreasing { .. })
        ));
        assert_eq!(idx.last_entry(), (5, 10));
    }

    #[test]
    fn full_index_rejects_appends() {
        let dir = tempfile::tempdir().unwrap();
        let mut idx = OffsetIndex::open(&dir.path().join("0.index"), 0, 8 * 3, true).unwrap();
        for i in 0..3 {
            assert!(!idx.is_full());
            idx.append(i, i as u32).unwrap();
        }
        assert!(idx.is_full());
        assert!(matches!(
            idx.append(10, 10),
            Err(IndexError::Full { entries: 3, .. })
        ));
        // A zero-byte maximum is always full, and never panics.
        let idx = OffsetIndex::open(&dir.path().join("1.index"), 0, 7, true).unwrap();
        assert!(idx.is_full());
        assert_eq!(idx.max_entries(), 0);
    }

    #[test]
    fn truncate_to_drops_entries_at_or_above() {
        let dir = tempfile::tempdir().unwrap();
        let mut idx = open_in(&dir, 0);
        for (o, p) in [(10, 100), (20, 200), (30, 300), (40, 400)] {
            idx.append(o, p).unwrap();
        }
        idx.truncate_to(41);
        assert_eq!(idx.entries(), 4);
        idx.truncate_to(35);
        assert_eq!(idx.last_entry(), (30, 300));
        idx.truncate_to(30);
        assert_eq!(idx.last_entry(), (20, 200));
        assert_eq!(idx.lookup(35), (20, 200));
        // Appending after truncation reuses the slots.
        idx.append(25, 250).unwrap();
        assert_eq!(idx.lookup(35), (25, 250));
        idx.truncate_to(0);
        assert_eq!(idx.entries(), 0);
        idx.append(5, 50).unwrap();
        idx.truncate_all();
        assert_eq!((idx.entries(), idx.last_entry()), (0, (0, 0)));
    }

    #[test]
    fn trim_then_reopen_gives_identical_lookups_and_resize_reactivates() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("0.index");
        let mut idx = OffsetIndex::open(&path, 500, MAX, true).unwrap();
        let entries = [(500, 0), (520, 4100), (560, 8300), (600, 12500)];
        for (o, p) in entries {
            idx.append(o, p).unwrap();
        }
        idx.trim_to_valid_size().unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 32);
        assert!(idx.is_full());
        idx.flush().unwrap();
        let before: Vec<_> = (450..650).map(|t| idx.lookup(t)).collect();
        drop(idx);

        let idx = OffsetIndex::open(&path, 500, MAX, false).unwrap();
        assert_eq!(
            std::fs::metadata(&path).unwrap().len(),
            32,
            "read-only open keeps size"
        );
        assert_eq!(idx.entries(), 4);
        idx.sanity_check(20_000).unwrap();
        let after: Vec<_> = (450..650).map(|t| idx.lookup(t)).collect();
        assert_eq!(before, after);
        drop(idx);

        // Reopen writable: room up to the max again, the file untouched, keeps the entries,
        // accepts appends.
        let mut idx = OffsetIndex::open(&path, 500, MAX, true).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 32);
        assert_eq!((idx.entries(), idx.max_entries()), (4, 64));
        idx.append(700, 20_000).unwrap();
        idx.trim_to_valid_size().unwrap();
        idx.resize(MAX * 2).unwrap();
        assert_eq!(idx.max_entries(), 128);
        assert_eq!(idx.last_entry(), (700, 20_000));
        // Resize never drops valid entries.
        idx.resize(8).unwrap();
        assert_eq!((idx.entries(), idx.max_entries()), (5, 5));
        assert_eq!(idx.lookup(650), (600, 12500));
    }

    #[test]
    fn sanity_check_catches_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("0.index");
        let write = |entries: &[(i32, i32)], extra: &[u8]| {
            let mut v = Vec::new();
            for (r, p) in entries {
                v.extend_from_slice(&r.to_be_bytes());
                v.extend_from_slice(&p.to_be_bytes());
            }
            v.extend_from_slice(extra);
            std::fs::write(&path, v).unwrap();
        };
        let check = |log_size: u64| {
            OffsetIndex::open(&path, 0, MAX, false)
                .unwrap()
                .sanity_check(log_size)
        };
        write(&[(0, 0), (5, 100), (9, 200)], &[]);
        check(201).unwrap();
        assert!(check(200).is_err(), "position at log end");
        // Zero-filled tail, as a crashed active segment leaves it.
        write(&[(0, 0), (5, 100)], &[0; 16]);
        assert!(matches!(check(1000), Err(IndexError::Corrupt { .. })));
        write(&[(5, 100), (3, 200)], &[]);
        assert!(check(1000).is_err(), "offsets go back");
        write(&[(5, 100), (5, 200)], &[]);
        assert!(check(1000).is_err(), "offsets repeat");
        write(&[(5, 100), (6, 100)], &[]);
        assert!(check(1000).is_err(), "positions repeat");
        write(&[(-1, 100)], &[]);
        assert!(check(1000).is_err(), "negative relative offset");
        write(&[(0, -1)], &[]);
        assert!(check(u64::from(u32::MAX)).is_err(), "position 0xffffffff");
        write(&[(1, 10)], &[1, 2, 3]);
        let idx = OffsetIndex::open(&path, 0, MAX, true).unwrap();
        assert_eq!(idx.entries(), 1);
        assert!(
            idx.sanity_check(1000).is_err(),
            "bad length survives writable open"
        );
        drop(idx);
        // Rebuilding clears the complaint.
        let mut idx = OffsetIndex::open(&path, 0, MAX, true).unwrap();
        idx.truncate_all();
        idx.append(3, 40).unwrap();
        idx.sanity_check(1000).unwrap();
    }

    #[test]
    fn garbage_and_deleted_files_never_panic() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("0.index");
        let mut seed = 0x1234_5678_u64;
        for len in [0usize, 1, 7, 8, 9, 63, 64, 200, 512, 1000] {
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                    (seed >> 33) as u8
                })
                .collect();
            std::fs::write(&path, &bytes).unwrap();
            let mut idx = OffsetIndex::open(&path, i64::MAX - 10, MAX, true).unwrap();
            assert_eq!(idx.entries(), len / 8);
            let _ = idx.sanity_check(1 << 20);
            for t in [i64::MIN, -1, 0, i64::MAX - 5, i64::MAX] {
                let _ = idx.lookup(t);
            }
            idx.truncate_to(i64::MAX - 3);
            let _ = idx.last_entry();
        }
        // Deleted under us: open recreates an empty index.
        std::fs::remove_file(&path).unwrap();
        let idx = OffsetIndex::open(&path, 0, MAX, false).unwrap();
        assert_eq!(idx.entries(), 0);
        idx.delete().unwrap();
        assert!(!path.exists());
    }

    #[test]
    fn rename_and_delete() {
        let dir = tempfile::tempdir().unwrap();
        let mut idx = open_in(&dir, 0);
        idx.append(3, 30).unwrap();
        let new_path = dir.path().join("0.index.deleted");
        idx.rename_to(&new_path).unwrap();
        assert_eq!(idx.path(), new_path);
        assert!(!dir.path().join("0.index").exists());
        idx.append(4, 40).unwrap();
        idx.trim_to_valid_size().unwrap();
        assert_eq!(std::fs::metadata(&new_path).unwrap().len(), 16);
        idx.delete().unwrap();
        assert!(!new_path.exists());
    }

    /// issue 12: the file only ever holds written entries (never a sparse tail that a store
    /// through a mapping could fault on); appends reach it at flush, truncation shrinks it, and
    /// a sealed file is exactly `entries * 8` bytes, as Kafka's DumpLogSegments expects.
    #[test]
    fn file_holds_exactly_the_entries_after_flush_truncate_and_trim() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("0.index");
        let len = || std::fs::metadata(&path).unwrap().len();
        let mut idx = OffsetIndex::open(&path, 0, 10 << 20, true).unwrap();
        for i in 0..100 {
            idx.append(i * 10, (i * 100) as u32).unwrap();
        }
        assert_eq!(len(), 0, "appends touch memory only");
        idx.flush().unwrap();
        assert_eq!(len(), 800);
        idx.truncate_to(500);
        assert_eq!(idx.entries(), 50);
        idx.append(505, 5050).unwrap();
        idx.flush().unwrap();
        assert_eq!(
            len(),
            51 * 8,
            "truncation shrinks the file at the next flush"
        );
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(&bytes[50 * 8..], &[0, 0, 1, 249, 0, 0, 19, 186][..]);
        idx.trim_to_valid_size().unwrap();
        assert_eq!(len(), 51 * 8);
        assert!(idx.is_full(), "sealed");
        assert_eq!(idx.lookup(507), (505, 5050));
        // Reactivated, truncated, sealed again: the file follows.
        idx.resize(10 << 20).unwrap();
        idx.truncate_to(100);
        idx.trim_to_valid_size().unwrap();
        assert_eq!((len(), idx.entries()), (80, 10));
        // A sealed index truncated in memory is cut at its next flush too.
        idx.truncate_to(50);
        idx.flush().unwrap();
        assert_eq!(len(), 40);
        drop(idx);
        let idx = OffsetIndex::open(&path, 0, 10 << 20, false).unwrap();
        assert_eq!(idx.entries(), 5);
        idx.sanity_check(1 << 20).unwrap();
    }

    proptest! {
        #[test]
        fn lookup_matches_brute_force(
            base in 0i64..1_000_000,
            gaps in proptest::collection::vec((1i64..50, 1u32..5000), 0..60),
            targets in proptest::collection::vec(-100i64..5000, 1..40),
            cut in 0i64..4000,
        ) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("0.index");
            let mut idx = OffsetIndex::open(&path, base, MAX, true).unwrap();
            let mut model = Vec::new();
            let (mut off, mut pos) = (base, 0u32);
            for (i, (dg, dp)) in gaps.iter().enumerate() {
                if i > 0 { off += dg; pos += dp; }
                idx.append(off, pos).unwrap();
                model.push((off, pos));
            }
            for t in &targets {
                let t = base + t;
                prop_assert_eq!(idx.lookup(t), model_lookup(&model, base, t));
            }
            idx.sanity_check(u64::from(pos) + 1).unwrap();

            // Trim + reopen read-only: identical answers.
            idx.trim_to_valid_size().unwrap();
            drop(idx);
            let idx = OffsetIndex::open(&path, base, MAX, false).unwrap();
            for t in &targets {
                let t = base + t;
                prop_assert_eq!(idx.lookup(t), model_lookup(&model, base, t));
            }

            // Truncation against the model.
            let mut idx = OffsetIndex::open(&path, base, MAX, true).unwrap();
            idx.truncate_to(base + cut);
            model.retain(|(o, _)| *o < base + cut);
            prop_assert_eq!(idx.entries(), model.len());
            for t in &targets {
                let t = base + t;
                prop_assert_eq!(idx.lookup(t), model_lookup(&model, base, t));
            }
        }
    }
}
