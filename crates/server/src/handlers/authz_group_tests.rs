//! Authorization of the group and transaction handlers (issue 19), through dispatch as a given
//! principal on a one-node broker: for each API the allowed case works, the refused case
//! answers Kafka's code in Kafka's place, an unauthorized topic answers the same whether it
//! exists or not, a DENY beats an ALLOW, and the super user `User:admin` bypasses the ACLs.
//!
//! Topics: `t` (exists, ACLs given per test), `secret` (exists, never granted), `missing`
//! (does not exist, never granted). Principal under test: `User:alice`.

use std::sync::Arc;

use skiff_auth::acl::{AclBinding, AclOperation, AclPermission, PatternType, ResourceType};
use skiff_auth::principal::KafkaPrincipal;
use skiff_protocol::*;

use crate::authz::testing::{acl, call_as, enable_acls};
use crate::broker::Broker;
use crate::handlers::Reply;

use AclOperation::{ClusterAction, Delete, Describe, Read, Write};
use ResourceType::{Cluster, Group, Topic, TransactionalId};

const TOPIC_AUTHZ: i16 = 29;
const GROUP_AUTHZ: i16 = 30;
const CLUSTER_AUTHZ: i16 = 31;
const TXN_AUTHZ: i16 = 53;

fn open_broker(dir: &std::path::Path) -> Arc<Broker> {
    let mut settings = crate::settings::ServerSettings::with_log_dir(dir);
    settings.groups.offsets_topic_partitions = 3;
    let (_tx, rx) = tokio::sync::watch::channel(false);
    let broker = Broker::open(
        settings,
        Arc::new(crate::settings::StorageTopicConfigs::default()),
        rx,
    )
    .unwrap();
    for t in ["t", "secret"] {
        broker
            .create_topic(t, 1, std::collections::BTreeMap::new())
            .unwrap();
    }
    broker
}

fn alice() -> KafkaPrincipal {
    KafkaPrincipal::user("alice")
}

fn admin() -> KafkaPrincipal {
    KafkaPrincipal::user("admin")
}

fn allow(op: AclOperation, rt: ResourceType, name: &str) -> AclBinding {
    acl(
        "alice",
        AclPermission::Allow,
        op,
        rt,
        PatternType::Literal,
        name,
    )
}

fn deny(op: AclOperation, rt: ResourceType, name: &str) -> AclBinding {
    acl(
        "alice",
        AclPermission::Deny,
        op,
        rt,
        PatternType::Literal,
        name,
    )
}

async fn body(r: Reply) -> ResponseBody {
    match r {
        Reply::Now(b) => b,
        Reply::Later(f) | Reply::Hold(f) => f.await,
        other => panic!("no response: {other:?}"),
    }
}

async fn call(
    broker: &Arc<Broker>,
    who: &KafkaPrincipal,
    version: i16,
    req: RequestBody,
) -> ResponseBody {
    body(call_as(broker, who, version, req)).await
}

// ---- OffsetCommit / OffsetFetch / OffsetDelete ----

fn commit_req(group: &str, topics: &[&str]) -> RequestBody {
    RequestBody::OffsetCommit(OffsetCommitRequest {
        group_id: group.into(),
        generation_id_or_member_epoch: -1,
        topics: topics
            .iter()
            .map(|t| OffsetCommitRequestTopic {
                name: (*t).into(),
                partitions: vec![OffsetCommitRequestPartition {
                    partition_index: 0,
                    committed_offset: 7,
                    committed_leader_epoch: -1,
                    committed_metadata: None,
                }],
            })
            .collect(),
        ..OffsetCommitRequest::default()
    })
}

/// OffsetCommit v8 of partition 0 of each topic: (topic, code) in response order.
async fn commit(
    broker: &Arc<Broker>,
    who: &KafkaPrincipal,
    group: &str,
    topics: &[&str],
) -> Vec<(String, i16)> {
    let ResponseBody::OffsetCommit(r) = call(broker, who, 8, commit_req(group, topics)).await
    else {
        panic!()
    };
    r.topics
        .into_iter()
        .map(|t| (t.name, t.partitions[0].error_code))
        .collect()
}

fn codes(pairs: &[(&str, i16)]) -> Vec<(String, i16)> {
    pairs.iter().map(|(t, c)| ((*t).to_string(), *c)).collect()
}

