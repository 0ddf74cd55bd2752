//! Committed offsets: OffsetCommit, OffsetFetch, OffsetDelete and `offsets.retention.ms`
//! expiry (Kafka's `OffsetMetadataManager`).
//!
//! Mental model: the [`OffsetStore`] maps group -> topic -> partition -> [`OffsetAndMetadata`],
//! and is changed only by applying OffsetCommit records (live, right after the shard emits
//! them, and while replaying), so memory and log cannot disagree. A commit is fenced by the
//! group: a classic member must name the current generation (ILLEGAL_GENERATION otherwise),
//! while generation -1 with no member id is a "simple" commit, allowed only when the group has
//! no members (and creating an empty group without protocol if there is none). Fetching what
//! was never committed answers offset -1 with no error, never GROUP_ID_NOT_FOUND.
//! Transactional commits (TxnOffsetCommit) are `txn_offsets`; they stay pending in the store
//! until their transaction's marker, and deletion and expiry respect them as Kafka does.

use skiff_protocol::{
    OffsetCommitKey, OffsetCommitRequest, OffsetCommitResponse, OffsetCommitResponsePartition,
    OffsetCommitResponseTopic, OffsetCommitValue, OffsetDeleteRequest, OffsetDeleteResponse,
    OffsetDeleteResponsePartition, OffsetDeleteResponseTopic, OffsetFetchRequestTopics,
    OffsetFetchResponseGroup, OffsetFetchResponsePartitions, OffsetFetchResponseTopics,
};
use skiff_types::ErrorCode;

use crate::classic::group::{ClassicGroup, ClassicGroupState};
use crate::effects::{Effects, RequestContext, Response};
pub(crate) use crate::offset_store::OffsetStore;
use crate::records::CoordinatorRecord;
use crate::shard::{Group, GroupCoordinatorShard};

/// OffsetCommit v9+ answers GROUP_ID_NOT_FOUND (not ILLEGAL_GENERATION) for a missing group.
const COMMIT_GROUP_ID_NOT_FOUND_MIN_VERSION: i16 = 9;
/// The longest commit metadata a `__consumer_offsets` value can hold (an int16 string).
pub(crate) const METADATA_BYTES_ENCODABLE_MAX: usize = i16::MAX as usize;

/// One committed offset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OffsetAndMetadata {
    pub offset: i64,
    /// -1 when unknown.
    pub leader_epoch: i32,
    pub metadata: String,
    pub commit_timestamp_ms: i64,
    /// Set by OffsetCommit v2-4's explicit retention time.
    pub expire_timestamp_ms: Option<i64>,
}

pub(crate) fn offset_key(group: &str, topic: &str, partition: i32) -> OffsetCommitKey {
    OffsetCommitKey {
        group: group.to_string(),
        topic: topic.to_string(),
        partition,
    }
}

impl GroupCoordinatorShard {
    /// Emits and applies one offset record (live path: memory follows the record).
    pub(crate) fn write_offset(&mut self, key: OffsetCommitKey, value: Option<OffsetCommitValue>) {
        self.offsets.apply(&key, value.as_ref());
        self.core
            .record(CoordinatorRecord::OffsetCommit(key, value));
    }

    /// Handles an OffsetCommit (v2-9).
    pub fn handle_offset_commit(
        &mut self,
        ctx: &RequestContext,
        req: &OffsetCommitRequest,
        now_ms: i64,
    ) -> Effects {
        self.begin(now_ms);
        let response = match self.validate_offset_commit(ctx.api_version, req) {
            Err(code) => commit_response_all(req, code),
            Ok(()) => self.commit(req),
        };
        self.core
            .respond(ctx.token, Response::OffsetCommit(response));
        self.finish()
    }

    fn validate_offset_commit(
        &mut self,
        version: i16,
        req: &OffsetCommitRequest,
    ) -> Result<(), ErrorCode> {
        if req.group_id.is_empty() {
            return Err(ErrorCode::InvalidGroupId);
        }
        let generation = req.generation_id_or_member_epoch;
        let now = self.core.now;
        let group = match self.groups.get_mut(&req.group_id) {
            Some(g) => g,
            None if generation < 0 => {
                // A simple (admin / assign()) consumer: create an empty group with no protocol.
                let g = ClassicGroup::new(&req.group_id, now);
                self.groups.insert(req.group_id.clone(), Group::Classic(g));
                return Ok(());
            }
            None if version >= COMMIT_GROUP_ID_NOT_FOUND_MIN_VERSION => {
                return Err(ErrorCode::GroupIdNotFound);
            }
            None => return Err(ErrorCode::IllegalGeneration),
        };
        match group {
            Group::Classic(g) => {
                validate_classic_commit(
                    g,
                    &req.member_id,
                    req.group_instance_id.as_deref(),
                    generation,
                    false,
                )?;
                // Commits keep a classic member's session alive while it is Stable/Preparing.
                if matches!(
                    g.state,
                    ClassicGroupState::Stable | ClassicGroupState::PreparingRebalance
                ) {
                    self.core.reschedule_member_heartbeat(g, &req.member_id);
                }
                Ok(())
            }
            Group::Consumer(g) => g.validate_offset_commit(&req.member_id, generation, version),
        }
    }

