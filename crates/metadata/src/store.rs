//! The metadata store: a thin shell around the pure controller and a [`MetadataLog`].
//!
//! Mental model: every write is `lock -> image snapshot -> controller::handle -> propose ->
//! replay into a new image -> publish`. The shell adds only what is not metadata state: the
//! writer lock, the broker's injected [`Clock`] (its `now_ms` passed into the pure part), fresh
//! random ids and the placement start, the broker sessions (soft state), and the
//! producer-id block this process is handing ids out of (in memory, like Kafka's
//! `ProducerIdManager`: a restart starts a new block).
//!
//! Two modes. Local (one node, [`MetadataStore::open`]): the store replays what it committed
//! into the image itself. Quorum ([`MetadataStore::open_quorum`], issue 16): the image is fed
//! by an [`ImageSink`] that the Raft state machine calls with every committed entry, on every
//! node, whoever proposed it; a write first waits until this node leads with everything
//! before its leadership applied ([`MetadataLog::ready_to_lead`]), else NOT_CONTROLLER, and
//! its proposal returns once its own entry is applied. Broker sessions are reset whenever
//! this node starts leading a new epoch (soft state, as Kafka's after a failover).
//!
//! Invariants: the published image is always the replay of the committed records (a failed
//! proposal publishes nothing); writers serialise on one mutex, readers never wait on a
//! proposal; a writer that finds the mutex taken waits inside the log's
//! [`MetadataLog::blocking_section`] (a quorum's hands the tokio worker off: the holder's Raft
//! commit needs the workers); after a local `open` the image's broker registry holds this node;
//! every [`ImageListener`] hears of each published image after readers can see it (issue 19:
//! the broker's authorizer follows the image's ACLs); `store_security.rs` holds the ACL and
//! SCRAM writes.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard, RwLock};
use skiff_types::Clock;
use uuid::Uuid;

use crate::MetadataError;
use crate::controller::{
    self, BrokerHeartbeats, Ctx, DEFAULT_SESSION_TIMEOUT_MS, Heartbeat, Request, Response,
};
use crate::image::{MetadataImage, TopicInfo, replay};
use crate::meta_log::{BlockingSection, LocalMetadataLog, MetadataLog};

pub use crate::controller::PRODUCER_ID_BLOCK_SIZE;

#[derive(Debug)]
pub(crate) struct Writer {
    log: Box<dyn MetadataLog>,
    producer_ids: Range<i64>,
    /// No id below this is handed out (see [`MetadataStore::reserve_producer_ids_above`]).
    producer_id_floor: i64,
    /// Broker sessions (soft state, empty at open: this process just became controller).
    heartbeats: BrokerHeartbeats,
    /// The leader epoch the sessions belong to (quorum mode: reset on a new epoch).
    led_epoch: Option<i32>,
    session_timeout_ms: i64,
}

/// Called with every image the store publishes (a committed change in local mode, every
/// applied entry or installed snapshot in quorum mode), after readers can see it, on the
/// publishing thread. Keep it short; it must not write metadata.
pub type ImageListener = Arc<dyn Fn(&Arc<MetadataImage>) + Send + Sync>;

/// The published image and who hears of a new one (shared by the store and its sink).
#[derive(Default)]
struct Published {
    image: RwLock<Arc<MetadataImage>>,
    listeners: RwLock<Vec<ImageListener>>,
}

impl std::fmt::Debug for Published {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Published")
            .field("listeners", &self.listeners.read().len())
            .finish_non_exhaustive()
    }
}

impl Published {
    fn with(image: MetadataImage) -> Self {
        Self {
            image: RwLock::new(Arc::new(image)),
            listeners: RwLock::new(Vec::new()),
        }
    }

    fn publish(&self, image: MetadataImage) {
        let image = Arc::new(image);
        *self.image.write() = Arc::clone(&image);
        self.notify(&image);
    }

    fn notify(&self, image: &Arc<MetadataImage>) {
        let listeners = self.listeners.read().clone();
        for l in listeners {
            l(image);
        }
    }
}

/// Where committed records enter the image in quorum mode (see the module docs): cheap to
/// clone, shared by the store and the Raft state machine.
#[derive(Clone, Debug, Default)]
pub struct ImageSink {
    image: Arc<Published>,
    applied_end: Arc<std::sync::atomic::AtomicI64>,
}

