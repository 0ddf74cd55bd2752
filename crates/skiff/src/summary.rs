//! The startup summary (issue 20 item 4): one block of INFO lines, all with the target
//! `skiff::startup`, logged once the listeners are bound.
//!
//! Mental model: [`summary_lines`] is a pure function from the loaded [`BrokerConfig`] and the
//! [`Facts`] only the running process knows (cluster id, bound addresses, free space) to a list
//! of [`Line`]s; [`log`] turns each into one tracing event whose message names its kind
//! (`node`, `listener`, `admin`, `data dir`, `setting`) and whose fields carry the data, so the
//! text format reads `INFO skiff::startup: listener name=PLAINTEXT bind=... advertised=...`
//! and `--log-format json` has the same as structured fields. [`gather`] is the impure part
//! (statvfs of each data dir).
//!
//! Settings: every static value that differs from the catalogue's default, sorted by key, with
//! its source (`config file`, `env`, `--override`, or `skiff default` for Skiff's shipped
//! single-node defaults); keys outside the catalogue (listener overrides) say `static config`.
//! Settings ignored at load (an unknown `KAFKA_*` variable, a plugin key) follow as `ignored
//! setting` lines. Invariant: a value of a sensitive key (PASSWORD type, or a name that looks like a secret)
//! is never printed, only `[redacted]`.

use std::path::PathBuf;

use skiff_config::keys;
use skiff_config::{BrokerConfig, Origin};
use skiff_server::Server;

/// What replaces a secret's value.
pub const REDACTED: &str = "[redacted]";

/// The process facts the summary needs besides the configuration.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Facts {
    pub version: String,
    pub cluster_id: String,
    /// (name, bound address, advertised host:port), in configuration order.
    pub listeners: Vec<(String, String, String)>,
    /// The admin HTTP port's bound address, if any.
    pub admin: Option<String>,
    pub data_dirs: Vec<DirSpace>,
}

/// One data dir and its file system's space (`None` when statvfs failed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirSpace {
    pub path: PathBuf,
    pub free_bytes: Option<u64>,
    pub total_bytes: Option<u64>,
}

/// One line of the summary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Line {
    Node {
        version: String,
        node_id: i32,
        cluster_id: String,
        roles: String,
    },
    Listener {
        name: String,
        bind: String,
        advertised: String,
    },
    Admin {
        bind: String,
    },
    DataDir {
        path: String,
        free: String,
        free_bytes: Option<u64>,
        total_bytes: Option<u64>,
    },
    Setting {
        key: String,
        value: String,
        source: &'static str,
    },
    /// A supplied setting that was ignored (already warned about at load).
    Ignored {
        key: String,
        source: String,
        reason: String,
    },
}

/// The summary of a configuration and the process facts.
pub fn summary_lines(cfg: &BrokerConfig, facts: &Facts) -> Vec<Line> {
    let mut lines = vec![Line::Node {
        version: facts.version.clone(),
        node_id: cfg.node_id(),
        cluster_id: facts.cluster_id.clone(),
        roles: roles(cfg),
    }];
    for (name, bind, advertised) in &facts.listeners {
        lines.push(Line::Listener {
            name: name.clone(),
            bind: bind.clone(),
            advertised: advertised.clone(),
        });
    }
    if let Some(bind) = &facts.admin {
        lines.push(Line::Admin { bind: bind.clone() });
    }
    for d in &facts.data_dirs {
        lines.push(Line::DataDir {
            path: d.path.display().to_string(),
            free: match (d.free_bytes, d.total_bytes) {
                (Some(f), Some(t)) => format!("{} of {}", human_bytes(f), human_bytes(t)),
                _ => "unknown".to_string(),
            },
            free_bytes: d.free_bytes,
            total_bytes: d.total_bytes,
        });
    }
    for (key, value) in cfg.static_values() {
        let spec = keys::broker_key(key);
        if spec.and_then(|s| s.default) == Some(value.as_str()) {
            continue;
        }
        let secret = spec.is_some_and(keys::KeySpec::sensitive) || looks_secret(key);
        lines.push(Line::Setting {
            key: key.clone(),
            value: if secret {
                REDACTED.to_string()
            } else {
                value.clone()
            },
            source: source(cfg.origin(key)),
        });
    }
    for (key, value) in cfg.passthrough() {
        lines.push(Line::Setting {
            key: key.clone(),
            value: if looks_secret(key) {
                REDACTED.to_string()
            } else {
                value.clone()
            },
            source: "static config",
        });
    }
    for i in cfg.ignored() {
        lines.push(Line::Ignored {
            key: i.key.clone(),
            source: i.source.clone(),
            reason: i.reason.clone(),
        });
    }
    lines
}

