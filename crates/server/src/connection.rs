//! One client connection: frames in, handlers in request order, responses out in that order.
//!
//! Mental model (mini-redis style, split in two tasks):
//! - the *reader* (this task) reads one size-prefixed frame at a time, checks the size before
//!   allocating anything (B1: over `socket.request.max.bytes` -> close; B2: under 8 bytes ->
//!   close), decodes it with the protocol crate, and runs the handler's synchronous part. A
//!   request for an API or version we do not serve, or a malformed one, closes the connection
//!   (B5, B6, B8) -- except ApiVersions newer than ours, answered in v0 format with
//!   UNSUPPORTED_VERSION and our ranges (B7). The handler's reply goes into a bounded queue.
//! - the *writer* task takes replies in queue order, awaits the deferred ones (fsync, fetch
//!   long-poll), encodes each into a [`ChunkedWriter`] and writes it: bytes with `write_all`,
//!   segment regions with `sendfile` (both counted in [`crate::stats::ServerStats`]).
//!
//! Back-pressure (B21): the queue holds at most `in_flight_requests_max` replies, and the reader
//! stops reading while the bytes held by queued requests and responses exceed
//! `queued_response_bytes_max`. Deadlines (B4): an idle connection (no frame started) closes after
//! `connections.max.idle.ms`; a started frame must complete within `partial_frame_ms_max`.
//! Shutdown: the reader stops at the next frame boundary, the writer drains what is queued.
//! Metrics (issue 20, [`crate::metrics`]): the reader stamps frame read, handler start and
//! handler return, the writer response ready and written (Kafka's queue, local, remote and
//! send phases); requests are counted per connection's listener table, errors per response.
//! Nothing here panics on input; a failure only ends this connection.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use skiff_protocol::{
    ApiKey, Chunk, ChunkedWriter, DecodeError, RequestBody, ResponseBody, decode_request,
    encode_response,
};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::net::TcpStream;
use tokio::sync::{Notify, mpsc, watch};
use tokio::time::Instant;

use crate::broker::Broker;
use crate::handlers::{self, LaterResponse, ListenerInfo, Reply, RequestContext};
use crate::metrics::{self, RequestTimes};
use crate::stats::ServerStats;
use transport::Writer;

pub mod sasl;
pub mod sniff;
pub mod transport;

/// Smallest valid request frame: api key, version, correlation id.
const FRAME_BYTES_MIN: usize = 8;
/// How much buffer a frame read reserves at a time (a huge claimed size is not preallocated).
const READ_CHUNK_BYTES: usize = 64 * 1024;

/// Why a connection stopped reading frames.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("request size {0} exceeds socket.request.max.bytes {1}")]
    TooLarge(usize, usize),
    #[error("request size {0} is below the minimum request header size")]
    TooSmall(i32),
    #[error("idle for longer than connections.max.idle.ms")]
    Idle,
    #[error("a started request frame did not complete in time")]
    PartialTimeout,
    #[error("connection closed in the middle of a frame")]
    EofMidFrame,
    #[error("read failed: {0}")]
    Io(#[from] std::io::Error),
    /// The first bytes are another protocol's (HTTP, TLS), found where the size is rejected.
    #[error("not the Kafka protocol: {0:?}")]
    Foreign(sniff::Foreign),
}

/// Reads size-prefixed frames with size checks and deadlines.
#[derive(Debug)]
pub struct FrameReader<R> {
    rd: R,
    buf: BytesMut,
    frame_bytes_max: usize,
    idle: Duration,
    partial: Duration,
    /// The broker's clock (deadlines are its monotonic time).
    clock: skiff_types::Clock,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    pub fn new(
        rd: R,
        frame_bytes_max: usize,
        idle: Duration,
        partial: Duration,
        clock: skiff_types::Clock,
    ) -> Self {
        Self {
            clock,
            rd,
            buf: BytesMut::with_capacity(READ_CHUNK_BYTES),
            frame_bytes_max,
            idle,
            partial,
        }
    }

