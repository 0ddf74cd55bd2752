//! A TLS listener's settings, read the way Kafka reads them (issue 19).
//!
//! Mental model: [`TlsListenerConfig::from_props`] turns the broker's properties into one
//! validated value per listener. Each `ssl.X` is looked up first as
//! `listener.name.<listener, lower-case>.ssl.X` and then as `ssl.X` (Kafka's per-listener
//! override). Only PEM stores exist here (Kafka's `ssl.keystore.type=PEM`): one file holding
//! the private key and the certificate chain (`ssl.keystore.location`), or the two inline values
//! (`ssl.keystore.certificate.chain` + `ssl.keystore.key`); `ssl.key.password` only decrypts an
//! encrypted PKCS#8 key. JKS and PKCS12 are refused with the command that converts them.
//!
//! Invariants: every error names the setting (as written, prefix included) and says what to
//! change; nothing here reads a file (that is `material.rs`, at build and at each reload), so a
//! config is pure data and cheap to clone; secrets (inline key, key password) never appear in
//! `Debug` output.

use std::fmt;
use std::path::PathBuf;

use rustls::SupportedCipherSuite;
use skiff_auth::principal::SslPrincipalMapper;

use super::TlsError;

/// `ssl.client.auth` (Kafka's `SslClientAuth`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientAuth {
    /// No client certificate asked for (Kafka's default).
    None,
    /// Asked for; a client without one connects as `User:ANONYMOUS`.
    Requested,
    /// Required: the handshake fails without a certificate the trust store accepts.
    Required,
}

impl ClientAuth {
    pub fn as_str(self) -> &'static str {
        match self {
            ClientAuth::None => "none",
            ClientAuth::Requested => "requested",
            ClientAuth::Required => "required",
        }
    }
}

/// A protocol of `ssl.enabled.protocols` that rustls speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlsProtocol {
    TlsV12,
    TlsV13,
}

impl TlsProtocol {
    pub fn as_str(self) -> &'static str {
        match self {
            TlsProtocol::TlsV12 => "TLSv1.2",
            TlsProtocol::TlsV13 => "TLSv1.3",
        }
    }

    pub(crate) fn rustls(self) -> &'static rustls::SupportedProtocolVersion {
        match self {
            TlsProtocol::TlsV12 => &rustls::version::TLS12,
            TlsProtocol::TlsV13 => &rustls::version::TLS13,
        }
    }
}

/// Where the private key and certificate chain come from.
#[derive(Clone, PartialEq, Eq)]
pub enum KeyStoreSource {
    /// `ssl.keystore.location`: one PEM file, private key and chain (leaf first). `setting` is
    /// the key that named it, prefix included.
    File { path: PathBuf, setting: String },
    /// `ssl.keystore.certificate.chain` + `ssl.keystore.key`, PEM text in the properties.
    Inline {
        chain: String,
        key: String,
        chain_setting: String,
        key_setting: String,
    },
}

/// Where the trusted certificates come from (client certificates on a listener; the peer's
/// certificate on an inter-node client).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TrustStoreSource {
    /// `ssl.truststore.location`: a PEM file of one or more certificates.
    File { path: PathBuf, setting: String },
    /// `ssl.truststore.certificates`: PEM text in the properties.
    Inline {
        certificates: String,
        setting: String,
    },
}

/// One listener's TLS settings (see the module doc).
#[derive(Clone)]
pub struct TlsListenerConfig {
    /// The listener name, lower-case (`ssl`, `internal`, ...).
    pub listener: String,
    /// `None` only on a client without a client certificate; a listener needs one.
    pub keystore: Option<KeyStoreSource>,
    /// `ssl.key.password`: the password of an encrypted PKCS#8 key.
    pub key_password: Option<String>,
    pub truststore: Option<TrustStoreSource>,
    pub client_auth: ClientAuth,
    /// `ssl.enabled.protocols`, in the order given (default TLSv1.2, TLSv1.3).
    pub enabled_protocols: Vec<TlsProtocol>,
    /// `ssl.protocol` as given (TLS, TLSv1.2 or TLSv1.3; informational with rustls).
    pub protocol: String,
    /// `ssl.cipher.suites` as IANA names; empty = rustls' defaults.
    pub cipher_suites: Vec<String>,
    pub principal_mapper: SslPrincipalMapper,
    /// `ssl.endpoint.identification.algorithm`: `https` (default) = check the peer's host
    /// name (client side), empty = do not.
    pub endpoint_identification: bool,
}

