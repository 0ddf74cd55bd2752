//! The broker's shared state: what every handler on every connection reaches through one
//! `Arc<Broker>`.
//!
//! Mental model: the [`MetadataStore`] says which topics exist (names, ids, partition counts,
//! config overrides); the [`ReplicaManager`] hosts the partitions the image assigns to this node
//! (their logs and replication state: HW, epochs, acks). Topic creation writes metadata first,
//! then the replica manager creates the logs; at start it creates those a crash in between left
//! missing, so metadata is the authority. Handlers reach partitions only through the replica
//! manager.
//!
//! Thread-safety: everything here is `Sync`; each log has its own mutex (never held across an
//! `.await`), the fetch-session cache has one, metadata serialises its writers.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;
use skiff_metadata::{MetadataImage, MetadataStore, TopicInfo};
use skiff_storage::LogConfig;
use skiff_types::{Clock, ErrorCode, TopicPartition};
use tokio::sync::watch;

use crate::coordinator::GroupCoordinator;
use crate::error::ServerError;
use crate::fetch_session::FetchSessionCache;
use crate::replica::ReplicaManager;
use crate::settings::{METADATA_DIR_NAME, ServerSettings, TopicConfigs};

/// A topic-level failure with its Kafka code and message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopicError {
    pub code: ErrorCode,
    pub message: String,
}

impl TopicError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

/// A broker as clients see it: (id, host, port, rack).
pub type ClusterBroker = (i32, String, u16, Option<String>);

/// Shared broker state.
#[derive(Debug)]
pub struct Broker {
    pub settings: ServerSettings,
    pub topic_configs: Arc<dyn TopicConfigs>,
    /// The only owner of partition logs and their replication state (issue 13).
    pub replicas: Arc<ReplicaManager>,
    pub metadata: MetadataStore,
    /// issue 16: this node's part in the Raft metadata quorum, voter or observer (`None`: a
    /// local metadata log).
    pub quorum: Option<skiff_raft::Member>,
    /// issue 16: inter-node clients (forwarding, registration).
    pub peers: crate::cluster::Peers,
    /// issue 16: producer id blocks from the active controller (AllocateProducerIds).
    pub producer_ids: crate::producer_ids::ProducerIdBlocks,
    me: std::sync::Weak<Broker>,
    pub fetch_sessions: Mutex<FetchSessionCache>,
    /// Counters of the fetch-session and sendfile paths (`GET /api/v1/stats`).
    pub stats: crate::stats::ServerStats,
    /// issue 20: the recorded Prometheus series (`GET /metrics`; empty when compiled out).
    pub metrics: crate::metrics::Metrics,
    /// The group coordinator (consumer groups, committed offsets).
    pub groups: GroupCoordinator,
    /// The transaction coordinator (issue 18).
    pub txns: crate::txn::TxnCoordinator,
    /// The authorizer's current ACL set (issue 19; allows everything when none is configured).
    pub authz: crate::authz::Authz,
    // compaction (issue 7): per-log cleaner state, written by the cleaner threads.
    pub cleaner_stats: Arc<skiff_compaction::CleanerStats>,
    /// The broker's one clock (`settings.log_manager.clock`, created by `skiff serve`).
    pub clock: Clock,
    cluster_id: String,
    shutdown: watch::Receiver<bool>,
    /// issue 12 item 1: the `.lock` of every log dir, held from before anything touches the
    /// dirs until [`Broker::release_dir_locks`] after storage is closed (or the broker drops).
    dir_locks: Mutex<Vec<skiff_storage::dir_lock::DirLock>>,
}

