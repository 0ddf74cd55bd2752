//! Wake-ups for long-polling fetches: "the readable end of this partition moved".
//!
//! Mental model: a waiting Fetch owns one `tokio::sync::Notify` and registers it (weakly) under
//! every partition it reads. Whoever moves a partition's high watermark calls [`AppendWaiters::
//! notify`], which wakes every registered fetch once and forgets them; a woken fetch re-reads
//! and, if still short of `min_bytes`, registers again *before* re-reading so no append is lost
//! between its read and its wait (`notify_one` stores a permit when nobody is waiting yet).
//!
//! Thread-safety: one mutex around a map; registration prunes dropped waiters so idle
//! partitions do not accumulate them.

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use skiff_types::TopicPartition;
use tokio::sync::Notify;

/// Registered fetch waiters per partition.
#[derive(Debug, Default)]
pub struct AppendWaiters {
    map: Mutex<HashMap<TopicPartition, Vec<Weak<Notify>>>>,
}

impl AppendWaiters {
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `waiter` under each partition.
    pub fn register<'a>(
        &self,
        partitions: impl IntoIterator<Item = &'a TopicPartition>,
        waiter: &Arc<Notify>,
    ) {
        let mut map = self.map.lock();
        for tp in partitions {
            let list = map.entry(tp.clone()).or_default();
            list.retain(|w| w.strong_count() > 0 && !w.ptr_eq(&Arc::downgrade(waiter)));
            list.push(Arc::downgrade(waiter));
        }
    }

    /// Wakes (once) every fetch waiting on `tp`.
    pub fn notify(&self, tp: &TopicPartition) {
        let list = self.map.lock().remove(tp);
        for w in list.into_iter().flatten() {
            if let Some(n) = w.upgrade() {
                n.notify_one();
            }
        }
    }

    /// Number of partitions with registered waiters (tests, metrics).
    pub fn partitions_waited_on(&self) -> usize {
        self.map.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn notify_wakes_registered_waiter_even_before_it_waits() {
        let w = AppendWaiters::new();
        let n = Arc::new(Notify::new());
        let tp = TopicPartition::new("t", 0);
        w.register([&tp], &n);
        w.notify(&tp);
        // The permit was stored: this returns at once.
        n.notified().await;
        assert_eq!(w.partitions_waited_on(), 0);
    }

    #[test]
    fn dropped_waiters_are_pruned() {
        let w = AppendWaiters::new();
        let tp = TopicPartition::new("t", 0);
        for _ in 0..100 {
            let n = Arc::new(Notify::new());
            w.register([&tp], &n);
        }
        let n = Arc::new(Notify::new());
        w.register([&tp], &n);
        w.register([&tp], &n);
        assert_eq!(w.map.lock().get(&tp).map(Vec::len), Some(1));
    }
}
