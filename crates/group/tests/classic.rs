//! Classic protocol tables: JoinGroup, SyncGroup, Heartbeat, LeaveGroup in each group state.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use skiff_group::{GroupConfig, Response};
use skiff_protocol::JoinGroupRequest;

const DELAY: i32 = 100;

#[test]
fn join_v4_plus_requires_member_id_then_parks_until_the_initial_delay() {
    let mut h = Harness::new(config(DELAY));
    let t = h.join(5, "", None, &["t"]);
    let r = h.join_response(t).unwrap();
    assert_eq!(r.error_code, 79, "MEMBER_ID_REQUIRED");
    assert!(r.member_id.starts_with("client-"), "{}", r.member_id);
    assert_eq!(
        h.state(),
        "Empty",
        "a pending member does not start a rebalance"
    );
    // The new group is made durable right away (empty GroupMetadata record).
    assert_eq!(h.log.len(), 1);

    let t2 = h.join(5, &r.member_id, None, &["t"]);
    assert!(
        h.join_response(t2).is_none(),
        "parked during the initial delay"
    );
    assert_eq!(h.state(), "PreparingRebalance");
    assert_eq!(h.last_deadline, Some(h.now + i64::from(DELAY)));
    h.advance(i64::from(DELAY) - 1);
    assert!(h.join_response(t2).is_none());
    h.advance(1);
    let r2 = h.join_response(t2).unwrap();
    assert_eq!((r2.error_code, r2.generation_id), (0, 1));
    assert_eq!(r2.leader, r.member_id);
    assert_eq!(r2.members.len(), 1, "the leader gets the member list");
    assert_eq!(r2.protocol_name.as_deref(), Some("range"));
    assert_eq!(h.state(), "CompletingRebalance");
}

#[test]
fn join_v0_to_v3_adds_unknown_members_directly() {
    for version in 0..=3 {
        let mut h = Harness::new(config(0));
        let t = h.join(version, "", None, &["t"]);
        let r = h
            .join_response(t)
            .expect("delay 0 completes within the call");
        assert_eq!((r.error_code, r.generation_id), (0, 1), "v{version}");
        assert!(r.member_id.starts_with("client-"));
        assert_eq!(r.protocol_name.as_deref(), Some("range"));
    }
}

#[test]
fn join_validation_table() {
    let cfg = GroupConfig {
        session_timeout_ms_min: 6000,
        ..config(0)
    };
    // (session timeout, group id, member id, expected error)
    let cases: &[(i32, &str, &str, i16)] = &[
        (5999, "g", "", 26),
        (1_800_001, "g", "", 26),
        (6000, "", "", 24),
        (6000, "g", "someone", 25),
    ];
    for (session, group, member, want) in cases {
        let mut h = Harness::new(cfg.clone());
        let req = JoinGroupRequest {
            group_id: group.to_string(),
            session_timeout_ms: *session,
            ..join_req(member, None, range_protocol(&["t"]))
        };
        let t = h.join_with(5, &req);
        let r = h.join_response(t).unwrap();
        assert_eq!(r.error_code, *want, "{session} {group:?} {member:?}");
        assert_eq!(
            r.protocol_name.as_deref(),
            Some(""),
            "v5 cannot carry a null protocol name"
        );
    }
    // The minimum session timeout may be lowered to 1 s for clients that need it.
    let mut h = Harness::new(config(0));
    let req = JoinGroupRequest {
        session_timeout_ms: 1000,
        ..join_req("", None, range_protocol(&["t"]))
    };
    let t = h.join_with(3, &req);
    assert_eq!(h.join_response(t).unwrap().error_code, 0);
}

#[test]
fn inconsistent_protocols_are_refused() {
    let mut h = Harness::new(config(DELAY));
    let (_a, _) = h.join_new(&["t"]);
    // Different protocol type.
    let req = JoinGroupRequest {
        protocol_type: "connect".into(),
        ..join_req("", None, range_protocol(&["t"]))
    };
    let t = h.join_with(5, &req);
    assert_eq!(h.join_response(t).unwrap().error_code, 23);
    // No protocol in common.
    let t = h.join_with(
        5,
        &join_req("", None, protocols(&[("roundrobin", subscription(&["t"]))])),
    );
    assert_eq!(h.join_response(t).unwrap().error_code, 23);
}

