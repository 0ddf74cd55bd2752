//! Admin APIs over a shard's groups: ListGroups, DescribeGroups, DeleteGroups.
//!
//! Mental model: these requests name groups that may live on different shards; the server
//! splits them by [`crate::partition_for`], asks each shard about its own groups, and merges
//! the answers. Reads (list, describe) return data directly; DeleteGroups writes tombstones so
//! it goes through [`Effects`] like every other write.

use skiff_protocol::{
    DeletableGroupResult, DeleteGroupsResponse, DescribeGroupsResponseDescribedGroup,
    DescribedGroupMember, ListGroupsRequest, ListedGroup,
};
use skiff_types::ErrorCode;

use crate::classic::group::ClassicGroupState;
use crate::effects::{Effects, RequestContext, Response};
use crate::shard::{Group, GroupCoordinatorShard};
use crate::timer::TimerKey;

/// `group_type` of classic groups in ListGroups v5+.
pub const GROUP_TYPE_CLASSIC: &str = "classic";
/// `group_type` of KIP-848 groups in ListGroups v5+.
pub const GROUP_TYPE_CONSUMER: &str = "consumer";

impl GroupCoordinatorShard {
    /// This shard's groups that pass ListGroups' state (v4+) and type (v5+) filters; both are
    /// case-insensitive and an empty filter passes everything.
    pub fn list_groups(&self, req: &ListGroupsRequest) -> Vec<ListedGroup> {
        let states: Vec<String> = req
            .states_filter
            .iter()
            .map(|s| s.trim().to_lowercase())
            .collect();
        let types: Vec<String> = req
            .types_filter
            .iter()
            .map(|s| s.trim().to_lowercase())
            .collect();
        let mut out = Vec::new();
        for (id, group) in &self.groups {
            let (protocol_type, state, group_type) = match group {
                Group::Classic(g) => (
                    g.protocol_type.clone().unwrap_or_default(),
                    g.state.as_str(),
                    GROUP_TYPE_CLASSIC,
                ),
                Group::Consumer(g) => (
                    GROUP_TYPE_CONSUMER.to_string(),
                    g.state_name(),
                    GROUP_TYPE_CONSUMER,
                ),
            };
            if !states.is_empty() && !states.iter().any(|s| *s == state.to_lowercase()) {
                continue;
            }
            if !types.is_empty() && !types.iter().any(|t| t == group_type) {
                continue;
            }
            out.push(ListedGroup {
                group_id: id.clone(),
                protocol_type,
                group_state: state.to_string(),
                group_type: group_type.to_string(),
            });
        }
        out
    }

    /// DescribeGroups' answer for one group at request `version`. A group this shard does not
    /// hold (or a KIP-848 group, which DescribeGroups does not describe) answers state `Dead`:
    /// with no error before v6, with GROUP_ID_NOT_FOUND and a message from v6 (KIP-1043).
    pub fn describe_group(
        &self,
        group_id: &str,
        version: i16,
    ) -> DescribeGroupsResponseDescribedGroup {
        let mut out = DescribeGroupsResponseDescribedGroup {
            group_id: group_id.to_string(),
            ..Default::default()
        };
        // An empty group id is just a group that does not exist (Kafka 4.x's coordinator, not
        // the INVALID_GROUP_ID of older brokers; the wire differential test checks it).
        let g = match self.groups.get(group_id) {
            Some(Group::Classic(g)) => g,
            other => {
                out.group_state = ClassicGroupState::Dead.as_str().to_string();
                if version >= 6 {
                    out.error_code = ErrorCode::GroupIdNotFound.code();
                    out.error_message = Some(match other {
                        Some(_) => format!("Group {group_id} is not a classic group."),
                        None => format!("Group {group_id} not found."),
                    });
                }
                return out;
            }
        };
        out.group_state = g.state.as_str().to_string();
        out.protocol_type = g.protocol_type.clone().unwrap_or_default();
        // Metadata is shown only once the group is Stable (Kafka's `describe` vs
        // `describeNoMetadata`).
        let stable_protocol = g
            .is(ClassicGroupState::Stable)
            .then(|| g.protocol_name.clone())
            .flatten();
        out.protocol_data = stable_protocol.clone().unwrap_or_default();
        out.members = g
            .members
            .values()
            .map(|m| DescribedGroupMember {
                member_id: m.member_id.clone(),
                group_instance_id: m.instance_id.clone(),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                member_metadata: stable_protocol
                    .as_deref()
                    .map(|p| m.metadata(p))
                    .unwrap_or_default(),
                member_assignment: m.assignment.clone(),
            })
            .collect();
        out
    }

    /// Handles DeleteGroups for the groups of this shard: an Empty group (or one with no
    /// members) is deleted with all its offsets; one with members answers NON_EMPTY_GROUP; an
    /// unknown one GROUP_ID_NOT_FOUND. The response lists only `group_ids`.
    pub fn handle_delete_groups(
        &mut self,
        ctx: &RequestContext,
        group_ids: &[String],
        now_ms: i64,
    ) -> Effects {
        self.begin(now_ms);
        let mut results = Vec::with_capacity(group_ids.len());
        for id in group_ids {
            let code = self.delete_group(id);
            results.push(DeletableGroupResult {
                group_id: id.clone(),
                error_code: code.code(),
            });
        }
        let r = DeleteGroupsResponse {
            results,
            ..DeleteGroupsResponse::default()
        };
        self.core.respond(ctx.token, Response::DeleteGroups(r));
        self.finish()
    }

    fn delete_group(&mut self, group_id: &str) -> ErrorCode {
        if group_id.is_empty() {
            return ErrorCode::InvalidGroupId;
        }
        let deletable = match self.groups.get(group_id) {
            None => return ErrorCode::GroupIdNotFound,
            Some(Group::Classic(g)) => match g.state {
                ClassicGroupState::Dead => return ErrorCode::GroupIdNotFound,
                ClassicGroupState::Empty => true,
                _ => false,
            },
            Some(Group::Consumer(g)) => g.is_empty(),
        };
        if !deletable {
            return ErrorCode::NonEmptyGroup;
        }
        self.delete_all_offsets(group_id);
        self.delete_group_now(group_id);
        ErrorCode::None
    }

    /// Writes the group's tombstones and forgets it (its offsets must already be gone).
    pub(crate) fn delete_group_now(&mut self, group_id: &str) {
        match self.groups.get(group_id) {
            Some(Group::Classic(_)) => {
                self.groups.remove(group_id);
                self.core.record_group_tombstone(group_id);
            }
            Some(Group::Consumer(_)) => self.delete_consumer_group_records(group_id),
            None => return,
        }
        self.core.timers.cancel(&TimerKey::Join {
            group: group_id.to_string(),
        });
        self.core.timers.cancel(&TimerKey::Sync {
            group: group_id.to_string(),
        });
    }
}
