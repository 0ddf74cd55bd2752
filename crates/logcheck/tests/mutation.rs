//! Mutation testing (Jepsen's way of validating a checker): a generated valid history (see
//! `common/generator.rs`) must pass; broken in one precise way it must fail with exactly the
//! anomaly that break is. Each mutation runs over `SEEDS` seeds; a failure names its seed,
//! and `LOGCHECK_SEED=<seed> cargo nextest run -p logcheck --test mutation` replays it alone.

mod common;

use std::collections::BTreeSet;

use common::generator::{CONSUMERS, Generated, KEYS, generate};
use common::{assert_found, pretty};
use logcheck::Anomaly::{self, *};
use logcheck::history::{self, Body, Event, F, Key, MicroOp, Proc, Records, Type};
use rand::rngs::StdRng;
use rand::{Rng as _, SeedableRng};

const SEEDS: u64 = 40;
const STEPS: usize = 400;

fn seeds() -> Vec<u64> {
    match std::env::var("LOGCHECK_SEED") {
        Ok(s) => match s.parse() {
            Ok(seed) => vec![seed],
            Err(e) => panic!("LOGCHECK_SEED={s} is not a u64: {e}"),
        },
        Err(_) => (0..SEEDS).collect(),
    }
}

/// Checks `events` through their JSON-lines form (so parsing is exercised too).
fn run(events: &[Event]) -> logcheck::Report {
    let text = history::to_jsonl(events);
    logcheck::check_str(&text).unwrap_or_else(|e| panic!("generated history rejected: {e}"))
}

/// Applies `mutate` to the history of every seed and asserts `expected` exactly; requires the
/// mutation to apply to at least half of the seeds.
fn mutation(name: &str, expected: &[Anomaly], mutate: fn(&mut Generated, &mut StdRng) -> bool) {
    let seeds = seeds();
    let mut applied = 0;
    for &seed in &seeds {
        let mut g = generate(seed, STEPS);
        let mut rng = StdRng::seed_from_u64(seed ^ 0x5eed_5eed);
        if !mutate(&mut g, &mut rng) {
            continue;
        }
        applied += 1;
        let r = run(&g.events);
        assert_found(
            &r,
            expected,
            &format!("{name}, seed {seed} (LOGCHECK_SEED={seed})"),
        );
    }
    assert!(
        applied * 2 >= seeds.len(),
        "{name} applied to only {applied} of {} seeds",
        seeds.len()
    );
}

fn is_consumer(e: &Event) -> bool {
    matches!(e.proc, Proc::Num(n) if CONSUMERS.contains(&n))
}

/// The records of every `ok` poll event, mutable.
fn reads_mut(e: &mut Event) -> Option<&mut Vec<(Key, Records)>> {
    if e.ty != Type::Ok || e.f != F::Poll {
        return None;
    }
    match &mut e.body {
        Body::Ops(ops) => ops.iter_mut().find_map(|op| match op {
            MicroOp::Poll(Some(reads)) => Some(reads),
            _ => None,
        }),
        _ => None,
    }
}

fn reads(e: &Event) -> &[(Key, Records)] {
    if e.ty != Type::Ok || e.f != F::Poll {
        return &[];
    }
    e.ops()
        .iter()
        .find_map(|op| match op {
            MicroOp::Poll(Some(reads)) => Some(reads.as_slice()),
            _ => None,
        })
        .unwrap_or(&[])
}

/// Indices of non-final consumer polls with some key holding at least `n` records.
fn consumer_polls(events: &[Event], n: usize) -> Vec<usize> {
    (0..events.len())
        .filter(|&i| {
            let e = &events[i];
            is_consumer(e) && !e.final_drain && reads(e).iter().any(|(_, r)| r.len() >= n)
        })
        .collect()
}

fn pick<T: Copy>(rng: &mut StdRng, xs: &[T]) -> Option<T> {
    (!xs.is_empty()).then(|| xs[rng.random_range(0..xs.len())])
}

/// A random key with at least `n` records in `e`, and its records.
fn key_with<'a>(e: &'a mut Event, n: usize, rng: &mut StdRng) -> Option<&'a mut Records> {
    let reads = reads_mut(e)?;
    let ks: Vec<usize> = (0..reads.len())
        .filter(|&i| reads[i].1.len() >= n)
        .collect();
    let k = pick(rng, &ks)?;
    Some(&mut reads[k].1)
}