#[test]
fn protocol_with_most_votes_among_common_ones_wins() {
    let mut h = Harness::new(config(DELAY));
    let both_range_first = protocols(&[
        ("range", subscription(&["t"])),
        ("roundrobin", subscription(&["t"])),
    ]);
    let both_rr_first = protocols(&[
        ("roundrobin", subscription(&["t"])),
        ("range", subscription(&["t"])),
    ]);
    let mut tokens = Vec::new();
    for p in [both_rr_first.clone(), both_rr_first, both_range_first] {
        let t = h.join_with(5, &join_req("", None, p.clone()));
        let id = h.join_response(t).unwrap().member_id;
        tokens.push(h.join_with(5, &join_req(&id, None, p)));
    }
    for _ in 0..5 {
        h.advance(i64::from(DELAY));
    }
    for t in tokens {
        let r = h.join_response(t).unwrap();
        assert_eq!(r.protocol_name.as_deref(), Some("roundrobin"));
    }
}

#[test]
fn group_max_size_refuses_extra_members() {
    let mut h = Harness::new(GroupConfig {
        group_size_max: 2,
        ..config(DELAY)
    });
    let (_a, _) = h.join_new(&["t"]);
    let (_b, _) = h.join_new(&["t"]);
    let t = h.join(5, "", None, &["t"]);
    let id = h.join_response(t).unwrap().member_id;
    let t = h.join(5, &id, None, &["t"]);
    assert_eq!(
        h.join_response(t).unwrap().error_code,
        81,
        "GROUP_MAX_SIZE_REACHED"
    );
}

#[test]
fn sync_distributes_the_leaders_assignment_and_persists_it() {
    let mut h = Harness::new(config(DELAY));
    let (ids, leader, generation) = h.stable_group(3, &["t"]);
    assert_eq!(generation, 1);
    // The last record is the group with its assignment.
    let (key, value) = h.log.last().unwrap().clone();
    assert_eq!(&key[..2], &[0, 2], "GroupMetadataKey");
    assert!(value.is_some());
    // Sync in Stable returns the member's current assignment.
    let follower = ids.iter().find(|i| **i != leader).unwrap().clone();
    let t = h.sync(generation, &follower, None, &[]);
    let r = h.sync_response(t).unwrap();
    let idx = ids.iter().position(|i| *i == follower).unwrap() as i32;
    assert_eq!(
        decode_assignment(&r.assignment),
        vec![("t".to_string(), idx)]
    );
    assert_eq!(r.protocol_name.as_deref(), Some("range"));
}

#[test]
fn follower_sync_waits_for_the_leader() {
    let mut h = Harness::new(config(DELAY));
    let (a, ta) = h.join_new(&["t"]);
    let (b, tb) = h.join_new(&["t"]);
    h.advance(i64::from(DELAY) * 2);
    let ra = h.join_response(ta).unwrap();
    let rb = h.join_response(tb).unwrap();
    let (leader, follower) = if ra.leader == a { (a, b) } else { (b, a) };
    assert_eq!(ra.leader, rb.leader);
    let tf = h.sync(1, &follower, None, &[]);
    assert!(
        h.sync_response(tf).is_none(),
        "parked until the leader syncs"
    );
    let tl = h.sync(
        1,
        &leader,
        None,
        &[(&follower, assignment(&[("t", &[0, 1])]))],
    );
    let rf = h.sync_response(tf).unwrap();
    let rl = h.sync_response(tl).unwrap();
    assert_eq!(decode_assignment(&rf.assignment).len(), 2);
    assert!(
        rl.assignment.is_empty(),
        "a member missing from the assignment gets an empty one"
    );
    assert_eq!(h.state(), "Stable");
}

#[test]
fn sync_error_table() {
    let mut h = Harness::new(config(DELAY));
    let (ids, _leader, generation) = h.stable_group(2, &["t"]);
    // (generation, member, expected)
    let cases: Vec<(i32, String, i16)> = vec![
        (generation + 1, ids[0].clone(), 22),
        (generation, "nobody".into(), 25),
        (generation, ids[0].clone(), 0),
    ];
    for (gen_, member, want) in cases {
        let t = h.sync(gen_, &member, None, &[]);
        assert_eq!(
            h.sync_response(t).unwrap().error_code,
            want,
            "{gen_} {member}"
        );
    }
    // While preparing a rebalance, SyncGroup says REBALANCE_IN_PROGRESS.
    let (_c, _) = h.join_new(&["t"]);
    assert_eq!(h.state(), "PreparingRebalance");
    let t = h.sync(generation, &ids[0], None, &[]);
    assert_eq!(h.sync_response(t).unwrap().error_code, 27);
}

