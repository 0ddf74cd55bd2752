//! Every topic-level key (Kafka 4.1 `TopicConfig` plus Skiff's KIP-280 and delivery-delay keys)
//! with its broker synonyms in Kafka's precedence order.
//!
//! Mental model: a topic value comes from the topic override if set, else from the first broker
//! synonym that is set (dynamic per-broker, then dynamic cluster default, then static), else the
//! Kafka default. A synonym may carry a unit factor (`log.retention.hours` counts hours, the topic
//! key milliseconds). Static, sorted by name, shared freely.

use super::ConfigType as T;

/// A broker key that supplies a topic key's default, and the factor turning its unit into the
/// topic key's unit (`1` when both use the same unit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Synonym {
    pub name: &'static str,
    pub factor: i64,
}

/// One topic-level key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TopicKeySpec {
    pub name: &'static str,
    pub config_type: T,
    /// Kafka's (or Skiff's) default in DescribeConfigs string form.
    pub default: Option<&'static str>,
    /// Broker synonyms, highest precedence first.
    pub synonyms: &'static [Synonym],
    /// Skiff's own key (not in Kafka).
    pub skiff: bool,
    /// Skiff acts on it today.
    pub implemented: bool,
    pub doc: &'static str,
}

const fn s(name: &'static str) -> Synonym {
    Synonym { name, factor: 1 }
}

const fn su(name: &'static str, factor: i64) -> Synonym {
    Synonym { name, factor }
}

const HOUR_MS: i64 = 3_600_000;
const MINUTE_MS: i64 = 60_000;

#[allow(clippy::too_many_arguments)]
const fn t(
    name: &'static str,
    config_type: T,
    default: Option<&'static str>,
    synonyms: &'static [Synonym],
    skiff: bool,
    implemented: bool,
    doc: &'static str,
) -> TopicKeySpec {
    TopicKeySpec {
        name,
        config_type,
        default,
        synonyms,
        skiff,
        implemented,
        doc,
    }
}

