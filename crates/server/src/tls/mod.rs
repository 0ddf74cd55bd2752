//! TLS for listeners and inter-node clients (issue 19), with rustls and the ring provider.
//!
//! Mental model:
//! - [`TlsListenerConfig`] ([`config`]): one listener's `ssl.*` settings, Kafka's names and
//!   per-listener overrides, PEM stores only. Pure data.
//! - [`TlsListener`]: the live server side of one listener, built from a config. It holds the
//!   current `rustls::ServerConfig` behind a lock; [`TlsListener::acceptor`] hands out the
//!   current one (an `Arc` clone) per accepted connection, and
//!   [`TlsListener::reload_if_changed`] swaps in a new one when the store files' content
//!   changed. A handshake keeps the config it started with, so a swap never disturbs
//!   connections in flight; a broken new file leaves the old config in place.
//! - [`TlsListener::principal`]: on mutual TLS the peer certificate's subject, formatted as
//!   Java's `X500Principal.getName()` ([`dn`]) and mapped by `ssl.principal.mapping.rules`;
//!   `User:ANONYMOUS` without a client certificate.
//! - [`client_config`]: the client side for inter-node connections (trust store as roots,
//!   keystore as the client certificate).
//!
//! Invariants: the crypto provider is always passed explicitly
//! (`rustls::crypto::ring::default_provider()`), never the process default; no key material
//! is logged or shown by `Debug`; nothing here panics on file or peer input.
//!
//! Sendfile: bytes on a TLS connection are encrypted in user space, so a Fetch response's
//! file regions cannot go to the socket with `sendfile`; the connection layer reads the
//! regions into memory and writes them through the TLS stream (kTLS is the later option).

pub mod config;
pub mod dn;
mod material;

#[cfg(test)]
mod tests;

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::server::WebPkiClientVerifier;
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, ServerConfig,
    SignatureScheme,
};
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};
use skiff_auth::principal::KafkaPrincipal;

pub use config::{ClientAuth, KeyStoreSource, TlsListenerConfig, TlsProtocol, TrustStoreSource};
use material::{Material, Snapshot};

/// A TLS setting, store or handshake-setup error. The text names the setting (and the file)
/// and says what to fix.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("{key}: {message}")]
    Config { key: String, message: String },
    #[error("{setting} ({}): {message}", path.display())]
    File {
        setting: String,
        path: PathBuf,
        message: String,
    },
    #[error("listener {listener}: {message}")]
    Setup { listener: String, message: String },
    /// The client certificate maps to no principal (Kafka fails the authentication).
    #[error("client certificate: {0}")]
    Principal(String),
}

/// What was loaded, for [`TlsListener::describe`].
#[derive(Debug, Clone)]
struct Summary {
    subject: String,
    issuer: String,
    not_after_unix: i64,
    chain_len: usize,
    roots: usize,
}

#[derive(Debug)]
struct Loaded {
    server: Arc<ServerConfig>,
    snapshot: Snapshot,
    summary: Summary,
}

/// The live TLS side of one listener (see the module doc).
pub struct TlsListener {
    cfg: TlsListenerConfig,
    current: RwLock<Arc<Loaded>>,
    /// Serializes reloads; holds the content of the last broken files, so one broken change
    /// is reported once, not at every poll.
    reload: Mutex<Option<Snapshot>>,
}

impl std::fmt::Debug for TlsListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsListener")
            .field("listener", &self.cfg.listener)
            .field("subject", &self.current.read().summary.subject)
            .finish_non_exhaustive()
    }
}

/// The ring provider restricted to the configured cipher suites.
fn provider(cfg: &TlsListenerConfig) -> Result<Arc<CryptoProvider>, TlsError> {
    let mut provider = config::ring_provider();
    if cfg.cipher_suites.is_empty() {
        // Issue 19 performance: AES-128-GCM first (with AES-NI about a third cheaper per byte
        // than AES-256-GCM, which OpenSSL clients ask for first); the server's order wins
        // (`ignore_client_order` in `build_server`). `ssl.cipher.suites` keeps its own order.
        provider.cipher_suites.sort_by_key(|s| {
            let name = format!("{:?}", s.suite());
            (!name.contains("AES_128_GCM"), !name.contains("AES_256_GCM"))
        });
    }
    if !cfg.cipher_suites.is_empty() {
        provider.cipher_suites =
            config::resolve_cipher_suites(&cfg.cipher_suites).map_err(|message| {
                TlsError::Config {
                    key: "ssl.cipher.suites".into(),
                    message,
                }
            })?;
    }
    Ok(Arc::new(provider))
}

fn setup_err(cfg: &TlsListenerConfig, message: impl std::fmt::Display) -> TlsError {
    TlsError::Setup {
        listener: cfg.listener.clone(),
        message: message.to_string(),
    }
}

