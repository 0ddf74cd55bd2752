//! KIP-848 consumer groups: ConsumerGroupHeartbeat join/reconcile/leave, fencing by session
//! and rebalance timeouts, static members, assignors, offsets with member epochs, describe and
//! replay.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeSet;

use common::kip848::*;
use skiff_group::{GroupConfig, GroupOverrides, Response};
use skiff_protocol::{
    ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse, ListGroupsRequest,
    OffsetCommitRequest, OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};

#[test]
fn members_converge_to_a_disjoint_complete_assignment() {
    let mut h = H::new(GroupConfig::default());
    let mut clients = vec![join_client(&mut h, "a", &["t"])];
    assert_eq!(
        clients[0].owned.values().map(BTreeSet::len).sum::<usize>(),
        6,
        "a alone gets all"
    );
    assert_eq!(state(&h), "Stable");
    clients.push(join_client(&mut h, "b", &["t"]));
    clients.push(join_client(&mut h, "c", &["t"]));
    for _ in 0..4 {
        round(&mut h, &mut clients);
        assert_disjoint(&clients);
    }
    assert_eq!(state(&h), "Stable");
    assert_eq!(total(&clients), 6);
    for c in &clients {
        assert_eq!(
            c.owned.values().map(BTreeSet::len).sum::<usize>(),
            2,
            "{c:?}"
        );
    }
    let epochs: BTreeSet<i32> = clients.iter().map(|c| c.epoch).collect();
    assert_eq!(epochs.len(), 1, "everyone at the assignment epoch");
}

#[test]
fn a_partition_moves_only_after_its_owner_revoked_it() {
    let mut h = H::new(GroupConfig::default());
    let mut a = join_client(&mut h, "a", &["t"]);
    let mut b = join_client(&mut h, "b", &["t"]);
    // b wants half of a's partitions, but a has not revoked them yet.
    assert!(b.owned.is_empty(), "nothing free yet: {b:?}");
    // a heartbeats without having revoked (still reports all 6): it is asked to revoke.
    let r = h.hb(&beat(&a.id, a.epoch, &a.owned));
    let next = owned_of(&r).unwrap();
    assert_eq!(next[&tid(T)].len(), 3);
    // b still gets nothing while a has not confirmed the revocation.
    let r = h.hb(&beat(&b.id, b.epoch, &b.owned));
    b.apply(&r);
    assert!(b.owned.values().all(BTreeSet::is_empty));
    // a revokes (reports only what it kept) and moves to the new epoch; then b gets its share.
    a.owned = next.clone();
    let r = r_apply(&mut h, &a, &next);
    let before = a.epoch;
    a.apply(&r);
    assert!(a.epoch > before);
    let r = h.hb(&beat(&b.id, b.epoch, &b.owned));
    b.apply(&r);
    assert_disjoint(&[a.clone(), b.clone()]);
    assert_eq!(total(&[a, b]), 6);
}

fn r_apply(h: &mut H, c: &Client, owned: &Owned) -> ConsumerGroupHeartbeatResponse {
    h.hb(&beat(&c.id, c.epoch, owned))
}

#[test]
fn leaving_and_session_expiry_hand_partitions_over() {
    let mut h = H::new(GroupConfig::default());
    let mut clients = vec![
        join_client(&mut h, "a", &["t"]),
        join_client(&mut h, "b", &["t"]),
    ];
    for _ in 0..3 {
        round(&mut h, &mut clients);
    }
    let epoch_before = h.shard.group_summary(GROUP).unwrap().generation;
    // b leaves (epoch -1): a gets everything back.
    let r = h.hb(&ConsumerGroupHeartbeatRequest {
        member_epoch: -1,
        ..beat("b", clients[1].epoch, &Owned::new())
    });
    assert_eq!((r.error_code, r.member_epoch), (0, -1));
    assert!(h.shard.group_summary(GROUP).unwrap().generation > epoch_before);
    let mut a = vec![clients[0].clone()];
    for _ in 0..2 {
        round(&mut h, &mut a);
    }
    assert_eq!(total(&a), 6);
    // c joins, then goes silent: its session (45 s) ends and a gets everything again.
    let mut c = join_client(&mut h, "c", &["t"]);
    for _ in 0..3 {
        round(&mut h, &mut a);
        let r = h.hb(&beat(&c.id, c.epoch, &c.owned));
        c.apply(&r);
    }
    assert_eq!(total(&a) + total(std::slice::from_ref(&c)), 6);
    for _ in 0..10 {
        h.advance(5_000);
        round(&mut h, &mut a);
    }
    assert_eq!(
        h.shard.group_summary(GROUP).unwrap().members,
        vec!["a".to_string()]
    );
    assert_eq!(total(&a), 6);
    let r = h.hb(&beat(&c.id, c.epoch, &c.owned));
    assert_eq!(r.error_code, 25, "a fenced member is unknown");
}

