//! DescribeAcls (29), v1-3 (issue 19): answered from this node's metadata image.
//!
//! Kafka's order (`AclApis.handleDescribeAcls`, `DescribeAclsRequest`): a filter with an
//! UNKNOWN (code 0) part fails the request's parse (connection closed); DESCRIBE on the
//! cluster, else top-level CLUSTER_AUTHORIZATION_FAILED; no authorizer: top-level
//! SECURITY_DISABLED "No Authorizer is configured on the broker"; otherwise every ACL the
//! filter matches (Kafka's `AclBindingFilter.matches`: `MATCH` finds the literal name, a
//! literal `*` and every prefix of the name), grouped by resource pattern. Kafka groups in
//! a hash map; here patterns come in (resource type, name, pattern type) order and ACLs in
//! (principal, host, operation, permission) order, so answers are deterministic.

use std::collections::BTreeMap;

use skiff_auth::acl::{AclOperation, AclPermission, PatternType, ResourceType};
use skiff_metadata::AclFilter;
use skiff_protocol::{
    AclDescription, DescribeAclsRequest, DescribeAclsResource, DescribeAclsResponse, ResponseBody,
};
use skiff_types::ErrorCode;

use super::create_acls::{NOT_AUTHORIZED, any_unknown};
use super::{Reply, RequestContext};

/// Kafka's `AclBindingFilter` from a request's filter fields.
pub(crate) fn filter_from_wire(
    resource_type: i8,
    resource_name: Option<&str>,
    pattern_type: i8,
    principal: Option<&str>,
    host: Option<&str>,
    operation: i8,
    permission: i8,
) -> AclFilter {
    AclFilter {
        resource_type: ResourceType::from_code(resource_type),
        resource_name: resource_name.map(str::to_string),
        pattern_type: PatternType::from_code(pattern_type),
        principal: principal.map(str::to_string),
        host: host.map(str::to_string),
        operation: AclOperation::from_code(operation),
        permission: AclPermission::from_code(permission),
    }
}

fn refused(code: ErrorCode, message: &str) -> Reply {
    Reply::Now(ResponseBody::DescribeAcls(DescribeAclsResponse {
        error_code: code as i16,
        error_message: Some(message.to_string()),
        ..DescribeAclsResponse::default()
    }))
}

pub fn handle(ctx: &RequestContext<'_>, req: DescribeAclsRequest) -> Reply {
    if any_unknown(&[
        req.resource_type_filter,
        req.pattern_type_filter,
        req.operation,
        req.permission_type,
    ]) {
        return Reply::Close("DescribeAcls with UNKNOWN elements".into());
    }
    if !ctx.authorize_cluster(AclOperation::Describe) {
        return refused(ErrorCode::ClusterAuthorizationFailed, NOT_AUTHORIZED);
    }
    if !ctx.broker.authz.is_enabled() {
        return refused(
            ErrorCode::SecurityDisabled,
            "No Authorizer is configured on the broker",
        );
    }
    let filter = filter_from_wire(
        req.resource_type_filter,
        req.resource_name_filter.as_deref(),
        req.pattern_type_filter,
        req.principal_filter.as_deref(),
        req.host_filter.as_deref(),
        req.operation,
        req.permission_type,
    );
    let image = ctx.broker.image();
    let mut by_pattern: BTreeMap<(i8, &str, i8), Vec<AclDescription>> = BTreeMap::new();
    for b in image.acls().values().filter(|b| filter.matches(b)) {
        let key = (
            b.resource_type.code(),
            b.resource_name.as_str(),
            b.pattern_type.code(),
        );
        by_pattern.entry(key).or_default().push(AclDescription {
            principal: b.principal.clone(),
            host: b.host.clone(),
            operation: b.operation.code(),
            permission_type: b.permission.code(),
        });
    }
    let resources = by_pattern
        .into_iter()
        .map(|((resource_type, name, pattern_type), mut acls)| {
            acls.sort_by(|a, b| {
                (&a.principal, &a.host, a.operation, a.permission_type).cmp(&(
                    &b.principal,
                    &b.host,
                    b.operation,
                    b.permission_type,
                ))
            });
            DescribeAclsResource {
                resource_type,
                resource_name: name.to_string(),
                pattern_type,
                acls,
            }
        })
        .collect();
    // Kafka leaves the top-level message at its default ("").
    Reply::Now(ResponseBody::DescribeAcls(DescribeAclsResponse {
        resources,
        ..DescribeAclsResponse::default()
    }))
}
