//! Unit tests of the coordinator runtime: slots, placement, loading and reply shaping.

use std::collections::BTreeMap;

use skiff_metadata::TopicInfo as MetaTopic;
use skiff_protocol::HeartbeatResponse;

use super::*;

fn image_with_offsets_topic(partitions: i32) -> MetadataImage {
    let mut image = MetadataImage::default();
    image.topics.insert(
        OFFSETS_TOPIC.to_string(),
        MetaTopic {
            name: OFFSETS_TOPIC.to_string(),
            id: [7; 16],
            partitions,
            configs: BTreeMap::new(),
        },
    );
    image
}

#[test]
fn an_existing_offsets_topic_keeps_its_partition_count_and_loads() {
    let settings = GroupSettings {
        offsets_topic_partitions: 50,
        ..GroupSettings::default()
    };
    let c = GroupCoordinator::new(settings.clone(), &image_with_offsets_topic(7), false);
    assert_eq!(
        c.partitions(),
        7,
        "placement must not move under existing commits"
    );
    assert!(
        c.slots
            .iter()
            .all(|s| matches!(s.state.lock().phase, Phase::Loading)),
        "an existing topic is replayed before serving"
    );
    assert_eq!(
        c.partition_for("group"),
        skiff_group::partition_for("group", 7)
    );

    let fresh = GroupCoordinator::new(settings, &MetadataImage::default(), false);
    assert_eq!(fresh.partitions(), 50);
    assert!(
        fresh
            .slots
            .iter()
            .all(|s| matches!(s.state.lock().phase, Phase::Ready(_))),
        "nothing to load without the topic"
    );
    assert_eq!(fresh.earliest_deadline(), None);
}

#[test]
fn failing_pending_requests_answers_each_once() {
    let c = GroupCoordinator::new(GroupSettings::default(), &MetadataImage::default(), false);
    let (tx, mut rx) = oneshot::channel();
    c.slots[3].state.lock().pending.insert(RequestToken(1), tx);
    c.fail_all_pending(ErrorCode::NotCoordinator);
    assert_eq!(rx.try_recv().unwrap(), Err(ErrorCode::NotCoordinator));
    assert!(c.slots[3].state.lock().pending.is_empty());
}

fn open_broker(dir: &std::path::Path) -> Arc<Broker> {
    let mut settings = crate::settings::ServerSettings::with_log_dir(dir);
    settings.groups.offsets_topic_partitions = 3;
    let (_tx, rx) = tokio::sync::watch::channel(false);
    Broker::open(
        settings,
        Arc::new(crate::settings::StorageTopicConfigs::default()),
        rx,
    )
    .unwrap()
}

/// The first group id (`g0`, `g1`, ...) placed on `partition` of 3.
fn group_on(partition: i32) -> String {
    (0..)
        .map(|i| format!("g{i}"))
        .find(|g| skiff_group::partition_for(g, 3) == partition)
        .unwrap()
}

fn now_body(r: Reply) -> ResponseBody {
    match r {
        Reply::Now(b) => b,
        other => panic!("expected an immediate answer: {other:?}"),
    }
}

