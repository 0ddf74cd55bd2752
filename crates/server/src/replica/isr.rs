//! ISR changes (issue 17 item 2): the leader's proposals go to the active controller as
//! AlterPartition, and time moves every leader's state (ISR shrink, acks deadlines).
//!
//! Mental model: the core proposes an ISR (`Effect::ProposeIsr`: a caught-up follower joins
//! on its fetch, a lagging one leaves on a tick) and keeps it "in flight" (at most one per
//! partition) until it is settled. [`ReplicaManager::apply`] queues the proposal here; the
//! sender task sends every queued proposal in one AlterPartition v3 (each new ISR member with
//! its broker epoch) to the active controller. The answer settles it: NONE carries the
//! committed registration, which the core takes at once when newer than its own
//! (`on_isr_committed`, as Kafka's leader does with the response; the image brings the same
//! change a little later); INELIGIBLE_REPLICA / OPERATION_NOT_ATTEMPTED drop it
//! (`on_isr_proposal_failed`) so a later fetch or tick proposes again; a stale-epoch error
//! keeps it until the next registration settles it; an unknown outcome (no answer, no
//! controller) sends the same proposal again after a short delay (Kafka's
//! `handleAlterPartitionError`): it may have been committed. The ticker calls every hosted
//! partition's `tick` every `replica.lag.time.max.ms / 2` (at most every 250 ms); a leader
//! whose log has a quarantined range proposes an ISR without itself there, a hand-over the
//! controller answers with another leader (issue 17 item 8).
//!
//! Invariants: the new ISR is used only once committed (the core never takes a proposal as
//! the ISR); a proposal of a partition this node no longer leads is dropped unsent.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use skiff_protocol::{
    AlterPartitionRequest, AlterPartitionRequestPartitionData, AlterPartitionRequestTopicData,
    BrokerState, RequestBody, ResponseBody,
};
use skiff_replication::Role;
use skiff_types::{ErrorCode, TopicPartition};
use uuid::Uuid;

use super::ReplicaManager;
use crate::broker::Broker;

/// One queued ISR proposal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IsrProposal {
    pub tp: TopicPartition,
    pub partition_epoch: i32,
    pub isr: Vec<i32>,
}

impl ReplicaManager {
    pub(super) fn queue_isr_proposal(&self, proposal: IsrProposal) {
        self.isr_queue.lock().push(proposal);
        self.isr_ready.notify_one();
    }

    /// The settled answer for `tp`: NONE with the committed `(partition epoch, ISR)`, or an
    /// error (the proposal is dropped).
    pub fn settle_isr(&self, tp: &TopicPartition, answer: Result<(i32, Vec<i32>), ErrorCode>) {
        let Some(log) = self.logs.get(tp) else {
            return;
        };
        let Some((state, _)) = self.states.read().get(tp).cloned() else {
            return;
        };
        let mut l = log.lock();
        let mut st = state.lock();
        let fx = match answer {
            Ok((partition_epoch, isr)) => {
                st.on_isr_committed(partition_epoch, isr, self.clock.now_ms())
            }
            Err(code @ (ErrorCode::IneligibleReplica | ErrorCode::OperationNotAttempted)) => {
                // Kafka's `handleAlterPartitionError`: a definite refusal of the new members;
                // back to the committed ISR, a later fetch may propose again.
                tracing::info!(%tp, ?code, "ISR change refused by the controller");
                st.on_isr_proposal_failed();
                Vec::new()
            }
            Err(code) => {
                // Stale epochs, an unknown partition: the image is ahead of this leader and
                // its next registration settles the proposal. Anything else (no answer, no
                // controller, a disconnect): the outcome is unknown (the change may be
                // committed), so the same proposal is sent again; dropping it could let the
                // HW pass a member the controller already added to the ISR.
                if !matches!(
                    code,
                    ErrorCode::FencedLeaderEpoch
                        | ErrorCode::InvalidUpdateVersion
                        | ErrorCode::UnknownTopicOrPartition
                        | ErrorCode::UnknownTopicId
                        | ErrorCode::NotLeaderOrFollower
                        | ErrorCode::InvalidRequest
                ) && st.role() == Role::Leader
                    && let Some(isr) = st.isr_in_flight()
                {
                    let proposal = IsrProposal {
                        tp: tp.clone(),
                        partition_epoch: st.partition_epoch(),
                        isr: isr.to_vec(),
                    };
                    tracing::debug!(%tp, ?code, "ISR change outcome unknown; resending");
                    self.isr_retry.lock().push(proposal);
                }
                Vec::new()
            }
        };
        drop(st);
        self.apply(&mut l, fx);
    }

