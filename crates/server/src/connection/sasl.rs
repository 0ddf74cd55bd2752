//! SASL on a connection (issue 19): Kafka's `SaslServerAuthenticator` as a small state machine
//! the connection's reader drives, one request at a time.
//!
//! Mental model: a connection on a SASL listener starts unauthenticated. Before authentication
//! only ApiVersions, SaslHandshake and SaslAuthenticate are served; anything else closes the
//! connection (Kafka: "Unexpected Kafka request of type X during SASL handshake"), and frames
//! are limited to `sasl.server.max.receive.size`. SaslHandshake picks a mechanism (an unknown one
//! answers UNSUPPORTED_SASL_MECHANISM with the enabled list, then closes). A v1 handshake is
//! followed by SaslAuthenticate requests carrying the mechanism's tokens; a v0 handshake by raw
//! size-prefixed tokens (Kafka's pre-KIP-152 framing). Bad credentials answer
//! SASL_AUTHENTICATION_FAILED with the mechanism's message, then close. Once authenticated the
//! connection's principal is the SASL user; with `connections.max.reauth.ms` > 0 the session
//! lifetime goes back in SaslAuthenticate (v1+), the client re-authenticates in band (KIP-368:
//! SaslHandshake + SaslAuthenticate again, same principal), and a connection whose session
//! expired is closed at its next other request.
//!
//! On a listener without SASL, SaslHandshake and SaslAuthenticate answer ILLEGAL_SASL_STATE.
//! Pure: `now_ms` (the broker clock's monotonic milliseconds) is an argument.

use bytes::Bytes;
use skiff_auth::principal::KafkaPrincipal;
use skiff_auth::sasl::{Credentials, Mechanism, SaslServer, Step};
use skiff_protocol::{
    ApiKey, SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
    SaslHandshakeResponse,
};
use skiff_types::ErrorCode;

/// What the connection does after a SASL request.
#[derive(Debug)]
pub struct Answer<T> {
    pub response: T,
    /// Close the connection once the response is written.
    pub close_after: bool,
}

enum State {
    /// Waiting for SaslHandshake (at the start, or to begin a re-authentication).
    Handshake,
    /// A mechanism was chosen; tokens go to `server`.
    Exchange {
        server: Box<SaslServer>,
        mechanism: String,
        /// A v0 handshake: tokens arrive as raw frames, not SaslAuthenticate requests.
        raw: bool,
    },
    /// Failed; the connection is closing.
    Failed,
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            State::Handshake => f.write_str("Handshake"),
            State::Exchange { mechanism, raw, .. } => {
                write!(f, "Exchange({mechanism}, raw={raw})")
            }
            State::Failed => f.write_str("Failed"),
        }
    }
}

/// One connection's SASL state.
#[derive(Debug)]
pub struct SaslGate {
    /// The listener's mechanisms; empty on a listener without SASL.
    mechanisms: Vec<String>,
    reauth_ms: u64,
    state: State,
    /// Set once the first authentication completed.
    principal: Option<KafkaPrincipal>,
    /// When the session expires (monotonic ms), with re-authentication on.
    expires_at_ms: Option<u64>,
}

impl SaslGate {
    /// `mechanisms` empty: the listener does not use SASL.
    pub fn new(mechanisms: Vec<String>, reauth_ms: u64) -> Self {
        Self {
            mechanisms,
            reauth_ms,
            state: State::Handshake,
            principal: None,
            expires_at_ms: None,
        }
    }

    pub fn is_sasl(&self) -> bool {
        !self.mechanisms.is_empty()
    }

    /// The authenticated principal (`None`: not authenticated yet, or no SASL).
    pub fn principal(&self) -> Option<&KafkaPrincipal> {
        self.principal.as_ref()
    }

    pub fn authenticated(&self) -> bool {
        !self.is_sasl() || self.principal.is_some()
    }

    /// Whether the next frame is a raw v0 token rather than a Kafka request.
    pub fn expects_raw_token(&self) -> bool {
        matches!(self.state, State::Exchange { raw: true, .. })
    }