fn versions(cfg: &TlsListenerConfig) -> Vec<&'static rustls::SupportedProtocolVersion> {
    cfg.enabled_protocols.iter().map(|p| p.rustls()).collect()
}

fn root_store(
    cfg: &TlsListenerConfig,
    roots: &[CertificateDer<'static>],
) -> Result<Arc<RootCertStore>, TlsError> {
    let mut store = RootCertStore::empty();
    for (i, cert) in roots.iter().enumerate() {
        store.add(cert.clone()).map_err(|e| {
            setup_err(
                cfg,
                format!(
                    "trusted certificate #{} is not usable as a root: {e}",
                    i + 1
                ),
            )
        })?;
    }
    Ok(Arc::new(store))
}

fn truststore_missing(why: &str) -> TlsError {
    TlsError::Config {
        key: "ssl.truststore.location".into(),
        message: format!(
            "{why} needs a trust store: set ssl.truststore.location (a PEM file of CA \
             certificates) or ssl.truststore.certificates"
        ),
    }
}

fn build_server(cfg: &TlsListenerConfig, m: Material) -> Result<ServerConfig, TlsError> {
    let provider = provider(cfg)?;
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions(cfg))
        .map_err(|e| setup_err(cfg, e))?;
    let builder = match cfg.client_auth {
        ClientAuth::None => builder.with_no_client_auth(),
        auth => {
            if m.roots.is_empty() {
                return Err(truststore_missing(&format!(
                    "ssl.client.auth={}",
                    auth.as_str()
                )));
            }
            let roots = root_store(cfg, &m.roots)?;
            let mut v = WebPkiClientVerifier::builder_with_provider(roots, provider);
            if auth == ClientAuth::Requested {
                v = v.allow_unauthenticated();
            }
            builder.with_client_cert_verifier(v.build().map_err(|e| setup_err(cfg, e))?)
        }
    };
    let Some(key) = m.key else {
        return Err(TlsError::Config {
            key: "ssl.keystore.location".into(),
            message: "a TLS listener needs its certificate and private key: set \
                      ssl.keystore.location (one PEM file: key + chain) or \
                      ssl.keystore.certificate.chain and ssl.keystore.key"
                .into(),
        });
    };
    let mut config = builder.with_single_cert(m.chain, key).map_err(|e| {
        setup_err(
            cfg,
            format!("the private key and the certificate chain do not go together: {e}"),
        )
    })?;
    config.ignore_client_order = true;
    Ok(config)
}

fn summarize(m: &Material) -> Summary {
    let (subject, issuer, not_after_unix) = m
        .chain
        .first()
        .and_then(|c| x509_parser::parse_x509_certificate(c).ok())
        .map(|(_, c)| {
            (
                dn::name_rfc2253(c.subject()),
                dn::name_rfc2253(c.issuer()),
                c.validity().not_after.timestamp(),
            )
        })
        .unwrap_or_default();
    Summary {
        subject,
        issuer,
        not_after_unix,
        chain_len: m.chain.len(),
        roots: m.roots.len(),
    }
}

fn load(cfg: &TlsListenerConfig, snapshot: Snapshot) -> Result<Loaded, TlsError> {
    let m = material::parse(cfg, &snapshot)?;
    let summary = summarize(&m);
    let server = Arc::new(build_server(cfg, m)?);
    Ok(Loaded {
        server,
        snapshot,
        summary,
    })
}

impl TlsListener {
    /// Reads the stores and builds the server side; every problem is an error here (start-up).
    pub fn new(cfg: TlsListenerConfig) -> Result<Arc<TlsListener>, TlsError> {
        let snapshot = material::read_files(&cfg)?;
        let loaded = load(&cfg, snapshot)?;
        Ok(Arc::new(TlsListener {
            cfg,
            current: RwLock::new(Arc::new(loaded)),
            reload: Mutex::new(None),
        }))
    }

    pub fn config(&self) -> &TlsListenerConfig {
        &self.cfg
    }

