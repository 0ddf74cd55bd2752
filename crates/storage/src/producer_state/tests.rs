//! Table tests of the pure producer-state rules (issue 5 item 2) and of the snapshot format.

use super::snapshot::{
    SnapshotEntry, SnapshotError, SnapshotFiles, decode, decode_state, encode, encode_entries,
    parse_snapshot_name, snapshot_path,
};
use super::*;

const PID: i64 = 1000;

fn b(epoch: i16, base_seq: i32, records: i32) -> ProducerBatch {
    ProducerBatch {
        producer_id: PID,
        producer_epoch: epoch,
        base_sequence: base_seq,
        last_offset_delta: records - 1,
        max_timestamp: 5_000,
        is_transactional: false,
        is_control: false,
    }
}

/// A manager where PID (epoch 3) appended seq 0..=9 as five 2-record batches at offsets
/// 100..=109, plus an unrelated producer.
fn seeded() -> ProducerStateManager {
    let mut m = ProducerStateManager::new(100);
    for i in 0..5 {
        let first = 100 + i64::from(i) * 2;
        m.update(&b(3, i * 2, 2), first, first + 1);
    }
    let other = ProducerBatch {
        producer_id: 7,
        ..b(0, 0, 1)
    };
    m.update(&other, 110, 110);
    m
}

fn dup(first: i64, last: i64) -> Result<Check, ProducerError> {
    Ok(Check::Duplicate(DuplicateBatch {
        first_offset: first,
        last_offset: last,
        timestamp: 5_000,
    }))
}

fn ooo(epoch: i16, first_seq: i32, expected: i32) -> Result<Check, ProducerError> {
    Err(ProducerError::OutOfOrderSequence {
        producer_id: PID,
        epoch,
        first_seq,
        expected,
    })
}

#[test]
fn check_table() {
    let m = seeded();
    let cases: Vec<(&str, ProducerBatch, Result<Check, ProducerError>)> = vec![
        ("same epoch, next sequence", b(3, 10, 3), Ok(Check::Append)),
        ("same epoch, gap", b(3, 11, 1), ooo(3, 11, 10)),
        (
            "same epoch, overlaps the last batch but is not one",
            b(3, 9, 1),
            ooo(3, 9, 10),
        ),
        ("same epoch, far behind", b(3, 0, 1), ooo(3, 0, 10)),
        ("duplicate of the newest batch", b(3, 8, 2), dup(108, 109)),
        (
            "duplicate of the oldest retained batch",
            b(3, 0, 2),
            dup(100, 101),
        ),
        ("duplicate of a middle batch", b(3, 4, 2), dup(104, 105)),
        (
            "same first sequence, different length: not a duplicate",
            b(3, 4, 3),
            ooo(3, 4, 10),
        ),
        (
            "duplicate sequence range under another epoch is fenced",
            b(2, 8, 2),
            Err(ProducerError::InvalidProducerEpoch {
                producer_id: PID,
                epoch: 2,
                current_epoch: 3,
            }),
        ),
        ("higher epoch at sequence 0", b(4, 0, 5), Ok(Check::Append)),
        ("higher epoch not at sequence 0", b(4, 10, 1), ooo(4, 10, 0)),
        (
            "lower epoch at the right sequence",
            b(2, 10, 1),
            Err(ProducerError::InvalidProducerEpoch {
                producer_id: PID,
                epoch: 2,
                current_epoch: 3,
            }),
        ),
        (
            "unknown producer at any sequence",
            ProducerBatch {
                producer_id: 42,
                ..b(9, 12_345, 3)
            },
            Ok(Check::Append),
        ),
        (
            "negative base sequence",
            b(3, -1, 1),
            Err(ProducerError::InvalidRecord {
                producer_id: PID,
                base_sequence: -1,
            }),
        ),
        (
            "negative base sequence of an unknown producer",
            ProducerBatch {
                producer_id: 43,
                ..b(0, -5, 1)
            },
            Err(ProducerError::InvalidRecord {
                producer_id: 43,
                base_sequence: -5,
            }),
        ),
        (
            "no producer id: never checked",
            ProducerBatch {
                producer_id: -1,
                producer_epoch: -1,
                ..b(0, -1, 1)
            },
            Ok(Check::Append),
        ),
    ];
    for (name, batch, want) in cases {
        assert_eq!(m.check(&batch), want, "{name}");
    }
}

