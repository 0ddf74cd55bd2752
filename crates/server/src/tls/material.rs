//! Reading the PEM stores a [`TlsListenerConfig`] names: the private key, the certificate
//! chain and the trusted certificates (issue 19).
//!
//! Mental model: two steps. [`read_files`] reads the store files into a [`Snapshot`] (their
//! bytes: a reload compares the content itself, not mtimes); [`parse`] turns a snapshot plus
//! the inline values into DER material. A reload reads a new snapshot and parses it only when
//! it differs from the loaded one.
//!
//! Keys as Kafka's `PemStore` takes them: without `ssl.key.password` the key must be
//! unencrypted (PKCS#8 `PRIVATE KEY`; PKCS#1 and SEC1 are accepted too, Kafka's are not); with
//! it, the key must be an `ENCRYPTED PRIVATE KEY` (PKCS#8, PBES2), decrypted here. Legacy
//! OpenSSL-encrypted keys (`Proc-Type: 4,ENCRYPTED`) are refused with the conversion command.
//!
//! Invariants: every error names the setting and the file and says what to fix; nothing here
//! panics on a file's content.

use std::path::{Path, PathBuf};

use rustls_pki_types::pem::{PemObject, SectionKind};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use super::TlsError;
use super::config::{
    CONVERT_KEYSTORE, CONVERT_TRUSTSTORE, KeyStoreSource, TlsListenerConfig, TrustStoreSource,
};

/// The bytes of every store file a config names, in [`TlsListenerConfig::files`] order.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub(crate) struct Snapshot {
    files: Vec<(PathBuf, Vec<u8>)>,
}

impl Snapshot {
    fn get(&self, path: &Path) -> Option<&[u8]> {
        self.files
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, b)| b.as_slice())
    }
}

/// The DER material of one config.
#[derive(Debug)]
pub(crate) struct Material {
    /// Leaf first; empty when there is no keystore.
    pub chain: Vec<CertificateDer<'static>>,
    pub key: Option<PrivateKeyDer<'static>>,
    pub roots: Vec<CertificateDer<'static>>,
}

/// Reads the store files.
pub(crate) fn read_files(cfg: &TlsListenerConfig) -> Result<Snapshot, TlsError> {
    let mut files = Vec::new();
    for (path, setting) in cfg.files() {
        let bytes = std::fs::read(&path).map_err(|e| TlsError::File {
            setting: setting.clone(),
            path: path.clone(),
            message: format!("cannot read it: {e}"),
        })?;
        files.push((path, bytes));
    }
    Ok(Snapshot { files })
}

/// Parses the stores of `cfg` from `snap` (files) and the config (inline values).
pub(crate) fn parse(cfg: &TlsListenerConfig, snap: &Snapshot) -> Result<Material, TlsError> {
    let (chain, key) = match &cfg.keystore {
        None => (Vec::new(), None),
        Some(KeyStoreSource::File { path, setting }) => {
            let bytes = snap.get(path).unwrap_or_default();
            let origin = Origin::File(setting, path);
            let text = pem_text(bytes, &origin, CONVERT_KEYSTORE)?;
            let chain = certificates(text, &origin, "the certificate chain")?;
            let key = private_key(text, cfg.key_password.as_deref(), &origin)?;
            (chain, Some(key))
        }
        Some(KeyStoreSource::Inline {
            chain,
            key,
            chain_setting,
            key_setting,
        }) => {
            let chain = certificates(
                chain,
                &Origin::Inline(chain_setting),
                "the certificate chain",
            )?;
            let key = private_key(
                key,
                cfg.key_password.as_deref(),
                &Origin::Inline(key_setting),
            )?;
            (chain, Some(key))
        }
    };
    let roots = match &cfg.truststore {
        None => Vec::new(),
        Some(TrustStoreSource::File { path, setting }) => {
            let bytes = snap.get(path).unwrap_or_default();
            let origin = Origin::File(setting, path);
            let text = pem_text(bytes, &origin, CONVERT_TRUSTSTORE)?;
            certificates(text, &origin, "the trusted certificates")?
        }
        Some(TrustStoreSource::Inline {
            certificates: text,
            setting,
        }) => certificates(text, &Origin::Inline(setting), "the trusted certificates")?,
    };
    Ok(Material { chain, key, roots })
}

/// Where a PEM text came from, for error messages.
enum Origin<'a> {
    File(&'a str, &'a Path),
    Inline(&'a str),
}

impl Origin<'_> {
    fn err(&self, message: impl Into<String>) -> TlsError {
        match self {
            Origin::File(setting, path) => TlsError::File {
                setting: setting.to_string(),
                path: path.to_path_buf(),
                message: message.into(),
            },
            Origin::Inline(setting) => TlsError::Config {
                key: setting.to_string(),
                message: message.into(),
            },
        }
    }
}

/// A store file as PEM text; a JKS / PKCS12 / DER file gets the conversion hint.
fn pem_text<'a>(bytes: &'a [u8], origin: &Origin<'_>, convert: &str) -> Result<&'a str, TlsError> {
    let kind = if bytes.starts_with(&[0xFE, 0xED, 0xFE, 0xED]) {
        Some("a JKS key store")
    } else if bytes.first() == Some(&0x30) && bytes.get(1).is_some_and(|&b| b >= 0x80) {
        // A DER SEQUENCE with a long-form length (PEM text never starts with 0x30 0x8X).
        Some("binary (PKCS12 or DER), not PEM")
    } else {
        None
    };
    if let Some(kind) = kind {
        return Err(origin.err(format!("the file is {kind}; {convert}")));
    }
    std::str::from_utf8(bytes)
        .map_err(|_| origin.err(format!("the file is not PEM text; {convert}")))
}

