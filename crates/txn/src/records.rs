//! `__transaction_state` records: Kafka's `TransactionLogKey` / `TransactionLogValue`, each
//! prefixed by its int16 version, so Kafka's tools can read our log.
//!
//! Format: key = `int16 0` + `TransactionLogKey` v0 (the transactional id); value = `int16
//! version` + `TransactionLogValue` (producer id, epoch, timeout, status, partitions grouped by
//! topic — null in `Empty` —, last update and start timestamps); a missing value is a tombstone
//! (an expired id). We write value version 0 (transactions v1, what Kafka writes while
//! `transaction.version` < 2) and read versions 0 and 1.
//!
//! Invariant: decoding never panics; anything malformed is a [`TxnError`].

use std::collections::BTreeMap;

use bytes::{BufMut, Bytes, BytesMut};
use skiff_protocol::{Codec, PartitionsSchema, TransactionLogKey, TransactionLogValue, wire};

use crate::error::TxnError;
use crate::metadata::{NO_EPOCH, TxnMetadata, TxnState};

/// The topic whose partitions hold the coordinator's state.
pub const TRANSACTION_STATE_TOPIC: &str = "__transaction_state";
/// The `TransactionLogKey` version Kafka writes (the only one).
pub const TXN_LOG_KEY_VERSION: i16 = 0;
/// The `TransactionLogValue` version we write (transactions v1).
pub const TXN_LOG_VALUE_VERSION: i16 = 0;

/// The `__transaction_state` partition that owns `transactional_id`: Kafka's
/// `Utils.abs(transactionalId.hashCode()) % transaction.state.log.num.partitions`, with Java's
/// UTF-16 string hash. Returns 0 when `partitions < 1`.
pub fn partition_for(transactional_id: &str, partitions: i32) -> i32 {
    if partitions < 1 {
        return 0;
    }
    let mut h: i32 = 0;
    for unit in transactional_id.encode_utf16() {
        h = h.wrapping_mul(31).wrapping_add(i32::from(unit));
    }
    // Utils.abs: Math.abs, except that Integer.MIN_VALUE maps to 0 (not `h & 0x7fffffff`).
    let abs = if h == i32::MIN { 0 } else { h.abs() };
    abs % partitions
}

fn encode_versioned<T: Codec>(version: i16, v: &T) -> Result<Bytes, TxnError> {
    let size = v
        .encoded_size(version)
        .map_err(|e| TxnError::MalformedRecord(e.to_string()))?;
    let mut out = BytesMut::with_capacity(2 + size);
    out.put_i16(version);
    v.encode(&mut out, version)
        .map_err(|e| TxnError::MalformedRecord(e.to_string()))?;
    Ok(out.freeze())
}

/// The record key for `transactional_id`.
pub(crate) fn encode_key(transactional_id: &str) -> Result<Bytes, TxnError> {
    encode_versioned(
        TXN_LOG_KEY_VERSION,
        &TransactionLogKey {
            transactional_id: transactional_id.to_string(),
        },
    )
}

/// The record value for `m` as Kafka's `TransactionLog.valueToBytes` writes it (version 0).
pub(crate) fn encode_value(m: &TxnMetadata) -> Result<Bytes, TxnError> {
    let partitions = if m.state == TxnState::Empty {
        None
    } else {
        let mut by_topic: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
        for (topic, p) in &m.partitions {
            by_topic.entry(topic).or_default().push(*p);
        }
        Some(
            by_topic
                .into_iter()
                .map(|(topic, partition_ids)| PartitionsSchema {
                    topic: topic.to_string(),
                    partition_ids,
                })
                .collect(),
        )
    };
    let value = TransactionLogValue {
        producer_id: m.producer_id,
        previous_producer_id: -1,
        next_producer_id: -1,
        producer_epoch: m.producer_epoch,
        transaction_timeout_ms: m.timeout_ms,
        transaction_status: m.state.id(),
        transaction_partitions: partitions,
        transaction_last_update_timestamp_ms: m.last_update_ms,
        transaction_start_timestamp_ms: m.start_ms,
        client_transaction_version: 0,
    };
    encode_versioned(TXN_LOG_VALUE_VERSION, &value)
}

/// Decodes one record: the transactional id and the value (`None` = tombstone).
pub fn decode_record(
    key: &[u8],
    value: Option<&[u8]>,
) -> Result<(String, Option<TransactionLogValue>), TxnError> {
    let mut k = Bytes::copy_from_slice(key);
    let key_version = wire::read_i16(&mut k)?;
    if key_version != TXN_LOG_KEY_VERSION {
        return Err(TxnError::UnknownKeyVersion(key_version));
    }
    let id = TransactionLogKey::decode(&mut k, key_version)?.transactional_id;
    let Some(value) = value else {
        return Ok((id, None));
    };
    let mut v = Bytes::copy_from_slice(value);
    let value_version = wire::read_i16(&mut v)?;
    if !(0..=1).contains(&value_version) {
        return Err(TxnError::UnknownValueVersion(value_version));
    }
    let value = TransactionLogValue::decode(&mut v, value_version)?;
    Ok((id, Some(value)))
}

