//! Producer-state snapshot files: `<20-digit offset>.snapshot` in the partition directory.
//!
//! Format (Kafka's `ProducerSnapshot` v1, kafka-message-specs/internal/storage/ProducerSnapshot.json,
//! big-endian, byte-identical to Kafka's files):
//!
//! ```text
//! int16  version = 1
//! uint32 crc      CRC-32C of bytes 6..end
//! int32  count
//! count × { int64 ProducerId, int16 Epoch, int32 LastSequence, int64 LastOffset,
//!           int32 OffsetDelta, int64 Timestamp, int32 CoordinatorEpoch,
//!           int64 CurrentTxnFirstOffset }          (46 bytes each)
//! ```
//!
//! A producer without batches is written with LastSequence -1, LastOffset -1, OffsetDelta 0
//! (Kafka's `lastSeq()` / `lastDataOffset()` / `lastOffsetDelta()` of an empty entry) and read
//! back without batches. Only the last batch of each producer is kept in a snapshot, as in Kafka.
//!
//! The offset in the name is the state's `map_end_offset`: the snapshot reflects the log below it.
//! Files are written atomically (`.tmp`, rename; fsync when asked) and never modified. A file
//! that fails any check (length, version, CRC, count) is corrupt: the loader deletes it and falls
//! back to the next older one. [`SnapshotFiles`] is the set of snapshot files of one directory;
//! it is owned by the partition's `Log` (not synchronised).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{BatchMetadata, ProducerEntry, ProducerStateManager, decrement_sequence};

/// Suffix of snapshot files.
pub const SNAPSHOT_SUFFIX: &str = ".snapshot";
/// The only snapshot version.
pub const SNAPSHOT_VERSION: i16 = 1;
/// How many snapshot files a partition keeps (the newest ones).
pub const SNAPSHOTS_TO_KEEP: usize = 2;

const CRC_OFFSET: usize = 2;
const ENTRIES_OFFSET: usize = 6;
const HEADER_BYTES: usize = 10;
const ENTRY_BYTES: usize = 8 + 2 + 4 + 8 + 4 + 8 + 4 + 8;

/// Why a snapshot file was rejected.
#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
pub enum SnapshotError {
    #[error("snapshot of {0} bytes is shorter than its header")]
    Truncated(usize),
    #[error("snapshot has unknown version {0}")]
    Version(i16),
    #[error("snapshot CRC mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    Crc { stored: u32, computed: u32 },
    #[error("snapshot declares {count} entries but holds {bytes} bytes of entries")]
    Layout { count: i32, bytes: usize },
}

/// One producer line of a snapshot, field for field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SnapshotEntry {
    pub producer_id: i64,
    pub epoch: i16,
    pub last_sequence: i32,
    pub last_offset: i64,
    pub offset_delta: i32,
    pub timestamp: i64,
    pub coordinator_epoch: i32,
    pub current_txn_first_offset: i64,
}

impl SnapshotEntry {
    /// What Kafka writes for an entry.
    pub fn of(e: &ProducerEntry) -> Self {
        let last = e.last_batch();
        Self {
            producer_id: e.producer_id,
            epoch: e.epoch,
            last_sequence: e.last_seq(),
            last_offset: e.last_data_offset(),
            offset_delta: last.map_or(0, |b| b.offset_delta),
            timestamp: e.last_timestamp,
            coordinator_epoch: e.coordinator_epoch,
            current_txn_first_offset: e.current_txn_first_offset.unwrap_or(-1),
        }
    }

    /// The entry this line restores (one batch, or none if `last_offset < 0`).
    pub fn to_entry(&self) -> ProducerEntry {
        let mut e = ProducerEntry::empty(self.producer_id);
        e.epoch = self.epoch;
        e.coordinator_epoch = self.coordinator_epoch;
        e.last_timestamp = self.timestamp;
        e.current_txn_first_offset =
            (self.current_txn_first_offset >= 0).then_some(self.current_txn_first_offset);
        if self.last_offset >= 0 {
            let delta = self.offset_delta.max(0);
            e.push(BatchMetadata {
                first_seq: decrement_sequence(self.last_sequence, delta),
                last_seq: self.last_sequence,
                last_offset: self.last_offset,
                offset_delta: delta,
                timestamp: self.timestamp,
            });
        }
        e
    }
}

