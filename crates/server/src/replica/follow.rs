//! Roles from the image, and the follower's side of replication (issue 17 items 1 and 4).
//!
//! Mental model: the image's partition registration says who leads at which leader epoch;
//! [`ReplicaManager::sync_roles`] makes every hosted partition match it on each metadata
//! change: leader at a new epoch -> `become_leader` and the epoch's start recorded in the
//! log's epoch cache (Kafka's `makeLeader`); a new ISR at the same epoch -> `on_isr_committed`;
//! another leader or epoch -> `become_follower` (Kafka's `makeFollower`: no truncation here,
//! the fetcher's divergence check fixes a suffix). The partitions it follows are published as
//! [`FollowTarget`]s (leader -1: none to fetch from) for the fetchers.
//!
//! The follower's operations, each under the log lock then the state lock:
//! - [`ReplicaManager::follower_position`]: what the next fetch asks for (the log end, the
//!   latest epoch in the cache, the log start); a log with a quarantined range is first cut
//!   there (issue 17 item 8), so the damaged batch and what follows are fetched again from
//!   the leader, byte for byte, and the leader sees the fetch offset go back below its HW and
//!   takes this replica out of the ISR until it has the range whole again;
//! - [`ReplicaManager::append_fetched`]: appends a leader's batches (every CRC checked,
//!   offsets from the log end on; a batch wholly below it is skipped), fsyncs them on a durable
//!   topic (so the next fetch offset is the fsynced end, and "acknowledged" means fsynced on
//!   the ISR), then takes the leader's HW (capped by its own log end);
//! - [`ReplicaManager::truncate_diverged`]: a `DivergingEpoch` answer (KIP-320): truncates to
//!   `min(leader's end of that epoch, own end of that epoch, log end)`, as Kafka's
//!   `AbstractFetcherThread` does, and the next fetch checks again;
//! - [`ReplicaManager::reset_out_of_range`]: OFFSET_OUT_OF_RANGE: below the leader's log
//!   start, the log restarts empty there; above the leader's end, it is truncated to it.
//!
//! Invariants: a follower operation refuses (NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH)
//! when the partition is no longer followed at the fetch's epoch, so a fetch answered for an
//! older epoch never writes; nothing here moves the HW above the local log end.

use skiff_metadata::MetadataImage;
use skiff_replication::{LocalLog, Role};
use skiff_storage::Log;
use skiff_types::{ErrorCode, TopicPartition};
use tokio::sync::watch;

use super::{ReplicaManager, assignment_of};

/// A partition this node follows: the leader to fetch from (-1: none now) and its epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FollowTarget {
    pub leader: i32,
    pub leader_epoch: i32,
}

/// What a follower's next fetch of a partition asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FollowerPosition {
    /// The log end (fsynced first on a durable topic).
    pub fetch_offset: i64,
    /// The latest epoch in the log's epoch cache (-1: none).
    pub last_fetched_epoch: i32,
    pub log_start_offset: i64,
    pub leader_epoch: i32,
}

/// Why a follower operation did nothing.
#[derive(Debug, thiserror::Error)]
pub enum FollowError {
    #[error("the partition is not followed at that leader epoch ({0:?})")]
    NotFollowing(ErrorCode),
    #[error("the leader sent a bad batch: {0}")]
    BadBatch(String),
    #[error("storage: {0}")]
    Storage(String),
}

fn local_of(l: &Log) -> LocalLog {
    LocalLog {
        log_start_offset: l.log_start_offset(),
        log_end_offset: l.log_end_offset(),
        durable_end: l.sync().synced().min(l.log_end_offset()),
        high_watermark: l.high_watermark(),
    }
}

impl ReplicaManager {
    /// The partitions this node follows now.
    pub fn following(&self) -> Vec<(TopicPartition, FollowTarget)> {
        self.following
            .lock()
            .iter()
            .map(|(tp, t)| (tp.clone(), *t))
            .collect()
    }

    /// Bumped whenever [`ReplicaManager::following`] changes.
    pub fn following_changes(&self) -> watch::Receiver<u64> {
        self.following_tx.subscribe()
    }

    pub(super) fn set_following(&self, tp: &TopicPartition, target: Option<(i32, i32)>) {
        let mut f = self.following.lock();
        let changed = match target {
            Some((leader, leader_epoch)) => {
                let t = FollowTarget {
                    leader,
                    leader_epoch,
                };
                f.insert(tp.clone(), t) != Some(t)
            }
            None => f.remove(tp).is_some(),
        };
        drop(f);
        if changed {
            self.following_tx.send_modify(|g| *g += 1);
        }
    }

