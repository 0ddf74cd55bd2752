//! ListConfigResources (74; named ListClientMetricsResources in the shared definitions, KIP-714),
//! v0-1: the config resources a DescribeConfigs could be asked about (KIP-1142).
//!
//! Kafka 4.1's semantics, checked against Apache Kafka by the Java client's differential test:
//! v0 lists client-metrics resources only (it has no types); v1 lists the requested types, an
//! empty list meaning every type v1 supports (topic 2, broker 4, broker logger 8, client
//! metrics 16, group 32), and any other type refuses the whole request with
//! UNSUPPORTED_VERSION. Topics are every topic in the metadata image (internal ones too),
//! brokers and broker loggers the unfenced registered brokers (by id), groups those with
//! dynamic group configs. Skiff stores no client-metrics subscriptions, so that type is always
//! empty, what Kafka answers with none configured.
//!
//! One deliberate difference: a group whose last config was deleted is no longer listed here,
//! as in Kafka's metadata image; a running Kafka broker keeps listing it (its group-config
//! cache keeps the empty entry) until it restarts.
//! Authorization (issue 19): DESCRIBE_CONFIGS on the cluster, else CLUSTER_AUTHORIZATION_FAILED
//! top-level.

use skiff_auth::acl::AclOperation;
use skiff_protocol::{
    ClientMetricsResource, ListClientMetricsResourcesRequest, ListClientMetricsResourcesResponse,
    ResponseBody,
};
use skiff_types::ErrorCode;

use super::{Reply, RequestContext};

/// Config resource types (Kafka's `ConfigResource.Type` ids).
const TOPIC: i8 = 2;
const BROKER: i8 = 4;
const BROKER_LOGGER: i8 = 8;
const CLIENT_METRICS: i8 = 16;
const GROUP: i8 = 32;

/// The types v1 lists; v0 knows client metrics only.
const V1_TYPES: &[i8] = &[GROUP, CLIENT_METRICS, BROKER_LOGGER, BROKER, TOPIC];

pub fn handle(ctx: &RequestContext<'_>, req: ListClientMetricsResourcesRequest) -> Reply {
    if !ctx.authorize_cluster(AclOperation::DescribeConfigs) {
        return Reply::Now(ResponseBody::ListClientMetricsResources(
            ListClientMetricsResourcesResponse {
                error_code: ErrorCode::ClusterAuthorizationFailed.code(),
                ..ListClientMetricsResourcesResponse::default()
            },
        ));
    }
    let supported: &[i8] = if ctx.api_version == 0 {
        &[CLIENT_METRICS]
    } else {
        V1_TYPES
    };
    let wanted: Vec<i8> = if req.resource_types.is_empty() {
        supported.to_vec()
    } else {
        req.resource_types.clone()
    };
    if wanted.iter().any(|t| !supported.contains(t)) {
        return Reply::Now(ResponseBody::ListClientMetricsResources(
            ListClientMetricsResourcesResponse {
                error_code: ErrorCode::UnsupportedVersion.code(),
                ..ListClientMetricsResourcesResponse::default()
            },
        ));
    }
    let image = ctx.broker.image();
    let mut out = Vec::new();
    let mut add = |name: String, ty: i8| {
        out.push(ClientMetricsResource {
            name,
            resource_type: ty,
        });
    };
    // Kafka's order: groups, client metrics, broker loggers, brokers, topics.
    for &ty in V1_TYPES.iter().filter(|t| wanted.contains(t)) {
        match ty {
            GROUP => {
                for id in image.group_configs.keys() {
                    add(id.clone(), GROUP);
                }
            }
            BROKER_LOGGER | BROKER => {
                for b in image.brokers().filter(|b| !b.fenced) {
                    add(b.id.to_string(), ty);
                }
            }
            TOPIC => {
                for name in image.topics.keys() {
                    add(name.clone(), TOPIC);
                }
            }
            // CLIENT_METRICS: no subscriptions are stored.
            _ => {}
        }
    }
    Reply::Now(ResponseBody::ListClientMetricsResources(
        ListClientMetricsResourcesResponse {
            client_metrics_resources: out,
            ..ListClientMetricsResourcesResponse::default()
        },
    ))
}
