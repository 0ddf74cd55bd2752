//! The in-memory image of the metadata log: what replaying every committed record yields.
//!
//! Mental model: an image is a value. [`replay`] takes an image and committed records and
//! returns the next image; the old one stays valid for whoever holds it (readers hold an
//! `Arc`). Replay never fails: a record that names something the image lacks (a partition
//! change for an unknown partition, a config of an unknown topic) is skipped, as a follower
//! replaying a log it did not validate must do.
//!
//! Invariants:
//! - `topics[name].partitions` is one more than the highest partition id any `PartitionRecord`
//!   gave the topic, and [`MetadataImage::partition`] has an entry for each id recorded.
//! - A `PartitionChangeRecord` changes only the fields it carries (Kafka's
//!   `PartitionRegistration.merge`): `isr`/`replicas`/`adding`/`removing` null = unchanged,
//!   `leader` -2 = unchanged, `leader_recovery_state` -1 = unchanged. A leader change (any
//!   `leader` other than -2) bumps the leader epoch by one; every change bumps the partition
//!   epoch by one.
//! - `RemoveTopicRecord` drops the topic, its partitions and its config overrides.
//! - The broker registry holds the latest `RegisterBrokerRecord` per broker id; the highest
//!   broker epoch ever registered only grows. A `BrokerRegistrationChangeRecord` changes the
//!   fenced flag (`fenced` 1 = fenced, -1 = unfenced, 0 = unchanged) and sets
//!   `in_controlled_shutdown` (1) of the registration with its broker id and epoch; one naming
//!   another epoch or an unknown broker is skipped (Kafka: fatal).
//! - Issue 19: ACLs by id and SCRAM credentials by user and mechanism (`security.rs`), each
//!   map behind an `Arc`: an image clone shares them until a record of theirs changes one.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use skiff_protocol::{
    BrokerRegistrationChangeRecord, ConfigRecord, PartitionChangeRecord, PartitionRecord,
    ProducerIdsRecord, RegisterBrokerRecord, RemoveTopicRecord, TopicRecord,
};
use uuid::Uuid;

use crate::frame::Record;

/// A topic id (UUID bytes). All zeros means "none".
pub type TopicId = [u8; 16];

/// Kafka's ConfigResource type for topics.
pub(crate) const RESOURCE_TOPIC: i8 = 2;
/// Kafka's ConfigResource type for brokers (name "" = the cluster-wide default).
pub(crate) const RESOURCE_BROKER: i8 = 4;
/// Kafka's ConfigResource type for groups (KIP-848 group configs).
pub(crate) const RESOURCE_GROUP: i8 = 32;

/// `PartitionChangeRecord.leader`: the leader did not change.
pub const NO_LEADER_CHANGE: i32 = -2;
/// A partition without a leader.
pub const NO_LEADER: i32 = -1;

/// One topic as the image knows it.
#[derive(Clone, Debug, PartialEq)]
pub struct TopicInfo {
    pub name: String,
    pub id: TopicId,
    pub partitions: i32,
    /// Topic-level config overrides (only keys set explicitly).
    pub configs: BTreeMap<String, String>,
}

/// One partition's registration (Kafka's `PartitionRegistration`, without directories and
/// ELR, which Skiff does not record yet).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionInfo {
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
    pub adding_replicas: Vec<i32>,
    pub removing_replicas: Vec<i32>,
    /// The leader's broker id, or [`NO_LEADER`].
    pub leader: i32,
    /// 0: recovered; 1: recovering after an unclean election.
    pub leader_recovery_state: i8,
    pub leader_epoch: i32,
    pub partition_epoch: i32,
}

impl PartitionInfo {
    /// Applies one `PartitionChangeRecord` of this partition (Kafka's
    /// `PartitionRegistration.merge`; the module's merge rules).
    pub(crate) fn merge(&mut self, r: &PartitionChangeRecord) {
        let set = |field: &mut Vec<i32>, new: &Option<Vec<i32>>| {
            if let Some(v) = new {
                field.clone_from(v);
            }
        };
        set(&mut self.replicas, &r.replicas);
        set(&mut self.isr, &r.isr);
        set(&mut self.adding_replicas, &r.adding_replicas);
        set(&mut self.removing_replicas, &r.removing_replicas);
        if r.leader != NO_LEADER_CHANGE {
            self.leader = r.leader;
            self.leader_epoch = self.leader_epoch.saturating_add(1);
        }
        if r.leader_recovery_state >= 0 {
            self.leader_recovery_state = r.leader_recovery_state;
        }
        self.partition_epoch = self.partition_epoch.saturating_add(1);
    }
}

