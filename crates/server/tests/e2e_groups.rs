//! Consumer groups over TCP with raw protocol requests (issue 6): the coordinator runtime in
//! the server, not the pure state machine (crates/group tests that). What these prove:
//! FindCoordinator creates `__consumer_offsets`; JoinGroup is parked until the rebalance
//! completes and holds its connection meanwhile; stale generations and unknown members cannot
//! commit; commits survive a restart (replayed before serving); session timeouts fire from the
//! timer driver; admin APIs see every shard; shutdown answers parked requests; KIP-848
//! heartbeats get server-side assignments with topic ids.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::*;
use skiff_protocol::*;
use skiff_server::{Server, ServerSettings, StorageTopicConfigs};

const GROUP_PARTITIONS: i32 = 3;
const MEMBER_ID_REQUIRED: i16 = 79;
const REBALANCE_IN_PROGRESS: i16 = 27;
const ILLEGAL_GENERATION: i16 = 22;
const UNKNOWN_MEMBER_ID: i16 = 25;
const NOT_COORDINATOR: i16 = 16;
const COORDINATOR_LOAD_IN_PROGRESS: i16 = 14;
const NON_EMPTY_GROUP: i16 = 68;
const GROUP_ID_NOT_FOUND: i16 = 69;

fn group_settings(s: &mut ServerSettings) {
    s.groups.offsets_topic_partitions = GROUP_PARTITIONS;
    s.groups.config.session_timeout_ms_min = 100;
}

async fn start_groups() -> TestServer {
    start_with(group_settings).await
}

/// Starts a server on an existing data dir (a restart).
async fn restart_in(dir: &std::path::Path) -> (Server, std::net::SocketAddr) {
    let mut settings = ServerSettings::with_log_dir(dir.join("data"));
    group_settings(&mut settings);
    let server = Server::start(settings, Arc::new(StorageTopicConfigs::default()))
        .await
        .unwrap();
    let addr = server.listeners()[0].local_addr;
    (server, addr)
}

fn join_req(group: &str, member: &str, session_ms: i32) -> JoinGroupRequest {
    JoinGroupRequest {
        group_id: group.into(),
        session_timeout_ms: session_ms,
        rebalance_timeout_ms: 10_000,
        member_id: member.into(),
        group_instance_id: None,
        protocol_type: "consumer".into(),
        protocols: vec![JoinGroupRequestProtocol {
            name: "range".into(),
            metadata: Bytes::from_static(b"subscription"),
        }],
        reason: None,
    }
}

async fn join(c: &mut Client, req: JoinGroupRequest) -> JoinGroupResponse {
    match c.call(5, req).await {
        ResponseBody::JoinGroup(r) => r,
        other => panic!("unexpected {other:?}"),
    }
}

/// Joins as a new dynamic member: MEMBER_ID_REQUIRED first (KIP-394), then the real join.
async fn join_new(c: &mut Client, group: &str, session_ms: i32) -> JoinGroupResponse {
    let first = join(c, join_req(group, "", session_ms)).await;
    assert_eq!(first.error_code, MEMBER_ID_REQUIRED);
    assert!(first.member_id.starts_with("skiff-test-"), "{first:?}");
    join(c, join_req(group, &first.member_id, session_ms)).await
}

fn sync_req(
    group: &str,
    generation: i32,
    member: &str,
    assign: &[(&str, &str)],
) -> SyncGroupRequest {
    SyncGroupRequest {
        group_id: group.into(),
        generation_id: generation,
        member_id: member.into(),
        group_instance_id: None,
        protocol_type: Some("consumer".into()),
        protocol_name: Some("range".into()),
        assignments: assign
            .iter()
            .map(|(m, a)| SyncGroupRequestAssignment {
                member_id: (*m).into(),
                assignment: Bytes::copy_from_slice(a.as_bytes()),
            })
            .collect(),
    }
}

async fn sync(c: &mut Client, req: SyncGroupRequest) -> SyncGroupResponse {
    match c.call(5, req).await {
        ResponseBody::SyncGroup(r) => r,
        other => panic!("unexpected {other:?}"),
    }
}

