//! TxnOffsetCommit (28), v0-4 (KIP-98): a transactional producer commits a group's offsets
//! inside its transaction. Handed to the group's coordinator shard (group / generation /
//! member checks, metadata size are its business: `skiff_group` `txn_offsets`), whose records
//! are appended as one transactional batch of the producer; they stay pending (invisible to
//! OffsetFetch) until the transaction's marker (`GroupCoordinator::write_txn_marker`). A
//! producer the partition already knows at a higher epoch is fenced (INVALID_PRODUCER_EPOCH)
//! before the shard sees the request. A coordinator-level error is set on every partition it
//! was given.
//!
//! As Kafka's `KafkaApis` does, partitions the metadata image does not hold never reach the
//! coordinator: each is answered UNKNOWN_TOPIC_OR_PARTITION; when none is left the answer is
//! immediate. The response lists every requested partition in request order (as OffsetCommit
//! does here). v0-1 clients are answered COORDINATOR_NOT_AVAILABLE instead of
//! COORDINATOR_LOAD_IN_PROGRESS (Kafka: clients before 2.0 did not expect the latter).
//!
//! Authorization (issue 19), as Kafka's `handleTxnOffsetCommitRequest`: WRITE on the
//! transactional id (refused: TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every partition), then
//! READ on the group (GROUP_AUTHORIZATION_FAILED on every partition), then READ on each topic
//! before the existence check (TOPIC_AUTHORIZATION_FAILED on its partitions, whether the
//! topic exists or not; they never reach the coordinator).
//! Not done: Kafka 4's KIP-890 verification of the producer's transaction with the
//! transaction coordinator before the write.

use std::collections::HashMap;

use skiff_auth::acl::{AclOperation, ResourceType};
use skiff_protocol::{
    ResponseBody, TxnOffsetCommitRequest, TxnOffsetCommitResponse,
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use skiff_types::ErrorCode;

use super::authz_ops::Checker;
use super::{Reply, RequestContext};
use crate::coordinator::{Caller, reply};

/// TxnOffsetCommit v2+ clients understand COORDINATOR_LOAD_IN_PROGRESS.
const LOAD_IN_PROGRESS_MIN_VERSION: i16 = 2;

/// The requested (topic, partitions) in order, each with `Some(code)` when answered here.
type Shape = Vec<(String, Vec<(i32, Option<ErrorCode>)>)>;

pub fn handle(ctx: &RequestContext<'_>, mut req: TxnOffsetCommitRequest) -> Reply {
    let version = ctx.api_version;
    let authz = Checker::new(ctx);
    let refused = if !authz.allows(
        AclOperation::Write,
        ResourceType::TransactionalId,
        &req.transactional_id,
    ) {
        Some(ErrorCode::TransactionalIdAuthorizationFailed)
    } else if !authz.allows(AclOperation::Read, ResourceType::Group, &req.group_id) {
        Some(ErrorCode::GroupAuthorizationFailed)
    } else {
        None
    };
    if let Some(code) = refused {
        let shape = request_shape(&req, |_, _, _| Some(code));
        return Reply::Now(merged(shape, |_, _| ErrorCode::None.code()));
    }
    let image = ctx.broker.image();
    let known = |topic: &str, partition: i32| {
        image
            .topic(topic)
            .is_some_and(|info| (0..info.partitions).contains(&partition))
    };
    let authorized: Vec<bool> = req
        .topics
        .iter()
        .map(|t| authz.topic(AclOperation::Read, &t.name))
        .collect();
    let shape = request_shape(&req, |i, topic, partition| {
        if !authorized.get(i).copied().unwrap_or(false) {
            Some(ErrorCode::TopicAuthorizationFailed)
        } else {
            (!known(topic, partition)).then_some(ErrorCode::UnknownTopicOrPartition)
        }
    });
    let mut allowed = authorized.iter();
    req.topics
        .retain(|_| allowed.next().copied().unwrap_or(false));
    for t in &mut req.topics {
        t.partitions.retain(|p| known(&t.name, p.partition_index));
    }
    req.topics.retain(|t| !t.partitions.is_empty());
    drop(image);
    if req.topics.is_empty() {
        return Reply::Now(merged(shape, |_, _| ErrorCode::None.code()));
    }
    let producer = (req.producer_id, req.producer_epoch);
    let answer = ctx.broker.groups.call_transactional(
        ctx.broker,
        &req.group_id,
        Caller::of(ctx),
        producer,
        |s, c, now| s.handle_txn_offset_commit(c, &req, now),
    );
    let on_error_shape = shape.clone();
    let reply = reply(answer, move |code| {
        merged(on_error_shape, |_, _| code.code())
    });
    match reply {
        Reply::Now(body) => Reply::Now(for_version(version, merge_with(shape, body))),
        Reply::Later(later) => Reply::Later(Box::pin(async move {
            for_version(version, merge_with(shape, later.await))
        })),
        other => other,
    }
}

/// The requested partitions in request order, each with `code(topic index, topic, partition)`.
fn request_shape(
    req: &TxnOffsetCommitRequest,
    mut code: impl FnMut(usize, &str, i32) -> Option<ErrorCode>,
) -> Shape {
    req.topics
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let parts = t
                .partitions
                .iter()
                .map(|p| (p.partition_index, code(i, &t.name, p.partition_index)))
                .collect();
            (t.name.clone(), parts)
        })
        .collect()
}

