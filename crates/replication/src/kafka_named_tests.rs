//! The pure core against Kafka's own unit tests (issue 17 "Tests that must exist", design note
//! replication.md §4.4): one test per Kafka test method, named after it in snake_case, its doc
//! line naming the Kafka test. Each follows the Kafka test's scenario (the same offsets, epochs
//! and replica ids; Kafka's `brokerId` is 1 here, `time` starts at [`T0`]) and asserts what the
//! Kafka test asserts, in the core's terms:
//!
//! - Kafka's `alterPartitionManager.isrUpdates` is the [`Effect::ProposeIsr`] the call returned;
//!   `completeIsrUpdate(e)` is [`Partition::on_isr_committed`]; `failIsrUpdate(_)` is
//!   [`Partition::on_isr_proposal_failed`].
//! - `partitionState.isr` / `maximalIsr` are [`Partition::isr`] / [`Partition::maximal_isr`].
//! - `maybeShrinkIsr()` / `getOutOfSyncReplicas` are [`Partition::tick`] (a proposal without
//!   the lagging replicas).
//! - `isUnderMinIsr` is `check_append(Acks::All) == Err(NOT_ENOUGH_REPLICAS)`; `isAtMinIsr` is
//!   `isr().len() == effective_min_isr()`.
//! - A `lastCaughtUpTimeMs` / log end offset of "unknown" (Kafka: 0 / -1) is -1 here.
//!
//! Rules that already had tests (`tests.rs`, `eligibility_tests.rs`) are named in the doc of the
//! matching test here; the Kafka-shaped scenario is kept because it checks more of the rule.

use skiff_types::ErrorCode;

use crate::{
    AckDecision, Acks, Assignment, BoundInputs, Effect, Isolation, LocalLog, Partition,
    PartitionConfig, Reader, ReplicaId, ReplicaState, Role, WaitId,
};

/// Kafka's `brokerId` in PartitionTest (the local replica).
const ME: ReplicaId = 1;
/// Kafka's MockTime start, any value works.
const T0: i64 = 1_000_000;
/// `replica.lag.time.max.ms` default (30 s).
const LAG: i64 = 30_000;

fn cfg(min_isr: i32, lag: i64) -> PartitionConfig {
    PartitionConfig {
        min_insync_replicas: min_isr,
        durable: false,
        replica_lag_time_max_ms: lag,
    }
}

/// A log of `leo` records from 0 (Kafka's `seedLogData`), HW checkpoint `hw`.
fn log(leo: i64, hw: i64) -> LocalLog {
    LocalLog {
        log_start_offset: 0,
        log_end_offset: leo,
        durable_end: leo,
        high_watermark: hw,
    }
}

fn assignment(
    leader_epoch: i32,
    partition_epoch: i32,
    replicas: &[i32],
    isr: &[i32],
) -> Assignment {
    Assignment {
        leader_epoch,
        partition_epoch,
        replicas: replicas.to_vec(),
        isr: isr.to_vec(),
    }
}

/// Kafka's `makeLeader` at `T0` over a seeded log of `leo` records (checkpointed HW 0).
fn make_leader(
    config: PartitionConfig,
    leader_epoch: i32,
    replicas: &[i32],
    isr: &[i32],
    leo: i64,
) -> Partition {
    let mut p = Partition::new(ME, config);
    p.become_leader(assignment(leader_epoch, 1, replicas, isr), log(leo, 0), T0);
    p
}

/// The ISR proposals (Kafka's `isrUpdates`) among `fx`, with their partition epochs.
fn proposals(fx: &[Effect]) -> Vec<(Vec<ReplicaId>, i32)> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::ProposeIsr {
                isr,
                partition_epoch,
            } => Some((isr.clone(), *partition_epoch)),
            _ => None,
        })
        .collect()
}

fn sorted(mut ids: Vec<ReplicaId>) -> Vec<ReplicaId> {
    ids.sort_unstable();
    ids
}

