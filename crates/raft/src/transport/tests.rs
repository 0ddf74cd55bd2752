//! Tests of [`super`]: the framing helpers and login decisions as tables; the whole login
//! against skiff-auth's server side of each mechanism (a duplex pipe and a TCP listener, TLS
//! included). The login against a real broker is in crates/skiff/tests/e2e_cluster_secure.rs.

use std::collections::BTreeMap;

use skiff_auth::sasl::{
    Credentials, Mechanism, MemoryCredentials, SaslServer, ScramCredential, Step,
};
use skiff_protocol::{ApiKey, RequestBody, decode_request, encode_response};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};

use super::*;

fn login(mechanism: &str, user: &str, password: &str) -> SaslLogin {
    SaslLogin {
        mechanism: mechanism.into(),
        user: user.into(),
        password: password.into(),
    }
}

fn creds() -> MemoryCredentials {
    let mut c = MemoryCredentials::with_plain_users(BTreeMap::from([(
        "broker".to_string(),
        "broker-secret".to_string(),
    )]));
    for m in [ScramMechanism::Sha256, ScramMechanism::Sha512] {
        c.add_scram(
            "broker",
            ScramCredential::from_password(m, "scram-secret", b"salt-of-the-test", 4096),
        );
    }
    c
}

/// A broker's SASL side, enough for the login: SaslHandshake (the `enabled` mechanisms), then
/// SaslAuthenticate tokens into skiff-auth's [`SaslServer`]; after the login it answers one
/// raw frame `b"ping"` with `b"pong"` (what the caller sends next reaches the server).
/// Returns whether the login completed.
async fn serve_login<S: AsyncRead + AsyncWrite + Unpin>(mut s: S, enabled: &[&str]) -> bool {
    let creds = creds();
    let mut server: Option<SaslServer> = None;
    loop {
        let Ok(frame) = read_frame(&mut s, 1 << 20).await else {
            return false;
        };
        if server.as_ref().is_some_and(SaslServer::is_complete) {
            assert_eq!(&frame[..], b"ping");
            s.write_all(&[0, 0, 0, 4]).await.unwrap();
            s.write_all(b"pong").await.unwrap();
            s.flush().await.unwrap();
            return true;
        }
        let (h, body) = decode_request(frame).unwrap();
        let (key, version) = (body.api_key(), h.request_api_version);
        let (answer, close) = match body {
            RequestBody::SaslHandshake(r) => {
                let m = enabled
                    .iter()
                    .find(|m| **m == r.mechanism)
                    .and_then(|m| Mechanism::from_name(m));
                server = m.map(SaslServer::new);
                let error_code = if server.is_some() { 0 } else { 33 };
                let r = SaslHandshakeResponse {
                    error_code,
                    mechanisms: enabled.iter().map(|m| m.to_string()).collect(),
                };
                (ResponseBody::SaslHandshake(r), error_code != 0)
            }
            RequestBody::SaslAuthenticate(r) => {
                let step = server
                    .as_mut()
                    .unwrap()
                    .step(&r.auth_bytes, &creds as &dyn Credentials);
                let mut resp = SaslAuthenticateResponse::default();
                match step {
                    Ok(Step::Continue(t)) | Ok(Step::Done { token: t, .. }) => {
                        resp.auth_bytes = Bytes::from(t);
                    }
                    Err(e) => {
                        resp.error_code = 58;
                        resp.error_message = Some(e.to_string());
                    }
                }
                let close = resp.error_code != 0;
                (ResponseBody::SaslAuthenticate(resp), close)
            }
            other => panic!("unexpected request before the login: {other:?}"),
        };
        let mut out = BytesMut::new();
        encode_response(h.correlation_id, key, version, &answer, &mut out).unwrap();
        s.write_all(&out).await.unwrap();
        s.flush().await.unwrap();
        if close {
            return false;
        }
    }
}

/// Logs in over a duplex pipe; (client result, server saw a completed login).
async fn login_over_pipe(
    l: &SaslLogin,
    enabled: &'static [&'static str],
) -> (Result<(), String>, bool) {
    let (mut client, server) = tokio::io::duplex(64 * 1024);
    let srv = tokio::spawn(serve_login(server, enabled));
    let r = authenticate(&mut client, l, "node-9:9093").await;
    if r.is_ok() {
        client.write_all(&[0, 0, 0, 4]).await.unwrap();
        client.write_all(b"ping").await.unwrap();
        assert_eq!(&read_frame(&mut client, 16).await.unwrap()[..], b"pong");
    }
    drop(client);
    (r, srv.await.unwrap())
}

