//! `<base>.deliverafter`: the DeliverAfterIndex of one segment.
//!
//! Mental model: an append-only plain file of 16-byte big-endian entries `(int32 relative base
//! offset, int32 byte position, int64 due ms)`, one per batch due after its append time, in
//! offset order (due times are arbitrary). The file exists only once a segment has a delayed
//! batch: missing = none. It is a cache of what the batches' headers say, so recovery may
//! rewrite it ([`DeliverAfterIndex::rewrite`]) and truncation trims it. Writes are one `pwrite`
//! per delayed batch at `entries * 16`; `flush` fdatasyncs it with the segment.
//!
//! Invariant (checked by [`check_entries`] on load): relative offsets strictly increase, are
//! non-negative, and each entry points inside the segment.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// File-name suffix of the DeliverAfterIndex.
pub const DELIVER_AFTER_SUFFIX: &str = ".deliverafter";
/// Bytes per entry.
pub const ENTRY_BYTES: usize = 16;

/// One index entry, with the offset made absolute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeliverAfterEntry {
    pub base_offset: i64,
    pub position: u32,
    pub due_ms: i64,
}

/// The DeliverAfterIndex file of one segment (opened lazily).
#[derive(Debug)]
pub struct DeliverAfterIndex {
    path: PathBuf,
    file: Option<File>,
    entries: u64,
}

impl DeliverAfterIndex {
    /// Opens the file if it exists (no file = no entries). A length that is not a multiple
    /// of 16 is kept as is; [`DeliverAfterIndex::read_all`] reports it as garbled.
    pub fn open(path: PathBuf) -> io::Result<Self> {
        let file = match OpenOptions::new().read(true).write(true).open(&path) {
            Ok(f) => Some(f),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        let entries = match &file {
            Some(f) => f.metadata()?.len() / ENTRY_BYTES as u64,
            None => 0,
        };
        Ok(Self {
            path,
            file,
            entries,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn exists(&self) -> bool {
        self.file.is_some()
    }

    /// Number of entries.
    pub fn entries(&self) -> u64 {
        self.entries
    }

    fn file(&mut self) -> io::Result<&File> {
        if self.file.is_none() {
            let f = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&self.path)?;
            self.entries = f.metadata()?.len() / ENTRY_BYTES as u64;
            self.file = Some(f);
        }
        match &self.file {
            Some(f) => Ok(f),
            None => Err(io::ErrorKind::NotFound.into()),
        }
    }

    /// Whether the file exists (it is created by the first [`DeliverAfterIndex::append`]).
    pub fn has_file(&self) -> bool {
        self.file.is_some()
    }

    /// Appends one entry (`relative` = base offset minus the segment base).
    pub fn append(&mut self, relative: i32, position: u32, due_ms: i64) -> io::Result<()> {
        let mut buf = [0u8; ENTRY_BYTES];
        buf[0..4].copy_from_slice(&relative.to_be_bytes());
        buf[4..8].copy_from_slice(&position.to_be_bytes());
        buf[8..16].copy_from_slice(&due_ms.to_be_bytes());
        let at = self.entries * ENTRY_BYTES as u64;
        self.file()?.write_all_at(&buf, at)?;
        self.entries += 1;
        Ok(())
    }

    /// Reads every entry (offsets made absolute with `segment_base`). `Err(InvalidData)` if
    /// the file length is not a multiple of 16.
    pub fn read_all(&self, segment_base: i64) -> io::Result<Vec<DeliverAfterEntry>> {
        let Some(f) = &self.file else {
            return Ok(Vec::new());
        };
        let len = f.metadata()?.len();
        // At most one entry per batch of a 4 GiB segment (a batch is >= 61 bytes): a larger
        // file is garbled, refused before anything is allocated for it.
        if len > (u64::from(u32::MAX) / 61 + 1) * ENTRY_BYTES as u64 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("length {len} is more than a segment can index"),
            ));
        }
        if len % ENTRY_BYTES as u64 != 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("length {len} is not a multiple of {ENTRY_BYTES}"),
            ));
        }
        let mut buf = vec![0u8; usize::try_from(len).unwrap_or(usize::MAX)];
        f.read_exact_at(&mut buf, 0)?;
        Ok(buf
            .chunks_exact(ENTRY_BYTES)
            .map(|c| {
                let mut rel = [0u8; 4];
                rel.copy_from_slice(&c[0..4]);
                let mut pos = [0u8; 4];
                pos.copy_from_slice(&c[4..8]);
                let mut due = [0u8; 8];
                due.copy_from_slice(&c[8..16]);
                DeliverAfterEntry {
                    base_offset: segment_base + i64::from(i32::from_be_bytes(rel)),
                    position: u32::from_be_bytes(pos),
                    due_ms: i64::from_be_bytes(due),
                }
            })
            .collect())
    }

    /// Replaces the file's content with `entries` (recovery, truncation). No entries and no
    /// file stays no file.
    pub fn rewrite(&mut self, segment_base: i64, entries: &[DeliverAfterEntry]) -> io::Result<()> {
        if entries.is_empty() && self.file.is_none() {
            return Ok(());
        }
        let mut buf = Vec::with_capacity(entries.len() * ENTRY_BYTES);
        for e in entries {
            let rel = i32::try_from(e.base_offset - segment_base)
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "relative offset"))?;
            buf.extend_from_slice(&rel.to_be_bytes());
            buf.extend_from_slice(&e.position.to_be_bytes());
            buf.extend_from_slice(&e.due_ms.to_be_bytes());
        }
        let f = self.file()?;
        f.set_len(0)?;
        f.write_all_at(&buf, 0)?;
        self.entries = entries.len() as u64;
        Ok(())
    }

    /// Drops entries at offsets ≥ `offset`.
    pub fn truncate_to(&mut self, segment_base: i64, offset: i64) -> io::Result<()> {
        if self.entries == 0 {
            return Ok(());
        }
        let kept: Vec<DeliverAfterEntry> = match self.read_all(segment_base) {
            Ok(all) => all.into_iter().filter(|e| e.base_offset < offset).collect(),
            Err(e) if e.kind() == io::ErrorKind::InvalidData => Vec::new(),
            Err(e) => return Err(e),
        };
        if kept.len() as u64 != self.entries {
            self.rewrite(segment_base, &kept)?;
        }
        Ok(())
    }

    /// fdatasync (no-op without a file).
    pub fn flush(&self) -> io::Result<()> {
        match &self.file {
            Some(f) => f.sync_data(),
            None => Ok(()),
        }
    }

    /// Renames the file (if any) to `to`; later writes go to the new name.
    pub fn rename_to(&mut self, to: &Path) -> io::Result<bool> {
        let existed = self.file.is_some();
        if existed {
            std::fs::rename(&self.path, to)?;
        }
        self.path = to.to_path_buf();
        Ok(existed)
    }
}