fn follower(p: &Partition, id: ReplicaId) -> ReplicaState {
    *p.followers()
        .iter()
        .find(|f| f.id == id)
        .unwrap_or_else(|| panic!("no follower {id}"))
}

/// Kafka's `assertReplicaState` (log start is not tracked by the core).
fn assert_replica_state(p: &Partition, id: ReplicaId, last_caught_up_ms: i64, log_end: i64) {
    let f = follower(p, id);
    assert_eq!(
        (f.last_caught_up_ms, f.log_end_offset),
        (last_caught_up_ms, log_end),
        "replica {id}: (lastCaughtUpTimeMs, logEndOffset)"
    );
}

/// Kafka's `fetchFollower`: the follower's fetch at `offset`; returns its proposals.
fn fetch(p: &mut Partition, id: ReplicaId, offset: i64, now: i64) -> Vec<(Vec<ReplicaId>, i32)> {
    proposals(&p.on_follower_fetch(id, offset, now).unwrap())
}

fn under_min_isr(p: &Partition) -> bool {
    p.check_append(Acks::All) == Err(ErrorCode::NotEnoughReplicas)
}

/// PartitionTest.testIsrExpansion
#[test]
fn test_isr_expansion() {
    let mut p = make_leader(cfg(1, LAG), 5, &[1, 2], &[1], 10);
    assert_eq!(p.isr(), &[1]);
    assert_replica_state(&p, 2, -1, -1);

    // Below the log end: tracked, not proposed.
    assert!(fetch(&mut p, 2, 3, T0).is_empty());
    assert_eq!(p.isr(), &[1]);
    assert_replica_state(&p, 2, -1, 3);

    // Caught up: one AlterPartition with {1, 2}; the ISR moves only once it is committed.
    let now = T0 + 10;
    assert_eq!(fetch(&mut p, 2, 10, now), vec![(vec![1, 2], 1)]);
    assert_eq!(p.isr(), &[1]);
    assert_eq!(p.maximal_isr(), vec![1, 2]);
    assert_replica_state(&p, 2, now, 10);

    p.on_isr_committed(2, vec![1, 2], now + 1);
    assert_eq!((p.isr(), p.partition_epoch()), (&[1, 2][..], 2));
    assert_eq!(p.maximal_isr(), vec![1, 2]);
    p.check_invariants().unwrap();
}

/// PartitionTest.testMaybeShrinkIsr (also `tests.rs`:
/// `isr_shrinks_after_the_lag_and_expands_when_caught_up`, `a_silent_isr_follower_leaves_only_after_the_lag`)
#[test]
fn test_maybe_shrink_isr() {
    let mut p = make_leader(cfg(1, LAG), 5, &[1, 2, 3], &[1, 2, 3], 10);
    assert_eq!(p.high_watermark(), 0);
    fetch(&mut p, 2, 10, T0);
    // Replica 3 never fetched: caught up as of makeLeader (an ISR member).
    assert_replica_state(&p, 3, T0, -1);

    assert!(proposals(&p.tick(T0)).is_empty(), "caught up at makeLeader");
    assert_eq!(p.isr(), &[1, 2, 3]);

    let fx = p.tick(T0 + LAG + 1);
    assert_eq!(proposals(&fx), vec![(vec![1, 2], 1)]);
    assert_eq!(p.isr(), &[1, 2, 3], "not before the commit");
    assert_eq!(p.maximal_isr(), vec![1, 2, 3]);
    assert_eq!(p.high_watermark(), 0);

    let fx = p.on_isr_committed(2, vec![1, 2], T0 + LAG + 2);
    assert_eq!(p.partition_epoch(), 2);
    assert_eq!((p.isr(), p.maximal_isr()), (&[1, 2][..], vec![1, 2]));
    assert!(fx.contains(&Effect::HighWatermarkAdvanced { old: 0, new: 10 }));
    assert_eq!(p.high_watermark(), 10);
}

