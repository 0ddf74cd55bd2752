//! `__consumer_offsets` under the log cleaner (issues 6 and 7), over TCP with raw requests
//! against an in-process server whose live configuration runs the cleaner every 100 ms.
//!
//! What this proves: the coordinator's records compact correctly. Many commits by a few groups
//! (one classic group with a member, one "simple" group, a KIP-848 group of which one member
//! left, and a group that is deleted afterwards) fill several 1 MiB segments of the single
//! offsets partition; the cleaner cleans past the deleted group's tombstones; the served
//! offsets and the group list did not change; and after a restart -- which replays only what
//! the cleaner kept -- the latest committed offsets, metadata strings, the group list and the
//! members are the same, and the deleted group stays deleted (its tombstones won over its
//! earlier commits) while the member that left stays gone.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::{Client, DEADLINE, create_topic, offset_commit, offset_fetch};
use skiff_config::{BrokerConfig, ConfigSources};
use skiff_protocol::*;
use skiff_server::{LiveConfig, Server, ServerSettings};
use skiff_types::TopicPartition;

/// Partitions of the committed-to topic: every commit request carries one offset per partition.
const PARTITIONS: i32 = 8;
/// Metadata length of every commit (under `offset.metadata.max.bytes` = 4096): 8 partitions of
/// this make a ~24 KiB batch, so a few dozen commits fill a 1 MiB segment.
const METADATA_LEN: usize = 3000;
const SEGMENT_BYTES: i64 = 1 << 20;
const COORDINATOR_LOAD_IN_PROGRESS: i16 = 14;
const CLEAN_DEADLINE: Duration = Duration::from_secs(40);

/// A server on `dir` (the same dir on a restart): one offsets partition of 1 MiB segments, and
/// a live broker configuration so the cleaner runs with short timers.
async fn start(dir: &Path) -> (Server, std::net::SocketAddr) {
    let data = dir.join("data");
    let cfg = BrokerConfig::load(ConfigSources {
        overrides: vec![
            format!("log.dirs={}", data.display()),
            "log.cleaner.backoff.ms=100".into(),
            "log.retention.check.interval.ms=1000".into(),
        ],
        ..ConfigSources::default()
    })
    .unwrap();
    let mut settings = ServerSettings::with_log_dir(&data);
    settings.groups.offsets_topic_partitions = 1;
    settings.groups.offsets_topic_segment_bytes = SEGMENT_BYTES;
    settings.groups.config.session_timeout_ms_min = 100;
    let server = Server::start(settings, Arc::new(LiveConfig::new(cfg)))
        .await
        .unwrap();
    let addr = server.listeners()[0].local_addr;
    (server, addr)
}

fn metadata(group: &str, round: i64) -> String {
    let head = format!("{group}@{round}:");
    format!("{head}{}", "m".repeat(METADATA_LEN - head.len()))
}

/// The offset `group` commits for `partition` in `round`.
fn offset_of(round: i64, partition: i32) -> i64 {
    round * 100 + i64::from(partition)
}

/// Commits round `round` for every partition of `t` (OffsetCommit v8); asserts success.
async fn commit_round(c: &mut Client, group: &str, generation: i32, member: &str, round: i64) {
    let entries: Vec<(i32, i64, String)> = (0..PARTITIONS)
        .map(|p| (p, offset_of(round, p), metadata(group, round)))
        .collect();
    let r = offset_commit(c, group, generation, member, "t", &entries).await;
    let codes: Vec<i16> = r.topics[0]
        .partitions
        .iter()
        .map(|p| p.error_code)
        .collect();
    assert_eq!(codes, vec![0; PARTITIONS as usize], "{group} round {round}");
}

/// OffsetFetch v8 of every partition of `t` for each group: (group error, [(offset, metadata,
/// partition error)]).
type Fetched = Vec<(i16, Vec<(i64, String, i16)>)>;

async fn fetch_offsets(c: &mut Client, groups: &[&str]) -> Fetched {
    let r = offset_fetch(c, groups, "t", &(0..PARTITIONS).collect::<Vec<_>>()).await;
    r.groups
        .into_iter()
        .map(|g| {
            let parts = g
                .topics
                .into_iter()
                .flat_map(|t| t.partitions)
                .map(|p| {
                    (
                        p.committed_offset,
                        p.metadata.unwrap_or_default(),
                        p.error_code,
                    )
                })
                .collect();
            (g.error_code, parts)
        })
        .collect()
}

/// What a group that committed `round` last must fetch.
fn expected_round(group: &str, round: i64) -> (i16, Vec<(i64, String, i16)>) {
    (
        0,
        (0..PARTITIONS)
            .map(|p| (offset_of(round, p), metadata(group, round), 0))
            .collect(),
    )
}

fn never_committed() -> (i16, Vec<(i64, String, i16)>) {
    (0, vec![(-1, String::new(), 0); PARTITIONS as usize])
}

