//! Offsets (commit fencing, fetch, delete, retention), admin APIs and restarts (replay).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use skiff_group::{
    CoordinatorRecord, GroupConfig, OffsetFetchGroupRequest, RequestContext, Response,
    offset_fetch_error_group, offset_fetch_groups, offset_fetch_response,
};
use skiff_protocol::{
    Codec, ListGroupsRequest, OffsetCommitRequest, OffsetCommitRequestPartition,
    OffsetCommitRequestTopic, OffsetDeleteRequest, OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic, OffsetFetchRequest, OffsetFetchRequestGroup, OffsetFetchRequestTopic,
};
use skiff_types::ErrorCode;

const DELAY: i32 = 100;

fn offset(h: &Harness, topic: &str, p: i32) -> (i64, i32, Option<String>, i16) {
    let g = h.fetch(GROUP, Some(&[(topic, &[p])]));
    let part = &g.topics[0].partitions[0];
    (
        part.committed_offset,
        part.committed_leader_epoch,
        part.metadata.clone(),
        part.error_code,
    )
}

#[test]
fn commit_by_the_current_generation_round_trips_metadata() {
    let mut h = Harness::new(config(DELAY));
    let (ids, _, generation) = h.stable_group(2, &["t"]);
    let r = h.commit_req(
        8,
        GROUP,
        generation,
        &ids[0],
        &[("t", 0, 42, Some("hello")), ("t", 1, 7, None)],
    );
    assert_eq!(Harness::commit_errors(&r), vec![0, 0]);
    assert_eq!(offset(&h, "t", 0), (42, 3, Some("hello".into()), 0));
    assert_eq!(
        offset(&h, "t", 1),
        (7, 3, Some(String::new()), 0),
        "null metadata reads back empty"
    );
    // Each committed partition is one OffsetCommit record (key version 1).
    let commits = h.log.iter().filter(|(k, _)| k[..2] == [0, 1]).count();
    assert_eq!(commits, 2);
}

#[test]
fn commit_fencing_table() {
    let mut h = Harness::new(config(DELAY));
    let (ids, _, generation) = h.stable_group(2, &["t"]);
    // (version, generation, member, expected)
    let cases: Vec<(i16, i32, &str, i16)> = vec![
        (8, generation - 1, &ids[0], 22), // a zombie from an old generation
        (8, generation, "stranger", 25),
        (8, -1, "", 25), // a simple commit while the group has members
        (8, -1, &ids[0], 22),
        (8, generation, &ids[1], 0),
    ];
    for (v, gen_, member, want) in cases {
        let r = h.commit_req(v, GROUP, gen_, member, &[("t", 0, 1, None)]);
        assert_eq!(
            Harness::commit_errors(&r),
            vec![want],
            "v{v} gen {gen_} {member:?}"
        );
    }
    // Unknown group with a generation: ILLEGAL_GENERATION before v9, GROUP_ID_NOT_FOUND at v9.
    let r = h.commit_req(8, "other", 3, "m", &[("t", 0, 1, None)]);
    assert_eq!(Harness::commit_errors(&r), vec![22]);
    let r = h.commit_req(9, "other", 3, "m", &[("t", 0, 1, None)]);
    assert_eq!(Harness::commit_errors(&r), vec![69]);
    // Empty group id.
    let r = h.commit_req(8, "", -1, "", &[("t", 0, 1, None)]);
    assert_eq!(Harness::commit_errors(&r), vec![24]);
}

#[test]
fn commits_during_rebalances() {
    let mut h = Harness::new(config(DELAY));
    let (ids, _, generation) = h.stable_group(2, &["t"]);
    // PreparingRebalance: the current generation may still commit (revocation commits).
    let (_c, _) = h.join_new(&["t"]);
    assert_eq!(h.state(), "PreparingRebalance");
    let r = h.commit_req(8, GROUP, generation, &ids[0], &[("t", 0, 5, None)]);
    assert_eq!(Harness::commit_errors(&r), vec![0]);
    // CompletingRebalance: REBALANCE_IN_PROGRESS for the new generation.
    for id in &ids {
        h.join(5, id, None, &["t"]);
    }
    assert_eq!(h.state(), "CompletingRebalance");
    let r = h.commit_req(8, GROUP, generation + 1, &ids[0], &[("t", 0, 6, None)]);
    assert_eq!(Harness::commit_errors(&r), vec![27]);
    let r = h.commit_req(8, GROUP, generation, &ids[0], &[("t", 0, 6, None)]);
    assert_eq!(Harness::commit_errors(&r), vec![22]);
}

