//! OffsetForLeaderEpoch (23), v2-4: the end offset of a leader epoch (spec §5.4, KIP-101/279;
//! consumers use it to detect log truncation after a leader change, KIP-320).
//!
//! Per partition: unknown topic or partition -> UNKNOWN_TOPIC_OR_PARTITION; a
//! `current_leader_epoch` older than ours -> FENCED_LEADER_EPOCH, newer -> UNKNOWN_LEADER_EPOCH
//! (-1 = not checked). Then the answer is Kafka's `endOffsetFor` over the partition's
//! leader-epoch cache: the requested epoch is the latest -> (epoch, log end offset); an older
//! known one -> (largest known epoch <= it, start offset of the next epoch); older than every
//! known epoch -> (requested epoch, first epoch's start offset); otherwise (-1, -1). A single
//! node leads every partition at epoch 0 from its creation, so epoch 0 on a partition that has
//! no batches yet answers (0, log end offset) as a Kafka leader (which records its epoch on
//! election) would. `replica_id` (v3+) makes no difference on a single node.
//! Authorization (issue 19, Kafka's KIP-320 rule): CLUSTER_ACTION on the cluster allows every
//! topic (a follower); otherwise DESCRIBE on each topic, checked before its existence;
//! refused -> TOPIC_AUTHORIZATION_FAILED on each of its partitions.

use skiff_auth::acl::AclOperation;
use skiff_protocol::{
    OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse,
    OffsetForLeaderEpochResponseEpochEndOffset, OffsetForLeaderTopicResult, ResponseBody,
};
use skiff_storage::leader_epoch::{UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET};
use skiff_types::ErrorCode;

use super::authz_ops::Checker;
use super::{Reply, RequestContext};

pub fn handle(ctx: &RequestContext<'_>, req: OffsetForLeaderEpochRequest) -> Reply {
    let broker = ctx.broker;
    let image = broker.image();
    let authz = Checker::new(ctx);
    let cluster = authz.cluster(AclOperation::ClusterAction);
    let topics = req
        .topics
        .iter()
        .map(|t| (t, cluster || authz.topic(AclOperation::Describe, &t.topic)))
        .map(|(t, allowed)| OffsetForLeaderTopicResult {
            topic: t.topic.clone(),
            partitions: t
                .partitions
                .iter()
                .map(|p| {
                    let result = allowed
                        .then(|| image.topic(&t.topic))
                        .ok_or(ErrorCode::TopicAuthorizationFailed)
                        .and_then(|i| i.ok_or(ErrorCode::UnknownTopicOrPartition))
                        .and_then(|info| {
                            broker.replicas.end_offset_for_epoch(
                                info,
                                p.partition,
                                p.current_leader_epoch,
                                p.leader_epoch,
                            )
                        });
                    let (code, (leader_epoch, end_offset)) = match result {
                        Ok(found) => (ErrorCode::None, found),
                        Err(code) => (code, (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)),
                    };
                    OffsetForLeaderEpochResponseEpochEndOffset {
                        error_code: code as i16,
                        partition: p.partition,
                        leader_epoch,
                        end_offset,
                    }
                })
                .collect(),
        })
        .collect();
    Reply::Now(ResponseBody::OffsetForLeaderEpoch(
        OffsetForLeaderEpochResponse {
            topics,
            ..OffsetForLeaderEpochResponse::default()
        },
    ))
}