    /// Whether a request of `key` may be served now; `Err(reason)` closes the connection.
    pub fn admit(&self, key: ApiKey, now_ms: u64) -> Result<(), String> {
        if !self.is_sasl() {
            return Ok(());
        }
        let sasl_api = matches!(key, ApiKey::SaslHandshake | ApiKey::SaslAuthenticate);
        if self.principal.is_none() {
            if sasl_api || key == ApiKey::ApiVersions {
                return Ok(());
            }
            return Err(format!(
                "Unexpected Kafka request of type {} during SASL handshake",
                key.name()
            ));
        }
        if let Some(exp) = self.expires_at_ms
            && now_ms > exp
            && !sasl_api
            && !matches!(self.state, State::Exchange { .. })
        {
            return Err("the SASL session expired (connections.max.reauth.ms) and the client did not re-authenticate".into());
        }
        Ok(())
    }

    /// SaslHandshake.
    pub fn handshake(
        &mut self,
        req: &SaslHandshakeRequest,
        version: i16,
    ) -> Answer<SaslHandshakeResponse> {
        let mechanisms = self.mechanisms.clone();
        if !self.is_sasl() || !matches!(self.state, State::Handshake) {
            self.state = State::Failed;
            return Answer {
                response: SaslHandshakeResponse {
                    error_code: ErrorCode::IllegalSaslState as i16,
                    mechanisms,
                },
                close_after: true,
            };
        }
        let chosen = self.mechanisms.iter().find(|m| **m == req.mechanism);
        let server = chosen
            .and_then(|m| Mechanism::from_name(m))
            .map(SaslServer::new);
        match server {
            Some(server) => {
                self.state = State::Exchange {
                    server: Box::new(server),
                    mechanism: req.mechanism.clone(),
                    raw: version == 0,
                };
                Answer {
                    response: SaslHandshakeResponse {
                        error_code: 0,
                        mechanisms,
                    },
                    close_after: false,
                }
            }
            None => {
                self.state = State::Failed;
                Answer {
                    response: SaslHandshakeResponse {
                        error_code: ErrorCode::UnsupportedSaslMechanism as i16,
                        mechanisms,
                    },
                    close_after: true,
                }
            }
        }
    }

    /// SaslAuthenticate (after a v1 handshake).
    pub fn authenticate(
        &mut self,
        req: &SaslAuthenticateRequest,
        version: i16,
        creds: &dyn Credentials,
        now_ms: u64,
    ) -> Answer<SaslAuthenticateResponse> {
        let failed = |code: ErrorCode, msg: String| Answer {
            response: SaslAuthenticateResponse {
                error_code: code as i16,
                error_message: Some(msg),
                auth_bytes: Bytes::new(),
                session_lifetime_ms: 0,
            },
            close_after: true,
        };
        if !matches!(self.state, State::Exchange { raw: false, .. }) {
            self.state = State::Failed;
            return failed(
                ErrorCode::IllegalSaslState,
                "Unexpected SaslAuthenticate request: no SASL handshake selected a mechanism on this connection".into(),
            );
        }
        match self.step(&req.auth_bytes, creds, now_ms) {
            Ok((token, lifetime)) => Answer {
                response: SaslAuthenticateResponse {
                    error_code: 0,
                    error_message: None,
                    auth_bytes: Bytes::from(token),
                    session_lifetime_ms: if version >= 1 { lifetime } else { 0 },
                },
                close_after: false,
            },
            Err(msg) => failed(ErrorCode::SaslAuthenticationFailed, msg),
        }
    }

    /// A raw token after a v0 handshake: the server's raw token, or `Err` to close.
    pub fn raw_token(
        &mut self,
        token: &[u8],
        creds: &dyn Credentials,
        now_ms: u64,
    ) -> Result<Vec<u8>, String> {
        self.step(token, creds, now_ms).map(|(t, _)| t)
    }

