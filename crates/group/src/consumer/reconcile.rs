//! Target assignment and reconciliation for KIP-848 groups (Kafka's `TargetAssignmentBuilder`
//! and `CurrentAssignmentBuilder`).
//!
//! Mental model: when the group epoch is ahead of the assignment epoch, the preferred
//! assignor computes a new target and the members whose target changed are written. Each
//! member then moves towards its target on its own heartbeats: partitions it must give up are
//! kept *pending revocation* (same epoch, state UNREVOKED_PARTITIONS) until it stops reporting
//! them; only then does it reach the target epoch, receiving the target partitions that no
//! other member still holds (UNRELEASED_PARTITIONS until all are free). A partition therefore
//! never has two holders.

use std::collections::{BTreeMap, BTreeSet};

use skiff_protocol::{
    ConsumerGroupHeartbeatRequestTopicPartitions, ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMetadataKey, ConsumerGroupTargetAssignmentMetadataValue,
};
use skiff_types::ErrorCode;

use crate::consumer::assignor::{AssignmentSpec, assign};
use crate::consumer::group::{
    Assignment, ConsumerGroup, ConsumerMember, MemberState, target_value,
};
use crate::consumer::heartbeat::{Failure, fail, group_of};
use crate::consumer::topic_regex::member_topics;
use crate::records::CoordinatorRecord as R;
use crate::shard::GroupCoordinatorShard;
use crate::timer::{TimerKey, TimerTask};

impl GroupCoordinatorShard {
    /// Recomputes the target assignment when the group epoch is ahead of it, writing the
    /// members whose target changed and the new assignment epoch.
    pub(super) fn maybe_update_target_assignment(&mut self, group_id: &str) {
        let Some(g) = group_of(&self.groups, group_id) else {
            return;
        };
        if g.group_epoch <= g.assignment_epoch {
            return;
        }
        let epoch = g.group_epoch;
        let resolved = self.resolve_regexes(g);
        let members: BTreeMap<String, BTreeSet<String>> = g
            .members
            .iter()
            .map(|(id, m)| (id.clone(), member_topics(m, &resolved)))
            .collect();
        let assignor = self.preferred_assignor(g);
        let plan = assign(
            &assignor,
            &AssignmentSpec {
                members: &members,
                topics: &g.subscription_metadata,
                previous: &g.target,
            },
        );
        let changed: Vec<(String, Assignment)> = plan
            .into_iter()
            .filter(|(m, a)| g.target.get(m) != Some(a))
            .collect();
        for (member_id, a) in changed {
            self.write_consumer(R::ConsumerGroupTargetAssignmentMember(
                ConsumerGroupTargetAssignmentMemberKey {
                    group_id: group_id.to_string(),
                    member_id,
                },
                Some(target_value(&a)),
            ));
        }
        self.write_consumer(R::ConsumerGroupTargetAssignmentMetadata(
            ConsumerGroupTargetAssignmentMetadataKey {
                group_id: group_id.to_string(),
            },
            Some(ConsumerGroupTargetAssignmentMetadataValue {
                assignment_epoch: epoch,
            }),
        ));
    }

    /// The assignor most members ask for (ties: the first configured), else the default.
    pub(crate) fn preferred_assignor(&self, g: &ConsumerGroup) -> String {
        let mut votes: BTreeMap<&str, usize> = BTreeMap::new();
        for m in g.members.values() {
            if let Some(a) = &m.server_assignor {
                *votes.entry(a.as_str()).or_insert(0) += 1;
            }
        }
        let configured = &self.core.config.consumer_assignors;
        let mut best: Option<(&str, usize)> = None;
        for name in configured {
            let v = votes.get(name.as_str()).copied().unwrap_or(0);
            if v > 0 && best.is_none_or(|(_, b)| v > b) {
                best = Some((name, v));
            }
        }
        best.map(|(n, _)| n.to_string())
            .or_else(|| configured.first().cloned())
            .unwrap_or_else(|| crate::config::ASSIGNOR_UNIFORM.to_string())
    }

