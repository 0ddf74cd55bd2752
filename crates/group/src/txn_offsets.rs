//! Transactional offsets (KIP-98): TxnOffsetCommit, the end of a transaction, and their replay
//! (Kafka's `OffsetMetadataManager.commitTransactionalOffset` / `replayEndTransactionMarker`).
//!
//! Mental model: a producer inside a transaction commits a group's offsets with
//! TxnOffsetCommit. The shard validates it against the group (Kafka's rules below), emits
//! OffsetCommit records exactly as a plain commit does, and marks the [`Effects`] transactional
//! with the producer's id and epoch: the runtime appends them as one transactional batch of
//! that producer. In memory they are *pending* offsets of the producer: invisible to
//! OffsetFetch (which answers UNSTABLE_OFFSET_COMMIT for them under `require_stable`) until the
//! transaction coordinator's marker reaches this partition. The runtime writes the marker to
//! the log and then calls [`GroupCoordinatorShard::complete_transaction`]: COMMIT makes them
//! committed offsets (each only over an older committed one: see `offset_store`), ABORT drops
//! them. On load the runtime feeds records of transactional batches to
//! [`GroupCoordinatorShard::replay_transactional`] and markers to
//! [`GroupCoordinatorShard::replay_end_transaction`], in log order, so a reloaded shard holds
//! the same pending and committed offsets.
//!
//! Validation (Kafka 4's `validateTransactionalOffsetCommit`): an empty group id is
//! INVALID_GROUP_ID; a missing group is created as a simple group when the generation is
//! negative and is ILLEGAL_GENERATION otherwise (at every version); a classic group checks
//! member, static instance (FENCED_INSTANCE_ID) and generation only when they are given (v3+
//! clients send them; v0-2 cannot), is not refused while CompletingRebalance, and keeps no
//! session alive; a consumer group checks the member epoch and answers ILLEGAL_GENERATION for
//! a stale one. Metadata above `offset.metadata.max.bytes` is OFFSET_METADATA_TOO_LARGE for
//! that partition only. The producer itself (epoch fencing, KIP-890 verification) is the
//! log's business when the batch is appended, not the shard's.
//!
//! Timers: unlike the other entry points, [`GroupCoordinatorShard::handle_txn_offset_commit`]
//! fires no timer, so its records are only the transaction's; the runtime calls `tick` first.

