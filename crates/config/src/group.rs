//! Per-group configs: Kafka 4.1's `GroupConfig`, the keys of ConfigResource type GROUP (32)
//! that DescribeConfigs and (Incremental)AlterConfigs read and change per group id.
//!
//! Mental model: a group's configs are a small key set stored in the metadata log (like a
//! topic's overrides, but a group may have them before it exists). Each key has a broker-wide
//! counterpart (`consumer.session.timeout.ms` <- `group.consumer.session.timeout.ms`) that is
//! its default, and broker bounds it must stay within (`group.consumer.min/max.*`).
//! [`validate_group_configs`] checks a complete new set the way Kafka's controller does
//! (`GroupConfig.validate`: names, then every key parsed, keys not in the set taking
//! `GroupConfig`'s own defaults, then the bounds and cross-key rules in Kafka's order and
//! with its messages); [`describe_group`] renders DescribeConfigs entries as
//! `ConfigHelper.createGroupConfigEntry` does (source GROUP_CONFIG for a set key, else
//! DEFAULT_CONFIG with the broker's value; one synonym, the key itself). Only the
//! `consumer.*` keys change behaviour in Skiff (the KIP-848 coordinator); the `share.*` and
//! `streams.*` keys are stored and described, for the share and streams groups Skiff does not
//! have yet. Pure functions.

use std::collections::BTreeMap;

use crate::broker::BrokerConfig;
use crate::describe::{ConfigSource, DescribeEntry, SynonymEntry};
use crate::error::ConfigError;
use crate::keys::ConfigType;

/// The value rule of one key.
#[derive(Clone, Copy, Debug)]
enum Rule {
    /// An int, at least this.
    IntAtLeast(i64),
    /// One of these strings (case-sensitive, as Kafka's `ValidString`).
    OneOf(&'static [&'static str]),
    /// `earliest`, `latest` or `by_duration:<ISO-8601 duration, not negative>`.
    ShareAutoOffsetReset,
}

/// One group config key.
#[derive(Clone, Copy, Debug)]
pub struct GroupKey {
    pub name: &'static str,
    pub config_type: ConfigType,
    /// The broker key whose value is this key's default.
    pub broker_default: &'static str,
    /// `GroupConfig`'s own default (used for keys not set when validating a set, as Kafka).
    default: &'static str,
    rule: Rule,
    pub documentation: &'static str,
}

const fn int(
    name: &'static str,
    broker_default: &'static str,
    default: &'static str,
    min: i64,
    documentation: &'static str,
) -> GroupKey {
    GroupKey {
        name,
        config_type: ConfigType::Int,
        broker_default,
        default,
        rule: Rule::IntAtLeast(min),
        documentation,
    }
}

/// Kafka 4.1's group config keys, sorted by name (DescribeConfigs order).
pub const GROUP_KEYS: [GroupKey; 10] = [
    int(
        "consumer.heartbeat.interval.ms",
        "group.consumer.heartbeat.interval.ms",
        "5000",
        1,
        "The heartbeat interval given to the members of a consumer group.",
    ),
    int(
        "consumer.session.timeout.ms",
        "group.consumer.session.timeout.ms",
        "45000",
        1,
        "The timeout to detect client failures when using the consumer group protocol.",
    ),
    GroupKey {
        name: "share.auto.offset.reset",
        config_type: ConfigType::String,
        broker_default: "",
        default: "latest",
        rule: Rule::ShareAutoOffsetReset,
        documentation: "The strategy to initialize the share-partition start offset.",
    },
    int(
        "share.heartbeat.interval.ms",
        "group.share.heartbeat.interval.ms",
        "5000",
        1,
        "The heartbeat interval given to the members of a share group.",
    ),
    GroupKey {
        name: "share.isolation.level",
        config_type: ConfigType::String,
        broker_default: "",
        default: "read_uncommitted",
        rule: Rule::OneOf(&["read_committed", "read_uncommitted"]),
        documentation: "Controls how to read records written transactionally.",
    },
    int(
        "share.record.lock.duration.ms",
        "group.share.record.lock.duration.ms",
        "30000",
        1000,
        "The record acquisition lock duration in milliseconds for share groups.",
    ),
    int(
        "share.session.timeout.ms",
        "group.share.session.timeout.ms",
        "45000",
        1,
        "The timeout to detect client failures when using the share group protocol.",
    ),
    int(
        "streams.heartbeat.interval.ms",
        "group.streams.heartbeat.interval.ms",
        "5000",
        1,
        "The heartbeat interval given to the members.",
    ),
    int(
        "streams.num.standby.replicas",
        "group.streams.num.standby.replicas",
        "0",
        0,
        "The number of standby replicas for each task.",
    ),
    int(
        "streams.session.timeout.ms",
        "group.streams.session.timeout.ms",
        "45000",
        1,
        "The timeout to detect client failures when using the streams group protocol.",
    ),
];

