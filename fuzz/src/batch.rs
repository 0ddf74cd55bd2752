//! `record_batch` harness: arbitrary bytes as a v2 record batch, through every reader in
//! `skiff_record` and through the leader-side Produce validation in `skiff_storage::validate`.
//!
//! Because random mutations nearly always break the CRC-32C, a batch whose CRC is wrong is also
//! validated a second time with its CRC recomputed, so validation's later stages get fuzzed.
//!
//! The codecs are also checked on their own (raw input, and each batch's records section,
//! with an LZ4 differential against `lz4_flex`): see [`crate::codec`].
//!
//! Checks: nothing panics, nothing allocates beyond the bound passed in (decompression is
//! capped at [`RECORDS_DATA_BOUND`] here; validation uses its own 256 MiB cap, still under the
//! run's `-malloc_limit_mb=512`). Oracles on accepted inputs:
//! - `BatchView::new` on the whole input agrees with `peek_batch_size` and with the first item
//!   of `batches`;
//! - a batch that `validate_client_batch` accepts (Kafka topic defaults) comes out as exactly one
//!   well-formed batch with a correct CRC, the same record count, records that parse, and the
//!   max timestamp the validator reported;
//! - the same batch validated for a topic that forces a codec (chosen from the input length)
//!   and LogAppendTime is either accepted, with the forced codec and the *same records* as the
//!   input, or refused only as MESSAGE_TOO_LARGE.

use skiff_record::{
    BatchView, Compression, Record, RecordError, TimestampType, batches, peek_batch_size,
    recompute_crc, records,
};
use skiff_storage::validate::{TargetCompression, ValidationConfig, validate_client_batch};
use skiff_types::ErrorCode;

use crate::Outcome;

/// Decompression bound used by the direct `skiff_record` checks.
pub const RECORDS_DATA_BOUND: usize = 8 << 20;

/// A fixed "now" (2023-11-14) so runs are reproducible.
pub const NOW_MS: i64 = 1_700_000_000_000;

/// Runs the harness on one input; panics on a broken invariant.
pub fn check_record_batch(data: &[u8]) -> Outcome {
    // 0. The codecs on the raw bytes (see `crate::codec`).
    crate::codec::check_raw(data);

    // 1. As a region of a log: walk every batch the iterator yields.
    let mut first = None;
    for item in batches(data) {
        match item {
            Ok((pos, view)) => {
                if pos == 0 {
                    first = Some(view.size());
                }
                let _ = inspect(&view);
            }
            Err(e) => {
                let _ = e.to_string();
                break;
            }
        }
    }

    // 2. As exactly one batch.
    let single = BatchView::new(data);
    if let Ok(view) = &single {
        assert_eq!(
            view.size(),
            data.len(),
            "BatchView::new accepted a partial slice"
        );
        assert_eq!(
            peek_batch_size(data).ok().flatten(),
            Some(data.len()),
            "peek_batch_size disagrees with BatchView::new"
        );
        assert_eq!(
            first,
            Some(data.len()),
            "batches() disagrees with BatchView::new"
        );
        let _ = inspect(view);
    }

    // 3. Leader-side validation, then the oracles on what it accepted.
    let outcome = validate_and_check(data, single.ok().as_ref());
    // 4. Mutations almost always break the CRC, which hides everything validation does after
    //    it; validate a copy with the CRC fixed too, so the fuzzer can reach those paths.
    if let Ok(view) = BatchView::new(data)
        && view.verify_crc().is_err()
    {
        let mut fixed = data.to_vec();
        recompute_crc(&mut fixed);
        let view = BatchView::new(&fixed).expect("recompute_crc keeps the batch shape");
        if validate_and_check(&fixed, Some(&view)) == "accepted" {
            return "accepted_after_crc_fix";
        }
    }
    outcome
}

/// Validates `data` for a topic with Kafka's defaults and checks what it accepts.
fn validate_and_check(data: &[u8], single: Option<&BatchView<'_>>) -> Outcome {
    let cfg = ValidationConfig::default();
    match validate_client_batch(data, &cfg, NOW_MS) {
        Err(e) => {
            let _ = e.to_string();
            "rejected_by_validation"
        }
        Ok(v) => {
            let Some(input) = single else {
                panic!("validation accepted bytes that BatchView::new refuses");
            };
            let whole = v.to_vec();
            assert_eq!(whole.len(), v.size());
            let out = BatchView::new(&whole).expect("validated output is one whole batch");
            out.verify_crc()
                .expect("validated output has a correct CRC");
            assert_eq!(out.records_count(), v.record_count);
            assert_eq!(out.records_count(), input.records_count());
            assert_eq!(out.max_timestamp(), v.max_timestamp);
            assert_eq!(out.timestamp_type(), TimestampType::CreateTime);
            let original = owned_records(input).expect("validated input's records parse");
            let stored = owned_records(&out).expect("validated output's records parse");
            assert_eq!(original, stored, "validation changed the records");
            check_recompression(data, input, &original);
            "accepted"
        }
    }
}

