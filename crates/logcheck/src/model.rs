//! The indexed history: every write with its fate, every read, every transaction.
//!
//! Mental model: send values are unique, so a value names its write. A [`Writer`] is created
//! by the invoke that sends the value and finished by the completion that names it again;
//! sends are paired by value, not by process, so a pipelining producer (many sends in flight
//! from one process, as librdkafka does) needs no special treatment. A transaction is paired
//! with its completion per process, first in first out, and its outcome is the outcome of all
//! its writes (atomicity: a committed transaction's sends committed even where the completion
//! names no offset). Reads are the poll micro-ops of `ok` completions only (`info`/`fail`
//! polls are ignored, as Jepsen does); each becomes one [`Poll`].
//!
//! Invariants checked here (each a [`HistoryError`] naming the line): a value is sent by one
//! invoke only; a completion names only values its process invoked, on the same key, once; a
//! transaction completion has a pending transaction invoke of its process. Everything else is
//! the checks' business.

use std::collections::{HashMap, VecDeque};

use crate::history::{Body, Event, F, HistoryError, Key, MicroOp, Proc, Records, Type};
use crate::outcome::Outcome;

/// One send micro-op (of a send or txn event) and its fate.
#[derive(Clone, Debug)]
pub struct Writer {
    pub key: Key,
    pub value: i64,
    pub proc: Proc,
    /// `Send` or `Txn`.
    pub f: F,
    /// Index of the invoke event (invocation order) and the position among its micro-ops.
    pub op: usize,
    pub pos: usize,
    pub invoke_line: usize,
    pub invoke_t: i64,
    /// The process's crash count at the invoke: one producer session per value.
    pub session: usize,
    pub idempotent: bool,
    pub outcome: Outcome,
    /// From the completion (`ok` or `info`).
    pub offset: Option<i64>,
    pub done_line: Option<usize>,
    pub done_t: Option<i64>,
    pub error: Option<String>,
    /// Index into [`Model::txns`].
    pub txn: Option<usize>,
}

/// One poll micro-op of an `ok` poll or txn completion.
#[derive(Clone, Debug)]
pub struct Poll {
    /// Index of the completion event.
    pub event: usize,
    pub line: usize,
    pub t: i64,
    pub proc: Proc,
    pub final_drain: bool,
    pub txn: Option<usize>,
    pub reads: Vec<(Key, Records)>,
}

/// One transaction (txn event pair).
#[derive(Clone, Debug)]
pub struct Txn {
    pub proc: Proc,
    pub invoke_line: usize,
    pub done_line: Option<usize>,
    pub outcome: Outcome,
    /// Indices into [`Model::writers`], in micro-op order.
    pub writes: Vec<usize>,
}

/// The first poll that returned a (key, value).
#[derive(Clone, Debug)]
pub struct Seen {
    pub t: i64,
    pub line: usize,
    pub proc: Proc,
    pub offset: i64,
}

/// The indexed history.
#[derive(Clone, Debug, Default)]
pub struct Model {
    pub writers: Vec<Writer>,
    pub by_value: HashMap<i64, usize>,
    pub polls: Vec<Poll>,
    pub txns: Vec<Txn>,
    /// First sighting of each (key, value) in a poll.
    pub seen: HashMap<(Key, i64), Seen>,
    /// `t` of each heal marker, in history order.
    pub heals: Vec<i64>,
    pub downgraded: usize,
    pub events: usize,
}

impl Model {
    /// The writer of `value` on `key`, if some invoke sent it there.
    pub fn writer(&self, key: &Key, value: i64) -> Option<&Writer> {
        self.by_value
            .get(&value)
            .map(|&i| &self.writers[i])
            .filter(|w| &w.key == key)
    }

    pub fn is_seen(&self, key: &Key, value: i64) -> bool {
        self.seen.contains_key(&(key.clone(), value))
    }

    /// The write certainly took effect: acknowledged, or indefinite but visible (for a
    /// transaction: any of its writes visible).
    pub fn committed(&self, w: &Writer) -> bool {
        match w.outcome {
            Outcome::Ok => true,
            Outcome::Fail => false,
            Outcome::Info | Outcome::Pending => match w.txn {
                Some(t) => self.txns[t]
                    .writes
                    .iter()
                    .any(|&i| self.is_seen(&self.writers[i].key, self.writers[i].value)),
                None => self.is_seen(&w.key, w.value),
            },
        }
    }

    /// Indexes `events` (in history order).
    pub fn build(events: &[Event]) -> Result<Model, HistoryError> {
        let mut b = Builder::default();
        for (i, e) in events.iter().enumerate() {
            b.event(i, e).map_err(|message| HistoryError {
                line: e.line,
                message,
            })?;
        }
        b.m.events = events.len();
        Ok(b.m)
    }
}

#[derive(Default)]
struct Builder {
    m: Model,
    sessions: HashMap<Proc, usize>,
    pending_txns: HashMap<Proc, VecDeque<usize>>,
}

