//! Value validation with Kafka's messages ("Invalid value X for configuration K: ...").
//!
//! Mental model: broker values are checked by type (from the key catalogue) plus a small table
//! of ranges/enums for the keys Skiff acts on; log.* keys that are topic synonyms are checked by
//! the topic rules (via storage's `LogConfig::set` for the keys storage owns). Topic values are
//! checked key by key, then as a set for cross-key rules (delivery delay vs retention). Pure
//! functions.

use std::collections::BTreeMap;

use skiff_storage::LogConfig;
use skiff_storage::config::LOG_CONFIG_KEYS;

use crate::error::ConfigError;
use crate::keys::{self, ConfigType, KeySpec};

/// Checks that `value` parses as `t`.
pub fn check_type(key: &str, t: ConfigType, value: &str) -> Result<(), ConfigError> {
    let v = value.trim();
    let not_number = || {
        ConfigError::invalid(
            key,
            value,
            format!("Not a number of type {}", t.kafka_name()),
        )
    };
    match t {
        ConfigType::Boolean => match v.to_ascii_lowercase().as_str() {
            "true" | "false" => Ok(()),
            _ => Err(ConfigError::invalid(
                key,
                value,
                "Expected value to be either true or false",
            )),
        },
        ConfigType::Int => v.parse::<i32>().map(|_| ()).map_err(|_| not_number()),
        ConfigType::Short => v.parse::<i16>().map(|_| ()).map_err(|_| not_number()),
        ConfigType::Long => v.parse::<i64>().map(|_| ()).map_err(|_| not_number()),
        ConfigType::Double => match v.parse::<f64>() {
            Ok(d) if d.is_finite() => Ok(()),
            _ => Err(not_number()),
        },
        ConfigType::String | ConfigType::List | ConfigType::Class | ConfigType::Password => Ok(()),
    }
}

fn at_least(key: &str, value: &str, min: i64) -> Result<(), ConfigError> {
    match value.trim().parse::<i64>() {
        Ok(v) if v < min => Err(ConfigError::invalid(
            key,
            value.trim(),
            format!("Value must be at least {min}"),
        )),
        _ => Ok(()),
    }
}

fn one_of(key: &str, value: &str, allowed: &[&str]) -> Result<(), ConfigError> {
    if allowed.contains(&value.trim()) {
        Ok(())
    } else {
        Err(ConfigError::invalid(
            key,
            value,
            format!("String must be one of: {}", allowed.join(", ")),
        ))
    }
}

/// Minimums of broker keys Skiff acts on (Kafka's validators).
const BROKER_MINIMUMS: &[(&str, i64)] = &[
    ("num.partitions", 1),
    ("node.id", 0),
    ("socket.request.max.bytes", 1),
    ("max.connections", 0),
    ("max.connections.per.ip", 0),
    ("num.recovery.threads.per.data.dir", 1),
    ("log.retention.check.interval.ms", 1),
    ("log.flush.offset.checkpoint.interval.ms", 0),
    ("log.flush.start.offset.checkpoint.interval.ms", 0),
    ("log.roll.hours", 1),
    ("log.roll.jitter.hours", 0),
    ("offsets.topic.replication.factor", 1),
    ("offsets.topic.num.partitions", 1),
    ("offsets.topic.segment.bytes", 1),
    ("offsets.retention.minutes", 1),
    ("offsets.commit.timeout.ms", 1),
    ("transaction.state.log.replication.factor", 1),
    ("transaction.state.log.num.partitions", 1),
    ("transaction.state.log.min.isr", 1),
    ("transaction.state.log.segment.bytes", 1),
    ("producer.id.expiration.ms", 1),
    ("transaction.max.timeout.ms", 1),
    ("transactional.id.expiration.ms", 1),
    ("group.max.size", 1),
];

/// Validates one broker-level value.
pub fn check_broker_value(spec: &KeySpec, value: &str) -> Result<(), ConfigError> {
    check_type(spec.name, spec.config_type, value)?;
    if let Some((_, min)) = BROKER_MINIMUMS.iter().find(|(k, _)| *k == spec.name) {
        at_least(spec.name, value, *min)?;
    }
    match spec.name {
        "listeners" => crate::listeners::parse_listeners(spec.name, value).map(|_| ()),
        "advertised.listeners" => crate::listeners::parse_advertised(spec.name, value).map(|_| ()),
        "log.cleaner.compaction.strategy" => check_strategy(spec.name, value),
        "group.consumer.migration.policy" => {
            const POLICIES: [&str; 4] = ["disabled", "downgrade", "upgrade", "bidirectional"];
            if POLICIES.contains(&value.trim().to_ascii_lowercase().as_str()) {
                Ok(())
            } else {
                Err(ConfigError::invalid(
                    spec.name,
                    value,
                    "String must be one of (case insensitive): DISABLED, DOWNGRADE, UPGRADE, BIDIRECTIONAL".to_string(),
                ))
            }
        }
        name => {
            // log.* keys that feed a topic key are validated by the topic rules, with the
            // message naming the broker key.
            if let Some((topic, factor)) = topic_for_broker_key(name) {
                let converted = scale(value, factor);
                check_topic_value(topic, &converted).map_err(|e| rename(e, topic, name, value))?;
            }
            Ok(())
        }
    }
}

