//! Skiff L3: the group coordinator as a pure state machine.
//!
//! Mental model (architecture.md, "pure cores"): groups are placed on the partitions of the
//! compacted topic `__consumer_offsets` ([`partition_for`]); one [`GroupCoordinatorShard`]
//! owns the groups and committed offsets of one partition. Every entry point takes the request
//! (a generated `skiff-protocol` type), a [`RequestContext`] (token, api version, client) and
//! `now_ms`, and returns [`Effects`]: responses keyed by token (JoinGroup/SyncGroup are parked
//! and answered by later calls), `__consumer_offsets` records to append (Kafka's encodings,
//! [`CoordinatorRecord`]) and the next timer deadline for [`GroupCoordinatorShard::tick`].
//! [`GroupCoordinatorShard::replay`] rebuilds a shard from its partition, so commits and group
//! membership survive restarts.
//!
//! Protocols: classic (JoinGroup/SyncGroup/Heartbeat/LeaveGroup with Kafka 4.x semantics,
//! static membership, KIP-394 member ids) in [`classic`], offsets in `offsets`, transactional
//! offsets (TxnOffsetCommit, markers; [`Effects::transactional`]) in `txn_offsets`, admin APIs
//! in `admin`, and KIP-848 consumer groups in `consumer`.
//!
//! No I/O, no tokio, no wall clock, no global state: a shard is plain data (`Send`), driven
//! by one caller at a time. Nothing here panics on input from the network or the log.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod admin;
mod batch;
pub mod classic;
mod config;
mod consumer;
mod effects;
mod error;
mod offset_store;
mod offsets;
mod records;
mod shard;
mod timer;
mod txn_offsets;

pub use admin::{GROUP_TYPE_CLASSIC, GROUP_TYPE_CONSUMER};
pub use batch::{
    OffsetFetchGroupRequest, offset_fetch_error_group, offset_fetch_groups, offset_fetch_response,
};
pub use config::{ASSIGNOR_RANGE, ASSIGNOR_UNIFORM, GroupConfig, MigrationPolicy};
pub use consumer::{GroupOverrides, TopicInfo};
pub use effects::{Effects, RequestContext, RequestToken, Response};
pub use error::GroupError;
pub use offsets::OffsetAndMetadata;
pub use records::{
    CoordinatorRecord, GROUP_METADATA_KEY_VERSION, GROUP_METADATA_VALUE_VERSION,
    OFFSET_COMMIT_KEY_VERSION, RawRecord, partition_for,
};
pub use shard::{GroupCoordinatorShard, GroupSummary};
