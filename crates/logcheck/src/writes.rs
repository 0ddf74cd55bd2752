//! The fate of writes: aborted reads (G1a), lost writes, unseen writes (the note's steps 2-4).
//!
//! Mental model: every acknowledged value must eventually be read, every definitely failed
//! one never. Readers advance through a key's log in order, so the highest index anybody
//! polled is a frontier: an acknowledged value *below* it that nobody polled was skipped by
//! every reader, a safety violation (`lost-write`); one *above* it may simply not have been
//! read yet (`unseen`, liveness, reported apart). The two sets are disjoint: a value is lost
//! or unseen, never both.
//!
//! Jepsen's refinements are kept: the frontier is the highest *first* index of a polled value,
//! and only values whose *last* index is at or below it must have been read (a duplicated or
//! conflicting value cannot move the frontier past records nobody could have seen), and only
//! writes that certainly happened ([`Model::committed`]) can be lost. G1a is reported once per
//! value (the first poll that returned it); its writer is a `fail` send or a send of a `fail`
//! (aborted) transaction. Error classification is [`crate::outcome`]'s.

use std::collections::{BTreeMap, HashSet};

use crate::history::Key;
use crate::model::Model;
use crate::outcome::Outcome;
use crate::report::{Anomaly, Case, Findings, MAX_EXAMPLES, Unseen};
use crate::version::Orders;

/// G1a: polled values whose writer definitely failed (or whose transaction aborted).
pub fn check_aborted_reads(m: &Model, out: &mut Findings) {
    let mut reported = HashSet::new();
    for p in &m.polls {
        for (key, recs) in &p.reads {
            for &(offset, value) in recs {
                let Some(w) = m.writer(key, value) else {
                    continue;
                };
                if w.outcome != Outcome::Fail || !reported.insert(value) {
                    continue;
                }
                let what = if w.txn.is_some() {
                    "an aborted transaction"
                } else {
                    "a failed send"
                };
                out.add(
                    Anomaly::G1a,
                    Case {
                        offsets: vec![offset],
                        values: vec![value],
                        procs: vec![p.proc.clone(), w.proc.clone()],
                        lines: vec![p.line, w.done_line.unwrap_or(w.invoke_line)],
                        note: format!(
                            "polled a value written by {what} (error {})",
                            w.error.as_deref().unwrap_or("none")
                        ),
                        ..Case::on(key)
                    },
                );
            }
        }
    }
}

/// `lost-write` (findings) and unseen writes (returned): acknowledged values never polled,
/// below and above their key's read frontier respectively.
pub fn check_lost_and_unseen(m: &Model, orders: &Orders, out: &mut Findings) -> Unseen {
    let mut read: BTreeMap<&Key, HashSet<i64>> = BTreeMap::new();
    for p in &m.polls {
        for (key, recs) in &p.reads {
            read.entry(key)
                .or_default()
                .extend(recs.iter().map(|&(_, v)| v));
        }
    }
    let mut lost: HashSet<i64> = HashSet::new();
    for (key, log) in &orders.logs {
        let Some(values) = read.get(key) else {
            continue;
        };
        let Some((bound, top)) = values
            .iter()
            .filter_map(|v| log.span.get(v).map(|s| (s.0, *v)))
            .max()
        else {
            continue;
        };
        for i in 0..=bound {
            for v in log.values_at(i) {
                let last = log.span.get(&v).map_or(usize::MAX, |s| s.1);
                if last != i || values.contains(&v) {
                    continue;
                }
                let Some(w) = m.writer(key, v) else {
                    continue;
                };
                if !m.committed(w) {
                    continue;
                }
                lost.insert(v);
                let top_seen = m.seen.get(&(key.clone(), top));
                let mut procs = vec![w.proc.clone()];
                let mut lines = vec![w.done_line.unwrap_or(w.invoke_line)];
                if let Some(s) = top_seen {
                    procs.push(s.proc.clone());
                    lines.push(s.line);
                }
                out.add(
                    Anomaly::LostWrite,
                    Case {
                        offsets: log.offsets.get(i).copied().into_iter().collect(),
                        values: vec![v],
                        procs,
                        lines,
                        note: format!(
                            "acknowledged at index {i}, never polled, though value {top} at \
                             index {bound} was"
                        ),
                        ..Case::on(key)
                    },
                );
            }
        }
    }

    let mut unseen = Unseen::default();
    for w in &m.writers {
        if w.outcome != Outcome::Ok || m.is_seen(&w.key, w.value) || lost.contains(&w.value) {
            continue;
        }
        unseen.count += 1;
        *unseen.by_key.entry(w.key.clone()).or_default() += 1;
        if unseen.examples.len() < MAX_EXAMPLES {
            unseen.examples.push(Case {
                offsets: w.offset.into_iter().collect(),
                values: vec![w.value],
                procs: vec![w.proc.clone()],
                lines: vec![w.done_line.unwrap_or(w.invoke_line)],
                ..Case::on(&w.key)
            });
        }
    }
    unseen
}
