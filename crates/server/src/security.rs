//! What each listener demands of a connection (issue 19), as typed data the connection reads.
//!
//! Mental model: the binary turns the checked configuration (`skiff_config::security::plan`,
//! the TLS keys) into one [`ListenerSecurity`] per listener name once at start; a listener
//! missing from [`SecuritySettings::listeners`] is PLAINTEXT with no authentication, which is
//! also what tests get by default. TLS material lives in [`crate::tls::TlsListener`] (reloaded
//! in place when its files change); SASL users of PLAIN are the JAAS `user_<name>` entries;
//! SCRAM credentials are metadata records read at login time.
//!
//! Invariant: a listener whose protocol is SSL or SASL_SSL has `tls`; one whose protocol is
//! SASL_* has at least one mechanism (the config check refuses anything else).

use std::collections::BTreeMap;
use std::sync::Arc;

use skiff_auth::acl::AuthorizerConfig;

/// Kafka's four security protocols.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SecurityProtocol {
    #[default]
    Plaintext,
    Ssl,
    SaslPlaintext,
    SaslSsl,
}

impl SecurityProtocol {
    pub fn parse(s: &str) -> Option<Self> {
        match s.to_ascii_uppercase().as_str() {
            "PLAINTEXT" => Some(Self::Plaintext),
            "SSL" => Some(Self::Ssl),
            "SASL_PLAINTEXT" => Some(Self::SaslPlaintext),
            "SASL_SSL" => Some(Self::SaslSsl),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Plaintext => "PLAINTEXT",
            Self::Ssl => "SSL",
            Self::SaslPlaintext => "SASL_PLAINTEXT",
            Self::SaslSsl => "SASL_SSL",
        }
    }

    pub fn is_tls(self) -> bool {
        matches!(self, Self::Ssl | Self::SaslSsl)
    }

    pub fn is_sasl(self) -> bool {
        matches!(self, Self::SaslPlaintext | Self::SaslSsl)
    }
}

/// What a TLS listener gives a connection: the current acceptor (it changes when the key
/// files are reloaded) and the principal of a client certificate. Implemented by
/// [`crate::tls::TlsListener`].
pub trait TlsServer: std::fmt::Debug + Send + Sync {
    fn acceptor(&self) -> tokio_rustls::TlsAcceptor;
    /// The principal of the peer's certificate (`User:ANONYMOUS` without one); `Err` when
    /// no `ssl.principal.mapping.rules` rule applies (the connection is closed, as in Kafka).
    fn principal(
        &self,
        conn: &rustls::ServerConnection,
    ) -> Result<skiff_auth::principal::KafkaPrincipal, String>;
    /// Re-reads the key and trust files if their content changed (`Ok(true)`: swapped);
    /// on error the previous configuration stays in use.
    fn reload_if_changed(&self) -> Result<bool, String>;
}

impl TlsServer for crate::tls::TlsListener {
    fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        crate::tls::TlsListener::acceptor(self)
    }

    fn principal(
        &self,
        conn: &rustls::ServerConnection,
    ) -> Result<skiff_auth::principal::KafkaPrincipal, String> {
        crate::tls::TlsListener::principal(self, conn).map_err(|e| e.to_string())
    }

    fn reload_if_changed(&self) -> Result<bool, String> {
        crate::tls::TlsListener::reload_if_changed(self).map_err(|e| e.to_string())
    }
}

/// One listener's security.
#[derive(Clone, Debug, Default)]
pub struct ListenerSecurity {
    pub protocol: SecurityProtocol,
    /// SSL / SASL_SSL: the TLS acceptor and the certificate-to-principal mapping.
    pub tls: Option<Arc<dyn TlsServer>>,
    /// SASL: the mechanisms offered, in the configured order (`PLAIN`, `SCRAM-SHA-256`, ...).
    pub mechanisms: Vec<String>,
    /// PLAIN: user -> password (`user_<name>="<password>"` of the listener's JAAS text).
    pub plain_users: BTreeMap<String, String>,
}

/// The client side of inter-node connections (issue 19 item 4): how this node connects to
/// other nodes' inter-broker and controller listeners.
#[derive(Clone, Debug, Default)]
pub struct PeerSecurity {
    pub protocol: SecurityProtocol,
    /// TLS client configuration (trust store; the key store as the client certificate).
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// SASL: (mechanism, username, password), from the listener's JAAS text.
    pub sasl: Option<(String, String, String)>,
}

/// Every listener's security, the authorizer and the SASL limits.
#[derive(Clone, Debug)]
pub struct SecuritySettings {
    /// By listener name (upper case, as in `listeners`).
    pub listeners: BTreeMap<String, Arc<ListenerSecurity>>,
    /// `authorizer.class.name` set: the authorizer's settings.
    pub authorizer: Option<AuthorizerConfig>,
    /// `connections.max.reauth.ms` (0: sessions never expire).
    pub reauth_ms: u64,
    /// `sasl.server.max.receive.size`: the largest frame before authentication completes.
    pub sasl_receive_bytes_max: usize,
    /// How this node connects to the inter-broker listener of other nodes.
    pub inter_broker: PeerSecurity,
    /// How this node connects to the controller listener of the voters.
    pub controller: PeerSecurity,
    /// How often TLS key and trust files are checked for changes (ms).
    pub tls_reload_interval_ms: u64,
}

impl Default for SecuritySettings {
    fn default() -> Self {
        Self {
            listeners: BTreeMap::new(),
            authorizer: None,
            reauth_ms: 0,
            sasl_receive_bytes_max: 524_288,
            inter_broker: PeerSecurity::default(),
            controller: PeerSecurity::default(),
            tls_reload_interval_ms: 30_000,
        }
    }
}

impl SecuritySettings {
    /// A listener's security (PLAINTEXT when it is not configured).
    pub fn listener(&self, name: &str) -> Arc<ListenerSecurity> {
        self.listeners.get(name).cloned().unwrap_or_default()
    }
}

/// Reloads every TLS listener's files when they change, every
/// [`SecuritySettings::tls_reload_interval_ms`], until shutdown (issue 19: certificate
/// rotation without a restart). A broken new file is logged and the old one kept.
pub async fn reload_tls(broker: std::sync::Arc<crate::broker::Broker>) {
    let sec = &broker.settings.security;
    let tls: Vec<(String, Arc<dyn TlsServer>)> = sec
        .listeners
        .iter()
        .filter_map(|(n, l)| l.tls.clone().map(|t| (n.clone(), t)))
        .collect();
    if tls.is_empty() {
        return;
    }
    let every = std::time::Duration::from_millis(sec.tls_reload_interval_ms.max(100));
    let mut shutdown = broker.shutdown_signal();
    loop {
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = shutdown.changed() => return,
        }
        if *shutdown.borrow() {
            return;
        }
        for (name, t) in &tls {
            match t.reload_if_changed() {
                Ok(true) => {
                    tracing::info!(listener = %name, "TLS key or trust store changed on disk: reloaded; new connections use it")
                }
                Ok(false) => {}
                Err(e) => {
                    tracing::error!(listener = %name, error = %e, "TLS files changed but cannot be loaded; keeping the previous certificate")
                }
            }
        }
    }
}
