//! The broker's configuration as it changes at runtime (KIP-226 dynamic configs).
//!
//! Mental model: one [`LiveConfig`] holds the current [`BrokerConfig`] (static layers from the
//! command line and files, plus the two dynamic layers: the cluster-wide default and this
//! broker's own) as an `Arc` snapshot that readers clone cheaply. AlterConfigs and
//! IncrementalAlterConfigs build a new snapshot with [`BrokerConfig::with_dynamic`] and swap it
//! in after the change is durable in the metadata log (`ConfigRecord`s of resource type BROKER,
//! name "" or the node id); at start the persisted layers are loaded back before any partition
//! log is opened, so topic defaults derived from dynamic keys apply from the first append.
//! It is also the broker's [`TopicConfigs`]: a topic's effective settings are the current
//! snapshot's broker defaults overlaid with the topic's overrides.
//!
//! Ownership and threads: the binary creates it and hands it to the server as its
//! `TopicConfigs`; handlers reach it through `TopicConfigs::live`. Parts of the server that
//! read a broker key outside the topic configs follow changes with [`LiveConfig::follow`]
//! (the connection limits: [`follow_connection_limits`]); everything else reads the current
//! snapshot when it needs a value. Readers never block writers
//! for long (an `RwLock` around an `Arc`). Writers additionally take [`LiveConfig::alter_lock`]
//! for their whole read-validate-persist-install sequence, so two concurrent alters of the same
//! layer or topic cannot lose each other's keys.
//!
//! Invariant: the installed dynamic layers hold only keys that passed
//! `skiff_config::validate_alter` for their layer; persisted entries that no longer pass (after
//! an upgrade made a key read-only, say) are skipped with a warning at load.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard, RwLock};
use skiff_config::{AlterTarget, BrokerConfig, ConfigError, DynamicConfigs, validate_alter};
use skiff_metadata::MetadataImage;
use skiff_storage::LogConfig;

use crate::listener::ConnectionLimits;
use crate::settings::{TopicConfigEntry, TopicConfigs};

/// The metadata resource name of the cluster-wide default broker layer.
pub const CLUSTER_DEFAULT_RESOURCE: &str = "";

/// Called with (previous, new) configuration after every install.
type Follower = Box<dyn Fn(&BrokerConfig, &BrokerConfig) + Send + Sync>;

/// The broker configuration with its dynamic layers, changeable at runtime.
pub struct LiveConfig {
    current: RwLock<Arc<BrokerConfig>>,
    alter: Mutex<()>,
    followers: Mutex<Vec<Follower>>,
}

impl std::fmt::Debug for LiveConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveConfig")
            .field("dynamic", self.current().dynamic())
            .field("followers", &self.followers.lock().len())
            .finish()
    }
}

impl LiveConfig {
    pub fn new(config: BrokerConfig) -> Self {
        Self {
            current: RwLock::new(Arc::new(config)),
            alter: Mutex::new(()),
            followers: Mutex::new(Vec::new()),
        }
    }

    /// The current configuration snapshot.
    pub fn current(&self) -> Arc<BrokerConfig> {
        Arc::clone(&self.current.read())
    }

    /// Held by a writer for its whole read-validate-persist-install sequence.
    pub fn alter_lock(&self) -> MutexGuard<'_, ()> {
        self.alter.lock()
    }

    /// Builds the configuration with these dynamic layers without installing it.
    pub fn with_dynamic(&self, dynamic: DynamicConfigs) -> Result<BrokerConfig, ConfigError> {
        self.current().with_dynamic(dynamic)
    }

    /// Installs a configuration built by [`LiveConfig::with_dynamic`], then tells every
    /// follower (previous, new).
    pub fn install(&self, config: BrokerConfig) {
        let new = Arc::new(config);
        let old = std::mem::replace(&mut *self.current.write(), Arc::clone(&new));
        for f in self.followers.lock().iter() {
            f(&old, &new);
        }
    }

    /// Registers `f` to run after every configuration change, with (previous, new).
    pub fn follow(&self, f: impl Fn(&BrokerConfig, &BrokerConfig) + Send + Sync + 'static) {
        self.followers.lock().push(Box::new(f));
    }

    /// Loads the dynamic layers persisted in the metadata image (at start, before the logs
    /// open). Entries that are not valid for their layer are skipped with a warning.
    pub fn load_persisted(&self, image: &MetadataImage, node_id: i32) {
        let node = node_id.to_string();
        let mut dynamic = DynamicConfigs::default();
        for (resource, layer) in &image.broker_configs {
            let (target, into) = if resource == CLUSTER_DEFAULT_RESOURCE {
                (AlterTarget::ClusterDefault, &mut dynamic.cluster_default)
            } else if *resource == node {
                (AlterTarget::Broker, &mut dynamic.per_broker)
            } else {
                continue; // another node's layer
            };
            for (k, v) in layer {
                match validate_alter(&target, k, Some(v)) {
                    Ok(()) => {
                        into.insert(k.clone(), v.clone());
                    }
                    Err(e) => {
                        tracing::warn!(key = %k, value = %v, error = %e, "ignoring a persisted dynamic broker config");
                    }
                }
            }
        }
        if dynamic == DynamicConfigs::default() {
            return;
        }
        match self.with_dynamic(dynamic) {
            Ok(cfg) => {
                tracing::info!(
                    cluster_default = cfg.dynamic().cluster_default.len(),
                    per_broker = cfg.dynamic().per_broker.len(),
                    "dynamic broker configs loaded"
                );
                self.install(cfg);
            }
            Err(e) => {
                tracing::warn!(error = %e, "ignoring the persisted dynamic broker configs");
            }
        }
    }
}