/// The PEM sections of `text` that rustls-pki-types knows (`ENCRYPTED PRIVATE KEY` is not one
/// of them: see [`private_key`]).
fn sections(text: &str, origin: &Origin<'_>) -> Result<Vec<(SectionKind, Vec<u8>)>, TlsError> {
    <(SectionKind, Vec<u8>)>::pem_slice_iter(text.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| origin.err(format!("malformed PEM: {e}")))
}

fn certificates(
    text: &str,
    origin: &Origin<'_>,
    what: &str,
) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs: Vec<CertificateDer<'static>> = sections(text, origin)?
        .into_iter()
        .filter(|(k, _)| *k == SectionKind::Certificate)
        .map(|(_, der)| CertificateDer::from(der))
        .collect();
    if certs.is_empty() {
        return Err(origin.err(format!(
            "no `-----BEGIN CERTIFICATE-----` section: {what} must be PEM certificates (leaf first)"
        )));
    }
    for (i, c) in certs.iter().enumerate() {
        if let Err(e) = x509_parser::parse_x509_certificate(c) {
            return Err(origin.err(format!("certificate #{} does not parse: {e}", i + 1)));
        }
    }
    Ok(certs)
}

const ENCRYPTED_LABEL: &str = "ENCRYPTED PRIVATE KEY";

fn private_key(
    text: &str,
    password: Option<&str>,
    origin: &Origin<'_>,
) -> Result<PrivateKeyDer<'static>, TlsError> {
    if text.contains("Proc-Type: 4,ENCRYPTED") {
        return Err(origin.err(
            "the private key is encrypted the legacy OpenSSL way (Proc-Type header): convert it \
             to encrypted PKCS#8 with `openssl pkcs8 -topk8 -v2 aes-256-cbc -in old.key -out \
             new.key` and keep ssl.key.password",
        ));
    }
    let encrypted = encrypted_sections(text, origin)?;
    let plain: Vec<PrivateKeyDer<'static>> = sections(text, origin)?
        .into_iter()
        .filter_map(|(kind, der)| match kind {
            SectionKind::PrivateKey => Some(PrivateKeyDer::Pkcs8(der.into())),
            SectionKind::RsaPrivateKey => Some(PrivateKeyDer::Pkcs1(der.into())),
            SectionKind::EcPrivateKey => Some(PrivateKeyDer::Sec1(der.into())),
            _ => None,
        })
        .collect();
    let count = plain.len() + encrypted.len();
    if count == 0 {
        return Err(origin.err(
            "no private key (`-----BEGIN PRIVATE KEY-----` or `-----BEGIN ENCRYPTED PRIVATE \
             KEY-----`): the key store must hold the private key and the certificate chain",
        ));
    }
    if count > 1 {
        return Err(origin.err(format!(
            "expected one private key, found {count}: keep only the key of the leaf certificate"
        )));
    }
    match (
        plain.into_iter().next(),
        encrypted.into_iter().next(),
        password,
    ) {
        (Some(key), _, None) => Ok(key),
        (Some(_), _, Some(_)) => Err(origin.err(
            "ssl.key.password is set but the private key is not encrypted: remove \
             ssl.key.password, or encrypt the key (`openssl pkcs8 -topk8 -v2 aes-256-cbc`)",
        )),
        (None, Some(_), None) => Err(origin
            .err("the private key is encrypted (ENCRYPTED PRIVATE KEY): set ssl.key.password")),
        (None, Some(der), Some(pw)) => decrypt(&der, pw, origin),
        (None, None, _) => Err(origin.err("no private key")),
    }
}

/// The DER of each `ENCRYPTED PRIVATE KEY` section: the label is rewritten to one that
/// rustls-pki-types decodes, and only within that section's BEGIN/END lines.
fn encrypted_sections(text: &str, origin: &Origin<'_>) -> Result<Vec<Vec<u8>>, TlsError> {
    let begin = format!("-----BEGIN {ENCRYPTED_LABEL}-----");
    let end = format!("-----END {ENCRYPTED_LABEL}-----");
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(&begin) {
        let after = &rest[start + begin.len()..];
        let Some(stop) = after.find(&end) else {
            return Err(origin.err(format!("malformed PEM: `{begin}` without `{end}`")));
        };
        let block = format!(
            "-----BEGIN PRIVATE KEY-----{}-----END PRIVATE KEY-----\n",
            &after[..stop]
        );
        let der = PrivatePkcs8KeyDer::from_pem_slice(block.as_bytes())
            .map_err(|e| origin.err(format!("malformed encrypted private key: {e}")))?;
        out.push(der.secret_pkcs8_der().to_vec());
        rest = &after[stop + end.len()..];
    }
    Ok(out)
}

fn decrypt(
    der: &[u8],
    password: &str,
    origin: &Origin<'_>,
) -> Result<PrivateKeyDer<'static>, TlsError> {
    let info = pkcs8::EncryptedPrivateKeyInfo::try_from(der)
        .map_err(|e| origin.err(format!("the encrypted private key does not parse: {e}")))?;
    let doc = info.decrypt(password).map_err(|e| {
        origin.err(format!(
            "cannot decrypt the private key with ssl.key.password ({e}): check the password; \
             only PBES2 (PBKDF2 or scrypt with AES-CBC) is supported, re-encrypt with `openssl \
             pkcs8 -topk8 -v2 aes-256-cbc` if it is older"
        ))
    })?;
    Ok(PrivateKeyDer::Pkcs8(doc.as_bytes().to_vec().into()))
}
