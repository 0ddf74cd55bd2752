//! JoinGroup (11), v0-9: handed to the group's coordinator shard; the answer usually comes
//! when the join phase completes (a parked `Reply::Later` holding the connection).

use skiff_protocol::{JoinGroupRequest, JoinGroupResponse, ResponseBody};

use super::{Reply, RequestContext};
use crate::coordinator::{Caller, reply};

/// JoinGroup v7+ makes `protocol_name` nullable.
const NULLABLE_PROTOCOL_MIN_VERSION: i16 = 7;

pub fn handle(ctx: &RequestContext<'_>, req: JoinGroupRequest) -> Reply {
    let version = ctx.api_version;
    let member_id = req.member_id.clone();
    let answer = ctx
        .broker
        .groups
        .call(ctx.broker, &req.group_id, Caller::of(ctx), |s, c, now| {
            s.handle_join(c, &req, now)
        });
    reply(answer, move |code| {
        ResponseBody::JoinGroup(JoinGroupResponse {
            error_code: code.code(),
            generation_id: -1,
            member_id,
            protocol_type: None,
            protocol_name: (version < NULLABLE_PROTOCOL_MIN_VERSION).then(String::new),
            leader: String::new(),
            ..JoinGroupResponse::default()
        })
    })
}