    fn commit(&mut self, req: &OffsetCommitRequest) -> OffsetCommitResponse {
        let now = self.core.now;
        let max = self
            .core
            .config
            .offset_metadata_bytes_max
            .min(METADATA_BYTES_ENCODABLE_MAX);
        // OffsetCommit v2-4 may override the retention: -1 means the broker's.
        let expire =
            (req.retention_time_ms != -1).then(|| now.saturating_add(req.retention_time_ms));
        let mut topics = Vec::with_capacity(req.topics.len());
        for t in &req.topics {
            let mut partitions = Vec::with_capacity(t.partitions.len());
            for p in &t.partitions {
                let metadata = p.committed_metadata.clone().unwrap_or_default();
                let code = if metadata.len() > max {
                    ErrorCode::OffsetMetadataTooLarge
                } else {
                    let value = OffsetCommitValue {
                        offset: p.committed_offset,
                        leader_epoch: p.committed_leader_epoch,
                        metadata,
                        commit_timestamp: now,
                        expire_timestamp: expire.unwrap_or(-1),
                    };
                    self.write_offset(
                        offset_key(&req.group_id, &t.name, p.partition_index),
                        Some(value),
                    );
                    ErrorCode::None
                };
                partitions.push(OffsetCommitResponsePartition {
                    partition_index: p.partition_index,
                    error_code: code.code(),
                });
            }
            topics.push(OffsetCommitResponseTopic {
                name: t.name.clone(),
                partitions,
            });
        }
        OffsetCommitResponse {
            topics,
            ..OffsetCommitResponse::default()
        }
    }

    /// The committed offsets of one group (OffsetFetch's per-group answer, any version):
    /// `topics = None` means every committed partition. Unknown groups and partitions answer
    /// offset -1 with no error. KIP-848 members naming themselves (v9) are validated.
    /// Pending transactional offsets are not shown (see [`Self::fetch_offsets_stable`]).
    pub fn fetch_offsets(
        &self,
        group_id: &str,
        member: Option<(&str, i32)>,
        topics: Option<&[OffsetFetchRequestTopics]>,
    ) -> OffsetFetchResponseGroup {
        self.fetch_offsets_stable(group_id, member, topics, false)
    }

    /// [`Self::fetch_offsets`] with OffsetFetch v7+'s `require_stable`: a partition with a
    /// pending transactional offset then answers UNSTABLE_OFFSET_COMMIT (88) with offset -1,
    /// per partition (the group's error stays NONE at every version, as Kafka answers).
    pub fn fetch_offsets_stable(
        &self,
        group_id: &str,
        member: Option<(&str, i32)>,
        topics: Option<&[OffsetFetchRequestTopics]>,
        require_stable: bool,
    ) -> OffsetFetchResponseGroup {
        let mut out = OffsetFetchResponseGroup {
            group_id: group_id.to_string(),
            ..Default::default()
        };
        if let (Some(Group::Consumer(g)), Some((member_id, epoch))) =
            (self.groups.get(group_id), member)
            && let Err(code) = g.validate_offset_fetch(member_id, epoch)
        {
            out.error_code = code.code();
            return out;
        }
        let partition = |topic: &str, p: i32| match self.offsets.get(group_id, topic, p) {
            _ if require_stable && self.offsets.has_pending(group_id, topic, p) => {
                OffsetFetchResponsePartitions {
                    partition_index: p,
                    committed_offset: -1,
                    committed_leader_epoch: -1,
                    metadata: Some(String::new()),
                    error_code: ErrorCode::UnstableOffsetCommit.code(),
                }
            }
            Some(o) => OffsetFetchResponsePartitions {
                partition_index: p,
                committed_offset: o.offset,
                committed_leader_epoch: o.leader_epoch,
                metadata: Some(o.metadata.clone()),
                error_code: 0,
            },
            None => OffsetFetchResponsePartitions {
                partition_index: p,
                committed_offset: -1,
                committed_leader_epoch: -1,
                metadata: Some(String::new()),
                error_code: 0,
            },
        };
        match topics {
            Some(topics) => {
                for t in topics {
                    out.topics.push(OffsetFetchResponseTopics {
                        name: t.name.clone(),
                        partitions: t
                            .partition_indexes
                            .iter()
                            .map(|p| partition(&t.name, *p))
                            .collect(),
                    });
                }
            }
            None => {
                if let Some(all) = self.offsets.group(group_id) {
                    for (topic, parts) in all {
                        out.topics.push(OffsetFetchResponseTopics {
                            name: topic.clone(),
                            partitions: parts.keys().map(|p| partition(topic, *p)).collect(),
                        });
                    }
                }
            }
        }
        out
    }

