//! [`GroupSettings`]: what the group coordinator runtime is configured with, as plain data.
//!
//! Mental model: the binary maps Kafka's `group.*` / `offsets.*` properties onto this once at
//! start (crates/skiff/src/settings.rs); the coordinator copies it into every shard. The pure
//! state machine's knobs live in [`GroupConfig`] (skiff-group); the rest describes the internal
//! `__consumer_offsets` topic the runtime creates on first use.

use skiff_group::GroupConfig;

/// The internal topic holding groups and committed offsets.
pub const OFFSETS_TOPIC: &str = "__consumer_offsets";

/// Group coordinator settings (Kafka key names in the field docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupSettings {
    /// The shard state machine's configuration (`group.*`, `offsets.retention.*`,
    /// `offset.metadata.max.bytes`, `group.consumer.*`).
    pub config: GroupConfig,
    /// `offsets.topic.num.partitions` (default 50). An existing `__consumer_offsets` keeps its
    /// partition count: group placement must not move under existing commits.
    pub offsets_topic_partitions: i32,
    /// `offsets.topic.replication.factor`: a single node caps it at 1 (with a warning).
    pub offsets_topic_replication_factor: i16,
    /// `offsets.topic.segment.bytes` (default 100 MiB), the topic's `segment.bytes`.
    pub offsets_topic_segment_bytes: i64,
}

impl Default for GroupSettings {
    /// Kafka's defaults, except `group.initial.rebalance.delay.ms` = 0 (Skiff's shipped
    /// default, as in Kafka's single-node `server.properties`).
    fn default() -> Self {
        Self {
            config: GroupConfig {
                initial_rebalance_delay_ms: 0,
                ..GroupConfig::default()
            },
            offsets_topic_partitions: 50,
            offsets_topic_replication_factor: 1,
            offsets_topic_segment_bytes: 104_857_600,
        }
    }
}