/// One listener of a registered broker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BrokerEndpoint {
    pub name: String,
    pub host: String,
    pub port: u16,
    pub security_protocol: i16,
}

/// One broker's registration (from its latest `RegisterBrokerRecord`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BrokerRegistration {
    pub id: i32,
    pub incarnation_id: Uuid,
    pub epoch: i64,
    pub endpoints: Vec<BrokerEndpoint>,
    pub rack: Option<String>,
    pub fenced: bool,
    pub in_controlled_shutdown: bool,
}

/// An immutable view of the cluster metadata.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MetadataImage {
    pub topics: BTreeMap<String, TopicInfo>,
    names_by_id: HashMap<TopicId, String>,
    partitions: HashMap<TopicId, BTreeMap<i32, PartitionInfo>>,
    brokers: BTreeMap<i32, BrokerRegistration>,
    /// The highest broker epoch ever registered (survives a broker's re-registration).
    max_broker_epoch: i64,
    /// The first producer id of the next block to allocate.
    pub next_producer_id_block: i64,
    /// Dynamic broker configs by resource name: "" is the cluster-wide default, a node id
    /// (decimal) one broker's own layer. Only keys set explicitly.
    pub broker_configs: BTreeMap<String, BTreeMap<String, String>>,
    /// Per-group configs (KIP-848 `consumer.session.timeout.ms` and the others of Kafka's
    /// `GroupConfig`) by group id. Only keys set explicitly; a group may have configs before
    /// it exists, as in Kafka.
    pub group_configs: BTreeMap<String, BTreeMap<String, String>>,
    /// Issue 19: every ACL by id (`security.rs`; shared until an ACL record changes it).
    pub(crate) acls: Arc<crate::security::AclMap>,
    /// Issue 19: SCRAM credentials by user and mechanism (`security.rs`; shared likewise).
    pub(crate) scram: Arc<crate::security::ScramMap>,
}

/// The image after `records` (committed, in log order) on top of `image`.
pub fn replay(image: &MetadataImage, records: &[Record]) -> MetadataImage {
    let mut next = image.clone();
    for r in records {
        next.apply(r);
    }
    next
}

impl MetadataImage {
    pub fn topic(&self, name: &str) -> Option<&TopicInfo> {
        self.topics.get(name)
    }

    pub fn topic_by_id(&self, id: &TopicId) -> Option<&TopicInfo> {
        self.names_by_id.get(id).and_then(|n| self.topics.get(n))
    }

    /// One partition's registration.
    pub fn partition(&self, topic: &str, partition: i32) -> Option<&PartitionInfo> {
        let id = self.topics.get(topic)?.id;
        self.partitions.get(&id)?.get(&partition)
    }

    /// A topic's partitions by id, in order (empty for an unknown topic).
    pub fn partitions(&self, topic: &str) -> impl Iterator<Item = (i32, &PartitionInfo)> {
        self.topics
            .get(topic)
            .and_then(|t| self.partitions.get(&t.id))
            .into_iter()
            .flat_map(|m| m.iter().map(|(p, info)| (*p, info)))
    }

    /// One broker's registration.
    pub fn broker(&self, id: i32) -> Option<&BrokerRegistration> {
        self.brokers.get(&id)
    }

    /// Every registered broker, by id.
    pub fn brokers(&self) -> impl Iterator<Item = &BrokerRegistration> {
        self.brokers.values()
    }

    /// The highest broker epoch any registration has carried (0 before the first).
    pub fn max_broker_epoch(&self) -> i64 {
        self.max_broker_epoch
    }