#[test]
fn simple_commits_create_a_group_without_protocol() {
    let mut h = Harness::new(config(DELAY));
    let r = h.commit_req(8, "simple", -1, "", &[("t", 0, 10, Some("m"))]);
    assert_eq!(Harness::commit_errors(&r), vec![0]);
    let s = h.shard.group_summary("simple").unwrap();
    assert_eq!((s.state, s.protocol_type.as_str()), ("Empty", ""));
    assert_eq!(
        h.shard.committed_offset("simple", "t", 0).unwrap().offset,
        10
    );
}

#[test]
fn oversized_metadata_fails_only_its_partition() {
    let mut h = Harness::new(GroupConfig {
        offset_metadata_bytes_max: 4,
        ..config(DELAY)
    });
    let r = h.commit_req(
        8,
        "s",
        -1,
        "",
        &[("t", 0, 1, Some("12345")), ("t", 1, 1, Some("1234"))],
    );
    assert_eq!(Harness::commit_errors(&r), vec![12, 0]);
    assert!(h.shard.committed_offset("s", "t", 0).is_none());
}

#[test]
fn fetch_of_unknown_groups_and_partitions_is_minus_one_without_error() {
    let mut h = Harness::new(config(DELAY));
    let g = h.fetch("nobody", Some(&[("t", &[0, 1])]));
    assert_eq!(g.error_code, 0);
    for p in &g.topics[0].partitions {
        assert_eq!(
            (p.committed_offset, p.committed_leader_epoch, p.error_code),
            (-1, -1, 0)
        );
    }
    assert!(h.fetch("nobody", None).topics.is_empty());
    h.commit_req(8, GROUP, -1, "", &[("t", 0, 9, None), ("u", 2, 4, None)]);
    assert_eq!(offset(&h, "t", 5).0, -1);
    let all = h.fetch(GROUP, None);
    let got: Vec<(String, i32, i64)> = all
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(move |p| (t.name.clone(), p.partition_index, p.committed_offset))
        })
        .collect();
    assert_eq!(got, vec![("t".into(), 0, 9), ("u".into(), 2, 4)]);
}

#[test]
fn offset_fetch_versions_round_trip_through_the_batch_helpers() {
    let mut h = Harness::new(config(DELAY));
    h.commit_req(8, GROUP, -1, "", &[("t", 0, 9, Some("x"))]);
    for version in 1..=9i16 {
        let req = if version < 8 {
            OffsetFetchRequest {
                group_id: GROUP.into(),
                topics: Some(vec![OffsetFetchRequestTopic {
                    name: "t".into(),
                    partition_indexes: vec![0, 1],
                }]),
                ..Default::default()
            }
        } else {
            OffsetFetchRequest {
                groups: vec![
                    OffsetFetchRequestGroup {
                        group_id: GROUP.into(),
                        topics: None,
                        ..Default::default()
                    },
                    OffsetFetchRequestGroup {
                        group_id: "elsewhere".into(),
                        topics: None,
                        ..Default::default()
                    },
                ],
                ..Default::default()
            }
        };
        let groups: Vec<OffsetFetchGroupRequest> = offset_fetch_groups(&req, version);
        let answers = groups
            .iter()
            .map(|g| {
                if g.group_id == "elsewhere" {
                    offset_fetch_error_group(g, ErrorCode::NotCoordinator)
                } else {
                    h.shard
                        .fetch_offsets(&g.group_id, None, g.topics.as_deref())
                }
            })
            .collect();
        let resp = offset_fetch_response(version, answers);
        resp.to_bytes(version)
            .unwrap_or_else(|e| panic!("v{version}: {e}"));
        if version < 8 {
            assert_eq!(resp.topics[0].partitions[0].committed_offset, 9);
            assert_eq!(resp.topics[0].partitions[1].committed_offset, -1);
        } else {
            assert_eq!(
                resp.groups[0].topics[0].partitions[0].metadata.as_deref(),
                Some("x")
            );
            assert_eq!(resp.groups[1].error_code, 16);
        }
    }
}

fn offset_delete(
    h: &mut Harness,
    group: &str,
    topic: &str,
    parts: &[i32],
) -> skiff_protocol::OffsetDeleteResponse {
    let ctx = h.ctx(0);
    let req = OffsetDeleteRequest {
        group_id: group.into(),
        topics: vec![OffsetDeleteRequestTopic {
            name: topic.into(),
            partitions: parts
                .iter()
                .map(|p| OffsetDeleteRequestPartition {
                    partition_index: *p,
                })
                .collect(),
        }],
    };
    let e = h.shard.handle_offset_delete(&ctx, &req, h.now);
    h.absorb(e);
    match h.take(ctx.token) {
        Some(Response::OffsetDelete(r)) => r,
        other => panic!("{other:?}"),
    }
}

