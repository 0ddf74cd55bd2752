//! Leader-side validation of a client's Produce data for one partition (Kafka's
//! `LogValidator` + the per-batch checks of `UnifiedLog.analyzeAndValidateRecords` and
//! `ProduceRequest.validateRecords`), as one pure function: bytes + topic config + `now` in,
//! the one batch to append (or a Kafka error code with per-record errors) out. No I/O, no
//! clock, no state; offsets and the leader epoch are stamped later by `Log::append_as_leader`.
//!
//! Checks, in Kafka's order (spec §1.3, §1.4, §2.5; reliability.md rows B10-B13):
//! 1. framing: exactly one whole batch, nothing after it; magic 2 (else INVALID_RECORD; Kafka 4
//!    only accepts Produce v3+, whose validation answers INVALID_RECORD, not
//!    UNSUPPORTED_FOR_MESSAGE_FORMAT); a `batchLength` below the v2 minimum is CORRUPT_MESSAGE
//!    (Kafka's log input stream says "corrupt" for a size under the overhead);
//! 2. `baseOffset == 0` (INVALID_RECORD), size <= `max.message.bytes` (MESSAGE_TOO_LARGE),
//!    CRC-32C (CORRUPT_MESSAGE), a known codec (INVALID_RECORD);
//! 3. `recordsCount == lastOffsetDelta + 1 > 0`, not a control batch, producer id >= 0 needs a
//!    base sequence >= 0 (all INVALID_RECORD);
//! 4. records: decompressed with a cap of `DECOMPRESSED_BATCH_BYTES_MAX`, parsed strictly, offset
//!    deltas exactly 0..n-1. Any failure is INVALID_RECORD. Kafka answers an undecodable
//!    compressed payload with a generic `KafkaException` (UNKNOWN_SERVER_ERROR, non-retriable);
//!    we answer INVALID_RECORD: equally final for the producer, and more precise. We do not
//!    answer CORRUPT_MESSAGE, which is retriable and would make the producer resend the same
//!    undecodable bytes until its delivery timeout. Non-consecutive inner offsets are rejected,
//!    where Kafka would silently rebuild the batch (a pre-v2 client quirk).
//! 5. per record (one error per record, key first as in Kafka): no key on a compacted topic ->
//!    INVALID_RECORD; a producer-set LogAppendTime bit -> INVALID_TIMESTAMP for every record;
//!    CreateTime topic with `ts != -1` outside `[now - before, now + after]` -> INVALID_TIMESTAMP.
//!    Any record error rejects the whole batch; the code is INVALID_TIMESTAMP if any record had a
//!    timestamp error, else INVALID_RECORD, and `record_errors` lists every bad index.
//!    Deviation: Kafka accepts the LogAppendTime bit on a CreateTime topic when the batch's
//!    maxTimestamp is in bounds (and then flips the bit, changing what readers see); we reject
//!    it (Skiff's rule). On a LogAppendTime topic both reject.
//!    Delay-enabled topics (issue 8, [`crate::delivery`]): each record's delay headers are
//!    read in the same walk; a malformed, negative or (policy reject) too long delay is a
//!    record error (INVALID_RECORD) naming the header; the batch's due time is the max.
//! 6. output ([`ValidatedBatch`]: a 61-byte header copy + the records section, borrowed from
//!    the request unless recompressed, so an accepted batch is not copied): the original bytes,
//!    recompressed only if the topic's target codec differs from
//!    the batch's (`TargetCompression::Producer` never recompresses; recompression re-encodes
//!    the same record bytes, see `skiff_record::reencode`); then LogAppendTime topics get bit 3
//!    and `maxTimestamp = now`, CreateTime topics get `maxTimestamp` = the true max
//!    (`max(-1, ts...)`), each with a CRC recompute only when a byte changed. A recompressed
//!    batch is size-checked again (MESSAGE_TOO_LARGE), like Kafka.
//!
//! Steps 4-5 first try one branch-light pass that can only accept (`accept_plain_records`: a
//! CreateTime batch on a topic without delivery delay, well formed, offsets consecutive, keys
//! where compaction needs them, lowest and highest timestamps in bounds); anything it cannot
//! accept, including every rejection, goes record by record, which alone builds errors.
//!
//! Deviation in framing: Kafka's batch iterator silently ignores a partial batch after the
//! first one; we reject any trailing bytes with INVALID_RECORD.