/// The group config key `name`, if it is one.
pub fn group_key(name: &str) -> Option<&'static GroupKey> {
    GROUP_KEYS.iter().find(|k| k.name == name)
}

/// Bounds checked after parsing, in Kafka's order: (key, broker key, at least?).
const BOUNDS: [(&str, &str, bool); 15] = [
    (
        "consumer.heartbeat.interval.ms",
        "group.consumer.min.heartbeat.interval.ms",
        true,
    ),
    (
        "consumer.heartbeat.interval.ms",
        "group.consumer.max.heartbeat.interval.ms",
        false,
    ),
    (
        "consumer.session.timeout.ms",
        "group.consumer.min.session.timeout.ms",
        true,
    ),
    (
        "consumer.session.timeout.ms",
        "group.consumer.max.session.timeout.ms",
        false,
    ),
    (
        "share.heartbeat.interval.ms",
        "group.share.min.heartbeat.interval.ms",
        true,
    ),
    (
        "share.heartbeat.interval.ms",
        "group.share.max.heartbeat.interval.ms",
        false,
    ),
    (
        "share.session.timeout.ms",
        "group.share.min.session.timeout.ms",
        true,
    ),
    (
        "share.session.timeout.ms",
        "group.share.max.session.timeout.ms",
        false,
    ),
    (
        "share.record.lock.duration.ms",
        "group.share.min.record.lock.duration.ms",
        true,
    ),
    (
        "share.record.lock.duration.ms",
        "group.share.max.record.lock.duration.ms",
        false,
    ),
    (
        "streams.heartbeat.interval.ms",
        "group.streams.min.heartbeat.interval.ms",
        true,
    ),
    (
        "streams.heartbeat.interval.ms",
        "group.streams.max.heartbeat.interval.ms",
        false,
    ),
    (
        "streams.session.timeout.ms",
        "group.streams.min.session.timeout.ms",
        true,
    ),
    (
        "streams.session.timeout.ms",
        "group.streams.max.session.timeout.ms",
        false,
    ),
    (
        "streams.num.standby.replicas",
        "group.streams.max.standby.replicas",
        false,
    ),
];

/// Session timeouts that must exceed heartbeat intervals, in Kafka's order.
const SESSION_OVER_HEARTBEAT: [(&str, &str); 3] = [
    (
        "consumer.session.timeout.ms",
        "consumer.heartbeat.interval.ms",
    ),
    ("share.session.timeout.ms", "share.heartbeat.interval.ms"),
    (
        "streams.session.timeout.ms",
        "streams.heartbeat.interval.ms",
    ),
];

