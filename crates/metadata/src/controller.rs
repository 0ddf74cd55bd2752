//! The pure metadata controller: `handle(image, request, ctx) -> (records, response)`.
//!
//! Mental model: Kafka's `QuorumController` managers in one function. A request is validated
//! against the committed image and turned into the records that perform it and the response
//! the caller gets once those records are committed. Nothing here does I/O, reads a clock or
//! draws random numbers: the caller passes `now_ms` and node id in [`Ctx`] and any fresh id
//! (topic id, incarnation id) in the request, so the same inputs give the same records.
//!
//! Invariants:
//! - An error produces no records; a success produces the records of one atomic change, to
//!   be committed whole or not at all (one batch in the metadata log).
//! - The response equals what [`crate::replay`] of the records onto the image exposes
//!   (tested: "handle then replay").
//! - A request that changes nothing (configs already as asked) produces no records.
//! - Placement is single-node today: every new partition has replicas = ISR = leader =
//!   `ctx.node_id`, leader epoch 0, partition epoch 0.

use std::collections::BTreeMap;
use std::ops::Range;

use skiff_protocol::{
    ConfigRecord, PartitionRecord, ProducerIdsRecord, RegisterBrokerRecord, RemoveTopicRecord,
    TopicRecord,
};
use uuid::Uuid;

use crate::frame::Record;
use crate::image::{
    BrokerEndpoint, MetadataImage, RESOURCE_BROKER, RESOURCE_GROUP, RESOURCE_TOPIC, TopicInfo,
};
use crate::{MetadataError, validate_topic_name};

/// Producer ids are handed out from blocks of this size recorded in the log.
pub const PRODUCER_ID_BLOCK_SIZE: i64 = 1000;

/// Who handles the request, and when.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ctx {
    /// The node acting as controller (today: the only node).
    pub node_id: i32,
    pub now_ms: i64,
}

/// A metadata write.
#[derive(Clone, Debug, PartialEq)]
pub enum Request {
    /// A new topic with `partitions` partitions, id `topic_id` (fresh, chosen by the caller)
    /// and config overrides.
    CreateTopic {
        name: String,
        topic_id: Uuid,
        partitions: i32,
        configs: BTreeMap<String, String>,
    },
    DeleteTopic {
        name: String,
    },
    /// Replaces one dynamic broker config layer ("" = cluster default, else a node id).
    SetBrokerConfigs {
        resource_name: String,
        configs: BTreeMap<String, String>,
    },
    /// Replaces one group's configs (all of its keys).
    SetGroupConfigs {
        group_id: String,
        configs: BTreeMap<String, String>,
    },
    /// Replaces a topic's config overrides.
    SetTopicConfigs {
        name: String,
        configs: BTreeMap<String, String>,
    },
    /// Grows a topic to `total` partitions.
    CreatePartitions {
        name: String,
        total: i32,
    },
    /// The next block of producer ids, starting at `floor` or above.
    AllocateProducerIds {
        floor: i64,
    },
    /// A broker (re-)registers. A new incarnation id gets a new broker epoch; the same one
    /// amends the registration and keeps epoch and fenced flag (Kafka's
    /// `ClusterControlManager.registerBroker`).
    RegisterBroker {
        broker_id: i32,
        incarnation_id: Uuid,
        endpoints: Vec<BrokerEndpoint>,
        rack: Option<String>,
    },
}

/// What a committed request answers.
#[derive(Clone, Debug, PartialEq)]
pub enum Response {
    /// CreateTopic: the topic as created; DeleteTopic: the topic as it was.
    Topic(TopicInfo),
    /// Configs and CreatePartitions.
    Done,
    /// AllocateProducerIds: the block, `start..end`.
    ProducerIds(Range<i64>),
    /// RegisterBroker: the broker's epoch.
    Registered { broker_epoch: i64 },
}