async fn heartbeat(c: &mut Client, group: &str, generation: i32, member: &str) -> i16 {
    let req = HeartbeatRequest {
        group_id: group.into(),
        generation_id: generation,
        member_id: member.into(),
        group_instance_id: None,
    };
    match c.call(4, req).await {
        ResponseBody::Heartbeat(r) => r.error_code,
        other => panic!("unexpected {other:?}"),
    }
}

/// Commits one offset with OffsetCommit v8; returns the partition's error code.
async fn commit(
    c: &mut Client,
    group: &str,
    generation: i32,
    member: &str,
    topic: &str,
    offset: i64,
    metadata: &str,
) -> i16 {
    let r = offset_commit(
        c,
        group,
        generation,
        member,
        topic,
        &[(0, offset, metadata.to_string())],
    )
    .await;
    r.topics[0].partitions[0].error_code
}

/// OffsetFetch v8 for several groups, partition 0 of `topic`:
/// (group error, offset, metadata, partition error) per group.
async fn fetch_offsets(
    c: &mut Client,
    groups: &[&str],
    topic: &str,
) -> Vec<(i16, i64, String, i16)> {
    let r = offset_fetch(c, groups, topic, &[0]).await;
    r.groups
        .into_iter()
        .map(|g| {
            let p = g
                .topics
                .first()
                .and_then(|t| t.partitions.first())
                .cloned()
                .unwrap_or_default();
            (
                g.error_code,
                p.committed_offset,
                p.metadata.unwrap_or_default(),
                p.error_code,
            )
        })
        .collect()
}

async fn describe(c: &mut Client, group: &str) -> DescribeGroupsResponseDescribedGroup {
    let req = DescribeGroupsRequest {
        groups: vec![group.into()],
        include_authorized_operations: false,
    };
    match c.call(5, req).await {
        ResponseBody::DescribeGroups(r) => r.groups.into_iter().next().unwrap(),
        other => panic!("unexpected {other:?}"),
    }
}

async fn list_groups(c: &mut Client, version: i16, states: &[&str]) -> ListGroupsResponse {
    let req = ListGroupsRequest {
        states_filter: states.iter().map(|s| (*s).into()).collect(),
        types_filter: Vec::new(),
    };
    match c.call(version, req).await {
        ResponseBody::ListGroups(r) => r,
        other => panic!("unexpected {other:?}"),
    }
}

/// A generation-1 group with one member that has synced: (member id, generation).
async fn stable_group(c: &mut Client, group: &str, session_ms: i32) -> (String, i32) {
    let j = join_new(c, group, session_ms).await;
    assert_eq!(j.error_code, 0, "{j:?}");
    assert_eq!(j.leader, j.member_id, "the only member leads");
    let s = sync(
        c,
        sync_req(
            group,
            j.generation_id,
            &j.member_id,
            &[(&j.member_id, "p0")],
        ),
    )
    .await;
    assert_eq!((s.error_code, &s.assignment[..]), (0, &b"p0"[..]));
    (j.member_id, j.generation_id)
}

#[tokio::test]
async fn e2e_groups_find_coordinator_creates_the_offsets_topic() {
    let t = start_groups().await;
    let mut c = Client::connect(t.addr).await;
    let req = FindCoordinatorRequest {
        key: "g".into(),
        key_type: 0,
        coordinator_keys: Vec::new(),
    };
    let ResponseBody::FindCoordinator(r) = c.call(0, req).await else {
        panic!()
    };
    assert_eq!(
        (r.error_code, r.node_id, r.host.as_str()),
        (0, 1, "localhost")
    );
    assert_eq!(r.port, i32::from(t.addr.port()));
    // Batched keys (v4+), groups and (issue 18) transactional ids.
    let req = FindCoordinatorRequest {
        key: String::new(),
        key_type: 0,
        coordinator_keys: vec!["a".into(), "b".into()],
    };
    let ResponseBody::FindCoordinator(r) = c.call(4, req).await else {
        panic!()
    };
    let got: Vec<_> = r
        .coordinators
        .iter()
        .map(|c| (c.key.as_str(), c.node_id, c.error_code))
        .collect();
    assert_eq!(got, vec![("a", 1, 0), ("b", 1, 0)]);
    let req = FindCoordinatorRequest {
        key: String::new(),
        key_type: 1,
        coordinator_keys: vec!["txn".into()],
    };
    let ResponseBody::FindCoordinator(r) = c.call(6, req).await else {
        panic!()
    };
    // issue 18: key type 1 finds the transaction coordinator (this node; e2e_txn.rs).
    let c0 = &r.coordinators[0];
    assert_eq!((c0.error_code, c0.node_id), (0, 1));
    // The internal topic exists with the configured partition count and is compacted.
    let image = t.server.broker().image();
    let topic = image
        .topic("__consumer_offsets")
        .expect("created by FindCoordinator");
    assert_eq!(topic.partitions, GROUP_PARTITIONS);
    assert_eq!(
        topic.configs.get("cleanup.policy").map(String::as_str),
        Some("compact")
    );
    let req = MetadataRequest {
        topics: Some(vec![MetadataRequestTopic {
            name: Some("__consumer_offsets".into()),
            ..MetadataRequestTopic::default()
        }]),
        ..MetadataRequest::default()
    };
    let ResponseBody::Metadata(m) = c.call(9, req).await else {
        panic!()
    };
    assert!(m.topics[0].is_internal);
    t.server.shutdown().await.unwrap();
}

