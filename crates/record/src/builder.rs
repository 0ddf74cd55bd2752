//! Encoding new batches: [`BatchBuilder`] (client-side encoding for tests, compaction output
//! and the leader's rebuild path) and [`recompress`] / [`reencode`] (same records, another
//! codec).
//!
//! The builder encodes each appended record into an uncompressed buffer immediately (deltas
//! are relative to the first record's timestamp, or to the delete horizon when one is set,
//! exactly as Kafka's `MemoryRecordsBuilder`), then `build` compresses once and writes the
//! header and CRC. Programmer-visible misuse that can be caused by data (non-increasing
//! offset deltas, fields longer than `i32::MAX`) is remembered and reported by `build`
//! instead of panicking. Not thread-safe to share while appending (it is `&mut self`).

use skiff_types::limits::{BATCH_HEADER_BYTES, LOG_OVERHEAD_BYTES};

use crate::MAGIC_V2;
use crate::batch::{BatchView, TimestampType, layout::*, recompute_crc};
use crate::compression::{Compression, compress};
use crate::error::RecordError;
use crate::record::{Header, encode_record};

/// Header fields of a batch to build.
#[derive(Clone, Debug)]
pub struct BatchOptions {
    pub base_offset: i64,
    pub partition_leader_epoch: i32,
    pub compression: Compression,
    /// `None` = the codec's Kafka default level.
    pub compression_level: Option<i32>,
    pub timestamp_type: TimestampType,
    pub is_transactional: bool,
    pub is_control: bool,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    /// Sets attribute bit 6 and stores the horizon in `baseTimestamp`.
    pub delete_horizon_ms: Option<i64>,
}

impl Default for BatchOptions {
    fn default() -> Self {
        Self {
            base_offset: 0,
            partition_leader_epoch: -1,
            compression: Compression::None,
            compression_level: None,
            timestamp_type: TimestampType::CreateTime,
            is_transactional: false,
            is_control: false,
            producer_id: -1,
            producer_epoch: -1,
            base_sequence: -1,
            delete_horizon_ms: None,
        }
    }
}

/// Builds one v2 batch.
#[derive(Clone, Debug)]
pub struct BatchBuilder {
    opts: BatchOptions,
    records: Vec<u8>,
    count: usize,
    base_timestamp: Option<i64>,
    max_timestamp: i64,
    last_offset_delta: Option<i32>,
    last_offset_delta_override: Option<i32>,
    error: Option<RecordError>,
}

impl BatchBuilder {
    pub fn new(opts: BatchOptions) -> Self {
        Self {
            base_timestamp: opts.delete_horizon_ms,
            opts,
            records: Vec::new(),
            count: 0,
            max_timestamp: -1,
            last_offset_delta: None,
            last_offset_delta_override: None,
            error: None,
        }
    }