fn source(origin: Option<Origin>) -> &'static str {
    match origin {
        Some(Origin::File) => "config file",
        Some(Origin::Env) => "env",
        Some(Origin::Override) => "--override",
        None => "skiff default",
    }
}

/// Names outside the PASSWORD type that still carry secrets (listener overrides such as
/// `listener.name.x.plain.sasl.jaas.config`).
fn looks_secret(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    ["password", "jaas.config", "secret", "credential"]
        .iter()
        .any(|s| k.contains(s))
        || k.ends_with(".key")
}

/// `process.roles` as written, or the single-node default.
fn roles(cfg: &BrokerConfig) -> String {
    match cfg.kraft() {
        Some(k) => match (k.broker, k.controller) {
            (true, true) => "broker,controller".to_string(),
            (true, false) => "broker".to_string(),
            (false, true) => "controller".to_string(),
            (false, false) => "none".to_string(),
        },
        None => "broker,controller (single node, process.roles not set)".to_string(),
    }
}

/// Bytes in binary units with one decimal (`12.3 GiB`).
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

/// The facts of a started server (statvfs of each data dir: the one impure step).
pub fn gather(cfg: &BrokerConfig, server: &Server) -> Facts {
    Facts {
        version: env!("CARGO_PKG_VERSION").to_string(),
        cluster_id: server.broker().cluster_id().to_string(),
        listeners: server
            .listeners()
            .iter()
            .map(|l| {
                let host = if l.advertised_host.contains(':') {
                    format!("[{}]", l.advertised_host)
                } else {
                    l.advertised_host.clone()
                };
                (
                    l.name.clone(),
                    l.local_addr.to_string(),
                    format!("{host}:{}", l.advertised_port),
                )
            })
            .collect(),
        admin: server.admin_addr().map(|a| a.to_string()),
        data_dirs: cfg
            .log_dirs()
            .into_iter()
            .map(|path| {
                let (free_bytes, total_bytes) = match rustix::fs::statvfs(&path) {
                    Ok(s) => (
                        Some(s.f_bavail.saturating_mul(s.f_frsize)),
                        Some(s.f_blocks.saturating_mul(s.f_frsize)),
                    ),
                    Err(_) => (None, None),
                };
                DirSpace {
                    path,
                    free_bytes,
                    total_bytes,
                }
            })
            .collect(),
    }
}