    /// The size of `tp`'s committed ISR (a proposal in flight is not counted as the ISR).
    fn committed_isr_len(&self, tp: &TopicPartition) -> Option<usize> {
        let (state, _) = self.states.read().get(tp).cloned()?;
        let n = state.lock().isr().len();
        Some(n)
    }

    /// Moves time for every hosted partition (ISR shrink proposals, acks deadlines).
    pub fn tick_all(&self) {
        let now = self.clock.now_ms();
        let hosted: Vec<_> = self
            .states
            .read()
            .iter()
            .map(|(tp, (st, _))| (tp.clone(), Arc::clone(st)))
            .collect();
        for (tp, state) in hosted {
            if state.lock().role() != Role::Leader {
                continue;
            }
            let Some(log) = self.logs.get(&tp) else {
                continue;
            };
            let mut l = log.lock();
            let mut st = state.lock();
            let mut fx = st.tick(now);
            if let Some(hole) = l.first_quarantined_offset() {
                // A leader with a hole hands leadership to another ISR member, which has the
                // range whole (issue 17 item 8); as a follower it cuts and fetches again.
                let handed = st.hand_over();
                if !handed.is_empty() {
                    tracing::warn!(%tp, hole, "leader log has a quarantined range: handing leadership over");
                }
                fx.extend(handed);
            }
            drop(st);
            self.apply(&mut l, fx);
        }
    }
}

/// Starts the AlterPartition sender and the ticker (cluster brokers).
pub fn start(broker: &Arc<Broker>, lag_time_max_ms: u64) {
    broker
        .replicas
        .set_lag_time_max_ms(i64::try_from(lag_time_max_ms).unwrap_or(i64::MAX));
    tokio::spawn(sender(Arc::clone(broker)));
    tokio::spawn(ticker(Arc::clone(broker), lag_time_max_ms));
}

async fn ticker(broker: Arc<Broker>, lag_time_max_ms: u64) {
    let period = Duration::from_millis((lag_time_max_ms / 2).clamp(10, 250));
    let mut shutdown = broker.shutdown_signal();
    loop {
        tokio::select! {
            _ = tokio::time::sleep(period) => {}
            _ = shutdown.changed() => return,
        }
        let b = Arc::clone(&broker);
        let _ = tokio::task::spawn_blocking(move || b.replicas.tick_all()).await;
    }
}

/// How long an ISR proposal whose outcome is unknown waits before it is sent again.
const RESEND_AFTER: Duration = Duration::from_millis(200);

async fn sender(broker: Arc<Broker>) {
    let mut shutdown = broker.shutdown_signal();
    let ready = Arc::clone(&broker.replicas.isr_ready);
    loop {
        let retrying = !broker.replicas.isr_retry.lock().is_empty();
        tokio::select! {
            _ = ready.notified() => {}
            _ = tokio::time::sleep(RESEND_AFTER), if retrying => {
                let again = std::mem::take(&mut *broker.replicas.isr_retry.lock());
                broker.replicas.isr_queue.lock().extend(again);
            }
            _ = shutdown.changed() => return,
        }
        let queued = std::mem::take(&mut *broker.replicas.isr_queue.lock());
        if queued.is_empty() {
            continue;
        }
        send(&broker, queued).await;
    }
}

