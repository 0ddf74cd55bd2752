//! Skiff L2: one partition's log on disk, and the manager of all of them.
//!
//! Mental model (Kafka's layout, KAFKA-506 / KIP-33): a partition is a directory
//! `<topic>-<partition>/` of segments. A segment is `<20-digit base offset>.log` (a plain
//! concatenation of v2 record batches, the authoritative data) plus two rebuildable caches:
//! `.index` (sparse offset -> position) and `.timeindex` (sparse max-timestamp -> offset), held
//! in memory and written with `pwrite` while the segment is active, trimmed to their entries and
//! mapped read-only when it rolls. A failed write takes its log dir offline ([`log_dir`]).
//! Small checkpoint files (recovery point, log start offset, high watermark, leader epochs) are
//! replaced atomically. Idempotent-producer state (last sequences per producer id) lives in
//! memory and in `<offset>.snapshot` files written on roll and close (see [`producer_state`]).
//! Transactions (KIP-98): markers close producers' transactions, the first unstable offset
//! bounds READ_COMMITTED reads, and each segment's `.txnindex` lists its aborted transactions
//! ([`log::txn`], [`segment::txn_index`]).
//! This crate knows nothing of replicas, brokers or requests: callers pass the high watermark
//! and `now` in.
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod checkpoint;
pub mod combine;
pub mod config;
pub mod delivery;
pub mod dir_lock;
pub mod error;
pub mod flush_times;
pub mod integrity;
pub mod leader_epoch;
pub mod log;
pub mod log_dir;
mod log_guard;
pub mod log_manager;
pub mod producer_state;
pub mod read;
pub mod recovery;
pub mod retention;
pub mod segment;
pub mod swap;
pub mod sync;
pub mod validate;

#[cfg(test)]
mod combine_tests;
#[cfg(test)]
mod log_tests;

pub use config::{CompactionStrategy, LogConfig, TopicCompression};
pub use delivery::DeliveryStatus;
pub use error::StorageError;
pub use log::{AbortedTxnRef, AppendInfo, LoadReport, Log, LogOpenOptions};
pub use log_manager::{LogManager, LogManagerConfig, SharedLog};
pub use producer_state::{
    Check, CompletedTxn, DuplicateBatch, OpenTxn, ProducerEntrySnapshot, ProducerError,
    ProducerStateManager,
};
pub use read::{ReadResult, TimestampOffset};
pub use segment::FileSlice;
pub use segment::txn_index::AbortedTxn;
