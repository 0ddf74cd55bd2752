//! CreateTopics, DeleteTopics, CreatePartitions, DeleteRecords, configs, and the cluster-level
//! admin and controller APIs.

use skiff_auth::acl::{AclOperation as Op, ResourceType as Rt};
use skiff_protocol::*;

use super::*;

fn create_topics(names: &[&str]) -> RequestBody {
    RequestBody::CreateTopics(CreateTopicsRequest {
        topics: names
            .iter()
            .map(|n| CreatableTopic {
                name: n.to_string(),
                num_partitions: 1,
                replication_factor: -1,
                ..Default::default()
            })
            .collect(),
        timeout_ms: 1_000,
        validate_only: false,
    })
}

fn created(b: ResponseBody) -> Vec<(i16, i16, i32)> {
    match b {
        ResponseBody::CreateTopics(r) => r
            .topics
            .into_iter()
            .map(|t| (t.error_code, t.topic_config_error_code, t.num_partitions))
            .collect(),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn create_topics_needs_create_and_describe_configs_for_details() {
    let f = fixture();
    f.acls(vec![allow(Op::Create, Rt::Topic, "a")]);
    let got = created(f.call(&alice(), 7, create_topics(&["a", "b"])).await);
    // `a` is created, but its details need DESCRIBE_CONFIGS; `b` is refused.
    assert_eq!(got, vec![(0, 29, -1), (29, 0, -1)]);
    assert!(f.broker.image().topic("b").is_none());
    f.acls(vec![
        allow_cluster(Op::Create),
        allow(Op::DescribeConfigs, Rt::Topic, "c"),
    ]);
    let got = created(f.call(&alice(), 7, create_topics(&["c"])).await);
    assert_eq!(
        got,
        vec![(0, 0, 1)],
        "CREATE on the cluster covers every topic"
    );
    f.acls(vec![
        allow(Op::Create, Rt::Topic, "*"),
        deny(Op::Create, Rt::Topic, "d"),
    ]);
    let got = created(f.call(&alice(), 7, create_topics(&["d"])).await);
    assert_eq!(got[0].0, 29);
    let got = created(f.call(&admin(), 7, create_topics(&["d"])).await);
    assert_eq!(got, vec![(0, 0, 1)]);
}

#[tokio::test]
async fn delete_topics_by_name_and_id() {
    let f = fixture();
    f.broker.create_topic("t2", 1, BTreeMap::new()).unwrap();
    let by_name = |names: &[&str]| {
        RequestBody::DeleteTopics(DeleteTopicsRequest {
            topic_names: names.iter().map(|n| n.to_string()).collect(),
            ..Default::default()
        })
    };
    let by_id = |ids: &[uuid::Uuid]| {
        RequestBody::DeleteTopics(DeleteTopicsRequest {
            topics: ids
                .iter()
                .map(|id| DeleteTopicState {
                    name: None,
                    topic_id: *id,
                })
                .collect(),
            ..Default::default()
        })
    };
    let view = |b: ResponseBody| match b {
        ResponseBody::DeleteTopics(r) => r
            .responses
            .into_iter()
            .map(|t| (t.name, t.error_code))
            .collect::<Vec<_>>(),
        other => panic!("{other:?}"),
    };
    let s = |n: &str| Some(n.to_string());
    // DESCRIBE without DELETE: 29; without DESCRIBE, missing or not: 29.
    f.acls(vec![allow(Op::Describe, Rt::Topic, "t")]);
    let got = view(
        f.call(&alice(), 5, by_name(&["t", "secret", "missing"]))
            .await,
    );
    assert_eq!(
        got,
        vec![(s("t"), 29), (s("secret"), 29), (s("missing"), 29)]
    );
    // By id: an unknown id is 100; a refused one is named only if describable.
    let (t, secret) = (f.topic_id("t"), f.topic_id("secret"));
    let got = view(
        f.call(&alice(), 6, by_id(&[t, secret, uuid::Uuid::from_u128(42)]))
            .await,
    );
    assert_eq!(got, vec![(s("t"), 29), (None, 29), (None, 100)]);
    f.acls(vec![
        allow(Op::Describe, Rt::Topic, "*"),
        allow(Op::Delete, Rt::Topic, "t2"),
    ]);
    let got = view(f.call(&alice(), 5, by_name(&["t2", "missing"])).await);
    assert_eq!(got, vec![(s("t2"), 0), (s("missing"), 3)]);
    let got = view(f.call(&admin(), 6, by_id(&[secret])).await);
    assert_eq!(got, vec![(s("secret"), 0)]);
}

#[tokio::test]
async fn create_partitions_and_delete_records_need_alter_and_delete() {
    let f = fixture();
    let grow = |names: &[&str]| {
        RequestBody::CreatePartitions(CreatePartitionsRequest {
            topics: names
                .iter()
                .map(|n| CreatePartitionsTopic {
                    name: n.to_string(),
                    count: 2,
                    assignments: None,
                })
                .collect(),
            timeout_ms: 1_000,
            validate_only: true,
        })
    };
    let grown = |b: ResponseBody| match b {
        ResponseBody::CreatePartitions(r) => {
            r.results.iter().map(|t| t.error_code).collect::<Vec<_>>()
        }
        other => panic!("{other:?}"),
    };
    f.acls(vec![allow(Op::Alter, Rt::Topic, "t")]);
    let req = || grow(&["t", "secret", "missing"]);
    assert_eq!(grown(f.call(&alice(), 3, req()).await), vec![0, 29, 29]);
    assert_eq!(grown(f.call(&admin(), 3, req()).await), vec![0, 0, 3]);

    let delete = RequestBody::DeleteRecords(DeleteRecordsRequest {
        topics: ["t", "secret", "missing"]
            .iter()
            .map(|n| DeleteRecordsTopic {
                name: n.to_string(),
                partitions: vec![DeleteRecordsPartition {
                    partition_index: 0,
                    offset: 0,
                }],
            })
            .collect(),
        timeout_ms: 1_000,
    });
    let deleted = |b: ResponseBody| match b {
        ResponseBody::DeleteRecords(r) => r
            .topics
            .into_iter()
            .flat_map(|t| t.partitions.into_iter().map(|p| p.error_code))
            .collect::<Vec<_>>(),
        other => panic!("{other:?}"),
    };
    f.acls(vec![allow(Op::Delete, Rt::Topic, "t")]);
    assert_eq!(
        deleted(f.call(&alice(), 2, delete.clone()).await),
        vec![0, 29, 29]
    );
    assert_eq!(deleted(f.call(&admin(), 2, delete).await), vec![0, 0, 3]);
}

#[tokio::test]
async fn configs_need_describe_and_alter_configs_on_their_resource() {
    let f = fixture();
    let node = f.broker.node_id().to_string();
    let resources = [
        (2i8, "t"),
        (2, "secret"),
        (2, "missing"),
        (4, node.as_str()),
        (32, "g"),
    ];
    let describe = RequestBody::DescribeConfigs(DescribeConfigsRequest {
        resources: resources
            .iter()
            .map(|(t, n)| DescribeConfigsResource {
                resource_type: *t,
                resource_name: n.to_string(),
                configuration_keys: None,
            })
            .collect(),
        ..Default::default()
    });
    let described = |b: ResponseBody| match b {
        ResponseBody::DescribeConfigs(r) => {
            r.results.iter().map(|r| r.error_code).collect::<Vec<_>>()
        }
        other => panic!("{other:?}"),
    };
    f.acls(vec![allow(Op::DescribeConfigs, Rt::Topic, "t")]);
    let got = described(f.call(&alice(), 4, describe.clone()).await);
    assert_eq!(got, vec![0, 29, 29, 31, 30]);
    let got = described(f.call(&admin(), 4, describe).await);
    assert_eq!(&got[..3], &[0, 0, 3]);
    assert_ne!(got[3], 31);
    assert_ne!(got[4], 30);

    let alter = RequestBody::IncrementalAlterConfigs(IncrementalAlterConfigsRequest {
        resources: resources
            .iter()
            .map(
                |(t, n)| IncrementalAlterConfigsRequestAlterConfigsResource {
                    resource_type: *t,
                    resource_name: n.to_string(),
                    configs: Vec::new(),
                },
            )
            .collect(),
        validate_only: true,
    });
    let altered = |b: ResponseBody| match b {
        ResponseBody::IncrementalAlterConfigs(r) => {
            r.responses.iter().map(|r| r.error_code).collect::<Vec<_>>()
        }
        other => panic!("{other:?}"),
    };
    // DESCRIBE_CONFIGS does not allow altering.
    f.acls(vec![
        allow(Op::AlterConfigs, Rt::Topic, "t"),
        allow(Op::DescribeConfigs, Rt::Topic, "secret"),
    ]);
    let got = altered(f.call(&alice(), 1, alter.clone()).await);
    assert_eq!(got, vec![0, 29, 29, 31, 30]);
    f.acls(vec![
        allow_cluster(Op::AlterConfigs),
        allow(Op::AlterConfigs, Rt::Group, "g"),
    ]);
    let got = altered(f.call(&alice(), 1, alter).await);
    assert_eq!(got[..3], [29, 29, 29]);
    assert_ne!(got[3], 31);
    assert_ne!(got[4], 30);
}

#[tokio::test]
async fn describe_cluster_reports_the_principals_cluster_operations() {
    let f = fixture();
    let req = RequestBody::DescribeCluster(DescribeClusterRequest {
        include_cluster_authorized_operations: true,
        endpoint_type: 1,
    });
    let ops = |b: ResponseBody| match b {
        ResponseBody::DescribeCluster(r) => (r.error_code, r.cluster_authorized_operations),
        other => panic!("{other:?}"),
    };
    // Never refused: without DESCRIBE on the cluster the operations are 0.
    f.acls(vec![allow_cluster(Op::Create)]);
    assert_eq!(ops(f.call(&alice(), 1, req.clone()).await), (0, 0));
    f.acls(vec![allow_cluster(Op::Describe), allow_cluster(Op::Create)]);
    assert_eq!(
        ops(f.call(&alice(), 1, req.clone()).await),
        (0, (1 << 5) | (1 << 8))
    );
    assert_eq!(ops(f.call(&admin(), 1, req).await), (0, 0b1_1111_1010_0000));
}

/// A cluster-level API: its request, version, where its refusal code is, and the operation
/// on the cluster that allows it.
struct ClusterCase {
    name: &'static str,
    version: i16,
    body: fn() -> RequestBody,
    code: fn(ResponseBody) -> i16,
    op: Op,
}

fn first<T>(v: Vec<T>) -> T {
    v.into_iter().next().unwrap()
}

fn cluster_cases() -> Vec<ClusterCase> {
    vec![
        ClusterCase {
            name: "BrokerRegistration",
            version: 4,
            body: || RequestBody::BrokerRegistration(BrokerRegistrationRequest::default()),
            code: |b| match b {
                ResponseBody::BrokerRegistration(r) => r.error_code,
                o => panic!("{o:?}"),
            },
            op: Op::ClusterAction,
        },
        ClusterCase {
            name: "BrokerHeartbeat",
            version: 1,
            body: || RequestBody::BrokerHeartbeat(BrokerHeartbeatRequest::default()),
            code: |b| match b {
                ResponseBody::BrokerHeartbeat(r) => r.error_code,
                o => panic!("{o:?}"),
            },
            op: Op::ClusterAction,
        },
        ClusterCase {
            name: "AllocateProducerIds",
            version: 0,
            body: || RequestBody::AllocateProducerIds(AllocateProducerIdsRequest::default()),
            code: |b| match b {
                ResponseBody::AllocateProducerIds(r) => r.error_code,
                o => panic!("{o:?}"),
            },
            op: Op::ClusterAction,
        },
        ClusterCase {
            name: "AlterPartition",
            version: 3,
            body: || RequestBody::AlterPartition(AlterPartitionRequest::default()),
            code: |b| match b {
                ResponseBody::AlterPartition(r) => r.error_code,
                o => panic!("{o:?}"),
            },
            op: Op::ClusterAction,
        },
        ClusterCase {
            name: "WriteTxnMarkers",
            version: 1,
            body: || {
                RequestBody::WriteTxnMarkers(WriteTxnMarkersRequest {
                    markers: vec![WritableTxnMarker {
                        producer_id: 7,
                        topics: vec![WritableTxnMarkerTopic {
                            name: "missing".into(),
                            partition_indexes: vec![0],
                        }],
                        ..Default::default()
                    }],
                })
            },
            code: |b| match b {
                ResponseBody::WriteTxnMarkers(r) => {
                    first(first(first(r.markers).topics).partitions).error_code
                }
                o => panic!("{o:?}"),
            },
            op: Op::ClusterAction,
        },
        ClusterCase {
            name: "ElectLeaders",
            version: 2,
            body: || {
                RequestBody::ElectLeaders(ElectLeadersRequest {
                    topic_partitions: Some(vec![ElectLeadersRequestTopicPartitions {
                        topic: "t".into(),
                        partitions: vec![0],
                    }]),
                    ..Default::default()
                })
            },
            code: |b| match b {
                ResponseBody::ElectLeaders(r) => {
                    let p = first(first(r.replica_election_results).partition_result);
                    if p.error_code == 31 {
                        r.error_code
                    } else {
                        p.error_code
                    }
                }
                o => panic!("{o:?}"),
            },
            op: Op::Alter,
        },
        ClusterCase {
            name: "AlterPartitionReassignments",
            version: 0,
            body: || {
                RequestBody::AlterPartitionReassignments(AlterPartitionReassignmentsRequest {
                    topics: vec![ReassignableTopic {
                        name: "t".into(),
                        partitions: vec![ReassignablePartition {
                            partition_index: 0,
                            replicas: None,
                        }],
                    }],
                    ..Default::default()
                })
            },
            code: |b| match b {
                ResponseBody::AlterPartitionReassignments(r) => {
                    let p = first(first(r.responses).partitions);
                    if p.error_code == 31 {
                        r.error_code
                    } else {
                        p.error_code
                    }
                }
                o => panic!("{o:?}"),
            },
            op: Op::Alter,
        },
        ClusterCase {
            name: "ListPartitionReassignments",
            version: 0,
            body: || {
                RequestBody::ListPartitionReassignments(ListPartitionReassignmentsRequest::default())
            },
            code: |b| match b {
                ResponseBody::ListPartitionReassignments(r) => r.error_code,
                o => panic!("{o:?}"),
            },
            op: Op::Describe,
        },
        ClusterCase {
            name: "DescribeQuorum",
            version: 1,
            body: || RequestBody::DescribeQuorum(DescribeQuorumRequest::default()),
            code: |b| match b {
                ResponseBody::DescribeQuorum(r) => r.error_code,
                o => panic!("{o:?}"),
            },
            op: Op::Describe,
        },
        ClusterCase {
            name: "ListClientMetricsResources",
            version: 0,
            body: || {
                RequestBody::ListClientMetricsResources(ListClientMetricsResourcesRequest::default())
            },
            code: |b| match b {
                ResponseBody::ListClientMetricsResources(r) => r.error_code,
                o => panic!("{o:?}"),
            },
            op: Op::DescribeConfigs,
        },
        ClusterCase {
            name: "DescribeLogDirs",
            version: 4,
            body: || RequestBody::DescribeLogDirs(DescribeLogDirsRequest::default()),
            code: |b| match b {
                ResponseBody::DescribeLogDirs(r) if r.error_code == 31 => {
                    assert!(r.results.is_empty(), "nothing disclosed");
                    31
                }
                ResponseBody::DescribeLogDirs(r) => r.error_code,
                o => panic!("{o:?}"),
            },
            op: Op::Describe,
        },
        ClusterCase {
            name: "AlterReplicaLogDirs",
            version: 2,
            body: || {
                RequestBody::AlterReplicaLogDirs(AlterReplicaLogDirsRequest {
                    dirs: vec![AlterReplicaLogDir {
                        path: "/nowhere".into(),
                        topics: vec![AlterReplicaLogDirTopic {
                            name: "t".into(),
                            partitions: vec![0],
                        }],
                    }],
                })
            },
            code: |b| match b {
                ResponseBody::AlterReplicaLogDirs(r) => {
                    first(first(r.results).partitions).error_code
                }
                o => panic!("{o:?}"),
            },
            op: Op::Alter,
        },
    ]
}

#[tokio::test]
async fn cluster_level_apis_need_their_cluster_operation() {
    let f = fixture();
    for c in cluster_cases() {
        // Allowed on every topic, and another cluster operation: still refused.
        let other = if c.op == Op::Describe {
            Op::Create
        } else {
            Op::Describe
        };
        f.acls(vec![allow(c.op, Rt::Topic, "*"), allow_cluster(other)]);
        let got = (c.code)(f.call(&alice(), c.version, (c.body)()).await);
        assert_eq!(got, 31, "{} without {:?}", c.name, c.op);
        f.acls(vec![allow_cluster(c.op)]);
        let got = (c.code)(f.call(&alice(), c.version, (c.body)()).await);
        assert_ne!(got, 31, "{} with {:?}", c.name, c.op);
        f.acls(vec![
            allow_cluster(c.op),
            deny(c.op, Rt::Cluster, "kafka-cluster"),
        ]);
        let got = (c.code)(f.call(&alice(), c.version, (c.body)()).await);
        assert_eq!(got, 31, "{}: DENY beats ALLOW", c.name);
        f.acls(vec![]);
        let got = (c.code)(f.call(&admin(), c.version, (c.body)()).await);
        assert_ne!(got, 31, "{}: the super user", c.name);
    }
}

#[tokio::test]
async fn write_txn_markers_also_accepts_alter_on_the_cluster() {
    let f = fixture();
    let case = cluster_cases()
        .into_iter()
        .find(|c| c.name == "WriteTxnMarkers")
        .unwrap();
    f.acls(vec![allow_cluster(Op::Alter)]);
    let got = (case.code)(f.call(&alice(), 1, (case.body)()).await);
    assert_eq!(got, 3, "past authorization: the topic is unknown");
}
