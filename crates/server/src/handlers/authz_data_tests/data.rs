//! Produce, Fetch, ListOffsets, OffsetForLeaderEpoch, Metadata, InitProducerId.

use skiff_auth::acl::{AclOperation as Op, ResourceType as Rt};
use skiff_protocol::*;

use super::*;

fn batch(transactional: bool) -> Records {
    let opts = skiff_record::BatchOptions {
        is_transactional: transactional,
        producer_id: if transactional { 7 } else { -1 },
        producer_epoch: if transactional { 0 } else { -1 },
        base_sequence: if transactional { 0 } else { -1 },
        ..skiff_record::BatchOptions::default()
    };
    let mut b = skiff_record::BatchBuilder::new(opts);
    b.append(1_000, None, Some(b"v"), &[]);
    Records::Bytes(b.build().unwrap().into())
}

fn produce(topics: &[&str], tid: Option<&str>, acks: i16) -> RequestBody {
    RequestBody::Produce(ProduceRequest {
        transactional_id: tid.map(str::to_string),
        acks,
        timeout_ms: 1_000,
        topic_data: topics
            .iter()
            .map(|t| TopicProduceData {
                name: t.to_string(),
                partition_data: vec![PartitionProduceData {
                    index: 0,
                    records: Some(batch(tid.is_some())),
                }],
            })
            .collect(),
    })
}

fn produce_codes(b: ResponseBody) -> Vec<(String, i16)> {
    match b {
        ResponseBody::Produce(r) => r
            .responses
            .into_iter()
            .flat_map(|t| {
                let name = t.name;
                t.partition_responses
                    .into_iter()
                    .map(move |p| (name.clone(), p.error_code))
            })
            .collect(),
        other => panic!("{other:?}"),
    }
}

fn pairs(v: &[(&str, i16)]) -> Vec<(String, i16)> {
    v.iter().map(|(t, c)| (t.to_string(), *c)).collect()
}

#[tokio::test]
async fn produce_needs_write_per_topic_before_existence() {
    let f = fixture();
    let req = || produce(&["t", "secret", "missing"], None, 1);
    f.acls(vec![allow(Op::Write, Rt::Topic, "t")]);
    let got = produce_codes(f.call(&alice(), 9, req()).await);
    assert_eq!(got, pairs(&[("t", 0), ("secret", 29), ("missing", 29)]));
    // The super user bypasses: the same request writes `secret`, and `missing` is unknown.
    let got = produce_codes(f.call(&admin(), 9, req()).await);
    assert_eq!(got, pairs(&[("t", 0), ("secret", 0), ("missing", 3)]));
    // DENY beats ALLOW (a wildcard allow, a literal deny).
    f.acls(vec![
        allow(Op::Write, Rt::Topic, "*"),
        deny(Op::Write, Rt::Topic, "t"),
    ]);
    let got = produce_codes(f.call(&alice(), 9, req()).await);
    assert_eq!(got, pairs(&[("t", 29), ("secret", 0), ("missing", 3)]));
    // acks=0: a refused partition closes the connection, as any failure does.
    f.acls(vec![allow(Op::Write, Rt::Topic, "t")]);
    let r = call_as(&f.broker, &alice(), 9, produce(&["secret"], None, 0));
    assert!(matches!(r, Reply::Close(_)), "{r:?}");
}

#[tokio::test]
async fn transactional_produce_needs_write_on_the_transactional_id() {
    let f = fixture();
    f.acls(vec![allow(Op::Write, Rt::Topic, "t")]);
    let got = produce_codes(f.call(&alice(), 9, produce(&["t"], Some("tx"), 1)).await);
    assert_eq!(got, pairs(&[("t", 53)]), "the whole request is refused");
    let r = call_as(&f.broker, &alice(), 9, produce(&["t"], Some("tx"), 0));
    assert!(matches!(r, Reply::Close(_)), "{r:?}");
    // Allowed on the id: past authorization (the coordinator then refuses the unknown
    // producer, with anything but 53).
    f.acls(vec![
        allow(Op::Write, Rt::Topic, "t"),
        allow(Op::Write, Rt::TransactionalId, "tx"),
    ]);
    let got = produce_codes(f.call(&alice(), 9, produce(&["t"], Some("tx"), 1)).await);
    assert_ne!(got[0].1, 53);
    // An idempotent (non-transactional) producer needs only the topic.
    let got = produce_codes(f.call(&alice(), 9, produce(&["t"], None, 1)).await);
    assert_eq!(got, pairs(&[("t", 0)]));
}

