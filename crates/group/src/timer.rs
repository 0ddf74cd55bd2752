//! A deterministic timer set for the pure shard: named deadlines in caller time.
//!
//! Mental model: every timer has a key (at most one pending deadline per key; scheduling a key
//! again replaces it, like Kafka's `CoordinatorTimer.schedule`) and a task saying what to do when
//! it fires. Nothing runs by itself: the shard pops expired timers when it is called with a
//! `now_ms`. Ties fire in scheduling order (a sequence number), so a run is a pure function of
//! the inputs. Owned by one shard; not shared.

use std::collections::{BTreeSet, HashMap};

/// What a timer is about (at most one pending timer per key).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum TimerKey {
    /// A classic member's heartbeat / session expiry (also a pending member's join deadline).
    Heartbeat { group: String, member: String },
    /// A classic group's join phase (initial delay or rebalance timeout).
    Join { group: String },
    /// A classic group's wait for SyncGroup from every member.
    Sync { group: String },
    /// A KIP-848 member's session expiry.
    ConsumerSession { group: String, member: String },
    /// A KIP-848 member's deadline to revoke partitions.
    ConsumerRebalance { group: String, member: String },
    /// A classic member of a consumer group told to rejoin: its deadline to send JoinGroup.
    ClassicJoin { group: String, member: String },
    /// A classic member of a consumer group that joined: its deadline to send SyncGroup.
    ClassicSync { group: String, member: String },
    /// The periodic offsets/groups expiry sweep.
    Expiration,
}

/// What to do when a timer fires.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum TimerTask {
    ExpireHeartbeat,
    CompleteJoin,
    InitialRebalance {
        delay_ms: i64,
        remaining_ms: i64,
    },
    ExpireSync {
        generation: i32,
    },
    ExpireConsumerSession,
    ExpireConsumerRebalance {
        member_epoch: i32,
    },
    /// Fence a classic member of a consumer group (join or sync deadline passed).
    FenceClassicMember,
    CleanupExpired,
}

#[derive(Debug, Default)]
pub(crate) struct Timers {
    by_key: HashMap<TimerKey, (i64, u64, TimerTask)>,
    queue: BTreeSet<(i64, u64, TimerKey)>,
    seq: u64,
}

impl Timers {
    /// Schedules (or reschedules) `key` to fire at `deadline_ms`.
    pub(crate) fn schedule(&mut self, key: TimerKey, deadline_ms: i64, task: TimerTask) {
        self.cancel(&key);
        self.seq += 1;
        self.queue.insert((deadline_ms, self.seq, key.clone()));
        self.by_key.insert(key, (deadline_ms, self.seq, task));
    }

    pub(crate) fn cancel(&mut self, key: &TimerKey) {
        if let Some((deadline, seq, _)) = self.by_key.remove(key) {
            self.queue.remove(&(deadline, seq, key.clone()));
        }
    }

    pub(crate) fn is_scheduled(&self, key: &TimerKey) -> bool {
        self.by_key.contains_key(key)
    }

    /// Removes and returns the earliest timer whose deadline is `<= now_ms`, with its deadline.
    pub(crate) fn pop_expired(&mut self, now_ms: i64) -> Option<(i64, TimerKey, TimerTask)> {
        let first = self.queue.first()?;
        if first.0 > now_ms {
            return None;
        }
        let (deadline, _, key) = self.queue.pop_first()?;
        let (_, _, task) = self.by_key.remove(&key)?;
        Some((deadline, key, task))
    }

    pub(crate) fn next_deadline(&self) -> Option<i64> {
        self.queue.first().map(|(d, _, _)| *d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fires_in_deadline_then_schedule_order_and_reschedule_replaces() {
        let mut t = Timers::default();
        let a = TimerKey::Join { group: "a".into() };
        let b = TimerKey::Join { group: "b".into() };
        t.schedule(a.clone(), 10, TimerTask::CompleteJoin);
        t.schedule(b.clone(), 10, TimerTask::CompleteJoin);
        t.schedule(TimerKey::Expiration, 5, TimerTask::CleanupExpired);
        assert_eq!(t.next_deadline(), Some(5));
        assert_eq!(t.pop_expired(4), None);
        assert_eq!(t.pop_expired(10).map(|x| x.1), Some(TimerKey::Expiration));
        // Rescheduling `a` moves it behind `b`.
        t.schedule(a.clone(), 10, TimerTask::CompleteJoin);
        assert_eq!(t.pop_expired(10).map(|x| x.1), Some(b));
        assert_eq!(t.pop_expired(10).map(|x| x.1), Some(a.clone()));
        assert_eq!(t.pop_expired(100), None);
        t.schedule(a.clone(), 20, TimerTask::CompleteJoin);
        t.cancel(&a);
        assert_eq!(t.next_deadline(), None);
    }
}