impl ImageSink {
    pub fn new() -> Self {
        Self::default()
    }

    /// Applies one committed change (the records of one entry, ending at `end_offset`).
    pub fn apply(&self, records: &[crate::Record], end_offset: i64) {
        let published = if records.is_empty() {
            None
        } else {
            let mut slot = self.image.image.write();
            *slot = Arc::new(replay(&slot, records));
            Some(Arc::clone(&slot))
        };
        if let Some(image) = published {
            self.image.notify(&image);
        }
        self.applied_end
            .store(end_offset, std::sync::atomic::Ordering::Release);
    }

    /// Replaces the image (a snapshot was installed).
    pub fn reset(&self, image: MetadataImage, end_offset: i64) {
        self.image.publish(image);
        self.applied_end
            .store(end_offset, std::sync::atomic::Ordering::Release);
    }

    /// The image as applied so far.
    pub fn image(&self) -> Arc<MetadataImage> {
        Arc::clone(&self.image.image.read())
    }

    /// The offset after the last applied record.
    pub fn applied_end(&self) -> i64 {
        self.applied_end.load(std::sync::atomic::Ordering::Acquire)
    }
}

/// Durable cluster metadata for this node.
#[derive(Debug)]
pub struct MetadataStore {
    writer: Mutex<Writer>,
    /// How a writer waits for `writer` held by another ([`MetadataLog::blocking_section`]).
    wait_section: BlockingSection,
    image: Arc<Published>,
    cluster_id: String,
    node_id: i32,
    /// The broker's clock: record timestamps and the pure part's `now_ms`.
    clock: Clock,
}

pub(crate) fn unexpected(r: Response) -> MetadataError {
    MetadataError::Internal(format!("unexpected controller response {r:?}"))
}

