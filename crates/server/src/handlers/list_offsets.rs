//! ListOffsets (2), v1-10: offsets by timestamp, and the special timestamps.
//!
//! -1 latest: the high watermark (read_uncommitted) or last stable offset (read_committed;
//! equal until transactions exist); -2 earliest: the log start offset; -3 (v7+) the record
//! with the largest timestamp; -4 (v8+) earliest local = earliest (no tiered storage); -5
//! (v9+) latest tiered: nothing is tiered, so "not found" (-1, -1); T >= 0: the first offset
//! whose timestamp is >= T, never at or beyond the bound (else "not found"). A special
//! timestamp newer than the request version -> UNSUPPORTED_VERSION for that partition.
//! Delayed delivery (issue 8): for clients (replica id < 0) the bound is also capped at the
//! delivery stable offset, so -1 answers min(HW, DSO) and `seekToEnd` cannot skip waiting
//! records.
//! `current_leader_epoch` (v4+) is checked: FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH.
//! Authorization (issue 19): DESCRIBE on each topic, checked before its existence; refused ->
//! TOPIC_AUTHORIZATION_FAILED on each of its partitions (offset and timestamp -1).

use skiff_auth::acl::AclOperation;
use skiff_protocol::{
    ListOffsetsPartitionResponse, ListOffsetsRequest, ListOffsetsResponse,
    ListOffsetsTopicResponse, ResponseBody,
};
use skiff_types::ErrorCode;

use super::authz_ops::Checker;
use super::{Reply, RequestContext};
use skiff_replication::{Isolation, Reader};

use skiff_storage::read::{
    EARLIEST_TIMESTAMP as EARLIEST, LATEST_TIMESTAMP as LATEST, MAX_TIMESTAMP,
};
const EARLIEST_LOCAL: i64 = -4;
const LATEST_TIERED: i64 = -5;
/// First version whose response carries a leader epoch.
const LEADER_EPOCH_MIN_VERSION: i16 = 4;

struct Found {
    offset: i64,
    timestamp: i64,
    leader_epoch: i32,
}

const NOT_FOUND: Found = Found {
    offset: -1,
    timestamp: -1,
    leader_epoch: -1,
};

pub fn handle(ctx: &RequestContext<'_>, req: ListOffsetsRequest) -> Reply {
    let v = ctx.api_version;
    let image = ctx.broker.image();
    let read_committed = req.isolation_level == 1;
    let authz = Checker::new(ctx);
    let topics = req
        .topics
        .iter()
        .map(|t| {
            let allowed = authz.topic(AclOperation::Describe, &t.name);
            (t, allowed)
        })
        .map(|(t, allowed)| ListOffsetsTopicResponse {
            name: t.name.clone(),
            partitions: t
                .partitions
                .iter()
                .map(|p| {
                    let result = allowed
                        .then(|| image.topic(&t.name))
                        .ok_or(ErrorCode::TopicAuthorizationFailed)
                        .and_then(|i| i.ok_or(ErrorCode::UnknownTopicOrPartition))
                        .and_then(|info| {
                            lookup(
                                ctx,
                                info,
                                p.partition_index,
                                p.current_leader_epoch,
                                p.timestamp,
                                read_committed,
                                req.replica_id,
                            )
                        });
                    let (error, found) = match result {
                        Ok(f) => (ErrorCode::None, f),
                        Err(code) => (code, NOT_FOUND),
                    };
                    ListOffsetsPartitionResponse {
                        partition_index: p.partition_index,
                        error_code: error as i16,
                        timestamp: found.timestamp,
                        offset: found.offset,
                        leader_epoch: if v >= LEADER_EPOCH_MIN_VERSION {
                            found.leader_epoch
                        } else {
                            -1
                        },
                    }
                })
                .collect(),
        })
        .collect();
    Reply::Now(ResponseBody::ListOffsets(ListOffsetsResponse {
        topics,
        ..ListOffsetsResponse::default()
    }))
}

fn lookup(
    ctx: &RequestContext<'_>,
    info: &skiff_metadata::TopicInfo,
    partition: i32,
    current_leader_epoch: i32,
    timestamp: i64,
    read_committed: bool,
    replica_id: i32,
) -> Result<Found, ErrorCode> {
    let v = ctx.api_version;
    let min_version = match timestamp {
        MAX_TIMESTAMP => 7,
        EARLIEST_LOCAL => 8,
        LATEST_TIERED => 9,
        _ => 0,
    };
    if v < min_version {
        return Err(ErrorCode::UnsupportedVersion);
    }
    // The one read-bound rule (replica manager): a consumer stops at the HW (LSO with
    // read_committed; equal until transactions exist) and the delivery stable offset.
    let reader = if replica_id < 0 {
        Reader::Consumer(if read_committed {
            Isolation::ReadCommitted
        } else {
            Isolation::ReadUncommitted
        })
    } else {
        Reader::Replica(replica_id)
    };
    let target = match timestamp {
        LATEST_TIERED => return Ok(NOT_FOUND),
        EARLIEST_LOCAL => EARLIEST,
        t if t < 0 && t != LATEST && t != EARLIEST && t != MAX_TIMESTAMP => return Ok(NOT_FOUND),
        t => t,
    };
    let found = ctx.broker.replicas.offset_for_timestamp(
        info,
        partition,
        current_leader_epoch,
        reader,
        target,
    )?;
    Ok(found.map_or(NOT_FOUND, |found| Found {
        offset: found.offset,
        timestamp: found.timestamp,
        leader_epoch: found.leader_epoch.unwrap_or(-1),
    }))
}
