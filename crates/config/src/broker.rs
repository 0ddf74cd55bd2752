//! [`BrokerConfig`]: the effective broker configuration, built once at startup from
//! [`ConfigSources`] and layered with [`DynamicConfigs`] at runtime.
//!
//! Mental model: four layers per key, highest first — dynamic per-broker, dynamic cluster
//! default (both only for dynamic keys), static (config file < `KAFKA_*` env < `--override`,
//! on top of Skiff's shipped single-node defaults), then Kafka's code default from the key
//! catalogue. Every value is stored as the string the operator wrote; typed accessors parse
//! on read (values were validated on load, so parse failures fall back to the default).
//! The struct is plain data: clone it, or replace it wholesale when dynamic configs change.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::OnceLock;

use parking_lot::Mutex;
use skiff_storage::config::LOG_CONFIG_KEYS;
use skiff_storage::{LogConfig, LogManagerConfig};

use crate::dynamic::DynamicConfigs;
use crate::error::ConfigError;
use crate::keys::{self, KeySpec, Support};
use crate::listeners::{self, Listener};
use crate::sources::{self, ConfigSources, Origin};
use crate::validate;

/// Skiff's defaults where they differ from Kafka's code defaults: a loopback listener and a
/// local data dir, overlaid with Kafka's shipped single-node `server.properties` values.
/// They count as static configuration (as Kafka's shipped file does).
pub const SKIFF_SHIPPED_DEFAULTS: &[(&str, &str)] = &[
    ("listeners", "PLAINTEXT://127.0.0.1:9092"),
    ("log.dirs", "./skiff-data"),
    ("node.id", "1"),
    ("offsets.topic.replication.factor", "1"),
    ("transaction.state.log.replication.factor", "1"),
    ("transaction.state.log.min.isr", "1"),
    ("group.initial.rebalance.delay.ms", "0"),
    ("auto.create.topics.enable", "true"),
];

/// Advertised address when neither `listeners` nor `advertised.listeners` is configured.
pub const DEFAULT_ADVERTISED: &str = "PLAINTEXT://localhost:9092";

/// SASL keys that listener overrides write as `listener.name.<l>.<mechanism>.<key>`.
const LISTENER_MECHANISM_KEYS: &[&str] = &[
    "sasl.jaas.config",
    "sasl.login.callback.handler.class",
    "sasl.login.class",
    "sasl.server.callback.handler.class",
    "connections.max.reauth.ms",
];

/// The effective broker configuration.
#[derive(Clone, Debug)]
pub struct BrokerConfig {
    /// Static values (shipped defaults, then file, env, overrides), by key.
    statics: BTreeMap<String, String>,
    /// Where each operator-supplied static value came from (shipped defaults are absent).
    origins: BTreeMap<String, Origin>,
    /// Accepted keys outside the catalogue (listener overrides, plugin prefixes).
    passthrough: BTreeMap<String, String>,
    dynamic: DynamicConfigs,
    listeners: Vec<Listener>,
    advertised: Vec<Listener>,
    /// Supplied settings that were ignored with a warning (unknown environment variables,
    /// [`WARN_ONLY_KEYS`]).
    ignored: Vec<IgnoredSetting>,
    /// The checked KRaft keys when `process.roles` is set ([`crate::kraft`]).
    kraft: Option<crate::kraft::Kraft>,
}

/// Names outside the catalogue that Kafka warns about instead of refusing (they belong to
/// plugins: Confluent's `confluent.*`). A prefix ends in `.`.
pub const WARN_ONLY_KEYS: &[&str] = &["confluent."];

/// The StandardAuthorizer's own properties (issue 19): accepted outside the catalogue and read
/// by [`crate::security::plan`] when `authorizer.class.name` is set.
pub const AUTHORIZER_KEYS: &[&str] = &["super.users", "allow.everyone.if.no.acl.found"];

fn warn_only(key: &str) -> bool {
    WARN_ONLY_KEYS.iter().any(|w| {
        if w.ends_with('.') {
            key.starts_with(w)
        } else {
            key == *w
        }
    })
}

