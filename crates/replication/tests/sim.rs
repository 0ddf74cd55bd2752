//! Seeded random simulation of one replica: appends (with random acks), idempotent retries,
//! group-commit fsyncs (some failing), config flips, reads and time passing, checked after
//! every step against the invariants and against a model of the pre-replication server
//! (HW = LEO after an append; on a durable topic HW = the synced end).
//!
//! Runs `SIM_SEEDS` seeds by default; a failure prints its seed. Replay one with
//! `SKIFF_SIM_SEED=<seed> cargo test -p skiff-replication --test sim`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use rand::rngs::StdRng;
use rand::{Rng as _, SeedableRng};

use skiff_replication::{
    AckDecision, Acks, BoundInputs, Effect, Isolation, LocalLog, Partition, PartitionConfig,
    Reader, WaitId,
};
use skiff_types::ErrorCode;

const SIM_SEEDS: u64 = 300;
const STEPS: usize = 400;

/// The seeded source: rand's `StdRng` (a well-kept crate, as the storage tests use).
struct Rng(StdRng);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0.random_range(0..n.max(1))
    }
    fn offset_in(&mut self, lo: i64, hi: i64) -> i64 {
        if hi <= lo {
            lo
        } else {
            self.0.random_range(lo..=hi)
        }
    }
}

#[derive(Debug)]
struct Parked {
    acks: Acks,
    end: i64,
}

fn run(seed: u64) -> Result<(), String> {
    let mut rng = Rng(StdRng::seed_from_u64(seed));
    let mut durable = rng.below(2) == 0;
    let config = |durable| PartitionConfig {
        durable,
        ..PartitionConfig::default()
    };
    let log = LocalLog {
        log_start_offset: 0,
        log_end_offset: 0,
        durable_end: 0,
        high_watermark: 0,
    };
    let (mut p, _) = Partition::single_leader(1, config(durable), log, 0);
    let mut now = 0_i64;
    let mut synced = 0_i64; // the storage's SyncState::synced
    let mut leo = 0_i64;
    let mut ends: Vec<i64> = Vec::new(); // batch ends appended so far
    let mut parked: BTreeMap<u64, Parked> = BTreeMap::new();
    let mut next_wait = 0_u64;
    let mut last_hw = 0_i64;
    for step in 0..STEPS {
        let before = p.high_watermark();
        let mut fx = Vec::new();
        let op = rng.below(100);
        let what: String;
        if op < 40 {
            let acks =
                [Acks::None, Acks::Leader, Acks::All][usize::try_from(rng.below(3)).unwrap()];
            p.check_append(acks)
                .map_err(|e| format!("check_append refused: {e:?}"))?;
            leo += 1 + i64::try_from(rng.below(20)).unwrap();
            if !durable {
                synced = leo; // not fsynced, but nothing waits for it either
            }
            ends.push(leo);
            fx.extend(p.on_leader_append(leo, now));
            what = format!("append to {leo} acks {acks:?}");
            await_one(&mut p, &mut parked, &mut next_wait, acks, leo, now)?;
        } else if op < 50 && !ends.is_empty() {
            let end = ends[usize::try_from(rng.below(ends.len() as u64)).unwrap()];
            let acks = [Acks::Leader, Acks::All][usize::try_from(rng.below(2)).unwrap()];
            what = format!("duplicate of batch ending {end} acks {acks:?}");
            await_one(&mut p, &mut parked, &mut next_wait, acks, end, now)?;
        } else if op < 75 {
            // group commit: an fsync covers what was written when it began
            let target = rng.offset_in(synced, leo);
            if rng.below(10) == 0 {
                what = format!("fsync to {target} failed");
                fx.extend(p.on_local_sync_failed(target));
            } else {
                synced = synced.max(target);
                what = format!("fsync to {target}");
                fx.extend(p.on_local_synced(synced, now));
            }
        } else if op < 78 {
            durable = !durable;
            if !durable {
                synced = leo;
            }
            what = format!("durable = {durable}");
            fx.extend(p.set_config(config(durable), now));
        } else if op < 88 {
            now += i64::try_from(rng.below(500)).unwrap();
            what = format!("tick at {now}");
            fx.extend(p.tick(now));
        } else {
            let dso = (rng.below(2) == 0).then(|| rng.offset_in(0, leo + 5));
            let inputs = BoundInputs {
                first_unstable_offset: None,
                delivery_stable_offset: dso,
            };
            let hw = p.high_watermark();
            for reader in [
                Reader::Consumer(Isolation::ReadUncommitted),
                Reader::Consumer(Isolation::ReadCommitted),
                Reader::Replica(9),
            ] {
                let b = p
                    .read_bound(reader, inputs)
                    .map_err(|e| format!("read refused {e:?}"))?;
                let consumer = matches!(reader, Reader::Consumer(_));
                if consumer && (b.max_offset > hw || dso.is_some_and(|d| b.max_offset > d)) {
                    return Err(format!(
                        "step {step}: {reader:?} bound {} above HW {hw} / DSO {dso:?}",
                        b.max_offset
                    ));
                }
                if !consumer && b.max_offset != hw {
                    return Err(format!(
                        "step {step}: unknown replica bound {} != HW {hw}",
                        b.max_offset
                    ));
                }
                if b.high_watermark != hw || b.last_stable_offset > hw {
                    return Err(format!("step {step}: reported {b:?} vs HW {hw}"));
                }
            }
            what = format!("reads with DSO {dso:?}");
        }
        let ctx = |m: String| format!("step {step} ({what}): {m}");
        // Effects: every completion was parked, once, with the right code.
        for e in &fx {
            match e {
                Effect::AckCompleted { wait, error } => {
                    let Some(w) = parked.remove(&wait.0) else {
                        return Err(ctx(format!(
                            "completion of unknown or finished wait {wait:?}"
                        )));
                    };
                    let ok = match error {
                        ErrorCode::None => {
                            w.end <= p.high_watermark()
                                || (w.acks == Acks::Leader && w.end <= p.durable_end())
                        }
                        ErrorCode::KafkaStorageError | ErrorCode::RequestTimedOut => true,
                        _ => false,
                    };
                    if !ok {
                        return Err(ctx(format!("wait {w:?} completed with {error:?}")));
                    }
                }
                Effect::HighWatermarkAdvanced { old, new } if new <= old => {
                    return Err(ctx(format!("HW effect {old} -> {new}")));
                }
                Effect::HighWatermarkLowered { .. } | Effect::ProposeIsr { .. } => {
                    return Err(ctx(format!("unexpected effect {e:?} on one replica")));
                }
                _ => {}
            }
        }
        p.check_invariants().map_err(ctx)?;
        let hw = p.high_watermark();
        if hw < before || hw < last_hw {
            return Err(ctx(format!("HW moved back {last_hw} -> {hw}")));
        }
        // The pre-replication server: HW = LEO, or the synced end on a durable topic.
        let model = if durable { synced.min(leo) } else { leo };
        let model = model.max(last_hw);
        if hw != model {
            return Err(ctx(format!(
                "HW {hw}, the single-node rule says {model} (leo {leo}, synced {synced})"
            )));
        }
        // Nothing that holds stays parked.
        if let Some((id, w)) = parked.iter().find(|(_, w)| w.end <= hw) {
            return Err(ctx(format!("wait {id} {w:?} still parked at HW {hw}")));
        }
        if p.pending_acks() != parked.len() {
            return Err(ctx(format!(
                "{} parked in the core, {} in the model",
                p.pending_acks(),
                parked.len()
            )));
        }
        last_hw = hw;
    }
    Ok(())
}

