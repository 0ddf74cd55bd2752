//! What AlterConfigs (33) and IncrementalAlterConfigs (44) share: resolving a resource, Kafka's
//! request-level checks, and validating + persisting + applying one resource's new config set.
//!
//! Mental model: both APIs turn each resource into its complete new key set (a topic's
//! overrides, or one dynamic broker layer: the cluster-wide default for the name "", this
//! broker's own for its id), then go through the same steps, in Kafka's order:
//! 1. request checks (`ConfigAdminManager.preprocess`): a resource named twice ->
//!    INVALID_REQUEST "Each resource must appear at most once." for both; a key named twice ->
//!    "Error due to duplicate config keys"; a null value where one is needed -> "Null value not
//!    supported for : k1, k2"; a broker name that is not this node -> INVALID_REQUEST;
//! 2. validation: topic sets through the config layer (unknown keys, values, cross-key rules ->
//!    INVALID_CONFIG with the precise message), then the topic must exist
//!    (UNKNOWN_TOPIC_OR_PARTITION "The topic 't' does not exist."); broker layers through
//!    `skiff_config::validate_alter_all` (read-only keys -> INVALID_REQUEST naming them and
//!    saying a restart is needed; cluster-default changes of per-broker keys refused);
//! 3. unless `validate_only`: the new set is written to the metadata log (fsynced), then takes
//!    effect at once: topic changes update that topic's live logs, broker-layer changes install
//!    the new [`crate::live_config::LiveConfig`] snapshot and update every live log whose
//!    effective settings derive from broker defaults.
//!
//! GROUP resources (32) are a group's own configs (`skiff_config::group`): validated as a
//! complete set against the broker's bounds, then written to the metadata log; no name check
//! beyond "not empty" and no existence check (Kafka stores configs of groups to come).
//!
//! Authorization (issue 19, Kafka's `ConfigHelper` / `authorizeAlterResource`):
//! [`config_authz`] per resource: TOPIC needs DESCRIBE_CONFIGS / ALTER_CONFIGS on the topic
//! (TOPIC_AUTHORIZATION_FAILED), GROUP on the group (GROUP_AUTHORIZATION_FAILED), BROKER,
//! BROKER_LOGGER and CLIENT_METRICS on the cluster (CLUSTER_AUTHORIZATION_FAILED), with
//! Kafka's default messages, before any other check of the resource.
//!
//! Thread-safety: one writer at a time (the live config's alter lock, or a process-wide lock
//! for brokers without a live config), held from reading the current set to applying the new
//! one, so concurrent alters never lose each other's keys.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use parking_lot::MutexGuard;
use skiff_config::{AlterTarget, BrokerConfig, ConfigError, validate_alter_all};
use skiff_metadata::TopicInfo;
use skiff_types::ErrorCode;

use crate::broker::{Broker, TopicError};
use crate::live_config::{CLUSTER_DEFAULT_RESOURCE, LiveConfig};

/// Kafka's `ConfigResource.Type` ids.
pub(crate) const RESOURCE_TOPIC: i8 = 2;
pub(crate) const RESOURCE_BROKER: i8 = 4;
pub(crate) const RESOURCE_GROUP: i8 = 32;

pub(crate) const RESOURCE_BROKER_LOGGER: i8 = 8;
pub(crate) const RESOURCE_CLIENT_METRICS: i8 = 16;

/// May this request describe (`op` DESCRIBE_CONFIGS) or alter (ALTER_CONFIGS) the config
/// resource `(resource_type, name)`? Refused: Kafka's code and message. Resource types Kafka
/// does not authorize here pass (their own checks refuse them).
pub(crate) fn config_authz(
    authz: &super::authz_ops::Checker<'_>,
    op: skiff_auth::acl::AclOperation,
    resource_type: i8,
    name: &str,
) -> Result<(), TopicError> {
    use skiff_auth::acl::ResourceType;
    let (allowed, code, message) = match resource_type {
        RESOURCE_TOPIC => (
            authz.allows(op, ResourceType::Topic, name),
            ErrorCode::TopicAuthorizationFailed,
            "Topic authorization failed.",
        ),
        RESOURCE_GROUP => (
            authz.allows(op, ResourceType::Group, name),
            ErrorCode::GroupAuthorizationFailed,
            "Group authorization failed.",
        ),
        RESOURCE_BROKER | RESOURCE_BROKER_LOGGER | RESOURCE_CLIENT_METRICS => (
            authz.cluster(op),
            ErrorCode::ClusterAuthorizationFailed,
            "Cluster authorization failed.",
        ),
        _ => return Ok(()),
    };
    if allowed {
        Ok(())
    } else {
        Err(TopicError::new(code, message))
    }
}

