//! Dynamic configuration layers and the rules for changing them (AlterConfigs /
//! IncrementalAlterConfigs).
//!
//! Mental model: two maps of broker keys set at runtime — the cluster-wide default
//! (`--entity-default`, resource name "") and this broker's own (`--entity-name <id>`). Only
//! dynamic keys may appear; read-only keys are refused with Kafka's message plus the fix.
//! Topic overrides live with the topic (metadata), not here; [`validate_alter`] checks them too.
//! Plain data: the owner keeps it behind its own lock and rebuilds the
//! [`crate::BrokerConfig`] with [`crate::BrokerConfig::with_dynamic`].

use std::collections::BTreeMap;

use crate::error::ConfigError;
use crate::keys::{self, DynamicMode};
use crate::validate;

/// Runtime-set broker keys.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DynamicConfigs {
    pub cluster_default: BTreeMap<String, String>,
    pub per_broker: BTreeMap<String, String>,
}

/// What an alter request targets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AlterTarget {
    /// A topic's overrides.
    Topic,
    /// The cluster-wide broker default (BROKER resource with an empty name).
    ClusterDefault,
    /// One broker (BROKER resource named with its id).
    Broker,
}

/// Checks one key of an alter request. `value` is `None` for a delete/reset.
pub fn validate_alter(
    target: &AlterTarget,
    key: &str,
    value: Option<&str>,
) -> Result<(), ConfigError> {
    validate_alter_all(target, &[(key, value)])
}

/// Checks all keys of one resource in an alter request, reporting every read-only (or
/// per-broker-only) key in one message like Kafka does.
pub fn validate_alter_all(
    target: &AlterTarget,
    changes: &[(&str, Option<&str>)],
) -> Result<(), ConfigError> {
    if *target == AlterTarget::Topic {
        for (k, v) in changes {
            match v {
                Some(v) => validate::check_topic_value(k, v)?,
                None if keys::topic_key(k).is_none() => validate::check_topic_value(k, "")?,
                None => {}
            }
        }
        return Ok(());
    }
    let mut read_only = Vec::new();
    let mut per_broker_only = Vec::new();
    for (k, _) in changes {
        let spec = keys::broker_key(k).ok_or_else(|| ConfigError::UnknownKey {
            key: k.to_string(),
            origin: "the alter request".to_string(),
            suggestion: keys::did_you_mean(k, keys::all_broker_keys().map(|s| s.name))
                .map(str::to_string),
        })?;
        match spec.mode {
            DynamicMode::ReadOnly => read_only.push(k.to_string()),
            DynamicMode::PerBroker if *target == AlterTarget::ClusterDefault => {
                per_broker_only.push(k.to_string())
            }
            _ => {}
        }
    }
    if !read_only.is_empty() {
        return Err(ConfigError::ReadOnly { keys: read_only });
    }
    if !per_broker_only.is_empty() {
        return Err(ConfigError::PerBrokerOnly {
            keys: per_broker_only,
        });
    }
    for (k, v) in changes {
        if let (Some(v), Some(spec)) = (v, keys::broker_key(k)) {
            validate::check_broker_value(spec, v)?;
        }
    }
    Ok(())
}

impl DynamicConfigs {
    /// Applies already-validated changes (`None` removes the key) to one layer.
    pub fn apply(&mut self, target: &AlterTarget, changes: &[(&str, Option<&str>)]) {
        let layer = match target {
            AlterTarget::ClusterDefault => &mut self.cluster_default,
            AlterTarget::Broker => &mut self.per_broker,
            AlterTarget::Topic => return,
        };
        for (k, v) in changes {
            match v {
                Some(v) => {
                    layer.insert(k.to_string(), v.trim().to_string());
                }
                None => {
                    layer.remove(*k);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_only_keys_are_refused_with_kafkas_message() {
        let e = validate_alter(&AlterTarget::Broker, "log.dirs", Some("/x")).unwrap_err();
        assert_eq!(e.error_code(), skiff_types::ErrorCode::InvalidRequest);
        let msg = e.to_string();
        assert!(
            msg.starts_with("Cannot update these configs dynamically: Set(log.dirs)"),
            "{msg}"
        );
        assert!(msg.contains("restart"), "{msg}");
        let e = validate_alter_all(
            &AlterTarget::ClusterDefault,
            &[
                ("num.partitions", Some("3")),
                ("log.retention.hours", Some("1")),
            ],
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("Set(num.partitions, log.retention.hours)"),
            "{e}"
        );
    }

    #[test]
    fn dynamic_keys_are_accepted_and_validated() {
        assert!(
            validate_alter(
                &AlterTarget::ClusterDefault,
                "log.retention.ms",
                Some("1000")
            )
            .is_ok()
        );
        assert!(validate_alter(&AlterTarget::Broker, "log.retention.ms", Some("x")).is_err());
        assert!(
            validate_alter(&AlterTarget::Broker, "listeners", Some("PLAINTEXT://:9092")).is_ok()
        );
        let e = validate_alter(
            &AlterTarget::ClusterDefault,
            "listeners",
            Some("PLAINTEXT://:9092"),
        )
        .unwrap_err();
        assert!(e.to_string().contains("broker id must be specified"), "{e}");
        assert!(validate_alter(&AlterTarget::Broker, "log.retention.hourz", Some("1")).is_err());
    }

    #[test]
    fn topic_alters_validate_values() {
        assert!(validate_alter(&AlterTarget::Topic, "retention.ms", Some("-1")).is_ok());
        assert!(validate_alter(&AlterTarget::Topic, "retention.ms", None).is_ok());
        assert!(validate_alter(&AlterTarget::Topic, "min.insync.replicas", Some("0")).is_err());
        assert!(validate_alter(&AlterTarget::Topic, "no.such", None).is_err());
    }

    #[test]
    fn apply_sets_and_removes() {
        let mut d = DynamicConfigs::default();
        d.apply(
            &AlterTarget::ClusterDefault,
            &[("log.retention.ms", Some("5"))],
        );
        d.apply(&AlterTarget::Broker, &[("log.retention.ms", Some("6"))]);
        assert_eq!(d.cluster_default["log.retention.ms"], "5");
        d.apply(&AlterTarget::Broker, &[("log.retention.ms", None)]);
        assert!(d.per_broker.is_empty());
    }
}