/// PartitionTest.testShouldNotShrinkIsrIfPreviousFetchIsCaughtUp
#[test]
fn test_should_not_shrink_isr_if_previous_fetch_is_caught_up() {
    let mut p = make_leader(cfg(1, LAG), 5, &[1, 2], &[1, 2], 10);
    assert_eq!(p.high_watermark(), 0);
    assert_replica_state(&p, 2, T0, -1);

    // A first fetch 5 s later, not at the log end: caught up still as of makeLeader.
    let first_fetch = T0 + 5_000;
    fetch(&mut p, 2, 5, first_fetch);
    assert_replica_state(&p, 2, T0, 5);
    assert_eq!(p.high_watermark(), 5);

    // More data; the follower reaches the old log end: caught up as of its previous fetch.
    let now = first_fetch + 5_001;
    p.on_leader_append(15, now);
    fetch(&mut p, 2, 10, now);
    assert_replica_state(&p, 2, first_fetch, 10);
    assert_eq!(p.high_watermark(), 10);

    assert!(proposals(&p.tick(now)).is_empty());
    assert_eq!(p.isr(), &[1, 2]);
}

/// PartitionTest.testShouldNotShrinkIsrIfFollowerCaughtUpToLogEnd
#[test]
fn test_should_not_shrink_isr_if_follower_caught_up_to_log_end() {
    let mut p = make_leader(cfg(1, LAG), 5, &[1, 2], &[1, 2], 10);
    fetch(&mut p, 2, 10, T0);
    assert_replica_state(&p, 2, T0, 10);
    assert_eq!(p.high_watermark(), 10);
    // Silent for longer than the lag, but at the leader's log end: stays.
    assert!(proposals(&p.tick(T0 + 30_001)).is_empty());
    assert_eq!(p.isr(), &[1, 2]);
}

/// PartitionTest.testFollowerDoesNotJoinISRUntilCaughtUpToOffsetWithinCurrentLeaderEpoch
#[test]
fn test_follower_does_not_join_isr_until_caught_up_to_offset_within_current_leader_epoch() {
    let (f1, f2) = (2, 3);
    let mut p = make_leader(cfg(1, LAG), 8, &[1, f1, f2], &[1, f2], 0);
    // batch1: offsets 0-1, batch2: 2-4 (acks=0).
    p.on_leader_append(2, T0);
    p.on_leader_append(5, T0);
    assert_eq!(p.high_watermark(), p.log_start_offset(), "HW waits for f2");
    let last_offset_of_first_batch = 1;
    fetch(&mut p, f2, 0, T0);
    fetch(&mut p, f2, last_offset_of_first_batch, T0);
    assert_eq!(p.high_watermark(), last_offset_of_first_batch);

    // Follower at epoch 9, leader again at 10, nothing appended in between.
    let a9 = assignment(9, 1, &[1, f1, f2], &[1, f2]);
    p.become_follower(f2, a9, log(5, p.high_watermark()));
    let a10 = assignment(10, 1, &[1, f1, f2], &[1, f2]);
    p.become_leader(a10, log(5, p.high_watermark()), T0 + 1);
    let epoch_start = p.log_end_offset();
    assert_eq!(p.leader_epoch_start(), epoch_start);
    p.on_leader_append(7, T0 + 2); // batch3 at epoch 10

    // f1 at or above the HW but below the epoch's start: not proposed.
    assert!(fetch(&mut p, f1, 0, T0 + 3).is_empty());
    assert!(fetch(&mut p, f1, last_offset_of_first_batch, T0 + 3).is_empty());
    assert_eq!(p.isr(), &[1, f2]);

    // At the epoch's start (below the log end): proposed.
    let got = fetch(&mut p, f1, epoch_start, T0 + 4);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(sorted(got[0].0.clone()), vec![1, f1, f2]);
    assert_eq!(p.isr(), &[1, f2], "expansion does not change the ISR");
    assert_eq!(sorted(p.maximal_isr()), vec![1, f1, f2]);
}

