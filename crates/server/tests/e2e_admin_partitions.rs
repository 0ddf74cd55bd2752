//! End-to-end tests of the partition and cluster admin APIs over real TCP against an in-process
//! server with a live configuration: CreatePartitions, DeleteRecords (start offset, fetches
//! below it, persistence), DescribeCluster, DescribeLogDirs and OffsetForLeaderEpoch, with
//! Kafka's error codes and messages.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod admin_support;
mod common;

use std::path::Path;

use admin_support::*;
use common::*;
use skiff_protocol::*;
use skiff_types::{ErrorCode, TopicPartition};

#[tokio::test]
async fn e2e_admin_create_partitions_and_delete_records() {
    let dir = tempfile::tempdir().unwrap();
    let (server, addr) = start_live(dir.path(), &[]).await;
    let mut c = Client::connect(addr).await;
    assert_eq!(create_topic(&mut c, "p", 1).await.error_code, 0);
    let grow = |name: &str, count: i32, assignments: Option<Vec<Vec<i32>>>, validate_only: bool| {
        CreatePartitionsRequest {
            topics: vec![CreatePartitionsTopic {
                name: name.into(),
                count,
                assignments: assignments.map(|a| {
                    a.into_iter()
                        .map(|broker_ids| CreatePartitionsAssignment { broker_ids })
                        .collect()
                }),
            }],
            timeout_ms: 10_000,
            validate_only,
        }
    };
    let result = |r: ResponseBody| match r {
        ResponseBody::CreatePartitions(r) => {
            let t = r.results.into_iter().next().unwrap();
            (t.error_code, t.error_message)
        }
        other => panic!("unexpected {other:?}"),
    };
    assert_eq!(result(c.call(3, grow("p", 3, None, true)).await).0, 0);
    assert_eq!(
        server.broker().image().topic("p").unwrap().partitions,
        1,
        "validate_only"
    );
    assert_eq!(
        result(c.call(3, grow("p", 3, None, false)).await),
        (0, None)
    );
    assert_eq!(server.broker().image().topic("p").unwrap().partitions, 3);
    assert!(
        server
            .broker()
            .replicas
            .log_manager()
            .get(&TopicPartition::new("p", 2))
            .is_some()
    );
    let resp = c
        .call(9, produce_request("p", 2, batch(&["two"]), -1))
        .await;
    let ResponseBody::Produce(r) = resp else {
        panic!()
    };
    assert_eq!(r.responses[0].partition_responses[0].error_code, 0);
    let (code, msg) = result(c.call(0, grow("p", 3, None, false)).await);
    assert_eq!(
        (code, msg.as_deref()),
        (
            ErrorCode::InvalidPartitions as i16,
            Some("Topic already has 3 partition(s).")
        )
    );
    let (code, msg) = result(c.call(0, grow("p", 2, None, false)).await);
    assert_eq!(
        (code, msg.as_deref()),
        (
            ErrorCode::InvalidPartitions as i16,
            Some("The topic p currently has 3 partition(s); 2 would not be an increase.")
        )
    );
    let (code, msg) = result(c.call(1, grow("p", 5, Some(vec![vec![1]]), false)).await);
    assert_eq!(
        (code, msg.as_deref()),
        (
            ErrorCode::InvalidReplicaAssignment as i16,
            Some(
                "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified."
            )
        )
    );
    let (code, _) = result(c.call(1, grow("p", 4, Some(vec![vec![2]]), false)).await);
    assert_eq!(code, ErrorCode::InvalidReplicaAssignment as i16);
    assert_eq!(
        result(c.call(2, grow("p", 4, Some(vec![vec![1]]), false)).await).0,
        0
    );
    assert_eq!(
        result(c.call(2, grow("nope", 4, None, false)).await).0,
        ErrorCode::UnknownTopicOrPartition as i16
    );
    assert_eq!(
        result(c.call(2, grow("p", i32::MAX, None, false)).await).0,
        ErrorCode::InvalidPartitions as i16
    );

    // DeleteRecords: start offset moves, reads below it are out of range.
    assert_eq!(create_topic(&mut c, "d", 1).await.error_code, 0);
    for _ in 0..5 {
        produce(&mut c, 9, "d", batch(&["a", "b"])).await;
    }
    let delete = |topic: &str, partition: i32, offset: i64| DeleteRecordsRequest {
        topics: vec![DeleteRecordsTopic {
            name: topic.into(),
            partitions: vec![DeleteRecordsPartition {
                partition_index: partition,
                offset,
            }],
        }],
        timeout_ms: 10_000,
    };
    let outcome = |r: ResponseBody| match r {
        ResponseBody::DeleteRecords(r) => {
            let p = &r.topics[0].partitions[0];
            (p.error_code, p.low_watermark)
        }
        other => panic!("unexpected {other:?}"),
    };
    assert_eq!(outcome(c.call(2, delete("d", 0, 3)).await), (0, 3));
    assert_eq!(list_offset(&mut c, 1, "d", -2).await.1, 3);
    let resp = c.call(12, fetch_request("d", 0, 0, 0)).await;
    assert_eq!(
        fetched(&resp).error_code,
        ErrorCode::OffsetOutOfRange as i16
    );
    let resp = c.call(12, fetch_request("d", 3, 0, 0)).await;
    assert_eq!(fetched(&resp).log_start_offset, 3);
    assert_eq!(
        values(fetched(&resp))
            .iter()
            .filter(|(o, _)| *o >= 3)
            .count(),
        7
    );
    assert_eq!(
        outcome(c.call(1, delete("d", 0, 2)).await),
        (0, 3),
        "never backwards"
    );
    assert_eq!(
        outcome(c.call(0, delete("d", 0, 11)).await),
        (ErrorCode::OffsetOutOfRange as i16, -1)
    );
    assert_eq!(
        outcome(c.call(0, delete("d", 0, -5)).await),
        (ErrorCode::OffsetOutOfRange as i16, -1)
    );
    assert_eq!(
        outcome(c.call(2, delete("d", 0, -1)).await),
        (0, 10),
        "-1 = high watermark"
    );
    assert_eq!(
        outcome(c.call(2, delete("d", 1, 0)).await).0,
        ErrorCode::UnknownTopicOrPartition as i16
    );
    assert_eq!(
        outcome(c.call(2, delete("zz", 0, 0)).await),
        (ErrorCode::UnknownTopicOrPartition as i16, -1)
    );
    assert_eq!(
        create_topic_with(&mut c, "compacted", &[("cleanup.policy", "compact")])
            .await
            .error_code,
        0
    );
    assert_eq!(
        outcome(c.call(2, delete("compacted", 0, -1)).await).0,
        ErrorCode::PolicyViolation as i16
    );
    // The new start offset survives a restart.
    server.shutdown().await.unwrap();
    let (server, addr) = start_live(dir.path(), &[]).await;
    let mut c = Client::connect(addr).await;
    assert_eq!(list_offset(&mut c, 1, "d", -2).await.1, 10);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn e2e_admin_describe_cluster_log_dirs_and_leader_epochs() {
    let dir = tempfile::tempdir().unwrap();
    let (server, addr) = start_live(dir.path(), &[]).await;
    let mut c = Client::connect(addr).await;
    assert_eq!(create_topic(&mut c, "e", 2).await.error_code, 0);
    produce(&mut c, 9, "e", batch(&["a", "b", "c"])).await;

    for v in [0i16, 1] {
        let ResponseBody::DescribeCluster(r) = c
            .call(
                v,
                DescribeClusterRequest {
                    include_cluster_authorized_operations: true,
                    endpoint_type: 1,
                },
            )
            .await
        else {
            panic!()
        };
        assert_eq!(r.error_code, 0);
        assert_eq!(r.cluster_id, server.broker().cluster_id());
        assert_eq!(r.controller_id, 1);
        assert_eq!(r.brokers.len(), 1);
        assert_eq!(
            (
                r.brokers[0].broker_id,
                r.brokers[0].host.as_str(),
                r.brokers[0].port
            ),
            (1, "localhost", i32::from(addr.port()))
        );
        assert_ne!(r.cluster_authorized_operations & (1 << 8), 0, "DESCRIBE");
    }
    let ResponseBody::DescribeCluster(r) = c
        .call(
            1,
            DescribeClusterRequest {
                include_cluster_authorized_operations: false,
                endpoint_type: 2,
            },
        )
        .await
    else {
        panic!()
    };
    assert_eq!(r.error_code, ErrorCode::MismatchedEndpointType as i16);
    let ResponseBody::DescribeCluster(r) = c
        .call(
            1,
            DescribeClusterRequest {
                include_cluster_authorized_operations: false,
                endpoint_type: 9,
            },
        )
        .await
    else {
        panic!()
    };
    assert_eq!(r.error_code, ErrorCode::UnsupportedEndpointType as i16);

    for v in [1i16, 4] {
        let ResponseBody::DescribeLogDirs(r) =
            c.call(v, DescribeLogDirsRequest { topics: None }).await
        else {
            panic!()
        };
        assert_eq!(r.results.len(), 1);
        let d = &r.results[0];
        assert_eq!(d.error_code, 0);
        assert_eq!(Path::new(&d.log_dir), dir.path().join("data"));
        let e = d.topics.iter().find(|t| t.name == "e").unwrap();
        let mut parts: Vec<(i32, i64, i64)> = e
            .partitions
            .iter()
            .map(|p| (p.partition_index, p.partition_size, p.offset_lag))
            .collect();
        parts.sort_unstable();
        assert_eq!(parts[0].0, 0);
        assert!(
            parts[0].1 > 61,
            "a batch of 3 records is on disk: {}",
            parts[0].1
        );
        assert_eq!((parts[1].0, parts[1].1, parts[1].2), (1, 0, 0));
        if v == 4 {
            assert!(d.total_bytes > 0 && d.usable_bytes > 0 && d.usable_bytes <= d.total_bytes);
        }
    }
    let req = DescribeLogDirsRequest {
        topics: Some(vec![DescribableLogDirTopic {
            topic: "e".into(),
            partitions: vec![1, 7],
        }]),
    };
    let ResponseBody::DescribeLogDirs(r) = c.call(3, req).await else {
        panic!()
    };
    let topics = &r.results[0].topics;
    assert_eq!(topics.len(), 1);
    assert_eq!(
        topics[0]
            .partitions
            .iter()
            .map(|p| p.partition_index)
            .collect::<Vec<_>>(),
        vec![1]
    );

    let epochs = |partition: i32, current: i32, epoch: i32| OffsetForLeaderEpochRequest {
        replica_id: -1,
        topics: vec![OffsetForLeaderTopic {
            topic: "e".into(),
            partitions: vec![OffsetForLeaderPartition {
                partition,
                current_leader_epoch: current,
                leader_epoch: epoch,
            }],
        }],
    };
    let answer = |r: ResponseBody| match r {
        ResponseBody::OffsetForLeaderEpoch(r) => {
            let p = &r.topics[0].partitions[0];
            (p.error_code, p.leader_epoch, p.end_offset)
        }
        other => panic!("unexpected {other:?}"),
    };
    for v in [2i16, 3, 4] {
        assert_eq!(answer(c.call(v, epochs(0, 0, 0)).await), (0, 0, 3));
        assert_eq!(
            answer(c.call(v, epochs(1, -1, 0)).await),
            (0, 0, 0),
            "empty partition, current epoch"
        );
        assert_eq!(
            answer(c.call(v, epochs(0, 0, 5)).await),
            (0, -1, -1),
            "unknown future epoch"
        );
        assert_eq!(
            answer(c.call(v, epochs(0, 3, 0)).await).0,
            ErrorCode::UnknownLeaderEpoch as i16
        );
        assert_eq!(
            answer(c.call(v, epochs(9, -1, 0)).await).0,
            ErrorCode::UnknownTopicOrPartition as i16
        );
    }
    server.shutdown().await.unwrap();
}

/// Like Kafka's controller, one CreateTopics may append at most 10,000 metadata records: a
/// request over that fails whole with POLICY_VIOLATION and creates nothing; one at the limit
/// is fine.
#[tokio::test]
async fn e2e_admin_create_topics_over_the_record_limit_is_a_policy_violation() {
    let dir = tempfile::tempdir().unwrap();
    let (server, addr) = start_live(dir.path(), &[]).await;
    let mut c = Client::connect(addr).await;
    let huge = create_topic(&mut c, "huge", 1_000_000).await;
    assert_eq!(
        huge.error_code,
        ErrorCode::PolicyViolation as i16,
        "{huge:?}"
    );
    assert_eq!(
        huge.error_message.as_deref(),
        Some("Unable to perform excessively large batch operation.")
    );
    // Two topics that fit alone but not together: both refused.
    let req = CreateTopicsRequest {
        topics: ["a", "b"]
            .into_iter()
            .map(|name| CreatableTopic {
                name: name.into(),
                num_partitions: 6_000,
                replication_factor: -1,
                ..CreatableTopic::default()
            })
            .collect(),
        timeout_ms: 10_000,
        ..CreateTopicsRequest::default()
    };
    match c.call(7, req).await {
        ResponseBody::CreateTopics(r) => {
            assert_eq!(r.topics.len(), 2);
            for t in r.topics {
                assert_eq!(t.error_code, ErrorCode::PolicyViolation as i16, "{t:?}");
            }
        }
        other => panic!("unexpected {other:?}"),
    }
    let image = server.broker().image();
    assert!(image.topic("huge").is_none() && image.topic("a").is_none());
    assert!(image.topic("b").is_none());
    // A normal topic on the same connection still works.
    assert_eq!(create_topic(&mut c, "fine", 3).await.error_code, 0);
}
