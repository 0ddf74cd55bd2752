//! What a shard call returns: responses to route, records to append, markers to write, and the
//! next timer.
//!
//! Mental model: the caller (the server's transaction coordinator runtime) hands every request
//! to the shard with a [`RequestContext`] carrying an opaque [`RequestToken`]; the shard answers
//! through [`Effects::responses`], keyed by token, already shaped for the request's version.
//! The runtime must:
//! 1. append [`Effects::records`] to the shard's `__transaction_state` partition, in order
//!    (acks=all);
//! 2. only then send the responses (a response may promise its records are durable; a response
//!    with no record of its own may still depend on records of earlier calls, so responses go
//!    out in call order after every earlier append);
//! 3. only then start the [`Effects::markers`] (WriteTxnMarkers to each partition's leader,
//!    stamped with [`MarkerJob::coordinator_epoch`]), and call
//!    [`crate::TxnShard::markers_written`] once every partition of a job has its marker;
//! 4. call [`crate::TxnShard::tick`] when [`Effects::next_deadline`] passes.
//!
//! If the append fails, the shard's memory is ahead of its log: the runtime answers the
//! responses with [`Response::with_error`] (`NOT_COORDINATOR`), drops the markers, drops the
//! shard and reloads it by replaying the partition (then [`crate::TxnShard::on_loaded`]).

use bytes::Bytes;
use skiff_protocol::{
    AddOffsetsToTxnResponse, AddPartitionsToTxnResponse, EndTxnResponse, InitProducerIdResponse,
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
    /// The request's api version (from its header); responses and error codes are shaped for it.
    pub api_version: i16,
}

impl RequestContext {
    pub fn new(token: u64, api_version: i16) -> Self {
        Self {
            token: RequestToken(token),
            api_version,
        }
    }
}

/// A response the shard produced, for the request whose token it is paired with.
#[derive(Clone, Debug, PartialEq)]
pub enum Response {
    InitProducerId(InitProducerIdResponse),
    AddPartitionsToTxn(AddPartitionsToTxnResponse),
    AddOffsetsToTxn(AddOffsetsToTxnResponse),
    EndTxn(EndTxnResponse),
}

impl Response {
    /// The same response with every error code set to `code` (and the producer id / epoch of
    /// InitProducerId cleared), for when the records it depends on could not be appended.
    pub fn with_error(self, code: ErrorCode) -> Response {
        let c = code.code();
        match self {
            Response::InitProducerId(mut r) => {
                r.error_code = c;
                r.producer_id = -1;
                r.producer_epoch = -1;
                Response::InitProducerId(r)
            }
            Response::AddPartitionsToTxn(mut r) => {
                let topics = r.results_by_topic_v3_and_below.iter_mut().chain(
                    r.results_by_transaction
                        .iter_mut()
                        .flat_map(|t| t.topic_results.iter_mut()),
                );
                for p in topics.flat_map(|t| t.results_by_partition.iter_mut()) {
                    p.partition_error_code = c;
                }
                Response::AddPartitionsToTxn(r)
            }
            Response::AddOffsetsToTxn(mut r) => {
                r.error_code = c;
                Response::AddOffsetsToTxn(r)
            }
            Response::EndTxn(mut r) => {
                r.error_code = c;
                Response::EndTxn(r)
            }
        }
    }

    /// The response's error codes, flattened (one per partition for AddPartitionsToTxn).
    pub fn error_codes(&self) -> Vec<i16> {
        match self {
            Response::InitProducerId(r) => vec![r.error_code],
            Response::AddPartitionsToTxn(r) => r
                .results_by_topic_v3_and_below
                .iter()
                .chain(
                    r.results_by_transaction
                        .iter()
                        .flat_map(|t| &t.topic_results),
                )
                .flat_map(|t| &t.results_by_partition)
                .map(|p| p.partition_error_code)
                .collect(),
            Response::AddOffsetsToTxn(r) => vec![r.error_code],
            Response::EndTxn(r) => vec![r.error_code],
        }
    }
}

/// The outcome a transaction's markers carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TxnResult {
    Commit,
    Abort,
}

impl TxnResult {
    /// EndTxn's `committed` flag as a result.
    pub fn from_committed(committed: bool) -> Self {
        if committed { Self::Commit } else { Self::Abort }
    }

    /// WriteTxnMarkers' `transaction_result` flag (true = commit).
    pub fn is_commit(self) -> bool {
        self == Self::Commit
    }
}

/// WriteTxnMarkers work: write a `result` control batch for `producer_id`/`producer_epoch` to
/// every partition, then call [`crate::TxnShard::markers_written`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MarkerJob {
    pub transactional_id: String,
    pub producer_id: i64,
    pub producer_epoch: i16,
    /// The shard's coordinator epoch (the `__transaction_state` partition's leader epoch); the
    /// marker's control record carries it so a stale coordinator's markers are refused.
    pub coordinator_epoch: i32,
    pub result: TxnResult,
    /// The transaction's partitions, sorted; never empty.
    pub partitions: Vec<(String, i32)>,
}

/// Everything one shard call asks the caller to do.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Effects {
    /// Responses to send once `records` are durable.
    pub responses: Vec<(RequestToken, Response)>,
    /// `__transaction_state` records to append in order: (key, value); `None` is a tombstone.
    pub records: Vec<(Bytes, Option<Bytes>)>,
    /// Markers to start once `records` are durable.
    pub markers: Vec<MarkerJob>,
    /// When to call `tick` next (absolute, caller's clock), if any timer is pending.
    pub next_deadline: Option<i64>,
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
    use skiff_protocol::{AddPartitionsToTxnPartitionResult, AddPartitionsToTxnTopicResult};

    #[test]
    fn with_error_sets_every_error_code() {
        let r = Response::AddPartitionsToTxn(AddPartitionsToTxnResponse {
            results_by_topic_v3_and_below: vec![AddPartitionsToTxnTopicResult {
                name: "t".into(),
                results_by_partition: vec![
                    AddPartitionsToTxnPartitionResult {
                        partition_index: 0,
                        partition_error_code: 0,
                    };
                    2
                ],
            }],
            ..Default::default()
        });
        assert_eq!(
            r.with_error(ErrorCode::NotCoordinator).error_codes(),
            [16, 16]
        );
        let i = Response::InitProducerId(InitProducerIdResponse {
            producer_id: 7,
            producer_epoch: 3,
            ..Default::default()
        });
        match i.with_error(ErrorCode::NotCoordinator) {
            Response::InitProducerId(r) => {
                assert_eq!(
                    (r.error_code, r.producer_id, r.producer_epoch),
                    (16, -1, -1)
                )
            }
            other => panic!("{other:?}"),
        }
    }
}
