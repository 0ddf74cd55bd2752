//! Transaction markers (Kafka's `TransactionMarkerChannelManager` and the leader's side of
//! WriteTxnMarkers): writing a COMMIT or ABORT control batch to every partition of an ended
//! transaction.
//!
//! Mental model: a [`MarkerJob`] from the shard becomes one task ([`spawn`]). Each round it
//! groups the partitions still to do by their leader in the current image: this node's are
//! written locally ([`write_local`]: the replica manager, acks=-1, or the group coordinator
//! for `__consumer_offsets`, which also completes the pending offsets), each other leader
//! gets one WriteTxnMarkers v1 request on the inter-broker listener. A partition whose topic
//! is gone is done (Kafka drops it too); a retriable failure (no leader yet, NOT_LEADER, a
//! timeout, not enough replicas) is tried again after a back-off. When every partition has
//! its marker the coordinator completes the transaction. The task stops without completing
//! when its slot was reloaded or unloaded (generation changed): the next owner resumes the
//! prepared transaction from its log. Markers are idempotent for the partition's producer
//! state (a second marker for a closed transaction closes nothing), so a resumed job may
//! rewrite some.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use skiff_protocol::{
    RequestBody, ResponseBody, WritableTxnMarker, WritableTxnMarkerTopic, WriteTxnMarkersRequest,
};
use skiff_record::control::ControlType;
use skiff_txn::{MarkerJob, TxnResult};
use skiff_types::ErrorCode;

use crate::broker::Broker;
use crate::coordinator::OFFSETS_TOPIC;

/// First and largest back-off between rounds of a marker job.
const BACKOFF_MIN: Duration = Duration::from_millis(20);
const BACKOFF_MAX: Duration = Duration::from_millis(1000);

/// Starts the task writing `job`'s markers for the shard on `txn_partition`, `generation`.
pub fn spawn(broker: &Arc<Broker>, txn_partition: i32, generation: u64, job: MarkerJob) {
    let broker = Arc::clone(broker);
    tokio::spawn(async move {
        let mut todo: Vec<(String, i32)> = job.partitions.clone();
        let mut backoff = BACKOFF_MIN;
        loop {
            if broker.is_shutting_down() || !broker.txns.is_current(txn_partition, generation) {
                return;
            }
            todo = write_round(&broker, &job, todo).await;
            if todo.is_empty() {
                broker
                    .txns
                    .markers_written(&broker, txn_partition, generation, &job);
                return;
            }
            tracing::debug!(
                transactional_id = %job.transactional_id,
                left = todo.len(),
                "transaction markers: retrying"
            );
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(BACKOFF_MAX);
        }
    });
}

/// One round: writes what it can; returns the partitions still to do.
async fn write_round(
    broker: &Arc<Broker>,
    job: &MarkerJob,
    todo: Vec<(String, i32)>,
) -> Vec<(String, i32)> {
    let image = broker.image();
    let me = broker.node_id();
    let mut by_leader: BTreeMap<i32, Vec<(String, i32)>> = BTreeMap::new();
    let mut left = Vec::new();
    for (topic, p) in todo {
        if image.topic(&topic).is_none() {
            continue; // deleted: nothing to mark
        }
        let leader = if broker.quorum.is_none() {
            me
        } else {
            image.partition(&topic, p).map_or(-1, |x| x.leader)
        };
        if leader < 0 {
            left.push((topic, p));
        } else {
            by_leader.entry(leader).or_default().push((topic, p));
        }
    }
    for (leader, parts) in by_leader {
        if leader == me {
            for (topic, p) in parts {
                let code = write_local(
                    broker,
                    &topic,
                    p,
                    job.producer_id,
                    job.producer_epoch,
                    job.coordinator_epoch,
                    job.result,
                )
                .await;
                if !is_done(code) {
                    tracing::debug!(%topic, partition = p, ?code, "local marker not written");
                    left.push((topic, p));
                }
            }
        } else {
            left.extend(write_remote(broker, leader, job, parts).await);
        }
    }
    left
}

