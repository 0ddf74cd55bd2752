//! AlterPartitionReassignments (45), v0-1: move partitions to new replica sets (KIP-455; v1's
//! `AllowReplicationFactorChange`, KIP-860, refuses a target of another size and is echoed).
//!
//! Kafka's controller semantics (`ReplicationControlManager.alterPartitionReassignments`),
//! per partition, with its messages: an unknown topic or partition is
//! UNKNOWN_TOPIC_OR_PARTITION; a null replica list cancels, and with no reassignment in
//! progress answers NO_REASSIGNMENT_IN_PROGRESS; a target list is checked as a manual
//! assignment (not empty, every broker registered, none twice: INVALID_REPLICA_ASSIGNMENT).
//! On a single node the only valid target is this node, which is the current replica set: the
//! change is a no-op answered NONE, as Kafka answers a reassignment to the current replicas.
//! The cluster issues turn a real target into adding / removing replicas via the controller.
//! Authorization (issue 19): ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED top-level
//! and on every partition (Kafka's `getErrorResponse`).

use std::collections::BTreeSet;

use skiff_auth::acl::AclOperation;
use skiff_protocol::{
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse,
    ReassignablePartitionResponse, ReassignableTopicResponse, ResponseBody,
};
use skiff_types::ErrorCode;

use super::{Reply, RequestContext};

pub fn handle(ctx: &RequestContext<'_>, req: AlterPartitionReassignmentsRequest) -> Reply {
    if !ctx.authorize_cluster(AclOperation::Alter) {
        let code = ErrorCode::ClusterAuthorizationFailed as i16;
        let message = || Some("Cluster authorization failed.".to_string());
        return Reply::Now(ResponseBody::AlterPartitionReassignments(
            AlterPartitionReassignmentsResponse {
                error_code: code,
                error_message: message(),
                responses: req
                    .topics
                    .iter()
                    .map(|t| ReassignableTopicResponse {
                        name: t.name.clone(),
                        partitions: t
                            .partitions
                            .iter()
                            .map(|p| ReassignablePartitionResponse {
                                partition_index: p.partition_index,
                                error_code: code,
                                error_message: message(),
                            })
                            .collect(),
                    })
                    .collect(),
                ..AlterPartitionReassignmentsResponse::default()
            },
        ));
    }
    let broker = ctx.broker;
    let image = broker.image();
    let registered: BTreeSet<i32> = [broker.node_id()].into();
    let responses = req
        .topics
        .iter()
        .map(|t| ReassignableTopicResponse {
            name: t.name.clone(),
            partitions: t
                .partitions
                .iter()
                .map(|p| {
                    let partitions = image.topic(&t.name).map(|info| info.partitions);
                    let outcome = match partitions {
                        None => Err((
                            ErrorCode::UnknownTopicOrPartition,
                            format!("Unable to find a topic named {}.", t.name),
                        )),
                        Some(n) if !(0..n).contains(&p.partition_index) => Err((
                            ErrorCode::UnknownTopicOrPartition,
                            format!("Unable to find partition {}:{}.", t.name, p.partition_index),
                        )),
                        Some(_) => match &p.replicas {
                            // No reassignment is ever in progress on one node.
                            None => Err((
                                ErrorCode::NoReassignmentInProgress,
                                "No partition reassignment is in progress.".to_string(),
                            )),
                            Some(target) => check_assignment(target, &registered).and_then(|()| {
                                let current = image
                                    .partition(&t.name, p.partition_index)
                                    .map_or(0, |info| info.replicas.len());
                                check_replication_factor(
                                    current,
                                    target.len(),
                                    req.allow_replication_factor_change,
                                )
                            }),
                        },
                    };
                    let (code, message) = match outcome {
                        Ok(()) => (ErrorCode::None, None),
                        Err((code, message)) => (code, Some(message)),
                    };
                    ReassignablePartitionResponse {
                        partition_index: p.partition_index,
                        error_code: code as i16,
                        error_message: message,
                    }
                })
                .collect(),
        })
        .collect();
    Reply::Now(ResponseBody::AlterPartitionReassignments(
        AlterPartitionReassignmentsResponse {
            allow_replication_factor_change: req.allow_replication_factor_change,
            error_message: None,
            responses,
            ..AlterPartitionReassignmentsResponse::default()
        },
    ))
}

/// KIP-860 (v1): with `allow` false, a target whose size differs from the current replica
/// set's is INVALID_REPLICATION_FACTOR (never on one node, where the only valid target is the
/// current one-replica set).
fn check_replication_factor(
    current: usize,
    target: usize,
    allow: bool,
) -> Result<(), (ErrorCode, String)> {
    if allow || current == target {
        return Ok(());
    }
    Err((
        ErrorCode::InvalidReplicationFactor,
        format!("The replication factor is changed from {current} to {target}"),
    ))
}

/// Kafka's `validateManualPartitionAssignment` (without a replication factor to match).
fn check_assignment(target: &[i32], registered: &BTreeSet<i32>) -> Result<(), (ErrorCode, String)> {
    let invalid = |m: String| Err((ErrorCode::InvalidReplicaAssignment, m));
    if target.is_empty() {
        return invalid("The manual partition assignment includes an empty replica list.".into());
    }
    let mut sorted = target.to_vec();
    sorted.sort_unstable();
    let mut previous = None;
    for id in sorted {
        if !registered.contains(&id) {
            return invalid(format!(
                "The manual partition assignment includes broker {id}, but no such broker is registered."
            ));
        }
        if previous == Some(id) {
            return invalid(format!(
                "The manual partition assignment includes the broker {id} more than once."
            ));
        }
        previous = Some(id);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replication_factor_changes_are_refused_only_when_asked() {
        // (current, target, allow) -> refused?
        let cases = [
            (1, 1, false, false),
            (1, 2, false, true),
            (3, 1, false, true),
            (1, 2, true, false),
            (3, 3, true, false),
        ];
        for (current, target, allow, refused) in cases {
            let got = check_replication_factor(current, target, allow);
            assert_eq!(got.is_err(), refused, "{current} -> {target} allow={allow}");
            if let Err((code, message)) = got {
                assert_eq!(code, ErrorCode::InvalidReplicationFactor);
                assert!(message.contains(&format!("from {current} to {target}")));
            }
        }
    }
}