/// Makes `max.connections` and `max.connections.per.ip` follow the dynamic layers: values
/// persisted there apply now (the static ones were applied when `limits` was built), and every
/// later change of either key applies as it is installed.
pub fn follow_connection_limits(live: &LiveConfig, limits: &Arc<ConnectionLimits>) {
    let apply = |old: Option<&BrokerConfig>, new: &BrokerConfig, limits: &ConnectionLimits| {
        let changed = |key: &str| match old {
            Some(old) => old.value(key) != new.value(key),
            None => {
                new.dynamic().cluster_default.contains_key(key)
                    || new.dynamic().per_broker.contains_key(key)
            }
        };
        let count = |v: i32| usize::try_from(v).unwrap_or(1);
        if changed(MAX_CONNECTIONS) {
            tracing::info!(value = new.max_connections(), "max.connections changed");
            limits.set_total_max(count(new.max_connections()));
        }
        if changed(MAX_CONNECTIONS_PER_IP) {
            tracing::info!(
                value = new.max_connections_per_ip(),
                "max.connections.per.ip changed"
            );
            limits.set_per_ip_max(count(new.max_connections_per_ip()));
        }
    };
    apply(None, &live.current(), limits);
    let limits = Arc::clone(limits);
    live.follow(move |old, new| apply(Some(old), new, &limits));
}

const MAX_CONNECTIONS: &str = "max.connections";
const MAX_CONNECTIONS_PER_IP: &str = "max.connections.per.ip";

impl TopicConfigs for LiveConfig {
    fn log_config(&self, overrides: &BTreeMap<String, String>) -> Result<LogConfig, String> {
        self.current()
            .topic_log_config(overrides)
            .map_err(|e| e.to_string())
    }

    fn describe(&self, overrides: &BTreeMap<String, String>) -> Vec<TopicConfigEntry> {
        self.current()
            .describe_topic(overrides)
            .into_iter()
            .map(|e| TopicConfigEntry {
                name: e.name,
                value: e.value,
                read_only: e.read_only,
                source: e.source.id(),
                sensitive: e.sensitive,
            })
            .collect()
    }

    fn live(&self) -> Option<&LiveConfig> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use skiff_config::ConfigSources;

    use super::*;

    fn live(overrides: &[&str]) -> LiveConfig {
        LiveConfig::new(
            BrokerConfig::load(ConfigSources {
                overrides: overrides.iter().map(|s| s.to_string()).collect(),
                ..ConfigSources::default()
            })
            .unwrap(),
        )
    }

    #[test]
    fn dynamic_default_changes_topic_defaults() {
        let l = live(&["log.retention.hours=1"]);
        let none = BTreeMap::new();
        assert_eq!(l.log_config(&none).unwrap().retention_ms, 3_600_000);
        let mut d = DynamicConfigs::default();
        d.cluster_default
            .insert("log.retention.ms".into(), "5000".into());
        l.install(l.with_dynamic(d).unwrap());
        assert_eq!(l.log_config(&none).unwrap().retention_ms, 5000);
        let over = BTreeMap::from([("retention.ms".to_string(), "7".to_string())]);
        assert_eq!(l.log_config(&over).unwrap().retention_ms, 7);
        let described = l.describe(&none);
        let r = described.iter().find(|e| e.name == "retention.ms").unwrap();
        assert_eq!(r.value.as_deref(), Some("5000"));
        assert_eq!(r.source, 3, "DYNAMIC_DEFAULT_BROKER_CONFIG");
    }

    #[test]
    fn persisted_layers_load_for_this_node_only_and_skip_invalid_keys() {
        let l = live(&[]);
        let mut image = MetadataImage::default();
        image.broker_configs.insert(
            String::new(),
            BTreeMap::from([
                ("log.retention.ms".to_string(), "1000".to_string()),
                // read-only: must not be installed
                ("num.partitions".to_string(), "7".to_string()),
            ]),
        );
        image.broker_configs.insert(
            "1".into(),
            BTreeMap::from([("message.max.bytes".to_string(), "2000".to_string())]),
        );
        image.broker_configs.insert(
            "2".into(),
            BTreeMap::from([("message.max.bytes".to_string(), "3000".to_string())]),
        );
        l.load_persisted(&image, 1);
        let cfg = l.current();
        assert_eq!(
            cfg.dynamic().cluster_default,
            BTreeMap::from([("log.retention.ms".to_string(), "1000".to_string())])
        );
        assert_eq!(cfg.value("message.max.bytes").as_deref(), Some("2000"));
        assert_eq!(cfg.num_partitions(), 1);
        assert_eq!(
            l.log_config(&BTreeMap::new()).unwrap().max_message_bytes,
            2000
        );
    }
}
