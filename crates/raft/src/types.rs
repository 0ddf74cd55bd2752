//! Skiff's openraft type configuration.
//!
//! Mental model: openraft is generic over a [`openraft::RaftTypeConfig`]; [`SkiffRaft`] is the
//! one Skiff uses, and every other type of this crate names it. The choices:
//!
//! - **Entry payload** ([`Op`], a `Vec<Bytes>`): a normal entry is one atomic controller
//!   operation, the list of its KRaft-framed record values (`crates/metadata/src/frame.rs` encodes them). One entry is
//!   one v2 batch on disk (see [`crate::codec`]), so an operation commits whole or not at all.
//!   Blank (leader-change) and membership entries are openraft's own `EntryPayload` variants.
//! - **Term** ([`Epoch`]): KRaft's leader epoch, an `i32` on disk (the batch's
//!   `partitionLeaderEpoch`). A newtype, not a bare `i32`, only because openraft's storage test
//!   suite builds terms with `From<u64>`; conversions out of range fail at the boundary.
//! - **Node id** ([`NodeId`]): Kafka's `node.id`, an `i32`, newtyped for the same reason.
//! - **Leader id**: `leader_id_std` (one leader per term, as in KRaft), so a log id's leader is
//!   just the term, which is exactly what a batch header holds.
//! - **Node**: openraft's `BasicNode` (an address string) for now.
//! - **Response**: `()`; the state machine has nothing to answer yet.

use std::fmt;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

/// One atomic controller operation: the KRaft-framed record values of one v2 batch. A newtype
/// because openraft wants `Display` on the payload.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Op(pub Vec<Bytes>);

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "op({} records)", self.0.len())
    }
}

/// A Raft term, which is KRaft's leader epoch.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Epoch(pub i32);

impl fmt::Display for Epoch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl openraft::vote::RaftTerm for Epoch {
    fn next(&self) -> Self {
        // An epoch never reaches i32::MAX in practice (one per election); saturate rather
        // than wrap so ordering is never inverted.
        Epoch(self.0.saturating_add(1))
    }

    fn as_u64(&self) -> Option<u64> {
        u64::try_from(self.0).ok()
    }
}

/// For openraft's test suite, which builds terms from `u64`. Saturates at `i32::MAX`.
impl From<u64> for Epoch {
    fn from(v: u64) -> Self {
        Epoch(i32::try_from(v).unwrap_or(i32::MAX))
    }
}

/// A voter's id: Kafka's `node.id`.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct NodeId(pub i32);

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// For openraft's test suite, which builds node ids from `u64`. Saturates at `i32::MAX`.
impl From<u64> for NodeId {
    fn from(v: u64) -> Self {
        NodeId(i32::try_from(v).unwrap_or(i32::MAX))
    }
}

openraft::declare_raft_types!(
    /// Skiff's Raft type configuration (see the module docs).
    pub SkiffRaft:
        D = Op,
        R = (),
        NodeId = NodeId,
        Node = openraft::impls::BasicNode,
        Term = Epoch,
        LeaderId = openraft::impls::leader_id_std::LeaderId<Epoch, NodeId>,
);

/// The leader id of [`SkiffRaft`].
pub type LeaderId = openraft::impls::leader_id_std::LeaderId<Epoch, NodeId>;
/// A log id (term, index) of [`SkiffRaft`].
pub type LogId = openraft::LogId<openraft::vote::leader_id_std::CommittedLeaderId<Epoch>>;
/// A vote of [`SkiffRaft`].
pub type Vote = openraft::impls::Vote<LeaderId>;
/// A log entry of [`SkiffRaft`].
pub type Entry = <SkiffRaft as openraft::RaftTypeConfig>::Entry;
/// A membership config of [`SkiffRaft`].
pub type Membership = openraft::Membership<NodeId, openraft::impls::BasicNode>;
/// Membership with the log id it was set at.
pub type StoredMembership = openraft::StoredMembership<
    openraft::vote::leader_id_std::CommittedLeaderId<Epoch>,
    NodeId,
    openraft::impls::BasicNode,
>;

/// The log id of `term` at `index`.
pub fn log_id(term: i32, index: u64) -> LogId {
    LogId::new(
        openraft::vote::leader_id_std::CommittedLeaderId::new(Epoch(term)),
        index,
    )
}