#[tokio::test]
async fn e2e_groups_rebalance_parks_joins_and_fences_zombie_commits() {
    let t = start_groups().await;
    let mut a = Client::connect(t.addr).await;
    let mut b = Client::connect(t.addr).await;
    create_topic(&mut a, "t", 2).await;
    let (ma, gen1) = stable_group(&mut a, "g", 10_000).await;
    assert_eq!(gen1, 1);
    assert_eq!(commit(&mut a, "g", gen1, &ma, "t", 5, "first").await, 0);

    // B joins: its JoinGroup is parked until A rejoins.
    let first = join(&mut b, join_req("g", "", 10_000)).await;
    assert_eq!(first.error_code, MEMBER_ID_REQUIRED);
    let mb = first.member_id.clone();
    let (frame, b_join) = b.frame(5, join_req("g", &mb, 10_000));
    b.send_raw(&frame).await;
    assert_eq!(
        heartbeat(&mut a, "g", gen1, &ma).await,
        REBALANCE_IN_PROGRESS
    );
    let ja = join(&mut a, join_req("g", &ma, 10_000)).await;
    assert_eq!(ja.error_code, 0);
    let gen2 = ja.generation_id;
    assert_eq!(gen2, 2);
    assert_eq!(ja.members.len(), 2, "the leader sees both members");
    let jb = match decode(ApiKey::JoinGroup, 5, b_join, b.read_frame().await.unwrap()) {
        ResponseBody::JoinGroup(r) => r,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        (jb.error_code, jb.generation_id, jb.member_id.as_str()),
        (0, gen2, mb.as_str())
    );
    assert_eq!(jb.leader, ma);

    // B's SyncGroup waits for the leader's assignment.
    let (frame, b_sync) = b.frame(5, sync_req("g", gen2, &mb, &[]));
    b.send_raw(&frame).await;
    let sa = sync(
        &mut a,
        sync_req("g", gen2, &ma, &[(&ma, "pa"), (&mb, "pb")]),
    )
    .await;
    assert_eq!(&sa.assignment[..], b"pa");
    let sb = match decode(ApiKey::SyncGroup, 5, b_sync, b.read_frame().await.unwrap()) {
        ResponseBody::SyncGroup(r) => r,
        other => panic!("{other:?}"),
    };
    assert_eq!((sb.error_code, &sb.assignment[..]), (0, &b"pb"[..]));

    // A zombie of generation 1 and an unknown member cannot commit; the live member can.
    assert_eq!(
        commit(&mut a, "g", gen1, &ma, "t", 99, "zombie").await,
        ILLEGAL_GENERATION
    );
    assert_eq!(
        commit(&mut a, "g", gen2, "ghost", "t", 99, "ghost").await,
        UNKNOWN_MEMBER_ID
    );
    assert_eq!(commit(&mut b, "g", gen2, &mb, "t", 7, "second").await, 0);
    assert_eq!(
        fetch_offsets(&mut a, &["g"], "t").await,
        vec![(0, 7, "second".to_string(), 0)],
        "the fenced commits changed nothing; metadata round-trips"
    );

    // B leaves (v3 batch form): A is told to rebalance.
    let req = LeaveGroupRequest {
        group_id: "g".into(),
        member_id: String::new(),
        members: vec![MemberIdentity {
            member_id: mb.clone(),
            group_instance_id: None,
            reason: Some("test".into()),
        }],
    };
    let ResponseBody::LeaveGroup(l) = b.call(3, req).await else {
        panic!()
    };
    assert_eq!((l.error_code, l.members[0].error_code), (0, 0));
    assert_eq!(
        heartbeat(&mut a, "g", gen2, &ma).await,
        REBALANCE_IN_PROGRESS
    );
    t.server.shutdown().await.unwrap();
}

