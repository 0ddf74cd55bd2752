//! `__consumer_offsets` records: Kafka's key/value encodings, so Kafka's tools can read our log.
//!
//! Format: a key is `int16 version` + the key struct encoded at that version; the version names
//! the record type (0/1 OffsetCommit, 2 GroupMetadata, 3 ConsumerGroupMetadata,
//! 4 ConsumerGroupPartitionMetadata, 5 ConsumerGroupMemberMetadata, 6 target-assignment
//! metadata, 7 target-assignment member, 8 current member assignment). A value is `int16
//! version` + the value struct at that version; a missing value is a tombstone. We write the
//! versions Kafka 4.x writes (OffsetCommitKey 1, OffsetCommitValue 3 or 1 when an expire
//! timestamp is set, GroupMetadataValue 3, KIP-848 values 0) and read every version the
//! generated codec supports.
//!
//! Invariant: decoding never panics; anything malformed is a [`GroupError`].

use bytes::{BufMut, Bytes, BytesMut};
use skiff_protocol::{
    Codec, ConsumerGroupCurrentMemberAssignmentKey, ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey, ConsumerGroupMemberMetadataValue, ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue, ConsumerGroupPartitionMetadataKey,
    ConsumerGroupPartitionMetadataValue, ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue, ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue, GroupMetadataKey, GroupMetadataValue,
    OffsetCommitKey, OffsetCommitValue, wire,
};

use crate::error::GroupError;

/// One `__consumer_offsets` record as bytes: key and value (`None` = tombstone).
pub type RawRecord = (Bytes, Option<Bytes>);

/// Key version of an offset commit record Kafka writes.
pub const OFFSET_COMMIT_KEY_VERSION: i16 = 1;
/// Key version (record type) of classic group metadata.
pub const GROUP_METADATA_KEY_VERSION: i16 = 2;
/// Value version of `GroupMetadataValue` Kafka 4.x writes.
pub const GROUP_METADATA_VALUE_VERSION: i16 = 3;

/// A decoded `__consumer_offsets` record.
#[derive(Clone, Debug, PartialEq)]
pub enum CoordinatorRecord {
    OffsetCommit(OffsetCommitKey, Option<OffsetCommitValue>),
    GroupMetadata(GroupMetadataKey, Option<GroupMetadataValue>),
    ConsumerGroupMetadata(ConsumerGroupMetadataKey, Option<ConsumerGroupMetadataValue>),
    ConsumerGroupPartitionMetadata(
        ConsumerGroupPartitionMetadataKey,
        Option<ConsumerGroupPartitionMetadataValue>,
    ),
    ConsumerGroupMemberMetadata(
        ConsumerGroupMemberMetadataKey,
        Option<ConsumerGroupMemberMetadataValue>,
    ),
    ConsumerGroupTargetAssignmentMetadata(
        ConsumerGroupTargetAssignmentMetadataKey,
        Option<ConsumerGroupTargetAssignmentMetadataValue>,
    ),
    ConsumerGroupTargetAssignmentMember(
        ConsumerGroupTargetAssignmentMemberKey,
        Option<ConsumerGroupTargetAssignmentMemberValue>,
    ),
    ConsumerGroupCurrentMemberAssignment(
        ConsumerGroupCurrentMemberAssignmentKey,
        Option<ConsumerGroupCurrentMemberAssignmentValue>,
    ),
}

fn encode_versioned<T: Codec>(version: i16, v: &T) -> Result<Bytes, GroupError> {
    let size = v
        .encoded_size(version)
        .map_err(|e| GroupError::MalformedRecord(e.to_string()))?;
    let mut out = BytesMut::with_capacity(2 + size);
    out.put_i16(version);
    v.encode(&mut out, version)
        .map_err(|e| GroupError::MalformedRecord(e.to_string()))?;
    Ok(out.freeze())
}

fn decode_versioned<T: Codec>(bytes: &Bytes) -> Result<(i16, T), GroupError> {
    let mut buf = bytes.clone();
    let version = wire::read_i16(&mut buf)?;
    let v = T::decode(&mut buf, version)?;
    Ok((version, v))
}