#[tokio::test]
async fn offset_commit_needs_read_on_group_then_on_each_topic() {
    let dir = tempfile::tempdir().unwrap();
    let broker = open_broker(dir.path());
    let all = ["t", "secret", "missing"];

    // Refused group: every partition answers 30, whatever the topics.
    enable_acls(&broker, vec![allow(Read, Topic, "t")]);
    assert_eq!(
        commit(&broker, &alice(), "g", &all).await,
        codes(&[("t", 30), ("secret", 30), ("missing", 30)])
    );

    // Allowed group: unauthorized topics answer 29, existing or not (never 3); an authorized
    // missing topic answers 3; the authorized one commits.
    enable_acls(
        &broker,
        vec![
            allow(Read, Group, "g"),
            allow(Read, Topic, "t"),
            allow(Read, Topic, "ghost"),
        ],
    );
    assert_eq!(
        commit(&broker, &alice(), "g", &["t", "secret", "missing", "ghost"]).await,
        codes(&[("t", 0), ("secret", 29), ("missing", 29), ("ghost", 3)])
    );

    // DENY beats ALLOW (a prefixed allow on `t`, a literal deny).
    enable_acls(
        &broker,
        vec![
            allow(Read, Group, "g"),
            acl(
                "alice",
                AclPermission::Allow,
                Read,
                Topic,
                PatternType::Prefixed,
                "t",
            ),
            deny(Read, Topic, "t"),
        ],
    );
    assert_eq!(
        commit(&broker, &alice(), "g", &["t"]).await,
        codes(&[("t", 29)])
    );
    // The super user needs no ACL.
    assert_eq!(
        commit(&broker, &admin(), "g", &all).await,
        codes(&[("t", 0), ("secret", 0), ("missing", 3)])
    );
}

fn fetch_req(group: &str, topics: Option<&[&str]>) -> OffsetFetchRequestGroup {
    OffsetFetchRequestGroup {
        group_id: group.into(),
        member_id: None,
        member_epoch: -1,
        topics: topics.map(|ts| {
            ts.iter()
                .map(|t| OffsetFetchRequestTopics {
                    name: (*t).into(),
                    partition_indexes: vec![0],
                })
                .collect()
        }),
    }
}

/// OffsetFetch v8 of one group: (group error, [(topic, partition 0's code, offset)]).
async fn fetch(
    broker: &Arc<Broker>,
    group: &str,
    topics: Option<&[&str]>,
) -> (i16, Vec<(String, i16, i64)>) {
    let req = OffsetFetchRequest {
        groups: vec![fetch_req(group, topics)],
        ..OffsetFetchRequest::default()
    };
    let ResponseBody::OffsetFetch(r) =
        call(broker, &alice(), 8, RequestBody::OffsetFetch(req)).await
    else {
        panic!()
    };
    let g = &r.groups[0];
    let topics = g
        .topics
        .iter()
        .map(|t| {
            let p = &t.partitions[0];
            (t.name.clone(), p.error_code, p.committed_offset)
        })
        .collect();
    (g.error_code, topics)
}

#[tokio::test]
async fn offset_fetch_needs_describe_on_group_and_hides_topics() {
    let dir = tempfile::tempdir().unwrap();
    let broker = open_broker(dir.path());
    enable_acls(&broker, vec![]);
    assert_eq!(
        commit(&broker, &admin(), "g", &["t", "secret"]).await,
        codes(&[("t", 0), ("secret", 0)])
    );

    // Refused group: the group's error, no topics (v8), top-level before v8.
    enable_acls(&broker, vec![allow(Describe, Topic, "t")]);
    assert_eq!(
        fetch(&broker, "g", Some(&["t"])).await,
        (GROUP_AUTHZ, vec![])
    );
    let v5 = OffsetFetchRequest {
        group_id: "g".into(),
        topics: None,
        ..OffsetFetchRequest::default()
    };
    let ResponseBody::OffsetFetch(r) =
        call(&broker, &alice(), 5, RequestBody::OffsetFetch(v5)).await
    else {
        panic!()
    };
    assert_eq!((r.error_code, r.topics.len()), (GROUP_AUTHZ, 0));

    // Allowed group: named unauthorized topics answer 29 and -1, existing or not, after the
    // others; all topics leaves out the unauthorized ones.
    enable_acls(
        &broker,
        vec![allow(Describe, Group, "g"), allow(Describe, Topic, "t")],
    );
    let named = fetch(&broker, "g", Some(&["secret", "t", "missing"])).await;
    assert_eq!(
        named,
        (
            0,
            vec![
                ("t".into(), 0, 7),
                ("secret".into(), TOPIC_AUTHZ, -1),
                ("missing".into(), TOPIC_AUTHZ, -1)
            ]
        )
    );
    assert_eq!(
        fetch(&broker, "g", None).await,
        (0, vec![("t".into(), 0, 7)])
    );
    // DENY beats ALLOW.
    enable_acls(
        &broker,
        vec![
            allow(Describe, Group, "g"),
            allow(Describe, Topic, "t"),
            deny(Describe, Topic, "t"),
        ],
    );
    assert_eq!(fetch(&broker, "g", None).await, (0, vec![]));
}