    /// Applies one committed record in place.
    pub fn apply(&mut self, r: &Record) {
        match r {
            Record::Topic(t) => self.apply_topic(t),
            Record::Partition(p) => self.apply_partition(p),
            Record::PartitionChange(c) => self.apply_partition_change(c),
            Record::Config(c) => self.apply_config(c),
            Record::RemoveTopic(t) => self.apply_remove_topic(t),
            Record::ProducerIds(p) => self.apply_producer_ids(p),
            Record::RegisterBroker(b) => self.apply_register_broker(b),
            Record::BrokerRegistrationChange(c) => self.apply_registration_change(c),
            Record::AccessControlEntry(a) => self.apply_acl(a),
            Record::RemoveAccessControlEntry(a) => self.apply_remove_acl(a),
            Record::UserScramCredential(c) => self.apply_scram(c),
            Record::RemoveUserScramCredential(c) => self.apply_remove_scram(c),
        }
    }

    fn apply_topic(&mut self, r: &TopicRecord) {
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

    fn apply_partition(&mut self, r: &PartitionRecord) {
        let id = *r.topic_id.as_bytes();
        let Some(t) = self
            .names_by_id
            .get(&id)
            .and_then(|name| self.topics.get_mut(name))
        else {
            return;
        };
        t.partitions = t.partitions.max(r.partition_id.saturating_add(1));
        self.partitions.entry(id).or_default().insert(
            r.partition_id,
            PartitionInfo {
                replicas: r.replicas.clone(),
                isr: r.isr.clone(),
                adding_replicas: r.adding_replicas.clone(),
                removing_replicas: r.removing_replicas.clone(),
                leader: r.leader,
                leader_recovery_state: r.leader_recovery_state,
                leader_epoch: r.leader_epoch,
                partition_epoch: r.partition_epoch,
            },
        );
    }

    fn apply_partition_change(&mut self, r: &PartitionChangeRecord) {
        let id = *r.topic_id.as_bytes();
        let Some(p) = self
            .partitions
            .get_mut(&id)
            .and_then(|m| m.get_mut(&r.partition_id))
        else {
            tracing::warn!(
                partition = r.partition_id,
                "change of an unknown partition skipped"
            );
            return;
        };
        p.merge(r);
    }

    fn apply_config(&mut self, r: &ConfigRecord) {
        let layers = match r.resource_type {
            RESOURCE_BROKER => Some(&mut self.broker_configs),
            RESOURCE_GROUP => Some(&mut self.group_configs),
            _ => None,
        };
        if let Some(layers) = layers {
            let layer = layers.entry(r.resource_name.clone()).or_default();
            match &r.value {
                Some(v) => {
                    layer.insert(r.name.clone(), v.clone());
                }
                None => {
                    layer.remove(&r.name);
                }
            }
            if layer.is_empty() {
                layers.remove(&r.resource_name);
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

    fn apply_remove_topic(&mut self, r: &RemoveTopicRecord) {
        let id = *r.topic_id.as_bytes();
        if let Some(name) = self.names_by_id.remove(&id) {
            self.topics.remove(&name);
        }
        self.partitions.remove(&id);
    }

    fn apply_producer_ids(&mut self, r: &ProducerIdsRecord) {
        self.next_producer_id_block = self.next_producer_id_block.max(r.next_producer_id);
    }

    fn apply_registration_change(&mut self, r: &BrokerRegistrationChangeRecord) {
        let Some(b) = self
            .brokers
            .get_mut(&r.broker_id)
            .filter(|b| b.epoch == r.broker_epoch)
        else {
            tracing::warn!(
                broker = r.broker_id,
                epoch = r.broker_epoch,
                "registration change of an unknown broker or epoch skipped"
            );
            return;
        };
        match r.fenced {
            1 => b.fenced = true,
            -1 => b.fenced = false,
            _ => {}
        }
        if r.in_controlled_shutdown == 1 {
            b.in_controlled_shutdown = true;
        }
    }

    fn apply_register_broker(&mut self, r: &RegisterBrokerRecord) {
        self.max_broker_epoch = self.max_broker_epoch.max(r.broker_epoch);
        self.brokers.insert(
            r.broker_id,
            BrokerRegistration {
                id: r.broker_id,
                incarnation_id: r.incarnation_id,
                epoch: r.broker_epoch,
                endpoints: r
                    .end_points
                    .iter()
                    .map(|e| BrokerEndpoint {
                        name: e.name.clone(),
                        host: e.host.clone(),
                        port: e.port,
                        security_protocol: e.security_protocol,
                    })
                    .collect(),
                rack: r.rack.clone(),
                fenced: r.fenced,
                in_controlled_shutdown: r.in_controlled_shutdown,
            },
        );
    }
}