impl fmt::Debug for KeyStoreSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyStoreSource::File { path, setting } => f
                .debug_struct("File")
                .field("path", path)
                .field("setting", setting)
                .finish(),
            KeyStoreSource::Inline { chain_setting, .. } => f
                .debug_struct("Inline")
                .field("chain_setting", chain_setting)
                .field("key", &"[hidden]")
                .finish_non_exhaustive(),
        }
    }
}

impl fmt::Debug for TlsListenerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsListenerConfig")
            .field("listener", &self.listener)
            .field("keystore", &self.keystore)
            .field(
                "key_password",
                &self.key_password.as_ref().map(|_| "[hidden]"),
            )
            .field("truststore", &self.truststore)
            .field("client_auth", &self.client_auth)
            .field("enabled_protocols", &self.enabled_protocols)
            .field("protocol", &self.protocol)
            .field("cipher_suites", &self.cipher_suites)
            .field("principal_mapper", &self.principal_mapper.to_string())
            .field("endpoint_identification", &self.endpoint_identification)
            .finish()
    }
}

/// How to turn a JKS / PKCS12 store into the PEM files read here.
pub(crate) const CONVERT_KEYSTORE: &str = "convert it to PEM: `keytool -importkeystore \
     -srckeystore server.jks -destkeystore server.p12 -deststoretype PKCS12` (JKS only), then \
     `openssl pkcs12 -in server.p12 -nodes -out server.pem` (private key + chain in one file), \
     and set ssl.keystore.type=PEM and ssl.keystore.location=server.pem (to keep the key \
     encrypted: `openssl pkcs8 -topk8 -v2 aes-256-cbc` and ssl.key.password)";
pub(crate) const CONVERT_TRUSTSTORE: &str = "convert it to PEM: `keytool -exportcert -rfc \
     -keystore truststore.jks -alias <ca alias> -file ca.pem` (JKS) or `openssl pkcs12 -in \
     truststore.p12 -nokeys -out ca.pem` (PKCS12), and set ssl.truststore.type=PEM and \
     ssl.truststore.location=ca.pem";

/// Property lookup with Kafka's listener prefix.
struct Props<'a> {
    get: &'a dyn Fn(&str) -> Option<String>,
    prefix: String,
}

impl Props<'_> {
    /// `(value, the key it came from)`; the listener-prefixed key wins.
    fn get(&self, key: &str) -> Option<(String, String)> {
        let prefixed = format!("{}{key}", self.prefix);
        if let Some(v) = (self.get)(&prefixed) {
            return Some((v, prefixed));
        }
        (self.get)(key).map(|v| (v, key.to_string()))
    }
}

fn config_err(key: &str, message: impl Into<String>) -> TlsError {
    TlsError::Config {
        key: key.to_string(),
        message: message.into(),
    }
}