#[test]
fn error_codes_are_kafkas() {
    let e = ProducerError::OutOfOrderSequence {
        producer_id: 1,
        epoch: 0,
        first_seq: 2,
        expected: 1,
    };
    assert_eq!(e.error_code().code(), 45);
    let e = ProducerError::InvalidProducerEpoch {
        producer_id: 1,
        epoch: 0,
        current_epoch: 1,
    };
    assert_eq!(e.error_code().code(), 47);
    let e = ProducerError::InvalidRecord {
        producer_id: 1,
        base_sequence: -1,
    };
    assert_eq!(e.error_code().code(), 87);
    assert_eq!(crate::StorageError::from(e).error_code().code(), 87);
}

#[test]
fn sequence_wraps_from_i32_max_to_zero() {
    let mut m = ProducerStateManager::new(0);
    // A batch of 3 ending exactly at i32::MAX.
    m.update(&b(0, i32::MAX - 2, 3), 0, 2);
    assert_eq!(m.entry(PID).unwrap().last_seq(), i32::MAX);
    assert_eq!(m.check(&b(0, 0, 1)), Ok(Check::Append));
    assert_eq!(
        m.check(&b(0, i32::MAX, 1)),
        ooo(0, i32::MAX, 0),
        "i32::MAX does not follow itself"
    );
    // A batch that itself wraps: first seq MAX-1, 4 records -> last seq 1.
    let mut m = ProducerStateManager::new(0);
    m.update(&b(0, i32::MAX - 5, 4), 0, 3);
    let wrapping = b(0, i32::MAX - 1, 4);
    assert_eq!(wrapping.last_sequence(), 1);
    assert_eq!(m.check(&wrapping), Ok(Check::Append));
    m.update(&wrapping, 4, 7);
    assert_eq!(m.check(&b(0, 2, 1)), Ok(Check::Append));
    assert_eq!(m.check(&wrapping), dup(4, 7));
    assert_eq!(increment_sequence(i32::MAX, 1), 0);
    assert_eq!(decrement_sequence(1, 3), i32::MAX - 1);
}

#[test]
fn only_the_last_five_batches_are_remembered() {
    let mut m = ProducerStateManager::new(0);
    for i in 0..7 {
        m.update(&b(0, i, 1), i64::from(i), i64::from(i));
    }
    let e = m.entry(PID).unwrap();
    assert_eq!(e.batches().len(), NUM_BATCHES_TO_RETAIN);
    assert_eq!(e.batches().next().unwrap().first_seq, 2);
    assert_eq!(m.check(&b(0, 2, 1)), dup(2, 2));
    assert_eq!(
        m.check(&b(0, 1, 1)),
        ooo(0, 1, 7),
        "older than the window: out of order, not a duplicate"
    );
}

#[test]
fn a_new_epoch_resets_the_entry() {
    let mut m = seeded();
    m.update(&b(4, 0, 2), 200, 201);
    let e = m.entry(PID).unwrap();
    assert_eq!((e.epoch, e.batches().len(), e.last_seq()), (4, 1, 1));
    assert_eq!(m.check(&b(4, 2, 1)), Ok(Check::Append));
    assert_eq!(
        m.check(&b(3, 8, 2)).unwrap_err().error_code().code(),
        47,
        "the old epoch's duplicates are fenced now"
    );
}