/// The metadata a decoded value describes; `None` for `Dead` (the id is forgotten).
pub(crate) fn metadata_from_value(
    v: &TransactionLogValue,
) -> Result<Option<TxnMetadata>, TxnError> {
    let state = TxnState::from_id(v.transaction_status)
        .ok_or(TxnError::UnknownState(v.transaction_status))?;
    if state == TxnState::Dead {
        return Ok(None);
    }
    if v.producer_id < 0 || v.producer_epoch < 0 {
        return Err(TxnError::MalformedRecord(format!(
            "producer id {} epoch {} in state {}",
            v.producer_id,
            v.producer_epoch,
            state.name()
        )));
    }
    let mut partitions = std::collections::BTreeSet::new();
    if !matches!(
        state,
        TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort
    ) {
        for t in v.transaction_partitions.iter().flatten() {
            for p in &t.partition_ids {
                partitions.insert((t.topic.clone(), *p));
            }
        }
    }
    Ok(Some(TxnMetadata {
        producer_id: v.producer_id,
        previous_producer_id: v.previous_producer_id,
        producer_epoch: v.producer_epoch,
        last_producer_epoch: NO_EPOCH,
        timeout_ms: v.transaction_timeout_ms,
        state,
        partitions,
        start_ms: v.transaction_start_timestamp_ms,
        last_update_ms: v.transaction_last_update_timestamp_ms,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(state: TxnState, parts: &[(&str, i32)]) -> TxnMetadata {
        TxnMetadata {
            producer_id: 1000,
            previous_producer_id: -1,
            producer_epoch: 3,
            last_producer_epoch: -1,
            timeout_ms: 60_000,
            state,
            partitions: parts.iter().map(|(t, p)| (t.to_string(), *p)).collect(),
            start_ms: 5,
            last_update_ms: 9,
        }
    }

    #[test]
    fn key_is_kafkas_version_0() {
        let k = encode_key("tx").unwrap();
        assert_eq!(&k[..], &[0, 0, 0, 2, b't', b'x']);
    }

    #[test]
    fn value_v0_round_trips_and_matches_kafkas_layout() {
        let m = meta(TxnState::Ongoing, &[("b", 1), ("a", 0), ("a", 2)]);
        let v = encode_value(&m).unwrap();
        // version 0, pid 1000, epoch 3, timeout 60000, status 1, 2 topics ("a" first).
        assert_eq!(&v[..2], &[0, 0]);
        assert_eq!(&v[2..10], &1000i64.to_be_bytes());
        assert_eq!(&v[10..12], &3i16.to_be_bytes());
        assert_eq!(&v[12..16], &60_000i32.to_be_bytes());
        assert_eq!(v[16], 1);
        assert_eq!(&v[17..21], &2i32.to_be_bytes());
        assert_eq!(&v[21..24], &[0, 1, b'a']);
        let k = encode_key("tx").unwrap();
        let (id, value) = decode_record(&k, Some(&v)).unwrap();
        assert_eq!(id, "tx");
        let back = metadata_from_value(&value.unwrap()).unwrap().unwrap();
        assert_eq!(back, m);
    }

    #[test]
    fn empty_writes_null_partitions() {
        let v = encode_value(&meta(TxnState::Empty, &[])).unwrap();
        assert_eq!(&v[17..21], &(-1i32).to_be_bytes(), "null array");
    }

    #[test]
    fn reads_value_version_1_with_tagged_fields() {
        let value = TransactionLogValue {
            producer_id: 7,
            previous_producer_id: 6,
            producer_epoch: 2,
            transaction_timeout_ms: 1000,
            transaction_status: TxnState::PrepareCommit.id(),
            transaction_partitions: Some(vec![PartitionsSchema {
                topic: "t".into(),
                partition_ids: vec![0, 1],
            }]),
            transaction_last_update_timestamp_ms: 10,
            transaction_start_timestamp_ms: 3,
            ..Default::default()
        };
        let v = encode_versioned(1, &value).unwrap();
        let (_, back) = decode_record(&encode_key("x").unwrap(), Some(&v)).unwrap();
        let m = metadata_from_value(&back.unwrap()).unwrap().unwrap();
        assert_eq!(m.previous_producer_id, 6);
        assert_eq!(m.state, TxnState::PrepareCommit);
        assert_eq!(m.partitions.len(), 2);
    }

    #[test]
    fn malformed_records_are_errors_not_panics() {
        let k = encode_key("x").unwrap();
        assert_eq!(
            decode_record(&[0, 1, 0, 0], None),
            Err(TxnError::UnknownKeyVersion(1))
        );
        assert!(decode_record(&[0], None).is_err());
        assert!(decode_record(&[0, 0, 0, 9, b'x'], None).is_err());
        assert_eq!(
            decode_record(&k, Some(&[0, 2])),
            Err(TxnError::UnknownValueVersion(2))
        );
        assert!(decode_record(&k, Some(&[0, 0, 1, 2])).is_err());
        let mut bad = meta(TxnState::Empty, &[]);
        bad.state = TxnState::Ongoing;
        let mut v = encode_value(&bad).unwrap().to_vec();
        v[16] = 42;
        let (_, value) = decode_record(&k, Some(&v)).unwrap();
        assert_eq!(
            metadata_from_value(&value.unwrap()),
            Err(TxnError::UnknownState(42))
        );
    }

    #[test]
    fn partition_for_matches_java_string_hash() {
        // "test-group".hashCode() == 627841412 in Java; 627841412 % 50 == 12.
        assert_eq!(partition_for("test-group", 50), 12);
        // "polygenelubricants".hashCode() == Integer.MIN_VALUE; Utils.abs -> 0.
        assert_eq!(partition_for("polygenelubricants", 50), 0);
        // Negative hashes take Math.abs: "my-txn".hashCode() == -1061187895 -> 45 (not 3).
        assert_eq!(partition_for("my-txn", 50), 45);
        assert_eq!(partition_for("abcdefghij", 50), 9);
        assert_eq!(partition_for("", 50), 0);
        assert_eq!(partition_for("t", 0), 0);
    }
}
