//! AddOffsetsToTxn (25), v0-4 (issue 18): adds the group's `__consumer_offsets` partition to
//! the producer's transaction (so the transaction's markers reach the offsets the producer
//! will commit there with TxnOffsetCommit). Answered once the coordinator's record is
//! replicated.
//!
//! Authorization (issue 19), as Kafka's `handleAddOffsetsToTxnRequest`: WRITE on the
//! transactional id (refused: TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then READ on the group
//! (refused: GROUP_AUTHORIZATION_FAILED), both before the coordinator sees the request.

use skiff_auth::acl::{AclOperation, ResourceType};
use skiff_protocol::{AddOffsetsToTxnRequest, AddOffsetsToTxnResponse, ResponseBody};
use skiff_types::ErrorCode;

use super::{Reply, RequestContext};

pub fn handle(ctx: &RequestContext<'_>, req: AddOffsetsToTxnRequest) -> Reply {
    if !ctx.authorize(
        AclOperation::Write,
        ResourceType::TransactionalId,
        &req.transactional_id,
    ) {
        return Reply::Now(error_response(
            ErrorCode::TransactionalIdAuthorizationFailed,
        ));
    }
    if !ctx.authorize(AclOperation::Read, ResourceType::Group, &req.group_id) {
        return Reply::Now(error_response(ErrorCode::GroupAuthorizationFailed));
    }
    let offsets_partition = ctx.broker.groups.partition_for(&req.group_id);
    let answer = ctx.broker.txns.call(
        ctx.broker,
        &req.transactional_id,
        ctx.api_version,
        |shard, c, now| shard.add_offsets(c, &req, offsets_partition, now),
    );
    crate::txn::reply(answer, error_response)
}

fn error_response(code: ErrorCode) -> ResponseBody {
    ResponseBody::AddOffsetsToTxn(AddOffsetsToTxnResponse {
        error_code: code.code(),
        ..AddOffsetsToTxnResponse::default()
    })
}
