//! SASL/SCRAM-SHA-256/512, server side (RFC 5802 + RFC 7677 as Kafka's `ScramSaslServer` and
//! `ScramMessages` do it).
//!
//! # Mental model
//!
//! ```text
//! client-first  n,[a=<authzid>],n=<saslname>,r=<cnonce>[,<ext>=<value>]*
//! server-first  r=<cnonce><snonce>,s=<base64 salt>,i=<iterations>
//! client-final  c=<base64 gs2 header>,r=<cnonce><snonce>[,<ext>=<value>]*,p=<base64 proof>
//! server-final  v=<base64 server signature>
//! AuthMessage = client-first-bare "," server-first "," client-final-without-proof
//! ```
//!
//! The proof check: `ClientKey = proof XOR HMAC(StoredKey, AuthMessage)`, then
//! `H(ClientKey) == StoredKey` (constant time); the answer is
//! `HMAC(ServerKey, AuthMessage)`.
//!
//! # Invariants
//!
//! - No channel binding: the gs2 flag must be `n` (`y` and `p=` are refused, as Kafka's
//!   message pattern does), and the final `c=` must decode to exactly the gs2 header
//!   (`biws` = `n,,`). A mandatory extension (`m=`) is refused (RFC 5802 section 5.1).
//! - Extensions: `tokenauth=true` is refused (no delegation tokens); others are ignored, as Kafka
//!   does; they stay in the AuthMessage as sent.
//! - The saslname is decoded (`=2C` -> `,`, `=3D` -> `=`, any other `=` is invalid); unlike
//!   Kafka's ASCII-only pattern any UTF-8 except NUL and `,` is accepted (RFC 5802).
//! - A non-empty authzid must equal the user: Kafka's one message shown to the client.
//!   Every other failure shows Kafka's generic "invalid credentials" text.
//! - No user enumeration: an unknown user, or a credential that is unusable (another
//!   mechanism's, fewer than 4096 iterations, wrong key lengths), still gets a server-first
//!   with a fake salt and 4096 iterations, and fails only at the final step, after the same
//!   proof computation. The fake salt is derived from the user name with a per-process random
//!   key, so probing a user twice shows the same salt, as for a real one. (Kafka itself fails
//!   unknown users at the first step with the same generic text; RFC 5802 section 9 suggests
//!   this stronger behaviour.)
//! - The server nonce is 32 random alphanumerics (`rand`), unless a test fixes it.
//!
//! # Why not rsasl
//!
//! rsasl 2.3.1's SCRAM server generates its nonce internally (no way to run RFC 7677's vector),
//! skips the client's extensions (so `tokenauth` cannot be refused), does not decode the
//! saslname, and answers with its own error texts. The message flow here is a few string
//! splits over the RustCrypto primitives (`hmac`, `sha2`, `pbkdf2` through
//! [`ScramMechanism`]); no hash or HMAC is written by hand.

use std::sync::OnceLock;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use rand::Rng;
use rand::distr::Alphanumeric;
use subtle::{Choice, ConstantTimeEq};

use super::{Credentials, Failure, Mechanism, ScramCredential, ScramMechanism};
use crate::principal::KafkaPrincipal;

/// The server nonce's length in alphanumerics.
pub(crate) const NONCE_LEN: usize = 32;
/// The iterations a fake credential announces (Kafka's `kafka-configs` default).
const FAKE_ITERATIONS: i32 = 4096;

/// A fresh random server nonce.
pub(crate) fn random_nonce() -> String {
    rand::rng()
        .sample_iter(Alphanumeric)
        .take(NONCE_LEN)
        .map(char::from)
        .collect()
}

/// Encodes a user name as a saslname (`,` -> `=2C`, `=` -> `=3D`; Kafka's `ScramFormatter.saslName`).
pub fn sasl_name(user: &str) -> String {
    user.replace('=', "=3D").replace(',', "=2C")
}

/// Decodes a saslname; `None` if an `=` is not part of `=2C` or `=3D`.
pub fn username_from_sasl_name(s: &str) -> Option<String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('=') {
        out.push_str(&rest[..i]);
        let esc = rest.get(i..i + 3)?;
        match esc {
            "=2C" => out.push(','),
            "=3D" => out.push('='),
            _ => return None,
        }
        rest = &rest[i + 3..];
    }
    out.push_str(rest);
    Some(out)
}

/// What the server remembers between the first and the final message.
pub(crate) struct Exchange {
    user: String,
    gs2_header: String,
    client_first_bare: String,
    server_first: String,
    nonce: String,
    credential: ScramCredential,
    /// Why the credential is fake (unknown user, unusable credential), for the log.
    fake_reason: Option<String>,
}

