//! One partition's leader election (Kafka 4.x's `PartitionChangeBuilder.electLeader` /
//! `tryElection` / `build`, metadata version 4.0-IV0: no ELR, no reassignment, no
//! directories) and where a topic's `unclean.leader.election.enable` comes from.
//!
//! Mental model: an election takes a partition's registration, the ISR it should have after
//! the change (`target_isr`), an election type and who may lead (`acceptable`: the callers
//! pass Kafka's `isActive`, adjusted for the broker being fenced or unfenced), and answers the
//! `PartitionChangeRecord` that performs it, or nothing when nothing changes. A *valid* leader
//! is a target-ISR member that is acceptable.
//! - PREFERRED: the first replica if valid; else the current leader if valid (no change);
//!   else the first valid replica after the first; else no leader.
//! - ONLINE: the current leader if valid (no change); else the first valid replica in replica
//!   order; else no leader.
//! - UNCLEAN: ONLINE, then, when it finds no one, the first acceptable replica (which is then
//!   outside the ISR): an unclean election.
//!
//! Invariants (those of `build`): a leader change (also to [`NO_LEADER`]) writes `leader`, so
//! replay bumps the leader epoch; an unclean election writes the ISR as just the new leader
//! and the leader recovery state RECOVERING (unless already RECOVERING), so the new leader's
//! first ISR expansion (AlterPartition, RECOVERED) ends the recovery; otherwise the ISR is
//! written only when the target differs from the current one and is not empty (without ELR
//! Kafka never writes an empty ISR); a record that would change nothing is not produced.

use skiff_protocol::PartitionChangeRecord;
use uuid::Uuid;

use crate::image::{MetadataImage, NO_LEADER, NO_LEADER_CHANGE, PartitionInfo, TopicId, TopicInfo};

/// `LeaderRecoveryState.RECOVERING`: the leader was elected uncleanly.
pub(crate) const RECOVERING: i8 = 1;

/// The topic and broker key deciding unclean elections.
pub const UNCLEAN_LEADER_ELECTION_ENABLE: &str = "unclean.leader.election.enable";

/// Kafka's `PartitionChangeBuilder.Election`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Election {
    /// Elect the first replica if it is in the ISR and acceptable.
    Preferred,
    /// Keep the partition online from its ISR.
    Online,
    /// Like `Online`, falling back to any acceptable replica outside the ISR.
    Unclean,
}

/// The controller's own layers of `unclean.leader.election.enable`, below the topic override
/// and the dynamic configs in the image (Kafka's `ConfigurationControlManager.getTopicConfig`:
/// topic override, then the controller node's dynamic broker config, then the cluster-wide
/// dynamic default, then the controller's static config, then `false`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ElectionConfig {
    /// The active controller's node id: whose dynamic broker-config layer applies (`None`:
    /// that layer is skipped).
    pub node_id: Option<i32>,
    /// The controller's static `unclean.leader.election.enable` (Kafka's default `false`).
    pub unclean_leader_election_enable: bool,
}

impl ElectionConfig {
    /// The configuration before any is set: no node layer, unclean elections off.
    pub const DEFAULT: ElectionConfig = ElectionConfig {
        node_id: None,
        unclean_leader_election_enable: false,
    };
}

/// Kafka's `uncleanLeaderElectionEnabledForTopic`: the effective
/// `unclean.leader.election.enable` of `topic` (layers in [`ElectionConfig`]'s docs; a value
/// is true only when it is `true`, any case, as Java's `Boolean.parseBoolean`).
pub(crate) fn unclean_enabled(
    image: &MetadataImage,
    topic: &TopicInfo,
    cfg: &ElectionConfig,
) -> bool {
    let key = UNCLEAN_LEADER_ELECTION_ENABLE;
    let node_layer = cfg
        .node_id
        .and_then(|id| image.broker_configs.get(&id.to_string()))
        .and_then(|c| c.get(key));
    let cluster_layer = image.broker_configs.get("").and_then(|c| c.get(key));
    match topic.configs.get(key).or(node_layer).or(cluster_layer) {
        Some(v) => v.eq_ignore_ascii_case("true"),
        None => cfg.unclean_leader_election_enable,
    }
}

/// The leader an election picks and whether the pick is unclean (outside the ISR).
fn elect(
    p: &PartitionInfo,
    target_isr: &[i32],
    election: Election,
    acceptable: &dyn Fn(i32) -> bool,
) -> (i32, bool) {
    let valid = |r: i32| target_isr.contains(&r) && acceptable(r);
    if election == Election::Preferred {
        if let Some(&preferred) = p.replicas.first()
            && valid(preferred)
        {
            return (preferred, false);
        }
        if valid(p.leader) {
            return (p.leader, false);
        }
        let other = p.replicas.iter().skip(1).copied().find(|r| valid(*r));
        return (other.unwrap_or(NO_LEADER), false);
    }
    if valid(p.leader) {
        return (p.leader, false);
    }
    if let Some(r) = p.replicas.iter().copied().find(|r| valid(*r)) {
        return (r, false);
    }
    if election == Election::Unclean
        && let Some(r) = p.replicas.iter().copied().find(|r| acceptable(*r))
    {
        return (r, true);
    }
    (NO_LEADER, false)
}

/// The record of an election on partition `partition_id` of `topic_id`, registered as `p`,
/// towards `target_isr` (module docs); `None` when nothing would change.
pub(crate) fn partition_change(
    topic_id: TopicId,
    partition_id: i32,
    p: &PartitionInfo,
    target_isr: &[i32],
    election: Election,
    acceptable: &dyn Fn(i32) -> bool,
) -> Option<PartitionChangeRecord> {
    let mut record = PartitionChangeRecord {
        partition_id,
        topic_id: Uuid::from_bytes(topic_id),
        leader: NO_LEADER_CHANGE,
        ..PartitionChangeRecord::default()
    };
    let (leader, unclean) = elect(p, target_isr, election, acceptable);
    if leader != p.leader {
        record.leader = leader;
        if unclean {
            // Data may be lost: the new leader's log is the partition's from now on.
            record.isr = Some(vec![leader]);
            if p.leader_recovery_state != RECOVERING {
                record.leader_recovery_state = RECOVERING;
            }
        }
    }
    if record.isr.is_none() && !target_isr.is_empty() && target_isr != p.isr.as_slice() {
        record.isr = Some(target_isr.to_vec());
    }
    let no_op = record.leader == NO_LEADER_CHANGE
        && record.isr.is_none()
        && record.leader_recovery_state < 0;
    (!no_op).then_some(record)
}
