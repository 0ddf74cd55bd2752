//! `image_records` is the inverse of `replay` from an empty image, and every record it
//! writes survives KRaft framing.

use skiff_protocol::{
    BrokerEndpoint as WireEndpoint, BrokerRegistrationChangeRecord, ConfigRecord,
    PartitionChangeRecord, PartitionRecord, ProducerIdsRecord, RegisterBrokerRecord,
    RemoveTopicRecord, TopicRecord,
};
use uuid::Uuid;

use crate::image::{RESOURCE_BROKER, RESOURCE_GROUP, RESOURCE_TOPIC};
use crate::snapshot::image_records;
use crate::{MetadataImage, NO_LEADER_CHANGE, Record, replay};

fn config(resource_type: i8, resource: &str, name: &str, value: Option<&str>) -> Record {
    Record::Config(ConfigRecord {
        resource_type,
        resource_name: resource.into(),
        name: name.into(),
        value: value.map(Into::into),
    })
}

fn broker(id: i32, epoch: i64) -> Record {
    Record::RegisterBroker(RegisterBrokerRecord {
        broker_id: id,
        incarnation_id: Uuid::from_u128(id as u128 * 1000 + epoch as u128),
        broker_epoch: epoch,
        end_points: vec![WireEndpoint {
            name: "PLAINTEXT".into(),
            host: "h".into(),
            port: 9090 + id as u16,
            security_protocol: 0,
        }],
        rack: (id % 2 == 0).then(|| format!("r{id}")),
        fenced: true,
        ..RegisterBrokerRecord::default()
    })
}

fn partition(topic: Uuid, id: i32, replicas: Vec<i32>) -> Record {
    Record::Partition(PartitionRecord {
        partition_id: id,
        topic_id: topic,
        isr: replicas.clone(),
        leader: replicas[0],
        replicas,
        ..PartitionRecord::default()
    })
}

/// A log with every record kind: registrations (re-registered, unfenced, shutting down),
/// topics with partition changes, a removed topic, configs of every layer (set and
/// deleted), producer-id blocks.
fn history() -> Vec<Record> {
    let (t, gone) = (Uuid::from_u128(7), Uuid::from_u128(8));
    let change = |p: i32, leader: i32, isr: Option<Vec<i32>>| {
        Record::PartitionChange(PartitionChangeRecord {
            partition_id: p,
            topic_id: t,
            leader,
            isr,
            leader_recovery_state: -1,
            ..PartitionChangeRecord::default()
        })
    };
    let registration = |id: i32, epoch: i64, fenced: i8, shutdown: i8| {
        Record::BrokerRegistrationChange(BrokerRegistrationChangeRecord {
            broker_id: id,
            broker_epoch: epoch,
            fenced,
            in_controlled_shutdown: shutdown,
            ..BrokerRegistrationChangeRecord::default()
        })
    };
    vec![
        broker(1, 3),
        broker(2, 5),
        broker(3, 9),
        registration(1, 3, -1, 0),
        broker(2, 12), // re-registered: a new incarnation and epoch
        registration(2, 12, -1, 0),
        registration(3, 9, -1, 1),
        Record::Topic(TopicRecord {
            name: "t".into(),
            topic_id: t,
        }),
        partition(t, 0, vec![1, 2]),
        partition(t, 1, vec![2, 3]),
        partition(t, 2, vec![3, 1]),
        change(0, 2, Some(vec![2])),
        change(1, NO_LEADER_CHANGE, Some(vec![2])),
        change(2, -1, None),
        config(RESOURCE_TOPIC, "t", "retention.ms", Some("1000")),
        config(RESOURCE_TOPIC, "t", "cleanup.policy", Some("compact")),
        config(RESOURCE_TOPIC, "t", "retention.ms", None),
        Record::Topic(TopicRecord {
            name: "gone".into(),
            topic_id: gone,
        }),
        partition(gone, 0, vec![1]),
        config(RESOURCE_TOPIC, "gone", "segment.bytes", Some("1048576")),
        Record::RemoveTopic(RemoveTopicRecord { topic_id: gone }),
        config(RESOURCE_BROKER, "", "log.retention.ms", Some("5")),
        config(RESOURCE_BROKER, "2", "log.cleaner.threads", Some("2")),
        config(RESOURCE_BROKER, "2", "log.cleaner.threads", None),
        config(
            RESOURCE_GROUP,
            "g",
            "consumer.session.timeout.ms",
            Some("45000"),
        ),
        Record::ProducerIds(ProducerIdsRecord {
            broker_id: 1,
            broker_epoch: 3,
            next_producer_id: 1000,
        }),
        Record::ProducerIds(ProducerIdsRecord {
            broker_id: 2,
            broker_epoch: 12,
            next_producer_id: 2000,
        }),
    ]
}

fn round_trip(image: &MetadataImage) {
    let records = image_records(image);
    let rebuilt = replay(&MetadataImage::default(), &records);
    assert_eq!(
        &rebuilt, image,
        "replaying the snapshot records rebuilds the image"
    );
    assert_eq!(rebuilt.max_broker_epoch(), image.max_broker_epoch());
    for r in &records {
        let framed = r.encode().unwrap();
        assert_eq!(Record::decode(framed).unwrap().as_ref(), Some(r), "{r:?}");
    }
    assert_eq!(image_records(&rebuilt), records, "deterministic");
}

#[test]
fn snapshot_records_rebuild_every_prefix_of_a_history() {
    let history = history();
    for n in 0..=history.len() {
        let image = replay(&MetadataImage::default(), &history[..n]);
        round_trip(&image);
    }
    let full = replay(&MetadataImage::default(), &history);
    assert_eq!(full.topics.len(), 1, "the removed topic is not written");
    assert_eq!(full.next_producer_id_block, 2000);
    assert!(full.broker(3).is_some_and(|b| b.in_controlled_shutdown));
}