async fn offset_delete(
    broker: &Arc<Broker>,
    who: &KafkaPrincipal,
    topics: &[&str],
) -> (i16, Vec<(String, i16)>) {
    let req = OffsetDeleteRequest {
        group_id: "g".into(),
        topics: topics
            .iter()
            .map(|t| OffsetDeleteRequestTopic {
                name: (*t).into(),
                partitions: vec![OffsetDeleteRequestPartition { partition_index: 0 }],
            })
            .collect(),
    };
    let ResponseBody::OffsetDelete(r) = call(broker, who, 0, RequestBody::OffsetDelete(req)).await
    else {
        panic!()
    };
    let parts = r
        .topics
        .into_iter()
        .map(|t| (t.name, t.partitions[0].error_code))
        .collect();
    (r.error_code, parts)
}

#[tokio::test]
async fn offset_delete_needs_delete_on_group_and_read_on_topics() {
    let dir = tempfile::tempdir().unwrap();
    let broker = open_broker(dir.path());
    enable_acls(&broker, vec![]);
    commit(&broker, &admin(), "g", &["t", "secret"]).await;

    enable_acls(
        &broker,
        vec![allow(Read, Group, "g"), allow(Read, Topic, "t")],
    );
    assert_eq!(
        offset_delete(&broker, &alice(), &["t"]).await,
        (GROUP_AUTHZ, vec![])
    );
    enable_acls(
        &broker,
        vec![allow(Delete, Group, "g"), allow(Read, Topic, "t")],
    );
    assert_eq!(
        offset_delete(&broker, &alice(), &["t", "secret", "missing"]).await,
        (0, codes(&[("t", 0), ("secret", 29), ("missing", 29)]))
    );
    // `secret`'s offset survived the refusal; the super user deletes it.
    assert_eq!(
        offset_delete(&broker, &admin(), &["secret"]).await,
        (0, codes(&[("secret", 0)]))
    );
}

// ---- JoinGroup / SyncGroup / Heartbeat / LeaveGroup ----

async fn membership_codes(broker: &Arc<Broker>, who: &KafkaPrincipal) -> [i16; 4] {
    let join = JoinGroupRequest {
        group_id: "g".into(),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 10_000,
        member_id: String::new(),
        protocol_type: "consumer".into(),
        protocols: vec![JoinGroupRequestProtocol {
            name: "range".into(),
            metadata: bytes::Bytes::new(),
        }],
        ..JoinGroupRequest::default()
    };
    let ResponseBody::JoinGroup(j) = call(broker, who, 6, RequestBody::JoinGroup(join)).await
    else {
        panic!()
    };
    let sync = SyncGroupRequest {
        group_id: "g".into(),
        generation_id: 1,
        member_id: "nobody".into(),
        protocol_type: Some("consumer".into()),
        protocol_name: Some("range".into()),
        ..SyncGroupRequest::default()
    };
    let ResponseBody::SyncGroup(s) = call(broker, who, 5, RequestBody::SyncGroup(sync)).await
    else {
        panic!()
    };
    let hb = HeartbeatRequest {
        group_id: "g".into(),
        generation_id: 1,
        member_id: "nobody".into(),
        ..HeartbeatRequest::default()
    };
    let ResponseBody::Heartbeat(h) = call(broker, who, 4, RequestBody::Heartbeat(hb)).await else {
        panic!()
    };
    let leave = LeaveGroupRequest {
        group_id: "g".into(),
        members: vec![MemberIdentity {
            member_id: "nobody".into(),
            ..MemberIdentity::default()
        }],
        ..LeaveGroupRequest::default()
    };
    let ResponseBody::LeaveGroup(l) = call(broker, who, 5, RequestBody::LeaveGroup(leave)).await
    else {
        panic!()
    };
    [j.error_code, s.error_code, h.error_code, l.error_code]
}

