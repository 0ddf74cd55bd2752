//! ListPartitionReassignments (46), v0: the reassignments in progress (KIP-455).
//!
//! A single node never has one (the only valid target is the current replica set, see
//! `alter_partition_reassignments`), so the answer is always an empty topic list with no
//! error, for a null list (every partition) as for named partitions, known or not: Kafka's
//! controller lists only partitions that are reassigning and skips the others silently.

use skiff_protocol::{
    ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse, ResponseBody,
};

use super::{Reply, RequestContext};

pub fn handle(_ctx: &RequestContext<'_>, _req: ListPartitionReassignmentsRequest) -> Reply {
    Reply::Now(ResponseBody::ListPartitionReassignments(
        ListPartitionReassignmentsResponse {
            error_message: None,
            topics: Vec::new(),
            ..ListPartitionReassignmentsResponse::default()
        },
    ))
}
