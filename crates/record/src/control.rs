//! Transaction markers (KIP-98): the control batches that end a transaction on a partition.
//!
//! Mental model (Kafka's `ControlRecordType` and `EndTransactionMarker`): a control batch has
//! the control attribute bit set and holds one record whose key says what it controls and whose
//! value carries the details. An end-transaction marker is a control batch that is also
//! transactional, written by the transaction coordinator for one producer:
//! - key (4 bytes): `version i16 (0) | type i16` where type 0 = ABORT, 1 = COMMIT (2 and above
//!   are KRaft's LEADER_CHANGE, SNAPSHOT_HEADER, ... and not transaction markers);
//! - value (6 bytes): `version i16 (0) | coordinator_epoch i32`.
//!
//! Parsing is lenient on versions above 0 as Kafka is (the fields it knows are read, trailing
//! bytes ignored) and strict on negative versions and short fields. Pure functions, no I/O.

use crate::batch::{BatchView, TimestampType};
use crate::builder::{BatchBuilder, BatchOptions};
use crate::compression::Compression;
use crate::error::RecordError;
use crate::record::records;

/// The record key version Kafka writes.
pub const CONTROL_KEY_VERSION: i16 = 0;
/// The marker value version Kafka writes.
pub const END_TXN_MARKER_VALUE_VERSION: i16 = 0;
/// Decompressed bytes a marker batch may expand to (one tiny record).
const MAX_MARKER_RECORDS_BYTES: usize = 64 * 1024;

/// The type of an end-transaction marker (Kafka's wire type id in brackets).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ControlType {
    /// 0
    Abort,
    /// 1
    Commit,
}

impl ControlType {
    /// The wire type id (0 abort, 1 commit).
    pub fn id(self) -> i16 {
        match self {
            ControlType::Abort => 0,
            ControlType::Commit => 1,
        }
    }

    /// The type of a wire id; `None` for ids that are not transaction markers.
    pub fn from_id(id: i16) -> Option<Self> {
        match id {
            0 => Some(ControlType::Abort),
            1 => Some(ControlType::Commit),
            _ => None,
        }
    }
}

/// The content of an end-transaction marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EndTxnMarker {
    pub control_type: ControlType,
    pub coordinator_epoch: i32,
}

fn read_i16(b: &[u8], at: usize, what: &str) -> Result<i16, RecordError> {
    b.get(at..at + 2)
        .map(|s| i16::from_be_bytes([s[0], s[1]]))
        .ok_or_else(|| RecordError::MalformedRecord(format!("control record {what} too short")))
}

/// Reads the control type id of a control record key (`version i16 | type i16`).
pub fn parse_control_type_id(key: Option<&[u8]>) -> Result<i16, RecordError> {
    let key =
        key.ok_or_else(|| RecordError::MalformedRecord("control record without key".into()))?;
    let version = read_i16(key, 0, "key")?;
    if version < 0 {
        return Err(RecordError::MalformedRecord(format!(
            "control record key version {version}"
        )));
    }
    read_i16(key, 2, "key")
}

/// The end-transaction marker a batch carries: `None` when the batch is not a control batch
/// or its control type is not ABORT/COMMIT; an error when the control record is malformed.
pub fn parse_end_txn_marker(view: &BatchView<'_>) -> Result<Option<EndTxnMarker>, RecordError> {
    if !view.is_control() {
        return Ok(None);
    }
    let data = view.records_data(MAX_MARKER_RECORDS_BYTES)?;
    let rec = records(&data, view.records_count())
        .next()
        .ok_or_else(|| RecordError::MalformedRecord("control batch without a record".into()))??;
    let Some(control_type) = ControlType::from_id(parse_control_type_id(rec.key)?) else {
        return Ok(None);
    };
    let value = rec
        .value
        .ok_or_else(|| RecordError::MalformedRecord("transaction marker without value".into()))?;
    let version = read_i16(value, 0, "value")?;
    if version < 0 {
        return Err(RecordError::MalformedRecord(format!(
            "transaction marker value version {version}"
        )));
    }
    let epoch = value
        .get(2..6)
        .map(|s| i32::from_be_bytes([s[0], s[1], s[2], s[3]]))
        .ok_or_else(|| RecordError::MalformedRecord("transaction marker value too short".into()))?;
    Ok(Some(EndTxnMarker {
        control_type,
        coordinator_epoch: epoch,
    }))
}

/// The record key of a marker of `control_type`.
pub fn control_key(control_type: ControlType) -> [u8; 4] {
    let mut k = [0u8; 4];
    k[0..2].copy_from_slice(&CONTROL_KEY_VERSION.to_be_bytes());
    k[2..4].copy_from_slice(&control_type.id().to_be_bytes());
    k
}

/// The record value of a marker written by a coordinator at `coordinator_epoch`.
pub fn end_txn_marker_value(coordinator_epoch: i32) -> [u8; 6] {
    let mut v = [0u8; 6];
    v[0..2].copy_from_slice(&END_TXN_MARKER_VALUE_VERSION.to_be_bytes());
    v[2..6].copy_from_slice(&coordinator_epoch.to_be_bytes());
    v
}

