//! Transaction checks (the note's step 7): `precommitted-read` and `torn-transaction`.
//!
//! Mental model: a Kafka transaction's sends become visible to `read_committed` consumers at
//! once, when it commits, or never. So a transaction can never poll its own sends (they are
//! uncommitted while it runs: `precommitted-read`), and for every transaction that committed or
//! may have committed (`ok` or indefinite) and every key, the final drain sees either all of its
//! sends to that key or none (`torn-transaction`). Values of aborted (`fail`) transactions seen
//! by a poll are aborted reads, reported as G1a by [`crate::writes`].
//!
//! Assumptions: every poll is `read_committed` (the note's client profile); the torn check
//! needs the final drain (polls marked `final`) and is skipped, with a note, without one.
//! Write cycles (G0) and the G1c dependency graph are not checked.

use std::collections::{BTreeMap, HashSet};

use crate::history::Key;
use crate::model::Model;
use crate::outcome::Outcome;
use crate::report::{Anomaly, Case, Findings};

/// `precommitted-read`: a transaction's polls returned one of its own sends.
pub fn check_precommitted(m: &Model, out: &mut Findings) {
    for p in &m.polls {
        let Some(t) = p.txn else {
            continue;
        };
        for (key, recs) in &p.reads {
            for &(offset, value) in recs {
                if m.writer(key, value).is_some_and(|w| w.txn == Some(t)) {
                    out.add(
                        Anomaly::PrecommittedRead,
                        Case {
                            offsets: vec![offset],
                            values: vec![value],
                            procs: vec![p.proc.clone()],
                            lines: vec![m.txns[t].invoke_line, p.line],
                            note: "a transaction polled its own send".into(),
                            ..Case::on(key)
                        },
                    );
                }
            }
        }
    }
}

/// `torn-transaction`, against the final drain. Returns false when there is no final drain.
pub fn check_torn(m: &Model, out: &mut Findings) -> bool {
    if !m.polls.iter().any(|p| p.final_drain) {
        return false;
    }
    let drained: HashSet<(&Key, i64)> = m
        .polls
        .iter()
        .filter(|p| p.final_drain)
        .flat_map(|p| {
            p.reads
                .iter()
                .flat_map(|(k, recs)| recs.iter().map(move |&(_, v)| (k, v)))
        })
        .collect();
    for txn in &m.txns {
        if txn.outcome == Outcome::Fail {
            continue;
        }
        let mut by_key: BTreeMap<&Key, (Vec<i64>, Vec<i64>)> = BTreeMap::new();
        for &w in &txn.writes {
            let w = &m.writers[w];
            let (visible, missing) = by_key.entry(&w.key).or_default();
            if drained.contains(&(&w.key, w.value)) {
                visible.push(w.value);
            } else {
                missing.push(w.value);
            }
        }
        for (key, (visible, missing)) in by_key {
            if visible.is_empty() || missing.is_empty() {
                continue;
            }
            let mut values = visible.clone();
            values.extend(&missing);
            out.add(
                Anomaly::TornTransaction,
                Case {
                    values,
                    procs: vec![txn.proc.clone()],
                    lines: [Some(txn.invoke_line), txn.done_line]
                        .into_iter()
                        .flatten()
                        .collect(),
                    note: format!(
                        "final drain saw {visible:?} but not {missing:?} of one transaction"
                    ),
                    ..Case::on(key)
                },
            );
        }
    }
    true
}