impl Builder {
    fn event(&mut self, i: usize, e: &Event) -> Result<(), String> {
        match (e.f, e.ty) {
            (F::Send | F::Txn, Type::Invoke) => self.invoke(i, e),
            (F::Send, _) => self.complete_sends(e, None),
            (F::Txn, _) => self.complete_txn(i, e),
            (F::Poll, Type::Ok) => {
                self.polls(i, e, None);
                Ok(())
            }
            (F::Crash, _) => {
                *self.sessions.entry(e.proc.clone()).or_default() += 1;
                Ok(())
            }
            (F::Heal, _) => {
                self.m.heals.push(e.t);
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn invoke(&mut self, i: usize, e: &Event) -> Result<(), String> {
        let txn = (e.f == F::Txn).then(|| {
            self.m.txns.push(Txn {
                proc: e.proc.clone(),
                invoke_line: e.line,
                done_line: None,
                outcome: Outcome::Pending,
                writes: Vec::new(),
            });
            let t = self.m.txns.len() - 1;
            self.pending_txns
                .entry(e.proc.clone())
                .or_default()
                .push_back(t);
            t
        });
        let session = self.sessions.get(&e.proc).copied().unwrap_or(0);
        for (pos, op) in e.ops().iter().enumerate() {
            let MicroOp::Send { key, value, .. } = op else {
                continue;
            };
            if let Some(&w) = self.m.by_value.get(value) {
                return Err(format!(
                    "value {value} was already sent at line {}; send values must be unique",
                    self.m.writers[w].invoke_line
                ));
            }
            self.m.writers.push(Writer {
                key: key.clone(),
                value: *value,
                proc: e.proc.clone(),
                f: e.f,
                op: i,
                pos,
                invoke_line: e.line,
                invoke_t: e.t,
                session,
                idempotent: e.idempotent,
                outcome: Outcome::Pending,
                offset: None,
                done_line: None,
                done_t: None,
                error: None,
                txn,
            });
            let w = self.m.writers.len() - 1;
            self.m.by_value.insert(*value, w);
            if let Some(t) = txn {
                self.m.txns[t].writes.push(w);
            }
        }
        Ok(())
    }

    /// Finishes the writers named by a send (or txn) completion's send micro-ops.
    fn complete_sends(&mut self, e: &Event, txn: Option<usize>) -> Result<(), String> {
        let (outcome, downgraded) = Outcome::of(e.ty, e.error.as_deref());
        if downgraded {
            self.m.downgraded += 1;
        }
        for op in e.ops() {
            let MicroOp::Send { key, value, offset } = op else {
                continue;
            };
            let Some(&wi) = self.m.by_value.get(value) else {
                return Err(format!("completes value {value}, which no invoke sent"));
            };
            let w = &mut self.m.writers[wi];
            if let Some(line) = w.done_line {
                return Err(format!(
                    "completes value {value} again (first at line {line})"
                ));
            }
            if &w.key != key {
                return Err(format!(
                    "completes value {value} on key {key}, but line {} sent it to key {}",
                    w.invoke_line, w.key
                ));
            }
            if w.proc != e.proc || w.txn != txn {
                return Err(format!(
                    "completes value {value}, which line {} invoked in another operation",
                    w.invoke_line
                ));
            }
            w.outcome = outcome;
            w.offset = if outcome == Outcome::Fail {
                None
            } else {
                *offset
            };
            w.done_line = Some(e.line);
            w.done_t = Some(e.t);
            w.error.clone_from(&e.error);
        }
        Ok(())
    }

    fn complete_txn(&mut self, i: usize, e: &Event) -> Result<(), String> {
        let Some(t) = self
            .pending_txns
            .get_mut(&e.proc)
            .and_then(VecDeque::pop_front)
        else {
            return Err(format!(
                "a txn completion, but process {:?} has no txn invoke pending",
                e.proc
            ));
        };
        self.complete_sends(e, Some(t))?;
        let (outcome, _) = Outcome::of(e.ty, e.error.as_deref());
        let txn = &mut self.m.txns[t];
        txn.outcome = outcome;
        txn.done_line = Some(e.line);
        for &w in &txn.writes {
            let w = &mut self.m.writers[w];
            w.outcome = outcome;
            if w.done_line.is_none() {
                w.done_line = Some(e.line);
                w.done_t = Some(e.t);
                w.error.clone_from(&e.error);
            }
        }
        if e.ty == Type::Ok {
            self.polls(i, e, Some(t));
        }
        Ok(())
    }

    fn polls(&mut self, i: usize, e: &Event, txn: Option<usize>) {
        let Body::Ops(ops) = &e.body else {
            return;
        };
        for op in ops {
            let MicroOp::Poll(Some(reads)) = op else {
                continue;
            };
            for (key, recs) in reads {
                for &(offset, value) in recs {
                    self.m
                        .seen
                        .entry((key.clone(), value))
                        .or_insert_with(|| Seen {
                            t: e.t,
                            line: e.line,
                            proc: e.proc.clone(),
                            offset,
                        });
                }
            }
            self.m.polls.push(Poll {
                event: i,
                line: e.line,
                t: e.t,
                proc: e.proc.clone(),
                final_drain: e.final_drain,
                txn,
                reads: reads.clone(),
            });
        }
    }
}
