//! TLS tests: real rustls handshakes against [`TlsListener::acceptor`] over a tokio duplex
//! pipe, with certificates generated per test by skiff-testkit's [`TestPki`].

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustls::ClientConfig;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use skiff_testkit::certs::{LeafCert, TestPki, write_file};

use super::*;

fn props(pairs: &[(&str, String)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    move |k: &str| map.get(k).cloned()
}

fn cfg(pairs: &[(&str, String)]) -> Result<TlsListenerConfig, TlsError> {
    TlsListenerConfig::from_props(&props(pairs), "SSL")
}

fn path(p: &Path) -> String {
    p.display().to_string()
}

fn listener(pairs: &[(&str, String)]) -> Arc<TlsListener> {
    TlsListener::new(cfg(pairs).unwrap()).unwrap()
}

/// A plain rustls client trusting the test CA, with an optional client certificate.
fn client(
    pki: &TestPki,
    cert: Option<&LeafCert>,
    versions: &[&'static rustls::SupportedProtocolVersion],
) -> Arc<ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_file_iter(&pki.ca_crt).unwrap() {
        roots.add(c.unwrap()).unwrap();
    }
    let b = ClientConfig::builder_with_provider(Arc::new(config::ring_provider()))
        .with_protocol_versions(versions)
        .unwrap()
        .with_root_certificates(roots);
    Arc::new(match cert {
        None => b.with_no_client_auth(),
        Some(c) => {
            let chain = CertificateDer::pem_file_iter(&c.crt)
                .unwrap()
                .map(Result::unwrap)
                .collect();
            let key = PrivateKeyDer::from_pem_file(&c.key).unwrap();
            b.with_client_auth_cert(chain, key).unwrap()
        }
    })
}

const BOTH: &[&rustls::SupportedProtocolVersion] =
    &[&rustls::version::TLS13, &rustls::version::TLS12];

/// What one handshake gave: the server-side principal and the server certificate's subject
/// as the client saw it.
#[derive(Debug)]
struct Outcome {
    principal: Result<KafkaPrincipal, String>,
    server_subject: String,
    version: Option<rustls::ProtocolVersion>,
}

async fn handshake_as(
    l: &TlsListener,
    client: Arc<ClientConfig>,
    server_name: &str,
) -> Result<Outcome, String> {
    let (cio, sio) = tokio::io::duplex(64 * 1024);
    let acceptor = l.acceptor();
    let connector = tokio_rustls::TlsConnector::from(client);
    let name = ServerName::try_from(server_name.to_string()).unwrap();
    let server = async move { acceptor.accept(sio).await };
    let client = async move { connector.connect(name, cio).await };
    let run = async { tokio::join!(server, client) };
    let (s, c) = tokio::time::timeout(Duration::from_secs(10), run)
        .await
        .map_err(|_| "handshake timed out".to_string())?;
    let s = s.map_err(|e| format!("server: {e}"))?;
    let c = c.map_err(|e| format!("client: {e}"))?;
    let conn = s.get_ref().1;
    let leaf = c.get_ref().1.peer_certificates().unwrap()[0].clone();
    Ok(Outcome {
        principal: l.principal(conn).map_err(|e| e.to_string()),
        server_subject: dn::subject_rfc2253(&leaf).unwrap(),
        version: conn.protocol_version(),
    })
}

async fn handshake(l: &TlsListener, client: Arc<ClientConfig>) -> Result<Outcome, String> {
    handshake_as(l, client, "localhost").await
}

fn keystore(pki: &TestPki) -> Vec<(&'static str, String)> {
    vec![
        ("ssl.keystore.type", "PEM".into()),
        ("ssl.keystore.location", path(&pki.server.pem)),
    ]
}

fn mtls(pki: &TestPki, auth: &str) -> Vec<(&'static str, String)> {
    let mut p = keystore(pki);
    p.push(("ssl.truststore.location", path(&pki.ca_crt)));
    p.push(("ssl.client.auth", auth.into()));
    p
}

#[tokio::test]
async fn server_only_tls() {
    let dir = tempfile::tempdir().unwrap();
    let pki = TestPki::generate(dir.path());
    let l = listener(&keystore(&pki));
    // A client certificate offered to a listener that asks for none is not used.
    let alice = pki.client_cert("alice", dir.path());
    for cert in [None, Some(&alice)] {
        let out = handshake(&l, client(&pki, cert, BOTH)).await.unwrap();
        assert_eq!(out.principal.unwrap(), KafkaPrincipal::anonymous());
        assert_eq!(out.server_subject, "CN=localhost,O=skiff-test");
        assert_eq!(out.version, Some(rustls::ProtocolVersion::TLSv1_3));
    }
    let inline = l.describe();
    assert!(inline.contains("CN=localhost,O=skiff-test"), "{inline}");
    assert!(inline.contains("client auth none"), "{inline}");
}

#[tokio::test]
async fn mutual_tls_required() {
    let dir = tempfile::tempdir().unwrap();
    let pki = TestPki::generate(dir.path());
    let alice = pki.client_cert("alice", dir.path());
    let l = listener(&mtls(&pki, "required"));
    let err = handshake(&l, client(&pki, None, BOTH)).await.unwrap_err();
    assert!(err.contains("server"), "{err}");
    let out = handshake(&l, client(&pki, Some(&alice), BOTH))
        .await
        .unwrap();
    assert_eq!(
        out.principal.unwrap().to_string(),
        "User:CN=alice,OU=eng,O=acme,C=US"
    );
    assert_eq!(alice.subject, "CN=alice,OU=eng,O=acme,C=US");

    // A certificate from another CA is refused.
    let other_dir = dir.path().join("other");
    let other = TestPki::generate(&other_dir);
    let mallory = other.client_cert("alice", &other_dir);
    assert!(
        handshake(&l, client(&pki, Some(&mallory), BOTH))
            .await
            .is_err()
    );

    // With a mapping rule (listener-prefixed), the principal is the CN.
    let mut p = mtls(&pki, "required");
    p.push((
        "listener.name.ssl.ssl.principal.mapping.rules",
        "RULE:^CN=([^,]+),OU=eng,.*$/$1/L, DEFAULT".into(),
    ));
    let l = listener(&p);
    let out = handshake(&l, client(&pki, Some(&alice), BOTH))
        .await
        .unwrap();
    assert_eq!(out.principal.unwrap().to_string(), "User:alice");
    assert!(
        l.describe().contains("client auth required"),
        "{}",
        l.describe()
    );

    // A subject no rule maps is an error, never a fallback principal.
    let mut p = mtls(&pki, "required");
    p.push((
        "ssl.principal.mapping.rules",
        "RULE:^CN=([^,]+),OU=ops,.*$/$1/".into(),
    ));
    let l = listener(&p);
    let out = handshake(&l, client(&pki, Some(&alice), BOTH))
        .await
        .unwrap();
    let err = out.principal.unwrap_err();
    assert!(
        err.contains("No rules apply to CN=alice,OU=eng,O=acme,C=US"),
        "{err}"
    );
}

#[tokio::test]
async fn mutual_tls_requested() {
    let dir = tempfile::tempdir().unwrap();
    let pki = TestPki::generate(dir.path());
    let bob = pki.client_cert("bob", dir.path());
    let mut p = mtls(&pki, "requested");
    p.push((
        "ssl.principal.mapping.rules",
        "RULE:^CN=(.*?),.*$/$1/U".into(),
    ));
    let l = listener(&p);
    let out = handshake(&l, client(&pki, None, BOTH)).await.unwrap();
    assert_eq!(out.principal.unwrap(), KafkaPrincipal::anonymous());
    let out = handshake(&l, client(&pki, Some(&bob), BOTH)).await.unwrap();
    assert_eq!(out.principal.unwrap(), KafkaPrincipal::user("BOB"));
}

#[tokio::test]
async fn tls12_only_listener_refuses_a_tls13_only_client() {
    let dir = tempfile::tempdir().unwrap();
    let pki = TestPki::generate(dir.path());
    let mut p = keystore(&pki);
    p.push(("ssl.enabled.protocols", "TLSv1.2".into()));
    let l = listener(&p);
    let tls13 = &[&rustls::version::TLS13];
    assert!(handshake(&l, client(&pki, None, tls13)).await.is_err());
    let out = handshake(&l, client(&pki, None, BOTH)).await.unwrap();
    assert_eq!(out.version, Some(rustls::ProtocolVersion::TLSv1_2));
    // And a TLSv1.3-only listener refuses a TLSv1.2-only client.
    let mut p = keystore(&pki);
    p.push(("ssl.enabled.protocols", "TLSv1.3".into()));
    let l = listener(&p);
    assert!(
        handshake(&l, client(&pki, None, &[&rustls::version::TLS12]))
            .await
            .is_err()
    );
}

#[tokio::test]
async fn cipher_suites_restrict_the_handshake() {
    let dir = tempfile::tempdir().unwrap();
    let pki = TestPki::generate(dir.path());
    let mut p = keystore(&pki);
    p.push(("ssl.enabled.protocols", "TLSv1.3".into()));
    p.push(("ssl.cipher.suites", "TLS_CHACHA20_POLY1305_SHA256".into()));
    let l = listener(&p);
    let (cio, sio) = tokio::io::duplex(64 * 1024);
    let acceptor = l.acceptor();
    let connector = tokio_rustls::TlsConnector::from(client(&pki, None, BOTH));
    let name = ServerName::try_from("localhost").unwrap();
    let (s, c) = tokio::join!(acceptor.accept(sio), connector.connect(name, cio));
    let (s, _c) = (s.unwrap(), c.unwrap());
    let suite = s.get_ref().1.negotiated_cipher_suite().unwrap();
    assert_eq!(config::iana_name(&suite), "TLS_CHACHA20_POLY1305_SHA256");
}

#[tokio::test]
async fn inline_pem_stores() {
    let dir = tempfile::tempdir().unwrap();
    let pki = TestPki::generate(dir.path());
    let carol = pki.client_cert("carol", dir.path());
    let read = |p: &Path| std::fs::read_to_string(p).unwrap();
    let l = listener(&[
        ("ssl.keystore.type", "PEM".into()),
        ("ssl.keystore.certificate.chain", read(&pki.server.crt)),
        ("ssl.keystore.key", read(&pki.server.key)),
        ("ssl.truststore.type", "PEM".into()),
        ("ssl.truststore.certificates", read(&pki.ca_crt)),
        ("ssl.client.auth", "required".into()),
    ]);
    let out = handshake(&l, client(&pki, Some(&carol), BOTH))
        .await
        .unwrap();
    assert_eq!(out.principal.unwrap().name, carol.subject);
    assert!(l.describe().contains("(inline)"), "{}", l.describe());
    // Inline stores never change on disk.
    assert!(!l.reload_if_changed().unwrap());
}

#[tokio::test]
async fn encrypted_key_needs_the_right_password() {
    let dir = tempfile::tempdir().unwrap();
    let pki = TestPki::generate(dir.path());
    let base = vec![("ssl.keystore.location", path(&pki.server_encrypted_pem))];
    let with = |pw: Option<&str>| {
        let mut p = base.clone();
        if let Some(pw) = pw {
            p.push(("ssl.key.password", pw.to_string()));
        }
        TlsListener::new(cfg(&p).unwrap())
    };
    let l = with(Some(&pki.key_password)).unwrap();
    let out = handshake(&l, client(&pki, None, BOTH)).await.unwrap();
    assert_eq!(out.server_subject, "CN=localhost,O=skiff-test");

    let err = with(Some("wrong")).unwrap_err().to_string();
    assert!(err.contains("ssl.keystore.location"), "{err}");
    assert!(err.contains("server-encrypted.pem"), "{err}");
    assert!(err.contains("check the password"), "{err}");
    let err = with(None).unwrap_err().to_string();
    assert!(err.contains("set ssl.key.password"), "{err}");
    // A password for a key that is not encrypted: Kafka refuses it too.
    let mut p = keystore(&pki);
    p.push(("ssl.key.password", "x".into()));
    let err = TlsListener::new(cfg(&p).unwrap()).unwrap_err().to_string();
    assert!(err.contains("not encrypted"), "{err}");
    // The encrypted key inline.
    let read = |p: &Path| std::fs::read_to_string(p).unwrap();
    let l = listener(&[
        ("ssl.keystore.certificate.chain", read(&pki.server.crt)),
        ("ssl.keystore.key", read(&pki.server_encrypted_key)),
        ("ssl.key.password", pki.key_password.clone()),
    ]);
    assert!(handshake(&l, client(&pki, None, BOTH)).await.is_ok());
}

#[tokio::test]
async fn reload_swaps_a_changed_keystore() {
    let dir = tempfile::tempdir().unwrap();
    let pki = TestPki::generate(dir.path());
    let live = dir.path().join("live.pem");
    std::fs::copy(&pki.server.pem, &live).unwrap();
    let l = listener(&[("ssl.keystore.location", path(&live))]);
    assert!(!l.reload_if_changed().unwrap(), "nothing changed");
    // Same content rewritten (new mtime): still no reload.
    write_file(
        &live,
        &std::fs::read_to_string(&pki.server.pem).unwrap(),
        true,
    );
    assert!(!l.reload_if_changed().unwrap());
    let old_acceptor = l.acceptor();

    let renewed = pki.server_cert("renewed", "renewed.localhost", dir.path());
    std::fs::copy(&renewed.pem, &live).unwrap();
    assert!(l.reload_if_changed().unwrap());
    assert!(!l.reload_if_changed().unwrap());
    let out = handshake(&l, client(&pki, None, BOTH)).await.unwrap();
    assert_eq!(out.server_subject, "CN=renewed.localhost,O=skiff-test");
    assert!(
        l.describe().contains("CN=renewed.localhost"),
        "{}",
        l.describe()
    );
    // An acceptor taken before the swap keeps the config it was made with.
    let (cio, sio) = tokio::io::duplex(64 * 1024);
    let connector = tokio_rustls::TlsConnector::from(client(&pki, None, BOTH));
    let name = ServerName::try_from("localhost").unwrap();
    let (_s, c) = tokio::join!(old_acceptor.accept(sio), connector.connect(name, cio));
    let leaf = c.unwrap().get_ref().1.peer_certificates().unwrap()[0].clone();
    assert_eq!(
        dn::subject_rfc2253(&leaf).unwrap(),
        "CN=localhost,O=skiff-test"
    );
}

#[tokio::test]
async fn a_broken_new_file_keeps_the_old_config() {
    let dir = tempfile::tempdir().unwrap();
    let pki = TestPki::generate(dir.path());
    let live = dir.path().join("live.pem");
    std::fs::copy(&pki.server.pem, &live).unwrap();
    let trust = dir.path().join("trust.pem");
    std::fs::copy(&pki.ca_crt, &trust).unwrap();
    let l = listener(&[
        ("ssl.keystore.location", path(&live)),
        ("ssl.truststore.location", path(&trust)),
        ("ssl.client.auth", "requested".into()),
    ]);
    // A key without its certificates (a half-written file).
    write_file(
        &live,
        &std::fs::read_to_string(&pki.server.key).unwrap(),
        true,
    );
    let err = l.reload_if_changed().unwrap_err().to_string();
    assert!(
        err.contains("live.pem") && err.contains("CERTIFICATE"),
        "{err}"
    );
    assert!(
        !l.reload_if_changed().unwrap(),
        "the same broken file is reported once"
    );
    let out = handshake(&l, client(&pki, None, BOTH)).await.unwrap();
    assert_eq!(out.server_subject, "CN=localhost,O=skiff-test");
    // A key that does not go with the certificate.
    let other = pki.server_cert("other", "other", dir.path());
    let mismatched = format!(
        "{}{}",
        std::fs::read_to_string(&other.key).unwrap(),
        std::fs::read_to_string(&pki.server.crt).unwrap()
    );
    write_file(&live, &mismatched, true);
    let err = l.reload_if_changed().unwrap_err().to_string();
    assert!(err.contains("do not go together"), "{err}");
    // A missing trust store file.
    std::fs::copy(&pki.server.pem, &live).unwrap();
    std::fs::remove_file(&trust).unwrap();
    let err = l.reload_if_changed().unwrap_err().to_string();
    assert!(
        err.contains("trust.pem") && err.contains("cannot read"),
        "{err}"
    );
    std::fs::copy(&pki.ca_crt, &trust).unwrap();
    assert!(
        !l.reload_if_changed().unwrap(),
        "back to the loaded content"
    );
    // Fixed: the next change loads.
    std::fs::copy(&other.pem, &live).unwrap();
    assert!(l.reload_if_changed().unwrap());
}

#[test]
fn jks_and_pkcs12_are_refused_with_the_conversion_command() {
    let dir = tempfile::tempdir().unwrap();
    // The type matters once a store is set; without one, Kafka's default (JKS) is harmless.
    assert!(cfg(&[("ssl.truststore.type", "JKS".into())]).is_ok());
    let err = cfg(&[
        ("ssl.keystore.type", "JKS".into()),
        ("ssl.keystore.location", "/k.jks".into()),
    ])
    .unwrap_err()
    .to_string();
    assert!(
        err.starts_with("ssl.keystore.type: JKS is not supported"),
        "{err}"
    );
    assert!(
        err.contains("keytool -importkeystore") && err.contains("openssl pkcs12"),
        "{err}"
    );
    let err = cfg(&[
        ("listener.name.ssl.ssl.truststore.type", "PKCS12".into()),
        ("ssl.truststore.location", "/t.p12".into()),
    ])
    .unwrap_err()
    .to_string();
    assert!(
        err.starts_with("listener.name.ssl.ssl.truststore.type: PKCS12"),
        "{err}"
    );
    assert!(err.contains("-nokeys"), "{err}");
    // A JKS file named as a PEM keystore (Kafka's default type is JKS).
    let jks = dir.path().join("server.jks");
    std::fs::write(&jks, [0xFE, 0xED, 0xFE, 0xED, 0, 0, 0, 2]).unwrap();
    let err = TlsListener::new(cfg(&[("ssl.keystore.location", path(&jks))]).unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("server.jks") && err.contains("JKS key store"),
        "{err}"
    );
    assert!(err.contains("keytool"), "{err}");
    let p12 = dir.path().join("ca.p12");
    std::fs::write(&p12, [0x30, 0x82, 0x01, 0x00, 0x02]).unwrap();
    let err = TlsListener::new(cfg(&[("ssl.truststore.location", path(&p12))]).unwrap())
        .unwrap_err()
        .to_string();
    assert!(err.contains("ca.p12") && err.contains("PKCS12"), "{err}");
    assert!(err.contains("-nokeys"), "{err}");
}

#[test]
fn settings_table() {
    let ok = |pairs: &[(&str, &str)]| {
        let owned: Vec<(&str, String)> = pairs.iter().map(|(k, v)| (*k, v.to_string())).collect();
        cfg(&owned)
    };
    // Listener prefix wins over the plain key; the listener name is lower-cased.
    let c = ok(&[
        ("ssl.client.auth", "required"),
        ("listener.name.ssl.ssl.client.auth", "REQUESTED"),
    ])
    .unwrap();
    assert_eq!(c.client_auth, ClientAuth::Requested);
    assert_eq!(c.listener, "ssl");
    let c = ok(&[]).unwrap();
    assert_eq!(c.client_auth, ClientAuth::None);
    assert_eq!(
        c.enabled_protocols,
        vec![TlsProtocol::TlsV12, TlsProtocol::TlsV13]
    );
    assert!(c.endpoint_identification);
    assert!(c.keystore.is_none() && c.truststore.is_none());
    let c = ok(&[("ssl.endpoint.identification.algorithm", "")]).unwrap();
    assert!(!c.endpoint_identification);
    let c = ok(&[("ssl.enabled.protocols", "TLSv1.3, TLSv1.3")]).unwrap();
    assert_eq!(c.enabled_protocols, vec![TlsProtocol::TlsV13]);

    // (settings, the error's start, a phrase it contains)
    type Case<'a> = (&'a [(&'a str, &'a str)], &'a str, &'a str);
    let bad: &[Case<'_>] = &[
        (
            &[("ssl.client.auth", "optional")],
            "ssl.client.auth:",
            "none, requested, required",
        ),
        (
            &[("ssl.enabled.protocols", "TLSv1.1")],
            "ssl.enabled.protocols:",
            "not supported",
        ),
        (
            &[("ssl.enabled.protocols", "TLSv9")],
            "ssl.enabled.protocols:",
            "unknown protocol",
        ),
        (&[("ssl.protocol", "SSLv3")], "ssl.protocol:", "TLSv1.3"),
        (
            &[("ssl.cipher.suites", "TLS_RSA_WITH_NULL_MD5")],
            "ssl.cipher.suites:",
            "rustls offers",
        ),
        (
            &[
                ("ssl.enabled.protocols", "TLSv1.2"),
                ("ssl.cipher.suites", "TLS_AES_128_GCM_SHA256"),
            ],
            "ssl.cipher.suites:",
            "usable with TLSv1.2",
        ),
        (
            &[("ssl.endpoint.identification.algorithm", "ldap")],
            "ssl.endpoint",
            "https",
        ),
        (
            &[("listener.name.ssl.ssl.principal.mapping.rules", "RULE:x")],
            "listener.name.ssl.ssl.principal.mapping.rules:",
            "Invalid rule",
        ),
        (
            &[("ssl.keystore.password", "x")],
            "ssl.keystore.password:",
            "ssl.key.password",
        ),
        (
            &[("ssl.truststore.password", "x")],
            "ssl.truststore.password:",
            "remove it",
        ),
        (
            &[("ssl.keystore.location", "/a"), ("ssl.keystore.key", "k")],
            "ssl.keystore.location:",
            "keep one",
        ),
        (
            &[("ssl.keystore.key", "k")],
            "ssl.keystore.key:",
            "certificate.chain",
        ),
        (
            &[("ssl.keystore.certificate.chain", "c")],
            "ssl.keystore.certificate.chain:",
            "ssl.keystore.key",
        ),
        (
            &[
                ("ssl.truststore.location", "/a"),
                ("ssl.truststore.certificates", "c"),
            ],
            "ssl.truststore.location:",
            "keep one",
        ),
    ];
    for (pairs, start, phrase) in bad {
        let err = ok(pairs).unwrap_err().to_string();
        assert!(
            err.starts_with(start) && err.contains(phrase),
            "{pairs:?}: {err}"
        );
    }
    // Suites map by IANA name, TLS 1.3 and 1.2 alike.
    let c = ok(&[(
        "ssl.cipher.suites",
        "TLS_AES_256_GCM_SHA384, TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
    )])
    .unwrap();
    assert_eq!(
        config::resolve_cipher_suites(&c.cipher_suites)
            .unwrap()
            .len(),
        2
    );
}