    /// Changes the largest accepted frame (SASL: `sasl.server.max.receive.size` until
    /// authentication completes).
    pub fn set_frame_bytes_max(&mut self, max: usize) {
        self.frame_bytes_max = max;
    }

    fn deadline_after(&self, d: Duration) -> Instant {
        Instant::from_std(self.clock.now() + d)
    }

    /// Reads more bytes before `deadline`; `Ok(false)` on end of stream.
    async fn fill(&mut self, deadline: Instant, timeout: FrameError) -> Result<bool, FrameError> {
        match tokio::time::timeout_at(deadline, self.rd.read_buf(&mut self.buf)).await {
            Err(_) => Err(timeout),
            Ok(Ok(0)) => Ok(false),
            Ok(Ok(_)) => Ok(true),
            Ok(Err(e)) => Err(FrameError::Io(e)),
        }
    }

    /// The next frame (without its size prefix), or `None` at a clean end of stream.
    pub async fn next_frame(&mut self) -> Result<Option<Bytes>, FrameError> {
        if self.buf.is_empty() {
            self.buf.reserve(READ_CHUNK_BYTES);
            if !self
                .fill(self.deadline_after(self.idle), FrameError::Idle)
                .await?
            {
                return Ok(None);
            }
        }
        let deadline = self.deadline_after(self.partial);
        while self.buf.len() < 4 {
            if !self.fill(deadline, FrameError::PartialTimeout).await? {
                return Err(FrameError::EofMidFrame);
            }
        }
        let size = (&self.buf[..4]).get_i32();
        let len_or_0 = usize::try_from(size).unwrap_or(0);
        if (len_or_0 < FRAME_BYTES_MIN || len_or_0 > self.frame_bytes_max)
            && let Some(foreign) = sniff::classify(&self.buf)
        {
            return Err(FrameError::Foreign(foreign));
        }
        let Ok(len) = usize::try_from(size) else {
            return Err(FrameError::TooSmall(size));
        };
        if len < FRAME_BYTES_MIN {
            return Err(FrameError::TooSmall(size));
        }
        if len > self.frame_bytes_max {
            return Err(FrameError::TooLarge(len, self.frame_bytes_max));
        }
        let total = 4 + len;
        while self.buf.len() < total {
            let want = (total - self.buf.len()).min(READ_CHUNK_BYTES);
            self.buf.reserve(want);
            if !self.fill(deadline, FrameError::PartialTimeout).await? {
                return Err(FrameError::EofMidFrame);
            }
        }
        let mut frame = self.buf.split_to(total).freeze();
        frame.advance(4);
        Ok(Some(frame))
    }
}

/// Bytes held by one connection's queued requests and responses.
#[derive(Debug)]
struct Budget {
    used: AtomicUsize,
    max: usize,
    freed: Notify,
}

impl Budget {
    async fn wait_below_max(&self) {
        while self.used.load(Ordering::Acquire) > self.max {
            self.freed.notified().await;
        }
    }

    fn take(&self, n: usize) {
        self.used.fetch_add(n, Ordering::AcqRel);
    }

    fn give_back(&self, n: usize) {
        self.used.fetch_sub(n, Ordering::AcqRel);
        self.freed.notify_one();
    }
}

enum Body {
    Now(ResponseBody),
    Later(LaterResponse),
    /// A metadata-quorum RPC's whole response frame (`None`: close the connection).
    Raw(Pin<Box<dyn Future<Output = Option<Bytes>> + Send>>),
}

/// A reply queued for the writer.
struct Outgoing {
    correlation_id: i32,
    api_key: ApiKey,
    version: i16,
    body: Body,
    /// Bytes charged to the budget for this entry.
    charged: usize,
    /// The reader's stamps (issue 20; zero-sized when metrics are compiled out).
    times: RequestTimes,
    /// Close the connection once this reply is written (a failed SASL authentication).
    close_after: bool,
}

