//! FindCoordinator (10), v0-6 (v4+ batches keys).
//!
//! Key type 0 (group): on one node this node is every group's coordinator; in a cluster the
//! leader of the group's `__consumer_offsets` partition is; `__consumer_offsets` is created
//! on first use here, as Kafka does (COORDINATOR_NOT_AVAILABLE, retriable, if that fails).
//! Key type 1 (transaction, issue 18): the same for `__transaction_state` and the
//! transactional id's partition. Any other key type is INVALID_REQUEST. v0-3 carry one key and a top-level answer.
//!
//! Authorization (issue 19), as Kafka's `getCoordinator`, per key and before anything else
//! (the internal topic is not created for a refused key): DESCRIBE on the group (refused:
//! GROUP_AUTHORIZATION_FAILED) or on the transactional id (refused:
//! TRANSACTIONAL_ID_AUTHORIZATION_FAILED), answered with no node (-1, "", -1); v0-3 also carry
//! Kafka's error message.

use skiff_auth::acl::{AclOperation, ResourceType};
use skiff_protocol::{Coordinator, FindCoordinatorRequest, FindCoordinatorResponse, ResponseBody};
use skiff_types::ErrorCode;

use super::{Reply, RequestContext};

/// FindCoordinator v4+ batches keys (KIP-699).
const BATCHED_MIN_VERSION: i16 = 4;
const KEY_TYPE_GROUP: i8 = 0;
const KEY_TYPE_TRANSACTION: i8 = 1;

pub fn handle(ctx: &RequestContext<'_>, req: FindCoordinatorRequest) -> Reply {
    if ctx.api_version >= BATCHED_MIN_VERSION {
        let coordinators = req
            .coordinator_keys
            .iter()
            .map(|k| find(ctx, req.key_type, k))
            .collect();
        return Reply::Now(ResponseBody::FindCoordinator(FindCoordinatorResponse {
            coordinators,
            ..FindCoordinatorResponse::default()
        }));
    }
    let c = find(ctx, req.key_type, &req.key);
    Reply::Now(ResponseBody::FindCoordinator(FindCoordinatorResponse {
        error_code: c.error_code,
        error_message: c.error_message,
        node_id: c.node_id,
        host: c.host,
        port: c.port,
        ..FindCoordinatorResponse::default()
    }))
}

fn find(ctx: &RequestContext<'_>, key_type: i8, key: &str) -> Coordinator {
    let failed = |code: ErrorCode, message: String| Coordinator {
        key: key.to_string(),
        node_id: -1,
        host: String::new(),
        port: -1,
        error_code: code.code(),
        error_message: Some(message),
    };
    let refused = match key_type {
        KEY_TYPE_GROUP => (!ctx.authorize(AclOperation::Describe, ResourceType::Group, key))
            .then_some((
                ErrorCode::GroupAuthorizationFailed,
                "Group authorization failed.",
            )),
        KEY_TYPE_TRANSACTION => {
            (!ctx.authorize(AclOperation::Describe, ResourceType::TransactionalId, key)).then_some(
                (
                    ErrorCode::TransactionalIdAuthorizationFailed,
                    "Transactional Id authorization failed.",
                ),
            )
        }
        _ => None,
    };
    if let Some((code, message)) = refused {
        // Kafka's v4+ handler leaves the per-key message null; v0-3 carry `Errors.message`.
        return Coordinator {
            error_message: (ctx.api_version < BATCHED_MIN_VERSION).then(|| message.to_string()),
            ..failed(code, String::new())
        };
    }
    let (partition, topic) = match key_type {
        KEY_TYPE_GROUP => {
            if let Err(e) = ctx.broker.groups.ensure_topic(ctx.broker) {
                tracing::warn!(error = %e, "FindCoordinator: the offsets topic is not available");
                return failed(ErrorCode::CoordinatorNotAvailable, e.to_string());
            }
            (
                ctx.broker.groups.partition_for(key),
                crate::coordinator::OFFSETS_TOPIC,
            )
        }
        KEY_TYPE_TRANSACTION => {
            if let Err(e) = ctx.broker.txns.ensure_topic(ctx.broker) {
                tracing::warn!(error = %e, "FindCoordinator: the transaction state topic is not available");
                return failed(ErrorCode::CoordinatorNotAvailable, e.to_string());
            }
            (ctx.broker.txns.partition_for(key), crate::txn::TXN_TOPIC)
        }
        other => {
            return failed(
                ErrorCode::InvalidRequest,
                format!("Unknown coordinator type {other}"),
            );
        }
    };
    if ctx.broker.quorum.is_none() {
        return Coordinator {
            key: key.to_string(),
            node_id: ctx.broker.node_id(),
            host: ctx.listener.advertised_host.clone(),
            port: i32::from(ctx.listener.advertised_port),
            error_code: 0,
            error_message: None,
        };
    }
    // issue 16: the leader of the key's partition of the internal topic, at its endpoint of
    // this listener.
    let image = ctx.broker.image();
    let leader = image.partition(topic, partition).map_or(-1, |p| p.leader);
    let (brokers, _) = ctx.broker.cluster_view(ctx.listener);
    match brokers.into_iter().find(|b| b.0 == leader) {
        Some((node_id, host, port, _)) => Coordinator {
            key: key.to_string(),
            node_id,
            host,
            port: i32::from(port),
            error_code: 0,
            error_message: None,
        },
        None => failed(
            ErrorCode::CoordinatorNotAvailable,
            "The coordinator is not available.".into(),
        ),
    }
}
