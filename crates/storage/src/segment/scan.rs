//! Sequential reading of batches from a `.log` file through one reusable buffer.
//!
//! Mental model: a cursor over `[start, end)` of a file that yields each batch's position and its
//! 61-byte header fields without reading bodies ([`HeaderScanner`]), or whole batches
//! ([`BatchReader`], for recovery and timestamp lookups). Reads go through `pread` in chunks of
//! at least [`SCAN_CHUNK_BYTES`], so scanning many small batches costs few syscalls. The header
//! scanner sizes its reads to the batches it meets: its first read is [`FIRST_SCAN_CHUNK_BYTES`]
//! (an offset-index hint is at most `index.interval.bytes` plus one batch before its target),
//! later reads double up to [`SCAN_CHUNK_BYTES`] while batches are small, and when the last
//! batch was larger than a chunk the next read fetches only the 61-byte header: finding the
//! header of a 1 MiB batch after another costs 61 bytes copied, not 64 KiB (the C1 profile in
//! docs/performance.md).
//!
//! Invariants: nothing here trusts the file. A header without the v2 magic byte, or (header
//! scanner) one whose base offset goes below the previous batch's next offset, is not a batch
//! boundary: the scan stops with [`ScanStop::BadHeader`] (issue 12: lost framing is detected,
//! never read through). A header whose declared length runs past `end` or is
//! below the v2 minimum ends the scan with an error the caller decides about (recovery truncates,
//! reads stop). Allocation never exceeds the larger of the chunk size and one batch that fits
//! inside `end`.

use std::fs::File;
use std::os::unix::fs::FileExt;

use skiff_record::{BATCH_HEADER_BYTES, LOG_OVERHEAD_BYTES};

/// Minimum bytes per `pread` while reading whole batches; the header scanner's largest read.
pub const SCAN_CHUNK_BYTES: usize = 64 * 1024;

/// The header scanner's first read (a page; it doubles while batches are small).
pub const FIRST_SCAN_CHUNK_BYTES: usize = 4 * 1024;

/// The fields of a batch header a scan needs, plus where the batch sits in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchHeader {
    pub position: u64,
    pub size: u32,
    pub base_offset: i64,
    pub last_offset: i64,
    pub partition_leader_epoch: i32,
    pub max_timestamp: i64,
    pub attributes: i16,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub records_count: i32,
}

impl BatchHeader {
    pub fn next_offset(&self) -> i64 {
        self.last_offset + 1
    }

    pub fn end_position(&self) -> u64 {
        self.position + u64::from(self.size)
    }

    /// Attribute bit 4.
    pub fn is_transactional(&self) -> bool {
        self.attributes & 0x10 != 0
    }

    /// Attribute bit 5.
    pub fn is_control(&self) -> bool {
        self.attributes & 0x20 != 0
    }

    /// Parses the fixed header from at least [`BATCH_HEADER_BYTES`] bytes. Returns `None` when the
    /// declared length is impossible for a v2 batch.
    pub fn parse(position: u64, b: &[u8]) -> Option<BatchHeader> {
        if b.len() < BATCH_HEADER_BYTES {
            return None;
        }
        use skiff_record::layout as lay;
        let be_i64 = |at: usize| i64::from_be_bytes(b[at..at + 8].try_into().unwrap_or([0; 8]));
        let be_i32 = |at: usize| i32::from_be_bytes(b[at..at + 4].try_into().unwrap_or([0; 4]));
        let be_i16 = |at: usize| i16::from_be_bytes([b[at], b[at + 1]]);
        // issue 12: a header without the v2 magic byte is not a batch boundary (lost framing).
        if b[lay::MAGIC] as i8 != skiff_record::MAGIC_V2 {
            return None;
        }
        let length = be_i32(lay::BATCH_LENGTH);
        if length < (BATCH_HEADER_BYTES - LOG_OVERHEAD_BYTES) as i32 {
            return None;
        }
        let size = u32::try_from(i64::from(length) + LOG_OVERHEAD_BYTES as i64).ok()?;
        let base_offset = be_i64(lay::BASE_OFFSET);
        let delta = be_i32(lay::LAST_OFFSET_DELTA);
        if delta < 0 {
            return None;
        }
        Some(BatchHeader {
            position,
            size,
            base_offset,
            last_offset: base_offset.checked_add(i64::from(delta))?,
            partition_leader_epoch: be_i32(lay::PARTITION_LEADER_EPOCH),
            max_timestamp: be_i64(lay::MAX_TIMESTAMP),
            attributes: be_i16(lay::ATTRIBUTES),
            producer_id: be_i64(lay::PRODUCER_ID),
            producer_epoch: be_i16(lay::PRODUCER_EPOCH),
            base_sequence: be_i32(lay::BASE_SEQUENCE),
            records_count: be_i32(lay::RECORDS_COUNT),
        })
    }
}

/// Why a scan stopped early.
#[derive(Debug, PartialEq, Eq)]
pub enum ScanStop {
    /// Fewer than a header's bytes, or a declared length past the end: a torn tail.
    Truncated { position: u64 },
    /// A header that cannot be a v2 batch.
    BadHeader { position: u64 },
}

