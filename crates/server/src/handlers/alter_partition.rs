//! AlterPartition (56), v0-3, on controller listeners (issue 17): a partition leader's new
//! ISR, decided by the active controller (`controller/alter_partition.rs` for the rules) and
//! committed as a `PartitionChangeRecord` before it is answered.
//!
//! Versions: v0-1 name topics, v2+ by id (echoed back as asked); before v3 the ISR is bare
//! broker ids (their epochs are not checked), v3 carries each member's broker epoch. A
//! requester not registered at its broker epoch -> STALE_BROKER_EPOCH, this node not the
//! active controller -> NOT_CONTROLLER, both for the whole request (top-level error code, no
//! topics, as Kafka's `getErrorResponse`); everything else is per partition.
//! Authorization (issue 19): CLUSTER_ACTION on the cluster, else CLUSTER_AUTHORIZATION_FAILED
//! for the whole request.

use std::sync::Arc;

use skiff_auth::acl::AclOperation;
use skiff_metadata::{
    IsrChange, IsrChangeResult, IsrTopic, IsrTopicResult, TopicRef, UNCHECKED_BROKER_EPOCH,
};
use skiff_protocol::{
    AlterPartitionRequest, AlterPartitionRequestTopicData, AlterPartitionResponse,
    AlterPartitionResponsePartitionData, AlterPartitionResponseTopicData, ResponseBody,
};
use skiff_types::ErrorCode;

use super::{Reply, RequestContext};

pub fn handle(ctx: &RequestContext<'_>, req: AlterPartitionRequest) -> Reply {
    if !ctx.authorize_cluster(AclOperation::ClusterAction) {
        return Reply::Now(ResponseBody::AlterPartition(refused(
            ErrorCode::ClusterAuthorizationFailed,
        )));
    }
    let broker = Arc::clone(ctx.broker);
    let version = ctx.api_version;
    Reply::Later(Box::pin(async move {
        let asked: Vec<(String, uuid::Uuid)> = req
            .topics
            .iter()
            .map(|t| (t.topic_name.clone(), t.topic_id))
            .collect();
        let topics = req.topics.into_iter().map(|t| topic(t, version)).collect();
        let (id, epoch) = (req.broker_id, req.broker_epoch);
        let done =
            tokio::task::spawn_blocking(move || broker.metadata.alter_partition(id, epoch, topics))
                .await;
        let response = match done {
            Ok(Ok(answers)) => AlterPartitionResponse {
                topics: asked
                    .into_iter()
                    .zip(answers)
                    .map(|((name, id), a)| answer(name, id, a))
                    .collect(),
                ..AlterPartitionResponse::default()
            },
            Ok(Err(e)) => {
                tracing::info!(error = %e, broker = id, "AlterPartition refused");
                refused(e.error_code())
            }
            Err(e) => {
                tracing::error!(error = %e, "AlterPartition task failed");
                refused(ErrorCode::UnknownServerError)
            }
        };
        ResponseBody::AlterPartition(response)
    }))
}

/// One topic of the request as the controller takes it (by name before v2, epochs from v3).
fn topic(t: AlterPartitionRequestTopicData, version: i16) -> IsrTopic {
    IsrTopic {
        topic: if version >= 2 {
            TopicRef::Id(t.topic_id)
        } else {
            TopicRef::Name(t.topic_name)
        },
        partitions: t
            .partitions
            .into_iter()
            .map(|p| IsrChange {
                partition: p.partition_index,
                leader_epoch: p.leader_epoch,
                partition_epoch: p.partition_epoch,
                new_isr: if version >= 3 {
                    p.new_isr_with_epochs
                        .iter()
                        .map(|b| (b.broker_id, b.broker_epoch))
                        .collect()
                } else {
                    p.new_isr
                        .iter()
                        .map(|b| (*b, UNCHECKED_BROKER_EPOCH))
                        .collect()
                },
                leader_recovery_state: p.leader_recovery_state,
            })
            .collect(),
    }
}

/// One topic's answers, named as the request named it.
fn answer(
    topic_name: String,
    topic_id: uuid::Uuid,
    a: IsrTopicResult,
) -> AlterPartitionResponseTopicData {
    AlterPartitionResponseTopicData {
        topic_name,
        topic_id,
        partitions: a.partitions.into_iter().map(partition).collect(),
    }
}

fn partition(r: IsrChangeResult) -> AlterPartitionResponsePartitionData {
    match r.result {
        Ok(s) => AlterPartitionResponsePartitionData {
            partition_index: r.partition,
            error_code: 0,
            leader_id: s.leader,
            leader_epoch: s.leader_epoch,
            isr: s.isr,
            leader_recovery_state: s.leader_recovery_state,
            partition_epoch: s.partition_epoch,
        },
        // Kafka answers an error with the index and the code, the rest defaults.
        Err(code) => AlterPartitionResponsePartitionData {
            partition_index: r.partition,
            error_code: code as i16,
            ..AlterPartitionResponsePartitionData::default()
        },
    }
}

fn refused(code: ErrorCode) -> AlterPartitionResponse {
    AlterPartitionResponse {
        error_code: code as i16,
        ..AlterPartitionResponse::default()
    }
}

#[cfg(test)]
mod tests {
    use skiff_protocol::{AlterPartitionRequestPartitionData, BrokerState};

    use super::*;

    fn asked() -> AlterPartitionRequestTopicData {
        AlterPartitionRequestTopicData {
            topic_name: "t".into(),
            topic_id: uuid::Uuid::from_u128(7),
            partitions: vec![AlterPartitionRequestPartitionData {
                partition_index: 2,
                leader_epoch: 3,
                partition_epoch: 4,
                new_isr: vec![1, 2],
                new_isr_with_epochs: vec![BrokerState {
                    broker_id: 1,
                    broker_epoch: 10,
                }],
                leader_recovery_state: 1,
            }],
        }
    }

    /// Each version reads the fields it carries: names before v2, epochs from v3.
    #[test]
    fn versions_pick_the_topic_reference_and_the_isr_shape() {
        let change = |isr: Vec<(i32, i64)>| IsrChange {
            partition: 2,
            leader_epoch: 3,
            partition_epoch: 4,
            new_isr: isr,
            leader_recovery_state: 1,
        };
        let unchecked = vec![(1, UNCHECKED_BROKER_EPOCH), (2, UNCHECKED_BROKER_EPOCH)];
        for (version, want_topic, want_isr) in [
            (0, TopicRef::Name("t".into()), unchecked.clone()),
            (1, TopicRef::Name("t".into()), unchecked.clone()),
            (2, TopicRef::Id(uuid::Uuid::from_u128(7)), unchecked),
            (3, TopicRef::Id(uuid::Uuid::from_u128(7)), vec![(1, 10)]),
        ] {
            let got = topic(asked(), version);
            assert_eq!(got.topic, want_topic, "v{version}");
            assert_eq!(got.partitions, vec![change(want_isr)], "v{version}");
        }
    }

    /// A refused partition carries its index and code only, as Kafka's.
    #[test]
    fn a_refused_partition_is_its_index_and_code() {
        let r = partition(IsrChangeResult {
            partition: 5,
            result: Err(ErrorCode::InvalidUpdateVersion),
        });
        assert_eq!(
            r,
            AlterPartitionResponsePartitionData {
                partition_index: 5,
                error_code: 95,
                ..AlterPartitionResponsePartitionData::default()
            }
        );
    }
}