/// Holds off other config changes while alive.
pub(crate) fn alter_guard(broker: &Broker) -> MutexGuard<'_, ()> {
    broker.alter_guard()
}

pub(crate) fn config_error(e: &ConfigError) -> TopicError {
    TopicError::new(e.error_code(), e.to_string())
}

/// The target of a BROKER resource name: "" = the cluster default, this node's id = this
/// broker. `describe` selects DescribeConfigs' wording for a foreign id.
pub(crate) fn broker_target(
    name: &str,
    node_id: i32,
    describe: bool,
) -> Result<AlterTarget, TopicError> {
    if name.is_empty() {
        return Ok(AlterTarget::ClusterDefault);
    }
    let Ok(id) = name.trim().parse::<i32>() else {
        return Err(TopicError::new(
            ErrorCode::InvalidRequest,
            format!("Node id must be an integer, but it is: {name}"),
        ));
    };
    if id != node_id {
        let expected = if describe {
            format!("{node_id} or empty string")
        } else {
            node_id.to_string()
        };
        return Err(TopicError::new(
            ErrorCode::InvalidRequest,
            format!("Unexpected broker id, expected {expected}, but received {name}"),
        ));
    }
    Ok(AlterTarget::Broker)
}

/// Indexes of resources that appear more than once (by type and name).
pub(crate) fn duplicate_resources<'a>(
    resources: impl Iterator<Item = (i8, &'a str)>,
) -> HashSet<usize> {
    let mut first: HashMap<(i8, &str), usize> = HashMap::new();
    let mut dup = HashSet::new();
    for (i, key) in resources.enumerate() {
        if let Some(j) = first.insert(key, i) {
            dup.insert(i);
            dup.insert(j);
        }
    }
    dup
}

pub(crate) fn duplicate_resource_error() -> TopicError {
    TopicError::new(
        ErrorCode::InvalidRequest,
        "Each resource must appear at most once.",
    )
}

/// Kafka's per-resource key checks: no key twice, no null value in `nulls`.
pub(crate) fn check_keys<'a>(
    names: impl Iterator<Item = &'a str>,
    nulls: &[&str],
) -> Result<(), TopicError> {
    let mut seen = HashSet::new();
    for n in names {
        if !seen.insert(n) {
            return Err(TopicError::new(
                ErrorCode::InvalidRequest,
                "Error due to duplicate config keys",
            ));
        }
    }
    if !nulls.is_empty() {
        return Err(TopicError::new(
            ErrorCode::InvalidRequest,
            format!("Null value not supported for : {}", nulls.join(", ")),
        ));
    }
    Ok(())
}

/// A topic resource name that may be altered ("" and invalid names are refused).
pub(crate) fn check_topic_name(name: &str) -> Result<(), TopicError> {
    if name.is_empty() {
        return Err(TopicError::new(
            ErrorCode::InvalidRequest,
            "Default topic resources are not allowed.",
        ));
    }
    skiff_metadata::validate_topic_name(name)
        .map_err(|e| TopicError::new(e.error_code(), e.to_string()))
}

/// A topic's current overrides (empty for an unknown topic).
pub(crate) fn topic_overrides(broker: &Broker, name: &str) -> BTreeMap<String, String> {
    broker
        .image()
        .topic(name)
        .map(|t| t.configs.clone())
        .unwrap_or_default()
}

/// A group resource name that may be altered (Kafka's `validateGroupName`).
pub(crate) fn check_group_name(name: &str) -> Result<(), TopicError> {
    if name.is_empty() {
        return Err(TopicError::new(
            ErrorCode::InvalidRequest,
            "Default group resources are not allowed.",
        ));
    }
    Ok(())
}