/// A setting that was supplied and ignored, with the reason; logged at WARN on load.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IgnoredSetting {
    /// The key it maps to.
    pub key: String,
    /// Where it came from: `environment variable KAFKA_X`, `the config file`, `--override`.
    pub source: String,
    /// Why it was ignored, and what may have been meant.
    pub reason: String,
}

fn logged_once() -> &'static Mutex<BTreeSet<String>> {
    static LOGGED: OnceLock<Mutex<BTreeSet<String>>> = OnceLock::new();
    LOGGED.get_or_init(|| Mutex::new(BTreeSet::new()))
}

fn log_not_implemented(key: &str) {
    if logged_once().lock().insert(key.to_string()) {
        tracing::info!(key, "configuration accepted, not implemented by Skiff yet");
    }
}

/// Normalises a value the way Kafka prints it back (booleans lower-case, lists without
/// spaces around commas).
fn normalise(spec: &KeySpec, value: &str) -> String {
    let v = value.trim();
    match spec.config_type {
        keys::ConfigType::Boolean => v.to_ascii_lowercase(),
        keys::ConfigType::List => v
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join(","),
        _ => v.to_string(),
    }
}

/// Classifies a static key: `Ok(Some(spec))` for catalogue keys, `Ok(None)` for accepted
/// passthrough keys, or the unknown-key error with a suggestion.
fn classify(
    key: &str,
    origin: Origin,
    statics: &BTreeMap<String, String>,
) -> Result<Option<&'static KeySpec>, ConfigError> {
    if let Some(spec) = keys::broker_key(key) {
        return Ok(Some(spec));
    }
    if AUTHORIZER_KEYS.contains(&key) {
        return Ok(None);
    }
    if let Some(rest) = key.strip_prefix("listener.name.")
        && let Some((_, base)) = rest.split_once('.')
    {
        let mech_base = base.split_once('.').map(|(_, b)| b).unwrap_or("");
        if keys::broker_key(base).is_some() || LISTENER_MECHANISM_KEYS.contains(&mech_base) {
            return Ok(None);
        }
    }
    let plugin_prefixes = [
        statics
            .get("remote.log.storage.manager.impl.prefix")
            .map(String::as_str)
            .unwrap_or("rsm.config."),
        statics
            .get("remote.log.metadata.manager.impl.prefix")
            .map(String::as_str)
            .unwrap_or("rlmm.config."),
        "config.providers",
    ];
    if plugin_prefixes
        .iter()
        .any(|p| !p.is_empty() && key.starts_with(p))
    {
        return Ok(None);
    }
    let suggestion = keys::topic_key(key)
        .and_then(|t| t.synonyms.first().map(|s| s.name))
        .or_else(|| keys::did_you_mean(key, keys::all_broker_keys().map(|k| k.name)))
        .map(str::to_string);
    Err(ConfigError::UnknownKey {
        key: key.to_string(),
        origin: origin.describe().to_string(),
        suggestion,
    })
}