fn decode_value<T: Codec>(value: Option<&Bytes>) -> Result<Option<T>, GroupError> {
    match value {
        None => Ok(None),
        Some(b) => decode_versioned::<T>(b).map(|(_, v)| Some(v)),
    }
}

fn encode_pair<K: Codec, V: Codec>(
    key_version: i16,
    key: &K,
    value: Option<(i16, &V)>,
) -> Result<RawRecord, GroupError> {
    let k = encode_versioned(key_version, key)?;
    let v = match value {
        Some((version, v)) => Some(encode_versioned(version, v)?),
        None => None,
    };
    Ok((k, v))
}

impl CoordinatorRecord {
    /// Encodes the record with the versions Kafka 4.x writes.
    pub fn encode(&self) -> Result<RawRecord, GroupError> {
        use CoordinatorRecord as R;
        match self {
            R::OffsetCommit(k, v) => {
                let version = |v: &OffsetCommitValue| if v.expire_timestamp >= 0 { 1 } else { 3 };
                encode_pair(
                    OFFSET_COMMIT_KEY_VERSION,
                    k,
                    v.as_ref().map(|v| (version(v), v)),
                )
            }
            R::GroupMetadata(k, v) => encode_pair(
                GROUP_METADATA_KEY_VERSION,
                k,
                v.as_ref().map(|v| (GROUP_METADATA_VALUE_VERSION, v)),
            ),
            R::ConsumerGroupMetadata(k, v) => encode_pair(3, k, v.as_ref().map(|v| (0, v))),
            R::ConsumerGroupPartitionMetadata(k, v) => {
                encode_pair(4, k, v.as_ref().map(|v| (0, v)))
            }
            R::ConsumerGroupMemberMetadata(k, v) => encode_pair(5, k, v.as_ref().map(|v| (0, v))),
            R::ConsumerGroupTargetAssignmentMetadata(k, v) => {
                encode_pair(6, k, v.as_ref().map(|v| (0, v)))
            }
            R::ConsumerGroupTargetAssignmentMember(k, v) => {
                encode_pair(7, k, v.as_ref().map(|v| (0, v)))
            }
            R::ConsumerGroupCurrentMemberAssignment(k, v) => {
                encode_pair(8, k, v.as_ref().map(|v| (0, v)))
            }
        }
    }

    /// Decodes a key and an optional value (tombstone when `None`).
    pub fn decode(key: &Bytes, value: Option<&Bytes>) -> Result<CoordinatorRecord, GroupError> {
        let mut peek = key.clone();
        let key_version = wire::read_i16(&mut peek)?;
        use CoordinatorRecord as R;
        Ok(match key_version {
            0 | 1 => R::OffsetCommit(decode_versioned(key)?.1, decode_value(value)?),
            2 => R::GroupMetadata(decode_versioned(key)?.1, decode_value(value)?),
            3 => R::ConsumerGroupMetadata(decode_versioned(key)?.1, decode_value(value)?),
            4 => R::ConsumerGroupPartitionMetadata(decode_versioned(key)?.1, decode_value(value)?),
            5 => R::ConsumerGroupMemberMetadata(decode_versioned(key)?.1, decode_value(value)?),
            6 => R::ConsumerGroupTargetAssignmentMetadata(
                decode_versioned(key)?.1,
                decode_value(value)?,
            ),
            7 => R::ConsumerGroupTargetAssignmentMember(
                decode_versioned(key)?.1,
                decode_value(value)?,
            ),
            8 => R::ConsumerGroupCurrentMemberAssignment(
                decode_versioned(key)?.1,
                decode_value(value)?,
            ),
            other => return Err(GroupError::UnknownRecordType(other)),
        })
    }