/// PartitionTest.testHighWatermarkAdvanceShouldNotAdvanceWhenUnderMinISR (KAFKA-15583; also
/// `tests.rs` `acks_table`, "HW frozen")
#[test]
fn test_high_watermark_advance_should_not_advance_when_under_min_isr() {
    let mut p = make_leader(cfg(3, LAG), 5, &[1, 2, 3], &[1, 2], 10);
    assert!(under_min_isr(&p));
    assert_eq!(p.high_watermark(), 0);

    fetch(&mut p, 2, 10, T0);
    assert_eq!(p.high_watermark(), 0);
    // The maximal ISR reaches min ISR, the ISR does not: still frozen.
    let got = fetch(&mut p, 3, 10, T0);
    assert_eq!(p.high_watermark(), 0);
    assert_eq!(p.maximal_isr().len(), 3);
    assert_eq!(got.len(), 1, "one AlterPartition: {got:?}");

    let fx = p.on_isr_committed(2, got[0].0.clone(), T0 + 1);
    assert!(!under_min_isr(&p));
    assert!(fx.contains(&Effect::HighWatermarkAdvanced { old: 0, new: 10 }));
    assert_eq!(p.high_watermark(), 10);
}

/// `(name, replicas, isr, min.insync.replicas, effective min ISR, at min, under min)`.
type MinIsrCase = (
    &'static str,
    &'static [i32],
    &'static [i32],
    i32,
    usize,
    bool,
    bool,
);

fn check_min_isr(cases: &[MinIsrCase]) {
    for &(name, replicas, isr, min, want_eff, want_at, want_under) in cases {
        let p = make_leader(cfg(min, LAG), 8, replicas, isr, 0);
        assert_eq!(p.effective_min_isr(), want_eff, "{name}: effective");
        assert_eq!(
            p.isr().len() == p.effective_min_isr(),
            want_at,
            "{name}: at"
        );
        assert_eq!(under_min_isr(&p), want_under, "{name}: under");
    }
}

/// PartitionTest.testAtMinIsr (also `tests.rs` `acks_table`)
#[test]
fn test_at_min_isr() {
    let fresh = Partition::new(ME, cfg(1, LAG));
    assert_ne!(fresh.isr().len(), fresh.effective_min_isr(), "no ISR yet");
    assert_eq!(
        fresh.check_append(Acks::All),
        Err(ErrorCode::NotLeaderOrFollower)
    );
    #[rustfmt::skip]
    check_min_isr(&[
        ("Kafka's case: RF 3, ISR {leader}, default min ISR 1", &[1, 2, 3], &[1], 1, 1, true, false),
        ("RF 3, ISR 2, min 2: at, still accepted", &[1, 2, 3], &[1, 2], 2, 2, true, false),
        ("RF 3, ISR 3, min 2: above", &[1, 2, 3], &[1, 2, 3], 2, 2, false, false),
        ("RF 2, min 3: effective min is the RF", &[1, 2], &[1, 2], 3, 2, true, false),
    ]);
}

/// PartitionTest.testIsUnderMinIsr (also `tests.rs` `acks_table`)
#[test]
fn test_is_under_min_isr() {
    let replicas = [1, 2];
    let mut p = Partition::new(ME, cfg(2, LAG));
    p.become_leader(assignment(0, 1, &replicas, &[1, 2]), log(0, 0), T0);
    assert!(!under_min_isr(&p));
    p.become_leader(assignment(1, 2, &replicas, &[1]), log(0, 0), T0);
    assert!(under_min_isr(&p));
    #[rustfmt::skip]
    check_min_isr(&[
        ("RF 3, ISR 1, min 2", &[1, 2, 3], &[1], 2, 2, false, true),
        ("RF 3, ISR 2, min 3", &[1, 2, 3], &[1, 2], 3, 3, false, true),
        ("RF 1, min 2: effective 1, never under", &[1], &[1], 2, 1, true, false),
    ]);
}