/// A group's current configs (empty when it has none).
pub(crate) fn group_configs(broker: &Broker, group_id: &str) -> BTreeMap<String, String> {
    broker
        .image()
        .group_configs
        .get(group_id)
        .cloned()
        .unwrap_or_default()
}

/// The broker configuration group configs are bounded by and default to.
pub(crate) fn broker_config_for_groups(broker: &Broker) -> Result<Arc<BrokerConfig>, TopicError> {
    match broker.topic_configs.live() {
        Some(live) => Ok(live.current()),
        None => BrokerConfig::defaults()
            .map(Arc::new)
            .map_err(|e| config_error(&e)),
    }
}

/// Validates a group's complete new config set and, unless `validate_only`, persists it; the
/// group coordinator picks it up from the metadata image on its next call for the group.
pub(crate) fn apply_group(
    broker: &Broker,
    group_id: &str,
    configs: BTreeMap<String, String>,
    validate_only: bool,
) -> Result<(), TopicError> {
    let cfg = broker_config_for_groups(broker)?;
    let configs = skiff_config::group::validate_group_configs(&cfg, &configs)
        .map_err(|e| TopicError::new(ErrorCode::InvalidConfig, e.to_string()))?;
    if validate_only {
        return Ok(());
    }
    broker
        .metadata
        .set_group_configs(group_id, configs)
        .map_err(|e| TopicError::new(e.error_code(), e.to_string()))?;
    tracing::info!(group = group_id, "group configs changed");
    Ok(())
}

/// The live configuration, required for broker resources.
pub(crate) fn require_live(broker: &Broker) -> Result<&LiveConfig, TopicError> {
    broker.topic_configs.live().ok_or_else(|| {
        TopicError::new(
            ErrorCode::InvalidRequest,
            "this broker runs without a dynamic configuration",
        )
    })
}

/// One dynamic broker layer as currently installed.
pub(crate) fn broker_layer(live: &LiveConfig, target: &AlterTarget) -> BTreeMap<String, String> {
    let cfg = live.current();
    match target {
        AlterTarget::ClusterDefault => cfg.dynamic().cluster_default.clone(),
        _ => cfg.dynamic().per_broker.clone(),
    }
}

/// Validates a topic's complete new override set and, unless `validate_only`, persists it and
/// applies it to the topic's live logs.
pub(crate) fn apply_topic(
    broker: &Broker,
    name: &str,
    overrides: BTreeMap<String, String>,
    validate_only: bool,
) -> Result<(), TopicError> {
    let log_config = broker
        .topic_configs
        .log_config(&overrides)
        .map_err(|m| TopicError::new(ErrorCode::InvalidConfig, m))?;
    let image = broker.image();
    let Some(info) = image.topic(name) else {
        return Err(TopicError::new(
            ErrorCode::UnknownTopicOrPartition,
            format!("The topic '{name}' does not exist."),
        ));
    };
    if validate_only {
        return Ok(());
    }
    broker
        .metadata
        .set_topic_configs(name, overrides)
        .map_err(|e| TopicError::new(e.error_code(), e.to_string()))?;
    update_logs(broker, info, &log_config);
    tracing::info!(topic = name, "topic configs changed");
    Ok(())
}

/// Validates a dynamic broker layer's complete new key set (`changed` are the keys this
/// request sets, `None` = removed) and, unless `validate_only`, persists and installs it.
pub(crate) fn apply_broker(
    broker: &Broker,
    live: &LiveConfig,
    target: &AlterTarget,
    layer: BTreeMap<String, String>,
    changed: &[(String, Option<String>)],
    validate_only: bool,
) -> Result<(), TopicError> {
    let refs: Vec<(&str, Option<&str>)> = changed
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_deref()))
        .collect();
    validate_alter_all(target, &refs).map_err(|e| config_error(&e))?;
    let mut dynamic = live.current().dynamic().clone();
    let resource = match target {
        AlterTarget::ClusterDefault => {
            dynamic.cluster_default = layer.clone();
            CLUSTER_DEFAULT_RESOURCE.to_string()
        }
        _ => {
            dynamic.per_broker = layer.clone();
            broker.node_id().to_string()
        }
    };
    let next = live.with_dynamic(dynamic).map_err(|e| config_error(&e))?;
    if validate_only {
        return Ok(());
    }
    broker
        .metadata
        .set_broker_configs(&resource, layer)
        .map_err(|e| TopicError::new(e.error_code(), e.to_string()))?;
    live.install(next);
    let image = broker.image();
    for info in image.topics.values() {
        update_logs(broker, info, &broker.log_config(info));
    }
    tracing::info!(layer = ?target, keys = changed.len(), "dynamic broker configs changed");
    Ok(())
}