/// Encodes a snapshot of `state` (producers in id order).
pub fn encode(state: &ProducerStateManager) -> Vec<u8> {
    let entries: Vec<SnapshotEntry> = state.entries().into_iter().map(SnapshotEntry::of).collect();
    encode_entries(&entries)
}

/// Encodes snapshot lines as Kafka does.
pub fn encode_entries(entries: &[SnapshotEntry]) -> Vec<u8> {
    let mut b = Vec::with_capacity(HEADER_BYTES + entries.len() * ENTRY_BYTES);
    b.extend_from_slice(&SNAPSHOT_VERSION.to_be_bytes());
    b.extend_from_slice(&[0; 4]);
    let count = i32::try_from(entries.len()).unwrap_or(i32::MAX);
    b.extend_from_slice(&count.to_be_bytes());
    for e in entries.iter().take(count as usize) {
        b.extend_from_slice(&e.producer_id.to_be_bytes());
        b.extend_from_slice(&e.epoch.to_be_bytes());
        b.extend_from_slice(&e.last_sequence.to_be_bytes());
        b.extend_from_slice(&e.last_offset.to_be_bytes());
        b.extend_from_slice(&e.offset_delta.to_be_bytes());
        b.extend_from_slice(&e.timestamp.to_be_bytes());
        b.extend_from_slice(&e.coordinator_epoch.to_be_bytes());
        b.extend_from_slice(&e.current_txn_first_offset.to_be_bytes());
    }
    let crc = skiff_record::crc32c(&b[ENTRIES_OFFSET..]);
    b[CRC_OFFSET..ENTRIES_OFFSET].copy_from_slice(&crc.to_be_bytes());
    b
}

/// Decodes and checks a snapshot file's bytes.
pub fn decode(bytes: &[u8]) -> Result<Vec<SnapshotEntry>, SnapshotError> {
    let header: &[u8; HEADER_BYTES] = bytes
        .get(..HEADER_BYTES)
        .and_then(|h| h.try_into().ok())
        .ok_or(SnapshotError::Truncated(bytes.len()))?;
    let version = i16::from_be_bytes([header[0], header[1]]);
    if version != SNAPSHOT_VERSION {
        return Err(SnapshotError::Version(version));
    }
    let stored = u32::from_be_bytes([header[2], header[3], header[4], header[5]]);
    let computed = skiff_record::crc32c(&bytes[ENTRIES_OFFSET..]);
    if stored != computed {
        return Err(SnapshotError::Crc { stored, computed });
    }
    let count = i32::from_be_bytes([header[6], header[7], header[8], header[9]]);
    let body = &bytes[HEADER_BYTES..];
    let layout = SnapshotError::Layout {
        count,
        bytes: body.len(),
    };
    let n = usize::try_from(count).map_err(|_| layout.clone())?;
    if n.checked_mul(ENTRY_BYTES) != Some(body.len()) {
        return Err(layout);
    }
    let mut out = Vec::with_capacity(n);
    for c in body.chunks_exact(ENTRY_BYTES) {
        let mut r = Reader(c);
        out.push(SnapshotEntry {
            producer_id: i64::from_be_bytes(r.take()),
            epoch: i16::from_be_bytes(r.take()),
            last_sequence: i32::from_be_bytes(r.take()),
            last_offset: i64::from_be_bytes(r.take()),
            offset_delta: i32::from_be_bytes(r.take()),
            timestamp: i64::from_be_bytes(r.take()),
            coordinator_epoch: i32::from_be_bytes(r.take()),
            current_txn_first_offset: i64::from_be_bytes(r.take()),
        });
    }
    Ok(out)
}

/// Restores the state a snapshot at `offset` describes.
pub fn decode_state(offset: i64, bytes: &[u8]) -> Result<ProducerStateManager, SnapshotError> {
    let entries = decode(bytes)?;
    Ok(ProducerStateManager::from_entries(
        offset,
        entries.iter().map(SnapshotEntry::to_entry),
    ))
}

/// A cursor over one fixed-size entry (lengths are checked by the caller).
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        if let Some((head, rest)) = self.0.split_at_checked(N) {
            out.copy_from_slice(head);
            self.0 = rest;
        }
        out
    }
}

