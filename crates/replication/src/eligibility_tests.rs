//! Kafka's `isReplicaIsrEligible` in the HW and ISR rules: a follower whose broker is fenced
//! (or shutting down, or gone) is not waited for outside the ISR and not proposed into it;
//! and the repair rules of issue 17 item 8 (a follower that lost committed data leaves the ISR
//! at once, a leader with a hole hands over).

use crate::{Assignment, Effect, LocalLog, Partition, PartitionConfig};

fn leader_of_two() -> Partition {
    let mut p = Partition::new(
        1,
        PartitionConfig {
            min_insync_replicas: 1,
            durable: false,
            replica_lag_time_max_ms: 30_000,
        },
    );
    let log = LocalLog {
        log_start_offset: 0,
        log_end_offset: 0,
        durable_end: 0,
        high_watermark: 0,
    };
    let a = Assignment {
        leader_epoch: 0,
        partition_epoch: 0,
        replicas: vec![1, 2],
        isr: vec![1, 2],
    };
    p.become_leader(a, log, 0);
    p
}

fn proposes(fx: &[Effect]) -> bool {
    fx.iter().any(|e| matches!(e, Effect::ProposeIsr { .. }))
}

#[test]
fn a_fenced_caught_up_follower_no_longer_holds_the_high_watermark() {
    let mut p = leader_of_two();
    p.on_follower_fetch(2, 0, 0).unwrap();
    // The controller fenced broker 2: the ISR shrank to the leader.
    p.on_isr_committed(1, vec![1], 10);
    p.on_leader_append(10, 20);
    assert_eq!(
        p.high_watermark(),
        0,
        "a caught-up, eligible follower is waited for even outside the ISR (Kafka)"
    );
    let fx = p.set_ineligible(vec![2], 30);
    assert!(
        fx.contains(&Effect::HighWatermarkAdvanced { old: 0, new: 10 }),
        "{fx:?}"
    );
    assert_eq!(p.high_watermark(), 10);
    // Caught up again while fenced: not proposed into the ISR.
    let fx = p.on_follower_fetch(2, 10, 40).unwrap();
    assert!(!proposes(&fx), "{fx:?}");
    // Unfenced: its next fetch proposes it.
    p.set_ineligible(Vec::new(), 50);
    let fx = p.on_follower_fetch(2, 10, 60).unwrap();
    assert!(proposes(&fx), "{fx:?}");
    p.check_invariants().unwrap();
}

/// Issue 17 item 8: a follower whose fetch offset goes back below the HW (it cut its log at
/// a quarantined range, or lost an unsynced tail) is proposed out of the ISR at once, not
/// after `replica.lag.time.max.ms`; whole again, it is proposed in again.
#[test]
fn a_follower_that_lost_committed_data_leaves_the_isr_at_once() {
    let mut p = leader_of_two();
    p.on_leader_append(20, 0);
    p.on_follower_fetch(2, 20, 1).unwrap();
    assert_eq!(p.high_watermark(), 20);
    p.on_leader_append(30, 2);
    p.on_follower_fetch(2, 25, 3).unwrap();
    assert_eq!(p.high_watermark(), 25);
    let fx = p.on_follower_fetch(2, 25, 4).unwrap();
    assert!(!proposes(&fx), "the same offset again: {fx:?}");
    let fx = p.on_follower_fetch(2, 12, 5).unwrap();
    assert_eq!(
        fx,
        vec![Effect::ProposeIsr {
            isr: vec![1],
            partition_epoch: 0
        }],
        "below the HW: out at once"
    );
    p.on_isr_committed(1, vec![1], 6);
    assert_eq!(p.high_watermark(), 30, "ISR {{1}}: the leader's end");
    let fx = p.on_follower_fetch(2, 30, 7).unwrap();
    assert!(
        fx.contains(&Effect::ProposeIsr {
            isr: vec![1, 2],
            partition_epoch: 1
        }),
        "whole again: back in, {fx:?}"
    );
    p.check_invariants().unwrap();
}

/// Issue 17 item 8: a leader with a hole proposes an ISR without itself (the controller's
/// hand-over), only when another member is in the ISR and nothing is in flight; a follower
/// never does.
#[test]
fn a_leader_with_a_hole_hands_over_to_another_isr_member() {
    let mut p = leader_of_two();
    assert_eq!(
        p.hand_over(),
        vec![Effect::ProposeIsr {
            isr: vec![2],
            partition_epoch: 0
        }]
    );
    assert!(p.hand_over().is_empty(), "one proposal in flight");
    p.on_isr_proposal_failed();
    p.on_isr_committed(1, vec![1], 10);
    assert!(
        p.hand_over().is_empty(),
        "alone in the ISR: nobody to hand over to"
    );
    let mut f = leader_of_two();
    f.become_follower(
        2,
        Assignment {
            leader_epoch: 1,
            partition_epoch: 1,
            replicas: vec![1, 2],
            isr: vec![1, 2],
        },
        LocalLog {
            log_start_offset: 0,
            log_end_offset: 0,
            durable_end: 0,
            high_watermark: 0,
        },
    );
    assert!(f.hand_over().is_empty(), "a follower");
}