#[tokio::test]
async fn e2e_groups_a_parked_join_holds_its_connection() {
    let t = start_groups().await;
    let mut a = Client::connect(t.addr).await;
    let mut b = Client::connect(t.addr).await;
    let (ma, gen1) = stable_group(&mut a, "held", 10_000).await;
    let first = join(&mut b, join_req("held", "", 10_000)).await;
    // Pipelined on B's connection: a parked JoinGroup, then ListGroups.
    let (join_frame, join_cid) = b.frame(5, join_req("held", &first.member_id, 10_000));
    let (list_frame, list_cid) = b.frame(
        4,
        ListGroupsRequest {
            states_filter: Vec::new(),
            types_filter: Vec::new(),
        },
    );
    b.send_raw(&join_frame).await;
    b.send_raw(&list_frame).await;
    let deadline = Instant::now() + DEADLINE;
    while describe(&mut a, "held").await.members.len() < 2 {
        assert!(Instant::now() < deadline, "B's join was never read");
        tokio::task::yield_now().await;
    }
    // Give a connection that did NOT hold time to read and answer the ListGroups now.
    tokio::time::sleep(Duration::from_millis(200)).await;
    // Only now does the rebalance complete (A rejoins).
    assert_eq!(
        heartbeat(&mut a, "held", gen1, &ma).await,
        REBALANCE_IN_PROGRESS
    );
    assert_eq!(
        join(&mut a, join_req("held", &ma, 10_000)).await.error_code,
        0
    );
    let ResponseBody::JoinGroup(jb) = decode(
        ApiKey::JoinGroup,
        5,
        join_cid,
        b.read_frame().await.unwrap(),
    ) else {
        panic!()
    };
    assert_eq!(jb.error_code, 0);
    let ResponseBody::ListGroups(l) = decode(
        ApiKey::ListGroups,
        4,
        list_cid,
        b.read_frame().await.unwrap(),
    ) else {
        panic!()
    };
    // Read after the join completed: the group is waiting for SyncGroup, not for joins.
    // Had it been read at once, it would have seen PreparingRebalance.
    assert_eq!(l.groups.len(), 1);
    assert_eq!(
        (
            l.groups[0].group_id.as_str(),
            l.groups[0].group_state.as_str()
        ),
        ("held", "CompletingRebalance")
    );
    t.server.shutdown().await.unwrap();
}

