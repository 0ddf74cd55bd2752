//! ElectLeaders (43), v0-2: preferred (0) or unclean (1) leader election per partition, for
//! `kafka-leader-election.sh` and `Admin.electLeaders`.
//!
//! Mental model: the active controller decides (`skiff_metadata` `controller/elect_leaders.rs`,
//! Kafka's `ReplicationControlManager.electLeaders`) and commits the leader changes before
//! answering; a node that is not the active controller forwards the request to it
//! (`cluster::is_forwarded`, as Kafka's brokers forward ElectLeaders in KRaft mode). On one
//! node this node is the controller: every partition has one replica, so PREFERRED and
//! UNCLEAN answer ELECTION_NOT_NEEDED unless the partition's log dir is offline (issue 12):
//! its replicas there are reported offline to the decision, which then answers
//! PREFERRED_LEADER_NOT_AVAILABLE / ELIGIBLE_LEADERS_NOT_AVAILABLE (no other replica could
//! lead).
//!
//! Request-wide failures are Kafka's `ElectLeadersRequest.getErrorResponse`: the top-level
//! error code (v1+) and every requested partition with it: an election type other than 0
//! or 1 -> INVALID_REQUEST "Unknown election type N"; this node no longer the controller
//! (and no other reachable) -> NOT_CONTROLLER. v0 carries no election type: PREFERRED.
//! Authorization (issue 19): ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED top-level
//! and on every named partition (Kafka's `getErrorResponse`).

use std::collections::BTreeSet;
use std::sync::Arc;

use skiff_auth::acl::AclOperation;
use skiff_metadata::{MetadataError, OfflineReplicas, TopicElection};
use skiff_protocol::{
    ElectLeadersRequest, ElectLeadersResponse, PartitionResult, ReplicaElectionResult, ResponseBody,
};
use skiff_types::ErrorCode;
use skiff_types::TopicPartition;

use super::{Reply, RequestContext};
use crate::broker::Broker;

pub fn handle(ctx: &RequestContext<'_>, req: ElectLeadersRequest) -> Reply {
    if !ctx.authorize_cluster(AclOperation::Alter) {
        return Reply::Now(ResponseBody::ElectLeaders(unauthorized(&req)));
    }
    let broker = Arc::clone(ctx.broker);
    Reply::Later(Box::pin(async move {
        let asked: Option<Vec<(String, Vec<i32>)>> = req.topic_partitions.as_ref().map(|ts| {
            ts.iter()
                .map(|t| (t.topic.clone(), t.partitions.clone()))
                .collect()
        });
        let partitions = asked.clone();
        let kind = req.election_type;
        let done = tokio::task::spawn_blocking(move || {
            let offline = offline_replicas(&broker);
            broker.metadata.elect_leaders(kind, partitions, offline)
        })
        .await;
        let response = match done {
            Ok(Ok(answers)) => ElectLeadersResponse {
                replica_election_results: answers.into_iter().map(topic_result).collect(),
                ..ElectLeadersResponse::default()
            },
            Ok(Err(e)) => {
                tracing::info!(error = %e, "ElectLeaders refused");
                refused(asked.as_deref(), &e)
            }
            Err(e) => {
                tracing::error!(error = %e, "ElectLeaders task failed");
                refused(
                    asked.as_deref(),
                    &MetadataError::Internal("the election task failed".into()),
                )
            }
        };
        ResponseBody::ElectLeaders(response)
    }))
}

/// This node's replicas on an offline log dir (empty while every dir is online).
fn offline_replicas(broker: &Broker) -> OfflineReplicas {
    if broker.replicas.all_dirs_online() {
        return BTreeSet::new();
    }
    let me = broker.node_id();
    let image = broker.image();
    let mut out = BTreeSet::new();
    for t in image.topics.values() {
        for (p, info) in image.partitions(&t.name) {
            let tp = TopicPartition::new(t.name.clone(), p);
            if info.replicas.contains(&me) && !broker.replicas.is_partition_online(&tp) {
                out.insert((t.name.clone(), p, me));
            }
        }
    }
    out
}

fn topic_result(t: TopicElection) -> ReplicaElectionResult {
    ReplicaElectionResult {
        topic: t.topic,
        partition_result: t
            .partitions
            .into_iter()
            .map(|p| PartitionResult {
                partition_id: p.partition,
                error_code: p.error as i16,
                error_message: p.message,
            })
            .collect(),
    }
}

/// Kafka's `getErrorResponse`: the error at the top and on every requested partition, with
/// the message unless it is the code's default one (or the error is UNKNOWN_SERVER_ERROR).
fn refused(asked: Option<&[(String, Vec<i32>)]>, e: &MetadataError) -> ElectLeadersResponse {
    let code = e.error_code();
    let message = match e {
        MetadataError::InvalidRequest(m) => Some(m.clone()),
        _ => None,
    };
    ElectLeadersResponse {
        error_code: code as i16,
        replica_election_results: asked
            .unwrap_or_default()
            .iter()
            .map(|(topic, ps)| ReplicaElectionResult {
                topic: topic.clone(),
                partition_result: ps
                    .iter()
                    .map(|p| PartitionResult {
                        partition_id: *p,
                        error_code: code as i16,
                        error_message: message.clone(),
                    })
                    .collect(),
            })
            .collect(),
        ..ElectLeadersResponse::default()
    }
}

/// Kafka's `ElectLeadersRequest.getErrorResponse` for CLUSTER_AUTHORIZATION_FAILED.
fn unauthorized(req: &ElectLeadersRequest) -> ElectLeadersResponse {
    let code = ErrorCode::ClusterAuthorizationFailed as i16;
    ElectLeadersResponse {
        error_code: code,
        replica_election_results: req
            .topic_partitions
            .iter()
            .flatten()
            .map(|t| ReplicaElectionResult {
                topic: t.topic.clone(),
                partition_result: t
                    .partitions
                    .iter()
                    .map(|p| PartitionResult {
                        partition_id: *p,
                        error_code: code,
                        error_message: Some(DENIED.into()),
                    })
                    .collect(),
            })
            .collect(),
        ..ElectLeadersResponse::default()
    }
}

const DENIED: &str = "Cluster authorization failed.";
