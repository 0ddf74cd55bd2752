//! What a shard call returns: responses to route, records to append, and the next timer.
//!
//! Mental model: the caller (the server's coordinator runtime) hands every request to the shard
//! with a [`RequestContext`] carrying an opaque [`RequestToken`]. The shard answers through
//! [`Effects::responses`], keyed by token. JoinGroup and SyncGroup are *parked* until the
//! rebalance reaches them, so the responses of one call may answer tokens of earlier calls, and
//! a call may answer nothing. The runtime must:
//! 1. append [`Effects::records`] to the shard's `__consumer_offsets` partition, in order (as
//!    a transactional batch when [`Effects::transactional`] says so);
//! 2. only then send the responses (a response may promise the records are durable);
//! 3. call [`crate::GroupCoordinatorShard::tick`] when [`Effects::next_deadline`] passes.
//!
//! If the append fails, the shard's memory is ahead of its log: the runtime answers the
//! responses with [`Response::with_error`] (`NOT_COORDINATOR`), drops the shard and reloads it
//! by replaying the partition. Responses for tokens whose connection is gone are dropped.
//! Every response is already shaped for the version in its request's context.

use bytes::Bytes;
use skiff_protocol::{
    ConsumerGroupHeartbeatResponse, DeleteGroupsResponse, HeartbeatResponse, JoinGroupResponse,
    LeaveGroupResponse, OffsetCommitResponse, OffsetDeleteResponse, SyncGroupResponse,
    TxnOffsetCommitResponse,
};
use skiff_types::ErrorCode;

/// The caller's handle for one in-flight request (opaque to the shard).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RequestToken(pub u64);

/// Who sent a request, as the shard needs to know it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestContext {
    /// Routes the response back (see [`Effects::responses`]).
    pub token: RequestToken,
    /// The request's api version (from its header); responses are shaped for it.
    pub api_version: i16,
    /// The header's client id (member ids are `<client_id>-<uuid>`; DescribeGroups shows it).
    pub client_id: String,
    /// The client's address as DescribeGroups shows it (Kafka: `/127.0.0.1`).
    pub client_host: String,
}

impl RequestContext {
    /// A context with empty client id and host (tests, admin paths).
    pub fn new(token: u64, api_version: i16) -> Self {
        Self {
            token: RequestToken(token),
            api_version,
            client_id: String::new(),
            client_host: String::new(),
        }
    }
}

/// A response the shard produced, for the request whose token it is paired with.
#[derive(Clone, Debug, PartialEq)]
pub enum Response {
    JoinGroup(JoinGroupResponse),
    SyncGroup(SyncGroupResponse),
    Heartbeat(HeartbeatResponse),
    LeaveGroup(LeaveGroupResponse),
    OffsetCommit(OffsetCommitResponse),
    OffsetDelete(OffsetDeleteResponse),
    /// Results for the groups of *this* shard only; the server merges shards' results.
    DeleteGroups(DeleteGroupsResponse),
    ConsumerGroupHeartbeat(ConsumerGroupHeartbeatResponse),
    TxnOffsetCommit(TxnOffsetCommitResponse),
}

impl Response {
    /// The same response with every error code set to `code` (and payloads cleared), for when
    /// the records it depends on could not be appended.
    pub fn with_error(self, code: ErrorCode) -> Response {
        let c = code.code();
        match self {
            Response::JoinGroup(r) => Response::JoinGroup(JoinGroupResponse {
                error_code: c,
                generation_id: -1,
                member_id: r.member_id,
                protocol_type: None,
                protocol_name: r.protocol_name.map(|_| String::new()),
                leader: String::new(),
                skip_assignment: false,
                members: Vec::new(),
                throttle_time_ms: r.throttle_time_ms,
            }),
            Response::SyncGroup(r) => Response::SyncGroup(SyncGroupResponse {
                error_code: c,
                protocol_type: None,
                protocol_name: None,
                assignment: Bytes::new(),
                throttle_time_ms: r.throttle_time_ms,
            }),
            Response::Heartbeat(mut r) => {
                r.error_code = c;
                Response::Heartbeat(r)
            }
            Response::LeaveGroup(mut r) => {
                r.error_code = c;
                for m in &mut r.members {
                    m.error_code = c;
                }
                Response::LeaveGroup(r)
            }
            Response::OffsetCommit(mut r) => {
                for p in r.topics.iter_mut().flat_map(|t| t.partitions.iter_mut()) {
                    p.error_code = c;
                }
                Response::OffsetCommit(r)
            }
            Response::OffsetDelete(mut r) => {
                r.error_code = c;
                r.topics.clear();
                Response::OffsetDelete(r)
            }
            Response::DeleteGroups(mut r) => {
                for g in &mut r.results {
                    g.error_code = c;
                }
                Response::DeleteGroups(r)
            }
            Response::ConsumerGroupHeartbeat(mut r) => {
                r.error_code = c;
                r.assignment = None;
                Response::ConsumerGroupHeartbeat(r)
            }
            Response::TxnOffsetCommit(mut r) => {
                for p in r.topics.iter_mut().flat_map(|t| t.partitions.iter_mut()) {
                    p.error_code = c;
                }
                Response::TxnOffsetCommit(r)
            }
        }
    }
}

/// Everything one shard call asks the caller to do.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Effects {
    /// Responses to send, possibly for requests parked by earlier calls.
    pub responses: Vec<(RequestToken, Response)>,
    /// `__consumer_offsets` records to append in order: (key, value); `None` is a tombstone.
    pub records: Vec<(Bytes, Option<Bytes>)>,
    /// When to call `tick` next (absolute, caller's clock), if any timer is pending.
    pub next_deadline: Option<i64>,
    /// `Some((producer_id, producer_epoch))` when [`Effects::records`] are a transaction's
    /// offsets (TxnOffsetCommit): the runtime appends them as one *transactional* batch of
    /// that producer, and they count only once its COMMIT marker follows them in the log.
    /// Such effects hold no other record. `None` for every other call.
    pub transactional: Option<(i64, i16)>,
}

impl Effects {
    /// The response for `token`, if this call produced one.
    pub fn response(&self, token: RequestToken) -> Option<&Response> {
        self.responses
            .iter()
            .find(|(t, _)| *t == token)
            .map(|(_, r)| r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use skiff_protocol::{OffsetCommitResponsePartition, OffsetCommitResponseTopic};

    #[test]
    fn with_error_sets_every_error_code() {
        let r = Response::OffsetCommit(OffsetCommitResponse {
            topics: vec![OffsetCommitResponseTopic {
                name: "t".into(),
                partitions: vec![
                    OffsetCommitResponsePartition {
                        partition_index: 0,
                        error_code: 0
                    };
                    2
                ],
            }],
            ..Default::default()
        });
        match r.with_error(ErrorCode::NotCoordinator) {
            Response::OffsetCommit(r) => {
                assert!(r.topics[0].partitions.iter().all(|p| p.error_code == 16));
            }
            other => panic!("{other:?}"),
        }
        let j = Response::JoinGroup(JoinGroupResponse {
            generation_id: 4,
            member_id: "m".into(),
            protocol_name: Some("range".into()),
            ..Default::default()
        });
        match j.with_error(ErrorCode::NotCoordinator) {
            Response::JoinGroup(r) => {
                assert_eq!(
                    (r.error_code, r.generation_id, r.member_id.as_str()),
                    (16, -1, "m")
                );
                assert_eq!(
                    r.protocol_name.as_deref(),
                    Some(""),
                    "still encodable before v7"
                );
            }
            other => panic!("{other:?}"),
        }
    }
}
