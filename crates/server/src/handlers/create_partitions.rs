//! CreatePartitions (37), v0-3: grow a topic to `count` partitions.
//!
//! Kafka's (KRaft controller's) checks and messages, per topic: a name listed twice ->
//! INVALID_REQUEST "Duplicate topic name." (answered once); unknown topic ->
//! UNKNOWN_TOPIC_OR_PARTITION; `count` equal to the current count -> INVALID_PARTITIONS "Topic
//! already has N partition(s)."; smaller -> INVALID_PARTITIONS "The topic T currently has N
//! partition(s); C would not be an increase."; a manual assignment must give exactly one
//! replica list per new partition naming registered brokers, each once, as many as the topic's
//! first partition has (INVALID_REPLICA_ASSIGNMENT with Kafka's messages); it is placed as given. One request adds at most [`NEW_PARTITIONS_MAX`] partitions per topic
//! (Kafka bounds a controller operation to 10000 records); more -> INVALID_PARTITIONS.
//! `validate_only` runs every check and creates nothing. Otherwise the new partitions go into
//! the metadata log first (fsynced), then their logs are created; a log that cannot be created
//! now is created on first use.
//! Authorization (issue 19): after the duplicate check, ALTER on each topic, before its
//! existence; refused -> TOPIC_AUTHORIZATION_FAILED (no message, as Kafka's controller).

use std::collections::{HashMap, HashSet};

use skiff_auth::acl::AclOperation;
use skiff_protocol::{
    CreatePartitionsRequest, CreatePartitionsResponse, CreatePartitionsTopic,
    CreatePartitionsTopicResult, ResponseBody,
};
use skiff_types::ErrorCode;

use super::{Reply, RequestContext};
use crate::broker::TopicError;

/// Most partitions one request may add to one topic.
pub const NEW_PARTITIONS_MAX: i32 = 10_000;

pub fn handle(ctx: &RequestContext<'_>, req: CreatePartitionsRequest) -> Reply {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for t in &req.topics {
        *counts.entry(t.name.as_str()).or_default() += 1;
    }
    let authz = super::authz_ops::Checker::new(ctx);
    let mut answered_duplicate = HashSet::new();
    let mut results = Vec::with_capacity(req.topics.len());
    for t in &req.topics {
        let result = if counts.get(t.name.as_str()).copied().unwrap_or(0) > 1 {
            if !answered_duplicate.insert(t.name.as_str()) {
                continue;
            }
            Err(TopicError::new(
                ErrorCode::InvalidRequest,
                "Duplicate topic name.",
            ))
        } else if !authz.topic(AclOperation::Alter, &t.name) {
            Err(TopicError::new(ErrorCode::TopicAuthorizationFailed, ""))
        } else {
            grow(ctx, t, req.validate_only)
        };
        results.push(match result {
            Ok(()) => CreatePartitionsTopicResult {
                name: t.name.clone(),
                error_code: 0,
                error_message: None,
            },
            Err(e) => CreatePartitionsTopicResult {
                name: t.name.clone(),
                error_code: e.code as i16,
                error_message: (!e.message.is_empty()).then_some(e.message),
            },
        });
    }
    Reply::Now(ResponseBody::CreatePartitions(CreatePartitionsResponse {
        results,
        ..CreatePartitionsResponse::default()
    }))
}

fn grow(
    ctx: &RequestContext<'_>,
    t: &CreatePartitionsTopic,
    validate_only: bool,
) -> Result<(), TopicError> {
    let broker = ctx.broker;
    let image = broker.image();
    let Some(info) = image.topic(&t.name) else {
        return Err(TopicError::new(ErrorCode::UnknownTopicOrPartition, ""));
    };
    let current = info.partitions;
    if t.count == current {
        return Err(TopicError::new(
            ErrorCode::InvalidPartitions,
            format!("Topic already has {current} partition(s)."),
        ));
    }
    if t.count < current {
        return Err(TopicError::new(
            ErrorCode::InvalidPartitions,
            format!(
                "The topic {} currently has {current} partition(s); {} would not be an increase.",
                t.name, t.count
            ),
        ));
    }
    let additional = t.count - current;
    if additional > NEW_PARTITIONS_MAX {
        return Err(TopicError::new(
            ErrorCode::InvalidPartitions,
            format!(
                "Cannot add {additional} partitions in one request: at most {NEW_PARTITIONS_MAX}."
            ),
        ));
    }
    if let Some(assignments) = &t.assignments {
        if i64::try_from(assignments.len()).ok() != Some(i64::from(additional)) {
            return Err(TopicError::new(
                ErrorCode::InvalidReplicaAssignment,
                format!(
                    "Attempted to add {additional} additional partition(s), but only {} assignment(s) were specified.",
                    assignments.len()
                ),
            ));
        }
        // The registered brokers (a single node without KRaft registrations: itself), and
        // the replica count of the topic's first partition (Kafka's rule).
        let mut registered: Vec<i32> = image.brokers().map(|b| b.id).collect();
        if registered.is_empty() {
            registered.push(broker.node_id());
        }
        let rf = image.partition(&t.name, 0).map_or(1, |p| p.replicas.len());
        for a in assignments {
            check_assignment(&a.broker_ids, &registered, rf)?;
        }
    }
    if validate_only {
        return Ok(());
    }
    let manual: Vec<Vec<i32>> = t
        .assignments
        .iter()
        .flatten()
        .map(|a| a.broker_ids.clone())
        .collect();
    broker
        .metadata
        .create_partitions_with(&t.name, t.count, manual)
        .map_err(|e| TopicError::new(e.error_code(), e.to_string()))?;
    // The image now assigns the new partitions to this node: the replica manager hosts them.
    let image = broker.image();
    if let Some(grown) = image.topic(&t.name) {
        broker
            .replicas
            .ensure_assigned(&image, &t.name, broker.log_config(grown));
    }
    tracing::info!(topic = %t.name, from = current, to = t.count, "partitions added");
    Ok(())
}

/// Kafka's `validateManualPartitionAssignment`: registered brokers, each once, as many as the
/// topic's first partition has.
fn check_assignment(broker_ids: &[i32], registered: &[i32], rf: usize) -> Result<(), TopicError> {
    let bad = |m: String| TopicError::new(ErrorCode::InvalidReplicaAssignment, m);
    if broker_ids.is_empty() {
        return Err(bad(
            "The manual partition assignment includes an empty replica list.".into(),
        ));
    }
    let mut sorted = broker_ids.to_vec();
    sorted.sort_unstable();
    let mut prev = None;
    for id in &sorted {
        if !registered.contains(id) {
            return Err(bad(format!(
                "The manual partition assignment includes broker {id}, but no such broker is registered."
            )));
        }
        if prev == Some(*id) {
            return Err(bad(format!(
                "The manual partition assignment includes the broker {id} more than once."
            )));
        }
        prev = Some(*id);
    }
    if sorted.len() != rf {
        return Err(bad(format!(
            "The manual partition assignment includes a partition with {} replica(s), but this is not consistent with previous partitions, which have {rf} replica(s).",
            sorted.len()
        )));
    }
    Ok(())
}
