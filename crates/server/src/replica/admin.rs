//! Administrative partition operations: DeleteRecords, DescribeProducers, DescribeLogDirs,
//! topic config changes reaching the live logs, and the per-partition views of the admin port.

use std::path::PathBuf;
use std::sync::Arc;

use skiff_metadata::TopicInfo;
use skiff_storage::log::DeleteRecordsError;
use skiff_storage::{LogConfig, ProducerEntrySnapshot};
use skiff_types::{ErrorCode, TopicPartition};

use super::ReplicaManager;

/// One hosted partition as DescribeLogDirs reports it.
#[derive(Clone, Debug)]
pub struct PartitionDirView {
    pub tp: TopicPartition,
    pub size_bytes: i64,
    /// HW - LEO, never negative (0 on a leader).
    pub offset_lag: i64,
}

/// One log dir and its hosted partitions.
#[derive(Clone, Debug)]
pub struct LogDirView {
    pub dir: PathBuf,
    pub online: bool,
    pub partitions: Vec<PartitionDirView>,
}

impl ReplicaManager {
    /// DeleteRecords of one partition: the new log start offset (low watermark) and whether it
    /// moved; when any moved, the caller checkpoints at once ([`ReplicaManager::write_checkpoints`]).
    pub fn delete_records(
        &self,
        info: &TopicInfo,
        partition: i32,
        offset: i64,
    ) -> Result<(i64, bool), ErrorCode> {
        let h = self.hosted(info, partition)?;
        let mut l = h.log.lock();
        let before = l.log_start_offset();
        let after = l.delete_records(offset).map_err(|e| match e {
            DeleteRecordsError::PolicyViolation => ErrorCode::PolicyViolation,
            DeleteRecordsError::OffsetOutOfRange { .. } => ErrorCode::OffsetOutOfRange,
            DeleteRecordsError::Storage(e) => {
                tracing::error!(tp = %h.tp, error = %e, "DeleteRecords failed");
                e.error_code()
            }
        })?;
        if after > before {
            let fx = h.state.lock().on_log_start_advanced(after);
            self.apply(&mut l, fx);
            tracing::info!(tp = %h.tp, log_start = after, "records deleted");
        }
        Ok((after, after > before))
    }

    /// Writes the offset checkpoints now (after DeleteRecords moved a log start).
    pub fn write_checkpoints(&self) {
        if let Err(e) = self.logs.write_checkpoints() {
            tracing::error!(error = %e, "cannot checkpoint the new log start offsets (retried by the background task)");
        }
    }

    /// DescribeProducers: the partition's active idempotent producers.
    pub fn active_producers(
        &self,
        info: &TopicInfo,
        partition: i32,
    ) -> Result<Vec<ProducerEntrySnapshot>, ErrorCode> {
        let h = self.hosted(info, partition)?;
        let producers = h.log.lock().active_producers();
        Ok(producers)
    }

    /// Whether `producer_id` has an ongoing transaction on this partition at `producer_epoch`
    /// (Kafka's `Partition.hasOngoingTransaction`): the KIP-890 verification is skipped then.
    pub fn has_ongoing_transaction(
        &self,
        info: &TopicInfo,
        partition: i32,
        producer_id: i64,
        producer_epoch: i16,
    ) -> bool {
        self.hosted(info, partition).is_ok_and(|h| {
            h.log
                .lock()
                .producer_state()
                .entry(producer_id)
                .is_some_and(|e| e.current_txn_first_offset.is_some() && e.epoch == producer_epoch)
        })
    }

    /// A topic's new effective config reaches its hosted logs (and the core's durability).
    pub fn update_topic_config(&self, info: &TopicInfo, config: &LogConfig) {
        let now = self.clock.now_ms();
        for p in 0..info.partitions {
            let Ok(h) = self.hosted(info, p) else {
                continue;
            };
            let mut l = h.log.lock();
            l.update_config(config.clone());
            let fx = h
                .state
                .lock()
                .set_config(self.partition_config(config), now);
            self.apply(&mut l, fx);
        }
    }

    /// DescribeLogDirs: every log dir (configured order) with the hosted partitions `wanted`
    /// selects (all when `None`).
    pub fn log_dirs_view(&self, wanted: &dyn Fn(&TopicPartition) -> bool) -> Vec<LogDirView> {
        let mut views: Vec<LogDirView> = self
            .logs
            .config()
            .log_dirs
            .iter()
            .map(|dir| LogDirView {
                dir: dir.clone(),
                online: self.logs.is_dir_online(dir),
                partitions: Vec::new(),
            })
            .collect();
        for (tp, log) in self.logs.all() {
            if !wanted(&tp) {
                continue;
            }
            let Some(dir) = self.logs.dir_of(&tp) else {
                continue;
            };
            let Some(view) = views.iter_mut().find(|v| v.dir == dir) else {
                continue;
            };
            let (size, lag) = {
                let l = log.lock();
                (
                    i64::try_from(l.size_bytes()).unwrap_or(i64::MAX),
                    (l.high_watermark() - l.log_end_offset()).max(0),
                )
            };
            view.partitions.push(PartitionDirView {
                tp,
                size_bytes: size,
                offset_lag: lag,
            });
        }
        views
    }
}

/// One hosted partition as the admin port's partition list shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionSnapshot {
    pub tp: TopicPartition,
    pub log_start_offset: i64,
    pub log_end_offset: i64,
    pub high_watermark: i64,
    pub size_bytes: u64,
    pub segment_count: usize,
    pub quarantined_ranges: usize,
}

