//! AddPartitionsToTxn (24), v0-5 (issue 18).
//!
//! v0-3 come from producers: one transaction in the top-level fields. As Kafka's `KafkaApis`
//! does, partitions the metadata image does not hold are answered UNKNOWN_TOPIC_OR_PARTITION
//! and the others OPERATION_NOT_ATTEMPTED without asking the coordinator; otherwise the
//! transactional id's shard adds them (a record, answered once replicated).
//! v4-5 come from brokers (KIP-890 part 1): a batch of transactions, usually `verify_only`
//! (is this partition already in the producer's ongoing transaction?). Each transaction goes
//! to its own shard; the answers are merged in request order. A transaction whose shard is
//! elsewhere or loading gets that error on each of its partitions.
//!
//! Authorization (issue 19), as Kafka's `handleAddPartitionsToTxnRequest`. v0-3: WRITE on the
//! transactional id (refused: TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every partition); then
//! per partition, before the existence check: an internal topic (never addable by a client)
//! or a topic without WRITE answers TOPIC_AUTHORIZATION_FAILED, an unknown partition
//! UNKNOWN_TOPIC_OR_PARTITION, and if any did, the rest OPERATION_NOT_ATTEMPTED and the
//! coordinator is not asked. v4-5 (broker to broker): CLUSTER_ACTION on the cluster, else the
//! whole request answers a top-level CLUSTER_AUTHORIZATION_FAILED.

use skiff_auth::acl::{AclOperation, ResourceType};
use skiff_protocol::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnRequest, AddPartitionsToTxnResponse,
    AddPartitionsToTxnResult, AddPartitionsToTxnTopic, AddPartitionsToTxnTopicResult,
    AddPartitionsToTxnTransaction, ResponseBody,
};
use skiff_types::ErrorCode;

use super::authz_ops::Checker;
use super::{Reply, RequestContext};

/// v4+ carry a batch of transactions.
const BATCHED_MIN_VERSION: i16 = 4;

pub fn handle(ctx: &RequestContext<'_>, req: AddPartitionsToTxnRequest) -> Reply {
    let authz = Checker::new(ctx);
    if ctx.api_version >= BATCHED_MIN_VERSION {
        if !authz.cluster(AclOperation::ClusterAction) {
            return Reply::Now(ResponseBody::AddPartitionsToTxn(
                AddPartitionsToTxnResponse {
                    error_code: ErrorCode::ClusterAuthorizationFailed.code(),
                    ..AddPartitionsToTxnResponse::default()
                },
            ));
        }
        return batched(ctx, req);
    }
    if !authz.allows(
        AclOperation::Write,
        ResourceType::TransactionalId,
        &req.v3_and_below_transactional_id,
    ) {
        return Reply::Now(v3_response(&req.v3_and_below_topics, |_, _| {
            ErrorCode::TransactionalIdAuthorizationFailed
        }));
    }
    let image = ctx.broker.image();
    let authorized: Vec<bool> = req
        .v3_and_below_topics
        .iter()
        .map(|t| !is_internal(&t.name) && authz.topic(AclOperation::Write, &t.name))
        .collect();
    let check = |i: usize, t: &AddPartitionsToTxnTopic, p: i32| {
        if !authorized.get(i).copied().unwrap_or(false) {
            Some(ErrorCode::TopicAuthorizationFailed)
        } else if image
            .topic(&t.name)
            .is_none_or(|info| !(0..info.partitions).contains(&p))
        {
            Some(ErrorCode::UnknownTopicOrPartition)
        } else {
            None
        }
    };
    let failed = req
        .v3_and_below_topics
        .iter()
        .enumerate()
        .any(|(i, t)| t.partitions.iter().any(|p| check(i, t, *p).is_some()));
    if failed {
        return Reply::Now(v3_response(&req.v3_and_below_topics, |i, (t, p)| {
            check(i, t, p).unwrap_or(ErrorCode::OperationNotAttempted)
        }));
    }
    drop(image);
    let topics = req.v3_and_below_topics.clone();
    let answer = ctx.broker.txns.call(
        ctx.broker,
        &req.v3_and_below_transactional_id,
        ctx.api_version,
        |shard, c, now| shard.add_partitions(c, &req, now),
    );
    crate::txn::reply(answer, move |code| {
        ResponseBody::AddPartitionsToTxn(AddPartitionsToTxnResponse {
            results_by_topic_v3_and_below: topics
                .iter()
                .map(|t| topic_result(t, |_| code))
                .collect(),
            ..AddPartitionsToTxnResponse::default()
        })
    })
}

/// v4-5: each transaction on its own shard, merged in request order.
fn batched(ctx: &RequestContext<'_>, req: AddPartitionsToTxnRequest) -> Reply {
    let broker = std::sync::Arc::clone(ctx.broker);
    let api_version = ctx.api_version;
    Reply::Later(Box::pin(async move {
        let mut results = Vec::with_capacity(req.transactions.len());
        for t in req.transactions {
            let one = AddPartitionsToTxnRequest {
                transactions: vec![t.clone()],
                ..AddPartitionsToTxnRequest::default()
            };
            let answer = broker.txns.call(
                &broker,
                &t.transactional_id,
                api_version,
                |shard, c, now| shard.add_partitions(c, &one, now),
            );
            let result = match crate::txn::settle(answer).await {
                Ok(skiff_txn::Response::AddPartitionsToTxn(r)) => {
                    r.results_by_transaction.into_iter().next()
                }
                Ok(_) => None,
                Err(code) => Some(transaction_error(&t, code)),
            };
            results.push(
                result.unwrap_or_else(|| transaction_error(&t, ErrorCode::UnknownServerError)),
            );
        }
        ResponseBody::AddPartitionsToTxn(AddPartitionsToTxnResponse {
            results_by_transaction: results,
            ..AddPartitionsToTxnResponse::default()
        })
    }))
}

/// Kafka's `Topic.isInternal`: topics a client never adds to a transaction itself.
fn is_internal(topic: &str) -> bool {
    topic == crate::coordinator::OFFSETS_TOPIC || topic == crate::txn::TXN_TOPIC
}

/// A v0-3 answer with `code(topic index, (topic, partition))` on each requested partition.
fn v3_response(
    topics: &[AddPartitionsToTxnTopic],
    code: impl Fn(usize, (&AddPartitionsToTxnTopic, i32)) -> ErrorCode,
) -> ResponseBody {
    ResponseBody::AddPartitionsToTxn(AddPartitionsToTxnResponse {
        results_by_topic_v3_and_below: topics
            .iter()
            .enumerate()
            .map(|(i, t)| topic_result(t, |p| code(i, (t, p))))
            .collect(),
        ..AddPartitionsToTxnResponse::default()
    })
}

fn transaction_error(
    t: &AddPartitionsToTxnTransaction,
    code: ErrorCode,
) -> AddPartitionsToTxnResult {
    AddPartitionsToTxnResult {
        transactional_id: t.transactional_id.clone(),
        topic_results: t.topics.iter().map(|x| topic_result(x, |_| code)).collect(),
    }
}

fn topic_result(
    t: &AddPartitionsToTxnTopic,
    code: impl Fn(i32) -> ErrorCode,
) -> AddPartitionsToTxnTopicResult {
    AddPartitionsToTxnTopicResult {
        name: t.name.clone(),
        results_by_partition: t
            .partitions
            .iter()
            .map(|p| AddPartitionsToTxnPartitionResult {
                partition_index: *p,
                partition_error_code: code(*p).code(),
            })
            .collect(),
    }
}
