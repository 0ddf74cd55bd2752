//! Metadata (3), v0-12: brokers, cluster id, controller, topics with partitions.
//!
//! Single node: this broker is the only broker and the controller. A cluster (issue 16): every
//! registered, unfenced broker at its endpoint of this listener, the quorum leader as the
//! controller (`Broker::cluster_view`); auto-creation on a node that is not the controller
//! is forwarded to it (answered LEADER_NOT_AVAILABLE until the image shows the topic). Each partition's leader,
//! leader epoch, replicas and ISR are the metadata image's registration (`PartitionRecord` /
//! `PartitionChangeRecord`; this node at epoch 0 today). The broker entry carries the advertised address of the
//! listener the client connected through. Unknown topics are auto-created when
//! `auto.create.topics.enable` and the request allows it (v4+ flag; always for v0-3), with
//! `num.partitions`, synchronously, so the answer already shows them ready; an invalid name
//! then answers INVALID_TOPIC_EXCEPTION. Otherwise UNKNOWN_TOPIC_OR_PARTITION (by name) or
//! UNKNOWN_TOPIC_ID (v10+, by id). A null topic list (v1+) or an empty one at v0 means all.
//! A partition whose log dir is offline (issue 12) is leaderless: LEADER_NOT_AVAILABLE, leader
//! -1, this node listed in `offline_replicas` (what KRaft answers for a one-broker cluster).
//! Authorized operations (topic v8+, cluster v8-10), when asked, are every operation of the
//! resource type (no authorizer yet), else Kafka's "not requested" sentinel `i32::MIN`.

use std::collections::BTreeMap;

use skiff_metadata::{PartitionInfo, TopicInfo};
use skiff_protocol::{
    MetadataRequest, MetadataResponse, MetadataResponseBroker, MetadataResponsePartition,
    MetadataResponseTopic, ResponseBody,
};
use skiff_types::{ErrorCode, TopicPartition};
use uuid::Uuid;

use super::{Reply, RequestContext};
use crate::broker::Broker;

/// Kafka's "authorized operations not requested" sentinel.
const OPS_NOT_REQUESTED: i32 = i32::MIN;
/// Topic operations when no authorizer is configured: READ(3) WRITE(4) CREATE(5) DELETE(6)
/// ALTER(7) DESCRIBE(8) DESCRIBE_CONFIGS(10) ALTER_CONFIGS(11).
pub(crate) const ALL_TOPIC_OPS: i32 =
    (1 << 3) | (1 << 4) | (1 << 5) | (1 << 6) | (1 << 7) | (1 << 8) | (1 << 10) | (1 << 11);

pub fn handle(ctx: &RequestContext<'_>, req: MetadataRequest) -> Reply {
    let v = ctx.api_version;
    let broker = ctx.broker;
    let auto_create =
        broker.settings.auto_create_topics && (v < 4 || req.allow_auto_topic_creation);
    let ops = if req.include_topic_authorized_operations {
        ALL_TOPIC_OPS
    } else {
        OPS_NOT_REQUESTED
    };
    let all = match &req.topics {
        None => true,
        Some(t) => v == 0 && t.is_empty(),
    };
    let mut topics = Vec::new();
    if all {
        for info in broker.image().topics.values() {
            topics.push(topic_entry(broker, info, ops));
        }
    } else {
        for t in req.topics.iter().flatten() {
            let entry = match (&t.name, t.topic_id.is_nil()) {
                (Some(name), _) => by_name(ctx, name, auto_create, ops),
                (None, false) => match broker.image().topic_by_id(t.topic_id.as_bytes()) {
                    Some(info) => topic_entry(broker, info, ops),
                    // v12 allows a null name here; older versions need a string.
                    None => error_entry(
                        if v >= 12 { None } else { Some(String::new()) },
                        t.topic_id,
                        ErrorCode::UnknownTopicId,
                    ),
                },
                (None, true) => {
                    error_entry(Some(String::new()), Uuid::nil(), ErrorCode::InvalidRequest)
                }
            };
            topics.push(entry);
        }
    }
    let (brokers, controller_id) = broker.cluster_view(ctx.listener);
    let response = MetadataResponse {
        brokers: brokers
            .into_iter()
            .map(|(node_id, host, port, rack)| MetadataResponseBroker {
                node_id,
                host,
                port: i32::from(port),
                rack,
            })
            .collect(),
        cluster_id: Some(broker.cluster_id().to_string()),
        controller_id,
        topics,
        // v8-10 (librdkafka's DescribeCluster is a Metadata v10 request).
        cluster_authorized_operations: if v >= 8 && req.include_cluster_authorized_operations {
            super::describe_cluster::ALL_CLUSTER_OPS
        } else {
            OPS_NOT_REQUESTED
        },
        ..MetadataResponse::default()
    };
    Reply::Now(ResponseBody::Metadata(response))
}