#[test]
fn update_tracks_offsets_timestamps_and_transactions() {
    let mut m = ProducerStateManager::new(0);
    let mut t = b(1, 0, 3);
    t.is_transactional = true;
    t.max_timestamp = 77;
    m.update(&t, 10, 12);
    assert_eq!(m.map_end_offset(), 13);
    let e = m.entry(PID).unwrap();
    assert_eq!(e.current_txn_first_offset, Some(10));
    assert_eq!(e.last_timestamp, 77);
    let last = *e.last_batch().unwrap();
    assert_eq!(
        (last.first_offset(), last.last_offset, last.offset_delta),
        (10, 12, 2)
    );
    // A marker closes the transaction and keeps the sequence.
    let marker = ProducerBatch {
        is_control: true,
        max_timestamp: 90,
        ..b(1, -1, 1)
    };
    assert_eq!(m.check(&marker), Ok(Check::Append));
    m.update(&marker, 13, 13);
    let e = m.entry(PID).unwrap();
    assert_eq!(
        (e.current_txn_first_offset, e.last_timestamp, e.last_seq()),
        (None, 90, 2)
    );
    // Non-idempotent batches only move the map end.
    let plain = ProducerBatch {
        producer_id: -1,
        ..b(-1, -1, 4)
    };
    m.update(&plain, 14, 17);
    assert_eq!((m.map_end_offset(), m.len()), (18, 1));
    let a = m.active_producers();
    assert_eq!(
        a,
        vec![ProducerEntrySnapshot {
            producer_id: PID,
            producer_epoch: 1,
            last_sequence: 2,
            last_timestamp: 90,
            coordinator_epoch: -1,
            current_txn_start_offset: -1,
        }]
    );
}

#[test]
fn truncate_to_table() {
    // (name, truncation offset, exact?, PID's last seq afterwards or None if gone, map end)
    let cases: Vec<(&str, i64, bool, Option<i32>, i64)> = vec![
        ("above the end: nothing", 500, true, Some(9), 111),
        ("at the end: nothing", 111, true, Some(9), 111),
        (
            "drops the unrelated producer only",
            110,
            false,
            Some(9),
            110,
        ),
        ("drops PID's last batch", 108, false, Some(7), 108),
        (
            "inside a batch: the batch goes whole",
            103,
            false,
            Some(1),
            103,
        ),
        ("all of PID's remembered batches", 100, false, None, 100),
    ];
    for (name, offset, exact, last_seq, end) in cases {
        let mut m = seeded();
        assert_eq!(m.truncate_to(offset), exact, "{name}");
        assert_eq!(
            m.entry(PID).map(ProducerEntry::last_seq),
            last_seq,
            "{name}"
        );
        assert_eq!(m.map_end_offset(), end, "{name}");
        if let Some(e) = m.entry(PID) {
            assert!(e.batches().all(|b| b.last_offset < offset), "{name}");
        }
    }
    // Exact when every producer keeps a batch below the point.
    let mut m = ProducerStateManager::new(0);
    m.update(&b(0, 0, 1), 0, 0);
    m.update(&b(0, 1, 1), 1, 1);
    assert!(m.truncate_to(1));
    assert_eq!(m.check(&b(0, 1, 1)), Ok(Check::Append));
}

#[test]
fn head_truncation_keeps_entries_and_full_truncation_clears() {
    let mut m = seeded();
    m.truncate_head(105);
    assert_eq!((m.len(), m.map_end_offset()), (2, 111));
    assert_eq!(m.check(&b(3, 8, 2)), dup(108, 109));
    m.truncate_head(300);
    assert_eq!(m.map_end_offset(), 300);
    assert_eq!(
        m.check(&b(3, 0, 2)),
        dup(100, 101),
        "KIP-360: retries still dedupe"
    );
    m.truncate_fully_and_start_at(400);
    assert!(m.is_empty());
    assert_eq!(m.map_end_offset(), 400);
    assert_eq!(m.check(&b(3, 77, 1)), Ok(Check::Append));
}

#[test]
fn expiry_table() {
    let exp = DEFAULT_PRODUCER_ID_EXPIRATION_MS;
    // (name, now, open transaction, removed)
    let cases = [
        ("idle just under the limit", 5_000 + exp - 1, false, 0),
        ("idle exactly the limit", 5_000 + exp, false, 1),
        ("idle long", 5_000 + 10 * exp, false, 1),
        ("open transaction never expires", 5_000 + 10 * exp, true, 0),
    ];
    for (name, now, txn, removed) in cases {
        let mut m = ProducerStateManager::new(0);
        let mut batch = b(0, 0, 1);
        batch.is_transactional = txn;
        m.update(&batch, 0, 0);
        assert_eq!(m.remove_expired(now, exp), removed, "{name}");
        assert_eq!(m.len(), 1 - removed, "{name}");
    }
    let mut m = ProducerStateManager::new(0);
    m.update(&b(0, 0, 1), 0, 0);
    m.remove_expired(5_000 + exp, exp);
    assert_eq!(
        m.check(&b(0, 5, 1)),
        Ok(Check::Append),
        "an expired producer is unknown: any sequence"
    );
}

