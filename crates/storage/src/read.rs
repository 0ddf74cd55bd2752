//! Reading a log: fetch regions and offset-for-timestamp lookups (spec §2.4, §1.6).
//!
//! Mental model: a read never splits a batch at its start. It finds the segment holding the
//! fetch offset, uses the sparse offset index to get near it, scans batch headers to the first
//! batch whose last offset reaches it, and returns the byte range from there up to `max_bytes`
//! (whole first batch even if larger, when `min_one_message`) and never past the byte position of
//! the caller's upper bound (HW/LSO for consumers, the log end for replicas). The bytes are not
//! copied: the caller gets a [`FileSlice`] to `sendfile`.
//!
//! Corruption (issue 12): a fetch offset inside a quarantined range is
//! [`StorageError::Quarantined`] (CORRUPT_MESSAGE); a read before one ends before its first
//! byte; damaged bytes left in a file are jumped over by the header scan. A header scan that
//! stops at lost framing inside a segment records the unaccounted offsets (up to the next
//! segment's base) as quarantined and answers that error, instead of moving on to the next
//! segment. The cost on the normal path is one range lookup; no CRC is computed.
//!
//! Timestamp lookups follow Kafka exactly: first segment whose largest timestamp reaches the
//! target, time index to an offset, offset index to a position, then a scan of batches (skipping
//! those whose max timestamp is below the target) and of records in the first batch that can hold
//! it. Answers at or beyond the caller's bound are "not found" so uncommitted data never leaks.

use skiff_record::BatchView;
use skiff_types::limits::DECOMPRESSED_BATCH_BYTES_MAX;

use crate::error::{IoContext, Result, StorageError};
use crate::integrity::quarantine::QuarantinedRange;
use crate::log::Log;
use crate::segment::{FileSlice, LogSegment, Translated};

fn quarantined_error(q: &QuarantinedRange) -> StorageError {
    StorageError::Quarantined {
        start: q.start_offset,
        end: q.end_offset,
        reason: q.reason.as_str(),
    }
}

/// Kafka's ListOffsets special timestamps.
pub const LATEST_TIMESTAMP: i64 = -1;
pub const EARLIEST_TIMESTAMP: i64 = -2;
pub const MAX_TIMESTAMP: i64 = -3;

/// The answer to a fetch read.
#[derive(Clone, Debug)]
pub struct ReadResult {
    /// `None` when there is nothing to return below the bound.
    pub slice: Option<FileSlice>,
    /// Base offset of the first batch in the slice.
    pub first_batch_offset: i64,
}

/// An offset-for-timestamp answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimestampOffset {
    pub offset: i64,
    pub timestamp: i64,
    pub leader_epoch: Option<i32>,
}

impl Log {
    /// Reads from `fetch_offset` up to `max_bytes`, never at or past offset `upper_bound`.
    pub fn read(
        &self,
        fetch_offset: i64,
        max_bytes: usize,
        upper_bound: i64,
        min_one_message: bool,
    ) -> Result<ReadResult> {
        if fetch_offset < self.log_start_offset || fetch_offset > self.log_end_offset {
            return Err(StorageError::OffsetOutOfRange {
                offset: fetch_offset,
                log_start: self.log_start_offset,
                log_end: self.log_end_offset,
            });
        }
        let empty = ReadResult {
            slice: None,
            first_batch_offset: fetch_offset,
        };
        let mut bound = upper_bound.min(self.log_end_offset);
        // issue 12: a quarantined range is never served; a read before it stops at it.
        let quarantined = self.integrity.lock().quarantine.next_from(fetch_offset);
        if let Some(q) = quarantined {
            if q.start_offset <= fetch_offset {
                return Err(quarantined_error(&q));
            }
            bound = bound.min(q.start_offset);
        }
        if fetch_offset >= bound {
            return Ok(empty);
        }
        let start_base = self
            .segments
            .range(..=fetch_offset)
            .next_back()
            .map_or(fetch_offset, |(b, _)| *b);
        for (_, seg) in self.segments.range(start_base..) {
            if seg.base_offset() >= bound {
                break;
            }
            let skips = self.integrity.lock().quarantine.skips_in(seg.base_offset());
            let h = match seg.translate_for_read(fetch_offset, skips.clone())? {
                Translated::Found(h) => h,
                // a gap (compaction) or an empty segment: try the next one
                Translated::End => continue,
                Translated::Damaged => {
                    // issue 12: the scan cannot account for the offsets from here to the next
                    // segment: never skip them silently.
                    let (position, start) = seg
                        .locate_damage(skips)?
                        .unwrap_or((seg.size(), fetch_offset));
                    let q = self.quarantine_from_read(seg.base_offset(), position, start);
                    return Err(quarantined_error(&q));
                }
            };
            if h.base_offset >= bound {
                return Ok(empty);
            }
            let mut max_position = self.bound_position(seg, bound)?;
            if let Some(q) = quarantined.filter(|q| q.segment == seg.base_offset()) {
                max_position = max_position.min(q.position);
            }
            let available = max_position.saturating_sub(h.position);
            let mut len = available.min(max_bytes as u64);
            if min_one_message && len < u64::from(h.size) {
                len = u64::from(h.size).min(available);
            }
            if len == 0 {
                return Ok(empty);
            }
            return Ok(ReadResult {
                slice: Some(FileSlice {
                    file: seg.file().clone(),
                    position: h.position,
                    len,
                }),
                first_batch_offset: h.base_offset,
            });
        }
        Ok(empty)
    }

