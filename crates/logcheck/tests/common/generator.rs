//! A seeded generator of valid W1 histories: two idempotent, pipelining producers and two
//! assign-mode consumers over three keys, against a simulated correct broker (one log per
//! key, occasional offset gaps, definite failures that append nothing, indefinite ones that
//! may or may not append), a fault and a heal marker, then a final drain. The mutation tests
//! break such a history in one precise way.

use std::collections::VecDeque;

use logcheck::history::{Body, Event, F, Key, MicroOp, Proc, Records, Type};
use rand::rngs::StdRng;
use rand::{Rng as _, SeedableRng};

pub const KEYS: i64 = 3;
pub const PRODUCERS: [i64; 2] = [0, 1];
pub const CONSUMERS: [i64; 2] = [2, 3];
pub const DRAIN: i64 = 4;

/// The simulated broker's log of one key: (offset, value), and who wrote each entry.
#[derive(Clone, Debug, Default)]
pub struct Log {
    pub entries: Vec<(i64, i64)>,
    pub next_offset: i64,
}

#[derive(Default)]
struct Producer {
    inflight: VecDeque<(i64, i64)>,
    appended: VecDeque<(i64, i64, i64)>,
}

pub struct Generated {
    pub events: Vec<Event>,
    pub logs: Vec<Log>,
    /// Values acknowledged with their offsets.
    pub acked: Vec<(i64, i64, i64)>,
}

struct Gen {
    rng: StdRng,
    t: i64,
    events: Vec<Event>,
    logs: Vec<Log>,
    next_value: i64,
    producers: Vec<Producer>,
    positions: Vec<Vec<usize>>,
    acked: Vec<(i64, i64, i64)>,
}

fn ev(t: i64, proc: Proc, ty: Type, f: F, body: Body) -> Event {
    Event {
        line: 0,
        t,
        proc,
        ty,
        f,
        body,
        error: None,
        final_drain: false,
        idempotent: true,
    }
}

fn send(key: i64, offset: Option<i64>, value: i64) -> Body {
    Body::Ops(vec![MicroOp::Send {
        key: Key::from(key),
        offset,
        value,
    }])
}

fn keys() -> Body {
    Body::Keys((0..KEYS).map(Key::from).collect())
}

impl Gen {
    fn push(&mut self, proc: Proc, ty: Type, f: F, body: Body) -> &mut Event {
        self.t += self.rng.random_range(1..10);
        self.events.push(ev(self.t, proc, ty, f, body));
        let last = self.events.len() - 1;
        &mut self.events[last]
    }

    fn invoke_send(&mut self, p: usize) {
        let key = self.rng.random_range(0..KEYS);
        let value = self.next_value;
        self.next_value += 1;
        self.push(
            Proc::Num(PRODUCERS[p]),
            Type::Invoke,
            F::Send,
            send(key, None, value),
        );
        self.producers[p].inflight.push_back((key, value));
    }

    fn append(&mut self, key: i64, value: i64) -> i64 {
        let gap = self.rng.random_bool(0.05);
        let log = &mut self.logs[key as usize];
        let offset = log.next_offset;
        log.entries.push((offset, value));
        log.next_offset = offset + 1 + i64::from(gap);
        offset
    }

    /// The oldest in-flight send of producer `p` reaches the broker.
    fn deliver(&mut self, p: usize, always_ok: bool) {
        let Some((key, value)) = self.producers[p].inflight.pop_front() else {
            return;
        };
        let roll = if always_ok {
            0.0
        } else {
            self.rng.random::<f64>()
        };
        let proc = Proc::Num(PRODUCERS[p]);
        if roll < 0.9 {
            let offset = self.append(key, value);
            self.producers[p].appended.push_back((key, value, offset));
        } else if roll < 0.95 {
            self.push(proc, Type::Fail, F::Send, send(key, None, value))
                .error = Some("MESSAGE_TOO_LARGE".into());
        } else {
            if self.rng.random_bool(0.5) {
                self.append(key, value);
            }
            self.push(proc, Type::Info, F::Send, send(key, None, value))
                .error = Some("REQUEST_TIMED_OUT".into());
        }
    }

