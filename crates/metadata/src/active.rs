//! The active controller's core over a replicated metadata log (issue 16 item 2; Kafka's
//! `QuorumController` event loop with its `SnapshotRegistry` revert, done by rebuilding).
//!
//! Mental model: the active controller keeps two images. `committed` is the replay of every
//! committed record; `pending` is `committed` plus the records it proposed that the quorum has
//! not committed yet, in proposal order. A request is validated against `pending` (so a second
//! CreateTopics of the same name right after the first is refused even before the first
//! commits), its records are proposed as one batch at offset `pending_end` and applied to
//! `pending` at once, and its response waits until the quorum commits past the batch. A
//! request that changes nothing still waits for what was proposed before it (its answer
//! describes `pending`). Losing leadership ([`ActiveController::resign`]) answers every waiter
//! NOT_CONTROLLER and drops `pending`: nothing uncommitted is ever applied to the committed
//! image, whatever the quorum later does with those records (a new leader may still commit
//! them; the next active controller then sees them through the log like any other record).
//!
//! Pure: no I/O, no clock (`now_ms` comes in), no randomness (fresh ids come in the requests).
//! Invariants: `committed_end <= pending_end`; waiters are in offset order and each is answered
//! exactly once (by [`ActiveController::on_committed`] or [`ActiveController::resign`]);
//! `on_committed` accepts only the next batch in offset order (anything else is refused as an
//! error, never applied).

use std::collections::VecDeque;

use crate::MetadataError;
use crate::controller::{
    BrokerHeartbeats, Ctx, Heartbeat, HeartbeatReply, Request, Response, handle,
};
use crate::frame::Record;
use crate::image::{MetadataImage, replay};

/// A caller's handle on one submitted request (the shell maps it to its reply channel).
pub type Token = u64;

/// What became of a submitted request.
#[derive(Debug)]
pub enum Submitted {
    /// Answered now: refused (nothing proposed), or a no-op with nothing before it to wait for.
    Answer(Result<Response, MetadataError>),
    /// Propose `records` as one batch at `base_offset`; the answer comes once it is committed.
    Propose {
        base_offset: i64,
        records: Vec<Record>,
    },
    /// A no-op that waits for the proposals before it (answered by `on_committed`).
    Wait,
}

#[derive(Debug)]
struct Waiter {
    token: Token,
    /// Answered once the committed end reaches this offset.
    end: i64,
    response: Response,
}

/// The active controller's state for one leadership epoch (see the module docs).
#[derive(Debug)]
pub struct ActiveController {
    node_id: i32,
    epoch: i32,
    cluster_id: String,
    /// Broker sessions: soft state, empty again after every failover (as Kafka's).
    heartbeats: BrokerHeartbeats,
    committed: MetadataImage,
    committed_end: i64,
    pending: MetadataImage,
    pending_end: i64,
    waiting: VecDeque<Waiter>,
}

impl ActiveController {
    /// Becomes active at `epoch` (at `now_ms`) on the committed image: the replay of every
    /// record below `committed_end`, which the new leader has applied before it starts.
    pub fn new(
        node_id: i32,
        epoch: i32,
        cluster_id: &str,
        committed: MetadataImage,
        committed_end: i64,
        now_ms: i64,
        session_timeout_ms: i64,
    ) -> Self {
        ActiveController {
            node_id,
            epoch,
            cluster_id: cluster_id.to_string(),
            heartbeats: BrokerHeartbeats::new(now_ms, session_timeout_ms),
            pending: committed.clone(),
            committed,
            committed_end,
            pending_end: committed_end,
            waiting: VecDeque::new(),
        }
    }

    pub fn epoch(&self) -> i32 {
        self.epoch
    }

    pub fn committed(&self) -> &MetadataImage {
        &self.committed
    }

    pub fn committed_end(&self) -> i64 {
        self.committed_end
    }

    /// The image with every proposal applied, committed or not.
    pub fn pending(&self) -> &MetadataImage {
        &self.pending
    }

    pub fn pending_end(&self) -> i64 {
        self.pending_end
    }

