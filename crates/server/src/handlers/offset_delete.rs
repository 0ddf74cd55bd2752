//! OffsetDelete (47), v0: handed to the group's coordinator shard (GROUP_SUBSCRIBED_TO_TOPIC
//! for topics the group still consumes is its business).
//!
//! Authorization (issue 19), as Kafka's `handleOffsetDeleteRequest`: DELETE on the group first
//! (refused: a top-level GROUP_AUTHORIZATION_FAILED and no topics); then READ on each topic
//! before the existence check: an unauthorized topic's partitions answer
//! TOPIC_AUTHORIZATION_FAILED whether it exists or not, and partitions the metadata image does
//! not hold answer UNKNOWN_TOPIC_OR_PARTITION; neither reaches the coordinator, which is
//! asked about the rest (possibly none: it still answers for the group, e.g.
//! GROUP_ID_NOT_FOUND). A top-level error from the coordinator is the whole answer (Kafka's
//! `OffsetDeleteResponse.Builder.merge`); otherwise the response lists every requested
//! partition in request order.

use std::collections::HashMap;

use skiff_auth::acl::{AclOperation, ResourceType};
use skiff_protocol::{
    OffsetDeleteRequest, OffsetDeleteResponse, OffsetDeleteResponsePartition,
    OffsetDeleteResponseTopic, ResponseBody,
};
use skiff_types::ErrorCode;

use super::authz_ops::Checker;
use super::{Reply, RequestContext};
use crate::coordinator::{Caller, reply};

/// The requested (topic, partitions) in order, each with `Some(code)` when answered here.
type Shape = Vec<(String, Vec<(i32, Option<ErrorCode>)>)>;

pub fn handle(ctx: &RequestContext<'_>, mut req: OffsetDeleteRequest) -> Reply {
    let authz = Checker::new(ctx);
    if !authz.allows(AclOperation::Delete, ResourceType::Group, &req.group_id) {
        return Reply::Now(top_level_error(ErrorCode::GroupAuthorizationFailed));
    }
    let image = ctx.broker.image();
    let known = |topic: &str, partition: i32| {
        image
            .topic(topic)
            .is_some_and(|info| (0..info.partitions).contains(&partition))
    };
    let shape: Shape = req
        .topics
        .iter()
        .map(|t| {
            let authorized = authz.topic(AclOperation::Read, &t.name);
            let parts = t
                .partitions
                .iter()
                .map(|p| {
                    let code = if !authorized {
                        Some(ErrorCode::TopicAuthorizationFailed)
                    } else {
                        (!known(&t.name, p.partition_index))
                            .then_some(ErrorCode::UnknownTopicOrPartition)
                    };
                    (p.partition_index, code)
                })
                .collect();
            (t.name.clone(), parts)
        })
        .collect();
    let asked: HashMap<(&str, i32), bool> = shape
        .iter()
        .flat_map(|(name, parts)| {
            parts
                .iter()
                .map(move |(p, code)| ((name.as_str(), *p), code.is_none()))
        })
        .collect();
    for t in &mut req.topics {
        t.partitions.retain(|p| {
            asked
                .get(&(t.name.as_str(), p.partition_index))
                .copied()
                .unwrap_or(false)
        });
    }
    req.topics.retain(|t| !t.partitions.is_empty());
    drop(asked);
    drop(image);
    let answer = ctx
        .broker
        .groups
        .call(ctx.broker, &req.group_id, Caller::of(ctx), |s, c, now| {
            s.handle_offset_delete(c, &req, now)
        });
    match reply(answer, top_level_error) {
        Reply::Now(body) => Reply::Now(merge_with(shape, body)),
        Reply::Later(later) => {
            Reply::Later(Box::pin(async move { merge_with(shape, later.await) }))
        }
        other => other,
    }
}

fn top_level_error(code: ErrorCode) -> ResponseBody {
    ResponseBody::OffsetDelete(OffsetDeleteResponse {
        error_code: code.code(),
        ..OffsetDeleteResponse::default()
    })
}

/// Folds the coordinator's answer into the full response (a top-level error replaces it).
fn merge_with(shape: Shape, body: ResponseBody) -> ResponseBody {
    let ResponseBody::OffsetDelete(r) = body else {
        return body;
    };
    if r.error_code != ErrorCode::None.code() {
        return ResponseBody::OffsetDelete(r);
    }
    let codes: HashMap<(&str, i32), i16> = r
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(|p| ((t.name.as_str(), p.partition_index), p.error_code))
        })
        .collect();
    let topics = shape
        .into_iter()
        .map(|(name, parts)| OffsetDeleteResponseTopic {
            partitions: parts
                .into_iter()
                .map(|(partition_index, code)| OffsetDeleteResponsePartition {
                    partition_index,
                    error_code: code.map_or_else(
                        || {
                            codes
                                .get(&(name.as_str(), partition_index))
                                .copied()
                                .unwrap_or(ErrorCode::UnknownServerError.code())
                        },
                        ErrorCode::code,
                    ),
                })
                .collect(),
            name,
        })
        .collect();
    ResponseBody::OffsetDelete(OffsetDeleteResponse {
        topics,
        throttle_time_ms: r.throttle_time_ms,
        ..OffsetDeleteResponse::default()
    })
}
