//! The replica fetchers (issue 17 item 1): one task per leader broker that fetches every
//! partition this node follows from it, as Kafka's `ReplicaFetcherThread` with
//! `num.replica.fetchers=1`.
//!
//! Mental model: a manager task watches [`ReplicaManager::following`] and keeps one fetch
//! task per leader broker, handing it the (partition, leader epoch) list it should fetch.
//! A fetch task loops: for each partition it asks the replica manager for the follower's
//! position (log end, latest epoch, log start) and sends one Fetch v17 to the leader's
//! inter-broker listener with `ReplicaState{ReplicaId, ReplicaEpoch}`, `CurrentLeaderEpoch`
//! and `LastFetchedEpoch`, in an incremental fetch session (KIP-227, [`super::fetch_session`]:
//! only partitions whose fetch state changed are listed, the leader answers only those with
//! news; a refused session falls back to a full fetch that opens a new one). The leader
//! answers as soon as it has data, a diverging epoch, an error, or a high watermark that
//! moved (see `handlers/fetch.rs`), else after `replica.fetch.wait.max.ms`. Each partition's
//! answer:
//! - records and the leader's HW -> [`ReplicaManager::append_fetched`];
//! - `DivergingEpoch` -> [`ReplicaManager::truncate_diverged`], fetched again at once;
//! - OFFSET_OUT_OF_RANGE -> the leader's log end (ListOffsets latest as a replica) and
//!   [`ReplicaManager::reset_out_of_range`];
//! - NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH, unknown topic: the
//!   leader's metadata and ours disagree for now; that partition alone is left out of the
//!   fetches (so forgotten from the session) for `replica.fetch.backoff.ms`, as Kafka's
//!   delayed partitions, while the others keep fetching (a topic just created, which the
//!   leader's image may not know yet, stalled every partition of that leader for 1 s); the
//!   manager re-targets it when our image moves.
//!
//! A lost connection or a timeout backs off and retries (the node client reconnects).
//!
//! Invariants: a partition is fetched by at most one task (its leader's) at its current leader
//! epoch; an answer for an epoch the partition is no longer followed at writes nothing (the
//! replica manager refuses it).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use skiff_protocol::{
    FetchPartition, FetchRequest, FetchRequestReplicaState, FetchTopic, ForgottenTopic,
    ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic, RequestBody, ResponseBody,
};
use skiff_types::{ErrorCode, TopicPartition};
use tokio::sync::watch;
use tokio::time::Instant;

use super::fetch_session::{FollowerSession, SentState};
use super::follow::{FollowError, FollowerPosition};
use crate::broker::Broker;

/// How the fetchers run (Kafka's `replica.fetch.*` keys).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FetcherSettings {
    /// The listener the leaders are reached on (`inter.broker.listener.name`).
    pub listener: String,
    /// `replica.fetch.wait.max.ms`
    pub wait_max_ms: i32,
    /// `replica.fetch.max.bytes` (per partition)
    pub partition_max_bytes: i32,
    /// `replica.fetch.response.max.bytes`
    pub response_max_bytes: i32,
    /// `replica.fetch.backoff.ms`
    pub backoff_ms: u64,
    /// `replica.lag.time.max.ms`: a follower not caught up for longer leaves the ISR.
    pub lag_time_max_ms: u64,
}

impl Default for FetcherSettings {
    fn default() -> Self {
        FetcherSettings {
            listener: "PLAINTEXT".into(),
            wait_max_ms: 500,
            partition_max_bytes: 1 << 20,
            response_max_bytes: 10 << 20,
            backoff_ms: 1000,
            lag_time_max_ms: 30_000,
        }
    }
}

type Targets = Vec<(TopicPartition, i32)>;

/// Starts the fetcher manager (cluster mode).
pub fn start(broker: &Arc<Broker>, settings: FetcherSettings) {
    tokio::spawn(manager(Arc::clone(broker), settings));
}

