//! Replication between the replicas: a follower's fetch (`fetcher.rs`, `follow.rs`'s
//! `follower_position`), the leader's answer (`read.rs`: `follower_fetch`, then the read
//! under `Partition::read_bound`), and the follower's handling of it (`follow.rs`:
//! `append_fetched`, `truncate_diverged`, `reset_out_of_range`, `truncate_locked`).

use skiff_replication::{BoundInputs, Reader, Role};
use skiff_types::ErrorCode;

use crate::log::Entry;
use crate::world::{FETCH_TIMEOUT_MS, Msg, World};

/// A fetch answer for one partition.
#[derive(Clone, Debug)]
pub enum Body {
    Records { entries: Vec<(i64, Entry)>, hw: i64 },
    Diverging { epoch: i32, end: i64, hw: i64 },
    OutOfRange { leader_end: i64 },
    Error(ErrorCode),
}

impl World {
    /// A follower sends its next fetch (`fetcher.rs` + `follower_position`).
    pub fn send_fetch(&mut self, i: usize) {
        let (now, durable, model) = (self.now, self.cfg.durable, self.cfg.model);
        let n = &mut self.nodes[i];
        let Role::Follower { leader } = n.part.role() else {
            return;
        };
        let busy = n.fetch.is_some_and(|(_, at)| now - at <= FETCH_TIMEOUT_MS);
        if !n.up || n.paused || leader < 1 || busy {
            return;
        }
        if durable && !model.durable_fetch_from_synced_end {
            n.log.synced = n.log.leo(); // the fix: fsync the tail before fetching past it
        }
        let offset = if durable {
            n.log.synced.clamp(0, n.log.leo())
        } else {
            n.log.leo()
        };
        let seq = self.next_seq;
        self.next_seq += 1;
        n.fetch = Some((seq, now));
        let msg = Msg::FetchReq {
            seq,
            offset,
            last_epoch: n.log.latest_epoch(),
            leader_epoch: n.part.leader_epoch(),
        };
        let to = usize::try_from(leader).unwrap_or(0);
        self.send(i + 1, to, msg);
    }

    /// The leader's side of a follower fetch (`read.rs`: `follower_fetch`, then `bounded`
    /// and the read). `None`: no answer (the replica does not serve).
    pub(crate) fn answer_fetch(
        &mut self,
        l: usize,
        f: i32,
        offset: i64,
        last_epoch: i32,
        leader_epoch: i32,
    ) -> Result<Option<Body>, String> {
        if !self.nodes[l].serving {
            return Ok(None);
        }
        let now = self.now;
        let mut diverging = None;
        let n = &mut self.nodes[l];
        // `followerReplicaOrThrow`: only a follower of this partition on its leader.
        if !n.part.followers().iter().any(|x| x.id == f) {
            return Ok(Some(Body::Error(ErrorCode::NotLeaderOrFollower)));
        }
        let check = n.part.check_leader_epoch(leader_epoch);
        if check != ErrorCode::None {
            return Ok(Some(Body::Error(check)));
        }
        if last_epoch >= 0 {
            let (epoch, end) = n.log.end_offset_for(last_epoch);
            if epoch < last_epoch || end < offset {
                diverging = Some((epoch, end));
            }
        }
        if diverging.is_none() {
            match n.part.on_follower_fetch(f, offset, now) {
                Ok(fx) => self.apply(l, fx)?,
                Err(code) => return Ok(Some(Body::Error(code))),
            }
        }
        let n = &self.nodes[l];
        let bound = match n
            .part
            .read_bound(Reader::Replica(f), BoundInputs::default())
        {
            Ok(b) => b,
            Err(code) => return Ok(Some(Body::Error(code))),
        };
        let hw = bound.high_watermark;
        if let Some((epoch, end)) = diverging {
            self.count("diverging answers");
            return Ok(Some(Body::Diverging { epoch, end, hw }));
        }
        if offset > n.log.leo() {
            return Ok(Some(Body::OutOfRange {
                leader_end: n.log.leo(),
            }));
        }
        let max = i64::try_from(1 + self.below(self.max_fetch)).unwrap_or(1);
        let n = &self.nodes[l];
        let entries = (offset..(offset + max).min(bound.max_offset))
            .filter_map(|o| n.log.at(o).map(|e| (o, e)))
            .collect();
        Ok(Some(Body::Records { entries, hw }))
    }

    /// The follower's side of an answer (`fetcher.rs` + `follow.rs`).
    pub(crate) fn on_fetch_response(
        &mut self,
        i: usize,
        seq: u64,
        epoch: i32,
        body: Body,
    ) -> Result<(), String> {
        let n = &mut self.nodes[i];
        if n.fetch.map(|f| f.0) != Some(seq) {
            return Ok(()); // timed out: the client dropped it
        }
        n.fetch = None;
        // `followed`: still a follower at the fetch's leader epoch, else nothing is written.
        if !matches!(n.part.role(), Role::Follower { .. }) || n.part.leader_epoch() != epoch {
            return Ok(());
        }
        match body {
            Body::Error(code) => {
                self.trace.push(format!("  {} backs off: {code:?}", i + 1));
                Ok(())
            }
            Body::Diverging { epoch, end, .. } if epoch >= 0 => {
                // `truncate_diverged`
                let leo = n.log.leo();
                let (own_epoch, own_end) = n.log.end_offset_for(epoch);
                let target = if own_epoch == epoch {
                    end.min(own_end)
                } else {
                    own_end.min(end)
                };
                self.truncate(i, target.min(leo).max(0))
            }
            Body::Diverging { hw, .. } => self.append_fetched(i, Vec::new(), hw),
            Body::Records { entries, hw } => self.append_fetched(i, entries, hw),
            Body::OutOfRange { leader_end } => self.truncate(i, leader_end),
        }
    }

    /// `truncate_locked`.
    fn truncate(&mut self, i: usize, target: i64) -> Result<(), String> {
        let n = &mut self.nodes[i];
        if target >= n.log.leo() {
            if !self.cfg.model.noop_truncation_keeps_epoch {
                let leo = n.log.leo();
                n.log.truncate_epochs_from_end(leo);
            }
            return Ok(());
        }
        let in_isr = self.ctl.latest().isr.contains(&n.id);
        self.hist.on_truncate(n.id, &n.log, target, in_isr)?;
        self.trace.push(format!("  {} truncates to {target}", n.id));
        n.log.truncate_to(target);
        if !self.cfg.model.truncation_keeps_checkpointed_hw {
            n.log.checkpoint_hw = n.log.checkpoint_hw.min(target);
        }
        let fx = n.part.on_truncated(n.log.leo());
        self.count("truncations");
        self.apply(i, fx)
    }

    /// `append_fetched`: batches wholly below the log end are skipped; a durable topic is
    /// fsynced before the core hears the new end and the leader's HW.
    fn append_fetched(
        &mut self,
        i: usize,
        entries: Vec<(i64, Entry)>,
        hw: i64,
    ) -> Result<(), String> {
        let n = &mut self.nodes[i];
        for (o, e) in entries {
            if o < n.log.leo() {
                continue;
            }
            if o > n.log.leo() {
                return Err(format!("model: gap at {o} on replica {}", n.id));
            }
            n.log.append(e);
        }
        let leo = n.log.leo();
        if self.cfg.durable {
            n.log.synced = leo;
        }
        let fx = n
            .part
            .on_fetched_as_follower(leo, n.log.synced.min(leo), hw);
        self.apply(i, fx)
    }
}