#[test]
fn a_member_that_never_revokes_is_fenced_after_its_rebalance_timeout() {
    let mut h = H::new(GroupConfig::default());
    let a = join_client(&mut h, "a", &["t"]);
    let mut b = join_client(&mut h, "b", &["t"]);
    let r = h.hb(&beat(&a.id, a.epoch, &a.owned));
    assert!(owned_of(&r).is_some());
    // a keeps heartbeating while still owning everything (never revokes).
    for _ in 0..7 {
        h.advance(5_000);
        let r = h.hb(&beat(&a.id, a.epoch, &a.owned));
        if r.error_code != 0 {
            assert_eq!(r.error_code, 25, "fenced after the 30 s rebalance timeout");
            let r = h.hb(&beat(&b.id, b.epoch, &b.owned));
            b.apply(&r);
            assert_eq!(total(std::slice::from_ref(&b)), 6);
            return;
        }
        let r = h.hb(&beat(&b.id, b.epoch, &b.owned));
        b.apply(&r);
    }
    panic!("a was never fenced");
}

#[test]
fn epoch_validation_table() {
    let mut h = H::new(GroupConfig::default());
    let mut a = join_client(&mut h, "a", &["t"]);
    let e = a.epoch;
    assert_eq!(
        h.hb(&beat("a", e + 1, &a.owned)).error_code,
        110,
        "ahead: FENCED_MEMBER_EPOCH"
    );
    assert_eq!(h.hb(&beat("nobody", 3, &Owned::new())).error_code, 25);
    let mut b = join_client(&mut h, "b", &["t"]);
    // Move a to a new epoch (it revokes), then heartbeat with the previous epoch and a subset.
    let r = h.hb(&beat("a", a.epoch, &a.owned));
    let kept = owned_of(&r).unwrap();
    let r = h.hb(&beat("a", a.epoch, &kept));
    let prev = a.epoch;
    a.apply(&r);
    assert!(a.epoch > prev);
    assert_eq!(
        h.hb(&beat("a", prev, &kept)).error_code,
        0,
        "the previous epoch with a subset is fine"
    );
    let mut too_much = kept.clone();
    too_much.entry(tid(T)).or_default().extend(0..6);
    assert_eq!(h.hb(&beat("a", prev, &too_much)).error_code, 110);
    let r = h.hb(&beat("b", b.epoch, &b.owned));
    b.apply(&r);
}