impl MetadataStore {
    /// The writer lock; when another writer holds it, waits inside the log's
    /// [`BlockingSection`] (a quorum writer holds it across a Raft commit that needs the
    /// runtime's workers: parking one of them in a plain `lock()` hung a controller for good,
    /// found by the chaos suite with FindCoordinator creating `__consumer_offsets`).
    pub(crate) fn lock_writer(&self) -> MutexGuard<'_, Writer> {
        if let Some(w) = self.writer.try_lock() {
            return w;
        }
        let mut got = None;
        (self.wait_section)(&mut || got = Some(self.writer.lock()));
        match got {
            Some(w) => w,
            None => self.writer.lock(),
        }
    }

    /// Opens (creating on first start) the metadata log in `metadata_dir` and replays it.
    /// The log dir holding it must carry `meta.properties` (its cluster id), or be empty and
    /// is then formatted with a fresh id, before the log is touched
    /// ([`crate::first_log_dir_cluster_id`]; the caller holds the dir's lock).
    pub fn open(metadata_dir: &Path, node_id: i32, clock: Clock) -> Result<Self, MetadataError> {
        Self::open_checked(metadata_dir, node_id, false, clock)
    }

    /// [`MetadataStore::open`]; with `must_be_formatted` (KRaft mode) an unformatted log dir
    /// is refused instead of formatted ([`crate::LogDirError::NotFormatted`]).
    pub fn open_checked(
        metadata_dir: &Path,
        node_id: i32,
        must_be_formatted: bool,
        clock: Clock,
    ) -> Result<Self, MetadataError> {
        let log_dir = metadata_dir.parent().unwrap_or_else(|| Path::new("."));
        let cluster_id = crate::first_log_dir_cluster_id(log_dir, node_id, must_be_formatted)?;
        let log = LocalMetadataLog::open(metadata_dir, clock.now_ms())?;
        Self::open_with_log(Box::new(log), cluster_id, node_id, clock)
    }

    /// Replays `log` into the image and registers this node (one durable record) if the
    /// image lacks it. [`MetadataStore::open`] is this over the local log.
    pub fn open_with_log(
        mut log: Box<dyn MetadataLog>,
        cluster_id: String,
        node_id: i32,
        clock: Clock,
    ) -> Result<Self, MetadataError> {
        let mut image = MetadataImage::default();
        let end = log.replay(&mut |r| image.apply(&r))?;
        tracing::info!(topics = image.topics.len(), records_end = end, %cluster_id, "metadata loaded");
        let wait_section = log.blocking_section();
        let store = MetadataStore {
            wait_section,
            writer: Mutex::new(Writer {
                log,
                producer_ids: 0..0,
                producer_id_floor: 0,
                heartbeats: BrokerHeartbeats::new(clock.now_ms(), DEFAULT_SESSION_TIMEOUT_MS),
                led_epoch: None,
                session_timeout_ms: DEFAULT_SESSION_TIMEOUT_MS,
            }),
            image: Arc::new(Published::with(image)),
            cluster_id,
            node_id,
            clock,
        };
        if node_id >= 0 {
            let mut w = store.lock_writer();
            if store.image().broker(node_id).is_none() {
                let incarnation_id = Uuid::new_v4();
                let before = store.image();
                store.submit(
                    &mut w,
                    &Request::RegisterBroker {
                        cluster_id: store.cluster_id.clone(),
                        broker_id: node_id,
                        incarnation_id,
                        endpoints: Vec::new(),
                        rack: None,
                    },
                )?;
                let now = store.clock.now_ms();
                w.heartbeats
                    .registered(&before, node_id, incarnation_id, now);
            }
            store.unfence_self(&mut w)?;
        }
        Ok(store)
    }

    /// Quorum mode (see the module docs): the image is what `sink` has applied (the Raft
    /// state machine replays the log into it); nothing is registered here (the broker
    /// registers with the active controller over the network, as Kafka's do).
    pub fn open_quorum(
        log: Box<dyn MetadataLog>,
        sink: &ImageSink,
        cluster_id: String,
        node_id: i32,
        clock: Clock,
        session_timeout_ms: i64,
    ) -> Self {
        let wait_section = log.blocking_section();
        MetadataStore {
            wait_section,
            writer: Mutex::new(Writer {
                log,
                producer_ids: 0..0,
                producer_id_floor: 0,
                heartbeats: BrokerHeartbeats::new(clock.now_ms(), session_timeout_ms),
                led_epoch: None,
                session_timeout_ms,
            }),
            image: Arc::clone(&sink.image),
            cluster_id,
            node_id,
            clock,
        }
    }

    /// This node is the controller, so its own broker is caught up by definition: a
    /// registered, fenced self (just registered, as Kafka registers fenced) is unfenced at
    /// once with one heartbeat at the log's end.
    fn unfence_self(&self, w: &mut Writer) -> Result<(), MetadataError> {
        let image = self.image();
        let Some(me) = image.broker(self.node_id).filter(|b| b.fenced) else {
            return Ok(());
        };
        let end = w.log.quorum_state().log_end_offset;
        let hb = Heartbeat {
            broker_id: me.id,
            broker_epoch: me.epoch,
            current_metadata_offset: end,
            want_fence: false,
            want_shut_down: false,
        };
        let now = self.clock.now_ms();
        let (records, _) = w.heartbeats.heartbeat(&image, &hb, now, end)?;
        self.commit(w, &image, &records, now)
    }

    /// Proposes `records` (decided against `image`) and, in local mode, publishes the image
    /// they yield (a quorum's sink has applied them by the time `propose` returns).
    fn commit(
        &self,
        w: &mut Writer,
        image: &MetadataImage,
        records: &[crate::Record],
        now_ms: i64,
    ) -> Result<(), MetadataError> {
        if records.is_empty() {
            return Ok(());
        }
        w.log.propose(records, now_ms)?;
        if !w.log.applies_through_sink() {
            self.image.publish(replay(image, records));
        }
        Ok(())
    }

    /// Waits until this node may decide (see [`MetadataLog::ready_to_lead`]); a new epoch
    /// starts with empty broker sessions.
    fn lead(&self, w: &mut Writer) -> Result<(), MetadataError> {
        let epoch = w.log.ready_to_lead()?;
        if w.led_epoch != Some(epoch) {
            if w.led_epoch.is_some() || w.log.applies_through_sink() {
                let elections = w.heartbeats.election_config();
                w.heartbeats = BrokerHeartbeats::new(self.clock.now_ms(), w.session_timeout_ms)
                    .with_election_config(elections);
            }
            w.led_epoch = Some(epoch);
        }
        Ok(())
    }

    /// A broker (re-)registers (Kafka's BrokerRegistration at the active controller): its
    /// new broker epoch.
    pub fn register_broker(
        &self,
        cluster_id: &str,
        broker_id: i32,
        incarnation_id: Uuid,
        endpoints: Vec<crate::BrokerEndpoint>,
        rack: Option<String>,
    ) -> Result<i64, MetadataError> {
        let mut w = self.lock_writer();
        self.lead(&mut w)?;
        let before = self.image();
        let response = self.submit(
            &mut w,
            &Request::RegisterBroker {
                cluster_id: cluster_id.to_string(),
                broker_id,
                incarnation_id,
                endpoints,
                rack,
            },
        )?;
        let now = self.clock.now_ms();
        w.heartbeats
            .registered(&before, broker_id, incarnation_id, now);
        match response {
            Response::Registered { broker_epoch } => Ok(broker_epoch),
            r => Err(unexpected(r)),
        }
    }

    /// A broker heartbeat at the active controller: its reply, after any fence/unfence
    /// change it causes is committed.
    pub fn broker_heartbeat(&self, hb: &Heartbeat) -> Result<crate::HeartbeatReply, MetadataError> {
        let mut w = self.lock_writer();
        self.lead(&mut w)?;
        let image = self.image();
        let end = w.log.quorum_state().log_end_offset;
        let now = self.clock.now_ms();
        let (records, reply) = w.heartbeats.heartbeat(&image, hb, now, end)?;
        self.commit(&mut w, &image, &records, now)?;
        Ok(reply)
    }

    /// The active controller's periodic check: fences the broker whose session expired
    /// longest ago, if any; its id.
    pub fn fence_expired(&self) -> Result<Option<i32>, MetadataError> {
        let mut w = self.lock_writer();
        self.lead(&mut w)?;
        let image = self.image();
        let now = self.clock.now_ms();
        let Some((id, records)) = w.heartbeats.fence_expired(&image, now) else {
            return Ok(None);
        };
        self.commit(&mut w, &image, &records, now)?;
        Ok(Some(id))
    }

    /// How this node elects leaders when it is the active controller (its static
    /// `unclean.leader.election.enable` and node id); kept across leadership changes.
    pub fn set_election_config(&self, elections: crate::ElectionConfig) {
        let mut w = self.lock_writer();
        w.heartbeats = w.heartbeats.clone().with_election_config(elections);
    }

    /// ElectLeaders at the active controller (`controller/elect_leaders.rs`): per topic and
    /// partition, the outcome, once the elections are committed.
    pub fn elect_leaders(
        &self,
        election_type: i8,
        partitions: Option<Vec<(String, Vec<i32>)>>,
        offline: crate::OfflineReplicas,
    ) -> Result<Vec<crate::TopicElection>, MetadataError> {
        let mut w = self.lock_writer();
        let request = Request::ElectLeaders {
            election_type,
            partitions,
            offline,
        };
        match self.submit(&mut w, &request)? {
            Response::ElectLeaders(answers) => Ok(answers),
            r => Err(unexpected(r)),
        }
    }

    /// The active controller's automatic leader balancing (one bounded run, committed).
    pub fn balance_partition_leaders(&self) -> Result<crate::ElectionRun, MetadataError> {
        let max = crate::MAX_ELECTIONS_PER_RUN;
        self.election_run(&Request::BalancePartitionLeaders { max })
    }

    /// The active controller's unclean sweep (one bounded run, committed).
    pub fn elect_unclean_leaders(&self) -> Result<crate::ElectionRun, MetadataError> {
        let max = crate::MAX_ELECTIONS_PER_RUN;
        self.election_run(&Request::ElectUncleanLeaders { max })
    }

    fn election_run(&self, request: &Request) -> Result<crate::ElectionRun, MetadataError> {
        let mut w = self.lock_writer();
        match self.submit(&mut w, request)? {
            Response::Elections(run) => Ok(run),
            r => Err(unexpected(r)),
        }
    }

    /// A snapshot of the current image.
    pub fn image(&self) -> Arc<MetadataImage> {
        Arc::clone(&self.image.image.read())
    }

    /// Calls `listener` with every image published from now on (see [`ImageListener`]).
    pub fn add_image_listener(&self, listener: ImageListener) {
        self.image.listeners.write().push(listener);
    }

    pub fn cluster_id(&self) -> String {
        self.cluster_id.clone()
    }

    /// The metadata log's quorum state (DescribeQuorum).
    pub fn quorum_state(&self) -> crate::meta_log::QuorumState {
        self.lock_writer().log.quorum_state()
    }

    /// Handles `request` against the current image, commits its records, publishes the
    /// image they yield. The caller holds the writer lock (`w`).
    pub(crate) fn submit(
        &self,
        w: &mut Writer,
        request: &Request,
    ) -> Result<Response, MetadataError> {
        self.lead(w)?;
        let image = self.image();
        let ctx = Ctx {
            node_id: self.node_id,
            now_ms: self.clock.now_ms(),
            cluster_id: &self.cluster_id,
            next_offset: w.log.quorum_state().log_end_offset,
            // A random start spreads leaders (Kafka's placer draws it too).
            placement_start: (Uuid::new_v4().as_u128() % 1_000_003) as usize,
            heartbeats: &w.heartbeats,
        };
        let (records, response) = controller::handle(&image, request, &ctx)?;
        self.commit(w, &image, &records, ctx.now_ms)?;
        Ok(response)
    }

    /// Creates a topic with `partitions` partitions of one replica and config overrides.
    pub fn create_topic(
        &self,
        name: &str,
        partitions: i32,
        configs: BTreeMap<String, String>,
    ) -> Result<TopicInfo, MetadataError> {
        self.create_topic_with(name, partitions, 1, configs)
    }

    /// Creates a topic placed by hand: `assignments[p]` is partition p's replica list
    /// (validated by the controller as Kafka's CreateTopics does).
    pub fn create_topic_assigned(
        &self,
        name: &str,
        assignments: Vec<Vec<i32>>,
        configs: BTreeMap<String, String>,
    ) -> Result<TopicInfo, MetadataError> {
        let mut w = self.lock_writer();
        let request = Request::CreateTopic {
            name: name.to_string(),
            topic_id: Uuid::new_v4(),
            partitions: -1,
            replication_factor: -1,
            assignments,
            configs,
        };
        match self.submit(&mut w, &request)? {
            Response::Topic(t) => Ok(t),
            r => Err(unexpected(r)),
        }
    }

    /// Creates a topic with `partitions` partitions of `replication_factor` replicas each,
    /// placed over the registered brokers, and config overrides.
    pub fn create_topic_with(
        &self,
        name: &str,
        partitions: i32,
        replication_factor: i16,
        configs: BTreeMap<String, String>,
    ) -> Result<TopicInfo, MetadataError> {
        let mut w = self.lock_writer();
        let request = Request::CreateTopic {
            name: name.to_string(),
            topic_id: Uuid::new_v4(),
            partitions,
            replication_factor,
            assignments: Vec::new(),
            configs,
        };
        match self.submit(&mut w, &request)? {
            Response::Topic(t) => Ok(t),
            r => Err(unexpected(r)),
        }
    }

    /// Deletes a topic.
    pub fn delete_topic(&self, name: &str) -> Result<TopicInfo, MetadataError> {
        let mut w = self.lock_writer();
        let request = Request::DeleteTopic {
            name: name.to_string(),
        };
        match self.submit(&mut w, &request)? {
            Response::Topic(t) => Ok(t),
            r => Err(unexpected(r)),
        }
    }

    /// Replaces one dynamic broker config layer (`resource_name` "" = the cluster-wide
    /// default, else a node id) with `configs`: keys not in `configs` are removed.
    pub fn set_broker_configs(
        &self,
        resource_name: &str,
        configs: BTreeMap<String, String>,
    ) -> Result<(), MetadataError> {
        let mut w = self.lock_writer();
        let request = Request::SetBrokerConfigs {
            resource_name: resource_name.to_string(),
            configs,
        };
        self.submit(&mut w, &request).map(drop)
    }

    /// Replaces one group's configs with `configs` (keys not in it are removed).
    pub fn set_group_configs(
        &self,
        group_id: &str,
        configs: BTreeMap<String, String>,
    ) -> Result<(), MetadataError> {
        let mut w = self.lock_writer();
        let request = Request::SetGroupConfigs {
            group_id: group_id.to_string(),
            configs,
        };
        self.submit(&mut w, &request).map(drop)
    }

    /// Replaces a topic's config overrides with `configs`.
    pub fn set_topic_configs(
        &self,
        name: &str,
        configs: BTreeMap<String, String>,
    ) -> Result<(), MetadataError> {
        let mut w = self.lock_writer();
        let request = Request::SetTopicConfigs {
            name: name.to_string(),
            configs,
        };
        self.submit(&mut w, &request).map(drop)
    }

    /// Grows a topic to `total` partitions.
    pub fn create_partitions(&self, name: &str, total: i32) -> Result<(), MetadataError> {
        self.create_partitions_with(name, total, Vec::new())
    }

    /// Grows `name` to `total` partitions placed by hand (one replica list per new
    /// partition; empty: automatic placement).
    pub fn create_partitions_with(
        &self,
        name: &str,
        total: i32,
        assignments: Vec<Vec<i32>>,
    ) -> Result<(), MetadataError> {
        let mut w = self.lock_writer();
        let request = Request::CreatePartitions {
            name: name.to_string(),
            total,
            assignments,
        };
        self.submit(&mut w, &request).map(drop)
    }

    /// Never hands out `max_seen` or any id below it from now on (issue 12 item 10): called at
    /// start with the largest producer id any hosted partition's producer state has seen, so
    /// a lost tail of the metadata log (its last ProducerIdsRecord) cannot make an id issued
    /// before the loss be issued again to a new producer.
    pub fn reserve_producer_ids_above(&self, max_seen: i64) {
        let mut w = self.lock_writer();
        let floor = max_seen.saturating_add(1);
        if floor > w.producer_id_floor {
            w.producer_id_floor = floor;
        }
        if w.producer_ids.start < floor {
            w.producer_ids = 0..0;
        }
        if self.image().next_producer_id_block < floor {
            tracing::warn!(
                next_block = self.image().next_producer_id_block,
                max_seen,
                "the metadata log's producer-id blocks are behind the partitions' producer state (lost tail?); new ids start above it"
            );
        }
    }

    /// A producer id never handed out before, even across restarts.
    pub fn allocate_producer_id(&self) -> Result<i64, MetadataError> {
        let mut w = self.lock_writer();
        if w.producer_ids.is_empty() {
            let request = Request::AllocateProducerIds {
                floor: w.producer_id_floor,
            };
            w.producer_ids = match self.submit(&mut w, &request)? {
                Response::ProducerIds(block) => block,
                r => return Err(unexpected(r)),
            };
        }
        let id = w.producer_ids.start;
        w.producer_ids.start += 1;
        Ok(id)
    }

    /// AllocateProducerIds for broker `broker_id` at `broker_epoch` (this node must be the
    /// active controller): the block, `start..end`.
    pub fn allocate_producer_id_block(
        &self,
        broker_id: i32,
        broker_epoch: i64,
    ) -> Result<Range<i64>, MetadataError> {
        let mut w = self.lock_writer();
        let request = Request::AllocateProducerIdsFor {
            broker_id,
            broker_epoch,
        };
        match self.submit(&mut w, &request)? {
            Response::ProducerIds(block) => Ok(block),
            r => Err(unexpected(r)),
        }
    }

    /// AlterPartition from the leader `broker_id` at `broker_epoch` (this node must be the
    /// active controller): per topic and partition, the state after the change (committed)
    /// or why it was refused.
    pub fn alter_partition(
        &self,
        broker_id: i32,
        broker_epoch: i64,
        topics: Vec<crate::IsrTopic>,
    ) -> Result<Vec<crate::IsrTopicResult>, MetadataError> {
        let mut w = self.lock_writer();
        let request = Request::AlterPartition {
            broker_id,
            broker_epoch,
            topics,
        };
        match self.submit(&mut w, &request)? {
            Response::AlterPartition(answers) => Ok(answers),
            r => Err(unexpected(r)),
        }
    }

    /// Flushes and closes the metadata log.
    pub fn close(&self) -> Result<(), MetadataError> {
        self.lock_writer().log.close(self.clock.now_ms())
    }
}
