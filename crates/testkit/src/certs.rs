//! Test certificates (issue 19): a throwaway PKI generated at test time with rcgen, written as
//! the PEM files Kafka's `ssl.keystore.type=PEM` / `ssl.truststore.type=PEM` settings name.
//!
//! Mental model: one [`TestPki`] per test dir: a CA (`ca.crt`), a server certificate for
//! `localhost` and `127.0.0.1` signed by it, in the three shapes an operator meets (`server.pem`
//! = private key + certificate chain in one file, as `ssl.keystore.location` wants; separate
//! `server.key` / `server.crt`; and `server-encrypted.pem`, the key as an encrypted PKCS#8
//! `ENCRYPTED PRIVATE KEY` for `ssl.key.password`), plus [`TestPki::client_cert`] and
//! [`TestPki::server_cert`] for more leaves signed by the same CA.
//!
//! Invariants: nothing here is ever committed (keys exist only in temp dirs); private-key files
//! are created mode 0600; every leaf's chain is leaf then CA. Keys are ECDSA P-256 (fast to
//! make). Panics on failure: this is test code.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};

/// The password of the encrypted server key ([`TestPki::server_encrypted_pem`]).
pub const TEST_KEY_PASSWORD: &str = "changeit-skiff";

/// A CA and a server certificate, as files in `dir`.
#[derive(Debug)]
pub struct TestPki {
    pub dir: PathBuf,
    /// The CA certificate (the trust store: `ssl.truststore.location`).
    pub ca_crt: PathBuf,
    /// `localhost` + `127.0.0.1`, subject `CN=localhost,O=skiff-test`.
    pub server: LeafCert,
    /// The server key encrypted (PBES2: PBKDF2-HMAC-SHA256 + AES-256-CBC) with
    /// [`TEST_KEY_PASSWORD`], followed by the chain: `ssl.keystore.location` +
    /// `ssl.key.password`.
    pub server_encrypted_pem: PathBuf,
    /// The encrypted key alone (`ssl.keystore.key` inline with a password).
    pub server_encrypted_key: PathBuf,
    pub key_password: String,
    ca_key_pem: String,
    ca_params: CertificateParams,
}

/// One leaf certificate signed by the test CA.
#[derive(Debug, Clone)]
pub struct LeafCert {
    /// The subject as Java's `X500Principal.getName()` prints it (most specific first).
    pub subject: String,
    /// The PKCS#8 private key alone (`PRIVATE KEY`), mode 0600.
    pub key: PathBuf,
    /// The chain: the leaf then the CA.
    pub crt: PathBuf,
    /// Key then chain in one file (`ssl.keystore.location`), mode 0600.
    pub pem: PathBuf,
}