#[test]
fn snapshot_layout_is_kafkas() {
    let e = SnapshotEntry {
        producer_id: 0x0102_0304_0506_0708,
        epoch: 0x090a,
        last_sequence: 0x0b0c_0d0e,
        last_offset: 0x0f10_1112_1314_1516,
        offset_delta: 0x1718_191a,
        timestamp: 0x1b1c_1d1e_1f20_2122,
        coordinator_epoch: 0x2324_2526,
        current_txn_first_offset: -1,
    };
    let bytes = encode_entries(&[e]);
    assert_eq!(bytes.len(), 10 + 46);
    assert_eq!(&bytes[0..2], &[0, 1], "int16 version 1");
    assert_eq!(&bytes[6..10], &[0, 0, 0, 1], "int32 count");
    let mut want: Vec<u8> = (1u8..=0x26).collect();
    want.extend_from_slice(&[0xff; 8]);
    assert_eq!(
        &bytes[10..],
        &want[..],
        "fields in ProducerSnapshot.json order"
    );
    let crc = skiff_record::crc32c(&bytes[6..]);
    assert_eq!(
        &bytes[2..6],
        &crc.to_be_bytes(),
        "CRC-32C over bytes 6..end"
    );
    assert_eq!(decode(&bytes), Ok(vec![e]));
    let empty = encode_entries(&[]);
    assert_eq!(empty.len(), 10);
    assert_eq!(decode(&empty), Ok(vec![]));
}

#[test]
fn snapshot_round_trip_restores_the_decisions() {
    let mut m = seeded();
    let mut t = ProducerBatch {
        producer_id: 9,
        is_transactional: true,
        ..b(2, 40, 3)
    };
    t.max_timestamp = 6_000;
    m.update(&t, 111, 113);
    // An entry without batches survives as one.
    let restored_empty = SnapshotEntry {
        producer_id: 11,
        epoch: 5,
        last_sequence: -1,
        last_offset: -1,
        offset_delta: 0,
        timestamp: 1,
        coordinator_epoch: 3,
        current_txn_first_offset: -1,
    }
    .to_entry();
    assert_eq!(restored_empty.batches().len(), 0);
    let bytes = encode(&m);
    let r = decode_state(114, &bytes).unwrap();
    assert_eq!(r.map_end_offset(), 114);
    assert_eq!(r.active_producers(), m.active_producers());
    // Only the last batch is kept, like Kafka: it still dedupes and orders.
    assert_eq!(r.check(&b(3, 8, 2)), dup(108, 109));
    assert_eq!(r.check(&b(3, 10, 1)), Ok(Check::Append));
    assert_eq!(r.check(&b(3, 6, 2)), ooo(3, 6, 10));
    let e9 = r.entry(9).unwrap();
    assert_eq!(e9.current_txn_first_offset, Some(111));
    assert_eq!(
        *e9.last_batch().unwrap(),
        BatchMetadata {
            first_seq: 40,
            last_seq: 42,
            last_offset: 113,
            offset_delta: 2,
            timestamp: 6_000
        }
    );
    assert_eq!(encode(&r), bytes, "re-encoding is byte-identical");
}

#[test]
fn corrupt_snapshots_are_rejected() {
    let good = encode(&seeded());
    let mut bad_crc = good.clone();
    *bad_crc.last_mut().unwrap() ^= 1;
    let mut bad_version = good.clone();
    bad_version[1] = 2;
    let mut bad_count = good.clone();
    bad_count[9] = 3;
    let c = skiff_record::crc32c(&bad_count[6..]);
    bad_count[2..6].copy_from_slice(&c.to_be_bytes());
    let mut trailing = good.clone();
    trailing.push(0);
    let c = skiff_record::crc32c(&trailing[6..]);
    trailing[2..6].copy_from_slice(&c.to_be_bytes());
    let mut negative = encode_entries(&[]);
    negative[6..10].copy_from_slice(&(-1i32).to_be_bytes());
    let c = skiff_record::crc32c(&negative[6..]);
    negative[2..6].copy_from_slice(&c.to_be_bytes());
    assert!(matches!(decode(&bad_crc), Err(SnapshotError::Crc { .. })));
    assert_eq!(decode(&bad_version), Err(SnapshotError::Version(2)));
    assert!(matches!(
        decode(&bad_count),
        Err(SnapshotError::Layout { count: 3, .. })
    ));
    assert!(matches!(
        decode(&trailing),
        Err(SnapshotError::Layout { .. })
    ));
    assert!(matches!(
        decode(&negative),
        Err(SnapshotError::Layout { count: -1, .. })
    ));
    for n in 0..10 {
        assert_eq!(decode(&good[..n]), Err(SnapshotError::Truncated(n)));
    }
    // Every truncation of the body is caught (by the CRC).
    for n in 10..good.len() {
        assert!(decode(&good[..n]).is_err(), "cut at {n}");
    }
}

