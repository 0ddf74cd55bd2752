//! [`Member`]: how this node takes part in the metadata quorum (issue 16): a voter
//! (`process.roles` with `controller`: a [`Quorum`] member) or an observer (broker-only: an
//! [`Observer`] fetching committed entries from the voters). The broker shell asks it the same
//! questions either way (the leader, the voters' endpoints, the applied end, a fatal stop);
//! only a voter serves the quorum's private RPCs.

use tokio::sync::watch;

use crate::observer::Observer;
use crate::quorum::Quorum;

/// This node's part in the metadata quorum (cheap to clone).
#[derive(Clone, Debug)]
pub enum Member {
    Voter(Quorum),
    Observer(Observer),
}

impl Member {
    /// The voter, if this node is one.
    pub fn voter(&self) -> Option<&Quorum> {
        match self {
            Member::Voter(q) => Some(q),
            Member::Observer(_) => None,
        }
    }

    pub fn is_voter(&self) -> bool {
        matches!(self, Member::Voter(_))
    }

    pub fn node_id(&self) -> i32 {
        match self {
            Member::Voter(q) => q.node_id(),
            Member::Observer(o) => o.node_id(),
        }
    }

    /// The active controller, if known.
    pub fn leader(&self) -> Option<i32> {
        match self {
            Member::Voter(q) => q.leader(),
            Member::Observer(o) => o.leader(),
        }
    }

    pub fn epoch(&self) -> i32 {
        match self {
            Member::Voter(q) => q.epoch(),
            Member::Observer(o) => o.epoch(),
        }
    }

    pub fn voter_endpoint(&self, id: i32) -> Option<(String, u16)> {
        match self {
            Member::Voter(q) => q.voter_endpoint(id),
            Member::Observer(o) => o.voter_endpoint(id),
        }
    }

    pub fn voter_ids(&self) -> Vec<i32> {
        match self {
            Member::Voter(q) => q.voter_ids(),
            Member::Observer(o) => o.voter_ids(),
        }
    }

    /// The applied end offset of the metadata image, as it moves.
    pub fn applied(&self) -> watch::Receiver<i64> {
        match self {
            Member::Voter(q) => q.applied(),
            Member::Observer(o) => o.applied(),
        }
    }

    /// Set (once) when the node cannot go on safely: it must stop.
    pub fn fatal(&self) -> watch::Receiver<Option<String>> {
        match self {
            Member::Voter(q) => q.fatal(),
            Member::Observer(o) => o.fatal(),
        }
    }

    /// Serves a private-key frame (voters only; `None` closes the connection).
    pub async fn handle_rpc(&self, frame: bytes::Bytes) -> Option<bytes::Bytes> {
        match self {
            Member::Voter(q) => q.handle_rpc(frame).await,
            Member::Observer(_) => None,
        }
    }
}
