//! Authorization of the KIP-848 consumer group APIs and the transaction APIs (issue 19), in
//! the setting of the parent module (topics `t`, `secret`, `missing`; `User:alice`).

use super::*;

fn cg_heartbeat(member: &str, topics: &[&str]) -> RequestBody {
    RequestBody::ConsumerGroupHeartbeat(ConsumerGroupHeartbeatRequest {
        group_id: "cg".into(),
        member_id: member.into(),
        member_epoch: 0,
        rebalance_timeout_ms: 10_000,
        subscribed_topic_names: Some(topics.iter().map(|t| (*t).to_string()).collect()),
        topic_partitions: Some(Vec::new()),
        ..ConsumerGroupHeartbeatRequest::default()
    })
}

async fn heartbeat(
    broker: &Arc<Broker>,
    who: &KafkaPrincipal,
    member: &str,
    topics: &[&str],
) -> ConsumerGroupHeartbeatResponse {
    let ResponseBody::ConsumerGroupHeartbeat(r) =
        call(broker, who, 1, cg_heartbeat(member, topics)).await
    else {
        panic!()
    };
    r
}

#[tokio::test]
async fn consumer_group_heartbeat_needs_read_on_group_and_describe_on_topics() {
    let dir = tempfile::tempdir().unwrap();
    let broker = open_broker(dir.path());
    let member = "0123456789abcdef0123456";
    enable_acls(&broker, vec![allow(Describe, Topic, "t")]);
    let r = heartbeat(&broker, &alice(), member, &["t"]).await;
    assert_eq!(r.error_code, GROUP_AUTHZ);

    // READ on the group, DESCRIBE on `t` only: refused with the other names in the message,
    // existing or not.
    enable_acls(
        &broker,
        vec![allow(Read, Group, "cg"), allow(Describe, Topic, "t")],
    );
    let r = heartbeat(&broker, &alice(), member, &["t", "secret", "missing"]).await;
    assert_eq!(r.error_code, TOPIC_AUTHZ, "{r:?}");
    assert_eq!(
        r.error_message.as_deref(),
        Some("Not authorized to describe topics: missing, secret")
    );
    enable_acls(
        &broker,
        vec![
            allow(Read, Group, "cg"),
            allow(Describe, Topic, "t"),
            deny(Describe, Topic, "t"),
        ],
    );
    assert_eq!(
        heartbeat(&broker, &alice(), member, &["t"])
            .await
            .error_code,
        TOPIC_AUTHZ
    );
    // Allowed: the member joins and gets `t`.
    enable_acls(
        &broker,
        vec![allow(Read, Group, "cg"), allow(Describe, Topic, "t")],
    );
    let r = heartbeat(&broker, &alice(), member, &["t"]).await;
    assert_eq!(r.error_code, 0, "{r:?}");
    assert!(r.member_epoch >= 1);
}

async fn cg_describe(broker: &Arc<Broker>, who: &KafkaPrincipal) -> Vec<(String, i16, usize, i32)> {
    let req = ConsumerGroupDescribeRequest {
        group_ids: vec!["cg".into(), "other".into()],
        include_authorized_operations: true,
    };
    let ResponseBody::ConsumerGroupDescribe(r) =
        call(broker, who, 1, RequestBody::ConsumerGroupDescribe(req)).await
    else {
        panic!()
    };
    r.groups
        .into_iter()
        .map(|g| {
            (
                g.group_id,
                g.error_code,
                g.members.len(),
                g.authorized_operations,
            )
        })
        .collect()
}

