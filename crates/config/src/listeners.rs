//! Listener lists: `NAME://host:port[,NAME://host:port...]`.
//!
//! Mental model: a [`Listener`] is a parsed endpoint. An empty host (or `0.0.0.0` / `::`) binds
//! all interfaces; port 0 asks the OS for a free port. Advertised listeners never carry a
//! wildcard host: when `advertised.listeners` is unset they are derived from `listeners` with
//! the wildcard replaced by this machine's host name, provided clients can resolve it:
//! otherwise an interface address (or `127.0.0.1`), with a warning. [`choose_advertised_host`]
//! decides (pure); [`local_hostname`] is its thin I/O shell (reading the host name, resolving
//! it, asking the routing table for the primary interface address). Plain data otherwise.

use std::net::{IpAddr, Ipv4Addr, ToSocketAddrs, UdpSocket};

use crate::error::ConfigError;

/// One parsed listener endpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listener {
    /// Upper-cased listener name, e.g. `PLAINTEXT`.
    pub name: String,
    /// Host as written, without IPv6 brackets; empty means all interfaces.
    pub host: String,
    pub port: u16,
}

impl Listener {
    /// True when the host binds every interface.
    pub fn is_wildcard(&self) -> bool {
        matches!(self.host.as_str(), "" | "0.0.0.0" | "::" | "[::]")
    }

    /// `host:port` for binding (wildcard hosts become `0.0.0.0`); IPv6 hosts get brackets.
    pub fn bind_addr(&self) -> String {
        let host = if self.host.is_empty() {
            "0.0.0.0"
        } else {
            &self.host
        };
        if host.contains(':') {
            format!("[{host}]:{}", self.port)
        } else {
            format!("{host}:{}", self.port)
        }
    }

    /// The same listener on another port (to fill in an ephemeral port after bind).
    pub fn with_port(&self, port: u16) -> Listener {
        Listener {
            port,
            ..self.clone()
        }
    }
}

impl std::fmt::Display for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.host.contains(':') {
            write!(f, "{}://[{}]:{}", self.name, self.host, self.port)
        } else {
            write!(f, "{}://{}:{}", self.name, self.host, self.port)
        }
    }
}

/// Parses a comma-separated listener list for config key `key`.
pub fn parse_listeners(key: &str, value: &str) -> Result<Vec<Listener>, ConfigError> {
    let mut out: Vec<Listener> = Vec::new();
    for entry in value.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let l = parse_one(key, entry)?;
        if out.iter().any(|o| o.name == l.name) {
            return Err(bad(
                key,
                entry,
                format!("listener name {} appears twice", l.name),
            ));
        }
        out.push(l);
    }
    if out.is_empty() {
        return Err(bad(key, value, "no listener given".to_string()));
    }
    Ok(out)
}

fn bad(key: &str, entry: &str, reason: String) -> ConfigError {
    ConfigError::BadListener {
        key: key.to_string(),
        entry: entry.to_string(),
        reason,
    }
}

fn parse_one(key: &str, entry: &str) -> Result<Listener, ConfigError> {
    let (name, rest) = entry
        .split_once("://")
        .ok_or_else(|| bad(key, entry, "missing `://` after the listener name".into()))?;
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(bad(
            key,
            entry,
            "the listener name must be letters, digits, `_` or `-`".into(),
        ));
    }
    let (host, port) = if let Some(v6) = rest.strip_prefix('[') {
        let (h, p) = v6.split_once("]:").ok_or_else(|| {
            bad(
                key,
                entry,
                "an IPv6 host must be written [addr]:port".into(),
            )
        })?;
        (h.to_string(), p)
    } else {
        let (h, p) = rest
            .rsplit_once(':')
            .ok_or_else(|| bad(key, entry, "missing `:port`".into()))?;
        if h.contains(':') {
            return Err(bad(
                key,
                entry,
                "write IPv6 hosts in brackets, e.g. [::1]".into(),
            ));
        }
        (h.to_string(), p)
    };
    if host.contains('/') || host.contains(' ') {
        return Err(bad(key, entry, format!("`{host}` is not a host name")));
    }
    let port: u16 = port.parse().map_err(|_| {
        bad(
            key,
            entry,
            format!("`{port}` is not a port number (0-65535)"),
        )
    })?;
    Ok(Listener {
        name: name.to_ascii_uppercase(),
        host,
        port,
    })
}

