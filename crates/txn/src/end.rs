//! EndTxn (Kafka's `handleEndTransaction` from a client, transactions v1, EndTxn v0-4).
//!
//! Decision order: empty id -> INVALID_REQUEST; unknown id or another producer id ->
//! INVALID_PRODUCER_ID_MAPPING; another epoch -> PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before
//! v2); then by state and the requested result:
//!
//! | state            | commit                  | abort                   |
//! |------------------|-------------------------|-------------------------|
//! | `Ongoing`        | `PrepareCommit`, NONE   | `PrepareAbort`, NONE    |
//! | `PrepareCommit`  | CONCURRENT_TRANSACTIONS | INVALID_TXN_STATE       |
//! | `PrepareAbort`   | INVALID_TXN_STATE       | CONCURRENT_TRANSACTIONS |
//! | `CompleteCommit` | NONE (a retry)          | INVALID_TXN_STATE       |
//! | `CompleteAbort`  | INVALID_TXN_STATE       | NONE (a retry)          |
//! | `Empty`          | INVALID_TXN_STATE       | INVALID_TXN_STATE       |
//!
//! The `Prepare*` record and the [`crate::MarkerJob`] come out of the same call: the runtime
//! answers NONE once the record is durable and starts the markers after it. A transaction with
//! no partitions completes at once (`Complete*` record too, no markers).

use skiff_protocol::{EndTxnRequest, EndTxnResponse};
use skiff_types::ErrorCode;

use crate::add::fenced_for;
use crate::effects::{Effects, RequestContext, Response, TxnResult};
use crate::metadata::TxnState;
use crate::shard::TxnShard;

impl TxnShard {
    /// EndTxn: commit or abort the producer's ongoing transaction.
    pub fn end_txn(&mut self, ctx: &RequestContext, req: &EndTxnRequest, now_ms: i64) -> Effects {
        self.begin(now_ms);
        let result = TxnResult::from_committed(req.committed);
        let code = self.end_inner(
            &req.transactional_id,
            req.producer_id,
            req.producer_epoch,
            result,
        );
        let response = EndTxnResponse {
            throttle_time_ms: 0,
            error_code: fenced_for(ctx.api_version, code).code(),
        };
        self.respond(ctx.token, Response::EndTxn(response));
        self.finish()
    }

    fn end_inner(
        &mut self,
        id: &str,
        producer_id: i64,
        epoch: i16,
        result: TxnResult,
    ) -> ErrorCode {
        if id.is_empty() {
            return ErrorCode::InvalidRequest;
        }
        let Some(m) = self.txns.get(id) else {
            return ErrorCode::InvalidProducerIdMapping;
        };
        if m.producer_id != producer_id {
            return ErrorCode::InvalidProducerIdMapping;
        }
        if m.producer_epoch != epoch {
            return ErrorCode::ProducerFenced;
        }
        use TxnResult::{Abort, Commit};
        match (m.state, result) {
            (TxnState::Ongoing, _) => {
                self.prepare(id, result);
                ErrorCode::None
            }
            (TxnState::CompleteCommit, Commit) | (TxnState::CompleteAbort, Abort) => {
                ErrorCode::None
            }
            (TxnState::PrepareCommit, Commit)
            | (TxnState::PrepareAbort, Abort)
            | (TxnState::PrepareEpochFence, _) => ErrorCode::ConcurrentTransactions,
            _ => ErrorCode::InvalidTxnState,
        }
    }
}
