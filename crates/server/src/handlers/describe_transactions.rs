//! DescribeTransactions (65), v0 (issue 18; `kafka-transactions.sh describe`): each id's
//! state from its coordinator shard on this node. An id whose shard this node does not own
//! answers NOT_COORDINATOR, a loading one COORDINATOR_LOAD_IN_PROGRESS, an unknown id
//! TRANSACTIONAL_ID_NOT_FOUND (the admin client finds each id's coordinator first).
//!
//! Authorization (issue 19), as Kafka's `handleDescribeTransactionsRequest`: DESCRIBE on each
//! transactional id (refused: TRANSACTIONAL_ID_AUTHORIZATION_FAILED with every other field at
//! its default, the coordinator not asked); a described transaction lists only the topics the
//! principal may DESCRIBE.

use skiff_auth::acl::{AclOperation, ResourceType};
use skiff_protocol::{
    DescribeTransactionsRequest, DescribeTransactionsResponse,
    DescribeTransactionsResponseTransactionState, ResponseBody,
};
use skiff_types::ErrorCode;

use super::authz_ops::Checker;
use super::{Reply, RequestContext};

pub fn handle(ctx: &RequestContext<'_>, req: DescribeTransactionsRequest) -> Reply {
    let authz = Checker::new(ctx);
    let states = req
        .transactional_ids
        .iter()
        .map(|id| {
            if !authz.allows(AclOperation::Describe, ResourceType::TransactionalId, id) {
                return DescribeTransactionsResponseTransactionState {
                    error_code: ErrorCode::TransactionalIdAuthorizationFailed.code(),
                    transactional_id: id.clone(),
                    ..DescribeTransactionsResponseTransactionState::default()
                };
            }
            let mut state = ctx
                .broker
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
                });
            if authz.enabled() {
                state
                    .topics
                    .retain(|t| authz.topic(AclOperation::Describe, &t.topic));
            }
            state
        })
        .collect();
    Reply::Now(ResponseBody::DescribeTransactions(
        DescribeTransactionsResponse {
            transaction_states: states,
            ..DescribeTransactionsResponse::default()
        },
    ))
}
