//! The startup safety check (issue 12 item 2): configuration that demands protection Skiff
//! does not implement yet is refused instead of being "accepted, not implemented".
//!
//! Rule: a key may be accepted and ignored only if ignoring it can never make the broker less
//! safe than Kafka would be with the same configuration. A value that would make Kafka
//! authenticate, encrypt, authorize or refuse something Skiff would let through is a
//! configuration error (exit 2) naming the key (or listener) and saying what is missing:
//!
//! | key                                   | refused when                                      |
//! |---------------------------------------|---------------------------------------------------|
//! | every listener (`listeners`, `advertised.listeners`, `inter.broker.listener.name`, `controller.listener.names`) | its protocol via `listener.security.protocol.map` is not PLAINTEXT (TLS/SASL are not implemented), or it has none (Kafka's "No security protocol defined for listener") |
//! | `listener.security.protocol.map`      | a protocol is not one of Kafka's four             |
//! | `security.inter.broker.protocol`      | not PLAINTEXT                                     |
//! | `authorizer.class.name`               | non-empty (no ACLs are enforced)                  |
//! | `create.topic.policy.class.name`, `alter.config.policy.class.name` | non-empty (requests the policy would reject are not checked) |
//! | `delete.topic.enable`                 | `false` (DeleteTopics is always honoured)         |
//! | `max.connections.per.ip.overrides`    | an entry below `max.connections.per.ip` (a lower limit, or a ban with 0, is not enforced) |
//!
//! Accepted because they only apply to TLS/SASL listeners, which are all refused above (Kafka
//! ignores them on a PLAINTEXT-only broker too): `ssl.*` (including `ssl.client.auth`),
//! `sasl.*` (including `sasl.enabled.mechanisms`), `listener.name.<l>.*`,
//! `connections.max.reauth.ms`, `principal.builder.class`, `delegation.token.*` (SASL/SCRAM
//! only), `early.start.listeners`. Authorizer properties (`super.users`,
//! `allow.everyone.if.no.acl.found`) are not broker keys: they only exist with an authorizer.
//!
//! Mental model: [`check`] is a pure function of the loaded [`BrokerConfig`] (no I/O), run by
//! [`BrokerConfig::load`] after the listeners are resolved.

use std::collections::BTreeMap;

use crate::broker::BrokerConfig;
use crate::error::ConfigError;

/// Kafka's security protocols.
pub const SECURITY_PROTOCOLS: &[&str] = &["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"];

const MAP_KEY: &str = "listener.security.protocol.map";
const NOT_YET: &str =
    "TLS and SASL are not implemented by Skiff yet; only PLAINTEXT listeners can be served";

/// Refuses configuration that demands security Skiff does not have (see the module doc).
pub fn check(cfg: &BrokerConfig) -> Result<(), ConfigError> {
    let map = protocol_map(cfg)?;
    let mut names: Vec<(String, &'static str)> = Vec::new();
    for l in cfg.listeners() {
        names.push((l.name.clone(), "listeners"));
    }
    for l in cfg.advertised_listeners() {
        names.push((l.name.clone(), "advertised.listeners"));
    }
    if let Some(n) = set_value(cfg, "inter.broker.listener.name") {
        names.push((n.to_ascii_uppercase(), "inter.broker.listener.name"));
    }
    for n in controller_listener_names(cfg) {
        names.push((n, "controller.listener.names"));
    }
    for (name, key) in &names {
        match map.get(name) {
            Some(p) if p == "PLAINTEXT" => {}
            Some(p) => {
                return Err(refused(
                    key,
                    name,
                    format!(
                        "listener {name} uses security protocol {p} (via {MAP_KEY}); {NOT_YET}"
                    ),
                ));
            }
            None => {
                return Err(refused(
                    key,
                    name,
                    format!(
                        "No security protocol defined for listener {name}; map it in {MAP_KEY} (e.g. {name}:PLAINTEXT)"
                    ),
                ));
            }
        }
    }
    if let Some(p) = set_value(cfg, "security.inter.broker.protocol")
        && !p.eq_ignore_ascii_case("PLAINTEXT")
    {
        return Err(refused(
            "security.inter.broker.protocol",
            &p,
            NOT_YET.to_string(),
        ));
    }
    if let Some(v) = set_value(cfg, "authorizer.class.name") {
        return Err(refused(
            "authorizer.class.name",
            &v,
            "authorization (ACLs) is not implemented by Skiff yet: every client could do everything; unset it to run without an authorizer".into(),
        ));
    }
    for key in [
        "create.topic.policy.class.name",
        "alter.config.policy.class.name",
    ] {
        if let Some(v) = set_value(cfg, key) {
            return Err(refused(
                key,
                &v,
                "policy classes are not supported by Skiff: requests the policy would reject would be accepted; unset it".into(),
            ));
        }
    }
    if cfg.get_bool("delete.topic.enable") == Some(false) {
        return Err(refused(
            "delete.topic.enable",
            "false",
            "refusing topic deletion is not implemented by Skiff yet: DeleteTopics would delete; unset it".into(),
        ));
    }
    if let Some(v) = set_value(cfg, "max.connections.per.ip.overrides") {
        let limit = cfg.max_connections_per_ip();
        for entry in v.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let count = entry
                .rsplit_once(':')
                .and_then(|(_, c)| c.trim().parse::<i64>().ok());
            if count.is_none_or(|c| c < i64::from(limit)) {
                return Err(refused(
                    "max.connections.per.ip.overrides",
                    &v,
                    format!(
                        "per-host connection limits are not implemented by Skiff yet, so `{entry}` (below max.connections.per.ip={limit}) would not be enforced; unset it"
                    ),
                ));
            }
        }
    }
    Ok(())
}

