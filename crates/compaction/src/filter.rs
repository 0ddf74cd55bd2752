//! Which records of one batch survive a clean, and the batch written for them (spec §3.1
//! "Copying", "Tombstones", "Batches that are kept even when empty"; §3.3).
//!
//! Rules per record at offset `o` with key `k`, given the key map built over
//! `[map start, map end)`:
//! * `o >= map end`: kept (not examined this pass);
//! * no key: dropped (a compacted log cannot hold keyless records);
//! * `k` not in the map: kept (offset strategy: the key only occurs in the clean section);
//! * otherwise kept only if it is the key's winner (`map[k].offset == o`): superseded records
//!   and losing tombstones go at once;
//! * a kept tombstone is dropped when its batch carries a delete horizon (attribute bit 6)
//!   that `now` has reached; a kept tombstone in a batch without one gets
//!   `now + delete.retention.ms` as horizon (so it survives at least that long).
//!
//! A batch keeps its base offset, lastOffsetDelta, producer fields, leader epoch, codec and
//! timestamp type; record offset and timestamp deltas are kept (gaps appear). A batch with no
//! surviving record is dropped unless it is retained: an active producer's last batch (so
//! idempotent producers keep their sequence) or the last batch of an output segment (so the
//! segment's last offset, and the log's, never move). Retained empty batches have
//! recordsCount 0, baseTimestamp -1 (or the horizon) and keep maxTimestamp.
//!
//! Transactions (issue 18, [`crate::txn`] decides): a batch of an aborted transaction loses
//! every record below the map end (the key map never saw them), retained empty like any other
//! batch. A control batch ([`filter_marker`]) is copied unchanged unless its transaction has no
//! data left ("removable") and it lies below the map end: then, like a tombstone, it first gets
//! a delete horizon (`now + delete.retention.ms`, re-encoded with its record as it was) and is
//! dropped by the first clean at or past that horizon, unless retained (then kept whole, never
//! emptied, so log replay still reads its marker). A batch nothing changes in is copied byte for byte; one that only
//! loses records keeps its baseTimestamp and gets the surviving records' bytes as they were
//! (only a new delete horizon, which moves every timestamp delta, re-encodes the records).
//!
//! Pure: bytes + map + `now` in, bytes out.

use skiff_record::{
    BatchBuilder, BatchOptions, BatchView, RecordError, TimestampType, records, set_max_timestamp,
};
use skiff_storage::LogConfig;

use crate::keymap::KeyMap;

/// What a batch becomes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BatchOutcome {
    /// Copied as it is.
    Unchanged,
    /// Replaced by these bytes (same offsets).
    Rewritten(Vec<u8>),
    /// Nothing of it is kept.
    Dropped,
}

/// Inputs shared by every batch of one clean.
#[derive(Debug)]
pub struct FilterContext<'a> {
    pub map: &'a KeyMap,
    pub map_end: i64,
    pub now_ms: i64,
    pub config: &'a LogConfig,
    /// Bound on a batch's decompressed size.
    pub max_records_bytes: usize,
}

/// Per-batch counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FilterCounts {
    pub records_in: u64,
    pub records_removed: u64,
    pub tombstones_removed: u64,
    /// Records removed because their transaction was aborted (also in `records_removed`).
    pub aborted_removed: u64,
    /// Transaction markers removed.
    pub markers_removed: u64,
}

/// Filters one batch of data (a control batch is copied unchanged; see [`filter_marker`]).
/// `retain` keeps it (emptied if need be) even if no record survives.
pub fn filter_batch(
    ctx: &FilterContext<'_>,
    batch: &[u8],
    retain: bool,
    counts: &mut FilterCounts,
) -> Result<BatchOutcome, RecordError> {
    filter_data_batch(ctx, batch, retain, false, counts)
}

