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
//! Where the coordinator is: this node's shard is asked in process ([`check`]); when the id's
//! coordinator is another node the verdict is [`Verdict::Remote`] and the produce handler
//! asks it with one AddPartitionsToTxn v4 `verify_only` ([`verify_remote`]) before appending,
//! holding the connection meanwhile (`Reply::Hold`) so later requests of the producer cannot
//! overtake the batch. Not built: Kafka's `VerificationGuard` against a marker landing between
//! the check and the append (a narrow race: the coordinator would have to end the
//! transaction in that window).

use std::sync::Arc;

use skiff_metadata::TopicInfo;
use skiff_protocol::{
    AddPartitionsToTxnRequest, AddPartitionsToTxnTopic, AddPartitionsToTxnTransaction, RequestBody,
    ResponseBody,
};
use skiff_record::BatchView;
use skiff_txn::Response;
use skiff_types::ErrorCode;

use super::Answer;
use crate::broker::Broker;

/// The AddPartitionsToTxn version of a broker's verification.
const VERIFY_VERSION: i16 = 4;

/// What the verification says about one partition's batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Append it (not transactional, already in the transaction, or verified).
    Pass,
    /// Refuse it with this code and message (nothing appended).
    Refuse(ErrorCode, String),
    /// The transactional id's coordinator is another node: ask it ([`verify_remote`]) for
    /// this producer id and epoch.
    Remote(i64, i16),
}

/// The transactional producer of a batch that needs verification: (transactional id,
/// producer id, epoch), `None` when the batch needs none.
pub fn needs_verification(
    broker: &Arc<Broker>,
    transactional_id: Option<&str>,
    info: &TopicInfo,
    partition: i32,
    batch: &[u8],
) -> Option<(String, i64, i16)> {
    if !broker.txns.settings().partition_verification {
        return None;
    }
    // A batch that does not parse is refused by validation with the right code.
    let view = BatchView::new(batch).ok()?;
    let (pid, epoch) = (view.producer_id(), view.producer_epoch());
    let tid = transactional_id.filter(|_| view.is_transactional() && pid >= 0)?;
    if broker
        .replicas
        .has_ongoing_transaction(info, partition, pid, epoch)
    {
        return None;
    }
    Some((tid.to_string(), pid, epoch))
}

/// The verdict for one partition's batch, asking this node's coordinator shard.
pub fn check(
    broker: &Arc<Broker>,
    transactional_id: Option<&str>,
    info: &TopicInfo,
    partition: i32,
    batch: &[u8],
) -> Verdict {
    let Some((tid, pid, epoch)) =
        needs_verification(broker, transactional_id, info, partition, batch)
    else {
        return Verdict::Pass;
    };
    let tid = tid.as_str();
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
        // The id's coordinator is another node.
        Err(ErrorCode::NotCoordinator) if broker.quorum.is_some() => {
            return Verdict::Remote(pid, epoch);
        }
        Err(code) => code,
    };
    translate(code, pid, epoch)
}

/// The coordinator's answer as the produce answers it (Kafka's translations for v1 clients).
fn translate(code: ErrorCode, pid: i64, epoch: i16) -> Verdict {
    match code {
        ErrorCode::None => Verdict::Pass,
        ErrorCode::InvalidTxnState | ErrorCode::TransactionAbortable => Verdict::Refuse(
            ErrorCode::InvalidTxnState,
            "Partition was not added to the transaction".into(),
        ),
        ErrorCode::ProducerFenced => Verdict::Refuse(
            ErrorCode::InvalidProducerEpoch,
            format!("Producer {pid} with epoch {epoch} is fenced by a newer epoch"),
        ),
        ErrorCode::ConcurrentTransactions
        | ErrorCode::CoordinatorLoadInProgress
        | ErrorCode::CoordinatorNotAvailable
        | ErrorCode::NotCoordinator
        | ErrorCode::NetworkException => Verdict::Refuse(
            ErrorCode::NotEnoughReplicas,
            format!(
                "Unable to verify the partition has been added to the transaction. Underlying error: {code:?}"
            ),
        ),
        other => Verdict::Refuse(other, format!("transaction verification failed: {other:?}")),
    }
}

/// Asks the id's coordinator on another node about `partitions` (one AddPartitionsToTxn v4
/// `verify_only`); each partition's verdict, in order. A coordinator that cannot be reached
/// gives NOT_ENOUGH_REPLICAS (the producer retries).
pub async fn verify_remote(
    broker: &Arc<Broker>,
    transactional_id: &str,
    producer_id: i64,
    producer_epoch: i16,
    partitions: &[(String, i32)],
) -> Vec<Verdict> {
    let unreachable = |what: String| {
        tracing::debug!(transactional_id, %what, "remote transaction verification failed");
        vec![translate(ErrorCode::NetworkException, producer_id, producer_epoch); partitions.len()]
    };
    let image = broker.image();
    let tp = broker.txns.partition_for(transactional_id);
    let Some(leader) = image
        .partition(super::TXN_TOPIC, tp)
        .map(|p| p.leader)
        .filter(|l| *l >= 0 && *l != broker.node_id())
    else {
        return unreachable("no other coordinator node".into());
    };
    let Some(addr) = crate::replica::fetcher::inter_broker_addr(broker, leader) else {
        return unreachable(format!("no address for node {leader}"));
    };
    let mut topics: Vec<AddPartitionsToTxnTopic> = Vec::new();
    for (t, p) in partitions {
        match topics.iter_mut().find(|x| x.name == *t) {
            Some(x) => x.partitions.push(*p),
            None => topics.push(AddPartitionsToTxnTopic {
                name: t.clone(),
                partitions: vec![*p],
            }),
        }
    }
    let req = AddPartitionsToTxnRequest {
        transactions: vec![AddPartitionsToTxnTransaction {
            transactional_id: transactional_id.to_string(),
            producer_id,
            producer_epoch,
            verify_only: true,
            topics,
        }],
        ..AddPartitionsToTxnRequest::default()
    };
    // Its own connection, not queued behind the replica fetchers' long polls.
    let client = broker
        .peers
        .client_for("txn-verify", &addr, std::time::Duration::from_secs(10));
    let r = match client.call_at(VERIFY_VERSION, RequestBody::from(req)).await {
        Ok(ResponseBody::AddPartitionsToTxn(r)) => r,
        Ok(other) => return unreachable(format!("unexpected answer {:?}", other.api_key())),
        Err(e) => return unreachable(e.to_string()),
    };
    let codes: Vec<(String, i32, ErrorCode)> = r
        .results_by_transaction
        .iter()
        .flat_map(|t| t.topic_results.iter())
        .flat_map(|t| {
            t.results_by_partition.iter().map(|p| {
                (
                    t.name.clone(),
                    p.partition_index,
                    ErrorCode::from_code(p.partition_error_code)
                        .unwrap_or(ErrorCode::UnknownServerError),
                )
            })
        })
        .collect();
    partitions
        .iter()
        .map(|(t, p)| {
            let code = codes
                .iter()
                .find(|(ct, cp, _)| ct == t && cp == p)
                .map_or(ErrorCode::UnknownServerError, |c| c.2);
            translate(code, producer_id, producer_epoch)
        })
        .collect()
}