use std::borrow::Cow;

use skiff_record::{
    BATCH_HEADER_BYTES, BatchView, Compression, RecordError, TimestampType, peek_batch_size,
    reencode, set_max_timestamp, set_max_timestamp_split, walk_records,
};
use skiff_types::ErrorCode;

use crate::delivery::{DelayConfig, DelayHeaders, record_due};
use skiff_types::limits::DECOMPRESSED_BATCH_BYTES_MAX;

/// The topic's `compression.type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TargetCompression {
    /// Keep the producer's codec (Kafka's `producer`).
    Producer,
    /// Store with this codec; "uncompressed" is `Codec { codec: Compression::None, .. }`.
    /// `level: None` = the codec's default.
    Codec {
        codec: Compression,
        level: Option<i32>,
    },
}

/// The topic settings validation depends on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidationConfig {
    /// `message.timestamp.type`.
    pub timestamp_type: TimestampType,
    /// `message.timestamp.before.max.ms`.
    pub before_max_ms: i64,
    /// `message.timestamp.after.max.ms`.
    pub after_max_ms: i64,
    /// `compression.type` (+ its level).
    pub compression: TargetCompression,
    /// `max.message.bytes`: the largest batch accepted, in bytes.
    pub max_message_bytes: usize,
    /// `cleanup.policy` contains `compact`: every record needs a key.
    pub compacted: bool,
    /// `delivery.delay.*` when `delivery.delay.enable=true` (issue 8): delay headers are read
    /// and the batch's due time computed. `None`: headers are opaque.
    pub delivery: Option<DelayConfig>,
}

impl Default for ValidationConfig {
    /// Kafka 4.0 topic defaults.
    fn default() -> Self {
        Self {
            timestamp_type: TimestampType::CreateTime,
            before_max_ms: i64::MAX,
            after_max_ms: 3_600_000,
            compression: TargetCompression::Producer,
            max_message_bytes: 1_048_588,
            compacted: false,
            delivery: None,
        }
    }
}

/// One rejected record (ProduceResponse v8+ `RecordErrors`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordErrorEntry {
    /// Index of the record inside the batch.
    pub batch_index: i32,
    pub message: Option<String>,
}

/// Why a batch was rejected: the partition's error code and `ErrorMessage`, plus per-record
/// errors when individual records were at fault.
#[derive(thiserror::Error, Clone, Debug, PartialEq, Eq)]
#[error("{code}: {message}")]
pub struct ValidationError {
    pub code: ErrorCode,
    pub message: String,
    pub record_errors: Vec<RecordErrorEntry>,
}

impl ValidationError {
    fn batch(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            record_errors: Vec::new(),
        }
    }

    fn invalid(message: impl Into<String>) -> Self {
        Self::batch(ErrorCode::InvalidRecord, message)
    }
}

/// A batch that passed validation, ready for [`Log::append_validated`](crate::Log::append_validated).
///
/// Held in two pieces so that an accepted batch is never copied: `header` is a copy of the
/// 61-byte batch header with maxTimestamp, the timestamp-type bit and the CRC already final
/// (`baseOffset` still 0, the leader epoch still the producer's: the log stamps both), `body`
/// the records section, borrowed from the request unless the batch was recompressed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidatedBatch<'a> {
    pub header: [u8; BATCH_HEADER_BYTES],
    pub body: Cow<'a, [u8]>,
    pub record_count: i32,
    pub last_offset_delta: i32,
    /// As stored in the batch after validation.
    pub max_timestamp: i64,
    /// Offset delta of the batch holding the max timestamp: its last offset delta (Kafka
    /// indexes the shallow batch's last offset).
    pub shallow_offset_delta_of_max_timestamp: i32,
    /// `now` if the topic is LogAppendTime, else -1 (ProduceResponse `LogAppendTimeMs`).
    pub log_append_time_ms: i64,
    pub recompressed: bool,
    /// Delay-enabled topics: the batch's due time (max over its records) when it is after
    /// `now` (the append time); `None` = deliverable at once.
    pub deliver_after_ms: Option<i64>,
}

