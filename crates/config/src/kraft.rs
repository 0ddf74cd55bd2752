//! KRaft mode: `process.roles`, `node.id`, `controller.quorum.voters`,
//! `controller.quorum.bootstrap.servers` and `controller.listener.names`, read and checked as
//! Kafka's `KafkaConfig.validateValues` and `QuorumConfig.parseVoterConnections` do, with
//! Kafka's messages (a startup error prints them verbatim, exit 2).
//!
//! Mental model: a configuration without `process.roles` is Skiff's single node, exactly as
//! before (it formats its own log dir). With `process.roles` it is a KRaft node: [`check`]
//! applies Kafka's rules for the role set, then [`check_supported`] refuses what Skiff cannot
//! run yet instead of running it unsafely: a dynamic quorum (KIP-853). Every role set runs
//! against the static quorum `controller.quorum.voters`: voters run the Raft quorum of issue 16
//! (a combined single voter too, a quorum of one) and a broker-only node observes it.
//!
//! Invariants: pure (no I/O); [`Kraft`] exists only for a configuration that passed [`check`];
//! listener names are upper-cased as Kafka normalises them.

use crate::error::ConfigError;
use crate::listeners::Listener;

/// One `controller.quorum.voters` entry: `id@host:port`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Voter {
    pub id: i32,
    /// As written, without IPv6 brackets.
    pub host: String,
    pub port: u16,
}

impl std::fmt::Display for Voter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.host.contains(':') {
            write!(f, "{}@[{}]:{}", self.id, self.host, self.port)
        } else {
            write!(f, "{}@{}:{}", self.id, self.host, self.port)
        }
    }
}

/// A checked KRaft configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kraft {
    pub broker: bool,
    pub controller: bool,
    pub node_id: i32,
    /// In the order written (Kafka keeps the last of duplicate ids; Skiff refuses them).
    pub voters: Vec<Voter>,
    pub bootstrap_servers: Vec<String>,
    /// Upper-cased, in the order written.
    pub controller_listener_names: Vec<String>,
}

impl Kraft {
    /// Whether `name` is a controller listener.
    pub fn is_controller_listener(&self, name: &str) -> bool {
        self.controller_listener_names
            .iter()
            .any(|n| n.eq_ignore_ascii_case(name))
    }
}

/// What [`check`] reads: the effective values (unset = `None`), the bound listeners, and
/// whether `node.id` (or `broker.id`) was set explicitly rather than by Skiff's shipped default.
#[derive(Clone, Debug, Default)]
pub struct Input<'a> {
    pub process_roles: Option<&'a str>,
    pub node_id: Option<i32>,
    pub voters: Option<&'a str>,
    pub bootstrap_servers: Option<&'a str>,
    pub controller_listener_names: Option<&'a str>,
    pub listeners: &'a [Listener],
}

fn list(v: Option<&str>) -> Vec<String> {
    v.unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

fn err(message: impl Into<String>) -> ConfigError {
    ConfigError::Kraft(message.into())
}

/// `process.roles` as Kafka parses it: (broker, controller); both false when unset or empty.
pub fn parse_roles(value: Option<&str>) -> Result<(bool, bool), ConfigError> {
    let roles = list(value);
    let (mut broker, mut controller) = (false, false);
    for r in &roles {
        match r.as_str() {
            "broker" => broker = true,
            "controller" => controller = true,
            other => {
                return Err(ConfigError::InvalidValue {
                    key: "process.roles".into(),
                    value: other.to_string(),
                    reason: "String must be one of: broker, controller".into(),
                });
            }
        }
    }
    if usize::from(broker) + usize::from(controller) != roles.len() {
        return Err(err(format!(
            "Duplicate role names found in `process.roles`: ArrayBuffer({})",
            roles.join(", ")
        )));
    }
    Ok((broker, controller))
}

const VOTER_FORM: &str = "Each entry should be in the form `{id}@{host}:{port}`.";

/// `controller.quorum.voters` as Kafka's `QuorumConfig.parseVoterConnections` reads it, with
/// its messages; a duplicate id (which Kafka silently collapses) is refused.
pub fn parse_voters(value: Option<&str>) -> Result<Vec<Voter>, ConfigError> {
    let mut out: Vec<Voter> = Vec::new();
    for entry in list(value) {
        // Java's `split` drops trailing empty strings ("1@" is one part).
        let mut parts: Vec<&str> = entry.split('@').collect();
        while parts.last() == Some(&"") {
            parts.pop();
        }
        let [id, address] = parts[..] else {
            return Err(err(format!(
                "Invalid configuration value for controller.quorum.voters. {VOTER_FORM}"
            )));
        };
        let id: i32 = id
            .parse()
            .map_err(|_| err(format!("Failed to parse voter ID as an integer from {id}")))?;
        let (host, port) = split_host_port(address);
        let Some(host) = host.filter(|h| valid_host(h)) else {
            return Err(err(format!(
                "Failed to parse host name from entry {entry} for the configuration controller.quorum.voters. {VOTER_FORM}"
            )));
        };
        let Some(port) = port else {
            return Err(err(format!(
                "Failed to parse host port from entry {entry} for the configuration controller.quorum.voters. {VOTER_FORM}"
            )));
        };
        if out.iter().any(|v| v.id == id) {
            return Err(err(format!(
                "controller.quorum.voters names voter {id} twice; give each voter one entry"
            )));
        }
        out.push(Voter {
            id,
            host: host.to_string(),
            port,
        });
    }
    Ok(out)
}

/// Kafka's `Utils.getHost` / `Utils.getPort`: `host:port` or `[v6]:port`, the port the digits
/// after the last `:`.
fn split_host_port(address: &str) -> (Option<&str>, Option<u16>) {
    let Some((host, port)) = address.rsplit_once(':') else {
        return (None, None);
    };
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    let port = if !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) {
        port.parse().ok()
    } else {
        None
    };
    (Some(host), port)
}