/// Validates again for a topic that forces a codec and LogAppendTime.
fn check_recompression(data: &[u8], input: &BatchView<'_>, original: &[OwnedRecord]) {
    let target = Compression::ALL[data.len() % Compression::ALL.len()];
    let cfg = ValidationConfig {
        compression: TargetCompression::Codec {
            codec: target,
            level: None,
        },
        timestamp_type: TimestampType::LogAppendTime,
        ..ValidationConfig::default()
    };
    match validate_client_batch(data, &cfg, NOW_MS) {
        Ok(v) => {
            let whole = v.to_vec();
            assert_eq!(whole.len(), v.size());
            let out = BatchView::new(&whole).expect("recompressed output is one whole batch");
            out.verify_crc()
                .expect("recompressed output has a correct CRC");
            assert_eq!(out.compression().ok(), Some(target));
            assert_eq!(out.timestamp_type(), TimestampType::LogAppendTime);
            assert_eq!(out.max_timestamp(), NOW_MS);
            assert_eq!(out.records_count(), input.records_count());
            assert_eq!(out.base_offset(), input.base_offset());
            assert_eq!(out.producer_id(), input.producer_id());
            assert_eq!(out.base_sequence(), input.base_sequence());
            let stored = owned_records(&out).expect("recompressed records parse");
            assert_eq!(
                original,
                stored.as_slice(),
                "recompression changed the records"
            );
            assert_eq!(v.recompressed, input.compression().ok() != Some(target));
        }
        Err(e) => assert_eq!(
            e.code,
            ErrorCode::MessageTooLarge,
            "a batch valid for the default topic was refused after recompression: {e}"
        ),
    }
}

/// Touches every accessor and walks the records; `Err` is fine, panics are not.
fn inspect(view: &BatchView<'_>) -> Result<usize, RecordError> {
    let _ = (
        view.base_offset(),
        view.batch_length(),
        view.partition_leader_epoch(),
        view.magic(),
        view.crc(),
        view.attributes(),
        view.timestamp_type(),
        view.is_transactional(),
        view.is_control(),
        view.has_delete_horizon(),
        view.delete_horizon_ms(),
        view.last_offset_delta(),
        view.base_timestamp(),
        view.max_timestamp(),
        view.producer_id(),
        view.producer_epoch(),
        view.base_sequence(),
        view.records_count(),
        view.last_offset(),
        view.next_offset(),
        view.records_bytes().len(),
    );
    let _ = view.verify_crc();
    let codec = view.compression()?;
    if codec != Compression::None {
        crate::codec::check_compressed(codec, view.records_bytes());
    }
    let data = view.records_data(RECORDS_DATA_BOUND)?;
    let mut touched = 0usize;
    for rec in records(&data, view.records_count()) {
        let rec = rec?;
        let _ = (view.record_timestamp(&rec), view.record_offset(&rec));
        touched += rec.key.map_or(0, <[u8]>::len) + rec.value.map_or(0, <[u8]>::len);
        for h in &rec.headers {
            touched += h.key.len() + h.value.map_or(0, <[u8]>::len);
        }
    }
    Ok(touched)
}

/// A record copied out of its batch, for comparing two batches' contents.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnedRecord {
    pub attributes: i8,
    pub timestamp_delta: i64,
    pub offset_delta: i32,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub headers: Vec<(Vec<u8>, Option<Vec<u8>>)>,
}

impl From<&Record<'_>> for OwnedRecord {
    fn from(r: &Record<'_>) -> Self {
        Self {
            attributes: r.attributes,
            timestamp_delta: r.timestamp_delta,
            offset_delta: r.offset_delta,
            key: r.key.map(<[u8]>::to_vec),
            value: r.value.map(<[u8]>::to_vec),
            headers: r
                .headers
                .iter()
                .map(|h| (h.key.to_vec(), h.value.map(<[u8]>::to_vec)))
                .collect(),
        }
    }
}

/// Every record of a batch, decompressed with the validator's own bound.
pub fn owned_records(view: &BatchView<'_>) -> Result<Vec<OwnedRecord>, RecordError> {
    let data = view.records_data(skiff_types::limits::DECOMPRESSED_BATCH_BYTES_MAX)?;
    records(&data, view.records_count())
        .map(|r| r.map(|r| OwnedRecord::from(&r)))
        .collect()
}
