//! The invariants, checked after every event ([`History::check`]) and at the moments they
//! are about ([`History::on_append`], [`History::on_truncate`]).
//!
//! The committed log is the history of what leaders declared committed: every offset below
//! a leader's HW, as that leader's log has it. A lossy crash may legitimately lose a
//! committed entry on a non-durable topic (Kafka acknowledges writes the ISR has in memory;
//! without KIP-966's ELR one replica's lost tail can then be lost for good): an entry some
//! crash dropped is "dropped", may be replaced in the committed log by a later leader (a
//! fork, the old entry kept as "superseded"), and is exempt from the acks check. Nothing
//! else is exempt, and nothing at all on a durable topic: there a committed entry is fsynced
//! on the leader and on every follower that counted, so no crash drops it.

use std::collections::{BTreeMap, HashMap, HashSet};

use skiff_replication::Role;

use crate::controller::slot;
use crate::log::{Entry, SimLog, idx, off};
use crate::world::World;

#[derive(Debug, Default)]
pub struct History {
    /// The one leader of each leader epoch.
    leader_of_epoch: BTreeMap<i32, i32>,
    max_leader_epoch: [i32; 3],
    /// (incarnation, partition epoch) last seen per replica.
    partition_epoch: [(u32, i32); 3],
    /// Each (leader, epoch)'s highest HW.
    leader_hw: BTreeMap<(i32, i32), i64>,
    /// What each (offset, epoch) was ever written with by a leader.
    written: HashMap<(i64, i32), u64>,
    pub committed: Vec<Entry>,
    superseded: BTreeMap<i64, Vec<Entry>>,
    pub dropped: HashSet<u64>,
    /// Acknowledged acks=all writes: (offset, entry, leader epoch of the ack).
    pub acked: Vec<(i64, Entry, i32)>,
    acked_checked: usize,
    /// The (incarnation, epoch) each replica was last checked as leader at.
    leader_seen: [Option<(u32, i32)>; 3],
    /// Each replica's log below this offset was checked against the committed log.
    checked: [i64; 3],
    pub forks: usize,
    /// Whether dropped entries are exempt (not on a durable topic, where they never need to be).
    pub exempt_drops: bool,
}

impl History {
    pub fn new(exempt_drops: bool) -> Self {
        Self {
            exempt_drops,
            ..Self::default()
        }
    }

    /// A leader appends `e` at offset `o`: an (offset, epoch) is written once, ever.
    pub fn on_append(&mut self, id: i32, o: i64, e: Entry) -> Result<(), String> {
        match self.written.insert((o, e.epoch), e.payload) {
            Some(p) if p != e.payload => Err(format!(
                "replica {id} writes payload {} at offset {o} epoch {}, which already holds {p}",
                e.payload, e.epoch
            )),
            _ => Ok(()),
        }
    }

    pub fn on_ack(&mut self, entries: &[(i64, Entry)], epoch: i32) {
        self.acked
            .extend(entries.iter().map(|(o, e)| (*o, *e, epoch)));
    }

    fn is_committed(&self, o: i64, e: Entry) -> bool {
        self.committed.get(idx(o)) == Some(&e) && !self.dropped.contains(&e.payload)
    }

    /// A follower truncates its log to `to`: never a committed entry while it is in the ISR
    /// (clean elections only). A follower outside it may (one following a deposed leader it
    /// still believes in, as in Kafka): it fetches them again before it can rejoin.
    pub fn on_truncate(
        &mut self,
        id: i32,
        log: &SimLog,
        to: i64,
        in_isr: bool,
    ) -> Result<(), String> {
        for o in to..log.leo() {
            if let Some(e) = log.at(o)
                && in_isr
                && self.is_committed(o, e)
            {
                return Err(format!("replica {id} truncates committed {e:?} at {o}"));
            }
        }
        let c = &mut self.checked[slot(id)];
        *c = (*c).min(to);
        Ok(())
    }

    /// A crash keeps `keep` entries; what it drops is "dropped" (see the module docs).
    pub fn on_crash(&mut self, id: i32, log: &SimLog, keep: i64) {
        let end = if self.exempt_drops { log.leo() } else { keep };
        for o in keep..end {
            if let Some(e) = log.at(o) {
                self.dropped.insert(e.payload);
            }
        }
        let c = &mut self.checked[slot(id)];
        *c = (*c).min(keep);
    }

