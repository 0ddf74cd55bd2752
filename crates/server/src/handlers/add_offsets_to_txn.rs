//! AddOffsetsToTxn (25), v0-4 (issue 18): adds the group's `__consumer_offsets` partition to
//! the producer's transaction (so the transaction's markers reach the offsets the producer
//! will commit there with TxnOffsetCommit). Answered once the coordinator's record is
//! replicated.

use skiff_protocol::{AddOffsetsToTxnRequest, AddOffsetsToTxnResponse, ResponseBody};

use super::{Reply, RequestContext};

pub fn handle(ctx: &RequestContext<'_>, req: AddOffsetsToTxnRequest) -> Reply {
    let offsets_partition = ctx.broker.groups.partition_for(&req.group_id);
    let answer = ctx.broker.txns.call(
        ctx.broker,
        &req.transactional_id,
        ctx.api_version,
        |shard, c, now| shard.add_offsets(c, &req, offsets_partition, now),
    );
    crate::txn::reply(answer, |code| {
        ResponseBody::AddOffsetsToTxn(AddOffsetsToTxnResponse {
            error_code: code.code(),
            ..AddOffsetsToTxnResponse::default()
        })
    })
}