fn fetch(f: &Fixture, version: i16, topics: &[&str], replica_id: i32) -> RequestBody {
    RequestBody::Fetch(FetchRequest {
        replica_id,
        replica_state: FetchRequestReplicaState {
            replica_id,
            ..Default::default()
        },
        max_wait_ms: 0,
        max_bytes: 1 << 20,
        session_epoch: -1,
        topics: topics
            .iter()
            .map(|t| FetchTopic {
                topic: t.to_string(),
                topic_id: match (version >= 13, *t) {
                    (false, _) => uuid::Uuid::nil(),
                    (true, "missing") => uuid::Uuid::from_u128(42),
                    (true, t) => f.topic_id(t),
                },
                partitions: vec![FetchPartition {
                    partition: 0,
                    current_leader_epoch: -1,
                    last_fetched_epoch: -1,
                    partition_max_bytes: 1 << 20,
                    ..Default::default()
                }],
            })
            .collect(),
        ..Default::default()
    })
}

fn fetch_codes(b: ResponseBody) -> (i16, Vec<i16>) {
    match b {
        ResponseBody::Fetch(r) => (
            r.error_code,
            r.responses
                .into_iter()
                .flat_map(|t| t.partitions.into_iter().map(|p| p.error_code))
                .collect(),
        ),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn consumer_fetch_needs_read_per_topic() {
    let f = fixture();
    let topics = ["t", "secret", "missing"];
    f.acls(vec![allow(Op::Read, Rt::Topic, "t")]);
    let got = fetch_codes(f.call(&alice(), 12, fetch(&f, 12, &topics, -1)).await);
    assert_eq!(got, (0, vec![0, 29, 29]));
    let got = fetch_codes(f.call(&admin(), 12, fetch(&f, 12, &topics, -1)).await);
    assert_eq!(got, (0, vec![0, 0, 3]));
    // By topic id: an unknown id answers UNKNOWN_TOPIC_ID (ids are not secret).
    let got = fetch_codes(f.call(&alice(), 13, fetch(&f, 13, &topics, -1)).await);
    assert_eq!(got, (0, vec![0, 29, 100]));
    f.acls(vec![
        allow(Op::Read, Rt::Topic, "*"),
        deny(Op::Read, Rt::Topic, "secret"),
    ]);
    let got = fetch_codes(f.call(&alice(), 12, fetch(&f, 12, &topics, -1)).await);
    assert_eq!(got, (0, vec![0, 29, 3]));
}

#[tokio::test]
async fn follower_fetch_needs_cluster_action() {
    let f = fixture();
    // READ on the topic is not enough for a replica: every partition answers 29.
    f.acls(vec![allow(Op::Read, Rt::Topic, "t")]);
    let got = fetch_codes(
        f.call(&alice(), 13, fetch(&f, 13, &["t", "missing"], 1))
            .await,
    );
    assert_eq!(got, (0, vec![29, 29]));
    f.acls(vec![allow_cluster(Op::ClusterAction)]);
    let got = fetch_codes(
        f.call(&alice(), 13, fetch(&f, 13, &["t", "missing"], 1))
            .await,
    );
    assert_ne!(got.1[0], 29);
    assert_eq!(got.1[1], 100);
}

fn list_offsets(topics: &[&str]) -> RequestBody {
    RequestBody::ListOffsets(ListOffsetsRequest {
        replica_id: -1,
        topics: topics
            .iter()
            .map(|t| ListOffsetsTopic {
                name: t.to_string(),
                partitions: vec![ListOffsetsPartition {
                    partition_index: 0,
                    current_leader_epoch: -1,
                    timestamp: -1,
                }],
            })
            .collect(),
        ..Default::default()
    })
}

fn list_offsets_codes(b: ResponseBody) -> Vec<(i16, i64)> {
    match b {
        ResponseBody::ListOffsets(r) => r
            .topics
            .into_iter()
            .flat_map(|t| t.partitions.into_iter().map(|p| (p.error_code, p.offset)))
            .collect(),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn list_offsets_needs_describe_per_topic() {
    let f = fixture();
    let req = || list_offsets(&["t", "secret", "missing"]);
    f.acls(vec![allow(Op::Describe, Rt::Topic, "t")]);
    let got = list_offsets_codes(f.call(&alice(), 7, req()).await);
    assert_eq!(got, vec![(0, 0), (29, -1), (29, -1)]);
    let got = list_offsets_codes(f.call(&admin(), 7, req()).await);
    assert_eq!(got, vec![(0, 0), (0, 0), (3, -1)]);
    f.acls(vec![
        allow(Op::Describe, Rt::Topic, "*"),
        deny(Op::Describe, Rt::Topic, "t"),
    ]);
    let got = list_offsets_codes(f.call(&alice(), 7, req()).await);
    assert_eq!(got, vec![(29, -1), (0, 0), (3, -1)]);
}

fn epochs(topics: &[&str]) -> RequestBody {
    RequestBody::OffsetForLeaderEpoch(OffsetForLeaderEpochRequest {
        replica_id: -1,
        topics: topics
            .iter()
            .map(|t| OffsetForLeaderTopic {
                topic: t.to_string(),
                partitions: vec![OffsetForLeaderPartition {
                    partition: 0,
                    current_leader_epoch: -1,
                    leader_epoch: 0,
                }],
            })
            .collect(),
    })
}

fn epoch_codes(b: ResponseBody) -> Vec<i16> {
    match b {
        ResponseBody::OffsetForLeaderEpoch(r) => r
            .topics
            .into_iter()
            .flat_map(|t| t.partitions.into_iter().map(|p| p.error_code))
            .collect(),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn offset_for_leader_epoch_needs_describe_or_cluster_action() {
    let f = fixture();
    let req = || epochs(&["t", "secret", "missing"]);
    f.acls(vec![allow(Op::Describe, Rt::Topic, "t")]);
    assert_eq!(
        epoch_codes(f.call(&alice(), 4, req()).await),
        vec![0, 29, 29]
    );
    assert_eq!(epoch_codes(f.call(&admin(), 4, req()).await), vec![0, 0, 3]);
    // A follower's CLUSTER_ACTION covers every topic.
    f.acls(vec![allow_cluster(Op::ClusterAction)]);
    assert_eq!(epoch_codes(f.call(&alice(), 4, req()).await), vec![0, 0, 3]);
}

fn metadata(topics: Option<Vec<MetadataRequestTopic>>, auto: bool) -> RequestBody {
    RequestBody::Metadata(MetadataRequest {
        topics,
        allow_auto_topic_creation: auto,
        include_cluster_authorized_operations: true,
        include_topic_authorized_operations: true,
    })
}

fn named(names: &[&str]) -> Option<Vec<MetadataRequestTopic>> {
    Some(
        names
            .iter()
            .map(|n| MetadataRequestTopic {
                name: Some(n.to_string()),
                topic_id: uuid::Uuid::nil(),
            })
            .collect(),
    )
}

/// (name, error, id is nil, partitions, authorized operations) per topic, and the cluster's.
type MetaView = (Vec<(Option<String>, i16, bool, usize, i32)>, i32);

fn meta_view(b: ResponseBody) -> MetaView {
    match b {
        ResponseBody::Metadata(r) => (
            r.topics
                .into_iter()
                .map(|t| {
                    let ops = t.topic_authorized_operations;
                    (
                        t.name,
                        t.error_code,
                        t.topic_id.is_nil(),
                        t.partitions.len(),
                        ops,
                    )
                })
                .collect(),
            r.cluster_authorized_operations,
        ),
        other => panic!("{other:?}"),
    }
}

const READ_DESCRIBE: i32 = (1 << 3) | (1 << 8);

#[tokio::test]
async fn metadata_hides_what_may_not_be_described() {
    let f = fixture();
    f.acls(vec![
        allow(Op::Read, Rt::Topic, "t"),
        allow(Op::Describe, Rt::Topic, "t"),
    ]);
    // All topics: only `t`, with its operations; no DESCRIBE on the cluster: ops 0.
    let (topics, cluster) = meta_view(f.call(&alice(), 10, metadata(None, false)).await);
    assert_eq!(topics, vec![(Some("t".into()), 0, false, 1, READ_DESCRIBE)]);
    assert_eq!(cluster, 0);
    // Named: `secret` and `missing` look alike (29, no id, no partitions).
    let req = || metadata(named(&["t", "secret", "missing"]), false);
    let (topics, _) = meta_view(f.call(&alice(), 10, req()).await);
    let refused = |n: &str| (Some(n.to_string()), 29, true, 0, i32::MIN);
    assert_eq!(
        topics,
        vec![
            (Some("t".into()), 0, false, 1, READ_DESCRIBE),
            refused("secret"),
            refused("missing")
        ]
    );
    // The super user sees everything, and every operation.
    let (topics, cluster) = meta_view(f.call(&admin(), 10, req()).await);
    assert_eq!(topics[1], (Some("secret".into()), 0, false, 1, 3576));
    assert_eq!(
        topics[2].1, 3,
        "a missing topic is unknown to the super user"
    );
    assert_eq!(cluster, 0b1_1111_1010_0000);
    // DESCRIBE on the cluster: the cluster's operations this principal has.
    f.acls(vec![
        allow_cluster(Op::Describe),
        allow(Op::Describe, Rt::Topic, "*"),
        deny(Op::Describe, Rt::Topic, "secret"),
    ]);
    let (topics, cluster) = meta_view(f.call(&alice(), 10, metadata(None, false)).await);
    assert_eq!(cluster, 1 << 8);
    let names: Vec<_> = topics.into_iter().filter_map(|t| t.0).collect();
    assert_eq!(
        names,
        vec!["t".to_string()],
        "DENY beats the wildcard ALLOW"
    );
}

#[tokio::test]
async fn metadata_auto_creation_needs_create() {
    let f = fixture();
    f.acls(vec![allow(Op::Describe, Rt::Topic, "*")]);
    let (topics, _) = meta_view(
        f.call(&alice(), 10, metadata(named(&["auto1"]), true))
            .await,
    );
    assert_eq!(topics[0].1, 29);
    assert!(f.broker.image().topic("auto1").is_none(), "nothing created");
    // CREATE on the topic (or the cluster) lets it be created.
    f.acls(vec![
        allow(Op::Describe, Rt::Topic, "*"),
        allow(Op::Create, Rt::Topic, "auto1"),
    ]);
    let (topics, _) = meta_view(
        f.call(&alice(), 10, metadata(named(&["auto1"]), true))
            .await,
    );
    assert_eq!(topics[0].1, 0);
    f.acls(vec![
        allow(Op::Describe, Rt::Topic, "*"),
        allow_cluster(Op::Create),
    ]);
    let (topics, _) = meta_view(
        f.call(&alice(), 10, metadata(named(&["auto2"]), true))
            .await,
    );
    assert_eq!(topics[0].1, 0);
}

#[tokio::test]
async fn metadata_by_topic_id() {
    let f = fixture();
    f.acls(vec![allow(Op::Describe, Rt::Topic, "t")]);
    let secret = f.topic_id("secret");
    let unknown = uuid::Uuid::from_u128(42);
    let ids = [f.topic_id("t"), secret, unknown]
        .iter()
        .map(|id| MetadataRequestTopic {
            name: None,
            topic_id: *id,
        })
        .collect();
    let (topics, _) = meta_view(f.call(&alice(), 12, metadata(Some(ids), false)).await);
    assert_eq!(topics[0].1, 0);
    // A refused id keeps its id (ids are not secret) but no name; an unknown one is 100.
    assert_eq!(topics[1], (None, 29, false, 0, i32::MIN));
    assert_eq!((topics[2].1, topics[2].0.clone()), (100, None));
}

#[tokio::test]
async fn describe_topic_partitions_needs_describe() {
    let f = fixture();
    f.acls(vec![allow(Op::Describe, Rt::Topic, "t")]);
    let req = |names: &[&str]| {
        RequestBody::DescribeTopicPartitions(DescribeTopicPartitionsRequest {
            topics: names
                .iter()
                .map(|n| DescribeTopicPartitionsRequestTopicRequest {
                    name: n.to_string(),
                })
                .collect(),
            response_partition_limit: 100,
            cursor: None,
        })
    };
    let view = |b: ResponseBody| match b {
        ResponseBody::DescribeTopicPartitions(r) => r
            .topics
            .into_iter()
            .map(|t| {
                (
                    t.name.unwrap_or_default(),
                    t.error_code,
                    t.topic_authorized_operations,
                )
            })
            .collect::<Vec<_>>(),
        other => panic!("{other:?}"),
    };
    let got = view(f.call(&alice(), 0, req(&["t", "secret", "missing"])).await);
    assert_eq!(
        got,
        vec![
            ("t".into(), 0, 1 << 8),
            ("missing".into(), 29, i32::MIN),
            ("secret".into(), 29, i32::MIN),
        ]
    );
    let got = view(f.call(&alice(), 0, req(&[])).await);
    assert_eq!(
        got,
        vec![("t".into(), 0, 1 << 8)],
        "all topics: only the allowed"
    );
    let got = view(f.call(&admin(), 0, req(&["secret", "missing"])).await);
    assert_eq!(
        got,
        vec![("missing".into(), 3, 3576), ("secret".into(), 0, 3576)]
    );
}

fn init_pid(tid: Option<&str>) -> RequestBody {
    RequestBody::InitProducerId(InitProducerIdRequest {
        transactional_id: tid.map(str::to_string),
        transaction_timeout_ms: 60_000,
        producer_id: -1,
        producer_epoch: -1,
    })
}

fn init_pid_code(b: ResponseBody) -> i16 {
    match b {
        ResponseBody::InitProducerId(r) => r.error_code,
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn init_producer_id_needs_idempotent_write_or_a_topic_write() {
    let f = fixture();
    f.acls(vec![allow(Op::Read, Rt::Topic, "t")]);
    assert_eq!(init_pid_code(f.call(&alice(), 4, init_pid(None)).await), 31);
    assert_eq!(init_pid_code(f.call(&admin(), 4, init_pid(None)).await), 0);
    for grant in [
        allow_cluster(Op::IdempotentWrite),
        allow(Op::Write, Rt::Topic, "t"),
    ] {
        f.acls(vec![grant.clone()]);
        let got = init_pid_code(f.call(&alice(), 4, init_pid(None)).await);
        assert_eq!(got, 0, "{grant:?}");
    }
    f.acls(vec![
        allow_cluster(Op::IdempotentWrite),
        deny(Op::IdempotentWrite, Rt::Cluster, "kafka-cluster"),
    ]);
    assert_eq!(init_pid_code(f.call(&alice(), 4, init_pid(None)).await), 31);
    // Transactional: WRITE on the id.
    f.acls(vec![allow_cluster(Op::IdempotentWrite)]);
    assert_eq!(
        init_pid_code(f.call(&alice(), 4, init_pid(Some("tx"))).await),
        53
    );
    f.acls(vec![allow(Op::Write, Rt::TransactionalId, "tx")]);
    assert_ne!(
        init_pid_code(f.call(&alice(), 4, init_pid(Some("tx"))).await),
        53
    );
}

#[tokio::test]
async fn describe_producers_needs_read() {
    let f = fixture();
    let req = RequestBody::DescribeProducers(DescribeProducersRequest {
        topics: ["t", "secret", "missing"]
            .iter()
            .map(|n| DescribeProducersRequestTopicRequest {
                name: n.to_string(),
                partition_indexes: vec![0],
            })
            .collect(),
    });
    let codes = |b: ResponseBody| match b {
        ResponseBody::DescribeProducers(r) => r
            .topics
            .into_iter()
            .flat_map(|t| t.partitions.into_iter().map(|p| p.error_code))
            .collect::<Vec<_>>(),
        other => panic!("{other:?}"),
    };
    f.acls(vec![allow(Op::Read, Rt::Topic, "t")]);
    assert_eq!(
        codes(f.call(&alice(), 0, req.clone()).await),
        vec![0, 29, 29]
    );
    assert_eq!(codes(f.call(&admin(), 0, req).await), vec![0, 0, 3]);
}