#[test]
fn heartbeat_table_by_state() {
    let mut h = Harness::new(config(DELAY));
    assert_eq!(h.heartbeat(0, "x", None), 25, "no group");
    let (ids, _leader, generation) = h.stable_group(2, &["t"]);
    assert_eq!(h.heartbeat(generation, &ids[0], None), 0, "Stable");
    assert_eq!(
        h.heartbeat(generation - 1, &ids[0], None),
        22,
        "old generation"
    );
    assert_eq!(
        h.heartbeat(generation, "stranger", None),
        25,
        "unknown member"
    );
    let (_c, _) = h.join_new(&["t"]);
    assert_eq!(h.state(), "PreparingRebalance");
    assert_eq!(
        h.heartbeat(generation, &ids[0], None),
        27,
        "PreparingRebalance"
    );
}

#[test]
fn a_silent_member_is_removed_after_its_session_and_the_rest_rebalance() {
    let mut h = Harness::new(config(DELAY));
    let (ids, _leader, generation) = h.stable_group(2, &["t"]);
    let (alive, silent) = (ids[0].clone(), ids[1].clone());
    for _ in 0..3 {
        h.advance(i64::from(SESSION_MS) / 4);
        assert_eq!(h.heartbeat(generation, &alive, None), 0);
    }
    h.advance(i64::from(SESSION_MS) / 4);
    // The silent member's session (10 s since its sync) is over: the group rebalances.
    assert_eq!(h.state(), "PreparingRebalance");
    assert_eq!(h.heartbeat(generation, &silent, None), 25);
    assert_eq!(h.heartbeat(generation, &alive, None), 27);
    let t = h.join(5, &alive, None, &["t"]);
    let r = h
        .join_response(t)
        .expect("the only member rejoined: join completes");
    assert_eq!((r.generation_id, r.members.len()), (generation + 1, 1));
    assert_eq!(r.leader, alive);
}

#[test]
fn leader_rejoin_in_stable_forces_a_rebalance_follower_rejoin_does_not() {
    let mut h = Harness::new(config(DELAY));
    let (ids, leader, generation) = h.stable_group(2, &["t"]);
    let follower = ids.iter().find(|i| **i != leader).unwrap().clone();
    let t = h.join(5, &follower, None, &["t"]);
    let r = h.join_response(t).unwrap();
    assert_eq!((r.error_code, r.generation_id), (0, generation));
    assert_eq!(h.state(), "Stable");
    let t = h.join(5, &leader, None, &["t"]);
    assert!(h.join_response(t).is_none());
    assert_eq!(h.state(), "PreparingRebalance");
    // A follower whose subscription changed also forces one.
    let mut h = Harness::new(config(DELAY));
    let (ids, leader, _) = h.stable_group(2, &["t"]);
    let follower = ids.iter().find(|i| **i != leader).unwrap().clone();
    let _ = h.join(5, &follower, None, &["t", "u"]);
    assert_eq!(h.state(), "PreparingRebalance");
}

#[test]
fn pending_sync_expiry_removes_members_that_never_sync() {
    let mut h = Harness::new(config(DELAY));
    let (a, ta) = h.join_new(&["t"]);
    let (b, tb) = h.join_new(&["t"]);
    h.advance(i64::from(DELAY) * 2);
    let leader = h.join_response(ta).unwrap().leader;
    h.join_response(tb).unwrap();
    let follower = if leader == a { b } else { a };
    // Only the follower syncs; the leader never does: after the rebalance timeout the leader
    // is removed and the parked follower is told to rejoin.
    let tf = h.sync(1, &follower, None, &[]);
    h.advance(i64::from(REBALANCE_MS));
    assert_eq!(h.sync_response(tf).unwrap().error_code, 27);
    assert!(
        !h.shard
            .group_summary(GROUP)
            .unwrap()
            .members
            .contains(&leader)
    );
}

#[test]
fn leave_group_versions_and_batches() {
    let mut h = Harness::new(config(DELAY));
    let (ids, _, _) = h.stable_group(3, &["t"]);
    // v3+ batch: one known, one unknown member.
    let r = h.leave(3, &[(&ids[0], None), ("nobody", None)]);
    assert_eq!(r.error_code, 0);
    let codes: Vec<i16> = r.members.iter().map(|m| m.error_code).collect();
    assert_eq!(codes, vec![0, 25]);
    assert_eq!(h.state(), "PreparingRebalance");
    // v0-2: single member, top-level error.
    let r = h.leave(1, &[("nobody", None)]);
    assert_eq!((r.error_code, r.members.len()), (25, 0));
    let r = h.leave(1, &[(&ids[1], None)]);
    assert_eq!(r.error_code, 0);
    let r = h.leave(5, &[(&ids[2], None)]);
    assert_eq!(r.members[0].error_code, 0);
    // Everyone left: the join phase completes into an Empty group with a new generation.
    assert_eq!(h.state(), "Empty");
    assert_eq!(h.generation(), 2);
}