/// `<dir>/<20-digit offset>.snapshot`.
pub fn snapshot_path(dir: &Path, offset: i64) -> PathBuf {
    dir.join(format!("{offset:020}{SNAPSHOT_SUFFIX}"))
}

/// Parses a snapshot file name.
pub fn parse_snapshot_name(name: &str) -> Option<i64> {
    let digits = name.strip_suffix(SNAPSHOT_SUFFIX)?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Writes `bytes` to `path` atomically (`<path>.tmp` + rename), durably when `sync`: the one
/// atomic replace of [`crate::checkpoint`].
pub fn write_file(path: &Path, bytes: &[u8], sync: bool) -> std::io::Result<()> {
    if sync {
        crate::checkpoint::write_atomic(path, bytes)
    } else {
        crate::checkpoint::write_atomic_unsynced(path, bytes)
    }
}

/// The snapshot files of one partition directory, by offset.
#[derive(Debug, Default)]
pub struct SnapshotFiles {
    dir: PathBuf,
    files: BTreeMap<i64, PathBuf>,
}

impl SnapshotFiles {
    /// Lists the snapshot files in `dir`.
    pub fn scan(dir: &Path) -> std::io::Result<Self> {
        let mut files = BTreeMap::new();
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            let name = entry.file_name();
            if let Some(offset) = name.to_str().and_then(parse_snapshot_name) {
                files.insert(offset, entry.path());
            }
        }
        Ok(Self {
            dir: dir.to_path_buf(),
            files,
        })
    }

    pub fn offsets(&self) -> Vec<i64> {
        self.files.keys().copied().collect()
    }

    pub fn latest_offset(&self) -> Option<i64> {
        self.files.keys().next_back().copied()
    }

    /// Writes a snapshot of `state` at its `map_end_offset`, unless one exists at that offset.
    /// Returns whether a file was written.
    pub fn write(&mut self, state: &ProducerStateManager, sync: bool) -> std::io::Result<bool> {
        let offset = state.map_end_offset();
        if self.files.contains_key(&offset) {
            return Ok(false);
        }
        let path = snapshot_path(&self.dir, offset);
        write_file(&path, &encode(state), sync)?;
        self.files.insert(offset, path);
        Ok(true)
    }

    /// Deletes every snapshot but the newest [`SNAPSHOTS_TO_KEEP`].
    pub fn retain_latest(&mut self) {
        while self.files.len() > SNAPSHOTS_TO_KEEP {
            if let Some((_, p)) = self.files.pop_first() {
                delete(&p);
            }
        }
    }

    /// Deletes snapshots at offsets above `offset` (truncation).
    pub fn delete_above(&mut self, offset: i64) {
        for (_, p) in self.files.split_off(&offset.saturating_add(1)) {
            delete(&p);
        }
    }

    /// Deletes snapshots at offsets below `offset` (retention moved the log start).
    pub fn delete_below(&mut self, offset: i64) {
        let keep = self.files.split_off(&offset);
        for (_, p) in std::mem::replace(&mut self.files, keep) {
            delete(&p);
        }
    }

    pub fn delete_all(&mut self) {
        for (_, p) in std::mem::take(&mut self.files) {
            delete(&p);
        }
    }

    /// Loads the newest valid snapshot at or below `max_offset`. Files that cannot be read or
    /// fail their checks are deleted, and the next older one is tried.
    pub fn load_latest(&mut self, max_offset: i64) -> Option<ProducerStateManager> {
        let candidates: Vec<i64> = self
            .files
            .range(..=max_offset)
            .rev()
            .map(|(o, _)| *o)
            .collect();
        for offset in candidates {
            let Some(path) = self.files.get(&offset).cloned() else {
                continue;
            };
            let loaded = std::fs::read(&path)
                .map_err(|e| e.to_string())
                .and_then(|b| decode_state(offset, &b).map_err(|e| e.to_string()));
            match loaded {
                Ok(state) => return Some(state),
                Err(reason) => {
                    tracing::warn!(path = %path.display(), %reason, "deleting an unreadable producer snapshot");
                    self.files.remove(&offset);
                    delete(&path);
                }
            }
        }
        None
    }
}

fn delete(path: &Path) {
    if let Err(e) = std::fs::remove_file(path)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!(path = %path.display(), error = %e, "could not delete producer snapshot");
    }
}
