//! Per-log configuration: the topic-level keys storage acts on, with Kafka's names, defaults and
//! valid ranges (spec §1.2, §2.7; KIP-1030 4.0 defaults).
//!
//! Mental model: a [`LogConfig`] is the *effective* config of one partition log (broker defaults
//! overlaid with topic overrides by the caller). It is plain data, cheap to clone, and replaced
//! wholesale when a dynamic change arrives. [`LogConfig::set`] parses one Kafka key with the same
//! validation and messages CreateTopics/AlterConfigs answer INVALID_CONFIG with.

use skiff_record::{Compression, TimestampType};

use crate::validate::{TargetCompression, ValidationConfig};

/// `compression.type` for a topic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TopicCompression {
    /// Keep whatever codec the producer used (Kafka's default).
    Producer,
    /// Recompress to this codec (`uncompressed` is `Compression::None`).
    Codec(Compression),
}

/// The effective log configuration of one partition.
#[derive(Clone, Debug, PartialEq)]
pub struct LogConfig {
    pub segment_bytes: u64,
    pub segment_ms: i64,
    pub segment_jitter_ms: i64,
    pub segment_index_bytes: usize,
    pub index_interval_bytes: usize,
    pub retention_ms: i64,
    pub retention_bytes: i64,
    pub file_delete_delay_ms: i64,
    pub max_message_bytes: usize,
    pub flush_messages: i64,
    pub flush_ms: i64,
    pub preallocate: bool,
    pub cleanup_policy_delete: bool,
    pub cleanup_policy_compact: bool,
    pub timestamp_type: TimestampType,
    pub timestamp_before_max_ms: i64,
    pub timestamp_after_max_ms: i64,
    pub compression: TopicCompression,
    pub compression_gzip_level: i32,
    pub compression_lz4_level: i32,
    pub compression_zstd_level: i32,
    // delivery delay (issue 8)
    /// `delivery.delay.enable`: interpret `__delay_ms` / `__deliver_after_ms` headers.
    pub delivery_delay_enable: bool,
    /// `delivery.delay.max.ms`: the largest `due - appendTime` accepted.
    pub delivery_delay_max_ms: i64,
    /// `delivery.delay.default.ms`: the delay of records without a delay header.
    pub delivery_delay_default_ms: i64,
    /// `delivery.delay.exceed.policy=clamp` (else `reject`).
    pub delivery_delay_clamp: bool,
    /// `min.insync.replicas`: what acks=all needs (the replication core reads it; storage
    /// does not), as in Kafka's `LogConfig`.
    pub min_insync_replicas: i32,
    // compaction (issue 7): what the log cleaner reads (spec §3.1, §3.3).
    pub min_cleanable_dirty_ratio: f64,
    pub min_compaction_lag_ms: i64,
    pub max_compaction_lag_ms: i64,
    pub delete_retention_ms: i64,
    pub compaction_strategy: CompactionStrategy,
    /// `compaction.strategy.header` (the `header:<name>` form of the strategy overrides it).
    pub compaction_strategy_header: Option<String>,
}

/// `compaction.strategy` (KIP-280): which record of a key survives compaction.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum CompactionStrategy {
    /// The highest offset (Kafka's behaviour).
    #[default]
    Offset,
    /// The highest record timestamp, then the highest offset.
    Timestamp,
    /// The highest 8-byte big-endian header value, then the highest offset. `Some` when the
    /// value was `header:<name>`.
    Header(Option<String>),
}

