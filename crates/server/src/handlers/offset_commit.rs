//! OffsetCommit (8), v2-9: handed to the group's coordinator shard (generation / member-epoch
//! fencing, metadata size, retention are its business); answered once the commit records are
//! in `__consumer_offsets`. A coordinator-level error is set on every partition.

use skiff_protocol::{
    OffsetCommitRequest, OffsetCommitResponse, OffsetCommitResponsePartition,
    OffsetCommitResponseTopic, ResponseBody,
};

use super::{Reply, RequestContext};
use crate::coordinator::{Caller, reply};

pub fn handle(ctx: &RequestContext<'_>, req: OffsetCommitRequest) -> Reply {
    let shape: Vec<(String, Vec<i32>)> = req
        .topics
        .iter()
        .map(|t| {
            (
                t.name.clone(),
                t.partitions.iter().map(|p| p.partition_index).collect(),
            )
        })
        .collect();
    let answer = ctx
        .broker
        .groups
        .call(ctx.broker, &req.group_id, Caller::of(ctx), |s, c, now| {
            s.handle_offset_commit(c, &req, now)
        });
    reply(answer, move |code| {
        ResponseBody::OffsetCommit(OffsetCommitResponse {
            topics: shape
                .into_iter()
                .map(|(name, parts)| OffsetCommitResponseTopic {
                    name,
                    partitions: parts
                        .into_iter()
                        .map(|partition_index| OffsetCommitResponsePartition {
                            partition_index,
                            error_code: code.code(),
                        })
                        .collect(),
                })
                .collect(),
            ..OffsetCommitResponse::default()
        })
    })
}
