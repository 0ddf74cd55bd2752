//! ConsumerGroupHeartbeat (68), v0-1 (KIP-848; v1 is final in Kafka 4.0 and librdkafka
//! requires it): handed to the group's coordinator shard, whose topic view is refreshed from
//! metadata first (server-side assignment needs topic ids and partition counts). An empty
//! `SubscribedTopicRegex` clears the member's regex, as in Kafka (librdkafka sends "" when it
//! has none).

use skiff_protocol::{ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse, ResponseBody};

use super::{Reply, RequestContext};
use crate::coordinator::{Caller, reply};

pub fn handle(ctx: &RequestContext<'_>, req: ConsumerGroupHeartbeatRequest) -> Reply {
    let answer = ctx
        .broker
        .groups
        .call(ctx.broker, &req.group_id, Caller::of(ctx), |s, c, now| {
            s.handle_consumer_group_heartbeat(c, &req, now)
        });
    reply(answer, |code| {
        ResponseBody::ConsumerGroupHeartbeat(ConsumerGroupHeartbeatResponse {
            error_code: code.code(),
            ..ConsumerGroupHeartbeatResponse::default()
        })
    })
}