impl TlsListenerConfig {
    /// Reads listener `listener`'s TLS settings (see the module doc). `props` answers a
    /// property by its full key.
    pub fn from_props(
        props: &dyn Fn(&str) -> Option<String>,
        listener: &str,
    ) -> Result<TlsListenerConfig, TlsError> {
        let listener = listener.to_ascii_lowercase();
        let p = Props {
            get: props,
            prefix: format!("listener.name.{listener}."),
        };
        let keystore = read_keystore(&p)?;
        let key_password = p.get("ssl.key.password").map(|(v, _)| v);
        let truststore = read_truststore(&p)?;
        let client_auth = match p.get("ssl.client.auth") {
            None => ClientAuth::None,
            Some((v, key)) => match v.trim().to_ascii_lowercase().as_str() {
                "" | "none" => ClientAuth::None,
                "requested" => ClientAuth::Requested,
                "required" => ClientAuth::Required,
                _ => {
                    return Err(config_err(
                        &key,
                        format!("`{v}` is not one of none, requested, required"),
                    ));
                }
            },
        };
        let enabled_protocols = read_protocols(&p)?;
        let protocol = match p.get("ssl.protocol") {
            None => "TLSv1.3".to_string(),
            Some((v, key)) => match v.trim() {
                "TLS" | "TLSv1.2" | "TLSv1.3" => v.trim().to_string(),
                _ => {
                    return Err(config_err(
                        &key,
                        format!(
                            "`{v}` is not supported: use TLSv1.3, TLSv1.2 or TLS \
                             (rustls speaks TLS 1.2 and 1.3 only)"
                        ),
                    ));
                }
            },
        };
        let cipher_suites = match p.get("ssl.cipher.suites") {
            None => Vec::new(),
            Some((v, key)) => {
                let names = split_list(&v);
                resolve_cipher_suites(&names).map_err(|m| config_err(&key, m))?;
                names
            }
        };
        if !cipher_suites.is_empty() {
            check_suites_cover_protocols(&cipher_suites, &enabled_protocols)
                .map_err(|m| config_err("ssl.cipher.suites", m))?;
        }
        let principal_mapper = match p.get("ssl.principal.mapping.rules") {
            None => SslPrincipalMapper::default(),
            Some((v, key)) => SslPrincipalMapper::from_rules(Some(&v))
                .map_err(|e| config_err(&key, e.to_string()))?,
        };
        let endpoint_identification = match p.get("ssl.endpoint.identification.algorithm") {
            None => true,
            Some((v, key)) => match v.trim().to_ascii_lowercase().as_str() {
                "" => false,
                "https" => true,
                _ => {
                    return Err(config_err(
                        &key,
                        format!(
                            "`{v}` is not supported: use https (check the host name) or an empty value"
                        ),
                    ));
                }
            },
        };
        Ok(TlsListenerConfig {
            listener,
            keystore,
            key_password,
            truststore,
            client_auth,
            enabled_protocols,
            protocol,
            cipher_suites,
            principal_mapper,
            endpoint_identification,
        })
    }

    /// The files this config reads (keystore then truststore), for reloads.
    pub fn files(&self) -> Vec<(PathBuf, String)> {
        let mut out = Vec::new();
        if let Some(KeyStoreSource::File { path, setting }) = &self.keystore {
            out.push((path.clone(), setting.clone()));
        }
        if let Some(TrustStoreSource::File { path, setting }) = &self.truststore {
            out.push((path.clone(), setting.clone()));
        }
        out
    }
}

fn check_pem_type(p: &Props<'_>, key: &str, convert: &str) -> Result<(), TlsError> {
    match p.get(key) {
        None => Ok(()),
        Some((v, _)) if v.trim().eq_ignore_ascii_case("PEM") => Ok(()),
        Some((v, k)) => Err(config_err(
            &k,
            format!("{v} is not supported (Skiff reads PEM stores only); {convert}"),
        )),
    }
}

fn read_keystore(p: &Props<'_>) -> Result<Option<KeyStoreSource>, TlsError> {
    if p.get("ssl.keystore.location").is_some()
        || p.get("ssl.keystore.certificate.chain").is_some()
        || p.get("ssl.keystore.key").is_some()
    {
        check_pem_type(p, "ssl.keystore.type", CONVERT_KEYSTORE)?;
    }
    if let Some((_, k)) = p.get("ssl.keystore.password") {
        return Err(config_err(
            &k,
            "a key store password cannot be used with PEM stores (Kafka's rule): remove it; \
             only ssl.key.password, for an encrypted private key, may be set",
        ));
    }
    let location = p.get("ssl.keystore.location");
    let chain = p.get("ssl.keystore.certificate.chain");
    let key = p.get("ssl.keystore.key");
    match (location, chain, key) {
        (Some((path, setting)), None, None) => Ok(Some(KeyStoreSource::File {
            path: PathBuf::from(path.trim()),
            setting,
        })),
        (Some((_, loc)), _, Some(_)) | (Some((_, loc)), Some(_), None) => Err(config_err(
            &loc,
            "both a key store location and inline ssl.keystore.certificate.chain / \
             ssl.keystore.key are set: keep one",
        )),
        (None, Some((chain, chain_setting)), Some((key, key_setting))) => {
            Ok(Some(KeyStoreSource::Inline {
                chain,
                key,
                chain_setting,
                key_setting,
            }))
        }
        (None, Some((_, k)), None) => Err(config_err(
            &k,
            "a certificate chain is set but ssl.keystore.key (the private key) is not",
        )),
        (None, None, Some((_, k))) => Err(config_err(
            &k,
            "a private key is set but ssl.keystore.certificate.chain is not",
        )),
        (None, None, None) => Ok(None),
    }
}

