//! ListClientMetricsResources (74), v0: the client-metrics config resources (KIP-714; Kafka
//! 4.1 renames the API ListConfigResources and adds v1, which filters by resource type).
//!
//! Skiff has no client-metrics subscriptions (KIP-714's resources are not stored), so the list
//! is always empty with no error, what Kafka answers with none configured.

use skiff_protocol::{
    ListClientMetricsResourcesRequest, ListClientMetricsResourcesResponse, ResponseBody,
};

use super::{Reply, RequestContext};

pub fn handle(_ctx: &RequestContext<'_>, _req: ListClientMetricsResourcesRequest) -> Reply {
    Reply::Now(ResponseBody::ListClientMetricsResources(
        ListClientMetricsResourcesResponse::default(),
    ))
}
