//! Transactional offsets (TxnOffsetCommit, KIP-98): pending until the marker, commit / abort,
//! precedence against plain commits, OffsetFetch `require_stable`, validation, and replay of
//! transactional batches + markers into the same state as the live path.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use bytes::Bytes;
use common::*;
use skiff_group::{GroupCoordinatorShard, Response};
use skiff_protocol::{
    OffsetDeleteRequest, OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
    OffsetFetchRequestTopics, OffsetFetchResponseGroup, TxnOffsetCommitRequest,
    TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic, TxnOffsetCommitResponse,
};
use skiff_types::ErrorCode;

const DELAY: i32 = 100;
const UNSTABLE: i16 = 88;

/// One entry of the partition's log as the runtime writes it.
#[derive(Clone, Debug)]
enum Entry {
    Plain(Bytes, Option<Bytes>),
    Txn(i64, Bytes, Option<Bytes>),
    Marker(i64, bool),
}

/// The group harness plus a log that knows which records were transactional and where the
/// markers are.
struct T {
    h: Harness,
    seen: usize,
    log: Vec<Entry>,
}

impl T {
    fn new() -> Self {
        Self {
            h: Harness::new(config(DELAY)),
            seen: 0,
            log: Vec::new(),
        }
    }

    /// Moves the harness's records since the last sync into the log as `kind`.
    fn sync(&mut self, txn: Option<i64>) {
        for (k, v) in &self.h.log[self.seen..] {
            self.log.push(match txn {
                None => Entry::Plain(k.clone(), v.clone()),
                Some(pid) => Entry::Txn(pid, k.clone(), v.clone()),
            });
        }
        self.seen = self.h.log.len();
    }

    fn txn_commit_req(
        &mut self,
        version: i16,
        req: &TxnOffsetCommitRequest,
    ) -> TxnOffsetCommitResponse {
        self.sync(None);
        let ctx = self.h.ctx(version);
        let e = self.h.shard.handle_txn_offset_commit(&ctx, req, self.h.now);
        if e.records.is_empty() {
            assert_eq!(e.transactional, None);
        } else {
            assert_eq!(
                e.transactional,
                Some((req.producer_id, req.producer_epoch)),
                "the records form the producer's transactional batch"
            );
        }
        self.h.absorb(e);
        self.sync(Some(req.producer_id));
        match self.h.take(ctx.token) {
            Some(Response::TxnOffsetCommit(r)) => r,
            other => panic!("no TxnOffsetCommit response: {other:?}"),
        }
    }

    /// A simple (generation -1) transactional commit of `pid` for GROUP.
    fn txn(&mut self, pid: i64, offsets: &[(&str, i32, i64)]) -> Vec<i16> {
        let req = txn_req(GROUP, pid, -1, "", None, offsets);
        errors(&self.txn_commit_req(3, &req))
    }

    fn plain(&mut self, offsets: &[(&str, i32, i64, Option<&str>)]) -> Vec<i16> {
        let r = self.h.commit_req(8, GROUP, -1, "", offsets);
        self.sync(None);
        Harness::commit_errors(&r)
    }

    fn marker(&mut self, pid: i64, commit: bool) {
        self.sync(None);
        self.log.push(Entry::Marker(pid, commit));
        let e = self.h.shard.complete_transaction(pid, commit, self.h.now);
        assert_eq!(e.transactional, None);
        self.h.absorb(e);
        self.sync(None);
    }

    fn fetch(&self, stable: bool, topic: &str, p: i32) -> (i64, i16) {
        let g = fetch(&self.h.shard, stable, &[(topic, &[p])]);
        let part = &g.topics[0].partitions[0];
        assert_eq!(g.error_code, 0, "errors are per partition");
        (part.committed_offset, part.error_code)
    }

    /// A fresh shard fed this log as the runtime's loader does.
    fn replayed(&mut self) -> GroupCoordinatorShard {
        self.sync(None);
        let mut s = GroupCoordinatorShard::new(self.h.shard.config().clone(), 7);
        for e in &self.log {
            match e {
                Entry::Plain(k, v) => s.replay(k, v.as_ref()).unwrap(),
                Entry::Txn(pid, k, v) => s.replay_transactional(*pid, k, v.as_ref()).unwrap(),
                Entry::Marker(pid, commit) => s.replay_end_transaction(*pid, *commit),
            }
        }
        let _ = s.on_loaded(self.h.now);
        s
    }
}