impl ValidatedBatch<'_> {
    /// Size of the whole batch in bytes.
    pub fn size(&self) -> usize {
        BATCH_HEADER_BYTES + self.body.len()
    }

    /// The whole batch in one buffer (a copy), for callers that need contiguous bytes.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.size());
        out.extend_from_slice(&self.header);
        out.extend_from_slice(&self.body);
        out
    }

    /// The same batch owning its body (copies it if borrowed).
    pub fn into_owned(self) -> ValidatedBatch<'static> {
        ValidatedBatch {
            body: Cow::Owned(self.body.into_owned()),
            ..self
        }
    }
}

/// Validates the `records` field of one partition of a client Produce request (v3+). The
/// result borrows the records section from `records_field` unless it had to be recompressed.
pub fn validate_client_batch<'a>(
    records_field: &'a [u8],
    cfg: &ValidationConfig,
    now_ms: i64,
) -> Result<ValidatedBatch<'a>, ValidationError> {
    let view = single_batch(records_field)?;
    check_header(&view, cfg)?;
    let source = view
        .compression()
        .map_err(|e| ValidationError::invalid(format!("Invalid record batch: {e}")))?;
    check_counts_and_producer(&view)?;

    let data = view
        .records_data(DECOMPRESSED_BATCH_BYTES_MAX)
        .map_err(|e| {
            ValidationError::invalid(format!("Failed to decompress record stream: {e}"))
        })?;
    let (true_max_timestamp, batch_due) = check_records(&view, &data, cfg, now_ms)?;

    let (target, level) = match cfg.compression {
        TargetCompression::Producer => (source, None),
        TargetCompression::Codec { codec, level } => (codec, level),
    };
    let (max_timestamp, log_append_time_ms) = match cfg.timestamp_type {
        TimestampType::LogAppendTime => (now_ms, now_ms),
        TimestampType::CreateTime => (true_max_timestamp, -1),
    };
    let recompressed = target != source;
    let (header, body) = if recompressed {
        let mut bytes = reencode(&view, &data, target, level).map_err(|e| {
            ValidationError::batch(
                ErrorCode::UnknownServerError,
                format!(
                    "Failed to recompress the record batch to {}: {e}",
                    target.name()
                ),
            )
        })?;
        set_max_timestamp(&mut bytes, cfg.timestamp_type, max_timestamp);
        if bytes.len() > cfg.max_message_bytes {
            return Err(too_large(bytes.len(), cfg.max_message_bytes));
        }
        let body = bytes.split_off(BATCH_HEADER_BYTES.min(bytes.len()));
        let header = <[u8; BATCH_HEADER_BYTES]>::try_from(bytes.as_slice()).map_err(|_| {
            ValidationError::batch(
                ErrorCode::UnknownServerError,
                "Recompression produced a batch shorter than its header",
            )
        })?;
        (header, Cow::Owned(body))
    } else {
        let (head, body) = view.bytes().split_at(BATCH_HEADER_BYTES);
        let mut header = [0u8; BATCH_HEADER_BYTES];
        header.copy_from_slice(head);
        set_max_timestamp_split(&mut header, body, cfg.timestamp_type, max_timestamp);
        (header, Cow::Borrowed(body))
    };
    Ok(ValidatedBatch {
        header,
        body,
        record_count: view.records_count(),
        last_offset_delta: view.last_offset_delta(),
        max_timestamp,
        shallow_offset_delta_of_max_timestamp: view.last_offset_delta(),
        log_append_time_ms,
        recompressed,
        deliver_after_ms: batch_due.filter(|&due| due > now_ms),
    })
}