    /// Byte position in `seg` where offsets ≥ `bound` start (segment end if beyond it).
    fn bound_position(&self, seg: &LogSegment, bound: i64) -> Result<u64> {
        let next_base = self
            .segments
            .range(seg.base_offset() + 1..)
            .next()
            .map(|(b, _)| *b);
        if next_base.is_some_and(|n| bound >= n) || bound >= self.log_end_offset {
            return Ok(seg.size());
        }
        seg.position_of(bound)
    }

    /// ListOffsets for one partition (spec §1.6). `upper_bound` is the last fetchable offset for
    /// the caller (HW for read_uncommitted, LSO for read_committed, log end for replicas).
    /// `Ok(None)` is Kafka's (-1, -1) "not found".
    pub fn offset_for_timestamp(
        &self,
        timestamp: i64,
        upper_bound: i64,
    ) -> Result<Option<TimestampOffset>> {
        let bound = upper_bound.min(self.log_end_offset);
        match timestamp {
            EARLIEST_TIMESTAMP => {
                let epoch = self
                    .epochs
                    .earliest_entry()
                    .filter(|e| e.start_offset <= self.log_start_offset)
                    .map(|e| e.epoch);
                Ok(Some(TimestampOffset {
                    offset: self.log_start_offset,
                    timestamp: -1,
                    leader_epoch: epoch,
                }))
            }
            LATEST_TIMESTAMP => Ok(Some(TimestampOffset {
                offset: bound,
                timestamp: -1,
                leader_epoch: self.epochs.latest_epoch(),
            })),
            MAX_TIMESTAMP => self.max_timestamp_offset(bound),
            t if t >= 0 => self.first_offset_at_or_after(t, bound),
            _ => Err(StorageError::InvalidArgument(format!(
                "unsupported timestamp {timestamp}"
            ))),
        }
    }

    fn first_offset_at_or_after(&self, target: i64, bound: i64) -> Result<Option<TimestampOffset>> {
        let start = self.log_start_offset;
        let Some(seg) = self
            .segments
            .values()
            .find(|s| s.max_timestamp().is_some_and(|m| m >= target))
        else {
            return Ok(None);
        };
        let (_, ts_offset) = seg.time_index().lookup(target);
        let (_, pos) = seg.offset_index().lookup(ts_offset.max(start));
        let mut scan = seg.headers_from(u64::from(pos).min(seg.size()));
        while let Some(h) = scan.next_header().at(seg.log_path())? {
            if h.max_timestamp < target || h.last_offset < start {
                continue;
            }
            let bytes = seg.read_batch(&h)?;
            if let Some(found) = scan_records(&bytes, seg, h.position, |off, ts| {
                ts >= target && off >= start
            })? {
                return Ok((found.offset < bound).then_some(found));
            }
        }
        Ok(None)
    }

    fn max_timestamp_offset(&self, bound: i64) -> Result<Option<TimestampOffset>> {
        let mut best: Option<&LogSegment> = None;
        for seg in self.segments.values() {
            if seg
                .max_timestamp()
                .is_some_and(|m| best.is_none_or(|b| m > b.max_timestamp().unwrap_or(-1)))
            {
                best = Some(seg);
            }
        }
        let Some(seg) = best else { return Ok(None) };
        let Some(max_ts) = seg.max_timestamp() else {
            return Ok(None);
        };
        let start = self.log_start_offset;
        let mut scan = seg.headers_from(0);
        while let Some(h) = scan.next_header().at(seg.log_path())? {
            if h.max_timestamp != max_ts || h.last_offset < start {
                continue;
            }
            let bytes = seg.read_batch(&h)?;
            if let Some(found) = scan_records(&bytes, seg, h.position, |off, ts| {
                ts == max_ts && off >= start
            })? {
                return Ok((found.offset < bound).then_some(found));
            }
        }
        Ok(None)
    }
}

/// The first record of a batch matching `pred(offset, timestamp)`.
fn scan_records(
    bytes: &[u8],
    seg: &LogSegment,
    position: u64,
    pred: impl Fn(i64, i64) -> bool,
) -> Result<Option<TimestampOffset>> {
    let corrupt = |reason: String| StorageError::Corrupt {
        path: seg.log_path().display().to_string(),
        position,
        reason,
    };
    let view = BatchView::new(bytes).map_err(|e| corrupt(e.to_string()))?;
    let data = view
        .records_data(DECOMPRESSED_BATCH_BYTES_MAX)
        .map_err(|e| corrupt(e.to_string()))?;
    for rec in skiff_record::records(&data, view.records_count()) {
        let rec = rec.map_err(|e| corrupt(e.to_string()))?;
        let offset = view.base_offset() + i64::from(rec.offset_delta);
        let ts = view.record_timestamp(&rec);
        if pred(offset, ts) {
            let epoch = view.partition_leader_epoch();
            return Ok(Some(TimestampOffset {
                offset,
                timestamp: ts,
                leader_epoch: (epoch >= 0).then_some(epoch),
            }));
        }
    }
    Ok(None)
}
