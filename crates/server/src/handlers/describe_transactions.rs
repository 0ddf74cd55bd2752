//! DescribeTransactions (65), v0 (issue 18; `kafka-transactions.sh describe`): each id's
//! state from its coordinator shard on this node. An id whose shard this node does not own
//! answers NOT_COORDINATOR, a loading one COORDINATOR_LOAD_IN_PROGRESS, an unknown id
//! TRANSACTIONAL_ID_NOT_FOUND (the admin client finds each id's coordinator first).

use skiff_protocol::{
    DescribeTransactionsRequest, DescribeTransactionsResponse,
    DescribeTransactionsResponseTransactionState, ResponseBody,
};

use super::{Reply, RequestContext};

pub fn handle(ctx: &RequestContext<'_>, req: DescribeTransactionsRequest) -> Reply {
    let states = req
        .transactional_ids
        .iter()
        .map(|id| {
            ctx.broker
                .txns
                .read(id, |shard| shard.describe_state(id))
                .unwrap_or_else(|code| DescribeTransactionsResponseTransactionState {
                    error_code: code.code(),
                    transactional_id: id.clone(),
                    transaction_state: String::new(),
                    transaction_timeout_ms: 0,
                    transaction_start_time_ms: -1,
                    producer_id: -1,
                    producer_epoch: -1,
                    ..DescribeTransactionsResponseTransactionState::default()
                })
        })
        .collect();
    Reply::Now(ResponseBody::DescribeTransactions(
        DescribeTransactionsResponse {
            transaction_states: states,
            ..DescribeTransactionsResponse::default()
        },
    ))
}
