//! JoinGroup (11), v0-9: handed to the group's coordinator shard; the answer usually comes
//! when the join phase completes (a parked `Reply::Later` holding the connection).
//!
//! Authorization (issue 19), as Kafka's `KafkaApis`: READ on the group, checked before the
//! coordinator sees the request; refused: GROUP_AUTHORIZATION_FAILED (JoinGroup's error response).

use skiff_auth::acl::{AclOperation, ResourceType};
use skiff_protocol::{JoinGroupRequest, JoinGroupResponse, ResponseBody};
use skiff_types::ErrorCode;

use super::{Reply, RequestContext};
use crate::coordinator::{Caller, reply};

/// JoinGroup v7+ makes `protocol_name` nullable.
const NULLABLE_PROTOCOL_MIN_VERSION: i16 = 7;

pub fn handle(ctx: &RequestContext<'_>, req: JoinGroupRequest) -> Reply {
    let version = ctx.api_version;
    if !ctx.authorize(AclOperation::Read, ResourceType::Group, &req.group_id) {
        // Kafka's JoinGroupRequest error response: no member id, no generation.
        return Reply::Now(error_response(
            version,
            String::new(),
            ErrorCode::GroupAuthorizationFailed,
        ));
    }
    let member_id = req.member_id.clone();
    let answer = ctx
        .broker
        .groups
        .call(ctx.broker, &req.group_id, Caller::of(ctx), |s, c, now| {
            s.handle_join(c, &req, now)
        });
    reply(answer, move |code| error_response(version, member_id, code))
}

fn error_response(version: i16, member_id: String, code: ErrorCode) -> ResponseBody {
    ResponseBody::JoinGroup(JoinGroupResponse {
        error_code: code.code(),
        generation_id: -1,
        member_id,
        protocol_type: None,
        protocol_name: (version < NULLABLE_PROTOCOL_MIN_VERSION).then(String::new),
        leader: String::new(),
        ..JoinGroupResponse::default()
    })
}