#[tokio::test]
async fn consumer_group_describe_refuses_groups_and_hides_unauthorized_topics() {
    let dir = tempfile::tempdir().unwrap();
    let broker = open_broker(dir.path());
    enable_acls(&broker, vec![]);
    let r = heartbeat(&broker, &admin(), "0123456789abcdef0123456", &["t"]).await;
    assert_eq!(r.error_code, 0, "{r:?}");

    // DESCRIBE on `cg` but not on `t`, which its member is assigned: 29 with Kafka's message
    // and no members; `other` refused (first).
    enable_acls(&broker, vec![allow(Describe, Group, "cg")]);
    assert_eq!(
        cg_describe(&broker, &alice()).await,
        vec![
            ("other".into(), GROUP_AUTHZ, 0, i32::MIN),
            ("cg".into(), TOPIC_AUTHZ, 0, i32::MIN)
        ]
    );
    enable_acls(
        &broker,
        vec![allow(Describe, Group, "cg"), allow(Describe, Topic, "t")],
    );
    assert_eq!(
        cg_describe(&broker, &alice()).await[1],
        ("cg".into(), 0, 1, 1 << 8)
    );
    enable_acls(
        &broker,
        vec![
            allow(Describe, Group, "cg"),
            deny(Describe, Group, "cg"),
            allow(Describe, Topic, "t"),
        ],
    );
    assert_eq!(cg_describe(&broker, &alice()).await[1].1, GROUP_AUTHZ);
    let every_op = (1 << 3) | (1 << 6) | (1 << 8) | (1 << 10) | (1 << 11);
    assert_eq!(
        cg_describe(&broker, &admin()).await[0],
        ("cg".into(), 0, 1, every_op)
    );
}

// ---- transactions ----