#[test]
fn leaving_during_a_rebalance_answers_the_parked_join() {
    let mut h = Harness::new(config(DELAY));
    let (a, ta) = h.join_new(&["t"]);
    let r = h.leave(3, &[(&a, None)]);
    assert_eq!(r.members[0].error_code, 0);
    assert_eq!(h.join_response(ta).unwrap().error_code, 25);
}

#[test]
fn static_member_restart_replaces_its_id_without_a_rebalance() {
    let mut h = Harness::new(config(DELAY));
    let t = h.join(5, "", Some("i1"), &["t"]);
    assert!(
        h.join_response(t).is_none(),
        "static members get no MEMBER_ID_REQUIRED"
    );
    h.advance(i64::from(DELAY));
    let first = h.join_response(t).unwrap();
    assert!(first.member_id.starts_with("i1-"));
    let old = first.member_id.clone();
    let ts = h.sync(1, &old, Some("i1"), &[(&old, assignment(&[("t", &[0])]))]);
    assert_eq!(h.sync_response(ts).unwrap().error_code, 0);
    let records_before = h.log.len();

    // The process restarts: same instance id, unknown member id, same subscription.
    let t = h.join(5, "", Some("i1"), &["t"]);
    let r = h.join_response(t).expect("answered at once");
    assert_eq!((r.error_code, r.generation_id), (0, 1), "no new generation");
    assert_ne!(r.member_id, old);
    assert_eq!(r.leader, old, "pre-v9 clients are told the old leader id");
    assert_eq!(h.state(), "Stable");
    assert_eq!(
        h.log.len(),
        records_before + 1,
        "the new member id is persisted"
    );
    // The old incarnation is fenced; the new one keeps the assignment.
    assert_eq!(h.heartbeat(1, &old, Some("i1")), 82);
    assert_eq!(h.heartbeat(1, &r.member_id, Some("i1")), 0);
    let ts = h.sync(1, &r.member_id, Some("i1"), &[]);
    assert_eq!(
        decode_assignment(&h.sync_response(ts).unwrap().assignment),
        vec![("t".into(), 0)]
    );
}

#[test]
fn static_leader_restart_on_v9_skips_assignment() {
    let mut h = Harness::new(config(DELAY));
    let t = h.join(9, "", Some("i1"), &["t"]);
    h.advance(i64::from(DELAY));
    let old = h.join_response(t).unwrap().member_id;
    let ts = h.sync(1, &old, Some("i1"), &[(&old, assignment(&[("t", &[0])]))]);
    h.sync_response(ts).unwrap();
    let t = h.join(9, "", Some("i1"), &["t"]);
    let r = h.join_response(t).unwrap();
    assert!(r.skip_assignment);
    assert_eq!(r.leader, r.member_id);
    assert_eq!(r.members.len(), 1);
}

#[test]
fn static_member_with_new_protocol_triggers_a_rebalance() {
    let mut h = Harness::new(config(DELAY));
    let t = h.join(5, "", Some("i1"), &["t"]);
    h.advance(i64::from(DELAY));
    let old = h.join_response(t).unwrap().member_id;
    let ts = h.sync(1, &old, Some("i1"), &[]);
    h.sync_response(ts).unwrap();
    // Still supporting "range" (else INCONSISTENT_GROUP_PROTOCOL) but now preferring another.
    let both = protocols(&[
        ("roundrobin", subscription(&["t"])),
        ("range", subscription(&["t"])),
    ]);
    let req = join_req("", Some("i1"), both);
    let t = h.join_with(5, &req);
    let r = h
        .join_response(t)
        .expect("sole member: rebalance completes at once");
    assert_eq!((r.error_code, r.generation_id), (0, 2));
    assert_eq!(r.protocol_name.as_deref(), Some("roundrobin"));
}