/// A v2 end-transaction marker batch as Kafka's `MemoryRecords.withEndTransactionMarker`
/// writes it: base offset 0, no partition leader epoch (the log stamps both), attributes
/// transactional | control, CreateTime, uncompressed, base sequence -1, one record at offset
/// delta 0 with the marker's key and value, CRC set.
pub fn build_end_txn_marker(
    producer_id: i64,
    producer_epoch: i16,
    coordinator_epoch: i32,
    control_type: ControlType,
    timestamp_ms: i64,
) -> Result<Vec<u8>, RecordError> {
    let mut b = BatchBuilder::new(BatchOptions {
        base_offset: 0,
        partition_leader_epoch: -1,
        compression: Compression::None,
        compression_level: None,
        timestamp_type: TimestampType::CreateTime,
        is_transactional: true,
        is_control: true,
        producer_id,
        producer_epoch,
        base_sequence: -1,
        delete_horizon_ms: None,
    });
    let key = control_key(control_type);
    let value = end_txn_marker_value(coordinator_epoch);
    b.append(timestamp_ms, Some(&key), Some(&value), &[]);
    b.build()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marker_with(key: &[u8], value: Option<&[u8]>, control: bool) -> Vec<u8> {
        let mut b = BatchBuilder::new(BatchOptions {
            is_transactional: true,
            is_control: control,
            producer_id: 7,
            producer_epoch: 1,
            ..BatchOptions::default()
        });
        b.append(5, Some(key), value, &[]);
        b.build().unwrap()
    }

    #[test]
    fn round_trip_both_types() {
        for (t, epoch) in [(ControlType::Abort, 0), (ControlType::Commit, 42)] {
            let bytes = build_end_txn_marker(9, 3, epoch, t, 1_000).unwrap();
            let v = BatchView::new(&bytes).unwrap();
            v.verify_crc().unwrap();
            assert!(v.is_control() && v.is_transactional());
            assert_eq!((v.producer_id(), v.producer_epoch()), (9, 3));
            assert_eq!((v.base_sequence(), v.records_count()), (-1, 1));
            assert_eq!((v.base_offset(), v.last_offset_delta()), (0, 0));
            assert_eq!((v.partition_leader_epoch(), v.max_timestamp()), (-1, 1_000));
            assert_eq!(v.timestamp_type(), TimestampType::CreateTime);
            assert_eq!(v.compression().unwrap(), Compression::None);
            assert_eq!(
                parse_end_txn_marker(&v).unwrap(),
                Some(EndTxnMarker {
                    control_type: t,
                    coordinator_epoch: epoch
                })
            );
        }
    }

    #[test]
    fn parse_table() {
        type Case<'a> = (
            &'a str,
            &'a [u8],
            Option<&'a [u8]>,
            bool,
            Result<Option<(i16, i32)>, ()>,
        );
        let cases: &[Case<'_>] = &[
            (
                "abort",
                &[0, 0, 0, 0],
                Some(&[0, 0, 0, 0, 0, 5]),
                true,
                Ok(Some((0, 5))),
            ),
            (
                "commit",
                &[0, 0, 0, 1],
                Some(&[0, 0, 0, 0, 0, 6]),
                true,
                Ok(Some((1, 6))),
            ),
            (
                "leader change is no marker",
                &[0, 0, 0, 2],
                Some(&[1]),
                true,
                Ok(None),
            ),
            ("unknown type", &[0, 0, 0x7f, 0], None, true, Ok(None)),
            ("not a control batch", &[0, 0, 0, 0], None, false, Ok(None)),
            (
                "newer key version, longer key",
                &[0, 3, 0, 1, 9, 9],
                Some(&[0, 0, 0, 0, 0, 1]),
                true,
                Ok(Some((1, 1))),
            ),
            (
                "newer value version, longer value",
                &[0, 0, 0, 0],
                Some(&[0, 2, 0, 0, 1, 0, 7, 7]),
                true,
                Ok(Some((0, 256))),
            ),
            (
                "negative key version",
                &[0xff, 0xff, 0, 0],
                Some(&[0, 0, 0, 0, 0, 1]),
                true,
                Err(()),
            ),
            (
                "short key",
                &[0, 0, 0],
                Some(&[0, 0, 0, 0, 0, 1]),
                true,
                Err(()),
            ),
            ("no value", &[0, 0, 0, 1], None, true, Err(())),
            (
                "short value",
                &[0, 0, 0, 1],
                Some(&[0, 0, 0, 0, 1]),
                true,
                Err(()),
            ),
            (
                "negative value version",
                &[0, 0, 0, 1],
                Some(&[0x80, 0, 0, 0, 0, 1]),
                true,
                Err(()),
            ),
        ];
        for (name, key, value, control, want) in cases {
            let bytes = marker_with(key, *value, *control);
            let got = parse_end_txn_marker(&BatchView::new(&bytes).unwrap())
                .map(|m| m.map(|m| (m.control_type.id(), m.coordinator_epoch)))
                .map_err(|_| ());
            assert_eq!(&got, want, "{name}");
        }
    }

    #[test]
    fn empty_control_batch_is_an_error() {
        let bytes = BatchBuilder::new(BatchOptions {
            is_control: true,
            ..BatchOptions::default()
        })
        .build()
        .unwrap();
        assert!(parse_end_txn_marker(&BatchView::new(&bytes).unwrap()).is_err());
    }
}
