//! The group coordinator's configuration: Kafka's `group.*` / `offsets.*` keys that a shard acts
//! on, with Kafka's defaults (except where the issue asks otherwise) and a `validate()`.
//!
//! Mental model: a [`GroupConfig`] is plain data owned by one shard, fixed for its lifetime (a
//! dynamic change replaces the shard's copy between calls). Names carry units. The server's
//! config layer maps Kafka's property names onto these fields (listed on each field).

use crate::error::GroupError;

/// The names of the server-side assignors a KIP-848 group may request.
pub const ASSIGNOR_UNIFORM: &str = "uniform";
/// See [`ASSIGNOR_UNIFORM`].
pub const ASSIGNOR_RANGE: &str = "range";

/// `group.consumer.migration.policy`: whether a group may convert online between the classic
/// and the consumer (KIP-848) protocol (Kafka's `ConsumerGroupMigrationPolicy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum MigrationPolicy {
    /// Neither way: a ConsumerGroupHeartbeat to a non-empty classic group is GROUP_ID_NOT_FOUND.
    Disabled,
    /// Classic -> consumer only.
    Upgrade,
    /// Consumer -> classic only (when the last consumer-protocol member leaves).
    Downgrade,
    /// Both ways (Kafka's default).
    #[default]
    Bidirectional,
}

impl MigrationPolicy {
    /// Kafka's names (case insensitive): `disabled`, `upgrade`, `downgrade`, `bidirectional`.
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "disabled" => Some(Self::Disabled),
            "upgrade" => Some(Self::Upgrade),
            "downgrade" => Some(Self::Downgrade),
            "bidirectional" => Some(Self::Bidirectional),
            _ => None,
        }
    }

    pub fn upgrade_enabled(self) -> bool {
        matches!(self, Self::Upgrade | Self::Bidirectional)
    }

    pub fn downgrade_enabled(self) -> bool {
        matches!(self, Self::Downgrade | Self::Bidirectional)
    }
}

/// Configuration of one coordinator shard.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupConfig {
    /// `group.min.session.timeout.ms` (Kafka default 6000; may be lowered to 1000 for clients
    /// whose tests use a 1 s session).
    pub session_timeout_ms_min: i32,
    /// `group.max.session.timeout.ms` (default 1800000).
    pub session_timeout_ms_max: i32,
    /// `group.initial.rebalance.delay.ms` (Kafka default 3000; 0 allowed).
    pub initial_rebalance_delay_ms: i32,
    /// `group.max.size` (default `i32::MAX`).
    pub group_size_max: i32,
    /// How long a new member's parked JoinGroup may wait before it is dropped (Kafka's fixed
    /// 5 minutes, `classicGroupNewMemberJoinTimeoutMs`).
    pub new_member_join_timeout_ms: i32,
    /// `offsets.retention.ms` (default 7 days).
    pub offsets_retention_ms: i64,
    /// `offsets.retention.check.interval.ms` (default 600000).
    pub offsets_retention_check_interval_ms: i64,
    /// `offset.metadata.max.bytes` (default 4096): longer commit metadata is refused with
    /// OFFSET_METADATA_TOO_LARGE.
    pub offset_metadata_bytes_max: usize,
    /// `group.consumer.session.timeout.ms` (KIP-848, default 45000).
    pub consumer_session_timeout_ms: i32,
    /// `group.consumer.heartbeat.interval.ms` (KIP-848, default 5000).
    pub consumer_heartbeat_interval_ms: i32,
    /// `group.consumer.min.session.timeout.ms` / `group.consumer.max.session.timeout.ms`
    /// (defaults 45000 / 60000): bounds of the session timeout, checked at start as Kafka does.
    pub consumer_session_timeout_ms_min: i32,
    pub consumer_session_timeout_ms_max: i32,
    /// `group.consumer.min.heartbeat.interval.ms` / `group.consumer.max.heartbeat.interval.ms`
    /// (defaults 5000 / 15000): bounds of the heartbeat interval.
    pub consumer_heartbeat_interval_ms_min: i32,
    pub consumer_heartbeat_interval_ms_max: i32,
    /// `group.consumer.max.size` (KIP-848, default `i32::MAX`).
    pub consumer_group_size_max: i32,
    /// `group.consumer.assignors`, first is the default (Kafka: `uniform,range`).
    pub consumer_assignors: Vec<String>,
    /// `group.consumer.migration.policy` (default `bidirectional`).
    pub consumer_migration_policy: MigrationPolicy,
}

