//! DescribeGroups (15), v0-6: each group described by its own shard (unknown groups and KIP-848
//! groups answer state `Dead`, with no error before v6 and GROUP_ID_NOT_FOUND with a message
//! from v6, KIP-1043, as Kafka does).
//!
//! Authorization (issue 19), as Kafka's `handleDescribeGroupsRequest`: DESCRIBE on each group;
//! a refused group answers GROUP_AUTHORIZATION_FAILED with empty state, protocol and members,
//! and, as in Kafka, the refused groups come first in the response, then the described ones
//! in request order. With `include_authorized_operations` (v3+) a described group without
//! error carries Kafka's `authorizedOperations` bitfield of the group for this principal
//! (every group operation when no authorizer is configured).

use skiff_auth::acl::{AclOperation, ResourceType};
use skiff_protocol::{
    DescribeGroupsRequest, DescribeGroupsResponse, DescribeGroupsResponseDescribedGroup,
    ResponseBody,
};
use skiff_types::ErrorCode;

use super::authz_ops::Checker;
use super::{Reply, RequestContext};

/// DescribeGroups v3+ can ask for the authorized operations.
const AUTHORIZED_OPERATIONS_MIN_VERSION: i16 = 3;

pub fn handle(ctx: &RequestContext<'_>, req: DescribeGroupsRequest) -> Reply {
    let authz = Checker::new(ctx);
    let (allowed, refused): (Vec<&String>, Vec<&String>) = req
        .groups
        .iter()
        .partition(|id| authz.allows(AclOperation::Describe, ResourceType::Group, id));
    let with_ops =
        req.include_authorized_operations && ctx.api_version >= AUTHORIZED_OPERATIONS_MIN_VERSION;
    let refused = refused
        .into_iter()
        .map(|id| DescribeGroupsResponseDescribedGroup {
            error_code: ErrorCode::GroupAuthorizationFailed.code(),
            group_id: id.clone(),
            ..DescribeGroupsResponseDescribedGroup::default()
        });
    let described = allowed.into_iter().map(|id| {
        let mut g = ctx
            .broker
            .groups
            .read(ctx.broker, id, |s| s.describe_group(id, ctx.api_version))
            .unwrap_or_else(|code| DescribeGroupsResponseDescribedGroup {
                error_code: code.code(),
                group_id: id.clone(),
                ..DescribeGroupsResponseDescribedGroup::default()
            });
        if with_ops && g.error_code == 0 {
            g.authorized_operations = authz.authorized_operations(ResourceType::Group, id);
        }
        g
    });
    Reply::Now(ResponseBody::DescribeGroups(DescribeGroupsResponse {
        groups: refused.chain(described).collect(),
        ..DescribeGroupsResponse::default()
    }))
}