/// A hosted partition's replication state, for the admin port's `replication` section.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ReplicationView {
    /// `leader`, `follower` or `none`.
    pub role: &'static str,
    /// The leader this node follows (-1: none); this node's id when it leads.
    pub leader: i32,
    pub leader_epoch: i32,
    pub partition_epoch: i32,
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
    /// `min(min.insync.replicas, replication factor)`.
    pub effective_min_isr: usize,
    pub high_watermark: i64,
    pub log_end_offset: i64,
    /// Leader only: what each follower's fetches said.
    pub followers: Vec<FollowerView>,
    /// The ISR is smaller than the replica set.
    pub under_replicated: bool,
    /// The ISR is smaller than the effective min ISR: acks=all writes are refused.
    pub under_min_isr: bool,
}

/// One follower as its leader sees it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct FollowerView {
    pub id: i32,
    /// Its log end from its last fetch (-1: it never fetched).
    pub log_end_offset: i64,
    /// The leader's log end minus the follower's.
    pub lag: i64,
    pub last_fetch_ms: i64,
    pub last_caught_up_ms: i64,
    pub in_isr: bool,
}

impl ReplicaManager {
    /// The replication state of a hosted partition (`None` when it is not hosted).
    pub fn replication_view(&self, tp: &TopicPartition) -> Option<ReplicationView> {
        let (state, _) = self.states.read().get(tp).cloned()?;
        let st = state.lock();
        let (role, leader) = match st.role() {
            skiff_replication::Role::Leader => ("leader", self.node_id),
            skiff_replication::Role::Follower { leader } => ("follower", leader),
            skiff_replication::Role::None => ("none", -1),
        };
        let leo = st.log_end_offset();
        Some(ReplicationView {
            role,
            leader,
            leader_epoch: st.leader_epoch(),
            partition_epoch: st.partition_epoch(),
            replicas: st.replicas().to_vec(),
            isr: st.isr().to_vec(),
            effective_min_isr: st.effective_min_isr(),
            high_watermark: st.high_watermark(),
            log_end_offset: leo,
            followers: st
                .followers()
                .iter()
                .map(|f| FollowerView {
                    id: f.id,
                    log_end_offset: f.log_end_offset,
                    lag: (leo - f.log_end_offset.max(0)).max(0),
                    last_fetch_ms: f.last_fetch_ms,
                    last_caught_up_ms: f.last_caught_up_ms,
                    in_isr: st.isr().contains(&f.id),
                })
                .collect(),
            under_replicated: st.isr().len() < st.replicas().len(),
            under_min_isr: st.isr().len() < st.effective_min_isr(),
        })
    }

    /// The replication gauges of the partitions this node leads.
    pub fn replication_stats(&self) -> crate::stats::ReplicationStats {
        let mut out = crate::stats::ReplicationStats::default();
        let states: Vec<_> = self
            .states
            .read()
            .values()
            .map(|(st, _)| Arc::clone(st))
            .collect();
        for state in states {
            let st = state.lock();
            if st.role() != skiff_replication::Role::Leader {
                continue;
            }
            out.leader_partitions += 1;
            if st.isr().len() < st.replicas().len() {
                out.under_replicated_partitions += 1;
            }
            if st.isr().len() < st.effective_min_isr() {
                out.under_min_isr_partitions += 1;
            }
        }
        out
    }

    /// Every log on this node (stray ones included: the operator should see them).
    pub fn snapshot(&self) -> Vec<PartitionSnapshot> {
        self.logs
            .all()
            .iter()
            .map(|(tp, log)| snapshot_of(tp, log))
            .collect()
    }

    /// One log's snapshot, `None` if this node has no log for `tp`.
    pub fn partition_snapshot(&self, tp: &TopicPartition) -> Option<PartitionSnapshot> {
        self.logs.get(tp).map(|log| snapshot_of(tp, &log))
    }
}

fn snapshot_of(tp: &TopicPartition, log: &skiff_storage::SharedLog) -> PartitionSnapshot {
    let l = log.lock();
    PartitionSnapshot {
        tp: tp.clone(),
        log_start_offset: l.log_start_offset(),
        log_end_offset: l.log_end_offset(),
        high_watermark: l.high_watermark(),
        size_bytes: l.size_bytes(),
        segment_count: l.segment_count(),
        quarantined_ranges: l.quarantined().len(),
    }
}

impl ReplicaManager {
    /// AlterReplicaLogDirs of one partition: moves its log into log dir `path` (copy then
    /// swap, see `skiff_storage::log_manager` moves), a no-op when it is already there.
    /// Kafka's codes: `path` not in `log.dirs` -> LOG_DIR_NOT_FOUND; a dir offline ->
    /// KAFKA_STORAGE_ERROR; a partition this broker does not host -> REPLICA_NOT_AVAILABLE.
    /// Blocks for the copy: call it off the connection's reader.
    pub fn alter_log_dir(&self, tp: &TopicPartition, path: &std::path::Path) -> ErrorCode {
        let Some(dest) = self.logs.log_dir_index(path) else {
            return ErrorCode::LogDirNotFound;
        };
        match self.logs.move_log(tp, dest) {
            Ok(_) => ErrorCode::None,
            Err(e) => {
                tracing::warn!(%tp, dir = %path.display(), error = %e, "AlterReplicaLogDirs: the move failed");
                e.error_code()
            }
        }
    }
}
