//! Transactional offsets over TCP (issue 18): TxnOffsetCommit writes a transactional batch to
//! `__consumer_offsets` whose offsets stay pending (OffsetFetch `require_stable` answers
//! UNSTABLE_OFFSET_COMMIT, a plain fetch does not see them) until the group coordinator
//! writes the producer's marker (`GroupCoordinator::write_txn_marker`, the WriteTxnMarkers
//! path, called here in process): COMMIT makes them the committed offsets, ABORT drops them.
//! Restarts replay transactional batches and markers into the same state; a producer known
//! at a higher epoch is fenced.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use skiff_protocol::*;
use skiff_server::{Server, ServerSettings, StorageTopicConfigs};

const GROUP_PARTITIONS: i32 = 3;
const UNSTABLE_OFFSET_COMMIT: i16 = 88;
const COORDINATOR_LOAD_IN_PROGRESS: i16 = 14;
const INVALID_PRODUCER_EPOCH: i16 = 47;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;

fn group_settings(s: &mut ServerSettings) {
    s.groups.offsets_topic_partitions = GROUP_PARTITIONS;
}

async fn restart_in(dir: &std::path::Path) -> (Server, std::net::SocketAddr) {
    let mut settings = ServerSettings::with_log_dir(dir.join("data"));
    group_settings(&mut settings);
    let server = Server::start(settings, Arc::new(StorageTopicConfigs::default()))
        .await
        .unwrap();
    let addr = server.listeners()[0].local_addr;
    (server, addr)
}

async fn txn_commit(
    c: &mut Client,
    group: &str,
    producer: (i64, i16),
    offsets: &[(&str, i32, i64)],
) -> Vec<i16> {
    let req = TxnOffsetCommitRequest {
        transactional_id: "tx-1".into(),
        group_id: group.into(),
        producer_id: producer.0,
        producer_epoch: producer.1,
        generation_id: -1,
        member_id: String::new(),
        group_instance_id: None,
        topics: offsets
            .iter()
            .map(|(t, p, o)| TxnOffsetCommitRequestTopic {
                name: t.to_string(),
                partitions: vec![TxnOffsetCommitRequestPartition {
                    partition_index: *p,
                    committed_offset: *o,
                    committed_leader_epoch: -1,
                    committed_metadata: Some("txn".into()),
                }],
            })
            .collect(),
    };
    let ResponseBody::TxnOffsetCommit(r) = c.call(3, req).await else {
        panic!("not a TxnOffsetCommit response")
    };
    r.topics
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
        .collect()
}

/// OffsetFetch v8 of t-0 and t-1 for `group`: (offset, error) per partition; the group's
/// error must be NONE (errors are per partition).
async fn fetch(c: &mut Client, group: &str, stable: bool) -> Vec<(i64, i16)> {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let req = OffsetFetchRequest {
            groups: vec![OffsetFetchRequestGroup {
                group_id: group.into(),
                member_id: None,
                member_epoch: -1,
                topics: Some(vec![OffsetFetchRequestTopics {
                    name: "t".into(),
                    partition_indexes: vec![0, 1],
                }]),
            }],
            require_stable: stable,
            ..OffsetFetchRequest::default()
        };
        let ResponseBody::OffsetFetch(r) = c.call(8, req).await else {
            panic!("not an OffsetFetch response")
        };
        let g = &r.groups[0];
        if g.error_code == COORDINATOR_LOAD_IN_PROGRESS {
            assert!(Instant::now() < deadline, "still loading");
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        }
        assert_eq!(g.error_code, 0);
        return g.topics[0]
            .partitions
            .iter()
            .map(|p| (p.committed_offset, p.error_code))
            .collect();
    }
}

/// The in-process WriteTxnMarkers path for the group's `__consumer_offsets` partition.
async fn marker(server: &Server, group: &str, producer: (i64, i16), commit: bool) {
    let b = server.broker();
    let partition = b.groups.partition_for(group);
    let ack = b
        .groups
        .write_txn_marker(b, partition, producer.0, producer.1, 0, commit)
        .unwrap();
    if let Some(rx) = ack {
        assert_eq!(rx.await.unwrap(), skiff_types::ErrorCode::None);
    }
}

