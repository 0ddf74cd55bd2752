//! The shard's offsets in memory: committed offsets and the pending transactional ones
//! (Kafka's `OffsetMetadataManager` maps `offsets`, `pendingTransactionalOffsets` and
//! `openTransactionsByGroup`).
//!
//! Mental model: both maps change only by applying `__consumer_offsets` records, in log order
//! (live, right after the shard emits them, and while replaying):
//! - a non-transactional OffsetCommit value goes to the committed map;
//! - a value written in a transactional batch of producer `pid` goes to `pid`'s pending map,
//!   invisible to OffsetFetch, until that producer's end-transaction marker: COMMIT moves each
//!   pending offset to the committed map, ABORT drops them;
//! - a tombstone removes the committed offset and every producer's pending one of that key.
//!
//! Precedence (Kafka's rule): every applied record takes the next *order* number, so orders
//! follow log order (the shard's order is the log's order, live and on replay). At COMMIT a
//! pending offset replaces the committed one only if it was written after it; an older pending
//! offset loses to a newer plain commit. Comparing orders instead of "marker wins" keeps the
//! answer the same after compaction removed superseded records.
//!
//! Invariants: a producer id is in `open_by_group[g]` iff its pending map has an offset of `g`;
//! no empty inner maps are kept.

use std::collections::{BTreeMap, BTreeSet};

use skiff_protocol::{OffsetCommitKey, OffsetCommitValue};

use crate::offsets::OffsetAndMetadata;

/// An offset and the order of the record that set it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Stored {
    pub value: OffsetAndMetadata,
    pub order: u64,
}

/// topic -> partition -> offset.
pub(crate) type GroupOffsets = BTreeMap<String, BTreeMap<i32, Stored>>;

/// group -> topic -> partition -> offset.
#[derive(Clone, Debug, Default)]
struct OffsetMap {
    by_group: BTreeMap<String, GroupOffsets>,
}

impl OffsetMap {
    fn get(&self, group: &str, topic: &str, partition: i32) -> Option<&Stored> {
        self.by_group.get(group)?.get(topic)?.get(&partition)
    }

    fn put(&mut self, group: &str, topic: &str, partition: i32, stored: Stored) {
        self.by_group
            .entry(group.to_string())
            .or_default()
            .entry(topic.to_string())
            .or_default()
            .insert(partition, stored);
    }

    fn remove(&mut self, group: &str, topic: &str, partition: i32) -> Option<Stored> {
        let topics = self.by_group.get_mut(group)?;
        let parts = topics.get_mut(topic)?;
        let removed = parts.remove(&partition);
        if parts.is_empty() {
            topics.remove(topic);
        }
        if topics.is_empty() {
            self.by_group.remove(group);
        }
        removed
    }

    fn is_empty(&self) -> bool {
        self.by_group.is_empty()
    }
}

/// Committed and pending offsets of one shard.
#[derive(Clone, Debug, Default)]
pub(crate) struct OffsetStore {
    committed: OffsetMap,
    /// Pending transactional offsets by producer id.
    pending: BTreeMap<i64, OffsetMap>,
    /// group -> producer ids with pending offsets of that group.
    open_by_group: BTreeMap<String, BTreeSet<i64>>,
    /// The order the next applied record takes.
    next_order: u64,
}

fn to_offset(v: &OffsetCommitValue) -> OffsetAndMetadata {
    OffsetAndMetadata {
        offset: v.offset,
        leader_epoch: v.leader_epoch,
        metadata: v.metadata.clone(),
        commit_timestamp_ms: v.commit_timestamp,
        expire_timestamp_ms: (v.expire_timestamp >= 0).then_some(v.expire_timestamp),
    }
}

impl OffsetStore {
    fn take_order(&mut self) -> u64 {
        let o = self.next_order;
        self.next_order += 1;
        o
    }

    pub fn get(&self, group: &str, topic: &str, partition: i32) -> Option<&OffsetAndMetadata> {
        self.committed
            .get(group, topic, partition)
            .map(|s| &s.value)
    }

    pub fn group(&self, group: &str) -> Option<&GroupOffsets> {
        self.committed.by_group.get(group)
    }

    /// Applies one non-transactional OffsetCommit record (value `None` = tombstone, which
    /// also drops every pending offset of the key).
    pub fn apply(&mut self, key: &OffsetCommitKey, value: Option<&OffsetCommitValue>) {
        let order = self.take_order();
        match value {
            Some(v) => {
                let stored = Stored {
                    value: to_offset(v),
                    order,
                };
                self.committed
                    .put(&key.group, &key.topic, key.partition, stored);
            }
            None => {
                self.committed.remove(&key.group, &key.topic, key.partition);
                let pids: Vec<i64> = self
                    .open_by_group
                    .get(&key.group)
                    .map(|s| s.iter().copied().collect())
                    .unwrap_or_default();
                for pid in pids {
                    if let Some(p) = self.pending.get_mut(&pid) {
                        p.remove(&key.group, &key.topic, key.partition);
                    }
                    self.forget_if_done(pid, &key.group);
                }
            }
        }
    }

