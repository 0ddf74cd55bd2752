//! ConsumerGroupDescribe (69), v0-1 (KIP-848; v1 tells each member's protocol, KIP-1043): each
//! group described by its own shard (GROUP_ID_NOT_FOUND for unknown and classic groups).
//! Authorized operations as in DescribeGroups when asked for.

use skiff_protocol::{
    ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse,
    ConsumerGroupDescribeResponseDescribedGroup, ResponseBody,
};

use super::describe_groups::GROUP_AUTHORIZED_OPERATIONS;
use super::{Reply, RequestContext};

pub fn handle(ctx: &RequestContext<'_>, req: ConsumerGroupDescribeRequest) -> Reply {
    let groups = req
        .group_ids
        .iter()
        .map(|id| {
            let mut g = ctx
                .broker
                .groups
                .read(ctx.broker, id, |s| s.describe_consumer_group(id))
                .unwrap_or_else(|code| ConsumerGroupDescribeResponseDescribedGroup {
                    error_code: code.code(),
                    group_id: id.clone(),
                    ..ConsumerGroupDescribeResponseDescribedGroup::default()
                });
            if req.include_authorized_operations && g.error_code == 0 {
                g.authorized_operations = GROUP_AUTHORIZED_OPERATIONS;
            }
            g
        })
        .collect();
    Reply::Now(ResponseBody::ConsumerGroupDescribe(
        ConsumerGroupDescribeResponse {
            groups,
            ..ConsumerGroupDescribeResponse::default()
        },
    ))
}