fn await_one(
    p: &mut Partition,
    parked: &mut BTreeMap<u64, Parked>,
    next_wait: &mut u64,
    acks: Acks,
    end: i64,
    now: i64,
) -> Result<(), String> {
    *next_wait += 1;
    let id = *next_wait;
    match p.await_acks(WaitId(id), acks, end, now + 1_000) {
        AckDecision::Parked => {
            if acks == Acks::None {
                return Err("acks=0 parked".into());
            }
            parked.insert(id, Parked { acks, end });
        }
        AckDecision::Done(ErrorCode::None) => {
            let holds = acks == Acks::None || end <= p.high_watermark();
            if !holds {
                return Err(format!(
                    "acks {acks:?} end {end} done at HW {}",
                    p.high_watermark()
                ));
            }
        }
        AckDecision::Done(e) => return Err(format!("await_acks answered {e:?}")),
    }
    Ok(())
}

#[test]
fn one_replica_simulation() {
    let seeds: Vec<u64> = match std::env::var("SKIFF_SIM_SEED") {
        Ok(s) => vec![s.trim().parse().expect("SKIFF_SIM_SEED must be an integer")],
        Err(_) => (0..SIM_SEEDS).collect(),
    };
    for seed in seeds {
        if let Err(e) = run(seed) {
            panic!(
                "seed {seed}: {e}\nreplay: SKIFF_SIM_SEED={seed} cargo test -p skiff-replication --test sim"
            );
        }
    }
}

/// The model's own helper: a durable acks=-1 wait parks until the fsync, acks=0 never parks.
#[test]
fn await_one_follows_the_rules() {
    let log = LocalLog {
        log_start_offset: 0,
        log_end_offset: 0,
        durable_end: 0,
        high_watermark: 0,
    };
    let (mut p, _) = Partition::single_leader(
        1,
        PartitionConfig {
            durable: true,
            ..PartitionConfig::default()
        },
        log,
        0,
    );
    p.on_leader_append(10, 0);
    let mut parked = BTreeMap::new();
    let mut next = 0;
    await_one(&mut p, &mut parked, &mut next, Acks::All, 10, 0).unwrap();
    assert_eq!(parked.len(), 1, "durable acks=-1 parks until the fsync");
    assert!(await_one(&mut p, &mut parked, &mut next, Acks::None, 10, 0).is_ok());
}
