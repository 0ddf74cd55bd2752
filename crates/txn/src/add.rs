//! AddPartitionsToTxn (v0-3 from clients, v4-5 batched from brokers with `verify_only`) and
//! AddOffsetsToTxn (Kafka's `handleAddPartitionsToTransaction` /
//! `handleVerifyPartitionsInTransaction`, plus `KafkaApis`' per-version error mapping).
//!
//! Adding, in order: empty id -> INVALID_REQUEST; unknown id or another producer id ->
//! INVALID_PRODUCER_ID_MAPPING; another epoch -> PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before
//! v2); `Prepare*` -> CONCURRENT_TRANSACTIONS; `Ongoing` already holding every partition ->
//! NONE without a record; otherwise `Ongoing` with the union (the start timestamp set when the
//! transaction starts), one record, NONE once durable. The error applies to every partition
//! of that transaction.
//!
//! Verifying (`verify_only`, KIP-890 part 1: a partition leader asking before the first
//! transactional batch): the same id / producer checks (PRODUCER_FENCED as is), `Prepare*` ->
//! CONCURRENT_TRANSACTIONS, then per partition NONE if it is in the transaction, else
//! TRANSACTION_ABORTABLE (v5) or INVALID_TXN_STATE (v4, which predates that code); never a
//! record.
//!
//! A caller-side per-partition check ([`TxnShard::add_partitions_checked`]: unknown topic,
//! authorization) fails the whole transaction: the failing partitions answer their code, the
//! others OPERATION_NOT_ATTEMPTED, and the coordinator is not consulted.

use std::collections::BTreeSet;

use skiff_protocol::{
    AddOffsetsToTxnRequest, AddOffsetsToTxnResponse, AddPartitionsToTxnPartitionResult,
    AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, AddPartitionsToTxnResult,
    AddPartitionsToTxnTopic, AddPartitionsToTxnTopicResult,
};
use skiff_types::ErrorCode;

use crate::effects::{Effects, RequestContext, Response};
use crate::metadata::TxnState;
use crate::shard::TxnShard;

/// The topic AddOffsetsToTxn adds a partition of.
pub const CONSUMER_OFFSETS_TOPIC: &str = "__consumer_offsets";
/// The first AddPartitionsToTxn / AddOffsetsToTxn / EndTxn version that understands
/// PRODUCER_FENCED (older ones get INVALID_PRODUCER_EPOCH).
pub(crate) const PRODUCER_FENCED_MIN_VERSION: i16 = 2;
/// The first AddPartitionsToTxn version with the batched, broker-side form.
const BATCHED_MIN_VERSION: i16 = 4;
/// The first AddPartitionsToTxn version that may answer TRANSACTION_ABORTABLE.
const TRANSACTION_ABORTABLE_MIN_VERSION: i16 = 5;

/// A request's partitions by topic, in request order, duplicates merged.
type TopicPartitions = Vec<(String, Vec<i32>)>;

fn collect(topics: &[AddPartitionsToTxnTopic]) -> TopicPartitions {
    let mut out: TopicPartitions = Vec::new();
    for t in topics {
        let idx = match out.iter().position(|(name, _)| *name == t.name) {
            Some(i) => i,
            None => {
                out.push((t.name.clone(), Vec::new()));
                out.len() - 1
            }
        };
        for p in &t.partitions {
            if !out[idx].1.contains(p) {
                out[idx].1.push(*p);
            }
        }
    }
    out
}

fn results(
    parts: &TopicPartitions,
    mut code_of: impl FnMut(&str, i32) -> ErrorCode,
) -> Vec<AddPartitionsToTxnTopicResult> {
    parts
        .iter()
        .map(|(topic, ps)| AddPartitionsToTxnTopicResult {
            name: topic.clone(),
            results_by_partition: ps
                .iter()
                .map(|p| AddPartitionsToTxnPartitionResult {
                    partition_index: *p,
                    partition_error_code: code_of(topic, *p).code(),
                })
                .collect(),
        })
        .collect()
}

/// PRODUCER_FENCED as a client of `version` understands it.
pub(crate) fn fenced_for(version: i16, code: ErrorCode) -> ErrorCode {
    if code == ErrorCode::ProducerFenced && version < PRODUCER_FENCED_MIN_VERSION {
        ErrorCode::InvalidProducerEpoch
    } else {
        code
    }
}

/// One transaction of a request.
struct TxnRequest<'a> {
    id: &'a str,
    producer_id: i64,
    producer_epoch: i16,
    verify_only: bool,
    parts: TopicPartitions,
}

impl TxnShard {
    /// AddPartitionsToTxn, every partition assumed to exist and be writable.
    pub fn add_partitions(
        &mut self,
        ctx: &RequestContext,
        req: &AddPartitionsToTxnRequest,
        now_ms: i64,
    ) -> Effects {
        self.add_partitions_checked(ctx, req, now_ms, &mut |_, _| None)
    }