/// Checks entries read from a segment whose data ends at `segment_size` bytes and whose next
/// offset is `segment_end`: strictly increasing offsets from the base, positions inside.
pub fn check_entries(
    entries: &[DeliverAfterEntry],
    segment_base: i64,
    segment_size: u64,
    segment_end: i64,
) -> Result<(), String> {
    let mut last: Option<&DeliverAfterEntry> = None;
    for e in entries {
        if e.base_offset < segment_base || e.base_offset >= segment_end {
            return Err(format!(
                "offset {} outside [{segment_base}, {segment_end})",
                e.base_offset
            ));
        }
        if u64::from(e.position) >= segment_size {
            return Err(format!(
                "position {} beyond {segment_size} bytes",
                e.position
            ));
        }
        if let Some(l) = last
            && (e.base_offset <= l.base_offset || e.position <= l.position)
        {
            return Err(format!("offset {} not increasing", e.base_offset));
        }
        last = Some(e);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn append_read_truncate_rename() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir
            .path()
            .join(format!("{:020}{DELIVER_AFTER_SUFFIX}", 100));
        let mut idx = DeliverAfterIndex::open(path.clone()).unwrap();
        assert!(!idx.exists() && !path.exists());
        assert!(idx.read_all(100).unwrap().is_empty());
        idx.append(0, 0, 5_000).unwrap();
        idx.append(3, 200, 4_000).unwrap();
        idx.append(7, 400, 9_000).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 48);
        let reopened = DeliverAfterIndex::open(path.clone()).unwrap();
        let all = reopened.read_all(100).unwrap();
        assert_eq!(
            all.iter()
                .map(|e| (e.base_offset, e.position, e.due_ms))
                .collect::<Vec<_>>(),
            [(100, 0, 5_000), (103, 200, 4_000), (107, 400, 9_000)]
        );
        assert!(check_entries(&all, 100, 500, 110).is_ok());
        assert!(check_entries(&all, 100, 400, 110).is_err());
        assert!(check_entries(&all, 100, 500, 107).is_err());
        idx.truncate_to(100, 104).unwrap();
        assert_eq!(idx.entries(), 2);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 32);
        let to = dir.path().join("x.deleted");
        assert!(idx.rename_to(&to).unwrap());
        assert!(to.exists() && !path.exists());
    }

    #[test]
    fn garbled_length_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.deliverafter");
        std::fs::write(&path, [1u8; 20]).unwrap();
        let idx = DeliverAfterIndex::open(path).unwrap();
        assert_eq!(
            idx.read_all(0).unwrap_err().kind(),
            io::ErrorKind::InvalidData
        );
        let unsorted = [
            DeliverAfterEntry {
                base_offset: 5,
                position: 100,
                due_ms: 1,
            },
            DeliverAfterEntry {
                base_offset: 4,
                position: 200,
                due_ms: 1,
            },
        ];
        assert!(check_entries(&unsorted, 0, 1000, 10).is_err());
    }
}