    /// Appends a record at the next consecutive offset delta.
    pub fn append(
        &mut self,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[Header<'_>],
    ) {
        let delta = match self.last_offset_delta {
            None => 0,
            Some(d) => d.saturating_add(1),
        };
        self.append_with_offset_delta(delta, timestamp, key, value, headers);
    }

    /// Appends a record at an explicit offset delta, which must be greater than the previous
    /// one (compaction keeps gaps). A violation makes `build` fail.
    pub fn append_with_offset_delta(
        &mut self,
        offset_delta: i32,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[Header<'_>],
    ) {
        if self.error.is_some() {
            return;
        }
        if offset_delta < 0 || self.last_offset_delta.is_some_and(|d| offset_delta <= d) {
            self.error = Some(RecordError::MalformedRecord(format!(
                "offset delta {offset_delta} after {:?} is not increasing",
                self.last_offset_delta
            )));
            return;
        }
        let base = *self.base_timestamp.get_or_insert(timestamp);
        let ts_delta = timestamp.wrapping_sub(base);
        if let Err(e) = encode_record(
            &mut self.records,
            ts_delta,
            offset_delta,
            key,
            value,
            headers,
        ) {
            self.error = Some(e);
            return;
        }
        self.count += 1;
        self.max_timestamp = self.max_timestamp.max(timestamp);
        self.last_offset_delta = Some(offset_delta);
    }

    /// Overrides `lastOffsetDelta` (compaction keeps the original even if trailing records
    /// were removed).
    pub fn set_last_offset_delta(&mut self, d: i32) {
        self.last_offset_delta_override = Some(d);
    }

    /// Number of records appended.
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Bytes of uncompressed records appended so far.
    pub fn uncompressed_records_bytes(&self) -> usize {
        self.records.len()
    }

    /// Encodes the batch. `baseTimestamp` = first record's timestamp (or the delete horizon,
    /// or -1 when empty); `maxTimestamp` = max(-1, record timestamps) as in Kafka;
    /// `lastOffsetDelta` = the override, else the last appended delta, else 0.
    pub fn build(self) -> Result<Vec<u8>, RecordError> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let count = i32::try_from(self.count)
            .map_err(|_| RecordError::MalformedRecord(format!("{} records", self.count)))?;
        let payload = compress(
            self.opts.compression,
            self.opts.compression_level,
            &self.records,
        )?;
        let mut attrs = i16::from(self.opts.compression.id());
        if self.opts.timestamp_type == TimestampType::LogAppendTime {
            attrs |= ATTR_TIMESTAMP_TYPE;
        }
        if self.opts.is_transactional {
            attrs |= ATTR_TRANSACTIONAL;
        }
        if self.opts.is_control {
            attrs |= ATTR_CONTROL;
        }
        if self.opts.delete_horizon_ms.is_some() {
            attrs |= ATTR_DELETE_HORIZON;
        }
        let header = Header61 {
            base_offset: self.opts.base_offset,
            partition_leader_epoch: self.opts.partition_leader_epoch,
            attributes: attrs,
            last_offset_delta: self
                .last_offset_delta_override
                .or(self.last_offset_delta)
                .unwrap_or(0),
            base_timestamp: self.base_timestamp.unwrap_or(-1),
            max_timestamp: self.max_timestamp,
            producer_id: self.opts.producer_id,
            producer_epoch: self.opts.producer_epoch,
            base_sequence: self.opts.base_sequence,
            records_count: count,
        };
        header.assemble(self.opts.compression, &payload)
    }
}

/// Every header field except magic, length and CRC, which `assemble` derives.
struct Header61 {
    base_offset: i64,
    partition_leader_epoch: i32,
    attributes: i16,
    last_offset_delta: i32,
    base_timestamp: i64,
    max_timestamp: i64,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
    records_count: i32,
}

impl Header61 {
    fn from_view(v: &BatchView<'_>) -> Self {
        Self {
            base_offset: v.base_offset(),
            partition_leader_epoch: v.partition_leader_epoch(),
            attributes: v.attributes(),
            last_offset_delta: v.last_offset_delta(),
            base_timestamp: v.base_timestamp(),
            max_timestamp: v.max_timestamp(),
            producer_id: v.producer_id(),
            producer_epoch: v.producer_epoch(),
            base_sequence: v.base_sequence(),
            records_count: v.records_count(),
        }
    }

