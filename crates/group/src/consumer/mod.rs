//! KIP-848 consumer groups (ConsumerGroupHeartbeat). Placeholder until the protocol lands:
//! no such group is ever created, so every hook below is inert.

use std::collections::BTreeSet;

use skiff_protocol::{LeaveGroupResponse, MemberIdentity};
use skiff_types::ErrorCode;

use crate::records::CoordinatorRecord;
use crate::shard::{GroupCoordinatorShard, GroupSummary};

#[derive(Clone, Debug, Default)]
pub(crate) struct ConsumerGroup {
    subscribed: BTreeSet<String>,
}

impl ConsumerGroup {
    pub fn is_empty(&self) -> bool {
        true
    }
    pub fn state_name(&self) -> &'static str {
        "Empty"
    }
    pub fn summary(&self) -> GroupSummary {
        GroupSummary {
            group_type: "consumer",
            state: self.state_name(),
            generation: 0,
            protocol_type: "consumer".into(),
            protocol_name: None,
            leader: None,
            members: Vec::new(),
        }
    }
    pub fn is_subscribed_to(&self, topic: &str) -> bool {
        self.subscribed.contains(topic)
    }
    pub fn validate_offset_commit(
        &self,
        _m: &str,
        _i: Option<&str>,
        _e: i32,
    ) -> Result<(), ErrorCode> {
        Err(ErrorCode::UnknownMemberId)
    }
    pub fn validate_offset_fetch(&self, _m: &str, _e: i32) -> Result<(), ErrorCode> {
        Ok(())
    }
}

impl GroupCoordinatorShard {
    pub(crate) fn replay_consumer(&mut self, _record: CoordinatorRecord) {}
    pub(crate) fn on_loaded_consumer(&mut self) {}
    pub(crate) fn delete_consumer_group_records(&mut self, _group_id: &str) {}
    pub(crate) fn expire_consumer_session(&mut self, _group: &str, _member: &str) {}
    pub(crate) fn expire_consumer_rebalance(&mut self, _group: &str, _member: &str, _epoch: i32) {}
    pub(crate) fn leave_consumer_group(
        &mut self,
        _group: &str,
        ids: &[MemberIdentity],
    ) -> LeaveGroupResponse {
        let members = ids
            .iter()
            .map(|m| skiff_protocol::MemberResponse {
                member_id: m.member_id.clone(),
                group_instance_id: m.group_instance_id.clone(),
                error_code: ErrorCode::UnknownMemberId.code(),
            })
            .collect();
        LeaveGroupResponse {
            members,
            ..Default::default()
        }
    }
}