fn update_logs(broker: &Broker, info: &TopicInfo, cfg: &skiff_storage::LogConfig) {
    broker.replicas.update_topic_config(info, cfg);
}

/// IncrementalAlterConfigs operation ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    Set,
    Delete,
    Append,
    Subtract,
}

impl Op {
    pub(crate) fn from_id(id: i8) -> Option<Op> {
        match id {
            0 => Some(Op::Set),
            1 => Some(Op::Delete),
            2 => Some(Op::Append),
            3 => Some(Op::Subtract),
            _ => None,
        }
    }

    pub(crate) fn kafka_name(self) -> &'static str {
        match self {
            Op::Set => "SET",
            Op::Delete => "DELETE",
            Op::Append => "APPEND",
            Op::Subtract => "SUBTRACT",
        }
    }
}

/// APPEND/SUBTRACT on a comma-separated list value (Kafka's semantics: empty parts of the old
/// value are dropped, appended parts already present are skipped, each subtracted part
/// removes its first occurrence).
pub(crate) fn list_op(old: Option<&str>, op: Op, value: &str) -> String {
    let mut parts: Vec<&str> = old
        .unwrap_or("")
        .split(',')
        .filter(|s| !s.is_empty())
        .collect();
    for v in value.split(',') {
        match op {
            Op::Append => {
                if !parts.contains(&v) {
                    parts.push(v);
                }
            }
            Op::Subtract => {
                if let Some(i) = parts.iter().position(|p| *p == v) {
                    parts.remove(i);
                }
            }
            Op::Set | Op::Delete => {}
        }
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_ops_follow_kafka() {
        assert_eq!(
            list_op(Some("delete"), Op::Append, "compact"),
            "delete,compact"
        );
        assert_eq!(
            list_op(Some("delete,compact"), Op::Append, "compact"),
            "delete,compact"
        );
        assert_eq!(list_op(None, Op::Append, "a,b"), "a,b");
        assert_eq!(list_op(Some("a,,b"), Op::Subtract, "a"), "b");
        assert_eq!(list_op(Some("a,b,a"), Op::Subtract, "a"), "b,a");
        assert_eq!(list_op(Some("a"), Op::Subtract, "zz"), "a");
    }

    #[test]
    fn broker_names_and_duplicates() {
        assert_eq!(
            broker_target("", 1, false).unwrap(),
            AlterTarget::ClusterDefault
        );
        assert_eq!(broker_target("1", 1, false).unwrap(), AlterTarget::Broker);
        let e = broker_target("2", 1, false).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidRequest);
        assert_eq!(
            e.message,
            "Unexpected broker id, expected 1, but received 2"
        );
        let e = broker_target("2", 1, true).unwrap_err();
        assert_eq!(
            e.message,
            "Unexpected broker id, expected 1 or empty string, but received 2"
        );
        assert!(
            broker_target("x", 1, false)
                .unwrap_err()
                .message
                .contains("integer")
        );
        let d = duplicate_resources([(2, "a"), (4, "a"), (2, "a"), (2, "b")].into_iter());
        assert_eq!(d, HashSet::from([0, 2]));
        assert_eq!(
            check_keys(["a", "b", "a"].into_iter(), &[])
                .unwrap_err()
                .message,
            "Error due to duplicate config keys"
        );
        assert_eq!(
            check_keys(["a", "b"].into_iter(), &["a", "b"])
                .unwrap_err()
                .message,
            "Null value not supported for : a, b"
        );
    }
}
