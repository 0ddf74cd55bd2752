//! ApiVersions (18), v0-4: the APIs and version ranges this broker serves ([`super::APIS`]).
//!
//! A request newer than v4 never reaches this handler: the connection answers it with
//! [`unsupported_version_response`] encoded as v0 (error UNSUPPORTED_VERSION plus our ranges,
//! so the client retries with a version we know) and keeps the connection open. Tagged fields
//! (features) stay empty: old librdkafka mis-skips non-empty tag sections.

use skiff_protocol::{ApiVersion, ApiVersionsRequest, ApiVersionsResponse, ResponseBody};
use skiff_types::ErrorCode;

use super::{APIS, CONTROLLER_APIS, Reply, RequestContext, advertised_on};

pub fn handle(ctx: &RequestContext<'_>, req: ApiVersionsRequest) -> Reply {
    if ctx.api_version >= 3 {
        tracing::debug!(
            client_software = %req.client_software_name,
            client_version = %req.client_software_version,
            "client connected"
        );
        ctx.broker
            .metrics
            .client_software(&req.client_software_name, &req.client_software_version);
    }
    Reply::Now(ResponseBody::ApiVersions(response_on(
        ErrorCode::None,
        ctx.listener.controller,
    )))
}

/// The answer to an ApiVersions request of a version newer than ours (encode it as v0).
pub fn unsupported_version_response() -> ResponseBody {
    ResponseBody::ApiVersions(response_on(ErrorCode::UnsupportedVersion, false))
}

fn response_on(error: ErrorCode, controller: bool) -> ApiVersionsResponse {
    let api_keys = APIS
        .iter()
        .chain(CONTROLLER_APIS.iter().filter(|_| controller))
        .filter_map(|k| {
            advertised_on(*k, controller).map(|(min, max)| ApiVersion {
                api_key: *k as i16,
                min_version: min,
                max_version: max,
            })
        })
        .collect();
    ApiVersionsResponse {
        error_code: error as i16,
        api_keys,
        ..ApiVersionsResponse::default()
    }
}
