//! EndTxn (26), v0-4 (issue 18): commit or abort. The shard writes PrepareCommit /
//! PrepareAbort; the answer goes once that record is replicated, and the markers are written
//! after it (`crate::txn::markers`). v5 (transactions v2, KIP-890 part 2) is not served.
//!
//! Authorization (issue 19), as Kafka's `handleEndTxnRequest`: WRITE on the transactional id,
//! before the coordinator sees the request (refused: TRANSACTIONAL_ID_AUTHORIZATION_FAILED).

use skiff_auth::acl::{AclOperation, ResourceType};
use skiff_protocol::{EndTxnRequest, EndTxnResponse, ResponseBody};
use skiff_types::ErrorCode;

use super::{Reply, RequestContext};

pub fn handle(ctx: &RequestContext<'_>, req: EndTxnRequest) -> Reply {
    if !ctx.authorize(
        AclOperation::Write,
        ResourceType::TransactionalId,
        &req.transactional_id,
    ) {
        return Reply::Now(error_response(
            ErrorCode::TransactionalIdAuthorizationFailed,
        ));
    }
    let answer = ctx.broker.txns.call(
        ctx.broker,
        &req.transactional_id,
        ctx.api_version,
        |shard, c, now| shard.end_txn(c, &req, now),
    );
    crate::txn::reply(answer, error_response)
}

fn error_response(code: ErrorCode) -> ResponseBody {
    ResponseBody::EndTxn(EndTxnResponse {
        error_code: code.code(),
        ..EndTxnResponse::default()
    })
}
