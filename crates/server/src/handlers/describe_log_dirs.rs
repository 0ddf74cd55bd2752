//! DescribeLogDirs (35), v1-4: per log dir, the hosted partitions with their sizes.
//!
//! One result per configured log dir (its absolute path, even with no partitions), listing the
//! requested partitions hosted there (`topics` null = every hosted partition; requested
//! partitions this broker does not host are left out, as Kafka does). A partition's size is the
//! sum of its segment files; its offset lag is `max(high watermark - log end offset, 0)`,
//! always 0 for a leader's current log; no future (being-moved) replicas exist. v4 adds each
//! dir's total and usable bytes from `statvfs` (-1 when unknown). An offline log dir (issue 12)
//! has error KAFKA_STORAGE_ERROR. The metadata log is not a
//! partition log and is not listed.
//! Authorization (issue 19): DESCRIBE on the cluster, else no results and
//! CLUSTER_AUTHORIZATION_FAILED top-level (v3+; older versions see only the empty list).

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use skiff_auth::acl::AclOperation;
use skiff_protocol::{
    DescribeLogDirsPartition, DescribeLogDirsRequest, DescribeLogDirsResponse,
    DescribeLogDirsResult, DescribeLogDirsTopic, ResponseBody,
};
use skiff_types::TopicPartition;

use super::{Reply, RequestContext};

/// Kafka's `DescribeLogDirsResponse.UNKNOWN_VOLUME_BYTES`.
const UNKNOWN_VOLUME_BYTES: i64 = -1;

pub fn handle(ctx: &RequestContext<'_>, req: DescribeLogDirsRequest) -> Reply {
    if !ctx.authorize_cluster(AclOperation::Describe) {
        return Reply::Now(ResponseBody::DescribeLogDirs(DescribeLogDirsResponse {
            error_code: skiff_types::ErrorCode::ClusterAuthorizationFailed as i16,
            results: Vec::new(),
            ..DescribeLogDirsResponse::default()
        }));
    }
    let wanted: Option<HashSet<(&str, i32)>> = req.topics.as_ref().map(|ts| {
        ts.iter()
            .flat_map(|t| t.partitions.iter().map(|p| (t.topic.as_str(), *p)))
            .collect()
    });
    let views = ctx.broker.replicas.log_dirs_view(&|tp: &TopicPartition| {
        wanted
            .as_ref()
            .is_none_or(|w| w.contains(&(tp.topic.as_str(), tp.partition)))
    });
    let results = views
        .into_iter()
        .map(|view| {
            // dir -> topic -> partitions
            let mut by_topic: BTreeMap<String, Vec<DescribeLogDirsPartition>> = BTreeMap::new();
            for p in view.partitions {
                let TopicPartition { topic, partition } = p.tp;
                by_topic
                    .entry(topic)
                    .or_default()
                    .push(DescribeLogDirsPartition {
                        partition_index: partition,
                        partition_size: p.size_bytes,
                        offset_lag: p.offset_lag,
                        is_future_key: false,
                    });
            }
            let topics = by_topic
                .into_iter()
                .map(|(name, partitions)| DescribeLogDirsTopic { name, partitions })
                .collect();
            let (total_bytes, usable_bytes) = volume_bytes(&view.dir);
            DescribeLogDirsResult {
                // issue 12: an offline dir answers KAFKA_STORAGE_ERROR, as in Kafka.
                error_code: if view.online {
                    0
                } else {
                    skiff_types::ErrorCode::KafkaStorageError as i16
                },
                log_dir: absolute(&view.dir).display().to_string(),
                topics,
                total_bytes,
                usable_bytes,
            }
        })
        .collect();
    Reply::Now(ResponseBody::DescribeLogDirs(DescribeLogDirsResponse {
        results,
        ..DescribeLogDirsResponse::default()
    }))
}

fn absolute(dir: &Path) -> PathBuf {
    std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf())
}

/// (total, usable) bytes of the file system holding `dir`.
fn volume_bytes(dir: &Path) -> (i64, i64) {
    match rustix::fs::statvfs(dir) {
        Ok(s) => {
            let bytes =
                |blocks: u64| i64::try_from(blocks.saturating_mul(s.f_frsize)).unwrap_or(i64::MAX);
            (bytes(s.f_blocks), bytes(s.f_bavail))
        }
        Err(e) => {
            tracing::debug!(dir = %dir.display(), error = %e, "statvfs failed");
            (UNKNOWN_VOLUME_BYTES, UNKNOWN_VOLUME_BYTES)
        }
    }
}
