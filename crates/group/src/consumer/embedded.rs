//! The embedded consumer protocol (`ConsumerProtocolSubscription` / `ConsumerProtocolAssignment`
//! inside classic JoinGroup metadata and SyncGroup assignments), as the coordinator reads and
//! writes it when classic members live in a consumer group.
//!
//! Mental model (Kafka's `ConsumerProtocol`): each blob starts with an int16 version; a newer
//! version than Skiff knows is read with the newest it knows (the fields only grow), a negative
//! one is malformed. An empty assignment (a member that never synced) is no partitions.
//! Assignments are written back in the version of the member's own subscription, so an old
//! client never gets a blob it cannot parse. Topics are by name here and by id in the group;
//! the conversion uses the coordinator's topic view and drops names it does not know.

use std::collections::BTreeMap;

use bytes::{Bytes, BytesMut};
use skiff_protocol::{
    Codec, ConsumerGroupHeartbeatRequestTopicPartitions, ConsumerProtocolAssignment,
    ConsumerProtocolAssignmentTopicPartition, ConsumerProtocolSubscription, wire,
};
use uuid::Uuid;

use crate::consumer::group::{Assignment, TopicInfo};

/// The newest embedded consumer protocol version Skiff reads and writes.
const VERSION_MAX: i16 = 3;

/// The version prefix of an embedded blob, `None` when malformed.
pub(crate) fn version_of(blob: &Bytes) -> Option<i16> {
    let mut buf = blob.clone();
    let v = wire::read_i16(&mut buf).ok()?;
    (v >= 0).then_some(v)
}

/// A JoinGroup protocol's metadata as a subscription; `None` when malformed.
pub(crate) fn subscription(metadata: &Bytes) -> Option<ConsumerProtocolSubscription> {
    let version = version_of(metadata)?;
    let mut buf = metadata.slice(2..);
    ConsumerProtocolSubscription::decode(&mut buf, version.min(VERSION_MAX)).ok()
}

/// A SyncGroup assignment blob as partitions by topic name; empty for an empty blob, `None`
/// when malformed.
pub(crate) fn assignment(blob: &Bytes) -> Option<BTreeMap<String, Vec<i32>>> {
    if blob.is_empty() {
        return Some(BTreeMap::new());
    }
    let version = version_of(blob)?;
    let mut buf = blob.slice(2..);
    let a = ConsumerProtocolAssignment::decode(&mut buf, version.min(VERSION_MAX)).ok()?;
    let mut out: BTreeMap<String, Vec<i32>> = BTreeMap::new();
    for tp in a.assigned_partitions {
        out.entry(tp.topic).or_default().extend(tp.partitions);
    }
    Some(out)
}

/// Partitions by topic name to partitions by topic id (unknown names dropped).
pub(crate) fn to_ids(
    by_name: &BTreeMap<String, Vec<i32>>,
    topics: &BTreeMap<String, TopicInfo>,
) -> Assignment {
    let mut out = Assignment::new();
    for (name, ps) in by_name {
        if let Some(t) = topics.get(name)
            && !ps.is_empty()
        {
            out.entry(t.topic_id)
                .or_default()
                .extend(ps.iter().copied());
        }
    }
    out
}

/// A subscription's owned partitions as a heartbeat would report them (by topic id).
pub(crate) fn owned_partitions(
    sub: &ConsumerProtocolSubscription,
    topics: &BTreeMap<String, TopicInfo>,
) -> Vec<ConsumerGroupHeartbeatRequestTopicPartitions> {
    let by_name: BTreeMap<String, Vec<i32>> = sub
        .owned_partitions
        .iter()
        .map(|tp| (tp.topic.clone(), tp.partitions.clone()))
        .collect();
    to_ids(&by_name, topics)
        .into_iter()
        .map(
            |(topic_id, ps)| ConsumerGroupHeartbeatRequestTopicPartitions {
                topic_id,
                partitions: ps.into_iter().collect(),
            },
        )
        .collect()
}

/// An assignment (by topic id) as a SyncGroup blob in `version` (unknown ids dropped).
pub(crate) fn encode_assignment(
    a: &Assignment,
    topics: &BTreeMap<String, TopicInfo>,
    version: i16,
) -> Bytes {
    let name_of = |id: &Uuid| topics.values().find(|t| t.topic_id == *id).map(|t| &t.name);
    let value = ConsumerProtocolAssignment {
        assigned_partitions: a
            .iter()
            .filter_map(|(id, ps)| {
                name_of(id).map(|n| ConsumerProtocolAssignmentTopicPartition {
                    topic: n.clone(),
                    partitions: ps.iter().copied().collect(),
                })
            })
            .collect(),
        ..Default::default()
    };
    let version = version.clamp(0, VERSION_MAX);
    let mut out = BytesMut::new();
    out.extend_from_slice(&version.to_be_bytes());
    match value.encode(&mut out, version) {
        Ok(()) => out.freeze(),
        Err(e) => {
            // Impossible for a value built from names and partition numbers.
            debug_assert!(false, "unencodable assignment: {e}");
            Bytes::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use skiff_protocol::ConsumerProtocolSubscriptionTopicPartition;

    fn topics() -> BTreeMap<String, TopicInfo> {
        let t = TopicInfo {
            topic_id: Uuid::from_u128(7),
            name: "t".into(),
            partitions: 3,
        };
        BTreeMap::from([("t".to_string(), t)])
    }

    #[test]
    fn assignments_round_trip_in_every_version_and_unknown_topics_drop() {
        let a = Assignment::from([(Uuid::from_u128(7), [0, 2].into())]);
        for v in 0..=VERSION_MAX {
            let blob = encode_assignment(&a, &topics(), v);
            assert_eq!(version_of(&blob), Some(v));
            let back = assignment(&blob).unwrap();
            assert_eq!(back, BTreeMap::from([("t".to_string(), vec![0, 2])]));
            assert_eq!(to_ids(&back, &topics()), a);
        }
        let unknown = Assignment::from([(Uuid::from_u128(9), [1].into())]);
        assert_eq!(
            assignment(&encode_assignment(&unknown, &topics(), 1)),
            Some(BTreeMap::new())
        );
        assert_eq!(assignment(&Bytes::new()), Some(BTreeMap::new()));
        assert_eq!(assignment(&Bytes::from_static(&[0xff, 0xff, 0])), None);
        assert_eq!(assignment(&Bytes::from_static(&[0, 1, 0])), None);
    }

    #[test]
    fn subscriptions_of_newer_versions_read_with_the_newest_known() {
        let sub = ConsumerProtocolSubscription {
            topics: vec!["t".into()],
            owned_partitions: vec![ConsumerProtocolSubscriptionTopicPartition {
                topic: "t".into(),
                partitions: vec![1],
            }],
            ..Default::default()
        };
        let mut blob = BytesMut::new();
        blob.extend_from_slice(&5i16.to_be_bytes());
        sub.encode(&mut blob, VERSION_MAX).unwrap();
        let back = subscription(&blob.freeze()).unwrap();
        assert_eq!(back.topics, vec!["t".to_string()]);
        let owned = owned_partitions(&back, &topics());
        assert_eq!(owned.len(), 1);
        assert_eq!(owned[0].partitions, vec![1]);
    }
}