/// Serves one accepted connection until the client leaves, a bad frame, or shutdown.
pub async fn serve(
    stream: TcpStream,
    peer: SocketAddr,
    broker: Arc<Broker>,
    listener: Arc<ListenerInfo>,
    mut shutdown: watch::Receiver<bool>,
) {
    let s = &broker.settings;
    let idle = Duration::from_millis(s.connection_idle_ms_max.max(1));
    let partial = Duration::from_millis(s.partial_frame_ms_max.max(1));
    let security = s.security.listener(&listener.name);
    let (rd, wr, tls_principal) = match transport::accept(stream, &security, partial).await {
        Ok(t) => t,
        Err(e) => {
            tracing::info!(%peer, listener = %listener.name, error = %e, "closing connection");
            return;
        }
    };
    let mut gate = sasl::SaslGate::new(
        if security.protocol.is_sasl() {
            security.mechanisms.clone()
        } else {
            Vec::new()
        },
        s.security.reauth_ms,
    );
    let mut frames = FrameReader::new(
        rd,
        if gate.authenticated() {
            s.socket_request_bytes_max
        } else {
            s.security
                .sasl_receive_bytes_max
                .min(s.socket_request_bytes_max)
        },
        idle,
        partial,
        broker.clock.clone(),
    );
    let budget = Arc::new(Budget {
        used: AtomicUsize::new(0),
        max: s.queued_response_bytes_max,
        freed: Notify::new(),
    });
    let (tx, rx) = mpsc::channel::<Outgoing>(s.in_flight_requests_max.max(1));
    let writer = tokio::spawn(write_loop(
        wr,
        rx,
        Arc::clone(&budget),
        idle,
        Arc::clone(&broker),
    ));

    // Counts the close when dropped, at the end of this function (after the writer is done).
    let conn_metrics = broker.metrics.connection_opened(&listener.name);
    let mut principal =
        tls_principal.unwrap_or_else(skiff_auth::principal::KafkaPrincipal::anonymous);
    // SASL session times: milliseconds of the broker's monotonic clock since this connection.
    let opened = broker.clock.now();
    let mono_ms = || {
        u64::try_from(
            broker
                .clock
                .now()
                .saturating_duration_since(opened)
                .as_millis(),
        )
        .unwrap_or(u64::MAX)
    };
    let creds = BrokerCredentials {
        broker: &broker,
        plain_users: &security.plain_users,
    };
    loop {
        // Set when the reply is a parked group request that holds the connection.
        let mut held: Option<tokio::sync::oneshot::Receiver<()>> = None;
        tokio::select! {
            _ = budget.wait_below_max() => {}
            _ = shutdown.changed() => break,
        }
        if *shutdown.borrow() {
            break;
        }
        let frame = tokio::select! {
            f = frames.next_frame() => f,
            _ = shutdown.changed() => break,
        };
        let frame = match frame {
            Ok(Some(f)) => f,
            Ok(None) => break,
            Err(FrameError::Foreign(f)) => {
                let admin = s.admin_bind.as_ref().map(|(h, p)| (h.as_str(), *p));
                sniff::warn_once(&f, peer, &listener.name, admin);
                break;
            }
            Err(e) => {
                tracing::debug!(%peer, error = %e, "closing connection");
                break;
            }
        };
        let size = frame.len();
        let received = metrics::stamp(&broker.clock);
        let untimed = RequestTimes::new(received, received, received);
        // issue 16: the quorum's private API keys, served on a controller listener only.
        if frame.len() >= 2 && skiff_raft::is_raft_key(i16::from_be_bytes([frame[0], frame[1]])) {
            if !gate.authenticated() {
                tracing::info!(%peer, "closing connection: a metadata-quorum request before SASL authentication");
                break;
            }
            let Some(quorum) = broker.quorum.as_ref().filter(|_| listener.controller) else {
                tracing::info!(%peer, "closing connection: a metadata-quorum request on a listener that does not serve the quorum");
                break;
            };
            let quorum = quorum.clone();
            let out = Outgoing {
                correlation_id: 0,
                api_key: ApiKey::ApiVersions,
                version: 0,
                body: Body::Raw(Box::pin(async move { quorum.handle_rpc(frame).await })),
                charged: size,
                times: untimed,
                close_after: false,
            };
            budget.take(out.charged);
            if tx.send(out).await.is_err() {
                break;
            }
            continue;
        }
        if gate.expects_raw_token() {
            // After a v0 SaslHandshake: the frame is a raw SASL token, answered by one.
            let now = mono_ms();
            let Ok(token) = gate.raw_token(&frame, &creds, now) else {
                tracing::info!(%peer, "closing connection: SASL authentication failed");
                break;
            };
            authenticated(
                &gate,
                &mut principal,
                &mut frames,
                s.socket_request_bytes_max,
            );
            let mut raw = BytesMut::with_capacity(4 + token.len());
            raw.extend_from_slice(&i32::try_from(token.len()).unwrap_or(0).to_be_bytes());
            raw.extend_from_slice(&token);
            let raw = raw.freeze();
            let out = Outgoing {
                correlation_id: 0,
                api_key: ApiKey::SaslAuthenticate,
                version: 0,
                body: Body::Raw(Box::pin(async move { Some(raw) })),
                charged: size,
                times: untimed,
                close_after: false,
            };
            budget.take(out.charged);
            if tx.send(out).await.is_err() {
                break;
            }
            continue;
        }
        let out = match decode_request(frame) {
            Ok((header, body)) => {
                let key = body.api_key();
                let version = header.request_api_version;
                if let Err(reason) = gate.admit(key, mono_ms()) {
                    tracing::info!(%peer, api = key.name(), %reason, "closing connection");
                    break;
                }
                tracing::trace!(%peer, api = key.name(), version, correlation_id = header.correlation_id, "request");
                if !handlers::is_served_on(key, version, listener.controller) {
                    tracing::info!(%peer, api = key.name(), version, "closing connection: API version not served");
                    break;
                }
                conn_metrics.request(key, version);
                let started = metrics::stamp(&broker.clock);
                let mut close_after = false;
                let reply = match body {
                    RequestBody::SaslHandshake(r) => {
                        let a = gate.handshake(&r, version);
                        close_after = a.close_after;
                        Reply::Now(ResponseBody::SaslHandshake(a.response))
                    }
                    RequestBody::SaslAuthenticate(r) => {
                        let now = mono_ms();
                        let a = gate.authenticate(&r, version, &creds, now);
                        close_after = a.close_after;
                        if !a.close_after {
                            let max = s.socket_request_bytes_max;
                            authenticated(&gate, &mut principal, &mut frames, max);
                        }
                        Reply::Now(ResponseBody::SaslAuthenticate(a.response))
                    }
                    body => {
                        let ctx = RequestContext {
                            broker: &broker,
                            listener: &listener,
                            peer,
                            api_version: version,
                            correlation_id: header.correlation_id,
                            client_id: header.client_id.as_deref(),
                            principal: &principal,
                        };
                        handlers::dispatch(&ctx, body)
                    }
                };
                let times = RequestTimes::new(received, started, metrics::stamp(&broker.clock));
                let body = match reply {
                    Reply::Now(b) => Body::Now(b),
                    Reply::Hold(f) => {
                        let (done_tx, done_rx) = tokio::sync::oneshot::channel();
                        held = Some(done_rx);
                        Body::Later(Box::pin(async move {
                            let body = f.await;
                            let _ = done_tx.send(());
                            body
                        }))
                    }
                    Reply::Later(f) if holds_connection(key) => {
                        let (done_tx, done_rx) = tokio::sync::oneshot::channel();
                        held = Some(done_rx);
                        Body::Later(Box::pin(async move {
                            let body = f.await;
                            let _ = done_tx.send(());
                            body
                        }))
                    }
                    Reply::Later(f) => Body::Later(f),
                    Reply::Nothing => continue,
                    Reply::Close(reason) => {
                        tracing::info!(%peer, api = key.name(), %reason, "closing connection");
                        break;
                    }
                };
                Outgoing {
                    correlation_id: header.correlation_id,
                    api_key: key,
                    version,
                    body,
                    charged: 0,
                    times,
                    close_after,
                }
            }
            Err(DecodeError::UnsupportedApiVersion {
                api_key,
                api_version,
                correlation_id,
            }) if api_key == ApiKey::ApiVersions as i16 => {
                tracing::debug!(%peer, api_version, "ApiVersions too new: answering in v0");
                conn_metrics.request(ApiKey::ApiVersions, api_version);
                Outgoing {
                    correlation_id,
                    api_key: ApiKey::ApiVersions,
                    version: 0,
                    body: Body::Now(handlers::api_versions::unsupported_version_response()),
                    charged: 0,
                    times: untimed,
                    close_after: false,
                }
            }
            Err(e) => {
                tracing::info!(%peer, error = %e, "closing connection: undecodable request");
                break;
            }
        };
        let response_bytes = match &out.body {
            Body::Now(b) => b.encoded_size(out.version).unwrap_or(0),
            Body::Later(_) | Body::Raw(_) => 0,
        };
        let out = Outgoing {
            charged: size + response_bytes,
            ..out
        };
        let close_after = out.close_after;
        budget.take(out.charged);
        if tx.send(out).await.is_err() {
            break; // the writer stopped (peer gone or write failed)
        }
        if close_after {
            tracing::info!(%peer, listener = %listener.name, "closing connection after a failed SASL exchange");
            break;
        }
        if let Some(done) = held {
            // Kafka reads nothing more from a connection while its request is parked.
            tokio::select! {
                _ = done => {}
                _ = shutdown.changed() => break,
            }
        }
    }
    drop(tx);
    if let Err(e) = writer.await {
        tracing::error!(%peer, error = %e, "connection writer task failed");
    }
}

