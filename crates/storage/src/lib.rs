//! Skiff L2: one partition's log on disk, and the manager of all of them.
//!
//! Mental model (Kafka's layout, KAFKA-506 / KIP-33): a partition is a directory
//! `<topic>-<partition>/` of segments. A segment is `<20-digit base offset>.log` (a plain
//! concatenation of v2 record batches, the authoritative data) plus two rebuildable caches:
//! `.index` (sparse offset -> position) and `.timeindex` (sparse max-timestamp -> offset), both
//! memory-mapped and preallocated while the segment is active, trimmed when it rolls.
//! Small checkpoint files (recovery point, log start offset, high watermark, leader epochs) are
//! replaced atomically. This crate knows nothing of replicas, brokers or requests: callers pass
//! the high watermark and `now` in.
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod checkpoint;
pub mod leader_epoch;
pub mod segment;
pub mod validate;
