//! A segment: one `.log` file with its `.index` and `.timeindex` (spec §2.2-§2.5, §1.5), its
//! `.txnindex` of aborted transactions ([`txn_index`]), and on delay-enabled topics an optional
//! `.deliverafter` ([`crate::delivery::index`]).
//!
//! Mental model: `<20-digit base>.log` is the authoritative data, a concatenation of v2 batches
//! with offsets ≥ the base. The two indexes are sparse, rebuildable caches: every time more than
//! `index.interval.bytes` were appended since the last entry, the next append adds
//! `(last offset of that batch -> its start position)` to `.index` and
//! `(max timestamp so far -> offset of that max)` to `.timeindex` (only if the timestamp grew).
//! When a segment stops being active (roll, close) a final time-index entry is forced in and both
//! index files are trimmed to their entries.
//!
//! Ownership and threads: a segment is owned by its [`crate::log::Log`], which serialises all
//! mutation (`&mut self`). The data file is shared as `Arc<File>` so a reader can `sendfile` a
//! region after releasing the log's lock; the file stays readable even if the segment is deleted.
//!
//! Invariants: `size` is the byte length of whole, validated batches (the file is truncated to it
//! on open by recovery, never trusted beyond it); index entries point inside `[0, size)`.

mod index_file;
pub mod offset_index;
pub mod scan;
pub mod time_index;
pub mod txn_index;

use std::fs::{File, OpenOptions};
use std::io::IoSlice;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use skiff_record::BatchView;

use crate::delivery::index::{DELIVER_AFTER_SUFFIX, DeliverAfterIndex};
use crate::error::{IoContext, Result, StorageError};
use offset_index::OffsetIndex;
use scan::{BatchHeader, HeaderScanner};
use time_index::TimeIndex;
use txn_index::{TXN_INDEX_SUFFIX, TxnIndex};

/// File-name suffixes of a segment's files.
pub const LOG_SUFFIX: &str = ".log";
pub const INDEX_SUFFIX: &str = ".index";
pub const TIME_INDEX_SUFFIX: &str = ".timeindex";
pub const DELETED_SUFFIX: &str = ".deleted";

// compaction (issue 7): one list of a segment's files, so swaps and recovery rename or delete
// every one of them. The first three always exist; later entries are optional side files
// (delayed delivery's `.deliverafter`, issue 8).
/// Every per-segment file suffix, the data file first.
pub const SEGMENT_FILE_SUFFIXES: &[&str] = &[
    LOG_SUFFIX,
    INDEX_SUFFIX,
    TIME_INDEX_SUFFIX,
    DELIVER_AFTER_SUFFIX,
    TXN_INDEX_SUFFIX,
];

/// The paths of every file segment `base_offset` may have in `dir` (with an extra suffix such
/// as `.swap`, or `""`), whether or not they exist.
pub fn segment_file_paths(dir: &Path, base_offset: i64, extra_suffix: &str) -> Vec<PathBuf> {
    SEGMENT_FILE_SUFFIXES
        .iter()
        .map(|s| segment_file(dir, base_offset, &format!("{s}{extra_suffix}")))
        .collect()
}

/// `<dir>/<20-digit base><suffix>`.
pub fn segment_file(dir: &Path, base_offset: i64, suffix: &str) -> PathBuf {
    dir.join(format!("{base_offset:020}{suffix}"))
}

/// Parses a segment base offset out of a file name with the given suffix.
pub fn parse_base_offset(name: &str, suffix: &str) -> Option<i64> {
    let stem = name.strip_suffix(suffix)?;
    if stem.len() != 20 || !stem.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    stem.parse().ok()
}

/// Writes `head` then `tail` at `offset`: `pwrite` for one piece, `pwritev` for two, looping
/// over short writes and `EINTR`.
fn write_all_split_at(
    file: &File,
    mut head: &[u8],
    mut tail: &[u8],
    mut offset: u64,
) -> std::io::Result<()> {
    while !head.is_empty() && !tail.is_empty() {
        let bufs = [IoSlice::new(head), IoSlice::new(tail)];
        let n = match rustix::io::pwritev(file, &bufs, offset) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => n,
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        };
        offset += n as u64;
        if n < head.len() {
            head = &head[n..];
        } else {
            tail = &tail[n - head.len()..];
            head = &[];
        }
    }
    let rest = if head.is_empty() { tail } else { head };
    file.write_all_at(rest, offset)
}