/// A parked JoinGroup/SyncGroup holds its connection: like Kafka (which mutes a channel while
/// its request is in flight), nothing more is read from it until the answer is ready, so
/// later requests of that client see the group as the rebalance left it.
fn holds_connection(key: ApiKey) -> bool {
    matches!(key, ApiKey::JoinGroup | ApiKey::SyncGroup)
}

async fn write_loop(
    mut wr: Writer,
    mut rx: mpsc::Receiver<Outgoing>,
    budget: Arc<Budget>,
    timeout: Duration,
    broker: Arc<Broker>,
) {
    while let Some(out) = rx.recv().await {
        let body = match out.body {
            Body::Now(b) => b,
            Body::Later(f) => f.await,
            Body::Raw(f) => {
                let Some(frame) = f.await else {
                    break;
                };
                let written = tokio::time::timeout(timeout, async {
                    wr.write_all(&frame).await?;
                    wr.flush().await
                })
                .await;
                budget.give_back(out.charged);
                match written {
                    Ok(Ok(())) => continue,
                    _ => break,
                }
            }
        };
        let ready = metrics::stamp(&broker.clock);
        broker.metrics.errors(out.api_key, &body);
        let mut w = ChunkedWriter::new();
        if let Err(e) = encode_response(out.correlation_id, out.api_key, out.version, &body, &mut w)
        {
            tracing::error!(api = out.api_key.name(), version = out.version, error = %e, "cannot encode a response; closing");
            break;
        }
        drop(body);
        let written = tokio::time::timeout(
            timeout,
            write_chunks(&mut wr, w.into_chunks(), &broker.stats),
        )
        .await;
        budget.give_back(out.charged);
        match written {
            Ok(Ok(())) => {
                let sent = metrics::stamp(&broker.clock);
                broker.metrics.latency(out.api_key, &out.times, ready, sent);
            }
            Ok(Err(e)) => {
                tracing::debug!(error = %e, "write failed; closing");
                break;
            }
            Err(_) => {
                tracing::info!("client did not read its responses in time; closing");
                break;
            }
        }
    }
    wr.shutdown().await;
}

