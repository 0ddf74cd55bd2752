//! ListGroups (16), v0-5: every shard's groups passing the state (v4+) and type (v5+)
//! filters. While some shard is still loading the answer carries COORDINATOR_LOAD_IN_PROGRESS
//! along with the groups of the loaded ones (as Kafka does).

use skiff_protocol::{ListGroupsRequest, ListGroupsResponse, ResponseBody};
use skiff_types::ErrorCode;

use super::{Reply, RequestContext};

pub fn handle(ctx: &RequestContext<'_>, req: ListGroupsRequest) -> Reply {
    let (lists, loading) = ctx
        .broker
        .groups
        .read_all(ctx.broker, |s| s.list_groups(&req));
    Reply::Now(ResponseBody::ListGroups(ListGroupsResponse {
        error_code: if loading {
            ErrorCode::CoordinatorLoadInProgress.code()
        } else {
            0
        },
        groups: lists.into_iter().flatten().collect(),
        ..ListGroupsResponse::default()
    }))
}
