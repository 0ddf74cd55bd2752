//! This node's own connections to other nodes (issue 19 item 4): TCP, then TLS, then a SASL
//! login, as the listener it connects to demands.
//!
//! Mental model: every inter-node connection (the quorum's RPCs and observers' fetches to a
//! voter's CONTROLLER listener, the broker's node clients to the controller and to other
//! brokers' inter-broker listener) is made by [`connect`], which returns a boxed byte
//! [`Stream`]: plain TCP (nodelay), or rustls over it when [`ClientSecurity::tls`] is set (the
//! server name is the host, a DNS name or an IP address), and, when [`ClientSecurity::sasl`]
//! is set, already authenticated: SaslHandshake v1 naming the mechanism, then SaslAuthenticate
//! v1 rounds carrying the mechanism's tokens (PLAIN: one round; SCRAM: client-first,
//! client-final, and the server-final's signature verified) until the login completes. What
//! the caller sends next is served as the logged-in principal (a super user).
//!
//! Invariants: the whole connect (TCP, TLS, SASL) is bounded by one timeout; any error code
//! from the peer, an undecodable or out-of-step answer, or a server-final that does not verify
//! is an `Err` naming the peer and the broker's message, never a half-authenticated stream; a
//! response frame's size is checked before anything is allocated; `Debug` never prints a
//! password.

use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use rustls_pki_types::ServerName;
use skiff_auth::sasl::{ScramClient, ScramMechanism, plain_client_token};
use skiff_protocol::{
    ApiKey, RequestBody, RequestHeader, ResponseBody, SaslAuthenticateRequest,
    SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse, decode_response,
    encode_request,
};
use skiff_types::ErrorCode;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

/// A connected byte stream: TCP or TLS over TCP.
pub trait AsyncStream: AsyncRead + AsyncWrite + Send + Sync + Unpin {}

impl<T: AsyncRead + AsyncWrite + Send + Sync + Unpin> AsyncStream for T {}

/// What [`connect`] returns.
pub type Stream = Box<dyn AsyncStream>;

/// The SaslHandshake version sent (v1: tokens travel in SaslAuthenticate requests).
pub const SASL_HANDSHAKE_VERSION: i16 = 1;
/// The SaslAuthenticate version sent.
pub const SASL_AUTHENTICATE_VERSION: i16 = 1;
/// The client id of the login requests.
const CLIENT_ID: &str = "skiff-node";
/// The largest answer accepted during the login (Kafka's SASL frames are small).
const LOGIN_FRAME_BYTES_MAX: usize = 1 << 20;
/// SaslAuthenticate rounds before the login is given up (SCRAM needs two).
const LOGIN_ROUNDS_MAX: usize = 4;

/// How this node connects to a listener (`Default`: PLAINTEXT).
#[derive(Clone, Debug, Default)]
pub struct ClientSecurity {
    /// SSL / SASL_SSL: the TLS client configuration (trust store, client certificate).
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// SASL_*: the login.
    pub sasl: Option<SaslLogin>,
}

impl ClientSecurity {
    /// Kafka's name of the protocol this security speaks.
    pub fn protocol_name(&self) -> &'static str {
        match (self.tls.is_some(), self.sasl.is_some()) {
            (false, false) => "PLAINTEXT",
            (true, false) => "SSL",
            (false, true) => "SASL_PLAINTEXT",
            (true, true) => "SASL_SSL",
        }
    }
}

/// A SASL login: the mechanism (`PLAIN`, `SCRAM-SHA-256`, `SCRAM-SHA-512`) and credentials.
#[derive(Clone, PartialEq, Eq)]
pub struct SaslLogin {
    pub mechanism: String,
    pub user: String,
    pub password: String,
}

impl std::fmt::Debug for SaslLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SaslLogin")
            .field("mechanism", &self.mechanism)
            .field("user", &self.user)
            .field("password", &"<redacted>")
            .finish()
    }
}

/// Connects to `host:port` as `sec` says (see the module docs), all within `timeout`.
pub async fn connect(
    host: &str,
    port: u16,
    sec: &ClientSecurity,
    timeout: Duration,
) -> Result<Stream, String> {
    match tokio::time::timeout(timeout, connect_unbounded(host, port, sec)).await {
        Ok(r) => r,
        Err(_) => Err(format!(
            "connect to {} ({}) did not complete within {timeout:?}",
            peer_name(host, port),
            sec.protocol_name()
        )),
    }
}

/// `host:port`, with an IPv6 host in brackets.
fn peer_name(host: &str, port: u16) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// Whether a [`connect`] error is the peer refusing this node's TLS or SASL credentials (or
/// this node refusing the peer's certificate): a configuration error to report loudly, not a
/// peer that is down.
pub fn is_security_failure(error: &str) -> bool {
    error.starts_with(TLS_FAILED) || error.starts_with(SASL_FAILED)
}

