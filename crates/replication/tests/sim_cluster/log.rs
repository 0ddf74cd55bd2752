//! One replica's partition log as the simulation models it: entries (one record per batch,
//! offset = index, log start 0), the fsynced end, the log's HW and its checkpoint, and the
//! leader-epoch cache with `skiff_storage::LeaderEpochCache`'s rules (`assign`,
//! `end_offset_for`, `truncate_from_end`), which are Kafka's `LeaderEpochFileCache`.

use skiff_replication::LocalLog;

/// One record: the leader epoch its batch was stamped with and a unique payload id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub epoch: i32,
    pub payload: u64,
}

#[derive(Clone, Debug, Default)]
pub struct SimLog {
    pub entries: Vec<Entry>,
    /// Everything below is on disk (survives a power loss).
    pub synced: i64,
    /// The log's HW (`Log::set_high_watermark`, from the core's effects).
    pub hw: i64,
    /// `replication-offset-checkpoint`: the HW as last checkpointed (durable).
    pub checkpoint_hw: i64,
    /// The leader-epoch cache: (epoch, start offset), both strictly increasing.
    pub epochs: Vec<(i32, i64)>,
}

pub fn off(i: usize) -> i64 {
    i64::try_from(i).unwrap_or(i64::MAX)
}

pub fn idx(o: i64) -> usize {
    usize::try_from(o.max(0)).unwrap_or(0)
}

impl SimLog {
    pub fn leo(&self) -> i64 {
        off(self.entries.len())
    }

    pub fn at(&self, o: i64) -> Option<Entry> {
        self.entries.get(idx(o)).copied().filter(|_| o >= 0)
    }

    /// The latest epoch in the cache, -1 when empty (the fetch's LastFetchedEpoch).
    pub fn latest_epoch(&self) -> i32 {
        self.epochs.last().map_or(-1, |e| e.0)
    }

    /// `LeaderEpochCache::assign`.
    pub fn assign(&mut self, epoch: i32, start: i64) {
        if let Some(&(e, s)) = self.epochs.last()
            && e == epoch
            && start >= s
        {
            return;
        }
        let keep = self
            .epochs
            .iter()
            .rposition(|&(e, s)| e < epoch && s < start)
            .map_or(0, |i| i + 1);
        self.epochs.truncate(keep);
        self.epochs.push((epoch, start));
    }

    /// `Log::assign_epoch_start`: a new leader records its epoch at the log end.
    pub fn assign_epoch_start(&mut self, epoch: i32) {
        if epoch > self.latest_epoch() {
            self.assign(epoch, self.leo());
        }
    }

    /// `LeaderEpochCache::end_offset_for` (Kafka's `endOffsetFor`).
    pub fn end_offset_for(&self, requested: i32) -> (i32, i64) {
        if requested < 0 {
            return (-1, -1);
        }
        if self.epochs.last().is_some_and(|e| e.0 == requested) {
            return (requested, self.leo());
        }
        let higher = self.epochs.partition_point(|e| e.0 <= requested);
        let Some(&(_, next_start)) = self.epochs.get(higher) else {
            return (-1, -1);
        };
        match higher.checked_sub(1) {
            None => (requested, next_start),
            Some(floor) => (self.epochs[floor].0, next_start),
        }
    }

    /// `LeaderEpochCache::truncate_from_end`: entries starting at or after `end` go.
    pub fn truncate_epochs_from_end(&mut self, end: i64) {
        let keep = self.epochs.partition_point(|e| e.1 < end);
        self.epochs.truncate(keep);
    }

    /// An append (leader or follower): `finish_append` assigns a newer batch epoch.
    pub fn append(&mut self, e: Entry) {
        if e.epoch > self.latest_epoch() {
            self.assign(e.epoch, self.leo());
        }
        self.entries.push(e);
    }

    /// `Log::truncate_to` with `to < leo` (the caller checks): entries, synced end, cache, HW.
    pub fn truncate_to(&mut self, to: i64) {
        self.entries.truncate(idx(to));
        self.synced = self.synced.min(to);
        self.truncate_epochs_from_end(to);
        self.hw = self.hw.min(to);
    }

    /// A crash keeping the first `keep` entries (`keep >= synced`), then recovery: what is on
    /// disk is synced, the cache is truncated to the log end, the HW is the checkpoint clamped
    /// to the log, and written back (`LogManager::open` writes the checkpoints once loaded).
    pub fn crash(&mut self, keep: i64) {
        self.entries.truncate(idx(keep));
        self.synced = self.leo();
        self.truncate_epochs_from_end(self.leo());
        self.hw = self.checkpoint_hw.clamp(0, self.leo());
        self.checkpoint_hw = self.hw;
    }

    /// The core's view of this log (`follow.rs`'s `local_of`), durable to `durable_end`.
    pub fn local(&self, durable_end: i64) -> LocalLog {
        LocalLog {
            log_start_offset: 0,
            log_end_offset: self.leo(),
            durable_end: durable_end.min(self.leo()),
            high_watermark: self.hw,
        }
    }
}

#[test]
fn epoch_cache_follows_kafkas_rules() {
    let mut l = SimLog::default();
    for (epoch, n) in [(1, 3), (3, 2)] {
        for p in 0..n {
            l.append(Entry { epoch, payload: p });
        }
    }
    assert_eq!(l.epochs, vec![(1, 0), (3, 3)]);
    assert_eq!(l.end_offset_for(3), (3, 5), "latest epoch: the log end");
    assert_eq!(
        l.end_offset_for(2),
        (1, 3),
        "unknown epoch: the floor's end"
    );
    assert_eq!(l.end_offset_for(0), (0, 0), "below the first epoch");
    assert_eq!(l.end_offset_for(4), (-1, -1), "above the latest");
    l.assign_epoch_start(5);
    assert_eq!(l.epochs.last(), Some(&(5, 5)));
    l.assign(6, 5); // an empty epoch is replaced at the same start
    assert_eq!(l.epochs, vec![(1, 0), (3, 3), (6, 5)]);
    l.truncate_to(2);
    assert_eq!((l.epochs.clone(), l.leo()), (vec![(1, 0)], 2));
}
