//! DescribeCluster (60), v0-1: the cluster id, the controller and the brokers.
//!
//! A single node is the whole cluster: one broker (this node, at the advertised address of the
//! listener the request came through, no rack) and the controller id is this node's (a KRaft
//! broker answers a live broker id there). v1's `endpoint_type` must match the listener
//! (KIP-919): BROKER (1) on a broker listener; CONTROLLER (2) on a KRaft controller listener,
//! which answers with the controller (this node at its `controller.quorum.voters` address);
//! the other type -> MISMATCHED_ENDPOINT_TYPE, anything else -> UNSUPPORTED_ENDPOINT_TYPE
//! (both INVALID_REQUEST at v0), with Kafka's messages. Authorization (issue 19, Kafka's
//! `computeDescribeClusterResponse`): nothing is refused; cluster authorized operations, when
//! asked, are Kafka's bitfield with DESCRIBE on the cluster, else 0; not asked: Kafka's "not
//! requested" sentinel.

use skiff_protocol::{
    DescribeClusterBroker, DescribeClusterRequest, DescribeClusterResponse, ResponseBody,
};
use skiff_types::ErrorCode;

use skiff_auth::acl::{AclOperation, CLUSTER_RESOURCE_NAME, ResourceType};

use super::authz_ops::{Checker, OPS_NOT_REQUESTED};
use super::{Reply, RequestContext};

const ENDPOINT_BROKER: i8 = 1;
const ENDPOINT_CONTROLLER: i8 = 2;

pub fn handle(ctx: &RequestContext<'_>, req: DescribeClusterRequest) -> Reply {
    let broker = ctx.broker;
    let v0 = ctx.api_version == 0;
    let refused = |code: ErrorCode, message: String| {
        Reply::Now(ResponseBody::DescribeCluster(DescribeClusterResponse {
            error_code: if v0 { ErrorCode::InvalidRequest } else { code } as i16,
            error_message: Some(message),
            endpoint_type: ENDPOINT_BROKER,
            cluster_id: broker.cluster_id().to_string(),
            controller_id: -1,
            brokers: Vec::new(),
            ..DescribeClusterResponse::default()
        }))
    };
    let here = if ctx.listener.controller {
        ENDPOINT_CONTROLLER
    } else {
        ENDPOINT_BROKER
    };
    match req.endpoint_type {
        ENDPOINT_BROKER | ENDPOINT_CONTROLLER if req.endpoint_type != here => {
            let (sent, wanted) = if here == ENDPOINT_BROKER {
                ("BROKER", "CONTROLLER")
            } else {
                ("CONTROLLER", "BROKER")
            };
            return refused(
                ErrorCode::MismatchedEndpointType,
                format!(
                    "The request was sent to an endpoint of type {sent}, but we wanted an endpoint of type {wanted}"
                ),
            );
        }
        ENDPOINT_BROKER | ENDPOINT_CONTROLLER => {}
        other => {
            return refused(
                ErrorCode::UnsupportedEndpointType,
                format!("Unsupported endpoint type {other}"),
            );
        }
    }
    // A controller endpoint lists the controllers (the voters, at their controller.quorum.voters
    // addresses); a broker endpoint the brokers, at their endpoints of this listener.
    let (brokers, controller_id) =
        match (&broker.quorum, &broker.settings.quorum_voter_endpoint, here) {
            (Some(q), _, ENDPOINT_CONTROLLER) => (
                q.voter_ids()
                    .into_iter()
                    .filter_map(|id| q.voter_endpoint(id).map(|(h, p)| (id, h, p, None)))
                    .collect(),
                q.leader().unwrap_or(-1),
            ),
            (None, Some((_, host, port)), ENDPOINT_CONTROLLER) => (
                vec![(broker.node_id(), host.clone(), *port, None)],
                broker.node_id(),
            ),
            _ => broker.cluster_view(ctx.listener),
        };
    Reply::Now(ResponseBody::DescribeCluster(DescribeClusterResponse {
        error_code: 0,
        error_message: None,
        endpoint_type: here,
        cluster_id: broker.cluster_id().to_string(),
        controller_id,
        brokers: brokers
            .into_iter()
            .map(|(broker_id, host, port, rack)| DescribeClusterBroker {
                broker_id,
                host,
                port: i32::from(port),
                rack,
            })
            .collect(),
        cluster_authorized_operations: if req.include_cluster_authorized_operations {
            let authz = Checker::new(ctx);
            if authz.cluster(AclOperation::Describe) {
                authz.authorized_operations(ResourceType::Cluster, CLUSTER_RESOURCE_NAME)
            } else {
                0
            }
        } else {
            OPS_NOT_REQUESTED
        },
        ..DescribeClusterResponse::default()
    }))
}
