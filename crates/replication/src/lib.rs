//! Skiff L2: the pure replication core. One [`Partition`] per hosted partition holds the
//! replication state Kafka keeps in `Partition.scala` and decides, from inputs, what moves.
//!
//! # Mental model
//!
//! A partition replica has a [`Role`] (leader, follower of a given leader, or none), a leader
//! epoch and a partition epoch (from the metadata image), a replica set and an ISR, and, on the
//! leader, one [`ReplicaState`] per follower (its log end offset as reported by its fetches,
//! when it last fetched and when it was last caught up). Locally it tracks three offsets of its
//! own log: the log start offset, the log end offset (LEO, what is written) and the *durable
//! end* (what the group commit has fsynced; equal to the LEO on a topic that is not durable).
//!
//! The **high watermark** (HW) is the offset below which records are committed. On the leader
//! it is the minimum *acknowledged end* over the maximal ISR (the ISR plus any addition in
//! flight, KIP-497) and over caught-up, ISR-eligible followers; the leader's own acknowledged
//! end is its durable end, so on a durable topic nothing becomes visible before its fsync (and,
//! once followers exist, they report their synced end as their fetch offset). The HW does not
//! advance while `|ISR| < effective min ISR` (KAFKA-15583). On a follower it is
//! `min(leader HW, own LEO)`.
//!
//! The **read bound** ([`Partition::read_bound`]) is the one rule for how far a reader may read:
//! consumers stop at `min(HW, DSO)` with read_uncommitted and at `min(LSO, DSO)` with
//! read_committed, where LSO = `min(HW, first unstable offset)` (transactions, later; today
//! LSO = HW) and DSO is the delayed-delivery stable offset the storage computes (issue 8).
//! A follower of this partition reads up to the LEO. A replica id that is not a follower of
//! this partition (the only kind there is with one replica) keeps today's bound, the HW,
//! ignoring the DSO.
//!
//! **Acks** ([`Acks`]): `acks=0` needs no answer; `acks=1` is satisfied when the leader's own
//! acknowledged end reaches the batch end (at the append, or after the fsync on a durable
//! topic); `acks=-1` when the HW reaches the batch end, answering
//! NOT_ENOUGH_REPLICAS_AFTER_APPEND if the maximal ISR shrank below the effective min ISR
//! meanwhile. Before an `acks=-1` append, `|ISR| < effective min ISR` refuses it with
//! NOT_ENOUGH_REPLICAS ([`Partition::check_append`]). The effective min ISR is
//! `min(min.insync.replicas, replication factor)`. Parked acks are completed by later calls
//! (HW or durable end moved, fsync failed, role lost, deadline passed in [`Partition::tick`]).
//!
//! Every decision is a method that takes its inputs and `now` (milliseconds) and returns
//! [`Effect`]s; nothing here reads a clock, does I/O, spawns or locks.
//!
//! # Invariants
//!
//! - On the leader `log_start <= HW <= durable end <= LEO`; on a follower
//!   `log_start <= HW <= LEO` (its HW mirrors the leader's, whatever it has fsynced).
//! - On the leader the HW never moves backwards; it moves down only by truncation
//!   ([`Partition::on_truncated`], a follower operation).
//! - A consumer's read bound is `<= HW`; a replica's is `<= LEO`.
//! - With one replica (replica set = ISR = {self}) the effective min ISR is 1, so the HW is the
//!   durable end: the LEO right after an append on a normal topic, the synced offset after the
//!   fsync on a durable one, which is exactly what the server did before this crate.
//! - A parked ack is completed exactly once.
//! - At most one ISR change ([`Effect::ProposeIsr`], Kafka's AlterPartition) is in flight.
//!
//! # Where this differs from Kafka, on purpose
//!
//! - `acks=1` on a durable topic waits for the leader's fsync (Kafka never fsyncs on the
//!   produce path): a durable topic promises "acknowledged => fsynced", as the server did
//!   before this crate (acks=1 and acks=-1 took the same path there).
//! - A replica id that is not a follower of the partition reads up to the HW here (ListOffsets
//!   with `replica_id >= 0` keeps that bound); the replica manager refuses a *Fetch* from such
//!   an id with NOT_LEADER_OR_FOLLOWER before asking, as Kafka does.
//!
//! # How the server will use it
//!
//! The replica manager (issue 13 item 2) owns one `Partition` beside each partition's log,
//! under the same lock. On the produce path it calls [`Partition::check_append`], appends to the
//! log (stamping [`Partition::leader_epoch`]), calls [`Partition::on_leader_append`] with the
//! new LEO, then [`Partition::await_acks`] with a wait id it allocates; when the group commit's
//! fsync returns it calls [`Partition::on_local_synced`] (or
//! [`Partition::on_local_sync_failed`]). It applies the effects: `HighWatermarkAdvanced` ->
//! `Log::set_high_watermark(new)` and wake consumer long polls; `LogEndAdvanced` -> wake
//! follower long polls; `AckCompleted` -> answer the parked produce partition with that code;
//! `ProposeIsr` -> send AlterPartition (later). Fetch and ListOffsets ask
//! [`Partition::read_bound`] (with the storage's DSO, and the LSO input once transactions
//! exist) and pass the bound to `Log::read` / `offset_for_timestamp`. Request leader epochs are
//! checked with [`Partition::check_leader_epoch`]. At startup and on every metadata delta it
//! calls [`Partition::become_leader`] / [`Partition::become_follower`] from the image's
//! partition registration. A timer calls [`Partition::tick`] at [`Partition::next_deadline`].

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

