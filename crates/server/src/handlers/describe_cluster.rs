//! DescribeCluster (60), v0-1: the cluster id, the controller and the brokers.
//!
//! A single node is the whole cluster: one broker (this node, at the advertised address of the
//! listener the request came through, no rack) and the controller id is this node's (a KRaft
//! broker answers a live broker id there). v1's `endpoint_type` must be BROKER (1): CONTROLLER
//! (2) -> MISMATCHED_ENDPOINT_TYPE, anything else -> UNSUPPORTED_ENDPOINT_TYPE (both
//! INVALID_REQUEST at v0), with Kafka's messages. Cluster authorized operations, when asked,
//! are every CLUSTER operation (no authorizer yet), else Kafka's "not requested" sentinel.

use skiff_protocol::{
    DescribeClusterBroker, DescribeClusterRequest, DescribeClusterResponse, ResponseBody,
};
use skiff_types::ErrorCode;

use super::{Reply, RequestContext};

const ENDPOINT_BROKER: i8 = 1;
const ENDPOINT_CONTROLLER: i8 = 2;
/// Kafka's "authorized operations not requested" sentinel.
const OPS_NOT_REQUESTED: i32 = i32::MIN;
/// CLUSTER operations when no authorizer is configured: CREATE(5) ALTER(7) DESCRIBE(8)
/// CLUSTER_ACTION(9) DESCRIBE_CONFIGS(10) ALTER_CONFIGS(11) IDEMPOTENT_WRITE(12).
pub(crate) const ALL_CLUSTER_OPS: i32 =
    (1 << 5) | (1 << 7) | (1 << 8) | (1 << 9) | (1 << 10) | (1 << 11) | (1 << 12);

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
    match req.endpoint_type {
        ENDPOINT_BROKER => {}
        ENDPOINT_CONTROLLER => {
            return refused(
                ErrorCode::MismatchedEndpointType,
                "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER".into(),
            );
        }
        other => {
            return refused(
                ErrorCode::UnsupportedEndpointType,
                format!("Unsupported endpoint type {other}"),
            );
        }
    }
    let node = broker.node_id();
    Reply::Now(ResponseBody::DescribeCluster(DescribeClusterResponse {
        error_code: 0,
        error_message: None,
        endpoint_type: ENDPOINT_BROKER,
        cluster_id: broker.cluster_id().to_string(),
        controller_id: node,
        brokers: vec![DescribeClusterBroker {
            broker_id: node,
            host: ctx.listener.advertised_host.clone(),
            port: i32::from(ctx.listener.advertised_port),
            rack: None,
        }],
        cluster_authorized_operations: if req.include_cluster_authorized_operations {
            ALL_CLUSTER_OPS
        } else {
            OPS_NOT_REQUESTED
        },
        ..DescribeClusterResponse::default()
    }))
}
