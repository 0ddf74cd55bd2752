//! `<base>.txnindex`: the aborted transactions whose ABORT marker lies in one segment (Kafka's
//! `TransactionIndex` / `AbortedTxn`).
//!
//! Mental model: an append-only plain file of 34-byte big-endian entries
//! `(version i16 = 0, producer_id i64, first_offset i64, last_offset i64, last_stable_offset i64)`,
//! one per ABORT marker, in marker (`last_offset`) order. `last_offset` is the marker's offset,
//! `last_stable_offset` the first offset still unstable once the marker was written (Kafka's
//! `lastStableOffset(completedTxn)`): a search past it can stop. The entries are tiny and few,
//! so they are also held in memory; reads never touch the file. Writes are one `pwrite` per
//! entry at `entries * 34` (no writable mmap); `flush` fdatasyncs with the segment.
//!
//! Every segment has the file (created empty with the segment) so that a missing file means
//! "lost", not "no aborts". It is derived data like `.timeindex`: a missing or damaged file
//! (length not a multiple of 34, a version other than 0, entries out of order) is rebuilt from
//! the segment's batches by the load ([`TxnIndex::needs_rebuild`]), truncation drops entries
//! whose marker is cut, and renames/deletes follow the segment's.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// File-name suffix of the transaction index.
pub const TXN_INDEX_SUFFIX: &str = ".txnindex";
/// Bytes per entry.
pub const ENTRY_BYTES: usize = 34;
/// The only entry version.
pub const ENTRY_VERSION: i16 = 0;

/// One aborted transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AbortedTxn {
    pub producer_id: i64,
    pub first_offset: i64,
    /// The ABORT marker's offset.
    pub last_offset: i64,
    pub last_stable_offset: i64,
}

impl AbortedTxn {
    fn encode(&self) -> [u8; ENTRY_BYTES] {
        let mut b = [0u8; ENTRY_BYTES];
        b[0..2].copy_from_slice(&ENTRY_VERSION.to_be_bytes());
        b[2..10].copy_from_slice(&self.producer_id.to_be_bytes());
        b[10..18].copy_from_slice(&self.first_offset.to_be_bytes());
        b[18..26].copy_from_slice(&self.last_offset.to_be_bytes());
        b[26..34].copy_from_slice(&self.last_stable_offset.to_be_bytes());
        b
    }

    fn decode(c: &[u8]) -> Option<Self> {
        let i64_at = |at: usize| {
            let mut x = [0u8; 8];
            x.copy_from_slice(c.get(at..at + 8)?);
            Some(i64::from_be_bytes(x))
        };
        let version = i16::from_be_bytes([*c.first()?, *c.get(1)?]);
        (version == ENTRY_VERSION).then_some(())?;
        Some(Self {
            producer_id: i64_at(2)?,
            first_offset: i64_at(10)?,
            last_offset: i64_at(18)?,
            last_stable_offset: i64_at(26)?,
        })
    }
}

/// Decodes a whole file's bytes; `Err` says why the file is damaged.
pub fn decode_entries(bytes: &[u8]) -> Result<Vec<AbortedTxn>, String> {
    if !bytes.len().is_multiple_of(ENTRY_BYTES) {
        return Err(format!(
            "length {} is not a multiple of {ENTRY_BYTES}",
            bytes.len()
        ));
    }
    let mut out: Vec<AbortedTxn> = Vec::with_capacity(bytes.len() / ENTRY_BYTES);
    for c in bytes.chunks_exact(ENTRY_BYTES) {
        let e = AbortedTxn::decode(c).ok_or("bad entry version")?;
        if e.first_offset > e.last_offset
            || out.last().is_some_and(|l| e.last_offset <= l.last_offset)
        {
            return Err(format!("entry at marker {} out of order", e.last_offset));
        }
        out.push(e);
    }
    Ok(out)
}