async fn manager(broker: Arc<Broker>, settings: FetcherSettings) {
    let mut changes = broker.replicas.following_changes();
    let mut shutdown = broker.shutdown_signal();
    let mut tasks: HashMap<i32, watch::Sender<Targets>> = HashMap::new();
    loop {
        let following = broker.replicas.following();
        let followed: Vec<i32> = following.iter().map(|(_, t)| t.leader).collect();
        let mut by_leader: HashMap<i32, Targets> = HashMap::new();
        for (tp, t) in following {
            if t.leader >= 0 {
                by_leader
                    .entry(t.leader)
                    .or_default()
                    .push((tp, t.leader_epoch));
            }
        }
        for (leader, mut targets) in by_leader.drain() {
            targets.sort();
            match tasks.get(&leader) {
                Some(tx) => {
                    tx.send_if_modified(|cur| {
                        let changed = *cur != targets;
                        *cur = targets.clone();
                        changed
                    });
                }
                None => {
                    let (tx, rx) = watch::channel(targets);
                    tokio::spawn(fetch_loop(
                        Arc::clone(&broker),
                        settings.clone(),
                        leader,
                        rx,
                    ));
                    tasks.insert(leader, tx);
                }
            }
        }
        // Leaders nothing is fetched from any more: their tasks idle on an empty list.
        for (leader, tx) in &tasks {
            if !followed.contains(leader) {
                tx.send_if_modified(|cur| {
                    let changed = !cur.is_empty();
                    cur.clear();
                    changed
                });
            }
        }
        tokio::select! {
            r = changes.changed() => if r.is_err() { return },
            _ = shutdown.changed() => return,
        }
    }
}

/// `node`'s `host:port` on the inter-broker listener (the fetchers'), from the image
/// (issue 18: the transaction coordinator's WriteTxnMarkers go there).
pub(crate) fn inter_broker_addr(broker: &Broker, node: i32) -> Option<String> {
    let listener = broker
        .settings
        .quorum
        .as_ref()
        .map_or("PLAINTEXT", |q| q.fetcher.listener.as_str());
    leader_addr(broker, node, listener)
}

/// The leader's `host:port` on the fetchers' listener, from the image.
fn leader_addr(broker: &Broker, leader: i32, listener: &str) -> Option<String> {
    let image = broker.image();
    let b = image.broker(leader)?;
    let e = b
        .endpoints
        .iter()
        .find(|e| e.name == listener)
        .or_else(|| b.endpoints.first())?;
    Some(format!("{}:{}", e.host, e.port))
}

async fn fetch_loop(
    broker: Arc<Broker>,
    settings: FetcherSettings,
    leader: i32,
    mut targets: watch::Receiver<Targets>,
) {
    let mut shutdown = broker.shutdown_signal();
    let backoff = Duration::from_millis(settings.backoff_ms.max(10));
    let timeout =
        Duration::from_millis(u64::try_from(settings.wait_max_ms.max(0)).unwrap_or(500) + 5_000);
    let mut session = FollowerSession::default();
    let mut delayed: HashMap<TopicPartition, Instant> = HashMap::new();
    loop {
        if broker.is_shutting_down() {
            return;
        }
        let all = targets.borrow_and_update().clone();
        if all.is_empty() {
            tokio::select! {
                r = targets.changed() => if r.is_err() { return },
                _ = shutdown.changed() => return,
            }
            continue;
        }
        let (list, next_due) = fetchable(&all, &mut delayed, broker.tokio_now());
        let wait = match next_due {
            Some(due) if list.is_empty() => due.saturating_duration_since(broker.tokio_now()),
            _ => {
                let result =
                    fetch_once(&broker, &settings, leader, &list, timeout, &mut session).await;
                if broker.replicas.hw_lowered_pending() {
                    let b = Arc::clone(&broker);
                    let _ =
                        tokio::task::spawn_blocking(move || b.replicas.checkpoint_if_hw_lowered())
                            .await;
                }
                match result {
                    Ok(f) if f.progress => Duration::ZERO,
                    Ok(f) if !f.failed.is_empty() => {
                        let until = broker.tokio_now() + backoff;
                        delayed.extend(f.failed.into_iter().map(|tp| (tp, until)));
                        Duration::ZERO
                    }
                    Ok(_) => backoff,
                    Err(e) => {
                        tracing::debug!(leader, error = %e, "replica fetch failed; retrying");
                        session.on_failure();
                        backoff
                    }
                }
            }
        };
        if !wait.is_zero() {
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = targets.changed() => {}
                _ = shutdown.changed() => return,
            }
        }
    }
}