/// PartitionTest.testSingleInFlightAlterIsr
#[test]
fn test_single_in_flight_alter_isr() {
    let f3 = 4;
    let mut p = make_leader(cfg(1, LAG), 5, &[1, 2, 3, f3], &[1, 2, 3], 10);
    assert_eq!(p.high_watermark(), 0);
    assert_eq!(fetch(&mut p, f3, 10, T0), vec![(vec![1, 2, 3, f3], 1)]);
    assert_eq!(p.isr(), &[1, 2, 3]);
    assert_eq!(p.maximal_isr(), vec![1, 2, 3, f3]);

    // Replicas 2 and 3 lag now, and f3 fetches again: nothing more while one is in flight.
    let later = T0 + LAG + 1;
    assert!(proposals(&p.tick(later)).is_empty());
    assert!(fetch(&mut p, f3, 10, later).is_empty());

    // Once it is settled, the shrink goes out.
    p.on_isr_committed(2, vec![1, 2, 3, f3], later);
    assert_eq!(proposals(&p.tick(later)), vec![(vec![1, f3], 2)]);
}

/// PartitionTest.testAlterIsrInvalidVersion. Kafka keeps the expansion pending (maximal ISR
/// {1, 2}) and does not retry until new metadata arrives; Skiff drops the proposal and proposes
/// again on a later fetch, at the partition epoch it has then.
#[test]
fn test_alter_isr_invalid_version() {
    let mut p = make_leader(cfg(1, LAG), 5, &[1, 2], &[1], 10);
    assert_eq!(p.high_watermark(), 10);
    assert_replica_state(&p, 2, -1, -1);
    let first_fetch = T0 + 1;
    assert_eq!(fetch(&mut p, 2, 10, first_fetch), vec![(vec![1, 2], 1)]);
    assert_eq!((p.isr(), p.maximal_isr()), (&[1][..], vec![1, 2]));
    assert_replica_state(&p, 2, first_fetch, 10);

    // INVALID_UPDATE_VERSION: dropped, nothing committed.
    p.on_isr_proposal_failed();
    assert_eq!((p.isr(), p.maximal_isr()), (&[1][..], vec![1]));
    assert_eq!(p.partition_epoch(), 1);

    // The image brings the newer registration (same ISR); the next fetch proposes at it.
    assert!(p.on_isr_committed(3, vec![1], T0 + 2).is_empty());
    assert_eq!(fetch(&mut p, 2, 10, T0 + 3), vec![(vec![1, 2], 3)]);
}

/// PartitionTest.testIsrNotExpandedIfReplicaIsFencedOrShutdown (also `eligibility_tests.rs`)
#[test]
fn test_isr_not_expanded_if_replica_is_fenced_or_shutdown() {
    let mut p = make_leader(cfg(1, LAG), 5, &[1, 2], &[1], 10);
    assert_eq!((p.isr(), p.maximal_isr()), (&[1][..], vec![1]));

    // Eligible and caught up: expansion proposed.
    assert_eq!(fetch(&mut p, 2, 10, T0), vec![(vec![1, 2], 1)]);
    assert_replica_state(&p, 2, T0, 10);
    assert_eq!(p.maximal_isr(), vec![1, 2]);

    // INELIGIBLE_REPLICA: back to the committed ISR, nothing in flight.
    p.on_isr_proposal_failed();
    assert_eq!((p.isr(), p.maximal_isr()), (&[1][..], vec![1]));

    // Fenced (or shutting down) in the image: its fetches propose nothing.
    p.set_ineligible(vec![2], T0 + 1);
    assert!(fetch(&mut p, 2, 10, T0 + 2).is_empty());
    assert_eq!(p.maximal_isr(), vec![1]);

    // Unfenced: proposed again, then committed.
    p.set_ineligible(Vec::new(), T0 + 3);
    assert_eq!(fetch(&mut p, 2, 10, T0 + 4), vec![(vec![1, 2], 1)]);
    assert_eq!(p.maximal_isr(), vec![1, 2]);
    p.on_isr_committed(2, vec![1, 2], T0 + 5);
    assert_eq!((p.isr(), p.maximal_isr()), (&[1, 2][..], vec![1, 2]));
    assert!(fetch(&mut p, 2, 10, T0 + 6).is_empty(), "nothing in flight");
}