/// Whether a marker answer ends the partition's part of the job: written, or a refusal a
/// retry cannot change (the producer state moved on: a newer epoch or coordinator epoch
/// already wrote its markers there).
fn is_done(code: ErrorCode) -> bool {
    matches!(
        code,
        ErrorCode::None
            | ErrorCode::UnknownTopicOrPartition
            | ErrorCode::InvalidProducerEpoch
            | ErrorCode::TransactionCoordinatorFenced
    )
}

/// Sends one WriteTxnMarkers to `leader` for `parts`; returns the parts to retry.
async fn write_remote(
    broker: &Arc<Broker>,
    leader: i32,
    job: &MarkerJob,
    parts: Vec<(String, i32)>,
) -> Vec<(String, i32)> {
    let Some(addr) = crate::replica::fetcher::inter_broker_addr(broker, leader) else {
        return parts;
    };
    let mut topics: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for (t, p) in &parts {
        topics.entry(t).or_default().push(*p);
    }
    let request = WriteTxnMarkersRequest {
        markers: vec![WritableTxnMarker {
            producer_id: job.producer_id,
            producer_epoch: job.producer_epoch,
            transaction_result: job.result == TxnResult::Commit,
            coordinator_epoch: job.coordinator_epoch,
            topics: topics
                .into_iter()
                .map(|(name, partition_indexes)| WritableTxnMarkerTopic {
                    name: name.to_string(),
                    partition_indexes,
                })
                .collect(),
        }],
    };
    // Its own connection: the leader answers it only once the marker is replicated, which
    // needs this node's follower fetches (on the shared connection) to go on meanwhile.
    let client = broker
        .peers
        .client_for("txn-markers", &addr, Duration::from_secs(30));
    let response = match client.call_at(1, RequestBody::from(request)).await {
        Ok(ResponseBody::WriteTxnMarkers(r)) => r,
        Ok(other) => {
            tracing::warn!(leader, answer = ?other.api_key(), "WriteTxnMarkers: unexpected answer");
            return parts;
        }
        Err(e) => {
            tracing::debug!(leader, error = %e, "WriteTxnMarkers failed");
            return parts;
        }
    };
    let mut answered: BTreeMap<(String, i32), ErrorCode> = BTreeMap::new();
    for m in response.markers {
        for t in m.topics {
            for p in t.partitions {
                answered.insert(
                    (t.name.clone(), p.partition_index),
                    ErrorCode::from_code(p.error_code).unwrap_or(ErrorCode::UnknownServerError),
                );
            }
        }
    }
    parts
        .into_iter()
        .filter(|k| !answered.get(k).is_some_and(|c| is_done(*c)))
        .collect()
}

/// Writes one marker to a partition this node leads, acks=-1; the partition's code.
pub async fn write_local(
    broker: &Arc<Broker>,
    topic: &str,
    partition: i32,
    producer_id: i64,
    producer_epoch: i16,
    coordinator_epoch: i32,
    result: TxnResult,
) -> ErrorCode {
    let commit = result == TxnResult::Commit;
    let ack = if topic == OFFSETS_TOPIC {
        match broker.groups.write_txn_marker(
            broker,
            partition,
            producer_id,
            producer_epoch,
            coordinator_epoch,
            commit,
        ) {
            Ok(ack) => ack,
            Err(code) => return code,
        }
    } else {
        let image = broker.image();
        let Some(info) = image.topic(topic) else {
            return ErrorCode::UnknownTopicOrPartition;
        };
        let now = broker.now_ms();
        let control = if commit {
            ControlType::Commit
        } else {
            ControlType::Abort
        };
        let mut batch = match skiff_record::control::build_end_txn_marker(
            producer_id,
            producer_epoch,
            coordinator_epoch,
            control,
            now,
        ) {
            Ok(b) => b,
            Err(e) => {
                tracing::error!(error = %e, "cannot build a transaction marker");
                return ErrorCode::UnknownServerError;
            }
        };
        match broker
            .replicas
            .append_records(info, partition, &mut batch, now)
        {
            Ok(a) => a.ack,
            Err(e) => return e.code,
        }
    };
    match ack {
        None => ErrorCode::None,
        Some(rx) => rx.await.unwrap_or(ErrorCode::NotLeaderOrFollower),
    }
}
