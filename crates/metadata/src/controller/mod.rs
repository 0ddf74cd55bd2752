//! The pure metadata controller: `handle(image, request, ctx) -> (records, response)`.
//!
//! Mental model: Kafka's `QuorumController` managers in one function. A request is validated
//! against the committed image and turned into the records that perform it and the response
//! the caller gets once those records are committed. Nothing here does I/O, reads a clock or
//! draws random numbers: the caller passes `now_ms`, node id, cluster id, the next metadata
//! log offset and the placement start offset in [`Ctx`] and any fresh id (topic id,
//! incarnation id) in the request, so the same inputs give the same records.
//!
//! Submodules: `alter_partition` (a leader's ISR change, Kafka's AlterPartition), `brokers`
//! (registration, [`BrokerHeartbeats`]: heartbeats, fencing, session expiry), `election`
//! (one partition's election, Kafka's `PartitionChangeBuilder`; where a topic's
//! `unclean.leader.election.enable` comes from), `elect_leaders` (ElectLeaders, automatic
//! leader balancing, the unclean sweep), `leadership` (Kafka's `generateLeaderAndIsrUpdates`:
//! leaders and ISRs when a broker is fenced, unfenced or shuts down), `placement` (replica
//! placement and manual assignments), `security` (issue 19: CreateAcls, DeleteAcls,
//! AlterUserScramCredentials).
//!
//! Invariants:
//! - An error produces no records; a success produces the records of one atomic change, to
//!   be committed whole or not at all (one batch in the metadata log).
//! - The response equals what [`crate::replay`] of the records onto the image exposes
//!   (tested: "handle then replay").
//! - A request that changes nothing (configs already as asked, an AlterPartition to the
//!   current ISR) produces no records.
//! - New partitions are placed over the registered brokers (`placement`): leader = the first
//!   replica that is active (registered, unfenced, not in controlled shutdown), ISR = the
//!   active replicas, leader epoch 0, partition epoch 0. With one registered, unfenced broker
//!   every partition is on it (Skiff's single-node deployment).
//! - A fenced broker leads no partition: the records fencing it move its leaderships in the
//!   same batch.

mod alter_partition;
mod brokers;
mod elect_leaders;
mod election;
mod leadership;
mod placement;
mod security;

pub use alter_partition::{
    IsrChange, IsrChangeResult, IsrState, IsrTopic, IsrTopicResult, TopicRef,
    UNCHECKED_BROKER_EPOCH,
};
pub use brokers::{BrokerHeartbeats, DEFAULT_SESSION_TIMEOUT_MS, Heartbeat, HeartbeatReply};
pub use elect_leaders::{
    ELECTION_PREFERRED, ELECTION_UNCLEAN, ElectionRun, MAX_ELECTIONS_PER_RUN, OfflineReplicas,
    PartitionElection, TopicElection,
};
pub use election::{ElectionConfig, UNCLEAN_LEADER_ELECTION_ENABLE};
pub use security::{MAX_RECORDS_PER_USER_OP, ScramDeletion, ScramUpsertion, validate_new_acl};

use std::collections::BTreeMap;
use std::ops::Range;

use skiff_protocol::{ConfigRecord, ProducerIdsRecord, RemoveTopicRecord, TopicRecord};
use uuid::Uuid;

use crate::frame::Record;
use crate::image::{
    BrokerEndpoint, MetadataImage, RESOURCE_BROKER, RESOURCE_GROUP, RESOURCE_TOPIC, TopicInfo,
};
use crate::{MetadataError, validate_topic_name};
use placement::{Assignment, place_new_partitions};

/// Producer ids are handed out from blocks of this size recorded in the log.
pub const PRODUCER_ID_BLOCK_SIZE: i64 = 1000;