impl Default for GroupConfig {
    fn default() -> Self {
        Self {
            session_timeout_ms_min: 6_000,
            session_timeout_ms_max: 1_800_000,
            initial_rebalance_delay_ms: 3_000,
            group_size_max: i32::MAX,
            new_member_join_timeout_ms: 300_000,
            offsets_retention_ms: 7 * 24 * 60 * 60 * 1000,
            offsets_retention_check_interval_ms: 600_000,
            offset_metadata_bytes_max: 4096,
            consumer_session_timeout_ms: 45_000,
            consumer_heartbeat_interval_ms: 5_000,
            consumer_session_timeout_ms_min: 45_000,
            consumer_session_timeout_ms_max: 60_000,
            consumer_heartbeat_interval_ms_min: 5_000,
            consumer_heartbeat_interval_ms_max: 15_000,
            consumer_group_size_max: i32::MAX,
            consumer_assignors: vec![ASSIGNOR_UNIFORM.to_string(), ASSIGNOR_RANGE.to_string()],
            consumer_migration_policy: MigrationPolicy::Bidirectional,
        }
    }
}

impl GroupConfig {
    /// Checks every bound and relation; the message names Kafka's property.
    pub fn validate(&self) -> Result<(), GroupError> {
        let bad = |msg: &str| Err(GroupError::InvalidConfig(msg.to_string()));
        if self.session_timeout_ms_min < 1 {
            return bad("group.min.session.timeout.ms must be at least 1");
        }
        if self.session_timeout_ms_max < self.session_timeout_ms_min {
            return bad("group.max.session.timeout.ms must be >= group.min.session.timeout.ms");
        }
        if self.initial_rebalance_delay_ms < 0 {
            return bad("group.initial.rebalance.delay.ms must be >= 0");
        }
        if self.group_size_max < 1 {
            return bad("group.max.size must be at least 1");
        }
        if self.new_member_join_timeout_ms < 1 {
            return bad("the new member join timeout must be at least 1 ms");
        }
        if self.offsets_retention_ms < 1 {
            return bad("offsets.retention.ms must be at least 1");
        }
        if self.offsets_retention_check_interval_ms < 1 {
            return bad("offsets.retention.check.interval.ms must be at least 1");
        }
        if self.consumer_session_timeout_ms < 1 {
            return bad("group.consumer.session.timeout.ms must be at least 1");
        }
        if self.consumer_heartbeat_interval_ms < 1 {
            return bad("group.consumer.heartbeat.interval.ms must be at least 1");
        }
        // Kafka's GroupCoordinatorConfig checks, with its messages.
        let rules = [
            (
                self.consumer_heartbeat_interval_ms_max >= self.consumer_heartbeat_interval_ms_min,
                "group.consumer.max.heartbeat.interval.ms must be greater than or equal to group.consumer.min.heartbeat.interval.ms",
            ),
            (
                self.consumer_heartbeat_interval_ms >= self.consumer_heartbeat_interval_ms_min,
                "group.consumer.heartbeat.interval.ms must be greater than or equal to group.consumer.min.heartbeat.interval.ms",
            ),
            (
                self.consumer_heartbeat_interval_ms <= self.consumer_heartbeat_interval_ms_max,
                "group.consumer.heartbeat.interval.ms must be less than or equal to group.consumer.max.heartbeat.interval.ms",
            ),
            (
                self.consumer_session_timeout_ms_max >= self.consumer_session_timeout_ms_min,
                "group.consumer.max.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms",
            ),
            (
                self.consumer_session_timeout_ms >= self.consumer_session_timeout_ms_min,
                "group.consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms",
            ),
            (
                self.consumer_session_timeout_ms <= self.consumer_session_timeout_ms_max,
                "group.consumer.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms",
            ),
            (
                self.consumer_heartbeat_interval_ms < self.consumer_session_timeout_ms,
                "group.consumer.heartbeat.interval.ms must be less than group.consumer.session.timeout.ms",
            ),
        ];
        if let Some((_, msg)) = rules.iter().find(|(ok, _)| !ok) {
            return bad(msg);
        }
        if self.consumer_group_size_max < 1 {
            return bad("group.consumer.max.size must be at least 1");
        }
        if self.consumer_assignors.is_empty() {
            return bad("group.consumer.assignors must name at least one assignor");
        }
        for name in &self.consumer_assignors {
            if name != ASSIGNOR_UNIFORM && name != ASSIGNOR_RANGE {
                return Err(GroupError::InvalidConfig(format!(
                    "group.consumer.assignors: unknown assignor `{name}` (supported: uniform, range)"
                )));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_bounds_are_checked() {
        assert!(GroupConfig::default().validate().is_ok());
        let low = GroupConfig {
            session_timeout_ms_min: 1000,
            ..GroupConfig::default()
        };
        assert!(low.validate().is_ok());
        let inverted = GroupConfig {
            session_timeout_ms_min: 10,
            session_timeout_ms_max: 5,
            ..GroupConfig::default()
        };
        assert!(inverted.validate().is_err());
        let unknown = GroupConfig {
            consumer_assignors: vec!["sticky".into()],
            ..GroupConfig::default()
        };
        assert!(unknown.validate().is_err());
    }

    /// KIP-848 session and heartbeat bounds, as Kafka's GroupCoordinatorConfig checks them.
    #[test]
    fn consumer_session_and_heartbeat_bounds_table() {
        let d = GroupConfig::default();
        let with = |session: i32, hb: i32, s_min: i32, s_max: i32, h_min: i32, h_max: i32| {
            GroupConfig {
                consumer_session_timeout_ms: session,
                consumer_heartbeat_interval_ms: hb,
                consumer_session_timeout_ms_min: s_min,
                consumer_session_timeout_ms_max: s_max,
                consumer_heartbeat_interval_ms_min: h_min,
                consumer_heartbeat_interval_ms_max: h_max,
                ..d.clone()
            }
            .validate()
            .err()
            .map(|e| e.to_string())
        };
        let cases: [(&str, Option<String>, Option<&str>); 8] = [
            (
                "defaults",
                with(45_000, 5_000, 45_000, 60_000, 5_000, 15_000),
                None,
            ),
            (
                "test broker",
                with(6_000, 500, 6_000, 60_000, 500, 15_000),
                None,
            ),
            (
                "session below min (Kafka refuses 6000 by default)",
                with(6_000, 500, 45_000, 60_000, 500, 15_000),
                Some(
                    "group.consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms",
                ),
            ),
            (
                "session above max",
                with(70_000, 5_000, 45_000, 60_000, 5_000, 15_000),
                Some(
                    "group.consumer.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms",
                ),
            ),
            (
                "session bounds inverted",
                with(45_000, 5_000, 50_000, 40_000, 5_000, 15_000),
                Some("group.consumer.max.session.timeout.ms must be greater than or equal"),
            ),
            (
                "heartbeat below min",
                with(45_000, 500, 45_000, 60_000, 5_000, 15_000),
                Some(
                    "group.consumer.heartbeat.interval.ms must be greater than or equal to group.consumer.min.heartbeat.interval.ms",
                ),
            ),
            (
                "heartbeat above max",
                with(45_000, 20_000, 45_000, 60_000, 5_000, 15_000),
                Some(
                    "group.consumer.heartbeat.interval.ms must be less than or equal to group.consumer.max.heartbeat.interval.ms",
                ),
            ),
            (
                "heartbeat not below session",
                with(10_000, 10_000, 1_000, 60_000, 1_000, 15_000),
                Some(
                    "group.consumer.heartbeat.interval.ms must be less than group.consumer.session.timeout.ms",
                ),
            ),
        ];
        for (name, got, want) in cases {
            match want {
                None => assert_eq!(got, None, "{name}"),
                Some(w) => assert!(
                    got.as_deref().is_some_and(|g| g.contains(w)),
                    "{name}: {got:?}"
                ),
            }
        }
    }
}