impl BrokerConfig {
    /// Builds the configuration from its sources with precedence `--override` > `KAFKA_*`
    /// environment > `--config` file > Skiff's shipped defaults > Kafka's defaults.
    pub fn load(sources: ConfigSources) -> Result<BrokerConfig, ConfigError> {
        let sources::Merged {
            values: merged,
            env_vars,
        } = sources::merge(&sources)?;
        let mut statics: BTreeMap<String, String> = SKIFF_SHIPPED_DEFAULTS
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let raw: BTreeMap<String, String> = merged
            .iter()
            .map(|(k, (v, _))| (k.clone(), v.clone()))
            .collect();
        let mut origins = BTreeMap::new();
        let mut passthrough = BTreeMap::new();
        let mut ignored = Vec::new();
        // Logged only once the security check passed: a refused key is never "accepted".
        let mut not_implemented = Vec::new();
        for (key, (value, origin)) in &merged {
            let classified = match classify(key, *origin, &raw) {
                Ok(c) => c,
                Err(e) => {
                    let var = env_vars.get(key);
                    if !(warn_only(key) || var.is_some()) {
                        return Err(e);
                    }
                    let suggestion = match &e {
                        ConfigError::UnknownKey {
                            suggestion: Some(s),
                            ..
                        } => format!("; did you mean `{s}`?"),
                        _ => String::new(),
                    };
                    let setting = IgnoredSetting {
                        key: key.clone(),
                        source: var.map_or_else(
                            || origin.describe().to_string(),
                            |v| format!("environment variable {v}"),
                        ),
                        reason: format!("not a broker configuration Skiff knows{suggestion}"),
                    };
                    tracing::warn!(
                        key = %setting.key,
                        source = %setting.source,
                        "ignoring {}: {}",
                        setting.source,
                        setting.reason
                    );
                    ignored.push(setting);
                    continue;
                }
            };
            match classified {
                Some(spec) => {
                    validate::check_broker_value(spec, value)?;
                    if spec.support == Support::NotImplemented {
                        not_implemented.push(key);
                    }
                    statics.insert(key.clone(), normalise(spec, value));
                    origins.insert(key.clone(), *origin);
                }
                None => {
                    not_implemented.push(key);
                    passthrough.insert(key.clone(), value.clone());
                }
            }
        }
        // log.dir alone replaces the shipped log.dirs default (Kafka reads log.dirs first).
        if origins.contains_key("log.dir") && !origins.contains_key("log.dirs") {
            statics.remove("log.dirs");
        }
        // broker.id is another name for node.id (Kafka copies one to the other); both set
        // must agree, and broker.id alone replaces the shipped node.id.
        match (statics.get("broker.id"), origins.contains_key("node.id")) {
            (Some(b), true) => {
                let n = statics.get("node.id").cloned().unwrap_or_default();
                if b.trim() != n.trim() {
                    return Err(ConfigError::invalid(
                        "broker.id",
                        b,
                        format!("it must equal node.id ({n}) when both are set; set only node.id"),
                    ));
                }
            }
            (Some(b), false) => {
                let b = b.clone();
                statics.insert("node.id".to_string(), b);
            }
            (None, _) => {}
        }
        let mut cfg = BrokerConfig {
            statics,
            origins,
            passthrough,
            dynamic: DynamicConfigs::default(),
            listeners: Vec::new(),
            advertised: Vec::new(),
            ignored,
            kraft: None,
        };
        cfg.resolve_listeners()?;
        cfg.kraft = cfg.check_kraft()?;
        // issue 12 item 2: nothing that demands security Skiff lacks may start.
        crate::security::check(&cfg)?;
        for key in not_implemented {
            log_not_implemented(key);
        }
        Ok(cfg)
    }

    /// Kafka's KRaft rules, then Skiff's refusal of quorums it cannot run yet
    /// ([`crate::kraft`]). `node.id` counts only when set explicitly (Skiff ships `1` for the
    /// single node; Kafka has no default).
    fn check_kraft(&self) -> Result<Option<crate::kraft::Kraft>, ConfigError> {
        let explicit_id =
            self.origins.contains_key("node.id") || self.origins.contains_key("broker.id");
        let roles = self.value("process.roles");
        let voters = self.value("controller.quorum.voters");
        let bootstrap = self.value("controller.quorum.bootstrap.servers");
        let names = self.value("controller.listener.names");
        let input = crate::kraft::Input {
            process_roles: roles.as_deref(),
            node_id: explicit_id.then(|| self.node_id()),
            voters: voters.as_deref(),
            bootstrap_servers: bootstrap.as_deref(),
            controller_listener_names: names.as_deref(),
            listeners: &self.listeners,
        };
        let kraft = crate::kraft::check(&input)?;
        if let Some(k) = &kraft {
            crate::kraft::check_supported(k)?;
        }
        Ok(kraft)
    }

