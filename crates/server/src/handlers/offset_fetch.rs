//! OffsetFetch (9), v1-9 (v8+ batches groups). Each group is answered by its own shard; a group
//! or partition with nothing committed answers offset -1 with no error (never
//! GROUP_ID_NOT_FOUND, which librdkafka treats as fatal). A group whose shard is loading
//! answers COORDINATOR_LOAD_IN_PROGRESS. With `require_stable` (v7+), a partition with a
//! pending transactional offset (TxnOffsetCommit whose transaction has not ended) answers
//! UNSTABLE_OFFSET_COMMIT (88) per partition, as Kafka does (the group's error stays NONE);
//! the client retries until the marker has been written.

use skiff_group::{offset_fetch_error_group, offset_fetch_groups, offset_fetch_response};
use skiff_protocol::{OffsetFetchRequest, ResponseBody};

use super::{Reply, RequestContext};

pub fn handle(ctx: &RequestContext<'_>, req: OffsetFetchRequest) -> Reply {
    let groups = offset_fetch_groups(&req, ctx.api_version);
    let answers = groups
        .iter()
        .map(|g| {
            let member = g.member.as_ref().map(|(m, e)| (m.as_str(), *e));
            ctx.broker
                .groups
                .read(ctx.broker, &g.group_id, |s| {
                    s.fetch_offsets_stable(
                        &g.group_id,
                        member,
                        g.topics.as_deref(),
                        req.require_stable,
                    )
                })
                .unwrap_or_else(|code| offset_fetch_error_group(g, code))
        })
        .collect();
    Reply::Now(ResponseBody::OffsetFetch(offset_fetch_response(
        ctx.api_version,
        answers,
    )))
}
