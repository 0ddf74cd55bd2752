//! SASL (issue 19): the server side of PLAIN and SCRAM-SHA-256/512 as Kafka's
//! `SaslServerAuthenticator` drives them, the client side the broker needs for inter-broker
//! SASL ([`client`]), Kafka's JAAS text ([`jaas`]) and SCRAM credentials ([`credential`]).
//!
//! # Mental model
//!
//! A [`SaslServer`] is one authentication exchange on one connection: the shell hands it each
//! SaslAuthenticate request's `auth_bytes` ([`SaslServer::step`]) and answers with the returned
//! token, until [`Step::Done`] carries the authenticated [`KafkaPrincipal`]. Credentials are
//! looked up through [`Credentials`] at the step that needs them (PLAIN: the only step; SCRAM:
//! the client-first message), so the exchange always sees the current metadata.
//!
//! - PLAIN: one step, an empty server token (RFC 4616, Kafka's `PlainSaslServer`).
//! - SCRAM: client-first -> server-first ([`Step::Continue`]), client-final -> server-final
//!   ([`Step::Done`]) (RFC 5802/7677, Kafka's `ScramSaslServer`).
//!
//! # Invariants
//!
//! - `step` never panics on any input; a failure is a [`SaslError`] and ends the exchange
//!   (every later `step` is [`SaslError::IllegalState`], as after completion).
//! - [`SaslError::AuthenticationFailed`] carries the message for the client (error code
//!   SASL_AUTHENTICATION_FAILED, 58): Kafka's generic "invalid credentials" text for SCRAM, so
//!   it never tells an unknown user from a wrong password; [`SaslServer::failure_reason`] keeps
//!   the precise reason for the broker's log.
//! - Secrets are compared in constant time; `Debug` never prints a password or key.

pub mod client;
pub mod credential;
pub mod jaas;
mod plain;
mod scram;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt;

pub use client::{ScramClient, plain_client_token};
pub use credential::{ScramCredential, ScramMechanism};
pub use scram::{sasl_name, username_from_sasl_name};

use crate::principal::KafkaPrincipal;

/// A SASL mechanism Skiff serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mechanism {
    Plain,
    Scram(ScramMechanism),
}

impl Mechanism {
    pub const ALL: [Mechanism; 3] = [
        Mechanism::Plain,
        Mechanism::Scram(ScramMechanism::Sha256),
        Mechanism::Scram(ScramMechanism::Sha512),
    ];

    /// `PLAIN`, `SCRAM-SHA-256` or `SCRAM-SHA-512` (exact, case-sensitive, as Kafka matches
    /// `sasl.enabled.mechanisms` against the SaslHandshake mechanism).
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "PLAIN" => Some(Mechanism::Plain),
            _ => ScramMechanism::from_mechanism_name(name).map(Mechanism::Scram),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Plain => "PLAIN",
            Mechanism::Scram(m) => m.mechanism_name(),
        }
    }
}

impl fmt::Display for Mechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Where a [`SaslServer`] finds users: the JAAS `user_<name>` options for PLAIN, the metadata
/// image's SCRAM credentials for SCRAM.
pub trait Credentials {
    /// The PLAIN password of `user`, if the user exists.
    fn plain_password(&self, user: &str) -> Option<String>;
    /// `user`'s credential for `m`, if there is one.
    fn scram(&self, user: &str, m: ScramMechanism) -> Option<ScramCredential>;
}

/// A [`Credentials`] held in memory (PLAIN users from JAAS, SCRAM credentials by user and
/// mechanism). `Debug` shows user names only.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct MemoryCredentials {
    pub plain: BTreeMap<String, String>,
    pub scram: BTreeMap<(String, ScramMechanism), ScramCredential>,
}

impl MemoryCredentials {
    /// PLAIN users, e.g. [`jaas::plain_users`] of the listener's JAAS entry.
    pub fn with_plain_users(plain: BTreeMap<String, String>) -> Self {
        Self {
            plain,
            scram: BTreeMap::new(),
        }
    }

    /// Adds (or replaces) `user`'s credential for `credential.mechanism`.
    pub fn add_scram(&mut self, user: impl Into<String>, credential: ScramCredential) {
        self.scram
            .insert((user.into(), credential.mechanism), credential);
    }
}

impl Credentials for MemoryCredentials {
    fn plain_password(&self, user: &str) -> Option<String> {
        self.plain.get(user).cloned()
    }

    fn scram(&self, user: &str, m: ScramMechanism) -> Option<ScramCredential> {
        self.scram.get(&(user.to_string(), m)).cloned()
    }
}

impl fmt::Debug for MemoryCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryCredentials")
            .field("plain_users", &self.plain.keys().collect::<Vec<_>>())
            .field("scram_users", &self.scram.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// What one [`SaslServer::step`] produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Send this token; the exchange goes on.
    Continue(Vec<u8>),
    /// Send this token (may be empty); the connection is now `principal`.
    Done {
        token: Vec<u8>,
        principal: KafkaPrincipal,
    },
}

