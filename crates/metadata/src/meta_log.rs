//! The metadata log seam: where committed metadata records live.
//!
//! Mental model: [`MetadataLog`] is what a metadata store needs from a replicated log, and no
//! more. `propose` hands over the records of one atomic change and returns once they are
//! committed; `replay` (on open) yields every committed record in log order, so the image can
//! be rebuilt from nothing. The store applies a change to its image only after `propose`
//! returned `Ok`, so the image never shows an uncommitted record.
//!
//! Implementations:
//! - [`LocalMetadataLog`] (today, one node): the partition log `__cluster_metadata-0`; one
//!   change is one v2 batch (leader epoch 0) whose record values are KRaft-framed records
//!   ([`crate::Record::encode`]); committed = appended and fsynced.
//! - The Raft quorum of the next issue implements the same trait over the same directory and
//!   format: committed = durable on a majority of voters; `replay` then also feeds records
//!   committed by another leader. A proposal that fails (not leader, lost leadership) returns
//!   `Err` and the store's image stays as it was.
//!
//! Invariants: one change is one batch (never split, so a failover cannot commit half a
//! topic); `replay` yields records in the order they were committed; a torn tail (a batch
//! that was not fully written) is truncated on open, never replayed.

use std::path::Path;

use bytes::Bytes;
use skiff_record::{BatchBuilder, BatchOptions, RecordError};
use skiff_storage::{Log, LogConfig, LogOpenOptions};
use skiff_types::TopicPartition;
use skiff_types::limits::DECOMPRESSED_BATCH_BYTES_MAX;

use crate::MetadataError;
use crate::frame::Record;

/// The metadata partition's name, as in KRaft.
pub const METADATA_TOPIC: &str = "__cluster_metadata";

/// Where a committed change landed: offsets `base_offset..end_offset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Committed {
    pub base_offset: i64,
    pub end_offset: i64,
}

/// Runs a closure that may block the thread for as long as a metadata commit takes (e.g. with
/// the async runtime's worker handed off first); returns once it ran.
pub type BlockingSection = fn(&mut dyn FnMut());

/// A [`BlockingSection`] that just runs the closure.
pub fn run_inline(f: &mut dyn FnMut()) {
    f()
}

/// A log of committed metadata records (see the module docs).
pub trait MetadataLog: Send + std::fmt::Debug {
    /// Commits `records` as one atomic change; returns once they are committed. `now_ms` is
    /// the batch timestamp. On `Err` the change may or may not be committed (a failed fsync):
    /// the caller does not apply it, and a later `replay` tells.
    fn propose(&mut self, records: &[Record], now_ms: i64) -> Result<Committed, MetadataError>;

    /// Calls `apply` with every committed record from the start, in log order; returns the
    /// end offset.
    fn replay(&mut self, apply: &mut dyn FnMut(Record)) -> Result<i64, MetadataError>;

    /// Flushes and closes the log.
    fn close(&mut self, now_ms: i64) -> Result<(), MetadataError>;

    /// The quorum's view for DescribeQuorum: leader epoch, high watermark (committed end) and
    /// this node's log end offset.
    fn quorum_state(&self) -> QuorumState;

    /// Before a controller decision: waits (bounded) until this node leads the quorum with
    /// every record committed before its leadership applied to the image; the leader epoch.
    /// [`MetadataError::NotController`] when another node leads (or none does in time).
    /// A local log always leads, at epoch 0.
    fn ready_to_lead(&mut self) -> Result<i32, MetadataError> {
        Ok(0)
    }

    /// Whether committed records reach the image through an [`crate::ImageSink`] (a quorum:
    /// records committed by any leader are applied there, in log order) instead of the
    /// store replaying what it proposed.
    fn applies_through_sink(&self) -> bool {
        false
    }

    /// How the store waits for its writer lock when another writer holds it: a quorum's
    /// proposal holds the lock across a Raft commit that needs the async runtime's workers,
    /// so a waiter must not park one of them ([`BlockingSection`]). A local log runs it inline.
    fn blocking_section(&self) -> BlockingSection {
        run_inline
    }
}

/// What DescribeQuorum reports of the metadata log on this node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuorumState {
    pub leader_epoch: i32,
    pub high_watermark: i64,
    pub log_end_offset: i64,
}

