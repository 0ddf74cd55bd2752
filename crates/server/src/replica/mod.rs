//! The replica manager (issue 13 item 2): the one owner of every hosted partition's log and
//! replication state. Handlers and the group coordinator reach partitions only through it; no
//! other code appends, moves a high watermark or names a leader epoch. (The admin port's views
//! and the DSO timer still lock logs to read them; the cleaner and scrubber threads work inside
//! storage.)
//!
//! Mental model: a hosted partition is its storage log (`SharedLog`, from the
//! [`LogManager`]) plus its [`skiff_replication::Partition`] (role, epochs, replicas, ISR, HW,
//! parked acks). Every operation here takes the log's lock, then the state's lock (never the
//! other order), asks the pure core what to do and carries out the returned effects: a HW move
//! is written into the log (its checkpoint) and wakes the partition's long-polling fetches;
//! a completed ack answers its waiting producer. On one node this reproduces the single-node
//! rules exactly: HW = LEO after an append, or the fsynced end on durable topics
//! (`flush.messages=1`, group commit off the async workers).
//!
//! Which partitions are hosted is decided by the metadata image only: a log is created when
//! the image assigns the partition to this node (topic creation, new partitions, and at start
//! for partitions the image has and the disk lacks), never as a side effect of a request, and
//! deleted when its topic is deleted. A request for a partition this node does not host gets
//! NOT_LEADER_OR_FOLLOWER (its topic unknown: UNKNOWN_TOPIC_OR_PARTITION).
//!
//! The metadata log (`__cluster_metadata-0`) is not a replica of this manager: as in KRaft, it
//! belongs to the metadata log implementation (`skiff_metadata::MetadataLog`).
//!
//! Roles follow the image too (issue 17): on every metadata change [`ReplicaManager::reconcile`]
//! makes each hosted partition leader or follower as its registration says ([`follow`]); the
//! partitions this node follows, with their leader and leader epoch, are published for the
//! fetchers ([`fetcher`]), which append what the leaders send through [`follow`].
//!
//! Sub-modules: [`append`] (leader appends, acks, the group-commit driver), [`read`] (the one
//! read-bound rule for Fetch and ListOffsets, OffsetForLeaderEpoch; a follower's fetch on the
//! leader), [`follow`] (role changes and the follower's side: appends, divergence,
//! out-of-range resets), [`fetcher`] (one fetch task per leader broker), [`isr`] (ISR
//! proposals as AlterPartition, the ticker), [`admin`]
//! (DeleteRecords, producers, log dirs, config changes, the admin port's view).

pub mod admin;
pub mod append;
pub mod fetch_session;
pub mod fetcher;
pub mod follow;
#[cfg(test)]
mod follow_tests;
pub mod isr;
pub mod read;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::{Mutex, RwLock};
use skiff_metadata::{MetadataImage, TopicInfo};
use skiff_replication::{Assignment, Effect, LocalLog, Partition, PartitionConfig, WaitId};
use skiff_storage::{Log, LogConfig, LogManager, SharedLog};
use skiff_types::{Clock, ErrorCode, TopicPartition};
use tokio::sync::{oneshot, watch};

use crate::delivery::DeliveryTimer;
use crate::waiters::AppendWaiters;
use append::ProduceCombiner;

/// One hosted partition: its log and its replication state (lock order: log, then state),
/// and the queue in front of them that combines concurrent produce appends (issue 14).
#[derive(Clone, Debug)]
pub(crate) struct Hosted {
    pub tp: TopicPartition,
    pub log: SharedLog,
    pub state: Arc<Mutex<Partition>>,
    pub combiner: Arc<ProduceCombiner>,
}

/// A hosted partition's replication state and produce combiner.
type Slot = (Arc<Mutex<Partition>>, Arc<ProduceCombiner>);