    /// An acceptor with the current config (an `Arc` clone: cheap, call it per connection).
    pub fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        tokio_rustls::TlsAcceptor::from(self.current.read().server.clone())
    }

    /// The principal of a handshaken connection: the client certificate's RFC 2253 subject
    /// through `ssl.principal.mapping.rules` as `User:<name>`, or `User:ANONYMOUS` without a
    /// client certificate. An error (no rule maps the subject, an unparsable certificate)
    /// must fail the connection, as Kafka fails the authentication.
    pub fn principal(&self, conn: &rustls::ServerConnection) -> Result<KafkaPrincipal, TlsError> {
        let Some(leaf) = conn.peer_certificates().and_then(|c| c.first()) else {
            return Ok(KafkaPrincipal::anonymous());
        };
        let subject = dn::subject_rfc2253(leaf).map_err(TlsError::Principal)?;
        let name = self
            .cfg
            .principal_mapper
            .apply(&subject)
            .map_err(|e| TlsError::Principal(e.to_string()))?;
        Ok(KafkaPrincipal::user(name))
    }

    /// Re-reads the store files; when their content differs from the loaded one, builds a new
    /// config and swaps it in (`Ok(true)`). A broken new content keeps the old config and is
    /// returned as the error once (the same broken content again is `Ok(false)`). Inline
    /// stores never change: `Ok(false)`.
    pub fn reload_if_changed(&self) -> Result<bool, TlsError> {
        let mut last_broken = self.reload.lock();
        let snapshot = material::read_files(&self.cfg)?;
        if snapshot == self.current.read().snapshot || last_broken.as_ref() == Some(&snapshot) {
            return Ok(false);
        }
        match load(&self.cfg, snapshot.clone()) {
            Ok(loaded) => {
                *self.current.write() = Arc::new(loaded);
                *last_broken = None;
                Ok(true)
            }
            Err(e) => {
                *last_broken = Some(snapshot);
                Err(e)
            }
        }
    }

    /// The current certificate's expiry (seconds since the epoch), for an expiry gauge.
    pub fn certificate_not_after_unix(&self) -> i64 {
        self.current.read().summary.not_after_unix
    }

    /// One line for the start-up summary: subject, issuer, expiry, client auth, protocols.
    pub fn describe(&self) -> String {
        let s = self.current.read().summary.clone();
        let cfg = &self.cfg;
        let protocols: Vec<&str> = cfg.enabled_protocols.iter().map(|p| p.as_str()).collect();
        let mut out = format!(
            "listener {}: TLS certificate {} (issuer {}, expires {}, chain of {}) from {}; \
             client auth {}",
            cfg.listener,
            s.subject,
            s.issuer,
            rfc3339_utc(s.not_after_unix),
            s.chain_len,
            source_text(cfg),
            cfg.client_auth.as_str(),
        );
        if s.roots > 0 {
            let _ = write!(out, " ({} trusted certificate(s))", s.roots);
        }
        let _ = write!(out, "; protocols {}", protocols.join(","));
        if !cfg.cipher_suites.is_empty() {
            let _ = write!(out, "; cipher suites {}", cfg.cipher_suites.join(","));
        }
        if cfg.client_auth != ClientAuth::None {
            let _ = write!(out, "; principal mapping {}", cfg.principal_mapper);
        }
        out
    }
}

fn source_text(cfg: &TlsListenerConfig) -> String {
    match &cfg.keystore {
        Some(KeyStoreSource::File { path, .. }) => path.display().to_string(),
        Some(KeyStoreSource::Inline { chain_setting, .. }) => format!("{chain_setting} (inline)"),
        None => "nowhere".into(),
    }
}

/// `1970-01-01T00:00:00Z` from seconds since the epoch (proleptic Gregorian, UTC).
fn rfc3339_utc(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The client side for inter-node connections: the trust store as roots (required: there is
/// no system store), the keystore (when set) as the client certificate. `server_name_check`
/// false keeps the chain check but accepts any host name (Kafka's empty
/// `ssl.endpoint.identification.algorithm`; callers pass `cfg.endpoint_identification`).
pub fn client_config(
    cfg: &TlsListenerConfig,
    server_name_check: bool,
) -> Result<Arc<ClientConfig>, TlsError> {
    let snapshot = material::read_files(cfg)?;
    let m = material::parse(cfg, &snapshot)?;
    if m.roots.is_empty() {
        return Err(truststore_missing("an inter-node TLS client"));
    }
    let provider = provider(cfg)?;
    let roots = root_store(cfg, &m.roots)?;
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions(cfg))
        .map_err(|e| setup_err(cfg, e))?;
    let builder = if server_name_check {
        builder.with_root_certificates(roots)
    } else {
        let inner = rustls::client::WebPkiServerVerifier::builder_with_provider(roots, provider)
            .build()
            .map_err(|e| setup_err(cfg, e))?;
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyHostName(inner)))
    };
    let config = match m.key {
        Some(key) => builder
            .with_client_auth_cert(m.chain, key)
            .map_err(|e| setup_err(cfg, format!("client certificate: {e}")))?,
        None => builder.with_no_client_auth(),
    };
    Ok(Arc::new(config))
}

/// The WebPKI verifier with the host-name check dropped: the chain, validity and signatures
/// are still verified (the name is checked last, so `NotValidForName` means all else passed).
#[derive(Debug)]
struct AnyHostName(Arc<rustls::client::WebPkiServerVerifier>);

impl ServerCertVerifier for AnyHostName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}
