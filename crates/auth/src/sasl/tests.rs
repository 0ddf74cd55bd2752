//! Exchange tests for [`super::SaslServer`] against the RFC 7677 vector and
//! [`super::ScramClient`]: every failure is an `AuthenticationFailed` with Kafka's message, the
//! precise reason in `failure_reason`, and nothing panics on any input.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use proptest::prelude::*;
use std::sync::LazyLock;

use super::*;

const SHA256: ScramMechanism = ScramMechanism::Sha256;
const SHA512: ScramMechanism = ScramMechanism::Sha512;
const SALT: &[u8] = b"0123456789abcdefghijklmnop"; // 26 bytes, like Kafka's

fn generic(m: ScramMechanism) -> SaslError {
    SaslError::AuthenticationFailed(format!(
        "Authentication failed during authentication due to invalid credentials with SASL mechanism {}",
        m.mechanism_name()
    ))
}

/// Users `user`/`pencil` (RFC 7677's salt), `alice`, `a,b=c` for both mechanisms; `old` with 1000
/// iterations; `only512` for SHA-512 only; PLAIN users `alice` and `admin`.
fn creds() -> &'static MemoryCredentials {
    // Built once: PBKDF2 is generic, so it runs unoptimized in this crate's test build.
    static CREDS: LazyLock<MemoryCredentials> = LazyLock::new(build_creds);
    &CREDS
}

fn build_creds() -> MemoryCredentials {
    let mut c = MemoryCredentials::with_plain_users(
        [("alice", "alice-secret"), ("admin", "admin-secret")]
            .into_iter()
            .map(|(u, p)| (u.to_string(), p.to_string()))
            .collect(),
    );
    let rfc_salt = B64.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
    for m in ScramMechanism::ALL {
        c.add_scram(
            "user",
            ScramCredential::from_password(m, "pencil", &rfc_salt, 4096),
        );
        c.add_scram(
            "alice",
            ScramCredential::from_password(m, "alice-secret", SALT, 4096),
        );
        c.add_scram(
            "a,b=c",
            ScramCredential::from_password(m, "odd", SALT, 8192),
        );
        c.add_scram(
            "old",
            ScramCredential::from_password(m, "old-secret", SALT, 1000),
        );
    }
    c.add_scram(
        "only512",
        ScramCredential::from_password(SHA512, "p", SALT, 4096),
    );
    // A SHA-512 credential filed under SHA-256: unusable for SCRAM-SHA-256.
    c.scram.insert(
        ("mixed".into(), SHA256),
        ScramCredential::from_password(SHA512, "p", SALT, 4096),
    );
    c
}

fn cont(s: Result<Step, SaslError>) -> Vec<u8> {
    match s {
        Ok(Step::Continue(t)) => t,
        other => panic!("expected Continue, got {other:?}"),
    }
}