    /// AddPartitionsToTxn with the caller's per-partition check (`Some(code)`: the partition
    /// fails with `code`, e.g. UNKNOWN_TOPIC_OR_PARTITION or TOPIC_AUTHORIZATION_FAILED).
    pub fn add_partitions_checked(
        &mut self,
        ctx: &RequestContext,
        req: &AddPartitionsToTxnRequest,
        now_ms: i64,
        check: &mut dyn FnMut(&str, i32) -> Option<ErrorCode>,
    ) -> Effects {
        self.begin(now_ms);
        let version = ctx.api_version;
        let mut response = AddPartitionsToTxnResponse::default();
        if version < BATCHED_MIN_VERSION {
            let txn = TxnRequest {
                id: &req.v3_and_below_transactional_id,
                producer_id: req.v3_and_below_producer_id,
                producer_epoch: req.v3_and_below_producer_epoch,
                verify_only: false,
                parts: collect(&req.v3_and_below_topics),
            };
            response.results_by_topic_v3_and_below = self.add_one(version, &txn, check);
        } else {
            for t in &req.transactions {
                let txn = TxnRequest {
                    id: &t.transactional_id,
                    producer_id: t.producer_id,
                    producer_epoch: t.producer_epoch,
                    verify_only: t.verify_only,
                    parts: collect(&t.topics),
                };
                let topic_results = self.add_one(version, &txn, check);
                response
                    .results_by_transaction
                    .push(AddPartitionsToTxnResult {
                        transactional_id: t.transactional_id.clone(),
                        topic_results,
                    });
            }
        }
        self.respond(ctx.token, Response::AddPartitionsToTxn(response));
        self.finish()
    }

    /// AddOffsetsToTxn: adds `("__consumer_offsets", offsets_partition)` (the group's
    /// partition, computed by the caller) to the transaction.
    pub fn add_offsets(
        &mut self,
        ctx: &RequestContext,
        req: &AddOffsetsToTxnRequest,
        offsets_partition: i32,
        now_ms: i64,
    ) -> Effects {
        self.begin(now_ms);
        let parts = BTreeSet::from([(CONSUMER_OFFSETS_TOPIC.to_string(), offsets_partition)]);
        let code = self.add_to_txn(
            &req.transactional_id,
            req.producer_id,
            req.producer_epoch,
            &parts,
        );
        let response = AddOffsetsToTxnResponse {
            throttle_time_ms: 0,
            error_code: fenced_for(ctx.api_version, code).code(),
        };
        self.respond(ctx.token, Response::AddOffsetsToTxn(response));
        self.finish()
    }

    fn add_one(
        &mut self,
        version: i16,
        txn: &TxnRequest<'_>,
        check: &mut dyn FnMut(&str, i32) -> Option<ErrorCode>,
    ) -> Vec<AddPartitionsToTxnTopicResult> {
        let mut failed = Vec::new();
        for (topic, ps) in &txn.parts {
            for p in ps {
                if let Some(code) = check(topic, *p) {
                    failed.push(((topic.clone(), *p), code));
                }
            }
        }
        if !failed.is_empty() {
            return results(&txn.parts, |t, p| {
                failed
                    .iter()
                    .find(|((ft, fp), _)| ft == t && *fp == p)
                    .map_or(ErrorCode::OperationNotAttempted, |(_, code)| *code)
            });
        }
        if txn.verify_only {
            return self.verify(version, txn);
        }
        let set: BTreeSet<(String, i32)> = txn
            .parts
            .iter()
            .flat_map(|(t, ps)| ps.iter().map(move |p| (t.clone(), *p)))
            .collect();
        let code = self.add_to_txn(txn.id, txn.producer_id, txn.producer_epoch, &set);
        let code = fenced_for(version, code);
        results(&txn.parts, |_, _| code)
    }

    /// The producer checks shared by adding and verifying.
    fn check_producer(&self, id: &str, producer_id: i64, epoch: i16) -> Result<(), ErrorCode> {
        if id.is_empty() {
            return Err(ErrorCode::InvalidRequest);
        }
        let m = self
            .txns
            .get(id)
            .ok_or(ErrorCode::InvalidProducerIdMapping)?;
        if m.producer_id != producer_id {
            return Err(ErrorCode::InvalidProducerIdMapping);
        }
        if m.producer_epoch != epoch {
            return Err(ErrorCode::ProducerFenced);
        }
        if matches!(
            m.state,
            TxnState::PrepareCommit | TxnState::PrepareAbort | TxnState::PrepareEpochFence
        ) {
            return Err(ErrorCode::ConcurrentTransactions);
        }
        Ok(())
    }

    /// Adds `parts` to `id`'s transaction; the code for every partition (PRODUCER_FENCED
    /// unmapped).
    fn add_to_txn(
        &mut self,
        id: &str,
        producer_id: i64,
        epoch: i16,
        parts: &BTreeSet<(String, i32)>,
    ) -> ErrorCode {
        if let Err(code) = self.check_producer(id, producer_id, epoch) {
            return code;
        }
        let now = self.now;
        let Some(m) = self.txns.get_mut(id) else {
            return ErrorCode::InvalidProducerIdMapping;
        };
        match m.state {
            TxnState::Ongoing if parts.is_subset(&m.partitions) => return ErrorCode::None,
            TxnState::Ongoing => {}
            TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort => {
                m.start_ms = now;
            }
            _ => return ErrorCode::ConcurrentTransactions,
        }
        m.state = TxnState::Ongoing;
        m.partitions.extend(parts.iter().cloned());
        m.last_update_ms = now;
        self.write(id);
        ErrorCode::None
    }

    fn verify(&self, version: i16, txn: &TxnRequest<'_>) -> Vec<AddPartitionsToTxnTopicResult> {
        if let Err(code) = self.check_producer(txn.id, txn.producer_id, txn.producer_epoch) {
            return results(&txn.parts, |_, _| code);
        }
        let missing = if version >= TRANSACTION_ABORTABLE_MIN_VERSION {
            ErrorCode::TransactionAbortable
        } else {
            ErrorCode::InvalidTxnState
        };
        let partitions = self.txns.get(txn.id).map(|m| &m.partitions);
        results(&txn.parts, |t, p| {
            if partitions.is_some_and(|set| set.contains(&(t.to_string(), p))) {
                ErrorCode::None
            } else {
                missing
            }
        })
    }
}
