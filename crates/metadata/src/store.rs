//! The persisted metadata store: a durable partition log of metadata records plus the image.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::{Mutex, RwLock};
use skiff_protocol::{
    ConfigRecord, PartitionRecord, ProducerIdsRecord, RemoveTopicRecord, TopicRecord,
};
use skiff_record::{BatchBuilder, BatchOptions, RecordError};
// Replaced by the injected Clock when the metadata shell lands (issue 13 item 4).
fn now_ms() -> i64 {
    skiff_types::Clock::system().now_ms()
}
use skiff_storage::{Log, LogConfig, LogOpenOptions};
use skiff_types::TopicPartition;
use skiff_types::limits::DECOMPRESSED_BATCH_BYTES_MAX;
use uuid::Uuid;

use crate::frame::Record;
use crate::image::{MetadataImage, RESOURCE_BROKER, RESOURCE_TOPIC, TopicInfo};
use crate::{MetadataError, validate_topic_name};

/// Producer ids are handed out from blocks of this size recorded in the log.
pub const PRODUCER_ID_BLOCK_SIZE: i64 = 1000;

/// The metadata partition's name, as in KRaft.
pub const METADATA_TOPIC: &str = "__cluster_metadata";

#[derive(Debug)]
struct Writer {
    log: Log,
    producer_ids: std::ops::Range<i64>,
    /// No id below this is handed out (see [`MetadataStore::reserve_producer_ids_above`]).
    producer_id_floor: i64,
}

/// Durable cluster metadata for this node.
#[derive(Debug)]
pub struct MetadataStore {
    writer: Mutex<Writer>,
    image: RwLock<Arc<MetadataImage>>,
    cluster_id: String,
    node_id: i32,
}

fn storage_err(e: impl std::fmt::Display) -> MetadataError {
    MetadataError::Storage(e.to_string())
}

impl MetadataStore {
    /// Opens (creating on first start) the metadata log in `metadata_dir` and replays it.
    /// The log dir holding it must carry `meta.properties` (its cluster id), or be empty and
    /// is then formatted with a fresh id, before the log is touched
    /// ([`crate::first_log_dir_cluster_id`]; the caller holds the dir's lock).
    pub fn open(metadata_dir: &Path, node_id: i32) -> Result<Self, MetadataError> {
        let log_dir = metadata_dir.parent().unwrap_or_else(|| Path::new("."));
        let cluster_id = crate::first_log_dir_cluster_id(log_dir, node_id)?;
        let config = LogConfig {
            flush_messages: 1,
            ..LogConfig::default()
        };
        // The metadata log is small: always re-validate it fully on open.
        let opts = LogOpenOptions {
            recovery_point: 0,
            log_start_offset: 0,
            high_watermark: 0,
            clean_shutdown: false,
            now_ms: now_ms(),
        };
        let (mut log, report) = Log::open(
            metadata_dir,
            TopicPartition::new(METADATA_TOPIC, 0),
            config,
            opts,
        )
        .map_err(storage_err)?;
        if report.truncated_bytes > 0 {
            tracing::warn!(
                bytes = report.truncated_bytes,
                "metadata log had a torn tail; truncated"
            );
        }
        let leo = log.log_end_offset();
        log.set_high_watermark(leo);
        let mut image = MetadataImage::default();
        replay(&log, &mut image)?;
        tracing::info!(topics = image.topics.len(), records_end = leo, %cluster_id, "metadata loaded");
        Ok(MetadataStore {
            writer: Mutex::new(Writer {
                log,
                producer_ids: 0..0,
                producer_id_floor: 0,
            }),
            image: RwLock::new(Arc::new(image)),
            cluster_id,
            node_id,
        })
    }

    /// A snapshot of the current image.
    pub fn image(&self) -> Arc<MetadataImage> {
        Arc::clone(&self.image.read())
    }

    pub fn cluster_id(&self) -> String {
        self.cluster_id.clone()
    }

