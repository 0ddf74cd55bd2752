//! Table tests of the one-replica rules (the behaviour the server had before this crate) and of
//! the multi-replica rules that decide them (min ISR, HW over the ISR, ISR changes).

use skiff_types::ErrorCode;

use crate::{
    AckDecision, Acks, Assignment, BoundInputs, Effect, Isolation, LocalLog, Partition,
    PartitionConfig, ReadBound, Reader, Role, WaitId,
};

const NODE: i32 = 1;
const W: WaitId = WaitId(7);

fn empty_log() -> LocalLog {
    LocalLog {
        log_start_offset: 0,
        log_end_offset: 0,
        durable_end: 0,
        high_watermark: 0,
    }
}

fn cfg(durable: bool, min_isr: i32) -> PartitionConfig {
    PartitionConfig {
        min_insync_replicas: min_isr,
        durable,
        replica_lag_time_max_ms: 30_000,
    }
}

/// Leader of replicas `1..=rf` with ISR `1..=isr`, over an empty log.
fn leader(durable: bool, min_isr: i32, rf: i32, isr: i32) -> Partition {
    let mut p = Partition::new(NODE, cfg(durable, min_isr));
    let a = Assignment {
        leader_epoch: 0,
        partition_epoch: 0,
        replicas: (1..=rf).collect(),
        isr: (1..=isr).collect(),
    };
    p.become_leader(a, empty_log(), 0);
    p
}

fn completions(fx: &[Effect]) -> Vec<(WaitId, ErrorCode)> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::AckCompleted { wait, error } => Some((*wait, *error)),
            _ => None,
        })
        .collect()
}

fn hw_moves(fx: &[Effect]) -> Vec<(i64, i64)> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::HighWatermarkAdvanced { old, new } => Some((*old, *new)),
            _ => None,
        })
        .collect()
}

struct AckCase {
    name: &'static str,
    durable: bool,
    rf: i32,
    isr: i32,
    min_isr: i32,
    acks: Acks,
    /// Does the fsync of the batch complete (durable topics)?
    fsync: bool,
    want_check: Result<(), ErrorCode>,
    /// `await_acks` for the batch `[0, 10)`.
    want_decision: AckDecision,
    /// The HW right after the append.
    want_hw_after_append: i64,
    /// The completion the fsync produces (None: no completion).
    want_completion: Option<ErrorCode>,
    want_hw: i64,
}