/// Parses `advertised.listeners`, refusing wildcard hosts like Kafka does.
pub fn parse_advertised(key: &str, value: &str) -> Result<Vec<Listener>, ConfigError> {
    let list = parse_listeners(key, value)?;
    for l in &list {
        if l.is_wildcard() {
            return Err(bad(
                key,
                &l.to_string(),
                "an advertised address must be reachable by clients; 0.0.0.0, :: or an empty host cannot be advertised".into(),
            ));
        }
    }
    Ok(list)
}

/// Advertised listeners derived from bind listeners: wildcard hosts become `hostname`.
pub fn derive_advertised(listeners: &[Listener], hostname: &str) -> Vec<Listener> {
    listeners
        .iter()
        .map(|l| {
            if l.is_wildcard() {
                Listener {
                    host: hostname.to_string(),
                    ..l.clone()
                }
            } else {
                l.clone()
            }
        })
        .collect()
}

/// Advertised listeners derived from bind listeners (see [`derive_advertised`]); the host name
/// is looked up (and resolved) only when some listener is a wildcard.
pub fn advertised_for(listeners: &[Listener]) -> Vec<Listener> {
    if listeners.iter().any(Listener::is_wildcard) {
        derive_advertised(listeners, &local_hostname())
    } else {
        listeners.to_vec()
    }
}

/// The host a wildcard listener advertises: `hostname` if it is set and `resolves`, else the
/// primary interface address, else `127.0.0.1`; the second value is the warning to log when
/// the host name could not be used.
pub fn choose_advertised_host(
    hostname: Option<&str>,
    resolves: impl Fn(&str) -> bool,
    interface: Option<IpAddr>,
) -> (String, Option<String>) {
    let name = hostname.map(str::trim).filter(|h| !h.is_empty());
    if let Some(h) = name
        && resolves(h)
    {
        return (h.to_string(), None);
    }
    let why = match name {
        Some(h) => format!("host name {h:?} does not resolve"),
        None => "the host name is not set".to_string(),
    };
    let usable = interface.filter(|ip| !ip.is_unspecified());
    let (host, what) = match usable {
        Some(ip) => (ip.to_string(), "this machine's primary interface address"),
        None => (
            Ipv4Addr::LOCALHOST.to_string(),
            "reachable by local clients only",
        ),
    };
    let warning = format!(
        "{why}: wildcard listeners advertise {host} ({what}); set advertised.listeners to choose"
    );
    (host, Some(warning))
}

/// The host name wildcard listeners advertise: this machine's host name when it resolves,
/// otherwise an interface address or `127.0.0.1`, with a warning (see
/// [`choose_advertised_host`]).
pub fn local_hostname() -> String {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|s| !s.is_empty()));
    let (host, warning) = choose_advertised_host(name.as_deref(), resolves, primary_interface());
    if let Some(w) = warning {
        tracing::warn!("{w}");
    }
    host
}

/// Whether `host` resolves to at least one address.
fn resolves(host: &str) -> bool {
    (host, 0u16)
        .to_socket_addrs()
        .is_ok_and(|mut addrs| addrs.next().is_some())
}