/// A printable nonce (RFC 5802 `printable`: 0x21-0x7E except `,`), non-empty.
fn is_printable(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| (0x21..=0x7e).contains(&b) && b != b',')
}

/// An extension `<ALPHA+>=<value>`: returns (key, value).
fn extension(attr: &str) -> Option<(&str, &str)> {
    let (k, v) = attr.split_once('=')?;
    let ok = !k.is_empty() && k.bytes().all(|b| b.is_ascii_alphabetic()) && !v.is_empty();
    (ok && !v.contains('\0')).then_some((k, v))
}

struct ClientFirst<'a> {
    gs2_header: &'a str,
    authzid: String,
    user: String,
    bare: &'a str,
    nonce: &'a str,
    token_auth: bool,
}

fn parse_client_first(msg: &str) -> Result<ClientFirst<'_>, String> {
    let mut parts = msg.splitn(3, ',');
    let flag = parts.next().unwrap_or_default();
    let (Some(authz), Some(bare)) = (parts.next(), parts.next()) else {
        return Err("client-first message has no gs2 header".into());
    };
    match flag {
        "n" => {}
        "y" => {
            return Err("client-first message: gs2 flag 'y' refused (no channel binding)".into());
        }
        f if f.starts_with("p=") => {
            return Err("client-first message requests channel binding (p=), not supported".into());
        }
        _ => return Err("client-first message: invalid gs2 channel binding flag".into()),
    }
    let authzid = match authz {
        "" => String::new(),
        a => match a.strip_prefix("a=").filter(|s| !s.is_empty()) {
            Some(name) => username_from_sasl_name(name)
                .ok_or_else(|| "client-first message: invalid authzid encoding".to_string())?,
            None => return Err("client-first message: invalid gs2 authzid".into()),
        },
    };
    let gs2_header = &msg[..flag.len() + authz.len() + 2];
    let mut attrs = bare.split(',');
    let first = attrs.next().unwrap_or_default();
    if first.starts_with("m=") {
        return Err("client-first message has a mandatory extension (m=), not supported".into());
    }
    let Some(saslname) = first.strip_prefix("n=").filter(|s| !s.is_empty()) else {
        return Err("client-first message: missing user name (n=)".into());
    };
    let user = username_from_sasl_name(saslname)
        .filter(|u| !u.contains('\0'))
        .ok_or_else(|| "client-first message: invalid saslname encoding".to_string())?;
    let Some(nonce) = attrs.next().and_then(|a| a.strip_prefix("r=")) else {
        return Err("client-first message: missing nonce (r=)".into());
    };
    if !is_printable(nonce) {
        return Err("client-first message: invalid nonce".into());
    }
    let mut token_auth = false;
    for attr in attrs {
        let Some((k, v)) = extension(attr) else {
            return Err("client-first message: malformed extension".into());
        };
        if k == "tokenauth" && v.eq_ignore_ascii_case("true") {
            token_auth = true;
        }
    }
    Ok(ClientFirst {
        gs2_header,
        authzid,
        user,
        bare,
        nonce,
        token_auth,
    })
}

/// The per-process key that makes fake credentials stable per user.
fn fake_key() -> &'static [u8; 32] {
    static KEY: OnceLock<[u8; 32]> = OnceLock::new();
    KEY.get_or_init(|| rand::rng().random())
}

/// A credential no password matches, that looks like a real one (Kafka's salts are 25-26
/// base-36 characters).
fn fake_credential(m: ScramMechanism, user: &str) -> ScramCredential {
    let key = fake_key();
    let derive = |label: &str| {
        m.hmac(
            key,
            format!("{label}\0{}\0{user}", m.mechanism_name()).as_bytes(),
        )
    };
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let salt = derive("salt")
        .iter()
        .take(26)
        .map(|b| DIGITS[usize::from(*b) % 36])
        .collect();
    ScramCredential {
        mechanism: m,
        salt,
        stored_key: m.hash(&derive("stored")),
        server_key: derive("server"),
        iterations: FAKE_ITERATIONS,
    }
}

/// Why a stored credential cannot be used, if it cannot.
fn unusable(m: ScramMechanism, c: &ScramCredential) -> Option<String> {
    if c.mechanism != m {
        return Some(format!(
            "credential is for {}",
            c.mechanism.mechanism_name()
        ));
    }
    if c.iterations < ScramMechanism::MIN_ITERATIONS {
        return Some(format!(
            "Iterations {} is less than the minimum {} for {}",
            c.iterations,
            ScramMechanism::MIN_ITERATIONS,
            m.mechanism_name()
        ));
    }
    if c.stored_key.len() != m.output_len() || c.server_key.len() != m.output_len() {
        return Some("credential keys have the wrong length".into());
    }
    None
}

