//! Zero-copy view of one v2 record batch, iteration over a region of batches, and the
//! in-place header mutators the leader and the log use.
//!
//! Format: see the crate docs and [`layout`]. A [`BatchView`] borrows exactly one whole batch
//! (`batchLength + 12` bytes); construction checks only framing (length, magic), so a view is
//! cheap enough to build for every batch a recovery scan touches. The CRC is checked on demand
//! with [`BatchView::verify_crc`]. Header getters cannot fail or panic once the view exists
//! (the slice is at least 61 bytes).
//!
//! Mutators work on `&mut [u8]` holding exactly one batch, because the owner of the bytes
//! (a produce buffer, a segment being written) is not this crate. Base offset and partition
//! leader epoch sit outside the CRC and are patched without recomputing it.

use std::borrow::Cow;

use skiff_types::limits::{BATCH_HEADER_BYTES, LOG_OVERHEAD_BYTES};

use crate::MAGIC_V2;
use crate::compression::{Compression, decompress};
use crate::error::RecordError;
use crate::record::Record;

/// Byte offsets of the v2 batch header fields and attribute bits.
pub mod layout {
    pub const BASE_OFFSET: usize = 0;
    pub const BATCH_LENGTH: usize = 8;
    pub const PARTITION_LEADER_EPOCH: usize = 12;
    pub const MAGIC: usize = 16;
    pub const CRC: usize = 17;
    /// First byte covered by the CRC.
    pub const ATTRIBUTES: usize = 21;
    pub const LAST_OFFSET_DELTA: usize = 23;
    pub const BASE_TIMESTAMP: usize = 27;
    pub const MAX_TIMESTAMP: usize = 35;
    pub const PRODUCER_ID: usize = 43;
    pub const PRODUCER_EPOCH: usize = 51;
    pub const BASE_SEQUENCE: usize = 53;
    pub const RECORDS_COUNT: usize = 57;
    pub const RECORDS: usize = 61;

    pub const ATTR_COMPRESSION_MASK: i16 = 0x07;
    pub const ATTR_TIMESTAMP_TYPE: i16 = 0x08;
    pub const ATTR_TRANSACTIONAL: i16 = 0x10;
    pub const ATTR_CONTROL: i16 = 0x20;
    pub const ATTR_DELETE_HORIZON: i16 = 0x40;

    /// Smallest legal `batchLength` (a header with no records).
    pub const BATCH_LENGTH_MIN: i32 =
        (super::BATCH_HEADER_BYTES - super::LOG_OVERHEAD_BYTES) as i32;
}

use layout::*;

/// Meaning of record timestamps in a batch (attribute bit 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimestampType {
    CreateTime = 0,
    LogAppendTime = 1,
}

impl TimestampType {
    /// The type encoded in a batch's attributes.
    pub fn from_attributes(attrs: i16) -> Self {
        if attrs & ATTR_TIMESTAMP_TYPE != 0 {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        }
    }

    /// Kafka's config value (`message.timestamp.type`).
    pub fn name(self) -> &'static str {
        match self {
            TimestampType::CreateTime => "CreateTime",
            TimestampType::LogAppendTime => "LogAppendTime",
        }
    }

    /// Parses Kafka's config value.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "CreateTime" => Some(TimestampType::CreateTime),
            "LogAppendTime" => Some(TimestampType::LogAppendTime),
            _ => None,
        }
    }

    fn attr_bit(self) -> i16 {
        match self {
            TimestampType::CreateTime => 0,
            TimestampType::LogAppendTime => ATTR_TIMESTAMP_TYPE,
        }
    }
}

fn be_i16(b: &[u8], at: usize) -> i16 {
    i16::from_be_bytes([b[at], b[at + 1]])
}

fn be_i32(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn be_u32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn be_i64(b: &[u8], at: usize) -> i64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    i64::from_be_bytes(a)
}

/// Total size in bytes of the batch starting at `buf[0]` as declared by its 12-byte prefix
/// (`batchLength + 12`), or `None` if fewer than 12 bytes; `Err` if `batchLength < 49`.
pub fn peek_batch_size(buf: &[u8]) -> Result<Option<usize>, RecordError> {
    if buf.len() < LOG_OVERHEAD_BYTES {
        return Ok(None);
    }
    let len = be_i32(buf, BATCH_LENGTH);
    if len < BATCH_LENGTH_MIN {
        return Err(RecordError::InvalidBatchLength(len));
    }
    Ok(Some(len as usize + LOG_OVERHEAD_BYTES))
}