    /// Makes every hosted partition's role match `image` (see the module docs).
    pub(super) fn sync_roles(&self, image: &MetadataImage) {
        if !self.roles_open() {
            return;
        }
        let hosted: Vec<TopicPartition> = self.states.read().keys().cloned().collect();
        let now = self.clock.now_ms();
        for tp in hosted {
            let Some((leader, a)) = assignment_of(image, &tp, self.node_id) else {
                continue; // reassigned away: removal comes with reassignment
            };
            let (Some(log), Some((state, _))) =
                (self.logs.get(&tp), self.states.read().get(&tp).cloned())
            else {
                continue;
            };
            let mut l = log.lock();
            let mut st = state.lock();
            let (role_before, epoch_before) = (st.role(), st.leader_epoch());
            let same_epoch = st.leader_epoch() == a.leader_epoch;
            let epoch = a.leader_epoch;
            let mut fx = match (leader == self.node_id, st.role()) {
                (true, Role::Leader) if same_epoch => {
                    if a.partition_epoch > st.partition_epoch() {
                        st.on_isr_committed(a.partition_epoch, a.isr, now)
                    } else {
                        Vec::new()
                    }
                }
                (true, _) => {
                    if let Err(e) = l.assign_epoch_start(epoch) {
                        tracing::error!(%tp, error = %e, "cannot record the leader epoch start");
                    }
                    tracing::info!(%tp, epoch, leo = l.log_end_offset(), "leader");
                    st.become_leader(a, local_of(&l), now)
                }
                (false, Role::Follower { leader: cur })
                    if cur == leader && same_epoch && a.partition_epoch <= st.partition_epoch() =>
                {
                    Vec::new()
                }
                (false, _) => {
                    if !(same_epoch
                        && matches!(st.role(), Role::Follower { leader: c } if c == leader))
                    {
                        tracing::info!(%tp, leader, epoch, leo = l.log_end_offset(), "follower");
                    }
                    st.become_follower(leader, a, local_of(&l))
                }
            };
            if st.role() == Role::Leader {
                // Kafka's `isReplicaIsrEligible`: followers on fenced, shutting-down or
                // unregistered brokers are not waited for and not proposed into the ISR.
                let ineligible = st
                    .replicas()
                    .iter()
                    .copied()
                    .filter(|r| {
                        *r != self.node_id
                            && image
                                .broker(*r)
                                .is_none_or(|b| b.fenced || b.in_controlled_shutdown)
                    })
                    .collect();
                fx.extend(st.set_ineligible(ineligible, now));
            }
            let changed = st.role() != role_before || st.leader_epoch() != epoch_before;
            drop(st);
            self.apply(&mut l, fx);
            drop(l);
            if changed {
                // Parked fetches re-read now: a former leader's answer NOT_LEADER_OR_FOLLOWER
                // at once (Kafka completes its delayed fetches on a delta), not at their wait.
                self.waiters.notify(&tp);
            }
            self.set_following(&tp, (leader != self.node_id).then_some((leader, epoch)));
        }
    }

    /// Locks `tp` as a follower of `leader_epoch`: the log and state guards.
    fn followed(
        &self,
        tp: &TopicPartition,
        leader_epoch: i32,
    ) -> Result<(skiff_storage::SharedLog, super::Slot), FollowError> {
        let slot = self
            .states
            .read()
            .get(tp)
            .cloned()
            .ok_or(FollowError::NotFollowing(ErrorCode::NotLeaderOrFollower))?;
        let log = self
            .logs
            .get(tp)
            .ok_or(FollowError::NotFollowing(ErrorCode::NotLeaderOrFollower))?;
        {
            let st = slot.0.lock();
            if !matches!(st.role(), Role::Follower { .. }) {
                return Err(FollowError::NotFollowing(ErrorCode::NotLeaderOrFollower));
            }
            if st.leader_epoch() != leader_epoch {
                return Err(FollowError::NotFollowing(ErrorCode::FencedLeaderEpoch));
            }
        }
        Ok((log, slot))
    }

    /// What the next fetch of `tp` asks for, while it is followed at `leader_epoch`.
    pub fn follower_position(
        &self,
        tp: &TopicPartition,
        leader_epoch: i32,
    ) -> Result<FollowerPosition, FollowError> {
        let (log, slot) = self.followed(tp, leader_epoch)?;
        let mut l = log.lock();
        if l.first_quarantined_offset().is_some() {
            // A hole (issue 17 item 8): cut the log there, fetch the rest from the leader.
            // Its fetch offset going back below the HW takes it out of the ISR at once.
            l.cut_at_first_quarantined()
                .map_err(|e| FollowError::Storage(e.to_string()))?;
            let mut st = slot.0.lock();
            let fx = st.on_truncated(l.log_end_offset());
            drop(st);
            self.apply(&mut l, fx);
        }
        let leo = l.log_end_offset();
        if l.config().is_durable() && l.sync().synced() < leo {
            // A tail it wrote as leader and has not fsynced yet: made durable now, so the
            // fetch offset is the log end and the leader's divergence check covers the whole
            // log (a fetch from the synced end would skip the tail's records unchecked).
            l.sync()
                .sync_to(leo)
                .map_err(|e| FollowError::Storage(e.to_string()))?;
        }
        let fetch_offset = leo;
        Ok(FollowerPosition {
            fetch_offset,
            last_fetched_epoch: l.leader_epochs().latest_epoch().unwrap_or(-1),
            log_start_offset: l.log_start_offset(),
            leader_epoch,
        })
    }