/// The targets not backing off now, and when the first one that is comes due; forgets the
/// back-offs that ended or whose partition is no longer a target.
fn fetchable(
    all: &Targets,
    delayed: &mut HashMap<TopicPartition, Instant>,
    now: Instant,
) -> (Targets, Option<Instant>) {
    delayed.retain(|tp, until| *until > now && all.iter().any(|(t, _)| t == tp));
    let list = all
        .iter()
        .filter(|(tp, _)| !delayed.contains_key(tp))
        .cloned()
        .collect();
    (list, delayed.values().min().copied())
}

/// One fetch's outcome: did any partition move (or answer so that fetching again at once is
/// right), and which partitions answered an error that calls for a back-off.
#[derive(Debug, Default)]
struct Fetched {
    progress: bool,
    failed: Vec<TopicPartition>,
}

/// One Fetch to `leader` for `list`.
async fn fetch_once(
    broker: &Arc<Broker>,
    settings: &FetcherSettings,
    leader: i32,
    list: &[(TopicPartition, i32)],
    timeout: Duration,
    session: &mut FollowerSession,
) -> Result<Fetched, String> {
    let image = broker.image();
    let mut positions: HashMap<TopicPartition, FollowerPosition> = HashMap::new();
    let mut wanted: HashMap<TopicPartition, SentState> = HashMap::new();
    let mut parts: HashMap<TopicPartition, (String, uuid::Uuid, FetchPartition)> = HashMap::new();
    for (tp, epoch) in list {
        let pos = match broker.replicas.follower_position(tp, *epoch) {
            Ok(pos) => pos,
            Err(e) => {
                tracing::debug!(%tp, epoch, leader, error = %e, "not fetched this round");
                continue;
            }
        };
        let Some(info) = image.topic(&tp.topic) else {
            continue;
        };
        let part = FetchPartition {
            partition: tp.partition,
            current_leader_epoch: *epoch,
            fetch_offset: pos.fetch_offset,
            last_fetched_epoch: pos.last_fetched_epoch,
            log_start_offset: pos.log_start_offset,
            partition_max_bytes: settings.partition_max_bytes,
            ..FetchPartition::default()
        };
        positions.insert(tp.clone(), pos);
        let id = uuid::Uuid::from_bytes(info.id);
        wanted.insert(
            tp.clone(),
            SentState {
                topic_id: id,
                fetch_offset: pos.fetch_offset,
                last_fetched_epoch: pos.last_fetched_epoch,
                log_start_offset: pos.log_start_offset,
                current_leader_epoch: *epoch,
            },
        );
        parts.insert(tp.clone(), (tp.topic.clone(), id, part));
    }
    if wanted.is_empty() {
        return Ok(Fetched::default());
    }
    // KIP-227: only new or changed partitions, and the ones to forget (fetch_session.rs).
    let plan = session.plan(wanted);
    let mut topics: Vec<FetchTopic> = Vec::new();
    for tp in &plan.include {
        let Some((topic, id, part)) = parts.remove(tp) else {
            continue;
        };
        match topics.iter_mut().find(|t| t.topic_id == id) {
            Some(t) => t.partitions.push(part),
            None => topics.push(FetchTopic {
                topic,
                topic_id: id,
                partitions: vec![part],
            }),
        }
    }
    let forgotten_topics_data = plan
        .forget
        .iter()
        .map(|(id, topic, partitions)| ForgottenTopic {
            topic: topic.clone(),
            topic_id: *id,
            partitions: partitions.clone(),
        })
        .collect();
    let addr = leader_addr(broker, leader, &settings.listener)
        .ok_or_else(|| format!("no endpoint for leader {leader}"))?;
    let request = FetchRequest {
        replica_state: FetchRequestReplicaState {
            replica_id: broker.node_id(),
            replica_epoch: broker.producer_ids.registered_epoch.lock().unwrap_or(-1),
        },
        max_wait_ms: settings.wait_max_ms,
        min_bytes: 1,
        max_bytes: settings.response_max_bytes,
        isolation_level: 0,
        session_id: plan.session_id,
        session_epoch: plan.session_epoch,
        topics,
        forgotten_topics_data,
        ..FetchRequest::default()
    };
    let client = broker.peers.client(&addr, timeout);
    let response = match client.call_at(17, RequestBody::from(request)).await {
        Ok(ResponseBody::Fetch(r)) => r,
        Ok(other) => return Err(format!("unexpected answer {:?}", other.api_key())),
        Err(e) => return Err(e.to_string()),
    };
    let top = ErrorCode::from_code(response.error_code).unwrap_or(ErrorCode::UnknownServerError);
    if session.on_answer(plan, top, response.session_id) {
        tracing::debug!(leader, error = ?top, "fetch session refused; fetching in full");
        return Ok(Fetched {
            progress: true,
            failed: Vec::new(),
        });
    }
    if top != ErrorCode::None {
        return Err(format!("fetch refused with error {}", response.error_code));
    }
    // An incremental answer with no partition is the leader's long poll ending: fetch again.
    let mut progress = response.responses.iter().all(|t| t.partitions.is_empty());
    let mut failed = Vec::new();
    for t in response.responses {
        let Some(name) = image
            .topic_by_id(t.topic_id.as_bytes())
            .map(|i| i.name.clone())
        else {
            continue;
        };
        for p in t.partitions {
            let tp = TopicPartition::new(name.clone(), p.partition_index);
            let Some(pos) = positions.get(&tp).copied() else {
                continue;
            };
            let code = ErrorCode::from_code(p.error_code).unwrap_or(ErrorCode::UnknownServerError);
            let outcome = match code {
                ErrorCode::None if p.diverging_epoch.epoch >= 0 => {
                    tracing::debug!(
                        %tp, leader,
                        fetch_offset = pos.fetch_offset,
                        last_fetched_epoch = pos.last_fetched_epoch,
                        diverging_epoch = p.diverging_epoch.epoch,
                        diverging_end = p.diverging_epoch.end_offset,
                        "the leader answered a diverging epoch"
                    );
                    let r = broker.replicas.truncate_diverged(
                        &tp,
                        pos.leader_epoch,
                        p.diverging_epoch.epoch,
                        p.diverging_epoch.end_offset,
                    );
                    r.map(|_| true)
                }
                ErrorCode::None => {
                    let data = p
                        .records
                        .as_ref()
                        .and_then(|r| r.as_bytes().cloned())
                        .unwrap_or_default();
                    let b = Arc::clone(broker);
                    let tp2 = tp.clone();
                    let hw = p.high_watermark;
                    let r = tokio::task::spawn_blocking(move || {
                        b.replicas.append_fetched(&tp2, pos.leader_epoch, &data, hw)
                    })
                    .await
                    .map_err(|e| FollowError::Storage(e.to_string()))
                    .and_then(|r| r);
                    // Answered (data or not, after the leader's long poll): fetch again.
                    r.map(|_| true)
                }
                ErrorCode::OffsetOutOfRange => {
                    let end = leader_end(broker, &client, &tp, pos.leader_epoch).await?;
                    broker
                        .replicas
                        .reset_out_of_range(&tp, pos.leader_epoch, p.log_start_offset, end)
                        .map(|_| true)
                }
                other => {
                    session.resend(&tp);
                    tracing::debug!(%tp, leader, error = ?other, "replica fetch answered an error; backing off");
                    failed.push(tp.clone());
                    Ok(false)
                }
            };
            match outcome {
                Ok(moved) => progress |= moved,
                Err(FollowError::NotFollowing(_)) => {}
                Err(e) => {
                    tracing::warn!(%tp, leader, error = %e, "replica fetch answer not applied")
                }
            }
        }
    }
    Ok(Fetched { progress, failed })
}

