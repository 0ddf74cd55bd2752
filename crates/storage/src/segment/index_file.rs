//! The storage half of both segment indexes: a file of fixed-size entries, with no sparse
//! preallocation and no writable mapping (issue 12 items 4 and 11).
//!
//! Mental model: an index is in one of two modes.
//! - **Writable** (the active segment, or one being rebuilt): every valid entry lives in a `Vec`
//!   in memory and lookups read it. Appends touch only memory; the entries not yet in the file
//!   are written with `pwrite` by [`IndexFile::flush`] and [`IndexFile::trim_to_valid_size`]
//!   (the file is opened for that write and closed again: no descriptor is held). The file only
//!   ever holds real entries, so it is never sparse, a full disk is an `ENOSPC` *error* from
//!   that write (never a `SIGBUS` from a store into an unbacked page), and nothing zero-fills
//!   megabytes of page cache on first touch. Between flushes the file may lag memory: the active
//!   segment's index is a cache that recovery rebuilds after an unclean stop (the recovery point
//!   never passes the active segment's base unless a flush wrote the index first).
//! - **Sealed** (after trim, or opened read-only): the file is exactly `entries * entry_bytes`
//!   long (what Kafka's `DumpLogSegments` reads) and is mapped read-only with
//!   `MADV_RANDOM` (a binary search touches a few pages; readahead would pull whole files in).
//!   An empty file has no mapping.
//!
//! Invariants: in writable mode `buf.len() == entries * entry_bytes` and the file's first
//! `written` entries equal memory's; [`IndexFile::trim_to_valid_size`] and `flush` make the file
//! exactly the valid entries. Knows nothing about what an entry means.
//!
//! Residual risk: a sealed mapping that hits a media error (EIO) on page-in still raises SIGBUS;
//! the file is fully written, so a full disk cannot cause that.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use memmap2::{Advice, Mmap};

/// The fewest slots a writable index's memory grows by when full (see [`IndexFile::push`]):
/// 128 KiB of 8-byte offset entries, or 192 KiB of 12-byte time entries; pages are touched
/// only as entries arrive.
const GROW_ENTRIES: usize = 16 * 1024;

#[derive(Debug)]
enum Entries {
    /// Writable: the valid entries.
    Mem(Vec<u8>),
    /// Sealed: a read-only mapping of the whole file (`None` when it is empty).
    Map(Option<Mmap>),
}

/// A file of fixed-size entries. See the module docs.
#[derive(Debug)]
pub(crate) struct IndexFile {
    path: PathBuf,
    entry_bytes: usize,
    data: Entries,
    entries: usize,
    /// Slots appends may fill before the index is full.
    max_entries: usize,
    /// Leading entries known to be in the file (writable mode).
    written: usize,
    /// The file's length as last seen or set.
    file_len: u64,
    /// The file length seen at open, when it was not a multiple of `entry_bytes`.
    /// Reported by `check_length` until the index is reset with `truncate_all`.
    misaligned_len: Option<u64>,
}