use bytes::Bytes;
use skiff_protocol::{
    OffsetCommitValue, TxnOffsetCommitRequest, TxnOffsetCommitResponse,
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use skiff_types::ErrorCode;

use crate::classic::group::ClassicGroup;
use crate::effects::{Effects, RequestContext, Response};
use crate::error::GroupError;
use crate::offsets::validate_classic_commit;
use crate::offsets::{METADATA_BYTES_ENCODABLE_MAX, OffsetAndMetadata, offset_key};
use crate::records::CoordinatorRecord;
use crate::shard::{Group, GroupCoordinatorShard};

impl GroupCoordinatorShard {
    /// Handles a TxnOffsetCommit (v0-4). Fires no timer (call `tick(now_ms)` first); the
    /// effects' records are the transaction's offsets and `transactional` names its producer.
    pub fn handle_txn_offset_commit(
        &mut self,
        ctx: &RequestContext,
        req: &TxnOffsetCommitRequest,
        now_ms: i64,
    ) -> Effects {
        self.core.now = self.core.now.max(now_ms);
        let response = match self.validate_txn_offset_commit(req) {
            Err(code) => txn_response_all(req, code),
            Ok(()) => self.commit_transactional(req),
        };
        self.core
            .respond(ctx.token, Response::TxnOffsetCommit(response));
        let mut effects = std::mem::take(&mut self.core.out);
        effects.next_deadline = self.core.timers.next_deadline();
        if !effects.records.is_empty() {
            effects.transactional = Some((req.producer_id, req.producer_epoch));
        }
        effects
    }

    fn validate_txn_offset_commit(
        &mut self,
        req: &TxnOffsetCommitRequest,
    ) -> Result<(), ErrorCode> {
        if req.group_id.is_empty() {
            return Err(ErrorCode::InvalidGroupId);
        }
        let generation = req.generation_id;
        let group = match self.groups.get(&req.group_id) {
            Some(g) => g,
            None if generation < 0 => {
                let g = ClassicGroup::new(&req.group_id, self.core.now);
                self.groups.insert(req.group_id.clone(), Group::Classic(g));
                return Ok(());
            }
            None => return Err(ErrorCode::IllegalGeneration),
        };
        match group {
            Group::Classic(g) => validate_classic_commit(
                g,
                &req.member_id,
                req.group_instance_id.as_deref(),
                generation,
                true,
            ),
            // The OffsetCommit-version rule does not apply to transactional commits.
            Group::Consumer(g) => g
                .validate_offset_commit(&req.member_id, generation, i16::MAX)
                .map_err(|code| match code {
                    ErrorCode::StaleMemberEpoch => ErrorCode::IllegalGeneration,
                    other => other,
                }),
        }
    }

    fn commit_transactional(&mut self, req: &TxnOffsetCommitRequest) -> TxnOffsetCommitResponse {
        let now = self.core.now;
        let max = self
            .core
            .config
            .offset_metadata_bytes_max
            .min(METADATA_BYTES_ENCODABLE_MAX);
        let mut topics = Vec::with_capacity(req.topics.len());
        for t in &req.topics {
            let mut partitions = Vec::with_capacity(t.partitions.len());
            for p in &t.partitions {
                let metadata = p.committed_metadata.clone().unwrap_or_default();
                let code = if metadata.len() > max {
                    ErrorCode::OffsetMetadataTooLarge
                } else {
                    let key = offset_key(&req.group_id, &t.name, p.partition_index);
                    let value = OffsetCommitValue {
                        offset: p.committed_offset,
                        leader_epoch: p.committed_leader_epoch,
                        metadata,
                        commit_timestamp: now,
                        expire_timestamp: -1,
                    };
                    self.offsets
                        .apply_pending(req.producer_id, &key, Some(&value));
                    self.core
                        .record(CoordinatorRecord::OffsetCommit(key, Some(value)));
                    ErrorCode::None
                };
                partitions.push(TxnOffsetCommitResponsePartition {
                    partition_index: p.partition_index,
                    error_code: code.code(),
                });
            }
            topics.push(TxnOffsetCommitResponseTopic {
                name: t.name.clone(),
                partitions,
            });
        }
        TxnOffsetCommitResponse {
            topics,
            ..TxnOffsetCommitResponse::default()
        }
    }

    /// `producer_id`'s transaction ended on this partition: its end marker (COMMIT when
    /// `commit`) is in the log, just after everything the shard emitted before. Pending
    /// offsets become committed (commit) or are dropped (abort). Timers due at `now_ms` fire
    /// afterwards, as their records follow the marker in the log.
    pub fn complete_transaction(&mut self, producer_id: i64, commit: bool, now_ms: i64) -> Effects {
        self.offsets.complete(producer_id, commit);
        self.begin(now_ms);
        self.finish()
    }

    /// Applies one record of a transactional batch of `producer_id` while loading.
    pub fn replay_transactional(
        &mut self,
        producer_id: i64,
        key: &Bytes,
        value: Option<&Bytes>,
    ) -> Result<(), GroupError> {
        match CoordinatorRecord::decode(key, value)? {
            CoordinatorRecord::OffsetCommit(key, value) => {
                if value.is_some() && !self.groups.contains_key(&key.group) {
                    // As a plain commit: offsets without a group belong to a simple group.
                    let g = ClassicGroup::new(&key.group, self.core.now.max(0));
                    self.groups.insert(key.group.clone(), Group::Classic(g));
                }
                self.offsets
                    .apply_pending(producer_id, &key, value.as_ref());
            }
            other => self.apply_replayed(other),
        }
        Ok(())
    }

    /// Applies an end-transaction marker of `producer_id` while loading.
    pub fn replay_end_transaction(&mut self, producer_id: i64, commit: bool) {
        self.offsets.complete(producer_id, commit);
    }

    /// A pending (uncommitted) transactional offset, if any (tests, operators' views).
    pub fn pending_transactional_offset(
        &self,
        producer_id: i64,
        group_id: &str,
        topic: &str,
        partition: i32,
    ) -> Option<OffsetAndMetadata> {
        self.offsets
            .pending_offset(producer_id, group_id, topic, partition)
            .cloned()
    }
}

/// A TxnOffsetCommit response giving every partition the same error (Kafka's
/// `TxnOffsetCommitRequest.getErrorResponse`).
fn txn_response_all(req: &TxnOffsetCommitRequest, code: ErrorCode) -> TxnOffsetCommitResponse {
    let topics = req
        .topics
        .iter()
        .map(|t| TxnOffsetCommitResponseTopic {
            name: t.name.clone(),
            partitions: t
                .partitions
                .iter()
                .map(|p| TxnOffsetCommitResponsePartition {
                    partition_index: p.partition_index,
                    error_code: code.code(),
                })
                .collect(),
        })
        .collect();
    TxnOffsetCommitResponse {
        topics,
        ..TxnOffsetCommitResponse::default()
    }
}