/// PartitionTest.testUseCheckpointToInitializeHighWatermark (also `tests.rs`
/// `startup_leader_high_watermark_is_the_log_end`, one replica)
#[test]
fn test_use_checkpoint_to_initialize_high_watermark() {
    // (name, leader?, log start, log end, checkpointed HW, expected HW)
    #[rustfmt::skip]
    let cases = [
        ("Kafka's case: leader of {1, 2}, 6 records, checkpoint 4", true, 0, 6, 4, 4),
        ("checkpoint above the log end: clamped", true, 0, 6, 9, 6),
        ("checkpoint below the log start: raised", true, 3, 6, 1, 3),
        ("follower: the checkpoint too", false, 0, 6, 4, 4),
        ("follower, checkpoint above the log end: clamped", false, 0, 6, 9, 6),
    ];
    for (name, leader, start, leo, checkpoint, want) in cases {
        let mut p = Partition::new(ME, cfg(1, LAG));
        let a = assignment(6, 1, &[1, 2], &[1, 2]);
        let local = LocalLog {
            log_start_offset: start,
            ..log(leo, checkpoint)
        };
        if leader {
            p.become_leader(a, local, T0);
        } else {
            p.become_follower(2, a, local);
        }
        assert_eq!(p.high_watermark(), want, "{name}");
        p.check_invariants()
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

/// PartitionTest.testMonotonicOffsetsAfterLeaderChange (KIP-207). The core keeps the inputs of
/// the rule (the HW and the epoch's start); the server answers a consumer's "latest"
/// OFFSET_NOT_AVAILABLE while `HW < leader_epoch_start` (`replica/read.rs`; tested through
/// ListOffsets in the server's `replica/follow_tests/deltas.rs`).
#[test]
fn test_monotonic_offsets_after_leader_change() {
    let (f1, f2) = (2, 3);
    let mut p = make_leader(cfg(1, LAG), 8, &[1, f1, f2], &[1, f2], 0);
    p.on_leader_append(2, T0);
    p.on_leader_append(5, T0);
    assert_eq!(p.high_watermark(), 0);
    for f in [f1, f2] {
        fetch(&mut p, f, 0, T0);
        fetch(&mut p, f, 2, T0);
    }
    p.on_isr_committed(2, vec![1, f2, f1], T0);
    assert_eq!(p.high_watermark(), 2);
    let consumer = Reader::Consumer(Isolation::ReadUncommitted);
    let bound = |p: &Partition, r| p.read_bound(r, BoundInputs::default()).unwrap().max_offset;
    assert_eq!(bound(&p, consumer), 2, "a consumer sees the HW");
    assert_eq!(bound(&p, Reader::Replica(f1)), 5, "a follower the log end");
    assert!(p.high_watermark() >= p.leader_epoch_start());

    let a = assignment(9, 4, &[1, f1, f2], &[1, f2]);
    p.become_follower(f2, a, log(5, 2));
    let a = assignment(10, 5, &[1, f1, f2], &[1, f2]);
    p.become_leader(a, log(5, 2), T0 + 1);
    // The fault condition: the new epoch starts at 5, the HW is still 2.
    assert_eq!((p.high_watermark(), p.leader_epoch_start()), (2, 5));
    assert_eq!(bound(&p, consumer), 2, "never beyond the HW");
}

/// PartitionTest.testLeaderEpochValidationOnLeader (also `tests.rs` `leader_epoch_check_table`)
#[test]
fn test_leader_epoch_validation_on_leader() {
    let mut p = make_leader(cfg(1, LAG), 5, &[1, 2], &[1, 2], 0);
    #[rustfmt::skip]
    let cases = [
        ("no epoch", -1, ErrorCode::None),
        ("current", 5, ErrorCode::None),
        ("older", 4, ErrorCode::FencedLeaderEpoch),
        ("newer", 6, ErrorCode::UnknownLeaderEpoch),
    ];
    for (name, asked, want) in cases {
        assert_eq!(p.check_leader_epoch(asked), want, "{name}");
        if want == ErrorCode::None {
            // The fetch goes on: the read's log end is 0.
            p.on_follower_fetch(2, 0, T0).unwrap();
            let b = p.read_bound(Reader::Replica(2), BoundInputs::default());
            assert_eq!(b.map(|b| b.max_offset), Ok(0), "{name}");
        }
    }
}

/// PartitionTest.testLeaderEpochValidationOnFollower. The half with client metadata (a
/// consumer fetching from a follower, KIP-392) is not mirrored: Skiff has no fetch from
/// follower, every read on a follower is NOT_LEADER_OR_FOLLOWER.
#[test]
fn test_leader_epoch_validation_on_follower() {
    let mut p = Partition::new(ME, cfg(1, LAG));
    p.become_follower(2, assignment(5, 1, &[1, 2], &[1, 2]), log(0, 0));
    // The server checks the epoch first, then asks for the bound (`replica/read.rs`).
    #[rustfmt::skip]
    let cases = [
        ("no epoch", -1, ErrorCode::NotLeaderOrFollower),
        ("current", 5, ErrorCode::NotLeaderOrFollower),
        ("older", 4, ErrorCode::FencedLeaderEpoch),
        ("newer", 6, ErrorCode::UnknownLeaderEpoch),
    ];
    for (name, asked, want) in cases {
        let got = match p.check_leader_epoch(asked) {
            ErrorCode::None => p
                .read_bound(
                    Reader::Consumer(Isolation::ReadUncommitted),
                    BoundInputs::default(),
                )
                .err()
                .unwrap_or(ErrorCode::None),
            refused => refused,
        };
        assert_eq!(got, want, "{name}");
    }
}

/// PartitionTest.testDoNotResetReplicaStateIfLeaderEpochIsNotBumped (also `tests.rs`
/// `same_epoch_reassignment_keeps_the_high_watermark`, the HW side)
#[test]
fn test_do_not_reset_replica_state_if_leader_epoch_is_not_bumped() {
    let mut p = make_leader(cfg(1, LAG), 8, &[1, 2], &[1], 0);
    assert_eq!(
        (p.partition_epoch(), p.leader_epoch(), p.isr()),
        (1, 8, &[1][..])
    );
    assert_replica_state(&p, 2, -1, -1);

    let now = T0 + 7;
    fetch(&mut p, 2, 0, now);
    assert_replica_state(&p, 2, now, 0);

    // The same leader epoch at a newer partition epoch (a KRaft reassignment).
    p.become_leader(assignment(8, 2, &[1, 2], &[1]), log(0, 0), now + 1);
    assert_eq!(
        (p.partition_epoch(), p.leader_epoch(), p.isr()),
        (2, 8, &[1][..])
    );
    assert_replica_state(&p, 2, now, 0);

    // A bumped epoch resets it (Kafka's makeLeader: a non-ISR replica is unknown again).
    p.become_leader(assignment(9, 3, &[1, 2], &[1]), log(0, 0), now + 2);
    assert_replica_state(&p, 2, -1, -1);
}

/// IsrExpirationTest's setup: replicas {1, 2} all in the ISR, `replica.lag.time.max.ms` 100,
/// the follower caught up at `T0` with an empty log, then the leader's log ends at 20.
fn isr_expiration_partition() -> Partition {
    let mut p = make_leader(cfg(1, 100), 0, &[1, 2], &[1, 2], 0);
    fetch(&mut p, 2, 0, T0);
    p.on_leader_append(20, T0);
    p
}

/// `getOutOfSyncReplicas` at `now`: the replicas a shrink would remove.
fn out_of_sync(p: &mut Partition, now: i64) -> Vec<ReplicaId> {
    match proposals(&p.tick(now)).as_slice() {
        [] => Vec::new(),
        [(isr, _)] => {
            // Only a query in Kafka: settle it so that the next tick may propose again.
            p.on_isr_proposal_failed();
            p.isr()
                .iter()
                .copied()
                .filter(|r| !isr.contains(r))
                .collect()
        }
        more => panic!("more than one proposal: {more:?}"),
    }
}

/// IsrExpirationTest.testIsrExpirationForStuckFollowers
#[test]
fn test_isr_expiration_for_stuck_followers() {
    let mut p = isr_expiration_partition();
    fetch(&mut p, 2, 19, T0);
    assert_eq!(out_of_sync(&mut p, T0), Vec::<ReplicaId>::new());
    assert_eq!(out_of_sync(&mut p, T0 + 150), vec![2], "stuck");
}

/// IsrExpirationTest.testIsrExpirationIfNoFetchRequestMade
#[test]
fn test_isr_expiration_if_no_fetch_request_made() {
    let mut p = make_leader(cfg(1, 100), 0, &[1, 2], &[1, 2], 20);
    assert_eq!(out_of_sync(&mut p, T0 + 100), Vec::<ReplicaId>::new());
    assert_eq!(out_of_sync(&mut p, T0 + 150), vec![2], "never fetched");
}

/// IsrExpirationTest.testIsrExpirationForSlowFollowers
#[test]
fn test_isr_expiration_for_slow_followers() {
    let mut p = isr_expiration_partition();
    fetch(&mut p, 2, 18, T0);
    assert_eq!(out_of_sync(&mut p, T0), Vec::<ReplicaId>::new());
    fetch(&mut p, 2, 19, T0 + 75);
    assert_eq!(out_of_sync(&mut p, T0 + 75), Vec::<ReplicaId>::new());
    assert_eq!(out_of_sync(&mut p, T0 + 150), vec![2], "slow");
    // A fetch to the log end puts it back in sync.
    fetch(&mut p, 2, 20, T0 + 150);
    assert_eq!(out_of_sync(&mut p, T0 + 150), Vec::<ReplicaId>::new());
}

/// IsrExpirationTest.testIsrExpirationForCaughtUpFollowers
#[test]
fn test_isr_expiration_for_caught_up_followers() {
    let mut p = isr_expiration_partition();
    fetch(&mut p, 2, 20, T0);
    assert_eq!(out_of_sync(&mut p, T0), Vec::<ReplicaId>::new());
    assert_eq!(
        out_of_sync(&mut p, T0 + 150),
        Vec::<ReplicaId>::new(),
        "at the log end, however long ago"
    );
}

/// ReplicaManagerTest.testDeltaToFollowerCompletesProduce, the core's part (also `tests.rs`
/// `parked_acks_end_exactly_once`, one parked ack); the replica manager's is in the server's
/// `replica/follow_tests.rs`.
#[test]
fn test_delta_to_follower_completes_produce() {
    let mut p = make_leader(cfg(1, LAG), 0, &[1, 2], &[1, 2], 0);
    p.on_leader_append(3, T0);
    assert_eq!(
        p.await_acks(WaitId(1), Acks::All, 3, T0 + 30_000),
        AckDecision::Parked
    );
    p.on_leader_append(5, T0);
    assert_eq!(
        p.await_acks(WaitId(2), Acks::All, 5, T0 + 30_000),
        AckDecision::Parked
    );
    let fx = p.become_follower(2, assignment(1, 1, &[1, 2], &[1, 2]), log(5, 0));
    let done: Vec<_> = fx
        .iter()
        .filter_map(|e| match e {
            Effect::AckCompleted { wait, error } => Some((*wait, *error)),
            _ => None,
        })
        .collect();
    let nl = ErrorCode::NotLeaderOrFollower;
    assert_eq!(done, vec![(WaitId(1), nl), (WaitId(2), nl)]);
    assert_eq!(p.pending_acks(), 0);
    assert_eq!(
        (p.role(), p.leader_epoch()),
        (Role::Follower { leader: 2 }, 1)
    );
    // Later produces are refused, parked ones never answered twice.
    assert_eq!(p.check_append(Acks::All), Err(nl));
    assert_eq!(
        p.await_acks(WaitId(3), Acks::All, 5, T0 + 30_000),
        AckDecision::Done(nl)
    );
    assert!(p.tick(T0 + 60_000).is_empty());
    p.check_invariants().unwrap();
}