/// The most pieces one `pwritev` takes (Linux's `IOV_MAX` is 1024).
pub(crate) const MAX_IOVECS: usize = 1024;

/// Writes `pieces` back to back at `offset`: `pwritev` of up to [`MAX_IOVECS`] pieces at a
/// time, looping over short writes and `EINTR`.
fn write_all_vectored_at(file: &File, pieces: &[&[u8]], mut offset: u64) -> std::io::Result<()> {
    let mut rest: Vec<&[u8]> = pieces.iter().copied().filter(|p| !p.is_empty()).collect();
    let mut start = 0;
    while start < rest.len() {
        let end = rest.len().min(start + MAX_IOVECS);
        let bufs: Vec<IoSlice<'_>> = rest[start..end].iter().map(|p| IoSlice::new(p)).collect();
        let mut n = match rustix::io::pwritev(file, &bufs, offset) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => n,
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        };
        offset += n as u64;
        while n > 0 {
            let first = rest[start].len();
            if n >= first {
                n -= first;
                start += 1;
            } else {
                rest[start] = &rest[start][n..];
                n = 0;
            }
        }
    }
    Ok(())
}

/// Options for opening a segment.
#[derive(Clone, Copy, Debug)]
pub struct SegmentOptions {
    pub index_interval_bytes: usize,
    pub max_index_bytes: usize,
    /// Roll jitter for this segment, already drawn (`0..segment.jitter.ms`).
    pub roll_jitter_ms: i64,
    /// Creation time used for time-based rolls of segments without timestamps.
    pub now_ms: i64,
}

/// Parameters of [`LogSegment::should_roll`].
#[derive(Clone, Copy, Debug)]
pub struct RollParams {
    pub segment_bytes: u64,
    pub segment_ms: i64,
    pub incoming_bytes: u64,
    pub incoming_max_timestamp: i64,
    pub incoming_last_offset: i64,
    pub now_ms: i64,
}

/// Where a read's offset lies in a segment (issue 12).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Translated {
    /// The first batch whose last offset reaches the target.
    Found(BatchHeader),
    /// The segment ends (cleanly) before the target.
    End,
    /// The header scan stopped at bytes that are not a batch boundary before reaching it.
    Damaged,
}

/// A byte range of a segment's data file, ready for `sendfile` or `pread`.
#[derive(Clone, Debug)]
pub struct FileSlice {
    pub file: Arc<File>,
    pub position: u64,
    pub len: u64,
}

impl FileSlice {
    /// Reads the slice into memory (tests, small reads, TLS connections).
    pub fn read_to_vec(&self) -> std::io::Result<Vec<u8>> {
        let mut buf = vec![0u8; self.len as usize];
        self.file.read_exact_at(&mut buf, self.position)?;
        Ok(buf)
    }
}

/// One segment of a partition log.
#[derive(Debug)]
pub struct LogSegment {
    base_offset: i64,
    log_path: PathBuf,
    file: Arc<File>,
    size: u64,
    offset_index: OffsetIndex,
    time_index: TimeIndex,
    index_interval_bytes: usize,
    bytes_since_last_index_entry: usize,
    max_timestamp_so_far: i64,
    offset_of_max_timestamp: i64,
    rolling_based_timestamp: Option<i64>,
    created_ms: i64,
    roll_jitter_ms: i64,
    // delivery delay (issue 8): optional `.deliverafter` side file
    deliver_after: DeliverAfterIndex,
    // transactions (issue 18): `.txnindex`, created with the segment
    txn_index: TxnIndex,
}

impl LogSegment {
    /// Opens (or creates) the segment files. The data file's length is taken as-is; callers that
    /// did not shut down cleanly run [`crate::recovery`] on it before trusting it.
    pub fn open(dir: &Path, base_offset: i64, opts: SegmentOptions, active: bool) -> Result<Self> {
        Self::open_with_suffix(dir, base_offset, opts, active, "")
    }