/// Zero-copy view of one whole v2 batch. `new` checks: len >= 61, `batchLength + 12 == len`,
/// magic == 2. It does NOT check the CRC (call [`BatchView::verify_crc`]).
#[derive(Clone, Copy, Debug)]
pub struct BatchView<'a> {
    bytes: &'a [u8],
}

impl<'a> BatchView<'a> {
    /// Wraps `bytes`, which must hold exactly one batch.
    pub fn new(bytes: &'a [u8]) -> Result<Self, RecordError> {
        if bytes.len() < LOG_OVERHEAD_BYTES {
            return Err(RecordError::Truncated {
                needed: BATCH_HEADER_BYTES,
                available: bytes.len(),
            });
        }
        // Legacy (v0/v1) message sets keep their magic at the same offset: report it first.
        if bytes.len() > MAGIC && bytes[MAGIC] as i8 != MAGIC_V2 {
            return Err(RecordError::UnsupportedMagic(bytes[MAGIC] as i8));
        }
        let len = be_i32(bytes, BATCH_LENGTH);
        if len < BATCH_LENGTH_MIN || len as usize + LOG_OVERHEAD_BYTES != bytes.len() {
            return Err(RecordError::InvalidBatchLength(len));
        }
        debug_assert!(bytes.len() >= BATCH_HEADER_BYTES);
        Ok(Self { bytes })
    }

    /// The whole batch.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Size of the whole batch in bytes (`batchLength + 12`).
    pub fn size(&self) -> usize {
        self.bytes.len()
    }

    pub fn base_offset(&self) -> i64 {
        be_i64(self.bytes, BASE_OFFSET)
    }

    pub fn batch_length(&self) -> i32 {
        be_i32(self.bytes, BATCH_LENGTH)
    }

    pub fn partition_leader_epoch(&self) -> i32 {
        be_i32(self.bytes, PARTITION_LEADER_EPOCH)
    }

    pub fn magic(&self) -> i8 {
        self.bytes[MAGIC] as i8
    }

    /// The stored CRC-32C.
    pub fn crc(&self) -> u32 {
        be_u32(self.bytes, CRC)
    }

    pub fn attributes(&self) -> i16 {
        be_i16(self.bytes, ATTRIBUTES)
    }

    pub fn compression(&self) -> Result<Compression, RecordError> {
        Compression::from_attributes(self.attributes())
    }

    pub fn timestamp_type(&self) -> TimestampType {
        TimestampType::from_attributes(self.attributes())
    }

    pub fn is_transactional(&self) -> bool {
        self.attributes() & ATTR_TRANSACTIONAL != 0
    }

    pub fn is_control(&self) -> bool {
        self.attributes() & ATTR_CONTROL != 0
    }

    pub fn has_delete_horizon(&self) -> bool {
        self.attributes() & ATTR_DELETE_HORIZON != 0
    }

    /// The delete horizon (stored in `baseTimestamp`) when the batch has one.
    pub fn delete_horizon_ms(&self) -> Option<i64> {
        self.has_delete_horizon().then(|| self.base_timestamp())
    }

    pub fn last_offset_delta(&self) -> i32 {
        be_i32(self.bytes, LAST_OFFSET_DELTA)
    }

    pub fn base_timestamp(&self) -> i64 {
        be_i64(self.bytes, BASE_TIMESTAMP)
    }

    pub fn max_timestamp(&self) -> i64 {
        be_i64(self.bytes, MAX_TIMESTAMP)
    }

    pub fn producer_id(&self) -> i64 {
        be_i64(self.bytes, PRODUCER_ID)
    }

    pub fn producer_epoch(&self) -> i16 {
        be_i16(self.bytes, PRODUCER_EPOCH)
    }

    pub fn base_sequence(&self) -> i32 {
        be_i32(self.bytes, BASE_SEQUENCE)
    }

    /// `recordsCount` as stored (may be negative in corrupt input).
    pub fn records_count(&self) -> i32 {
        be_i32(self.bytes, RECORDS_COUNT)
    }

    /// `base_offset + last_offset_delta` (wrapping, so corrupt headers cannot panic).
    pub fn last_offset(&self) -> i64 {
        self.base_offset()
            .wrapping_add(i64::from(self.last_offset_delta()))
    }

    /// `last_offset + 1`.
    pub fn next_offset(&self) -> i64 {
        self.last_offset().wrapping_add(1)
    }