/// The full response: the partitions answered here keep their code, the others get
/// `coordinator(topic, partition)`.
fn merged(shape: Shape, coordinator: impl Fn(&str, i32) -> i16) -> ResponseBody {
    ResponseBody::TxnOffsetCommit(TxnOffsetCommitResponse {
        topics: shape
            .into_iter()
            .map(|(name, parts)| TxnOffsetCommitResponseTopic {
                partitions: parts
                    .into_iter()
                    .map(|(partition_index, code)| TxnOffsetCommitResponsePartition {
                        partition_index,
                        error_code: code
                            .map_or_else(|| coordinator(&name, partition_index), ErrorCode::code),
                    })
                    .collect(),
                name,
            })
            .collect(),
        ..TxnOffsetCommitResponse::default()
    })
}

/// Folds the coordinator's response for the known partitions into the full response.
fn merge_with(shape: Shape, body: ResponseBody) -> ResponseBody {
    let ResponseBody::TxnOffsetCommit(r) = body else {
        return body;
    };
    let codes: HashMap<(&str, i32), i16> = r
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(|p| ((t.name.as_str(), p.partition_index), p.error_code))
        })
        .collect();
    let mut out = merged(shape, |name, p| {
        codes
            .get(&(name, p))
            .copied()
            .unwrap_or(ErrorCode::UnknownServerError.code())
    });
    if let ResponseBody::TxnOffsetCommit(o) = &mut out {
        o.throttle_time_ms = r.throttle_time_ms;
    }
    out
}

/// Kafka's v0-1 substitution of COORDINATOR_NOT_AVAILABLE for COORDINATOR_LOAD_IN_PROGRESS.
fn for_version(version: i16, mut body: ResponseBody) -> ResponseBody {
    if version < LOAD_IN_PROGRESS_MIN_VERSION
        && let ResponseBody::TxnOffsetCommit(r) = &mut body
    {
        for p in r.topics.iter_mut().flat_map(|t| t.partitions.iter_mut()) {
            if p.error_code == ErrorCode::CoordinatorLoadInProgress.code() {
                p.error_code = ErrorCode::CoordinatorNotAvailable.code();
            }
        }
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_versions_see_coordinator_not_available_while_loading() {
        let shape: Shape = vec![(
            "t".into(),
            vec![(0, None), (1, Some(ErrorCode::UnknownTopicOrPartition))],
        )];
        let body = merged(shape, |_, _| ErrorCode::CoordinatorLoadInProgress.code());
        let codes = |b: &ResponseBody| match b {
            ResponseBody::TxnOffsetCommit(r) => r.topics[0]
                .partitions
                .iter()
                .map(|p| p.error_code)
                .collect::<Vec<_>>(),
            other => panic!("{other:?}"),
        };
        assert_eq!(codes(&for_version(1, body.clone())), vec![15, 3]);
        assert_eq!(codes(&for_version(2, body)), vec![14, 3]);
    }
}