/// ListGroups v5: (group id, state, type), sorted.
async fn list_groups(c: &mut Client) -> Vec<(String, String, String)> {
    let req = ListGroupsRequest {
        states_filter: Vec::new(),
        types_filter: Vec::new(),
    };
    let ResponseBody::ListGroups(r) = c.call(5, req).await else {
        panic!("not a ListGroups response")
    };
    assert_eq!(r.error_code, 0);
    let mut groups: Vec<_> = r
        .groups
        .into_iter()
        .map(|g| (g.group_id, g.group_state, g.group_type))
        .collect();
    groups.sort();
    groups
}

/// A stable classic group with one member: (member id, generation).
async fn classic_member(c: &mut Client, group: &str) -> (String, i32) {
    let join = |member: String| JoinGroupRequest {
        group_id: group.into(),
        session_timeout_ms: 30_000,
        rebalance_timeout_ms: 10_000,
        member_id: member,
        group_instance_id: None,
        protocol_type: "consumer".into(),
        protocols: vec![JoinGroupRequestProtocol {
            name: "range".into(),
            metadata: Bytes::from_static(b"subscription"),
        }],
        reason: None,
    };
    let ResponseBody::JoinGroup(first) = c.call(5, join(String::new())).await else {
        panic!()
    };
    let ResponseBody::JoinGroup(j) = c.call(5, join(first.member_id)).await else {
        panic!()
    };
    assert_eq!(j.error_code, 0, "{j:?}");
    let req = SyncGroupRequest {
        group_id: group.into(),
        generation_id: j.generation_id,
        member_id: j.member_id.clone(),
        group_instance_id: None,
        protocol_type: Some("consumer".into()),
        protocol_name: Some("range".into()),
        assignments: vec![SyncGroupRequestAssignment {
            member_id: j.member_id.clone(),
            assignment: Bytes::from_static(b"all"),
        }],
    };
    let ResponseBody::SyncGroup(s) = c.call(5, req).await else {
        panic!()
    };
    assert_eq!(s.error_code, 0, "{s:?}");
    (j.member_id, j.generation_id)
}

/// One ConsumerGroupHeartbeat v1 of `member` in group `cg`: (error, epoch, assigned partitions).
async fn consumer_heartbeat(c: &mut Client, member: &str, epoch: i32) -> (i16, i32, Vec<i32>) {
    let req = ConsumerGroupHeartbeatRequest {
        group_id: "cg".into(),
        member_id: member.into(),
        member_epoch: epoch,
        instance_id: None,
        rack_id: None,
        rebalance_timeout_ms: 10_000,
        subscribed_topic_names: (epoch == 0).then(|| vec!["t".to_string()]),
        subscribed_topic_regex: None,
        server_assignor: None,
        topic_partitions: (epoch == 0).then(Vec::new),
    };
    let ResponseBody::ConsumerGroupHeartbeat(r) = c.call(1, req).await else {
        panic!()
    };
    let mut parts: Vec<i32> = r
        .assignment
        .iter()
        .flat_map(|a| a.topic_partitions.iter())
        .flat_map(|t| t.partitions.iter().copied())
        .collect();
    parts.sort_unstable();
    (r.error_code, r.member_epoch, parts)
}

/// ConsumerGroupDescribe of `cg`: its member ids, sorted.
async fn consumer_members(c: &mut Client) -> Vec<String> {
    let req = ConsumerGroupDescribeRequest {
        group_ids: vec!["cg".into()],
        include_authorized_operations: false,
    };
    let ResponseBody::ConsumerGroupDescribe(d) = c.call(0, req).await else {
        panic!()
    };
    assert_eq!(d.groups[0].error_code, 0, "{d:?}");
    let mut ids: Vec<String> = d.groups[0]
        .members
        .iter()
        .map(|m| m.member_id.clone())
        .collect();
    ids.sort();
    ids
}

/// DescribeGroups v5 of a classic group: its member ids.
async fn classic_members(c: &mut Client, group: &str) -> Vec<String> {
    let req = DescribeGroupsRequest {
        groups: vec![group.into()],
        include_authorized_operations: false,
    };
    let ResponseBody::DescribeGroups(r) = c.call(5, req).await else {
        panic!()
    };
    r.groups[0]
        .members
        .iter()
        .map(|m| m.member_id.clone())
        .collect()
}

