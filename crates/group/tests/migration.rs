//! Online migration between the classic and the consumer protocol
//! (`group.consumer.migration.policy`): a ConsumerGroupHeartbeat upgrades a Stable classic
//! group, its classic members keep their partitions and are told to rejoin, rejoin through
//! JoinGroup/SyncGroup served by the consumer group, and the group turns back into a classic
//! group when its last consumer-protocol member leaves; the policy refuses either way; replay
//! rebuilds each step.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeSet;

use common::*;
use skiff_group::{GroupConfig, MigrationPolicy, Response, TopicInfo};
use skiff_protocol::{ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse};
use uuid::Uuid;

const REBALANCE_IN_PROGRESS: i16 = 27;
const GROUP_ID_NOT_FOUND: i16 = 69;

fn harness(policy: MigrationPolicy) -> Harness {
    let mut h = Harness::new(GroupConfig {
        consumer_migration_policy: policy,
        ..config(100)
    });
    h.shard.set_topics([TopicInfo {
        topic_id: Uuid::from_u128(1),
        name: "t".into(),
        partitions: 4,
    }]);
    h
}

fn cgh(h: &mut Harness, member: &str, epoch: i32) -> ConsumerGroupHeartbeatResponse {
    let req = ConsumerGroupHeartbeatRequest {
        group_id: GROUP.into(),
        member_id: member.into(),
        member_epoch: epoch,
        rebalance_timeout_ms: if epoch == 0 { REBALANCE_MS } else { -1 },
        subscribed_topic_names: (epoch == 0).then(|| vec!["t".to_string()]),
        topic_partitions: (epoch == 0).then(Vec::new),
        ..Default::default()
    };
    let ctx = h.ctx(1);
    let e = h.shard.handle_consumer_group_heartbeat(&ctx, &req, h.now);
    h.absorb(e);
    match h.take(ctx.token) {
        Some(Response::ConsumerGroupHeartbeat(r)) => r,
        other => panic!("{other:?}"),
    }
}

fn group_type(h: &Harness) -> &'static str {
    h.shard.group_summary(GROUP).unwrap().group_type
}

/// A classic member rejoins the consumer group: JoinGroup answered at once, then SyncGroup;
/// returns (generation, partitions of "t").
fn rejoin(h: &mut Harness, member: &str) -> (i32, BTreeSet<i32>) {
    let t = h.join(5, member, None, &["t"]);
    let r = h
        .join_response(t)
        .expect("a classic member's join is answered at once");
    assert_eq!(r.error_code, 0, "{r:?}");
    assert_eq!(r.protocol_name.as_deref(), Some("range"));
    assert_eq!(r.leader, "", "the server assigns: nobody leads");
    let s = h.sync(r.generation_id, member, None, &[]);
    let s = h.sync_response(s).unwrap();
    assert_eq!(s.error_code, 0, "{s:?}");
    let parts = decode_assignment(&s.assignment)
        .into_iter()
        .map(|(_, p)| p)
        .collect();
    (r.generation_id, parts)
}