#[test]
fn listener_setup_errors_name_the_setting() {
    let dir = tempfile::tempdir().unwrap();
    let pki = TestPki::generate(dir.path());
    // No keystore.
    let err = TlsListener::new(cfg(&[]).unwrap()).unwrap_err().to_string();
    assert!(err.starts_with("ssl.keystore.location:"), "{err}");
    // Client auth without a trust store.
    let mut p = keystore(&pki);
    p.push(("ssl.client.auth", "required".into()));
    let err = TlsListener::new(cfg(&p).unwrap()).unwrap_err().to_string();
    assert!(err.starts_with("ssl.truststore.location:"), "{err}");
    // A missing file.
    let err =
        TlsListener::new(cfg(&[("ssl.keystore.location", "/nonexistent/k.pem".into())]).unwrap())
            .unwrap_err()
            .to_string();
    assert!(
        err.starts_with("ssl.keystore.location (/nonexistent/k.pem): cannot read"),
        "{err}"
    );
    // A keystore with no key.
    let err = TlsListener::new(cfg(&[("ssl.keystore.location", path(&pki.server.crt))]).unwrap())
        .unwrap_err()
        .to_string();
    assert!(err.contains("no private key"), "{err}");
    // Debug output hides secrets.
    let c = cfg(&[
        ("ssl.keystore.certificate.chain", "c".into()),
        ("ssl.keystore.key", "SECRET-KEY".into()),
        ("ssl.key.password", "SECRET-PW".into()),
    ])
    .unwrap();
    let dbg = format!("{c:?}");
    assert!(!dbg.contains("SECRET"), "{dbg}");
}