/// Step 1: the field must be exactly one v2 batch.
fn single_batch(field: &[u8]) -> Result<BatchView<'_>, ValidationError> {
    const MAGIC_AT: usize = skiff_record::layout::MAGIC;
    if field.is_empty() {
        return Err(ValidationError::invalid(
            "Produce requests must have at least one record batch per partition",
        ));
    }
    if let Some(&magic) = field.get(MAGIC_AT)
        && magic as i8 != skiff_record::MAGIC_V2
    {
        return Err(ValidationError::invalid(format!(
            "Produce requests are only allowed to contain record batches with magic version 2, got {}",
            magic as i8
        )));
    }
    let size = match peek_batch_size(field) {
        Ok(Some(size)) => size,
        Ok(None) => {
            return Err(ValidationError::invalid(format!(
                "Record batch is truncated: {} bytes, not even a batch prefix",
                field.len()
            )));
        }
        Err(e) => {
            return Err(ValidationError::batch(
                ErrorCode::CorruptMessage,
                format!("Record batch is corrupt: {e}"),
            ));
        }
    };
    if size > field.len() {
        return Err(ValidationError::invalid(format!(
            "Record batch is truncated: declares {size} bytes, {} present",
            field.len()
        )));
    }
    if size < field.len() {
        return Err(ValidationError::invalid(format!(
            "Produce requests are only allowed to contain exactly one record batch per \
             partition ({} bytes follow the first batch)",
            field.len() - size
        )));
    }
    BatchView::new(field)
        .map_err(|e| ValidationError::invalid(format!("Invalid record batch: {e}")))
}

fn too_large(size: usize, max: usize) -> ValidationError {
    ValidationError::batch(
        ErrorCode::MessageTooLarge,
        format!(
            "The record batch size in the append is {size} bytes which exceeds the maximum \
             configured value of {max}."
        ),
    )
}

/// Step 2: base offset, size, CRC.
fn check_header(view: &BatchView<'_>, cfg: &ValidationConfig) -> Result<(), ValidationError> {
    if view.base_offset() != 0 {
        return Err(ValidationError::invalid(format!(
            "The baseOffset of the record batch in the append should be 0, but it is {}",
            view.base_offset()
        )));
    }
    if view.size() > cfg.max_message_bytes {
        return Err(too_large(view.size(), cfg.max_message_bytes));
    }
    view.verify_crc().map_err(|e| {
        let detail = match e {
            RecordError::CrcMismatch { stored, computed } => {
                format!("stored crc = {stored}, computed crc = {computed}")
            }
            other => other.to_string(),
        };
        ValidationError::batch(
            ErrorCode::CorruptMessage,
            format!("Record is corrupt ({detail})"),
        )
    })
}

/// Step 3: offsets vs count, control batches, idempotence fields.
fn check_counts_and_producer(view: &BatchView<'_>) -> Result<(), ValidationError> {
    let count_from_offsets = i64::from(view.last_offset_delta()) + 1;
    if count_from_offsets <= 0 {
        return Err(ValidationError::invalid(format!(
            "Batch has an invalid offset range: [0, {}]",
            view.last_offset_delta()
        )));
    }
    let count = i64::from(view.records_count());
    if count <= 0 {
        return Err(ValidationError::invalid(format!(
            "Invalid reported count for record batch: {count}"
        )));
    }
    if count != count_from_offsets {
        return Err(ValidationError::invalid(format!(
            "Inconsistent batch offset range [0, {}] and count of records {count}",
            view.last_offset_delta()
        )));
    }
    if view.is_control() {
        return Err(ValidationError::invalid(
            "Clients are not allowed to write control records",
        ));
    }
    if view.producer_id() >= 0 && view.base_sequence() < 0 {
        return Err(ValidationError::invalid(format!(
            "Invalid sequence number {} in record batch with producerId {}",
            view.base_sequence(),
            view.producer_id()
        )));
    }
    Ok(())
}

