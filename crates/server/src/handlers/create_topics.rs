//! CreateTopics (19), v2-7.
//!
//! Per topic, Kafka's (KRaft controller's) checks and messages: duplicate names in one request
//! -> INVALID_REQUEST; name rules -> INVALID_TOPIC_EXCEPTION; `num_partitions` -1 = the
//! `num.partitions` default, otherwise >= 1 (INVALID_PARTITIONS); `replication_factor` -1 =
//! default, at most the registered brokers (else INVALID_REPLICATION_FACTOR); a manual
//! assignment must use -1 for both and name registered brokers, each once per partition
//! (INVALID_REPLICA_ASSIGNMENT; the controller checks the rest); configs validated with the config layer's precise INVALID_CONFIG messages; an existing topic
//! -> TOPIC_ALREADY_EXISTS. `validate_only` runs every check and creates nothing. From v5 the
//! answer carries the partition count, replication factor and every topic config with its
//! source; from v7 the topic id. Like Kafka's controller (`MAX_RECORDS_PER_USER_OP`), one
//! request may create at most [`MAX_RECORDS_PER_REQUEST`] metadata records (per topic one
//! TopicRecord, one PartitionRecord per partition, one ConfigRecord per config); a larger one
//! fails whole, every topic answered POLICY_VIOLATION "Unable to perform excessively large
//! batch operation." (so a client cannot make the broker create millions of partition dirs).
//! Authorization (issue 19, Kafka's `ControllerApis.createTopics`): after the duplicate check,
//! CREATE on the cluster or on the topic, else TOPIC_AUTHORIZATION_FAILED "Authorization
//! failed." (a refused topic counts for nothing in the record cap); the created topic's
//! configs, partition count and replication factor are returned only with DESCRIBE_CONFIGS
//! on it, else `topic_config_error_code` TOPIC_AUTHORIZATION_FAILED.

use std::collections::{BTreeMap, HashMap};

use skiff_auth::acl::AclOperation;
use skiff_protocol::{
    CreatableTopic, CreatableTopicConfigs, CreatableTopicResult, CreateTopicsRequest,
    CreateTopicsResponse, ResponseBody,
};
use skiff_types::ErrorCode;
use uuid::Uuid;

use super::authz_ops::Checker;
use super::{Reply, RequestContext};
use crate::broker::TopicError;

/// Kafka's `QuorumController.MAX_RECORDS_PER_USER_OP`.
pub const MAX_RECORDS_PER_REQUEST: u64 = 10_000;

/// Metadata records creating `t` would append (a topic whose partition count is invalid
/// counts one partition: it fails on its own anyway).
fn records_for(ctx: &RequestContext<'_>, t: &CreatableTopic) -> u64 {
    let partitions = partition_count(ctx, t).map_or(1, |n| u64::try_from(n).unwrap_or(1));
    1 + partitions + t.configs.len() as u64
}

