//! OffsetFetch (9), v1-9 (v8+ batches groups). Each group is answered by its own shard; a group
//! or partition with nothing committed answers offset -1 with no error (never
//! GROUP_ID_NOT_FOUND, which librdkafka treats as fatal). A group whose shard is loading
//! answers COORDINATOR_LOAD_IN_PROGRESS. With `require_stable` (v7+), a partition with a
//! pending transactional offset (TxnOffsetCommit whose transaction has not ended) answers
//! UNSTABLE_OFFSET_COMMIT (88) per partition, as Kafka does (the group's error stays NONE);
//! the client retries until the marker has been written.
//!
//! Authorization (issue 19), as Kafka's `handleOffsetFetchRequestFromCoordinator`, per group:
//! DESCRIBE on the group (refused: the group answers GROUP_AUTHORIZATION_FAILED with no
//! topics; v1, which has no group-level error field, carries it on each asked partition as
//! older Kafka did). Named topics: DESCRIBE on each; the unauthorized ones are not asked of
//! the shard and, when the group's answer has no error, are appended after the others with
//! offset -1 and TOPIC_AUTHORIZATION_FAILED on each asked partition (whether the topic exists
//! or not). All topics (`topics` null): the committed topics the principal may not DESCRIBE
//! are left out of the answer.

use skiff_auth::acl::{AclOperation, ResourceType};
use skiff_group::{
    OffsetFetchGroupRequest, offset_fetch_error_group, offset_fetch_groups, offset_fetch_response,
};
use skiff_protocol::{
    OffsetFetchRequest, OffsetFetchRequestTopics, OffsetFetchResponseGroup,
    OffsetFetchResponsePartitions, OffsetFetchResponseTopics, ResponseBody,
};
use skiff_types::ErrorCode;

use super::authz_ops::Checker;
use super::{Reply, RequestContext};

/// OffsetFetch v2+ has a group-level (top-level before v8) error code.
const GROUP_ERROR_MIN_VERSION: i16 = 2;

pub fn handle(ctx: &RequestContext<'_>, req: OffsetFetchRequest) -> Reply {
    let authz = Checker::new(ctx);
    let groups = offset_fetch_groups(&req, ctx.api_version);
    let answers = groups
        .iter()
        .map(|g| {
            if !authz.allows(AclOperation::Describe, ResourceType::Group, &g.group_id) {
                return refused_group(ctx.api_version, g);
            }
            let (asked, unauthorized) = split_topics(&authz, g.topics.as_deref());
            let member = g.member.as_ref().map(|(m, e)| (m.as_str(), *e));
            let mut answer = ctx
                .broker
                .groups
                .read(ctx.broker, &g.group_id, |s| {
                    s.fetch_offsets_stable(
                        &g.group_id,
                        member,
                        asked.as_deref(),
                        req.require_stable,
                    )
                })
                .unwrap_or_else(|code| offset_fetch_error_group(g, code));
            if answer.error_code == ErrorCode::None.code() {
                if asked.is_none() {
                    answer
                        .topics
                        .retain(|t| authz.topic(AclOperation::Describe, &t.name));
                }
                answer
                    .topics
                    .extend(unauthorized.into_iter().map(unauthorized_topic));
            }
            answer
        })
        .collect();
    Reply::Now(ResponseBody::OffsetFetch(offset_fetch_response(
        ctx.api_version,
        answers,
    )))
}

/// A group the principal may not DESCRIBE.
fn refused_group(version: i16, g: &OffsetFetchGroupRequest) -> OffsetFetchResponseGroup {
    if version < GROUP_ERROR_MIN_VERSION {
        return offset_fetch_error_group(g, ErrorCode::GroupAuthorizationFailed);
    }
    OffsetFetchResponseGroup {
        group_id: g.group_id.clone(),
        topics: Vec::new(),
        error_code: ErrorCode::GroupAuthorizationFailed.code(),
    }
}

/// The named topics split into those to ask the shard about and those the principal may not
/// DESCRIBE; `None` (all topics) stays `None`.
fn split_topics(
    authz: &Checker<'_>,
    topics: Option<&[OffsetFetchRequestTopics]>,
) -> (
    Option<Vec<OffsetFetchRequestTopics>>,
    Vec<OffsetFetchRequestTopics>,
) {
    let Some(topics) = topics else {
        return (None, Vec::new());
    };
    let (allowed, refused) = topics
        .iter()
        .cloned()
        .partition(|t| authz.topic(AclOperation::Describe, &t.name));
    (Some(allowed), refused)
}

/// Kafka's answer for a topic the principal may not DESCRIBE.
fn unauthorized_topic(t: OffsetFetchRequestTopics) -> OffsetFetchResponseTopics {
    OffsetFetchResponseTopics {
        partitions: t
            .partition_indexes
            .iter()
            .map(|p| OffsetFetchResponsePartitions {
                partition_index: *p,
                committed_offset: -1,
                committed_leader_epoch: -1,
                metadata: Some(String::new()),
                error_code: ErrorCode::TopicAuthorizationFailed.code(),
            })
            .collect(),
        name: t.name,
    }
}