/// A chunked reader over `[pos, end)` of a file.
#[derive(Debug)]
struct Chunked<'f> {
    file: &'f File,
    end: u64,
    buf: Vec<u8>,
    buf_start: u64,
}

impl<'f> Chunked<'f> {
    fn new(file: &'f File, end: u64) -> Self {
        Self {
            file,
            end,
            buf: Vec::new(),
            buf_start: 0,
        }
    }

    /// Makes `[pos, pos+len)` available in the buffer; returns false if that passes `end`.
    fn ensure(&mut self, pos: u64, len: usize) -> std::io::Result<bool> {
        self.ensure_reading(pos, len, SCAN_CHUNK_BYTES)
    }

    /// As [`Self::ensure`], reading at least `len` and at most `max(len, read)` bytes (never past
    /// `end`) when the buffer does not already hold the range.
    fn ensure_reading(&mut self, pos: u64, len: usize, read: usize) -> std::io::Result<bool> {
        if pos + len as u64 > self.end {
            return Ok(false);
        }
        if self.holds(pos, len) {
            return Ok(true);
        }
        let want = len.max(read).min((self.end - pos) as usize);
        self.buf.resize(want, 0);
        self.file.read_exact_at(&mut self.buf, pos)?;
        self.buf_start = pos;
        Ok(true)
    }

    /// Whether `[pos, pos+len)` is already in the buffer.
    fn holds(&self, pos: u64, len: usize) -> bool {
        pos >= self.buf_start && pos + len as u64 <= self.buf_start + self.buf.len() as u64
    }

    fn slice(&self, pos: u64, len: usize) -> &[u8] {
        let at = (pos - self.buf_start) as usize;
        &self.buf[at..at + len]
    }
}

/// Yields batch headers from `start` to `end` without reading bodies.
#[derive(Debug)]
pub struct HeaderScanner<'f> {
    inner: Chunked<'f>,
    pos: u64,
    stopped: Option<ScanStop>,
    /// Size of the next chunk read (doubles up to [`SCAN_CHUNK_BYTES`]).
    next_chunk: usize,
    /// Size of the batch just passed (0 before the first).
    last_size: u64,
    /// Offset after the batch just passed (`i64::MIN` before the first): offsets increase.
    next_offset: i64,
    /// Byte ranges `[start, end)` to jump over (quarantined damaged bytes, issue 12).
    skips: Vec<(u64, u64)>,
}

impl<'f> HeaderScanner<'f> {
    pub fn new(file: &'f File, start: u64, end: u64) -> Self {
        Self {
            inner: Chunked::new(file, end),
            pos: start,
            stopped: None,
            next_chunk: FIRST_SCAN_CHUNK_BYTES,
            last_size: 0,
            next_offset: i64::MIN,
            skips: Vec::new(),
        }
    }

    /// The scanner jumps over these byte ranges (damaged bytes left in place, issue 12).
    pub fn with_skips(mut self, skips: Vec<(u64, u64)>) -> Self {
        self.skips = skips;
        self
    }

    /// Offset after the last header returned (`None` before the first).
    pub fn next_offset(&self) -> Option<i64> {
        (self.next_offset != i64::MIN).then_some(self.next_offset)
    }

    /// How many bytes the next `pread` should fetch: just the header after a batch larger than
    /// a chunk (the following one is as likely to be large), else the growing chunk.
    fn read_size(&mut self) -> usize {
        if self.last_size > self.next_chunk as u64 {
            return BATCH_HEADER_BYTES;
        }
        let n = self.next_chunk;
        self.next_chunk = (n * 2).min(SCAN_CHUNK_BYTES);
        n
    }

    /// Why the scan ended before `end`, if it did.
    pub fn stop_reason(&self) -> Option<&ScanStop> {
        self.stopped.as_ref()
    }

    /// The next header, `Ok(None)` at a clean end or a stop (see [`Self::stop_reason`]).
    pub fn next_header(&mut self) -> std::io::Result<Option<BatchHeader>> {
        while let Some(&(_, end)) = self
            .skips
            .iter()
            .find(|(s, e)| *s <= self.pos && self.pos < *e)
        {
            self.pos = end;
        }
        if self.stopped.is_some() || self.pos >= self.inner.end {
            return Ok(None);
        }
        let pos = self.pos;
        let read = if self.inner.holds(pos, BATCH_HEADER_BYTES) {
            0
        } else {
            self.read_size()
        };
        if !self.inner.ensure_reading(pos, BATCH_HEADER_BYTES, read)? {
            self.stopped = Some(ScanStop::Truncated { position: pos });
            return Ok(None);
        }
        let Some(h) = BatchHeader::parse(pos, self.inner.slice(pos, BATCH_HEADER_BYTES)) else {
            self.stopped = Some(ScanStop::BadHeader { position: pos });
            return Ok(None);
        };
        if h.end_position() > self.inner.end {
            self.stopped = Some(ScanStop::Truncated { position: pos });
            return Ok(None);
        }
        if h.base_offset < self.next_offset {
            // issue 12: offsets never go back in a valid segment; this is not a batch boundary.
            self.stopped = Some(ScanStop::BadHeader { position: pos });
            return Ok(None);
        }
        self.pos = h.end_position();
        self.last_size = u64::from(h.size);
        self.next_offset = h.next_offset();
        Ok(Some(h))
    }
}