fn txn_req(
    group: &str,
    pid: i64,
    generation: i32,
    member: &str,
    instance: Option<&str>,
    offsets: &[(&str, i32, i64)],
) -> TxnOffsetCommitRequest {
    TxnOffsetCommitRequest {
        transactional_id: "tx".into(),
        group_id: group.into(),
        producer_id: pid,
        producer_epoch: 3,
        generation_id: generation,
        member_id: member.into(),
        group_instance_id: instance.map(str::to_string),
        topics: offsets
            .iter()
            .map(|(t, p, o)| TxnOffsetCommitRequestTopic {
                name: t.to_string(),
                partitions: vec![TxnOffsetCommitRequestPartition {
                    partition_index: *p,
                    committed_offset: *o,
                    committed_leader_epoch: 2,
                    committed_metadata: Some("m".into()),
                }],
            })
            .collect(),
    }
}

fn errors(r: &TxnOffsetCommitResponse) -> Vec<i16> {
    r.topics
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
        .collect()
}

fn fetch(
    s: &GroupCoordinatorShard,
    stable: bool,
    topics: &[(&str, &[i32])],
) -> OffsetFetchResponseGroup {
    let topics: Vec<OffsetFetchRequestTopics> = topics
        .iter()
        .map(|(t, ps)| OffsetFetchRequestTopics {
            name: t.to_string(),
            partition_indexes: ps.to_vec(),
        })
        .collect();
    s.fetch_offsets_stable(GROUP, None, Some(&topics), stable)
}

/// Every visible answer of a shard for topic t, partitions 0..4, stable and not, plus the
/// pending offsets of producers 1..4.
fn view(s: &GroupCoordinatorShard) -> Vec<String> {
    let mut out = Vec::new();
    for stable in [false, true] {
        out.push(format!("{:?}", fetch(s, stable, &[("t", &[0, 1, 2, 3])])));
    }
    out.push(format!("{:?}", s.fetch_offsets(GROUP, None, None)));
    for pid in 1..4 {
        for p in 0..4 {
            let o = s.pending_transactional_offset(pid, GROUP, "t", p);
            out.push(format!("{pid} {p} {:?}", o.map(|o| o.offset)));
        }
    }
    out.push(format!("{:?}", s.group_ids()));
    out
}

#[test]
fn pending_offsets_are_invisible_until_the_commit_marker() {
    let mut t = T::new();
    assert_eq!(t.txn(1, &[("t", 0, 10)]), vec![0]);
    // Not committed yet: plain OffsetFetch sees nothing, require_stable sees it is pending.
    assert_eq!(t.fetch(false, "t", 0), (-1, 0));
    assert_eq!(t.fetch(true, "t", 0), (-1, UNSTABLE));
    assert_eq!(
        t.fetch(true, "t", 1),
        (-1, 0),
        "other partitions are stable"
    );
    assert_eq!(
        t.h.shard
            .pending_transactional_offset(1, GROUP, "t", 0)
            .map(|o| (o.offset, o.leader_epoch, o.metadata)),
        Some((10, 2, "m".to_string()))
    );
    // The records are plain OffsetCommit records (key version 1), only their batch differs.
    assert!(matches!(&t.log[..], [Entry::Txn(1, k, Some(_))] if k[..2] == [0, 1]));
    t.marker(1, true);
    assert_eq!(t.fetch(false, "t", 0), (10, 0));
    assert_eq!(t.fetch(true, "t", 0), (10, 0));
    assert_eq!(
        t.h.shard.pending_transactional_offset(1, GROUP, "t", 0),
        None
    );
}

#[test]
fn abort_drops_pending_offsets_and_keeps_the_committed_one() {
    let mut t = T::new();
    assert_eq!(t.plain(&[("t", 0, 5, None)]), vec![0]);
    assert_eq!(t.txn(1, &[("t", 0, 10), ("t", 1, 11)]), vec![0, 0]);
    assert_eq!(t.fetch(false, "t", 0), (5, 0));
    t.marker(1, false);
    assert_eq!(t.fetch(true, "t", 0), (5, 0));
    assert_eq!(t.fetch(true, "t", 1), (-1, 0));
    // A second marker (a retried WriteTxnMarkers) changes nothing.
    t.marker(1, true);
    assert_eq!(t.fetch(true, "t", 0), (5, 0));
    assert_eq!(t.fetch(true, "t", 1), (-1, 0));
}

#[test]
fn commit_precedence_follows_log_order_table() {
    // (script, expected committed offset of t-0): T = txn commit of producer 1, P = plain
    // commit, C / A = producer 1's commit / abort marker. A pending offset wins at commit only
    // over an older committed offset (Kafka compares the records' log offsets).
    type Step = (char, i64);
    let cases: Vec<(Vec<Step>, i64)> = vec![
        (vec![('T', 10), ('C', 0)], 10),
        (vec![('P', 5), ('T', 10), ('C', 0)], 10),
        (vec![('T', 10), ('P', 5), ('C', 0)], 5),
        (vec![('T', 10), ('P', 5), ('A', 0)], 5),
        (vec![('T', 10), ('T', 12), ('C', 0)], 12),
        (vec![('P', 5), ('T', 10), ('A', 0), ('T', 11), ('C', 0)], 11),
    ];
    for (script, want) in cases {
        let mut t = T::new();
        for (op, v) in &script {
            match op {
                'T' => assert_eq!(t.txn(1, &[("t", 0, *v)]), vec![0]),
                'P' => assert_eq!(t.plain(&[("t", 0, *v, None)]), vec![0]),
                'C' => t.marker(1, true),
                'A' => t.marker(1, false),
                _ => unreachable!(),
            }
        }
        assert_eq!(t.fetch(true, "t", 0), (want, 0), "{script:?}");
        let replayed = t.replayed();
        assert_eq!(
            fetch(&replayed, true, &[("t", &[0])]).topics[0].partitions[0].committed_offset,
            want,
            "replay of {script:?}"
        );
    }
}

