//! Replay tests: PartitionChangeRecord merge rules, the broker registry, topic removal, and
//! the framing of every record kind.

use bytes::Bytes;
use skiff_protocol::{
    BrokerEndpoint as WireEndpoint, BrokerRegistrationChangeRecord, ConfigRecord,
    PartitionChangeRecord, PartitionRecord, ProducerIdsRecord, RegisterBrokerRecord,
    RemoveTopicRecord, TopicRecord,
};
use uuid::Uuid;

use crate::{
    BrokerEndpoint, MetadataImage, NO_LEADER, NO_LEADER_CHANGE, PartitionInfo, Record, replay,
};

const T: Uuid = Uuid::from_u128(0x7);

fn topic(name: &str, id: Uuid) -> Record {
    Record::Topic(TopicRecord {
        name: name.into(),
        topic_id: id,
    })
}

/// Topic "t", partition 0: replicas [1,2,3], ISR [1,2,3], leader 1, leader epoch 4,
/// partition epoch 6.
fn base() -> MetadataImage {
    replay(
        &MetadataImage::default(),
        &[
            topic("t", T),
            Record::Partition(PartitionRecord {
                partition_id: 0,
                topic_id: T,
                replicas: vec![1, 2, 3],
                isr: vec![1, 2, 3],
                leader: 1,
                leader_recovery_state: 0,
                leader_epoch: 4,
                partition_epoch: 6,
                ..PartitionRecord::default()
            }),
        ],
    )
}

fn base_partition() -> PartitionInfo {
    PartitionInfo {
        replicas: vec![1, 2, 3],
        isr: vec![1, 2, 3],
        adding_replicas: vec![],
        removing_replicas: vec![],
        leader: 1,
        leader_recovery_state: 0,
        leader_epoch: 4,
        partition_epoch: 6,
    }
}

fn change(f: impl FnOnce(&mut PartitionChangeRecord)) -> Record {
    let mut r = PartitionChangeRecord {
        partition_id: 0,
        topic_id: T,
        ..PartitionChangeRecord::default()
    };
    f(&mut r);
    Record::PartitionChange(r)
}

#[test]
fn partition_record_replays_every_field() {
    let img = base();
    assert_eq!(img.partition("t", 0), Some(&base_partition()));
    assert_eq!(img.topic("t").unwrap().partitions, 1);
    assert!(img.partition("t", 1).is_none());
    assert!(img.partition("u", 0).is_none());
}

#[test]
fn partition_change_table() {
    let b = base_partition();
    let cases: Vec<(&str, Vec<Record>, PartitionInfo)> = vec![
        (
            "nothing carried: only the partition epoch moves",
            vec![change(|r| r.leader = NO_LEADER_CHANGE)],
            PartitionInfo {
                partition_epoch: 7,
                ..b.clone()
            },
        ),
        (
            "ISR shrink: leader and leader epoch unchanged",
            vec![change(|r| r.isr = Some(vec![1, 2]))],
            PartitionInfo {
                isr: vec![1, 2],
                partition_epoch: 7,
                ..b.clone()
            },
        ),
        (
            "leader change: leader epoch + 1, ISR unchanged",
            vec![change(|r| r.leader = 2)],
            PartitionInfo {
                leader: 2,
                leader_epoch: 5,
                partition_epoch: 7,
                ..b.clone()
            },
        ),
        (
            "the same leader, explicitly: still a new leader epoch (Kafka's merge)",
            vec![change(|r| r.leader = 1)],
            PartitionInfo {
                leader_epoch: 5,
                partition_epoch: 7,
                ..b.clone()
            },
        ),
        (
            "no leader",
            vec![change(|r| {
                r.leader = NO_LEADER;
                r.isr = Some(vec![]);
            })],
            PartitionInfo {
                leader: NO_LEADER,
                isr: vec![],
                leader_epoch: 5,
                partition_epoch: 7,
                ..b.clone()
            },
        ),
        (
            "reassignment fields and recovery state",
            vec![change(|r| {
                r.replicas = Some(vec![1, 2, 3, 4]);
                r.adding_replicas = Some(vec![4]);
                r.removing_replicas = Some(vec![3]);
                r.leader_recovery_state = 1;
            })],
            PartitionInfo {
                replicas: vec![1, 2, 3, 4],
                adding_replicas: vec![4],
                removing_replicas: vec![3],
                leader_recovery_state: 1,
                partition_epoch: 7,
                ..b.clone()
            },
        ),
        (
            "changes accumulate: shrink, new leader, expand",
            vec![
                change(|r| r.isr = Some(vec![2, 3])),
                change(|r| r.leader = 2),
                change(|r| r.isr = Some(vec![2, 3, 1])),
            ],
            PartitionInfo {
                isr: vec![2, 3, 1],
                leader: 2,
                leader_epoch: 5,
                partition_epoch: 9,
                ..b.clone()
            },
        ),
    ];
    let image = base();
    for (name, records, want) in cases {
        let next = replay(&image, &records);
        assert_eq!(next.partition("t", 0), Some(&want), "{name}");
        assert_eq!(
            image.partition("t", 0),
            Some(&b),
            "{name}: the old image is untouched"
        );
    }
}