fn storage_err(e: impl std::fmt::Display) -> MetadataError {
    MetadataError::Storage(e.to_string())
}

/// [`MetadataLog`] on the local partition log, fsynced on every change.
#[derive(Debug)]
pub struct LocalMetadataLog {
    log: Log,
}

impl LocalMetadataLog {
    /// Opens (creating on first start) the partition log in `dir`, fully re-validated (it is
    /// small), a torn tail truncated.
    pub fn open(dir: &Path, now_ms: i64) -> Result<Self, MetadataError> {
        let config = LogConfig {
            flush_messages: 1,
            ..LogConfig::default()
        };
        let opts = LogOpenOptions {
            recovery_point: 0,
            log_start_offset: 0,
            high_watermark: 0,
            clean_shutdown: false,
            now_ms,
        };
        let (mut log, report) =
            Log::open(dir, TopicPartition::new(METADATA_TOPIC, 0), config, opts)
                .map_err(storage_err)?;
        if report.truncated_bytes > 0 {
            tracing::warn!(
                bytes = report.truncated_bytes,
                "metadata log had a torn tail; truncated"
            );
        }
        // One node: everything on disk after recovery is committed.
        let leo = log.log_end_offset();
        log.set_high_watermark(leo);
        Ok(LocalMetadataLog { log })
    }
}

impl MetadataLog for LocalMetadataLog {
    fn propose(&mut self, records: &[Record], now_ms: i64) -> Result<Committed, MetadataError> {
        if records.is_empty() {
            let leo = self.log.log_end_offset();
            return Ok(Committed {
                base_offset: leo,
                end_offset: leo,
            });
        }
        let mut encoded = Vec::with_capacity(records.len());
        for r in records {
            encoded.push(r.encode()?);
        }
        let mut builder = BatchBuilder::new(BatchOptions::default());
        for e in &encoded {
            builder.append(now_ms, None, Some(e), &[]);
        }
        let mut batch = builder.build().map_err(storage_err)?;
        let info = self
            .log
            .append_as_leader(&mut batch, 0, now_ms)
            .map_err(storage_err)?;
        let end_offset = info.last_offset + 1;
        self.log.sync().sync_to(end_offset).map_err(storage_err)?;
        let leo = self.log.log_end_offset();
        self.log.set_high_watermark(leo);
        Ok(Committed {
            base_offset: info.base_offset,
            end_offset,
        })
    }

    fn quorum_state(&self) -> QuorumState {
        // One node: every batch is written at epoch 0 and committed once fsynced.
        QuorumState {
            leader_epoch: 0,
            high_watermark: self.log.high_watermark(),
            log_end_offset: self.log.log_end_offset(),
        }
    }

    fn replay(&mut self, apply: &mut dyn FnMut(Record)) -> Result<i64, MetadataError> {
        let log = &self.log;
        let end = log.log_end_offset();
        let mut offset = log.log_start_offset();
        while offset < end {
            let read = log.read(offset, 1 << 20, end, true).map_err(storage_err)?;
            let Some(slice) = read.slice else { break };
            let bytes = slice.read_to_vec().map_err(storage_err)?;
            let mut progressed = false;
            for batch in skiff_record::batches(&bytes) {
                let view = match batch {
                    Ok((_, view)) => view,
                    // A read may end inside a batch; the next read starts at it.
                    Err(RecordError::Truncated { .. }) => break,
                    Err(e) => return Err(storage_err(e)),
                };
                let data = view
                    .records_data(DECOMPRESSED_BATCH_BYTES_MAX)
                    .map_err(storage_err)?;
                for rec in skiff_record::records(&data, view.records_count()) {
                    let rec = rec.map_err(storage_err)?;
                    let o = view.base_offset() + i64::from(rec.offset_delta);
                    if o < offset {
                        continue;
                    }
                    if let Some(v) = rec.value
                        && let Some(r) = Record::decode(Bytes::copy_from_slice(v))?
                    {
                        apply(r);
                    }
                }
                offset = view.next_offset();
                progressed = true;
            }
            if !progressed {
                return Err(MetadataError::Storage(format!(
                    "metadata log unreadable at offset {offset}"
                )));
            }
        }
        Ok(end)
    }

    fn close(&mut self, now_ms: i64) -> Result<(), MetadataError> {
        self.log.close(now_ms).map_err(storage_err)
    }
}