/// Whether the `n`th failure in a row is logged (1, 2, 4, 8, ...: a lasting failure stays
/// visible without a line per retry).
pub fn worth_logging(n: u32) -> bool {
    n.is_power_of_two()
}

const TLS_FAILED: &str = "TLS handshake with ";
const SASL_FAILED: &str = "SASL authentication to ";

/// Splits `host:port` (`[v6]:port` too) for [`connect`].
pub fn split_addr(addr: &str) -> Result<(&str, u16), String> {
    let bad = || format!("not a host:port address: {addr:?}");
    let (host, port) = addr.rsplit_once(':').ok_or_else(bad)?;
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    let port = port.parse::<u16>().map_err(|_| bad())?;
    if host.is_empty() {
        return Err(bad());
    }
    Ok((host, port))
}

async fn connect_unbounded(host: &str, port: u16, sec: &ClientSecurity) -> Result<Stream, String> {
    let peer = peer_name(host, port);
    let tcp = TcpStream::connect((host, port))
        .await
        .map_err(|e| format!("connect to {peer}: {e}"))?;
    let _ = tcp.set_nodelay(true);
    let mut stream: Stream = match &sec.tls {
        None => Box::new(tcp),
        Some(config) => {
            let name = server_name(host)?;
            let tls = tokio_rustls::TlsConnector::from(Arc::clone(config))
                .connect(name, tcp)
                .await
                .map_err(|e| format!("{TLS_FAILED}{peer} failed: {e}"))?;
            Box::new(tls)
        }
    };
    if let Some(login) = &sec.sasl {
        authenticate(&mut stream, login, &peer).await?;
    }
    Ok(stream)
}

/// The TLS server name of `host`: an IP address (brackets allowed) or a DNS name.
pub fn server_name(host: &str) -> Result<ServerName<'static>, String> {
    let h = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    ServerName::try_from(h.to_string())
        .map_err(|e| format!("{host:?} is neither a DNS name nor an IP address for TLS: {e}"))
}

/// The client side of one SASL mechanism, token by token.
#[derive(Debug)]
pub enum Login {
    Plain { user: String, password: String },
    Scram(Box<ScramClient>),
}

/// What the login does after a server token.
#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    /// Send this token in another SaslAuthenticate.
    Send(Vec<u8>),
    /// Logged in.
    Done,
}

impl Login {
    /// The client side of `login.mechanism`; `Err` for a mechanism Skiff cannot speak.
    pub fn new(login: &SaslLogin) -> Result<Login, String> {
        if login.mechanism == "PLAIN" {
            return Ok(Login::Plain {
                user: login.user.clone(),
                password: login.password.clone(),
            });
        }
        match ScramMechanism::from_mechanism_name(&login.mechanism) {
            Some(m) => Ok(Login::Scram(Box::new(ScramClient::new(
                m,
                &login.user,
                &login.password,
            )))),
            None => Err(format!(
                "SASL mechanism {:?} is not one this node can log in with (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)",
                login.mechanism
            )),
        }
    }

    /// The first token (PLAIN's only one, SCRAM's client-first).
    pub fn first(&mut self) -> Result<Vec<u8>, String> {
        match self {
            Login::Plain { user, password } => Ok(plain_client_token(user, password)),
            Login::Scram(c) => c.step(b"").map_err(|e| e.to_string()),
        }
    }

    /// The server's answer to the last token (a successful SaslAuthenticate's `auth_bytes`).
    pub fn next(&mut self, server_token: &[u8]) -> Result<Next, String> {
        match self {
            Login::Plain { .. } => Ok(Next::Done),
            Login::Scram(c) => {
                let out = c.step(server_token).map_err(|e| e.to_string())?;
                Ok(if c.is_complete() {
                    Next::Done
                } else {
                    Next::Send(out)
                })
            }
        }
    }
}

/// Logs in on `stream` with `login` (see the module docs); `peer` names the node in errors.
pub async fn authenticate<S: AsyncRead + AsyncWrite + Unpin + ?Sized>(
    stream: &mut S,
    login: &SaslLogin,
    peer: &str,
) -> Result<(), String> {
    let mut client = Login::new(login)?;
    let fail = |m: String| format!("{SASL_FAILED}{peer} failed: {m}");
    let mut correlation = 0i32;
    let body = RequestBody::SaslHandshake(SaslHandshakeRequest {
        mechanism: login.mechanism.clone(),
    });
    let answer = exchange(stream, &body, SASL_HANDSHAKE_VERSION, &mut correlation)
        .await
        .map_err(fail)?;
    match answer {
        ResponseBody::SaslHandshake(r) => handshake_outcome(&r, &login.mechanism).map_err(fail)?,
        _ => return Err(fail("not a SaslHandshake response".into())),
    }
    let mut token = client.first().map_err(fail)?;
    for _ in 0..LOGIN_ROUNDS_MAX {
        let body = RequestBody::SaslAuthenticate(SaslAuthenticateRequest {
            auth_bytes: Bytes::from(token),
        });
        let answer = exchange(stream, &body, SASL_AUTHENTICATE_VERSION, &mut correlation)
            .await
            .map_err(fail)?;
        let server_token = match answer {
            ResponseBody::SaslAuthenticate(r) => authenticate_outcome(&r).map_err(fail)?,
            _ => return Err(fail("not a SaslAuthenticate response".into())),
        };
        match client.next(&server_token).map_err(fail)? {
            Next::Done => return Ok(()),
            Next::Send(t) => token = t,
        }
    }
    Err(fail(format!(
        "{} did not complete within {LOGIN_ROUNDS_MAX} rounds",
        login.mechanism
    )))
}