/// Writes one response's chunks: bytes with `write_all`, file regions with `sendfile` (read
/// and encrypted on TLS), counting each kind in `stats` once written.
async fn write_chunks(
    wr: &mut Writer,
    chunks: Vec<Chunk>,
    stats: &ServerStats,
) -> std::io::Result<()> {
    for chunk in chunks {
        match chunk {
            Chunk::Bytes(b) => {
                wr.write_all(&b).await?;
                stats.copied(b.len() as u64);
            }
            Chunk::File(region) => wr.write_region(&region, stats).await?,
        }
    }
    wr.flush().await
}

/// After a SASL step: once the gate holds a principal, it is the connection's, and frames
/// may be as large as `socket.request.max.bytes` again.
fn authenticated<R: AsyncRead + Unpin>(
    gate: &sasl::SaslGate,
    principal: &mut skiff_auth::principal::KafkaPrincipal,
    frames: &mut FrameReader<R>,
    frame_bytes_max: usize,
) {
    if let Some(p) = gate.principal() {
        if p != principal {
            *principal = p.clone();
        }
        frames.set_frame_bytes_max(frame_bytes_max);
    }
}

/// The credentials a SASL login checks: the listener's PLAIN users (JAAS) and the SCRAM
/// credentials of the metadata image.
struct BrokerCredentials<'a> {
    broker: &'a Broker,
    plain_users: &'a std::collections::BTreeMap<String, String>,
}

