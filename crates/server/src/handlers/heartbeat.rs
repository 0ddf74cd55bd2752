//! Heartbeat (12), v0-4: handed to the group's coordinator shard.

use skiff_protocol::{HeartbeatRequest, HeartbeatResponse, ResponseBody};

use super::{Reply, RequestContext};
use crate::coordinator::{Caller, reply};

pub fn handle(ctx: &RequestContext<'_>, req: HeartbeatRequest) -> Reply {
    let answer = ctx
        .broker
        .groups
        .call(ctx.broker, &req.group_id, Caller::of(ctx), |s, c, now| {
            s.handle_heartbeat(c, &req, now)
        });
    reply(answer, |code| {
        ResponseBody::Heartbeat(HeartbeatResponse {
            error_code: code.code(),
            ..HeartbeatResponse::default()
        })
    })
}