#[test]
fn acks_table() {
    use AckDecision::{Done, Parked};
    let ok = ErrorCode::None;
    #[rustfmt::skip]
    let cases = [
        AckCase { name: "1 replica, not durable, acks=0", durable: false, rf: 1, isr: 1, min_isr: 1, acks: Acks::None, fsync: false, want_check: Ok(()), want_decision: Done(ok), want_hw_after_append: 10, want_completion: None, want_hw: 10 },
        AckCase { name: "1 replica, not durable, acks=1", durable: false, rf: 1, isr: 1, min_isr: 1, acks: Acks::Leader, fsync: false, want_check: Ok(()), want_decision: Done(ok), want_hw_after_append: 10, want_completion: None, want_hw: 10 },
        AckCase { name: "1 replica, not durable, acks=-1", durable: false, rf: 1, isr: 1, min_isr: 1, acks: Acks::All, fsync: false, want_check: Ok(()), want_decision: Done(ok), want_hw_after_append: 10, want_completion: None, want_hw: 10 },
        AckCase { name: "1 replica, durable, acks=0: no answer, HW after the fsync", durable: true, rf: 1, isr: 1, min_isr: 1, acks: Acks::None, fsync: true, want_check: Ok(()), want_decision: Done(ok), want_hw_after_append: 0, want_completion: None, want_hw: 10 },
        AckCase { name: "1 replica, durable, acks=1 waits for the fsync", durable: true, rf: 1, isr: 1, min_isr: 1, acks: Acks::Leader, fsync: true, want_check: Ok(()), want_decision: Parked, want_hw_after_append: 0, want_completion: Some(ok), want_hw: 10 },
        AckCase { name: "1 replica, durable, acks=-1 waits for the fsync", durable: true, rf: 1, isr: 1, min_isr: 1, acks: Acks::All, fsync: true, want_check: Ok(()), want_decision: Parked, want_hw_after_append: 0, want_completion: Some(ok), want_hw: 10 },
        AckCase { name: "1 replica, durable, no fsync yet: parked, HW stays", durable: true, rf: 1, isr: 1, min_isr: 1, acks: Acks::All, fsync: false, want_check: Ok(()), want_decision: Parked, want_hw_after_append: 0, want_completion: None, want_hw: 0 },
        AckCase { name: "1 replica, min.insync=2: effective min ISR is 1", durable: false, rf: 1, isr: 1, min_isr: 2, acks: Acks::All, fsync: false, want_check: Ok(()), want_decision: Done(ok), want_hw_after_append: 10, want_completion: None, want_hw: 10 },
        AckCase { name: "RF 3, ISR 1 < min.insync 2, acks=-1: NOT_ENOUGH_REPLICAS", durable: false, rf: 3, isr: 1, min_isr: 2, acks: Acks::All, fsync: false, want_check: Err(ErrorCode::NotEnoughReplicas), want_decision: Done(ok), want_hw_after_append: 0, want_completion: None, want_hw: 0 },
        AckCase { name: "RF 3, ISR 1 < min.insync 2, acks=1: accepted, HW frozen (KAFKA-15583)", durable: false, rf: 3, isr: 1, min_isr: 2, acks: Acks::Leader, fsync: false, want_check: Ok(()), want_decision: Done(ok), want_hw_after_append: 0, want_completion: None, want_hw: 0 },
        AckCase { name: "RF 3, ISR 3, min.insync 2, acks=-1: parked until followers fetch", durable: false, rf: 3, isr: 3, min_isr: 2, acks: Acks::All, fsync: false, want_check: Ok(()), want_decision: Parked, want_hw_after_append: 0, want_completion: None, want_hw: 0 },
        AckCase { name: "RF 3, ISR 3, min.insync 5: effective 3, accepted", durable: false, rf: 3, isr: 3, min_isr: 5, acks: Acks::All, fsync: false, want_check: Ok(()), want_decision: Parked, want_hw_after_append: 0, want_completion: None, want_hw: 0 },
    ];
    for c in cases {
        let mut p = leader(c.durable, c.min_isr, c.rf, c.isr);
        assert_eq!(
            p.check_append(c.acks),
            c.want_check,
            "{}: check_append",
            c.name
        );
        if c.want_check.is_err() {
            assert_eq!(
                p.high_watermark(),
                c.want_hw,
                "{}: nothing appended",
                c.name
            );
            continue;
        }
        let fx = p.on_leader_append(10, 1);
        assert_eq!(
            p.high_watermark(),
            c.want_hw_after_append,
            "{}: HW after append",
            c.name
        );
        let moves = hw_moves(&fx);
        if c.want_hw_after_append > 0 {
            assert_eq!(
                moves,
                vec![(0, c.want_hw_after_append)],
                "{}: HW effect",
                c.name
            );
        } else {
            assert!(moves.is_empty(), "{}: no HW effect: {fx:?}", c.name);
        }
        assert_eq!(
            p.await_acks(W, c.acks, 10, 1_000),
            c.want_decision,
            "{}: decision",
            c.name
        );
        let fx = if c.fsync {
            p.on_local_synced(10, 2)
        } else {
            Vec::new()
        };
        let got: Vec<ErrorCode> = completions(&fx)
            .into_iter()
            .map(|(w, e)| {
                assert_eq!(w, W, "{}: wait id", c.name);
                e
            })
            .collect();
        assert_eq!(
            got,
            c.want_completion.into_iter().collect::<Vec<_>>(),
            "{}: completion",
            c.name
        );
        assert_eq!(p.high_watermark(), c.want_hw, "{}: final HW", c.name);
        p.check_invariants()
            .unwrap_or_else(|e| panic!("{}: {e}", c.name));
    }
}

struct BoundCase {
    name: &'static str,
    durable: bool,
    /// LEO after the appends, and the fsynced end (durable only).
    appended: i64,
    synced: i64,
    reader: Reader,
    inputs: BoundInputs,
    /// (max_offset, reported HW, reported LSO)
    want: Result<(i64, i64, i64), ErrorCode>,
}