/// The replica manager of this node.
#[derive(Debug)]
pub struct ReplicaManager {
    node_id: i32,
    logs: Arc<LogManager>,
    clock: Clock,
    /// Long-polling fetches waiting for a partition's HW (or DSO) to move.
    pub waiters: AppendWaiters,
    /// delivery delay (issue 8): next DSO move per partition.
    pub delivery: DeliveryTimer,
    /// Hosted partitions (read on every request; written when the hosted set changes).
    states: RwLock<HashMap<TopicPartition, Slot>>,
    next_wait: AtomicU64,
    /// Producers waiting for their acks condition, by the core's wait id.
    acks: Mutex<HashMap<WaitId, oneshot::Sender<ErrorCode>>>,
    /// The partitions this node follows (for the fetchers); the watch's value is bumped on
    /// every change.
    following: Mutex<HashMap<TopicPartition, follow::FollowTarget>>,
    following_tx: watch::Sender<u64>,
    /// ISR proposals waiting for the AlterPartition sender ([`isr`]).
    isr_queue: Mutex<Vec<isr::IsrProposal>>,
    /// Proposals whose outcome is unknown, sent again after a delay.
    isr_retry: Mutex<Vec<isr::IsrProposal>>,
    isr_ready: Arc<tokio::sync::Notify>,
    /// `replica.lag.time.max.ms`
    lag_time_max_ms: std::sync::atomic::AtomicI64,
    /// A cluster broker takes no role (leader or follower) until the image shows its current
    /// registration unfenced ([`ReplicaManager::open_roles_when_registered`]); a single node
    /// takes its roles at open.
    roles_open: std::sync::atomic::AtomicBool,
    /// A truncation lowered some HW since the last HW checkpoint: the fetchers write the
    /// checkpoint at once ([`ReplicaManager::checkpoint_if_hw_lowered`]), so a crash cannot
    /// bring back the old, higher HW over records nobody committed (the simulation's bug 6).
    hw_lowered: std::sync::atomic::AtomicBool,
}

/// The image's registration of `tp` when it lists `node` as a replica: (leader, assignment).
fn assignment_of(
    image: &MetadataImage,
    tp: &TopicPartition,
    node: i32,
) -> Option<(i32, Assignment)> {
    let p = image.partition(&tp.topic, tp.partition)?;
    p.replicas.contains(&node).then(|| {
        (
            p.leader,
            Assignment {
                leader_epoch: p.leader_epoch,
                partition_epoch: p.partition_epoch,
                replicas: p.replicas.clone(),
                isr: p.isr.clone(),
            },
        )
    })
}

/// The core's view of a partition's settings: its log config (`flush.messages`,
/// `min.insync.replicas`) and the broker's `replica.lag.time.max.ms`.
fn partition_config(c: &LogConfig, lag_time_max_ms: i64) -> PartitionConfig {
    PartitionConfig {
        durable: c.is_durable(),
        min_insync_replicas: c.min_insync_replicas.max(1),
        replica_lag_time_max_ms: lag_time_max_ms,
    }
}

impl ReplicaManager {
    /// Takes over the loaded logs: every hosted log becomes a leader (epoch of the image, 0 on
    /// one node) whose HW is its log end (Kafka's makeLeader: everything on disk after
    /// recovery counts, not the last checkpoint). Then creates the logs the image assigns to
    /// this node and the disk lacks (a crash between metadata and log creation).
    pub fn open(
        node_id: i32,
        logs: Arc<LogManager>,
        image: &MetadataImage,
        config_for: &dyn Fn(&TopicInfo) -> LogConfig,
    ) -> Arc<Self> {
        Self::open_with(node_id, logs, image, config_for, false)
    }

    /// [`ReplicaManager::open`] for a cluster broker: the logs are hosted but take no role
    /// until [`ReplicaManager::open_roles_when_registered`] sees this broker registered again
    /// (a restarted broker must not lead from the image it had before it stopped: its ISR and
    /// epochs may be stale, as Kafka's broker serves only once unfenced).
    pub fn open_gated(
        node_id: i32,
        logs: Arc<LogManager>,
        image: &MetadataImage,
        config_for: &dyn Fn(&TopicInfo) -> LogConfig,
    ) -> Arc<Self> {
        Self::open_with(node_id, logs, image, config_for, true)
    }

