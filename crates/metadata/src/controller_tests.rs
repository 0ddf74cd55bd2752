//! Table tests of the pure controller: each request's records, response and error code, and
//! "handle then replay" agreeing with the response.

use std::collections::BTreeMap;

use skiff_protocol::{
    BrokerEndpoint as WireEndpoint, ConfigRecord, PartitionRecord, ProducerIdsRecord,
    RegisterBrokerRecord, RemoveTopicRecord, TopicRecord,
};
use skiff_types::ErrorCode;
use uuid::Uuid;

use crate::image::{RESOURCE_BROKER, RESOURCE_TOPIC};
use crate::{
    BrokerEndpoint, BrokerHeartbeats, Ctx, MetadataImage, Record, Request, Response, TopicInfo,
    handle, replay,
};

const ORDERS: Uuid = Uuid::from_u128(0x0a);
const NEW: Uuid = Uuid::from_u128(0x0b);
const INC1: Uuid = Uuid::from_u128(0x1001);
const INC2: Uuid = Uuid::from_u128(0x1002);
/// The controller of cluster "c"; the next record lands at offset 100; every broker session
/// (the tracker is from time 0) has expired.
const CTX: Ctx<'static> = Ctx {
    node_id: 1,
    now_ms: 1_700_000_000_000,
    cluster_id: "c",
    next_offset: 100,
    placement_start: 0,
    heartbeats: &BrokerHeartbeats::new(0, 9000),
};