    /// A committed offset, if any (tests, lag computations).
    pub fn committed_offset(
        &self,
        group_id: &str,
        topic: &str,
        partition: i32,
    ) -> Option<OffsetAndMetadata> {
        self.offsets.get(group_id, topic, partition).cloned()
    }

    /// Handles an OffsetDelete (v0).
    pub fn handle_offset_delete(
        &mut self,
        ctx: &RequestContext,
        req: &OffsetDeleteRequest,
        now_ms: i64,
    ) -> Effects {
        self.begin(now_ms);
        let r = match self.offset_delete(req) {
            Ok(r) => r,
            Err(code) => OffsetDeleteResponse {
                error_code: code.code(),
                ..Default::default()
            },
        };
        self.core.respond(ctx.token, Response::OffsetDelete(r));
        self.finish()
    }

    fn offset_delete(
        &mut self,
        req: &OffsetDeleteRequest,
    ) -> Result<OffsetDeleteResponse, ErrorCode> {
        if req.group_id.is_empty() {
            return Err(ErrorCode::InvalidGroupId);
        }
        let subscribed: Vec<bool> = match self.groups.get(&req.group_id) {
            None => return Err(ErrorCode::GroupIdNotFound),
            Some(Group::Classic(g)) => {
                match g.state {
                    ClassicGroupState::Dead => return Err(ErrorCode::GroupIdNotFound),
                    ClassicGroupState::Empty => {}
                    _ if !g.uses_consumer_protocol() => return Err(ErrorCode::NonEmptyGroup),
                    _ => {}
                }
                req.topics
                    .iter()
                    .map(|t| g.is_subscribed_to(&t.name))
                    .collect()
            }
            Some(Group::Consumer(g)) => req
                .topics
                .iter()
                .map(|t| g.is_subscribed_to(&t.name))
                .collect(),
        };
        let mut topics = Vec::with_capacity(req.topics.len());
        for (t, subscribed) in req.topics.iter().zip(subscribed) {
            let mut partitions = Vec::with_capacity(t.partitions.len());
            for p in &t.partitions {
                let code = if subscribed {
                    ErrorCode::GroupSubscribedToTopic
                } else {
                    let (g, topic, part) = (&req.group_id, &t.name, p.partition_index);
                    if self.offsets.get(g, topic, part).is_some()
                        || self.offsets.has_pending(g, topic, part)
                    {
                        self.write_offset(
                            offset_key(&req.group_id, &t.name, p.partition_index),
                            None,
                        );
                    }
                    ErrorCode::None
                };
                partitions.push(OffsetDeleteResponsePartition {
                    partition_index: p.partition_index,
                    error_code: code.code(),
                });
            }
            topics.push(OffsetDeleteResponseTopic {
                name: t.name.clone(),
                partitions,
            });
        }
        Ok(OffsetDeleteResponse {
            topics,
            ..Default::default()
        })
    }

