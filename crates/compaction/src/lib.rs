//! The log cleaner: compaction with KIP-280 strategies (spec §3), over storage's segment-swap
//! API ([`skiff_storage::swap`]) only.
//!
//! Mental model: pure deciders and a thin I/O shell.
//! * [`strategy`]: which record of a key wins (`offset`, `timestamp`, `header`), as a rank
//!   `(version, offset)` compared lexicographically;
//! * [`keymap`]: the bounded key-hash -> winning-rank map (`log.cleaner.dedupe.buffer.size`);
//! * [`select`]: the cleanable range of a log (never the active segment, never at or past the
//!   high watermark, min/max compaction lag, and an `extra_bound`: the delivery stable offset
//!   the clean view carries, so undelivered batches are never compacted), its dirty
//!   ratio, and the grouping of output segments up to `segment.bytes`;
//! * [`filter`]: which records of a batch survive (winner only; tombstone delete horizon;
//!   RETAIN_EMPTY for active producers' last batches and each output's last batch);
//! * [`txn`]: transactions (issue 18) in a walk: which batches are aborted (removed, never in
//!   the key map), which markers have no data left (removed after their delete horizon), which
//!   `.txnindex` entries the cleaned segments keep; the range stops at the first unstable offset;
//! * [`clean`]: one clean of one log (read, filter, write `.cleaned`, swap), throttled;
//! * [`worker`]: the `log.cleaner.threads` background threads and the checkpoint file;
//! * [`stats`]: per-log cleaner state (serde-serialisable) for logs, admin API and metrics.
//!
//! Invariants kept (spec §3.1): offsets never change (gaps appear), each batch keeps its
//! lastOffsetDelta, compressed batches are recompressed with their codec, the log end offset
//! never moves, a consumer reading during a clean sees no error and no duplicate offset (the
//! swap happens under the partition lock and replaced files stay readable).
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod clean;
pub mod filter;
pub mod keymap;
pub mod select;
pub mod stats;
pub mod strategy;
pub mod txn;
pub mod worker;

pub use clean::{CleanError, CleanOutcome, CleanParams, Throttle, clean_log};
pub use stats::{CleanerStats, CleanerStatus};
pub use strategy::Strategy;
pub use worker::{CleanerSettings, LogCleaner};