fn read_truststore(p: &Props<'_>) -> Result<Option<TrustStoreSource>, TlsError> {
    // The type matters only for a trust store that is set (Kafka's default type, JKS, with
    // no trust store is a server-only TLS listener).
    if p.get("ssl.truststore.location").is_some() || p.get("ssl.truststore.certificates").is_some()
    {
        check_pem_type(p, "ssl.truststore.type", CONVERT_TRUSTSTORE)?;
    }
    if let Some((_, k)) = p.get("ssl.truststore.password") {
        return Err(config_err(
            &k,
            "a trust store password cannot be used with PEM stores (Kafka's rule): remove it",
        ));
    }
    match (
        p.get("ssl.truststore.location"),
        p.get("ssl.truststore.certificates"),
    ) {
        (Some((path, setting)), None) => Ok(Some(TrustStoreSource::File {
            path: PathBuf::from(path.trim()),
            setting,
        })),
        (None, Some((certificates, setting))) => Ok(Some(TrustStoreSource::Inline {
            certificates,
            setting,
        })),
        (Some((_, k)), Some(_)) => Err(config_err(
            &k,
            "both a trust store location and ssl.truststore.certificates are set: keep one",
        )),
        (None, None) => Ok(None),
    }
}

fn split_list(v: &str) -> Vec<String> {
    v.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

fn read_protocols(p: &Props<'_>) -> Result<Vec<TlsProtocol>, TlsError> {
    let default = vec![TlsProtocol::TlsV12, TlsProtocol::TlsV13];
    let Some((v, key)) = p.get("ssl.enabled.protocols") else {
        return Ok(default);
    };
    let names = split_list(&v);
    if names.is_empty() {
        return Ok(default);
    }
    let mut out = Vec::new();
    for name in names {
        let proto = match name.as_str() {
            "TLSv1.2" => TlsProtocol::TlsV12,
            "TLSv1.3" => TlsProtocol::TlsV13,
            "TLSv1" | "TLSv1.1" | "SSLv3" | "SSLv2Hello" => {
                return Err(config_err(
                    &key,
                    format!(
                        "{name} is not supported (rustls speaks TLSv1.2 and TLSv1.3): remove it"
                    ),
                ));
            }
            _ => {
                return Err(config_err(
                    &key,
                    format!("unknown protocol `{name}`: use TLSv1.2 and/or TLSv1.3"),
                ));
            }
        };
        if !out.contains(&proto) {
            out.push(proto);
        }
    }
    Ok(out)
}

/// The ring provider, always passed explicitly (never the process default). rustls 0.23.48
/// deprecates ring's provider for lacking post-quantum key exchange; ring is this project's
/// chosen provider (issue 19), so the deprecation is allowed here, in this one place.
#[allow(deprecated)]
pub(crate) fn ring_provider() -> rustls::crypto::CryptoProvider {
    rustls::crypto::ring::default_provider()
}

/// The IANA name of a rustls suite (`TLS13_AES_128_GCM_SHA256` -> `TLS_AES_128_GCM_SHA256`).
pub(crate) fn iana_name(suite: &SupportedCipherSuite) -> String {
    let name = suite.suite().as_str().unwrap_or("unknown");
    match name.strip_prefix("TLS13_") {
        Some(rest) => format!("TLS_{rest}"),
        None => name.to_string(),
    }
}

/// `ssl.cipher.suites` -> the ring provider's suites, in the order given.
pub(crate) fn resolve_cipher_suites(names: &[String]) -> Result<Vec<SupportedCipherSuite>, String> {
    let all = ring_provider().cipher_suites;
    let mut out = Vec::new();
    for name in names {
        match all.iter().find(|s| iana_name(s) == *name) {
            Some(s) => out.push(*s),
            None => {
                let known: Vec<String> = all.iter().map(iana_name).collect();
                return Err(format!(
                    "cipher suite `{name}` is not available (IANA names; rustls offers: {})",
                    known.join(", ")
                ));
            }
        }
    }
    Ok(out)
}

fn check_suites_cover_protocols(names: &[String], protocols: &[TlsProtocol]) -> Result<(), String> {
    let suites = resolve_cipher_suites(names)?;
    for proto in protocols {
        let has = suites.iter().any(|s| s.version() == proto.rustls());
        if !has {
            return Err(format!(
                "none of the listed cipher suites is usable with {}, which ssl.enabled.protocols \
                 enables: add one or remove the protocol",
                proto.as_str()
            ));
        }
    }
    Ok(())
}