impl Broker {
    /// Opens the metadata log, then every partition log (blocking I/O: call at start).
    pub fn open(
        mut settings: ServerSettings,
        topic_configs: Arc<dyn TopicConfigs>,
        shutdown: watch::Receiver<bool>,
    ) -> Result<Arc<Broker>, ServerError> {
        // Settings first: a refused configuration must not wait for log recovery.
        settings
            .groups
            .config
            .validate()
            .map_err(|e| ServerError::Config(e.to_string()))?;
        let metadata_dir = settings
            .metadata_dir()
            .ok_or_else(|| ServerError::Config("log.dirs is empty".into()))?;
        // Every log dir (the metadata log lives in the first) is locked before anything reads
        // or writes it: recovery, meta.properties, the clean-shutdown marker.
        let dir_locks = skiff_storage::dir_lock::lock_dirs(&settings.log_manager.log_dirs)?;
        if let Some(q) = settings.quorum.as_ref()
            && crate::cluster::keeps_local_metadata_log(q, &metadata_dir)
        {
            tracing::warn!(dir = %metadata_dir.display(), "this single combined voter keeps the local metadata log an earlier Skiff wrote: broker-only nodes cannot follow it (they need a Raft quorum; a new cluster formatted by this version has one)");
            settings.quorum = None;
        }
        // The first dir's meta.properties is checked (or written, if the dir is empty) before
        // the metadata log is created in it.
        let (metadata, quorum) = match &settings.quorum {
            None => {
                let store = MetadataStore::open_checked(
                    &metadata_dir,
                    settings.node_id,
                    settings.kraft_mode,
                    settings.log_manager.clock.clone(),
                )
                .map_err(|e| match e {
                    skiff_metadata::MetadataError::LogDir(e) => ServerError::LogDir(e),
                    e => ServerError::Metadata(e),
                })?;
                (store, None)
            }
            Some(q) if q.voter => {
                let (store, quorum) = crate::cluster::open_quorum(&settings, q, &metadata_dir)?;
                (store, Some(skiff_raft::Member::Voter(quorum)))
            }
            Some(q) => {
                let (store, observer) = crate::cluster::open_observer(&settings, q, &metadata_dir)?;
                (store, Some(skiff_raft::Member::Observer(observer)))
            }
        };
        // Every log dir carries the first one's cluster id (Kafka's storage format); a dir of
        // another cluster refuses the start before any of its logs is opened.
        let cluster_id = metadata.cluster_id();
        for dir in &settings.log_manager.log_dirs {
            skiff_metadata::format_log_dir(
                dir,
                &cluster_id,
                settings.node_id,
                settings.kraft_mode,
            )?;
        }
        if let Some(live) = topic_configs.live() {
            live.load_persisted(&metadata.image(), settings.node_id);
        }
        if !settings
            .log_manager
            .reserved_dirs
            .iter()
            .any(|d| d == METADATA_DIR_NAME)
        {
            settings
                .log_manager
                .reserved_dirs
                .push(METADATA_DIR_NAME.to_string());
        }
        let image = metadata.image();
        let configs = Arc::clone(&topic_configs);
        let config_for = move |tp: &TopicPartition| log_config_for(&*configs, &image, &tp.topic);
        let (logs, reports) = skiff_storage::LogManager::open(
            settings.log_manager.clone(),
            &config_for,
            settings.log_manager.clock.now_ms(),
        )?;
        for (tp, r) in &reports {
            if r.recovered_segments > 0 || r.truncated_bytes > 0 {
                tracing::warn!(%tp, recovered = r.recovered_segments, truncated_bytes = r.truncated_bytes, "partition recovered");
            }
        }
        let image = metadata.image();
        let replicas = {
            let configs = Arc::clone(&topic_configs);
            let at_start = Arc::clone(&image);
            let config_for = move |t: &TopicInfo| log_config_for(&*configs, &at_start, &t.name);
            if settings.quorum.as_ref().is_some_and(|q| q.broker) {
                // A cluster broker leads or follows only once registered again (issue 17).
                ReplicaManager::open_gated(settings.node_id, Arc::clone(&logs), &image, &config_for)
            } else {
                ReplicaManager::open(settings.node_id, Arc::clone(&logs), &image, &config_for)
            }
        };
        // issue 12 item 10: the metadata log's producer-id blocks may be behind what partitions
        // have seen (a lost tail): never issue an id any partition's producer state knows.
        if let Some(max_pid) = logs
            .all()
            .iter()
            .filter_map(|(_, log)| log.lock().max_producer_id())
            .max()
        {
            metadata.reserve_producer_ids_above(max_pid);
        }
        let cluster_id = metadata.cluster_id();
        tracing::info!(partitions = reports.len(), %cluster_id, "logs loaded");
        let groups =
            GroupCoordinator::new(settings.groups.clone(), &metadata.image(), quorum.is_some());
        let txns = crate::txn::TxnCoordinator::new(
            settings.txns.clone(),
            &metadata.image(),
            quorum.is_some(),
        );
        let clock = settings.log_manager.clock.clone();
        Ok(Arc::new_cyclic(|me| Broker {
            me: me.clone(),
            peers: crate::cluster::Peers::new(&settings),
            producer_ids: crate::producer_ids::ProducerIdBlocks::default(),
            clock,
            fetch_sessions: Mutex::new(FetchSessionCache::new(settings.fetch_session_slots)),
            stats: crate::stats::ServerStats::default(),
            metrics: crate::metrics::Metrics::new(),
            groups,
            txns,
            authz: match &settings.security.authorizer {
                Some(c) => crate::authz::Authz::enabled(c.clone()),
                None => crate::authz::Authz::disabled(),
            },
            settings,
            topic_configs,
            replicas,
            metadata,
            quorum,
            cleaner_stats: Arc::new(skiff_compaction::CleanerStats::new()),
            cluster_id,
            shutdown,
            dir_locks: Mutex::new(dir_locks),
        }))
    }

