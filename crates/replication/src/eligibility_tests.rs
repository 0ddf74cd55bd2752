//! Kafka's `isReplicaIsrEligible` in the HW and ISR rules: a follower whose broker is fenced
//! (or shutting down, or gone) is not waited for outside the ISR and not proposed into it.

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