    /// Applies one record of a transactional batch of `producer_id`: a value becomes a pending
    /// offset of that producer; a tombstone acts as a plain one (Kafka replays it so).
    pub fn apply_pending(
        &mut self,
        producer_id: i64,
        key: &OffsetCommitKey,
        value: Option<&OffsetCommitValue>,
    ) {
        let Some(v) = value else {
            self.apply(key, None);
            return;
        };
        let stored = Stored {
            value: to_offset(v),
            order: self.take_order(),
        };
        self.pending.entry(producer_id).or_default().put(
            &key.group,
            &key.topic,
            key.partition,
            stored,
        );
        self.open_by_group
            .entry(key.group.clone())
            .or_default()
            .insert(producer_id);
    }

    /// Ends `producer_id`'s transaction on this partition: COMMIT materialises its pending
    /// offsets (each only over an older committed one), ABORT drops them. A marker for a
    /// producer with nothing pending changes nothing. Returns the groups that had pending
    /// offsets of the producer.
    pub fn complete(&mut self, producer_id: i64, commit: bool) -> Vec<String> {
        // A marker takes an order too, as any record of the log.
        self.take_order();
        let Some(pending) = self.pending.remove(&producer_id) else {
            return Vec::new();
        };
        let groups: Vec<String> = pending.by_group.keys().cloned().collect();
        for g in &groups {
            if let Some(open) = self.open_by_group.get_mut(g) {
                open.remove(&producer_id);
                if open.is_empty() {
                    self.open_by_group.remove(g);
                }
            }
        }
        if commit {
            for (group, topics) in pending.by_group {
                for (topic, parts) in topics {
                    for (partition, stored) in parts {
                        let newer = self
                            .committed
                            .get(&group, &topic, partition)
                            .is_none_or(|c| stored.order > c.order);
                        if newer {
                            self.committed.put(&group, &topic, partition, stored);
                        }
                    }
                }
            }
        }
        groups
    }

    fn forget_if_done(&mut self, producer_id: i64, group: &str) {
        let has_group = self
            .pending
            .get(&producer_id)
            .is_some_and(|p| p.by_group.contains_key(group));
        if !has_group && let Some(open) = self.open_by_group.get_mut(group) {
            open.remove(&producer_id);
            if open.is_empty() {
                self.open_by_group.remove(group);
            }
        }
        if self
            .pending
            .get(&producer_id)
            .is_some_and(OffsetMap::is_empty)
        {
            self.pending.remove(&producer_id);
        }
    }

    /// Kafka's `hasPendingTransactionalOffsets`.
    pub fn has_pending(&self, group: &str, topic: &str, partition: i32) -> bool {
        self.open_by_group.get(group).is_some_and(|pids| {
            pids.iter().any(|pid| {
                self.pending
                    .get(pid)
                    .is_some_and(|p| p.get(group, topic, partition).is_some())
            })
        })
    }

    /// Whether some transaction has pending offsets of `group`.
    pub fn has_open_transactions(&self, group: &str) -> bool {
        self.open_by_group.contains_key(group)
    }

    /// The pending offsets of `group`, as (topic, partition), across producers, deduplicated.
    pub fn pending_partitions(&self, group: &str) -> Vec<(String, i32)> {
        let mut out = BTreeSet::new();
        for pid in self.open_by_group.get(group).into_iter().flatten() {
            if let Some(topics) = self.pending.get(pid).and_then(|p| p.by_group.get(group)) {
                for (t, parts) in topics {
                    out.extend(parts.keys().map(|p| (t.clone(), *p)));
                }
            }
        }
        out.into_iter().collect()
    }

    /// A pending offset (tests, operators' views).
    pub fn pending_offset(
        &self,
        producer_id: i64,
        group: &str,
        topic: &str,
        partition: i32,
    ) -> Option<&OffsetAndMetadata> {
        self.pending
            .get(&producer_id)?
            .get(group, topic, partition)
            .map(|s| &s.value)
    }

    /// Every (topic, partition) committed for `group`.
    pub fn partitions(&self, group: &str) -> Vec<(String, i32)> {
        let Some(topics) = self.committed.by_group.get(group) else {
            return Vec::new();
        };
        topics
            .iter()
            .flat_map(|(t, parts)| parts.keys().map(move |p| (t.clone(), *p)))
            .collect()
    }
}