fn map(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
    kv.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn part(topic_id: Uuid, p: i32) -> Record {
    Record::Partition(PartitionRecord {
        partition_id: p,
        topic_id,
        replicas: vec![1],
        isr: vec![1],
        leader: 1,
        leader_epoch: 0,
        partition_epoch: 0,
        ..PartitionRecord::default()
    })
}

fn cfg(resource_type: i8, resource: &str, k: &str, v: Option<&str>) -> Record {
    Record::Config(ConfigRecord {
        resource_type,
        resource_name: resource.into(),
        name: k.into(),
        value: v.map(str::to_string),
    })
}

fn register(id: i32, inc: Uuid, epoch: i64) -> Record {
    Record::RegisterBroker(RegisterBrokerRecord {
        broker_id: id,
        incarnation_id: inc,
        broker_epoch: epoch,
        fenced: false,
        rack: None,
        ..RegisterBrokerRecord::default()
    })
}

/// Broker 3, fenced (as Kafka registers), incarnation INC1, epoch 5.
fn fenced_broker() -> Record {
    Record::RegisterBroker(RegisterBrokerRecord {
        fenced: true,
        ..register_record(3, INC1, 5)
    })
}

/// Topic "orders" (3 partitions, retention.ms=1000), cluster default layer {a=1}, producer
/// ids from 5000, broker 1 registered (incarnation INC1, epoch 7), broker 3 fenced (epoch 5).
fn base() -> MetadataImage {
    replay(
        &MetadataImage::default(),
        &[
            Record::Topic(TopicRecord {
                name: "orders".into(),
                topic_id: ORDERS,
            }),
            part(ORDERS, 0),
            part(ORDERS, 1),
            part(ORDERS, 2),
            cfg(RESOURCE_TOPIC, "orders", "retention.ms", Some("1000")),
            cfg(RESOURCE_BROKER, "", "a", Some("1")),
            Record::ProducerIds(ProducerIdsRecord {
                broker_id: 1,
                broker_epoch: 7,
                next_producer_id: 5000,
            }),
            register(1, INC1, 7),
            fenced_broker(),
        ],
    )
}

fn orders() -> TopicInfo {
    TopicInfo {
        name: "orders".into(),
        id: *ORDERS.as_bytes(),
        partitions: 3,
        configs: map(&[("retention.ms", "1000")]),
    }
}

enum Expect {
    Ok(Vec<Record>, Response),
    Err(ErrorCode),
}

fn create(name: &str, id: Uuid, partitions: i32, configs: &[(&str, &str)]) -> Request {
    Request::CreateTopic {
        name: name.into(),
        topic_id: id,
        partitions,
        replication_factor: 1,
        assignments: vec![],
        configs: map(configs),
    }
}

fn register_req(id: i32, inc: Uuid) -> Request {
    Request::RegisterBroker {
        cluster_id: "c".into(),
        broker_id: id,
        incarnation_id: inc,
        endpoints: vec![],
        rack: None,
    }
}

fn endpoint(name: &str, port: u16) -> BrokerEndpoint {
    BrokerEndpoint {
        name: name.into(),
        host: "localhost".into(),
        port,
        security_protocol: 0,
    }
}

fn cases() -> Vec<(&'static str, Request, Expect)> {
    use Expect::{Err, Ok};
    let topic_configs = |name: &str, kv: &[(&str, &str)]| Request::SetTopicConfigs {
        name: name.into(),
        configs: map(kv),
    };
    let broker_configs = |name: &str, kv: &[(&str, &str)]| Request::SetBrokerConfigs {
        resource_name: name.into(),
        configs: map(kv),
    };
    let grow = |name: &str, total| Request::CreatePartitions {
        name: name.into(),
        total,
        assignments: vec![],
    };
    vec![
        (
            "create: topic, one partition record each (here), configs",
            create("new", NEW, 2, &[("segment.ms", "1")]),
            Ok(
                vec![
                    Record::Topic(TopicRecord {
                        name: "new".into(),
                        topic_id: NEW,
                    }),
                    part(NEW, 0),
                    part(NEW, 1),
                    cfg(RESOURCE_TOPIC, "new", "segment.ms", Some("1")),
                ],
                Response::Topic(TopicInfo {
                    name: "new".into(),
                    id: *NEW.as_bytes(),
                    partitions: 2,
                    configs: map(&[("segment.ms", "1")]),
                }),
            ),
        ),
        (
            "create: existing name",
            create("orders", NEW, 1, &[]),
            Err(ErrorCode::TopicAlreadyExists),
        ),
        (
            "create: zero partitions",
            create("new", NEW, 0, &[]),
            Err(ErrorCode::InvalidPartitions),
        ),
        (
            "create: negative partitions",
            create("new", NEW, -1, &[]),
            Err(ErrorCode::InvalidPartitions),
        ),
        (
            "create: existing name with zero partitions is INVALID_PARTITIONS (checked first)",
            create("orders", NEW, 0, &[]),
            Err(ErrorCode::InvalidPartitions),
        ),
        (
            "create: illegal character",
            create("a b", NEW, 1, &[]),
            Err(ErrorCode::InvalidTopicException),
        ),
        (
            "create: empty name, checked before the partition count",
            create("", NEW, 0, &[]),
            Err(ErrorCode::InvalidTopicException),
        ),
        (
            "create: topic id already in use",
            create("new", ORDERS, 1, &[]),
            Err(ErrorCode::UnknownServerError),
        ),
        (
            "delete: one RemoveTopicRecord, answers the topic as it was",
            Request::DeleteTopic {
                name: "orders".into(),
            },
            Ok(
                vec![Record::RemoveTopic(RemoveTopicRecord { topic_id: ORDERS })],
                Response::Topic(orders()),
            ),
        ),
        (
            "delete: unknown topic",
            Request::DeleteTopic {
                name: "nope".into(),
            },
            Err(ErrorCode::UnknownTopicOrPartition),
        ),
        (
            "topic configs: removals first, then changes",
            topic_configs("orders", &[("segment.ms", "60000")]),
            Ok(
                vec![
                    cfg(RESOURCE_TOPIC, "orders", "retention.ms", None),
                    cfg(RESOURCE_TOPIC, "orders", "segment.ms", Some("60000")),
                ],
                Response::Done,
            ),
        ),
        (
            "topic configs: unchanged is no record",
            topic_configs("orders", &[("retention.ms", "1000")]),
            Ok(vec![], Response::Done),
        ),
        (
            "topic configs: unknown topic",
            topic_configs("nope", &[]),
            Err(ErrorCode::UnknownTopicOrPartition),
        ),
        (
            "broker configs: a new node layer",
            broker_configs("1", &[("max.connections", "9")]),
            Ok(
                vec![cfg(RESOURCE_BROKER, "1", "max.connections", Some("9"))],
                Response::Done,
            ),
        ),
        (
            "broker configs: emptying the default layer removes its keys",
            broker_configs("", &[]),
            Ok(vec![cfg(RESOURCE_BROKER, "", "a", None)], Response::Done),
        ),
        (
            "create partitions: 3 -> 5 adds partitions 3 and 4",
            grow("orders", 5),
            Ok(vec![part(ORDERS, 3), part(ORDERS, 4)], Response::Done),
        ),
        (
            "create partitions: same count",
            grow("orders", 3),
            Err(ErrorCode::InvalidPartitions),
        ),
        (
            "create partitions: fewer",
            grow("orders", 2),
            Err(ErrorCode::InvalidPartitions),
        ),
        (
            "create partitions: unknown topic",
            grow("nope", 2),
            Err(ErrorCode::UnknownTopicOrPartition),
        ),
        (
            "producer ids: the next block, with this broker's epoch",
            Request::AllocateProducerIds { floor: 0 },
            Ok(
                vec![Record::ProducerIds(ProducerIdsRecord {
                    broker_id: 1,
                    broker_epoch: 7,
                    next_producer_id: 6000,
                })],
                Response::ProducerIds(5000..6000),
            ),
        ),
        (
            "producer ids: a floor above the log's blocks wins",
            Request::AllocateProducerIds { floor: 9000 },
            Ok(
                vec![Record::ProducerIds(ProducerIdsRecord {
                    broker_id: 1,
                    broker_epoch: 7,
                    next_producer_id: 10000,
                })],
                Response::ProducerIds(9000..10000),
            ),
        ),
        (
            "AllocateProducerIds from a registered broker at its epoch",
            Request::AllocateProducerIdsFor {
                broker_id: 1,
                broker_epoch: 7,
            },
            Ok(
                vec![Record::ProducerIds(ProducerIdsRecord {
                    broker_id: 1,
                    broker_epoch: 7,
                    next_producer_id: 6000,
                })],
                Response::ProducerIds(5000..6000),
            ),
        ),
        (
            "AllocateProducerIds at a stale epoch",
            Request::AllocateProducerIdsFor {
                broker_id: 1,
                broker_epoch: 6,
            },
            Err(ErrorCode::StaleBrokerEpoch),
        ),
        (
            "AllocateProducerIds from an unregistered broker",
            Request::AllocateProducerIdsFor {
                broker_id: 9,
                broker_epoch: 0,
            },
            Err(ErrorCode::StaleBrokerEpoch),
        ),
        (
            "producer ids: exhausted",
            Request::AllocateProducerIds {
                floor: i64::MAX - 10,
            },
            Err(ErrorCode::UnknownServerError),
        ),
        (
            "register: a new broker gets epoch = its record's offset, fenced, its endpoints",
            Request::RegisterBroker {
                cluster_id: "c".into(),
                broker_id: 2,
                incarnation_id: INC2,
                endpoints: vec![endpoint("PLAINTEXT", 9092)],
                rack: Some("r1".into()),
            },
            Ok(
                vec![Record::RegisterBroker(RegisterBrokerRecord {
                    end_points: vec![WireEndpoint {
                        name: "PLAINTEXT".into(),
                        host: "localhost".into(),
                        port: 9092,
                        security_protocol: 0,
                    }],
                    rack: Some("r1".into()),
                    fenced: true,
                    ..register_record(2, INC2, 100)
                })],
                Response::Registered { broker_epoch: 100 },
            ),
        ),
        (
            "register: same incarnation amends and keeps the epoch",
            register_req(1, INC1),
            Ok(
                vec![register(1, INC1, 7)],
                Response::Registered { broker_epoch: 7 },
            ),
        ),
        (
            "register: same incarnation keeps the fenced flag",
            register_req(3, INC1),
            Ok(
                vec![fenced_broker()],
                Response::Registered { broker_epoch: 5 },
            ),
        ),
        (
            "register: a new incarnation (old session expired) gets a new epoch, fenced; the \
             old one's leaderships move first (its lone-replica partitions lose their leader)",
            register_req(1, INC2),
            Ok(
                vec![
                    leaderless(ORDERS, 0),
                    leaderless(ORDERS, 1),
                    leaderless(ORDERS, 2),
                    Record::RegisterBroker(RegisterBrokerRecord {
                        fenced: true,
                        ..register_record(1, INC2, 100)
                    }),
                ],
                Response::Registered { broker_epoch: 100 },
            ),
        ),
        (
            "register: negative broker id",
            register_req(-1, INC2),
            Err(ErrorCode::InvalidRequest),
        ),
        (
            "register: another cluster's id",
            Request::RegisterBroker {
                cluster_id: "other".into(),
                broker_id: 2,
                incarnation_id: INC2,
                endpoints: vec![],
                rack: None,
            },
            Err(ErrorCode::InconsistentClusterId),
        ),
        (
            "register: two listeners of one name",
            Request::RegisterBroker {
                cluster_id: "c".into(),
                broker_id: 2,
                incarnation_id: INC2,
                endpoints: vec![endpoint("A", 1), endpoint("A", 2)],
                rack: None,
            },
            Err(ErrorCode::InvalidRequest),
        ),
    ]
}

fn leaderless(topic_id: Uuid, p: i32) -> Record {
    Record::PartitionChange(skiff_protocol::PartitionChangeRecord {
        partition_id: p,
        topic_id,
        leader: crate::NO_LEADER,
        ..skiff_protocol::PartitionChangeRecord::default()
    })
}

fn register_record(id: i32, inc: Uuid, epoch: i64) -> RegisterBrokerRecord {
    match register(id, inc, epoch) {
        Record::RegisterBroker(r) => r,
        _ => unreachable!(),
    }
}

#[test]
fn handle_table() {
    let image = base();
    for (name, request, expect) in cases() {
        let got = handle(&image, &request, &CTX);
        match (got, expect) {
            (Ok((records, response)), Expect::Ok(want_records, want_response)) => {
                assert_eq!(records, want_records, "{name}: records");
                assert_eq!(response, want_response, "{name}: response");
            }
            (Err(e), Expect::Err(code)) => assert_eq!(e.error_code(), code, "{name}: {e}"),
            (Ok(r), Expect::Err(code)) => panic!("{name}: expected {code:?}, got {r:?}"),
            (Err(e), Expect::Ok(..)) => panic!("{name}: expected success, got {e}"),
        }
    }
}

/// What replaying a success's records exposes is what the response said.
#[test]
fn handle_then_replay_agrees_with_the_response() {
    let image = base();
    let mut checked = 0;
    for (name, request, _) in cases() {
        let Ok((records, response)) = handle(&image, &request, &CTX) else {
            continue;
        };
        let next = replay(&image, &records);
        match (&request, response) {
            (Request::CreateTopic { name: t, .. }, Response::Topic(info)) => {
                assert_eq!(next.topic(t), Some(&info), "{name}");
                assert_eq!(next.topic_by_id(&info.id), Some(&info), "{name}");
                for p in 0..info.partitions {
                    let reg = next.partition(t, p).unwrap();
                    assert_eq!((reg.leader, &reg.isr), (1, &vec![1]), "{name}");
                }
            }
            (Request::DeleteTopic { name: t }, Response::Topic(info)) => {
                assert_eq!(info, orders(), "{name}");
                assert!(next.topic(t).is_none(), "{name}");
                assert!(next.topic_by_id(&info.id).is_none(), "{name}");
                assert_eq!(next.partitions(t).count(), 0, "{name}");
            }
            (Request::SetTopicConfigs { name: t, configs }, Response::Done) => {
                assert_eq!(&next.topic(t).unwrap().configs, configs, "{name}");
            }
            (
                Request::SetBrokerConfigs {
                    resource_name,
                    configs,
                },
                Response::Done,
            ) => {
                let layer = next.broker_configs.get(resource_name).cloned();
                assert_eq!(layer.unwrap_or_default(), *configs, "{name}");
            }
            (Request::CreatePartitions { name: t, total, .. }, Response::Done) => {
                assert_eq!(next.topic(t).unwrap().partitions, *total, "{name}");
                assert_eq!(next.partitions(t).count() as i32, *total, "{name}");
            }
            (
                Request::AllocateProducerIds { .. } | Request::AllocateProducerIdsFor { .. },
                Response::ProducerIds(block),
            ) => {
                assert_eq!(next.next_producer_id_block, block.end, "{name}");
                // A second allocation on the new image never overlaps the first block.
                let Ok((_, Response::ProducerIds(again))) =
                    handle(&next, &Request::AllocateProducerIds { floor: 0 }, &CTX)
                else {
                    panic!("{name}: second allocation");
                };
                assert_eq!(again.start, block.end, "{name}");
            }
            (
                Request::RegisterBroker {
                    broker_id,
                    incarnation_id,
                    ..
                },
                Response::Registered { broker_epoch },
            ) => {
                let b = next.broker(*broker_id).unwrap();
                assert_eq!((b.epoch, b.incarnation_id), (broker_epoch, *incarnation_id));
                // An amendment keeps the fenced flag; a new incarnation starts fenced.
                let was = image.broker(*broker_id);
                let fenced = was
                    .filter(|w| w.incarnation_id == *incarnation_id)
                    .is_none_or(|w| w.fenced);
                assert_eq!(b.fenced, fenced, "{name}");
                assert!(next.max_broker_epoch() >= broker_epoch, "{name}");
            }
            (r, resp) => panic!("{name}: response {resp:?} does not fit {r:?}"),
        }
        checked += 1;
    }
    assert_eq!(checked, 14, "every success case was checked");
}