/// Logs the summary of a started server: one INFO event per line, target `skiff::startup`.
pub fn log(cfg: &BrokerConfig, server: &Server) {
    for line in summary_lines(cfg, &gather(cfg, server)) {
        match line {
            Line::Node {
                version,
                node_id,
                cluster_id,
                roles,
            } => {
                tracing::info!(target: "skiff::startup", %version, node_id, %cluster_id, %roles, "node")
            }
            Line::Listener {
                name,
                bind,
                advertised,
            } => tracing::info!(target: "skiff::startup", %name, %bind, %advertised, "listener"),
            Line::Admin { bind } => tracing::info!(target: "skiff::startup", %bind, "admin http"),
            Line::DataDir {
                path,
                free,
                free_bytes,
                total_bytes,
            } => tracing::info!(
                target: "skiff::startup",
                %path,
                %free,
                free_bytes = free_bytes.unwrap_or(0),
                total_bytes = total_bytes.unwrap_or(0),
                "data dir"
            ),
            Line::Setting { key, value, source } => {
                tracing::info!(target: "skiff::startup", %key, %value, %source, "setting")
            }
            Line::Ignored {
                key,
                source,
                reason,
            } => {
                tracing::info!(target: "skiff::startup", %key, %source, %reason, "ignored setting")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use skiff_config::ConfigSources;

    fn config(env: &[(&str, &str)], overrides: &[&str]) -> BrokerConfig {
        BrokerConfig::load(ConfigSources {
            file: None,
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            overrides: overrides.iter().map(|s| s.to_string()).collect(),
        })
        .unwrap()
    }

    fn settings(lines: &[Line]) -> Vec<(String, String, &'static str)> {
        lines
            .iter()
            .filter_map(|l| match l {
                Line::Setting { key, value, source } => Some((key.clone(), value.clone(), *source)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn settings_table() {
        let cfg = config(
            &[("KAFKA_NUM_PARTITIONS", "3")],
            &[
                "log.retention.ms=1000",
                "ssl.keystore.password=hunter2",
                "auto.create.topics.enable=true",
                "listener.name.plaintext.plain.sasl.jaas.config=secret-stuff",
            ],
        );
        let got = settings(&summary_lines(&cfg, &Facts::default()));
        let find = |k: &str| got.iter().find(|(key, _, _)| key == k).cloned();
        for (key, want) in [
            ("num.partitions", Some(("3", "env"))),
            ("log.retention.ms", Some(("1000", "--override"))),
            ("ssl.keystore.password", Some((REDACTED, "--override"))),
            ("log.dirs", Some(("./skiff-data", "skiff default"))),
            ("node.id", Some(("1", "skiff default"))),
            // equal to Kafka's default: not a non-default setting
            ("auto.create.topics.enable", None),
            (
                "listener.name.plaintext.plain.sasl.jaas.config",
                Some((REDACTED, "static config")),
            ),
        ] {
            let found = find(key).map(|(_, v, s)| (v, s));
            assert_eq!(found.as_ref().map(|(v, s)| (v.as_str(), *s)), want, "{key}");
        }
        assert!(
            !format!("{got:?}").contains("hunter2") && !format!("{got:?}").contains("secret-stuff")
        );
    }

    #[test]
    fn file_values_and_ignored_settings() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("server.properties");
        std::fs::write(
            &file,
            "num.partitions=5\nconfluent.support.metrics.enable=false\n",
        )
        .unwrap();
        let cfg = BrokerConfig::load(ConfigSources {
            file: Some(file),
            env: vec![("KAFKA_BOOTSTRAP_SERVERS".into(), "x:9092".into())],
            overrides: Vec::new(),
        })
        .unwrap();
        let lines = summary_lines(&cfg, &Facts::default());
        assert!(
            settings(&lines).contains(&("num.partitions".into(), "5".into(), "config file")),
            "{lines:?}"
        );
        let ignored: Vec<&str> = lines
            .iter()
            .filter_map(|l| match l {
                Line::Ignored { key, .. } => Some(key.as_str()),
                _ => None,
            })
            .collect();
        assert!(ignored.contains(&"bootstrap.servers"), "{lines:?}");
        assert!(
            ignored.contains(&"confluent.support.metrics.enable"),
            "{lines:?}"
        );
    }

    #[test]
    fn node_listener_and_dir_lines() {
        let cfg = config(&[], &["node.id=7"]);
        let facts = Facts {
            version: "0.1.0".into(),
            cluster_id: "abc".into(),
            listeners: vec![(
                "PLAINTEXT".into(),
                "127.0.0.1:9092".into(),
                "localhost:9092".into(),
            )],
            admin: Some("127.0.0.1:9644".into()),
            data_dirs: vec![
                DirSpace {
                    path: "/d1".into(),
                    free_bytes: Some(3 << 30),
                    total_bytes: Some(10 << 30),
                },
                DirSpace {
                    path: "/d2".into(),
                    free_bytes: None,
                    total_bytes: None,
                },
            ],
        };
        let lines = summary_lines(&cfg, &facts);
        assert_eq!(
            lines[0],
            Line::Node {
                version: "0.1.0".into(),
                node_id: 7,
                cluster_id: "abc".into(),
                roles: "broker,controller (single node, process.roles not set)".into(),
            }
        );
        assert_eq!(
            lines[1],
            Line::Listener {
                name: "PLAINTEXT".into(),
                bind: "127.0.0.1:9092".into(),
                advertised: "localhost:9092".into(),
            }
        );
        assert_eq!(
            lines[2],
            Line::Admin {
                bind: "127.0.0.1:9644".into()
            }
        );
        assert!(
            matches!(&lines[3], Line::DataDir { path, free, .. } if path == "/d1" && free == "3.0 GiB of 10.0 GiB")
        );
        assert!(matches!(&lines[4], Line::DataDir { free, .. } if free == "unknown"));
    }

    #[test]
    fn human_bytes_table() {
        for (n, want) in [
            (0, "0 B"),
            (1023, "1023 B"),
            (1024, "1.0 KiB"),
            (1536, "1.5 KiB"),
            (5 << 20, "5.0 MiB"),
            (3 << 40, "3.0 TiB"),
        ] {
            assert_eq!(human_bytes(n), want, "{n}");
        }
    }

    #[test]
    fn secret_names_table() {
        for (k, secret) in [
            ("ssl.keystore.password", true),
            ("listener.name.x.plain.sasl.jaas.config", true),
            ("listener.name.x.ssl.keystore.key", true),
            ("log.dirs", false),
            ("listener.name.x.ssl.keystore.type", false),
        ] {
            assert_eq!(looks_secret(k), secret, "{k}");
        }
    }
}