/// One AlterPartition with every proposal of this node that it still leads.
async fn send(broker: &Arc<Broker>, queued: Vec<IsrProposal>) {
    let image = broker.image();
    let rm = &broker.replicas;
    let mut by_topic: HashMap<Uuid, AlterPartitionRequestTopicData> = HashMap::new();
    let mut sent: Vec<TopicPartition> = Vec::new();
    // Issue 20: the committed ISR's size as each proposal leaves; an accepted answer is
    // counted as a shrink or an expand against it (the image may bring the change first).
    let mut isr_before: HashMap<TopicPartition, usize> = HashMap::new();
    for p in queued {
        let (Some(info), Some(epoch)) = (image.topic(&p.tp.topic), rm.leader_epoch(&p.tp)) else {
            continue;
        };
        if let Some(n) = rm.committed_isr_len(&p.tp) {
            isr_before.insert(p.tp.clone(), n);
        }
        let id = Uuid::from_bytes(info.id);
        let data = AlterPartitionRequestPartitionData {
            partition_index: p.tp.partition,
            leader_epoch: epoch,
            new_isr_with_epochs: p
                .isr
                .iter()
                .map(|b| BrokerState {
                    broker_id: *b,
                    broker_epoch: image.broker(*b).map_or(-1, |r| r.epoch),
                })
                .collect(),
            partition_epoch: p.partition_epoch,
            ..AlterPartitionRequestPartitionData::default()
        };
        by_topic
            .entry(id)
            .or_insert_with(|| AlterPartitionRequestTopicData {
                topic_id: id,
                ..AlterPartitionRequestTopicData::default()
            })
            .partitions
            .push(data);
        sent.push(p.tp);
    }
    if sent.is_empty() {
        return;
    }
    let Some(broker_epoch) = *broker.producer_ids.registered_epoch.lock() else {
        for tp in &sent {
            rm.settle_isr(tp, Err(ErrorCode::BrokerIdNotRegistered));
        }
        return;
    };
    let request = AlterPartitionRequest {
        broker_id: broker.node_id(),
        broker_epoch,
        topics: by_topic.into_values().collect(),
    };
    let answer = crate::cluster::call_controller(broker, RequestBody::from(request)).await;
    let response = match answer {
        Ok(ResponseBody::AlterPartition(r)) => r,
        other => {
            tracing::debug!(?other, "AlterPartition not answered; proposals dropped");
            for tp in &sent {
                rm.settle_isr(tp, Err(ErrorCode::RequestTimedOut));
            }
            return;
        }
    };
    let top = ErrorCode::from_code(response.error_code).unwrap_or(ErrorCode::UnknownServerError);
    let mut answered: Vec<TopicPartition> = Vec::new();
    if top == ErrorCode::None {
        for t in &response.topics {
            let Some(info) = image.topic_by_id(t.topic_id.as_bytes()) else {
                continue;
            };
            for p in &t.partitions {
                let tp = TopicPartition::new(info.name.clone(), p.partition_index);
                let result = match ErrorCode::from_code(p.error_code) {
                    // A hand-over (another leader now): the image brings the change.
                    Some(ErrorCode::None) if p.leader_id != broker.node_id() => {
                        Err(ErrorCode::FencedLeaderEpoch)
                    }
                    Some(ErrorCode::None) => Ok((p.partition_epoch, p.isr.clone())),
                    other => Err(other.unwrap_or(ErrorCode::UnknownServerError)),
                };
                if let (Ok((_, isr)), Some(before)) = (&result, isr_before.get(&tp)) {
                    broker.metrics.isr_changed(*before, isr.len());
                }
                rm.settle_isr(&tp, result);
                answered.push(tp);
            }
        }
    }
    for tp in sent.iter().filter(|tp| !answered.contains(tp)) {
        rm.settle_isr(tp, Err(top));
    }
}
