//! The read bound: how far a Fetch or ListOffsets may see, the one rule for both handlers.
//!
//! Consumers: read_uncommitted stops at `min(HW, DSO)`, read_committed at `min(LSO, DSO)` with
//! LSO = `min(HW, first unstable offset)`; the reported HighWatermark is the real HW and the
//! reported LastStableOffset is `min(LSO, DSO)` (lag counts waiting records; issue 8). A
//! follower of this partition (leader role) reads to the LEO and sees the uncapped LSO. Any
//! other replica id (a tool, or today's single node where no follower exists) keeps the
//! pre-replication rule: the HW, ignoring the DSO.
//!
//! Invariant: a consumer's `max_offset <= high_watermark`; a replica's `<= log end offset`.
//! Bounds are batch boundaries because HW, LSO and DSO are (the caller's inputs).

use skiff_types::{ErrorCode, Offset};

use crate::{Partition, ReplicaId, Role};

/// A consumer's `isolation_level`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isolation {
    ReadUncommitted,
    ReadCommitted,
}

impl Isolation {
    /// Kafka's wire value (1 = read_committed, anything else read_uncommitted).
    pub fn from_wire(level: i8) -> Self {
        if level == 1 {
            Isolation::ReadCommitted
        } else {
            Isolation::ReadUncommitted
        }
    }
}

/// Who reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reader {
    /// A client (replica id < 0).
    Consumer(Isolation),
    /// A replica id >= 0 (Fetch `ReplicaId` / `ReplicaState.ReplicaId`, ListOffsets `ReplicaId`).
    Replica(ReplicaId),
}

/// Offsets the storage computes that cap consumer reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BoundInputs {
    /// The first offset of the oldest open transaction (None until transactions exist).
    pub first_unstable_offset: Option<Offset>,
    /// The delayed-delivery stable offset (`Log::delivery_stable_offset(now)`), None when the
    /// topic has no waiting batch or no delayed delivery.
    pub delivery_stable_offset: Option<Offset>,
}

/// The bound and what a Fetch response reports with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadBound {
    /// Exclusive upper offset the read may return.
    pub max_offset: Offset,
    /// The response's HighWatermark (always the real HW).
    pub high_watermark: Offset,
    /// The response's LastStableOffset.
    pub last_stable_offset: Offset,
    pub log_start_offset: Offset,
}

impl Partition {
    /// The read bound for `reader`. NOT_LEADER_OR_FOLLOWER unless this node leads the
    /// partition (no fetch from follower, KIP-392, yet).
    pub fn read_bound(&self, reader: Reader, inputs: BoundInputs) -> Result<ReadBound, ErrorCode> {
        if self.role() != Role::Leader {
            return Err(ErrorCode::NotLeaderOrFollower);
        }
        let hw = self.high_watermark();
        let lso = inputs.first_unstable_offset.map_or(hw, |u| u.min(hw));
        let (max_offset, last_stable_offset) = match reader {
            Reader::Consumer(isolation) => {
                let cap = |o: Offset| inputs.delivery_stable_offset.map_or(o, |d| o.min(d));
                let bound = match isolation {
                    Isolation::ReadUncommitted => cap(hw),
                    Isolation::ReadCommitted => cap(lso),
                };
                (bound, cap(lso))
            }
            Reader::Replica(id) if self.followers().iter().any(|f| f.id == id) => {
                (self.log_end_offset(), lso)
            }
            Reader::Replica(_) => (hw, lso),
        };
        Ok(ReadBound {
            max_offset,
            high_watermark: hw,
            last_stable_offset,
            log_start_offset: self.log_start_offset(),
        })
    }
}
