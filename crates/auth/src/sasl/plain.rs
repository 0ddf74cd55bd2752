//! SASL/PLAIN, server side (RFC 4616 as Kafka's `PlainSaslServer` does it): one client message
//! `[authzid] NUL authcid NUL passwd`, an empty server answer.
//!
//! Invariants (Kafka's order and messages, all shown to the client):
//! - exactly three NUL-separated tokens, else "Invalid SASL/PLAIN response: expected 3 tokens,
//!   got N" (counting stops at 4, as Kafka's `extractTokens`);
//! - an empty user or password fails before any lookup;
//! - the password is compared in constant time (SHA-256 of both sides compared with `subtle`,
//!   so neither the length nor the first differing byte shows); an unknown user costs the same
//!   comparison and gets the same message as a wrong password;
//! - a non-empty authzid must equal the user (checked after the password, as Kafka does).

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::{Credentials, Failure};
use crate::principal::KafkaPrincipal;

pub(crate) fn authenticate(
    token: &[u8],
    creds: &dyn Credentials,
) -> Result<KafkaPrincipal, Failure> {
    let Ok(text) = std::str::from_utf8(token) else {
        return Err(Failure::visible(
            "Invalid SASL/PLAIN response: the message is not valid UTF-8",
        ));
    };
    let tokens: Vec<&str> = text.split('\0').take(4).collect();
    let [authzid, user, password] = tokens[..] else {
        return Err(Failure::visible(format!(
            "Invalid SASL/PLAIN response: expected 3 tokens, got {}",
            tokens.len()
        )));
    };
    if user.is_empty() {
        return Err(Failure::visible(
            "Authentication failed: username not specified",
        ));
    }
    if password.is_empty() {
        return Err(Failure::visible(
            "Authentication failed: password not specified",
        ));
    }
    let expected = creds.plain_password(user);
    let known = expected.is_some();
    let expected = expected.unwrap_or_default();
    let same = Sha256::digest(password.as_bytes()).ct_eq(&Sha256::digest(expected.as_bytes()));
    if !(bool::from(same) && known) {
        return Err(Failure::visible(
            "Authentication failed: Invalid username or password",
        ));
    }
    if !authzid.is_empty() && authzid != user {
        return Err(Failure::visible(
            "Authentication failed: Client requested an authorization id that is different from username",
        ));
    }
    Ok(KafkaPrincipal::user(user))
}