#[test]
fn static_member_survives_rebalances_it_misses_until_its_session_ends() {
    let mut h = Harness::new(config(DELAY));
    let ts = h.join(5, "", Some("s"), &["t"]);
    let (d, td) = h.join_new(&["t"]);
    // d's arrival extends the initial delay once: the join completes after 2 delays, and s's
    // session runs from then.
    h.advance(2 * i64::from(DELAY));
    let s = h.join_response(ts).unwrap().member_id;
    h.join_response(td).unwrap();
    // d rejoins (a rebalance); the static member is silent: it stays a member until its
    // session ends, then the join completes without it.
    let t = h.join(5, &d, None, &["t", "u"]);
    assert_eq!(h.state(), "PreparingRebalance");
    h.advance(i64::from(SESSION_MS) - 1);
    assert!(h.join_response(t).is_none());
    assert!(h.shard.group_summary(GROUP).unwrap().members.contains(&s));
    h.advance(1);
    let r = h.join_response(t).unwrap();
    assert_eq!((r.members.len(), r.generation_id), (1, 2));
}

#[test]
fn responses_fit_old_versions() {
    let mut h = Harness::new(config(DELAY));
    let t = h.join(6, "", None, &["t"]);
    let r = h.join_response(t).unwrap();
    assert_eq!(r.protocol_name.as_deref(), Some(""));
    let t = h.join(7, "", None, &["t"]);
    let r = h.join_response(t).unwrap();
    assert_eq!(r.protocol_name, None, "v7+ may be null");
    // Every response encodes at its version.
    let ctx = h.ctx(0);
    let e = h
        .shard
        .handle_join(&ctx, &join_req("x", None, range_protocol(&["t"])), h.now);
    match e.response(ctx.token).unwrap() {
        Response::JoinGroup(r) => {
            use skiff_protocol::Codec;
            r.to_bytes(0).expect("encodes at v0");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_pending_member_that_never_rejoins_expires_after_its_session() {
    let mut h = Harness::new(config(DELAY));
    let (ids, leader, generation) = h.stable_group(2, &["t"]);
    // A new client is handed a member id but never comes back with it.
    let t = h.join(5, "", None, &["t"]);
    assert_eq!(h.join_response(t).unwrap().error_code, 79);
    // The leader rejoins: the join phase waits for everyone, the pending member included...
    let follower = ids.iter().find(|i| **i != leader).unwrap().clone();
    let tl = h.join(5, &leader, None, &["t"]);
    let tf = h.join(5, &follower, None, &["t"]);
    h.advance(i64::from(SESSION_MS) - 1);
    assert!(h.join_response(tl).is_none());
    // ...until its session timeout (not the 30 s rebalance timeout) drops it.
    h.advance(1);
    let r = h.join_response(tl).unwrap();
    assert_eq!(
        (r.error_code, r.generation_id, r.members.len()),
        (0, generation + 1, 2)
    );
    assert_eq!(h.join_response(tf).unwrap().error_code, 0);
}

#[test]
fn cooperative_clients_just_rejoin() {
    // Cooperative-sticky members rejoin right after a sync with their owned partitions in the
    // subscription; the coordinator treats it as any metadata change.
    let mut h = Harness::new(config(DELAY));
    let coop = |topics: &[&str]| protocols(&[("cooperative-sticky", subscription(topics))]);
    let t = h.join_with(5, &join_req("", None, coop(&["t"])));
    let id = h.join_response(t).unwrap().member_id;
    let t = h.join_with(5, &join_req(&id, None, coop(&["t"])));
    h.advance(i64::from(DELAY));
    let r = h.join_response(t).unwrap();
    assert_eq!(r.protocol_name.as_deref(), Some("cooperative-sticky"));
    // SyncGroup v5 names the protocol: "range" would be inconsistent.
    let ts = h.sync(r.generation_id, &id, None, &[]);
    assert_eq!(h.sync_response(ts).unwrap().error_code, 23);
    let ctx = h.ctx(3);
    let req = skiff_protocol::SyncGroupRequest {
        group_id: GROUP.into(),
        generation_id: r.generation_id,
        member_id: id.clone(),
        assignments: vec![skiff_protocol::SyncGroupRequestAssignment {
            member_id: id.clone(),
            assignment: assignment(&[("t", &[0, 1])]),
        }],
        ..Default::default()
    };
    let e = h.shard.handle_sync(&ctx, &req, h.now);
    h.absorb(e);
    assert_eq!(h.sync_response(ctx.token).unwrap().error_code, 0);
    let t = h.join_with(5, &join_req(&id, None, coop(&["t", "u"])));
    let r2 = h.join_response(t).expect("sole member: completes at once");
    assert_eq!(r2.generation_id, r.generation_id + 1);
}