#[test]
fn rfc7677_sha256_exchange() {
    let creds = creds();
    let mut server =
        SaslServer::with_nonce(Mechanism::Scram(SHA256), "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0");
    let mut client = ScramClient::with_nonce(SHA256, "user", "pencil", "rOprNGfwEbeRWgbNEkqO");
    let client_first = client.step(b"").unwrap();
    assert_eq!(client_first, b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
    let server_first = cont(server.step(&client_first, creds));
    assert_eq!(
        String::from_utf8(server_first.clone()).unwrap(),
        "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    );
    let client_final = client.step(&server_first).unwrap();
    assert_eq!(
        String::from_utf8(client_final.clone()).unwrap(),
        "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    );
    assert!(!server.is_complete());
    let done = server.step(&client_final, creds).unwrap();
    let Step::Done { token, principal } = done else {
        panic!("expected Done, got {done:?}")
    };
    assert_eq!(token, b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=");
    assert_eq!(principal, KafkaPrincipal::user("user"));
    assert!(server.is_complete());
    assert_eq!(server.principal(), Some(&principal));
    assert_eq!(client.step(&token).unwrap(), b"");
    assert!(client.is_complete());
    // The exchange is over.
    assert!(matches!(
        server.step(b"x", creds),
        Err(SaslError::IllegalState(_))
    ));
}

/// Runs a full exchange with `client_first` (None: the client's own) and returns the server's
/// result of the final step.
fn exchange(
    m: ScramMechanism,
    user: &str,
    password: &str,
    client_first: Option<&str>,
) -> (SaslServer, Result<Step, SaslError>, ScramClient) {
    let creds = creds();
    let mut server = SaslServer::new(Mechanism::Scram(m));
    let mut client = ScramClient::new(m, user, password);
    let own_first = client.step(b"").unwrap();
    let first = client_first.map_or(own_first, |s| s.as_bytes().to_vec());
    let server_first = cont(server.step(&first, creds));
    let client_final = match client_first {
        None => client.step(&server_first).unwrap(),
        // The client's proof covers its own bare message; compute it for this one.
        Some(f) => resign(m, password, f, &server_first),
    };
    let result = server.step(&client_final, creds);
    (server, result, client)
}

/// The client-final for an arbitrary client-first message (its gs2 header in `c=`).
fn resign(m: ScramMechanism, password: &str, client_first: &str, server_first: &[u8]) -> Vec<u8> {
    let server_first = std::str::from_utf8(server_first).unwrap();
    let gs2_end = client_first.match_indices(',').nth(1).unwrap().0 + 1;
    let (gs2, bare) = client_first.split_at(gs2_end);
    let mut it = server_first.split(',');
    let nonce = &it.next().unwrap()[2..];
    let salt = B64.decode(&it.next().unwrap()[2..]).unwrap();
    let iters: u32 = it.next().unwrap()[2..].parse().unwrap();
    let salted = m.salted_password(password.as_bytes(), &salt, iters);
    let client_key = m.hmac(&salted, b"Client Key");
    let without = format!("c={},r={nonce}", B64.encode(gs2));
    let auth = format!("{bare},{server_first},{without}");
    let sig = m.hmac(&m.hash(&client_key), auth.as_bytes());
    let proof: Vec<u8> = client_key.iter().zip(sig).map(|(a, b)| a ^ b).collect();
    format!("{without},p={}", B64.encode(proof)).into_bytes()
}

#[test]
fn scram_round_trips() {
    // (mechanism, user, password, custom client-first)
    let cases: &[(ScramMechanism, &str, &str, Option<&str>)] = &[
        (SHA256, "alice", "alice-secret", None),
        (SHA512, "alice", "alice-secret", None),
        (SHA512, "only512", "p", None),
        (SHA256, "a,b=c", "odd", None), // saslname a=2Cb=3Dc
        (SHA512, "a,b=c", "odd", None),
        (
            SHA256,
            "alice",
            "alice-secret",
            Some("n,a=alice,n=alice,r=abc"),
        ),
        (
            SHA512,
            "a,b=c",
            "odd",
            Some("n,a=a=2Cb=3Dc,n=a=2Cb=3Dc,r=xyz"),
        ),
        (
            SHA256,
            "alice",
            "alice-secret",
            Some("n,,n=alice,r=abc,foo=bar,tokenauth=false"),
        ),
    ];
    for (m, user, password, first) in cases {
        let (server, result, mut client) = exchange(*m, user, password, *first);
        let Ok(Step::Done { token, principal }) = result else {
            panic!(
                "{m:?} {user} {first:?}: {result:?} ({:?})",
                server.failure_reason()
            )
        };
        assert_eq!(principal, KafkaPrincipal::user(*user), "{user}");
        if first.is_none() {
            assert_eq!(client.step(&token).unwrap(), b"");
            assert!(client.is_complete());
        }
    }
}

#[test]
fn server_nonce_is_random_and_long() {
    let creds = creds();
    let mut nonces = Vec::new();
    for _ in 0..2 {
        let mut s = SaslServer::new(Mechanism::Scram(SHA256));
        let first = String::from_utf8(cont(s.step(b"n,,n=alice,r=CLIENT", creds))).unwrap();
        let nonce = first
            .strip_prefix("r=CLIENT")
            .unwrap()
            .split(',')
            .next()
            .unwrap()
            .to_string();
        assert!(
            nonce.len() >= 32 && nonce.bytes().all(|b| b.is_ascii_alphanumeric()),
            "{nonce}"
        );
        nonces.push(nonce);
    }
    assert_ne!(nonces[0], nonces[1]);
}

#[test]
fn bad_credentials_fail_at_the_final_step() {
    // (mechanism, user, password, reason fragment): each gets a server-first first.
    let cases: &[(ScramMechanism, &str, &str, &str)] = &[
        (SHA256, "alice", "wrong", "Invalid client credentials"),
        (SHA512, "alice", "alice-secre", "Invalid client credentials"),
        (SHA256, "nobody", "x", "unknown user"),
        (SHA256, "only512", "p", "unknown user"),
        (SHA256, "old", "old-secret", "less than the minimum 4096"),
        (SHA256, "mixed", "p", "credential is for SCRAM-SHA-512"),
    ];
    for (m, user, password, reason) in cases {
        let (server, result, _) = exchange(*m, user, password, None);
        assert_eq!(result, Err(generic(*m)), "{user}");
        let why = server.failure_reason().unwrap();
        assert!(why.contains(reason), "{user}: {why}");
    }
}

#[test]
fn unknown_user_looks_like_a_real_one() {
    let creds = creds();
    let first = |user: &str| {
        let mut s = SaslServer::with_nonce(Mechanism::Scram(SHA256), "N");
        String::from_utf8(cont(s.step(format!("n,,n={user},r=c").as_bytes(), creds))).unwrap()
    };
    let (real, fake) = (first("alice"), first("nobody"));
    let shape = |s: &str| -> (usize, String) {
        let parts: Vec<&str> = s.split(',').collect();
        assert_eq!(parts.len(), 3, "{s}");
        (
            B64.decode(&parts[1][2..]).unwrap().len(),
            parts[2].to_string(),
        )
    };
    assert_eq!(shape(&real), shape(&fake), "{real} vs {fake}");
    // Stable per user (a random salt each time would reveal a fake), different across users.
    assert_eq!(fake, first("nobody"));
    let salt = |s: &str| s.split(',').nth(1).unwrap().to_string();
    assert_ne!(salt(&fake), salt(&first("nobody2")));
}

/// A server that has accepted `alice`'s client-first (fixed nonces), and the client's valid
/// final message for it (computed once per mechanism: the client runs PBKDF2).
fn after_first(m: ScramMechanism) -> (SaslServer, String) {
    static FINALS: LazyLock<Vec<String>> = LazyLock::new(|| {
        ScramMechanism::ALL
            .iter()
            .map(|&m| {
                let mut server = SaslServer::with_nonce(Mechanism::Scram(m), "SNONCE");
                let mut client = ScramClient::with_nonce(m, "alice", "alice-secret", "CNONCE");
                let server_first = cont(server.step(&client.step(b"").unwrap(), creds()));
                String::from_utf8(client.step(&server_first).unwrap()).unwrap()
            })
            .collect()
    });
    let mut server = SaslServer::with_nonce(Mechanism::Scram(m), "SNONCE");
    cont(server.step(b"n,,n=alice,r=CNONCE", creds()));
    let i = ScramMechanism::ALL.iter().position(|x| *x == m).unwrap();
    (server, FINALS[i].clone())
}

#[test]
fn malformed_client_first_fails() {
    // (message, reason fragment)
    let cases: &[(&[u8], &str)] = &[
        (b"", "no gs2 header"),
        (b"n,,", "missing user name"),
        (b"\xff\xfe", "not valid UTF-8"),
        (b"y,,n=alice,r=abc", "gs2 flag 'y'"),
        (b"p=tls-unique,,n=alice,r=abc", "channel binding (p=)"),
        (b"x,,n=alice,r=abc", "invalid gs2"),
        (b"n,,r=abc", "missing user name"),
        (b"n,,n=,r=abc", "missing user name"),
        (b"n,,n=alice", "missing nonce"),
        (b"n,,n=alice,x=abc", "missing nonce"),
        (b"n,,n=alice,r=", "invalid nonce"),
        (b"n,,n=alice,r=a\x7fb", "invalid nonce"),
        (b"n,,n=al=ice,r=abc", "invalid saslname"),
        (b"n,,n=alice=2,r=abc", "invalid saslname"),
        (b"n,,n=alice,r=abc,tokenauth=true", "tokenauth"),
        (b"n,,n=alice,r=abc,tokenauth=TRUE", "tokenauth"),
        (b"n,,m=ext,n=alice,r=abc", "mandatory extension"),
        (b"n,,n=alice,r=abc,=x", "malformed extension"),
        (b"n,,n=alice,r=abc,k1=x", "malformed extension"),
        (b"n,,n=alice,r=abc,k=", "malformed extension"),
        (b"n,a=,n=alice,r=abc", "invalid gs2 authzid"),
        (b"n,b=x,n=alice,r=abc", "invalid gs2 authzid"),
        (b"n,a=x=y,n=alice,r=abc", "invalid authzid encoding"),
    ];
    for (msg, reason) in cases {
        for m in ScramMechanism::ALL {
            let mut s = SaslServer::new(Mechanism::Scram(m));
            let label = String::from_utf8_lossy(msg);
            assert_eq!(s.step(msg, creds()), Err(generic(m)), "{label}");
            let why = s.failure_reason().unwrap();
            assert!(why.contains(reason), "{label}: {why}");
            assert!(matches!(
                s.step(msg, creds()),
                Err(SaslError::IllegalState(_))
            ));
        }
    }
    // The authzid mismatch is the one message the client sees as is (Kafka's).
    let mut s = SaslServer::new(Mechanism::Scram(SHA256));
    let err = s.step(b"n,a=bob,n=alice,r=abc", creds()).unwrap_err();
    assert_eq!(
        err,
        SaslError::AuthenticationFailed(
            "Authentication failed: Client requested an authorization id that is different from username".into()
        )
    );
}

#[test]
fn malformed_client_final_fails() {
    type Mutate = fn(&str) -> String;
    // (mutation of a valid client-final "c=biws,r=<nonce>,p=<proof>", reason fragment)
    let cases: &[(Mutate, &str)] = &[
        (|f| f.to_string(), ""), // control: unmodified succeeds
        (
            |f| f[..f.rfind(",p=").unwrap()].to_string(),
            "missing proof",
        ),
        (
            |f| format!("{},p=!!!!", &f[..f.rfind(",p=").unwrap()]),
            "proof is not base64",
        ),
        (
            |f| format!("{},p=AAAA", &f[..f.rfind(",p=").unwrap()]),
            "proof has the wrong length",
        ),
        (
            |f| f.replacen("c=biws", "c=b!ws", 1),
            "channel binding is not base64",
        ),
        (
            |f| f.replacen("c=biws", "c=eSws", 1),
            "channel binding does not match",
        ), // "y,,"
        (
            |f| f.replacen("c=biws", "c=cD10bHMtdW5pcXVlLCw=", 1),
            "channel binding does not match",
        ),
        (|f| f.replacen("c=biws,", "", 1), "missing channel binding"),
        (
            |f| f.replacen("c=biws", "x=biws", 1),
            "missing channel binding",
        ),
        (|f| f.replacen(",r=", ",r=x", 1), "Invalid client nonce"),
        (
            |f| {
                let i = f.find(",p=").unwrap();
                format!("{}{}", &f[..i - 1], &f[i..])
            },
            "Invalid client nonce",
        ),
        (|f| f.replacen(",r=", ",q=", 1), "missing nonce"),
        (|f| f.replacen(",p=", ",=x,p=", 1), "malformed extension"),
        (
            |f| f.replacen(",p=", ",ok=x,p=", 1),
            "Invalid client credentials",
        ), // extension is signed
        (flip_proof_bit, "Invalid client credentials"),
        (|_| "\u{fffd}".to_string(), "missing proof"),
    ];
    for (mutate, reason) in cases {
        for m in ScramMechanism::ALL {
            let (mut server, fin) = after_first(m);
            let msg = mutate(&fin);
            let result = server.step(msg.as_bytes(), creds());
            if reason.is_empty() {
                assert!(matches!(result, Ok(Step::Done { .. })), "{msg}: {result:?}");
                continue;
            }
            assert_eq!(result, Err(generic(m)), "{msg}");
            let why = server.failure_reason().unwrap();
            assert!(why.contains(reason), "{msg}: {why}");
            assert!(!server.is_complete());
        }
    }
    let (mut server, _) = after_first(SHA256);
    assert_eq!(server.step(b"\xff", creds()), Err(generic(SHA256)));
}

fn flip_proof_bit(f: &str) -> String {
    let i = f.rfind(",p=").unwrap();
    let mut proof = B64.decode(&f[i + 3..]).unwrap();
    proof[0] ^= 1;
    format!("{},p={}", &f[..i], B64.encode(proof))
}

#[test]
fn plain_exchanges() {
    // (token, Ok(user) | Err(message))
    let cases: &[(&[u8], Result<&str, &str>)] = &[
        (b"\0alice\0alice-secret", Ok("alice")),
        (b"alice\0alice\0alice-secret", Ok("alice")),
        (b"\0admin\0admin-secret", Ok("admin")),
        (
            b"bob\0alice\0alice-secret",
            Err(
                "Authentication failed: Client requested an authorization id that is different from username",
            ),
        ),
        (
            b"\0\0pw",
            Err("Authentication failed: username not specified"),
        ),
        (
            b"\0alice\0",
            Err("Authentication failed: password not specified"),
        ),
        (
            b"\0alice\0wrong",
            Err("Authentication failed: Invalid username or password"),
        ),
        (
            b"\0alice\0alice-secretX",
            Err("Authentication failed: Invalid username or password"),
        ),
        (
            b"\0alice\0alice-secre",
            Err("Authentication failed: Invalid username or password"),
        ),
        (
            b"\0admin\0alice-secret",
            Err("Authentication failed: Invalid username or password"),
        ),
        (
            b"\0nobody\0x",
            Err("Authentication failed: Invalid username or password"),
        ),
        (
            b"\0Alice\0alice-secret",
            Err("Authentication failed: Invalid username or password"),
        ),
        (
            b"alice-secret",
            Err("Invalid SASL/PLAIN response: expected 3 tokens, got 1"),
        ),
        (
            b"",
            Err("Invalid SASL/PLAIN response: expected 3 tokens, got 1"),
        ),
        (
            b"alice\0alice-secret",
            Err("Invalid SASL/PLAIN response: expected 3 tokens, got 2"),
        ),
        (
            b"\0alice\0alice-secret\0",
            Err("Invalid SASL/PLAIN response: expected 3 tokens, got 4"),
        ),
        (
            b"a\0b\0c\0d\0e\0f",
            Err("Invalid SASL/PLAIN response: expected 3 tokens, got 4"),
        ),
        (
            b"\0alice\0\xff",
            Err("Invalid SASL/PLAIN response: the message is not valid UTF-8"),
        ),
    ];
    for (token, want) in cases {
        let mut s = SaslServer::new(Mechanism::Plain);
        let got = s.step(token, creds());
        let label = String::from_utf8_lossy(token);
        match want {
            Ok(user) => {
                assert_eq!(
                    got,
                    Ok(Step::Done {
                        token: Vec::new(),
                        principal: KafkaPrincipal::user(*user)
                    }),
                    "{label}"
                );
                assert!(s.is_complete());
            }
            Err(msg) => {
                assert_eq!(
                    got,
                    Err(SaslError::AuthenticationFailed(msg.to_string())),
                    "{label}"
                );
                assert!(!s.is_complete());
            }
        }
        assert!(
            matches!(s.step(token, creds()), Err(SaslError::IllegalState(_))),
            "{label}"
        );
    }
    let mut s = SaslServer::new(Mechanism::Plain);
    let token = plain_client_token("admin", "admin-secret");
    assert!(matches!(s.step(&token, creds()), Ok(Step::Done { .. })));
}

#[test]
fn mechanism_names() {
    let cases = [
        ("PLAIN", Some(Mechanism::Plain)),
        ("SCRAM-SHA-256", Some(Mechanism::Scram(SHA256))),
        ("SCRAM-SHA-512", Some(Mechanism::Scram(SHA512))),
        ("plain", None),
        ("GSSAPI", None),
        ("SCRAM-SHA-1", None),
        ("", None),
    ];
    for (name, want) in cases {
        assert_eq!(Mechanism::from_name(name), want, "{name}");
        if let Some(m) = want {
            assert_eq!(m.name(), name);
        }
    }
    assert_eq!(
        Mechanism::ALL.map(Mechanism::name),
        ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
    );
}

#[test]
fn sasl_names() {
    // (user, saslname)
    let cases = [
        ("alice", "alice"),
        ("a,b", "a=2Cb"),
        ("a=b", "a=3Db"),
        ("=,=", "=3D=2C=3D"),
        ("", ""),
    ];
    for (user, encoded) in cases {
        assert_eq!(sasl_name(user), encoded);
        assert_eq!(username_from_sasl_name(encoded).as_deref(), Some(user));
    }
    for bad in ["=", "a=", "a=2", "a=2c", "=3d", "a=41", "a==3D"] {
        assert_eq!(username_from_sasl_name(bad), None, "{bad}");
    }
}

#[test]
fn client_rejects_a_bad_server() {
    // (server-first, error fragment)
    let cases = [
        ("r=other,s=QUJD,i=4096", "does not start with client nonce"),
        ("r=CN,s=QUJD,i=4096", "does not start with client nonce"),
        ("r=CNx,s=QUJD,i=1000", "less than the minimum"),
        ("r=CNx,s=!!,i=4096", "format"),
        ("r=CNx,s=QUJD", "format"),
        ("r=CNx,s=QUJD,i=-1", "less than the minimum"),
        ("e=other-error", "format"),
    ];
    for (server_first, fragment) in cases {
        let mut c = ScramClient::with_nonce(SHA256, "u", "p", "CN");
        c.step(b"").unwrap();
        let err = c.step(server_first.as_bytes()).unwrap_err();
        assert!(err.to_string().contains(fragment), "{server_first}: {err}");
    }
    // A server that does not know the server key is caught at the end.
    let creds = creds();
    let mut server = SaslServer::new(Mechanism::Scram(SHA256));
    let mut c = ScramClient::new(SHA256, "alice", "alice-secret");
    let first = c.step(b"").unwrap();
    let server_first = cont(server.step(&first, creds));
    c.step(&server_first).unwrap();
    let forged = format!("v={}", B64.encode([0u8; 32]));
    assert!(
        c.step(forged.as_bytes())
            .unwrap_err()
            .to_string()
            .contains("Invalid server signature")
    );
    assert!(!c.is_complete());
}

fn any_step_never_panics(m: Mechanism, first: &[u8], second: &[u8]) {
    let creds = creds();
    let mut s = SaslServer::new(m);
    let r1 = s.step(first, creds);
    let r2 = s.step(second, creds);
    assert!(!(r1.is_err() && r2.is_ok()), "a failed exchange went on");
    if let Mechanism::Scram(sm) = m {
        let (mut s, _) = after_first(sm);
        let _ = s.step(second, creds);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_bytes_never_panic(
        first in proptest::collection::vec(any::<u8>(), 0..64),
        second in proptest::collection::vec(any::<u8>(), 0..64),
    ) {
        for m in Mechanism::ALL {
            any_step_never_panics(m, &first, &second);
        }
    }

    #[test]
    fn scram_shaped_text_never_panics(
        first in "[nyp]?,(a=[a-z=23CD]{0,4})?,(m=x,)?(n=[a-z=,23CD]{0,6})?,(r=[!-~]{0,4})?(,[a-z]{0,3}=[a-z]{0,2}){0,2}",
        second in "(c=[A-Za-z0-9+/=]{0,8},)?(r=[!-~]{0,6},)?([a-z]=[a-z],)?(p=[A-Za-z0-9+/=]{0,12})?",
    ) {
        for m in Mechanism::ALL {
            any_step_never_panics(m, first.as_bytes(), second.as_bytes());
        }
    }

    #[test]
    fn client_never_panics(token in proptest::collection::vec(any::<u8>(), 0..64)) {
        let mut c = ScramClient::new(SHA256, "u", "p");
        c.step(b"").unwrap();
        let _ = c.step(&token);
        let _ = c.step(&token);
    }
}