#[tokio::test]
async fn e2e_txn_offsets_pending_until_the_commit_marker_and_replayed() {
    let t = start_with(group_settings).await;
    let mut c = Client::connect(t.addr).await;
    create_topic(&mut c, "t", 2).await;
    let producer = (1000, 0);
    assert_eq!(
        txn_commit(
            &mut c,
            "txg",
            producer,
            &[("t", 0, 42), ("nope", 0, 1), ("t", 1, 43)]
        )
        .await,
        vec![0, UNKNOWN_TOPIC_OR_PARTITION, 0]
    );
    assert_eq!(fetch(&mut c, "txg", false).await, vec![(-1, 0), (-1, 0)]);
    let unstable = vec![(-1, UNSTABLE_OFFSET_COMMIT); 2];
    assert_eq!(fetch(&mut c, "txg", true).await, unstable);

    // Restart before the marker: the transactional batch replays as pending, not committed.
    let TestServer { server, dir, .. } = t;
    drop(c);
    server.shutdown().await.unwrap();
    let (server, addr) = restart_in(dir.path()).await;
    let mut c = Client::connect(addr).await;
    assert_eq!(fetch(&mut c, "txg", false).await, vec![(-1, 0), (-1, 0)]);
    assert_eq!(fetch(&mut c, "txg", true).await, unstable);

    marker(&server, "txg", producer, true).await;
    let committed = vec![(42, 0), (43, 0)];
    assert_eq!(fetch(&mut c, "txg", true).await, committed);
    assert_eq!(fetch(&mut c, "txg", false).await, committed);

    // Restart after the marker: the marker replays, the offsets stay committed.
    drop(c);
    server.shutdown().await.unwrap();
    let (server, addr) = restart_in(dir.path()).await;
    let mut c = Client::connect(addr).await;
    assert_eq!(fetch(&mut c, "txg", true).await, committed);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn e2e_txn_offsets_abort_drops_and_an_old_epoch_is_fenced() {
    let t = start_with(group_settings).await;
    let mut c = Client::connect(t.addr).await;
    create_topic(&mut c, "t", 2).await;
    assert_eq!(
        offset_commit(&mut c, "txa", -1, "", "t", &[(0, 5, String::new())])
            .await
            .topics[0]
            .partitions[0]
            .error_code,
        0
    );
    let producer = (2000, 5);
    assert_eq!(
        txn_commit(&mut c, "txa", producer, &[("t", 0, 50)]).await,
        vec![0]
    );
    // A second commit of the same transaction (next base sequence in the log).
    assert_eq!(
        txn_commit(&mut c, "txa", producer, &[("t", 1, 51)]).await,
        vec![0]
    );
    // A zombie of the same producer id at a lower epoch.
    assert_eq!(
        txn_commit(&mut c, "txa", (2000, 4), &[("t", 0, 99)]).await,
        vec![INVALID_PRODUCER_EPOCH]
    );
    assert_eq!(
        fetch(&mut c, "txa", true).await,
        vec![(-1, UNSTABLE_OFFSET_COMMIT), (-1, UNSTABLE_OFFSET_COMMIT)]
    );
    marker(&t.server, "txa", producer, false).await;
    assert_eq!(fetch(&mut c, "txa", true).await, vec![(5, 0), (-1, 0)]);
    // The producer's next transaction (same epoch, transactions v1) commits.
    assert_eq!(
        txn_commit(&mut c, "txa", producer, &[("t", 1, 61)]).await,
        vec![0]
    );
    marker(&t.server, "txa", producer, true).await;
    assert_eq!(fetch(&mut c, "txa", true).await, vec![(5, 0), (61, 0)]);

    let TestServer { server, dir, .. } = t;
    drop(c);
    server.shutdown().await.unwrap();
    let (server, addr) = restart_in(dir.path()).await;
    let mut c = Client::connect(addr).await;
    assert_eq!(fetch(&mut c, "txa", true).await, vec![(5, 0), (61, 0)]);
    server.shutdown().await.unwrap();
}
