//! OffsetCommit (8), v2-9: handed to the group's coordinator shard (generation / member-epoch
//! fencing, metadata size, retention are its business); answered once the commit records are
//! in `__consumer_offsets`. A coordinator-level error is set on every partition it was given.
//!
//! As Kafka's `KafkaApis` does, partitions the metadata image does not hold (an unknown topic,
//! or a partition beyond the topic's count) never reach the coordinator: each is answered
//! UNKNOWN_TOPIC_OR_PARTITION and nothing is stored for it. When no partition is left the
//! answer is immediate (the group is not looked at). The response lists every requested
//! partition in request order (issue 15 item 5).
//!
//! Authorization (issue 19), as Kafka's `handleOffsetCommitRequest`: READ on the group first
//! (refused: GROUP_AUTHORIZATION_FAILED on every partition, nothing else looked at), then
//! READ on each topic, before the existence check: an unauthorized topic's partitions answer
//! TOPIC_AUTHORIZATION_FAILED whether the topic exists or not, and never reach the
//! coordinator.

use std::collections::HashMap;

use skiff_auth::acl::{AclOperation, ResourceType};
use skiff_protocol::{
    OffsetCommitRequest, OffsetCommitResponse, OffsetCommitResponsePartition,
    OffsetCommitResponseTopic, ResponseBody,
};
use skiff_types::ErrorCode;

use super::authz_ops::Checker;
use super::{Reply, RequestContext};
use crate::coordinator::{Caller, reply};

/// The requested (topic, partitions) in order, each with `Some(code)` when answered here.
type Shape = Vec<(String, Vec<(i32, Option<ErrorCode>)>)>;

pub fn handle(ctx: &RequestContext<'_>, mut req: OffsetCommitRequest) -> Reply {
    let authz = Checker::new(ctx);
    if !authz.allows(AclOperation::Read, ResourceType::Group, &req.group_id) {
        let shape = request_shape(&req, |_, _, _| Some(ErrorCode::GroupAuthorizationFailed));
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
    let answer = ctx
        .broker
        .groups
        .call(ctx.broker, &req.group_id, Caller::of(ctx), |s, c, now| {
            s.handle_offset_commit(c, &req, now)
        });
    let on_error_shape = shape.clone();
    let reply = reply(answer, move |code| {
        merged(on_error_shape, |_, _| code.code())
    });
    match reply {
        Reply::Now(body) => Reply::Now(merge_with(shape, body)),
        Reply::Later(later) => {
            Reply::Later(Box::pin(async move { merge_with(shape, later.await) }))
        }
        other => other,
    }
}

/// The requested partitions in request order, each with `code(topic index, topic, partition)`.
fn request_shape(
    req: &OffsetCommitRequest,
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
    ResponseBody::OffsetCommit(OffsetCommitResponse {
        topics: shape
            .into_iter()
            .map(|(name, parts)| OffsetCommitResponseTopic {
                partitions: parts
                    .into_iter()
                    .map(|(partition_index, code)| OffsetCommitResponsePartition {
                        partition_index,
                        error_code: code
                            .map_or_else(|| coordinator(&name, partition_index), ErrorCode::code),
                    })
                    .collect(),
                name,
            })
            .collect(),
        ..OffsetCommitResponse::default()
    })
}

/// Folds the coordinator's response for the known partitions into the full response.
fn merge_with(shape: Shape, body: ResponseBody) -> ResponseBody {
    let ResponseBody::OffsetCommit(r) = body else {
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
    if let ResponseBody::OffsetCommit(o) = &mut out {
        o.throttle_time_ms = r.throttle_time_ms;
    }
    out
}