/// Yields whole batches (header + body bytes) from `start` to `end`.
#[derive(Debug)]
pub struct BatchReader<'f> {
    inner: Chunked<'f>,
    pos: u64,
    stopped: Option<ScanStop>,
}

impl<'f> BatchReader<'f> {
    pub fn new(file: &'f File, start: u64, end: u64) -> Self {
        Self {
            inner: Chunked::new(file, end),
            pos: start,
            stopped: None,
        }
    }

    pub fn stop_reason(&self) -> Option<&ScanStop> {
        self.stopped.as_ref()
    }

    /// The next whole batch as (header, bytes). The bytes are not validated beyond the header.
    pub fn next_batch(&mut self) -> std::io::Result<Option<(BatchHeader, &[u8])>> {
        if self.stopped.is_some() || self.pos >= self.inner.end {
            return Ok(None);
        }
        let pos = self.pos;
        if !self.inner.ensure(pos, BATCH_HEADER_BYTES)? {
            self.stopped = Some(ScanStop::Truncated { position: pos });
            return Ok(None);
        }
        let Some(h) = BatchHeader::parse(pos, self.inner.slice(pos, BATCH_HEADER_BYTES)) else {
            self.stopped = Some(ScanStop::BadHeader { position: pos });
            return Ok(None);
        };
        if !self.inner.ensure(pos, h.size as usize)? {
            self.stopped = Some(ScanStop::Truncated { position: pos });
            return Ok(None);
        }
        self.pos = h.end_position();
        Ok(Some((h, self.inner.slice(pos, h.size as usize))))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// A file of `sizes.len()` fake v2 batch headers, each followed by filler to its size.
    fn file_of(sizes: &[usize]) -> (tempfile::NamedTempFile, Vec<u64>) {
        let mut bytes = Vec::new();
        let mut positions = Vec::new();
        for (i, &size) in sizes.iter().enumerate() {
            assert!(size >= BATCH_HEADER_BYTES);
            positions.push(bytes.len() as u64);
            let mut b = vec![0u8; size];
            b[0..8].copy_from_slice(&(i as i64).to_be_bytes());
            b[8..12].copy_from_slice(&((size - LOG_OVERHEAD_BYTES) as i32).to_be_bytes());
            b[16] = 2;
            bytes.extend_from_slice(&b);
        }
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), &bytes).unwrap();
        (f, positions)
    }

    fn scan_all(f: &File, end: u64) -> (Vec<u64>, Vec<usize>) {
        let mut s = HeaderScanner::new(f, 0, end);
        let mut positions = Vec::new();
        let mut reads = Vec::new();
        let mut last_buf = (u64::MAX, 0);
        while let Some(h) = s.next_header().unwrap() {
            positions.push(h.position);
            let now = (s.inner.buf_start, s.inner.buf.len());
            if now != last_buf {
                reads.push(now.1);
                last_buf = now;
            }
        }
        assert_eq!(s.stop_reason(), None);
        (positions, reads)
    }

    #[test]
    fn large_batches_cost_a_header_read_each_after_the_first() {
        let sizes = [1 << 20, 1 << 20, 1 << 20];
        let (f, expected) = file_of(&sizes);
        let file = File::open(f.path()).unwrap();
        let (positions, reads) = scan_all(&file, (3 << 20) as u64);
        assert_eq!(positions, expected);
        assert_eq!(
            reads,
            vec![
                FIRST_SCAN_CHUNK_BYTES,
                BATCH_HEADER_BYTES,
                BATCH_HEADER_BYTES
            ]
        );
    }

    #[test]
    fn small_batches_are_read_in_growing_chunks() {
        let sizes = vec![100; 2000];
        let (f, expected) = file_of(&sizes);
        let file = File::open(f.path()).unwrap();
        let (positions, reads) = scan_all(&file, 200_000);
        assert_eq!(positions, expected);
        // 4, 8, 16, 32 KiB, then 64 KiB chunks (each read starts at a batch boundary).
        assert_eq!(&reads[..5], &[4096, 8192, 16384, 32768, 65536]);
        assert!(reads.len() <= 8, "{reads:?}");
    }

    #[test]
    fn mixed_sizes_and_a_torn_tail() {
        let sizes = [200, 70_000, 300, 150_000, 61];
        let (f, expected) = file_of(&sizes);
        let file = File::open(f.path()).unwrap();
        let end = expected[4] + 61;
        let (positions, _) = scan_all(&file, end);
        assert_eq!(positions, expected);
        // The same file cut inside the 4th batch: a truncated stop at its position.
        let mut s = HeaderScanner::new(&file, 0, expected[3] + 1000);
        let mut n = 0;
        while s.next_header().unwrap().is_some() {
            n += 1;
        }
        assert_eq!(n, 3);
        assert_eq!(
            s.stop_reason(),
            Some(&ScanStop::Truncated {
                position: expected[3]
            })
        );
    }
}