    /// Holds off other config changes while alive (the live config's lock; a process-wide one
    /// on brokers without a live config, i.e. tests).
    pub fn alter_guard(&self) -> parking_lot::MutexGuard<'_, ()> {
        static PLAIN_ALTER_LOCK: Mutex<()> = Mutex::new(());
        match self.topic_configs.live() {
            Some(live) => live.alter_lock(),
            None => PLAIN_ALTER_LOCK.lock(),
        }
    }

    /// The fetch-session cache (KIP-227), locked; never held across an `.await`.
    pub fn sessions(&self) -> parking_lot::MutexGuard<'_, FetchSessionCache> {
        self.fetch_sessions.lock()
    }

    /// Releases the log dirs' locks; called once storage is closed (clean-shutdown marker
    /// written), so another broker may open the dirs.
    pub fn release_dir_locks(&self) {
        self.dir_locks.lock().clear();
    }

    /// Wall-clock milliseconds from the broker's clock.
    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// Tokio's form of the clock's monotonic `now + d` (a timer deadline).
    pub fn deadline_after(&self, d: std::time::Duration) -> tokio::time::Instant {
        tokio::time::Instant::from_std(self.clock.now() + d)
    }

    /// Tokio's form of the clock's monotonic now.
    pub fn tokio_now(&self) -> tokio::time::Instant {
        tokio::time::Instant::from_std(self.clock.now())
    }

    pub fn node_id(&self) -> i32 {
        self.settings.node_id
    }

    pub fn cluster_id(&self) -> &str {
        &self.cluster_id
    }

    pub fn image(&self) -> Arc<MetadataImage> {
        self.metadata.image()
    }

    /// A receiver that flips to `true` when the server starts shutting down.
    pub fn shutdown_signal(&self) -> watch::Receiver<bool> {
        self.shutdown.clone()
    }

    pub fn is_shutting_down(&self) -> bool {
        *self.shutdown.borrow()
    }

    /// The effective log config of a topic (its overrides on top of the broker defaults).
    pub fn log_config(&self, topic: &TopicInfo) -> LogConfig {
        match self.topic_configs.log_config(&topic.configs) {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(topic = %topic.name, error = %e, "stored topic configs are invalid; using defaults");
                self.topic_configs
                    .log_config(&BTreeMap::new())
                    .unwrap_or_default()
            }
        }
    }

    /// Checks a new topic's parameters and configs without creating anything.
    pub fn validate_new_topic(
        &self,
        name: &str,
        partitions: i32,
        configs: &BTreeMap<String, String>,
    ) -> Result<LogConfig, TopicError> {
        skiff_metadata::validate_topic_name(name)
            .map_err(|e| TopicError::new(e.error_code(), e.to_string()))?;
        if self.image().topic(name).is_some() {
            return Err(TopicError::new(
                ErrorCode::TopicAlreadyExists,
                format!("Topic '{name}' already exists."),
            ));
        }
        if partitions < 1 {
            return Err(TopicError::new(
                ErrorCode::InvalidPartitions,
                "Number of partitions was set to an invalid non-positive value.",
            ));
        }
        self.topic_configs
            .log_config(configs)
            .map_err(|m| TopicError::new(ErrorCode::InvalidConfig, m))
    }

    /// Creates a topic: metadata first (durable), then its partition logs.
    pub fn create_topic(
        &self,
        name: &str,
        partitions: i32,
        configs: BTreeMap<String, String>,
    ) -> Result<TopicInfo, TopicError> {
        let rf = self.settings.default_replication_factor;
        self.create_topic_rf(name, partitions, rf, configs)
    }

    /// [`Broker::create_topic`] with `replication_factor` replicas per partition.
    pub fn create_topic_rf(
        &self,
        name: &str,
        partitions: i32,
        replication_factor: i16,
        configs: BTreeMap<String, String>,
    ) -> Result<TopicInfo, TopicError> {
        let log_config = self.validate_new_topic(name, partitions, &configs)?;
        if !crate::cluster::is_controller(self) {
            // issue 16: created by the active controller; this node hosts its partitions once
            // the image shows them.
            if let Some(me) = self.me.upgrade() {
                crate::cluster::create_topic_on_controller(
                    &me,
                    name,
                    partitions,
                    replication_factor,
                    configs,
                );
            }
            return Err(TopicError::new(
                ErrorCode::LeaderNotAvailable,
                format!("Topic '{name}' is being created by the controller."),
            ));
        }
        let info = self
            .metadata
            .create_topic_with(name, partitions, replication_factor, configs)
            .map_err(|e| TopicError::new(e.error_code(), e.to_string()))?;
        // The image now assigns the partitions to this node: the replica manager hosts them.
        self.replicas
            .ensure_assigned(&self.image(), &info.name, log_config);
        tracing::info!(topic = name, partitions, "topic created");
        Ok(info)
    }

    /// Creates a topic placed by hand: one replica list per partition (the controller checks
    /// them against the registered brokers). This node must be the active controller.
    pub fn create_topic_assigned(
        &self,
        name: &str,
        assignments: Vec<Vec<i32>>,
        configs: BTreeMap<String, String>,
    ) -> Result<TopicInfo, TopicError> {
        let partitions = i32::try_from(assignments.len()).unwrap_or(i32::MAX);
        let log_config = self.validate_new_topic(name, partitions, &configs)?;
        let info = self
            .metadata
            .create_topic_assigned(name, assignments, configs)
            .map_err(|e| TopicError::new(e.error_code(), e.to_string()))?;
        self.replicas
            .ensure_assigned(&self.image(), &info.name, log_config);
        tracing::info!(
            topic = name,
            partitions,
            "topic created (manual assignment)"
        );
        Ok(info)
    }

    /// Deletes a topic: metadata first, then its logs.
    pub fn delete_topic(&self, name: &str) -> Result<TopicInfo, TopicError> {
        let info = self
            .metadata
            .delete_topic(name)
            .map_err(|e| TopicError::new(e.error_code(), e.to_string()))?;
        self.replicas.delete_partitions(name, info.partitions);
        tracing::info!(topic = name, "topic deleted");
        Ok(info)
    }

    /// The brokers clients see through `listener` (Metadata, DescribeCluster) as
    /// (id, host, port, rack), and the controller id. One node: itself. A cluster: every
    /// registered, unfenced broker with an endpoint of the listener's name (as KRaft), and the
    /// quorum's leader (-1 while none is known).
    pub fn cluster_view(
        &self,
        listener: &crate::handlers::ListenerInfo,
    ) -> (Vec<ClusterBroker>, i32) {
        let Some(quorum) = &self.quorum else {
            let me = (
                self.node_id(),
                listener.advertised_host.clone(),
                listener.advertised_port,
                None,
            );
            return (vec![me], self.node_id());
        };
        let image = self.image();
        let brokers = image
            .brokers()
            .filter(|b| !b.fenced)
            .filter_map(|b| {
                let e = b
                    .endpoints
                    .iter()
                    .find(|e| e.name.eq_ignore_ascii_case(&listener.name))?;
                Some((b.id, e.host.clone(), e.port, b.rack.clone()))
            })
            .collect();
        (brokers, quorum.leader().unwrap_or(-1))
    }

    /// compaction (issue 7): the cleaner's state of one partition (dirty ratio, last clean,
    /// bytes cleaned, records removed, invalid header values, last error), `None` if the
    /// cleaner has not looked at it (not compacted, or not checked yet). For the admin API.
    pub fn cleaner_status(&self, tp: &TopicPartition) -> Option<skiff_compaction::CleanerStatus> {
        self.cleaner_stats.get(tp)
    }
}

fn log_config_for(configs: &dyn TopicConfigs, image: &MetadataImage, topic: &str) -> LogConfig {
    let overrides = image
        .topic(topic)
        .map(|t| t.configs.clone())
        .unwrap_or_default();
    configs
        .log_config(&overrides)
        .or_else(|_| configs.log_config(&BTreeMap::new()))
        .unwrap_or_default()
}