/// What becomes of a control batch: `removable` when no data of its transaction is left before
/// it ([`crate::txn::MarkerVerdict`]); `retain` keeps it (whole) even once removable and past
/// its delete horizon.
pub fn filter_marker(
    ctx: &FilterContext<'_>,
    batch: &[u8],
    removable: bool,
    retain: bool,
    counts: &mut FilterCounts,
) -> Result<BatchOutcome, RecordError> {
    let view = BatchView::new(batch)?;
    if !removable || view.last_offset() >= ctx.map_end {
        return Ok(BatchOutcome::Unchanged);
    }
    match view.delete_horizon_ms() {
        Some(h) if ctx.now_ms >= h && !retain => {
            counts.markers_removed += 1;
            Ok(BatchOutcome::Dropped)
        }
        Some(_) => Ok(BatchOutcome::Unchanged),
        None => {
            let data = view.records_data(ctx.max_records_bytes)?;
            let kept = records(&data, view.records_count()).collect::<Result<Vec<_>, _>>()?;
            let horizon = ctx.now_ms.saturating_add(ctx.config.delete_retention_ms);
            rebuild(ctx, &view, &kept, Some(horizon)).map(BatchOutcome::Rewritten)
        }
    }
}

/// Filters one data batch; `aborted`: it belongs to an aborted transaction, so no record below
/// the map end survives.
pub fn filter_data_batch(
    ctx: &FilterContext<'_>,
    batch: &[u8],
    retain: bool,
    aborted: bool,
    counts: &mut FilterCounts,
) -> Result<BatchOutcome, RecordError> {
    let view = BatchView::new(batch)?;
    if view.is_control() {
        return Ok(BatchOutcome::Unchanged);
    }
    let data = view.records_data(ctx.max_records_bytes)?;
    let horizon = view.delete_horizon_ms();
    let mut kept = Vec::new();
    // Byte range of each kept record in `data` (for the verbatim copy below).
    let mut spans = Vec::new();
    let mut cursor = 0usize;
    let mut kept_tombstone = false;
    let mut n = 0u64;
    for rec in records(&data, view.records_count()) {
        let rec = rec?;
        n += 1;
        let span = record_span(&data, cursor)?;
        cursor = span.end;
        let offset = view.record_offset(&rec);
        // Past the key map's end a record is kept as it is, tombstone or not (Kafka's
        // `shouldRetainRecord` checks this first): the map knows nothing of it yet.
        let past_map = offset >= ctx.map_end;
        let winner = past_map
            || (!aborted
                && rec
                    .key
                    .is_some_and(|k| ctx.map.get(k).is_none_or(|w| w.offset == offset)));
        counts.aborted_removed += u64::from(aborted && !past_map);
        let expired_tombstone =
            !past_map && rec.value.is_none() && horizon.is_some_and(|h| ctx.now_ms >= h);
        if winner && !expired_tombstone {
            kept_tombstone |= rec.value.is_none() && !past_map;
            kept.push(rec);
            spans.push(span);
        } else if rec.value.is_none() {
            counts.tombstones_removed += 1;
        }
    }
    counts.records_in += n;
    counts.records_removed += n - kept.len() as u64;
    let needs_horizon = kept_tombstone && horizon.is_none();
    if kept.len() as u64 == n && !needs_horizon {
        return Ok(BatchOutcome::Unchanged);
    }
    let producer_retained = retain;
    if kept.is_empty() && !producer_retained {
        return Ok(BatchOutcome::Dropped);
    }
    let codec = view.compression()?;
    let delete_horizon_ms = match horizon {
        Some(h) => Some(h),
        None if kept_tombstone => Some(ctx.now_ms.saturating_add(ctx.config.delete_retention_ms)),
        None => None,
    };
    if !kept.is_empty() && delete_horizon_ms == horizon {
        return verbatim(ctx, &view, &data, &kept, &spans, codec).map(BatchOutcome::Rewritten);
    }
    rebuild(ctx, &view, &kept, delete_horizon_ms).map(BatchOutcome::Rewritten)
}