    fn assemble(&self, codec: Compression, payload: &[u8]) -> Result<Vec<u8>, RecordError> {
        let total = BATCH_HEADER_BYTES + payload.len();
        let batch_length =
            i32::try_from(total - LOG_OVERHEAD_BYTES).map_err(|_| RecordError::Compress {
                codec,
                reason: format!("batch of {total} bytes does not fit a v2 batch"),
            })?;
        let mut out = Vec::with_capacity(total);
        out.extend_from_slice(&self.base_offset.to_be_bytes());
        out.extend_from_slice(&batch_length.to_be_bytes());
        out.extend_from_slice(&self.partition_leader_epoch.to_be_bytes());
        out.push(MAGIC_V2 as u8);
        out.extend_from_slice(&[0; 4]); // CRC, filled below
        out.extend_from_slice(&self.attributes.to_be_bytes());
        out.extend_from_slice(&self.last_offset_delta.to_be_bytes());
        out.extend_from_slice(&self.base_timestamp.to_be_bytes());
        out.extend_from_slice(&self.max_timestamp.to_be_bytes());
        out.extend_from_slice(&self.producer_id.to_be_bytes());
        out.extend_from_slice(&self.producer_epoch.to_be_bytes());
        out.extend_from_slice(&self.base_sequence.to_be_bytes());
        out.extend_from_slice(&self.records_count.to_be_bytes());
        debug_assert_eq!(out.len(), BATCH_HEADER_BYTES);
        out.extend_from_slice(payload);
        recompute_crc(&mut out);
        Ok(out)
    }
}

/// Builds a batch with `batch`'s header fields (except the codec bits) around an already
/// decompressed `records_data`, compressed with `target`; new length and CRC. The record
/// bytes are moved as they are (not re-parsed): timestamps, deltas and headers are preserved.
pub fn reencode(
    batch: &BatchView<'_>,
    records_data: &[u8],
    target: Compression,
    level: Option<i32>,
) -> Result<Vec<u8>, RecordError> {
    let payload = compress(target, level, records_data)?;
    let mut header = Header61::from_view(batch);
    header.attributes = (header.attributes & !ATTR_COMPRESSION_MASK) | i16::from(target.id());
    header.assemble(target, &payload)
}

/// Re-encodes a batch's records with another codec, same header fields otherwise (new CRC).
/// Decompression is bounded by `max_bytes`; records are not re-validated.
pub fn recompress(
    batch: &BatchView<'_>,
    target: Compression,
    level: Option<i32>,
    max_bytes: usize,
) -> Result<Vec<u8>, RecordError> {
    let data = batch.records_data(max_bytes)?;
    reencode(batch, &data, target, level)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::records;

    #[test]
    fn empty_batch() {
        let b = BatchBuilder::new(BatchOptions::default()).build().unwrap();
        assert_eq!(b.len(), BATCH_HEADER_BYTES);
        let v = BatchView::new(&b).unwrap();
        v.verify_crc().unwrap();
        assert_eq!(
            (v.records_count(), v.base_timestamp(), v.max_timestamp()),
            (0, -1, -1)
        );
        assert_eq!(v.last_offset_delta(), 0);
    }

    #[test]
    fn options_reach_the_header() {
        let opts = BatchOptions {
            base_offset: 100,
            partition_leader_epoch: 3,
            compression: Compression::Gzip,
            compression_level: Some(1),
            timestamp_type: TimestampType::LogAppendTime,
            is_transactional: true,
            is_control: true,
            producer_id: 77,
            producer_epoch: 2,
            base_sequence: 9,
            delete_horizon_ms: Some(5_000),
        };
        let mut b = BatchBuilder::new(opts);
        b.append_with_offset_delta(2, 6_000, Some(b"k"), None, &[]);
        b.append_with_offset_delta(5, 7_000, Some(b"k"), None, &[]);
        b.set_last_offset_delta(9);
        let bytes = b.build().unwrap();
        let v = BatchView::new(&bytes).unwrap();
        v.verify_crc().unwrap();
        assert_eq!(v.base_offset(), 100);
        assert_eq!(v.partition_leader_epoch(), 3);
        assert_eq!(v.compression().unwrap(), Compression::Gzip);
        assert_eq!(v.timestamp_type(), TimestampType::LogAppendTime);
        assert!(v.is_transactional() && v.is_control() && v.has_delete_horizon());
        assert_eq!(v.delete_horizon_ms(), Some(5_000));
        assert_eq!(
            (v.producer_id(), v.producer_epoch(), v.base_sequence()),
            (77, 2, 9)
        );
        assert_eq!((v.last_offset_delta(), v.records_count()), (9, 2));
        assert_eq!(v.max_timestamp(), 7_000);
        let data = v.records_data(1 << 20).unwrap();
        let recs: Vec<_> = records(&data, 2).map(Result::unwrap).collect();
        // Deltas relative to the delete horizon.
        assert_eq!(recs[0].timestamp_delta, 1_000);
        assert_eq!(recs[1].timestamp_delta, 2_000);
        assert_eq!((recs[0].offset_delta, recs[1].offset_delta), (2, 5));
        // LogAppendTime: every record reads as maxTimestamp.
        assert_eq!(v.record_timestamp(&recs[0]), 7_000);
    }

    #[test]
    fn non_increasing_offset_delta_fails_build() {
        let mut b = BatchBuilder::new(BatchOptions::default());
        b.append_with_offset_delta(3, 0, None, None, &[]);
        b.append_with_offset_delta(3, 0, None, None, &[]);
        assert!(matches!(b.build(), Err(RecordError::MalformedRecord(_))));
        let mut b = BatchBuilder::new(BatchOptions::default());
        b.append_with_offset_delta(-1, 0, None, None, &[]);
        assert!(b.build().is_err());
    }

    #[test]
    fn max_timestamp_starts_at_no_timestamp() {
        let mut b = BatchBuilder::new(BatchOptions::default());
        b.append(-5, None, None, &[]);
        let bytes = b.build().unwrap();
        let v = BatchView::new(&bytes).unwrap();
        assert_eq!((v.base_timestamp(), v.max_timestamp()), (-5, -1));
    }
}
