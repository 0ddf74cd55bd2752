//! ConsumerGroupDescribe (69), v0-1 (KIP-848; v1 tells each member's protocol, KIP-1043): each
//! group described by its own shard (GROUP_ID_NOT_FOUND for unknown and classic groups).
//!
//! Authorization (issue 19), as Kafka 4's `handleConsumerGroupDescribe`: DESCRIBE on each
//! group; a refused group answers GROUP_AUTHORIZATION_FAILED (only its id), the refused groups
//! first, then the described ones in request order. With `include_authorized_operations` a
//! described group without error carries the group's `authorizedOperations` bitfield for this
//! principal. With an authorizer configured (KAFKA-18813), a described group one of whose
//! members' current or target assignment names a topic the principal may not DESCRIBE is
//! replaced by TOPIC_AUTHORIZATION_FAILED with Kafka's message and no members.

use std::collections::HashMap;

use skiff_auth::acl::{AclOperation, ResourceType};
use skiff_protocol::{
    ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse,
    ConsumerGroupDescribeResponseDescribedGroup, ResponseBody,
};
use skiff_types::ErrorCode;

use super::authz_ops::Checker;
use super::{Reply, RequestContext};

/// Kafka's message for a group whose assignments name topics the principal may not describe.
const UNAUTHORIZED_TOPICS_MESSAGE: &str =
    "The group has described topic(s) that the client is not authorized to describe.";

pub fn handle(ctx: &RequestContext<'_>, req: ConsumerGroupDescribeRequest) -> Reply {
    let authz = Checker::new(ctx);
    let (allowed, refused): (Vec<&String>, Vec<&String>) = req
        .group_ids
        .iter()
        .partition(|id| authz.allows(AclOperation::Describe, ResourceType::Group, id));
    let refused = refused
        .into_iter()
        .map(|id| ConsumerGroupDescribeResponseDescribedGroup {
            error_code: ErrorCode::GroupAuthorizationFailed.code(),
            group_id: id.clone(),
            ..ConsumerGroupDescribeResponseDescribedGroup::default()
        });
    let described = allowed.into_iter().map(|id| {
        let mut g = ctx
            .broker
            .groups
            .read(ctx.broker, id, |s| s.describe_consumer_group(id))
            .unwrap_or_else(|code| ConsumerGroupDescribeResponseDescribedGroup {
                error_code: code.code(),
                group_id: id.clone(),
                ..ConsumerGroupDescribeResponseDescribedGroup::default()
            });
        if req.include_authorized_operations && g.error_code == 0 {
            g.authorized_operations = authz.authorized_operations(ResourceType::Group, id);
        }
        g
    });
    let mut groups: Vec<_> = refused.chain(described).collect();
    if authz.enabled() {
        hide_unauthorized_topics(&authz, &mut groups);
    }
    Reply::Now(ResponseBody::ConsumerGroupDescribe(
        ConsumerGroupDescribeResponse {
            groups,
            ..ConsumerGroupDescribeResponse::default()
        },
    ))
}

/// Replaces each group whose members' assignments name a topic the principal may not
/// DESCRIBE (each topic checked once).
fn hide_unauthorized_topics(
    authz: &Checker<'_>,
    groups: &mut [ConsumerGroupDescribeResponseDescribedGroup],
) {
    let mut allowed: HashMap<String, bool> = HashMap::new();
    for g in groups {
        let hidden = g
            .members
            .iter()
            .flat_map(|m| {
                m.assignment
                    .topic_partitions
                    .iter()
                    .chain(&m.target_assignment.topic_partitions)
            })
            .any(|tp| {
                !*allowed
                    .entry(tp.topic_name.clone())
                    .or_insert_with(|| authz.topic(AclOperation::Describe, &tp.topic_name))
            });
        if hidden {
            *g = ConsumerGroupDescribeResponseDescribedGroup {
                error_code: ErrorCode::TopicAuthorizationFailed.code(),
                error_message: Some(UNAUTHORIZED_TOPICS_MESSAGE.to_string()),
                group_id: std::mem::take(&mut g.group_id),
                ..ConsumerGroupDescribeResponseDescribedGroup::default()
            };
        }
    }
}