#[tokio::test]
async fn membership_apis_need_read_on_the_group() {
    let dir = tempfile::tempdir().unwrap();
    let broker = open_broker(dir.path());
    enable_acls(&broker, vec![allow(Describe, Group, "g")]);
    assert_eq!(membership_codes(&broker, &alice()).await, [GROUP_AUTHZ; 4]);
    enable_acls(
        &broker,
        vec![allow(Read, Group, "g"), deny(Read, Group, "g")],
    );
    assert_eq!(membership_codes(&broker, &alice()).await, [GROUP_AUTHZ; 4]);

    // Allowed: the coordinator answers (v4+ join without a member id: MEMBER_ID_REQUIRED;
    // the others: the member is unknown).
    enable_acls(&broker, vec![allow(Read, Group, "g")]);
    let allowed = membership_codes(&broker, &alice()).await;
    assert_eq!(allowed[0], 79, "{allowed:?}");
    assert!(allowed.iter().all(|c| *c != GROUP_AUTHZ), "{allowed:?}");
    let admin_codes = membership_codes(&broker, &admin()).await;
    assert!(
        admin_codes.iter().all(|c| *c != GROUP_AUTHZ),
        "{admin_codes:?}"
    );

    // SyncGroup v5 without protocol type/name: INCONSISTENT_GROUP_PROTOCOL before authorization.
    enable_acls(&broker, vec![]);
    let sync = SyncGroupRequest {
        group_id: "g".into(),
        member_id: "m".into(),
        ..SyncGroupRequest::default()
    };
    let ResponseBody::SyncGroup(s) = call(&broker, &alice(), 5, RequestBody::SyncGroup(sync)).await
    else {
        panic!()
    };
    assert_eq!(s.error_code, 23);
}

// ---- DescribeGroups / ListGroups / DeleteGroups ----

#[tokio::test]
async fn describe_groups_refuses_per_group_first_and_computes_operations() {
    let dir = tempfile::tempdir().unwrap();
    let broker = open_broker(dir.path());
    enable_acls(&broker, vec![]);
    commit(&broker, &admin(), "g", &["t"]).await;
    let req = DescribeGroupsRequest {
        groups: vec!["g".into(), "h".into()],
        include_authorized_operations: true,
    };
    let describe = |who: KafkaPrincipal, req: DescribeGroupsRequest| {
        let broker = Arc::clone(&broker);
        async move {
            let ResponseBody::DescribeGroups(r) =
                call(&broker, &who, 5, RequestBody::DescribeGroups(req)).await
            else {
                panic!()
            };
            r.groups
                .into_iter()
                .map(|g| (g.group_id, g.error_code, g.authorized_operations))
                .collect::<Vec<_>>()
        }
    };
    enable_acls(
        &broker,
        vec![allow(Describe, Group, "g"), allow(Read, Group, "g")],
    );
    // `h` refused (first, as Kafka lists them); `g` with READ|DESCRIBE.
    assert_eq!(
        describe(alice(), req.clone()).await,
        vec![
            ("h".into(), GROUP_AUTHZ, i32::MIN),
            ("g".into(), 0, (1 << 3) | (1 << 8))
        ]
    );
    enable_acls(
        &broker,
        vec![allow(Describe, Group, "g"), deny(Describe, Group, "g")],
    );
    assert_eq!(describe(alice(), req.clone()).await[1].1, GROUP_AUTHZ);
    // The super user sees every group operation; so does anyone without an authorizer.
    let every_op = (1 << 3) | (1 << 6) | (1 << 8) | (1 << 10) | (1 << 11);
    assert_eq!(
        describe(admin(), req.clone()).await[0],
        ("g".into(), 0, every_op)
    );
    broker.authz.set(None);
    assert_eq!(describe(alice(), req).await[0], ("g".into(), 0, every_op));
}