    /// Requests waiting for a commit.
    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }

    /// Validates `request` against the pending image (see the module docs);
    /// `placement_start` is where automatic replica placement starts (random in the shell).
    pub fn submit(
        &mut self,
        token: Token,
        request: &Request,
        now_ms: i64,
        placement_start: usize,
    ) -> Submitted {
        let ctx = Ctx {
            node_id: self.node_id,
            now_ms,
            cluster_id: &self.cluster_id,
            next_offset: self.pending_end,
            placement_start,
            heartbeats: &self.heartbeats,
        };
        let (records, response) = match handle(&self.pending, request, &ctx) {
            Ok(r) => r,
            Err(e) => return Submitted::Answer(Err(e)),
        };
        if let Request::RegisterBroker {
            broker_id,
            incarnation_id,
            ..
        } = request
        {
            self.heartbeats
                .registered(&self.pending, *broker_id, *incarnation_id, now_ms);
        }
        self.stage(token, records, response)
    }

    /// A broker heartbeat: its reply (sent once the returned step completes: at once, or when
    /// its fence/unfence records commit).
    pub fn heartbeat(
        &mut self,
        token: Token,
        hb: &Heartbeat,
        now_ms: i64,
    ) -> Result<(Submitted, HeartbeatReply), MetadataError> {
        let (records, reply) =
            self.heartbeats
                .heartbeat(&self.pending, hb, now_ms, self.pending_end)?;
        Ok((self.stage(token, records, Response::Done), reply))
    }

    /// Fences the broker whose session expired longest ago, if any (Kafka fences one per
    /// periodic check): the broker id and the proposal.
    pub fn fence_expired(&mut self, token: Token, now_ms: i64) -> Option<(i32, Submitted)> {
        let (id, records) = self.heartbeats.fence_expired(&self.pending, now_ms)?;
        Some((id, self.stage(token, records, Response::Done)))
    }

    /// Stages one change's records (or a no-op) behind what is already proposed.
    fn stage(&mut self, token: Token, records: Vec<Record>, response: Response) -> Submitted {
        if records.is_empty() {
            if self.pending_end == self.committed_end {
                return Submitted::Answer(Ok(response));
            }
            self.waiting.push_back(Waiter {
                token,
                end: self.pending_end,
                response,
            });
            return Submitted::Wait;
        }
        let base_offset = self.pending_end;
        self.pending = replay(&self.pending, &records);
        self.pending_end += records.len() as i64;
        self.waiting.push_back(Waiter {
            token,
            end: self.pending_end,
            response,
        });
        Submitted::Propose {
            base_offset,
            records,
        }
    }

    /// The quorum committed the batch `records` at `base_offset` (the next one in offset
    /// order): applies it to the committed image and answers the waiters it completes.
    pub fn on_committed(
        &mut self,
        base_offset: i64,
        records: &[Record],
    ) -> Result<Vec<(Token, Response)>, MetadataError> {
        if base_offset != self.committed_end {
            return Err(MetadataError::Internal(format!(
                "committed batch at offset {base_offset}, but the committed end is {}",
                self.committed_end
            )));
        }
        let end = base_offset + records.len() as i64;
        if end > self.pending_end {
            // Records this controller did not propose: a new leader becomes active only after
            // every earlier record is resolved, so this is a shell bug; nothing is applied.
            return Err(MetadataError::Internal(format!(
                "the log committed past this controller's proposals ({end} > {})",
                self.pending_end
            )));
        }
        self.committed = replay(&self.committed, records);
        self.committed_end = end;
        let mut answered = Vec::new();
        while let Some(w) = self.waiting.front() {
            if w.end > self.committed_end {
                break;
            }
            if let Some(w) = self.waiting.pop_front() {
                answered.push((w.token, w.response));
            }
        }
        Ok(answered)
    }

    /// Leadership is lost: every waiter gets NOT_CONTROLLER; returns them with the committed
    /// image and its end (the node goes on replaying from there).
    pub fn resign(self) -> (Vec<(Token, MetadataError)>, MetadataImage, i64) {
        let refused = self
            .waiting
            .into_iter()
            .map(|w| (w.token, MetadataError::NotController))
            .collect();
        (refused, self.committed, self.committed_end)
    }
}

#[cfg(test)]
#[path = "active_tests.rs"]
mod tests;