#[test]
fn partition_change_of_unknown_partition_or_topic_is_skipped() {
    let image = base();
    let records = [
        change(|r| {
            r.partition_id = 9;
            r.leader = 3;
        }),
        change(|r| {
            r.topic_id = Uuid::from_u128(0x99);
            r.leader = 3;
        }),
    ];
    let next = replay(&image, &records);
    assert_eq!(next, image);
    assert!(next.partition("t", 9).is_none());
}

#[test]
fn remove_topic_drops_its_partitions_and_a_new_topic_of_that_name_starts_fresh() {
    let t2 = Uuid::from_u128(0x8);
    let next = replay(
        &base(),
        &[
            Record::Config(ConfigRecord {
                resource_type: 2,
                resource_name: "t".into(),
                name: "retention.ms".into(),
                value: Some("1".into()),
            }),
            Record::RemoveTopic(RemoveTopicRecord { topic_id: T }),
        ],
    );
    assert!(next.topic("t").is_none());
    assert!(next.topic_by_id(T.as_bytes()).is_none());
    let next = replay(&next, &[topic("t", t2)]);
    let info = next.topic("t").unwrap();
    assert_eq!((info.partitions, info.configs.len()), (0, 0));
    assert!(
        next.partition("t", 0).is_none(),
        "the old partition is gone"
    );
}

fn broker(id: i32, inc: u128, epoch: i64, fenced: bool) -> RegisterBrokerRecord {
    RegisterBrokerRecord {
        broker_id: id,
        incarnation_id: Uuid::from_u128(inc),
        broker_epoch: epoch,
        fenced,
        rack: None,
        ..RegisterBrokerRecord::default()
    }
}

#[test]
fn register_broker_replays_into_the_registry() {
    let one = RegisterBrokerRecord {
        end_points: vec![WireEndpoint {
            name: "PLAINTEXT".into(),
            host: "h1".into(),
            port: 9092,
            security_protocol: 0,
        }],
        rack: Some("rack-a".into()),
        in_controlled_shutdown: true,
        ..broker(1, 0x11, 5, true)
    };
    let img = replay(
        &MetadataImage::default(),
        &[
            Record::RegisterBroker(one),
            Record::RegisterBroker(broker(2, 0x21, 3, false)),
        ],
    );
    let b1 = img.broker(1).unwrap();
    assert_eq!(b1.incarnation_id, Uuid::from_u128(0x11));
    assert_eq!(
        (b1.epoch, b1.fenced, b1.in_controlled_shutdown),
        (5, true, true)
    );
    assert_eq!(b1.rack.as_deref(), Some("rack-a"));
    assert_eq!(
        b1.endpoints,
        vec![BrokerEndpoint {
            name: "PLAINTEXT".into(),
            host: "h1".into(),
            port: 9092,
            security_protocol: 0,
        }]
    );
    assert_eq!(img.brokers().map(|b| b.id).collect::<Vec<_>>(), vec![1, 2]);
    assert_eq!(img.max_broker_epoch(), 5);
    // A re-registration replaces the entry; the highest epoch never goes down.
    let img = replay(&img, &[Record::RegisterBroker(broker(1, 0x12, 4, false))]);
    let b1 = img.broker(1).unwrap();
    assert_eq!((b1.incarnation_id, b1.epoch), (Uuid::from_u128(0x12), 4));
    assert!(b1.endpoints.is_empty() && !b1.fenced && b1.rack.is_none());
    assert_eq!(img.max_broker_epoch(), 5);
    assert!(img.broker(3).is_none());
}