impl TestPki {
    /// Generates a CA and the server certificate into `dir` (created if missing).
    pub fn generate(dir: &Path) -> TestPki {
        std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("create the test PKI dir: {e}"));
        let ca_key = KeyPair::generate().unwrap_or_else(|e| panic!("generate the CA key: {e}"));
        let mut ca_params = CertificateParams::new(Vec::<String>::new())
            .unwrap_or_else(|e| panic!("CA params: {e}"));
        ca_params.distinguished_name = rcgen::DistinguishedName::new();
        ca_params
            .distinguished_name
            .push(DnType::OrganizationName, "skiff-test");
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "Skiff Test CA");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca_cert = ca_params
            .self_signed(&ca_key)
            .unwrap_or_else(|e| panic!("self-sign the CA: {e}"));
        let ca_crt = dir.join("ca.crt");
        write_file(&ca_crt, &ca_cert.pem(), false);
        let mut pki = TestPki {
            dir: dir.to_path_buf(),
            ca_crt,
            server: LeafCert {
                subject: String::new(),
                key: PathBuf::new(),
                crt: PathBuf::new(),
                pem: PathBuf::new(),
            },
            server_encrypted_pem: dir.join("server-encrypted.pem"),
            server_encrypted_key: dir.join("server-encrypted.key"),
            key_password: TEST_KEY_PASSWORD.to_string(),
            ca_key_pem: ca_key.serialize_pem(),
            ca_params,
        };
        let (server, key_der) = pki.leaf("server", "localhost", dir, true);
        let encrypted = encrypt_pkcs8(&key_der, TEST_KEY_PASSWORD);
        let chain = std::fs::read_to_string(&server.crt)
            .unwrap_or_else(|e| panic!("read the server chain: {e}"));
        write_file(&pki.server_encrypted_key, &encrypted, true);
        write_file(
            &pki.server_encrypted_pem,
            &format!("{encrypted}{chain}"),
            true,
        );
        pki.server = server;
        pki
    }

    /// A client certificate for mutual TLS, subject `CN=<cn>,OU=eng,O=acme,C=US`, written as
    /// `<dir>/client-<cn>.{key,crt,pem}`.
    pub fn client_cert(&self, cn: &str, dir: &Path) -> LeafCert {
        self.leaf(&format!("client-{cn}"), cn, dir, false).0
    }

    /// Another server certificate for `localhost` + `127.0.0.1` with subject
    /// `CN=<cn>,O=skiff-test`, written as `<dir>/<name>.{key,crt,pem}` (e.g. a renewed
    /// certificate for the reload tests).
    pub fn server_cert(&self, name: &str, cn: &str, dir: &Path) -> LeafCert {
        self.leaf(name, cn, dir, true).0
    }

    fn leaf(&self, name: &str, cn: &str, dir: &Path, server: bool) -> (LeafCert, Vec<u8>) {
        std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("create the cert dir: {e}"));
        let ca_key = KeyPair::from_pem(&self.ca_key_pem)
            .unwrap_or_else(|e| panic!("reload the CA key: {e}"));
        let issuer = Issuer::from_params(&self.ca_params, &ca_key);
        let key = KeyPair::generate().unwrap_or_else(|e| panic!("generate a leaf key: {e}"));
        let mut params = CertificateParams::new(Vec::<String>::new())
            .unwrap_or_else(|e| panic!("leaf params: {e}"));
        // rcgen starts with a placeholder CN; the subject is written in full below.
        params.distinguished_name = rcgen::DistinguishedName::new();
        let subject = if server {
            params.subject_alt_names = vec![
                SanType::DnsName(
                    "localhost"
                        .try_into()
                        .unwrap_or_else(|e| panic!("dns name: {e}")),
                ),
                SanType::IpAddress(std::net::IpAddr::from([127, 0, 0, 1])),
            ];
            params
                .distinguished_name
                .push(DnType::OrganizationName, "skiff-test");
            params.distinguished_name.push(DnType::CommonName, cn);
            params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
            format!("CN={cn},O=skiff-test")
        } else {
            // Encoded most general first, so the RFC 2253 string reads CN first.
            params.distinguished_name.push(DnType::CountryName, "US");
            params
                .distinguished_name
                .push(DnType::OrganizationName, "acme");
            params
                .distinguished_name
                .push(DnType::OrganizationalUnitName, "eng");
            params.distinguished_name.push(DnType::CommonName, cn);
            params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
            format!("CN={cn},OU=eng,O=acme,C=US")
        };
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        let cert = params
            .signed_by(&key, &issuer)
            .unwrap_or_else(|e| panic!("sign the leaf: {e}"));
        let ca_pem =
            std::fs::read_to_string(&self.ca_crt).unwrap_or_else(|e| panic!("read ca.crt: {e}"));
        let chain = format!("{}{}", cert.pem(), ca_pem);
        let leaf = LeafCert {
            subject,
            key: dir.join(format!("{name}.key")),
            crt: dir.join(format!("{name}.crt")),
            pem: dir.join(format!("{name}.pem")),
        };
        let key_pem = key.serialize_pem();
        write_file(&leaf.key, &key_pem, true);
        write_file(&leaf.crt, &chain, false);
        write_file(&leaf.pem, &format!("{key_pem}{chain}"), true);
        (leaf, key.serialize_der())
    }
}

/// PKCS#8 DER -> `ENCRYPTED PRIVATE KEY` PEM (PBES2, PBKDF2-HMAC-SHA256, AES-256-CBC), what
/// `openssl pkcs8 -topk8 -v2 aes-256-cbc` writes.
fn encrypt_pkcs8(der: &[u8], password: &str) -> String {
    let salt: [u8; 16] = rand::random();
    let iv: [u8; 16] = rand::random();
    let params = pkcs8::pkcs5::pbes2::Parameters::pbkdf2_sha256_aes256cbc(2048, &salt, &iv)
        .unwrap_or_else(|e| panic!("PBES2 parameters: {e}"));
    let info = pkcs8::PrivateKeyInfo::try_from(der)
        .unwrap_or_else(|e| panic!("parse the PKCS#8 key: {e}"));
    let doc = info
        .encrypt_with_params(params, password)
        .unwrap_or_else(|e| panic!("encrypt the key: {e}"));
    doc.to_pem("ENCRYPTED PRIVATE KEY", pkcs8::LineEnding::LF)
        .unwrap_or_else(|e| panic!("PEM-encode the key: {e}"))
        .to_string()
}

/// Writes `text` to `path`, replacing it; `private` files are created 0600.
pub fn write_file(path: &Path, text: &str, private: bool) {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    if private {
        opts.mode(0o600);
    }
    let mut f = opts
        .open(path)
        .unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    f.write_all(text.as_bytes())
        .unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}