#[tokio::test]
async fn login_table_against_the_server_side_of_each_mechanism() {
    const ALL: &[&str] = &["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"];
    const PLAIN_ONLY: &[&str] = &["PLAIN"];
    // (login, enabled, Ok or a piece of the error)
    let rows: [(SaslLogin, &'static [&'static str], Result<(), &str>); 7] = [
        (login("PLAIN", "broker", "broker-secret"), ALL, Ok(())),
        (
            login("SCRAM-SHA-256", "broker", "scram-secret"),
            ALL,
            Ok(()),
        ),
        (
            login("SCRAM-SHA-512", "broker", "scram-secret"),
            ALL,
            Ok(()),
        ),
        (
            login("PLAIN", "broker", "wrong"),
            ALL,
            Err(
                "SASL authentication to node-9:9093 failed: Authentication failed: Invalid username or password",
            ),
        ),
        (
            login("SCRAM-SHA-512", "broker", "wrong"),
            ALL,
            Err(
                "invalid credentials with SASL mechanism SCRAM-SHA-512 (SASL_AUTHENTICATION_FAILED (58))",
            ),
        ),
        (
            login("SCRAM-SHA-256", "nobody", "scram-secret"),
            ALL,
            Err("SASL_AUTHENTICATION_FAILED (58)"),
        ),
        (
            login("SCRAM-SHA-256", "broker", "scram-secret"),
            PLAIN_ONLY,
            Err(
                "UNSUPPORTED_SASL_MECHANISM (33): the listener does not take mechanism SCRAM-SHA-256 (it enables PLAIN)",
            ),
        ),
    ];
    for (l, enabled, want) in rows {
        let (got, served) = login_over_pipe(&l, enabled).await;
        match want {
            Ok(()) => {
                assert_eq!(got, Ok(()), "{l:?}");
                assert!(served, "{l:?}: the server saw no completed login");
            }
            Err(piece) => {
                let e = got.expect_err(&format!("{l:?} must fail"));
                assert!(e.contains(piece), "{l:?}: {e:?} lacks {piece:?}");
                assert!(!e.contains(&l.password) || l.password == "wrong", "{e}");
                assert!(!served);
            }
        }
    }
}

#[tokio::test]
async fn a_peer_that_closes_or_answers_garbage_fails_the_login() {
    let l = login("PLAIN", "broker", "broker-secret");
    // Closed at once.
    let (mut client, server) = tokio::io::duplex(1024);
    drop(server);
    let e = authenticate(&mut client, &l, "n:1").await.unwrap_err();
    assert!(e.starts_with("SASL authentication to n:1 failed: "), "{e}");
    // An answer with another correlation id.
    let (mut client, mut server) = tokio::io::duplex(1024);
    let srv = tokio::spawn(async move {
        let _ = read_frame(&mut server, 1 << 20).await.unwrap();
        let mut out = BytesMut::new();
        let r = ResponseBody::SaslHandshake(SaslHandshakeResponse::default());
        encode_response(77, ApiKey::SaslHandshake, 1, &r, &mut out).unwrap();
        server.write_all(&out).await.unwrap();
        server
    });
    let e = authenticate(&mut client, &l, "n:1").await.unwrap_err();
    assert!(e.contains("correlation id 77 where 1 was expected"), "{e}");
    drop(srv.await.unwrap());
    // A size prefix above the login's bound.
    let (mut client, mut server) = tokio::io::duplex(1024);
    let srv = tokio::spawn(async move {
        let _ = read_frame(&mut server, 1 << 20).await.unwrap();
        server.write_all(&i32::MAX.to_be_bytes()).await.unwrap();
        server
    });
    let e = authenticate(&mut client, &l, "n:1").await.unwrap_err();
    assert!(e.contains("2147483647 bytes is negative or above"), "{e}");
    drop(srv.await.unwrap());
}

#[test]
fn unknown_mechanisms_are_refused_before_connecting() {
    for m in ["GSSAPI", "OAUTHBEARER", "plain", "SCRAM-SHA-1", ""] {
        let e = Login::new(&login(m, "u", "p")).unwrap_err();
        assert!(
            e.contains("is not one this node can log in with"),
            "{m}: {e}"
        );
    }
    for m in ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] {
        assert!(Login::new(&login(m, "u", "p")).is_ok(), "{m}");
    }
}

#[test]
fn plain_sends_one_token_and_is_done() {
    let mut l = Login::new(&login("PLAIN", "broker", "pw")).unwrap();
    assert_eq!(l.first().unwrap(), b"\0broker\0pw");
    assert_eq!(l.next(b"").unwrap(), Next::Done);
}