/// Removes `(key, value)` from every poll.
fn unread(events: &mut [Event], key: &Key, value: i64) {
    for e in events {
        if let Some(reads) = reads_mut(e) {
            for (_, recs) in reads.iter_mut().filter(|(k, _)| k == key) {
                recs.retain(|&(_, v)| v != value);
            }
        }
    }
}

#[test]
fn generated_histories_are_valid() {
    for seed in seeds() {
        let g = generate(seed, STEPS);
        let r = run(&g.events);
        assert_found(&r, &[], &format!("unmutated, seed {seed}"));
        assert!(r.all_seen, "seed {seed}: {}", pretty(&r));
        assert!(r.stats.final_drain && r.stats.sends_ok > 30 && r.stats.polls_ok > 50);
        assert_eq!(r.stats.keys, KEYS as usize);
        assert!(r.liveness.heal_to_all_seen.is_some(), "seed {seed}");
    }
}

#[test]
fn generated_histories_round_trip_through_json_lines() {
    for seed in seeds() {
        let g = generate(seed, STEPS);
        let parsed = history::parse(&history::to_jsonl(&g.events)).expect("parses");
        let numbered: Vec<Event> = g
            .events
            .iter()
            .enumerate()
            .map(|(i, e)| Event {
                line: i + 1,
                ..e.clone()
            })
            .collect();
        assert_eq!(parsed, numbered, "seed {seed}");
    }
}

#[test]
fn an_injected_duplicate_is_a_duplicate() {
    mutation("duplicate", &[Duplicate], |g, rng| {
        let key = Key::from(rng.random_range(0..KEYS));
        let Some(i) = g.events.iter().rposition(|e| {
            e.final_drain && reads(e).iter().any(|(k, r)| *k == key && !r.is_empty())
        }) else {
            return false;
        };
        let values: Vec<i64> = g.logs[key.0.parse::<usize>().unwrap_or(0)]
            .entries
            .iter()
            .map(|&(_, v)| v)
            .collect();
        let Some(v) = pick(rng, &values) else {
            return false;
        };
        let Some(reads) = reads_mut(&mut g.events[i]) else {
            return false;
        };
        let Some((_, recs)) = reads.iter_mut().find(|(k, _)| *k == key) else {
            return false;
        };
        let end = recs.last().map_or(0, |r| r.0);
        recs.push((end + 1, v));
        true
    });
}

#[test]
fn a_dropped_poll_is_a_poll_skip() {
    mutation("drop poll", &[PollSkip], |g, rng| {
        let ev = &g.events;
        let candidates: Vec<usize> = consumer_polls(ev, 1)
            .into_iter()
            .filter(|&i| {
                // a key the process read before (since its last assign) and reads again next
                let mine = |e: &&Event| e.proc == ev[i].proc && e.ty == Type::Ok;
                let reads_key =
                    |e: &Event, k: &Key| reads(e).iter().any(|(k2, r)| k2 == k && !r.is_empty());
                reads(&ev[i])
                    .iter()
                    .filter(|(_, r)| !r.is_empty())
                    .any(|(k, _)| {
                        let before = ev[..i]
                            .iter()
                            .rev()
                            .filter(mine)
                            .take_while(|e| e.f != F::Assign)
                            .any(|e| reads_key(e, k));
                        let after = ev[i + 1..]
                            .iter()
                            .filter(mine)
                            .take_while(|e| e.f != F::Assign)
                            .any(|e| reads_key(e, k));
                        before && after
                    })
            })
            .collect();
        let Some(i) = pick(rng, &candidates) else {
            return false;
        };
        assert_eq!(
            (g.events[i - 1].ty, g.events[i - 1].f),
            (Type::Invoke, F::Poll)
        );
        g.events.drain(i - 1..=i);
        true
    });
}

#[test]
fn a_record_dropped_inside_a_poll_is_an_int_poll_skip() {
    mutation("drop record", &[IntPollSkip], |g, rng| {
        let Some(i) = pick(rng, &consumer_polls(&g.events, 3)) else {
            return false;
        };
        let Some(recs) = key_with(&mut g.events[i], 3, rng) else {
            return false;
        };
        let j = rng.random_range(1..recs.len() - 1);
        recs.remove(j);
        true
    });
}

