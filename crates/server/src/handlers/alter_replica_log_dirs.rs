//! AlterReplicaLogDirs (34), v1-2: move partitions' logs between this broker's `log.dirs`
//! (KIP-113; `kafka-reassign-partitions.sh` with log dirs, the Java admin's
//! `alterReplicaLogDirs`).
//!
//! Per partition, as Kafka's `ReplicaManager.alterReplicaLogDirs` answers: NONE when the log
//! is in the requested dir already or has been moved there; LOG_DIR_NOT_FOUND for a path that
//! is not one of `log.dirs` (compared as absolute paths); KAFKA_STORAGE_ERROR when either dir
//! is offline or the copy fails; REPLICA_NOT_AVAILABLE for a partition this broker does not
//! host. A move is a real copy-then-swap by the log manager (crash-safe; see its `moves`
//! module) and is done before the answer, on a blocking thread, one partition at a time.
//! Results are grouped by topic in request order.
//! Authorization (issue 19): ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED on every
//! partition, nothing moved.

use std::path::PathBuf;

use skiff_auth::acl::AclOperation;
use skiff_protocol::{
    AlterReplicaLogDirPartitionResult, AlterReplicaLogDirTopicResult, AlterReplicaLogDirsRequest,
    AlterReplicaLogDirsResponse, ResponseBody,
};
use skiff_types::TopicPartition;

use super::{Reply, RequestContext};

pub fn handle(ctx: &RequestContext<'_>, req: AlterReplicaLogDirsRequest) -> Reply {
    if !ctx.authorize_cluster(AclOperation::Alter) {
        let code = skiff_types::ErrorCode::ClusterAuthorizationFailed as i16;
        return Reply::Now(ResponseBody::AlterReplicaLogDirs(
            AlterReplicaLogDirsResponse {
                results: req
                    .dirs
                    .iter()
                    .flat_map(|d| d.topics.iter())
                    .map(|t| AlterReplicaLogDirTopicResult {
                        topic_name: t.name.clone(),
                        partitions: t
                            .partitions
                            .iter()
                            .map(|p| AlterReplicaLogDirPartitionResult {
                                partition_index: *p,
                                error_code: code,
                            })
                            .collect(),
                    })
                    .collect(),
                ..AlterReplicaLogDirsResponse::default()
            },
        ));
    }
    let moves: Vec<(PathBuf, TopicPartition)> = req
        .dirs
        .iter()
        .flat_map(|d| {
            d.topics.iter().flat_map(move |t| {
                t.partitions.iter().map(move |p| {
                    (
                        PathBuf::from(&d.path),
                        TopicPartition::new(t.name.clone(), *p),
                    )
                })
            })
        })
        .collect();
    let broker = std::sync::Arc::clone(ctx.broker);
    Reply::Later(Box::pin(async move {
        let done = tokio::task::spawn_blocking(move || {
            moves
                .into_iter()
                .map(|(path, tp)| {
                    let code = broker.replicas.alter_log_dir(&tp, &path);
                    (tp, code)
                })
                .collect::<Vec<_>>()
        })
        .await
        .unwrap_or_default();
        let mut results: Vec<AlterReplicaLogDirTopicResult> = Vec::new();
        for (tp, code) in done {
            let partition = AlterReplicaLogDirPartitionResult {
                partition_index: tp.partition,
                error_code: code as i16,
            };
            match results.iter_mut().find(|r| r.topic_name == tp.topic) {
                Some(r) => r.partitions.push(partition),
                None => results.push(AlterReplicaLogDirTopicResult {
                    topic_name: tp.topic,
                    partitions: vec![partition],
                }),
            }
        }
        ResponseBody::AlterReplicaLogDirs(AlterReplicaLogDirsResponse {
            results,
            ..AlterReplicaLogDirsResponse::default()
        })
    }))
}