    /// Appends records durably, then applies them to the image.
    fn commit(&self, w: &mut Writer, records: Vec<Record>) -> Result<(), MetadataError> {
        let mut builder = BatchBuilder::new(BatchOptions::default());
        let ts = now_ms();
        let mut encoded = Vec::with_capacity(records.len());
        for r in &records {
            encoded.push(r.encode()?);
        }
        for e in &encoded {
            builder.append(ts, None, Some(e), &[]);
        }
        let mut batch = builder.build().map_err(storage_err)?;
        let info = w
            .log
            .append_as_leader(&mut batch, 0, ts)
            .map_err(storage_err)?;
        w.log
            .sync()
            .sync_to(info.last_offset + 1)
            .map_err(storage_err)?;
        let leo = w.log.log_end_offset();
        w.log.set_high_watermark(leo);
        let mut next = (*self.image()).clone();
        for r in &records {
            apply(&mut next, r);
        }
        *self.image.write() = Arc::new(next);
        Ok(())
    }

    /// Creates a topic with `partitions` partitions and config overrides.
    pub fn create_topic(
        &self,
        name: &str,
        partitions: i32,
        configs: BTreeMap<String, String>,
    ) -> Result<TopicInfo, MetadataError> {
        validate_topic_name(name)?;
        if partitions < 1 {
            return Err(MetadataError::InvalidPartitions(
                "Number of partitions was set to an invalid non-positive value.".into(),
            ));
        }
        let mut w = self.writer.lock();
        if self.image().topic(name).is_some() {
            return Err(MetadataError::TopicAlreadyExists(name.to_string()));
        }
        let topic_id = Uuid::new_v4();
        let mut records = vec![Record::Topic(TopicRecord {
            name: name.to_string(),
            topic_id,
        })];
        for p in 0..partitions {
            records.push(Record::Partition(partition_record(
                topic_id,
                p,
                self.node_id,
            )));
        }
        for (k, v) in &configs {
            records.push(Record::Config(ConfigRecord {
                resource_type: RESOURCE_TOPIC,
                resource_name: name.to_string(),
                name: k.clone(),
                value: Some(v.clone()),
            }));
        }
        self.commit(&mut w, records)?;
        self.image()
            .topic(name)
            .cloned()
            .ok_or_else(|| MetadataError::UnknownTopic(name.into()))
    }

    /// Deletes a topic.
    pub fn delete_topic(&self, name: &str) -> Result<TopicInfo, MetadataError> {
        let mut w = self.writer.lock();
        let Some(t) = self.image().topic(name).cloned() else {
            return Err(MetadataError::UnknownTopic(name.to_string()));
        };
        self.commit(
            &mut w,
            vec![Record::RemoveTopic(RemoveTopicRecord {
                topic_id: Uuid::from_bytes(t.id),
            })],
        )?;
        Ok(t)
    }

    /// Replaces one dynamic broker config layer (`resource_name` "" = the cluster-wide
    /// default, else a node id) with `configs`: keys not in `configs` are removed.
    pub fn set_broker_configs(
        &self,
        resource_name: &str,
        configs: BTreeMap<String, String>,
    ) -> Result<(), MetadataError> {
        let mut w = self.writer.lock();
        let current = self
            .image()
            .broker_configs
            .get(resource_name)
            .cloned()
            .unwrap_or_default();
        let records = config_diff(RESOURCE_BROKER, resource_name, &current, &configs);
        if records.is_empty() {
            return Ok(());
        }
        self.commit(&mut w, records)
    }