async fn list_groups(broker: &Arc<Broker>) -> Vec<String> {
    let ResponseBody::ListGroups(r) = call(
        broker,
        &alice(),
        4,
        RequestBody::ListGroups(ListGroupsRequest::default()),
    )
    .await
    else {
        panic!()
    };
    let mut ids: Vec<String> = r.groups.into_iter().map(|g| g.group_id).collect();
    ids.sort();
    ids
}

#[tokio::test]
async fn list_groups_filters_by_describe_unless_cluster_describe() {
    let dir = tempfile::tempdir().unwrap();
    let broker = open_broker(dir.path());
    enable_acls(&broker, vec![]);
    commit(&broker, &admin(), "g", &["t"]).await;
    commit(&broker, &admin(), "h", &["t"]).await;
    assert_eq!(list_groups(&broker).await, Vec::<String>::new());
    enable_acls(&broker, vec![allow(Describe, Group, "g")]);
    assert_eq!(list_groups(&broker).await, vec!["g".to_string()]);
    enable_acls(
        &broker,
        vec![allow(
            Describe,
            Cluster,
            skiff_auth::acl::CLUSTER_RESOURCE_NAME,
        )],
    );
    assert_eq!(
        list_groups(&broker).await,
        vec!["g".to_string(), "h".into()]
    );
}

#[tokio::test]
async fn delete_groups_needs_delete_per_group() {
    let dir = tempfile::tempdir().unwrap();
    let broker = open_broker(dir.path());
    enable_acls(&broker, vec![]);
    commit(&broker, &admin(), "g", &["t"]).await;
    commit(&broker, &admin(), "h", &["t"]).await;
    enable_acls(
        &broker,
        vec![allow(Delete, Group, "g"), allow(Describe, Group, "h")],
    );
    let req = DeleteGroupsRequest {
        groups_names: vec!["h".into(), "g".into()],
    };
    let ResponseBody::DeleteGroups(r) =
        call(&broker, &alice(), 2, RequestBody::DeleteGroups(req)).await
    else {
        panic!()
    };
    let got: Vec<(String, i16)> = r
        .results
        .into_iter()
        .map(|g| (g.group_id, g.error_code))
        .collect();
    assert_eq!(got, codes(&[("g", 0), ("h", GROUP_AUTHZ)]));
    // `h` is still there.
    enable_acls(&broker, vec![allow(Describe, Group, "h")]);
    assert_eq!(list_groups(&broker).await, vec!["h".to_string()]);
}

// ---- FindCoordinator ----

#[tokio::test]
async fn find_coordinator_needs_describe_per_key() {
    let dir = tempfile::tempdir().unwrap();
    let broker = open_broker(dir.path());
    enable_acls(
        &broker,
        vec![
            allow(Describe, Group, "g"),
            allow(Describe, TransactionalId, "tx"),
        ],
    );
    let find = |key_type: i8, keys: &[&str]| FindCoordinatorRequest {
        key_type,
        coordinator_keys: keys.iter().map(|k| (*k).to_string()).collect(),
        ..FindCoordinatorRequest::default()
    };
    for (key_type, ok, refused, code) in [(0, "g", "h", GROUP_AUTHZ), (1, "tx", "ty", TXN_AUTHZ)] {
        let req = RequestBody::FindCoordinator(find(key_type, &[refused, ok]));
        let ResponseBody::FindCoordinator(r) = call(&broker, &alice(), 4, req).await else {
            panic!()
        };
        let got: Vec<_> = r
            .coordinators
            .iter()
            .map(|c| {
                (
                    c.key.as_str(),
                    c.error_code,
                    c.node_id,
                    c.error_message.is_some(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![(refused, code, -1, false), (ok, 0, broker.node_id(), false)]
        );
    }
    // v0-3: one key, a top-level answer with Kafka's message.
    let req = FindCoordinatorRequest {
        key: "h".into(),
        ..FindCoordinatorRequest::default()
    };
    let ResponseBody::FindCoordinator(r) =
        call(&broker, &alice(), 3, RequestBody::FindCoordinator(req)).await
    else {
        panic!()
    };
    assert_eq!(
        (r.error_code, r.node_id, r.port, r.error_message.as_deref()),
        (GROUP_AUTHZ, -1, -1, Some("Group authorization failed."))
    );
}

mod kip848_txn;