#[tokio::test]
async fn inter_node_client_config() {
    let dir = tempfile::tempdir().unwrap();
    let pki = TestPki::generate(dir.path());
    let node = pki.client_cert("broker-1", dir.path());
    let mut p = mtls(&pki, "required");
    p.push((
        "ssl.principal.mapping.rules",
        "RULE:^CN=([^,]+),.*$/$1/".into(),
    ));
    let l = listener(&p);
    let client_cfg = cfg(&[
        ("ssl.keystore.location", path(&node.pem)),
        ("ssl.truststore.location", path(&pki.ca_crt)),
    ])
    .unwrap();
    let checked = client_config(&client_cfg, true).unwrap();
    let out = handshake(&l, checked.clone()).await.unwrap();
    assert_eq!(out.principal.unwrap(), KafkaPrincipal::user("broker-1"));
    // The host name is checked when asked...
    assert!(handshake_as(&l, checked, "node2.example").await.is_err());
    // ...and not otherwise, but the chain still is.
    let unchecked = client_config(&client_cfg, false).unwrap();
    assert!(handshake_as(&l, unchecked, "node2.example").await.is_ok());
    let other_dir = dir.path().join("other");
    let other = TestPki::generate(&other_dir);
    let foreign = cfg(&[("ssl.truststore.location", path(&other.ca_crt))]).unwrap();
    let unchecked = client_config(&foreign, false).unwrap();
    assert!(handshake_as(&l, unchecked, "node2.example").await.is_err());
    // No trust store: refused with the setting to add.
    let err = client_config(&cfg(&[]).unwrap(), true)
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("ssl.truststore.location:"), "{err}");
}

#[test]
fn dates_format_as_rfc3339() {
    let table = [
        (0, "1970-01-01T00:00:00Z"),
        (951_782_400, "2000-02-29T00:00:00Z"),
        (4_102_444_799, "2099-12-31T23:59:59Z"),
        (-1, "1969-12-31T23:59:59Z"),
    ];
    for (secs, want) in table {
        assert_eq!(rfc3339_utc(secs), want);
    }
}