#[test]
fn read_bound_table() {
    const UNC: Reader = Reader::Consumer(Isolation::ReadUncommitted);
    const COM: Reader = Reader::Consumer(Isolation::ReadCommitted);
    const NONE: BoundInputs = BoundInputs {
        first_unstable_offset: None,
        delivery_stable_offset: None,
    };
    const DSO5: BoundInputs = BoundInputs {
        first_unstable_offset: None,
        delivery_stable_offset: Some(5),
    };
    const DSO12: BoundInputs = BoundInputs {
        first_unstable_offset: None,
        delivery_stable_offset: Some(12),
    };
    const FUO3: BoundInputs = BoundInputs {
        first_unstable_offset: Some(3),
        delivery_stable_offset: None,
    };
    const FUO6_DSO4: BoundInputs = BoundInputs {
        first_unstable_offset: Some(6),
        delivery_stable_offset: Some(4),
    };
    #[rustfmt::skip]
    let cases = [
        BoundCase { name: "consumer read_uncommitted: HW", durable: false, appended: 10, synced: 0, reader: UNC, inputs: NONE, want: Ok((10, 10, 10)) },
        BoundCase { name: "consumer read_committed, no transactions: LSO = HW", durable: false, appended: 10, synced: 0, reader: COM, inputs: NONE, want: Ok((10, 10, 10)) },
        BoundCase { name: "durable, synced 4 of 10: consumers stop at 4", durable: true, appended: 10, synced: 4, reader: UNC, inputs: NONE, want: Ok((4, 4, 4)) },
        BoundCase { name: "delayed delivery, uncommitted: min(HW, DSO), HW reported real, LSO capped", durable: false, appended: 10, synced: 0, reader: UNC, inputs: DSO5, want: Ok((5, 10, 5)) },
        BoundCase { name: "delayed delivery, committed: min(LSO, DSO)", durable: false, appended: 10, synced: 0, reader: COM, inputs: DSO5, want: Ok((5, 10, 5)) },
        BoundCase { name: "DSO above the HW: HW", durable: false, appended: 10, synced: 0, reader: UNC, inputs: DSO12, want: Ok((10, 10, 10)) },
        BoundCase { name: "open transaction, committed: LSO", durable: false, appended: 10, synced: 0, reader: COM, inputs: FUO3, want: Ok((3, 10, 3)) },
        BoundCase { name: "open transaction, uncommitted: HW, LSO reported", durable: false, appended: 10, synced: 0, reader: UNC, inputs: FUO3, want: Ok((10, 10, 3)) },
        BoundCase { name: "transaction and DSO, committed: min(LSO, DSO)", durable: false, appended: 10, synced: 0, reader: COM, inputs: FUO6_DSO4, want: Ok((4, 10, 4)) },
        BoundCase { name: "replica id, one replica: today's HW bound, DSO ignored", durable: false, appended: 10, synced: 0, reader: Reader::Replica(7), inputs: DSO5, want: Ok((10, 10, 10)) },
        BoundCase { name: "replica id, durable, one replica: HW (synced)", durable: true, appended: 10, synced: 4, reader: Reader::Replica(7), inputs: NONE, want: Ok((4, 4, 4)) },
        BoundCase { name: "replica id is this node: HW", durable: false, appended: 10, synced: 0, reader: Reader::Replica(NODE), inputs: NONE, want: Ok((10, 10, 10)) },
    ];
    for c in cases {
        let mut p = leader(c.durable, 1, 1, 1);
        p.on_leader_append(c.appended, 1);
        if c.durable {
            p.on_local_synced(c.synced, 2);
        }
        let got = p
            .read_bound(c.reader, c.inputs)
            .map(|b: ReadBound| (b.max_offset, b.high_watermark, b.last_stable_offset));
        assert_eq!(got, c.want, "{}", c.name);
        if let (Ok((max, hw, _)), Reader::Consumer(_)) = (got, c.reader) {
            assert!(max <= hw, "{}: consumer bound above HW", c.name);
        }
    }
}

