//! Seeded simulation of the pure controller: N brokers registering (new incarnations and
//! amendments), heartbeating (caught up or not, wanting fence or shutdown), going silent and
//! coming back, sessions expiring, topics created and grown, over random steps. After every
//! step the records are replayed (as a commit would) and the invariants checked:
//! - a fenced broker leads no partition; every leader is in its replicas and ISR, registered
//!   and unfenced, or -1; the ISR is never empty and within the replicas;
//! - broker epochs never decrease, a new incarnation's epoch exceeds every earlier one;
//!   leader and partition epochs never decrease;
//! - responses agree with the replayed image (registered epoch, heartbeat's fenced flag).
//!
//! A failing run prints its seed; `SKIFF_SIM_SEED=<seed>` replays that one seed alone.

use std::collections::BTreeMap;

use skiff_types::ErrorCode;
use uuid::Uuid;

use crate::{
    BrokerHeartbeats, Ctx, Heartbeat, MetadataImage, NO_LEADER, Record, Request, Response, handle,
    replay,
};

/// splitmix64: small, seedable, good enough to pick steps.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

struct Sim {
    rng: Rng,
    image: MetadataImage,
    hb: BrokerHeartbeats,
    now: i64,
    next_offset: i64,
    brokers: i32,
    /// Per broker: its incarnation and whether it is running (heartbeating).
    incarnations: BTreeMap<i32, Uuid>,
    silent: BTreeMap<i32, bool>,
    topics: i32,
    uuids: u128,
    log: Vec<String>,
    seen: Seen,
}

/// What the runs exercised (so a simulation that stopped doing anything fails).
#[derive(Default, Debug)]
struct Seen {
    fenced: u32,
    unfenced: u32,
    expired: u32,
    duplicates: u32,
    leaderless: u32,
    shutdowns: u32,
}

impl Sim {
    fn ctx(&self) -> Ctx<'_> {
        Ctx {
            node_id: 0,
            now_ms: self.now,
            cluster_id: "c",
            next_offset: self.next_offset,
            placement_start: self.rng.0 as usize % 97,
            heartbeats: &self.hb,
        }
    }

    fn fresh(&mut self) -> Uuid {
        self.uuids += 1;
        Uuid::from_u128(self.uuids)
    }

    /// Commits `records` (replays them) and checks the invariants against `before`.
    fn commit(&mut self, records: &[Record]) {
        let before = self.image.clone();
        self.image = replay(&self.image, records);
        self.next_offset += records.len() as i64;
        for r in records {
            match r {
                Record::BrokerRegistrationChange(c) if c.fenced == 1 => self.seen.fenced += 1,
                Record::BrokerRegistrationChange(c) if c.fenced == -1 => self.seen.unfenced += 1,
                Record::PartitionChange(c) if c.leader == NO_LEADER => self.seen.leaderless += 1,
                _ => {}
            }
        }
        check(&before, &self.image, &self.log);
    }

    fn step(&mut self) {
        let b = self.rng.below(self.brokers as u64) as i32;
        match self.rng.below(10) {
            0 | 1 => {
                // (Re-)register: a restart (new incarnation) or an amendment.
                let restart = self.rng.chance(60) || !self.incarnations.contains_key(&b);
                let inc = if restart {
                    self.fresh()
                } else {
                    self.incarnations[&b]
                };
                let req = Request::RegisterBroker {
                    cluster_id: "c".into(),
                    broker_id: b,
                    incarnation_id: inc,
                    endpoints: vec![],
                    rack: None,
                };
                self.log
                    .push(format!("t={} register {b} restart={restart}", self.now));
                let before = self.image.clone();
                let result = handle(&self.image, &req, &self.ctx());
                if let Err(e) = &result {
                    assert_eq!(e.error_code(), ErrorCode::DuplicateBrokerRegistration);
                    self.seen.duplicates += 1;
                }
                if let Ok((records, Response::Registered { broker_epoch })) = result {
                    self.commit(&records);
                    let reg = self.image.broker(b).map(|r| r.epoch);
                    assert_eq!(reg, Some(broker_epoch), "{:?}", self.log);
                    if before.broker(b).is_none_or(|r| r.incarnation_id != inc) {
                        let earlier = before.brokers().all(|r| r.epoch < broker_epoch);
                        assert!(earlier, "{:?}", self.log);
                    }
                    self.hb.registered(&before, b, inc, self.now);
                    self.incarnations.insert(b, inc);
                    self.silent.insert(b, false);
                }
            }
            2..=5 => {
                // A heartbeat from a running broker.
                let Some(reg) = self.image.broker(b).cloned() else {
                    return;
                };
                if self.silent.get(&b).copied().unwrap_or(true) {
                    return;
                }
                let behind = self.rng.chance(20);
                let h = Heartbeat {
                    broker_id: b,
                    broker_epoch: if self.rng.chance(5) {
                        reg.epoch - 1
                    } else {
                        reg.epoch
                    },
                    current_metadata_offset: if behind {
                        reg.epoch - 1
                    } else {
                        self.next_offset
                    },
                    want_fence: self.rng.chance(5),
                    want_shut_down: self.rng.chance(5),
                };
                self.log.push(format!("t={} {h:?}", self.now));
                let (now, next) = (self.now, self.next_offset);
                if let Ok((records, reply)) = self.hb.heartbeat(&self.image, &h, now, next) {
                    self.commit(&records);
                    let fenced = self.image.broker(b).map(|r| r.fenced);
                    assert_eq!(fenced, Some(reply.is_fenced), "{:?}", self.log);
                    if reply.should_shut_down {
                        self.seen.shutdowns += 1;
                        self.silent.insert(b, true);
                    }
                }
            }
            6 => {
                self.log.push(format!("t={} {b} goes silent", self.now));
                self.silent.insert(b, true);
            }
            7 => {
                self.now += self.rng.below(6000) as i64;
                while let Some((id, records)) = self.hb.fence_expired(&self.image, self.now) {
                    self.log.push(format!("t={} expired {id}", self.now));
                    self.seen.expired += 1;
                    self.commit(&records);
                    assert!(self.image.broker(id).is_some_and(|r| r.fenced));
                }
            }
            _ => {
                let req = if self.topics > 0 && self.rng.chance(40) {
                    let t = self.rng.below(self.topics as u64);
                    let name = format!("t{t}");
                    let total = self.image.topic(&name).map_or(1, |i| i.partitions) + 1;
                    Request::CreatePartitions {
                        name,
                        total,
                        assignments: vec![],
                    }
                } else {
                    self.topics += 1;
                    Request::CreateTopic {
                        name: format!("t{}", self.topics - 1),
                        topic_id: self.fresh(),
                        partitions: 1 + self.rng.below(4) as i32,
                        replication_factor: 1 + self.rng.below(3) as i16,
                        assignments: vec![],
                        configs: BTreeMap::new(),
                    }
                };
                self.log.push(format!("t={} {req:?}", self.now));
                if let Ok((records, _)) = handle(&self.image, &req, &self.ctx()) {
                    self.commit(&records);
                }
            }
        }
        self.now += self.rng.below(500) as i64;
    }
}