    /// [`LogSegment::open`] of files named `<base>.log<extra>` etc. (the cleaner writes its
    /// output as `.cleaned`, see [`crate::swap`]).
    pub fn open_with_suffix(
        dir: &Path,
        base_offset: i64,
        opts: SegmentOptions,
        active: bool,
        extra: &str,
    ) -> Result<Self> {
        let log_path = segment_file(dir, base_offset, &format!("{LOG_SUFFIX}{extra}"));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&log_path)
            .at(&log_path)?;
        let size = file.metadata().at(&log_path)?.len();
        let index_path = segment_file(dir, base_offset, &format!("{INDEX_SUFFIX}{extra}"));
        let offset_index =
            OffsetIndex::open(&index_path, base_offset, opts.max_index_bytes, active)
                .at(&index_path)?;
        let time_path = segment_file(dir, base_offset, &format!("{TIME_INDEX_SUFFIX}{extra}"));
        let time_index = TimeIndex::open(&time_path, base_offset, opts.max_index_bytes, active)
            .at(&time_path)?;
        // delivery delay (issue 8)
        let da_path = segment_file(dir, base_offset, &format!("{DELIVER_AFTER_SUFFIX}{extra}"));
        let deliver_after = DeliverAfterIndex::open(da_path.clone()).at(&da_path)?;
        let txn_path = segment_file(dir, base_offset, &format!("{TXN_INDEX_SUFFIX}{extra}"));
        let txn_index = TxnIndex::open(txn_path.clone(), active).at(&txn_path)?;
        let mut seg = LogSegment {
            base_offset,
            log_path,
            file: Arc::new(file),
            size,
            offset_index,
            time_index,
            index_interval_bytes: opts.index_interval_bytes,
            bytes_since_last_index_entry: 0,
            max_timestamp_so_far: -1,
            offset_of_max_timestamp: base_offset,
            rolling_based_timestamp: None,
            created_ms: opts.now_ms,
            roll_jitter_ms: opts.roll_jitter_ms,
            deliver_after,
            txn_index,
        };
        let (ts, off) = seg.time_index.last_entry();
        if ts >= 0 {
            seg.max_timestamp_so_far = ts;
            seg.offset_of_max_timestamp = off;
        }
        Ok(seg)
    }

    /// After open (and recovery if any): re-derives the in-memory facts the files don't hold
    /// exactly: the max timestamp past the last time-index entry and the first batch's timestamp.
    pub fn load_tail_state(&mut self) -> Result<()> {
        let (ts, off) = self.time_index.last_entry();
        self.max_timestamp_so_far = ts;
        self.offset_of_max_timestamp = off;
        let start = if ts >= 0 {
            self.offset_index.lookup(off).1 as u64
        } else {
            0
        };
        let file = Arc::clone(&self.file);
        let mut scan = HeaderScanner::new(&file, start, self.size);
        while let Some(h) = scan.next_header().at(&self.log_path)? {
            self.observe_timestamp(h.max_timestamp, h.last_offset);
        }
        self.rolling_based_timestamp = self.first_batch_timestamp()?;
        Ok(())
    }

    fn first_batch_timestamp(&self) -> Result<Option<i64>> {
        let mut scan = HeaderScanner::new(&self.file, 0, self.size);
        Ok(scan
            .next_header()
            .at(&self.log_path)?
            .map(|h| h.max_timestamp)
            .filter(|t| *t >= 0))
    }

    fn observe_timestamp(&mut self, max_ts: i64, last_offset: i64) {
        if max_ts > self.max_timestamp_so_far {
            self.max_timestamp_so_far = max_ts;
            self.offset_of_max_timestamp = last_offset;
        }
    }

    pub fn base_offset(&self) -> i64 {
        self.base_offset
    }
    pub fn size(&self) -> u64 {
        self.size
    }
    pub fn file(&self) -> &Arc<File> {
        &self.file
    }
    pub fn log_path(&self) -> &Path {
        &self.log_path
    }
    pub fn offset_index(&self) -> &OffsetIndex {
        &self.offset_index
    }
    pub fn time_index(&self) -> &TimeIndex {
        &self.time_index
    }
    // delivery delay (issue 8)
    pub fn deliver_after(&self) -> &DeliverAfterIndex {
        &self.deliver_after
    }
    pub(crate) fn deliver_after_mut(&mut self) -> &mut DeliverAfterIndex {
        &mut self.deliver_after
    }
    /// The aborted transactions whose marker is in this segment (issue 18).
    pub fn txn_index(&self) -> &TxnIndex {
        &self.txn_index
    }
    pub(crate) fn txn_index_mut(&mut self) -> &mut TxnIndex {
        &mut self.txn_index
    }
    /// The largest record timestamp in the segment, or `None` if it has none.
    pub fn max_timestamp(&self) -> Option<i64> {
        (self.max_timestamp_so_far >= 0).then_some(self.max_timestamp_so_far)
    }
    pub fn offset_of_max_timestamp(&self) -> i64 {
        self.offset_of_max_timestamp
    }

    /// Kafka's `largestTimestamp`: the max record timestamp, or the file's mtime without one.
    pub fn largest_timestamp(&self) -> i64 {
        if let Some(ts) = self.max_timestamp() {
            return ts;
        }
        self.file
            .metadata()
            .ok()
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0)
    }

    /// Time waited for a roll, in message time when the segment has timestamps (spec §1.7).
    fn time_waited_for_roll(&self, now_ms: i64, incoming_max_ts: i64) -> i64 {
        match self.rolling_based_timestamp {
            Some(first) => incoming_max_ts.saturating_sub(first),
            None => now_ms.saturating_sub(self.created_ms),
        }
    }

    /// Kafka's `shouldRoll` (spec §2.5).
    pub fn should_roll(&self, p: &RollParams) -> bool {
        let reached_roll_ms = self.time_waited_for_roll(p.now_ms, p.incoming_max_timestamp)
            > p.segment_ms.saturating_sub(self.roll_jitter_ms);
        let relative = p.incoming_last_offset - self.base_offset;
        self.size > p.segment_bytes.saturating_sub(p.incoming_bytes)
            || (self.size > 0 && reached_roll_ms)
            || self.offset_index.is_full()
            || self.time_index.is_full()
            || !(0..=i64::from(i32::MAX)).contains(&relative)
    }

    /// Appends one batch whose offsets are already assigned. Updates the indexes sparsely.
    pub fn append(&mut self, batch: &[u8], last_offset: i64, max_timestamp: i64) -> Result<()> {
        self.append_split(batch, &[], last_offset, max_timestamp)
    }

    /// [`LogSegment::append`] of a batch held in two pieces (`head` then `tail`, e.g. a header
    /// and a borrowed records section), written with one `pwritev` at the segment end.
    pub fn append_split(
        &mut self,
        head: &[u8],
        tail: &[u8],
        last_offset: i64,
        max_timestamp: i64,
    ) -> Result<()> {
        let len = head.len() + tail.len();
        let position = self.room_for(len)?;
        write_all_split_at(&self.file, head, tail, position).at(&self.log_path)?;
        self.account(position, len, last_offset, max_timestamp)?;
        Ok(())
    }

    /// Group append (flat combining, [`crate::combine`]): accounts for a batch of `len` bytes
    /// at the segment end (size, indexes) *without writing it*; returns its position. The
    /// caller writes the staged bytes with [`Self::write_staged`] before the log's lock is
    /// released, or fails the log dir.
    pub(crate) fn append_staged(
        &mut self,
        len: usize,
        last_offset: i64,
        max_timestamp: i64,
    ) -> Result<u64> {
        let position = self.room_for(len)?;
        self.account(position, len, last_offset, max_timestamp)?;
        Ok(position)
    }

    /// Writes the pieces of staged batches, in order, at `position` (one `pwritev` per
    /// [`MAX_IOVECS`] pieces, looping over short writes).
    pub(crate) fn write_staged(&self, pieces: &[&[u8]], position: u64) -> Result<()> {
        write_all_vectored_at(&self.file, pieces, position).at(&self.log_path)
    }

    fn room_for(&self, len: usize) -> Result<u64> {
        let position = self.size;
        if position + len as u64 > u64::from(u32::MAX) {
            return Err(StorageError::InvalidArgument(format!(
                "segment {} would exceed 4 GiB",
                self.log_path.display()
            )));
        }
        Ok(position)
    }

    fn account(
        &mut self,
        position: u64,
        len: usize,
        last_offset: i64,
        max_timestamp: i64,
    ) -> Result<()> {
        self.size += len as u64;
        if self.rolling_based_timestamp.is_none() && position == 0 && max_timestamp >= 0 {
            self.rolling_based_timestamp = Some(max_timestamp);
        }
        self.index_batch(position, len, last_offset, max_timestamp)
    }

    /// The sparse-index step shared by append and recovery.
    fn index_batch(
        &mut self,
        position: u64,
        len: usize,
        last_offset: i64,
        max_timestamp: i64,
    ) -> Result<()> {
        self.observe_timestamp(max_timestamp, last_offset);
        if self.bytes_since_last_index_entry > self.index_interval_bytes {
            self.offset_index
                .append(last_offset, position as u32)
                .map_err(|e| StorageError::InvalidArgument(format!("offset index: {e}")))?;
            self.time_index
                .maybe_append(
                    self.max_timestamp_so_far,
                    self.offset_of_max_timestamp,
                    false,
                )
                .map_err(|e| StorageError::InvalidArgument(format!("time index: {e}")))?;
            self.bytes_since_last_index_entry = 0;
        }
        self.bytes_since_last_index_entry += len;
        Ok(())
    }

    /// Finds the first batch whose last offset is ≥ `target`, starting from the index's hint.
    pub fn translate_offset(&self, target: i64) -> Result<Option<BatchHeader>> {
        let (_, pos) = self.offset_index.lookup(target);
        let start = u64::from(pos).min(self.size);
        let mut scan = HeaderScanner::new(&self.file, start, self.size);
        while let Some(h) = scan.next_header().at(&self.log_path)? {
            if h.last_offset >= target {
                return Ok(Some(h));
            }
        }
        Ok(None)
    }

    /// issue 12: [`Self::translate_offset`] for reads: jumps over `skips` (quarantined bytes
    /// still in the file) and tells a clean end of the segment from a scan stopped by damage.
    pub fn translate_for_read(&self, target: i64, skips: Vec<(u64, u64)>) -> Result<Translated> {
        let (_, pos) = self.offset_index.lookup(target);
        let start = u64::from(pos).min(self.size);
        let mut scan = HeaderScanner::new(&self.file, start, self.size).with_skips(skips);
        while let Some(h) = scan.next_header().at(&self.log_path)? {
            if h.last_offset >= target {
                return Ok(Translated::Found(h));
            }
        }
        Ok(match scan.stop_reason() {
            None => Translated::End,
            Some(_) => Translated::Damaged,
        })
    }

    /// issue 12: scans the whole segment (jumping over `skips`) to where its framing is lost:
    /// `(position of the first unreadable header, offset after the last good one)`, or `None`
    /// if the segment reads to its end.
    pub fn locate_damage(&self, skips: Vec<(u64, u64)>) -> Result<Option<(u64, i64)>> {
        let mut scan = HeaderScanner::new(&self.file, 0, self.size).with_skips(skips);
        let mut next = self.base_offset;
        while let Some(h) = scan.next_header().at(&self.log_path)? {
            next = h.next_offset();
        }
        Ok(match scan.stop_reason() {
            Some(
                scan::ScanStop::BadHeader { position } | scan::ScanStop::Truncated { position },
            ) => Some((*position, next)),
            None => None,
        })
    }

    /// The byte position where data at or after `offset` starts (segment size if none).
    pub fn position_of(&self, offset: i64) -> Result<u64> {
        Ok(self
            .translate_offset(offset)?
            .map_or(self.size, |h| h.position))
    }

    /// Iterates headers over the whole segment.
    pub fn headers_from(&self, position: u64) -> HeaderScanner<'_> {
        HeaderScanner::new(&self.file, position, self.size)
    }

    /// Reads one whole batch at `header` into memory and validates its structure.
    pub fn read_batch(&self, header: &BatchHeader) -> Result<Vec<u8>> {
        let mut buf = vec![0u8; header.size as usize];
        self.file
            .read_exact_at(&mut buf, header.position)
            .at(&self.log_path)?;
        BatchView::new(&buf).map_err(|e| StorageError::Corrupt {
            path: self.log_path.display().to_string(),
            position: header.position,
            reason: e.to_string(),
        })?;
        Ok(buf)
    }

    /// Removes all data at offsets ≥ `offset` (a batch containing it goes whole). Returns the
    /// number of bytes removed.
    pub fn truncate_to(&mut self, offset: i64) -> Result<u64> {
        let Some(h) = self.translate_offset(offset)? else {
            return Ok(0);
        };
        self.truncate_at(h.position, offset, h.base_offset)
    }

    /// Cuts the segment at byte `position`, where the batch with base offset `batch_base`
    /// (holding `offset`) starts: indexes lose their entries from `offset` on. Also the cut of
    /// a repair (issue 17 item 8), at a quarantined range's recorded position, so no header
    /// inside the damage is ever read. Returns the bytes removed.
    pub fn truncate_at(&mut self, position: u64, offset: i64, batch_base: i64) -> Result<u64> {
        let position = position.min(self.size);
        self.offset_index.truncate_to(offset);
        self.time_index.truncate_to(offset);
        // delivery delay (issue 8): the batch holding `offset` goes whole, so does its entry.
        let base = self.base_offset;
        self.deliver_after
            .truncate_to(base, batch_base)
            .at(self.deliver_after.path())?;
        // transactions: entries whose marker is cut go (Kafka's TransactionIndex.truncateTo)
        self.txn_index
            .truncate_to(batch_base.min(offset))
            .at(self.txn_index.path())?;
        let removed = self.size - position;
        self.file.set_len(position).at(&self.log_path)?;
        self.size = position;
        self.bytes_since_last_index_entry = 0;
        self.load_tail_state()?;
        Ok(removed)
    }

    /// Clears both indexes and the in-memory tail state before a rebuild (recovery).
    pub(crate) fn reset_indexes(&mut self) {
        self.offset_index.truncate_all();
        // Not `truncate_to(base)`: a garbled index is unsorted, and a binary search over it
        // can keep garbage entries (e.g. negative relative offsets) in front of the rebuild.
        self.time_index.truncate_all();
        self.bytes_since_last_index_entry = 0;
        self.max_timestamp_so_far = -1;
        self.offset_of_max_timestamp = self.base_offset;
        self.rolling_based_timestamp = None;
    }

    /// Cuts the data file to `valid_bytes` (recovery's torn-tail truncation).
    pub(crate) fn truncate_file(&mut self, valid_bytes: u64) -> Result<()> {
        if valid_bytes < self.size {
            self.file.set_len(valid_bytes).at(&self.log_path)?;
            self.size = valid_bytes;
        }
        Ok(())
    }

    /// Re-adds index entries for one batch during a rebuild (same rule as append).
    pub(crate) fn reindex_batch(&mut self, h: &BatchHeader) -> Result<()> {
        if self.rolling_based_timestamp.is_none() && h.position == 0 && h.max_timestamp >= 0 {
            self.rolling_based_timestamp = Some(h.max_timestamp);
        }
        self.index_batch(h.position, h.size as usize, h.last_offset, h.max_timestamp)
    }

    /// Makes the segment read-only in spirit: forces the final time-index entry and trims both
    /// index files (Kafka's `onBecomeInactiveSegment`).
    pub fn on_become_inactive(&mut self) -> Result<()> {
        if self.max_timestamp_so_far >= 0 {
            self.time_index
                .maybe_append(
                    self.max_timestamp_so_far,
                    self.offset_of_max_timestamp,
                    true,
                )
                .map_err(|e| StorageError::InvalidArgument(format!("time index: {e}")))?;
        }
        let p = self.offset_index.path().to_path_buf();
        self.offset_index.trim_to_valid_size().at(&p)?;
        let p = self.time_index.path().to_path_buf();
        self.time_index.trim_to_valid_size().at(&p)?;
        Ok(())
    }

    /// Grows the indexes back to their maximum so appends can continue (reactivation on open).
    pub fn make_active(&mut self, max_index_bytes: usize) -> Result<()> {
        let p = self.offset_index.path().to_path_buf();
        self.offset_index.resize(max_index_bytes).at(&p)?;
        let p = self.time_index.path().to_path_buf();
        self.time_index.resize(max_index_bytes).at(&p)?;
        Ok(())
    }

    /// fdatasync of the data file; the indexes write their unwritten entries and fdatasync.
    pub fn flush(&mut self) -> Result<()> {
        self.file.sync_data().at(&self.log_path)?;
        self.offset_index.flush().at(self.offset_index.path())?;
        self.time_index.flush().at(self.time_index.path())?;
        // delivery delay (issue 8)
        self.deliver_after.flush().at(self.deliver_after.path())?;
        self.txn_index.flush().at(self.txn_index.path())?;
        Ok(())
    }

    /// Renames the segment's files to `<dir>/<base><suffix><extra>` (compaction's swap:
    /// `.cleaned` -> `.swap` -> no extra suffix) and returns the new paths of the files that
    /// exist. The data file goes first.
    pub fn set_file_suffix(&mut self, dir: &Path, extra: &str) -> Result<Vec<PathBuf>> {
        let base = self.base_offset;
        let new_log = segment_file(dir, base, &format!("{LOG_SUFFIX}{extra}"));
        std::fs::rename(&self.log_path, &new_log).at(&self.log_path)?;
        self.log_path = new_log.clone();
        let mut out = vec![new_log];
        let p = segment_file(dir, base, &format!("{INDEX_SUFFIX}{extra}"));
        self.offset_index.rename_to(&p).at(&p)?;
        out.push(p);
        let p = segment_file(dir, base, &format!("{TIME_INDEX_SUFFIX}{extra}"));
        self.time_index.rename_to(&p).at(&p)?;
        out.push(p);
        // delivery delay (issue 8): the optional side file follows (a no-op when absent).
        let p = segment_file(dir, base, &format!("{DELIVER_AFTER_SUFFIX}{extra}"));
        if self.deliver_after.rename_to(&p).at(&p)? {
            out.push(p);
        }
        let p = segment_file(dir, base, &format!("{TXN_INDEX_SUFFIX}{extra}"));
        if self.txn_index.rename_to(&p).at(&p)? {
            out.push(p);
        }
        Ok(out)
    }

    /// The first batch's max timestamp (Kafka's max-compaction-lag measure), if any; kept in
    /// memory (the time-based roll measures from it too), no I/O.
    pub fn first_batch_max_timestamp(&self) -> Option<i64> {
        self.rolling_based_timestamp
    }

    /// Renames all files of a segment under its final names with an extra suffix (e.g.
    /// `.deleted`) and returns the new paths.
    pub fn rename_with_suffix(&mut self, suffix: &str) -> Result<Vec<PathBuf>> {
        let dir = self
            .log_path
            .parent()
            .map_or_else(PathBuf::new, Path::to_path_buf);
        self.set_file_suffix(&dir, suffix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_writes_land_in_order_at_the_offset() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        let head: Vec<u8> = (0..61u8).collect();
        let tail: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        write_all_split_at(&file, &head, &tail, 10).unwrap();
        write_all_split_at(&file, b"", b"xyz", 10 + 61 + 200_000).unwrap();
        write_all_split_at(&file, b"ab", b"", 10 + 61 + 200_003).unwrap();
        write_all_split_at(&file, b"", b"", 0).unwrap();
        let got = std::fs::read(&path).unwrap();
        let mut want = vec![0u8; 10];
        want.extend(&head);
        want.extend(&tail);
        want.extend(b"xyzab");
        assert!(got == want, "file differs from head ++ tail");
    }
}