    /// Appends the batches a leader sent for `tp` (see the module docs); returns the new log
    /// end.
    pub fn append_fetched(
        &self,
        tp: &TopicPartition,
        leader_epoch: i32,
        data: &[u8],
        leader_high_watermark: i64,
    ) -> Result<i64, FollowError> {
        let (log, slot) = self.followed(tp, leader_epoch)?;
        let mut l = log.lock();
        let now = self.clock.now_ms();
        for batch in skiff_record::batches(data) {
            let view = match batch {
                Ok((_, v)) => v,
                // A response may end inside a batch (its size cap): the next fetch gets it.
                Err(skiff_record::RecordError::Truncated { .. }) => break,
                Err(e) => return Err(FollowError::BadBatch(e.to_string())),
            };
            view.verify_crc().map_err(|e| {
                FollowError::BadBatch(format!("offset {}: {e}", view.base_offset()))
            })?;
            let leo = l.log_end_offset();
            if view.next_offset() <= leo {
                continue;
            }
            if view.base_offset() < leo {
                return Err(FollowError::BadBatch(format!(
                    "a batch {}..{} straddles the log end {leo}",
                    view.base_offset(),
                    view.next_offset()
                )));
            }
            l.append_as_follower(view.bytes(), now)
                .map_err(|e| FollowError::Storage(e.to_string()))?;
        }
        let leo = l.log_end_offset();
        if l.config().is_durable() {
            l.sync()
                .sync_to(leo)
                .map_err(|e| FollowError::Storage(e.to_string()))?;
        }
        let synced = l.sync().synced().min(leo);
        let mut st = slot.0.lock();
        let fx = st.on_fetched_as_follower(leo, synced, leader_high_watermark);
        drop(st);
        self.apply(&mut l, fx);
        Ok(leo)
    }

    /// A `DivergingEpoch{epoch, end_offset}` answer: truncates `tp` (see the module docs);
    /// returns the new log end.
    pub fn truncate_diverged(
        &self,
        tp: &TopicPartition,
        leader_epoch: i32,
        epoch: i32,
        end_offset: i64,
    ) -> Result<i64, FollowError> {
        let (log, slot) = self.followed(tp, leader_epoch)?;
        let mut l = log.lock();
        let leo = l.log_end_offset();
        let (own_epoch, own_end) = l.leader_epochs().end_offset_for(epoch, leo);
        let target = if own_epoch < 0 {
            // The leader's epoch is above every one this replica knows (Kafka's
            // `getOffsetTruncationState`, undefined local end): cut to the leader's end.
            end_offset
        } else if own_epoch == epoch {
            end_offset.min(own_end)
        } else {
            // This replica does not know the leader's epoch: cut to the end of its own
            // largest epoch below it; the next fetch asks again with that epoch.
            own_end.min(end_offset)
        }
        .min(leo)
        .max(l.log_start_offset());
        self.truncate_locked(tp, &mut l, &slot, target)?;
        tracing::debug!(
            %tp, epoch, end_offset, own_epoch, own_end, target, leo_before = leo,
            latest_epoch_after = ?l.leader_epochs().latest_entry(),
            "truncated to the leader's diverging epoch"
        );
        Ok(target)
    }

    /// OFFSET_OUT_OF_RANGE from the leader whose log is `[leader_start, leader_end)`.
    pub fn reset_out_of_range(
        &self,
        tp: &TopicPartition,
        leader_epoch: i32,
        leader_start: i64,
        leader_end: i64,
    ) -> Result<i64, FollowError> {
        let (log, slot) = self.followed(tp, leader_epoch)?;
        let mut l = log.lock();
        let leo = l.log_end_offset();
        if leo > leader_end && leader_end >= l.log_start_offset() {
            self.truncate_locked(tp, &mut l, &slot, leader_end)?;
            return Ok(leader_end);
        }
        if leo < leader_start || leader_end < l.log_start_offset() {
            tracing::warn!(%tp, leo, leader_start, "follower behind the leader's log start: restarting the log there");
            l.truncate_fully_and_start_at(leader_start)
                .map_err(|e| FollowError::Storage(e.to_string()))?;
            let mut st = slot.0.lock();
            let mut fx = st.on_truncated(leader_start);
            fx.extend(st.on_log_start_advanced(leader_start));
            drop(st);
            self.apply(&mut l, fx);
            return Ok(leader_start);
        }
        Ok(leo)
    }

    fn truncate_locked(
        &self,
        tp: &TopicPartition,
        l: &mut Log,
        slot: &super::Slot,
        target: i64,
    ) -> Result<(), FollowError> {
        if target > l.log_end_offset() {
            return Ok(());
        }
        if target == l.log_end_offset() {
            // No record to cut, but an empty epoch at the log end must go (else the leader
            // answers the same DivergingEpoch for ever).
            return l
                .truncate_to(target)
                .map_err(|e| FollowError::Storage(e.to_string()));
        }
        tracing::warn!(%tp, from = l.log_end_offset(), to = target, "follower log diverged from the leader: truncating");
        l.truncate_to(target)
            .map_err(|e| FollowError::Storage(e.to_string()))?;
        let mut st = slot.0.lock();
        let fx = st.on_truncated(l.log_end_offset());
        drop(st);
        self.apply(l, fx);
        Ok(())
    }
}
