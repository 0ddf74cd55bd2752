//! AllocateProducerIds (67), v0, on controller listeners (issue 16): the next block of
//! producer ids for a registered broker at its current epoch, committed as a
//! `ProducerIdsRecord` before it is answered (`controller/mod.rs`). A stale or unknown
//! broker epoch -> STALE_BROKER_EPOCH; this node not the active controller -> NOT_CONTROLLER.
//! Authorization (issue 19): CLUSTER_ACTION on the cluster, else CLUSTER_AUTHORIZATION_FAILED.

use std::sync::Arc;

use skiff_auth::acl::AclOperation;
use skiff_protocol::{AllocateProducerIdsRequest, AllocateProducerIdsResponse, ResponseBody};
use skiff_types::ErrorCode;

use super::{Reply, RequestContext};

pub fn handle(ctx: &RequestContext<'_>, req: AllocateProducerIdsRequest) -> Reply {
    if !ctx.authorize_cluster(AclOperation::ClusterAction) {
        // Kafka's getErrorResponse: the code alone (start 0, length 0).
        return Reply::Now(ResponseBody::AllocateProducerIds(
            AllocateProducerIdsResponse {
                error_code: ErrorCode::ClusterAuthorizationFailed as i16,
                ..AllocateProducerIdsResponse::default()
            },
        ));
    }
    let broker = Arc::clone(ctx.broker);
    Reply::Later(Box::pin(async move {
        let done = tokio::task::spawn_blocking(move || {
            broker
                .metadata
                .allocate_producer_id_block(req.broker_id, req.broker_epoch)
        })
        .await;
        let response = match done {
            Ok(Ok(block)) => AllocateProducerIdsResponse {
                error_code: 0,
                producer_id_start: block.start,
                producer_id_len: i32::try_from(block.end - block.start).unwrap_or(i32::MAX),
                ..AllocateProducerIdsResponse::default()
            },
            Ok(Err(e)) => {
                tracing::info!(error = %e, "AllocateProducerIds refused");
                refused(e.error_code())
            }
            Err(e) => {
                tracing::error!(error = %e, "AllocateProducerIds task failed");
                refused(ErrorCode::UnknownServerError)
            }
        };
        ResponseBody::AllocateProducerIds(response)
    }))
}

fn refused(code: ErrorCode) -> AllocateProducerIdsResponse {
    AllocateProducerIdsResponse {
        error_code: code as i16,
        producer_id_start: -1,
        producer_id_len: 0,
        ..AllocateProducerIdsResponse::default()
    }
}