#[tokio::test]
async fn e2e_groups_commits_survive_a_restart() {
    let t = start_groups().await;
    let mut c = Client::connect(t.addr).await;
    create_topic(&mut c, "t", 1).await;
    let (m, generation) = stable_group(&mut c, "live", 10_000).await;
    assert_eq!(
        commit(&mut c, "live", generation, &m, "t", 42, "meta ✓").await,
        0
    );
    // A "simple" commit (no member, generation -1) to a group without members.
    assert_eq!(commit(&mut c, "simple", -1, "", "t", 7, "").await, 0);
    let TestServer { server, dir, .. } = t;
    drop(c);
    server.shutdown().await.unwrap();

    let (server, addr) = restart_in(dir.path()).await;
    let mut c = Client::connect(addr).await;
    let deadline = Instant::now() + DEADLINE;
    let got = loop {
        let got = fetch_offsets(&mut c, &["live", "simple", "never"], "t").await;
        if got.iter().all(|g| g.0 != COORDINATOR_LOAD_IN_PROGRESS) {
            break got;
        }
        assert!(Instant::now() < deadline, "still loading: {got:?}");
        tokio::task::yield_now().await;
    };
    assert_eq!(
        got,
        vec![
            (0, 42, "meta ✓".to_string(), 0),
            (0, 7, String::new(), 0),
            (0, -1, String::new(), 0),
        ],
        "replayed commits; a group that never committed answers -1 with no error"
    );
    // The member was replayed too: the group is still there with it.
    let d = describe(&mut c, "live").await;
    assert_eq!(d.members.len(), 1);
    assert_eq!(d.members[0].member_id, m);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn e2e_groups_session_timeout_removes_a_silent_member() {
    let t = start_groups().await;
    let mut c = Client::connect(t.addr).await;
    let (m, generation) = stable_group(&mut c, "quiet", 300).await;
    let started = Instant::now();
    loop {
        let d = describe(&mut c, "quiet").await;
        if d.group_state == "Empty" {
            assert!(d.members.is_empty());
            break;
        }
        assert!(started.elapsed() < DEADLINE, "member never expired: {d:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        started.elapsed() >= Duration::from_millis(250),
        "expired before its session ended"
    );
    assert_eq!(
        heartbeat(&mut c, "quiet", generation, &m).await,
        UNKNOWN_MEMBER_ID
    );
    t.server.shutdown().await.unwrap();
}

#[tokio::test]
async fn e2e_groups_list_describe_delete_across_shards() {
    let t = start_groups().await;
    let mut c = Client::connect(t.addr).await;
    create_topic(&mut c, "t", 1).await;
    let (m, _) = stable_group(&mut c, "busy", 10_000).await;
    assert_eq!(commit(&mut c, "idle", -1, "", "t", 3, "").await, 0);
    let all = list_groups(&mut c, 4, &[]).await;
    let mut names: Vec<_> = all
        .groups
        .iter()
        .map(|g| (g.group_id.as_str(), g.group_state.as_str()))
        .collect();
    names.sort();
    assert_eq!(names, vec![("busy", "Stable"), ("idle", "Empty")]);
    let stable = list_groups(&mut c, 4, &["stable"]).await;
    assert_eq!(stable.groups.len(), 1, "state filter is case-insensitive");
    assert_eq!(stable.groups[0].group_id, "busy");

    let d = describe(&mut c, "busy").await;
    assert_eq!(
        (d.group_state.as_str(), d.protocol_data.as_str()),
        ("Stable", "range")
    );
    assert_eq!(d.members[0].member_id, m);
    assert_eq!(d.members[0].client_id, "skiff-test");
    assert_eq!(d.members[0].client_host, "/127.0.0.1");
    assert_eq!(&d.members[0].member_assignment[..], b"p0");
    assert_eq!(describe(&mut c, "nobody").await.group_state, "Dead");

    let req = DeleteGroupsRequest {
        groups_names: vec!["busy".into(), "idle".into(), "nobody".into()],
    };
    let ResponseBody::DeleteGroups(r) = c.call(2, req).await else {
        panic!()
    };
    let codes: Vec<_> = r
        .results
        .iter()
        .map(|g| (g.group_id.as_str(), g.error_code))
        .collect();
    assert_eq!(
        codes,
        vec![
            ("busy", NON_EMPTY_GROUP),
            ("idle", 0),
            ("nobody", GROUP_ID_NOT_FOUND)
        ]
    );
    assert_eq!(
        fetch_offsets(&mut c, &["idle"], "t").await[0].1,
        -1,
        "offsets deleted with the group"
    );
    let left: Vec<_> = list_groups(&mut c, 0, &[])
        .await
        .groups
        .into_iter()
        .map(|g| g.group_id)
        .collect();
    assert_eq!(left, vec!["busy".to_string()]);
    t.server.shutdown().await.unwrap();
}

#[tokio::test]
async fn e2e_groups_shutdown_answers_a_parked_join() {
    let t = start_with(|s| {
        group_settings(s);
        s.shutdown_drain_ms_max = 30_000;
    })
    .await;
    let mut a = Client::connect(t.addr).await;
    let mut b = Client::connect(t.addr).await;
    let _ = stable_group(&mut a, "g", 10_000).await;
    let first = join(&mut b, join_req("g", "", 10_000)).await;
    let (frame, cid) = b.frame(5, join_req("g", &first.member_id, 10_000));
    b.send_raw(&frame).await;
    // The join is parked (A never rejoins); make sure the server has read it.
    let deadline = Instant::now() + DEADLINE;
    while describe(&mut a, "g").await.group_state != "PreparingRebalance" {
        assert!(Instant::now() < deadline);
        tokio::task::yield_now().await;
    }
    let started = Instant::now();
    t.server.shutdown().await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "shutdown waited for the parked join"
    );
    let ResponseBody::JoinGroup(r) =
        decode(ApiKey::JoinGroup, 5, cid, b.read_frame().await.unwrap())
    else {
        panic!()
    };
    assert_eq!(r.error_code, NOT_COORDINATOR);
}

#[tokio::test]
async fn e2e_groups_kip848_heartbeat_assigns_with_topic_ids() {
    let t = start_groups().await;
    let mut c = Client::connect(t.addr).await;
    let topic_id = create_topic(&mut c, "t", 3).await.topic_id;
    let member = uuid::Uuid::new_v4().to_string();
    let hb = |epoch: i32, topics: Option<Vec<String>>| ConsumerGroupHeartbeatRequest {
        group_id: "cg".into(),
        member_id: member.clone(),
        member_epoch: epoch,
        instance_id: None,
        rack_id: None,
        rebalance_timeout_ms: 10_000,
        subscribed_topic_names: topics,
        subscribed_topic_regex: None,
        server_assignor: None,
        topic_partitions: Some(Vec::new()),
    };
    let ResponseBody::ConsumerGroupHeartbeat(r) = c.call(1, hb(0, Some(vec!["t".into()]))).await
    else {
        panic!()
    };
    assert_eq!(r.error_code, 0, "{r:?}");
    assert_eq!(r.member_id.as_deref(), Some(member.as_str()));
    assert!(r.member_epoch >= 1);
    let a = r.assignment.expect("an assignment");
    assert_eq!(a.topic_partitions.len(), 1);
    assert_eq!(a.topic_partitions[0].topic_id, topic_id);
    let mut parts = a.topic_partitions[0].partitions.clone();
    parts.sort_unstable();
    assert_eq!(parts, vec![0, 1, 2]);

    let req = ConsumerGroupDescribeRequest {
        group_ids: vec!["cg".into(), "nope".into()],
        include_authorized_operations: false,
    };
    let ResponseBody::ConsumerGroupDescribe(d) = c.call(0, req).await else {
        panic!()
    };
    assert_eq!(d.groups[0].error_code, 0);
    assert_eq!(d.groups[0].members[0].member_id, member);
    assert_eq!(
        d.groups[0].members[0].assignment.topic_partitions[0].topic_name,
        "t"
    );
    assert_eq!(d.groups[1].error_code, GROUP_ID_NOT_FOUND);
    let req = ListGroupsRequest {
        states_filter: Vec::new(),
        types_filter: vec!["consumer".into()],
    };
    let ResponseBody::ListGroups(l) = c.call(5, req).await else {
        panic!()
    };
    assert_eq!(l.groups.len(), 1);
    assert_eq!(
        (
            l.groups[0].group_id.as_str(),
            l.groups[0].group_type.as_str()
        ),
        ("cg", "consumer")
    );
    // Leaving (epoch -1) empties the group.
    let ResponseBody::ConsumerGroupHeartbeat(r) = c.call(1, hb(-1, None)).await else {
        panic!()
    };
    assert_eq!((r.error_code, r.member_epoch), (0, -1));
    t.server.shutdown().await.unwrap();
}

#[tokio::test]
async fn e2e_groups_a_failed_append_answers_not_coordinator_and_reloads() {
    // `__consumer_offsets` created by a client with 1 partition while the coordinator places
    // groups on 3: appends for partitions 1 and 2 fail (no such partition).
    let t = start_groups().await;
    let mut c = Client::connect(t.addr).await;
    create_topic(&mut c, "__consumer_offsets", 1).await;
    create_topic(&mut c, "t", 1).await;
    let group_on = |p: i32| {
        (0..)
            .map(|i| format!("g{i}"))
            .find(|g| skiff_group::partition_for(g, GROUP_PARTITIONS) == p)
            .unwrap()
    };
    let (healthy, broken) = (group_on(0), group_on(1));
    assert_eq!(commit(&mut c, &healthy, -1, "", "t", 3, "").await, 0);
    // The shard had applied the commit in memory before the append failed: it answers
    // NOT_COORDINATOR, drops that memory and reloads from the log (which keeps failing here).
    assert_eq!(
        commit(&mut c, &broken, -1, "", "t", 3, "").await,
        NOT_COORDINATOR
    );
    let again = commit(&mut c, &broken, -1, "", "t", 4, "").await;
    assert!(
        again == COORDINATOR_LOAD_IN_PROGRESS || again == NOT_COORDINATOR,
        "got {again}"
    );
    let fetched = fetch_offsets(&mut c, &[&healthy, &broken], "t").await;
    assert_eq!(fetched[0], (0, 3, String::new(), 0));
    assert_ne!(
        fetched[1].1, 3,
        "the failed commit must not be visible: {fetched:?}"
    );
    t.server.shutdown().await.unwrap();
}

#[tokio::test]
async fn e2e_groups_durable_offsets_topic_answers_after_fsync() {
    // flush.messages=1 for every topic: coordinator records are fsynced before the answer.
    let dir = tempfile::tempdir().unwrap();
    let mut settings = ServerSettings::with_log_dir(dir.path().join("data"));
    group_settings(&mut settings);
    let defaults = skiff_storage::LogConfig {
        flush_messages: 1,
        ..skiff_storage::LogConfig::default()
    };
    let server = Server::start(settings, Arc::new(StorageTopicConfigs { defaults }))
        .await
        .unwrap();
    let mut c = Client::connect(server.listeners()[0].local_addr).await;
    create_topic(&mut c, "t", 1).await;
    let (m, generation) = stable_group(&mut c, "durable", 10_000).await;
    assert_eq!(
        commit(&mut c, "durable", generation, &m, "t", 9, "synced").await,
        0
    );
    assert_eq!(
        fetch_offsets(&mut c, &["durable"], "t").await,
        vec![(0, 9, "synced".to_string(), 0)]
    );
    // The records are fsynced: the partition's high watermark reached its log end.
    let broker = server.broker();
    let p = skiff_group::partition_for("durable", GROUP_PARTITIONS);
    let log = broker
        .replicas
        .log_manager()
        .get(&skiff_types::TopicPartition::new("__consumer_offsets", p))
        .unwrap();
    {
        let l = log.lock();
        assert!(l.log_end_offset() > 0);
        assert_eq!(l.high_watermark(), l.log_end_offset());
        assert!(l.sync().synced() >= l.log_end_offset());
    }
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn e2e_groups_offsets_of_an_empty_group_expire_after_retention() {
    let retention = |s: &mut ServerSettings| {
        group_settings(s);
        s.groups.config.offsets_retention_ms = 1_000;
        s.groups.config.offsets_retention_check_interval_ms = 50;
    };
    let t = start_with(retention).await;
    let mut c = Client::connect(t.addr).await;
    create_topic(&mut c, "t", 1).await;
    let committed_at = Instant::now();
    assert_eq!(commit(&mut c, "fleeting", -1, "", "t", 5, "").await, 0);
    // Read back before the retention can have run out (on a loaded machine the read itself
    // may come late: then only "not expired too early" below can be checked).
    let first = fetch_offsets(&mut c, &["fleeting"], "t").await[0].1;
    if committed_at.elapsed() < Duration::from_millis(900) {
        assert_eq!(first, 5, "the commit did not read back");
    }
    loop {
        if fetch_offsets(&mut c, &["fleeting"], "t").await[0].1 == -1 {
            break;
        }
        assert!(
            committed_at.elapsed() < DEADLINE,
            "the offset never expired"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        committed_at.elapsed() >= Duration::from_millis(950),
        "expired too early"
    );
    // The expiry was written to the log (tombstones): it survives a restart.
    let TestServer { server, dir, .. } = t;
    drop(c);
    server.shutdown().await.unwrap();
    let mut settings = ServerSettings::with_log_dir(dir.path().join("data"));
    retention(&mut settings);
    settings.groups.config.offsets_retention_ms = 3_600_000;
    let server = Server::start(settings, Arc::new(StorageTopicConfigs::default()))
        .await
        .unwrap();
    let mut c = Client::connect(server.listeners()[0].local_addr).await;
    let deadline = Instant::now() + DEADLINE;
    loop {
        let got = fetch_offsets(&mut c, &["fleeting"], "t").await;
        if got[0].0 != COORDINATOR_LOAD_IN_PROGRESS {
            assert_eq!(got[0].1, -1, "the expired offset came back after a restart");
            break;
        }
        assert!(Instant::now() < deadline);
        tokio::task::yield_now().await;
    }
    server.shutdown().await.unwrap();
}
