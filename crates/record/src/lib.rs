//! Skiff L1: Kafka's RecordBatch v2 ("magic 2") format, shared by the wire and the disk.
//!
//! Mental model: a batch is one contiguous byte slice (61-byte header + a records section that
//! may be compressed as one blob). [`BatchView`] reads header fields straight out of that slice
//! without copying; [`records`] walks a (decompressed) records section and yields borrowed
//! [`Record`]s; the mutators patch a batch in place (base offset and leader epoch are outside
//! the CRC, max timestamp / timestamp type are inside it and trigger a CRC recompute);
//! [`BatchBuilder`] encodes new batches (tests, compaction, recompression).
//!
//! Layout (all big-endian, see `shared/spec/kafka-semantics.md` §0.2):
//! `baseOffset i64 | batchLength i32 | partitionLeaderEpoch i32 | magic i8 | crc u32 |
//! attributes i16 | lastOffsetDelta i32 | baseTimestamp i64 | maxTimestamp i64 |
//! producerId i64 | producerEpoch i16 | baseSequence i32 | recordsCount i32 | records...`
//! The CRC-32C covers `attributes..end`.
//!
//! Ownership and threading: everything here is pure functions over byte slices, no I/O, no
//! clock, no shared state; all types are `Send + Sync` when their borrowed data is.
//!
//! Invariants: no function panics on any input bytes (only the in-place mutators assert that
//! the caller passed at least a batch header, a programmer error); decompression is always
//! bounded by a caller-supplied `max_bytes`; every length read from the data is checked
//! against the bytes actually remaining before anything is sliced or allocated.
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod batch;
mod builder;
mod compression;
pub mod control;
pub mod crc;
mod error;
mod lz4;
mod record;
pub mod varint;
mod walk;

pub use batch::{
    BatchIter, BatchView, TimestampType, batches, layout, peek_batch_size, recompute_crc,
    set_base_offset, set_max_timestamp, set_max_timestamp_split, set_partition_leader_epoch,
};
pub use builder::{BatchBuilder, BatchOptions, recompress, reencode};
pub use compression::{Compression, compress, decompress};
pub use control::{ControlType, EndTxnMarker, build_end_txn_marker, parse_end_txn_marker};
pub use crc::{crc32c, crc32c_parts};
pub use error::RecordError;
pub use record::{Header, Record, RecordIter, records};
pub use skiff_types::limits::{BATCH_HEADER_BYTES, LOG_OVERHEAD_BYTES};
pub use walk::{Field, RecordSummary, RecordWalk, WalkError, walk_records};

/// The only batch format version this crate understands.
pub const MAGIC_V2: i8 = 2;