/// All topic keys, sorted by name.
#[rustfmt::skip]
pub static TOPIC_KEYS: &[TopicKeySpec] = &[
    t("cleanup.policy", T::List, Some("delete"), &[s("log.cleanup.policy")], false, true, "What happens to old segments: delete, compact, or both."),
    t("compaction.strategy", T::String, Some("offset"), &[s("log.cleaner.compaction.strategy")], true, true, "Which record wins per key when compacting: offset, timestamp, header or header:<name> (KIP-280)."),
    t("compaction.strategy.header", T::String, None, &[s("log.cleaner.compaction.strategy.header")], true, true, "Header whose 8-byte big-endian value orders records under the header strategy."),
    t("compression.gzip.level", T::Int, Some("-1"), &[s("compression.gzip.level")], false, true, "Gzip level when the topic recompresses to gzip."),
    t("compression.lz4.level", T::Int, Some("9"), &[s("compression.lz4.level")], false, true, "LZ4 level when the topic recompresses to lz4."),
    t("compression.type", T::String, Some("producer"), &[s("compression.type")], false, true, "Codec of stored batches; producer keeps what the client sent."),
    t("compression.zstd.level", T::Int, Some("3"), &[s("compression.zstd.level")], false, true, "Zstd level when the topic recompresses to zstd."),
    t("delete.retention.ms", T::Long, Some("86400000"), &[s("log.cleaner.delete.retention.ms")], false, true, "How long tombstones stay readable after compaction first sees them."),
    t("delivery.delay.default.ms", T::Long, Some("0"), &[], true, true, "Delay applied to records without a delay header when delivery delay is on."),
    t("delivery.delay.enable", T::Boolean, Some("false"), &[], true, true, "Honour __delay_ms / __deliver_after_ms record headers on this topic."),
    t("delivery.delay.exceed.policy", T::String, Some("reject"), &[], true, true, "What to do with a delay above the maximum: reject the batch or clamp it."),
    t("delivery.delay.max.ms", T::Long, Some("900000"), &[], true, true, "Largest delay a record may ask for."),
    t("file.delete.delay.ms", T::Long, Some("60000"), &[s("log.segment.delete.delay.ms")], false, true, "Grace period before a deleted segment's files are removed."),
    t("flush.messages", T::Long, Some("9223372036854775807"), &[s("log.flush.interval.messages")], false, true, "Messages appended before the log is fsynced; 1 makes every append durable."),
    t("flush.ms", T::Long, Some("9223372036854775807"), &[s("log.flush.interval.ms"), s("log.flush.scheduler.interval.ms")], false, true, "Longest time data may stay unflushed."),
    t("follower.replication.throttled.replicas", T::List, Some(""), &[], false, false, "Replicas throttled on the follower side, as partition:broker pairs or *."),
    t("index.interval.bytes", T::Int, Some("4096"), &[s("log.index.interval.bytes")], false, true, "Bytes between offset index entries."),
    t("leader.replication.throttled.replicas", T::List, Some(""), &[], false, false, "Replicas throttled on the leader side, as partition:broker pairs or *."),
    t("local.retention.bytes", T::Long, Some("-2"), &[s("log.local.retention.bytes")], false, false, "Local size cap with tiered storage; -2 follows retention.bytes."),
    t("local.retention.ms", T::Long, Some("-2"), &[s("log.local.retention.ms")], false, false, "Local age cap with tiered storage; -2 follows retention.ms."),
    t("max.compaction.lag.ms", T::Long, Some("9223372036854775807"), &[s("log.cleaner.max.compaction.lag.ms")], false, true, "Longest a record stays ineligible for compaction."),
    t("max.message.bytes", T::Int, Some("1048588"), &[s("message.max.bytes")], false, true, "Largest record batch accepted, after compression."),
    t("message.timestamp.after.max.ms", T::Long, Some("3600000"), &[s("log.message.timestamp.after.max.ms")], false, true, "How far in the future a CreateTime timestamp may be."),
    t("message.timestamp.before.max.ms", T::Long, Some("9223372036854775807"), &[s("log.message.timestamp.before.max.ms")], false, true, "How far in the past a CreateTime timestamp may be."),
    t("message.timestamp.type", T::String, Some("CreateTime"), &[s("log.message.timestamp.type")], false, true, "Whether batches keep the producer's time or get the broker's append time."),
    t("min.cleanable.dirty.ratio", T::Double, Some("0.5"), &[s("log.cleaner.min.cleanable.ratio")], false, true, "Dirty ratio that makes the log eligible for cleaning."),
    t("min.compaction.lag.ms", T::Long, Some("0"), &[s("log.cleaner.min.compaction.lag.ms")], false, true, "Shortest time a record stays uncompacted."),
    t("min.insync.replicas", T::Int, Some("1"), &[s("min.insync.replicas")], false, true, "In-sync replicas needed to acknowledge an acks=all write."),
    t("preallocate", T::Boolean, Some("false"), &[s("log.preallocate")], false, true, "Preallocate segment files on creation."),
    t("remote.log.copy.disable", T::Boolean, Some("false"), &[], false, false, "Stop copying segments to remote storage while keeping remote reads."),
    t("remote.log.delete.on.disable", T::Boolean, Some("false"), &[], false, false, "Delete remote data when tiered storage is turned off for the topic."),
    t("remote.storage.enable", T::Boolean, Some("false"), &[], false, false, "Tier this topic's segments to remote storage."),
    t("retention.bytes", T::Long, Some("-1"), &[s("log.retention.bytes")], false, true, "Size cap per partition before old segments go; -1 means none."),
    t("retention.ms", T::Long, Some("604800000"), &[s("log.retention.ms"), su("log.retention.minutes", MINUTE_MS), su("log.retention.hours", HOUR_MS)], false, true, "How long data is kept; -1 keeps it forever."),
    t("segment.bytes", T::Int, Some("1073741824"), &[s("log.segment.bytes")], false, true, "Size at which the active segment is rolled."),
    t("segment.index.bytes", T::Int, Some("10485760"), &[s("log.index.size.max.bytes")], false, true, "Maximum size of a segment's offset index."),
    t("segment.jitter.ms", T::Long, Some("0"), &[s("log.roll.jitter.ms"), su("log.roll.jitter.hours", HOUR_MS)], false, true, "Random jitter subtracted from the roll time."),
    t("segment.ms", T::Long, Some("604800000"), &[s("log.roll.ms"), su("log.roll.hours", HOUR_MS)], false, true, "Age after which the active segment is rolled."),
    t("unclean.leader.election.enable", T::Boolean, Some("false"), &[s("unclean.leader.election.enable")], false, true, "Allow an out-of-sync replica to become leader, risking data loss."),
];