#[tokio::test]
async fn e2e_groups_compacted_offsets_topic_replays_the_latest_state() {
    let dir = tempfile::tempdir().unwrap();
    let (server, addr) = start(dir.path()).await;
    let mut c = Client::connect(addr).await;
    assert_eq!(create_topic(&mut c, "t", PARTITIONS).await.error_code, 0);
    let (member, generation) = classic_member(&mut c, "live").await;

    // A KIP-848 group: A and B share `t`, then B leaves (its records become tombstones).
    let (a, b) = (
        uuid::Uuid::new_v4().to_string(),
        uuid::Uuid::new_v4().to_string(),
    );
    let (code, _, _) = consumer_heartbeat(&mut c, &a, 0).await;
    assert_eq!(code, 0);
    let (code, b_epoch, _) = consumer_heartbeat(&mut c, &b, 0).await;
    assert_eq!(code, 0);
    let (code, epoch, _) = consumer_heartbeat(&mut c, &b, -1).await;
    assert_eq!((code, epoch), (0, -1), "B left");

    // Phase 1: every group commits 30 rounds (~2 MiB, several segments).
    let mut round = 0;
    for _ in 0..30 {
        round += 1;
        commit_round(&mut c, "live", generation, &member, round).await;
        commit_round(&mut c, "simple", -1, "", round).await;
        commit_round(&mut c, "gone", -1, "", round).await;
    }
    let gone_last = round;
    assert_eq!(
        fetch_offsets(&mut c, &["gone"]).await,
        vec![expected_round("gone", gone_last)]
    );
    // The deleted group: tombstones for its offsets and its group record.
    let req = DeleteGroupsRequest {
        groups_names: vec!["gone".into()],
    };
    let ResponseBody::DeleteGroups(r) = c.call(2, req).await else {
        panic!()
    };
    assert_eq!(r.results[0].error_code, 0, "{r:?}");
    let tp = TopicPartition::new("__consumer_offsets", 0);
    let log = server
        .broker()
        .replicas
        .log_manager()
        .get(&tp)
        .expect("the offsets log");
    let tombstones_end = log.lock().log_end_offset();

    // Phase 2: more rounds by the others, so the tombstones' segment rolls and is cleanable.
    for _ in 0..50 {
        round += 1;
        commit_round(&mut c, "live", generation, &member, round).await;
        commit_round(&mut c, "simple", -1, "", round).await;
    }
    let groups = ["live", "simple", "gone"];
    let expected = vec![
        expected_round("live", round),
        expected_round("simple", round),
        never_committed(),
    ];
    assert_eq!(fetch_offsets(&mut c, &groups).await, expected);
    let listed = list_groups(&mut c).await;
    let names: Vec<&str> = listed.iter().map(|g| g.0.as_str()).collect();
    assert_eq!(names, vec!["cg", "live", "simple"], "{listed:?}");
    let (segments_before, bytes_before) = {
        let l = log.lock();
        (l.segment_count(), l.size_bytes())
    };
    assert!(segments_before >= 4, "{segments_before} segments");

    // The cleaner must clean past the tombstones.
    let started = Instant::now();
    let status = loop {
        let status = server.broker().cleaner_status(&tp);
        if let Some(s) = &status
            && s.cleans >= 1
            && s.first_dirty_offset >= tombstones_end
        {
            break s.clone();
        }
        assert!(
            started.elapsed() < CLEAN_DEADLINE,
            "the offsets topic was not cleaned past {tombstones_end}: {status:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    eprintln!(
        "cleaned after {:?}: {segments_before} segments / {bytes_before} bytes before, {status:?}",
        started.elapsed()
    );
    assert_eq!(status.last_error, None, "{status:?}");
    assert!(status.records_removed > 0, "{status:?}");
    assert_eq!(
        status.tombstones_removed, 0,
        "tombstones stay for delete.retention.ms: {status:?}"
    );
    let bytes_after = log.lock().size_bytes();
    assert!(
        bytes_after < bytes_before / 2,
        "cleaning kept {bytes_after} of {bytes_before} bytes"
    );
    // Served from memory: unchanged by the clean.
    assert_eq!(fetch_offsets(&mut c, &groups).await, expected);
    assert_eq!(list_groups(&mut c).await, listed);
    drop((c, log));
    server.shutdown().await.unwrap();

    // The restart replays only what the cleaner kept.
    let (server, addr) = start(dir.path()).await;
    let mut c = Client::connect(addr).await;
    let deadline = Instant::now() + DEADLINE;
    let fetched = loop {
        let got = fetch_offsets(&mut c, &groups).await;
        if got.iter().all(|g| g.0 != COORDINATOR_LOAD_IN_PROGRESS) {
            break got;
        }
        assert!(Instant::now() < deadline, "still loading: {got:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert_eq!(
        fetched, expected,
        "latest offsets and metadata replayed; the deleted group's tombstones won"
    );
    assert_eq!(
        list_groups(&mut c).await,
        listed,
        "the same groups, states and types"
    );
    assert_eq!(classic_members(&mut c, "live").await, vec![member.clone()]);
    assert_eq!(
        consumer_members(&mut c).await,
        vec![a.clone()],
        "B stays gone"
    );
    // The replayed member is still the live member of its generation.
    commit_round(&mut c, "live", generation, &member, round + 1).await;
    assert!(b_epoch >= 1);
    server.shutdown().await.unwrap();
}
