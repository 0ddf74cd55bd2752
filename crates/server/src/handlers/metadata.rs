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
//! Authorization (issue 19, Kafka's `handleTopicMetadataRequest`): DESCRIBE on each topic,
//! before its existence. An all-topics request omits the topics the principal may not
//! describe; a named one answers TOPIC_AUTHORIZATION_FAILED with no details (zero id, no
//! partitions) whether it exists or not; by id (v12), an id this broker does not know answers
//! UNKNOWN_TOPIC_ID and a known but refused one TOPIC_AUTHORIZATION_FAILED with its id and no
//! name (ids are not secret). Auto-creating a missing topic needs CREATE on the cluster or on
//! the topic, else TOPIC_AUTHORIZATION_FAILED.
//! Authorized operations (topic v8+, cluster v8-10), when asked, are Kafka's bitfields
//! ([`super::authz_ops`]; cluster: 0 without DESCRIBE on the cluster), else Kafka's "not
//! requested" sentinel `i32::MIN`.

use std::collections::BTreeMap;

use skiff_auth::acl::{AclOperation, ResourceType};
use skiff_metadata::{PartitionInfo, TopicInfo};
use skiff_protocol::{
    MetadataRequest, MetadataResponse, MetadataResponseBroker, MetadataResponsePartition,
    MetadataResponseTopic, ResponseBody,
};
use skiff_types::{ErrorCode, TopicPartition};
use uuid::Uuid;

use super::authz_ops::{Checker, OPS_NOT_REQUESTED};
use super::{Reply, RequestContext};
use crate::broker::Broker;
pub fn handle(ctx: &RequestContext<'_>, req: MetadataRequest) -> Reply {
    let v = ctx.api_version;
    let broker = ctx.broker;
    let auto_create =
        broker.settings.auto_create_topics && (v < 4 || req.allow_auto_topic_creation);
    let authz = Checker::new(ctx);
    let with_ops = v >= 8 && req.include_topic_authorized_operations;
    let ops = |name: &str| {
        if with_ops {
            authz.authorized_operations(ResourceType::Topic, name)
        } else {
            OPS_NOT_REQUESTED
        }
    };
    let describe = |name: &str| authz.topic(AclOperation::Describe, name);
    let all = match &req.topics {
        None => true,
        Some(t) => v == 0 && t.is_empty(),
    };
    let mut topics = Vec::new();
    if all {
        for info in broker.image().topics.values() {
            if describe(&info.name) {
                topics.push(topic_entry(broker, info, ops(&info.name)));
            }
        }
    } else {
        for t in req.topics.iter().flatten() {
            let entry = match (&t.name, t.topic_id.is_nil()) {
                (Some(name), _) if !describe(name) => {
                    error_entry(Some(name.clone()), Uuid::nil(), denied())
                }
                (Some(name), _) => {
                    let may_create = || {
                        authz.cluster(AclOperation::Create)
                            || authz.topic(AclOperation::Create, name)
                    };
                    by_name(ctx, name, auto_create, may_create, ops(name))
                }
                (None, false) => match broker.image().topic_by_id(t.topic_id.as_bytes()) {
                    Some(info) if !describe(&info.name) => error_entry(
                        if v >= 12 { None } else { Some(String::new()) },
                        t.topic_id,
                        denied(),
                    ),
                    Some(info) => topic_entry(broker, info, ops(&info.name)),
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
        cluster_authorized_operations: if (8..=10).contains(&v)
            && req.include_cluster_authorized_operations
        {
            if authz.cluster(AclOperation::Describe) {
                authz.authorized_operations(ResourceType::Cluster, "kafka-cluster")
            } else {
                0
            }
        } else {
            OPS_NOT_REQUESTED
        },
        ..MetadataResponse::default()
    };
    Reply::Now(ResponseBody::Metadata(response))
}

fn denied() -> ErrorCode {
    ErrorCode::TopicAuthorizationFailed
}

/// A topic the principal may describe, by name; `may_create`: CREATE on the cluster or the
/// topic, asked only when the topic is missing and would be auto-created.
fn by_name(
    ctx: &RequestContext<'_>,
    name: &str,
    auto_create: bool,
    may_create: impl FnOnce() -> bool,
    ops: i32,
) -> MetadataResponseTopic {
    let broker = ctx.broker;
    if let Some(info) = broker.image().topic(name) {
        return topic_entry(broker, info, ops);
    }
    if !auto_create {
        let mut e = error_entry(
            Some(name.to_string()),
            Uuid::nil(),
            ErrorCode::UnknownTopicOrPartition,
        );
        e.topic_authorized_operations = ops;
        return e;
    }
    if !may_create() {
        return error_entry(Some(name.to_string()), Uuid::nil(), denied());
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
