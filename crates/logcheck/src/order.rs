//! Order checks: consumers read each key's log in order, producers write it in order (the
//! note's steps 5 and 6).
//!
//! Mental model, consumers: inside one poll, consecutive records of a key must sit at
//! consecutive indices of the key's log (`int-poll-skip` when a record's index is more than
//! one past its predecessor's, `int-nonmonotonic-poll` when it is not past it at all); this
//! holds for every poll. Across polls the same holds per process, but only in assign mode (after an `ok`/`info`
//! `assign`; a group consumer's partitions move between members, so `subscribe` turns the
//! cross-poll check off): the first record of a key in a poll must follow the last record the
//! process read of that key (`poll-skip`, `nonmonotonic-poll`). The first poll of a key after
//! an assign, a subscribe or a `crash` of the process is unconstrained; an `info` or `fail`
//! poll changes nothing (Jepsen's rules).
//!
//! Mental model, producers: an idempotent producer's acknowledged sends to one key get
//! increasing offsets in the order they were *invoked* (the order of the client calls, which
//! is what idempotence with several requests in flight preserves), within one producer
//! session (a `crash` of the process starts a new one). A later send with a lower or equal
//! offset is `nonmonotonic-send`, `int-nonmonotonic-send` when both are in one transaction.
//! Producers invoked with `idempotent: false` are not checked; gaps (`int-send-skip`) are
//! never flagged.

use std::collections::HashMap;

use crate::history::{Event, F, Key, Proc, Type};
use crate::model::{Model, Poll};
use crate::report::{Anomaly, Case, Findings};
use crate::version::Orders;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Unassigned,
    Assign,
    Subscribe,
}

/// The last record a process read of a key: offset, value, history line.
type Last = (i64, i64, usize);

struct Consumer {
    mode: Mode,
    last: HashMap<Key, Last>,
}

/// `poll-skip`, `nonmonotonic-poll`, `int-poll-skip`, `int-nonmonotonic-poll`.
pub fn check_consumers(events: &[Event], m: &Model, orders: &Orders, out: &mut Findings) {
    let mut procs: HashMap<Proc, Consumer> = HashMap::new();
    let mut polls = m.polls.iter().peekable();
    for (i, e) in events.iter().enumerate() {
        let reset = match (e.f, e.ty) {
            (F::Assign, Type::Ok | Type::Info) => Some(Mode::Assign),
            (F::Subscribe, Type::Ok | Type::Info) => Some(Mode::Subscribe),
            (F::Crash, _) => Some(Mode::Unassigned),
            _ => None,
        };
        if let Some(mode) = reset {
            procs.insert(
                e.proc.clone(),
                Consumer {
                    mode,
                    last: HashMap::new(),
                },
            );
        }
        while let Some(p) = polls.next_if(|p| p.event == i) {
            let c = procs.entry(p.proc.clone()).or_insert(Consumer {
                mode: Mode::Unassigned,
                last: HashMap::new(),
            });
            check_poll(p, c, orders, out);
        }
    }
}

fn check_poll(p: &Poll, c: &mut Consumer, orders: &Orders, out: &mut Findings) {
    for (key, recs) in &p.reads {
        let (Some(&first), Some(&last)) = (recs.first(), recs.last()) else {
            continue;
        };
        for pair in recs.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            step(orders, key, (a.0, a.1, p.line), b, p, out, true);
        }
        if c.mode == Mode::Assign
            && let Some(&prev) = c.last.get(key)
        {
            step(orders, key, prev, first, p, out, false);
        }
        c.last.insert(key.clone(), (last.0, last.1, p.line));
    }
}

/// Compares the index of `prev` with that of `next` (a record of poll `p`) on `key`.
fn step(
    orders: &Orders,
    key: &Key,
    prev: Last,
    (offset, value): (i64, i64),
    p: &Poll,
    out: &mut Findings,
    internal: bool,
) {
    let (Some(log), Some(i1), Some(i2)) = (
        orders.logs.get(key),
        orders.index(key, prev.0),
        orders.index(key, offset),
    ) else {
        return;
    };
    let (kind, note) = if i2 > i1 + 1 {
        let skipped = log.between(i1, i2);
        let kind = if internal {
            Anomaly::IntPollSkip
        } else {
            Anomaly::PollSkip
        };
        (
            kind,
            format!(
                "skipped {} index(es): values {}",
                i2 - i1 - 1,
                list(&skipped)
            ),
        )
    } else if i2 <= i1 {
        let kind = if internal {
            Anomaly::IntNonmonotonicPoll
        } else {
            Anomaly::NonmonotonicPoll
        };
        (kind, format!("index {i1} then index {i2}"))
    } else {
        return;
    };
    let lines = if internal {
        vec![p.line]
    } else {
        vec![prev.2, p.line]
    };
    out.add(
        kind,
        Case {
            offsets: vec![prev.0, offset],
            values: vec![prev.1, value],
            procs: vec![p.proc.clone()],
            lines,
            note,
            ..Case::on(key)
        },
    );
}

fn list(values: &[i64]) -> String {
    const SHOWN: usize = 10;
    let shown: Vec<String> = values.iter().take(SHOWN).map(i64::to_string).collect();
    if values.len() > SHOWN {
        format!("[{}, ...]", shown.join(", "))
    } else {
        format!("[{}]", shown.join(", "))
    }
}

/// A producer's previous acknowledged send to a key: offset, value, invoke event, line.
type PrevSend = (i64, i64, usize, usize);

/// `nonmonotonic-send`, `int-nonmonotonic-send`.
pub fn check_producers(m: &Model, out: &mut Findings) {
    // (proc, session, key) -> the previous acknowledged send
    let mut last: HashMap<(&Proc, usize, &Key), PrevSend> = HashMap::new();
    for w in &m.writers {
        let (Some(offset), Some(line)) = (w.offset, w.done_line) else {
            continue;
        };
        if w.outcome != crate::outcome::Outcome::Ok || !w.idempotent {
            continue;
        }
        let slot = (&w.proc, w.session, &w.key);
        if let Some(&(o, v, op, l)) = last.get(&slot)
            && offset <= o
        {
            let kind = if op == w.op {
                Anomaly::IntNonmonotonicSend
            } else {
                Anomaly::NonmonotonicSend
            };
            out.add(
                kind,
                Case {
                    offsets: vec![o, offset],
                    values: vec![v, w.value],
                    procs: vec![w.proc.clone()],
                    lines: vec![l, line],
                    note: "the later invoked send got the lower offset".into(),
                    ..Case::on(&w.key)
                },
            );
        }
        last.insert(slot, (offset, w.value, w.op, line));
    }
}