#[test]
fn snapshot_files_load_the_newest_valid_one() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = seeded();
    let mut files = SnapshotFiles::scan(dir.path()).unwrap();
    assert!(files.write(&m, false).unwrap());
    assert!(!files.write(&m, false).unwrap(), "one file per offset");
    m.update(&b(3, 10, 1), 111, 111);
    files.write(&m, true).unwrap();
    assert_eq!(files.offsets(), vec![111, 112]);
    assert!(snapshot_path(dir.path(), 112).exists());
    assert_eq!(
        snapshot_path(dir.path(), 112).file_name().unwrap(),
        "00000000000000000112.snapshot"
    );
    assert_eq!(
        parse_snapshot_name("00000000000000000112.snapshot"),
        Some(112)
    );
    assert_eq!(parse_snapshot_name("112.snapshot"), None);
    // Corrupt the newest: it is deleted and the older one is used.
    std::fs::write(snapshot_path(dir.path(), 112), b"garbage-garbage").unwrap();
    let mut files = SnapshotFiles::scan(dir.path()).unwrap();
    let loaded = files.load_latest(i64::MAX).unwrap();
    assert_eq!(loaded.map_end_offset(), 111);
    assert_eq!(loaded.entry(PID).unwrap().last_seq(), 9);
    assert!(!snapshot_path(dir.path(), 112).exists());
    assert_eq!(files.offsets(), vec![111]);
    assert!(files.load_latest(110).is_none(), "nothing at or below 110");
    // Retention of files.
    for end in [120, 130, 140] {
        let mut s = ProducerStateManager::new(end);
        s.update(&b(0, 0, 1), end - 1, end - 1);
        files.write(&s, false).unwrap();
    }
    files.retain_latest();
    assert_eq!(files.offsets(), vec![130, 140]);
    files.delete_above(135);
    files.delete_below(131);
    assert!(files.offsets().is_empty());
    assert!(!snapshot_path(dir.path(), 130).exists());
}

/// issue 12 item 10: the largest producer id ever held survives expiry and truncation, and
/// a state restored from snapshot entries starts at their largest id.
#[test]
fn max_producer_id_is_never_lowered() {
    let exp = DEFAULT_PRODUCER_ID_EXPIRATION_MS;
    let mut m = ProducerStateManager::new(0);
    assert_eq!(m.max_producer_id(), None);
    let plain = ProducerBatch {
        producer_id: NO_PRODUCER_ID,
        ..b(0, 0, 1)
    };
    m.update(&plain, 0, 0);
    assert_eq!(
        m.max_producer_id(),
        None,
        "non-idempotent batches carry no id"
    );
    let mut m = seeded();
    assert_eq!(m.max_producer_id(), Some(PID));
    m.update(
        &ProducerBatch {
            producer_id: 3,
            ..b(0, 0, 1)
        },
        111,
        111,
    );
    assert_eq!(
        m.max_producer_id(),
        Some(PID),
        "a smaller id does not lower it"
    );
    m.remove_expired(5_000 + exp, exp);
    assert!(m.is_empty());
    assert_eq!(m.max_producer_id(), Some(PID), "expiry keeps it");
    let mut m = seeded();
    m.truncate_to(0);
    m.truncate_fully_and_start_at(0);
    assert_eq!(m.max_producer_id(), Some(PID), "truncation keeps it");
    let restored = ProducerStateManager::from_entries(10, seeded().entries().into_iter().cloned());
    assert_eq!(restored.max_producer_id(), Some(PID));
}
