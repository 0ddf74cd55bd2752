//! InitProducerId (22), v0-5.
//!
//! With a null `transactional_id` Kafka always hands out a fresh producer id with epoch 0
//! (even when the request carries an old id/epoch, v3+). Ids come from blocks recorded in the
//! metadata log, so they are never reused after a restart. In a cluster a broker that is not
//! the active controller takes them from a block it got with AllocateProducerIds
//! (`crate::producer_ids`), as Kafka's brokers do.
//!
//! With a transactional id (issue 18) the request goes to the transaction coordinator shard
//! of the id (`crate::txn`): it fences the previous epoch, aborts an open transaction, and
//! answers once its record is replicated. The shard may need a new producer id (a new
//! transactional id, or an exhausted epoch): one is taken before the call, as above, and
//! handed in (unused ids are harmless: ids are never reused either way).
//!
//! Authorization (issue 19, Kafka's `handleInitProducerIdRequest`): with a transactional id,
//! WRITE on it, else TRANSACTIONAL_ID_AUTHORIZATION_FAILED; without, IDEMPOTENT_WRITE on the
//! cluster or WRITE on at least one topic (`authorizeByResourceType`), else
//! CLUSTER_AUTHORIZATION_FAILED.

use std::sync::Arc;

use skiff_auth::acl::{AclOperation, ResourceType};
use skiff_protocol::{InitProducerIdRequest, InitProducerIdResponse, ResponseBody};
use skiff_types::ErrorCode;

use super::{Reply, RequestContext};
use crate::broker::Broker;

pub fn handle(ctx: &RequestContext<'_>, req: InitProducerIdRequest) -> Reply {
    let allowed = match req.transactional_id.as_deref() {
        Some(tid) => ctx
            .authorize(AclOperation::Write, ResourceType::TransactionalId, tid)
            .then_some(())
            .ok_or(ErrorCode::TransactionalIdAuthorizationFailed),
        None => (ctx.authorize_cluster(AclOperation::IdempotentWrite)
            || ctx.authorize_by_resource_type(AclOperation::Write, ResourceType::Topic))
        .then_some(())
        .ok_or(ErrorCode::ClusterAuthorizationFailed),
    };
    if let Err(code) = allowed {
        return Reply::Now(ResponseBody::InitProducerId(error(code)));
    }
    let broker = Arc::clone(ctx.broker);
    let api_version = ctx.api_version;
    let remote_ids = broker.quorum.is_some() && !crate::cluster::is_controller(&broker);
    if req.transactional_id.is_none() && !remote_ids {
        let response = match new_id_now(&broker) {
            Ok(id) => fresh(id),
            Err(code) => error(code),
        };
        return Reply::Now(ResponseBody::InitProducerId(response));
    }
    Reply::Later(Box::pin(async move {
        let id = if remote_ids {
            crate::producer_ids::next_producer_id(&broker).await
        } else {
            new_id_now(&broker)
        };
        let Some(tid) = req.transactional_id.clone() else {
            return ResponseBody::InitProducerId(match id {
                Ok(id) => fresh(id),
                Err(code) => error(code),
            });
        };
        let mut id = Some(id);
        let answer = broker
            .txns
            .call(&broker, &tid, api_version, |shard, c, now| {
                let mut take = || {
                    id.take()
                        .unwrap_or(Err(ErrorCode::CoordinatorLoadInProgress))
                };
                shard.init_producer_id(c, &req, now, &mut take)
            });
        match crate::txn::settle(answer).await {
            Ok(r) => crate::txn::to_body(r),
            Err(code) => ResponseBody::InitProducerId(error(code)),
        }
    }))
}

/// A producer id from this node's metadata store (one node, or the active controller).
fn new_id_now(broker: &Broker) -> Result<i64, ErrorCode> {
    broker.metadata.allocate_producer_id().map_err(|e| {
        tracing::error!(error = %e, "producer id allocation failed");
        ErrorCode::CoordinatorNotAvailable
    })
}

fn fresh(id: i64) -> InitProducerIdResponse {
    InitProducerIdResponse {
        error_code: 0,
        producer_id: id,
        producer_epoch: 0,
        ..InitProducerIdResponse::default()
    }
}

fn error(code: ErrorCode) -> InitProducerIdResponse {
    InitProducerIdResponse {
        error_code: code as i16,
        producer_id: -1,
        producer_epoch: -1,
        ..InitProducerIdResponse::default()
    }
}