/// Steps 4 and 5. Returns `max(-1, record timestamps)` when every record is acceptable, and on
/// delay-enabled topics the batch's due time (max over the records' due times; a record's
/// delay headers are read in the same walk, see [`crate::delivery`]).
/// Walks the records with `skiff_record::walk_records` (lengths and structure checked, keys,
/// values and headers skipped, nothing allocated); texts are built only for rejected records.
fn check_records(
    view: &BatchView<'_>,
    data: &[u8],
    cfg: &ValidationConfig,
    now_ms: i64,
) -> Result<(i64, Option<i64>), ValidationError> {
    if let Some(max_timestamp) = accept_plain_records(view, data, cfg, now_ms) {
        return Ok((max_timestamp, None));
    }
    check_records_one_by_one(view, data, cfg, now_ms)
}

/// The common case in one branch-light pass: no delivery delay on the topic, a CreateTime
/// batch, every record well formed with consecutive offset deltas, a key on every record of a
/// compacted topic, and the smallest and largest record timestamps (hence all, the timestamps
/// being `base + delta` without overflow) within bounds. Then the answer is the batch's true
/// max timestamp. `None` whenever any of that does not hold, or cannot be decided without
/// looking record by record: [`check_records_one_by_one`] then gives the full answer (and the
/// per-record errors), so this pass can only make an accepted batch cheaper, never change a
/// verdict (the `fast_path` tests: `agrees_with_one_by_one`).
fn accept_plain_records(
    view: &BatchView<'_>,
    data: &[u8],
    cfg: &ValidationConfig,
    now_ms: i64,
) -> Option<i64> {
    if cfg.delivery.is_some() || view.timestamp_type() == TimestampType::LogAppendTime {
        return None;
    }
    let (mut min_delta, mut max_delta) = (i64::MAX, i64::MIN);
    let (mut index, mut consecutive, mut keyed) = (0i32, true, true);
    for rec in walk_records(data, view.records_count()) {
        let rec = rec.ok()?;
        consecutive &= rec.offset_delta == index;
        keyed &= rec.has_key();
        min_delta = min_delta.min(rec.timestamp_delta);
        max_delta = max_delta.max(rec.timestamp_delta);
        index = index.wrapping_add(1);
    }
    if !consecutive || (cfg.compacted && !keyed) || index == 0 {
        return None;
    }
    let base = view.base_timestamp();
    let (lowest, highest) = (base.checked_add(min_delta)?, base.checked_add(max_delta)?);
    // -1 ("no timestamp") is exempt from the bounds check: leave such batches to the
    // record-by-record pass rather than reason about them here.
    let in_bounds = |ts: i64| ts != -1 && !timestamp_out_of_bounds(ts, now_ms, cfg);
    if cfg.timestamp_type == TimestampType::CreateTime && !(in_bounds(lowest) && in_bounds(highest))
    {
        return None;
    }
    Some(highest.max(-1))
}