    /// Kafka's `maybeReconcile` + `CurrentAssignmentBuilder`.
    pub(super) fn reconcile(
        &mut self,
        group_id: &str,
        member_id: &str,
        owned: Option<&[ConsumerGroupHeartbeatRequestTopicPartitions]>,
    ) -> Result<(), Failure> {
        let Some(g) = group_of(&self.groups, group_id) else {
            return Ok(());
        };
        let Some(m) = g.members.get(member_id) else {
            return Ok(());
        };
        let epoch = g.assignment_epoch;
        if m.is_reconciled_to(epoch) {
            return Ok(());
        }
        let target = g.target.get(member_id).cloned().unwrap_or_default();
        let next = match m.state {
            MemberState::Stable if m.member_epoch == epoch => return Ok(()),
            MemberState::Stable | MemberState::UnreleasedPartitions => {
                next_assignment(g, m, m.member_epoch, epoch, &target, owned)
            }
            MemberState::UnrevokedPartitions => {
                if owns_any(owned, &m.pending_revocation) {
                    return Ok(());
                }
                next_assignment(
                    g,
                    m,
                    m.member_epoch.saturating_add(1),
                    epoch,
                    &target,
                    owned,
                )
            }
            MemberState::Unknown => {
                if owned.is_none_or(|o| !o.is_empty()) {
                    return Err(fail(
                        ErrorCode::FencedMemberEpoch,
                        "The member is in an unknown state and must rejoin.",
                    ));
                }
                next_assignment(g, m, epoch, epoch, &target, owned)
            }
        };
        if &next == m {
            return Ok(());
        }
        let rebalance_key = TimerKey::ConsumerRebalance {
            group: group_id.to_string(),
            member: member_id.to_string(),
        };
        if next.state == MemberState::UnrevokedPartitions {
            self.core.schedule(
                rebalance_key,
                i64::from(next.rebalance_timeout_ms.max(1)),
                TimerTask::ExpireConsumerRebalance {
                    member_epoch: next.member_epoch,
                },
            );
        } else {
            self.core.timers.cancel(&rebalance_key);
        }
        self.write_current_assignment(group_id, &next);
        Ok(())
    }
}

/// Kafka's `throwIfConsumerGroupMemberEpochIsInvalid`: a member may only be one epoch behind,
/// and then only if it owns nothing beyond its assignment (its last response was lost).
pub(super) fn validate_epoch(
    m: &ConsumerMember,
    received: i32,
    owned: Option<&[ConsumerGroupHeartbeatRequestTopicPartitions]>,
) -> Result<(), Failure> {
    let fenced = || {
        fail(
            ErrorCode::FencedMemberEpoch,
            "The member epoch is not the expected one; rejoin.",
        )
    };
    if received > m.member_epoch {
        return Err(fenced());
    }
    if received < m.member_epoch {
        let subset = owned.is_some_and(|tps| {
            tps.iter().all(|tp| {
                tp.partitions.iter().all(|p| {
                    m.assigned
                        .get(&tp.topic_id)
                        .is_some_and(|ps| ps.contains(p))
                })
            })
        });
        if received != m.previous_member_epoch || !subset {
            return Err(fenced());
        }
    }
    Ok(())
}

/// Whether the member reports owning any of `revoking` (unknown = yes).
fn owns_any(
    owned: Option<&[ConsumerGroupHeartbeatRequestTopicPartitions]>,
    revoking: &Assignment,
) -> bool {
    let Some(owned) = owned else { return true };
    owned.iter().any(|tp| {
        revoking
            .get(&tp.topic_id)
            .is_some_and(|ps| tp.partitions.iter().any(|p| ps.contains(p)))
    })
}

/// Kafka's `computeNextAssignment`.
fn next_assignment(
    g: &ConsumerGroup,
    m: &ConsumerMember,
    member_epoch: i32,
    target_epoch: i32,
    target: &Assignment,
    owned: Option<&[ConsumerGroupHeartbeatRequestTopicPartitions]>,
) -> ConsumerMember {
    let mut assigned = Assignment::new();
    let mut revoking = Assignment::new();
    let mut adding = Assignment::new();
    let mut unreleased = false;
    let topics: BTreeSet<_> = target.keys().chain(m.assigned.keys()).copied().collect();
    for id in topics {
        let want = target.get(&id).cloned().unwrap_or_default();
        let have = m.assigned.get(&id).cloned().unwrap_or_default();
        let keep: BTreeSet<i32> = have.intersection(&want).copied().collect();
        let revoke: BTreeSet<i32> = have.difference(&keep).copied().collect();
        let mut add = BTreeSet::new();
        for p in want.difference(&keep) {
            if g.partition_epoch(id, *p) == -1 {
                add.insert(*p);
            } else {
                unreleased = true;
            }
        }
        if !keep.is_empty() {
            assigned.insert(id, keep);
        }
        if !revoke.is_empty() {
            revoking.insert(id, revoke);
        }
        if !add.is_empty() {
            adding.insert(id, add);
        }
    }
    let mut next = m.clone();
    next.previous_member_epoch = m.member_epoch;
    if !revoking.is_empty() && owns_any(owned, &revoking) {
        next.state = MemberState::UnrevokedPartitions;
        next.member_epoch = member_epoch;
        next.assigned = assigned;
        next.pending_revocation = revoking;
        return next;
    }
    for (id, ps) in adding {
        assigned.entry(id).or_default().extend(ps);
    }
    next.state = if unreleased {
        MemberState::UnreleasedPartitions
    } else {
        MemberState::Stable
    };
    next.member_epoch = target_epoch;
    next.assigned = assigned;
    next.pending_revocation = Assignment::new();
    next
}