fn by_name(
    ctx: &RequestContext<'_>,
    name: &str,
    auto_create: bool,
    ops: i32,
) -> MetadataResponseTopic {
    let broker = ctx.broker;
    if let Some(info) = broker.image().topic(name) {
        return topic_entry(broker, info, ops);
    }
    if !auto_create {
        return error_entry(
            Some(name.to_string()),
            Uuid::nil(),
            ErrorCode::UnknownTopicOrPartition,
        );
    }
    if skiff_metadata::validate_topic_name(name).is_err() {
        return error_entry(
            Some(name.to_string()),
            Uuid::nil(),
            ErrorCode::InvalidTopicException,
        );
    }
    let partitions = broker.settings.default_partitions.max(1);
    match broker.create_topic(name, partitions, BTreeMap::new()) {
        Ok(info) => topic_entry(broker, &info, ops),
        Err(e) if e.code == ErrorCode::TopicAlreadyExists => match broker.image().topic(name) {
            Some(info) => topic_entry(broker, info, ops),
            None => error_entry(
                Some(name.to_string()),
                Uuid::nil(),
                ErrorCode::LeaderNotAvailable,
            ),
        },
        Err(e) => {
            tracing::warn!(topic = name, error = %e.message, "auto-creating a topic failed");
            error_entry(Some(name.to_string()), Uuid::nil(), e.code)
        }
    }
}

fn topic_entry(broker: &Broker, info: &TopicInfo, ops: i32) -> MetadataResponseTopic {
    let image = broker.image();
    let any_offline = !broker.replicas.all_dirs_online();
    MetadataResponseTopic {
        error_code: 0,
        name: Some(info.name.clone()),
        topic_id: Uuid::from_bytes(info.id),
        is_internal: info.name.starts_with("__"),
        partitions: (0..info.partitions)
            .map(|p| {
                let tp = TopicPartition::new(info.name.clone(), p);
                let offline = any_offline && !broker.replicas.is_partition_online(&tp);
                partition_entry(&image, p, image.partition(&info.name, p), offline)
            })
            .collect(),
        topic_authorized_operations: ops,
    }
}

/// issue 12: a partition whose log dir is offline has no leader, as KRaft's controller leaves
/// it when the only replica's dir fails (`handleDirectoriesOffline`): LEADER_NOT_AVAILABLE,
/// leader -1, this node in `offline_replicas`. Issue 17: replicas on brokers that are fenced or
/// not registered are offline too (KRaft's `getOfflineReplicas`), when the image has broker
/// registrations at all (a single node without KRaft has none).
pub(crate) fn partition_entry(
    image: &skiff_metadata::MetadataImage,
    index: i32,
    registration: Option<&PartitionInfo>,
    offline: bool,
) -> MetadataResponsePartition {
    // The image's registration: leader, epochs, replicas and ISR (PartitionRecord /
    // PartitionChangeRecord). A partition without one has no leader.
    let (leader, leader_epoch, replicas, isr) = registration
        .map_or((-1, -1, Vec::new(), Vec::new()), |r| {
            (r.leader, r.leader_epoch, r.replicas.clone(), r.isr.clone())
        });
    let leaderless = offline || leader < 0;
    MetadataResponsePartition {
        error_code: if leaderless {
            ErrorCode::LeaderNotAvailable as i16
        } else {
            0
        },
        partition_index: index,
        leader_id: if leaderless { -1 } else { leader },
        leader_epoch,
        offline_replicas: if offline {
            replicas.clone()
        } else if image.brokers().next().is_some() {
            replicas
                .iter()
                .copied()
                .filter(|r| image.broker(*r).is_none_or(|b| b.fenced))
                .collect()
        } else {
            Vec::new()
        },
        replica_nodes: replicas,
        isr_nodes: isr,
    }
}

fn error_entry(name: Option<String>, id: Uuid, code: ErrorCode) -> MetadataResponseTopic {
    MetadataResponseTopic {
        error_code: code as i16,
        name,
        topic_id: id,
        is_internal: false,
        partitions: Vec::new(),
        topic_authorized_operations: OPS_NOT_REQUESTED,
    }
}