#[test]
fn every_record_kind_survives_its_framing() {
    let records = [
        topic("t", T),
        Record::Partition(PartitionRecord {
            partition_id: 2,
            topic_id: T,
            replicas: vec![1, 2],
            isr: vec![2],
            leader: 2,
            leader_epoch: 3,
            partition_epoch: 4,
            ..PartitionRecord::default()
        }),
        change(|r| {
            r.isr = Some(vec![1]);
            r.leader = 1;
        }),
        change(|_| {}),
        Record::Config(ConfigRecord {
            resource_type: 4,
            resource_name: String::new(),
            name: "k".into(),
            value: None,
        }),
        Record::RemoveTopic(RemoveTopicRecord { topic_id: T }),
        Record::ProducerIds(ProducerIdsRecord {
            broker_id: 1,
            broker_epoch: 2,
            next_producer_id: 3000,
        }),
        Record::RegisterBroker(RegisterBrokerRecord {
            end_points: vec![WireEndpoint {
                name: "L".into(),
                host: "h".into(),
                port: 1,
                security_protocol: 0,
            }],
            rack: Some("r".into()),
            ..broker(7, 0x70, 9, true)
        }),
        reg_change(7, 9, -1, 0),
        reg_change(7, 9, 1, 0),
        reg_change(7, 9, 0, 1),
    ];
    for r in records {
        let bytes = r.encode().unwrap();
        assert_eq!(Record::decode(bytes).unwrap(), Some(r.clone()), "{r:?}");
    }
}

/// The frame of logs written before this change: frame version 1, type, version 0, body.
#[test]
fn topic_record_frame_is_byte_stable() {
    let bytes = topic("a", Uuid::nil()).encode().unwrap();
    let mut want = vec![1, 2, 0, 2, b'a'];
    want.extend([0; 16]);
    want.push(0);
    assert_eq!(bytes.as_ref(), want.as_slice());
    // Unknown record types (here NoOpRecord, type 20) are skipped, not errors.
    assert_eq!(
        Record::decode(Bytes::from_static(&[1, 20, 0, 0])).unwrap(),
        None
    );
    assert!(
        Record::decode(Bytes::from_static(&[2, 2, 0])).is_err(),
        "frame version 2"
    );
}

fn reg_change(id: i32, epoch: i64, fenced: i8, cs: i8) -> Record {
    Record::BrokerRegistrationChange(BrokerRegistrationChangeRecord {
        broker_id: id,
        broker_epoch: epoch,
        fenced,
        in_controlled_shutdown: cs,
        ..BrokerRegistrationChangeRecord::default()
    })
}

/// Kafka 4.0 writes the fence/unfence change at v0 and the controlled-shutdown one at v1
/// (the field exists from v1): type 17, then the version.
#[test]
fn registration_change_frame_versions() {
    let v = |r: Record| {
        let b = r.encode().unwrap();
        (b[1], b[2])
    };
    assert_eq!(v(reg_change(1, 2, 1, 0)), (17, 0));
    assert_eq!(v(reg_change(1, 2, -1, 0)), (17, 0));
    assert_eq!(v(reg_change(1, 2, 0, 1)), (17, 1));
}

/// (name, change records after broker 1 registered fenced at epoch 5, want (fenced, in CS)).
#[test]
fn registration_change_table() {
    let cases: &[(&str, Vec<Record>, (bool, bool))] = &[
        ("unfence", vec![reg_change(1, 5, -1, 0)], (false, false)),
        (
            "unfence, fence",
            vec![reg_change(1, 5, -1, 0), reg_change(1, 5, 1, 0)],
            (true, false),
        ),
        ("0 = no change", vec![reg_change(1, 5, 0, 0)], (true, false)),
        (
            "controlled shutdown, kept by a later fence (as Kafka's cloneWith)",
            vec![
                reg_change(1, 5, -1, 0),
                reg_change(1, 5, 0, 1),
                reg_change(1, 5, 1, 0),
            ],
            (true, true),
        ),
        (
            "another epoch is skipped",
            vec![reg_change(1, 4, -1, 0)],
            (true, false),
        ),
        (
            "an unknown broker is skipped",
            vec![reg_change(2, 5, -1, 0)],
            (true, false),
        ),
    ];
    for (name, records, want) in cases {
        let mut all = vec![Record::RegisterBroker(broker(1, 0x11, 5, true))];
        all.extend(records.iter().cloned());
        let img = replay(&MetadataImage::default(), &all);
        let b = img.broker(1).unwrap();
        assert_eq!((b.fenced, b.in_controlled_shutdown), *want, "{name}");
        assert!(img.broker(2).is_none(), "{name}");
        // A new registration replaces the flags whole.
        let again = replay(&img, &[Record::RegisterBroker(broker(1, 0x12, 9, false))]);
        let b = again.broker(1).unwrap();
        assert_eq!(
            (b.fenced, b.in_controlled_shutdown, b.epoch),
            (false, false, 9)
        );
    }
}
