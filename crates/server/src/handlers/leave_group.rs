//! LeaveGroup (13), v0-5 (v3+ batches members, KIP-345): handed to the group's coordinator
//! shard. A coordinator-level error is a top-level error with no member results.

use skiff_protocol::{LeaveGroupRequest, LeaveGroupResponse, ResponseBody};

use super::{Reply, RequestContext};
use crate::coordinator::{Caller, reply};

pub fn handle(ctx: &RequestContext<'_>, req: LeaveGroupRequest) -> Reply {
    let answer = ctx
        .broker
        .groups
        .call(ctx.broker, &req.group_id, Caller::of(ctx), |s, c, now| {
            s.handle_leave(c, &req, now)
        });
    reply(answer, |code| {
        ResponseBody::LeaveGroup(LeaveGroupResponse {
            error_code: code.code(),
            ..LeaveGroupResponse::default()
        })
    })
}