impl Default for LogConfig {
    fn default() -> Self {
        Self {
            segment_bytes: 1 << 30,
            segment_ms: 604_800_000,
            segment_jitter_ms: 0,
            segment_index_bytes: 10 * 1024 * 1024,
            index_interval_bytes: 4096,
            retention_ms: 604_800_000,
            retention_bytes: -1,
            file_delete_delay_ms: 60_000,
            max_message_bytes: 1_048_588,
            flush_messages: i64::MAX,
            flush_ms: i64::MAX,
            preallocate: false,
            cleanup_policy_delete: true,
            cleanup_policy_compact: false,
            timestamp_type: TimestampType::CreateTime,
            timestamp_before_max_ms: i64::MAX,
            timestamp_after_max_ms: 3_600_000,
            compression: TopicCompression::Producer,
            compression_gzip_level: -1,
            compression_lz4_level: 9,
            compression_zstd_level: 3,
            // delivery delay (issue 8)
            delivery_delay_enable: false,
            delivery_delay_max_ms: 900_000,
            delivery_delay_default_ms: 0,
            delivery_delay_clamp: false,
            min_insync_replicas: 1,
            min_cleanable_dirty_ratio: 0.5,
            min_compaction_lag_ms: 0,
            max_compaction_lag_ms: i64::MAX,
            delete_retention_ms: 86_400_000,
            compaction_strategy: CompactionStrategy::Offset,
            compaction_strategy_header: None,
        }
    }
}

/// A rejected config value, with the message INVALID_CONFIG carries.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

/// Topic-level keys [`LogConfig::set`] understands.
pub const LOG_CONFIG_KEYS: &[&str] = &[
    "segment.bytes",
    "segment.ms",
    "segment.jitter.ms",
    "segment.index.bytes",
    "index.interval.bytes",
    "retention.ms",
    "retention.bytes",
    "file.delete.delay.ms",
    "max.message.bytes",
    "flush.messages",
    "flush.ms",
    "preallocate",
    "cleanup.policy",
    "message.timestamp.type",
    "message.timestamp.before.max.ms",
    "message.timestamp.after.max.ms",
    "compression.type",
    "compression.gzip.level",
    "compression.lz4.level",
    "compression.zstd.level",
    // delivery delay (issue 8)
    "delivery.delay.enable",
    "delivery.delay.max.ms",
    "delivery.delay.default.ms",
    "delivery.delay.exceed.policy",
    // replication (issue 17)
    "min.insync.replicas",
    // compaction (issue 7)
    "min.cleanable.dirty.ratio",
    "min.compaction.lag.ms",
    "max.compaction.lag.ms",
    "delete.retention.ms",
    "compaction.strategy",
    "compaction.strategy.header",
];

fn parse_i64(key: &str, value: &str, min: i64) -> Result<i64, ConfigError> {
    let v: i64 = value.trim().parse().map_err(|_| {
        ConfigError(format!(
            "Invalid value {value} for configuration {key}: Not a number of type LONG"
        ))
    })?;
    if v < min {
        return Err(ConfigError(format!(
            "Invalid value {v} for configuration {key}: Value must be at least {min}"
        )));
    }
    Ok(v)
}

fn parse_i32(key: &str, value: &str, min: i64, max: i64) -> Result<i64, ConfigError> {
    let v: i64 = value.trim().parse().map_err(|_| {
        ConfigError(format!(
            "Invalid value {value} for configuration {key}: Not a number of type INT"
        ))
    })?;
    if v < i64::from(i32::MIN) || v > i64::from(i32::MAX) {
        return Err(ConfigError(format!(
            "Invalid value {value} for configuration {key}: Not a number of type INT"
        )));
    }
    // Kafka's `ConfigDef.Range` messages.
    if v < min {
        return Err(ConfigError(format!(
            "Invalid value {v} for configuration {key}: Value must be at least {min}"
        )));
    }
    if v > max {
        return Err(ConfigError(format!(
            "Invalid value {v} for configuration {key}: Value must be no more than {max}"
        )));
    }
    Ok(v)
}

fn parse_bool(key: &str, value: &str) -> Result<bool, ConfigError> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(ConfigError(format!(
            "Invalid value {value} for configuration {key}: Expected value to be either true or false"
        ))),
    }
}