#[test]
fn two_swapped_offsets_in_a_poll_are_inconsistent_offsets_and_duplicates() {
    // Reader sees b at a's offset and a at b's: each offset has two values and each value
    // two offsets (Jepsen reports both).
    mutation(
        "swap offsets",
        &[InconsistentOffsets, Duplicate],
        |g, rng| {
            let Some(i) = pick(rng, &consumer_polls(&g.events, 2)) else {
                return false;
            };
            let Some(recs) = key_with(&mut g.events[i], 2, rng) else {
                return false;
            };
            let j = rng.random_range(0..recs.len() - 1);
            let (a, b) = (recs[j].1, recs[j + 1].1);
            recs[j].1 = b;
            recs[j + 1].1 = a;
            true
        },
    );
}

#[test]
fn a_value_read_differently_once_is_inconsistent_offsets() {
    mutation("overwrite", &[InconsistentOffsets], |g, rng| {
        let Some(i) = pick(rng, &consumer_polls(&g.events, 1)) else {
            return false;
        };
        let Some(recs) = key_with(&mut g.events[i], 1, rng) else {
            return false;
        };
        let j = rng.random_range(0..recs.len());
        recs[j].1 += 1_000_000_000;
        true
    });
}

/// Acknowledged (key, offset, value) at `position` (0 = lowest offset, -1 = highest) of a
/// random key's log.
fn acked_at(g: &Generated, rng: &mut StdRng, position: isize) -> Option<(Key, i64)> {
    let k = rng.random_range(0..KEYS as usize);
    let entries = &g.logs[k].entries;
    if entries.len() < 2 {
        return None;
    }
    let idx = if position < 0 { entries.len() - 1 } else { 0 };
    let (offset, value) = entries[idx];
    g.acked
        .contains(&(k as i64, offset, value))
        .then(|| (Key::from(k as i64), value))
}

#[test]
fn an_acknowledged_send_missing_from_every_poll_is_a_lost_write() {
    // The lowest offset: no reader passes over it, so nothing else shows.
    mutation("lose first", &[LostWrite], |g, rng| {
        let Some((key, value)) = acked_at(g, rng, 0) else {
            return false;
        };
        unread(&mut g.events, &key, value);
        true
    });
}

#[test]
fn a_lost_write_in_the_middle_is_also_skipped_by_its_readers() {
    let mut applied = 0;
    for seed in seeds() {
        let mut g = generate(seed, STEPS);
        let mut rng = StdRng::seed_from_u64(seed);
        let k = rng.random_range(0..KEYS as usize);
        let entries = &g.logs[k].entries;
        let middle: Vec<(i64, i64)> = entries
            .iter()
            .skip(1)
            .take(entries.len().saturating_sub(2))
            .copied()
            .filter(|&(o, v)| g.acked.contains(&(k as i64, o, v)))
            .collect();
        let Some((_, value)) = pick(&mut rng, &middle) else {
            continue;
        };
        applied += 1;
        unread(&mut g.events, &Key::from(k as i64), value);
        let r = run(&g.events);
        let found = r.found();
        let skips: BTreeSet<Anomaly> = [PollSkip, IntPollSkip].into();
        assert!(
            found.contains(&LostWrite)
                && found.len() > 1
                && found.iter().all(|a| *a == LostWrite || skips.contains(a)),
            "seed {seed} (LOGCHECK_SEED={seed}): {}",
            pretty(&r)
        );
        assert_eq!(r.counts[&LostWrite], 1, "seed {seed}");
    }
    assert!(applied > 0);
}

#[test]
fn the_last_send_of_a_key_missing_from_every_poll_is_unseen_not_invalid() {
    mutation("unseen", &[], |g, rng| {
        let Some((key, value)) = acked_at(g, rng, -1) else {
            return false;
        };
        unread(&mut g.events, &key, value);
        let r = run(&g.events);
        assert_eq!((r.unseen.count, r.all_seen), (1, false), "{}", pretty(&r));
        assert_eq!(r.unseen.examples[0].values, vec![value]);
        assert_eq!(
            r.liveness.heal_to_all_seen.is_none(),
            r.liveness.unseen_before_heal == 1
        );
        true
    });
}

