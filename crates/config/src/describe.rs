//! DescribeConfigs entries, built exactly the way a Kafka 4.x KRaft broker builds them
//! (`ConfigHelper.createBrokerConfigEntry` / `createTopicConfigEntry`).
//!
//! Mental model: an entry's synonyms are every layer that sets the key or one of its broker
//! synonyms, in the order dynamic-broker, dynamic-default, static, default (each layer walks
//! the synonym list in order), with the leading entries before the described name dropped.
//! The entry's source is its first synonym's source, or DEFAULT_CONFIG. Topic entries put the
//! topic override first. Sensitive (password) entries carry no value. Pure functions of a
//! [`BrokerConfig`].

use std::collections::BTreeMap;

use crate::broker::BrokerConfig;
use crate::keys::{self, ConfigType, KeySpec};

/// Kafka's `DescribeConfigsResponse.ConfigSource` ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ConfigSource {
    DynamicTopicConfig = 1,
    DynamicBrokerConfig = 2,
    DynamicDefaultBrokerConfig = 3,
    StaticBrokerConfig = 4,
    DefaultConfig = 5,
    /// A group's own config (ConfigResource GROUP).
    GroupConfig = 8,
}

impl ConfigSource {
    pub fn id(self) -> i8 {
        self as i8
    }
}

/// One synonym of a described entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SynonymEntry {
    pub name: String,
    pub value: Option<String>,
    pub source: ConfigSource,
}

/// One DescribeConfigs result entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DescribeEntry {
    pub name: String,
    pub value: Option<String>,
    pub source: ConfigSource,
    pub read_only: bool,
    pub sensitive: bool,
    pub synonyms: Vec<SynonymEntry>,
    pub config_type: ConfigType,
    pub documentation: &'static str,
}

/// Kafka's `DynamicBrokerConfig.brokerConfigSynonyms` for catalogue keys.
fn broker_synonyms(name: &str) -> Vec<&'static str> {
    const GROUPS: &[&[&str]] = &[
        &["log.roll.ms", "log.roll.hours"],
        &["log.roll.jitter.ms", "log.roll.jitter.hours"],
        &["log.flush.interval.ms", "log.flush.scheduler.interval.ms"],
        &[
            "log.retention.ms",
            "log.retention.minutes",
            "log.retention.hours",
        ],
    ];
    for g in GROUPS {
        // log.flush.scheduler.interval.ms alone is not in a group (Kafka matches only
        // log.flush.interval.ms there).
        if g.contains(&name) && name != "log.flush.scheduler.interval.ms" {
            return g.to_vec();
        }
    }
    keys::broker_key(name)
        .map(|k| vec![k.name])
        .unwrap_or_default()
}

/// Kafka's `configSynonyms`: layers in precedence order, then drop entries before `name`.
fn config_synonyms(
    cfg: &BrokerConfig,
    name: &str,
    synonyms: &[&str],
    sensitive: bool,
) -> Vec<SynonymEntry> {
    let mut out = Vec::new();
    let dynamic = cfg.dynamic();
    let layers: [(&BTreeMap<String, String>, ConfigSource); 3] = [
        (&dynamic.per_broker, ConfigSource::DynamicBrokerConfig),
        (
            &dynamic.cluster_default,
            ConfigSource::DynamicDefaultBrokerConfig,
        ),
        (cfg.static_values(), ConfigSource::StaticBrokerConfig),
    ];
    for (map, source) in layers {
        for s in synonyms {
            if let Some(v) = map.get(*s) {
                out.push(SynonymEntry {
                    name: s.to_string(),
                    value: if sensitive { None } else { Some(v.clone()) },
                    source,
                });
            }
        }
    }
    for s in synonyms {
        if let Some(v) = keys::broker_key(s).and_then(|k| k.default) {
            out.push(SynonymEntry {
                name: s.to_string(),
                value: if sensitive { None } else { Some(v.to_string()) },
                source: ConfigSource::DefaultConfig,
            });
        }
    }
    let first = out.iter().position(|s| s.name == name).unwrap_or(out.len());
    out.split_off(first)
}

fn broker_entry(cfg: &BrokerConfig, spec: &KeySpec, per_broker: bool) -> DescribeEntry {
    let sensitive = spec.sensitive();
    let mut synonyms = config_synonyms(cfg, spec.name, &broker_synonyms(spec.name), sensitive);
    if !per_broker {
        synonyms.retain(|s| s.source == ConfigSource::DynamicDefaultBrokerConfig);
    }
    let value = if per_broker {
        cfg.value(spec.name)
    } else {
        cfg.dynamic().cluster_default.get(spec.name).cloned()
    };
    DescribeEntry {
        name: spec.name.to_string(),
        value: if sensitive { None } else { value },
        source: synonyms
            .first()
            .map(|s| s.source)
            .unwrap_or(ConfigSource::DefaultConfig),
        read_only: spec.read_only(),
        sensitive,
        synonyms,
        config_type: spec.config_type,
        documentation: spec.doc,
    }
}

impl BrokerConfig {
    /// DescribeConfigs for this broker (BROKER resource named with its id): every key.
    pub fn describe_broker(&self) -> Vec<DescribeEntry> {
        let mut v: Vec<DescribeEntry> = keys::all_broker_keys()
            .map(|k| broker_entry(self, k, true))
            .collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v
    }

    /// DescribeConfigs for the cluster default (BROKER resource with an empty name): only the
    /// keys set in the dynamic cluster-default layer.
    pub fn describe_cluster_default(&self) -> Vec<DescribeEntry> {
        self.dynamic()
            .cluster_default
            .keys()
            .filter_map(|k| keys::broker_key(k))
            .map(|k| broker_entry(self, k, false))
            .collect()
    }

    /// DescribeConfigs for a topic with these overrides: every topic key.
    pub fn describe_topic(&self, overrides: &BTreeMap<String, String>) -> Vec<DescribeEntry> {
        keys::TOPIC_KEYS
            .iter()
            .map(|t| {
                let sensitive = t.config_type == ConfigType::Password;
                let value = overrides
                    .get(t.name)
                    .map(|v| v.trim().to_string())
                    .or_else(|| self.topic_default(t.name));
                let mut synonyms = match t.synonyms.first() {
                    Some(primary) => {
                        let names = broker_synonyms(primary.name);
                        config_synonyms(self, primary.name, &names, sensitive)
                    }
                    None => Vec::new(),
                };
                if overrides.contains_key(t.name) {
                    synonyms.insert(
                        0,
                        SynonymEntry {
                            name: t.name.to_string(),
                            value: if sensitive { None } else { value.clone() },
                            source: ConfigSource::DynamicTopicConfig,
                        },
                    );
                }
                DescribeEntry {
                    name: t.name.to_string(),
                    value: if sensitive { None } else { value },
                    source: synonyms
                        .first()
                        .map(|s| s.source)
                        .unwrap_or(ConfigSource::DefaultConfig),
                    read_only: false,
                    sensitive,
                    synonyms,
                    config_type: t.config_type,
                    documentation: t.doc,
                }
            })
            .collect()
    }
}
