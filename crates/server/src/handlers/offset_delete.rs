//! OffsetDelete (47), v0: handed to the group's coordinator shard (GROUP_SUBSCRIBED_TO_TOPIC
//! for topics the group still consumes is its business).

use skiff_protocol::{OffsetDeleteRequest, OffsetDeleteResponse, ResponseBody};

use super::{Reply, RequestContext};
use crate::coordinator::{Caller, reply};

pub fn handle(ctx: &RequestContext<'_>, req: OffsetDeleteRequest) -> Reply {
    let answer = ctx
        .broker
        .groups
        .call(ctx.broker, &req.group_id, Caller::of(ctx), |s, c, now| {
            s.handle_offset_delete(c, &req, now)
        });
    reply(answer, |code| {
        ResponseBody::OffsetDelete(OffsetDeleteResponse {
            error_code: code.code(),
            ..OffsetDeleteResponse::default()
        })
    })
}
