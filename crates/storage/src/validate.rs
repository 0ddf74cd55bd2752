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
//! 6. output: the original bytes, recompressed only if the topic's target codec differs from
//!    the batch's (`TargetCompression::Producer` never recompresses; recompression re-encodes
//!    the same record bytes, see `skiff_record::reencode`); then LogAppendTime topics get bit 3
//!    and `maxTimestamp = now`, CreateTime topics get `maxTimestamp` = the true max
//!    (`max(-1, ts...)`), each with a CRC recompute only when a byte changed. A recompressed
//!    batch is size-checked again (MESSAGE_TOO_LARGE), like Kafka.
//!
//! Deviation in framing: Kafka's batch iterator silently ignores a partial batch after the
//! first one; we reject any trailing bytes with INVALID_RECORD.

use skiff_record::{
    BatchView, Compression, RecordError, TimestampType, peek_batch_size, reencode,
    set_max_timestamp, walk_records,
};
use skiff_types::ErrorCode;
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

/// A batch that passed validation, ready for `Log::append_as_leader`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidatedBatch {
    /// The one batch to append: the original bytes (maybe with maxTimestamp/attributes fixed)
    /// or a recompressed copy. `baseOffset` is still 0.
    pub bytes: Vec<u8>,
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
}

/// Validates the `records` field of one partition of a client Produce request (v3+).
pub fn validate_client_batch(
    records_field: &[u8],
    cfg: &ValidationConfig,
    now_ms: i64,
) -> Result<ValidatedBatch, ValidationError> {
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
    let true_max_timestamp = check_records(&view, &data, cfg, now_ms)?;

    let (target, level) = match cfg.compression {
        TargetCompression::Producer => (source, None),
        TargetCompression::Codec { codec, level } => (codec, level),
    };
    let recompressed = target != source;
    let mut bytes = if recompressed {
        reencode(&view, &data, target, level).map_err(|e| {
            ValidationError::batch(
                ErrorCode::UnknownServerError,
                format!(
                    "Failed to recompress the record batch to {}: {e}",
                    target.name()
                ),
            )
        })?
    } else {
        records_field.to_vec()
    };

    let (max_timestamp, log_append_time_ms) = match cfg.timestamp_type {
        TimestampType::LogAppendTime => (now_ms, now_ms),
        TimestampType::CreateTime => (true_max_timestamp, -1),
    };
    set_max_timestamp(&mut bytes, cfg.timestamp_type, max_timestamp);

    if recompressed && bytes.len() > cfg.max_message_bytes {
        return Err(too_large(bytes.len(), cfg.max_message_bytes));
    }
    Ok(ValidatedBatch {
        bytes,
        record_count: view.records_count(),
        last_offset_delta: view.last_offset_delta(),
        max_timestamp,
        shallow_offset_delta_of_max_timestamp: view.last_offset_delta(),
        log_append_time_ms,
        recompressed,
    })
}

/// Step 1: the field must be exactly one v2 batch.
fn single_batch(field: &[u8]) -> Result<BatchView<'_>, ValidationError> {
    const MAGIC_AT: usize = 16;
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