fn scale(value: &str, factor: i64) -> String {
    if factor == 1 {
        return value.to_string();
    }
    match value.trim().parse::<i64>() {
        Ok(v) => v.saturating_mul(factor).to_string(),
        Err(_) => value.to_string(),
    }
}

fn rename(e: ConfigError, topic: &str, broker: &str, original: &str) -> ConfigError {
    match e {
        ConfigError::InvalidValue { reason, .. } => ConfigError::invalid(broker, original, reason),
        ConfigError::InvalidTopicConfig(m) => {
            ConfigError::InvalidTopicConfig(m.replace(topic, broker))
        }
        other => other,
    }
}

/// The topic key a broker key supplies, with its unit factor.
pub fn topic_for_broker_key(name: &str) -> Option<(&'static str, i64)> {
    keys::TOPIC_KEYS.iter().find_map(|t| {
        t.synonyms
            .iter()
            .find(|s| s.name == name)
            .map(|s| (t.name, s.factor))
    })
}

fn check_strategy(key: &str, value: &str) -> Result<(), ConfigError> {
    let v = value.trim();
    match v {
        "offset" | "timestamp" | "header" => Ok(()),
        _ => match v.strip_prefix("header:") {
            Some(h) if !h.trim().is_empty() => Ok(()),
            _ => Err(ConfigError::invalid(
                key,
                value,
                "String must be one of: offset, timestamp, header, header:<name>",
            )),
        },
    }
}

fn check_throttled_replicas(key: &str, value: &str) -> Result<(), ConfigError> {
    let v = value.trim();
    if v.is_empty() || v == "*" {
        return Ok(());
    }
    for part in v.split(',').map(str::trim) {
        let ok = part.split_once(':').is_some_and(|(p, b)| {
            p.trim().parse::<u32>().is_ok() && b.trim().parse::<u32>().is_ok()
        });
        if !ok {
            return Err(ConfigError::invalid(
                key,
                value,
                "must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...",
            ));
        }
    }
    Ok(())
}

/// Validates one topic-level value (unknown names are an error with a suggestion).
pub fn check_topic_value(key: &str, value: &str) -> Result<(), ConfigError> {
    let Some(spec) = keys::topic_key(key) else {
        return Err(ConfigError::UnknownTopicKey {
            key: key.to_string(),
            suggestion: keys::did_you_mean(key, keys::TOPIC_KEYS.iter().map(|t| t.name))
                .map(str::to_string),
        });
    };
    if LOG_CONFIG_KEYS.contains(&key) {
        let mut scratch = LogConfig::default();
        return scratch.set(key, value).map_err(ConfigError::from);
    }
    check_type(key, spec.config_type, value)?;
    match key {
        "delete.retention.ms" | "min.compaction.lag.ms" | "delivery.delay.default.ms" => {
            at_least(key, value, 0)
        }
        "max.compaction.lag.ms" | "min.insync.replicas" | "delivery.delay.max.ms" => {
            at_least(key, value, 1)
        }
        "local.retention.ms" | "local.retention.bytes" => at_least(key, value, -2),
        "min.cleanable.dirty.ratio" => match value.trim().parse::<f64>() {
            Ok(r) if (0.0..=1.0).contains(&r) => Ok(()),
            _ => Err(ConfigError::invalid(
                key,
                value,
                "Value must be between 0.0 and 1.0",
            )),
        },
        "compaction.strategy" => check_strategy(key, value),
        "compaction.strategy.header" => Ok(()),
        "delivery.delay.exceed.policy" => one_of(key, value, &["reject", "clamp"]),
        "leader.replication.throttled.replicas" | "follower.replication.throttled.replicas" => {
            check_throttled_replicas(key, value)
        }
        _ => Ok(()),
    }
}