    /// The KRaft configuration, when `process.roles` is set.
    pub fn kraft(&self) -> Option<&crate::kraft::Kraft> {
        self.kraft.as_ref()
    }

    /// A configuration with no file, environment or overrides (Skiff's defaults).
    pub fn defaults() -> Result<BrokerConfig, ConfigError> {
        BrokerConfig::load(ConfigSources::default())
    }

    fn resolve_listeners(&mut self) -> Result<(), ConfigError> {
        let listeners_value = self.value("listeners").unwrap_or_default();
        self.listeners = listeners::parse_listeners("listeners", &listeners_value)?;
        self.advertised = match self.value("advertised.listeners") {
            Some(a) if !a.trim().is_empty() => {
                listeners::parse_advertised("advertised.listeners", &a)?
            }
            _ if !self.origins.contains_key("listeners") => {
                listeners::parse_advertised("advertised.listeners", DEFAULT_ADVERTISED)?
            }
            _ => listeners::advertised_for(&self.listeners),
        };
        Ok(())
    }

    /// Installs new dynamic layers (already validated with [`crate::validate_alter`]).
    pub fn with_dynamic(&self, dynamic: DynamicConfigs) -> Result<BrokerConfig, ConfigError> {
        let mut next = self.clone();
        next.dynamic = dynamic;
        next.resolve_listeners()?;
        // A dynamic layer may not open what the static check closed (e.g. a per-IP override
        // below the limit, or a listener moved to SASL_SSL): same rule as at startup.
        crate::security::check(&next)?;
        Ok(next)
    }

    pub fn dynamic(&self) -> &DynamicConfigs {
        &self.dynamic
    }

    /// Static layer (shipped defaults + operator values).
    pub fn static_values(&self) -> &BTreeMap<String, String> {
        &self.statics
    }

    /// Where an operator-supplied static value came from.
    pub fn origin(&self, key: &str) -> Option<Origin> {
        self.origins.get(key).copied()
    }

    /// Supplied settings ignored with a warning (unknown `KAFKA_*` variables, [`WARN_ONLY_KEYS`]).
    pub fn ignored(&self) -> &[IgnoredSetting] {
        &self.ignored
    }

    /// Accepted keys outside the catalogue (listener overrides, plugin prefixes).
    pub fn passthrough(&self) -> &BTreeMap<String, String> {
        &self.passthrough
    }

    /// The effective value of a broker key: dynamic per-broker > dynamic default > static >
    /// Kafka default. `None` is Kafka's null.
    pub fn value(&self, key: &str) -> Option<String> {
        self.explicit(key).map(|(v, _)| v.to_string()).or_else(|| {
            keys::broker_key(key)
                .and_then(|s| s.default)
                .map(str::to_string)
        })
    }

    /// The value set in some layer (not a Kafka default), with its source.
    pub(crate) fn explicit(&self, key: &str) -> Option<(&str, crate::describe::ConfigSource)> {
        use crate::describe::ConfigSource as S;
        if let Some(v) = self.dynamic.per_broker.get(key) {
            return Some((v, S::DynamicBrokerConfig));
        }
        if let Some(v) = self.dynamic.cluster_default.get(key) {
            return Some((v, S::DynamicDefaultBrokerConfig));
        }
        self.statics
            .get(key)
            .map(|v| (v.as_str(), S::StaticBrokerConfig))
    }

    fn parsed<T: std::str::FromStr>(&self, key: &str, fallback: T) -> T {
        self.value(key)
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(fallback)
    }

    pub fn get_i64(&self, key: &str) -> Option<i64> {
        self.value(key).and_then(|v| v.trim().parse().ok())
    }

    /// A key's value as text, trimmed; `None` when unset or empty.
    pub fn get_str(&self, key: &str) -> Option<String> {
        self.value(key)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    }

    pub fn get_bool(&self, key: &str) -> Option<bool> {
        self.value(key)
            .and_then(|v| v.trim().to_ascii_lowercase().parse().ok())
    }