/// Validates `request` against `image`; the records performing it and the response.
pub fn handle(
    image: &MetadataImage,
    request: &Request,
    ctx: &Ctx,
) -> Result<(Vec<Record>, Response), MetadataError> {
    match request {
        Request::CreateTopic {
            name,
            topic_id,
            partitions,
            configs,
        } => create_topic(image, ctx, name, *topic_id, *partitions, configs),
        Request::DeleteTopic { name } => {
            let t = known_topic(image, name)?;
            let records = vec![Record::RemoveTopic(RemoveTopicRecord {
                topic_id: Uuid::from_bytes(t.id),
            })];
            Ok((records, Response::Topic(t.clone())))
        }
        Request::SetBrokerConfigs {
            resource_name,
            configs,
        } => {
            let empty = BTreeMap::new();
            let current = image.broker_configs.get(resource_name).unwrap_or(&empty);
            let records = config_diff(RESOURCE_BROKER, resource_name, current, configs);
            Ok((records, Response::Done))
        }
        Request::SetGroupConfigs { group_id, configs } => {
            let empty = BTreeMap::new();
            let current = image.group_configs.get(group_id).unwrap_or(&empty);
            let records = config_diff(RESOURCE_GROUP, group_id, current, configs);
            Ok((records, Response::Done))
        }
        Request::SetTopicConfigs { name, configs } => {
            let t = known_topic(image, name)?;
            let records = config_diff(RESOURCE_TOPIC, name, &t.configs, configs);
            Ok((records, Response::Done))
        }
        Request::CreatePartitions { name, total } => {
            let t = known_topic(image, name)?;
            if *total <= t.partitions {
                return Err(MetadataError::InvalidPartitions(format!(
                    "Topic currently has {} partitions, which is higher than the requested {total}.",
                    t.partitions
                )));
            }
            let id = Uuid::from_bytes(t.id);
            let records = (t.partitions..*total)
                .map(|p| Record::Partition(partition_record(id, p, ctx.node_id)))
                .collect();
            Ok((records, Response::Done))
        }
        Request::AllocateProducerIds { floor } => {
            let start = image.next_producer_id_block.max(*floor).max(0);
            let end = start
                .checked_add(PRODUCER_ID_BLOCK_SIZE)
                .ok_or_else(|| MetadataError::Internal("Exhausted all producerIds.".into()))?;
            let broker_epoch = image.broker(ctx.node_id).map_or(0, |b| b.epoch);
            let records = vec![Record::ProducerIds(ProducerIdsRecord {
                broker_id: ctx.node_id,
                broker_epoch,
                next_producer_id: end,
            })];
            Ok((records, Response::ProducerIds(start..end)))
        }
        Request::RegisterBroker {
            broker_id,
            incarnation_id,
            endpoints,
            rack,
        } => register_broker(image, *broker_id, *incarnation_id, endpoints, rack),
    }
}

fn known_topic<'a>(image: &'a MetadataImage, name: &str) -> Result<&'a TopicInfo, MetadataError> {
    image
        .topic(name)
        .ok_or_else(|| MetadataError::UnknownTopic(name.to_string()))
}

fn create_topic(
    image: &MetadataImage,
    ctx: &Ctx,
    name: &str,
    topic_id: Uuid,
    partitions: i32,
    configs: &BTreeMap<String, String>,
) -> Result<(Vec<Record>, Response), MetadataError> {
    validate_topic_name(name)?;
    if partitions < 1 {
        return Err(MetadataError::InvalidPartitions(
            "Number of partitions was set to an invalid non-positive value.".into(),
        ));
    }
    if image.topic(name).is_some() {
        return Err(MetadataError::TopicAlreadyExists(name.to_string()));
    }
    if topic_id.is_nil() || image.topic_by_id(topic_id.as_bytes()).is_some() {
        return Err(MetadataError::Internal(format!(
            "topic id {topic_id} is nil or in use"
        )));
    }
    let mut records = Vec::new();
    records.push(Record::Topic(TopicRecord {
        name: name.to_string(),
        topic_id,
    }));
    for p in 0..partitions {
        records.push(Record::Partition(partition_record(
            topic_id,
            p,
            ctx.node_id,
        )));
    }
    records.extend(config_diff(RESOURCE_TOPIC, name, &BTreeMap::new(), configs));
    let info = TopicInfo {
        name: name.to_string(),
        id: *topic_id.as_bytes(),
        partitions,
        configs: configs.clone(),
    };
    Ok((records, Response::Topic(info)))
}

fn register_broker(
    image: &MetadataImage,
    broker_id: i32,
    incarnation_id: Uuid,
    endpoints: &[BrokerEndpoint],
    rack: &Option<String>,
) -> Result<(Vec<Record>, Response), MetadataError> {
    if broker_id < 0 {
        return Err(MetadataError::InvalidRequest(format!(
            "invalid broker id {broker_id}"
        )));
    }
    let mut names: Vec<&str> = endpoints.iter().map(|e| e.name.as_str()).collect();
    names.sort_unstable();
    if names.windows(2).any(|w| w[0] == w[1]) {
        return Err(MetadataError::InvalidRequest(
            "duplicate listener name in the registration".into(),
        ));
    }
    // Kafka refuses a new incarnation while the old one's session is alive
    // (DUPLICATE_BROKER_REGISTRATION); Skiff has no broker heartbeats yet, so a new
    // incarnation always replaces the old one.
    let (broker_epoch, fenced, in_controlled_shutdown) = match image.broker(broker_id) {
        Some(b) if b.incarnation_id == incarnation_id => {
            (b.epoch, b.fenced, b.in_controlled_shutdown)
        }
        // Skiff has no unfence record yet (no broker heartbeats): a new registration is
        // unfenced at once. The quorum issue registers fenced and unfences on heartbeat.
        _ => (image.max_broker_epoch().saturating_add(1), false, false),
    };
    let record = RegisterBrokerRecord {
        broker_id,
        incarnation_id,
        broker_epoch,
        end_points: endpoints
            .iter()
            .map(|e| skiff_protocol::BrokerEndpoint {
                name: e.name.clone(),
                host: e.host.clone(),
                port: e.port,
                security_protocol: e.security_protocol,
            })
            .collect(),
        rack: rack.clone(),
        fenced,
        in_controlled_shutdown,
        ..RegisterBrokerRecord::default()
    };
    Ok((
        vec![Record::RegisterBroker(record)],
        Response::Registered { broker_epoch },
    ))
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