/// Checks a group's complete new config set. Every error is INVALID_CONFIG with Kafka's
/// message. Returns the set with values trimmed (what is stored).
pub fn validate_group_configs(
    broker: &BrokerConfig,
    set: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, ConfigError> {
    for name in set.keys() {
        if group_key(name).is_none() {
            return Err(ConfigError::InvalidTopicConfig(format!(
                "Unknown group config name: {name}"
            )));
        }
    }
    let mut ints: BTreeMap<&str, i64> = BTreeMap::new();
    for k in &GROUP_KEYS {
        let raw = set.get(k.name).map_or(k.default, String::as_str);
        let v = raw.trim();
        match k.rule {
            Rule::IntAtLeast(min) => {
                let Ok(n) = v.parse::<i32>() else {
                    return Err(ConfigError::invalid(
                        k.name,
                        raw,
                        "Not a number of type INT",
                    ));
                };
                if i64::from(n) < min {
                    return Err(ConfigError::invalid(
                        k.name,
                        v,
                        format!("Value must be at least {min}"),
                    ));
                }
                ints.insert(k.name, i64::from(n));
            }
            Rule::OneOf(allowed) => {
                if !allowed.contains(&v) {
                    return Err(ConfigError::invalid(
                        k.name,
                        v,
                        format!("String must be one of: {}", allowed.join(", ")),
                    ));
                }
            }
            Rule::ShareAutoOffsetReset => {
                if !valid_share_auto_offset_reset(v) {
                    return Err(ConfigError::invalid(
                        k.name,
                        v,
                        format!(
                            "Invalid value `{v}` for configuration {}. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.",
                            k.name
                        ),
                    ));
                }
            }
        }
    }
    for (key, bound, at_least) in BOUNDS {
        let (Some(v), Some(b)) = (ints.get(key), broker.get_i64(bound)) else {
            continue;
        };
        let broken = if at_least { *v < b } else { *v > b };
        if broken {
            let relation = if at_least {
                "greater than or equal to"
            } else {
                "less than or equal to"
            };
            return Err(ConfigError::InvalidTopicConfig(format!(
                "{key} must be {relation} {bound}"
            )));
        }
    }
    for (session, heartbeat) in SESSION_OVER_HEARTBEAT {
        if let (Some(s), Some(h)) = (ints.get(session), ints.get(heartbeat))
            && s <= h
        {
            return Err(ConfigError::InvalidTopicConfig(format!(
                "{session} must be greater than {heartbeat}"
            )));
        }
    }
    Ok(set
        .iter()
        .map(|(k, v)| (k.clone(), v.trim().to_string()))
        .collect())
}

/// The value a group uses for `key`: its own, else the broker's counterpart, else Kafka's.
pub fn group_value(
    broker: &BrokerConfig,
    set: &BTreeMap<String, String>,
    key: &GroupKey,
) -> String {
    set.get(key.name)
        .map(|v| v.trim().to_string())
        .or_else(|| {
            (!key.broker_default.is_empty())
                .then(|| broker.value(key.broker_default))
                .flatten()
        })
        .unwrap_or_else(|| key.default.to_string())
}

/// DescribeConfigs entries of a group with these configs: every group key.
pub fn describe_group(broker: &BrokerConfig, set: &BTreeMap<String, String>) -> Vec<DescribeEntry> {
    GROUP_KEYS
        .iter()
        .map(|k| {
            let value = Some(group_value(broker, set, k));
            let source = if set.contains_key(k.name) {
                ConfigSource::GroupConfig
            } else {
                ConfigSource::DefaultConfig
            };
            DescribeEntry {
                name: k.name.to_string(),
                value: value.clone(),
                source,
                read_only: false,
                sensitive: false,
                synonyms: vec![SynonymEntry {
                    name: k.name.to_string(),
                    value,
                    source,
                }],
                config_type: k.config_type,
                documentation: k.documentation,
            }
        })
        .collect()
}

fn valid_share_auto_offset_reset(v: &str) -> bool {
    match v {
        "earliest" | "latest" => true,
        _ => v
            .strip_prefix("by_duration:")
            .and_then(iso8601_duration_seconds)
            .is_some_and(|s| s >= 0.0),
    }
}

/// Java's `Duration.parse` (`[-+]PnDTnHnMn.nS`, letters in either case): the duration in
/// seconds, or None when it does not parse.
fn iso8601_duration_seconds(text: &str) -> Option<f64> {
    let upper = text.to_ascii_uppercase();
    let (negative, rest) = match upper.as_bytes().first() {
        Some(b'-') => (true, &upper[1..]),
        Some(b'+') => (false, &upper[1..]),
        _ => (false, upper.as_str()),
    };
    let rest = rest.strip_prefix('P')?;
    let (date, time) = match rest.split_once('T') {
        Some((d, t)) => {
            if t.is_empty() {
                return None;
            }
            (d, Some(t))
        }
        None => (rest, None),
    };
    let mut total = 0.0;
    let mut any = false;
    if !date.is_empty() {
        let days = date.strip_suffix('D')?;
        total += signed_int(days)? * 86_400.0;
        any = true;
    }
    if let Some(mut t) = time {
        for (unit, scale) in [('H', 3_600.0), ('M', 60.0)] {
            if let Some(i) = t.find(unit) {
                total += signed_int(&t[..i])? * scale;
                t = &t[i + 1..];
                any = true;
            }
        }
        if !t.is_empty() {
            let secs = t.strip_suffix('S')?;
            let (whole, frac) = match secs.split_once(['.', ',']) {
                Some((w, f)) => (w, f),
                None => (secs, ""),
            };
            if frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let w = signed_int(whole)?;
            let f = if frac.is_empty() {
                0.0
            } else {
                frac.parse::<f64>().ok()? / 10f64.powi(i32::try_from(frac.len()).ok()?)
            };
            total += if whole.starts_with('-') { w - f } else { w + f };
            any = true;
        }
    }
    if !any {
        return None;
    }
    Some(if negative { -total } else { total })
}

fn signed_int(s: &str) -> Option<f64> {
    let digits = s.strip_prefix(['-', '+']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse::<i64>().ok().map(|v| v as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// The messages Apache Kafka 4.1.1 answers (asked with confluent-kafka, 2026-12-04).
    #[test]
    fn validation_follows_kafka() {
        let b = BrokerConfig::defaults().unwrap();
        let cases: &[(&str, &str, Option<&str>)] = &[
            ("consumer.session.timeout.ms", "50000", None),
            ("consumer.session.timeout.ms", " 50000 ", None),
            ("consumer.heartbeat.interval.ms", "15000", None),
            ("share.auto.offset.reset", "by_duration:PT1H", None),
            ("share.auto.offset.reset", "by_duration:P1DT2H3M4.5S", None),
            ("streams.num.standby.replicas", "2", None),
            (
                "consumer.session.timeout.ms",
                "70000",
                Some(
                    "consumer.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms",
                ),
            ),
            (
                "consumer.heartbeat.interval.ms",
                "1000",
                Some(
                    "consumer.heartbeat.interval.ms must be greater than or equal to group.consumer.min.heartbeat.interval.ms",
                ),
            ),
            (
                "nosuch.key",
                "1",
                Some("Unknown group config name: nosuch.key"),
            ),
            (
                "consumer.session.timeout.ms",
                "abc",
                Some(
                    "Invalid value abc for configuration consumer.session.timeout.ms: Not a number of type INT",
                ),
            ),
            (
                "consumer.session.timeout.ms",
                "",
                Some(
                    "Invalid value  for configuration consumer.session.timeout.ms: Not a number of type INT",
                ),
            ),
            (
                "consumer.session.timeout.ms",
                "0",
                Some(
                    "Invalid value 0 for configuration consumer.session.timeout.ms: Value must be at least 1",
                ),
            ),
            (
                "share.auto.offset.reset",
                "by_duration:-PT1H",
                Some(
                    "Invalid value by_duration:-PT1H for configuration share.auto.offset.reset: Invalid value `by_duration:-PT1H` for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.",
                ),
            ),
            (
                "share.auto.offset.reset",
                "EARLIEST",
                Some(
                    "Invalid value EARLIEST for configuration share.auto.offset.reset: Invalid value `EARLIEST` for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.",
                ),
            ),
            (
                "share.isolation.level",
                "READ_COMMITTED",
                Some(
                    "Invalid value READ_COMMITTED for configuration share.isolation.level: String must be one of: read_committed, read_uncommitted",
                ),
            ),
            (
                "streams.num.standby.replicas",
                "-1",
                Some(
                    "Invalid value -1 for configuration streams.num.standby.replicas: Value must be at least 0",
                ),
            ),
            (
                "streams.num.standby.replicas",
                "3",
                Some(
                    "streams.num.standby.replicas must be less than or equal to group.streams.max.standby.replicas",
                ),
            ),
            (
                "share.record.lock.duration.ms",
                "500",
                Some(
                    "Invalid value 500 for configuration share.record.lock.duration.ms: Value must be at least 1000",
                ),
            ),
            (
                "share.record.lock.duration.ms",
                "70000",
                Some(
                    "share.record.lock.duration.ms must be less than or equal to group.share.max.record.lock.duration.ms",
                ),
            ),
            (
                "share.session.timeout.ms",
                "40000",
                Some(
                    "share.session.timeout.ms must be greater than or equal to group.share.min.session.timeout.ms",
                ),
            ),
            (
                "streams.heartbeat.interval.ms",
                "1000",
                Some(
                    "streams.heartbeat.interval.ms must be greater than or equal to group.streams.min.heartbeat.interval.ms",
                ),
            ),
        ];
        for (k, v, want) in cases {
            let got = validate_group_configs(&b, &set(&[(k, v)]));
            match want {
                None => assert_eq!(got.unwrap()[*k], v.trim(), "{k}={v}"),
                Some(m) => assert_eq!(got.unwrap_err().to_string(), *m, "{k}={v}"),
            }
        }
    }

    #[test]
    fn session_must_exceed_heartbeat() {
        let b = BrokerConfig::defaults().unwrap();
        let mut s = BTreeMap::new();
        s.insert(
            "group.consumer.min.session.timeout.ms".into(),
            "1000".into(),
        );
        s.insert(
            "group.consumer.max.heartbeat.interval.ms".into(),
            "30000".into(),
        );
        let wide = b
            .with_dynamic(crate::DynamicConfigs {
                cluster_default: s,
                ..Default::default()
            })
            .unwrap();
        let e = validate_group_configs(
            &wide,
            &set(&[
                ("consumer.session.timeout.ms", "20000"),
                ("consumer.heartbeat.interval.ms", "20000"),
            ]),
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms"
        );
    }

    #[test]
    fn describe_shows_defaults_from_the_broker_and_set_keys_as_group_config() {
        let b = BrokerConfig::defaults().unwrap();
        let e = describe_group(&b, &set(&[("consumer.session.timeout.ms", "50000")]));
        assert_eq!(e.len(), 10);
        let s = e
            .iter()
            .find(|e| e.name == "consumer.session.timeout.ms")
            .unwrap();
        assert_eq!((s.value.as_deref(), s.source.id()), (Some("50000"), 8));
        let h = e
            .iter()
            .find(|e| e.name == "consumer.heartbeat.interval.ms")
            .unwrap();
        assert_eq!((h.value.as_deref(), h.source.id()), (Some("5000"), 5));
        assert_eq!(h.synonyms.len(), 1);
        let r = e
            .iter()
            .find(|e| e.name == "share.auto.offset.reset")
            .unwrap();
        assert_eq!(r.value.as_deref(), Some("latest"));
    }

    #[test]
    fn iso8601_durations() {
        for (t, want) in [
            ("PT1H", Some(3600.0)),
            ("pt1m", Some(60.0)),
            ("P2D", Some(172_800.0)),
            ("PT0.5S", Some(0.5)),
            ("-PT1S", Some(-1.0)),
            ("PT-1H", Some(-3600.0)),
            ("P", None),
            ("PT", None),
            ("P1H", None),
            ("xx", None),
            ("PT1.1234567890S", None),
        ] {
            assert_eq!(iso8601_duration_seconds(t), want, "{t}");
        }
    }
}
