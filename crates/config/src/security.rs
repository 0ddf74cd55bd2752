//! The security configuration (issue 19): Kafka's listener protocols, SASL mechanisms, JAAS
//! users and the authorizer, checked at load and turned into a [`SecurityPlan`]; and the
//! startup safety rule (issue 12 item 2) for what Skiff still does not implement.
//!
//! Rule: a key may be accepted and ignored only if ignoring it can never make the broker less
//! safe than Kafka would be with the same configuration. A value that would make Kafka
//! authenticate, encrypt, authorize or refuse something Skiff would let through is a
//! configuration error (exit 2) naming the key (or listener) and saying what to do:
//!
//! | key                                   | refused when                                      |
//! |---------------------------------------|---------------------------------------------------|
//! | every listener (`listeners`, `advertised.listeners`, `inter.broker.listener.name`, `controller.listener.names`) | it has no protocol in `listener.security.protocol.map` (Kafka's "No security protocol defined for listener") |
//! | `listener.security.protocol.map`      | a protocol is not one of Kafka's four             |
//! | `sasl.enabled.mechanisms` (per SASL listener, `listener.name.<l>.` first) | none of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 is left (GSSAPI, Kafka's default, and OAUTHBEARER are not offered: a WARN names them) |
//! | `listener.name.<l>.plain.sasl.jaas.config` | missing, unparsable or without a `user_<name>` entry on a listener offering PLAIN (Kafka refuses to start without the JAAS section too) |
//! | `authorizer.class.name`               | not empty and not `org.apache.kafka.metadata.authorizer.StandardAuthorizer` (the ZooKeeper `AclAuthorizer` is gone from Kafka 4) |
//! | `principal.builder.class`, `sasl.server.callback.handler.class`, `ssl.engine.factory.class` (also listener-prefixed) | set to a class other than Kafka's default: Java plugins cannot run here |
//! | `create.topic.policy.class.name`, `alter.config.policy.class.name` | non-empty (requests the policy would reject are not checked) |
//! | `delete.topic.enable`                 | `false` (DeleteTopics is always honoured)         |
//! | `max.connections.per.ip.overrides`    | an entry below `max.connections.per.ip` (a lower limit, or a ban with 0, is not enforced) |
//!
//! TLS keys (`ssl.*`, `listener.name.<l>.ssl.*`) are read and checked where the TLS
//! configuration is built (`skiff_server::tls`), which fails the start the same way. Authorizer
//! properties (`super.users`, `allow.everyone.if.no.acl.found`) are accepted only beside an
//! authorizer, as in Kafka, and read into the plan.
//!
//! Mental model: [`check`] and [`plan`] are pure functions of the loaded [`BrokerConfig`] (no
//! I/O); [`BrokerConfig::load`] runs [`check`] after the listeners are resolved, the binary
//! reads the [`plan`] when it builds the server settings.

use std::collections::BTreeMap;

use crate::broker::BrokerConfig;
use crate::error::ConfigError;

/// Kafka's security protocols.
pub const SECURITY_PROTOCOLS: &[&str] = &["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"];

/// The SASL mechanisms Skiff offers.
pub const SUPPORTED_MECHANISMS: &[&str] = &["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"];

/// Kafka's ACL authorizer for KRaft clusters, the one `authorizer.class.name` Skiff accepts.
pub const STANDARD_AUTHORIZER: &str = "org.apache.kafka.metadata.authorizer.StandardAuthorizer";

const MAP_KEY: &str = "listener.security.protocol.map";

/// Plugin classes Skiff cannot load, with the default Kafka uses (`None`: unset by default).
const PLUGIN_CLASSES: &[(&str, Option<&str>)] = &[
    (
        "principal.builder.class",
        Some("org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder"),
    ),
    ("sasl.server.callback.handler.class", None),
    ("ssl.engine.factory.class", None),
];

