//! DescribeClientQuotas (API 48, issue 19): Skiff enforces no client quotas, so no entity has
//! one and the answer is always an empty list, after Kafka's validation and authorization.
//! `kafka-configs --describe --entity-type users` asks this beside the SCRAM credentials.
//!
//! Validation (Kafka's `ClientQuotaControlManager` / `ClientQuotaFilter`): an entity type
//! named twice, an unknown match type, or a name given with a non-exact match answers
//! INVALID_REQUEST; DESCRIBE_CONFIGS on the cluster is required (CLUSTER_AUTHORIZATION_FAILED).

use skiff_auth::acl::AclOperation;
use skiff_protocol::{DescribeClientQuotasRequest, DescribeClientQuotasResponse, ResponseBody};
use skiff_types::ErrorCode;

use super::{Reply, RequestContext};

/// Kafka's match types: a name, the default entity, any entity.
const MATCH_EXACT: i8 = 0;
const MATCH_DEFAULT: i8 = 1;
const MATCH_ANY: i8 = 2;

fn invalid(req: &DescribeClientQuotasRequest) -> Option<String> {
    let mut seen = std::collections::HashSet::new();
    for c in &req.components {
        if !seen.insert(c.entity_type.as_str()) {
            return Some(format!("Duplicate entity type {}", c.entity_type));
        }
        match c.match_type {
            MATCH_EXACT if c.match_.is_none() => {
                return Some(format!(
                    "Exact match for entity type {} requires a name",
                    c.entity_type
                ));
            }
            MATCH_DEFAULT | MATCH_ANY if c.match_.is_some() => {
                return Some(format!(
                    "A match name is only valid with an exact match ({})",
                    c.entity_type
                ));
            }
            MATCH_EXACT | MATCH_DEFAULT | MATCH_ANY => {}
            other => return Some(format!("Unknown match type {other}")),
        }
    }
    None
}

pub fn handle(ctx: &RequestContext<'_>, req: DescribeClientQuotasRequest) -> Reply {
    let (error, message) = if !ctx.authorize_cluster(AclOperation::DescribeConfigs) {
        (ErrorCode::ClusterAuthorizationFailed, None)
    } else if let Some(m) = invalid(&req) {
        (ErrorCode::InvalidRequest, Some(m))
    } else {
        (ErrorCode::None, None)
    };
    let ok = error == ErrorCode::None;
    Reply::Now(ResponseBody::DescribeClientQuotas(
        DescribeClientQuotasResponse {
            throttle_time_ms: 0,
            error_code: error as i16,
            error_message: message,
            entries: ok.then(Vec::new),
        },
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use skiff_protocol::ComponentData;

    use super::*;

    fn req(components: Vec<(&str, i8, Option<&str>)>) -> DescribeClientQuotasRequest {
        DescribeClientQuotasRequest {
            components: components
                .into_iter()
                .map(|(t, m, n)| ComponentData {
                    entity_type: t.into(),
                    match_type: m,
                    match_: n.map(str::to_string),
                })
                .collect(),
            strict: false,
        }
    }

    #[test]
    fn validation_table() {
        assert_eq!(invalid(&req(vec![("user", 0, Some("alice"))])), None);
        assert_eq!(
            invalid(&req(vec![("user", 2, None), ("client-id", 1, None)])),
            None
        );
        assert!(invalid(&req(vec![("user", 0, None)])).is_some());
        assert!(invalid(&req(vec![("user", 1, Some("a"))])).is_some());
        assert!(invalid(&req(vec![("user", 7, None)])).is_some());
        assert!(invalid(&req(vec![("user", 2, None), ("user", 2, None)])).is_some());
    }
}