/// The client-first step: the exchange state and the server-first message.
pub(crate) fn client_first(
    m: ScramMechanism,
    token: &[u8],
    creds: &dyn Credentials,
    server_nonce: String,
) -> Result<(Exchange, Vec<u8>), Failure> {
    let generic = |reason: String| Failure::generic(Mechanism::Scram(m), reason);
    let msg = std::str::from_utf8(token)
        .map_err(|_| generic("client-first message is not valid UTF-8".into()))?;
    let cf = parse_client_first(msg).map_err(generic)?;
    if cf.token_auth {
        return Err(generic(format!(
            "delegation token authentication (tokenauth) is not supported (token id '{}')",
            cf.user
        )));
    }
    if !cf.authzid.is_empty() && cf.authzid != cf.user {
        return Err(Failure::visible(
            "Authentication failed: Client requested an authorization id that is different from username",
        ));
    }
    let (credential, fake_reason) = match creds.scram(&cf.user, m) {
        None => (
            fake_credential(m, &cf.user),
            Some("unknown user".to_string()),
        ),
        Some(c) => match unusable(m, &c) {
            None => (c, None),
            Some(why) => (fake_credential(m, &cf.user), Some(why)),
        },
    };
    let nonce = format!("{}{server_nonce}", cf.nonce);
    let server_first = format!(
        "r={nonce},s={},i={}",
        B64.encode(&credential.salt),
        credential.iterations
    );
    let out = server_first.clone().into_bytes();
    let ex = Exchange {
        user: cf.user,
        gs2_header: cf.gs2_header.to_string(),
        client_first_bare: cf.bare.to_string(),
        server_first,
        nonce,
        credential,
        fake_reason,
    };
    Ok((ex, out))
}

/// The client-final step: the server-final message and the principal.
pub(crate) fn client_final(
    m: ScramMechanism,
    ex: &Exchange,
    token: &[u8],
) -> Result<(Vec<u8>, KafkaPrincipal), Failure> {
    let generic = |reason: &str| Failure::generic(Mechanism::Scram(m), reason);
    let msg = std::str::from_utf8(token)
        .map_err(|_| generic("client-final message is not valid UTF-8"))?;
    let Some(p) = msg.rfind(",p=") else {
        return Err(generic("client-final message: missing proof (p=)"));
    };
    let (without_proof, proof_b64) = (&msg[..p], &msg[p + 3..]);
    let mut attrs = without_proof.split(',');
    let Some(cb) = attrs.next().and_then(|a| a.strip_prefix("c=")) else {
        return Err(generic(
            "client-final message: missing channel binding (c=)",
        ));
    };
    let Some(nonce) = attrs.next().and_then(|a| a.strip_prefix("r=")) else {
        return Err(generic("client-final message: missing nonce (r=)"));
    };
    if attrs.any(|a| extension(a).is_none()) {
        return Err(generic("client-final message: malformed extension"));
    }
    let cb = B64
        .decode(cb)
        .map_err(|_| generic("client-final message: channel binding is not base64"))?;
    if cb != ex.gs2_header.as_bytes() {
        return Err(generic(
            "client-final message: channel binding does not match the gs2 header",
        ));
    }
    if nonce != ex.nonce {
        return Err(generic("Invalid client nonce in the final client message."));
    }
    let proof = B64
        .decode(proof_b64)
        .map_err(|_| generic("client-final message: proof is not base64"))?;
    if proof.len() != m.output_len() {
        return Err(generic("client-final message: proof has the wrong length"));
    }
    let auth_message = format!(
        "{},{},{without_proof}",
        ex.client_first_bare, ex.server_first
    );
    let cred = &ex.credential;
    let client_signature = m.hmac(&cred.stored_key, auth_message.as_bytes());
    let client_key: Vec<u8> = proof
        .iter()
        .zip(&client_signature)
        .map(|(a, b)| a ^ b)
        .collect();
    let matches = m.hash(&client_key).ct_eq(&cred.stored_key);
    let known = Choice::from(u8::from(ex.fake_reason.is_none()));
    if !bool::from(matches & known) {
        let why = match &ex.fake_reason {
            Some(r) => format!("{r} (user '{}')", ex.user),
            None => format!("Invalid client credentials (user '{}')", ex.user),
        };
        return Err(generic(&why));
    }
    let server_signature = m.hmac(&cred.server_key, auth_message.as_bytes());
    let out = format!("v={}", B64.encode(server_signature)).into_bytes();
    Ok((out, KafkaPrincipal::user(ex.user.clone())))
}