    /// The records section, `bytes[61..]`, compressed if the codec is not `none`.
    pub fn records_bytes(&self) -> &'a [u8] {
        &self.bytes[RECORDS..]
    }

    /// CRC-32C over `bytes[21..]`.
    pub fn compute_crc(&self) -> u32 {
        crate::crc::crc32c(&self.bytes[ATTRIBUTES..])
    }

    pub fn verify_crc(&self) -> Result<(), RecordError> {
        let (stored, computed) = (self.crc(), self.compute_crc());
        if stored == computed {
            Ok(())
        } else {
            Err(RecordError::CrcMismatch { stored, computed })
        }
    }

    /// Decompressed records section (borrowed when uncompressed), at most `max_bytes`.
    pub fn records_data(&self, max_bytes: usize) -> Result<Cow<'a, [u8]>, RecordError> {
        match self.compression()? {
            Compression::None => {
                let data = self.records_bytes();
                if data.len() > max_bytes {
                    return Err(RecordError::DecompressedTooLarge { limit: max_bytes });
                }
                Ok(Cow::Borrowed(data))
            }
            codec => decompress(codec, self.records_bytes(), max_bytes).map(Cow::Owned),
        }
    }

    /// Timestamp a reader sees for a record: `max_timestamp()` when LogAppendTime, else
    /// `base_timestamp + timestamp_delta`.
    pub fn record_timestamp(&self, rec: &Record<'_>) -> i64 {
        match self.timestamp_type() {
            TimestampType::LogAppendTime => self.max_timestamp(),
            TimestampType::CreateTime => self.base_timestamp().wrapping_add(rec.timestamp_delta),
        }
    }

    /// Offset of a record: `base_offset + offset_delta`.
    pub fn record_offset(&self, rec: &Record<'_>) -> i64 {
        self.base_offset().wrapping_add(i64::from(rec.offset_delta))
    }
}

/// Iterates all batches in a byte region (e.g. a whole `.log` file). Yields
/// `Ok((position, view))` and stops with `Some(Err(..))` at the first structurally invalid
/// or truncated batch (then `None`); `None` at a clean end.
#[derive(Clone, Debug)]
pub struct BatchIter<'a> {
    buf: &'a [u8],
    pos: usize,
    done: bool,
}

/// Iterates the batches of `buf`, see [`BatchIter`].
pub fn batches(buf: &[u8]) -> BatchIter<'_> {
    BatchIter {
        buf,
        pos: 0,
        done: false,
    }
}

impl<'a> BatchIter<'a> {
    /// Byte position of the next batch (after an error: of the bad batch).
    pub fn position(&self) -> usize {
        self.pos
    }
}