impl IndexFile {
    /// Opens or creates the file. A new file is empty (no preallocation); an existing one counts
    /// `len / entry_bytes` entries. `writable` reads them into memory, else the file is mapped.
    pub(crate) fn open(
        path: &Path,
        entry_bytes: usize,
        max_index_bytes: usize,
        writable: bool,
    ) -> io::Result<Self> {
        assert!(entry_bytes > 0, "entry size must be positive");
        let file = match OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)
        {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                OpenOptions::new().read(true).open(path)?
            }
            Err(e) => return Err(e),
        };
        let len = file.metadata()?.len();
        let entries = usize::try_from(len / entry_bytes as u64).map_err(io::Error::other)?;
        let misaligned_len = (len % entry_bytes as u64 != 0).then_some(len);
        let mut idx = Self {
            path: path.to_path_buf(),
            entry_bytes,
            data: Entries::Map(None),
            entries,
            max_entries: entries,
            written: entries,
            file_len: len,
            misaligned_len,
        };
        if writable {
            let mut buf = vec![0u8; entries * entry_bytes];
            file.read_exact_at(&mut buf, 0)?;
            idx.data = Entries::Mem(buf);
            idx.max_entries = (max_index_bytes / entry_bytes).max(entries);
        } else {
            idx.data = Entries::Map(map_read_only(&file, len)?);
        }
        Ok(idx)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn entries(&self) -> usize {
        self.entries
    }

    /// Slots the index can hold (the valid entries when sealed).
    pub(crate) fn max_entries(&self) -> usize {
        self.max_entries
    }

    pub(crate) fn size_bytes(&self) -> usize {
        self.entries * self.entry_bytes
    }

    /// The bytes of valid slot `n`.
    pub(crate) fn slot(&self, n: usize) -> &[u8] {
        assert!(n < self.entries, "slot {n} out of {} entries", self.entries);
        let at = n * self.entry_bytes;
        let bytes: &[u8] = match &self.data {
            Entries::Mem(buf) => buf,
            Entries::Map(Some(map)) => map,
            Entries::Map(None) => &[],
        };
        &bytes[at..at + self.entry_bytes]
    }

    /// Adds `bytes` as the next slot, in memory. The caller has checked there is room.
    /// The entry is a fixed-size array, so the copy is two moves, not a `memcpy` call. Memory
    /// grows by at least [`GROW_ENTRIES`] slots, doubling past that: a 1 GiB segment of 16 KiB
    /// batches holds about 69,000 entries, which doubling from a few bytes reaches through 17
    /// reallocations (a profile of the append benchmark found them and the calls to `memcpy`
    /// at a third of the log's own CPU per append).
    pub(crate) fn push<const N: usize>(&mut self, bytes: &[u8; N]) {
        assert_eq!(N, self.entry_bytes, "wrong entry size");
        assert!(self.entries < self.max_entries, "push into a full index");
        let Entries::Mem(buf) = &mut self.data else {
            unreachable!("a sealed index is full")
        };
        if buf.len() == buf.capacity() {
            let slots = GROW_ENTRIES.min(self.max_entries - self.entries).max(1);
            buf.reserve(slots * N);
        }
        buf.extend_from_slice(bytes);
        self.entries += 1;
    }

    /// Keeps only the first `n` slots (`n` is clamped to the current count). The file follows
    /// at the next flush or trim.
    pub(crate) fn set_entries(&mut self, n: usize) {
        self.entries = n.min(self.entries);
        self.written = self.written.min(self.entries);
        if let Entries::Mem(buf) = &mut self.data {
            buf.truncate(self.entries * self.entry_bytes);
        }
    }

    pub(crate) fn truncate_all(&mut self) {
        self.set_entries(0);
        self.misaligned_len = None;
    }

    /// `Err(reason)` if the file was opened with a length that is not a multiple of the
    /// entry size.
    pub(crate) fn check_length(&self) -> Result<(), String> {
        match self.misaligned_len {
            None => Ok(()),
            Some(len) => Err(format!(
                "length {len} is not a multiple of the entry size {}",
                self.entry_bytes
            )),
        }
    }

    /// Writes what the file lacks and cuts it to exactly the valid entries, then seals the index
    /// (read-only mapping; it is full until [`IndexFile::resize`]).
    pub(crate) fn trim_to_valid_size(&mut self) -> io::Result<()> {
        if let Entries::Map(_) = self.data {
            if self.file_len == self.size_bytes() as u64 {
                return Ok(());
            }
            // A sealed index truncated in memory: re-read it writable, then seal again.
            self.unseal()?;
        }
        let file = self.write_out()?;
        self.data = Entries::Map(map_read_only(&file, self.file_len)?);
        self.max_entries = self.entries;
        Ok(())
    }

    /// Makes the index writable again with room for `round_down(max_index_bytes)` bytes of
    /// entries, never below the valid ones. The file is not changed.
    pub(crate) fn resize(&mut self, max_index_bytes: usize) -> io::Result<()> {
        self.unseal()?;
        self.max_entries = (max_index_bytes / self.entry_bytes).max(self.entries);
        Ok(())
    }

    fn unseal(&mut self) -> io::Result<()> {
        if let Entries::Map(map) = &self.data {
            let bytes: &[u8] = map.as_deref().unwrap_or(&[]);
            let valid = bytes.get(..self.size_bytes()).ok_or_else(|| {
                io::Error::other(format!(
                    "index {} is shorter than its entries",
                    self.path.display()
                ))
            })?;
            self.data = Entries::Mem(valid.to_vec());
        }
        Ok(())
    }

    /// Brings the file up to memory (pwrite of the unwritten entries, cut to the valid size)
    /// and returns it open. Sealed: opens it.
    fn write_out(&mut self) -> io::Result<File> {
        let file = OpenOptions::new().read(true).write(true).open(&self.path)?;
        if let Entries::Mem(buf) = &self.data {
            let valid = self.size_bytes() as u64;
            if self.written < self.entries {
                let from = self.written * self.entry_bytes;
                file.write_all_at(&buf[from..], from as u64)?;
                self.file_len = self.file_len.max(valid);
                self.written = self.entries;
            }
            if self.file_len != valid {
                file.set_len(valid)?;
                self.file_len = valid;
            }
        }
        Ok(file)
    }

    /// Writes the unwritten entries and `fdatasync`s the file.
    pub(crate) fn flush(&mut self) -> io::Result<()> {
        if matches!(self.data, Entries::Map(_)) && self.file_len != self.size_bytes() as u64 {
            self.trim_to_valid_size()?;
        }
        self.write_out()?.sync_data()
    }

    pub(crate) fn rename_to(&mut self, new_path: &Path) -> io::Result<()> {
        std::fs::rename(&self.path, new_path)?;
        self.path = new_path.to_path_buf();
        Ok(())
    }

    /// Unmaps and removes the file. A file that is already gone is not an error.
    pub(crate) fn delete(self) -> io::Result<()> {
        let Self { path, data, .. } = self;
        drop(data);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }
}

fn map_read_only(file: &File, len: u64) -> io::Result<Option<Mmap>> {
    if len == 0 {
        return Ok(None);
    }
    // SAFETY: the index file belongs to this broker's log directory and is only modified by
    // this struct, which replaces the mapping before it changes the file (`unseal` first).
    // Another process truncating the file under us is outside the model, as it is for Kafka.
    let map = unsafe { Mmap::map(file) }?;
    // Lookups are binary searches: readahead would only fill the page cache.
    if let Err(e) = map.advise(Advice::Random) {
        tracing::debug!(error = %e, "madvise(MADV_RANDOM) failed");
    }
    Ok(Some(map))
}