/// What one listener demands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListenerSecurity {
    /// `PLAINTEXT`, `SSL`, `SASL_PLAINTEXT` or `SASL_SSL`.
    pub protocol: String,
    /// SASL listeners: the offered mechanisms, in the configured order (supported ones only).
    pub mechanisms: Vec<String>,
    /// SASL listeners offering PLAIN: the JAAS text of `listener.name.<l>.plain.sasl.jaas.config`.
    pub plain_jaas: Option<String>,
    /// The JAAS text per mechanism (upper-case name) for this listener, as configured (the
    /// client side of inter-node SASL reads `username` / `password` from it).
    pub jaas: BTreeMap<String, String>,
}

impl ListenerSecurity {
    pub fn is_tls(&self) -> bool {
        self.protocol == "SSL" || self.protocol == "SASL_SSL"
    }

    pub fn is_sasl(&self) -> bool {
        self.protocol.starts_with("SASL_")
    }
}

/// The authorizer's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthorizerPlan {
    /// `super.users`: `User:a;User:b`.
    pub super_users: Vec<String>,
    /// `allow.everyone.if.no.acl.found` (default false).
    pub allow_everyone_if_no_acl_found: bool,
}

/// The checked security configuration.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SecurityPlan {
    /// Every listener named anywhere, by upper-case name.
    pub listeners: BTreeMap<String, ListenerSecurity>,
    /// `None`: no authorizer (everything allowed).
    pub authorizer: Option<AuthorizerPlan>,
    /// `connections.max.reauth.ms` (0: no re-authentication).
    pub reauth_ms: u64,
    /// `sasl.server.max.receive.size`.
    pub sasl_receive_bytes_max: usize,
    /// `sasl.mechanism.inter.broker.protocol`.
    pub inter_broker_mechanism: String,
    /// `sasl.mechanism.controller.protocol`.
    pub controller_mechanism: String,
    /// Things to WARN about at start (mechanisms not offered, ...).
    pub warnings: Vec<String>,
}

/// Refuses configuration that demands security Skiff does not have (see the module doc).
pub fn check(cfg: &BrokerConfig) -> Result<(), ConfigError> {
    plan(cfg).map(|_| ())
}

/// A listener-prefixed key (`listener.name.<l>.<key>`, lower-case listener name) or the key.
pub fn listener_value(cfg: &BrokerConfig, listener: &str, key: &str) -> Option<String> {
    let prefixed = format!("listener.name.{}.{key}", listener.to_ascii_lowercase());
    cfg.passthrough()
        .get(&prefixed)
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .or_else(|| set_value(cfg, key))
}