/// [`check_records`] record by record: the per-record errors, the delay headers, every rule.
fn check_records_one_by_one(
    view: &BatchView<'_>,
    data: &[u8],
    cfg: &ValidationConfig,
    now_ms: i64,
) -> Result<(i64, Option<i64>), ValidationError> {
    let producer_set_log_append_time = view.timestamp_type() == TimestampType::LogAppendTime;
    let check_bounds = cfg.timestamp_type == TimestampType::CreateTime;
    let (base_timestamp, batch_max_timestamp) = (view.base_timestamp(), view.max_timestamp());
    let mut max_timestamp = -1i64;
    let mut errors = Vec::new();
    let mut any_timestamp_error = false;
    let mut walk = walk_records(data, view.records_count());
    let mut batch_due: Option<i64> = None;
    let mut index: i32 = -1;
    loop {
        let mut headers = DelayHeaders::default();
        let next = match cfg.delivery {
            None => walk.next(),
            Some(_) => walk.next_with(&mut |k, v| headers.observe(k, v)),
        };
        let Some(rec) = next else { break };
        let rec = rec.map_err(|e| ValidationError::invalid(format!("Invalid record: {e}")))?;
        // The walk yields at most records_count (an i32) items.
        index = index.saturating_add(1);
        let mut delay_error = None;
        if let Some(dcfg) = &cfg.delivery {
            match record_due(&headers, dcfg, now_ms) {
                Ok(due) => batch_due = Some(batch_due.map_or(due, |d| d.max(due))),
                Err(e) => delay_error = Some(e.message),
            }
        }
        if rec.offset_delta != index {
            return Err(ValidationError::invalid(format!(
                "Record at index {index} has offset delta {}; inner offsets must be consecutive from 0",
                rec.offset_delta
            )));
        }
        // What a reader sees (`BatchView::record_timestamp`).
        let ts = if producer_set_log_append_time {
            batch_max_timestamp
        } else {
            base_timestamp.wrapping_add(rec.timestamp_delta)
        };
        max_timestamp = max_timestamp.max(ts);
        let keyless = cfg.compacted && !rec.has_key();
        // With the LogAppendTime bit set every record is already refused for that.
        let out_of_bounds = check_bounds
            && !producer_set_log_append_time
            && ts != -1
            && timestamp_out_of_bounds(ts, now_ms, cfg);
        if keyless || producer_set_log_append_time || out_of_bounds {
            let (message, timestamp_error) =
                record_error(index, ts, keyless, out_of_bounds, now_ms, cfg);
            any_timestamp_error |= timestamp_error;
            errors.push(RecordErrorEntry {
                batch_index: index,
                message: Some(message),
            });
        } else if let Some(message) = delay_error {
            errors.push(RecordErrorEntry {
                batch_index: index,
                message: Some(message),
            });
        }
    }
    if errors.is_empty() {
        return Ok((max_timestamp, batch_due));
    }
    let (code, message) = if any_timestamp_error {
        (
            ErrorCode::InvalidTimestamp,
            "One or more records have been rejected due to invalid timestamp".to_string(),
        )
    } else {
        let shown: Vec<String> = errors
            .iter()
            .take(3)
            .map(|e| {
                format!(
                    "RecordError(batchIndex={}, message='{}')",
                    e.batch_index,
                    e.message.as_deref().unwrap_or("null")
                )
            })
            .collect();
        (
            ErrorCode::InvalidRecord,
            format!(
                "One or more records have been rejected due to {} record errors in total, and \
                 only showing the first three errors at most: [{}]",
                errors.len(),
                shown.join(", ")
            ),
        )
    };
    Err(ValidationError {
        code,
        message,
        record_errors: errors,
    })
}

/// The message for one rejected record (key first, as in Kafka) and whether it is a
/// timestamp error. Called only for a `keyless` record, an `out_of_bounds` timestamp or a
/// producer-set LogAppendTime bit (the remaining case).
#[cold]
fn record_error(
    index: i32,
    ts: i64,
    keyless: bool,
    out_of_bounds: bool,
    now_ms: i64,
    cfg: &ValidationConfig,
) -> (String, bool) {
    if keyless {
        (
            "Compacted topic cannot accept message without key".to_string(),
            false,
        )
    } else if out_of_bounds {
        (
            format!(
                "Timestamp {ts} of message with offset {index} is out of range. The timestamp \
                 should be within [{}, {}]",
                now_ms.saturating_sub(cfg.before_max_ms),
                now_ms.saturating_add(cfg.after_max_ms)
            ),
            true,
        )
    } else {
        (
            format!(
                "Invalid timestamp type in message at index {index}. Producer should not set \
                 timestamp type to LogAppendTime."
            ),
            true,
        )
    }
}

/// Kafka's `recordHasInvalidTimestamp`, without overflow: too old if `now - ts > before`, too
/// far ahead if `ts - now > after`.
fn timestamp_out_of_bounds(ts: i64, now_ms: i64, cfg: &ValidationConfig) -> bool {
    let diff = i128::from(now_ms) - i128::from(ts);
    diff > i128::from(cfg.before_max_ms) || -diff > i128::from(cfg.after_max_ms)
}

#[cfg(test)]
#[path = "validate_tests.rs"]
mod tests;