/// Cross-key topic rules, applied to the effective topic values (defaults filled in).
pub fn check_topic_set(effective: &BTreeMap<String, String>) -> Result<(), ConfigError> {
    let get = |k: &str| effective.get(k).map(|s| s.trim().to_string());
    let delay_on = get("delivery.delay.enable").is_some_and(|v| v.eq_ignore_ascii_case("true"));
    if delay_on {
        let max: i64 = get("delivery.delay.max.ms")
            .and_then(|v| v.parse().ok())
            .unwrap_or(900_000);
        let retention: i64 = get("retention.ms")
            .and_then(|v| v.parse().ok())
            .unwrap_or(604_800_000);
        if retention >= 0 && retention < max {
            return Err(ConfigError::InvalidTopicConfig(format!(
                "Invalid value {retention} for configuration retention.ms: with delivery.delay.enable=true it must be -1 or at least delivery.delay.max.ms ({max}), or delayed records could be deleted before delivery"
            )));
        }
        let default: i64 = get("delivery.delay.default.ms")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        if default > max {
            return Err(ConfigError::InvalidTopicConfig(format!(
                "Invalid value {default} for configuration delivery.delay.default.ms: must not exceed delivery.delay.max.ms ({max})"
            )));
        }
    }
    let strategy = get("compaction.strategy").unwrap_or_default();
    if strategy == "header" && get("compaction.strategy.header").is_none_or(|h| h.is_empty()) {
        return Err(ConfigError::InvalidTopicConfig(
            "Invalid value header for configuration compaction.strategy: the header strategy needs compaction.strategy.header (or use header:<name>)".into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_checks_use_kafka_wording() {
        let e = check_type("num.partitions", ConfigType::Int, "abc").unwrap_err();
        assert_eq!(
            e.to_string(),
            "Invalid value abc for configuration num.partitions: Not a number of type INT"
        );
        assert!(check_type("x", ConfigType::Boolean, "TRUE").is_ok());
        assert!(check_type("x", ConfigType::Boolean, "yes").is_err());
        assert!(check_type("x", ConfigType::Short, "40000").is_err());
        assert!(check_type("x", ConfigType::Double, "0.5").is_ok());
        assert!(check_type("x", ConfigType::Double, "NaN").is_err());
    }

    #[test]
    fn topic_values_table() {
        for (k, v, ok) in [
            ("min.insync.replicas", "0", false),
            ("min.insync.replicas", "2", true),
            ("min.cleanable.dirty.ratio", "1.5", false),
            ("min.cleanable.dirty.ratio", "0.01", true),
            ("compaction.strategy", "timestamp", true),
            ("compaction.strategy", "header:ver", true),
            ("compaction.strategy", "header:", false),
            ("compaction.strategy", "newest", false),
            ("delivery.delay.exceed.policy", "clamp", true),
            ("delivery.delay.exceed.policy", "drop", false),
            ("delivery.delay.enable", "maybe", false),
            ("leader.replication.throttled.replicas", "0:1,1:2", true),
            ("leader.replication.throttled.replicas", "*", true),
            ("leader.replication.throttled.replicas", "0-1", false),
            ("segment.bytes", "100", false),
            ("retention.ms", "-1", true),
            ("unclean.leader.election.enable", "true", true),
        ] {
            assert_eq!(check_topic_value(k, v).is_ok(), ok, "{k}={v}");
        }
        let e = check_topic_value("retention.msx", "1").unwrap_err();
        assert!(e.to_string().contains("did you mean `retention.ms`"), "{e}");
    }

    #[test]
    fn broker_synonyms_are_checked_with_their_own_name() {
        let spec = keys::broker_key("log.segment.bytes").unwrap();
        let e = check_broker_value(spec, "100").unwrap_err();
        assert!(e.to_string().contains("log.segment.bytes"), "{e}");
        let spec = keys::broker_key("log.retention.hours").unwrap();
        assert!(check_broker_value(spec, "168").is_ok());
        let spec = keys::broker_key("num.partitions").unwrap();
        assert!(check_broker_value(spec, "0").is_err());
    }

    #[test]
    fn migration_policy_takes_kafkas_four_names_in_any_case() {
        let spec = keys::broker_key("group.consumer.migration.policy").unwrap();
        for ok in ["bidirectional", "UPGRADE", "Downgrade", "disabled"] {
            assert!(check_broker_value(spec, ok).is_ok(), "{ok}");
        }
        let e = check_broker_value(spec, "sideways").unwrap_err();
        assert!(
            e.to_string()
                .contains("DISABLED, DOWNGRADE, UPGRADE, BIDIRECTIONAL"),
            "{e}"
        );
    }

    #[test]
    fn delivery_delay_needs_long_enough_retention() {
        let m = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        assert!(
            check_topic_set(&m(&[
                ("delivery.delay.enable", "true"),
                ("retention.ms", "1000")
            ]))
            .is_err()
        );
        assert!(
            check_topic_set(&m(&[
                ("delivery.delay.enable", "true"),
                ("retention.ms", "-1")
            ]))
            .is_ok()
        );
        assert!(
            check_topic_set(&m(&[
                ("delivery.delay.enable", "false"),
                ("retention.ms", "1000")
            ]))
            .is_ok()
        );
        assert!(check_topic_set(&m(&[("compaction.strategy", "header")])).is_err());
    }
}