#[test]
fn two_producers_are_independent() {
    let mut t = T::new();
    t.txn(1, &[("t", 0, 10)]);
    t.txn(2, &[("t", 1, 20)]);
    t.marker(2, true);
    assert_eq!(t.fetch(true, "t", 1), (20, 0));
    assert_eq!(
        t.fetch(true, "t", 0),
        (-1, UNSTABLE),
        "producer 1 still open"
    );
    t.marker(1, false);
    assert_eq!(t.fetch(true, "t", 0), (-1, 0));
}

#[test]
fn replay_of_transactional_batches_and_markers_equals_the_live_shard() {
    let mut t = T::new();
    t.plain(&[("t", 0, 1, None), ("t", 3, 3, None)]);
    t.txn(1, &[("t", 0, 10), ("t", 1, 11)]);
    t.txn(2, &[("t", 2, 22)]);
    t.txn(3, &[("t", 3, 33)]);
    t.plain(&[("t", 1, 5, None)]);
    t.marker(1, true); // t-0 -> 10; t-1 keeps 5 (newer than producer 1's 11)
    t.marker(3, false);
    t.txn(1, &[("t", 2, 12)]); // producer 1's next transaction, still open
    // OffsetDelete of a partition with only a pending offset: a tombstone drops it.
    let ctx = t.h.ctx(0);
    let req = OffsetDeleteRequest {
        group_id: GROUP.into(),
        topics: vec![OffsetDeleteRequestTopic {
            name: "t".into(),
            partitions: vec![OffsetDeleteRequestPartition { partition_index: 2 }],
        }],
    };
    let e = t.h.shard.handle_offset_delete(&ctx, &req, t.h.now);
    assert_eq!(e.records.len(), 1, "one tombstone for the pending-only key");
    t.h.absorb(e);
    t.sync(None);
    assert_eq!(
        t.fetch(true, "t", 2),
        (-1, 0),
        "both producers' pending t-2 dropped"
    );
    t.txn(2, &[("t", 3, 23)]);
    let live = view(&t.h.shard);
    assert_eq!(t.fetch(false, "t", 0), (10, 0));
    assert_eq!(t.fetch(false, "t", 1), (5, 0));
    assert_eq!(t.fetch(true, "t", 3), (-1, UNSTABLE));
    let replayed = t.replayed();
    assert_eq!(view(&replayed), live);
    // And the reloaded shard completes what was open exactly as the live one does.
    let mut reloaded = replayed;
    let _ = reloaded.complete_transaction(2, true, t.h.now);
    t.marker(2, true);
    assert_eq!(view(&reloaded), view(&t.h.shard));
    assert_eq!(t.fetch(true, "t", 3), (23, 0));
}

#[test]
fn pending_offsets_hold_back_expiry_and_group_deletion() {
    let mut t = T::new();
    t.plain(&[("t", 0, 1, None)]);
    t.txn(1, &[("t", 0, 10)]);
    let retention = t.h.shard.config().offsets_retention_ms;
    let check = t.h.shard.config().offsets_retention_check_interval_ms;
    t.h.advance(retention + check + 1);
    t.sync(None);
    assert_eq!(
        t.fetch(false, "t", 0),
        (1, 0),
        "not expired while a txn is pending on it"
    );
    assert_eq!(t.h.shard.group_ids(), vec![GROUP.to_string()]);
    t.marker(1, false);
    t.h.advance(check + 1);
    t.sync(None);
    assert_eq!(
        t.fetch(false, "t", 0),
        (-1, 0),
        "expired once the txn ended"
    );
    assert!(
        t.h.shard.group_ids().is_empty(),
        "the empty group goes with its offsets"
    );
}

