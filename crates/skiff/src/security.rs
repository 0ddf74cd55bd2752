//! From the checked security configuration to the server's [`SecuritySettings`] (issue 19).
//!
//! Mental model: `skiff_config::security::plan` has already refused what Skiff cannot do;
//! here the listener-level material is built once at start: TLS acceptors from the `ssl.*`
//! keys (`listener.name.<l>.ssl.*` first), PLAIN users from the listener's JAAS text, the
//! authorizer's super users, and the client side of inter-node connections (the inter-broker
//! and controller listeners' protocols, trust store and SASL login). Any failure is a
//! configuration error naming the key: the binary exits 2, never starting less safe than
//! configured.

use std::sync::Arc;

use skiff_auth::acl::AuthorizerConfig;
use skiff_auth::principal::KafkaPrincipal;
use skiff_config::BrokerConfig;
use skiff_config::security::{self as plan_mod, SecurityPlan};
use skiff_server::security::{ListenerSecurity, PeerSecurity, SecurityProtocol, SecuritySettings};
use skiff_server::tls::{TlsListener, TlsListenerConfig};

/// The server's security settings, or a configuration error.
pub fn security_settings(cfg: &BrokerConfig) -> Result<SecuritySettings, String> {
    let plan = plan_mod::plan(cfg).map_err(|e| e.to_string())?;
    for w in &plan.warnings {
        tracing::warn!("{w}");
    }
    let props = |k: &str| -> Option<String> {
        cfg.passthrough()
            .get(k)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
            .or_else(|| cfg.get_str(k))
    };
    let mut out = SecuritySettings {
        reauth_ms: plan.reauth_ms,
        sasl_receive_bytes_max: plan.sasl_receive_bytes_max,
        ..SecuritySettings::default()
    };
    for (name, ls) in &plan.listeners {
        let protocol = SecurityProtocol::parse(&ls.protocol)
            .ok_or_else(|| format!("listener {name}: unknown security protocol {}", ls.protocol))?;
        let tls: Option<Arc<dyn skiff_server::security::TlsServer>> = if protocol.is_tls() {
            // Kafka (KIP-684): on SASL_SSL listeners the broker-wide `ssl.client.auth` does not
            // apply; only `listener.name.<l>.ssl.client.auth` asks for client certificates.
            let sasl_ssl = protocol == SecurityProtocol::SaslSsl;
            let listener_props = |k: &str| -> Option<String> {
                if sasl_ssl && k == "ssl.client.auth" {
                    return None;
                }
                props(k)
            };
            let c = TlsListenerConfig::from_props(&listener_props, name)
                .map_err(|e| format!("listener {name}: {e}"))?;
            let t = TlsListener::new(c).map_err(|e| format!("listener {name}: {e}"))?;
            tracing::info!(target: "skiff::startup", listener = %name, tls = %t.describe(), "TLS");
            Some(t)
        } else {
            None
        };
        let plain_users = match &ls.plain_jaas {
            Some(text) => {
                let entry = skiff_auth::sasl::jaas::parse_jaas_config(text).map_err(|e| {
                    format!(
                        "listener.name.{}.plain.sasl.jaas.config: {}",
                        name.to_ascii_lowercase(),
                        e.0
                    )
                })?;
                let users = skiff_auth::sasl::jaas::plain_users(&entry);
                if users.is_empty() {
                    return Err(format!(
                        "listener.name.{}.plain.sasl.jaas.config has no user_<name>=\"<password>\" entry: PLAIN would accept nobody",
                        name.to_ascii_lowercase()
                    ));
                }
                users
            }
            None => Default::default(),
        };
        out.listeners.insert(
            name.clone(),
            Arc::new(ListenerSecurity {
                protocol,
                tls,
                mechanisms: ls.mechanisms.clone(),
                plain_users,
            }),
        );
    }
    out.authorizer = plan.authorizer.as_ref().map(|a| AuthorizerConfig {
        super_users: a
            .super_users
            .iter()
            .filter_map(|p| KafkaPrincipal::parse(p))
            .collect(),
        allow_everyone_if_no_acl_found: a.allow_everyone_if_no_acl_found,
    });
    if let Some(name) = inter_broker_listener(cfg) {
        out.inter_broker = peer_security(
            &plan,
            &name,
            (
                "sasl.mechanism.inter.broker.protocol",
                &plan.inter_broker_mechanism,
            ),
            &props,
        )?;
    }
    if let Some(name) = cfg
        .kraft()
        .and_then(|k| k.controller_listener_names.first().cloned())
    {
        out.controller = peer_security(
            &plan,
            &name,
            (
                "sasl.mechanism.controller.protocol",
                &plan.controller_mechanism,
            ),
            &props,
        )?;
    }
    Ok(out)
}

/// The listener other brokers are reached through: `inter.broker.listener.name`, else the
/// first non-controller listener (as the replica fetcher picks it).
fn inter_broker_listener(cfg: &BrokerConfig) -> Option<String> {
    cfg.get_str("inter.broker.listener.name")
        .map(|n| n.to_ascii_uppercase())
        .or_else(|| {
            let k = cfg.kraft();
            cfg.listeners()
                .iter()
                .find(|l| k.is_none_or(|k| !k.is_controller_listener(&l.name)))
                .map(|l| l.name.clone())
        })
}

/// How this node logs in to `listener` on its peers.
fn peer_security(
    plan: &SecurityPlan,
    listener: &str,
    (mechanism_key, mechanism): (&str, &str),
    props: &dyn Fn(&str) -> Option<String>,
) -> Result<PeerSecurity, String> {
    let Some(ls) = plan.listeners.get(listener) else {
        return Ok(PeerSecurity::default());
    };
    let protocol = SecurityProtocol::parse(&ls.protocol).unwrap_or_default();
    let tls = if protocol.is_tls() {
        let c = TlsListenerConfig::from_props(props, listener)
            .map_err(|e| format!("listener {listener}: {e}"))?;
        Some(
            skiff_server::tls::client_config(&c, c.endpoint_identification)
                .map_err(|e| format!("listener {listener} (inter-node client): {e}"))?,
        )
    } else {
        None
    };
    let sasl = if protocol.is_sasl() {
        let m = mechanism.to_ascii_uppercase();
        let Some(text) = ls.jaas.get(&m) else {
            return Err(format!(
                "listener {listener} uses {} and this node connects to it with SASL mechanism {m} ({}), but listener.name.{}.{}.sasl.jaas.config is not set: give it username=\"...\" password=\"...\" (a super user)",
                ls.protocol,
                mechanism_key,
                listener.to_ascii_lowercase(),
                m.to_ascii_lowercase()
            ));
        };
        let entry = skiff_auth::sasl::jaas::parse_jaas_config(text)
            .map_err(|e| format!("listener {listener} {m} JAAS config: {}", e.0))?;
        let Some((user, password)) = skiff_auth::sasl::jaas::client_credentials(&entry) else {
            return Err(format!(
                "listener.name.{}.{}.sasl.jaas.config has no username/password for this node's own connections to the listener",
                listener.to_ascii_lowercase(),
                m.to_ascii_lowercase()
            ));
        };
        if !ls.mechanisms.contains(&m) {
            return Err(format!(
                "this node connects to listener {listener} with SASL mechanism {m}, which the listener does not enable ({})",
                ls.mechanisms.join(", ")
            ));
        }
        Some((m, user, password))
    } else {
        None
    };
    Ok(PeerSecurity {
        protocol,
        tls,
        sasl,
    })
}