/// The transaction index of one segment: entries in memory, the file written through.
#[derive(Debug)]
pub struct TxnIndex {
    path: PathBuf,
    file: Option<File>,
    entries: Vec<AbortedTxn>,
    /// The file was missing or damaged (or the segment was re-validated): the load rebuilds
    /// the entries from the segment's batches.
    needs_rebuild: bool,
}

impl TxnIndex {
    /// Opens the file, creating it empty if `create` (a new segment). A missing file on an
    /// existing segment or a damaged one leaves no entries and [`Self::needs_rebuild`] set.
    pub fn open(path: PathBuf, create: bool) -> io::Result<Self> {
        let mut idx = Self {
            path,
            file: None,
            entries: Vec::new(),
            needs_rebuild: false,
        };
        let opened = OpenOptions::new()
            .read(true)
            .write(true)
            .create(create)
            .truncate(false)
            .open(&idx.path);
        let file = match opened {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                idx.needs_rebuild = true;
                return Ok(idx);
            }
            Err(e) => return Err(e),
        };
        let len = file.metadata()?.len();
        // At most one entry per batch of a 4 GiB segment.
        if len > (u64::from(u32::MAX) / 61 + 1) * ENTRY_BYTES as u64 {
            idx.needs_rebuild = true;
        } else {
            let mut buf = vec![0u8; usize::try_from(len).unwrap_or(0)];
            file.read_exact_at(&mut buf, 0)?;
            match decode_entries(&buf) {
                Ok(e) => idx.entries = e,
                Err(why) => {
                    tracing::warn!(path = %idx.path.display(), %why, "damaged transaction index; rebuilding it");
                    idx.needs_rebuild = true;
                }
            }
        }
        idx.file = Some(file);
        Ok(idx)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The aborted transactions of the segment, in marker order.
    pub fn entries(&self) -> &[AbortedTxn] {
        &self.entries
    }

    /// Whether the entries must be re-derived from the segment (see [`Self::open`]).
    pub fn needs_rebuild(&self) -> bool {
        self.needs_rebuild
    }

    /// Marks the entries stale (recovery re-validated the segment).
    pub(crate) fn mark_for_rebuild(&mut self) {
        self.needs_rebuild = true;
    }

