//! LeaveGroup (13), v0-5 (v3+ batches members, KIP-345): handed to the group's coordinator
//! shard. A coordinator-level error is a top-level error with no member results.
//!
//! Authorization (issue 19), as Kafka's `KafkaApis`: READ on the group, checked before the
//! coordinator sees the request; refused: GROUP_AUTHORIZATION_FAILED (top-level, no member results).

use skiff_auth::acl::{AclOperation, ResourceType};
use skiff_protocol::{LeaveGroupRequest, LeaveGroupResponse, ResponseBody};
use skiff_types::ErrorCode;

use super::{Reply, RequestContext};
use crate::coordinator::{Caller, reply};

pub fn handle(ctx: &RequestContext<'_>, req: LeaveGroupRequest) -> Reply {
    if !ctx.authorize(AclOperation::Read, ResourceType::Group, &req.group_id) {
        return Reply::Now(error_response(ErrorCode::GroupAuthorizationFailed));
    }
    let answer = ctx
        .broker
        .groups
        .call(ctx.broker, &req.group_id, Caller::of(ctx), |s, c, now| {
            s.handle_leave(c, &req, now)
        });
    reply(answer, error_response)
}

fn error_response(code: ErrorCode) -> ResponseBody {
    ResponseBody::LeaveGroup(LeaveGroupResponse {
        error_code: code.code(),
        ..LeaveGroupResponse::default()
    })
}
