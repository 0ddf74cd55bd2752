//! InitProducerId with a transactional id (Kafka's `handleInitProducerId` /
//! `prepareInitProducerIdTransit`, transactions v1).
//!
//! Decision order: no / empty id -> INVALID_REQUEST; timeout outside `1..=max` ->
//! INVALID_TRANSACTION_TIMEOUT; v3+ with exactly one of producer id / epoch set ->
//! INVALID_REQUEST; unknown id -> a new producer id (the caller's allocator) at epoch -1; the
//! KIP-360 producer id check -> PRODUCER_FENCED; then by state: `Prepare*` ->
//! CONCURRENT_TRANSACTIONS; `Ongoing` -> abort it with an epoch bump (`PrepareAbort` + markers)
//! and CONCURRENT_TRANSACTIONS, so the client retries; `Empty` / `Complete*` -> `Empty` at
//! epoch + 1 (a new producer id at epoch 0 once the epoch is exhausted; a KIP-360 retry of the
//! last bump returns the current epoch). PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v4.
//! Every answer goes out once the call's records are durable.

use skiff_protocol::{InitProducerIdRequest, InitProducerIdResponse};
use skiff_types::ErrorCode;

use crate::effects::{Effects, RequestContext, Response};
use crate::metadata::{NO_EPOCH, NO_PRODUCER_ID, TxnMetadata, TxnState};
use crate::shard::TxnShard;

/// The first InitProducerId version that understands PRODUCER_FENCED.
const PRODUCER_FENCED_MIN_VERSION: i16 = 4;
/// The first InitProducerId version carrying the producer id and epoch (KIP-360).
const EXPECTED_PRODUCER_MIN_VERSION: i16 = 3;

impl TxnShard {
    /// InitProducerId for a transactional id. `new_producer_id` allocates a producer id (only
    /// called when one is needed: a new id, or an exhausted epoch).
    pub fn init_producer_id(
        &mut self,
        ctx: &RequestContext,
        req: &InitProducerIdRequest,
        now_ms: i64,
        new_producer_id: &mut dyn FnMut() -> Result<i64, ErrorCode>,
    ) -> Effects {
        self.begin(now_ms);
        let (mut code, producer_id, producer_epoch) =
            match self.init_inner(ctx.api_version, req, new_producer_id) {
                Ok((pid, epoch)) => (ErrorCode::None, pid, epoch),
                Err(code) => (code, NO_PRODUCER_ID, NO_EPOCH),
            };
        if code == ErrorCode::ProducerFenced && ctx.api_version < PRODUCER_FENCED_MIN_VERSION {
            code = ErrorCode::InvalidProducerEpoch;
        }
        let response = InitProducerIdResponse {
            throttle_time_ms: 0,
            error_code: code.code(),
            producer_id,
            producer_epoch,
        };
        self.respond(ctx.token, Response::InitProducerId(response));
        self.finish()
    }

    fn init_inner(
        &mut self,
        version: i16,
        req: &InitProducerIdRequest,
        new_producer_id: &mut dyn FnMut() -> Result<i64, ErrorCode>,
    ) -> Result<(i64, i16), ErrorCode> {
        let id = match req.transactional_id.as_deref() {
            Some(id) if !id.is_empty() => id,
            _ => return Err(ErrorCode::InvalidRequest),
        };
        let timeout = req.transaction_timeout_ms;
        if timeout <= 0 || timeout > self.config.transaction_max_timeout_ms {
            return Err(ErrorCode::InvalidTransactionTimeout);
        }
        let expected = if version >= EXPECTED_PRODUCER_MIN_VERSION {
            match (req.producer_id, req.producer_epoch) {
                (NO_PRODUCER_ID, NO_EPOCH) => None,
                (NO_PRODUCER_ID, _) | (_, NO_EPOCH) => return Err(ErrorCode::InvalidRequest),
                (pid, epoch) => Some((pid, epoch)),
            }
        } else {
            None
        };
        let mut m = match self.txns.get(id) {
            Some(m) => m.clone(),
            None => TxnMetadata::new(new_producer_id()?, timeout, self.now),
        };
        if let Some((pid, epoch)) = expected {
            // Kafka's isValidProducerId: a just-created id, the current producer id, or a retry
            // of a rotation from the previous one at an exhausted epoch.
            let valid = m.producer_epoch == NO_EPOCH
                || pid == m.producer_id
                || (pid == m.previous_producer_id && epoch >= crate::metadata::EPOCH_EXHAUSTED);
            if !valid {
                return Err(ErrorCode::ProducerFenced);
            }
        }
        match m.state {
            TxnState::PrepareCommit
            | TxnState::PrepareAbort
            | TxnState::PrepareEpochFence
            | TxnState::Dead => Err(ErrorCode::ConcurrentTransactions),
            TxnState::Ongoing => {
                self.txns.insert(id.to_string(), m);
                self.fence_and_abort(id);
                Err(ErrorCode::ConcurrentTransactions)
            }
            TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort => {
                let old_pid = m.producer_id;
                let rotate = m.epoch_exhausted()
                    && expected.is_none_or(|(_, epoch)| epoch == m.producer_epoch);
                if rotate {
                    let pid = new_producer_id()?;
                    m.last_producer_epoch = if expected.is_some() {
                        m.producer_epoch
                    } else {
                        NO_EPOCH
                    };
                    m.producer_id = pid;
                    m.producer_epoch = 0;
                } else {
                    bump_epoch(&mut m, expected.map(|(_, epoch)| epoch))?;
                }
                m.previous_producer_id = old_pid;
                m.timeout_ms = timeout;
                m.state = TxnState::Empty;
                m.partitions.clear();
                m.start_ms = -1;
                m.last_update_ms = self.now;
                let answer = (m.producer_id, m.producer_epoch);
                self.txns.insert(id.to_string(), m);
                self.write(id);
                Ok(answer)
            }
        }
    }
}

/// Kafka's `prepareIncrementProducerEpoch`: bump (remembering the old epoch when the producer
/// named it), return the current epoch for a retry of the last bump, or fence.
fn bump_epoch(m: &mut TxnMetadata, expected_epoch: Option<i16>) -> Result<(), ErrorCode> {
    let bumped = || {
        if m.epoch_exhausted() {
            // Unreachable through init_inner (exhausted epochs rotate or are retries); never
            // hand out an exhausted epoch.
            Err(ErrorCode::ProducerFenced)
        } else {
            Ok(m.producer_epoch.saturating_add(1))
        }
    };
    match expected_epoch {
        None => {
            m.producer_epoch = bumped()?;
            m.last_producer_epoch = NO_EPOCH;
        }
        Some(e) if m.producer_epoch == NO_EPOCH || e == m.producer_epoch => {
            let next = bumped()?;
            m.last_producer_epoch = m.producer_epoch;
            m.producer_epoch = next;
        }
        Some(e) if e == m.last_producer_epoch => {}
        Some(_) => return Err(ErrorCode::ProducerFenced),
    }
    Ok(())
}
