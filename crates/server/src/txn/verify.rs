//! KIP-890 part 1 on the produce path: before the first transactional batch of a producer's
//! transaction lands on a partition, the leader asks the transaction coordinator whether the
//! partition was added to that transaction (AddPartitionsToTxn v4 `verify_only`). A batch of
//! a transaction that already ended (a late or replayed request, reliability F18) or of a
//! partition never added (B17) is refused with INVALID_TXN_STATE and nothing is appended, so
//! no transaction is left hanging on the partition (KAFKA-17754's class).
//!
//! Mental model (Kafka's `ReplicaManager.appendRecordsWithTransactionVerification`): only a
//! produce with a transactional id, transactional batches and no ongoing transaction of that
//! producer and epoch on the partition is verified; the coordinator's answers are translated
//! for v1 clients as Kafka does (TRANSACTION_ABORTABLE -> INVALID_TXN_STATE, PRODUCER_FENCED
//! -> INVALID_PRODUCER_EPOCH, a coordinator that is moving or busy -> NOT_ENOUGH_REPLICAS,
//! which clients retry without a metadata refresh).
//!
//! Scope today: the coordinator shard is asked in process, which covers one node and a
//! cluster node that is the id's coordinator. A produce whose coordinator is another node is
//! appended unverified (the cross-node AddPartitionsToTxn v4 call would need the produce
//! path to wait for it; a follow-up), and there is no verification guard against a marker
//! landing between the check and the append (Kafka's `VerificationGuard`).

use std::sync::Arc;

use skiff_metadata::TopicInfo;
use skiff_protocol::{
    AddPartitionsToTxnRequest, AddPartitionsToTxnTopic, AddPartitionsToTxnTransaction,
};
use skiff_record::BatchView;
use skiff_txn::Response;
use skiff_types::ErrorCode;

use super::Answer;
use crate::broker::Broker;

/// The AddPartitionsToTxn version of a broker's verification.
const VERIFY_VERSION: i16 = 4;

/// `Ok(())` when the batch may be appended; otherwise the partition's code and message.
pub fn verify_produce(
    broker: &Arc<Broker>,
    transactional_id: Option<&str>,
    info: &TopicInfo,
    partition: i32,
    batch: &[u8],
) -> Result<(), (ErrorCode, String)> {
    if !broker.txns.settings().partition_verification {
        return Ok(());
    }
    let Ok(view) = BatchView::new(batch) else {
        return Ok(()); // validation refuses it with the right code
    };
    let (pid, epoch) = (view.producer_id(), view.producer_epoch());
    let Some(tid) = transactional_id.filter(|_| view.is_transactional() && pid >= 0) else {
        return Ok(());
    };
    if broker
        .replicas
        .has_ongoing_transaction(info, partition, pid, epoch)
    {
        return Ok(());
    }
    let req = AddPartitionsToTxnRequest {
        transactions: vec![AddPartitionsToTxnTransaction {
            transactional_id: tid.to_string(),
            producer_id: pid,
            producer_epoch: epoch,
            verify_only: true,
            topics: vec![AddPartitionsToTxnTopic {
                name: info.name.clone(),
                partitions: vec![partition],
            }],
        }],
        ..AddPartitionsToTxnRequest::default()
    };
    let answer = broker
        .txns
        .call(broker, tid, VERIFY_VERSION, |shard, c, now| {
            shard.add_partitions(c, &req, now)
        });
    let code = match answer {
        Ok(Answer::Ready(Response::AddPartitionsToTxn(r))) => r
            .results_by_transaction
            .first()
            .and_then(|t| t.topic_results.first())
            .and_then(|t| t.results_by_partition.first())
            .map_or(ErrorCode::UnknownServerError, |p| {
                ErrorCode::from_code(p.partition_error_code)
                    .unwrap_or(ErrorCode::UnknownServerError)
            }),
        Ok(_) => ErrorCode::UnknownServerError,
        // The id's coordinator is another node: not verified here (see the module doc).
        Err(ErrorCode::NotCoordinator) if broker.quorum.is_some() => return Ok(()),
        Err(code) => code,
    };
    match code {
        ErrorCode::None => Ok(()),
        ErrorCode::InvalidTxnState | ErrorCode::TransactionAbortable => Err((
            ErrorCode::InvalidTxnState,
            "Partition was not added to the transaction".into(),
        )),
        ErrorCode::ProducerFenced => Err((
            ErrorCode::InvalidProducerEpoch,
            format!("Producer {pid} with epoch {epoch} is fenced by a newer epoch"),
        )),
        ErrorCode::ConcurrentTransactions
        | ErrorCode::CoordinatorLoadInProgress
        | ErrorCode::CoordinatorNotAvailable
        | ErrorCode::NotCoordinator => Err((
            ErrorCode::NotEnoughReplicas,
            format!(
                "Unable to verify the partition has been added to the transaction. Underlying error: {code:?}"
            ),
        )),
        other => Err((other, format!("transaction verification failed: {other:?}"))),
    }
}