#[test]
fn follower_of_the_partition_reads_to_the_log_end() {
    // RF 2, ISR {1, 2}: the HW waits for replica 2, its fetches may read to the LEO.
    let mut p = leader(false, 1, 2, 2);
    p.on_leader_append(10, 1);
    assert_eq!(p.high_watermark(), 0);
    let b = p
        .read_bound(
            Reader::Replica(2),
            BoundInputs {
                first_unstable_offset: None,
                delivery_stable_offset: Some(3),
            },
        )
        .unwrap();
    assert_eq!(
        (b.max_offset, b.high_watermark, b.last_stable_offset),
        (10, 0, 0)
    );
    let b = p
        .read_bound(
            Reader::Consumer(Isolation::ReadUncommitted),
            BoundInputs::default(),
        )
        .unwrap();
    assert_eq!(b.max_offset, 0);
}

#[test]
fn reads_need_the_leader_role() {
    let p = Partition::new(NODE, PartitionConfig::default());
    assert_eq!(
        p.read_bound(
            Reader::Consumer(Isolation::ReadUncommitted),
            BoundInputs::default()
        ),
        Err(ErrorCode::NotLeaderOrFollower)
    );
    assert_eq!(
        p.check_append(Acks::Leader),
        Err(ErrorCode::NotLeaderOrFollower)
    );
}

struct HwCase {
    name: &'static str,
    durable: bool,
    /// (op, offset): "append" = on_leader_append(LEO), "sync" = on_local_synced.
    ops: &'static [(&'static str, i64)],
    want_hws: &'static [i64],
}

#[test]
fn high_watermark_never_moves_backwards() {
    #[rustfmt::skip]
    let cases = [
        HwCase { name: "not durable: HW = LEO after each append", durable: false, ops: &[("append", 5), ("append", 9), ("append", 12)], want_hws: &[5, 9, 12] },
        HwCase { name: "not durable: a stale, lower LEO is ignored", durable: false, ops: &[("append", 9), ("append", 5)], want_hws: &[9, 9] },
        HwCase { name: "durable: HW follows the synced end only", durable: true, ops: &[("append", 5), ("append", 9), ("sync", 5), ("sync", 9)], want_hws: &[0, 0, 5, 9] },
        HwCase { name: "durable: an older sync report does not lower it", durable: true, ops: &[("append", 9), ("sync", 9), ("sync", 4)], want_hws: &[0, 9, 9] },
        HwCase { name: "durable: a sync past the LEO stops at the LEO", durable: true, ops: &[("append", 6), ("sync", 50)], want_hws: &[0, 6] },
    ];
    for c in cases {
        let mut p = leader(c.durable, 1, 1, 1);
        let mut got = Vec::new();
        for (op, off) in c.ops {
            let before = p.high_watermark();
            let fx = match *op {
                "append" => p.on_leader_append(*off, 1),
                _ => p.on_local_synced(*off, 1),
            };
            assert!(p.high_watermark() >= before, "{}: HW went back", c.name);
            for (old, new) in hw_moves(&fx) {
                assert!(new > old, "{}: effect {old}->{new}", c.name);
            }
            got.push(p.high_watermark());
        }
        assert_eq!(got, c.want_hws, "{}", c.name);
    }
}

#[test]
fn startup_leader_high_watermark_is_the_log_end() {
    // broker.rs: "its high watermark is its log end from the start (Kafka's makeLeader)".
    let log = LocalLog {
        log_start_offset: 2,
        log_end_offset: 40,
        durable_end: 40,
        high_watermark: 17,
    };
    for durable in [false, true] {
        let (p, fx) = Partition::single_leader(NODE, cfg(durable, 1), log, 0);
        assert_eq!(p.high_watermark(), 40, "durable={durable}");
        assert_eq!(hw_moves(&fx).last(), Some(&(17, 40)));
        assert_eq!(p.role(), Role::Leader);
        assert_eq!(p.leader_epoch(), 0);
    }
    // A checkpoint above the log end is clamped.
    let log = LocalLog {
        high_watermark: 99,
        ..log
    };
    let (p, _) = Partition::single_leader(NODE, cfg(false, 1), log, 0);
    assert_eq!(p.high_watermark(), 40);
}

