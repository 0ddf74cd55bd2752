//! Seeded KIP-848 simulation: no partition is ever owned by two members.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeSet;

use common::kip848::*;
use skiff_group::GroupConfig;
use skiff_protocol::{ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse};

/// A simulated client: it takes new partitions as soon as a response gives them, but gives
/// up revoked ones only once its revocation finishes, some heartbeats later.
#[derive(Clone, Debug)]
struct SimClient {
    id: String,
    epoch: i32,
    /// What it holds right now.
    owned: Owned,
    /// The last assignment the coordinator sent.
    assigned: Owned,
}

impl SimClient {
    fn on_response(&mut self, r: &ConsumerGroupHeartbeatResponse) {
        self.epoch = r.member_epoch;
        if let Some(a) = owned_of(r) {
            for (id, ps) in &a {
                self.owned
                    .entry(*id)
                    .or_default()
                    .extend(ps.iter().copied());
            }
            self.assigned = a;
        }
    }

    /// Heartbeats with what it still owns; `revoked` says whether its revocation callbacks
    /// have finished (if not, it still reports the partitions it was asked to give up).
    fn heartbeat(&mut self, revoked: bool) -> ConsumerGroupHeartbeatRequest {
        if revoked {
            self.owned = self.assigned.clone();
        }
        beat(&self.id, self.epoch, &self.owned)
    }

    fn as_client(&self) -> Client {
        Client {
            id: self.id.clone(),
            epoch: self.epoch,
            owned: self.owned.clone(),
        }
    }
}

/// Checks that the running clients the coordinator still counts as members own disjoint sets.
fn check_live(h: &H, clients: &[Option<SimClient>], seed: u64) {
    let summary = h.shard.group_summary(GROUP);
    let live: Vec<Client> = clients
        .iter()
        .flatten()
        .filter(|c| summary.as_ref().is_some_and(|s| s.members.contains(&c.id)))
        .map(SimClient::as_client)
        .collect();
    let mut seen = BTreeSet::new();
    for c in &live {
        for (id, ps) in &c.owned {
            for p in ps {
                assert!(
                    seen.insert((*id, *p)),
                    "seed {seed}: {id}-{p} owned twice: {live:?}"
                );
            }
        }
    }
}

/// Seeded simulation: clients join, heartbeat (revoking what they are told to, slowly), leave,
/// crash and rejoin at random; the coordinator restarts now and then. After every response, the
/// live members own disjoint partitions, and in the end everything is owned.
#[test]
fn seeded_kip848_simulation_never_double_assigns() {
    for seed in 1..=8u64 {
        let mut rng = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut next = move |n: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % n
        };
        let config = GroupConfig {
            consumer_session_timeout_ms: 10_000,
            ..GroupConfig::default()
        };
        let mut h = H::new(config);
        let n = 3 + (seed % 4) as usize;
        // None = not running.
        let mut clients: Vec<Option<SimClient>> = vec![None; n];
        let mut incarnation = vec![0u32; n];
        for _step in 0..600 {
            h.advance(next(3_000) as i64);
            let i = next(n as u64) as usize;
            match (&clients[i], next(100)) {
                (None, r) if r < 40 => {
                    incarnation[i] += 1;
                    let id = format!("m{i}-{}", incarnation[i]);
                    let topics: &[&str] = if next(2) == 0 { &["t"] } else { &["t", "u"] };
                    let r = h.hb(&join(&id, topics));
                    if r.error_code == 0 {
                        let mut c = SimClient {
                            id,
                            epoch: 0,
                            owned: Owned::new(),
                            assigned: Owned::new(),
                        };
                        c.on_response(&r);
                        clients[i] = Some(c);
                        check_live(&h, &clients, seed);
                    }
                }
                (Some(_), r) if r < 3 => clients[i] = None, // crash
                (Some(c), r) if r < 6 => {
                    h.hb(&ConsumerGroupHeartbeatRequest {
                        member_epoch: -1,
                        ..beat(&c.id, c.epoch, &c.owned)
                    });
                    clients[i] = None;
                }
                _ => {}
            }
            // Every running client heartbeats (they are chatty, 3 s interval < 10 s session),
            // in a random order.
            let start = next(n as u64) as usize;
            for k in 0..n {
                let j = (start + k) % n;
                let revoked = next(3) != 0;
                let Some(c) = clients[j].as_mut() else {
                    continue;
                };
                let req = c.heartbeat(revoked);
                let r = h.hb(&req);
                match r.error_code {
                    0 => c.on_response(&r),
                    25 | 110 => clients[j] = None, // fenced: it drops its partitions and stops
                    other => panic!("seed {seed}: unexpected error {other}"),
                }
                check_live(&h, &clients, seed);
            }
            if next(100) == 0 {
                h.restart();
            }
        }
        // Quiesce: crashed members' sessions end, and the running clients converge to owning
        // everything they subscribe to.
        for _ in 0..12 {
            h.advance(2_000);
            for slot in clients.iter_mut() {
                let Some(c) = slot else { continue };
                let req = c.heartbeat(true);
                let r = h.hb(&req);
                assert_eq!(r.error_code, 0, "seed {seed}");
                c.on_response(&r);
            }
        }
        check_live(&h, &clients, seed);
        let live: Vec<&SimClient> = clients.iter().flatten().collect();
        if !live.is_empty() {
            assert_eq!(state(&h), "Stable", "seed {seed}");
            let owned_t: usize = live
                .iter()
                .map(|c| c.owned.get(&tid(T)).map_or(0, BTreeSet::len))
                .sum();
            assert_eq!(owned_t, 6, "seed {seed}: every partition of t owned");
        }
    }
}
