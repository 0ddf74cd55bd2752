//! Cheap broker-wide counters of the zero-copy and fetch-session paths, readable through the
//! admin HTTP port (`GET /api/v1/stats`) so that an end-to-end test fails when one of those
//! paths silently stops being used (sessions never created, record bytes no longer sent with
//! `sendfile`).
//!
//! Mental model: plain relaxed atomics bumped where the work happens: the Fetch handler counts
//! sessions it creates and incremental fetches it serves; the connection writer counts bytes
//! sent from segment files with `sendfile` (regions, bytes) and bytes written from user-space
//! buffers (response headers and fields, and any record data that is not a file region).
//! Counters only grow (monotonic since start); a reader takes a [`StatsSnapshot`] and compares
//! two of them. No counter is ever read for a decision, so `Relaxed` is enough.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

/// The counters; one per broker.
#[derive(Debug, Default)]
pub struct ServerStats {
    fetch_sessions_created: AtomicU64,
    incremental_fetches: AtomicU64,
    sendfile_regions: AtomicU64,
    sendfile_bytes: AtomicU64,
    copied_bytes: AtomicU64,
}

/// `GET /api/v1/stats`: every counter since start.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StatsSnapshot {
    pub fetch_sessions: FetchSessionStats,
    pub sendfile: SendfileStats,
    /// Response bytes written from user-space buffers (everything that is not a file region).
    pub copied_bytes: u64,
    /// Gauges of the partitions this node leads (issue 17), filled in by the caller.
    pub replication: ReplicationStats,
}

/// Partitions this node leads, and how many of them lack replicas (Kafka's
/// `UnderReplicatedPartitions` and `UnderMinIsrPartitionCount`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ReplicationStats {
    pub leader_partitions: u64,
    /// The ISR is smaller than the replica set.
    pub under_replicated_partitions: u64,
    /// The ISR is smaller than `min(min.insync.replicas, replication factor)`.
    pub under_min_isr_partitions: u64,
}

/// Incremental fetch sessions (KIP-227).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FetchSessionStats {
    /// Sessions created (full fetches with epoch 0 that got a session id).
    pub created: u64,
    /// Fetches served incrementally within an existing session (epoch > 0, accepted).
    pub incremental_fetches: u64,
    /// Sessions in the cache now.
    pub cached: u64,
}

/// Record data sent from segment files by `sendfile(2)`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SendfileStats {
    /// File regions sent (one per partition with records in a fetch response).
    pub regions: u64,
    /// Bytes sent.
    pub bytes: u64,
}

fn add(counter: &AtomicU64, n: u64) {
    counter.fetch_add(n, Ordering::Relaxed);
}

fn get(counter: &AtomicU64) -> u64 {
    counter.load(Ordering::Relaxed)
}

impl ServerStats {
    pub fn fetch_session_created(&self) {
        add(&self.fetch_sessions_created, 1);
    }

    pub fn incremental_fetch(&self) {
        add(&self.incremental_fetches, 1);
    }

    /// One file region of `bytes` sent with `sendfile`.
    pub fn sent_by_sendfile(&self, bytes: u64) {
        add(&self.sendfile_regions, 1);
        add(&self.sendfile_bytes, bytes);
    }

    /// `bytes` written from a user-space buffer.
    pub fn copied(&self, bytes: u64) {
        add(&self.copied_bytes, bytes);
    }

    /// Every counter now; `cached_sessions` is the fetch-session cache's current size.
    pub fn snapshot(&self, cached_sessions: usize) -> StatsSnapshot {
        StatsSnapshot {
            fetch_sessions: FetchSessionStats {
                created: get(&self.fetch_sessions_created),
                incremental_fetches: get(&self.incremental_fetches),
                cached: cached_sessions as u64,
            },
            sendfile: SendfileStats {
                regions: get(&self.sendfile_regions),
                bytes: get(&self.sendfile_bytes),
            },
            copied_bytes: get(&self.copied_bytes),
            replication: ReplicationStats::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_add_up_and_serialise_with_stable_names() {
        let s = ServerStats::default();
        s.fetch_session_created();
        s.incremental_fetch();
        s.incremental_fetch();
        s.sent_by_sendfile(100);
        s.sent_by_sendfile(20);
        s.copied(7);
        let snap = s.snapshot(1);
        assert_eq!(
            serde_json::to_value(&snap).unwrap(),
            serde_json::json!({
                "fetch_sessions": {"created": 1, "incremental_fetches": 2, "cached": 1},
                "sendfile": {"regions": 2, "bytes": 120},
                "copied_bytes": 7,
                "replication": {"leader_partitions": 0, "under_replicated_partitions": 0,
                                "under_min_isr_partitions": 0},
            })
        );
    }
}