#[test]
fn request_validation_table() {
    let mut h = H::new(GroupConfig::default());
    let base = join("m", &["t"]);
    let cases: Vec<(ConsumerGroupHeartbeatRequest, i16)> = vec![
        (
            ConsumerGroupHeartbeatRequest {
                group_id: String::new(),
                ..base.clone()
            },
            42,
        ),
        (
            ConsumerGroupHeartbeatRequest {
                member_id: String::new(),
                ..base.clone()
            },
            42,
        ),
        (
            ConsumerGroupHeartbeatRequest {
                rebalance_timeout_ms: -1,
                ..base.clone()
            },
            42,
        ),
        (
            ConsumerGroupHeartbeatRequest {
                topic_partitions: None,
                ..base.clone()
            },
            42,
        ),
        (
            ConsumerGroupHeartbeatRequest {
                subscribed_topic_names: None,
                ..base.clone()
            },
            42,
        ),
        (
            ConsumerGroupHeartbeatRequest {
                subscribed_topic_regex: Some("t(".into()),
                ..base.clone()
            },
            128,
        ),
        (
            ConsumerGroupHeartbeatRequest {
                member_epoch: -3,
                ..base.clone()
            },
            42,
        ),
        (
            ConsumerGroupHeartbeatRequest {
                instance_id: Some(String::new()),
                ..base.clone()
            },
            42,
        ),
        (
            ConsumerGroupHeartbeatRequest {
                server_assignor: Some("sticky".into()),
                ..base.clone()
            },
            112,
        ),
        (
            ConsumerGroupHeartbeatRequest {
                member_epoch: 5,
                ..base.clone()
            },
            25,
        ),
    ];
    for (req, want) in cases {
        let r = h.hb(&req);
        assert_eq!(r.error_code, want, "{req:?}");
        assert!(r.error_message.is_some());
    }
    assert!(
        h.shard.group_summary(GROUP).is_none(),
        "failed joins leave no group behind"
    );
    // A non-empty classic group with the same id is not a consumer group when migration is
    // disabled (tests/migration.rs covers the conversion).
    let mut c = common::Harness::new(GroupConfig {
        consumer_migration_policy: skiff_group::MigrationPolicy::Disabled,
        ..common::config(0)
    });
    let t = c.join(3, "", None, &["t"]);
    c.join_response(t).unwrap();
    let ctx = c.ctx(1);
    let e = c.shard.handle_consumer_group_heartbeat(
        &ctx,
        &ConsumerGroupHeartbeatRequest {
            group_id: common::GROUP.into(),
            ..base
        },
        c.now,
    );
    match e.response(ctx.token) {
        Some(Response::ConsumerGroupHeartbeat(r)) => assert_eq!(r.error_code, 69),
        other => panic!("{other:?}"),
    }
}

#[test]
fn static_members_leave_temporarily_and_come_back_with_their_partitions() {
    let mut h = H::new(GroupConfig::default());
    let s_join = |id: &str| ConsumerGroupHeartbeatRequest {
        instance_id: Some("i1".into()),
        ..join(id, &["t"])
    };
    let r = h.hb(&s_join("s1"));
    let mut s = Client {
        id: "s1".into(),
        epoch: 0,
        owned: Owned::new(),
    };
    s.apply(&r);
    let mut d = join_client(&mut h, "d", &["t"]);
    let mut clients = vec![s.clone(), d.clone()];
    for _ in 0..3 {
        round(&mut h, &mut clients);
    }
    (s, d) = (clients[0].clone(), clients[1].clone());
    let group_epoch = h.shard.group_summary(GROUP).unwrap().generation;
    // Another process cannot take the instance id while s1 holds it.
    assert_eq!(
        h.hb(&s_join("s2")).error_code,
        111,
        "UNRELEASED_INSTANCE_ID"
    );
    // s1 leaves temporarily (-2) and restarts as s2: it gets the same partitions, no rebalance.
    let r = h.hb(&ConsumerGroupHeartbeatRequest {
        member_epoch: -2,
        instance_id: Some("i1".into()),
        ..beat("s1", s.epoch, &s.owned)
    });
    assert_eq!((r.error_code, r.member_epoch), (0, -2));
    let r = h.hb(&s_join("s2"));
    assert_eq!(r.error_code, 0);
    assert_eq!(owned_of(&r).unwrap(), s.owned);
    assert_eq!(
        h.shard.group_summary(GROUP).unwrap().generation,
        group_epoch,
        "no new group epoch"
    );
    let r = h.hb(&beat("d", d.epoch, &d.owned));
    d.apply(&r);
    assert_eq!(
        h.hb(&ConsumerGroupHeartbeatRequest {
            instance_id: Some("i1".into()),
            ..beat("s1", s.epoch, &s.owned)
        })
        .error_code,
        82
    );
}

#[test]
fn the_range_assignor_is_used_when_members_ask_for_it() {
    let mut h = H::new(GroupConfig::default());
    let ranged = |id: &str| ConsumerGroupHeartbeatRequest {
        server_assignor: Some("range".into()),
        ..join(id, &["t"])
    };
    let mut clients = Vec::new();
    for id in ["a", "b", "c", "d"] {
        let r = h.hb(&ranged(id));
        let mut c = Client {
            id: id.into(),
            epoch: 0,
            owned: Owned::new(),
        };
        c.apply(&r);
        clients.push(c);
    }
    for _ in 0..4 {
        round(&mut h, &mut clients);
    }
    let parts: Vec<Vec<i32>> = clients
        .iter()
        .map(|c| {
            c.owned
                .get(&tid(T))
                .map(|s| s.iter().copied().collect())
                .unwrap_or_default()
        })
        .collect();
    assert_eq!(parts, vec![vec![0, 1], vec![2, 3], vec![4], vec![5]]);
    assert_eq!(
        h.shard.describe_consumer_group(GROUP).assignor_name,
        "range"
    );
}