pub fn handle(ctx: &RequestContext<'_>, req: CreateTopicsRequest) -> Reply {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for t in &req.topics {
        *counts.entry(t.name.as_str()).or_default() += 1;
    }
    let authz = Checker::new(ctx);
    let cluster_create = authz.cluster(AclOperation::Create);
    let may_create =
        |t: &CreatableTopic| cluster_create || authz.topic(AclOperation::Create, &t.name);
    let records: u64 = req
        .topics
        .iter()
        .filter(|t| counts.get(t.name.as_str()).copied().unwrap_or(0) == 1 && may_create(t))
        .map(|t| records_for(ctx, t))
        .sum();
    if records > MAX_RECORDS_PER_REQUEST {
        let mut answered = std::collections::HashSet::new();
        let topics = req
            .topics
            .iter()
            .filter(|t| answered.insert(t.name.as_str()))
            .map(|t| {
                failed(
                    &t.name,
                    TopicError::new(
                        ErrorCode::PolicyViolation,
                        "Unable to perform excessively large batch operation.",
                    ),
                )
            })
            .collect();
        return Reply::Now(ResponseBody::CreateTopics(CreateTopicsResponse {
            topics,
            ..CreateTopicsResponse::default()
        }));
    }
    let mut seen_duplicate = std::collections::HashSet::new();
    let mut topics = Vec::with_capacity(req.topics.len());
    for t in &req.topics {
        if counts.get(t.name.as_str()).copied().unwrap_or(0) > 1 {
            // Kafka answers a duplicated name once.
            if seen_duplicate.insert(t.name.clone()) {
                topics.push(failed(
                    &t.name,
                    TopicError::new(ErrorCode::InvalidRequest, "Duplicate topic name."),
                ));
            }
            continue;
        }
        if !may_create(t) {
            topics.push(failed(
                &t.name,
                TopicError::new(ErrorCode::TopicAuthorizationFailed, "Authorization failed."),
            ));
            continue;
        }
        topics.push(match create_one(ctx, t, req.validate_only) {
            Ok(result) if !authz.topic(AclOperation::DescribeConfigs, &t.name) => {
                CreatableTopicResult {
                    name: result.name,
                    topic_id: result.topic_id,
                    error_message: None,
                    topic_config_error_code: ErrorCode::TopicAuthorizationFailed as i16,
                    ..CreatableTopicResult::default()
                }
            }
            Ok(result) => result,
            Err(e) => failed(&t.name, e),
        });
    }
    Reply::Now(ResponseBody::CreateTopics(CreateTopicsResponse {
        topics,
        ..CreateTopicsResponse::default()
    }))
}

fn failed(name: &str, e: TopicError) -> CreatableTopicResult {
    CreatableTopicResult {
        name: name.to_string(),
        error_code: e.code as i16,
        error_message: Some(e.message),
        ..CreatableTopicResult::default()
    }
}

fn create_one(
    ctx: &RequestContext<'_>,
    t: &CreatableTopic,
    validate_only: bool,
) -> Result<CreatableTopicResult, TopicError> {
    let broker = ctx.broker;
    skiff_metadata::validate_topic_name(&t.name)
        .map_err(|e| TopicError::new(e.error_code(), e.to_string()))?;
    if broker.image().topic(&t.name).is_some() {
        return Err(TopicError::new(
            ErrorCode::TopicAlreadyExists,
            format!("Topic '{}' already exists.", t.name),
        ));
    }
    let partitions = partition_count(ctx, t)?;
    let replication_factor = match (t.replication_factor, t.assignments.first()) {
        (-1, Some(a)) => i16::try_from(a.broker_ids.len()).unwrap_or(i16::MAX),
        (-1, None) => broker.settings.default_replication_factor,
        (rf, _) => rf,
    };
    if replication_factor < 1 {
        return Err(TopicError::new(
            ErrorCode::InvalidReplicationFactor,
            "Replication factor must be larger than 0, or -1 to use the default value.",
        ));
    }
    // Registered brokers (a single node without KRaft registrations is one).
    let brokers = i16::try_from(broker.image().brokers().count().max(1)).unwrap_or(i16::MAX);
    if replication_factor > brokers {
        return Err(TopicError::new(
            ErrorCode::InvalidReplicationFactor,
            format!(
                "Unable to replicate the partition {replication_factor} time(s): The target replication factor of \
                 {replication_factor} cannot be reached because only {brokers} broker(s) are registered."
            ),
        ));
    }
    let mut configs = BTreeMap::new();
    for c in &t.configs {
        let Some(value) = &c.value else {
            return Err(TopicError::new(
                ErrorCode::InvalidConfig,
                format!("Null value not supported for topic configs: {}", c.name),
            ));
        };
        configs.insert(c.name.clone(), value.clone());
    }
    let described = broker.topic_configs.describe(&configs);
    let (id, partitions) = if validate_only {
        broker.validate_new_topic(&t.name, partitions, &configs)?;
        (Uuid::nil(), partitions)
    } else {
        if !crate::cluster::is_controller(broker) {
            // issue 16: the forward to the active controller failed (none known, or it did
            // not answer): the client retries, as after Kafka's NOT_CONTROLLER. No background
            // creation here, unlike auto-creation: an answered error must not create later.
            return Err(TopicError::new(
                ErrorCode::NotController,
                "This node is not the active controller and could not reach one; retry.",
            ));
        }
        let info = if t.assignments.is_empty() {
            broker.create_topic_rf(&t.name, partitions, replication_factor, configs)?
        } else {
            broker.create_topic_assigned(&t.name, manual_assignment(t), configs)?
        };
        (Uuid::from_bytes(info.id), info.partitions)
    };
    Ok(CreatableTopicResult {
        name: t.name.clone(),
        topic_id: id,
        error_code: 0,
        error_message: None,
        num_partitions: partitions,
        replication_factor,
        configs: Some(
            described
                .into_iter()
                .map(|e| CreatableTopicConfigs {
                    name: e.name,
                    value: if e.sensitive { None } else { e.value },
                    read_only: e.read_only,
                    config_source: e.source,
                    is_sensitive: e.sensitive,
                })
                .collect(),
        ),
        ..CreatableTopicResult::default()
    })
}

