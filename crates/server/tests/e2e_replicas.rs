//! The replica manager over TCP (issue 13 item 2): which partitions are hosted is the metadata
//! image's decision, and the Metadata answer is the image's registration.
//! - A partition log the image assigns to this node but the disk lacks (a crash between the
//!   metadata commit and the log's creation; here: its dir removed while stopped) is created at
//!   start, and serves produce and fetch from offset 0.
//! - Metadata reports leader = this node, leader epoch 0, replicas = ISR = [node] from the
//!   image, and Fetch / ListOffsets accept that epoch and fence an older one.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::*;
use skiff_protocol::*;
use skiff_server::StorageTopicConfigs;
use skiff_testkit::client::Conn;
use skiff_testkit::in_process::start_on;
use skiff_types::ErrorCode;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn metadata_partition(c: &mut Conn, topic: &str, p: i32) -> MetadataResponsePartition {
    let req = MetadataRequest {
        topics: Some(vec![MetadataRequestTopic {
            name: Some(topic.to_string()),
            ..MetadataRequestTopic::default()
        }]),
        allow_auto_topic_creation: false,
        ..MetadataRequest::default()
    };
    let ResponseBody::Metadata(r) = c.call(12, req) else {
        panic!("not a Metadata response")
    };
    let t = r.topics.into_iter().next().expect("one topic");
    assert_eq!(t.error_code, 0, "topic {topic} known");
    t.partitions
        .into_iter()
        .find(|x| x.partition_index == p)
        .expect("the partition")
}

#[test]
fn e2e_replicas_an_assigned_log_missing_on_disk_is_created_at_start() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let start = || {
        rt.block_on(start_on(
            &data,
            |s| s.node_id = 3,
            Arc::new(StorageTopicConfigs::default()),
        ))
    };

    let (server, addr) = start();
    let mut c = Conn::open(addr.port());
    c.create_topic("t", 2, &[]);
    assert_eq!(c.produce("t", 1, batch(&["a", "b"])), (0, 0));
    assert_eq!(c.produce("t", 1, batch(&["c"])), (0, 2));
    drop(c);
    rt.block_on(server.shutdown()).unwrap();

    std::fs::remove_dir_all(data.join("t-1")).unwrap();
    let (server, addr) = start();
    assert!(
        data.join("t-1").is_dir(),
        "the replica manager re-creates the log the image assigns"
    );
    let mut c = Conn::open(addr.port());
    let p = metadata_partition(&mut c, "t", 1);
    assert_eq!(p.error_code, 0);
    assert_eq!(p.leader_id, 3);
    assert_eq!(p.leader_epoch, 0);
    assert_eq!(p.replica_nodes, vec![3]);
    assert_eq!(p.isr_nodes, vec![3]);
    // The re-created log is empty and serves from offset 0; the other partition kept its data.
    assert_eq!(c.produce("t", 1, batch(&["x"])), (0, 0));
    let fetched = c.fetch("t", 1, 0, 1 << 20);
    assert_eq!(fetched.error_code, 0);
    assert_eq!(fetched.high_watermark, 1);
    assert_eq!(c.list_offset("t", 1, -1), (0, 1));
    assert_eq!(c.produce("t", 0, batch(&["y"])), (0, 0));
    drop(c);
    rt.block_on(server.shutdown()).unwrap();
}

#[test]
fn e2e_replicas_fetch_checks_the_image_leader_epoch() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (server, addr) = rt.block_on(start_on(
        &data,
        |_| {},
        Arc::new(StorageTopicConfigs::default()),
    ));
    let mut c = Conn::open(addr.port());
    c.create_topic("e", 1, &[]);
    assert_eq!(c.produce("e", 0, batch(&["a"])), (0, 0));
    let epoch = metadata_partition(&mut c, "e", 0).leader_epoch;
    assert_eq!(epoch, 0);
    for (current, want) in [
        (epoch, ErrorCode::None),
        (epoch + 1, ErrorCode::UnknownLeaderEpoch),
        (-1, ErrorCode::None),
    ] {
        let req = skiff_testkit::client::fetch_request("e", 0, 0, 1 << 20, current);
        let ResponseBody::Fetch(r) = c.call(12, req) else {
            panic!("not a Fetch response")
        };
        assert_eq!(
            r.responses[0].partitions[0].error_code, want as i16,
            "current_leader_epoch {current}"
        );
    }
    drop(c);
    rt.block_on(server.shutdown()).unwrap();
}