fn check(before: &MetadataImage, after: &MetadataImage, log: &[String]) {
    for b in before.brokers() {
        let now = after.broker(b.id).map(|r| r.epoch);
        assert!(
            now >= Some(b.epoch),
            "broker {} epoch went back: {log:?}",
            b.id
        );
    }
    for t in after.topics.values() {
        for (i, p) in after.partitions(&t.name) {
            let ok = |cond: bool, what: &str| {
                assert!(cond, "{what}: {}-{i} {p:?}: {log:?}", t.name);
            };
            ok(!p.isr.is_empty(), "empty ISR");
            ok(
                p.isr.iter().all(|r| p.replicas.contains(r)),
                "ISR outside replicas",
            );
            if p.leader != NO_LEADER {
                ok(p.replicas.contains(&p.leader), "leader not a replica");
                ok(p.isr.contains(&p.leader), "leader not in ISR");
                let reg = after.broker(p.leader);
                ok(reg.is_some_and(|r| !r.fenced), "fenced or unknown leader");
            }
            if let Some(old) = before.partition(&t.name, i) {
                ok(p.leader_epoch >= old.leader_epoch, "leader epoch went back");
                ok(
                    p.partition_epoch >= old.partition_epoch,
                    "partition epoch went back",
                );
            }
        }
    }
}

fn run(seed: u64) -> Seen {
    let mut rng = Rng(seed);
    let brokers = 1 + rng.below(5) as i32;
    let mut sim = Sim {
        rng,
        image: MetadataImage::default(),
        hb: BrokerHeartbeats::new(0, 9000),
        now: 0,
        next_offset: 0,
        brokers,
        incarnations: BTreeMap::new(),
        silent: BTreeMap::new(),
        topics: 0,
        uuids: 0,
        log: Vec::new(),
        seen: Seen::default(),
    };
    for _ in 0..200 {
        sim.step();
        if sim.log.len() > 40 {
            sim.log.drain(..sim.log.len() - 40);
        }
    }
    sim.seen
}

#[test]
fn seeded_simulation_keeps_the_invariants() {
    let seeds: Vec<u64> = match std::env::var("SKIFF_SIM_SEED") {
        Ok(s) => vec![s.parse().expect("SKIFF_SIM_SEED is a u64")],
        Err(_) => (0..200).collect(),
    };
    let many = seeds.len() > 1;
    let mut total = Seen::default();
    for seed in seeds {
        match std::panic::catch_unwind(|| run(seed)) {
            Ok(s) => {
                total.fenced += s.fenced;
                total.unfenced += s.unfenced;
                total.expired += s.expired;
                total.duplicates += s.duplicates;
                total.leaderless += s.leaderless;
                total.shutdowns += s.shutdowns;
            }
            Err(e) => {
                eprintln!("simulation failed at seed {seed}; replay: SKIFF_SIM_SEED={seed}");
                std::panic::resume_unwind(e);
            }
        }
    }
    if many {
        let Seen {
            fenced,
            unfenced,
            expired,
            duplicates,
            leaderless,
            shutdowns,
        } = total;
        let all = [fenced, unfenced, expired, duplicates, leaderless, shutdowns];
        eprintln!("simulation covered {total:?}");
        assert!(
            all.iter().all(|n| *n > 0),
            "a path was never taken: {total:?}"
        );
    }
}
