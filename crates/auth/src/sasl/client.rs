//! SASL client side, for inter-broker SASL and tests: the PLAIN token and a SCRAM client
//! (RFC 5802/7677 as Kafka's `ScramSaslClient` does it).
//!
//! # Mental model
//!
//! [`ScramClient::step`] is called with the server's last token (empty for the first call) and
//! returns the next client token: client-first, then client-final, then an empty token once the
//! server-final's signature is verified ([`ScramClient::is_complete`]).
//!
//! # Invariants
//!
//! - The client never sends a proof unless the server's nonce extends its own and the
//!   iteration count is at least 4096 (Kafka's minimum); it is complete only after the server
//!   proved it knows the server key (`v=` compared in constant time).
//! - No channel binding (`n,,`, `c=biws`), no extensions, no authzid.
//! - Any failure is final; `Debug` never prints the password.

use std::fmt;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use subtle::ConstantTimeEq;

use super::scram::{random_nonce, sasl_name};
use super::{SaslError, ScramMechanism};

/// The PLAIN client token: `NUL user NUL password` (no authzid).
pub fn plain_client_token(user: &str, password: &str) -> Vec<u8> {
    format!("\0{user}\0{password}").into_bytes()
}

enum ClientState {
    Initial,
    AwaitServerFirst { client_first_bare: String },
    AwaitServerFinal { server_signature: Vec<u8> },
    Complete,
    Failed,
}

/// One client-side SCRAM exchange.
pub struct ScramClient {
    mechanism: ScramMechanism,
    user: String,
    password: String,
    client_nonce: String,
    state: ClientState,
}

impl fmt::Debug for ScramClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScramClient")
            .field("mechanism", &self.mechanism)
            .field("user", &self.user)
            .field("complete", &self.is_complete())
            .finish()
    }
}

fn fail(msg: impl Into<String>) -> SaslError {
    SaslError::AuthenticationFailed(msg.into())
}

impl ScramClient {
    pub fn new(mechanism: ScramMechanism, user: &str, password: &str) -> Self {
        Self::with_nonce(mechanism, user, password, &random_nonce())
    }

    /// For tests (RFC test vectors): a fixed client nonce (printable ASCII without `,`).
    pub fn with_nonce(mechanism: ScramMechanism, user: &str, password: &str, nonce: &str) -> Self {
        Self {
            mechanism,
            user: user.to_string(),
            password: password.to_string(),
            client_nonce: nonce.to_string(),
            state: ClientState::Initial,
        }
    }

    pub fn is_complete(&self) -> bool {
        matches!(self.state, ClientState::Complete)
    }

    /// The server's last token in (empty at the start), the next client token out.
    pub fn step(&mut self, server_token: &[u8]) -> Result<Vec<u8>, SaslError> {
        let state = std::mem::replace(&mut self.state, ClientState::Failed);
        let (next, out) = match state {
            ClientState::Initial => {
                let bare = format!("n={},r={}", sasl_name(&self.user), self.client_nonce);
                let out = format!("n,,{bare}").into_bytes();
                (
                    ClientState::AwaitServerFirst {
                        client_first_bare: bare,
                    },
                    out,
                )
            }
            ClientState::AwaitServerFirst { client_first_bare } => {
                self.client_final(&client_first_bare, server_token)?
            }
            ClientState::AwaitServerFinal { server_signature } => {
                let msg = std::str::from_utf8(server_token)
                    .map_err(|_| fail("Invalid SCRAM server final message: not UTF-8"))?;
                if let Some(e) = msg.strip_prefix("e=") {
                    return Err(fail(format!(
                        "Sasl authentication using {} failed with error: {e}",
                        self.mechanism.mechanism_name()
                    )));
                }
                let sig = msg
                    .strip_prefix("v=")
                    .map(|v| v.split(',').next().unwrap_or_default())
                    .and_then(|v| B64.decode(v).ok())
                    .ok_or_else(|| fail("Invalid SCRAM server final message format"))?;
                if !bool::from(sig.ct_eq(&server_signature)) {
                    return Err(fail("Invalid server signature in server final message"));
                }
                (ClientState::Complete, Vec::new())
            }
            ClientState::Complete | ClientState::Failed => {
                return Err(SaslError::IllegalState(
                    "Unexpected challenge in SCRAM client state COMPLETE or FAILED".into(),
                ));
            }
        };
        self.state = next;
        Ok(out)
    }

    fn client_final(
        &self,
        client_first_bare: &str,
        server_token: &[u8],
    ) -> Result<(ClientState, Vec<u8>), SaslError> {
        let m = self.mechanism;
        let server_first = std::str::from_utf8(server_token)
            .map_err(|_| fail("Invalid SCRAM server first message: not UTF-8"))?;
        let mut attrs = server_first.split(',');
        let bad = || fail("Invalid SCRAM server first message format");
        let nonce = attrs
            .next()
            .and_then(|a| a.strip_prefix("r="))
            .ok_or_else(bad)?;
        let salt = attrs
            .next()
            .and_then(|a| a.strip_prefix("s="))
            .and_then(|s| B64.decode(s).ok())
            .ok_or_else(bad)?;
        let iterations: i32 = attrs
            .next()
            .and_then(|a| a.strip_prefix("i="))
            .and_then(|i| i.parse().ok())
            .ok_or_else(bad)?;
        if !nonce.starts_with(&self.client_nonce) || nonce.len() == self.client_nonce.len() {
            return Err(fail(
                "Invalid server nonce: does not start with client nonce",
            ));
        }
        if iterations < ScramMechanism::MIN_ITERATIONS {
            return Err(fail(format!(
                "Requested iterations {iterations} is less than the minimum {} for {}",
                ScramMechanism::MIN_ITERATIONS,
                m.mechanism_name()
            )));
        }
        let salted = m.salted_password(self.password.as_bytes(), &salt, iterations.unsigned_abs());
        let client_key = m.hmac(&salted, b"Client Key");
        let stored_key = m.hash(&client_key);
        let without_proof = format!("c=biws,r={nonce}");
        let auth_message = format!("{client_first_bare},{server_first},{without_proof}");
        let client_signature = m.hmac(&stored_key, auth_message.as_bytes());
        let proof: Vec<u8> = client_key
            .iter()
            .zip(&client_signature)
            .map(|(a, b)| a ^ b)
            .collect();
        let server_key = m.hmac(&salted, b"Server Key");
        let server_signature = m.hmac(&server_key, auth_message.as_bytes());
        let out = format!("{without_proof},p={}", B64.encode(proof)).into_bytes();
        Ok((ClientState::AwaitServerFinal { server_signature }, out))
    }
}