#[test]
fn new_partitions_and_subscription_changes_rebalance() {
    let mut h = H::new(GroupConfig::default());
    let mut clients = vec![
        join_client(&mut h, "a", &["t"]),
        join_client(&mut h, "b", &["t", "u"]),
    ];
    for _ in 0..3 {
        round(&mut h, &mut clients);
    }
    assert_eq!(total(&clients), 9);
    h.shard.set_topics(topics(8, 3));
    for _ in 0..3 {
        round(&mut h, &mut clients);
    }
    assert_eq!(
        total(&clients),
        11,
        "the two new partitions of t are assigned"
    );
    assert!(
        !clients[0].owned.contains_key(&tid(U)),
        "a is not subscribed to u"
    );
    assert_disjoint(&clients);
}

#[test]
fn offsets_are_fenced_by_member_epoch() {
    let mut h = H::new(GroupConfig::default());
    let a = join_client(&mut h, "a", &["t"]);
    let commit = |h: &mut H, version: i16, member: &str, epoch: i32| -> i16 {
        let ctx = h.ctx(version);
        let req = OffsetCommitRequest {
            group_id: GROUP.into(),
            generation_id_or_member_epoch: epoch,
            member_id: member.into(),
            topics: vec![OffsetCommitRequestTopic {
                name: "t".into(),
                partitions: vec![OffsetCommitRequestPartition {
                    partition_index: 0,
                    committed_offset: 5,
                    ..Default::default()
                }],
            }],
            ..Default::default()
        };
        let e = h.shard.handle_offset_commit(&ctx, &req, h.now);
        h.log.extend(e.records.iter().cloned());
        match e.response(ctx.token) {
            Some(Response::OffsetCommit(r)) => r.topics[0].partitions[0].error_code,
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(commit(&mut h, 9, "a", a.epoch), 0);
    assert_eq!(
        commit(&mut h, 9, "a", a.epoch - 1),
        113,
        "STALE_MEMBER_EPOCH"
    );
    assert_eq!(
        commit(&mut h, 8, "a", a.epoch),
        35,
        "KIP-848 members need v9"
    );
    assert_eq!(commit(&mut h, 9, "z", a.epoch), 25);
    assert_eq!(
        commit(&mut h, 9, "", -1),
        25,
        "simple commits only to empty groups"
    );
    let f = h.shard.fetch_offsets(GROUP, Some(("a", a.epoch - 1)), None);
    assert_eq!(f.error_code, 113);
    let f = h.shard.fetch_offsets(GROUP, Some(("a", a.epoch)), None);
    assert_eq!(f.topics[0].partitions[0].committed_offset, 5);
}

#[test]
fn describe_list_delete_and_replay() {
    let mut h = H::new(GroupConfig::default());
    let mut clients = vec![
        join_client(&mut h, "a", &["t"]),
        join_client(&mut h, "b", &["t", "u"]),
    ];
    for _ in 0..3 {
        round(&mut h, &mut clients);
    }
    let d = h.shard.describe_consumer_group(GROUP);
    assert_eq!(
        (
            d.error_code,
            d.group_state.as_str(),
            d.assignor_name.as_str()
        ),
        (0, "Stable", "uniform")
    );
    assert_eq!(d.members.len(), 2);
    assert!(
        d.members
            .iter()
            .all(|m| m.assignment == m.target_assignment)
    );
    assert!(
        d.members[0]
            .assignment
            .topic_partitions
            .iter()
            .all(|tp| tp.topic_name == "t")
    );
    assert_eq!(h.shard.describe_consumer_group("nope").error_code, 69);
    let listed = h.shard.list_groups(&ListGroupsRequest {
        types_filter: vec!["consumer".into()],
        ..Default::default()
    });
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (
            listed[0].group_type.as_str(),
            listed[0].protocol_type.as_str()
        ),
        ("consumer", "consumer")
    );

    // A restart rebuilds the same group; members carry on with their epochs.
    h.restart();
    let d2 = h.shard.describe_consumer_group(GROUP);
    assert_eq!(d, d2);
    round(&mut h, &mut clients);
    assert_disjoint(&clients);

    // DeleteGroups refuses while members exist; after they leave, it deletes everything.
    let delete = |h: &mut H| {
        let ctx = h.ctx(2);
        let e = h
            .shard
            .handle_delete_groups(&ctx, &[GROUP.to_string()], h.now);
        h.log.extend(e.records.iter().cloned());
        match e.response(ctx.token) {
            Some(Response::DeleteGroups(r)) => r.results[0].error_code,
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(delete(&mut h), 68);
    for c in &clients {
        let r = h.hb(&ConsumerGroupHeartbeatRequest {
            member_epoch: -1,
            ..beat(&c.id, c.epoch, &c.owned)
        });
        assert_eq!(r.error_code, 0);
    }
    assert_eq!(state(&h), "Empty");
    assert_eq!(delete(&mut h), 0);
    assert!(h.shard.group_summary(GROUP).is_none());
    h.restart();
    assert!(
        h.shard.group_summary(GROUP).is_none(),
        "the tombstones are durable"
    );
}

#[test]
fn a_classic_join_takes_over_an_empty_consumer_group() {
    let mut h = H::new(GroupConfig::default());
    let a = join_client(&mut h, "a", &["t"]);
    h.hb(&ConsumerGroupHeartbeatRequest {
        member_epoch: -1,
        ..beat(&a.id, a.epoch, &a.owned)
    });
    let ctx = h.ctx(3);
    let req = skiff_protocol::JoinGroupRequest {
        group_id: GROUP.into(),
        ..common::join_req("", None, common::range_protocol(&["t"]))
    };
    let e = h.shard.handle_join(&ctx, &req, h.now);
    h.log.extend(e.records.iter().cloned());
    assert_eq!(h.shard.group_summary(GROUP).unwrap().group_type, "classic");
    h.restart();
    assert_eq!(h.shard.group_summary(GROUP).unwrap().group_type, "classic");
}

#[test]
fn group_configs_set_the_session_timeout_and_heartbeat_interval_of_one_group() {
    let mut h = H::new(GroupConfig::default());
    let a = join_client(&mut h, "a", &["t"]);
    let r = h.hb(&beat(&a.id, a.epoch, &a.owned));
    assert_eq!(r.heartbeat_interval_ms, 5_000, "the broker's default");
    // The group gets its own configs (another group's are no business of this one).
    h.shard.set_group_overrides([
        (
            GROUP.to_string(),
            GroupOverrides {
                consumer_session_timeout_ms: Some(50_000),
                consumer_heartbeat_interval_ms: Some(6_000),
            },
        ),
        (
            "other".to_string(),
            GroupOverrides {
                consumer_session_timeout_ms: Some(46_000),
                consumer_heartbeat_interval_ms: Some(7_000),
            },
        ),
    ]);
    let r = h.hb(&beat(&a.id, a.epoch, &a.owned));
    assert_eq!(r.heartbeat_interval_ms, 6_000);
    // The session armed by that heartbeat is 50 s, not 45 s.
    h.advance(47_000);
    assert_eq!(
        h.shard.group_summary(GROUP).unwrap().members,
        vec!["a".to_string()],
        "still a member after 47 s"
    );
    h.advance(3_001);
    assert!(
        h.shard
            .group_summary(GROUP)
            .is_none_or(|g| g.members.is_empty()),
        "fenced after 50 s"
    );
    // Removing the configs brings the broker's values back.
    h.shard.set_group_overrides([]);
    let b = join_client(&mut h, "b", &["t"]);
    let r = h.hb(&beat(&b.id, b.epoch, &b.owned));
    assert_eq!(r.heartbeat_interval_ms, 5_000);
}

#[test]
fn regex_subscriptions_follow_topic_creation_and_deletion() {
    let mut h = H::new(GroupConfig::default());
    // A bad regex is refused with INVALID_REGULAR_EXPRESSION and creates nothing.
    let r = h.hb(&ConsumerGroupHeartbeatRequest {
        subscribed_topic_names: None,
        subscribed_topic_regex: Some("[a-".into()),
        ..join("a", &[])
    });
    assert_eq!(r.error_code, 128, "{r:?}");
    assert!(h.shard.group_summary(GROUP).is_none());
    // Neither names nor a regex on a join: Kafka's message.
    let r = h.hb(&ConsumerGroupHeartbeatRequest {
        subscribed_topic_names: None,
        ..join("a", &[])
    });
    assert_eq!(r.error_code, 42);
    assert_eq!(
        r.error_message.as_deref(),
        Some(
            "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."
        )
    );
    // "t|u.*" matches whole names: t (6 partitions) and u (3), not "xt".
    h.shard.set_topics({
        let mut ts = topics(6, 3);
        ts.push(skiff_group::TopicInfo {
            topic_id: tid(7),
            name: "xt".into(),
            partitions: 2,
        });
        ts
    });
    let r = h.hb(&ConsumerGroupHeartbeatRequest {
        subscribed_topic_names: None,
        subscribed_topic_regex: Some("t|u.*".into()),
        ..join("a", &[])
    });
    let mut a = Client {
        id: "a".into(),
        epoch: 0,
        owned: Default::default(),
    };
    a.apply(&r);
    let sizes = |c: &Client| {
        c.owned
            .iter()
            .map(|(id, ps)| (*id, ps.len()))
            .collect::<std::collections::BTreeMap<_, _>>()
    };
    assert_eq!(
        sizes(&a),
        [(tid(T), 6), (tid(U), 3)].into_iter().collect(),
        "{a:?}"
    );
    let described = h.shard.describe_consumer_group(GROUP);
    assert_eq!(
        described.members[0].subscribed_topic_regex.as_deref(),
        Some("t|u.*")
    );
    // A new topic the regex matches is picked up on the next heartbeat (group epoch bump).
    let epoch = h.shard.group_summary(GROUP).unwrap().generation;
    h.shard.set_topics({
        let mut ts = topics(6, 3);
        ts.push(skiff_group::TopicInfo {
            topic_id: tid(9),
            name: "u2".into(),
            partitions: 4,
        });
        ts
    });
    for _ in 0..2 {
        round(&mut h, std::slice::from_mut(&mut a));
    }
    assert!(h.shard.group_summary(GROUP).unwrap().generation > epoch);
    assert_eq!(
        sizes(&a),
        [(tid(T), 6), (tid(U), 3), (tid(9), 4)]
            .into_iter()
            .collect()
    );
    // The deleted topic's partitions go away again; the regex survives a reload.
    h.shard.set_topics(topics(6, 3));
    for _ in 0..3 {
        round(&mut h, std::slice::from_mut(&mut a));
    }
    assert_eq!(sizes(&a), [(tid(T), 6), (tid(U), 3)].into_iter().collect());
    h.restart();
    let described = h.shard.describe_consumer_group(GROUP);
    assert_eq!(
        described.members[0].subscribed_topic_regex.as_deref(),
        Some("t|u.*")
    );
    let r = h.hb(&beat(&a.id, a.epoch, &a.owned));
    assert_eq!(r.error_code, 0, "{r:?}");
}

#[test]
fn an_empty_regex_clears_a_regex_subscription() {
    let mut h = H::new(GroupConfig::default());
    let r = h.hb(&ConsumerGroupHeartbeatRequest {
        subscribed_topic_names: Some(Vec::new()),
        subscribed_topic_regex: Some("u".into()),
        ..join("a", &[])
    });
    let mut a = Client {
        id: "a".into(),
        epoch: 0,
        owned: Default::default(),
    };
    a.apply(&r);
    assert_eq!(a.owned.keys().copied().collect::<Vec<_>>(), vec![tid(U)]);
    // librdkafka sends "" when it has no regex: names only from now on.
    let r = h.hb(&ConsumerGroupHeartbeatRequest {
        subscribed_topic_names: Some(vec!["t".into()]),
        subscribed_topic_regex: Some(String::new()),
        ..beat(&a.id, a.epoch, &a.owned)
    });
    a.apply(&r);
    for _ in 0..3 {
        round(&mut h, std::slice::from_mut(&mut a));
    }
    assert_eq!(a.owned.keys().copied().collect::<Vec<_>>(), vec![tid(T)]);
    let d = h.shard.describe_consumer_group(GROUP);
    assert_eq!(d.members[0].subscribed_topic_regex, None);
}
