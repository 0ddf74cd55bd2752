//! SyncGroup (14), v0-5: handed to the group's coordinator shard; followers' answers come when
//! the leader's assignment arrives (a parked `Reply::Later` holding the connection).
//!
//! Authorization (issue 19), as Kafka's `KafkaApis`: from v5 a request without its protocol
//! type and name answers INCONSISTENT_GROUP_PROTOCOL first; then READ on the group, checked
//! before the coordinator sees the request (refused: GROUP_AUTHORIZATION_FAILED).

use skiff_auth::acl::{AclOperation, ResourceType};
use skiff_protocol::{ResponseBody, SyncGroupRequest, SyncGroupResponse};
use skiff_types::ErrorCode;

use super::{Reply, RequestContext};
use crate::coordinator::{Caller, reply};

/// SyncGroup v5+ must carry the protocol type and name (Kafka's
/// `areMandatoryProtocolTypeAndNamePresent`).
const MANDATORY_PROTOCOL_MIN_VERSION: i16 = 5;

pub fn handle(ctx: &RequestContext<'_>, req: SyncGroupRequest) -> Reply {
    if ctx.api_version >= MANDATORY_PROTOCOL_MIN_VERSION
        && (req.protocol_type.is_none() || req.protocol_name.is_none())
    {
        return Reply::Now(error_response(ErrorCode::InconsistentGroupProtocol));
    }
    if !ctx.authorize(AclOperation::Read, ResourceType::Group, &req.group_id) {
        return Reply::Now(error_response(ErrorCode::GroupAuthorizationFailed));
    }
    let answer = ctx
        .broker
        .groups
        .call(ctx.broker, &req.group_id, Caller::of(ctx), |s, c, now| {
            s.handle_sync(c, &req, now)
        });
    reply(answer, error_response)
}

fn error_response(code: ErrorCode) -> ResponseBody {
    ResponseBody::SyncGroup(SyncGroupResponse {
        error_code: code.code(),
        protocol_type: None,
        protocol_name: None,
        ..SyncGroupResponse::default()
    })
}