impl LogConfig {
    /// Sets one topic-level key from its string form. Unknown keys are an error here; callers
    /// that hold keys for other layers filter first.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), ConfigError> {
        match key {
            "segment.bytes" => {
                self.segment_bytes = parse_i32(key, value, 1_048_576, i64::from(i32::MAX))? as u64
            }
            "segment.ms" => self.segment_ms = parse_i64(key, value, 1)?,
            "segment.jitter.ms" => self.segment_jitter_ms = parse_i64(key, value, 0)?,
            "segment.index.bytes" => {
                self.segment_index_bytes = parse_i32(key, value, 4, i64::from(i32::MAX))? as usize
            }
            "index.interval.bytes" => {
                self.index_interval_bytes = parse_i32(key, value, 0, i64::from(i32::MAX))? as usize
            }
            "retention.ms" => self.retention_ms = parse_i64(key, value, -1)?,
            "retention.bytes" => self.retention_bytes = parse_i64(key, value, i64::MIN)?,
            "file.delete.delay.ms" => self.file_delete_delay_ms = parse_i64(key, value, 0)?,
            "max.message.bytes" => {
                self.max_message_bytes = parse_i32(key, value, 0, i64::from(i32::MAX))? as usize
            }
            "flush.messages" => self.flush_messages = parse_i64(key, value, 1)?,
            "flush.ms" => self.flush_ms = parse_i64(key, value, 0)?,
            "preallocate" => self.preallocate = parse_bool(key, value)?,
            "cleanup.policy" => {
                let mut delete = false;
                let mut compact = false;
                // Kafka parses a blank list as empty (no deletion, no compaction: the log is
                // kept forever); an empty element inside a list is refused.
                let parts = value.split(',').map(str::trim);
                for part in parts.filter(|_| !value.trim().is_empty()) {
                    match part {
                        "delete" => delete = true,
                        "compact" => compact = true,
                        other => {
                            return Err(ConfigError(format!(
                                "Invalid value {other} for configuration cleanup.policy: String must be one of: compact, delete"
                            )));
                        }
                    }
                }
                self.cleanup_policy_delete = delete;
                self.cleanup_policy_compact = compact;
            }
            "message.timestamp.type" => {
                self.timestamp_type = match value.trim() {
                    "CreateTime" => TimestampType::CreateTime,
                    "LogAppendTime" => TimestampType::LogAppendTime,
                    _ => {
                        return Err(ConfigError(format!(
                            "Invalid value {value} for configuration message.timestamp.type: String must be one of: CreateTime, LogAppendTime"
                        )));
                    }
                }
            }
            "message.timestamp.before.max.ms" => {
                self.timestamp_before_max_ms = parse_i64(key, value, 0)?
            }
            "message.timestamp.after.max.ms" => {
                self.timestamp_after_max_ms = parse_i64(key, value, 0)?
            }
            "compression.type" => {
                self.compression = match value.trim() {
                    "producer" => TopicCompression::Producer,
                    "uncompressed" => TopicCompression::Codec(Compression::None),
                    "gzip" => TopicCompression::Codec(Compression::Gzip),
                    "snappy" => TopicCompression::Codec(Compression::Snappy),
                    "lz4" => TopicCompression::Codec(Compression::Lz4),
                    "zstd" => TopicCompression::Codec(Compression::Zstd),
                    _ => {
                        return Err(ConfigError(format!(
                            "Invalid value {value} for configuration compression.type: String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer"
                        )));
                    }
                }
            }
            "compression.gzip.level" => {
                let v = parse_i32(key, value, -1, 9)?;
                if v == 0 {
                    return Err(ConfigError(format!(
                        "Invalid value {v} for configuration {key}: Value must be in the range [1, 9] or -1"
                    )));
                }
                self.compression_gzip_level = v as i32;
            }
            "compression.lz4.level" => {
                self.compression_lz4_level = parse_i32(key, value, 1, 17)? as i32
            }
            "compression.zstd.level" => {
                self.compression_zstd_level = parse_i32(key, value, -131_072, 22)? as i32
            }
            // delivery delay (issue 8)
            "delivery.delay.enable" => self.delivery_delay_enable = parse_bool(key, value)?,
            "delivery.delay.max.ms" => self.delivery_delay_max_ms = parse_i64(key, value, 1)?,
            "delivery.delay.default.ms" => {
                self.delivery_delay_default_ms = parse_i64(key, value, 0)?
            }
            "delivery.delay.exceed.policy" => {
                self.delivery_delay_clamp = match value.trim() {
                    "reject" => false,
                    "clamp" => true,
                    _ => {
                        return Err(ConfigError(format!(
                            "Invalid value {value} for configuration delivery.delay.exceed.policy: String must be one of: reject, clamp"
                        )));
                    }
                }
            }
            "min.insync.replicas" => {
                self.min_insync_replicas = parse_i32(key, value, 1, i64::from(i32::MAX))? as i32
            }
            // compaction (issue 7)
            "min.cleanable.dirty.ratio" => {
                self.min_cleanable_dirty_ratio = match value.trim().parse::<f64>() {
                    Ok(r) if (0.0..=1.0).contains(&r) => r,
                    Ok(_) => {
                        return Err(ConfigError(format!(
                            "Invalid value {value} for configuration {key}: Value must be between 0.0 and 1.0"
                        )));
                    }
                    Err(_) => {
                        return Err(ConfigError(format!(
                            "Invalid value {value} for configuration {key}: Not a number of type DOUBLE"
                        )));
                    }
                }
            }
            "min.compaction.lag.ms" => self.min_compaction_lag_ms = parse_i64(key, value, 0)?,
            "max.compaction.lag.ms" => self.max_compaction_lag_ms = parse_i64(key, value, 1)?,
            "delete.retention.ms" => self.delete_retention_ms = parse_i64(key, value, 0)?,
            "compaction.strategy" => {
                let v = value.trim();
                self.compaction_strategy = match v {
                    "offset" => CompactionStrategy::Offset,
                    "timestamp" => CompactionStrategy::Timestamp,
                    "header" => CompactionStrategy::Header(None),
                    _ => match v.strip_prefix("header:").map(str::trim) {
                        Some(h) if !h.is_empty() => CompactionStrategy::Header(Some(h.to_string())),
                        _ => {
                            return Err(ConfigError(format!(
                                "Invalid value {value} for configuration {key}: String must be one of: offset, timestamp, header, header:<name>"
                            )));
                        }
                    },
                }
            }
            "compaction.strategy.header" => {
                let h = value.trim();
                self.compaction_strategy_header = (!h.is_empty()).then(|| h.to_string());
            }
            _ => {
                return Err(ConfigError(format!("Unknown topic config name: {key}")));
            }
        }
        Ok(())
    }

    /// compaction (issue 7): the header the `header` strategy orders by, `None` for the other
    /// strategies and for `header` without a name (which then behaves as `offset`, as the
    /// 2018 KIP text says; topic validation rejects that combination).
    pub fn compaction_header(&self) -> Option<&str> {
        match &self.compaction_strategy {
            CompactionStrategy::Header(Some(h)) => Some(h),
            CompactionStrategy::Header(None) => self.compaction_strategy_header.as_deref(),
            _ => None,
        }
    }

    /// Durable mode: every append is fdatasynced before it is acknowledged.
    pub fn is_durable(&self) -> bool {
        self.flush_messages <= 1
    }

    /// The leader-side validation settings this config implies.
    pub fn validation_config(&self) -> ValidationConfig {
        ValidationConfig {
            timestamp_type: self.timestamp_type,
            before_max_ms: self.timestamp_before_max_ms,
            after_max_ms: self.timestamp_after_max_ms,
            compression: match self.compression {
                TopicCompression::Producer => TargetCompression::Producer,
                TopicCompression::Codec(codec) => TargetCompression::Codec {
                    codec,
                    level: self.level_for(codec),
                },
            },
            max_message_bytes: self.max_message_bytes,
            compacted: self.cleanup_policy_compact,
            // delivery delay (issue 8)
            delivery: self.delivery_delay_config(),
        }
    }

    // delivery delay (issue 8)
    /// The delay settings validation applies, `None` when the feature is off for this topic.
    pub fn delivery_delay_config(&self) -> Option<crate::delivery::DelayConfig> {
        self.delivery_delay_enable
            .then_some(crate::delivery::DelayConfig {
                max_ms: self.delivery_delay_max_ms,
                default_ms: self.delivery_delay_default_ms,
                clamp: self.delivery_delay_clamp,
            })
    }

    /// The compression level to use for `codec` when the broker recompresses.
    pub fn level_for(&self, codec: Compression) -> Option<i32> {
        match codec {
            Compression::Gzip if self.compression_gzip_level >= 0 => {
                Some(self.compression_gzip_level)
            }
            Compression::Lz4 => Some(self.compression_lz4_level),
            Compression::Zstd => Some(self.compression_zstd_level),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_kafka_4() {
        let c = LogConfig::default();
        assert_eq!(c.segment_bytes, 1_073_741_824);
        assert_eq!(c.timestamp_after_max_ms, 3_600_000);
        assert_eq!(c.timestamp_before_max_ms, i64::MAX);
        assert_eq!(c.max_message_bytes, 1_048_588);
        assert_eq!(c.compression, TopicCompression::Producer);
        assert!(!c.is_durable());
    }

    #[test]
    fn set_parses_and_rejects() {
        let mut c = LogConfig::default();
        for (k, v, ok) in [
            ("segment.bytes", "1048576", true),
            ("segment.bytes", "1048575", false),
            ("segment.bytes", "abc", false),
            ("retention.ms", "-1", true),
            ("retention.ms", "-2", false),
            ("cleanup.policy", "", true),
            ("cleanup.policy", "  ", true),
            ("cleanup.policy", "compact,", false),
            ("cleanup.policy", "compact,delete", true),
            ("cleanup.policy", "compact,nope", false),
            ("compression.type", "none", false),
            ("compression.type", "uncompressed", true),
            ("compression.gzip.level", "0", false),
            ("compression.gzip.level", "9", true),
            ("compression.zstd.level", "23", false),
            ("message.timestamp.type", "LogAppendTime", true),
            ("message.timestamp.type", "logappendtime", false),
            ("flush.messages", "1", true),
            ("delivery.delay.enable", "TRUE", true),
            ("delivery.delay.enable", "yes", false),
            ("delivery.delay.max.ms", "0", false),
            ("delivery.delay.max.ms", "60000", true),
            ("delivery.delay.default.ms", "-1", false),
            ("delivery.delay.default.ms", "500", true),
            ("delivery.delay.exceed.policy", "drop", false),
            ("delivery.delay.exceed.policy", "clamp", true),
            ("no.such.key", "1", false),
            ("min.cleanable.dirty.ratio", "0.01", true),
            ("min.cleanable.dirty.ratio", "1.5", false),
            ("max.compaction.lag.ms", "0", false),
            ("delete.retention.ms", "0", true),
            ("compaction.strategy", "header:", false),
            ("compaction.strategy", "newest", false),
            ("compaction.strategy", "header:ver", true),
        ] {
            assert_eq!(c.set(k, v).is_ok(), ok, "{k}={v}");
        }
        assert!(c.cleanup_policy_compact && c.cleanup_policy_delete);
        let mut blank = LogConfig::default();
        blank.set("cleanup.policy", "").unwrap();
        assert!(!blank.cleanup_policy_compact && !blank.cleanup_policy_delete);
        assert!(c.is_durable());
        let d = c.delivery_delay_config().unwrap();
        assert_eq!((d.max_ms, d.default_ms, d.clamp), (60_000, 500, true));
        assert_eq!(c.compaction_header(), Some("ver"));
        assert_eq!(c.timestamp_type, TimestampType::LogAppendTime);
        let err = c.set("compression.type", "none").unwrap_err();
        assert!(err.0.contains("compression.type"), "{err}");
    }
}