/// A SaslHandshake answer: `Ok` when the mechanism was accepted.
pub fn handshake_outcome(r: &SaslHandshakeResponse, mechanism: &str) -> Result<(), String> {
    if r.error_code == 0 {
        return Ok(());
    }
    Err(format!(
        "{}: the listener does not take mechanism {mechanism} (it enables {})",
        code_name(r.error_code),
        if r.mechanisms.is_empty() {
            "none".to_string()
        } else {
            r.mechanisms.join(", ")
        }
    ))
}

/// A SaslAuthenticate answer: the server's token, or the broker's error message.
pub fn authenticate_outcome(r: &SaslAuthenticateResponse) -> Result<Bytes, String> {
    if r.error_code == 0 {
        return Ok(r.auth_bytes.clone());
    }
    Err(match r.error_message.as_deref().filter(|m| !m.is_empty()) {
        Some(m) => format!("{m} ({})", code_name(r.error_code)),
        None => code_name(r.error_code),
    })
}

fn code_name(code: i16) -> String {
    ErrorCode::from_code(code).map_or_else(|| format!("error code {code}"), |e| e.to_string())
}

/// One request written, its answer read and decoded (correlation id checked).
async fn exchange<S: AsyncRead + AsyncWrite + Unpin + ?Sized>(
    stream: &mut S,
    body: &RequestBody,
    version: i16,
    correlation: &mut i32,
) -> Result<ResponseBody, String> {
    *correlation = correlation.wrapping_add(1);
    let key = body.api_key();
    let frame = request_frame(key, version, *correlation, body)?;
    stream
        .write_all(&frame)
        .await
        .map_err(|e| format!("write: {e}"))?;
    stream.flush().await.map_err(|e| format!("write: {e}"))?;
    let answer = read_frame(stream, LOGIN_FRAME_BYTES_MAX).await?;
    parse_response(key, version, *correlation, answer)
}

/// A whole request frame (size prefix, header v1/v2 with client id `skiff-node`, body).
pub fn request_frame(
    key: ApiKey,
    version: i16,
    correlation_id: i32,
    body: &RequestBody,
) -> Result<BytesMut, String> {
    let header = RequestHeader {
        request_api_key: key as i16,
        request_api_version: version,
        correlation_id,
        client_id: Some(CLIENT_ID.into()),
    };
    let mut out = BytesMut::new();
    encode_request(&header, body, &mut out).map_err(|e| format!("encode {key:?}: {e}"))?;
    Ok(out)
}

/// Decodes a response frame (without its size prefix), checking its correlation id.
pub fn parse_response(
    key: ApiKey,
    version: i16,
    correlation_id: i32,
    frame: Bytes,
) -> Result<ResponseBody, String> {
    let (h, body) = decode_response(key, version, frame)
        .map_err(|e| format!("undecodable {key:?} answer: {e}"))?;
    if h.correlation_id != correlation_id {
        return Err(format!(
            "answer with correlation id {} where {correlation_id} was expected",
            h.correlation_id
        ));
    }
    Ok(body)
}

/// Reads one size-prefixed frame (the size checked against `max` before allocating).
pub async fn read_frame<R: AsyncRead + Unpin + ?Sized>(
    read: &mut R,
    max: usize,
) -> Result<Bytes, String> {
    let mut size = [0u8; 4];
    read.read_exact(&mut size)
        .await
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => "the peer closed the connection".to_string(),
            _ => e.to_string(),
        })?;
    let len = frame_len(size, max)?;
    let mut buf = vec![0u8; len];
    read.read_exact(&mut buf).await.map_err(|e| e.to_string())?;
    Ok(Bytes::from(buf))
}

/// A frame's size prefix, if it is neither negative nor above `max`.
pub fn frame_len(prefix: [u8; 4], max: usize) -> Result<usize, String> {
    let size = i32::from_be_bytes(prefix);
    usize::try_from(size)
        .ok()
        .filter(|n| *n <= max)
        .ok_or_else(|| format!("response frame of {size} bytes is negative or above {max}"))
}

#[cfg(test)]
mod tests;