#[test]
fn offset_delete_respects_subscriptions() {
    let mut h = Harness::new(config(DELAY));
    assert_eq!(offset_delete(&mut h, "nobody", "t", &[0]).error_code, 69);
    let (ids, _, generation) = h.stable_group(2, &["t"]);
    h.commit_req(
        8,
        GROUP,
        generation,
        &ids[0],
        &[("t", 0, 1, None), ("old", 0, 1, None)],
    );
    let r = offset_delete(&mut h, GROUP, "t", &[0]);
    assert_eq!(
        (r.error_code, r.topics[0].partitions[0].error_code),
        (0, 86),
        "subscribed"
    );
    let before = h.log.len();
    let r = offset_delete(&mut h, GROUP, "old", &[0]);
    assert_eq!((r.error_code, r.topics[0].partitions[0].error_code), (0, 0));
    assert_eq!(h.log.len(), before + 1);
    assert!(h.log.last().unwrap().1.is_none(), "a tombstone");
    assert!(h.shard.committed_offset(GROUP, "old", 0).is_none());
    // A non-consumer protocol group with members cannot delete offsets at all.
    let mut h = Harness::new(config(DELAY));
    let req = skiff_protocol::JoinGroupRequest {
        protocol_type: "connect".into(),
        ..join_req("", None, range_protocol(&["t"]))
    };
    let t = h.join_with(3, &req);
    h.advance(i64::from(DELAY));
    assert!(h.join_response(t).is_some());
    assert_eq!(offset_delete(&mut h, GROUP, "t", &[0]).error_code, 68);
}