/// A manual assignment's replica lists, by partition index (checked sequential from 0).
fn manual_assignment(t: &CreatableTopic) -> Vec<Vec<i32>> {
    let mut a: Vec<(i32, Vec<i32>)> = t
        .assignments
        .iter()
        .map(|a| (a.partition_index, a.broker_ids.clone()))
        .collect();
    a.sort_unstable();
    a.into_iter().map(|(_, b)| b).collect()
}

fn partition_count(ctx: &RequestContext<'_>, t: &CreatableTopic) -> Result<i32, TopicError> {
    // The registered brokers (a single node without KRaft registrations: itself).
    let mut registered: Vec<i32> = ctx.broker.image().brokers().map(|b| b.id).collect();
    if registered.is_empty() {
        registered.push(ctx.broker.node_id());
    }
    if t.assignments.is_empty() {
        return match t.num_partitions {
            -1 => Ok(ctx.broker.settings.default_partitions.max(1)),
            n if n >= 1 => Ok(n),
            _ => Err(TopicError::new(
                ErrorCode::InvalidPartitions,
                "Number of partitions was set to an invalid non-positive value.",
            )),
        };
    }
    if t.num_partitions != -1 {
        return Err(TopicError::new(
            ErrorCode::InvalidRequest,
            "A manual partition assignment was specified, but numPartitions was not set to -1.",
        ));
    }
    if t.replication_factor != -1 {
        return Err(TopicError::new(
            ErrorCode::InvalidRequest,
            "A manual partition assignment was specified, but replicationFactor was not set to -1.",
        ));
    }
    let mut indexes: Vec<i32> = t.assignments.iter().map(|a| a.partition_index).collect();
    indexes.sort_unstable();
    for (expected, got) in indexes.iter().enumerate() {
        if i64::from(*got) != expected as i64 {
            return Err(TopicError::new(
                ErrorCode::InvalidReplicaAssignment,
                format!(
                    "Partitions should be numbered sequentially starting at 0, but partition {got} was found."
                ),
            ));
        }
    }
    for a in &t.assignments {
        if a.broker_ids.is_empty() {
            return Err(TopicError::new(
                ErrorCode::InvalidReplicaAssignment,
                "The manual partition assignment includes an empty replica list.",
            ));
        }
        if let Some(b) = a.broker_ids.iter().find(|b| !registered.contains(b)) {
            return Err(TopicError::new(
                ErrorCode::InvalidReplicaAssignment,
                format!(
                    "The manual partition assignment includes broker {b}, but no such broker is registered."
                ),
            ));
        }
        let mut distinct = a.broker_ids.clone();
        distinct.sort_unstable();
        distinct.dedup();
        if distinct.len() != a.broker_ids.len() {
            return Err(TopicError::new(
                ErrorCode::InvalidReplicaAssignment,
                "The manual partition assignment includes the same broker more than once.",
            ));
        }
    }
    i32::try_from(t.assignments.len())
        .map_err(|_| TopicError::new(ErrorCode::InvalidPartitions, "too many partitions"))
}
