//! WriteTxnMarkers (27), v1 (issue 18): the transaction coordinator of another broker asks
//! this partition leader to write COMMIT/ABORT control batches. Each partition's marker is
//! appended with acks=-1 (`crate::txn::markers::write_local`: the replica manager, or the
//! group coordinator for `__consumer_offsets`, which completes the transactional offsets);
//! the answer lists every requested partition with its code (NOT_LEADER_OR_FOLLOWER when
//! this node does not lead it, UNKNOWN_TOPIC_OR_PARTITION for an unknown topic).

use std::sync::Arc;

use skiff_protocol::{
    ResponseBody, WritableTxnMarkerPartitionResult, WritableTxnMarkerResult,
    WritableTxnMarkerTopicResult, WriteTxnMarkersRequest, WriteTxnMarkersResponse,
};
use skiff_txn::TxnResult;

use super::{Reply, RequestContext};
use crate::txn::markers::write_local;

pub fn handle(ctx: &RequestContext<'_>, req: WriteTxnMarkersRequest) -> Reply {
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
