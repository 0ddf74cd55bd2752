//! DescribeProducers (61), v0: the active idempotent producers of each requested partition.
//!
//! For every (topic, partition) in the request, in request order (a topic named twice is
//! answered in one topic entry, as Kafka's per-topic map does): an unknown topic or partition
//! -> UNKNOWN_TOPIC_OR_PARTITION; otherwise every producer the partition's producer state
//! still knows (not yet expired by `producer.id.expiration.ms`), in producer-id order, with its
//! epoch, last sequence (-1 without a batch), last timestamp, coordinator epoch and the first
//! offset of its open transaction (-1: none; transactions are a later issue). Read-only: it
//! takes each partition's log lock only to copy the entries.
//! Authorization (issue 19): READ on each topic, before its existence; refused ->
//! TOPIC_AUTHORIZATION_FAILED on each of its partitions.

use skiff_auth::acl::AclOperation;
use skiff_protocol::{
    DescribeProducersRequest, DescribeProducersResponse, PartitionResponse, ProducerState,
    ResponseBody, TopicResponse,
};
use skiff_storage::ProducerEntrySnapshot;
use skiff_types::ErrorCode;

use super::authz_ops::Checker;
use super::{Reply, RequestContext};

pub fn handle(ctx: &RequestContext<'_>, req: DescribeProducersRequest) -> Reply {
    let image = &ctx.broker.image();
    let authz = Checker::new(ctx);
    let mut topics: Vec<TopicResponse> = Vec::with_capacity(req.topics.len());
    for t in &req.topics {
        let allowed = authz.topic(AclOperation::Read, &t.name);
        let partitions = t.partition_indexes.iter().map(move |&index| {
            let found = if allowed {
                image
                    .topic(&t.name)
                    .ok_or(ErrorCode::UnknownTopicOrPartition)
            } else {
                Err(ErrorCode::TopicAuthorizationFailed)
            };
            match found.and_then(|info| ctx.broker.replicas.active_producers(info, index)) {
                Ok(producers) => PartitionResponse {
                    partition_index: index,
                    error_code: 0,
                    error_message: None,
                    active_producers: producers.into_iter().map(producer_state).collect(),
                },
                Err(code) => PartitionResponse {
                    partition_index: index,
                    error_code: code as i16,
                    error_message: match code {
                        ErrorCode::UnknownTopicOrPartition => Some(format!(
                            "This server does not host this topic-partition: {}-{index}",
                            t.name
                        )),
                        ErrorCode::TopicAuthorizationFailed => {
                            Some("Topic authorization failed.".into())
                        }
                        _ => None,
                    },
                    active_producers: Vec::new(),
                },
            }
        });
        match topics.iter_mut().find(|r| r.name == t.name) {
            Some(existing) => existing.partitions.extend(partitions),
            None => {
                let partitions = partitions.collect();
                topics.push(TopicResponse {
                    name: t.name.clone(),
                    partitions,
                });
            }
        }
    }
    Reply::Now(ResponseBody::DescribeProducers(DescribeProducersResponse {
        throttle_time_ms: 0,
        topics,
    }))
}

fn producer_state(p: ProducerEntrySnapshot) -> ProducerState {
    ProducerState {
        producer_id: p.producer_id,
        producer_epoch: i32::from(p.producer_epoch),
        last_sequence: p.last_sequence,
        last_timestamp: p.last_timestamp,
        coordinator_epoch: p.coordinator_epoch,
        current_txn_start_offset: p.current_txn_start_offset,
    }
}