#[test]
fn validation_table() {
    let mut t = T::new();
    let (ids, _, generation) = t.h.stable_group(2, &["t"]);
    t.sync(None);
    let stranger = "stranger".to_string();
    let none = String::new();
    // (version, group, generation, member, instance, expected)
    type Case<'a> = (i16, &'a str, i32, &'a String, Option<&'a str>, i16);
    let cases: Vec<Case<'_>> = vec![
        (3, GROUP, generation, &ids[0], None, 0),
        (3, GROUP, generation - 1, &ids[0], None, 22), // ILLEGAL_GENERATION
        (3, GROUP, generation + 1, &ids[1], None, 22),
        (3, GROUP, generation, &stranger, None, 25), // UNKNOWN_MEMBER_ID
        (3, GROUP, -1, &ids[0], None, 22),           // a member must name its generation
        // v0-2 cannot name member or generation: accepted even with members.
        (2, GROUP, -1, &none, None, 0),
        (3, GROUP, generation, &ids[0], Some("nobody"), 25),
        // A missing group: created as a simple group with generation -1, else
        // ILLEGAL_GENERATION at every version (never GROUP_ID_NOT_FOUND).
        (4, "other", 3, &stranger, None, 22),
        (4, "other2", -1, &none, None, 0),
        (4, "", -1, &none, None, 24), // INVALID_GROUP_ID
    ];
    for (v, group, gen_, member, instance, want) in cases {
        let req = txn_req(group, 9, gen_, member, instance, &[("t", 0, 1)]);
        let r = t.txn_commit_req(v, &req);
        assert_eq!(
            errors(&r),
            vec![want],
            "v{v} {group} gen {gen_} {member:?} {instance:?}"
        );
    }
    assert!(t.h.shard.group_ids().contains(&"other2".to_string()));
    assert!(!t.h.shard.group_ids().contains(&"other".to_string()));
}

#[test]
fn static_member_fencing_and_completing_rebalance() {
    let mut t = T::new();
    let tok = t.h.join(5, "", Some("i1"), &["t"]);
    t.h.advance(i64::from(DELAY) * 3);
    let r = t.h.join_response(tok).expect("joined");
    assert_eq!(r.error_code, 0);
    assert_eq!(t.h.state(), "CompletingRebalance");
    let generation = r.generation_id;
    let member = r.member_id.clone();
    // Kafka enforces no group state for transactional commits (OffsetCommit answers
    // REBALANCE_IN_PROGRESS here).
    let req = txn_req(GROUP, 9, generation, &member, Some("i1"), &[("t", 0, 1)]);
    assert_eq!(errors(&t.txn_commit_req(3, &req)), vec![0]);
    let req = txn_req(
        GROUP,
        9,
        generation,
        "someone-else",
        Some("i1"),
        &[("t", 0, 1)],
    );
    assert_eq!(
        errors(&t.txn_commit_req(3, &req)),
        vec![ErrorCode::FencedInstanceId.code()]
    );
}

#[test]
fn metadata_too_large_fails_only_that_partition() {
    let mut t = T::new();
    let mut req = txn_req(GROUP, 1, -1, "", None, &[("t", 0, 1), ("t", 1, 2)]);
    let max = t.h.shard.config().offset_metadata_bytes_max;
    req.topics[1].partitions[0].committed_metadata = Some("x".repeat(max + 1));
    let r = t.txn_commit_req(3, &req);
    assert_eq!(errors(&r), vec![0, 12]);
    assert_eq!(t.log.len(), 1, "one record, for the partition that passed");
    // Nothing valid: no record, no transactional batch.
    let mut req = txn_req(GROUP, 1, -1, "", None, &[("t", 1, 2)]);
    req.topics[0].partitions[0].committed_metadata = Some("x".repeat(max + 1));
    assert_eq!(errors(&t.txn_commit_req(3, &req)), vec![12]);
    assert_eq!(t.log.len(), 1);
}

#[test]
fn plain_effects_are_never_transactional() {
    let mut h = Harness::new(config(DELAY));
    let ctx = h.ctx(8);
    let req = skiff_protocol::OffsetCommitRequest {
        group_id: GROUP.into(),
        generation_id_or_member_epoch: -1,
        retention_time_ms: -1,
        topics: vec![skiff_protocol::OffsetCommitRequestTopic {
            name: "t".into(),
            partitions: vec![skiff_protocol::OffsetCommitRequestPartition {
                partition_index: 0,
                committed_offset: 1,
                ..Default::default()
            }],
        }],
        ..Default::default()
    };
    let e = h.shard.handle_offset_commit(&ctx, &req, h.now);
    assert_eq!(e.records.len(), 1);
    assert_eq!(e.transactional, None);
}

#[test]
fn with_error_covers_txn_offset_commit() {
    let mut t = T::new();
    let req = txn_req(GROUP, 1, -1, "", None, &[("t", 0, 1), ("u", 1, 2)]);
    let r = t.txn_commit_req(3, &req);
    match Response::TxnOffsetCommit(r).with_error(ErrorCode::NotCoordinator) {
        Response::TxnOffsetCommit(r) => assert_eq!(errors(&r), vec![16, 16]),
        other => panic!("{other:?}"),
    }
}