#[test]
fn an_idempotent_producers_reordered_offsets_are_nonmonotonic_send() {
    mutation("reorder producer", &[NonmonotonicSend], |g, rng| {
        // consecutive acknowledged sends of one producer to one key: (event, offset, value)
        let proc = Proc::Num(rng.random_range(0..2));
        let key = Key::from(rng.random_range(0..KEYS));
        let sends: Vec<(usize, i64, i64)> = (0..g.events.len())
            .filter(|&i| g.events[i].proc == proc && g.events[i].ty == Type::Ok)
            .filter_map(|i| match g.events[i].ops() {
                [
                    MicroOp::Send {
                        key: k,
                        offset: Some(o),
                        value,
                    },
                ] if *k == key => Some((i, *o, *value)),
                _ => None,
            })
            .collect();
        if sends.len() < 2 {
            return false;
        }
        let j = rng.random_range(0..sends.len() - 1);
        let ((ia, oa, a), (ib, ob, b)) = (sends[j], sends[j + 1]);
        g.events[ia].body = Body::Ops(vec![MicroOp::Send {
            key: key.clone(),
            offset: Some(ob),
            value: a,
        }]);
        g.events[ib].body = Body::Ops(vec![MicroOp::Send {
            key: key.clone(),
            offset: Some(oa),
            value: b,
        }]);
        for e in &mut g.events {
            if let Some(reads) = reads_mut(e) {
                for (_, recs) in reads.iter_mut().filter(|(k, _)| *k == key) {
                    for r in recs.iter_mut() {
                        r.1 = if r.1 == a {
                            b
                        } else if r.1 == b {
                            a
                        } else {
                            r.1
                        };
                    }
                }
            }
        }
        true
    });
}

#[test]
fn a_polled_send_turned_into_a_definite_failure_is_g1a() {
    mutation("fail a read send", &[G1a], |g, rng| {
        let oks: Vec<usize> = (0..g.events.len())
            .filter(|&i| g.events[i].f == F::Send && g.events[i].ty == Type::Ok)
            .collect();
        let Some(i) = pick(rng, &oks) else {
            return false;
        };
        let e = &mut g.events[i];
        let [MicroOp::Send { key, value, .. }] = e.ops() else {
            return false;
        };
        e.body = Body::Ops(vec![MicroOp::Send {
            key: key.clone(),
            offset: None,
            value: *value,
        }]);
        e.ty = Type::Fail;
        e.error = Some("NOT_ENOUGH_REPLICAS".into());
        true
    });
}

#[test]
fn a_repeated_poll_is_a_nonmonotonic_poll() {
    mutation("repeat poll", &[NonmonotonicPoll], |g, rng| {
        let Some(i) = pick(rng, &consumer_polls(&g.events, 1)) else {
            return false;
        };
        let again = [g.events[i - 1].clone(), g.events[i].clone()];
        g.events.splice(i + 1..i + 1, again);
        true
    });
}

#[test]
fn a_record_repeated_inside_a_poll_is_an_int_nonmonotonic_poll() {
    mutation("repeat record", &[IntNonmonotonicPoll], |g, rng| {
        let Some(i) = pick(rng, &consumer_polls(&g.events, 1)) else {
            return false;
        };
        let Some(recs) = key_with(&mut g.events[i], 1, rng) else {
            return false;
        };
        let j = rng.random_range(0..recs.len());
        recs.insert(j + 1, recs[j]);
        true
    });
}

#[test]
fn corrupted_text_is_an_error_or_a_report_never_a_panic() {
    const BYTES: &[u8] = b"{}[],:\"0123456789-. abcdefnlrstu\n";
    for seed in seeds() {
        let text = history::to_jsonl(&generate(seed, 60).events).into_bytes();
        let mut rng = StdRng::seed_from_u64(seed);
        for _ in 0..50 {
            let mut t = text.clone();
            for _ in 0..rng.random_range(1..4) {
                let i = rng.random_range(0..t.len());
                t[i] = BYTES[rng.random_range(0..BYTES.len())];
            }
            let t = String::from_utf8_lossy(&t);
            if let Err(e) = logcheck::check_str(&t) {
                assert!(e.line >= 1, "seed {seed}: {e}");
            }
        }
    }
    // extreme numbers
    let extreme = format!(
        "{}\n{}\n{}\n{}\n",
        r#"{"t":-9223372036854775808,"proc":1,"type":"invoke","f":"send","value":[["send",0,1]]}"#,
        r#"{"t":9223372036854775807,"proc":1,"type":"ok","f":"send","value":[["send",0,[9223372036854775807,1]]]}"#,
        r#"{"t":-9223372036854775808,"proc":"n","type":"info","f":"heal"}"#,
        r#"{"t":0,"proc":2,"type":"ok","f":"poll","value":[["poll",{"0":[[-9223372036854775808,1],[9223372036854775807,1]]}]]}"#,
    );
    let r = logcheck::check_str(&extreme).unwrap_or_else(|e| panic!("{e}"));
    assert!(r.found().contains(&Duplicate), "{}", pretty(&r));
}