#[test]
fn duplicate_waits_on_the_original_batch() {
    // An idempotent retry appends nothing; it answers once the original's end is committed.
    let mut p = leader(true, 1, 1, 1);
    p.on_leader_append(10, 1);
    assert_eq!(
        p.await_acks(WaitId(1), Acks::All, 10, 100),
        AckDecision::Parked
    );
    assert_eq!(
        p.await_acks(WaitId(2), Acks::All, 10, 100),
        AckDecision::Parked
    );
    let fx = p.on_local_synced(10, 2);
    assert_eq!(
        completions(&fx),
        vec![(WaitId(1), ErrorCode::None), (WaitId(2), ErrorCode::None)]
    );
    assert_eq!(
        p.await_acks(WaitId(3), Acks::All, 10, 100),
        AckDecision::Done(ErrorCode::None)
    );
}

struct ParkedEndCase {
    name: &'static str,
    event: fn(&mut Partition) -> Vec<Effect>,
    want: Vec<(WaitId, ErrorCode)>,
}

#[test]
fn parked_acks_end_exactly_once() {
    #[rustfmt::skip]
    let cases = [
        ParkedEndCase { name: "fsync failed: KAFKA_STORAGE_ERROR, HW stays", event: |p| p.on_local_sync_failed(10), want: vec![(W, ErrorCode::KafkaStorageError)] },
        ParkedEndCase { name: "fsync of an earlier range failed: still parked", event: |p| p.on_local_sync_failed(4), want: vec![] },
        ParkedEndCase { name: "deadline passed: REQUEST_TIMED_OUT", event: |p| p.tick(1_000), want: vec![(W, ErrorCode::RequestTimedOut)] },
        ParkedEndCase { name: "before the deadline: nothing", event: |p| p.tick(999), want: vec![] },
        ParkedEndCase { name: "became follower: NOT_LEADER_OR_FOLLOWER", event: |p| p.become_follower(2, Assignment { leader_epoch: 1, partition_epoch: 1, replicas: vec![1, 2], isr: vec![1, 2] }, LocalLog { log_start_offset: 0, log_end_offset: 10, durable_end: 4, high_watermark: 4 }), want: vec![(W, ErrorCode::NotLeaderOrFollower)] },
        ParkedEndCase { name: "resigned: NOT_LEADER_OR_FOLLOWER", event: |p| p.resign(), want: vec![(W, ErrorCode::NotLeaderOrFollower)] },
    ];
    for c in cases {
        let mut p = leader(true, 1, 1, 1);
        p.on_leader_append(4, 1);
        p.on_local_synced(4, 1);
        p.on_leader_append(10, 1);
        assert_eq!(
            p.await_acks(W, Acks::All, 10, 1_000),
            AckDecision::Parked,
            "{}",
            c.name
        );
        let got = completions(&(c.event)(&mut p));
        assert_eq!(got, c.want, "{}", c.name);
        // Whatever happened, nothing completes twice.
        let again = completions(&p.tick(10_000));
        assert!(
            got.is_empty() || again.is_empty(),
            "{}: completed twice",
            c.name
        );
        assert_eq!(p.high_watermark(), 4, "{}: HW", c.name);
    }
}

#[test]
fn acks_from_wire() {
    assert_eq!(Acks::from_wire(0), Ok(Acks::None));
    assert_eq!(Acks::from_wire(1), Ok(Acks::Leader));
    assert_eq!(Acks::from_wire(-1), Ok(Acks::All));
    assert_eq!(Acks::from_wire(2), Err(ErrorCode::InvalidRequiredAcks));
    assert_eq!(Acks::from_wire(-2), Err(ErrorCode::InvalidRequiredAcks));
}

#[test]
fn leader_epoch_check_table() {
    #[rustfmt::skip]
    let cases = [
        ("unchecked (-1)", 3, -1, ErrorCode::None),
        ("current", 3, 3, ErrorCode::None),
        ("older: fenced", 3, 2, ErrorCode::FencedLeaderEpoch),
        ("newer: unknown", 3, 4, ErrorCode::UnknownLeaderEpoch),
        ("single node epoch 0, asked 0", 0, 0, ErrorCode::None),
        ("single node epoch 0, asked 1", 0, 1, ErrorCode::UnknownLeaderEpoch),
    ];
    for (name, epoch, asked, want) in cases {
        let mut p = Partition::new(NODE, PartitionConfig::default());
        p.become_leader(
            Assignment {
                leader_epoch: epoch,
                ..Assignment::single(NODE)
            },
            empty_log(),
            0,
        );
        assert_eq!(p.check_leader_epoch(asked), want, "{name}");
    }
}