/// One SCRAM-SHA-256 exchange up to the server-final: (the client, the server-final).
fn scram_until_server_final() -> (Login, Vec<u8>) {
    let creds = creds();
    let mut client = Login::new(&login("SCRAM-SHA-256", "broker", "scram-secret")).unwrap();
    let mut server = SaslServer::new(Mechanism::Scram(ScramMechanism::Sha256));
    let first = client.first().unwrap();
    let Ok(Step::Continue(server_first)) = server.step(&first, &creds) else {
        panic!("server-first expected");
    };
    let Ok(Next::Send(client_final)) = client.next(&server_first) else {
        panic!("client-final expected");
    };
    let Ok(Step::Done { token, .. }) = server.step(&client_final, &creds) else {
        panic!("server-final expected");
    };
    (client, token)
}

#[test]
fn scram_is_done_only_after_the_server_final_verifies() {
    let (mut client, server_final) = scram_until_server_final();
    assert_eq!(client.next(&server_final).unwrap(), Next::Done);
    // Another signature (one base64 digit changed) does not verify.
    let (mut client, mut forged) = scram_until_server_final();
    let i = forged.len() - 2;
    forged[i] = if forged[i] == b'A' { b'B' } else { b'A' };
    let e = client.next(&forged).unwrap_err();
    assert!(e.contains("Invalid server signature"), "{e}");
    // A server-first whose nonce does not extend the client's.
    let mut client = Login::new(&login("SCRAM-SHA-512", "broker", "scram-secret")).unwrap();
    let _ = client.first().unwrap();
    let e = client.next(b"r=elsewhere,s=c2FsdA==,i=4096").unwrap_err();
    assert!(e.contains("nonce"), "{e}");
}

#[test]
fn handshake_and_authenticate_outcomes() {
    let ok = SaslHandshakeResponse {
        error_code: 0,
        mechanisms: vec!["PLAIN".into()],
    };
    assert_eq!(handshake_outcome(&ok, "PLAIN"), Ok(()));
    // (error code, mechanisms, expected text)
    let rows = [
        (
            33,
            vec!["PLAIN".to_string()],
            "UNSUPPORTED_SASL_MECHANISM (33): the listener does not take mechanism X (it enables PLAIN)",
        ),
        (
            34,
            vec![],
            "ILLEGAL_SASL_STATE (34): the listener does not take mechanism X (it enables none)",
        ),
        (
            -7,
            vec![],
            "error code -7: the listener does not take mechanism X (it enables none)",
        ),
    ];
    for (code, mechanisms, want) in rows {
        let r = SaslHandshakeResponse {
            error_code: code,
            mechanisms,
        };
        assert_eq!(handshake_outcome(&r, "X").unwrap_err(), want);
    }
    let ok = SaslAuthenticateResponse {
        auth_bytes: Bytes::from_static(b"tok"),
        ..SaslAuthenticateResponse::default()
    };
    assert_eq!(
        authenticate_outcome(&ok).unwrap(),
        Bytes::from_static(b"tok")
    );
    // (error code, message, expected text)
    let rows = [
        (
            58,
            Some("bad password"),
            "bad password (SASL_AUTHENTICATION_FAILED (58))",
        ),
        (58, Some(""), "SASL_AUTHENTICATION_FAILED (58)"),
        (34, None, "ILLEGAL_SASL_STATE (34)"),
    ];
    for (code, message, want) in rows {
        let r = SaslAuthenticateResponse {
            error_code: code,
            error_message: message.map(String::from),
            ..SaslAuthenticateResponse::default()
        };
        assert_eq!(authenticate_outcome(&r).unwrap_err(), want);
    }
}

#[test]
fn security_failures_are_told_from_unreachable_peers() {
    // (error, a security failure?)
    let rows = [
        (
            "TLS handshake with h:1 failed: invalid peer certificate: UnknownIssuer",
            true,
        ),
        ("SASL authentication to h:1 failed: bad password", true),
        ("connect to h:1: Connection refused (os error 111)", false),
        (
            "connect to h:1 (SASL_SSL) did not complete within 1s",
            false,
        ),
    ];
    for (e, want) in rows {
        assert_eq!(is_security_failure(e), want, "{e}");
    }
    let logged: Vec<u32> = (1..=20).filter(|n| worth_logging(*n)).collect();
    assert_eq!(logged, [1, 2, 4, 8, 16]);
}

#[test]
fn frame_len_table() {
    // (prefix, max, length or error)
    let rows: [(i32, usize, Option<usize>); 5] = [
        (0, 10, Some(0)),
        (10, 10, Some(10)),
        (11, 10, None),
        (-1, 10, None),
        (i32::MIN, usize::MAX, None),
    ];
    for (size, max, want) in rows {
        assert_eq!(
            frame_len(size.to_be_bytes(), max).ok(),
            want,
            "{size} {max}"
        );
    }
}