    fn ack(&mut self, p: usize) {
        let Some((key, value, offset)) = self.producers[p].appended.pop_front() else {
            return;
        };
        self.acked.push((key, offset, value));
        let body = send(key, Some(offset), value);
        self.push(Proc::Num(PRODUCERS[p]), Type::Ok, F::Send, body);
    }

    /// One poll by consumer slot `c` (or the drain), reading `min..=max` records per key (fewer
    /// at the log's end). False when it read nothing.
    fn poll(&mut self, c: usize, proc: i64, min: usize, max: usize, final_drain: bool) -> bool {
        let mut reads: Vec<(Key, Records)> = Vec::new();
        let mut any = false;
        for k in 0..KEYS as usize {
            let pos = self.positions[c][k];
            let end = self.logs[k]
                .entries
                .len()
                .min(pos + self.rng.random_range(min..=max));
            if end > pos {
                reads.push((Key::from(k as i64), self.logs[k].entries[pos..end].to_vec()));
                self.positions[c][k] = end;
                any = true;
            }
        }
        let p = Proc::Num(proc);
        let body = Body::Ops(vec![MicroOp::Poll(None)]);
        self.push(p.clone(), Type::Invoke, F::Poll, body)
            .final_drain = final_drain;
        let body = Body::Ops(vec![MicroOp::Poll(Some(reads))]);
        self.push(p, Type::Ok, F::Poll, body).final_drain = final_drain;
        any
    }

    fn assign(&mut self, c: usize, proc: i64, final_drain: bool) {
        self.positions[c] = vec![0; KEYS as usize];
        let p = Proc::Num(proc);
        self.push(p.clone(), Type::Invoke, F::Assign, keys())
            .final_drain = final_drain;
        self.push(p, Type::Ok, F::Assign, keys()).final_drain = final_drain;
    }
}

/// A valid history of about `steps` steps.
pub fn generate(seed: u64, steps: usize) -> Generated {
    let mut g = Gen {
        rng: StdRng::seed_from_u64(seed),
        t: 0,
        events: Vec::new(),
        logs: vec![Log::default(); KEYS as usize],
        next_value: 1,
        producers: PRODUCERS.iter().map(|_| Producer::default()).collect(),
        positions: vec![vec![0; KEYS as usize]; CONSUMERS.len() + 1],
        acked: Vec::new(),
    };
    for (c, &proc) in CONSUMERS.iter().enumerate() {
        g.assign(c, proc, false);
    }
    let nemesis = Proc::Name("nemesis".into());
    for step in 0..steps {
        if step == steps / 3 {
            g.push(
                nemesis.clone(),
                Type::Info,
                F::Fault,
                Body::Other("pause b1".into()),
            );
        }
        if step == 2 * steps / 3 {
            g.push(
                nemesis.clone(),
                Type::Info,
                F::Heal,
                Body::Other(serde_json::Value::Null),
            );
        }
        let p = g.rng.random_range(0..PRODUCERS.len());
        match g.rng.random_range(0..100) {
            0..30 if g.producers[p].inflight.len() < 5 => g.invoke_send(p),
            0..50 => g.deliver(p, false),
            50..70 => g.ack(p),
            70..98 => {
                let c = g.rng.random_range(0..CONSUMERS.len());
                g.poll(c, CONSUMERS[c], 0, 4, false);
            }
            _ => {
                let c = g.rng.random_range(0..CONSUMERS.len());
                g.assign(c, CONSUMERS[c], false);
            }
        }
    }
    for p in 0..PRODUCERS.len() {
        while !g.producers[p].inflight.is_empty() {
            g.deliver(p, true);
        }
        while !g.producers[p].appended.is_empty() {
            g.ack(p);
        }
    }
    let drain = CONSUMERS.len();
    g.assign(drain, DRAIN, true);
    while g.poll(drain, DRAIN, 1, 4, true) {}
    Generated {
        events: g.events,
        logs: g.logs,
        acked: g.acked,
    }
}
