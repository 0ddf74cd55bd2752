//! Skiff L0: the vocabulary every other crate shares.
//!
//! Mental model: plain data with no behaviour beyond conversions. Offsets, epochs and
//! timestamps are `i64`/`i32` newtype-free aliases where Kafka's wire uses them raw, plus a
//! few named limits (with units in their names) and Kafka's [`ErrorCode`] table.
//!
//! Invariants: nothing here does I/O or allocates on a hot path, and only [`clock`] reads the
//! time (the one [`Clock`], created at start and passed down). Limits
//! that relate to each other are checked at compile time with `const` assertions.

pub mod clock;
mod error_code;
pub mod limits;

pub use clock::Clock;
pub use error_code::ErrorCode;

/// A logical offset in a partition log (dense, assigned by the leader). `-1` means "none".
pub type Offset = i64;
/// A leader epoch (KIP-101). `-1` means "unknown".
pub type LeaderEpoch = i32;
/// Milliseconds since the Unix epoch, Kafka's timestamp unit. `-1` means "no timestamp".
pub type TimestampMs = i64;
/// A producer id (KIP-98). `-1` means "not idempotent".
pub type ProducerId = i64;
/// A producer epoch. `-1` means "none".
pub type ProducerEpoch = i16;

/// Kafka's "no timestamp" sentinel (`RecordBatch.NO_TIMESTAMP`).
pub const NO_TIMESTAMP: TimestampMs = -1;
/// Kafka's "no producer id" sentinel.
pub const NO_PRODUCER_ID: ProducerId = -1;
/// Kafka's "no sequence" sentinel.
pub const NO_SEQUENCE: i32 = -1;

/// A topic name and partition index, the key of everything per-partition.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TopicPartition {
    pub topic: String,
    pub partition: i32,
}

impl TopicPartition {
    pub fn new(topic: impl Into<String>, partition: i32) -> Self {
        Self {
            topic: topic.into(),
            partition,
        }
    }

    /// The partition directory name, `<topic>-<partition>`, as Kafka lays it out.
    pub fn dir_name(&self) -> String {
        format!("{}-{}", self.topic, self.partition)
    }

    /// Parses a partition directory name. The topic may itself contain `-`; the partition is
    /// the text after the last `-`. Returns `None` for names that are not `<topic>-<int>`.
    pub fn from_dir_name(name: &str) -> Option<Self> {
        let (topic, part) = name.rsplit_once('-')?;
        if topic.is_empty() {
            return None;
        }
        let partition: i32 = part.parse().ok()?;
        if partition < 0 || part.starts_with('+') {
            return None;
        }
        Some(Self::new(topic, partition))
    }
}

impl std::fmt::Display for TopicPartition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.topic, self.partition)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dir_names_round_trip() {
        for (name, tp) in [
            ("a-0", Some(TopicPartition::new("a", 0))),
            ("my-topic-12", Some(TopicPartition::new("my-topic", 12))),
            ("-1", None),
            ("a-", None),
            ("a--1", Some(TopicPartition::new("a-", 1))),
            ("a-+1", None),
            ("nodash", None),
        ] {
            assert_eq!(TopicPartition::from_dir_name(name), tp, "{name}");
            if let Some(tp) = tp {
                assert_eq!(tp.dir_name(), name);
            }
        }
    }
}