/// Why an exchange failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SaslError {
    /// SASL_AUTHENTICATION_FAILED (58); the string is the message for the client.
    #[error("{0}")]
    AuthenticationFailed(String),
    /// A token after the exchange completed or failed (Kafka's `IllegalSaslStateException`,
    /// ILLEGAL_SASL_STATE, 34).
    #[error("{0}")]
    IllegalState(String),
}

/// A failure inside a mechanism: the client's message and the reason for the log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Failure {
    pub(crate) client_message: String,
    pub(crate) reason: String,
}

impl Failure {
    /// The client sees `message` itself (Kafka's `SaslAuthenticationException`).
    pub(crate) fn visible(message: impl Into<String>) -> Self {
        let message = message.into();
        Self {
            client_message: message.clone(),
            reason: message,
        }
    }

    /// The client sees Kafka's generic text (Kafka's `SaslException`); `reason` is logged only.
    pub(crate) fn generic(mechanism: Mechanism, reason: impl Into<String>) -> Self {
        Self {
            client_message: format!(
                "Authentication failed during authentication due to invalid credentials with SASL mechanism {}",
                mechanism.name()
            ),
            reason: reason.into(),
        }
    }
}

enum Phase {
    Start,
    ScramFinal(Box<scram::Exchange>),
    Complete(KafkaPrincipal),
    Failed,
}

/// One server-side SASL exchange.
pub struct SaslServer {
    mechanism: Mechanism,
    phase: Phase,
    /// SCRAM's server nonce when a test fixes it ([`SaslServer::with_nonce`]).
    fixed_nonce: Option<String>,
    failure_reason: Option<String>,
}

impl fmt::Debug for SaslServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let phase = match self.phase {
            Phase::Start => "START",
            Phase::ScramFinal(_) => "RECEIVE_CLIENT_FINAL_MESSAGE",
            Phase::Complete(_) => "COMPLETE",
            Phase::Failed => "FAILED",
        };
        f.debug_struct("SaslServer")
            .field("mechanism", &self.mechanism)
            .field("phase", &phase)
            .finish()
    }
}

impl SaslServer {
    pub fn new(mechanism: Mechanism) -> Self {
        Self {
            mechanism,
            phase: Phase::Start,
            fixed_nonce: None,
            failure_reason: None,
        }
    }

    /// For tests (RFC test vectors): SCRAM uses `server_nonce` instead of a random one.
    /// It must be printable ASCII without `,`; ignored by PLAIN.
    pub fn with_nonce(mechanism: Mechanism, server_nonce: impl Into<String>) -> Self {
        Self {
            fixed_nonce: Some(server_nonce.into()),
            ..Self::new(mechanism)
        }
    }

    pub fn mechanism(&self) -> Mechanism {
        self.mechanism
    }

    /// One client token in; the server's token out, and the principal once complete.
    pub fn step(&mut self, token: &[u8], creds: &dyn Credentials) -> Result<Step, SaslError> {
        let phase = std::mem::replace(&mut self.phase, Phase::Failed);
        let result = match (phase, self.mechanism) {
            (Phase::Start, Mechanism::Plain) => {
                plain::authenticate(token, creds).map(|principal| {
                    (
                        Phase::Complete(principal.clone()),
                        Step::Done {
                            token: Vec::new(),
                            principal,
                        },
                    )
                })
            }
            (Phase::Start, Mechanism::Scram(m)) => {
                let nonce = self.fixed_nonce.clone().unwrap_or_else(scram::random_nonce);
                scram::client_first(m, token, creds, nonce)
                    .map(|(ex, out)| (Phase::ScramFinal(Box::new(ex)), Step::Continue(out)))
            }
            (Phase::ScramFinal(ex), Mechanism::Scram(m)) => {
                scram::client_final(m, &ex, token).map(|(out, principal)| {
                    (
                        Phase::Complete(principal.clone()),
                        Step::Done {
                            token: out,
                            principal,
                        },
                    )
                })
            }
            (phase @ (Phase::Complete(_) | Phase::Failed | Phase::ScramFinal(_)), _) => {
                let state = match phase {
                    Phase::Complete(_) => "COMPLETE",
                    _ => "FAILED",
                };
                self.phase = phase;
                return Err(SaslError::IllegalState(format!(
                    "Unexpected challenge in Sasl server state {state}"
                )));
            }
        };
        match result {
            Ok((phase, step)) => {
                self.phase = phase;
                Ok(step)
            }
            Err(f) => {
                self.phase = Phase::Failed;
                self.failure_reason = Some(f.reason);
                Err(SaslError::AuthenticationFailed(f.client_message))
            }
        }
    }

    pub fn is_complete(&self) -> bool {
        matches!(self.phase, Phase::Complete(_))
    }

    /// The authenticated principal once complete.
    pub fn principal(&self) -> Option<&KafkaPrincipal> {
        match &self.phase {
            Phase::Complete(p) => Some(p),
            _ => None,
        }
    }

    /// After an [`SaslError::AuthenticationFailed`]: the precise reason, for the broker's log
    /// only (it may reveal whether the user exists).
    pub fn failure_reason(&self) -> Option<&str> {
        self.failure_reason.as_deref()
    }
}
