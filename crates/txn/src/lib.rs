//! Skiff L3: the transaction coordinator (KIP-98, KIP-890 part 1) as a pure state machine.
//!
//! Mental model (architecture.md, "pure cores", the same shape as `skiff-group`): transactional
//! ids are placed on the partitions of the compacted topic `__transaction_state`
//! ([`partition_for`]); one [`TxnShard`] owns the transactions of one partition. Every entry
//! point takes the request (a generated `skiff-protocol` type), a [`RequestContext`] (token,
//! api version) and `now_ms`, and returns [`Effects`]: responses keyed by token (shaped for the
//! request's version), `__transaction_state` records to append (Kafka's `TransactionLogKey` /
//! `TransactionLogValue` encodings), [`MarkerJob`]s (WriteTxnMarkers work for the runtime, stamped
//! with the coordinator epoch) and the next timer deadline for [`TxnShard::tick`].
//! [`TxnShard::replay`] rebuilds a shard from its partition; [`TxnShard::on_loaded`] resumes the
//! prepared transactions (markers again).
//!
//! Lifecycle of one transaction (transactions v1, what clients use while the broker does not
//! advertise `transaction.version` 2): InitProducerId -> `Empty` (epoch bumped);
//! AddPartitionsToTxn / AddOffsetsToTxn -> `Ongoing`; EndTxn -> `PrepareCommit` / `PrepareAbort`
//! (answered once durable, markers start); [`TxnShard::markers_written`] -> `CompleteCommit` /
//! `CompleteAbort`. A second InitProducerId or the timeout sweep aborts an `Ongoing` transaction
//! with an epoch bump, fencing the old producer.
//!
//! Invariants: the shard's memory equals what its records say once they are appended (the
//! runtime drops and reloads the shard when an append fails); a producer id's epoch only grows;
//! a prepared outcome never changes; a [`MarkerJob`] is only emitted for a `Prepare*` state.
//! No I/O, no tokio, no wall clock, no global state; nothing here panics on input from the
//! network or the log.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod add;
mod config;
mod effects;
mod end;
mod error;
mod init;
mod metadata;
mod records;
mod shard;
mod view;

pub use add::CONSUMER_OFFSETS_TOPIC;
pub use config::TxnConfig;
pub use effects::{Effects, MarkerJob, RequestContext, RequestToken, Response, TxnResult};
pub use error::TxnError;
pub use metadata::TxnState;
pub use records::{
    TRANSACTION_STATE_TOPIC, TXN_LOG_KEY_VERSION, TXN_LOG_VALUE_VERSION, decode_record,
    partition_for,
};
pub use shard::TxnShard;
pub use view::{TxnListing, TxnView, unknown_state_filters};