fn refused(key: &str, value: &str, reason: String) -> ConfigError {
    ConfigError::InvalidValue {
        key: key.to_string(),
        value: value.to_string(),
        reason,
    }
}

/// The value of a key if set to something non-empty in any layer.
fn set_value(cfg: &BrokerConfig, key: &str) -> Option<String> {
    cfg.value(key)
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

fn controller_listener_names(cfg: &BrokerConfig) -> Vec<String> {
    set_value(cfg, "controller.listener.names")
        .map(|v| {
            v.split(',')
                .map(|n| n.trim().to_ascii_uppercase())
                .filter(|n| !n.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

/// Kafka's effective listener-name -> protocol map (`KafkaConfig
/// .effectiveListenerSecurityProtocolMap`): the configured map; when it is not set, its
/// default plus PLAINTEXT for controller listener names (no SSL/SASL name in use).
fn protocol_map(cfg: &BrokerConfig) -> Result<BTreeMap<String, String>, ConfigError> {
    let raw = cfg.value(MAP_KEY).unwrap_or_default();
    let mut map = BTreeMap::new();
    for entry in raw.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let Some((name, protocol)) = entry.split_once(':') else {
            return Err(refused(
                MAP_KEY,
                &raw,
                format!("`{entry}` is not LISTENER_NAME:PROTOCOL"),
            ));
        };
        let protocol = protocol.trim().to_ascii_uppercase();
        if !SECURITY_PROTOCOLS.contains(&protocol.as_str()) {
            return Err(refused(
                MAP_KEY,
                &raw,
                format!(
                    "`{protocol}` is not a security protocol (one of {})",
                    SECURITY_PROTOCOLS.join(", ")
                ),
            ));
        }
        map.insert(name.trim().to_ascii_uppercase(), protocol);
    }
    if cfg.explicit(MAP_KEY).is_none() {
        for n in controller_listener_names(cfg) {
            map.entry(n).or_insert_with(|| "PLAINTEXT".to_string());
        }
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ConfigSources;

    /// (overrides, `None` = starts, `Some(needles)` = refused with all of them in the message)
    type Case = (&'static [&'static str], Option<&'static [&'static str]>);

    fn load(overrides: &[&str]) -> Result<BrokerConfig, ConfigError> {
        BrokerConfig::load(ConfigSources {
            overrides: overrides.iter().map(|s| s.to_string()).collect(),
            ..ConfigSources::default()
        })
    }

    /// Every rule of the module doc: (overrides, None = starts, Some(needles) = refused).
    #[test]
    fn security_check_table() {
        const L: &str = "listeners=PLAINTEXT://127.0.0.1:0";
        let cases: &[Case] = &[
            (&[], None),
            (&[L], None),
            (
                &["listeners=SASL_SSL://127.0.0.1:0"],
                Some(&["listeners", "SASL_SSL", "not implemented"]),
            ),
            (
                &["listeners=SSL://127.0.0.1:0"],
                Some(&["listener SSL uses security protocol SSL"]),
            ),
            (
                &["listeners=SASL_PLAINTEXT://127.0.0.1:0"],
                Some(&["SASL_PLAINTEXT"]),
            ),
            (
                &["listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:1"],
                Some(&["SSL"]),
            ),
            // Names map through the map.
            (
                &[
                    "listeners=INTERNAL://127.0.0.1:0",
                    "listener.security.protocol.map=INTERNAL:PLAINTEXT",
                ],
                None,
            ),
            (
                &[
                    "listeners=INTERNAL://127.0.0.1:0",
                    "listener.security.protocol.map=INTERNAL:SASL_SSL",
                ],
                Some(&["listener INTERNAL uses security protocol SASL_SSL"]),
            ),
            (
                &[
                    "listeners=PLAINTEXT://127.0.0.1:0",
                    "listener.security.protocol.map=PLAINTEXT:SSL",
                ],
                Some(&["listener PLAINTEXT uses security protocol SSL"]),
            ),
            (
                &["listeners=INTERNAL://127.0.0.1:0"],
                Some(&["No security protocol defined for listener INTERNAL"]),
            ),
            (
                &[L, "listener.security.protocol.map=PLAINTEXT:TLS"],
                Some(&["`TLS` is not a security protocol"]),
            ),
            (
                &[L, "listener.security.protocol.map=PLAINTEXT"],
                Some(&["LISTENER_NAME:PROTOCOL"]),
            ),
            // Advertised, inter-broker and controller listener names.
            (
                &[L, "advertised.listeners=SSL://localhost:9093"],
                Some(&["advertised.listeners", "SSL"]),
            ),
            (
                &[L, "inter.broker.listener.name=SSL"],
                Some(&["inter.broker.listener.name"]),
            ),
            (&[L, "inter.broker.listener.name=PLAINTEXT"], None),
            (&[L, "controller.listener.names=CONTROLLER"], None),
            (
                &[
                    L,
                    "controller.listener.names=CONTROLLER",
                    "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:SSL",
                ],
                Some(&[
                    "controller.listener.names",
                    "CONTROLLER uses security protocol SSL",
                ]),
            ),
            (
                &[L, "security.inter.broker.protocol=SASL_SSL"],
                Some(&["security.inter.broker.protocol"]),
            ),
            (&[L, "security.inter.broker.protocol=PLAINTEXT"], None),
            // Authorization and policies.
            (
                &[
                    L,
                    "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                ],
                Some(&[
                    "authorizer.class.name",
                    "StandardAuthorizer",
                    "not implemented",
                ]),
            ),
            (&[L, "authorizer.class.name="], None),
            (
                &[L, "create.topic.policy.class.name=com.example.P"],
                Some(&["create.topic.policy.class.name"]),
            ),
            (
                &[L, "alter.config.policy.class.name=com.example.P"],
                Some(&["alter.config.policy.class.name"]),
            ),
            (
                &[L, "delete.topic.enable=false"],
                Some(&["delete.topic.enable"]),
            ),
            (&[L, "delete.topic.enable=true"], None),
            (
                &[L, "max.connections.per.ip.overrides=10.0.0.1:0"],
                Some(&["max.connections.per.ip.overrides", "10.0.0.1:0"]),
            ),
            (
                &[
                    L,
                    "max.connections.per.ip=5",
                    "max.connections.per.ip.overrides=10.0.0.1:50",
                ],
                None,
            ),
            // Keys that only apply to TLS/SASL listeners stay harmless on a PLAINTEXT broker.
            (
                &[
                    L,
                    "ssl.client.auth=required",
                    "sasl.enabled.mechanisms=SCRAM-SHA-512",
                    "ssl.keystore.location=/k.jks",
                ],
                None,
            ),
            (
                &[L, "listener.name.plaintext.ssl.client.auth=required"],
                None,
            ),
        ];
        for (overrides, refused) in cases {
            let got = load(overrides);
            match (refused, &got) {
                (None, Ok(_)) => {}
                (Some(needles), Err(e)) => {
                    let msg = e.to_string();
                    for n in *needles {
                        assert!(msg.contains(n), "{overrides:?}: {msg} lacks {n}");
                    }
                }
                _ => panic!("{overrides:?}: {got:?}, want refused={refused:?}"),
            }
        }
    }
}
