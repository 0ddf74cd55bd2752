//! Liveness figures (the note's step 9): how fast the system came back after the faults, and
//! the longest time a key accepted no write. Never part of `valid`; the harness compares them
//! with its own bounds (e.g. G13's 30 s / 60 s).
//!
//! Mental model: the nemesis writes `{"f":"fault"}` when it breaks something and
//! `{"f":"heal"}` when everything is repaired (any `proc`, usually `"nemesis"`, type `info`).
//! From the *last* heal at time `h`:
//! - `heal_to_first_ok_send`: the first acknowledged send invoked at or after `h` completes at
//!   `h + x` (writes resumed);
//! - `heal_to_all_seen`: every acknowledged send invoked before `h` (the writes the faults could
//!   have hurt) has been polled by `h + x`; 0 when they all were before the heal, null when some
//!   never were (`unseen_before_heal` counts them).
//!
//! Per key, unavailability is the longest stretch without an acknowledged send to it, from
//! its first acknowledgement (so a client's start-up does not count; a key never acknowledged
//! counts from its first invoke) to the later of its last invoke and last acknowledgement (so
//! a key that stopped accepting writes shows the stretch up to its last attempt). All figures
//! are in the unit of `t` (nanoseconds for the workload driver); without heal markers the
//! heal figures are null.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::history::Key;
use crate::model::Model;
use crate::outcome::Outcome;

/// The longest stretch one key accepted no write.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Unavailability {
    pub key: Key,
    pub from: i64,
    pub to: i64,
    pub duration: i64,
}

/// Liveness figures, in the unit of `t`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Liveness {
    /// `t` of the last heal marker.
    pub last_heal: Option<i64>,
    pub heal_to_first_ok_send: Option<i64>,
    pub heal_to_all_seen: Option<i64>,
    pub unseen_before_heal: usize,
    pub longest_unavailability: Option<Unavailability>,
    pub unavailability_by_key: BTreeMap<Key, i64>,
}

pub fn measure(m: &Model) -> Liveness {
    let mut out = Liveness {
        last_heal: m.heals.last().copied(),
        ..Liveness::default()
    };
    if let Some(h) = out.last_heal {
        out.heal_to_first_ok_send = m
            .writers
            .iter()
            .filter(|w| w.outcome == Outcome::Ok && w.invoke_t >= h)
            .filter_map(|w| w.done_t)
            .min()
            .map(|t| t.saturating_sub(h));
        let mut latest = h;
        for w in m
            .writers
            .iter()
            .filter(|w| w.outcome == Outcome::Ok && w.invoke_t < h)
        {
            match m.seen.get(&(w.key.clone(), w.value)) {
                Some(s) => latest = latest.max(s.t),
                None => out.unseen_before_heal += 1,
            }
        }
        out.heal_to_all_seen = (out.unseen_before_heal == 0).then_some(latest.saturating_sub(h));
    }

    // key -> (first invoke, last invoke, acknowledgement times)
    let mut keys: BTreeMap<&Key, (i64, i64, Vec<i64>)> = BTreeMap::new();
    for w in &m.writers {
        let e = keys
            .entry(&w.key)
            .or_insert((w.invoke_t, w.invoke_t, Vec::new()));
        e.0 = e.0.min(w.invoke_t);
        e.1 = e.1.max(w.invoke_t);
        if let (Outcome::Ok, Some(t)) = (w.outcome, w.done_t) {
            e.2.push(t);
        }
    }
    for (key, (first, last, mut acks)) in keys {
        acks.sort_unstable();
        let start = acks.first().copied().unwrap_or(first);
        let end = acks.last().map_or(last, |&a| a.max(last));
        let mut points = Vec::with_capacity(acks.len() + 2);
        points.push(start);
        points.extend(&acks);
        points.push(end);
        let Some((from, to)) = points
            .windows(2)
            .map(|w| (w[0], w[1]))
            .max_by_key(|(a, b)| b.saturating_sub(*a))
        else {
            continue;
        };
        let duration = to.saturating_sub(from);
        out.unavailability_by_key.insert(key.clone(), duration);
        if out
            .longest_unavailability
            .as_ref()
            .is_none_or(|u| duration > u.duration)
        {
            out.longest_unavailability = Some(Unavailability {
                key: key.clone(),
                from,
                to,
                duration,
            });
        }
    }
    out
}
