//! Where static broker configuration comes from, and how the sources are merged.
//!
//! Mental model: three layers of `key -> value` strings merged with `--override` > `KAFKA_*`
//! environment > `--config` file (Kafka's `server.properties` format). The merged map is then
//! validated against the key catalogue by [`crate::BrokerConfig::load`]. Pure functions over
//! owned data; no global state.
//!
//! Environment mapping (the Apache Kafka image's convention): `KAFKA_LOG_DIRS` -> `log.dirs`;
//! `_` -> `.`, `__` -> `_`, `___` -> `-`; the Bitnami form `KAFKA_CFG_LOG_DIRS` maps the same
//! way; the JVM/launcher variables listed in [`IGNORED_ENV`] are skipped. The environment is
//! shared with other tooling (`KAFKA_BOOTSTRAP_SERVERS`, `KAFKA_CLUSTER_ID`, ...), so a variable
//! whose key Skiff does not know is not an error: [`crate::BrokerConfig::load`] warns naming
//! the variable and ignores it (an unknown key in the file or an `--override` stays an error).
//! Two variables naming one key (`KAFKA_X` and `KAFKA_CFG_X`) must agree.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::ConfigError;

/// Inputs to [`crate::BrokerConfig::load`].
#[derive(Clone, Debug, Default)]
pub struct ConfigSources {
    /// `--config FILE` (server.properties format).
    pub file: Option<PathBuf>,
    /// The process environment (only `KAFKA_*` entries are looked at).
    pub env: Vec<(String, String)>,
    /// Each `--override KEY=VALUE`, in command-line order (later wins).
    pub overrides: Vec<String>,
}

impl ConfigSources {
    /// Sources with the current process environment and nothing else.
    pub fn from_process_env() -> Self {
        ConfigSources {
            file: None,
            env: std::env::vars().collect(),
            overrides: Vec::new(),
        }
    }
}

/// Where one static value came from (for messages and `config print`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    File,
    Env,
    Override,
}

impl Origin {
    pub fn describe(self) -> &'static str {
        match self {
            Origin::File => "the config file",
            Origin::Env => "the environment",
            Origin::Override => "--override",
        }
    }
}

/// Launcher variables that share the `KAFKA_` prefix but are not broker keys.
pub const IGNORED_ENV: &[&str] = &[
    "KAFKA_OPTS",
    "KAFKA_HEAP_OPTS",
    "KAFKA_JVM_PERFORMANCE_OPTS",
    "KAFKA_LOG4J_OPTS",
    "KAFKA_JMX_OPTS",
    "KAFKA_HOME",
    "KAFKA_GC_LOG_OPTS",
    "KAFKA_DEBUG",
    "KAFKA_JAVA_OPTS",
];

/// The Bitnami image's prefix for broker keys (`KAFKA_CFG_LOG_DIRS` -> `log.dirs`).
pub const CFG_PREFIX: &str = "KAFKA_CFG_";