    /// Replaces a topic's config overrides with `configs`.
    pub fn set_topic_configs(
        &self,
        name: &str,
        configs: BTreeMap<String, String>,
    ) -> Result<(), MetadataError> {
        let mut w = self.writer.lock();
        let Some(t) = self.image().topic(name).cloned() else {
            return Err(MetadataError::UnknownTopic(name.to_string()));
        };
        let mut records = Vec::new();
        for k in t.configs.keys().filter(|k| !configs.contains_key(*k)) {
            records.push(Record::Config(ConfigRecord {
                resource_type: RESOURCE_TOPIC,
                resource_name: name.to_string(),
                name: k.clone(),
                value: None,
            }));
        }
        for (k, v) in configs
            .iter()
            .filter(|(k, v)| t.configs.get(*k) != Some(*v))
        {
            records.push(Record::Config(ConfigRecord {
                resource_type: RESOURCE_TOPIC,
                resource_name: name.to_string(),
                name: k.clone(),
                value: Some(v.clone()),
            }));
        }
        if records.is_empty() {
            return Ok(());
        }
        self.commit(&mut w, records)
    }

    /// Grows a topic to `total` partitions.
    pub fn create_partitions(&self, name: &str, total: i32) -> Result<(), MetadataError> {
        let mut w = self.writer.lock();
        let Some(t) = self.image().topic(name).cloned() else {
            return Err(MetadataError::UnknownTopic(name.to_string()));
        };
        if total <= t.partitions {
            return Err(MetadataError::InvalidPartitions(format!(
                "Topic currently has {} partitions, which is higher than the requested {total}.",
                t.partitions
            )));
        }
        let id = Uuid::from_bytes(t.id);
        let records = (t.partitions..total)
            .map(|p| Record::Partition(partition_record(id, p, self.node_id)))
            .collect();
        self.commit(&mut w, records)
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
            let start = self.image().next_producer_id_block.max(w.producer_id_floor);
            let next = start + PRODUCER_ID_BLOCK_SIZE;
            self.commit(
                &mut w,
                vec![Record::ProducerIds(ProducerIdsRecord {
                    broker_id: self.node_id,
                    broker_epoch: 0,
                    next_producer_id: next,
                })],
            )?;
            w.producer_ids = start..next;
        }
        let id = w.producer_ids.start;
        w.producer_ids.start += 1;
        Ok(id)
    }

    /// Flushes and closes the metadata log.
    pub fn close(&self) -> Result<(), MetadataError> {
        self.writer.lock().log.close(now_ms()).map_err(storage_err)
    }
}

/// Config records turning `current` into `next` for one resource: deletions, then changes.
fn config_diff(
    resource_type: i8,
    resource_name: &str,
    current: &BTreeMap<String, String>,
    next: &BTreeMap<String, String>,
) -> Vec<Record> {
    let removed = current
        .keys()
        .filter(|k| !next.contains_key(*k))
        .map(|k| (k, None));
    let changed = next
        .iter()
        .filter(|(k, v)| current.get(*k) != Some(*v))
        .map(|(k, v)| (k, Some(v.clone())));
    removed
        .chain(changed)
        .map(|(k, value)| {
            Record::Config(ConfigRecord {
                resource_type,
                resource_name: resource_name.to_string(),
                name: k.clone(),
                value,
            })
        })
        .collect()
}

fn partition_record(topic_id: Uuid, partition: i32, node_id: i32) -> PartitionRecord {
    PartitionRecord {
        partition_id: partition,
        topic_id,
        replicas: vec![node_id],
        isr: vec![node_id],
        leader: node_id,
        leader_epoch: 0,
        partition_epoch: 0,
        ..PartitionRecord::default()
    }
}

fn apply(image: &mut MetadataImage, r: &Record) {
    match r {
        Record::Topic(t) => image.apply_topic(t),
        Record::Partition(p) => image.apply_partition(p),
        Record::Config(c) => image.apply_config(c),
        Record::RemoveTopic(t) => image.apply_remove_topic(t),
        Record::ProducerIds(p) => image.apply_producer_ids(p),
    }
}

/// Applies every record of the log, in order.
fn replay(log: &Log, image: &mut MetadataImage) -> Result<(), MetadataError> {
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
                    apply(image, &r);
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
    Ok(())
}