/// Who handles the request, and when: every input that is not the image or the request.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ctx<'a> {
    /// The node acting as controller (today: the only node).
    pub node_id: i32,
    pub now_ms: i64,
    /// The controller's cluster id (a registration must carry the same).
    pub cluster_id: &'a str,
    /// The offset the first record of this change will get in the metadata log (a new
    /// incarnation's broker epoch, as Kafka's `offsetControl.nextWriteOffset()`).
    pub next_offset: i64,
    /// Where automatic placement starts in the sorted broker lists (Kafka's placer draws it
    /// at random; here the caller does).
    pub placement_start: usize,
    /// Broker sessions (soft state): who may not be replaced by a new incarnation.
    pub heartbeats: &'a BrokerHeartbeats,
}

/// A metadata write.
#[derive(Clone, Debug, PartialEq)]
pub enum Request {
    /// A new topic with `partitions` partitions of `replication_factor` replicas, id
    /// `topic_id` (fresh, chosen by the caller) and config overrides. Non-empty
    /// `assignments` (replicas of partition 0, 1, ...) place it by hand; `partitions` and
    /// `replication_factor` must then be -1, as in Kafka's CreateTopics.
    CreateTopic {
        name: String,
        topic_id: Uuid,
        partitions: i32,
        replication_factor: i16,
        assignments: Vec<Vec<i32>>,
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
    /// Grows a topic to `total` partitions, placed automatically (empty `assignments`) or
    /// by hand (one replica list per new partition).
    CreatePartitions {
        name: String,
        total: i32,
        assignments: Vec<Vec<i32>>,
    },
    /// The next block of producer ids, starting at `floor` or above.
    AllocateProducerIds {
        floor: i64,
    },
    /// Kafka's AllocateProducerIds from another broker: the next block, for a registered
    /// broker at its current epoch (else STALE_BROKER_EPOCH, as Kafka's
    /// `ClusterControlManager.checkBrokerEpoch`).
    AllocateProducerIdsFor {
        broker_id: i32,
        broker_epoch: i64,
    },
    /// A broker (re-)registers (Kafka's `ClusterControlManager.registerBroker`): see
    /// `brokers.rs` for the rules. `cluster_id` is the broker's.
    RegisterBroker {
        cluster_id: String,
        broker_id: i32,
        incarnation_id: Uuid,
        endpoints: Vec<BrokerEndpoint>,
        rack: Option<String>,
    },
    /// Kafka's AlterPartition from the leader `broker_id` at its `broker_epoch`: new ISRs
    /// (`alter_partition.rs` for the rules).
    AlterPartition {
        broker_id: i32,
        broker_epoch: i64,
        topics: Vec<IsrTopic>,
    },
    /// Kafka's ElectLeaders (`elect_leaders.rs` for the rules): `election_type` 0 PREFERRED,
    /// 1 UNCLEAN; `partitions` per topic, `None` = every partition; `offline` = replicas on
    /// an offline log dir (they may not lead).
    ElectLeaders {
        election_type: i8,
        partitions: Option<Vec<(String, Vec<i32>)>>,
        offline: OfflineReplicas,
    },
    /// Automatic leader balancing: at most `max` PREFERRED elections where the first replica
    /// does not lead (Kafka's `maybeBalancePartitionLeaders`).
    BalancePartitionLeaders {
        max: usize,
    },
    /// The unclean sweep: at most `max` UNCLEAN elections of leaderless partitions whose
    /// topic allows them (Kafka's `maybeElectUncleanLeaders`), with the controller's
    /// configuration carried by `ctx.heartbeats`.
    ElectUncleanLeaders {
        max: usize,
    },
    /// Issue 19: Kafka's CreateAcls (`security.rs` for the rules): one outcome per binding.
    CreateAcls {
        acls: Vec<skiff_auth::acl::AclBinding>,
    },
    /// Issue 19: Kafka's DeleteAcls: per filter, the ACLs it removed or its error.
    DeleteAcls {
        filters: Vec<crate::security::AclFilter>,
    },
    /// Issue 19: Kafka's AlterUserScramCredentials (KIP-554).
    AlterScramCredentials {
        deletions: Vec<ScramDeletion>,
        upsertions: Vec<ScramUpsertion>,
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
    /// AlterPartition: per topic and partition, the state after the change or its error.
    AlterPartition(Vec<IsrTopicResult>),
    /// ElectLeaders: per topic and partition, the outcome.
    ElectLeaders(Vec<TopicElection>),
    /// Balancing and the unclean sweep: what the run did.
    Elections(ElectionRun),
    /// CreateAcls: per binding, in request order.
    AclsCreated(Vec<Result<(), crate::security::ApiError>>),
    /// DeleteAcls: per filter, in request order, the ACLs it matched (each removed once).
    AclsDeleted(Vec<crate::security::AclDeleteResult>),
    /// AlterUserScramCredentials: per user, the outcome (successes first).
    ScramAltered(Vec<crate::security::ScramResult>),
}

/// Validates `request` against `image`; the records performing it and the response.
pub fn handle(
    image: &MetadataImage,
    request: &Request,
    ctx: &Ctx<'_>,
) -> Result<(Vec<Record>, Response), MetadataError> {
    match request {
        Request::CreateTopic {
            name,
            topic_id,
            partitions,
            replication_factor,
            assignments,
            configs,
        } => create_topic(
            image,
            ctx,
            name,
            *topic_id,
            (*partitions, *replication_factor, assignments),
            configs,
        ),
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
        Request::CreatePartitions {
            name,
            total,
            assignments,
        } => {
            let t = known_topic(image, name)?;
            if *total <= t.partitions {
                return Err(MetadataError::InvalidPartitions(format!(
                    "Topic currently has {} partitions, which is higher than the requested {total}.",
                    t.partitions
                )));
            }
            let additional = total - t.partitions;
            let assignment = if assignments.is_empty() {
                // Kafka: the replication factor of the topic's first partition.
                let rf = image
                    .partitions(name)
                    .next()
                    .map_or(1, |(_, p)| p.replicas.len());
                let rf = i16::try_from(rf).map_err(|_| {
                    MetadataError::Internal(format!("Invalid replication factor {rf}"))
                })?;
                Assignment::Auto {
                    replication_factor: rf,
                    wrap_errors: false,
                }
            } else {
                if assignments.len() != additional as usize {
                    return Err(MetadataError::InvalidReplicaAssignment(format!(
                        "Attempted to add {additional} additional partition(s), but only {} assignment(s) were specified.",
                        assignments.len()
                    )));
                }
                let rf = image.partitions(name).next().map(|(_, p)| p.replicas.len());
                Assignment::Manual {
                    replicas: assignments,
                    replication_factor: rf,
                }
            };
            let id = Uuid::from_bytes(t.id);
            let records =
                place_new_partitions(image, ctx, id, t.partitions, additional, &assignment)?
                    .into_iter()
                    .map(Record::Partition)
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
        Request::AllocateProducerIdsFor {
            broker_id,
            broker_epoch,
        } => {
            check_broker_epoch(image, *broker_id, *broker_epoch)?;
            let start = image.next_producer_id_block.max(0);
            let end = start
                .checked_add(PRODUCER_ID_BLOCK_SIZE)
                .ok_or_else(|| MetadataError::Internal("Exhausted all producerIds.".into()))?;
            let records = vec![Record::ProducerIds(ProducerIdsRecord {
                broker_id: *broker_id,
                broker_epoch: *broker_epoch,
                next_producer_id: end,
            })];
            Ok((records, Response::ProducerIds(start..end)))
        }
        Request::RegisterBroker {
            cluster_id,
            broker_id,
            incarnation_id,
            endpoints,
            rack,
        } => brokers::register_broker(
            image,
            ctx,
            cluster_id,
            *broker_id,
            *incarnation_id,
            endpoints,
            rack,
        ),
        Request::AlterPartition {
            broker_id,
            broker_epoch,
            topics,
        } => alter_partition::alter_partition(image, *broker_id, *broker_epoch, topics),
        Request::ElectLeaders {
            election_type,
            partitions,
            offline,
        } => elect_leaders::elect_leaders(image, *election_type, partitions.as_deref(), offline),
        Request::BalancePartitionLeaders { max } => {
            Ok(elect_leaders::balance_partition_leaders(image, *max))
        }
        Request::ElectUncleanLeaders { max } => Ok(elect_leaders::elect_unclean_leaders(
            image,
            &ctx.heartbeats.election_config(),
            *max,
        )),
        Request::CreateAcls { acls } => Ok(security::create_acls(image, ctx, acls)),
        Request::DeleteAcls { filters } => Ok(security::delete_acls(image, filters)),
        Request::AlterScramCredentials {
            deletions,
            upsertions,
        } => Ok(security::alter_scram(image, deletions, upsertions)),
    }
}

/// Kafka's `ClusterControlManager.checkBrokerEpoch`: `broker_id` is registered at
/// `broker_epoch`, else STALE_BROKER_EPOCH.
pub(crate) fn check_broker_epoch(
    image: &MetadataImage,
    broker_id: i32,
    broker_epoch: i64,
) -> Result<(), MetadataError> {
    match image.broker(broker_id) {
        Some(b) if b.epoch == broker_epoch => Ok(()),
        Some(b) => Err(MetadataError::StaleBrokerEpoch(format!(
            "Expected broker epoch {}, but got broker epoch {broker_epoch}",
            b.epoch
        ))),
        None => Err(MetadataError::StaleBrokerEpoch(format!(
            "No broker registration found for broker id {broker_id}"
        ))),
    }
}

fn known_topic<'a>(image: &'a MetadataImage, name: &str) -> Result<&'a TopicInfo, MetadataError> {
    image
        .topic(name)
        .ok_or_else(|| MetadataError::UnknownTopic(name.to_string()))
}

fn create_topic(
    image: &MetadataImage,
    ctx: &Ctx<'_>,
    name: &str,
    topic_id: Uuid,
    (partitions, replication_factor, assignments): (i32, i16, &[Vec<i32>]),
    configs: &BTreeMap<String, String>,
) -> Result<(Vec<Record>, Response), MetadataError> {
    validate_topic_name(name)?;
    let assignment = if assignments.is_empty() {
        if replication_factor < 1 {
            return Err(MetadataError::InvalidReplicationFactor(
                "Replication factor must be larger than 0, or -1 to use the default value.".into(),
            ));
        }
        if partitions < 1 {
            return Err(MetadataError::InvalidPartitions(
                "Number of partitions was set to an invalid non-positive value.".into(),
            ));
        }
        Assignment::Auto {
            replication_factor,
            wrap_errors: true,
        }
    } else {
        if replication_factor != -1 {
            return Err(MetadataError::InvalidRequest(
                "A manual partition assignment was specified, but replication factor was not set to -1."
                    .into(),
            ));
        }
        if partitions != -1 {
            return Err(MetadataError::InvalidRequest(
                "A manual partition assignment was specified, but numPartitions was not set to -1."
                    .into(),
            ));
        }
        Assignment::Manual {
            replicas: assignments,
            replication_factor: None,
        }
    };
    if image.topic(name).is_some() {
        return Err(MetadataError::TopicAlreadyExists(name.to_string()));
    }
    if topic_id.is_nil() || image.topic_by_id(topic_id.as_bytes()).is_some() {
        return Err(MetadataError::Internal(format!(
            "topic id {topic_id} is nil or in use"
        )));
    }
    let count = match &assignment {
        Assignment::Manual { replicas, .. } => i32::try_from(replicas.len())
            .map_err(|_| MetadataError::InvalidPartitions("too many partitions".into()))?,
        Assignment::Auto { .. } => partitions,
    };
    let placed = place_new_partitions(image, ctx, topic_id, 0, count, &assignment)?;
    let mut records = Vec::new();
    records.push(Record::Topic(TopicRecord {
        name: name.to_string(),
        topic_id,
    }));
    records.extend(placed.into_iter().map(Record::Partition));
    records.extend(config_diff(RESOURCE_TOPIC, name, &BTreeMap::new(), configs));
    let info = TopicInfo {
        name: name.to_string(),
        id: *topic_id.as_bytes(),
        partitions: count,
        configs: configs.clone(),
    };
    Ok((records, Response::Topic(info)))
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
