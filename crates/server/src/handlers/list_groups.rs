//! ListGroups (16), v0-5: every shard's groups passing the state (v4+) and type (v5+)
//! filters. While some shard is still loading the answer carries COORDINATOR_LOAD_IN_PROGRESS
//! along with the groups of the loaded ones (as Kafka does).
//!
//! Authorization (issue 19), as Kafka's `handleListGroupsRequest`: with DESCRIBE on the
//! cluster every group is listed; otherwise only the groups the principal may DESCRIBE (no
//! error for the others: they are simply not there).

use skiff_auth::acl::{AclOperation, ResourceType};
use skiff_protocol::{ListGroupsRequest, ListGroupsResponse, ResponseBody};
use skiff_types::ErrorCode;

use super::authz_ops::Checker;
use super::{Reply, RequestContext};

pub fn handle(ctx: &RequestContext<'_>, req: ListGroupsRequest) -> Reply {
    let authz = Checker::new(ctx);
    let every_group = authz.cluster(AclOperation::Describe);
    let (lists, loading) = ctx
        .broker
        .groups
        .read_all(ctx.broker, |s| s.list_groups(&req));
    let mut groups: Vec<_> = lists.into_iter().flatten().collect();
    if !every_group {
        groups.retain(|g| authz.allows(AclOperation::Describe, ResourceType::Group, &g.group_id));
    }
    Reply::Now(ResponseBody::ListGroups(ListGroupsResponse {
        error_code: if loading {
            ErrorCode::CoordinatorLoadInProgress.code()
        } else {
            0
        },
        groups,
        ..ListGroupsResponse::default()
    }))
}