/// Steps 4 and 5. Returns `max(-1, record timestamps)` when every record is acceptable.
/// Walks the records with `skiff_record::walk_records` (lengths and structure checked, keys,
/// values and headers skipped, nothing allocated); texts are built only for rejected records.
fn check_records(
    view: &BatchView<'_>,
    data: &[u8],
    cfg: &ValidationConfig,
    now_ms: i64,
) -> Result<i64, ValidationError> {
    let producer_set_log_append_time = view.timestamp_type() == TimestampType::LogAppendTime;
    let check_bounds = cfg.timestamp_type == TimestampType::CreateTime;
    let (base_timestamp, batch_max_timestamp) = (view.base_timestamp(), view.max_timestamp());
    let mut max_timestamp = -1i64;
    let mut errors = Vec::new();
    let mut any_timestamp_error = false;
    for (index, rec) in walk_records(data, view.records_count()).enumerate() {
        let rec = rec.map_err(|e| ValidationError::invalid(format!("Invalid record: {e}")))?;
        // The walk yields at most records_count (an i32) items.
        let index = i32::try_from(index).unwrap_or(i32::MAX);
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
        }
    }
    if errors.is_empty() {
        return Ok(max_timestamp);
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
mod tests {
    use skiff_record::{BatchBuilder, BatchOptions, Header, recompute_crc, records};

    use super::*;

    const NOW: i64 = 1_700_000_000_000;

    fn opts(f: impl FnOnce(&mut BatchOptions)) -> BatchOptions {
        let mut o = BatchOptions::default();
        f(&mut o);
        o
    }

    /// A batch of `n` keyed records stamped `NOW - i`.
    fn batch(n: usize, o: BatchOptions) -> Vec<u8> {
        let ts: Vec<i64> = (0..n as i64).map(|i| NOW - i).collect();
        batch_ts(&ts, o)
    }

    fn batch_ts(ts: &[i64], o: BatchOptions) -> Vec<u8> {
        let mut b = BatchBuilder::new(o);
        for (i, t) in ts.iter().enumerate() {
            let h = [Header {
                key: b"h",
                value: Some(b"v"),
            }];
            b.append(*t, Some(format!("k{i}").as_bytes()), Some(b"value"), &h);
        }
        b.build().unwrap()
    }

    /// Applies `f` to the header bytes and fixes the CRC.
    fn patched(mut b: Vec<u8>, f: impl FnOnce(&mut [u8])) -> Vec<u8> {
        f(&mut b);
        recompute_crc(&mut b);
        b
    }

    fn cfg() -> ValidationConfig {
        ValidationConfig::default()
    }

    fn code(bytes: &[u8], cfg: &ValidationConfig) -> ErrorCode {
        validate_client_batch(bytes, cfg, NOW).unwrap_err().code
    }

    fn view(b: &[u8]) -> BatchView<'_> {
        BatchView::new(b).unwrap()
    }

    #[test]
    fn batch_level_rules() {
        use ErrorCode::{CorruptMessage, InvalidRecord, MessageTooLarge};
        let good = batch(3, BatchOptions::default());
        let mut two = good.clone();
        two.extend_from_slice(&good);
        let mut trailing = good.clone();
        trailing.extend_from_slice(&[0, 0, 0]);
        let mut crc_flip = good.clone();
        crc_flip[70] ^= 0x01;
        let set_i32 = |at: usize, v: i32| {
            let g = good.clone();
            patched(g, move |b| b[at..at + 4].copy_from_slice(&v.to_be_bytes()))
        };
        let set_attrs = |v: i16| {
            patched(good.clone(), |b| {
                b[21..23].copy_from_slice(&v.to_be_bytes())
            })
        };
        let mut corrupt_gzip = batch(3, opts(|o| o.compression = Compression::Gzip));
        let n = corrupt_gzip.len();
        corrupt_gzip[n - 12..n - 4].fill(0x55); // body damage, valid CRC below
        let corrupt_gzip = patched(corrupt_gzip, |_| {});
        let mut gap = BatchBuilder::new(BatchOptions::default());
        gap.append_with_offset_delta(0, NOW, Some(b"a"), None, &[]);
        gap.append_with_offset_delta(2, NOW, Some(b"b"), None, &[]);
        gap.set_last_offset_delta(1);
        let gap = gap.build().unwrap();
        let mut empty = BatchBuilder::new(BatchOptions::default());
        empty.set_last_offset_delta(-1);
        let empty = empty.build().unwrap();
        let malformed = patched(good.clone(), |b| b[61] = 0x7e); // first record length 63, too long
        let small = ValidationConfig {
            max_message_bytes: good.len() - 1,
            ..cfg()
        };

        let pid_no_seq = batch(1, opts(|o| (o.producer_id, o.producer_epoch) = (5, 0)));
        #[rustfmt::skip]
        let table: Vec<(&str, Vec<u8>, ErrorCode, &str)> = vec![
            ("empty field", vec![], InvalidRecord, "at least one record batch"),
            ("shorter than a prefix", good[..7].to_vec(), InvalidRecord, "truncated"),
            ("truncated batch", good[..good.len() - 1].to_vec(), InvalidRecord, "truncated"),
            ("two batches", two, InvalidRecord, "exactly one record batch"),
            ("trailing garbage", trailing, InvalidRecord, "exactly one record batch"),
            ("magic 1", patched(good.clone(), |b| b[16] = 1), InvalidRecord, "magic version 2"),
            ("batchLength 40", set_i32(8, 40)[..52].to_vec(), CorruptMessage, "corrupt"),
            ("baseOffset 5", patched(good.clone(), |b| b[7] = 5), InvalidRecord, "baseOffset"),
            ("bad CRC", crc_flip, CorruptMessage, "Record is corrupt"),
            ("codec id 5", set_attrs(5), InvalidRecord, "unknown compression"),
            ("count != lastOffsetDelta+1", set_i32(57, 2), InvalidRecord, "Inconsistent batch offset range"),
            ("lastOffsetDelta -1", set_i32(23, -1), InvalidRecord, "invalid offset range"),
            ("empty batch", empty, InvalidRecord, "invalid offset range"),
            ("control batch", set_attrs(0x20), InvalidRecord, "control records"),
            ("pid without sequence", pid_no_seq, InvalidRecord, "Invalid sequence number"),
            ("undecodable gzip", corrupt_gzip, InvalidRecord, "decompress"),
            ("malformed record", malformed, InvalidRecord, "Invalid record:"),
            ("offset gap", gap, InvalidRecord, "consecutive"),
        ];
        for (name, bytes, want, says) in table {
            let err = validate_client_batch(&bytes, &cfg(), NOW).expect_err(name);
            assert_eq!(err.code, want, "{name}: {}", err.message);
            assert!(err.message.contains(says), "{name}: {}", err.message);
            assert!(err.record_errors.is_empty(), "{name}");
        }
        assert_eq!(code(&good, &small), MessageTooLarge);
        // The size check comes before the CRC check, as in Kafka.
        let mut big_bad = good.clone();
        big_bad[70] ^= 1;
        assert_eq!(code(&big_bad, &small), MessageTooLarge);
        // Exactly max.message.bytes is fine.
        let exact = ValidationConfig {
            max_message_bytes: good.len(),
            ..cfg()
        };
        assert!(validate_client_batch(&good, &exact, NOW).is_ok());
    }

    #[test]
    fn accepted_create_time_batch_is_untouched() {
        let o = opts(|o| {
            (o.producer_id, o.producer_epoch, o.base_sequence) = (7, 1, 0);
            o.is_transactional = true;
        });
        let good = batch(4, o);
        let v = validate_client_batch(&good, &cfg(), NOW).unwrap();
        assert_eq!(v.bytes, good);
        assert_eq!((v.record_count, v.last_offset_delta), (4, 3));
        assert_eq!(
            (v.max_timestamp, v.shallow_offset_delta_of_max_timestamp),
            (NOW, 3)
        );
        assert_eq!((v.log_append_time_ms, v.recompressed), (-1, false));
    }

    #[test]
    fn create_time_fixes_a_wrong_max_timestamp() {
        let mut b = batch_ts(&[NOW - 5, NOW - 1, NOW - 9], BatchOptions::default());
        skiff_record::set_max_timestamp(&mut b, TimestampType::CreateTime, NOW - 100);
        let v = validate_client_batch(&b, &cfg(), NOW).unwrap();
        assert_eq!(v.max_timestamp, NOW - 1);
        let out = view(&v.bytes);
        out.verify_crc().unwrap();
        assert_eq!(out.max_timestamp(), NOW - 1);
        assert_eq!(out.timestamp_type(), TimestampType::CreateTime);
        // Only maxTimestamp and the CRC changed.
        let diff: Vec<usize> = (0..b.len()).filter(|&i| b[i] != v.bytes[i]).collect();
        assert!(
            diff.iter()
                .all(|i| (17..21).contains(i) || (35..43).contains(i)),
            "{diff:?}"
        );
        // All records without a timestamp: maxTimestamp is -1.
        let none = batch_ts(&[-1, -1], BatchOptions::default());
        assert_eq!(
            validate_client_batch(&none, &cfg(), NOW)
                .unwrap()
                .max_timestamp,
            -1
        );
    }

    #[test]
    fn log_append_time_stamps_now_without_recompressing() {
        let lat = ValidationConfig {
            timestamp_type: TimestampType::LogAppendTime,
            before_max_ms: 10,
            after_max_ms: 10,
            ..cfg()
        };
        // Timestamps far outside the bounds: ignored on a LogAppendTime topic.
        let b = batch_ts(
            &[0, NOW + 1_000_000, 5],
            opts(|o| o.compression = Compression::Lz4),
        );
        let v = validate_client_batch(&b, &lat, NOW).unwrap();
        assert_eq!(
            (v.max_timestamp, v.log_append_time_ms, v.recompressed),
            (NOW, NOW, false)
        );
        let out = view(&v.bytes);
        out.verify_crc().unwrap();
        assert_eq!(out.timestamp_type(), TimestampType::LogAppendTime);
        assert_eq!(out.compression().unwrap(), Compression::Lz4);
        assert_eq!(out.max_timestamp(), NOW);
        assert_eq!(
            out.records_bytes(),
            &b[61..],
            "payload must not be rewritten"
        );
        let data = out.records_data(1 << 20).unwrap();
        for r in records(&data, 3) {
            assert_eq!(out.record_timestamp(&r.unwrap()), NOW);
        }
    }

    #[test]
    fn recompression_only_when_the_codec_differs() {
        let gzip = batch(20, opts(|o| o.compression = Compression::Gzip));
        let codec = |c| ValidationConfig {
            compression: TargetCompression::Codec {
                codec: c,
                level: None,
            },
            ..cfg()
        };
        let v = validate_client_batch(&gzip, &cfg(), NOW).unwrap();
        assert!(
            !v.recompressed && v.bytes == gzip,
            "producer keeps the codec"
        );
        let v = validate_client_batch(&gzip, &codec(Compression::Gzip), NOW).unwrap();
        assert!(!v.recompressed && v.bytes == gzip);
        for target in [
            Compression::None,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            let v = validate_client_batch(&gzip, &codec(target), NOW).unwrap();
            assert!(v.recompressed);
            let out = view(&v.bytes);
            out.verify_crc().unwrap();
            assert_eq!(out.compression().unwrap(), target);
            let (a, b) = (
                view(&gzip).records_data(1 << 20).unwrap(),
                out.records_data(1 << 20).unwrap(),
            );
            assert_eq!(a, b, "{target:?}: same records");
            assert_eq!((v.record_count, v.max_timestamp), (20, NOW));
        }
        // LogAppendTime + recompression: stamped after re-encoding.
        let lat_lz4 = ValidationConfig {
            timestamp_type: TimestampType::LogAppendTime,
            ..codec(Compression::Lz4)
        };
        let v = validate_client_batch(&gzip, &lat_lz4, NOW + 7).unwrap();
        let out = view(&v.bytes);
        out.verify_crc().unwrap();
        assert_eq!(
            (out.timestamp_type(), out.max_timestamp()),
            (TimestampType::LogAppendTime, NOW + 7)
        );
        // Recompressed output larger than max.message.bytes: MESSAGE_TOO_LARGE.
        let mut zeros = BatchBuilder::new(opts(|o| o.compression = Compression::Zstd));
        zeros.append(NOW, Some(b"k"), Some(&[0u8; 20_000]), &[]);
        let zeros = zeros.build().unwrap();
        let c = ValidationConfig {
            max_message_bytes: 10_000,
            ..codec(Compression::None)
        };
        assert_eq!(code(&zeros, &c), ErrorCode::MessageTooLarge);
    }

    #[test]
    fn keyless_records_on_compacted_topics() {
        let mut b = BatchBuilder::new(BatchOptions::default());
        b.append(NOW, Some(b"k"), Some(b"v"), &[]);
        b.append(NOW, None, Some(b"v"), &[]);
        b.append(NOW, None, None, &[]);
        let b = b.build().unwrap();
        assert!(validate_client_batch(&b, &cfg(), NOW).is_ok());
        let err = validate_client_batch(
            &b,
            &ValidationConfig {
                compacted: true,
                ..cfg()
            },
            NOW,
        )
        .unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidRecord);
        let idx: Vec<i32> = err.record_errors.iter().map(|e| e.batch_index).collect();
        assert_eq!(idx, vec![1, 2]);
        assert!(
            err.message
                .starts_with("One or more records have been rejected due to 2 record errors")
        );
    }

    #[test]
    fn create_time_bounds() {
        let c = ValidationConfig {
            before_max_ms: 1_000,
            after_max_ms: 500,
            ..cfg()
        };
        let ok = [NOW - 1_000, NOW + 500, NOW, -1];
        assert!(validate_client_batch(&batch_ts(&ok, BatchOptions::default()), &c, NOW).is_ok());
        let mixed = [NOW, NOW - 1_001, NOW + 501, -1, i64::MIN, i64::MAX];
        let err =
            validate_client_batch(&batch_ts(&mixed, BatchOptions::default()), &c, NOW).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidTimestamp);
        assert_eq!(
            err.message,
            "One or more records have been rejected due to invalid timestamp"
        );
        let idx: Vec<i32> = err.record_errors.iter().map(|e| e.batch_index).collect();
        assert_eq!(idx, vec![1, 2, 4, 5]);
        let msg = err.record_errors[0].message.as_deref().unwrap();
        assert!(
            msg.contains(&format!("within [{}, {}]", NOW - 1_000, NOW + 500)),
            "{msg}"
        );
        // Default bounds (4.0): an hour ahead is the limit, any age is fine.
        let d = cfg();
        assert!(
            validate_client_batch(
                &batch_ts(&[0, NOW + 3_600_000], BatchOptions::default()),
                &d,
                NOW
            )
            .is_ok()
        );
        assert_eq!(
            code(&batch_ts(&[NOW + 3_600_001], BatchOptions::default()), &d),
            ErrorCode::InvalidTimestamp
        );
    }

    #[test]
    fn timestamp_error_wins_over_key_error() {
        let mut b = BatchBuilder::new(BatchOptions::default());
        b.append(NOW - 10_000, None, Some(b"v"), &[]); // keyless and too old: key error only
        b.append(NOW, None, Some(b"v"), &[]); // keyless
        b.append(NOW - 10_000, Some(b"k"), Some(b"v"), &[]); // too old
        let b = b.build().unwrap();
        let c = ValidationConfig {
            compacted: true,
            before_max_ms: 1_000,
            ..cfg()
        };
        let err = validate_client_batch(&b, &c, NOW).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidTimestamp);
        let idx: Vec<i32> = err.record_errors.iter().map(|e| e.batch_index).collect();
        assert_eq!(idx, vec![0, 1, 2]);
        assert!(
            err.record_errors[0]
                .message
                .as_deref()
                .unwrap()
                .contains("without key")
        );
        assert!(
            err.record_errors[2]
                .message
                .as_deref()
                .unwrap()
                .contains("out of range")
        );
    }

    #[test]
    fn producer_set_log_append_time_is_rejected() {
        let b = batch(3, opts(|o| o.timestamp_type = TimestampType::LogAppendTime));
        for topic in [TimestampType::CreateTime, TimestampType::LogAppendTime] {
            let c = ValidationConfig {
                timestamp_type: topic,
                ..cfg()
            };
            let err = validate_client_batch(&b, &c, NOW).unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidTimestamp, "{topic:?}");
            assert_eq!(err.record_errors.len(), 3);
        }
        // The bit is the reason even when the (batch max) timestamp is also out of bounds.
        let mut future = b.clone();
        set_max_timestamp(&mut future, TimestampType::LogAppendTime, NOW + 86_400_000);
        let err = validate_client_batch(&future, &cfg(), NOW).unwrap_err();
        let msg = err.record_errors[0].message.as_deref().unwrap();
        assert!(msg.contains("Invalid timestamp type"), "{msg}");
    }
}
