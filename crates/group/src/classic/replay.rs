//! Loading classic groups from their GroupMetadata records, and arming them once loaded.
//!
//! Mental model (Kafka's `GroupMetadataManager.replay(GroupMetadataKey, GroupMetadataValue)`):
//! a record holds a whole group as of its last write: generation, chosen protocol, leader and
//! every member with its subscription (for the chosen protocol only) and assignment. A loaded
//! group is Stable when it has members and Empty otherwise; its members' sessions restart
//! when the shard goes live (`on_loaded`).

use skiff_protocol::GroupMetadataValue;

use crate::classic::group::{ClassicGroup, ClassicGroupState, Member, Protocol};
use crate::shard::{Group, GroupCoordinatorShard};

/// Rebuilds a classic group from its record.
pub(crate) fn group_from_record(group_id: &str, value: GroupMetadataValue) -> ClassicGroup {
    let protocol_name = value.protocol.clone().unwrap_or_default();
    let protocol_type = value.protocol_type.clone();
    let mut g = ClassicGroup::new(group_id, value.current_state_timestamp);
    g.state_timestamp_ms =
        (value.current_state_timestamp >= 0).then_some(value.current_state_timestamp);
    g.generation = value.generation;
    g.protocol_type = (!protocol_type.is_empty()).then_some(protocol_type.clone());
    g.protocol_name = value.protocol.clone();
    for m in value.members {
        let rebalance_timeout_ms = if m.rebalance_timeout == -1 {
            m.session_timeout
        } else {
            m.rebalance_timeout
        };
        let member = Member {
            member_id: m.member_id.clone(),
            instance_id: m.group_instance_id.clone(),
            client_id: m.client_id,
            client_host: m.client_host,
            rebalance_timeout_ms,
            session_timeout_ms: m.session_timeout,
            protocol_type: protocol_type.clone(),
            protocols: vec![Protocol {
                name: protocol_name.clone(),
                metadata: m.subscription,
            }],
            assignment: m.assignment,
            awaiting_join: None,
            awaiting_sync: None,
            is_new: false,
        };
        if let Some(instance) = &member.instance_id {
            g.static_members
                .insert(instance.clone(), member.member_id.clone());
        }
        g.members.insert(member.member_id.clone(), member);
    }
    // The recorded leader if it is a member, else any member (a record always names one).
    g.leader = value
        .leader
        .filter(|l| g.members.contains_key(l))
        .or_else(|| g.members.keys().next().cloned());
    if !g.members.is_empty() {
        g.state = ClassicGroupState::Stable;
        g.previous_state = ClassicGroupState::Stable;
    }
    g.subscribed_topics = g.compute_subscribed_topics();
    g
}

impl GroupCoordinatorShard {
    /// Restarts every loaded member's session, and rebalances groups over `group.max.size`.
    pub(crate) fn on_loaded_classic(&mut self) {
        let max = usize::try_from(self.core.config.group_size_max).unwrap_or(usize::MAX);
        for group in self.groups.values_mut() {
            let Group::Classic(g) = group else { continue };
            let ids: Vec<String> = g.members.keys().cloned().collect();
            for id in ids {
                self.core.reschedule_member_heartbeat(g, &id);
            }
            if g.members.len() > max && g.can_rebalance() {
                self.core.prepare_rebalance(g);
            }
        }
    }
}
