//! Version orders: each key's log as the clients saw it, and the two checks on it
//! (`inconsistent-offsets`, `duplicate`).
//!
//! Mental model: a Kafka partition is a log, and every offset a client learns pins a value to a
//! place in it. Acknowledged sends (and indefinite ones proven visible, see
//! [`Model::committed`]) contribute `offset -> value` from their completion; every record of
//! every `ok` poll contributes too. The result, per key, is `offset -> {values}`; with a
//! correct broker every set has one element and every value one offset. The *index* of an
//! offset is its rank among the offsets that carry a value (a dense offset): gaps left by
//! transaction markers, aborted records or failed sends are not positions, so the order checks
//! compare indices, never raw offsets.
//!
//! Checks, the design note's step 1: an offset with two values is `inconsistent-offsets`
//! (one case per offset); a value at two offsets is `duplicate` (one case per value, Jepsen's
//! semantics: every offset the value was seen at counts, so a reader that saw two values
//! swapped produces both anomalies).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::history::{Key, Proc};
use crate::model::Model;
use crate::report::{Anomaly, Case, Findings};

/// Where a (offset, value) pair was first learnt.
#[derive(Clone, Debug)]
pub struct Source {
    pub line: usize,
    pub proc: Proc,
}

/// One key's log.
#[derive(Clone, Debug, Default)]
pub struct KeyLog {
    /// offset -> value -> first source.
    pub at: BTreeMap<i64, BTreeMap<i64, Source>>,
    /// Dense index of each offset.
    pub index: HashMap<i64, usize>,
    /// Offsets by dense index.
    pub offsets: Vec<i64>,
    /// value -> (first index, last index) it appears at.
    pub span: HashMap<i64, (usize, usize)>,
}

impl KeyLog {
    fn insert(&mut self, offset: i64, value: i64, line: usize, proc: &Proc) {
        self.at
            .entry(offset)
            .or_default()
            .entry(value)
            .or_insert_with(|| Source {
                line,
                proc: proc.clone(),
            });
    }

    fn finish(&mut self) {
        for (i, (&offset, values)) in self.at.iter().enumerate() {
            self.index.insert(offset, i);
            self.offsets.push(offset);
            for &v in values.keys() {
                self.span.entry(v).and_modify(|s| s.1 = i).or_insert((i, i));
            }
        }
    }

    /// Values at dense index `i`.
    pub fn values_at(&self, i: usize) -> impl Iterator<Item = i64> + '_ {
        self.offsets
            .get(i)
            .and_then(|o| self.at.get(o))
            .into_iter()
            .flat_map(|vs| vs.keys().copied())
    }

    /// Values at the indices strictly between `from` and `to`.
    pub fn between(&self, from: usize, to: usize) -> Vec<i64> {
        ((from + 1)..to).flat_map(|i| self.values_at(i)).collect()
    }
}

/// Every key's log.
#[derive(Clone, Debug, Default)]
pub struct Orders {
    pub logs: BTreeMap<Key, KeyLog>,
}

impl Orders {
    pub fn build(m: &Model) -> Orders {
        let mut logs: BTreeMap<Key, KeyLog> = BTreeMap::new();
        for w in &m.writers {
            if let (Some(offset), Some(line)) = (w.offset, w.done_line)
                && m.committed(w)
            {
                logs.entry(w.key.clone())
                    .or_default()
                    .insert(offset, w.value, line, &w.proc);
            }
        }
        for p in &m.polls {
            for (key, recs) in &p.reads {
                let log = logs.entry(key.clone()).or_default();
                for &(offset, value) in recs {
                    log.insert(offset, value, p.line, &p.proc);
                }
            }
        }
        for log in logs.values_mut() {
            log.finish();
        }
        Orders { logs }
    }

    /// The dense index of `offset` on `key` (every polled offset has one).
    pub fn index(&self, key: &Key, offset: i64) -> Option<usize> {
        self.logs.get(key)?.index.get(&offset).copied()
    }
}

/// `inconsistent-offsets` and `duplicate`.
pub fn check(orders: &Orders, out: &mut Findings) {
    for (key, log) in &orders.logs {
        for (&offset, values) in &log.at {
            if values.len() > 1 {
                let (procs, lines) = sources(values.values());
                out.add(
                    Anomaly::InconsistentOffsets,
                    Case {
                        offsets: vec![offset],
                        values: values.keys().copied().collect(),
                        procs,
                        lines,
                        ..Case::on(key)
                    },
                );
            }
        }
        let mut at: BTreeMap<i64, Vec<(i64, &Source)>> = BTreeMap::new();
        for (&offset, values) in &log.at {
            for (&v, src) in values {
                at.entry(v).or_default().push((offset, src));
            }
        }
        for (value, places) in at {
            if places.len() > 1 {
                let (procs, lines) = sources(places.iter().map(|(_, s)| *s));
                out.add(
                    Anomaly::Duplicate,
                    Case {
                        offsets: places.iter().map(|(o, _)| *o).collect(),
                        values: vec![value],
                        procs,
                        lines,
                        note: format!("value at {} offsets", places.len()),
                        ..Case::on(key)
                    },
                );
            }
        }
    }
}

fn sources<'a>(srcs: impl Iterator<Item = &'a Source>) -> (Vec<Proc>, Vec<usize>) {
    let mut procs = BTreeSet::new();
    let mut lines = BTreeSet::new();
    for s in srcs {
        procs.insert(s.proc.clone());
        lines.insert(s.line);
    }
    (procs.into_iter().collect(), lines.into_iter().collect())
}
