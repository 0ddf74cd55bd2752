//! EndTxn (26), v0-4 (issue 18): commit or abort. The shard writes PrepareCommit /
//! PrepareAbort; the answer goes once that record is replicated, and the markers are written
//! after it (`crate::txn::markers`). v5 (transactions v2, KIP-890 part 2) is not served.

use skiff_protocol::{EndTxnRequest, EndTxnResponse, ResponseBody};

use super::{Reply, RequestContext};

pub fn handle(ctx: &RequestContext<'_>, req: EndTxnRequest) -> Reply {
    let answer = ctx.broker.txns.call(
        ctx.broker,
        &req.transactional_id,
        ctx.api_version,
        |shard, c, now| shard.end_txn(c, &req, now),
    );
    crate::txn::reply(answer, |code| {
        ResponseBody::EndTxn(EndTxnResponse {
            error_code: code.code(),
            ..EndTxnResponse::default()
        })
    })
}
