//! BrokerHeartbeat (63), v0-1, on controller listeners (issue 16): a registered broker's
//! lease, answered by the active controller's session tracker (`controller/brokers.rs`:
//! unfenced once caught up with the metadata log, fenced on request or when its session
//! expires, controlled shutdown). A stale epoch -> STALE_BROKER_EPOCH, an unknown broker ->
//! BROKER_ID_NOT_REGISTERED, another node leading -> NOT_CONTROLLER.
//! Authorization (issue 19): CLUSTER_ACTION on the cluster, else CLUSTER_AUTHORIZATION_FAILED.

use std::sync::Arc;

use skiff_auth::acl::AclOperation;
use skiff_metadata::Heartbeat;
use skiff_protocol::{BrokerHeartbeatRequest, BrokerHeartbeatResponse, ResponseBody};
use skiff_types::ErrorCode;

use super::{Reply, RequestContext};

pub fn handle(ctx: &RequestContext<'_>, req: BrokerHeartbeatRequest) -> Reply {
    if !ctx.authorize_cluster(AclOperation::ClusterAction) {
        return Reply::Now(ResponseBody::BrokerHeartbeat(BrokerHeartbeatResponse {
            error_code: ErrorCode::ClusterAuthorizationFailed as i16,
            ..BrokerHeartbeatResponse::default()
        }));
    }
    let broker = Arc::clone(ctx.broker);
    Reply::Later(Box::pin(async move {
        let hb = Heartbeat {
            broker_id: req.broker_id,
            broker_epoch: req.broker_epoch,
            current_metadata_offset: req.current_metadata_offset,
            want_fence: req.want_fence,
            want_shut_down: req.want_shut_down,
        };
        let done = tokio::task::spawn_blocking(move || broker.metadata.broker_heartbeat(&hb)).await;
        let response = match done {
            Ok(Ok(r)) => BrokerHeartbeatResponse {
                error_code: 0,
                is_caught_up: r.is_caught_up,
                is_fenced: r.is_fenced,
                should_shut_down: r.should_shut_down,
                ..BrokerHeartbeatResponse::default()
            },
            Ok(Err(e)) => BrokerHeartbeatResponse {
                error_code: e.error_code() as i16,
                is_fenced: true,
                ..BrokerHeartbeatResponse::default()
            },
            Err(e) => {
                tracing::error!(error = %e, "broker heartbeat task failed");
                BrokerHeartbeatResponse {
                    error_code: ErrorCode::UnknownServerError as i16,
                    is_fenced: true,
                    ..BrokerHeartbeatResponse::default()
                }
            }
        };
        ResponseBody::BrokerHeartbeat(response)
    }))
}
