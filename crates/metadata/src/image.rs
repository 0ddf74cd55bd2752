//! The in-memory image of the metadata log: what replaying every record yields.

use std::collections::{BTreeMap, HashMap};

use skiff_protocol::{
    ConfigRecord, PartitionRecord, ProducerIdsRecord, RemoveTopicRecord, TopicRecord,
};

/// A topic id (UUID bytes). All zeros means "none".
pub type TopicId = [u8; 16];

/// Kafka's ConfigResource type for topics.
pub(crate) const RESOURCE_TOPIC: i8 = 2;
/// Kafka's ConfigResource type for brokers (name "" = the cluster-wide default).
pub(crate) const RESOURCE_BROKER: i8 = 4;

/// One topic as the image knows it.
#[derive(Clone, Debug, PartialEq)]
pub struct TopicInfo {
    pub name: String,
    pub id: TopicId,
    pub partitions: i32,
    /// Topic-level config overrides (only keys set explicitly).
    pub configs: BTreeMap<String, String>,
}

/// An immutable view of the cluster metadata.
#[derive(Clone, Debug, Default)]
pub struct MetadataImage {
    pub topics: BTreeMap<String, TopicInfo>,
    names_by_id: HashMap<TopicId, String>,
    /// The first producer id of the next block to allocate.
    pub next_producer_id_block: i64,
    /// Dynamic broker configs by resource name: "" is the cluster-wide default, a node id
    /// (decimal) one broker's own layer. Only keys set explicitly.
    pub broker_configs: BTreeMap<String, BTreeMap<String, String>>,
}

impl MetadataImage {
    pub fn topic(&self, name: &str) -> Option<&TopicInfo> {
        self.topics.get(name)
    }

    pub fn topic_by_id(&self, id: &TopicId) -> Option<&TopicInfo> {
        self.names_by_id.get(id).and_then(|n| self.topics.get(n))
    }

    pub(crate) fn apply_topic(&mut self, r: &TopicRecord) {
        let id = *r.topic_id.as_bytes();
        self.names_by_id.insert(id, r.name.clone());
        self.topics.insert(
            r.name.clone(),
            TopicInfo {
                name: r.name.clone(),
                id,
                partitions: 0,
                configs: BTreeMap::new(),
            },
        );
    }

    pub(crate) fn apply_partition(&mut self, r: &PartitionRecord) {
        let id = *r.topic_id.as_bytes();
        if let Some(name) = self.names_by_id.get(&id)
            && let Some(t) = self.topics.get_mut(name)
        {
            t.partitions = t.partitions.max(r.partition_id.saturating_add(1));
        }
    }

    pub(crate) fn apply_config(&mut self, r: &ConfigRecord) {
        if r.resource_type == RESOURCE_BROKER {
            let layer = self
                .broker_configs
                .entry(r.resource_name.clone())
                .or_default();
            match &r.value {
                Some(v) => {
                    layer.insert(r.name.clone(), v.clone());
                }
                None => {
                    layer.remove(&r.name);
                }
            }
            if layer.is_empty() {
                self.broker_configs.remove(&r.resource_name);
            }
            return;
        }
        if r.resource_type != RESOURCE_TOPIC {
            return;
        }
        if let Some(t) = self.topics.get_mut(&r.resource_name) {
            match &r.value {
                Some(v) => {
                    t.configs.insert(r.name.clone(), v.clone());
                }
                None => {
                    t.configs.remove(&r.name);
                }
            }
        }
    }

    pub(crate) fn apply_remove_topic(&mut self, r: &RemoveTopicRecord) {
        let id = *r.topic_id.as_bytes();
        if let Some(name) = self.names_by_id.remove(&id) {
            self.topics.remove(&name);
        }
    }

    pub(crate) fn apply_producer_ids(&mut self, r: &ProducerIdsRecord) {
        self.next_producer_id_block = self.next_producer_id_block.max(r.next_producer_id);
    }
}
