//! DeleteAcls (31), v1-3 (issue 19): at the active controller (forwarded there from a
//! broker-only node, `cluster::is_forwarded`).
//!
//! Kafka's order (`AclApis.handleDeleteAcls`, `DeleteAclsRequest`, `AclControlManager`): a
//! filter with an UNKNOWN (code 0) part fails the request's parse (connection closed); ALTER
//! on the cluster, else CLUSTER_AUTHORIZATION_FAILED for every filter; no authorizer:
//! SECURITY_DISABLED "No Authorizer is configured." for every filter; otherwise per filter
//! its validation error (an unknown code: "Unknown patternFilter." / "Unknown entryFilter.")
//! or every ACL it matched, each removed (an ACL matched by several filters is listed by
//! each, removed once). The answer comes once the removals are committed. On success Kafka
//! writes null messages (`ApiError.NONE`), in the filter result and in each matching ACL.

use skiff_auth::acl::AclOperation;
use skiff_protocol::{
    DeleteAclsFilterResult, DeleteAclsMatchingAcl, DeleteAclsRequest, DeleteAclsResponse,
    ResponseBody,
};
use skiff_types::ErrorCode;

use super::create_acls::{NO_AUTHORIZER, NOT_AUTHORIZED, any_unknown};
use super::describe_acls::filter_from_wire;
use super::{Reply, RequestContext};

fn failed(code: ErrorCode, message: Option<String>) -> DeleteAclsFilterResult {
    DeleteAclsFilterResult {
        error_code: code as i16,
        error_message: message,
        ..DeleteAclsFilterResult::default()
    }
}

fn answer(filter_results: Vec<DeleteAclsFilterResult>) -> Reply {
    Reply::Now(ResponseBody::DeleteAcls(DeleteAclsResponse {
        filter_results,
        ..DeleteAclsResponse::default()
    }))
}

pub fn handle(ctx: &RequestContext<'_>, req: DeleteAclsRequest) -> Reply {
    let unknown = req.filters.iter().any(|f| {
        any_unknown(&[
            f.resource_type_filter,
            f.pattern_type_filter,
            f.operation,
            f.permission_type,
        ])
    });
    if unknown {
        return Reply::Close("DeleteAcls with UNKNOWN elements".into());
    }
    let n = req.filters.len();
    let all = |code: ErrorCode, message: Option<&str>| {
        answer(vec![failed(code, message.map(str::to_string)); n])
    };
    if !ctx.authorize_cluster(AclOperation::Alter) {
        return all(ErrorCode::ClusterAuthorizationFailed, Some(NOT_AUTHORIZED));
    }
    if !ctx.broker.authz.is_enabled() {
        return all(ErrorCode::SecurityDisabled, Some(NO_AUTHORIZER));
    }
    let filters = req
        .filters
        .iter()
        .map(|f| {
            filter_from_wire(
                f.resource_type_filter,
                f.resource_name_filter.as_deref(),
                f.pattern_type_filter,
                f.principal_filter.as_deref(),
                f.host_filter.as_deref(),
                f.operation,
                f.permission_type,
            )
        })
        .collect();
    match ctx.broker.metadata.delete_acls(filters) {
        Ok(results) => answer(
            results
                .into_iter()
                .map(|r| match r {
                    Err(e) => failed(e.code, e.message),
                    Ok(acls) => DeleteAclsFilterResult {
                        matching_acls: acls
                            .into_iter()
                            .map(|b| DeleteAclsMatchingAcl {
                                resource_type: b.resource_type.code(),
                                resource_name: b.resource_name,
                                pattern_type: b.pattern_type.code(),
                                principal: b.principal,
                                host: b.host,
                                operation: b.operation.code(),
                                permission_type: b.permission.code(),
                                error_code: 0,
                                error_message: None,
                            })
                            .collect(),
                        ..failed(ErrorCode::None, None)
                    },
                })
                .collect(),
        ),
        Err(e) => all(e.error_code(), Some(&e.to_string())),
    }
}
