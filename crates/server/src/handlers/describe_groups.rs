//! DescribeGroups (15), v0-6: each group described by its own shard (unknown groups and KIP-848
//! groups answer state `Dead`, with no error before v6 and GROUP_ID_NOT_FOUND with a message
//! from v6, KIP-1043, as Kafka does). With `include_authorized_operations` every group
//! operation is allowed (no ACLs here): READ, DELETE, DESCRIBE.

use skiff_protocol::{
    DescribeGroupsRequest, DescribeGroupsResponse, DescribeGroupsResponseDescribedGroup,
    ResponseBody,
};

use super::{Reply, RequestContext};

/// Kafka's AclOperation bits allowed on a group: READ (3), DELETE (6), DESCRIBE (8).
pub const GROUP_AUTHORIZED_OPERATIONS: i32 = (1 << 3) | (1 << 6) | (1 << 8);

pub fn handle(ctx: &RequestContext<'_>, req: DescribeGroupsRequest) -> Reply {
    let groups = req
        .groups
        .iter()
        .map(|id| {
            let mut g = ctx
                .broker
                .groups
                .read(ctx.broker, id, |s| s.describe_group(id, ctx.api_version))
                .unwrap_or_else(|code| DescribeGroupsResponseDescribedGroup {
                    error_code: code.code(),
                    group_id: id.clone(),
                    ..DescribeGroupsResponseDescribedGroup::default()
                });
            if req.include_authorized_operations && g.error_code == 0 {
                g.authorized_operations = GROUP_AUTHORIZED_OPERATIONS;
            }
            g
        })
        .collect();
    Reply::Now(ResponseBody::DescribeGroups(DescribeGroupsResponse {
        groups,
        ..DescribeGroupsResponse::default()
    }))
}