#[cfg(test)]
mod eligibility_tests;
#[cfg(test)]
mod kafka_named_tests;
mod partition;
mod read;
#[cfg(test)]
mod tests;

pub use partition::{Assignment, LocalLog, Partition, PartitionConfig, ReplicaState};
pub use read::{BoundInputs, Isolation, ReadBound, Reader};

use skiff_types::{ErrorCode, Offset};

/// A broker id (`node.id`), which is also the replica id in Fetch and ListOffsets.
pub type ReplicaId = i32;

/// A caller-allocated id of a parked produce (one partition of one request).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WaitId(pub u64);

/// This replica's role for a partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Not hosted as leader or follower (before the first metadata, or after removal).
    None,
    Leader,
    Follower {
        leader: ReplicaId,
    },
}

/// The produce `acks` setting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Acks {
    /// `acks=0`: no response.
    None,
    /// `acks=1`: the leader has the batch (durably, on a durable topic).
    Leader,
    /// `acks=-1` (all): the high watermark reached the batch end.
    All,
}

impl Acks {
    /// Kafka's wire value; anything but -1, 0, 1 is INVALID_REQUIRED_ACKS.
    pub fn from_wire(acks: i16) -> Result<Self, ErrorCode> {
        match acks {
            0 => Ok(Acks::None),
            1 => Ok(Acks::Leader),
            -1 => Ok(Acks::All),
            _ => Err(ErrorCode::InvalidRequiredAcks),
        }
    }
}

/// What a call decided; the caller applies these in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    /// The HW moved up: store it in the log (`set_high_watermark`), wake consumer fetches.
    HighWatermarkAdvanced { old: Offset, new: Offset },
    /// The HW moved down (truncation on a follower only).
    HighWatermarkLowered { old: Offset, new: Offset },
    /// The local LEO moved up: wake follower fetches (they read to the LEO).
    LogEndAdvanced { old: Offset, new: Offset },
    /// Answer a parked produce partition with this code (NONE = success).
    AckCompleted { wait: WaitId, error: ErrorCode },
    /// Ask the controller for this ISR (AlterPartition at `partition_epoch`); one in flight.
    ProposeIsr {
        isr: Vec<ReplicaId>,
        partition_epoch: i32,
    },
}

/// The answer of [`Partition::await_acks`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AckDecision {
    /// Answer now with this code (`acks=0`: send nothing).
    Done(ErrorCode),
    /// Parked; an [`Effect::AckCompleted`] with the same id will follow.
    Parked,
}
