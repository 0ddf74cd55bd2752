//! Per-log cleaner state, for logs, the admin API / CLI and metrics.
//!
//! Mental model: a registry `TopicPartition -> CleanerStatus` shared by the cleaner threads
//! (writers) and the server (readers). Figures are cumulative since the broker started, except
//! the `last_*` ones. Cheap to read: one mutex, a clone.

use std::collections::BTreeMap;

use parking_lot::Mutex;
use serde::Serialize;
use skiff_types::TopicPartition;

/// The cleaner's state of one log.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CleanerStatus {
    /// `dirty / (clean + dirty)` bytes at the last check.
    pub dirty_ratio: f64,
    /// First dirty offset (the `cleaner-offset-checkpoint` entry).
    pub first_dirty_offset: i64,
    /// The effective strategy: `offset`, `timestamp` or `header:<name>`.
    pub strategy: String,
    /// Wall-clock ms of the last completed clean.
    pub last_clean_time_ms: Option<i64>,
    pub last_clean_duration_ms: u64,
    pub cleans: u64,
    /// Bytes read plus written by cleans of this log.
    pub bytes_cleaned: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub records_removed: u64,
    pub tombstones_removed: u64,
    /// Records of aborted transactions removed (also in `records_removed`; issue 18).
    pub aborted_records_removed: u64,
    /// Transaction markers removed (after their data, and `delete.retention.ms`; issue 18).
    pub markers_removed: u64,
    /// Header values that were not 8 bytes (counted as missing) seen by the `header` strategy.
    pub invalid_header_values: u64,
    pub last_error: Option<String>,
}

/// The registry.
#[derive(Debug, Default)]
pub struct CleanerStats {
    logs: Mutex<BTreeMap<TopicPartition, CleanerStatus>>,
}

impl CleanerStats {
    pub fn new() -> Self {
        Self::default()
    }

    /// The state of one log, if the cleaner has looked at it.
    pub fn get(&self, tp: &TopicPartition) -> Option<CleanerStatus> {
        self.logs.lock().get(tp).cloned()
    }

    /// Every log's state, in partition order.
    pub fn all(&self) -> Vec<(TopicPartition, CleanerStatus)> {
        self.logs
            .lock()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// Changes one log's state.
    pub fn update(&self, tp: &TopicPartition, f: impl FnOnce(&mut CleanerStatus)) {
        f(self.logs.lock().entry(tp.clone()).or_default());
    }

    /// Forgets logs `keep` rejects (deleted partitions).
    pub fn retain(&self, keep: impl Fn(&TopicPartition) -> bool) {
        self.logs.lock().retain(|k, _| keep(k));
    }
}