/// The local address the routing table would use to reach the outside (a UDP "connect" sends
/// nothing); `None` without a route.
fn primary_interface() -> Option<IpAddr> {
    let s = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).ok()?;
    // TEST-NET-1 (RFC 5737): routed, never answered; nothing is sent anyway.
    s.connect((Ipv4Addr::new(192, 0, 2, 1), 9)).ok()?;
    s.local_addr().ok().map(|a| a.ip())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listener_parsing_table() {
        let ok = |v: &str| parse_listeners("listeners", v).unwrap();
        let l = ok("PLAINTEXT://127.0.0.1:9092");
        assert_eq!(
            l,
            vec![Listener {
                name: "PLAINTEXT".into(),
                host: "127.0.0.1".into(),
                port: 9092
            }]
        );
        let l = ok("plaintext://:9092, SSL://[::1]:9093,INTERNAL://host-a:0");
        assert_eq!(l[0].host, "");
        assert!(l[0].is_wildcard());
        assert_eq!(l[0].bind_addr(), "0.0.0.0:9092");
        assert_eq!(l[1].host, "::1");
        assert_eq!(l[1].bind_addr(), "[::1]:9093");
        assert_eq!(l[1].to_string(), "SSL://[::1]:9093");
        assert_eq!(l[2].port, 0);
        for bad in [
            "127.0.0.1:9092",
            "PLAINTEXT://127.0.0.1",
            "PLAINTEXT://127.0.0.1:99999",
            "PLAINTEXT://127.0.0.1:x",
            "://h:1",
            "PLAIN TEXT://h:1",
            "A://h:1,A://h:2",
            "A://::1:9092",
            "",
        ] {
            let e = parse_listeners("listeners", bad).unwrap_err();
            assert!(e.to_string().contains("NAME://host:port"), "{bad}: {e}");
        }
    }

    #[test]
    fn advertised_refuses_wildcards_and_derivation_replaces_them() {
        assert!(parse_advertised("advertised.listeners", "PLAINTEXT://0.0.0.0:9092").is_err());
        assert!(parse_advertised("advertised.listeners", "PLAINTEXT://:9092").is_err());
        let l = parse_listeners("listeners", "PLAINTEXT://0.0.0.0:9092,B://10.0.0.1:1").unwrap();
        let a = derive_advertised(&l, "box1");
        assert_eq!(a[0].to_string(), "PLAINTEXT://box1:9092");
        assert_eq!(a[1].to_string(), "B://10.0.0.1:1");
        assert!(!local_hostname().is_empty());
        // No wildcard: nothing to look up.
        let l = parse_listeners("listeners", "PLAINTEXT://127.0.0.1:9092").unwrap();
        assert_eq!(advertised_for(&l), l);
        let l = parse_listeners("listeners", "PLAINTEXT://:9092").unwrap();
        assert!(!advertised_for(&l)[0].is_wildcard());
    }

    #[test]
    fn advertised_host_choice_table() {
        let eth: Option<IpAddr> = Some("10.1.2.3".parse().unwrap());
        let any: Option<IpAddr> = Some("0.0.0.0".parse().unwrap());
        let known = |h: &str| h == "box1";
        // (host name, interface address) -> (advertised host, warned)
        let cases: [(Option<&str>, Option<IpAddr>, &str, bool); 7] = [
            (Some("box1"), eth, "box1", false),
            (Some(" box1\n"), None, "box1", false),
            (Some("nowhere"), eth, "10.1.2.3", true),
            (Some("nowhere"), None, "127.0.0.1", true),
            (Some("nowhere"), any, "127.0.0.1", true),
            (None, eth, "10.1.2.3", true),
            (Some(""), None, "127.0.0.1", true),
        ];
        for (name, iface, want, warned) in cases {
            let (host, warning) = choose_advertised_host(name, known, iface);
            assert_eq!(host, want, "{name:?} {iface:?}");
            assert_eq!(warning.is_some(), warned, "{name:?} {iface:?}: {warning:?}");
            if let Some(w) = warning {
                assert!(
                    w.contains(want) && w.contains("advertised.listeners"),
                    "{w}"
                );
            }
        }
        // The shell's resolver (no network lookup: localhost is local).
        assert!(resolves("localhost"));
    }
}