/// FindCoordinator (creating `__transaction_state`) and InitProducerId for `tid` as the super
/// user, retried while the coordinator loads: (producer id, epoch).
async fn init_txn(broker: &Arc<Broker>, tid: &str) -> (i64, i16) {
    for _ in 0..200 {
        let find = FindCoordinatorRequest {
            key: tid.into(),
            key_type: 1,
            ..FindCoordinatorRequest::default()
        };
        let ResponseBody::FindCoordinator(f) =
            call(broker, &admin(), 3, RequestBody::FindCoordinator(find)).await
        else {
            panic!()
        };
        assert_eq!(f.error_code, 0, "{f:?}");
        let req = InitProducerIdRequest {
            transactional_id: Some(tid.into()),
            transaction_timeout_ms: 60_000,
            producer_id: -1,
            producer_epoch: -1,
        };
        let ResponseBody::InitProducerId(r) =
            call(broker, &admin(), 4, RequestBody::InitProducerId(req)).await
        else {
            panic!()
        };
        if r.error_code == 0 {
            return (r.producer_id, r.producer_epoch);
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    panic!("InitProducerId kept failing");
}

/// AddPartitionsToTxn v3 of partition 0 of each topic: (topic, code).
async fn add_partitions(
    broker: &Arc<Broker>,
    who: &KafkaPrincipal,
    tid: &str,
    producer: (i64, i16),
    topics: &[&str],
) -> Vec<(String, i16)> {
    let req = AddPartitionsToTxnRequest {
        v3_and_below_transactional_id: tid.into(),
        v3_and_below_producer_id: producer.0,
        v3_and_below_producer_epoch: producer.1,
        v3_and_below_topics: topics
            .iter()
            .map(|t| AddPartitionsToTxnTopic {
                name: (*t).into(),
                partitions: vec![0],
            })
            .collect(),
        ..AddPartitionsToTxnRequest::default()
    };
    let ResponseBody::AddPartitionsToTxn(r) =
        call(broker, who, 3, RequestBody::AddPartitionsToTxn(req)).await
    else {
        panic!()
    };
    r.results_by_topic_v3_and_below
        .into_iter()
        .map(|t| (t.name, t.results_by_partition[0].partition_error_code))
        .collect()
}

#[tokio::test]
async fn add_partitions_to_txn_needs_write_on_id_and_topics() {
    let dir = tempfile::tempdir().unwrap();
    let broker = open_broker(dir.path());
    enable_acls(&broker, vec![]);
    let producer = init_txn(&broker, "tx").await;
    let all = ["t", "secret", "missing", "__consumer_offsets"];

    enable_acls(&broker, vec![allow(Write, Topic, "t")]);
    assert_eq!(
        add_partitions(&broker, &alice(), "tx", producer, &all).await,
        codes(&[
            ("t", 53),
            ("secret", 53),
            ("missing", 53),
            ("__consumer_offsets", 53)
        ])
    );
    // Unauthorized (existing or not) and internal topics 29, the rest not attempted; an
    // authorized unknown topic 3.
    enable_acls(
        &broker,
        vec![
            allow(Write, TransactionalId, "tx"),
            allow(Write, Topic, "t"),
            allow(Write, Topic, "ghost"),
            allow(Write, Topic, "__consumer_offsets"),
        ],
    );
    assert_eq!(
        add_partitions(&broker, &alice(), "tx", producer, &all).await,
        codes(&[
            ("t", 55),
            ("secret", 29),
            ("missing", 29),
            ("__consumer_offsets", 29)
        ])
    );
    assert_eq!(
        add_partitions(&broker, &alice(), "tx", producer, &["t", "ghost"]).await,
        codes(&[("t", 55), ("ghost", 3)])
    );
    assert_eq!(
        add_partitions(&broker, &alice(), "tx", producer, &["t"]).await,
        codes(&[("t", 0)])
    );
    enable_acls(
        &broker,
        vec![
            allow(Write, TransactionalId, "tx"),
            allow(Write, Topic, "secret"),
            deny(Write, Topic, "secret"),
        ],
    );
    assert_eq!(
        add_partitions(&broker, &alice(), "tx", producer, &["secret"]).await,
        codes(&[("secret", 29)])
    );
    assert_eq!(
        add_partitions(&broker, &admin(), "tx", producer, &["secret"]).await,
        codes(&[("secret", 0)])
    );

    // v4 (broker to broker): CLUSTER_ACTION, else a top-level 31.
    let v4 = AddPartitionsToTxnRequest {
        transactions: vec![AddPartitionsToTxnTransaction {
            transactional_id: "tx".into(),
            producer_id: producer.0,
            producer_epoch: producer.1,
            verify_only: true,
            topics: vec![AddPartitionsToTxnTopic {
                name: "t".into(),
                partitions: vec![0],
            }],
        }],
        ..AddPartitionsToTxnRequest::default()
    };
    let ResponseBody::AddPartitionsToTxn(r) = call(
        &broker,
        &alice(),
        4,
        RequestBody::AddPartitionsToTxn(v4.clone()),
    )
    .await
    else {
        panic!()
    };
    assert_eq!(
        (r.error_code, r.results_by_transaction.len()),
        (CLUSTER_AUTHZ, 0)
    );
    enable_acls(
        &broker,
        vec![allow(
            ClusterAction,
            Cluster,
            skiff_auth::acl::CLUSTER_RESOURCE_NAME,
        )],
    );
    let ResponseBody::AddPartitionsToTxn(r) =
        call(&broker, &alice(), 4, RequestBody::AddPartitionsToTxn(v4)).await
    else {
        panic!()
    };
    assert_eq!((r.error_code, r.results_by_transaction.len()), (0, 1));
}

#[tokio::test]
async fn add_offsets_end_txn_and_txn_offset_commit_check_id_then_group_then_topics() {
    let dir = tempfile::tempdir().unwrap();
    let broker = open_broker(dir.path());
    enable_acls(&broker, vec![]);
    let producer = init_txn(&broker, "tx").await;
    let add_offsets = |who: KafkaPrincipal| {
        let broker = Arc::clone(&broker);
        async move {
            let req = AddOffsetsToTxnRequest {
                transactional_id: "tx".into(),
                producer_id: producer.0,
                producer_epoch: producer.1,
                group_id: "g".into(),
            };
            match call(&broker, &who, 3, RequestBody::AddOffsetsToTxn(req)).await {
                ResponseBody::AddOffsetsToTxn(r) => r.error_code,
                other => panic!("{other:?}"),
            }
        }
    };
    let txn_commit = |who: KafkaPrincipal| {
        let broker = Arc::clone(&broker);
        async move {
            let req = TxnOffsetCommitRequest {
                transactional_id: "tx".into(),
                group_id: "g".into(),
                producer_id: producer.0,
                producer_epoch: producer.1,
                generation_id: -1,
                topics: ["t", "secret", "missing"]
                    .iter()
                    .map(|t| TxnOffsetCommitRequestTopic {
                        name: (*t).into(),
                        partitions: vec![TxnOffsetCommitRequestPartition {
                            partition_index: 0,
                            committed_offset: 3,
                            committed_leader_epoch: -1,
                            committed_metadata: None,
                        }],
                    })
                    .collect(),
                ..TxnOffsetCommitRequest::default()
            };
            let ResponseBody::TxnOffsetCommit(r) =
                call(&broker, &who, 3, RequestBody::TxnOffsetCommit(req)).await
            else {
                panic!()
            };
            r.topics
                .into_iter()
                .map(|t| t.partitions[0].error_code)
                .collect::<Vec<_>>()
        }
    };
    let end_txn = |who: KafkaPrincipal| {
        let broker = Arc::clone(&broker);
        async move {
            let req = EndTxnRequest {
                transactional_id: "tx".into(),
                producer_id: producer.0,
                producer_epoch: producer.1,
                committed: false,
            };
            match call(&broker, &who, 3, RequestBody::EndTxn(req)).await {
                ResponseBody::EndTxn(r) => r.error_code,
                other => panic!("{other:?}"),
            }
        }
    };

    enable_acls(
        &broker,
        vec![allow(Read, Group, "g"), allow(Read, Topic, "t")],
    );
    assert_eq!(add_offsets(alice()).await, TXN_AUTHZ);
    assert_eq!(txn_commit(alice()).await, vec![TXN_AUTHZ; 3]);
    assert_eq!(end_txn(alice()).await, TXN_AUTHZ);

    enable_acls(
        &broker,
        vec![
            allow(Write, TransactionalId, "tx"),
            allow(Read, Topic, "t"),
            allow(Describe, Group, "g"),
        ],
    );
    assert_eq!(add_offsets(alice()).await, GROUP_AUTHZ);
    assert_eq!(txn_commit(alice()).await, vec![GROUP_AUTHZ; 3]);

    enable_acls(
        &broker,
        vec![
            allow(Write, TransactionalId, "tx"),
            allow(Read, Group, "g"),
            allow(Read, Topic, "t"),
        ],
    );
    assert_eq!(add_offsets(alice()).await, 0);
    assert_eq!(txn_commit(alice()).await, vec![0, TOPIC_AUTHZ, TOPIC_AUTHZ]);
    assert_eq!(end_txn(alice()).await, 0);

    enable_acls(
        &broker,
        vec![
            allow(Write, TransactionalId, "tx"),
            deny(Write, TransactionalId, "tx"),
        ],
    );
    assert_eq!(end_txn(alice()).await, TXN_AUTHZ);
    assert_ne!(end_txn(admin()).await, TXN_AUTHZ);
}

#[tokio::test]
async fn describe_and_list_transactions_show_only_what_may_be_described() {
    let dir = tempfile::tempdir().unwrap();
    let broker = open_broker(dir.path());
    enable_acls(&broker, vec![]);
    for tid in ["tx", "ty"] {
        let producer = init_txn(&broker, tid).await;
        assert_eq!(
            add_partitions(&broker, &admin(), tid, producer, &["t", "secret"]).await,
            codes(&[("t", 0), ("secret", 0)])
        );
    }
    enable_acls(
        &broker,
        vec![
            allow(Describe, TransactionalId, "tx"),
            allow(Describe, Topic, "t"),
        ],
    );
    let req = DescribeTransactionsRequest {
        transactional_ids: vec!["ty".into(), "tx".into()],
    };
    let ResponseBody::DescribeTransactions(r) =
        call(&broker, &alice(), 0, RequestBody::DescribeTransactions(req)).await
    else {
        panic!()
    };
    let got: Vec<_> = r
        .transaction_states
        .iter()
        .map(|s| {
            let topics: Vec<&str> = s.topics.iter().map(|t| t.topic.as_str()).collect();
            (
                s.transactional_id.as_str(),
                s.error_code,
                s.producer_id,
                topics,
            )
        })
        .collect();
    assert_eq!(got[0], ("ty", TXN_AUTHZ, 0, vec![]));
    assert_eq!((got[1].0, got[1].1, got[1].3.clone()), ("tx", 0, vec!["t"]));

    let list = |who: KafkaPrincipal| {
        let broker = Arc::clone(&broker);
        async move {
            let req = ListTransactionsRequest {
                duration_filter: -1,
                ..ListTransactionsRequest::default()
            };
            let ResponseBody::ListTransactions(r) =
                call(&broker, &who, 1, RequestBody::ListTransactions(req)).await
            else {
                panic!()
            };
            let mut ids: Vec<String> = r
                .transaction_states
                .into_iter()
                .map(|s| s.transactional_id)
                .collect();
            ids.sort();
            ids
        }
    };
    assert_eq!(list(alice()).await, vec!["tx".to_string()]);
    assert_eq!(list(admin()).await, vec!["tx".to_string(), "ty".into()]);
    enable_acls(
        &broker,
        vec![
            allow(Describe, TransactionalId, "tx"),
            deny(Describe, TransactionalId, "tx"),
        ],
    );
    assert_eq!(list(alice()).await, Vec::<String>::new());
}