impl skiff_auth::sasl::Credentials for BrokerCredentials<'_> {
    fn plain_password(&self, user: &str) -> Option<String> {
        self.plain_users.get(user).cloned()
    }

    fn scram(
        &self,
        user: &str,
        m: skiff_auth::sasl::ScramMechanism,
    ) -> Option<skiff_auth::sasl::ScramCredential> {
        crate::acl_sync::scram_credential(self.broker, user, m)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    fn reader(data: Vec<u8>) -> FrameReader<std::io::Cursor<Vec<u8>>> {
        FrameReader::new(
            std::io::Cursor::new(data),
            1024,
            Duration::from_secs(5),
            Duration::from_secs(5),
            skiff_types::Clock::manual(0),
        )
    }

    #[tokio::test]
    async fn frames_and_size_checks() {
        let mut data = Vec::new();
        data.extend_from_slice(&8i32.to_be_bytes());
        data.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        data.extend_from_slice(&9i32.to_be_bytes());
        data.extend_from_slice(&[9; 9]);
        let mut r = reader(data);
        assert_eq!(
            &r.next_frame().await.unwrap().unwrap()[..],
            &[1, 2, 3, 4, 5, 6, 7, 8]
        );
        assert_eq!(r.next_frame().await.unwrap().unwrap().len(), 9);
        assert!(r.next_frame().await.unwrap().is_none());

        let mut r = reader(2000i32.to_be_bytes().to_vec());
        assert!(matches!(
            r.next_frame().await,
            Err(FrameError::TooLarge(2000, 1024))
        ));
        let mut r = reader(7i32.to_be_bytes().to_vec());
        assert!(matches!(r.next_frame().await, Err(FrameError::TooSmall(7))));
        let mut r = reader((-1i32).to_be_bytes().to_vec());
        assert!(matches!(
            r.next_frame().await,
            Err(FrameError::TooSmall(-1))
        ));
        let mut r = reader(vec![0, 0, 0, 20, 1, 2]);
        assert!(matches!(r.next_frame().await, Err(FrameError::EofMidFrame)));
    }

    #[tokio::test(start_paused = true)]
    async fn partial_frame_times_out() {
        let (client, server) = tokio::io::duplex(64);
        let mut r = FrameReader::new(
            server,
            1024,
            Duration::from_secs(600),
            Duration::from_secs(60),
            skiff_types::Clock::manual(0),
        );
        let mut client = client;
        client.write_all(&[0, 0, 0, 20, 1]).await.unwrap();
        assert!(matches!(
            r.next_frame().await,
            Err(FrameError::PartialTimeout)
        ));
        let (_c2, server2) = tokio::io::duplex(64);
        let mut r2 = FrameReader::new(
            server2,
            1024,
            Duration::from_secs(600),
            Duration::from_secs(60),
            skiff_types::Clock::manual(0),
        );
        assert!(matches!(r2.next_frame().await, Err(FrameError::Idle)));
    }
}
