//! ListTransactions (66), v0-1 (issue 18; `kafka-transactions.sh list`): the transactions of
//! every coordinator shard loaded on this node, filtered by state, producer id and (v1)
//! running time; unknown state names are echoed in `unknown_state_filters`. While some owned
//! shard is still loading the answer is COORDINATOR_LOAD_IN_PROGRESS, as Kafka's.
//!
//! Authorization (issue 19), as Kafka's `handleListTransactionsRequest`: only the
//! transactions whose transactional id the principal may DESCRIBE are listed (no error for
//! the others).

use skiff_auth::acl::{AclOperation, ResourceType};
use skiff_protocol::{ListTransactionsRequest, ListTransactionsResponse, ResponseBody};
use skiff_types::ErrorCode;

use super::authz_ops::Checker;
use super::{Reply, RequestContext};

pub fn handle(ctx: &RequestContext<'_>, req: ListTransactionsRequest) -> Reply {
    let authz = Checker::new(ctx);
    let now = ctx.broker.now_ms();
    let duration = if ctx.api_version >= 1 {
        req.duration_filter
    } else {
        -1
    };
    let (lists, loading) = ctx.broker.txns.read_all(|shard| {
        shard.list_with_duration(&req.state_filters, &req.producer_id_filters, duration, now)
    });
    let unknown = skiff_txn::unknown_state_filters(&req.state_filters);
    let response = if loading {
        ListTransactionsResponse {
            error_code: ErrorCode::CoordinatorLoadInProgress.code(),
            unknown_state_filters: unknown,
            ..ListTransactionsResponse::default()
        }
    } else {
        ListTransactionsResponse {
            unknown_state_filters: unknown,
            transaction_states: lists
                .iter()
                .flatten()
                .map(|l| l.to_list_state())
                .filter(|s| {
                    authz.allows(
                        AclOperation::Describe,
                        ResourceType::TransactionalId,
                        &s.transactional_id,
                    )
                })
                .collect(),
            ..ListTransactionsResponse::default()
        }
    };
    Reply::Now(ResponseBody::ListTransactions(response))
}