#[test]
fn list_describe_and_delete_groups() {
    let mut h = Harness::new(config(DELAY));
    let (ids, leader, _) = h.stable_group(2, &["t"]);
    h.commit_req(8, "simple", -1, "", &[("t", 0, 1, None)]);
    let all = h.shard.list_groups(&ListGroupsRequest::default());
    let names: Vec<(&str, &str, &str)> = all
        .iter()
        .map(|g| {
            (
                g.group_id.as_str(),
                g.group_state.as_str(),
                g.protocol_type.as_str(),
            )
        })
        .collect();
    assert_eq!(
        names,
        vec![("g", "Stable", "consumer"), ("simple", "Empty", "")]
    );
    let stable = h.shard.list_groups(&ListGroupsRequest {
        states_filter: vec!["stable".into()],
        ..Default::default()
    });
    assert_eq!(stable.len(), 1);
    let consumer = h.shard.list_groups(&ListGroupsRequest {
        types_filter: vec!["Consumer".into()],
        ..Default::default()
    });
    assert!(
        consumer.is_empty(),
        "classic groups are not of type consumer"
    );

    let d = h.shard.describe_group(GROUP, 5);
    assert_eq!(
        (
            d.error_code,
            d.group_state.as_str(),
            d.protocol_data.as_str()
        ),
        (0, "Stable", "range")
    );
    assert_eq!(d.members.len(), 2);
    let m = d.members.iter().find(|m| m.member_id == leader).unwrap();
    assert_eq!(
        (m.client_id.as_str(), m.client_host.as_str()),
        ("client", "/127.0.0.1")
    );
    assert_eq!(m.member_metadata, subscription(&["t"]));
    assert!(!m.member_assignment.is_empty());
    let gone = h.shard.describe_group("nobody", 5);
    assert_eq!((gone.group_state.as_str(), gone.error_code), ("Dead", 0));
    // v6 (KIP-1043): the same group is an error with a message.
    let gone = h.shard.describe_group("nobody", 6);
    assert_eq!(
        (
            gone.group_state.as_str(),
            gone.error_code,
            gone.error_message.as_deref()
        ),
        ("Dead", 69, Some("Group nobody not found."))
    );

    let delete = |h: &mut Harness, names: &[&str]| -> Vec<i16> {
        let ctx = RequestContext::new(999, 2);
        let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        let e = h.shard.handle_delete_groups(&ctx, &names, h.now);
        let e = h.absorb(e);
        match e.response(ctx.token) {
            Some(Response::DeleteGroups(r)) => r.results.iter().map(|r| r.error_code).collect(),
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(
        delete(&mut h, &[GROUP, "simple", "nobody"]),
        vec![68, 0, 69]
    );
    assert!(h.shard.group_summary("simple").is_none());
    assert!(h.shard.committed_offset("simple", "t", 0).is_none());
    // Offsets and group are tombstoned in the log.
    let tail: Vec<bool> = h
        .log
        .iter()
        .rev()
        .take(2)
        .map(|(_, v)| v.is_none())
        .collect();
    assert_eq!(tail, vec![true, true]);
    let _ = ids;
}

#[test]
fn commits_and_groups_survive_a_restart() {
    let mut h = Harness::new(config(DELAY));
    let (ids, leader, generation) = h.stable_group(2, &["t"]);
    h.commit_req(8, GROUP, generation, &ids[0], &[("t", 0, 42, Some("meta"))]);
    h.commit_req(8, "simple", -1, "", &[("u", 1, 7, None)]);
    h.restart();
    assert_eq!(offset(&h, "t", 0), (42, 3, Some("meta".into()), 0));
    assert_eq!(
        h.shard.committed_offset("simple", "u", 1).unwrap().offset,
        7
    );
    let s = h.shard.group_summary(GROUP).unwrap();
    assert_eq!(
        (s.state, s.generation, s.leader.clone()),
        ("Stable", generation, Some(leader))
    );
    // Loaded members carry on: heartbeats and commits with the same generation work...
    assert_eq!(h.heartbeat(generation, &ids[0], None), 0);
    let r = h.commit_req(8, GROUP, generation, &ids[1], &[("t", 1, 1, None)]);
    assert_eq!(Harness::commit_errors(&r), vec![0]);
    // ...and a member that never comes back is dropped one session after the load.
    h.advance(i64::from(SESSION_MS) / 2);
    assert_eq!(h.heartbeat(generation, &ids[0], None), 0);
    h.advance(i64::from(SESSION_MS) / 2);
    assert_eq!(h.state(), "PreparingRebalance");
    assert!(
        !h.shard
            .group_summary(GROUP)
            .unwrap()
            .members
            .contains(&ids[1])
    );
}

#[test]
fn replayed_records_decode_as_kafka_writes_them() {
    let mut h = Harness::new(config(DELAY));
    let (_, leader, generation) = h.stable_group(1, &["t"]);
    let (k, v) = h.log.last().unwrap().clone();
    match CoordinatorRecord::decode(&k, v.as_ref()).unwrap() {
        CoordinatorRecord::GroupMetadata(key, Some(value)) => {
            assert_eq!(key.group, GROUP);
            assert_eq!(&v.unwrap()[..2], &[0, 3], "GroupMetadataValue v3");
            assert_eq!(value.generation, generation);
            assert_eq!(value.leader.as_deref(), Some(leader.as_str()));
            assert_eq!(value.protocol.as_deref(), Some("range"));
            assert_eq!(value.members[0].subscription, subscription(&["t"]));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn retention_expires_empty_groups_offsets_then_the_group() {
    let cfg = GroupConfig {
        offsets_retention_ms: 10_000,
        offsets_retention_check_interval_ms: 1_000,
        ..config(DELAY)
    };
    let mut h = Harness::new(cfg);
    let (ids, _, generation) = h.stable_group(1, &["t"]);
    h.commit_req(
        8,
        GROUP,
        generation,
        &ids[0],
        &[("t", 0, 1, None), ("gone", 0, 1, None)],
    );
    // While Stable, the subscribed topic is kept; the unsubscribed one expires.
    for _ in 0..3 {
        h.advance(4_000);
        assert_eq!(h.heartbeat(generation, &ids[0], None), 0);
    }
    assert!(h.shard.committed_offset(GROUP, "t", 0).is_some());
    assert!(h.shard.committed_offset(GROUP, "gone", 0).is_none());
    // The member leaves: retention counts from when the group became Empty.
    h.leave(3, &[(&ids[0], None)]);
    assert_eq!(h.state(), "Empty");
    h.advance(9_000);
    assert!(h.shard.committed_offset(GROUP, "t", 0).is_some());
    h.advance(2_000);
    assert!(h.shard.committed_offset(GROUP, "t", 0).is_none());
    assert!(
        h.shard.group_summary(GROUP).is_none(),
        "the empty group is deleted too"
    );
    // And that is durable.
    h.restart();
    assert!(h.shard.group_summary(GROUP).is_none());
    assert!(h.shard.committed_offset(GROUP, "t", 0).is_none());
}

#[test]
fn explicit_retention_time_sets_an_expire_timestamp() {
    let cfg = GroupConfig {
        offsets_retention_check_interval_ms: 1_000,
        ..config(DELAY)
    };
    let mut h = Harness::new(cfg);
    let req = OffsetCommitRequest {
        group_id: "s".into(),
        retention_time_ms: 5_000,
        topics: vec![OffsetCommitRequestTopic {
            name: "t".into(),
            partitions: vec![OffsetCommitRequestPartition {
                partition_index: 0,
                committed_offset: 3,
                ..Default::default()
            }],
        }],
        ..Default::default()
    };
    let r = h.commit_with(2, &req);
    assert_eq!(Harness::commit_errors(&r), vec![0]);
    let o = h.shard.committed_offset("s", "t", 0).unwrap();
    assert_eq!(o.expire_timestamp_ms, Some(h.now + 5_000));
    assert_eq!(
        &h.log.last().unwrap().1.as_ref().unwrap()[..2],
        &[0, 1],
        "OffsetCommitValue v1"
    );
    h.advance(6_000);
    assert!(h.shard.committed_offset("s", "t", 0).is_none());
}
