//! OffsetFetch (9), v1-9 (v8+ batches groups). Each group is answered by its own shard; a group
//! or partition with nothing committed answers offset -1 with no error (never
//! GROUP_ID_NOT_FOUND, which librdkafka treats as fatal). A group whose shard is loading
//! answers COORDINATOR_LOAD_IN_PROGRESS. Pending transactional offsets do not exist here, so
//! `require_stable` never waits.

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
                    s.fetch_offsets(&g.group_id, member, g.topics.as_deref())
                })
                .unwrap_or_else(|code| offset_fetch_error_group(g, code))
        })
        .collect();
    Reply::Now(ResponseBody::OffsetFetch(offset_fetch_response(
        ctx.api_version,
        answers,
    )))
}