#[test]
fn request_frames_round_trip() {
    let body = RequestBody::SaslHandshake(SaslHandshakeRequest {
        mechanism: "PLAIN".into(),
    });
    let frame = request_frame(ApiKey::SaslHandshake, 1, 42, &body).unwrap();
    let len = frame_len(frame[..4].try_into().unwrap(), usize::MAX).unwrap();
    assert_eq!(len, frame.len() - 4);
    let (h, back) = decode_request(frame.freeze().slice(4..)).unwrap();
    assert_eq!((h.correlation_id, h.request_api_version), (42, 1));
    assert_eq!(h.client_id.as_deref(), Some("skiff-node"));
    assert!(matches!(back, RequestBody::SaslHandshake(r) if r.mechanism == "PLAIN"));
}

#[test]
fn addresses_and_server_names() {
    // (addr, host and port or None)
    let rows = [
        ("localhost:9093", Some(("localhost", 9093))),
        ("127.0.0.1:1", Some(("127.0.0.1", 1))),
        ("[::1]:9093", Some(("::1", 9093))),
        (
            "node-1.example.com:65535",
            Some(("node-1.example.com", 65535)),
        ),
        ("localhost", None),
        ("localhost:99999", None),
        (":9093", None),
        ("localhost:", None),
    ];
    for (addr, want) in rows {
        assert_eq!(split_addr(addr).ok(), want, "{addr}");
    }
    // (host, an IP name?)
    for (host, ip) in [
        ("localhost", false),
        ("127.0.0.1", true),
        ("::1", true),
        ("[::1]", true),
    ] {
        let n = server_name(host).unwrap();
        assert_eq!(matches!(n, ServerName::IpAddress(_)), ip, "{host}");
    }
    assert!(server_name("not a host!").is_err());
    assert_eq!(peer_name("::1", 9), "[::1]:9");
    assert_eq!(peer_name("h", 9), "h:9");
}

#[test]
fn debug_never_prints_the_password() {
    let sec = ClientSecurity {
        tls: None,
        sasl: Some(login("PLAIN", "broker", "hunter2-secret")),
    };
    let text = format!("{sec:?}");
    assert!(
        text.contains("broker") && text.contains("<redacted>"),
        "{text}"
    );
    assert!(!text.contains("hunter2"), "{text}");
    assert_eq!(sec.protocol_name(), "SASL_PLAINTEXT");
    assert_eq!(ClientSecurity::default().protocol_name(), "PLAINTEXT");
}

/// A CA and a `localhost` + `127.0.0.1` server certificate signed by it: (the server's TLS
/// config, a client config trusting the CA). Ring is the project's provider (the server's
/// `tls::config::ring_provider` allows the same deprecation).
#[allow(deprecated)]
fn tls_pair() -> (Arc<rustls::ServerConfig>, Arc<rustls::ClientConfig>) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair, SanType};
    use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = Issuer::from_params(&ca, &ca_key);
    let key = KeyPair::generate().unwrap();
    let mut leaf = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    leaf.subject_alt_names
        .push(SanType::IpAddress(std::net::IpAddr::from([127, 0, 0, 1])));
    let cert = leaf.signed_by(&key, &issuer).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let server = rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone(), ca_cert.der().clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
        .unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from(ca_cert.der().to_vec()))
        .unwrap();
    let client = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    (Arc::new(server), Arc::new(client))
}

/// A listener that serves one connection: TLS when `tls` is given, then the login.
async fn listener(
    tls: Option<Arc<rustls::ServerConfig>>,
    enabled: &'static [&'static str],
) -> (u16, tokio::task::JoinHandle<bool>) {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let task = tokio::spawn(async move {
        let (tcp, _) = l.accept().await.unwrap();
        match tls {
            None => serve_login(tcp, enabled).await,
            Some(c) => match tokio_rustls::TlsAcceptor::from(c).accept(tcp).await {
                Ok(s) => serve_login(s, enabled).await,
                Err(_) => false,
            },
        }
    });
    (port, task)
}

async fn ping(mut s: Stream) {
    s.write_all(&[0, 0, 0, 4]).await.unwrap();
    s.write_all(b"ping").await.unwrap();
    s.flush().await.unwrap();
    assert_eq!(&read_frame(&mut s, 16).await.unwrap()[..], b"pong");
}