/// Kafka's `Utils.validHostPattern`: letters, digits, `-._:%`, non-empty.
fn valid_host(host: &str) -> bool {
    !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._:%".contains(&b))
}

/// The voter ids as Kafka's message prints them (a Scala `Set`).
fn id_set(voters: &[Voter]) -> String {
    let ids: Vec<String> = voters.iter().map(|v| v.id.to_string()).collect();
    format!("Set({})", ids.join(", "))
}

/// A Scala `require` failure as Kafka prints it.
fn required(message: impl std::fmt::Display) -> ConfigError {
    err(format!("requirement failed: {message}"))
}

/// Kafka's KRaft rules for the role set (`None` when `process.roles` is unset or empty).
pub fn check(input: &Input<'_>) -> Result<Option<Kraft>, ConfigError> {
    let (broker, controller) = parse_roles(input.process_roles)?;
    if !broker && !controller {
        return Ok(None);
    }
    let Some(node_id) = input.node_id.filter(|n| *n >= 0) else {
        // Kafka 4.1 has no default for node.id (Skiff's shipped `1` is for the single node).
        return Err(err(
            "Missing required configuration \"node.id\" which has no default value.",
        ));
    };
    let voters = parse_voters(input.voters)?;
    let bootstrap_servers = list(input.bootstrap_servers);
    let names: Vec<String> = list(input.controller_listener_names)
        .into_iter()
        .map(|n| n.to_ascii_uppercase())
        .collect();
    let kraft = Kraft {
        broker,
        controller,
        node_id,
        voters,
        bootstrap_servers,
        controller_listener_names: names,
    };
    if kraft.voters.is_empty() && kraft.bootstrap_servers.is_empty() {
        return Err(err(
            "If using process.roles, either controller.quorum.bootstrap.servers must contain the set of bootstrap controllers or controller.quorum.voters must contain a parseable set of controllers.",
        ));
    }
    let is_voter = kraft.voters.iter().any(|v| v.id == node_id);
    let bound_controller = input
        .listeners
        .iter()
        .filter(|l| kraft.is_controller_listener(&l.name))
        .count();
    if controller {
        if !kraft.voters.is_empty() && !is_voter {
            return Err(required(format!(
                "If process.roles contains the 'controller' role, the node id {node_id} must be included in the set of voters controller.quorum.voters={}",
                id_set(&kraft.voters)
            )));
        }
        if bound_controller == 0 {
            return Err(required(
                "controller.listener.names must contain at least one value appearing in the 'listeners' configuration when running the KRaft controller role",
            ));
        }
        let bound: Vec<&str> = input.listeners.iter().map(|l| l.name.as_str()).collect();
        if !kraft
            .controller_listener_names
            .iter()
            .all(|n| bound.contains(&n.as_str()))
        {
            return Err(required(
                "controller.listener.names must only contain values appearing in the 'listeners' configuration when running the KRaft controller role",
            ));
        }
        if !broker && bound_controller != input.listeners.len() {
            return Err(required(
                "The listeners config must only contain KRaft controller listeners from controller.listener.names when process.roles=controller",
            ));
        }
    } else {
        if is_voter {
            return Err(required(format!(
                "If process.roles contains just the 'broker' role, the node id {node_id} must not be included in the set of voters controller.quorum.voters={}",
                id_set(&kraft.voters)
            )));
        }
        if kraft.controller_listener_names.is_empty() {
            return Err(required(
                "controller.listener.names must contain at least one value when running KRaft with just the broker role",
            ));
        }
        if bound_controller > 0 {
            return Err(required(
                "controller.listener.names must not contain a value appearing in the 'listeners' configuration when running KRaft with just the broker role",
            ));
        }
    }
    if broker && bound_controller == input.listeners.len() {
        return Err(required(
            "There must be at least one broker advertised listener. Perhaps all listeners appear in controller.listener.names?",
        ));
    }
    Ok(Some(kraft))
}

/// Refuses a valid KRaft configuration Skiff cannot run safely yet (see the module docs):
/// a dynamic quorum.
pub fn check_supported(kraft: &Kraft) -> Result<(), ConfigError> {
    const FIX: &str = "list the controllers in controller.quorum.voters (a static quorum) on every node, as process.roles=broker,controller, broker or controller";
    if kraft.voters.is_empty() {
        return Err(err(format!(
            "controller.quorum.bootstrap.servers without controller.quorum.voters asks for a dynamic quorum (KIP-853), which is not implemented by Skiff yet; {FIX}"
        )));
    }
    Ok(())
}

#[cfg(test)]
#[path = "kraft_tests.rs"]
mod tests;