#[test]
fn a_classic_group_upgrades_on_a_consumer_heartbeat_and_downgrades_when_it_leaves() {
    let mut h = harness(MigrationPolicy::Bidirectional);
    let (ids, _, generation) = h.stable_group(2, &["t"]);
    // The new-protocol member joins: the group converts, keeping the classic assignment.
    let r = cgh(&mut h, "new", 0);
    assert_eq!(r.error_code, 0, "{r:?}");
    assert_eq!(group_type(&h), "consumer");
    let d = h.shard.describe_consumer_group(GROUP);
    assert_eq!(d.members.len(), 3);
    assert!(
        d.group_epoch > generation,
        "the joining member bumps the epoch"
    );
    // Classic members heartbeat at their generation and are told to rejoin.
    for id in &ids {
        assert_eq!(h.heartbeat(generation, id, None), REBALANCE_IN_PROGRESS);
        assert_eq!(
            h.heartbeat(generation + 7, id, None),
            22,
            "ILLEGAL_GENERATION"
        );
    }
    // Eager clients rejoin owning nothing; all converge to a disjoint cover of 4 partitions.
    let mut owned: Vec<BTreeSet<i32>> = vec![BTreeSet::new(); 2];
    let mut new_epoch = r.member_epoch;
    let mut new_owned: BTreeSet<i32> = r
        .assignment
        .iter()
        .flat_map(|a| a.topic_partitions.iter().flat_map(|t| t.partitions.clone()))
        .collect();
    for _ in 0..6 {
        for (i, id) in ids.iter().enumerate() {
            let (_, parts) = rejoin(&mut h, id);
            owned[i] = parts;
        }
        let owned_new: Vec<_> = vec![
            skiff_protocol::ConsumerGroupHeartbeatRequestTopicPartitions {
                topic_id: Uuid::from_u128(1),
                partitions: new_owned.iter().copied().collect(),
            },
        ];
        let req = ConsumerGroupHeartbeatRequest {
            group_id: GROUP.into(),
            member_id: "new".into(),
            member_epoch: new_epoch,
            rebalance_timeout_ms: -1,
            topic_partitions: Some(owned_new),
            ..Default::default()
        };
        let ctx = h.ctx(1);
        let e = h.shard.handle_consumer_group_heartbeat(&ctx, &req, h.now);
        h.absorb(e);
        let Some(Response::ConsumerGroupHeartbeat(r)) = h.take(ctx.token) else {
            panic!()
        };
        assert_eq!(r.error_code, 0, "{r:?}");
        new_epoch = r.member_epoch;
        if let Some(a) = r.assignment {
            new_owned = a
                .topic_partitions
                .iter()
                .flat_map(|t| t.partitions.clone())
                .collect();
        }
    }
    let all: Vec<i32> = owned
        .iter()
        .chain([&new_owned])
        .flatten()
        .copied()
        .collect();
    let set: BTreeSet<i32> = all.iter().copied().collect();
    assert_eq!(all.len(), set.len(), "disjoint: {owned:?} {new_owned:?}");
    assert_eq!(set, (0..4).collect(), "complete: {owned:?} {new_owned:?}");
    assert!(owned.iter().all(|o| !o.is_empty()), "{owned:?}");
    assert_eq!(h.state(), "Stable");

    // A restart replays the converted group.
    h.restart();
    assert_eq!(group_type(&h), "consumer");
    assert_eq!(h.shard.describe_consumer_group(GROUP).members.len(), 3);

    // The consumer-protocol member leaves: back to a classic group that rebalances.
    let epoch = h.shard.describe_consumer_group(GROUP).members[2].member_epoch;
    let leave = cgh(&mut h, "new", -1);
    assert_eq!(leave.error_code, 0, "{leave:?} (epoch {epoch})");
    assert_eq!(group_type(&h), "classic");
    assert_eq!(h.state(), "PreparingRebalance");
    let summary = h.shard.group_summary(GROUP).unwrap();
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(summary.members, sorted, "members sorted");
    // The classic members rejoin a classic join phase and form a new generation.
    let tokens: Vec<_> = ids.iter().map(|id| h.join(5, id, None, &["t"])).collect();
    let responses: Vec<_> = tokens
        .into_iter()
        .map(|t| {
            h.join_response(t)
                .expect("all rejoined: the phase completes")
        })
        .collect();
    assert!(responses.iter().all(|r| r.error_code == 0), "{responses:?}");
    assert_eq!(h.state(), "CompletingRebalance");
    h.restart();
    assert_eq!(group_type(&h), "classic");
}

#[test]
fn the_policy_refuses_what_it_does_not_allow() {
    for (policy, upgrades) in [
        (MigrationPolicy::Disabled, false),
        (MigrationPolicy::Downgrade, false),
        (MigrationPolicy::Upgrade, true),
    ] {
        let mut h = harness(policy);
        let (ids, _, generation) = h.stable_group(1, &["t"]);
        let r = cgh(&mut h, "new", 0);
        if !upgrades {
            assert_eq!(r.error_code, GROUP_ID_NOT_FOUND, "{policy:?}: {r:?}");
            assert_eq!(group_type(&h), "classic");
            assert_eq!(h.heartbeat(generation, &ids[0], None), 0, "{policy:?}");
            continue;
        }
        assert_eq!(r.error_code, 0, "{policy:?}: {r:?}");
        // Upgrade only: the last consumer member leaving leaves a consumer group.
        assert_eq!(cgh(&mut h, "new", -1).error_code, 0);
        assert_eq!(group_type(&h), "consumer", "{policy:?}");
        assert_eq!(h.shard.describe_consumer_group(GROUP).members.len(), 1);
    }
}

#[test]
fn a_silent_classic_member_of_a_consumer_group_is_fenced_by_its_session() {
    let mut h = harness(MigrationPolicy::Bidirectional);
    let (ids, _, _) = h.stable_group(1, &["t"]);
    assert_eq!(cgh(&mut h, "new", 0).error_code, 0);
    // Only "new" heartbeats; the classic member's session (SESSION_MS) runs out.
    for _ in 0..(SESSION_MS / 1000 + 2) {
        h.advance(1000);
        let epoch = h
            .shard
            .describe_consumer_group(GROUP)
            .members
            .iter()
            .find(|m| m.member_id == "new")
            .map(|m| m.member_epoch)
            .unwrap();
        let _ = cgh(&mut h, "new", epoch);
    }
    let d = h.shard.describe_consumer_group(GROUP);
    let members: Vec<_> = d.members.iter().map(|m| m.member_id.clone()).collect();
    assert_eq!(members, vec!["new".to_string()], "{} fenced", ids[0]);
    // LeaveGroup of a consumer-protocol member through the classic API is refused.
    let r = h.leave(3, &[("new", None)]);
    assert_eq!(r.members[0].error_code, 25, "UNKNOWN_MEMBER_ID: {r:?}");
}