/// Maps one environment variable name to a config key, or `None` if it is not a config
/// variable. `KAFKA_X_Y` -> `x.y`; `__` -> `_`; `___` -> `-`.
pub fn env_key(var: &str) -> Option<String> {
    let rest = var
        .strip_prefix(CFG_PREFIX)
        .or_else(|| var.strip_prefix("KAFKA_"))?;
    if rest.is_empty() || IGNORED_ENV.contains(&var) {
        return None;
    }
    let lower = rest.to_ascii_lowercase();
    let mut out = String::with_capacity(lower.len());
    let bytes: Vec<char> = lower.chars().collect();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == '_' {
            let mut run = 0;
            while i + run < bytes.len() && bytes[i + run] == '_' {
                run += 1;
            }
            // Runs of 3 are `-`, runs of 2 are `_`, single is `.`; longer runs decompose
            // greedily left to right.
            let mut left = run;
            while left > 0 {
                if left >= 3 {
                    out.push('-');
                    left -= 3;
                } else if left == 2 {
                    out.push('_');
                    left -= 2;
                } else {
                    out.push('.');
                    left -= 1;
                }
            }
            i += run;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Some(out)
}

/// Parses a server.properties file.
pub fn read_properties_file(path: &Path) -> Result<BTreeMap<String, String>, ConfigError> {
    let file = std::fs::File::open(path).map_err(|e| ConfigError::File {
        path: path.display().to_string(),
        reason: e.to_string(),
    })?;
    let map =
        java_properties::read(std::io::BufReader::new(file)).map_err(|e| ConfigError::File {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
    Ok(map
        .into_iter()
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect())
}

/// Splits `KEY=VALUE` at the first `=`; the value keeps any further `=`.
pub fn parse_override(s: &str) -> Result<(String, String), ConfigError> {
    let (k, v) = s
        .split_once('=')
        .ok_or_else(|| ConfigError::BadOverride(s.to_string()))?;
    let k = k.trim();
    if k.is_empty() {
        return Err(ConfigError::BadOverride(s.to_string()));
    }
    Ok((k.to_string(), v.to_string()))
}

/// The three sources merged: `key -> (value, origin)`, and for keys last set by the
/// environment the variable that set them (for messages).
#[derive(Clone, Debug, Default)]
pub struct Merged {
    pub values: BTreeMap<String, (String, Origin)>,
    pub env_vars: BTreeMap<String, String>,
}

/// Merges the three sources; later layers win. Two environment variables that map to one key
/// with different values are an error naming both.
pub fn merge(sources: &ConfigSources) -> Result<Merged, ConfigError> {
    let mut out = Merged::default();
    if let Some(path) = &sources.file {
        for (k, v) in read_properties_file(path)? {
            out.values.insert(k, (v, Origin::File));
        }
    }
    let mut env: Vec<&(String, String)> = sources.env.iter().collect();
    env.sort();
    for (var, v) in env {
        let Some(k) = env_key(var) else { continue };
        if let Some(first) = out.env_vars.get(&k)
            && let Some((prev, _)) = out.values.get(&k)
            && prev != v
        {
            return Err(ConfigError::EnvConflict {
                key: k,
                first: first.clone(),
                second: var.clone(),
            });
        }
        out.values.insert(k.clone(), (v.clone(), Origin::Env));
        out.env_vars.insert(k, var.clone());
    }
    for o in &sources.overrides {
        let (k, v) = parse_override(o)?;
        out.env_vars.remove(&k);
        out.values.insert(k, (v, Origin::Override));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_mapping_table() {
        for (var, key) in [
            ("KAFKA_LOG_DIRS", Some("log.dirs")),
            ("KAFKA_NUM_PARTITIONS", Some("num.partitions")),
            (
                "KAFKA_LISTENER_NAME_INTERNAL__SSL_KEYSTORE",
                Some("listener.name.internal_ssl.keystore"),
            ),
            ("KAFKA_SKIFF_SOME___THING", Some("skiff.some-thing")),
            ("KAFKA_OPTS", None),
            ("KAFKA_HEAP_OPTS", None),
            ("KAFKA_JVM_PERFORMANCE_OPTS", None),
            ("KAFKA_LOG4J_OPTS", None),
            ("KAFKA_JMX_OPTS", None),
            ("KAFKA_HOME", None),
            ("KAFKA_GC_LOG_OPTS", None),
            ("KAFKA_DEBUG", None),
            ("KAFKA_CFG_LOG_DIRS", Some("log.dirs")),
            (
                "KAFKA_CFG_LISTENER_SECURITY_PROTOCOL_MAP",
                Some("listener.security.protocol.map"),
            ),
            ("KAFKA_CFG_", None),
            ("KAFKA_BOOTSTRAP_SERVERS", Some("bootstrap.servers")),
            ("KAFKA_", None),
            ("PATH", None),
        ] {
            assert_eq!(env_key(var).as_deref(), key, "{var}");
        }
    }

    #[test]
    fn override_value_is_everything_after_first_equals() {
        assert_eq!(
            parse_override("sasl.jaas.config=a=b=c").unwrap(),
            ("sasl.jaas.config".into(), "a=b=c".into())
        );
        assert_eq!(parse_override("k=").unwrap(), ("k".into(), String::new()));
        assert!(parse_override("novalue").is_err());
        assert!(parse_override("=x").is_err());
    }
}