    /// One token through the chosen mechanism: (server token, session lifetime ms).
    fn step(
        &mut self,
        token: &[u8],
        creds: &dyn Credentials,
        now_ms: u64,
    ) -> Result<(Vec<u8>, i64), String> {
        let State::Exchange {
            server, mechanism, ..
        } = &mut self.state
        else {
            return Err("no SASL exchange in progress".into());
        };
        let mechanism = mechanism.clone();
        match server.step(token, creds) {
            Ok(Step::Continue(t)) => Ok((t, 0)),
            Ok(Step::Done { token, principal }) => {
                if let Some(old) = &self.principal
                    && *old != principal
                {
                    self.state = State::Failed;
                    return Err(format!(
                        "Cannot change principals during re-authentication from {old}: {principal}"
                    ));
                }
                tracing::debug!(%principal, mechanism, "SASL authentication complete");
                self.principal = Some(principal);
                self.state = State::Handshake;
                let lifetime = if self.reauth_ms > 0 {
                    self.expires_at_ms = Some(now_ms + self.reauth_ms);
                    i64::try_from(self.reauth_ms).unwrap_or(i64::MAX)
                } else {
                    0
                };
                Ok((token, lifetime))
            }
            Err(e) => {
                self.state = State::Failed;
                Err(e.to_string())
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::BTreeMap;

    use skiff_auth::sasl::client::{ScramClient, plain_client_token};
    use skiff_auth::sasl::{MemoryCredentials, ScramCredential, ScramMechanism};

    use super::*;

    fn creds() -> MemoryCredentials {
        let mut c = MemoryCredentials::with_plain_users(BTreeMap::from([(
            "alice".to_string(),
            "alice-secret".to_string(),
        )]));
        c.add_scram(
            "bob",
            ScramCredential::from_password(ScramMechanism::Sha512, "bob-secret", b"salt-bob", 4096),
        );
        c
    }

    fn gate() -> SaslGate {
        SaslGate::new(vec!["PLAIN".into(), "SCRAM-SHA-512".into()], 0)
    }

    fn hs(g: &mut SaslGate, m: &str, v: i16) -> Answer<SaslHandshakeResponse> {
        g.handshake(
            &SaslHandshakeRequest {
                mechanism: m.into(),
            },
            v,
        )
    }

    fn auth(g: &mut SaslGate, token: Vec<u8>, now: u64) -> Answer<SaslAuthenticateResponse> {
        g.authenticate(
            &SaslAuthenticateRequest {
                auth_bytes: Bytes::from(token),
            },
            1,
            &creds(),
            now,
        )
    }

    #[test]
    fn only_handshake_apis_before_authentication() {
        let g = gate();
        assert!(g.admit(ApiKey::ApiVersions, 0).is_ok());
        assert!(g.admit(ApiKey::SaslHandshake, 0).is_ok());
        let err = g.admit(ApiKey::Metadata, 0).unwrap_err();
        assert!(
            err.contains("Unexpected Kafka request of type Metadata"),
            "{err}"
        );
        assert!(!g.authenticated());
        // No SASL on the listener: everything is admitted and SASL requests are illegal.
        let mut plain = SaslGate::new(Vec::new(), 0);
        assert!(plain.authenticated() && plain.admit(ApiKey::Metadata, 0).is_ok());
        let a = hs(&mut plain, "PLAIN", 1);
        assert_eq!(a.response.error_code, ErrorCode::IllegalSaslState as i16);
        assert!(a.close_after);
    }

    #[test]
    fn unknown_mechanism_lists_the_enabled_ones_and_closes() {
        let mut g = gate();
        let a = hs(&mut g, "GSSAPI", 1);
        assert_eq!(
            a.response.error_code,
            ErrorCode::UnsupportedSaslMechanism as i16
        );
        assert_eq!(a.response.mechanisms, vec!["PLAIN", "SCRAM-SHA-512"]);
        assert!(a.close_after);
    }

    #[test]
    fn plain_login_sets_the_principal_and_a_wrong_password_fails_and_closes() {
        let mut g = gate();
        assert_eq!(hs(&mut g, "PLAIN", 1).response.error_code, 0);
        let a = auth(&mut g, plain_client_token("alice", "alice-secret"), 5);
        assert_eq!(a.response.error_code, 0, "{:?}", a.response.error_message);
        assert!(!a.close_after);
        assert_eq!(g.principal().unwrap().to_string(), "User:alice");
        assert!(g.admit(ApiKey::Metadata, 6).is_ok());

        let mut g = gate();
        hs(&mut g, "PLAIN", 1);
        let a = auth(&mut g, plain_client_token("alice", "wrong"), 5);
        assert_eq!(
            a.response.error_code,
            ErrorCode::SaslAuthenticationFailed as i16
        );
        assert!(a.close_after);
        assert!(g.principal().is_none());
        // SaslAuthenticate without a handshake is out of order.
        let mut g = gate();
        let a = auth(&mut g, plain_client_token("alice", "alice-secret"), 5);
        assert_eq!(a.response.error_code, ErrorCode::IllegalSaslState as i16);
    }

    #[test]
    fn scram_exchange_over_authenticate_requests() {
        let mut g = gate();
        hs(&mut g, "SCRAM-SHA-512", 1);
        let mut client = ScramClient::new(ScramMechanism::Sha512, "bob", "bob-secret");
        let mut server_token = Vec::new();
        for _ in 0..3 {
            if client.is_complete() {
                break;
            }
            let t = client.step(&server_token).unwrap();
            if client.is_complete() {
                break;
            }
            let a = auth(&mut g, t, 1);
            assert_eq!(a.response.error_code, 0, "{:?}", a.response.error_message);
            server_token = a.response.auth_bytes.to_vec();
        }
        assert!(client.is_complete());
        assert_eq!(g.principal().unwrap().to_string(), "User:bob");
    }

    #[test]
    fn v0_handshake_takes_raw_tokens() {
        let mut g = gate();
        assert_eq!(hs(&mut g, "PLAIN", 0).response.error_code, 0);
        assert!(g.expects_raw_token());
        let out = g
            .raw_token(&plain_client_token("alice", "alice-secret"), &creds(), 0)
            .unwrap();
        assert!(out.is_empty());
        assert!(!g.expects_raw_token());
        assert_eq!(g.principal().unwrap().to_string(), "User:alice");
        let mut g = gate();
        hs(&mut g, "PLAIN", 0);
        assert!(g.raw_token(b"\0alice\0nope", &creds(), 0).is_err());
    }

    #[test]
    fn reauthentication_renews_the_session_and_keeps_the_principal() {
        let mut g = SaslGate::new(vec!["PLAIN".into()], 1000);
        hs(&mut g, "PLAIN", 1);
        let a = auth(&mut g, plain_client_token("alice", "alice-secret"), 100);
        assert_eq!(a.response.session_lifetime_ms, 1000);
        assert!(g.admit(ApiKey::Fetch, 1100).is_ok());
        // Expired: anything but re-authentication closes.
        assert!(g.admit(ApiKey::Fetch, 1101).is_err());
        assert!(g.admit(ApiKey::SaslHandshake, 1101).is_ok());
        hs(&mut g, "PLAIN", 1);
        let a = auth(&mut g, plain_client_token("alice", "alice-secret"), 1200);
        assert_eq!(a.response.error_code, 0);
        assert!(g.admit(ApiKey::Fetch, 2100).is_ok());
        // A re-authentication as someone else fails and closes.
        let mut creds2 = creds();
        creds2.plain.insert("mallory".into(), "m".into());
        hs(&mut g, "PLAIN", 1);
        let a = g.authenticate(
            &SaslAuthenticateRequest {
                auth_bytes: Bytes::from(plain_client_token("mallory", "m")),
            },
            1,
            &creds2,
            2200,
        );
        assert_eq!(
            a.response.error_code,
            ErrorCode::SaslAuthenticationFailed as i16
        );
        assert!(a.close_after);
        assert!(
            a.response
                .error_message
                .unwrap()
                .contains("Cannot change principals")
        );
    }
}
