//! ListPartitionReassignments (46), v0: the reassignments in progress (KIP-455).
//!
//! A single node never has one (the only valid target is the current replica set, see
//! `alter_partition_reassignments`), so the answer is always an empty topic list with no
//! error, for a null list (every partition) as for named partitions, known or not: Kafka's
//! controller lists only partitions that are reassigning and skips the others silently.
//! Authorization (issue 19): DESCRIBE on the cluster, else CLUSTER_AUTHORIZATION_FAILED top-level
//! (the named partitions echoed without replicas, Kafka's `getErrorResponse`).

use skiff_auth::acl::AclOperation;
use skiff_protocol::{
    ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse,
    OngoingPartitionReassignment, OngoingTopicReassignment, ResponseBody,
};
use skiff_types::ErrorCode;

use super::{Reply, RequestContext};

pub fn handle(ctx: &RequestContext<'_>, req: ListPartitionReassignmentsRequest) -> Reply {
    if !ctx.authorize_cluster(AclOperation::Describe) {
        return Reply::Now(ResponseBody::ListPartitionReassignments(
            ListPartitionReassignmentsResponse {
                error_code: ErrorCode::ClusterAuthorizationFailed as i16,
                error_message: Some("Cluster authorization failed.".into()),
                topics: req
                    .topics
                    .iter()
                    .flatten()
                    .map(|t| OngoingTopicReassignment {
                        name: t.name.clone(),
                        partitions: t
                            .partition_indexes
                            .iter()
                            .map(|p| OngoingPartitionReassignment {
                                partition_index: *p,
                                ..OngoingPartitionReassignment::default()
                            })
                            .collect(),
                    })
                    .collect(),
                ..ListPartitionReassignmentsResponse::default()
            },
        ));
    }
    Reply::Now(ResponseBody::ListPartitionReassignments(
        ListPartitionReassignmentsResponse {
            error_message: None,
            topics: Vec::new(),
            ..ListPartitionReassignmentsResponse::default()
        },
    ))
}
