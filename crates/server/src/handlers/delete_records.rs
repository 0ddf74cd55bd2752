//! DeleteRecords (21), v0-2: move partitions' log start offsets forward (spec §2.6).
//!
//! Per partition: unknown topic or partition -> UNKNOWN_TOPIC_OR_PARTITION (low watermark -1);
//! offset -1 means "up to the high watermark"; an offset above the high watermark or negative
//! -> OFFSET_OUT_OF_RANGE; a topic whose `cleanup.policy` lacks `delete` (compact-only) ->
//! POLICY_VIOLATION. Otherwise the log start offset becomes `max(current, offset)` (it may point
//! inside a segment, even inside a batch) and the answer's low watermark is the new log start
//! offset (one replica, so it is also the minimum across replicas). Fetches below it get
//! OFFSET_OUT_OF_RANGE from then on; segments wholly below it are deleted by the next retention
//! pass. The new start offsets are checkpointed before answering, so they survive a crash.
//! Authorization (issue 19): DELETE on each topic, before its existence; refused ->
//! TOPIC_AUTHORIZATION_FAILED on each of its partitions (low watermark -1).

use skiff_auth::acl::AclOperation;
use skiff_protocol::{
    DeleteRecordsPartitionResult, DeleteRecordsRequest, DeleteRecordsResponse,
    DeleteRecordsTopicResult, ResponseBody,
};
use skiff_types::ErrorCode;

use super::{Reply, RequestContext};

/// Kafka's `DeleteRecordsResponse.INVALID_LOW_WATERMARK`.
const INVALID_LOW_WATERMARK: i64 = -1;

pub fn handle(ctx: &RequestContext<'_>, req: DeleteRecordsRequest) -> Reply {
    let broker = ctx.broker;
    let image = broker.image();
    let mut moved = false;
    let authz = super::authz_ops::Checker::new(ctx);
    let topics = req
        .topics
        .iter()
        .map(|t| (t, authz.topic(AclOperation::Delete, &t.name)))
        .map(|(t, allowed)| DeleteRecordsTopicResult {
            name: t.name.clone(),
            partitions: t
                .partitions
                .iter()
                .map(|p| {
                    let result = allowed
                        .then(|| image.topic(&t.name))
                        .ok_or(ErrorCode::TopicAuthorizationFailed)
                        .and_then(|i| i.ok_or(ErrorCode::UnknownTopicOrPartition))
                        .and_then(|info| {
                            let (after, advanced) = broker.replicas.delete_records(
                                info,
                                p.partition_index,
                                p.offset,
                            )?;
                            moved |= advanced;
                            Ok(after)
                        });
                    let (code, low_watermark) = match result {
                        Ok(lw) => (ErrorCode::None, lw),
                        Err(code) => (code, INVALID_LOW_WATERMARK),
                    };
                    DeleteRecordsPartitionResult {
                        partition_index: p.partition_index,
                        low_watermark,
                        error_code: code as i16,
                    }
                })
                .collect(),
        })
        .collect();
    if moved {
        broker.replicas.write_checkpoints();
    }
    Reply::Now(ResponseBody::DeleteRecords(DeleteRecordsResponse {
        topics,
        ..DeleteRecordsResponse::default()
    }))
}
