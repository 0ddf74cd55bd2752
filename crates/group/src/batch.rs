//! Version plumbing for OffsetFetch, whose requests batch groups that live on different shards.
//!
//! Mental model: OffsetFetch v0-7 names one group with top-level topics; v8+ names many
//! groups. [`offset_fetch_groups`] turns any version into per-group requests, the server asks
//! each group's shard ([`crate::GroupCoordinatorShard::fetch_offsets`]) or builds an error with
//! [`offset_fetch_error_group`] (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS), and
//! [`offset_fetch_response`] shapes the answers for the request's version.

use skiff_protocol::{
    OffsetFetchRequest, OffsetFetchRequestTopics, OffsetFetchResponse, OffsetFetchResponseGroup,
    OffsetFetchResponsePartition, OffsetFetchResponsePartitions, OffsetFetchResponseTopic,
    OffsetFetchResponseTopics,
};
use skiff_types::ErrorCode;

/// OffsetFetch v8+ batches groups.
const BATCHED_MIN_VERSION: i16 = 8;
/// OffsetFetch v2+ has a top-level error code.
const TOP_LEVEL_ERROR_MIN_VERSION: i16 = 2;

/// One group's share of an OffsetFetch request.
#[derive(Clone, Debug, PartialEq)]
pub struct OffsetFetchGroupRequest {
    pub group_id: String,
    /// `(member_id, member_epoch)` when a KIP-848 member names itself (v9).
    pub member: Option<(String, i32)>,
    /// `None`: every committed partition.
    pub topics: Option<Vec<OffsetFetchRequestTopics>>,
}

/// Splits an OffsetFetch request of any version into per-group requests.
pub fn offset_fetch_groups(req: &OffsetFetchRequest, version: i16) -> Vec<OffsetFetchGroupRequest> {
    if version < BATCHED_MIN_VERSION {
        let topics = req.topics.as_ref().map(|ts| {
            ts.iter()
                .map(|t| OffsetFetchRequestTopics {
                    name: t.name.clone(),
                    partition_indexes: t.partition_indexes.clone(),
                })
                .collect()
        });
        return vec![OffsetFetchGroupRequest {
            group_id: req.group_id.clone(),
            member: None,
            topics,
        }];
    }
    req.groups
        .iter()
        .map(|g| OffsetFetchGroupRequest {
            group_id: g.group_id.clone(),
            member: g
                .member_id
                .clone()
                .filter(|m| !m.is_empty())
                .map(|m| (m, g.member_epoch)),
            topics: g.topics.clone(),
        })
        .collect()
}

/// A group answer carrying `code` (partition errors for the partitions asked, as old versions
/// report them).
pub fn offset_fetch_error_group(
    req: &OffsetFetchGroupRequest,
    code: ErrorCode,
) -> OffsetFetchResponseGroup {
    let topics = req
        .topics
        .iter()
        .flatten()
        .map(|t| OffsetFetchResponseTopics {
            name: t.name.clone(),
            partitions: t
                .partition_indexes
                .iter()
                .map(|p| OffsetFetchResponsePartitions {
                    partition_index: *p,
                    committed_offset: -1,
                    committed_leader_epoch: -1,
                    metadata: Some(String::new()),
                    error_code: code.code(),
                })
                .collect(),
        })
        .collect();
    OffsetFetchResponseGroup {
        group_id: req.group_id.clone(),
        topics,
        error_code: code.code(),
    }
}

/// Builds the OffsetFetch response for `version` from the per-group answers (in request
/// order; v0-7 use the first).
pub fn offset_fetch_response(
    version: i16,
    groups: Vec<OffsetFetchResponseGroup>,
) -> OffsetFetchResponse {
    if version >= BATCHED_MIN_VERSION {
        return OffsetFetchResponse {
            groups,
            ..OffsetFetchResponse::default()
        };
    }
    let Some(group) = groups.into_iter().next() else {
        return OffsetFetchResponse::default();
    };
    let topics = group
        .topics
        .into_iter()
        .map(|t| OffsetFetchResponseTopic {
            name: t.name,
            partitions: t
                .partitions
                .into_iter()
                .map(|p| OffsetFetchResponsePartition {
                    partition_index: p.partition_index,
                    committed_offset: p.committed_offset,
                    committed_leader_epoch: p.committed_leader_epoch,
                    metadata: p.metadata,
                    error_code: p.error_code,
                })
                .collect(),
        })
        .collect();
    OffsetFetchResponse {
        topics,
        error_code: if version >= TOP_LEVEL_ERROR_MIN_VERSION {
            group.error_code
        } else {
            0
        },
        ..OffsetFetchResponse::default()
    }
}