    fn open_with(
        node_id: i32,
        logs: Arc<LogManager>,
        image: &MetadataImage,
        config_for: &dyn Fn(&TopicInfo) -> LogConfig,
        gated: bool,
    ) -> Arc<Self> {
        let clock = logs.clock().clone();
        let rm = Arc::new(Self {
            node_id,
            logs,
            clock,
            waiters: AppendWaiters::new(),
            delivery: DeliveryTimer::new(),
            states: RwLock::new(HashMap::new()),
            next_wait: AtomicU64::new(1),
            acks: Mutex::new(HashMap::new()),
            following: Mutex::new(HashMap::new()),
            following_tx: watch::channel(0).0,
            isr_queue: Mutex::new(Vec::new()),
            isr_retry: Mutex::new(Vec::new()),
            isr_ready: Arc::new(tokio::sync::Notify::new()),
            lag_time_max_ms: std::sync::atomic::AtomicI64::new(
                PartitionConfig::default().replica_lag_time_max_ms,
            ),
            roles_open: std::sync::atomic::AtomicBool::new(!gated),
            hw_lowered: std::sync::atomic::AtomicBool::new(false),
        });
        for (tp, log) in rm.logs.all() {
            if image
                .topic(&tp.topic)
                .is_none_or(|t| tp.partition >= t.partitions)
            {
                tracing::warn!(%tp, "stray partition: its topic is not in the metadata; it is not served");
                continue;
            }
            let Some(assignment) = assignment_of(image, &tp, node_id) else {
                tracing::warn!(%tp, "partition not assigned to this node by the metadata; it is not served");
                continue;
            };
            let mut l = log.lock();
            let leo = l.log_end_offset();
            rm.install(&tp, &mut l, assignment, leo);
        }
        for info in image.topics.values() {
            rm.ensure_assigned(image, &info.name, config_for(info));
        }
        rm
    }

    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// Whether partitions take roles now (always on a single node).
    pub fn roles_open(&self) -> bool {
        self.roles_open.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Opens the roles of a gated replica manager once `image` holds this broker's
    /// registration at `registered_epoch`, unfenced; true when they are open.
    pub fn open_roles_when_registered(
        &self,
        image: &MetadataImage,
        registered_epoch: Option<i64>,
    ) -> bool {
        if self.roles_open() {
            return true;
        }
        let ready = registered_epoch.is_some_and(|epoch| {
            image
                .broker(self.node_id)
                .is_some_and(|b| b.epoch == epoch && !b.fenced)
        });
        if ready {
            tracing::info!("registered and unfenced: partitions take their roles");
            self.roles_open
                .store(true, std::sync::atomic::Ordering::Release);
        }
        ready
    }

    fn partition_config(&self, c: &LogConfig) -> PartitionConfig {
        let lag = self
            .lag_time_max_ms
            .load(std::sync::atomic::Ordering::Relaxed);
        partition_config(c, lag)
    }

    /// Sets `replica.lag.time.max.ms` for every hosted and future partition.
    pub fn set_lag_time_max_ms(&self, ms: i64) {
        self.lag_time_max_ms
            .store(ms.max(1), std::sync::atomic::Ordering::Relaxed);
        let now = self.clock.now_ms();
        let hosted: Vec<TopicPartition> = self.states.read().keys().cloned().collect();
        for tp in hosted {
            let (Some(log), Some((state, _))) =
                (self.logs.get(&tp), self.states.read().get(&tp).cloned())
            else {
                continue;
            };
            let mut l = log.lock();
            let config = self.partition_config(l.config());
            let fx = state.lock().set_config(config, now);
            self.apply(&mut l, fx);
        }
    }

    pub fn node_id(&self) -> i32 {
        self.node_id
    }

    /// The storage underneath (the log manager's background work, shutdown, the cleaner and
    /// scrubber threads; never a handler).
    pub fn log_manager(&self) -> &Arc<LogManager> {
        &self.logs
    }

    /// Whether a truncation lowered a HW since the last checkpoint (a cheap check).
    pub fn hw_lowered_pending(&self) -> bool {
        self.hw_lowered.load(Ordering::Acquire)
    }

    /// Writes the checkpoint files now if a truncation lowered a HW since the last call
    /// (blocking I/O: call with no log lock held, off the async workers).
    pub fn checkpoint_if_hw_lowered(&self) {
        if self.hw_lowered.swap(false, Ordering::AcqRel)
            && let Err(e) = self.logs.write_checkpoints()
        {
            tracing::error!(error = %e, "cannot write the HW checkpoint after a truncation");
        }
    }

    /// Makes this node the leader of `tp` over `l` (as `assignment` says), durable up to
    /// `durable_end`.
    fn install(
        &self,
        tp: &TopicPartition,
        l: &mut Log,
        assignment: (i32, Assignment),
        durable_end: i64,
    ) -> Arc<Mutex<Partition>> {
        let local = LocalLog {
            log_start_offset: l.log_start_offset(),
            log_end_offset: l.log_end_offset(),
            durable_end,
            high_watermark: l.high_watermark(),
        };
        let now = self.clock.now_ms();
        let mut p = Partition::new(self.node_id, self.partition_config(l.config()));
        let (leader, assignment) = assignment;
        if !self.roles_open() {
            // Hosted without a role until this broker is registered again (`sync_roles`).
            let state = Arc::new(Mutex::new(p));
            let combiner = Arc::new(ProduceCombiner::new());
            self.states
                .write()
                .insert(tp.clone(), (Arc::clone(&state), combiner));
            return state;
        }
        let epoch = assignment.leader_epoch;
        let fx = if leader == self.node_id {
            // Kafka's makeLeader: the epoch's start goes into the epoch cache at once.
            if let Err(e) = l.assign_epoch_start(epoch) {
                tracing::error!(%tp, error = %e, "cannot record the leader epoch start");
            }
            p.become_leader(assignment, local, now)
        } else {
            // The fetcher of `leader` fetches it (a single node never gets here).
            p.become_follower(leader, assignment, local)
        };
        self.set_following(tp, (leader != self.node_id).then_some((leader, epoch)));
        let state = Arc::new(Mutex::new(p));
        let combiner = Arc::new(ProduceCombiner::new());
        self.states
            .write()
            .insert(tp.clone(), (Arc::clone(&state), combiner));
        self.apply(l, fx);
        state
    }

    /// Creates the logs of `topic`'s partitions that `image` assigns to this node and that it
    /// does not host yet.
    pub fn ensure_assigned(&self, image: &MetadataImage, topic: &str, config: LogConfig) {
        self.ensure_assigned_with(image, topic, &|| config.clone());
    }

    /// [`ReplicaManager::ensure_assigned`] with the log config made only if a log must be
    /// created (making it parses the topic's configs: the reconciler visits every topic on
    /// every metadata change).
    fn ensure_assigned_with(
        &self,
        image: &MetadataImage,
        topic: &str,
        config: &dyn Fn() -> LogConfig,
    ) {
        let now = self.clock.now_ms();
        let Some(info) = image.topic(topic) else {
            return;
        };
        for p in 0..info.partitions {
            let tp = TopicPartition::new(info.name.clone(), p);
            if self.states.read().contains_key(&tp) {
                continue;
            }
            let Some(assignment) = assignment_of(image, &tp, self.node_id) else {
                continue;
            };
            match self.logs.get_or_create(&tp, config(), now) {
                Ok(log) => {
                    let mut l = log.lock();
                    let synced = l.sync().synced().min(l.log_end_offset());
                    self.install(&tp, &mut l, assignment, synced);
                }
                Err(e) => {
                    tracing::error!(%tp, error = %e, "cannot create an assigned partition's log");
                }
            }
        }
    }

    /// issue 16: follows the image (called whenever it moves): hosts what it assigns here and
    /// stops hosting (and deletes) partitions of topics it no longer has. Logs on disk that
    /// were never hosted are left alone (the image may still be catching up with them).
    pub fn reconcile(&self, image: &MetadataImage, config_for: &dyn Fn(&TopicInfo) -> LogConfig) {
        for info in image.topics.values() {
            self.ensure_assigned_with(image, &info.name, &|| config_for(info));
        }
        self.sync_roles(image);
        let gone: Vec<TopicPartition> = self
            .states
            .read()
            .keys()
            .filter(|tp| {
                image
                    .topic(&tp.topic)
                    .is_none_or(|t| tp.partition >= t.partitions)
            })
            .cloned()
            .collect();
        for tp in gone {
            tracing::info!(%tp, "partition deleted by the metadata: removing its log");
            self.delete_partitions_range(&tp.topic, tp.partition..tp.partition + 1);
        }
    }

    /// Removes the logs of a deleted topic's partitions `0..partitions`.
    pub fn delete_partitions(&self, topic: &str, partitions: i32) {
        self.delete_partitions_range(topic, 0..partitions);
    }

    fn delete_partitions_range(&self, topic: &str, range: std::ops::Range<i32>) {
        for p in range {
            let tp = TopicPartition::new(topic, p);
            if let Some((state, _)) = self.states.write().remove(&tp) {
                state.lock().resign();
            }
            self.set_following(&tp, None);
            if let Err(e) = self.logs.delete(&tp) {
                tracing::error!(%tp, error = %e, "topic deleted but its log could not be removed");
            }
            self.waiters.notify(&tp);
        }
    }

    /// A hosted partition of a known topic. Out of range -> UNKNOWN_TOPIC_OR_PARTITION; its log
    /// dir offline -> KAFKA_STORAGE_ERROR; not hosted here -> NOT_LEADER_OR_FOLLOWER.
    pub(crate) fn hosted(&self, info: &TopicInfo, partition: i32) -> Result<Hosted, ErrorCode> {
        if partition < 0 || partition >= info.partitions {
            return Err(ErrorCode::UnknownTopicOrPartition);
        }
        let tp = TopicPartition::new(info.name.clone(), partition);
        // issue 12: a partition whose log dir is offline answers KAFKA_STORAGE_ERROR.
        self.logs
            .check_partition_online(&tp)
            .map_err(|e| e.error_code())?;
        let slot = self.states.read().get(&tp).cloned();
        match (slot, self.logs.get(&tp)) {
            (Some((state, combiner)), Some(log)) => Ok(Hosted {
                tp,
                log,
                state,
                combiner,
            }),
            _ => Err(ErrorCode::NotLeaderOrFollower),
        }
    }

    /// The leader epoch of a hosted partition.
    pub fn leader_epoch(&self, tp: &TopicPartition) -> Option<i32> {
        self.states
            .read()
            .get(tp)
            .map(|s| s.0.lock().leader_epoch())
    }

    /// Is `tp`'s log dir online (issue 12)?
    pub fn is_partition_online(&self, tp: &TopicPartition) -> bool {
        self.logs.check_partition_online(tp).is_ok()
    }

    /// Are all log dirs online?
    pub fn all_dirs_online(&self) -> bool {
        self.logs.all_dirs_online()
    }

    /// Carries out the core's effects on `l` (the caller holds its lock and may hold the
    /// state's); wakes fetchers when the HW moved.
    fn apply(&self, l: &mut Log, effects: Vec<Effect>) {
        let mut moved = false;
        for e in effects {
            match e {
                Effect::HighWatermarkAdvanced { new, .. } => {
                    l.set_high_watermark(new);
                    moved = true;
                }
                Effect::HighWatermarkLowered { new, .. } => {
                    l.set_high_watermark(new);
                    self.hw_lowered.store(true, Ordering::Release);
                    moved = true;
                }
                Effect::AckCompleted { wait, error } => {
                    if let Some(tx) = self.acks.lock().remove(&wait) {
                        let _ = tx.send(error);
                    }
                }
                // Followers long-polling the leader wait for new data, not for the HW.
                Effect::LogEndAdvanced { .. } => moved = true,
                Effect::ProposeIsr {
                    isr,
                    partition_epoch,
                } => {
                    tracing::debug!(tp = %l.topic_partition(), ?isr, "ISR change proposed");
                    self.queue_isr_proposal(isr::IsrProposal {
                        tp: l.topic_partition().clone(),
                        partition_epoch,
                        isr,
                    });
                }
            }
        }
        if moved {
            self.waiters.notify(l.topic_partition());
        }
    }
}
