//! WriteTxnMarkers (27), v1 (issue 18): the transaction coordinator of another broker asks
//! this partition leader to write COMMIT/ABORT control batches. Each partition's marker is
//! appended with acks=-1 (`crate::txn::markers::write_local`: the replica manager, or the
//! group coordinator for `__consumer_offsets`, which completes the transactional offsets);
//! the answer lists every requested partition with its code (NOT_LEADER_OR_FOLLOWER when
//! this node does not lead it, UNKNOWN_TOPIC_OR_PARTITION for an unknown topic).
//! Authorization (issue 19, Kafka's order): ALTER on the cluster, else CLUSTER_ACTION; neither
//! -> CLUSTER_AUTHORIZATION_FAILED on every requested partition, nothing written.

use std::sync::Arc;

use skiff_auth::acl::AclOperation;
use skiff_protocol::{
    ResponseBody, WritableTxnMarkerPartitionResult, WritableTxnMarkerResult,
    WritableTxnMarkerTopicResult, WriteTxnMarkersRequest, WriteTxnMarkersResponse,
};
use skiff_txn::TxnResult;
use skiff_types::ErrorCode;

use super::{Reply, RequestContext};
use crate::txn::markers::write_local;

pub fn handle(ctx: &RequestContext<'_>, req: WriteTxnMarkersRequest) -> Reply {
    if !ctx.authorize_cluster(AclOperation::Alter)
        && !ctx.authorize_cluster(AclOperation::ClusterAction)
    {
        return Reply::Now(ResponseBody::WriteTxnMarkers(refuse_all(
            &req,
            ErrorCode::ClusterAuthorizationFailed,
        )));
    }
    let broker = Arc::clone(ctx.broker);
    Reply::Later(Box::pin(async move {
        let mut markers = Vec::with_capacity(req.markers.len());
        for m in req.markers {
            let result = if m.transaction_result {
                TxnResult::Commit
            } else {
                TxnResult::Abort
            };
            let mut topics = Vec::with_capacity(m.topics.len());
            for t in m.topics {
                let mut partitions = Vec::with_capacity(t.partition_indexes.len());
                for p in t.partition_indexes {
                    let code = write_local(
                        &broker,
                        &t.name,
                        p,
                        m.producer_id,
                        m.producer_epoch,
                        m.coordinator_epoch,
                        result,
                    )
                    .await;
                    partitions.push(WritableTxnMarkerPartitionResult {
                        partition_index: p,
                        error_code: code.code(),
                    });
                }
                topics.push(WritableTxnMarkerTopicResult {
                    name: t.name,
                    partitions,
                });
            }
            markers.push(WritableTxnMarkerResult {
                producer_id: m.producer_id,
                topics,
            });
        }
        ResponseBody::WriteTxnMarkers(WriteTxnMarkersResponse { markers })
    }))
}

/// Kafka's `WriteTxnMarkersRequest.getErrorResponse`: `code` on every requested partition.
fn refuse_all(req: &WriteTxnMarkersRequest, code: ErrorCode) -> WriteTxnMarkersResponse {
    WriteTxnMarkersResponse {
        markers: req
            .markers
            .iter()
            .map(|m| WritableTxnMarkerResult {
                producer_id: m.producer_id,
                topics: m
                    .topics
                    .iter()
                    .map(|t| WritableTxnMarkerTopicResult {
                        name: t.name.clone(),
                        partitions: t
                            .partition_indexes
                            .iter()
                            .map(|p| WritableTxnMarkerPartitionResult {
                                partition_index: *p,
                                error_code: code.code(),
                            })
                            .collect(),
                    })
                    .collect(),
            })
            .collect(),
    }
}