    fn file(&mut self) -> io::Result<&File> {
        if self.file.is_none() {
            let f = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&self.path)?;
            self.file = Some(f);
        }
        match &self.file {
            Some(f) => Ok(f),
            None => Err(io::ErrorKind::NotFound.into()),
        }
    }

    /// Appends one entry; its marker must follow the last entry's.
    pub fn append(&mut self, e: AbortedTxn) -> io::Result<()> {
        if self
            .entries
            .last()
            .is_some_and(|l| e.last_offset <= l.last_offset)
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("aborted txn at marker {} out of order", e.last_offset),
            ));
        }
        let at = (self.entries.len() * ENTRY_BYTES) as u64;
        self.file()?.write_all_at(&e.encode(), at)?;
        self.entries.push(e);
        Ok(())
    }

    /// Replaces the file's content with `entries` (a rebuild); clears the rebuild mark.
    pub fn rewrite(&mut self, entries: Vec<AbortedTxn>) -> io::Result<()> {
        let mut buf = Vec::with_capacity(entries.len() * ENTRY_BYTES);
        for e in &entries {
            buf.extend_from_slice(&e.encode());
        }
        let f = self.file()?;
        f.set_len(0)?;
        f.write_all_at(&buf, 0)?;
        self.entries = entries;
        self.needs_rebuild = false;
        Ok(())
    }

    /// Drops entries whose marker is at or after `offset` (Kafka's `truncateTo`).
    pub fn truncate_to(&mut self, offset: i64) -> io::Result<()> {
        let keep = self.entries.partition_point(|e| e.last_offset < offset);
        if keep < self.entries.len() {
            self.entries.truncate(keep);
            self.file()?.set_len((keep * ENTRY_BYTES) as u64)?;
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

/// Kafka's `TransactionIndex.collectAbortedTxns`: the entries of `entries` whose marker is at or
/// after `fetch_offset` and whose first offset is below `upper_bound_offset`, pushed to `out`.
/// Returns `true` when the search is complete (an entry's last stable offset reached the upper
/// bound: no later abort can overlap the range).
pub fn collect_aborted(
    entries: &[AbortedTxn],
    fetch_offset: i64,
    upper_bound_offset: i64,
    out: &mut Vec<AbortedTxn>,
) -> bool {
    for e in entries {
        if e.last_offset >= fetch_offset && e.first_offset < upper_bound_offset {
            out.push(*e);
        }
        if e.last_stable_offset >= upper_bound_offset {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn txn(pid: i64, first: i64, last: i64, lso: i64) -> AbortedTxn {
        AbortedTxn {
            producer_id: pid,
            first_offset: first,
            last_offset: last,
            last_stable_offset: lso,
        }
    }

    #[test]
    fn append_reopen_truncate_rename() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(format!("{:020}{TXN_INDEX_SUFFIX}", 0));
        let mut idx = TxnIndex::open(path.clone(), true).unwrap();
        assert!(!idx.needs_rebuild() && path.exists());
        idx.append(txn(1, 0, 5, 3)).unwrap();
        idx.append(txn(2, 3, 9, 10)).unwrap();
        assert!(idx.append(txn(3, 1, 9, 10)).is_err(), "marker order");
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes.len(), 68);
        assert_eq!(&bytes[0..2], &[0, 0]);
        assert_eq!(&bytes[2..10], &1i64.to_be_bytes());
        assert_eq!(&bytes[18..26], &5i64.to_be_bytes());
        assert_eq!(&bytes[26..34], &3i64.to_be_bytes());
        let again = TxnIndex::open(path.clone(), false).unwrap();
        assert_eq!(again.entries(), idx.entries());
        idx.truncate_to(9).unwrap();
        assert_eq!(idx.entries(), &[txn(1, 0, 5, 3)]);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 34);
        let to = dir.path().join("x.deleted");
        assert!(idx.rename_to(&to).unwrap());
        assert!(to.exists() && !path.exists());
    }

    #[test]
    fn missing_or_damaged_needs_rebuild() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txnindex");
        assert!(TxnIndex::open(path.clone(), false).unwrap().needs_rebuild());
        let good = [txn(1, 0, 5, 6).encode(), txn(1, 7, 8, 9).encode()].concat();
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("torn", good[..40].to_vec()),
            ("bad version", {
                let mut b = good.clone();
                b[34] = 1;
                b
            }),
            (
                "out of order",
                [good[34..].to_vec(), good[..34].to_vec()].concat(),
            ),
        ];
        for (name, bytes) in cases {
            std::fs::write(&path, bytes).unwrap();
            let idx = TxnIndex::open(path.clone(), false).unwrap();
            assert!(idx.needs_rebuild() && idx.entries().is_empty(), "{name}");
        }
        std::fs::write(&path, &good).unwrap();
        let mut idx = TxnIndex::open(path.clone(), false).unwrap();
        assert!(!idx.needs_rebuild());
        idx.mark_for_rebuild();
        idx.rewrite(vec![txn(4, 1, 2, 3)]).unwrap();
        assert!(!idx.needs_rebuild());
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 34);
    }

    #[test]
    fn collect_stops_at_the_upper_bound() {
        // Kafka's TransactionIndexTest.testCollectAbortedTransactions shapes.
        let entries = [
            txn(0, 0, 10, 11),
            txn(1, 5, 15, 13),
            txn(2, 18, 35, 25),
            txn(3, 32, 50, 40),
        ];
        let run = |from, to| {
            let mut out = Vec::new();
            let done = collect_aborted(&entries, from, to, &mut out);
            (out.iter().map(|t| t.producer_id).collect::<Vec<_>>(), done)
        };
        assert_eq!(run(0, 32), (vec![0, 1, 2], true));
        assert_eq!(run(0, 33), (vec![0, 1, 2, 3], true));
        assert_eq!(run(11, 15), (vec![1], true));
        assert_eq!(run(16, 18), (vec![], true));
        assert_eq!(run(51, 60), (vec![], false));
    }
}