    /// Bind listeners.
    pub fn listeners(&self) -> &[Listener] {
        &self.listeners
    }

    /// Addresses advertised to clients (never a wildcard host).
    pub fn advertised_listeners(&self) -> &[Listener] {
        &self.advertised
    }

    /// `log.dirs`, else `log.dir`.
    pub fn log_dirs(&self) -> Vec<PathBuf> {
        let v = self
            .explicit("log.dirs")
            .map(|(v, _)| v.to_string())
            .or_else(|| self.value("log.dir"))
            .unwrap_or_default();
        v.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(PathBuf::from)
            .collect()
    }

    /// `node.id`, else `broker.id`.
    pub fn node_id(&self) -> i32 {
        match self.explicit("node.id") {
            Some((v, _)) => v.trim().parse().unwrap_or(-1),
            None => self.parsed("broker.id", -1),
        }
    }

    pub fn num_partitions(&self) -> i32 {
        self.parsed("num.partitions", 1)
    }

    pub fn default_replication_factor(&self) -> i16 {
        self.parsed("default.replication.factor", 1)
    }

    pub fn auto_create_topics_enable(&self) -> bool {
        self.get_bool("auto.create.topics.enable").unwrap_or(true)
    }

    pub fn socket_request_max_bytes(&self) -> usize {
        self.parsed("socket.request.max.bytes", 104_857_600)
    }

    pub fn connections_max_idle_ms(&self) -> i64 {
        self.parsed("connections.max.idle.ms", 600_000)
    }

    pub fn max_connections(&self) -> i32 {
        self.parsed("max.connections", i32::MAX)
    }

    pub fn max_connections_per_ip(&self) -> i32 {
        self.parsed("max.connections.per.ip", i32::MAX)
    }

    pub fn message_max_bytes(&self) -> i32 {
        self.parsed("message.max.bytes", 1_048_588)
    }

    pub fn offsets_topic_num_partitions(&self) -> i32 {
        self.parsed("offsets.topic.num.partitions", 50)
    }

    pub fn offsets_topic_replication_factor(&self) -> i16 {
        self.parsed("offsets.topic.replication.factor", 1)
    }

    pub fn transaction_state_log_num_partitions(&self) -> i32 {
        self.parsed("transaction.state.log.num.partitions", 50)
    }

    pub fn transaction_state_log_replication_factor(&self) -> i16 {
        self.parsed("transaction.state.log.replication.factor", 1)
    }

    pub fn transaction_state_log_min_isr(&self) -> i32 {
        self.parsed("transaction.state.log.min.isr", 1)
    }

    pub fn group_initial_rebalance_delay_ms(&self) -> i32 {
        self.parsed("group.initial.rebalance.delay.ms", 0)
    }

    pub fn producer_id_expiration_ms(&self) -> i64 {
        self.parsed("producer.id.expiration.ms", 86_400_000)
    }

    /// The broker-level default of a topic key: the first synonym set in any layer (scaled to
    /// the topic key's unit), else the first synonym with a Kafka default, else the topic
    /// key's own default.
    pub fn topic_default(&self, topic_key: &str) -> Option<String> {
        let spec = keys::topic_key(topic_key)?;
        let scaled = |v: &str, factor: i64| -> String {
            if factor == 1 {
                v.to_string()
            } else {
                v.trim()
                    .parse::<i64>()
                    .map(|n| n.saturating_mul(factor).to_string())
                    .unwrap_or_else(|_| v.to_string())
            }
        };
        for s in spec.synonyms {
            if let Some((v, _)) = self.explicit(s.name) {
                return Some(scaled(v, s.factor));
            }
        }
        for s in spec.synonyms {
            if let Some(v) = keys::broker_key(s.name).and_then(|k| k.default) {
                return Some(scaled(v, s.factor));
            }
        }
        spec.default.map(str::to_string)
    }