/// The leader's log end for `tp` (ListOffsets latest as a replica).
async fn leader_end(
    broker: &Arc<Broker>,
    client: &crate::node_client::NodeClient,
    tp: &TopicPartition,
    leader_epoch: i32,
) -> Result<i64, String> {
    let request = ListOffsetsRequest {
        replica_id: broker.node_id(),
        isolation_level: 0,
        topics: vec![ListOffsetsTopic {
            name: tp.topic.clone(),
            partitions: vec![ListOffsetsPartition {
                partition_index: tp.partition,
                current_leader_epoch: leader_epoch,
                timestamp: -1,
            }],
        }],
        timeout_ms: 0,
    };
    match client.call(RequestBody::from(request)).await {
        Ok(ResponseBody::ListOffsets(r)) => r
            .topics
            .iter()
            .flat_map(|t| &t.partitions)
            .find(|p| p.partition_index == tp.partition && p.error_code == 0)
            .map(|p| p.offset)
            .ok_or_else(|| format!("the leader has no log end for {tp}")),
        Ok(other) => Err(format!("unexpected answer {:?}", other.api_key())),
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(p: i32) -> TopicPartition {
        TopicPartition::new("t", p)
    }

    /// A partition backing off is left out until it is due; the others are fetched meanwhile.
    #[test]
    fn a_partition_backing_off_does_not_hold_the_others() {
        let t0 = Instant::from_std(skiff_types::Clock::manual(0).now());
        let ms = |n: u64| t0 + Duration::from_millis(n);
        let all: Targets = vec![(tp(0), 1), (tp(1), 1), (tp(2), 1)];
        // (delayed before, now ms, fetched partitions, next due ms, delayed after)
        type Row = (Vec<(i32, u64)>, u64, Vec<i32>, Option<u64>, Vec<i32>);
        let rows: Vec<Row> = vec![
            (vec![], 0, vec![0, 1, 2], None, vec![]),
            (vec![(1, 1000)], 0, vec![0, 2], Some(1000), vec![1]),
            (vec![(1, 1000)], 999, vec![0, 2], Some(1000), vec![1]),
            (vec![(1, 1000)], 1000, vec![0, 1, 2], None, vec![]),
            (
                vec![(0, 500), (1, 1000), (2, 700)],
                0,
                vec![],
                Some(500),
                vec![0, 1, 2],
            ),
            (
                vec![(0, 500), (1, 1000)],
                600,
                vec![0, 2],
                Some(1000),
                vec![1],
            ),
            // no longer a target: forgotten
            (vec![(7, 1000)], 0, vec![0, 1, 2], None, vec![]),
        ];
        for (before, now, fetched, due, after) in rows {
            let mut delayed: HashMap<TopicPartition, Instant> = before
                .iter()
                .map(|&(p, until)| (tp(p), ms(until)))
                .collect();
            let (list, next) = fetchable(&all, &mut delayed, ms(now));
            let got: Vec<i32> = list.iter().map(|(t, _)| t.partition).collect();
            assert_eq!(got, fetched, "fetched, delayed {before:?} at {now}");
            assert_eq!(next, due.map(ms), "next due, delayed {before:?} at {now}");
            let mut left: Vec<i32> = delayed.keys().map(|t| t.partition).collect();
            left.sort();
            assert_eq!(left, after, "still delayed, delayed {before:?} at {now}");
        }
    }
}
