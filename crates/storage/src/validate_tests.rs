//! Unit tests of `validate_client_batch`: batch-level rules, timestamps, keys, recompression
//! and the two-piece (header + borrowed body) output.

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
    assert_eq!(v.to_vec(), good);
    // The records section is the request's, not a copy.
    assert!(matches!(v.body, Cow::Borrowed(_)));
    assert!(std::ptr::eq(v.body.as_ptr(), good[61..].as_ptr()));
    assert_eq!(v.size(), good.len());
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
    let out_bytes = v.to_vec();
    let out = view(&out_bytes);
    out.verify_crc().unwrap();
    assert_eq!(out.max_timestamp(), NOW - 1);
    assert_eq!(out.timestamp_type(), TimestampType::CreateTime);
    // Only maxTimestamp and the CRC changed.
    let diff: Vec<usize> = (0..b.len()).filter(|&i| b[i] != out_bytes[i]).collect();
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
    // Header rewritten (type bit, maxTimestamp, CRC), records still the request's bytes.
    assert!(matches!(v.body, Cow::Borrowed(_)));
    assert_eq!(
        (v.max_timestamp, v.log_append_time_ms, v.recompressed),
        (NOW, NOW, false)
    );
    let out_bytes = v.to_vec();
    let out = view(&out_bytes);
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
        !v.recompressed && v.to_vec() == gzip,
        "producer keeps the codec"
    );
    let v = validate_client_batch(&gzip, &codec(Compression::Gzip), NOW).unwrap();
    assert!(!v.recompressed && v.to_vec() == gzip);
    for target in [
        Compression::None,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ] {
        let v = validate_client_batch(&gzip, &codec(target), NOW).unwrap();
        assert!(v.recompressed);
        assert!(matches!(v.body, Cow::Owned(_)));
        let out_bytes = v.to_vec();
        let out = view(&out_bytes);
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
    let out_bytes = v.to_vec();
    let out = view(&out_bytes);
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

/// The one-pass acceptance of plain batches (`accept_plain_records`) may only speed up an
/// accepted batch: whenever it answers, the record-by-record pass gives the same max
/// timestamp and no due time; and it does answer for an ordinary batch (else it is dead code).
mod fast_path {
    use proptest::prelude::*;

    use super::*;

    /// The one-pass answer and the record-by-record one (its error as a code).
    type Both = (Option<i64>, Result<(i64, Option<i64>), ErrorCode>);

    fn both(b: &[u8], cfg: &ValidationConfig) -> Both {
        let v = view(b);
        let data = v.records_data(DECOMPRESSED_BATCH_BYTES_MAX).unwrap();
        let fast = accept_plain_records(&v, &data, cfg, NOW);
        let slow = check_records_one_by_one(&v, &data, cfg, NOW).map_err(|e| e.code);
        (fast, slow)
    }

    #[test]
    fn answers_for_an_ordinary_batch() {
        for o in [
            BatchOptions::default(),
            opts(|o| o.compression = Compression::Lz4),
        ] {
            let b = batch(15, o);
            assert_eq!(both(&b, &cfg()), (Some(NOW), Ok((NOW, None))));
        }
        let compacted = ValidationConfig {
            compacted: true,
            ..cfg()
        };
        let b = batch(3, BatchOptions::default());
        assert_eq!(both(&b, &compacted).0, Some(NOW));
    }

    #[test]
    fn declines_what_needs_a_record_by_record_answer() {
        let tight = ValidationConfig {
            before_max_ms: 10,
            after_max_ms: 10,
            ..cfg()
        };
        let compacted = ValidationConfig {
            compacted: true,
            ..cfg()
        };
        let mut keyless = BatchBuilder::new(BatchOptions::default());
        keyless.append(NOW, None, Some(b"v"), &[]);
        let keyless = keyless.build().unwrap();
        let mut gap = BatchBuilder::new(BatchOptions::default());
        gap.append_with_offset_delta(0, NOW, Some(b"a"), None, &[]);
        gap.append_with_offset_delta(2, NOW, Some(b"b"), None, &[]);
        gap.set_last_offset_delta(1);
        let gap = gap.build().unwrap();
        let cases: [(&str, Vec<u8>, &ValidationConfig); 5] = [
            (
                "too old",
                batch_ts(&[NOW, NOW - 11], BatchOptions::default()),
                &tight,
            ),
            (
                "too new",
                batch_ts(&[NOW + 11, NOW], BatchOptions::default()),
                &tight,
            ),
            (
                "ts -1",
                batch_ts(&[-1, NOW], BatchOptions::default()),
                &cfg(),
            ),
            ("keyless on compacted", keyless, &compacted),
            ("offset gap", gap, &cfg()),
        ];
        for (name, b, c) in cases {
            assert_eq!(both(&b, c).0, None, "{name}");
        }
    }

    proptest! {
        #[test]
        fn agrees_with_one_by_one(
            offsets in proptest::collection::vec(-40i64..40, 1..12),
            keys in proptest::collection::vec(any::<bool>(), 12),
            minus_one in any::<bool>(),
            gap_at in proptest::option::of(0usize..12),
            compacted in any::<bool>(),
            log_append_time in any::<bool>(),
            before in 0i64..50,
            after in 0i64..50,
        ) {
            let mut b = BatchBuilder::new(BatchOptions::default());
            for (i, off) in offsets.iter().enumerate() {
                let ts = if minus_one && i == 0 { -1 } else { NOW + off };
                let delta = i as i32 + i32::from(gap_at.is_some_and(|g| i >= g));
                let key: Option<&[u8]> = keys[i].then_some(b"k");
                b.append_with_offset_delta(delta, ts, key, Some(b"v"), &[]);
            }
            b.set_last_offset_delta(offsets.len() as i32 - 1);
            let bytes = b.build().unwrap();
            let c = ValidationConfig {
                compacted,
                before_max_ms: before,
                after_max_ms: after,
                timestamp_type: if log_append_time {
                    TimestampType::LogAppendTime
                } else {
                    TimestampType::CreateTime
                },
                ..cfg()
            };
            let (fast, slow) = both(&bytes, &c);
            if let Some(max) = fast {
                prop_assert_eq!(slow, Ok((max, None)));
            }
        }
    }
}