#[tokio::test]
async fn connect_speaks_tls_then_sasl_by_host_name_and_by_ip() {
    const ALL: &[&str] = &["PLAIN", "SCRAM-SHA-512"];
    let (server_tls, client_tls) = tls_pair();
    let t = Duration::from_secs(10);
    for host in ["localhost", "127.0.0.1"] {
        for m in ["PLAIN", "SCRAM-SHA-512"] {
            let password = if m == "PLAIN" {
                "broker-secret"
            } else {
                "scram-secret"
            };
            let sec = ClientSecurity {
                tls: Some(Arc::clone(&client_tls)),
                sasl: Some(login(m, "broker", password)),
            };
            let (port, task) = listener(Some(Arc::clone(&server_tls)), ALL).await;
            let s = connect(host, port, &sec, t).await.unwrap();
            ping(s).await;
            assert!(task.await.unwrap(), "{host} {m}");
        }
    }
    // SASL_PLAINTEXT.
    let sec = ClientSecurity {
        tls: None,
        sasl: Some(login("PLAIN", "broker", "broker-secret")),
    };
    let (port, task) = listener(None, ALL).await;
    ping(connect("127.0.0.1", port, &sec, t).await.unwrap()).await;
    assert!(task.await.unwrap());
    // A bad password over TLS: the broker's message, naming the peer.
    let sec = ClientSecurity {
        tls: Some(Arc::clone(&client_tls)),
        sasl: Some(login("PLAIN", "broker", "nope")),
    };
    let (port, task) = listener(Some(Arc::clone(&server_tls)), ALL).await;
    let Err(e) = connect("localhost", port, &sec, t).await else {
        panic!("a wrong password must not connect");
    };
    assert!(
        e.starts_with(&format!("SASL authentication to localhost:{port} failed: ")),
        "{e}"
    );
    assert!(!task.await.unwrap());
}

#[tokio::test]
async fn tls_refuses_an_untrusted_server_or_a_name_it_does_not_carry() {
    let (server_tls, _) = tls_pair();
    let (_, other_ca) = tls_pair();
    let t = Duration::from_secs(10);
    let sec = ClientSecurity {
        tls: Some(other_ca),
        sasl: None,
    };
    let (port, task) = listener(Some(Arc::clone(&server_tls)), &[]).await;
    let Err(e) = connect("localhost", port, &sec, t).await else {
        panic!("another CA's certificate must not be trusted");
    };
    assert!(
        e.starts_with(&format!("TLS handshake with localhost:{port} failed")),
        "{e}"
    );
    assert!(!task.await.unwrap());
    // The certificate names localhost and 127.0.0.1, not 127.0.0.2.
    let (server_tls, client_tls) = tls_pair();
    let sec = ClientSecurity {
        tls: Some(client_tls),
        sasl: None,
    };
    let l = tokio::net::TcpListener::bind("127.0.0.2:0").await;
    if let Ok(l) = l {
        let port = l.local_addr().unwrap().port();
        let task = tokio::spawn(async move {
            let (tcp, _) = l.accept().await.unwrap();
            tokio_rustls::TlsAcceptor::from(server_tls)
                .accept(tcp)
                .await
                .is_ok()
        });
        let Err(e) = connect("127.0.0.2", port, &sec, t).await else {
            panic!("a certificate without the IP must not be accepted");
        };
        assert!(e.contains("TLS handshake"), "{e}");
        assert!(!task.await.unwrap());
    }
}

#[tokio::test]
async fn the_whole_connect_is_bounded_by_the_timeout() {
    // A listener that accepts and never answers: the TLS handshake (and a SASL login) hang.
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let hold = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = l.accept().await {
            held.push(s);
        }
    });
    let (_, client_tls) = tls_pair();
    let rows = [
        ClientSecurity {
            tls: Some(client_tls),
            sasl: None,
        },
        ClientSecurity {
            tls: None,
            sasl: Some(login("PLAIN", "broker", "broker-secret")),
        },
    ];
    for sec in rows {
        let attempt = connect("127.0.0.1", port, &sec, Duration::from_millis(300));
        let Ok(Err(e)) = tokio::time::timeout(Duration::from_secs(5), attempt).await else {
            panic!("a silent peer must not connect, and the connect must end in time");
        };
        assert!(e.contains("did not complete within 300ms"), "{e}");
        assert!(e.contains(sec.protocol_name()), "{e}");
    }
    // Nobody listening: the TCP error, naming the peer.
    hold.abort();
    let _ = hold.await;
    let e = connect(
        "127.0.0.1",
        port,
        &ClientSecurity::default(),
        Duration::from_secs(5),
    )
    .await
    .err()
    .unwrap();
    assert!(
        e.starts_with(&format!("connect to 127.0.0.1:{port}")),
        "{e}"
    );
}