/// The checked security configuration (see the module doc for what is refused).
pub fn plan(cfg: &BrokerConfig) -> Result<SecurityPlan, ConfigError> {
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
    let mut out = SecurityPlan {
        reauth_ms: cfg
            .get_i64("connections.max.reauth.ms")
            .and_then(|v| u64::try_from(v).ok())
            .unwrap_or(0),
        sasl_receive_bytes_max: cfg
            .get_i64("sasl.server.max.receive.size")
            .and_then(|v| usize::try_from(v).ok())
            .unwrap_or(524_288),
        inter_broker_mechanism: set_value(cfg, "sasl.mechanism.inter.broker.protocol")
            .unwrap_or_else(|| "GSSAPI".into()),
        controller_mechanism: set_value(cfg, "sasl.mechanism.controller.protocol")
            .unwrap_or_else(|| "GSSAPI".into()),
        ..SecurityPlan::default()
    };
    for (name, key) in &names {
        let Some(protocol) = map.get(name) else {
            return Err(refused(
                key,
                name,
                format!(
                    "No security protocol defined for listener {name}; map it in {MAP_KEY} (e.g. {name}:PLAINTEXT)"
                ),
            ));
        };
        if out.listeners.contains_key(name) {
            continue;
        }
        let ls = listener_plan(cfg, name, protocol, &mut out.warnings)?;
        out.listeners.insert(name.clone(), ls);
    }
    if let Some(p) = set_value(cfg, "security.inter.broker.protocol") {
        let p = p.to_ascii_uppercase();
        if !SECURITY_PROTOCOLS.contains(&p.as_str()) {
            return Err(refused(
                "security.inter.broker.protocol",
                &p,
                format!(
                    "not a security protocol (one of {})",
                    SECURITY_PROTOCOLS.join(", ")
                ),
            ));
        }
    }
    out.authorizer = authorizer_plan(cfg)?;
    for (key, default) in PLUGIN_CLASSES {
        let mut set: Vec<(String, String)> = Vec::new();
        if let Some(v) = set_value(cfg, key) {
            set.push((key.to_string(), v));
        }
        for (k, v) in cfg.passthrough() {
            if k.starts_with("listener.name.") && k.ends_with(&format!(".{key}")) {
                set.push((k.clone(), v.trim().to_string()));
            }
        }
        for (k, v) in set {
            if !v.is_empty() && Some(v.as_str()) != *default {
                return Err(refused(
                    &k,
                    &v,
                    "Java plugin classes cannot run in Skiff; unset it (Skiff builds principals, checks SASL credentials and makes TLS engines itself, as Kafka's defaults do)".into(),
                ));
            }
        }
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
    Ok(out)
}

/// One listener's SASL mechanisms and JAAS texts.
fn listener_plan(
    cfg: &BrokerConfig,
    name: &str,
    protocol: &str,
    warnings: &mut Vec<String>,
) -> Result<ListenerSecurity, ConfigError> {
    let lower = name.to_ascii_lowercase();
    let mut ls = ListenerSecurity {
        protocol: protocol.to_string(),
        mechanisms: Vec::new(),
        plain_jaas: None,
        jaas: BTreeMap::new(),
    };
    for mech in SUPPORTED_MECHANISMS {
        let key = format!(
            "listener.name.{lower}.{}.sasl.jaas.config",
            mech.to_ascii_lowercase()
        );
        if let Some(v) = cfg.passthrough().get(&key).filter(|v| !v.trim().is_empty()) {
            ls.jaas.insert(mech.to_string(), v.trim().to_string());
        }
    }
    if !ls.is_sasl() {
        return Ok(ls);
    }
    let key = "sasl.enabled.mechanisms";
    let configured = listener_value(cfg, name, key).unwrap_or_else(|| "GSSAPI".into());
    let mut not_offered = Vec::new();
    for m in configured
        .split(',')
        .map(str::trim)
        .filter(|m| !m.is_empty())
    {
        let m = m.to_ascii_uppercase();
        if SUPPORTED_MECHANISMS.contains(&m.as_str()) {
            if !ls.mechanisms.contains(&m) {
                ls.mechanisms.push(m);
            }
        } else {
            not_offered.push(m);
        }
    }
    if !not_offered.is_empty() {
        warnings.push(format!(
            "listener {name}: SASL mechanism(s) {} in {key} are not offered by Skiff (it offers {}); clients asking for them get UNSUPPORTED_SASL_MECHANISM",
            not_offered.join(", "),
            SUPPORTED_MECHANISMS.join(", ")
        ));
    }
    if ls.mechanisms.is_empty() {
        return Err(refused(
            key,
            &configured,
            format!(
                "listener {name} uses {protocol} but offers no SASL mechanism Skiff has ({}; GSSAPI, Kafka's default, is not offered): set {key}=SCRAM-SHA-512 (or PLAIN, SCRAM-SHA-256), or listener.name.{lower}.{key}",
                SUPPORTED_MECHANISMS.join(", ")
            ),
        ));
    }
    if ls.mechanisms.iter().any(|m| m == "PLAIN") {
        match ls.jaas.get("PLAIN") {
            Some(j) => ls.plain_jaas = Some(j.clone()),
            None => {
                return Err(refused(
                    key,
                    &configured,
                    format!(
                        "listener {name} offers PLAIN but has no users: set listener.name.{lower}.plain.sasl.jaas.config=\"org.apache.kafka.common.security.plain.PlainLoginModule required user_admin='admin-secret';\" (Kafka refuses to start without it too)"
                    ),
                ));
            }
        }
    }
    Ok(ls)
}

/// `authorizer.class.name` with `super.users` and `allow.everyone.if.no.acl.found`.
fn authorizer_plan(cfg: &BrokerConfig) -> Result<Option<AuthorizerPlan>, ConfigError> {
    let key = "authorizer.class.name";
    let Some(class) = set_value(cfg, key) else {
        return Ok(None);
    };
    if class != STANDARD_AUTHORIZER {
        let hint = if class.ends_with("AclAuthorizer") {
            "the ZooKeeper-based AclAuthorizer was removed in Kafka 4; "
        } else {
            ""
        };
        return Err(refused(
            key,
            &class,
            format!(
                "{hint}Skiff implements Kafka's KRaft authorizer only: set {key}={STANDARD_AUTHORIZER}, or leave it empty for no authorization"
            ),
        ));
    }
    let super_users = cfg
        .passthrough()
        .get("super.users")
        .map(|v| {
            v.split(';')
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    for p in &super_users {
        if !p.contains(':') {
            return Err(refused(
                "super.users",
                p,
                "a principal is TYPE:name, e.g. User:admin (several separated by ';')".into(),
            ));
        }
    }
    let allow_key = "allow.everyone.if.no.acl.found";
    let allow = match cfg
        .passthrough()
        .get(allow_key)
        .map(|v| v.trim().to_ascii_lowercase())
    {
        None => false,
        Some(v) if v == "true" => true,
        Some(v) if v == "false" => false,
        Some(v) => {
            return Err(refused(allow_key, &v, "must be true or false".into()));
        }
    };
    Ok(Some(AuthorizerPlan {
        super_users,
        allow_everyone_if_no_acl_found: allow,
    }))
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
            // TLS listeners are configured (their keys are checked where TLS is built).
            (&["listeners=SSL://127.0.0.1:0"], None),
            (
                &["listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:1"],
                None,
            ),
            // SASL: GSSAPI (Kafka's default) is not offered.
            (
                &["listeners=SASL_SSL://127.0.0.1:0"],
                Some(&["sasl.enabled.mechanisms", "GSSAPI", "SASL_SSL"]),
            ),
            (
                &["listeners=SASL_PLAINTEXT://127.0.0.1:0"],
                Some(&["offers no SASL mechanism"]),
            ),
            (
                &[
                    "listeners=SASL_PLAINTEXT://127.0.0.1:0",
                    "sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512",
                ],
                None,
            ),
            (
                &[
                    "listeners=SASL_PLAINTEXT://127.0.0.1:0",
                    "listener.name.sasl_plaintext.sasl.enabled.mechanisms=SCRAM-SHA-512",
                ],
                None,
            ),
            // PLAIN needs its users.
            (
                &[
                    "listeners=SASL_PLAINTEXT://127.0.0.1:0",
                    "sasl.enabled.mechanisms=PLAIN",
                ],
                Some(&["offers PLAIN but has no users", "plain.sasl.jaas.config"]),
            ),
            (
                &[
                    "listeners=SASL_PLAINTEXT://127.0.0.1:0",
                    "sasl.enabled.mechanisms=PLAIN",
                    "listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_a=\"b\";",
                ],
                None,
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
                Some(&["listener INTERNAL uses SASL_SSL but offers no SASL mechanism"]),
            ),
            (
                &[
                    "listeners=PLAINTEXT://127.0.0.1:0",
                    "listener.security.protocol.map=PLAINTEXT:SSL",
                ],
                None,
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
                &[L, "advertised.listeners=OTHER://localhost:9093"],
                Some(&["advertised.listeners", "OTHER"]),
            ),
            (
                &[L, "inter.broker.listener.name=INTERNAL"],
                Some(&["inter.broker.listener.name", "INTERNAL"]),
            ),
            (&[L, "inter.broker.listener.name=PLAINTEXT"], None),
            (&[L, "controller.listener.names=CONTROLLER"], None),
            (
                &[
                    L,
                    "controller.listener.names=CONTROLLER",
                    "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_SSL",
                ],
                Some(&["CONTROLLER uses SASL_SSL but offers no SASL mechanism"]),
            ),
            (
                &[L, "security.inter.broker.protocol=TLS"],
                Some(&["security.inter.broker.protocol"]),
            ),
            (&[L, "security.inter.broker.protocol=SASL_SSL"], None),
            (&[L, "security.inter.broker.protocol=PLAINTEXT"], None),
            // Authorization and policies.
            (
                &[
                    L,
                    "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                    "super.users=User:admin;User:broker",
                    "allow.everyone.if.no.acl.found=false",
                ],
                None,
            ),
            (
                &[
                    L,
                    "authorizer.class.name=kafka.security.authorizer.AclAuthorizer",
                ],
                Some(&["AclAuthorizer was removed in Kafka 4", "StandardAuthorizer"]),
            ),
            (
                &[L, "authorizer.class.name=com.example.Auth"],
                Some(&["authorizer.class.name", "com.example.Auth"]),
            ),
            (
                &[
                    L,
                    "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                    "super.users=admin",
                ],
                Some(&["super.users", "User:admin"]),
            ),
            (
                &[L, "principal.builder.class=com.example.PB"],
                Some(&["principal.builder.class", "Java plugin"]),
            ),
            (
                &[
                    L,
                    "principal.builder.class=org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder",
                ],
                None,
            ),
            (
                &[
                    L,
                    "listener.name.plaintext.scram-sha-256.sasl.server.callback.handler.class=com.example.H",
                ],
                Some(&["sasl.server.callback.handler.class"]),
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
            // (The authorizer's keys without an authorizer are read by nobody, as in Kafka.)
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

    #[test]
    fn plan_reads_listeners_mechanisms_jaas_and_the_authorizer() {
        let cfg = load(&[
            "listeners=SASL_SSL://127.0.0.1:0,CLIENT://127.0.0.1:0",
            "listener.security.protocol.map=SASL_SSL:SASL_SSL,CLIENT:SASL_PLAINTEXT",
            "sasl.enabled.mechanisms=GSSAPI,SCRAM-SHA-512,PLAIN,OAUTHBEARER",
            "listener.name.client.sasl.enabled.mechanisms=SCRAM-SHA-256",
            "listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_a=\"b\";",
            "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users=User:admin; User:broker",
            "allow.everyone.if.no.acl.found=TRUE",
            "connections.max.reauth.ms=60000",
        ])
        .unwrap();
        let p = plan(&cfg).unwrap();
        let ssl = &p.listeners["SASL_SSL"];
        assert!(ssl.is_tls() && ssl.is_sasl());
        assert_eq!(ssl.mechanisms, vec!["SCRAM-SHA-512", "PLAIN"]);
        assert!(ssl.plain_jaas.as_deref().unwrap().contains("user_a"));
        let client = &p.listeners["CLIENT"];
        assert!(!client.is_tls() && client.is_sasl());
        assert_eq!(client.mechanisms, vec!["SCRAM-SHA-256"]);
        assert_eq!(p.warnings.len(), 1, "{:?}", p.warnings);
        assert!(p.warnings[0].contains("GSSAPI, OAUTHBEARER"));
        let a = p.authorizer.unwrap();
        assert_eq!(a.super_users, vec!["User:admin", "User:broker"]);
        assert!(a.allow_everyone_if_no_acl_found);
        assert_eq!(p.reauth_ms, 60_000);
        assert_eq!(p.sasl_receive_bytes_max, 524_288);
        let none = plan(&load(&["listeners=PLAINTEXT://127.0.0.1:0"]).unwrap()).unwrap();
        assert!(none.authorizer.is_none());
        assert_eq!(none.listeners["PLAINTEXT"].protocol, "PLAINTEXT");
    }
}