    /// Every invariant of the module docs of `sim_cluster.rs`, after an event.
    pub fn check(w: &mut World) -> Result<(), String> {
        let img = w.ctl.latest();
        let mut isr = img.isr.clone();
        isr.sort_unstable();
        isr.dedup();
        let leader_ok =
            img.leader == -1 || (img.isr.contains(&img.leader) && !img.fenced[slot(img.leader)]);
        if isr.is_empty()
            || isr.len() != img.isr.len()
            || !isr.iter().all(|r| (1..=3).contains(r))
            || !leader_ok
        {
            return Err(format!("controller: bad registration {img:?}"));
        }
        let h = &mut w.hist;
        let mut order: Vec<usize> = (0..3).filter(|i| w.nodes[*i].up).collect();
        // Leaders first, newest epoch first: they extend the committed log.
        order.sort_by_key(|i| {
            let p = &w.nodes[*i].part;
            (p.role() != Role::Leader, -p.leader_epoch())
        });
        for i in order {
            let n = &w.nodes[i];
            let (p, id) = (&n.part, n.id);
            p.check_invariants()
                .map_err(|e| format!("replica {id}: core invariant: {e}"))?;
            if p.role() == Role::None {
                continue; // restarted, no role yet (nothing to check but the core's own)
            }
            let (le, pe) = (p.leader_epoch(), p.partition_epoch());
            if le < h.max_leader_epoch[i] {
                return Err(format!(
                    "replica {id}: leader epoch {} -> {le}",
                    h.max_leader_epoch[i]
                ));
            }
            h.max_leader_epoch[i] = le;
            let (inc, last_pe) = h.partition_epoch[i];
            if inc == n.incarnation && pe < last_pe {
                return Err(format!("replica {id}: partition epoch {last_pe} -> {pe}"));
            }
            h.partition_epoch[i] = (n.incarnation, pe);
            let hw = p.high_watermark();
            let leader = p.role() == Role::Leader;
            if leader {
                let first = *h.leader_of_epoch.entry(le).or_insert(id);
                if first != id {
                    return Err(format!("replicas {first} and {id} both lead epoch {le}"));
                }
                let last = h.leader_hw.entry((id, le)).or_insert(hw);
                if hw < *last {
                    return Err(format!("leader {id} HW {} -> {hw} in epoch {le}", *last));
                }
                *last = hw;
            }
            // The committed prefix: identical wherever a replica's own HW covers it.
            let end = hw.min(n.log.leo());
            for o in h.checked[i]..end {
                let e = n.log.at(o).unwrap_or_else(|| unreachable!());
                let k = idx(o);
                match h.committed.get(k).copied() {
                    Some(c) if c == e => {}
                    _ if h.superseded.get(&o).is_some_and(|s| s.contains(&e)) => {}
                    Some(c) if leader && h.dropped.contains(&c.payload) => {
                        for (j, old) in h.committed.drain(k..).enumerate() {
                            h.superseded.entry(o + off(j)).or_default().push(old);
                        }
                        h.committed.push(e);
                        h.forks += 1;
                    }
                    None if leader && k == h.committed.len() => h.committed.push(e),
                    c => {
                        return Err(format!(
                            "replica {id} holds {e:?} at {o} below its HW {hw}; committed: {c:?} \
                             (committed end {}, checked from {}, forks {})",
                            h.committed.len(),
                            h.checked[i],
                            h.forks
                        ));
                    }
                }
            }
            h.checked[i] = h.checked[i].max(end);
            // Every acknowledged write is in every later leader's log.
            if leader && h.leader_seen[i] != Some((n.incarnation, le)) {
                h.leader_seen[i] = Some((n.incarnation, le));
                for &(o, e, at) in &h.acked {
                    if at <= le && !h.dropped.contains(&e.payload) && n.log.at(o) != Some(e) {
                        return Err(format!(
                            "leader {id} at epoch {le} lacks acknowledged {e:?} at {o} (has {:?})",
                            n.log.at(o)
                        ));
                    }
                }
            }
        }
        for k in h.acked_checked..h.acked.len() {
            let (o, e, at) = h.acked[k];
            if h.dropped.contains(&e.payload) {
                continue;
            }
            if !h.is_committed(o, e) {
                return Err(format!("acknowledged {e:?} at {o} is not committed"));
            }
            for n in w.nodes.iter().filter(|n| n.up) {
                let le = n.part.leader_epoch();
                if n.part.role() == Role::Leader && le >= at && n.log.at(o) != Some(e) {
                    return Err(format!("leader {} at {le} lacks acknowledged {e:?}", n.id));
                }
            }
        }
        h.acked_checked = h.acked.len();
        Ok(())
    }
}