    /// Broker-level `log.*` settings as the default [`LogConfig`] of new topics
    /// (ms > minutes > hours precedence for retention and roll times).
    pub fn log_config_defaults(&self) -> LogConfig {
        let mut cfg = LogConfig::default();
        for key in LOG_CONFIG_KEYS {
            if let Some(v) = self.topic_default(key)
                && let Err(e) = cfg.set(key, &v)
            {
                tracing::warn!(key, value = %v, error = %e, "broker default rejected by storage; keeping storage's default");
            }
        }
        cfg
    }

    /// Effective topic values (every topic key) for the given overrides, with cross-key rules.
    pub fn effective_topic_values(
        &self,
        overrides: &BTreeMap<String, String>,
    ) -> Result<BTreeMap<String, String>, ConfigError> {
        for (k, v) in overrides {
            validate::check_topic_value(k, v)?;
        }
        let mut eff = BTreeMap::new();
        for t in keys::TOPIC_KEYS {
            let v = match overrides.get(t.name) {
                Some(v) => Some(v.trim().to_string()),
                None => self.topic_default(t.name),
            };
            if let Some(v) = v {
                eff.insert(t.name.to_string(), v);
            }
        }
        validate::check_topic_set(&eff)?;
        Ok(eff)
    }

    /// The [`LogConfig`] of a topic with these overrides; validates every override and the
    /// cross-key rules, answering INVALID_CONFIG messages on error.
    pub fn topic_log_config(
        &self,
        overrides: &BTreeMap<String, String>,
    ) -> Result<LogConfig, ConfigError> {
        self.effective_topic_values(overrides)?;
        let mut cfg = self.log_config_defaults();
        for (k, v) in overrides {
            if LOG_CONFIG_KEYS.contains(&k.as_str()) {
                cfg.set(k, v)?;
            }
        }
        Ok(cfg)
    }

    /// `key=value` lines of every explicitly set broker key (static and dynamic), each
    /// preceded by a comment naming its source; for `config print --effective` and the
    /// `effective.properties` file. Passwords are masked.
    pub fn effective_properties(&self) -> String {
        let mut out = String::new();
        let mut names: BTreeSet<&str> = self.statics.keys().map(String::as_str).collect();
        names.extend(self.dynamic.cluster_default.keys().map(String::as_str));
        names.extend(self.dynamic.per_broker.keys().map(String::as_str));
        for name in names {
            let Some((value, source)) = self.explicit(name) else {
                continue;
            };
            let from = match (source, self.origin(name)) {
                (crate::describe::ConfigSource::StaticBrokerConfig, Some(o)) => o.describe(),
                (crate::describe::ConfigSource::StaticBrokerConfig, None) => "Skiff's defaults",
                (crate::describe::ConfigSource::DynamicDefaultBrokerConfig, _) => {
                    "dynamic cluster default"
                }
                _ => "dynamic per-broker config",
            };
            let sensitive = keys::broker_key(name).is_some_and(KeySpec::sensitive);
            let shown = if sensitive { "[hidden]" } else { value };
            out.push_str(&format!("# from {from}\n{name}={shown}\n"));
        }
        out
    }

    /// Settings of storage's log manager.
    pub fn log_manager_config(&self) -> LogManagerConfig {
        let d = LogManagerConfig::default();
        LogManagerConfig {
            log_dirs: self.log_dirs(),
            recovery_threads_per_dir: self
                .parsed("num.recovery.threads.per.data.dir", 2usize)
                .max(1),
            retention_check_interval_ms: self.parsed("log.retention.check.interval.ms", 300_000),
            recovery_point_checkpoint_interval_ms: self
                .parsed("log.flush.offset.checkpoint.interval.ms", 60_000),
            start_offset_checkpoint_interval_ms: self
                .parsed("log.flush.start.offset.checkpoint.interval.ms", 60_000),
            high_watermark_checkpoint_interval_ms: self
                .parsed("replica.high.watermark.checkpoint.interval.ms", 5_000),
            producer_id_expiration_ms: self.producer_id_expiration_ms(),
            ..d
        }
    }
}