    /// Writes tombstones for every offset of `group_id` (DeleteGroups).
    /// Pending transactional offsets of partitions without a committed one get a tombstone
    /// too (one tombstone per key is enough: it drops both).
    pub(crate) fn delete_all_offsets(&mut self, group_id: &str) {
        let mut keys = self.offsets.partitions(group_id);
        for k in self.offsets.pending_partitions(group_id) {
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
        for (topic, partition) in keys {
            self.write_offset(offset_key(group_id, &topic, partition), None);
        }
    }

    /// The periodic sweep (Kafka's `cleanupGroupMetadata`): expire offsets past
    /// `offsets.retention.ms` of topics the group no longer consumes, then delete empty groups
    /// left with no offsets.
    pub(crate) fn cleanup_expired(&mut self) {
        let now = self.core.now;
        let retention = self.core.config.offsets_retention_ms;
        let ids: Vec<String> = self.groups.keys().cloned().collect();
        for id in ids {
            let all_expired = self.cleanup_group_offsets(&id, now, retention);
            if !all_expired {
                continue;
            }
            let empty = match self.groups.get(&id) {
                Some(Group::Classic(g)) => g.is(ClassicGroupState::Empty),
                Some(Group::Consumer(g)) => g.is_empty(),
                None => false,
            };
            if empty {
                self.delete_group_now(&id);
            }
        }
    }

    /// Expires one group's offsets; true when none are left.
    fn cleanup_group_offsets(&mut self, group_id: &str, now: i64, retention: i64) -> bool {
        let Some(all) = self.offsets.group(group_id) else {
            // Kafka answers true here even with an open transaction; keeping the group until
            // the transaction ends keeps its commit from materialising offsets of no group.
            return !self.offsets.has_open_transactions(group_id);
        };
        // Which timestamp retention counts from, per Kafka's `offsetExpirationCondition`.
        enum Base {
            Commit,
            Since(i64),
        }
        let (base, subscribed): (Option<Base>, Vec<&String>) = match self.groups.get(group_id) {
            Some(Group::Classic(g)) => {
                let base = match &g.protocol_type {
                    None => Some(Base::Commit),
                    Some(_) if g.is(ClassicGroupState::Empty) => {
                        Some(g.state_timestamp_ms.map_or(Base::Commit, Base::Since))
                    }
                    Some(_)
                        if g.uses_consumer_protocol()
                            && g.subscribed_topics.is_some()
                            && g.is(ClassicGroupState::Stable) =>
                    {
                        Some(Base::Commit)
                    }
                    Some(_) => None,
                };
                (base, all.keys().filter(|t| g.is_subscribed_to(t)).collect())
            }
            Some(Group::Consumer(g)) => (
                Some(Base::Commit),
                all.keys().filter(|t| g.is_subscribed_to(t)).collect(),
            ),
            None => (Some(Base::Commit), Vec::new()),
        };
        let Some(base) = base else { return false };
        let mut all_expired = true;
        let mut expired = Vec::new();
        for (topic, parts) in all {
            if subscribed.contains(&topic) {
                all_expired = false;
                continue;
            }
            for (p, stored) in parts {
                let o = &stored.value;
                // Not while a transaction has a pending offset for the partition (Kafka).
                if self.offsets.has_pending(group_id, topic, *p) {
                    all_expired = false;
                    continue;
                }
                let is_expired = match o.expire_timestamp_ms {
                    Some(at) => now >= at,
                    None => {
                        let from = match base {
                            Base::Commit => o.commit_timestamp_ms,
                            Base::Since(ts) => ts,
                        };
                        now.saturating_sub(from) >= retention
                    }
                };
                if is_expired {
                    expired.push((topic.clone(), *p));
                } else {
                    all_expired = false;
                }
            }
        }
        for (topic, p) in expired {
            self.write_offset(offset_key(group_id, &topic, p), None);
        }
        // A group with an open transaction is not deleted.
        all_expired && !self.offsets.has_open_transactions(group_id)
    }
}

/// Kafka's classic `validateOffsetCommit`; a transactional commit (TxnOffsetCommit) may
/// omit member and generation while the group has members (v0-2 clients cannot send them)
/// and is not refused during CompletingRebalance.
pub(crate) fn validate_classic_commit(
    g: &ClassicGroup,
    member_id: &str,
    instance_id: Option<&str>,
    generation: i32,
    transactional: bool,
) -> Result<(), ErrorCode> {
    if g.is(ClassicGroupState::Dead) {
        return Err(ErrorCode::CoordinatorNotAvailable);
    }
    if generation < 0 && g.is(ClassicGroupState::Empty) {
        return Ok(());
    }
    if generation >= 0 || !member_id.is_empty() || instance_id.is_some() {
        g.validate_member(member_id, instance_id)?;
        if generation != g.generation {
            return Err(ErrorCode::IllegalGeneration);
        }
    } else if !transactional {
        // A simple commit while the group has members.
        return Err(ErrorCode::UnknownMemberId);
    }
    if !transactional && g.is(ClassicGroupState::CompletingRebalance) {
        return Err(ErrorCode::RebalanceInProgress);
    }
    Ok(())
}

/// An OffsetCommit response giving every partition the same error.
fn commit_response_all(req: &OffsetCommitRequest, code: ErrorCode) -> OffsetCommitResponse {
    let topics = req
        .topics
        .iter()
        .map(|t| OffsetCommitResponseTopic {
            name: t.name.clone(),
            partitions: t
                .partitions
                .iter()
                .map(|p| OffsetCommitResponsePartition {
                    partition_index: p.partition_index,
                    error_code: code.code(),
                })
                .collect(),
        })
        .collect();
    OffsetCommitResponse {
        topics,
        ..OffsetCommitResponse::default()
    }
}
