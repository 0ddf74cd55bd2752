//! Delayed delivery (issue 8) in the server: the timer that moves delivery stable offsets
//! (DSOs) and wakes long-polling fetches, and the per-partition status view.
//!
//! Mental model: storage decides (`Log::delivery_stable_offset(now)` advances a partition's
//! pending FIFO; fetch, ListOffsets and retention call it at their own `now`, so visibility
//! never depends on this task). This task only makes the wake-up prompt: [`DeliveryTimer`]
//! holds `(due, partition)` for each partition's *next* due time (the head of its FIFO, not
//! every delayed batch: O(partitions) entries, O(log n) each). The task sleeps until the
//! earliest, advances those partitions, schedules their new heads and notifies the fetch
//! waiters. Produce schedules a partition when it appends a delayed batch; start-up schedules
//! every partition loaded with pending batches. Stale entries (a head that moved, a deleted
//! partition) are harmless: firing them is a no-op.
//!
//! Thread-safety: one mutex around a `BTreeSet`; `tokio::sync::Notify` wakes the task when an
//! earlier deadline arrives (a stored permit covers a schedule between its check and its wait).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use skiff_storage::DeliveryStatus;
use skiff_types::TopicPartition;
use tokio::sync::Notify;

use crate::broker::Broker;

/// Partitions keyed by their next due time (epoch ms).
#[derive(Debug, Default)]
pub struct DeliveryTimer {
    queue: Mutex<BTreeSet<(i64, TopicPartition)>>,
    wake: Notify,
}

impl DeliveryTimer {
    pub fn new() -> Self {
        Self::default()
    }

    /// Arranges for `tp` to be advanced at `due_ms`.
    pub fn schedule(&self, tp: TopicPartition, due_ms: i64) {
        let earliest = {
            let mut q = self.queue.lock();
            let before = q.first().map(|(d, _)| *d);
            q.insert((due_ms, tp));
            before.is_none_or(|b| due_ms < b)
        };
        if earliest {
            self.wake.notify_one();
        }
    }

    /// Removes and returns the partitions due at `now`.
    pub fn pop_due(&self, now_ms: i64) -> Vec<TopicPartition> {
        let mut q = self.queue.lock();
        let mut out = Vec::new();
        while q.first().is_some_and(|(d, _)| *d <= now_ms) {
            if let Some((_, tp)) = q.pop_first() {
                out.push(tp);
            }
        }
        out.sort();
        out.dedup();
        out
    }

    /// The earliest scheduled due time.
    pub fn next_due(&self) -> Option<i64> {
        self.queue.lock().first().map(|(d, _)| *d)
    }

    /// Scheduled entries (tests, status).
    pub fn len(&self) -> usize {
        self.queue.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Upper bound of one sleep with nothing scheduled (a schedule wakes it earlier anyway).
const IDLE_SLEEP: Duration = Duration::from_secs(60);

/// Schedules every hosted partition with pending delayed batches (start-up).
pub fn schedule_loaded(broker: &Broker) {
    for (tp, log) in broker.replicas.log_manager().all() {
        let status = log.lock().delivery_status(broker.now_ms());
        if let Some(due) = status.next_due_ms {
            tracing::info!(%tp, pending = status.pending_batches, next_due_ms = due, dso = ?status.delivery_stable_offset, "delayed batches pending");
            broker.replicas.delivery.schedule(tp, due);
        }
    }
}

/// Advances the partitions due at `now`: DSO forward, next head scheduled, fetchers woken.
pub fn fire_due(broker: &Broker, now: i64) -> usize {
    let due = broker.replicas.delivery.pop_due(now);
    for tp in &due {
        if let Some(log) = broker.replicas.log_manager().get(tp) {
            let next = {
                let mut l = log.lock();
                l.delivery_stable_offset(now);
                l.delivery_next_due()
            };
            if let Some(n) = next {
                broker.replicas.delivery.schedule(tp.clone(), n);
            }
        }
        broker.replicas.waiters.notify(tp);
    }
    due.len()
}

/// The timer task: runs until shutdown.
pub async fn run(broker: Arc<Broker>) {
    let mut shutdown = broker.shutdown_signal();
    loop {
        if *shutdown.borrow() {
            return;
        }
        fire_due(&broker, broker.now_ms());
        let sleep = match broker.replicas.delivery.next_due() {
            Some(due) => Duration::from_millis(u64::try_from(due - broker.now_ms()).unwrap_or(0)),
            None => IDLE_SLEEP,
        };
        tokio::select! {
            _ = tokio::time::sleep(sleep) => {}
            _ = broker.replicas.delivery.wake.notified() => {}
            _ = shutdown.changed() => {}
        }
    }
}

impl Broker {
    /// The delayed-delivery status of a hosted partition (`None` if not hosted).
    pub fn delivery_status(&self, tp: &TopicPartition) -> Option<DeliveryStatus> {
        self.replicas
            .log_manager()
            .get(tp)
            .map(|log| log.lock().delivery_status(self.now_ms()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timer_pops_in_due_order_and_dedups() {
        let t = DeliveryTimer::new();
        let (a, b) = (TopicPartition::new("a", 0), TopicPartition::new("b", 0));
        t.schedule(b.clone(), 300);
        t.schedule(a.clone(), 100);
        t.schedule(a.clone(), 100);
        t.schedule(a.clone(), 200);
        assert_eq!(t.len(), 3);
        assert_eq!(t.next_due(), Some(100));
        assert!(t.pop_due(99).is_empty());
        assert_eq!(t.pop_due(250), vec![a]);
        assert_eq!(t.next_due(), Some(300));
        assert_eq!(t.pop_due(i64::MAX), vec![b]);
        assert!(t.is_empty());
    }

    #[tokio::test]
    async fn an_earlier_schedule_wakes_the_task() {
        let t = DeliveryTimer::new();
        t.schedule(TopicPartition::new("a", 0), 500);
        // the permit is stored: this returns at once
        t.wake.notified().await;
        t.schedule(TopicPartition::new("a", 0), 900);
        t.schedule(TopicPartition::new("a", 0), 100);
        t.wake.notified().await;
    }
}
