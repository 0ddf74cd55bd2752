//! DescribeTopicPartitions (75), v0: topics and their partitions, paged by a cursor (KIP-966;
//! the Java admin's `describeTopics` and `kafka-topics.sh --describe` use it).
//!
//! Kafka's semantics (`DescribeTopicPartitionsRequestHandler` + the metadata cache): an empty
//! topic list means every topic; topics are answered sorted by name, from the cursor's topic
//! and partition on, at most `min(ResponsePartitionLimit, 2000)` (and at least 1) partitions in
//! all; when the limit cuts a topic (or is used up before the next topic) `NextCursor` names
//! where to go on. A requested topic that does not exist answers UNKNOWN_TOPIC_OR_PARTITION
//! (INVALID_TOPIC_EXCEPTION for an illegal name); with the all-topics form nothing unknown is
//! listed. A cursor naming a topic outside the requested list, or a negative partition, is
//! INVALID_REQUEST. Partitions carry the same registration as Metadata (issue 12: a partition
//! on an offline log dir has leader -1 and this node in `OfflineReplicas`, with no error, as
//! Kafka's cache answers here); the ELR lists are empty (no ELR yet).
//! Authorization (issue 19): DESCRIBE on each topic, before its existence; the all-topics form
//! skips refused topics, a named one answers TOPIC_AUTHORIZATION_FAILED (zero id, no
//! partitions, operations not filled) after the answered topics. Every answered topic's
//! authorized operations are filled (Kafka's bitfield), unknown ones included.

use std::collections::BTreeSet;

use skiff_protocol::{
    DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse,
    DescribeTopicPartitionsResponsePartition, DescribeTopicPartitionsResponseTopic, ResponseBody,
};
use skiff_types::{ErrorCode, TopicPartition};
use uuid::Uuid;

use skiff_auth::acl::{AclOperation, ResourceType};

use super::authz_ops::{Checker, OPS_NOT_REQUESTED};
use super::metadata::partition_entry;
use super::{Reply, RequestContext};

/// Kafka's `max.request.partition.size.limit` default.
const MAX_PARTITIONS_PER_RESPONSE: i32 = 2000;

pub fn handle(ctx: &RequestContext<'_>, req: DescribeTopicPartitionsRequest) -> Reply {
    let broker = ctx.broker;
    let image = broker.image();
    let all = req.topics.is_empty();
    let (cursor_topic, cursor_partition) = req.cursor.as_ref().map_or((String::new(), 0), |c| {
        (c.topic_name.clone(), c.partition_index)
    });
    let names: BTreeSet<String> = if all {
        image.topics.keys().cloned().collect()
    } else {
        req.topics.iter().map(|t| t.name.clone()).collect()
    };
    let names: Vec<String> = names.into_iter().filter(|n| *n >= cursor_topic).collect();
    let refused = |message: String| {
        tracing::debug!(%message, "DescribeTopicPartitions refused");
        Reply::Now(ResponseBody::DescribeTopicPartitions(
            DescribeTopicPartitionsResponse {
                topics: req
                    .topics
                    .iter()
                    .map(|t| DescribeTopicPartitionsResponseTopic {
                        is_internal: false,
                        ..error_topic(&t.name, ErrorCode::InvalidRequest)
                    })
                    .collect(),
                ..DescribeTopicPartitionsResponse::default()
            },
        ))
    };
    if let Some(c) = &req.cursor {
        if !all && !names.contains(&c.topic_name) {
            return refused(format!(
                "DescribeTopicPartitionsRequest topic list should contain the cursor topic: {}",
                c.topic_name
            ));
        }
        if c.partition_index < 0 {
            return refused(format!(
                "DescribeTopicPartitionsRequest cursor partition must be valid: {}-{}",
                c.topic_name, c.partition_index
            ));
        }
    }
    let limit = req
        .response_partition_limit
        .clamp(1, MAX_PARTITIONS_PER_RESPONSE);
    let mut remaining = limit;
    let mut topics = Vec::new();
    let mut next_cursor = None;
    let any_offline = !broker.replicas.all_dirs_online();
    let authz = Checker::new(ctx);
    let ops = |name: &str| authz.authorized_operations(ResourceType::Topic, name);
    let mut refused_topics = Vec::new();
    for name in names {
        // Kafka filters lazily: a refused topic is skipped (and, named, reported) on the way
        // to the next answered one.
        if !authz.topic(AclOperation::Describe, &name) {
            if !all {
                refused_topics.push(DescribeTopicPartitionsResponseTopic {
                    is_internal: false,
                    ..error_topic(&name, ErrorCode::TopicAuthorizationFailed)
                });
            }
            continue;
        }
        if remaining == 0 {
            next_cursor = Some(cursor(&name, 0));
            break;
        }
        let Some(info) = image.topic(&name) else {
            if !all {
                let code = if skiff_metadata::validate_topic_name(&name).is_err() {
                    ErrorCode::InvalidTopicException
                } else {
                    ErrorCode::UnknownTopicOrPartition
                };
                let mut e = error_topic(&name, code);
                e.topic_authorized_operations = ops(&name);
                topics.push(e);
            }
            continue;
        };
        let start = if name == cursor_topic {
            cursor_partition
        } else {
            0
        };
        let end = info.partitions.min(start.saturating_add(remaining));
        let partitions: Vec<_> = (start..end)
            .map(|p| {
                let tp = TopicPartition::new(name.clone(), p);
                let offline = any_offline && !broker.replicas.is_partition_online(&tp);
                let m = partition_entry(&image, p, image.partition(&name, p), offline);
                DescribeTopicPartitionsResponsePartition {
                    error_code: 0,
                    partition_index: p,
                    leader_id: m.leader_id,
                    leader_epoch: m.leader_epoch,
                    replica_nodes: m.replica_nodes,
                    isr_nodes: m.isr_nodes,
                    eligible_leader_replicas: Some(Vec::new()),
                    last_known_elr: Some(Vec::new()),
                    offline_replicas: m.offline_replicas,
                }
            })
            .collect();
        remaining -= partitions.len() as i32;
        topics.push(DescribeTopicPartitionsResponseTopic {
            error_code: 0,
            name: Some(name.clone()),
            topic_id: Uuid::from_bytes(info.id),
            is_internal: name.starts_with("__"),
            partitions,
            topic_authorized_operations: ops(&name),
        });
        if end < info.partitions {
            next_cursor = Some(cursor(&name, end));
            break;
        }
    }
    topics.append(&mut refused_topics);
    Reply::Now(ResponseBody::DescribeTopicPartitions(
        DescribeTopicPartitionsResponse {
            topics,
            next_cursor,
            ..DescribeTopicPartitionsResponse::default()
        },
    ))
}

fn cursor(topic: &str, partition: i32) -> skiff_protocol::DescribeTopicPartitionsResponseCursor {
    skiff_protocol::DescribeTopicPartitionsResponseCursor {
        topic_name: topic.to_string(),
        partition_index: partition,
    }
}

fn error_topic(name: &str, code: ErrorCode) -> DescribeTopicPartitionsResponseTopic {
    DescribeTopicPartitionsResponseTopic {
        error_code: code as i16,
        name: Some(name.to_string()),
        topic_id: Uuid::nil(),
        is_internal: name.starts_with("__"),
        partitions: Vec::new(),
        topic_authorized_operations: OPS_NOT_REQUESTED,
    }
}
