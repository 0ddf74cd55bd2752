//! BrokerRegistration (62), v0-4, on controller listeners (issue 16): a broker (re-)registers
//! with the active controller at every start, with its listeners and a fresh incarnation id.
//!
//! Answered by the metadata store's Kafka rules (`controller/brokers.rs`): another cluster's id
//! -> INCONSISTENT_CLUSTER_ID, a live broker of the same id with another incarnation ->
//! DUPLICATE_BROKER_REGISTRATION; this node not the active controller -> NOT_CONTROLLER (the
//! broker looks for the leader again). The write blocks on the quorum, so it runs on the
//! blocking pool.
//! Authorization (issue 19): CLUSTER_ACTION on the cluster, else CLUSTER_AUTHORIZATION_FAILED.

use std::sync::Arc;

use skiff_auth::acl::AclOperation;
use skiff_metadata::BrokerEndpoint;
use skiff_protocol::{BrokerRegistrationRequest, BrokerRegistrationResponse, ResponseBody};
use skiff_types::ErrorCode;

use super::{Reply, RequestContext};

pub fn handle(ctx: &RequestContext<'_>, req: BrokerRegistrationRequest) -> Reply {
    if !ctx.authorize_cluster(AclOperation::ClusterAction) {
        return Reply::Now(ResponseBody::BrokerRegistration(
            BrokerRegistrationResponse {
                error_code: ErrorCode::ClusterAuthorizationFailed as i16,
                broker_epoch: -1,
                ..BrokerRegistrationResponse::default()
            },
        ));
    }
    let broker = Arc::clone(ctx.broker);
    Reply::Later(Box::pin(async move {
        let endpoints = req
            .listeners
            .iter()
            .map(|l| BrokerEndpoint {
                name: l.name.clone(),
                host: l.host.clone(),
                port: l.port,
                security_protocol: l.security_protocol,
            })
            .collect();
        let done = tokio::task::spawn_blocking(move || {
            broker.metadata.register_broker(
                &req.cluster_id,
                req.broker_id,
                req.incarnation_id,
                endpoints,
                req.rack.clone(),
            )
        })
        .await;
        let (code, epoch) = match done {
            Ok(Ok(epoch)) => (ErrorCode::None, epoch),
            Ok(Err(e)) => {
                tracing::info!(error = %e, "broker registration refused");
                (e.error_code(), -1)
            }
            Err(e) => {
                tracing::error!(error = %e, "broker registration task failed");
                (ErrorCode::UnknownServerError, -1)
            }
        };
        ResponseBody::BrokerRegistration(BrokerRegistrationResponse {
            error_code: code as i16,
            broker_epoch: epoch,
            ..BrokerRegistrationResponse::default()
        })
    }))
}
