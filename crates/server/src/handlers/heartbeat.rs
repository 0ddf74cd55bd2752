//! Heartbeat (12), v0-4: handed to the group's coordinator shard.
//!
//! Authorization (issue 19), as Kafka's `KafkaApis`: READ on the group, checked before the
//! coordinator sees the request; refused: GROUP_AUTHORIZATION_FAILED (Heartbeat's error response).

use skiff_auth::acl::{AclOperation, ResourceType};
use skiff_protocol::{HeartbeatRequest, HeartbeatResponse, ResponseBody};
use skiff_types::ErrorCode;

use super::{Reply, RequestContext};
use crate::coordinator::{Caller, reply};

pub fn handle(ctx: &RequestContext<'_>, req: HeartbeatRequest) -> Reply {
    if !ctx.authorize(AclOperation::Read, ResourceType::Group, &req.group_id) {
        return Reply::Now(error_response(ErrorCode::GroupAuthorizationFailed));
    }
    let answer = ctx
        .broker
        .groups
        .call(ctx.broker, &req.group_id, Caller::of(ctx), |s, c, now| {
            s.handle_heartbeat(c, &req, now)
        });
    reply(answer, error_response)
}

fn error_response(code: ErrorCode) -> ResponseBody {
    ResponseBody::Heartbeat(HeartbeatResponse {
        error_code: code.code(),
        ..HeartbeatResponse::default()
    })
}