    /// The group the record belongs to.
    pub fn group_id(&self) -> &str {
        use CoordinatorRecord as R;
        match self {
            R::OffsetCommit(k, _) => &k.group,
            R::GroupMetadata(k, _) => &k.group,
            R::ConsumerGroupMetadata(k, _) => &k.group_id,
            R::ConsumerGroupPartitionMetadata(k, _) => &k.group_id,
            R::ConsumerGroupMemberMetadata(k, _) => &k.group_id,
            R::ConsumerGroupTargetAssignmentMetadata(k, _) => &k.group_id,
            R::ConsumerGroupTargetAssignmentMember(k, _) => &k.group_id,
            R::ConsumerGroupCurrentMemberAssignment(k, _) => &k.group_id,
        }
    }
}

/// The `__consumer_offsets` partition that owns `group_id`: Kafka's
/// `Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions`, with Java's UTF-16 string
/// hash. Returns 0 when `num_partitions < 1`.
pub fn partition_for(group_id: &str, num_partitions: i32) -> i32 {
    if num_partitions < 1 {
        return 0;
    }
    let mut h: i32 = 0;
    for unit in group_id.encode_utf16() {
        h = h.wrapping_mul(31).wrapping_add(i32::from(unit));
    }
    (h & 0x7fff_ffff) % num_partitions
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_commit_round_trips_with_kafka_versions() {
        let key = OffsetCommitKey {
            group: "g".into(),
            topic: "t".into(),
            partition: 3,
        };
        let value = OffsetCommitValue {
            offset: 42,
            leader_epoch: 7,
            metadata: "meta".into(),
            commit_timestamp: 1000,
            expire_timestamp: -1,
        };
        let rec = CoordinatorRecord::OffsetCommit(key.clone(), Some(value.clone()));
        let (k, v) = rec.encode().unwrap();
        assert_eq!(&k[..2], &[0, 1], "key version 1");
        let v = v.unwrap();
        assert_eq!(&v[..2], &[0, 3], "value version 3");
        // Kafka's v1 key body: string group, string topic, int32 partition.
        assert_eq!(&k[2..], &[0, 1, b'g', 0, 1, b't', 0, 0, 0, 3]);
        assert_eq!(CoordinatorRecord::decode(&k, Some(&v)).unwrap(), rec);
        let tomb = CoordinatorRecord::decode(&k, None).unwrap();
        assert_eq!(tomb, CoordinatorRecord::OffsetCommit(key, None));
    }

    #[test]
    fn expire_timestamp_selects_value_version_1() {
        let key = OffsetCommitKey {
            group: "g".into(),
            topic: "t".into(),
            partition: 0,
        };
        let value = OffsetCommitValue {
            offset: 1,
            leader_epoch: -1,
            metadata: String::new(),
            commit_timestamp: 5,
            expire_timestamp: 99,
        };
        let (k, v) = CoordinatorRecord::OffsetCommit(key, Some(value.clone()))
            .encode()
            .unwrap();
        let v = v.unwrap();
        assert_eq!(&v[..2], &[0, 1]);
        match CoordinatorRecord::decode(&k, Some(&v)).unwrap() {
            // v1 has no leader epoch: it reads back as the default -1.
            CoordinatorRecord::OffsetCommit(_, Some(back)) => assert_eq!(back, value),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn unknown_or_truncated_records_are_errors_not_panics() {
        assert_eq!(
            CoordinatorRecord::decode(&Bytes::from_static(&[0, 42, 0, 0]), None),
            Err(GroupError::UnknownRecordType(42))
        );
        assert!(CoordinatorRecord::decode(&Bytes::from_static(&[0]), None).is_err());
        assert!(CoordinatorRecord::decode(&Bytes::from_static(&[0, 2, 0, 9, b'x']), None).is_err());
    }

    #[test]
    fn partition_for_matches_java_string_hash() {
        // "test-group".hashCode() == 627841412 in Java; 627841412 % 50 == 12.
        assert_eq!(partition_for("test-group", 50), 12);
        // Negative hash: "polygenelubricants".hashCode() == Integer.MIN_VALUE; abs -> 0.
        assert_eq!(partition_for("polygenelubricants", 50), 0);
        assert_eq!(partition_for("", 50), 0);
        assert_eq!(partition_for("g", 0), 0);
    }
}
