//! ConsumerGroupHeartbeat (68), v0-1 (KIP-848; v1 is final in Kafka 4.0 and librdkafka
//! requires it): handed to the group's coordinator shard, whose topic view is refreshed from
//! metadata first (server-side assignment needs topic ids and partition counts). An empty
//! `SubscribedTopicRegex` clears the member's regex, as in Kafka (librdkafka sends "" when it
//! has none).
//!
//! Authorization (issue 19), as Kafka 4's `handleConsumerGroupHeartbeat`: READ on the group
//! (refused: GROUP_AUTHORIZATION_FAILED); then, when the request names subscribed topics,
//! DESCRIBE on each (KAFKA-18813): if any is refused the heartbeat answers
//! TOPIC_AUTHORIZATION_FAILED without reaching the coordinator. Kafka leaves the message null;
//! here it names the refused topics (sorted), which are the client's own subscription.
//! Not done: Kafka's filtering of regex-resolved topics by the refreshing member's ACLs.

use std::collections::BTreeSet;

use skiff_auth::acl::{AclOperation, ResourceType};
use skiff_protocol::{ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse, ResponseBody};
use skiff_types::ErrorCode;

use super::authz_ops::Checker;
use super::{Reply, RequestContext};
use crate::coordinator::{Caller, reply};

pub fn handle(ctx: &RequestContext<'_>, req: ConsumerGroupHeartbeatRequest) -> Reply {
    let authz = Checker::new(ctx);
    if !authz.allows(AclOperation::Read, ResourceType::Group, &req.group_id) {
        return Reply::Now(error_response(ErrorCode::GroupAuthorizationFailed));
    }
    if let Some(topics) = &req.subscribed_topic_names
        && authz.enabled()
    {
        let refused: BTreeSet<&str> = topics
            .iter()
            .map(String::as_str)
            .filter(|t| !authz.topic(AclOperation::Describe, t))
            .collect();
        if !refused.is_empty() {
            let names = refused.into_iter().collect::<Vec<_>>().join(", ");
            return Reply::Now(ResponseBody::ConsumerGroupHeartbeat(
                ConsumerGroupHeartbeatResponse {
                    error_code: ErrorCode::TopicAuthorizationFailed.code(),
                    error_message: Some(format!("Not authorized to describe topics: {names}")),
                    ..ConsumerGroupHeartbeatResponse::default()
                },
            ));
        }
    }
    let answer = ctx
        .broker
        .groups
        .call(ctx.broker, &req.group_id, Caller::of(ctx), |s, c, now| {
            s.handle_consumer_group_heartbeat(c, &req, now)
        });
    reply(answer, error_response)
}

fn error_response(code: ErrorCode) -> ResponseBody {
    ResponseBody::ConsumerGroupHeartbeat(ConsumerGroupHeartbeatResponse {
        error_code: code.code(),
        ..ConsumerGroupHeartbeatResponse::default()
    })
}