/// Runs one handler as a client on 127.0.0.1 would reach it.
fn handle<T>(
    broker: &Arc<Broker>,
    version: i16,
    f: impl FnOnce(&crate::handlers::RequestContext<'_>) -> T,
) -> T {
    let listener = crate::handlers::ListenerInfo {
        name: "PLAINTEXT".into(),
        advertised_host: "localhost".into(),
        advertised_port: 9092,
        controller: false,
    };
    let ctx = crate::handlers::RequestContext {
        broker,
        listener: &listener,
        peer: "127.0.0.1:5000".parse().unwrap(),
        api_version: version,
        correlation_id: 1,
        principal: &skiff_auth::principal::KafkaPrincipal::anonymous(),
        client_id: Some("unit"),
    };
    f(&ctx)
}

/// A simple commit (no member) of `t`-0 at `offset`: the partition's error code.
fn commit(broker: &Arc<Broker>, group: &str, offset: i64) -> i16 {
    let req = skiff_protocol::OffsetCommitRequest {
        group_id: group.into(),
        generation_id_or_member_epoch: -1,
        topics: vec![skiff_protocol::OffsetCommitRequestTopic {
            name: "t".into(),
            partitions: vec![skiff_protocol::OffsetCommitRequestPartition {
                partition_index: 0,
                committed_offset: offset,
                committed_leader_epoch: -1,
                committed_metadata: None,
            }],
        }],
        ..skiff_protocol::OffsetCommitRequest::default()
    };
    let body = now_body(handle(broker, 8, |ctx| {
        crate::handlers::offset_commit::handle(ctx, req)
    }));
    match body {
        ResponseBody::OffsetCommit(r) => r.topics[0].partitions[0].error_code,
        other => panic!("{other:?}"),
    }
}

/// OffsetFetch v8 of `t`-0 per group: (group error, offset).
fn fetch(broker: &Arc<Broker>, groups: &[&str]) -> Vec<(i16, i64)> {
    let req = skiff_protocol::OffsetFetchRequest {
        groups: groups
            .iter()
            .map(|g| skiff_protocol::OffsetFetchRequestGroup {
                group_id: (*g).into(),
                member_id: None,
                member_epoch: -1,
                topics: Some(vec![skiff_protocol::OffsetFetchRequestTopics {
                    name: "t".into(),
                    partition_indexes: vec![0],
                }]),
            })
            .collect(),
        ..skiff_protocol::OffsetFetchRequest::default()
    };
    let body = now_body(handle(broker, 8, |ctx| {
        crate::handlers::offset_fetch::handle(ctx, req)
    }));
    let ResponseBody::OffsetFetch(r) = body else {
        panic!("{body:?}")
    };
    r.groups
        .iter()
        .map(|g| {
            let offset = g
                .topics
                .first()
                .and_then(|t| t.partitions.first())
                .map_or(-1, |p| p.committed_offset);
            (g.error_code, offset)
        })
        .collect()
}

/// ListGroups v4: (error, sorted group ids).
fn list(broker: &Arc<Broker>) -> (i16, Vec<String>) {
    let req = skiff_protocol::ListGroupsRequest::default();
    let body = now_body(handle(broker, 4, |ctx| {
        crate::handlers::list_groups::handle(ctx, req)
    }));
    let ResponseBody::ListGroups(r) = body else {
        panic!("{body:?}")
    };
    let mut ids: Vec<String> = r.groups.into_iter().map(|g| g.group_id).collect();
    ids.sort();
    (r.error_code, ids)
}

#[tokio::test]
async fn a_loading_partition_answers_coordinator_load_in_progress() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (group_on(0), group_on(1));
    {
        let broker = open_broker(dir.path());
        // Commits are only taken for partitions that exist (Kafka's OffsetCommit check).
        broker
            .create_topic("t", 1, std::collections::BTreeMap::new())
            .unwrap();
        assert_eq!(commit(&broker, &a, 5), 0);
        assert_eq!(commit(&broker, &b, 6), 0);
    }
    // Reopened: `__consumer_offsets` exists, so every slot waits for its replay (which
    // `GroupCoordinator::start` would spawn; here the test loads partitions one by one).
    let broker = open_broker(dir.path());
    let groups = &broker.groups;
    let load_in_progress = Err(ErrorCode::CoordinatorLoadInProgress);
    let caller = Caller {
        api_version: 8,
        client_id: "unit",
        peer: "127.0.0.1:5000".parse().unwrap(),
    };
    let called = groups.call(&broker, &a, caller, |_, _, _| {
        unreachable!("a loading shard is never called")
    });
    assert_eq!(called.map(|_| ()), load_in_progress);
    assert_eq!(groups.read(&broker, &a, |_| ()), load_in_progress);
    assert_eq!(commit(&broker, &b, 7), 14, "calls answer 14");
    assert_eq!(fetch(&broker, &[&a, &b]), vec![(14, -1), (14, -1)]);
    assert_eq!(list(&broker), (14, vec![]), "nothing loaded yet");
    let (lists, loading) = groups.read_all(&broker, |s| s.group_ids());
    assert!(lists.is_empty() && loading);

    // Partition 0 loaded: its group answers, the others still say 14, and ListGroups
    // carries 14 next to the loaded shard's groups.
    groups.load(&broker, 0, 0).unwrap();
    assert_eq!(groups.read(&broker, &a, |_| ()), Ok(()));
    assert_eq!(groups.read(&broker, &b, |_| ()), load_in_progress);
    assert_eq!(fetch(&broker, &[&a, &b]), vec![(0, 5), (14, -1)]);
    assert_eq!(list(&broker), (14, vec![a.clone()]));
    assert_eq!(commit(&broker, &b, 7), 14);

    for p in 1..3 {
        groups.load(&broker, p, 0).unwrap();
    }
    assert_eq!(fetch(&broker, &[&a, &b]), vec![(0, 5), (0, 6)]);
    let mut both = vec![a, b];
    both.sort();
    assert_eq!(list(&broker), (0, both));
}

#[tokio::test]
async fn replies_map_errors_and_parked_answers() {
    let on_error = |code: ErrorCode| {
        ResponseBody::Heartbeat(HeartbeatResponse {
            error_code: code.code(),
            ..HeartbeatResponse::default()
        })
    };
    let code_of = |b: &ResponseBody| match b {
        ResponseBody::Heartbeat(r) => r.error_code,
        other => panic!("{other:?}"),
    };
    match reply(Err(ErrorCode::CoordinatorLoadInProgress), on_error) {
        Reply::Now(b) => assert_eq!(code_of(&b), 14),
        other => panic!("{other:?}"),
    }
    let (tx, rx) = oneshot::channel();
    let Reply::Later(later) = reply(Ok(Answer::Parked(rx)), on_error) else {
        panic!("a parked answer is a Later reply")
    };
    tx.send(Ok(Response::Heartbeat(HeartbeatResponse {
        error_code: 27,
        ..HeartbeatResponse::default()
    })))
    .unwrap();
    assert_eq!(code_of(&later.await), 27);
    // A sender dropped without an answer (a reloaded shard) is NOT_COORDINATOR.
    let (tx, rx) = oneshot::channel::<ShardResult>();
    let Reply::Later(later) = reply(Ok(Answer::Parked(rx)), on_error) else {
        panic!()
    };
    drop(tx);
    assert_eq!(code_of(&later.await), 16);
}