#[test]
fn high_watermark_is_min_over_isr_and_completes_acks_all() {
    // RF 3, ISR {1,2,3}, min.insync 2.
    let mut p = leader(false, 2, 3, 3);
    p.on_leader_append(10, 1);
    assert_eq!(p.await_acks(W, Acks::All, 10, 1_000), AckDecision::Parked);
    assert!(
        hw_moves(&p.on_follower_fetch(2, 10, 2).unwrap()).is_empty(),
        "3 still at 0"
    );
    let fx = p.on_follower_fetch(3, 6, 3).unwrap();
    assert_eq!(hw_moves(&fx), vec![(0, 6)]);
    assert!(completions(&fx).is_empty());
    let fx = p.on_follower_fetch(3, 10, 4).unwrap();
    assert_eq!(hw_moves(&fx), vec![(6, 10)]);
    assert_eq!(completions(&fx), vec![(W, ErrorCode::None)]);
    assert_eq!(
        p.on_follower_fetch(9, 10, 5),
        Err(ErrorCode::NotLeaderOrFollower),
        "not a replica"
    );
}

#[test]
fn isr_shrinks_after_the_lag_and_expands_when_caught_up() {
    let mut p = leader(false, 1, 2, 2);
    p.on_leader_append(10, 0);
    p.on_follower_fetch(2, 10, 0).unwrap();
    assert_eq!(p.high_watermark(), 10);
    p.on_leader_append(20, 1);
    assert!(
        p.tick(30_000).is_empty(),
        "caught up 30 s ago: still in sync"
    );
    let fx = p.tick(30_001);
    assert_eq!(
        fx,
        vec![Effect::ProposeIsr {
            isr: vec![1],
            partition_epoch: 0
        }]
    );
    assert!(p.tick(40_000).is_empty(), "one change in flight");
    let fx = p.on_isr_committed(1, vec![1], 40_001);
    assert_eq!(hw_moves(&fx), vec![(10, 20)], "ISR {{1}}: HW = leader LEO");
    // The follower catches up: proposed back in.
    let fx = p.on_follower_fetch(2, 20, 40_002).unwrap();
    assert!(
        fx.contains(&Effect::ProposeIsr {
            isr: vec![1, 2],
            partition_epoch: 1
        }),
        "{fx:?}"
    );
    assert_eq!(p.maximal_isr(), vec![1, 2]);
}

#[test]
fn a_silent_isr_follower_leaves_only_after_the_lag() {
    // become_leader at t=0: ISR members count as caught up at 0 (Kafka's makeLeader).
    let mut p = leader(false, 1, 2, 2);
    p.on_leader_append(10, 0);
    assert!(p.tick(30_000).is_empty(), "within replica.lag.time.max.ms");
    assert_eq!(
        p.tick(30_001),
        vec![Effect::ProposeIsr {
            isr: vec![1],
            partition_epoch: 0
        }]
    );
}

#[test]
fn same_epoch_reassignment_keeps_the_high_watermark() {
    let mut p = leader(false, 1, 1, 1);
    p.on_leader_append(10, 0);
    assert_eq!(p.high_watermark(), 10);
    // The metadata re-applies the same leader epoch (partition epoch bump) with a stale
    // checkpointed HW: the HW stays.
    let a = Assignment {
        partition_epoch: 1,
        ..Assignment::single(NODE)
    };
    let log = LocalLog {
        log_start_offset: 0,
        log_end_offset: 10,
        durable_end: 10,
        high_watermark: 3,
    };
    let fx = p.become_leader(a, log, 1);
    assert_eq!(p.high_watermark(), 10, "{fx:?}");
    assert!(
        !fx.iter()
            .any(|e| matches!(e, Effect::HighWatermarkLowered { .. })),
        "{fx:?}"
    );
}

#[test]
fn a_stale_isr_change_is_ignored() {
    let mut p = leader(false, 1, 2, 2);
    p.on_isr_committed(3, vec![1], 0);
    assert!(p.on_isr_committed(2, vec![1, 2], 1).is_empty());
    assert_eq!((p.partition_epoch(), p.isr()), (3, &[1][..]));
}