/// The batch re-encoded around `kept` (its header fields, control flag included, kept) with
/// `delete_horizon_ms`.
fn rebuild(
    ctx: &FilterContext<'_>,
    view: &BatchView<'_>,
    kept: &[skiff_record::Record<'_>],
    delete_horizon_ms: Option<i64>,
) -> Result<Vec<u8>, RecordError> {
    let codec = view.compression()?;
    let mut b = BatchBuilder::new(BatchOptions {
        base_offset: view.base_offset(),
        partition_leader_epoch: view.partition_leader_epoch(),
        compression: codec,
        compression_level: ctx.config.level_for(codec),
        timestamp_type: view.timestamp_type(),
        is_transactional: view.is_transactional(),
        is_control: view.is_control(),
        producer_id: view.producer_id(),
        producer_epoch: view.producer_epoch(),
        base_sequence: view.base_sequence(),
        delete_horizon_ms,
    });
    for rec in kept {
        // The raw timestamp (base + delta) keeps LogAppendTime deltas too.
        let ts = view.base_timestamp().wrapping_add(rec.timestamp_delta);
        b.append_with_offset_delta(rec.offset_delta, ts, rec.key, rec.value, &rec.headers);
    }
    b.set_last_offset_delta(view.last_offset_delta());
    let mut out = b.build()?;
    if kept.is_empty() || view.timestamp_type() == TimestampType::LogAppendTime {
        set_max_timestamp(&mut out, view.timestamp_type(), view.max_timestamp());
    }
    Ok(out)
}

/// The byte range of the record starting at `at` (its length prefix included).
fn record_span(data: &[u8], at: usize) -> Result<std::ops::Range<usize>, RecordError> {
    let mut rest = data.get(at..).unwrap_or_default();
    let before = rest.len();
    let len = skiff_record::varint::read_varint(&mut rest)?;
    let prefix = before - rest.len();
    let end = usize::try_from(len)
        .ok()
        .and_then(|l| at.checked_add(prefix)?.checked_add(l))
        .filter(|e| *e <= data.len())
        .ok_or_else(|| RecordError::MalformedRecord(format!("record length {len} at {at}")))?;
    Ok(at..end)
}

/// The batch rebuilt around the kept records' bytes, copied as they are: the base timestamp
/// (the deltas' reference) and every other header field stay, except recordsCount, the CRC
/// and, for CreateTime, maxTimestamp (the kept records' maximum). Only valid when the delete
/// horizon does not change.
fn verbatim(
    ctx: &FilterContext<'_>,
    view: &BatchView<'_>,
    data: &[u8],
    kept: &[skiff_record::Record<'_>],
    spans: &[std::ops::Range<usize>],
    codec: skiff_record::Compression,
) -> Result<Vec<u8>, RecordError> {
    let mut body = Vec::with_capacity(spans.iter().map(|s| s.len()).sum());
    for s in spans {
        body.extend_from_slice(&data[s.clone()]);
    }
    let mut out = skiff_record::reencode(view, &body, codec, ctx.config.level_for(codec))?;
    let count = i32::try_from(kept.len()).unwrap_or(i32::MAX);
    out[RECORDS_COUNT_AT..RECORDS_COUNT_AT + 4].copy_from_slice(&count.to_be_bytes());
    if view.timestamp_type() == TimestampType::CreateTime {
        let max = kept
            .iter()
            .map(|r| view.record_timestamp(r))
            .max()
            .unwrap_or(-1);
        out[MAX_TIMESTAMP_AT..MAX_TIMESTAMP_AT + 8].copy_from_slice(&max.to_be_bytes());
    }
    skiff_record::recompute_crc(&mut out);
    Ok(out)
}

/// Header byte offsets: the record crate's one layout (spec §0.2).
const MAX_TIMESTAMP_AT: usize = skiff_record::layout::MAX_TIMESTAMP;
const RECORDS_COUNT_AT: usize = skiff_record::layout::RECORDS_COUNT;

#[cfg(test)]
#[path = "filter_tests.rs"]
mod tests;