/// A TxnOffsetCommit of `t`-0 at `offset` for `group` by `producer` through the runtime: the
/// partition's error code.
fn txn_commit(broker: &Arc<Broker>, group: &str, producer: (i64, i16), offset: i64) -> i16 {
    let req = skiff_protocol::TxnOffsetCommitRequest {
        transactional_id: "tx".into(),
        group_id: group.into(),
        producer_id: producer.0,
        producer_epoch: producer.1,
        topics: vec![skiff_protocol::TxnOffsetCommitRequestTopic {
            name: "t".into(),
            partitions: vec![skiff_protocol::TxnOffsetCommitRequestPartition {
                partition_index: 0,
                committed_offset: offset,
                committed_leader_epoch: -1,
                committed_metadata: None,
            }],
        }],
        ..skiff_protocol::TxnOffsetCommitRequest::default()
    };
    let caller = Caller {
        api_version: 3,
        client_id: "unit",
        peer: "127.0.0.1:5000".parse().unwrap(),
    };
    let answer = broker
        .groups
        .call_transactional(broker, group, caller, producer, |s, c, now| {
            s.handle_txn_offset_commit(c, &req, now)
        });
    match answer {
        Ok(Answer::Ready(Response::TxnOffsetCommit(r))) => r.topics[0].partitions[0].error_code,
        Err(code) => code.code(),
        other => panic!("{other:?}"),
    }
}

/// OffsetFetch v8 of `t`-0 with `require_stable`: (partition error, offset).
fn fetch_stable(broker: &Arc<Broker>, group: &str) -> (i16, i64) {
    let req = skiff_protocol::OffsetFetchRequest {
        groups: vec![skiff_protocol::OffsetFetchRequestGroup {
            group_id: group.into(),
            member_id: None,
            member_epoch: -1,
            topics: Some(vec![skiff_protocol::OffsetFetchRequestTopics {
                name: "t".into(),
                partition_indexes: vec![0],
            }]),
        }],
        require_stable: true,
        ..skiff_protocol::OffsetFetchRequest::default()
    };
    let body = now_body(handle(broker, 8, |ctx| {
        crate::handlers::offset_fetch::handle(ctx, req)
    }));
    let ResponseBody::OffsetFetch(r) = body else {
        panic!("{body:?}")
    };
    let g = &r.groups[0];
    assert_eq!(g.error_code, 0, "UNSTABLE_OFFSET_COMMIT is per partition");
    let p = &g.topics[0].partitions[0];
    (p.error_code, p.committed_offset)
}

fn log_end(broker: &Arc<Broker>, partition: i32) -> i64 {
    let image = broker.image();
    let info = image.topic(OFFSETS_TOPIC).unwrap();
    broker
        .replicas
        .read_local(info, partition, None, 1)
        .unwrap()
        .end
}

#[tokio::test]
async fn a_transaction_marker_waits_for_the_load_then_completes_the_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let a = group_on(1);
    let producer = (77, 2);
    {
        let broker = open_broker(dir.path());
        broker
            .create_topic("t", 1, std::collections::BTreeMap::new())
            .unwrap();
        assert_eq!(txn_commit(&broker, &a, producer, 40), 0);
        assert_eq!(fetch_stable(&broker, &a), (88, -1));
        assert_eq!(
            fetch(&broker, &[&a]),
            vec![(0, -1)],
            "invisible to a plain fetch"
        );
        // The log knows the producer at epoch 2 now: epoch 1 is a zombie.
        assert_eq!(txn_commit(&broker, &a, (77, 1), 41), 47);
    }
    let broker = open_broker(dir.path());
    let groups = &broker.groups;
    // Loading: the marker is refused (and retried by the transaction coordinator), not
    // appended where the running replay could miss it.
    let end = log_end(&broker, 1);
    let refused = groups.write_txn_marker(&broker, 1, producer.0, producer.1, 0, true);
    assert_eq!(refused.map(|_| ()), Err(ErrorCode::NotLeaderOrFollower));
    assert_eq!(log_end(&broker, 1), end, "nothing written while loading");
    groups.load(&broker, 1, 0).unwrap();
    assert_eq!(fetch_stable(&broker, &a), (88, -1), "replayed as pending");
    let ack = groups
        .write_txn_marker(&broker, 1, producer.0, producer.1, 0, true)
        .unwrap();
    if let Some(rx) = ack {
        assert_eq!(rx.await.unwrap(), ErrorCode::None);
    }
    assert_eq!(log_end(&broker, 1), end + 1, "one marker batch");
    assert_eq!(fetch_stable(&broker, &a), (0, 40));
    // A slot this broker does not have.
    let missing = groups.write_txn_marker(&broker, 99, producer.0, producer.1, 0, true);
    assert_eq!(missing.map(|_| ()), Err(ErrorCode::UnknownTopicOrPartition));
}
