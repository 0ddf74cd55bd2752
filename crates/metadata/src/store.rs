//! The metadata store: a thin shell around the pure controller and a [`MetadataLog`].
//!
//! Mental model: every write is `lock -> image snapshot -> controller::handle -> propose ->
//! replay into a new image -> publish`. The shell adds only what is not metadata state: the
//! writer lock, the broker's injected [`Clock`] (its `now_ms` passed into the pure part), fresh
//! random ids and the placement start, the broker sessions (soft state), and the
//! producer-id block this process is handing ids out of (in memory, like Kafka's
//! `ProducerIdManager`: a restart starts a new block).
//!
//! Invariants: the published image is always the replay of the committed records (a failed
//! proposal publishes nothing); writers serialise on one mutex, readers never wait on a
//! proposal; after `open` the image's broker registry holds this node.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use skiff_types::Clock;
use uuid::Uuid;

use crate::MetadataError;
use crate::controller::{
    self, BrokerHeartbeats, Ctx, DEFAULT_SESSION_TIMEOUT_MS, Heartbeat, Request, Response,
};
use crate::image::{MetadataImage, TopicInfo, replay};
use crate::meta_log::{LocalMetadataLog, MetadataLog};

pub use crate::controller::PRODUCER_ID_BLOCK_SIZE;

#[derive(Debug)]
struct Writer {
    log: Box<dyn MetadataLog>,
    producer_ids: Range<i64>,
    /// No id below this is handed out (see [`MetadataStore::reserve_producer_ids_above`]).
    producer_id_floor: i64,
    /// Broker sessions (soft state, empty at open: this process just became controller).
    heartbeats: BrokerHeartbeats,
}

/// Durable cluster metadata for this node.
#[derive(Debug)]
pub struct MetadataStore {
    writer: Mutex<Writer>,
    image: RwLock<Arc<MetadataImage>>,
    cluster_id: String,
    node_id: i32,
    /// The broker's clock: record timestamps and the pure part's `now_ms`.
    clock: Clock,
}

fn unexpected(r: Response) -> MetadataError {
    MetadataError::Internal(format!("unexpected controller response {r:?}"))
}

impl MetadataStore {
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
        let store = MetadataStore {
            writer: Mutex::new(Writer {
                log,
                producer_ids: 0..0,
                producer_id_floor: 0,
                heartbeats: BrokerHeartbeats::new(clock.now_ms(), DEFAULT_SESSION_TIMEOUT_MS),
            }),
            image: RwLock::new(Arc::new(image)),
            cluster_id,
            node_id,
            clock,
        };
        if node_id >= 0 {
            let mut w = store.writer.lock();
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
        if !records.is_empty() {
            w.log.propose(&records, now)?;
            *self.image.write() = Arc::new(replay(&image, &records));
        }
        Ok(())
    }

    /// A snapshot of the current image.
    pub fn image(&self) -> Arc<MetadataImage> {
        Arc::clone(&self.image.read())
    }

    pub fn cluster_id(&self) -> String {
        self.cluster_id.clone()
    }

    /// The metadata log's quorum state (DescribeQuorum).
    pub fn quorum_state(&self) -> crate::meta_log::QuorumState {
        self.writer.lock().log.quorum_state()
    }

    /// Handles `request` against the current image, commits its records, publishes the
    /// image they yield. The caller holds the writer lock (`w`).
    fn submit(&self, w: &mut Writer, request: &Request) -> Result<Response, MetadataError> {
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
        if !records.is_empty() {
            w.log.propose(&records, ctx.now_ms)?;
            *self.image.write() = Arc::new(replay(&image, &records));
        }
        Ok(response)
    }

    /// Creates a topic with `partitions` partitions and config overrides.
    pub fn create_topic(
        &self,
        name: &str,
        partitions: i32,
        configs: BTreeMap<String, String>,
    ) -> Result<TopicInfo, MetadataError> {
        let mut w = self.writer.lock();
        let request = Request::CreateTopic {
            name: name.to_string(),
            topic_id: Uuid::new_v4(),
            partitions,
            // Skiff's brokers do not replicate yet: one replica per partition.
            replication_factor: 1,
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
        let mut w = self.writer.lock();
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
        let mut w = self.writer.lock();
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
        let mut w = self.writer.lock();
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
        let mut w = self.writer.lock();
        let request = Request::SetTopicConfigs {
            name: name.to_string(),
            configs,
        };
        self.submit(&mut w, &request).map(drop)
    }

    /// Grows a topic to `total` partitions.
    pub fn create_partitions(&self, name: &str, total: i32) -> Result<(), MetadataError> {
        let mut w = self.writer.lock();
        let request = Request::CreatePartitions {
            name: name.to_string(),
            total,
            assignments: Vec::new(),
        };
        self.submit(&mut w, &request).map(drop)
    }

    /// Never hands out `max_seen` or any id below it from now on (issue 12 item 10): called at
    /// start with the largest producer id any hosted partition's producer state has seen, so
    /// a lost tail of the metadata log (its last ProducerIdsRecord) cannot make an id issued
    /// before the loss be issued again to a new producer.
    pub fn reserve_producer_ids_above(&self, max_seen: i64) {
        let mut w = self.writer.lock();
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
        let mut w = self.writer.lock();
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

    /// Flushes and closes the metadata log.
    pub fn close(&self) -> Result<(), MetadataError> {
        self.writer.lock().log.close(self.clock.now_ms())
    }
}