impl<'a> Iterator for BatchIter<'a> {
    type Item = Result<(usize, BatchView<'a>), RecordError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let rest = &self.buf[self.pos..];
        if rest.is_empty() {
            self.done = true;
            return None;
        }
        let result = match peek_batch_size(rest) {
            Ok(None) => Err(RecordError::Truncated {
                needed: LOG_OVERHEAD_BYTES,
                available: rest.len(),
            }),
            Err(e) => Err(e),
            Ok(Some(size)) if size > rest.len() => Err(RecordError::Truncated {
                needed: size,
                available: rest.len(),
            }),
            Ok(Some(size)) => BatchView::new(&rest[..size]),
        };
        match result {
            Ok(view) => {
                let at = self.pos;
                self.pos += view.size();
                Some(Ok((at, view)))
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

impl std::iter::FusedIterator for BatchIter<'_> {}

fn assert_batch(batch: &[u8]) {
    assert!(
        batch.len() >= BATCH_HEADER_BYTES,
        "mutator needs a whole batch, got {} bytes",
        batch.len()
    );
}

/// Overwrites `baseOffset` (outside the CRC).
pub fn set_base_offset(batch: &mut [u8], base_offset: i64) {
    assert_batch(batch);
    batch[BASE_OFFSET..BASE_OFFSET + 8].copy_from_slice(&base_offset.to_be_bytes());
}

/// Overwrites `partitionLeaderEpoch` (outside the CRC).
pub fn set_partition_leader_epoch(batch: &mut [u8], epoch: i32) {
    assert_batch(batch);
    batch[PARTITION_LEADER_EPOCH..PARTITION_LEADER_EPOCH + 4].copy_from_slice(&epoch.to_be_bytes());
}

/// Sets attribute bit 3 to `ts_type` and `maxTimestamp` to `max_ts`; recomputes the CRC only
/// if either changed (Kafka's `DefaultRecordBatch.setMaxTimestamp`).
pub fn set_max_timestamp(batch: &mut [u8], ts_type: TimestampType, max_ts: i64) {
    assert_batch(batch);
    if patch_max_timestamp(batch, ts_type, max_ts) {
        recompute_crc(batch);
    }
}

/// [`set_max_timestamp`] for a batch held in two pieces: its 61-byte `header` and the records
/// section `body` (which is only read, for the CRC). Returns whether anything changed.
pub fn set_max_timestamp_split(
    header: &mut [u8; BATCH_HEADER_BYTES],
    body: &[u8],
    ts_type: TimestampType,
    max_ts: i64,
) -> bool {
    if !patch_max_timestamp(header, ts_type, max_ts) {
        return false;
    }
    let crc = crate::crc::crc32c_parts(&header[ATTRIBUTES..], body);
    header[CRC..CRC + 4].copy_from_slice(&crc.to_be_bytes());
    true
}

/// Writes the timestamp type bit and `maxTimestamp` into a header; true if a byte changed.
fn patch_max_timestamp(header: &mut [u8], ts_type: TimestampType, max_ts: i64) -> bool {
    let attrs = be_i16(header, ATTRIBUTES);
    let new_attrs = (attrs & !ATTR_TIMESTAMP_TYPE) | ts_type.attr_bit();
    if new_attrs == attrs && be_i64(header, MAX_TIMESTAMP) == max_ts {
        return false;
    }
    header[ATTRIBUTES..ATTRIBUTES + 2].copy_from_slice(&new_attrs.to_be_bytes());
    header[MAX_TIMESTAMP..MAX_TIMESTAMP + 8].copy_from_slice(&max_ts.to_be_bytes());
    true
}

/// Recomputes and stores the CRC-32C over `batch[21..]`.
pub fn recompute_crc(batch: &mut [u8]) {
    assert_batch(batch);
    let crc = crate::crc::crc32c(&batch[ATTRIBUTES..]);
    batch[CRC..CRC + 4].copy_from_slice(&crc.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::{BatchBuilder, BatchOptions};

    fn sample() -> Vec<u8> {
        let mut b = BatchBuilder::new(BatchOptions::default());
        b.append(1_000, Some(b"k"), Some(b"v"), &[]);
        b.append(900, None, Some(b"v2"), &[]);
        b.build().unwrap()
    }

    #[test]
    fn peek_and_new_framing() {
        let b = sample();
        assert_eq!(peek_batch_size(&b).unwrap(), Some(b.len()));
        assert_eq!(peek_batch_size(&b[..11]).unwrap(), None);
        let v = BatchView::new(&b).unwrap();
        assert_eq!(v.size(), b.len());
        assert_eq!(v.batch_length() as usize, b.len() - 12);
        assert!(matches!(
            BatchView::new(&b[..11]),
            Err(RecordError::Truncated { .. })
        ));
        assert!(matches!(
            BatchView::new(&b[..b.len() - 1]),
            Err(RecordError::InvalidBatchLength(_))
        ));
        let mut longer = b.clone();
        longer.push(0);
        assert!(matches!(
            BatchView::new(&longer),
            Err(RecordError::InvalidBatchLength(_))
        ));
        let mut short = b.clone();
        short[8..12].copy_from_slice(&48i32.to_be_bytes());
        assert_eq!(
            peek_batch_size(&short),
            Err(RecordError::InvalidBatchLength(48))
        );
        let mut v1 = b.clone();
        v1[MAGIC] = 1;
        assert_eq!(
            BatchView::new(&v1).unwrap_err(),
            RecordError::UnsupportedMagic(1)
        );
    }

    #[test]
    fn header_getters() {
        let b = sample();
        let v = BatchView::new(&b).unwrap();
        assert_eq!(v.base_offset(), 0);
        assert_eq!(v.magic(), 2);
        assert_eq!(v.partition_leader_epoch(), -1);
        assert_eq!(v.last_offset_delta(), 1);
        assert_eq!(v.records_count(), 2);
        assert_eq!(v.base_timestamp(), 1_000);
        assert_eq!(v.max_timestamp(), 1_000);
        assert_eq!(v.producer_id(), -1);
        assert_eq!(v.producer_epoch(), -1);
        assert_eq!(v.base_sequence(), -1);
        assert_eq!(v.last_offset(), 1);
        assert_eq!(v.next_offset(), 2);
        assert_eq!(v.compression().unwrap(), Compression::None);
        assert_eq!(v.timestamp_type(), TimestampType::CreateTime);
        assert!(!v.is_transactional() && !v.is_control() && !v.has_delete_horizon());
        assert_eq!(v.delete_horizon_ms(), None);
        v.verify_crc().unwrap();
    }

    #[test]
    fn iterates_batches_and_stops_at_truncation() {
        let one = sample();
        let mut region = one.clone();
        region.extend_from_slice(&one);
        let got: Vec<_> = batches(&region).map(|r| r.unwrap().0).collect();
        assert_eq!(got, vec![0, one.len()]);

        region.extend_from_slice(&one[..30]);
        let mut it = batches(&region);
        assert!(it.next().unwrap().is_ok());
        assert!(it.next().unwrap().is_ok());
        assert_eq!(
            it.next().unwrap().unwrap_err(),
            RecordError::Truncated {
                needed: one.len(),
                available: 30
            }
        );
        assert_eq!(it.position(), 2 * one.len());
        assert!(it.next().is_none());

        let mut it = batches(&one[..5]);
        assert!(matches!(
            it.next(),
            Some(Err(RecordError::Truncated { .. }))
        ));
        assert!(it.next().is_none());
        assert!(batches(&[]).next().is_none());
    }

    #[test]
    fn mutators_patch_in_place() {
        let mut b = sample();
        let crc0 = BatchView::new(&b).unwrap().crc();
        set_base_offset(&mut b, 42);
        set_partition_leader_epoch(&mut b, 7);
        let v = BatchView::new(&b).unwrap();
        assert_eq!(
            (v.base_offset(), v.partition_leader_epoch(), v.crc()),
            (42, 7, crc0)
        );
        assert_eq!(v.last_offset(), 43);
        v.verify_crc().unwrap();

        // Unchanged type and max timestamp: bytes untouched.
        let before = b.clone();
        set_max_timestamp(&mut b, TimestampType::CreateTime, 1_000);
        assert_eq!(b, before);

        // New max timestamp: CRC recomputed.
        set_max_timestamp(&mut b, TimestampType::CreateTime, 5_000);
        let v = BatchView::new(&b).unwrap();
        assert_eq!(v.max_timestamp(), 5_000);
        assert_ne!(v.crc(), crc0);
        v.verify_crc().unwrap();

        // Only the type changes: bit 3 set, CRC recomputed, other attributes kept.
        let crc1 = v.crc();
        set_max_timestamp(&mut b, TimestampType::LogAppendTime, 5_000);
        let v = BatchView::new(&b).unwrap();
        assert_eq!(v.timestamp_type(), TimestampType::LogAppendTime);
        assert_eq!(v.attributes(), ATTR_TIMESTAMP_TYPE);
        assert_ne!(v.crc(), crc1);
        v.verify_crc().unwrap();
        set_max_timestamp(&mut b, TimestampType::CreateTime, 5_000);
        assert_eq!(BatchView::new(&b).unwrap().attributes(), 0);
        assert_eq!(BatchView::new(&b).unwrap().crc(), crc1);
    }

    #[test]
    fn split_mutator_matches_the_whole_batch_one() {
        for (ts_type, max_ts) in [
            (TimestampType::CreateTime, 1_000), // unchanged
            (TimestampType::CreateTime, 7_777),
            (TimestampType::LogAppendTime, 1_000),
            (TimestampType::LogAppendTime, -1),
        ] {
            let mut whole = sample();
            set_max_timestamp(&mut whole, ts_type, max_ts);
            let original = sample();
            let mut header = [0u8; BATCH_HEADER_BYTES];
            header.copy_from_slice(&original[..BATCH_HEADER_BYTES]);
            let changed = set_max_timestamp_split(
                &mut header,
                &original[BATCH_HEADER_BYTES..],
                ts_type,
                max_ts,
            );
            assert_eq!(changed, whole != original, "{ts_type:?} {max_ts}");
            assert_eq!(
                header[..],
                whole[..BATCH_HEADER_BYTES],
                "{ts_type:?} {max_ts}"
            );
            BatchView::new(&whole).unwrap().verify_crc().unwrap();
        }
    }

    #[test]
    #[should_panic(expected = "whole batch")]
    fn mutator_on_short_slice_is_a_programmer_error() {
        set_base_offset(&mut [0u8; 10], 1);
    }
}
