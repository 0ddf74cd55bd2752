//! SyncGroup (14), v0-5: handed to the group's coordinator shard; followers' answers come when
//! the leader's assignment arrives (a parked `Reply::Later` holding the connection).

use skiff_protocol::{ResponseBody, SyncGroupRequest, SyncGroupResponse};

use super::{Reply, RequestContext};
use crate::coordinator::{Caller, reply};

pub fn handle(ctx: &RequestContext<'_>, req: SyncGroupRequest) -> Reply {
    let answer = ctx
        .broker
        .groups
        .call(ctx.broker, &req.group_id, Caller::of(ctx), |s, c, now| {
            s.handle_sync(c, &req, now)
        });
    reply(answer, |code| {
        ResponseBody::SyncGroup(SyncGroupResponse {
            error_code: code.code(),
            protocol_type: None,
            protocol_name: None,
            ..SyncGroupResponse::default()
        })
    })
}
