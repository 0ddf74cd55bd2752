//! The inter-node Kafka client (issue 16 item 5): one pipelined connection to one node, used
//! for forwarding admin requests to the controller and broker registration now, and by the
//! replica fetchers next.
//!
//! Mental model: a [`NodeClient`] is a handle (cheap to clone) on one task that owns the
//! connection. A call is queued to the task, which (re)connects when needed, negotiates
//! versions once per connection with ApiVersions (v3, falling back to v0 when the node
//! answers UNSUPPORTED_VERSION, as Kafka's `NetworkClient` does), writes the request with the
//! next correlation id and keeps it in an in-flight queue; a reader task hands back each
//! response frame, which answers the oldest in-flight request (Kafka answers in request order,
//! and the correlation id is checked). Several calls are in flight at once (pipelining).
//! A connection that fails (connect, write, read, a frame out of step) fails every call in
//! flight with [`NodeClientError::Disconnected`] and is dropped; the next call reconnects after
//! the backoff ([`Backoff`], Kafka's `reconnect.backoff.ms` / `reconnect.backoff.max.ms`
//! doubling) that grows with each failed connect and resets on success. The connection is made
//! by `skiff_raft::transport::connect` with [`NodeClientConfig::security`]: TLS and a SASL
//! login come before ApiVersions when the node's listener demands them (issue 19).
//!
//! Pure parts: [`negotiate`] (the version both sides support) and [`Backoff::delay`].
//! Invariants: every call is answered exactly once (a response, a local refusal, a timeout or
//! a disconnect); a response is never given to another call (correlation ids are checked); a
//! request the node does not support is refused locally, never sent.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use skiff_protocol::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, RequestBody, RequestHeader, ResponseBody,
    decode_response, encode_request,
};
use skiff_raft::transport::Stream;
pub use skiff_raft::transport::{ClientSecurity, SaslLogin};
use tokio::io::{AsyncWriteExt, WriteHalf};
use tokio::sync::{mpsc, oneshot};

/// Why a call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NodeClientError {
    #[error("cannot connect to node at {addr}: {reason}")]
    Connect { addr: String, reason: String },
    #[error("the connection to {addr} was lost: {reason}")]
    Disconnected { addr: String, reason: String },
    #[error(
        "node at {addr} does not support {api:?} at any version this client speaks ({ours:?} vs {theirs:?})"
    )]
    Unsupported {
        addr: String,
        api: ApiKey,
        ours: (i16, i16),
        theirs: Option<(i16, i16)>,
    },
    #[error("no answer from {addr} within {timeout:?}")]
    Timeout { addr: String, timeout: Duration },
    #[error("the node client is shut down")]
    Shutdown,
}

/// The version of an API to use: the highest both sides support, if any.
pub fn negotiate(ours: (i16, i16), theirs: Option<(i16, i16)>) -> Option<i16> {
    let (lo, hi) = theirs?;
    let (low, high) = (ours.0.max(lo), ours.1.min(hi));
    (low <= high).then_some(high)
}

/// Reconnect backoff: `initial` doubled per consecutive failed connect, capped at `max`
/// (Kafka's defaults 50 ms and 1 s).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    pub initial: Duration,
    pub max: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            initial: Duration::from_millis(50),
            max: Duration::from_millis(1000),
        }
    }
}

impl Backoff {
    /// The wait before the next connect after `failures` consecutive failed ones (0: none).
    pub fn delay(&self, failures: u32) -> Duration {
        if failures == 0 {
            return Duration::ZERO;
        }
        let factor = 1u32 << (failures - 1).min(20);
        self.initial.saturating_mul(factor).min(self.max)
    }
}

/// How a [`NodeClient`] connects and waits.
#[derive(Clone, Debug)]
pub struct NodeClientConfig {
    pub client_id: String,
    pub connect_timeout: Duration,
    /// How long a call waits for its answer (Kafka's `request.timeout.ms`).
    pub request_timeout: Duration,
    pub backoff: Backoff,
    /// Largest response frame accepted.
    pub max_frame_bytes: usize,
    /// Calls queued before `call` waits for room.
    pub queue: usize,
    /// How the node's listener is reached (TLS, SASL).
    pub security: ClientSecurity,
}

impl Default for NodeClientConfig {
    fn default() -> Self {
        NodeClientConfig {
            client_id: "skiff-node".into(),
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(30),
            backoff: Backoff::default(),
            max_frame_bytes: skiff_protocol::blocking::DEFAULT_MAX_FRAME_BYTES,
            queue: 1024,
            security: ClientSecurity::default(),
        }
    }
}

/// The node's advertised API versions: `(api key, min, max)`.
pub type NodeApis = Arc<Vec<(i16, i16, i16)>>;

type Reply = oneshot::Sender<Result<ResponseBody, NodeClientError>>;

struct Call {
    /// `None`: the highest version both sides support.
    version: Option<i16>,
    body: RequestBody,
    reply: Reply,
}

/// A handle on one node's connection task (see the module docs).
#[derive(Clone, Debug)]
pub struct NodeClient {
    addr: String,
    tx: mpsc::Sender<Call>,
    request_timeout: Duration,
    /// The most requests ever in flight at once on this node's connections.
    peak_in_flight: Arc<AtomicUsize>,
}

impl NodeClient {
    /// Starts the connection task for the node at `addr` (`host:port`); nothing connects
    /// until the first call. The task ends when every handle is dropped.
    pub fn spawn(addr: impl Into<String>, config: NodeClientConfig) -> NodeClient {
        let addr = addr.into();
        let (tx, rx) = mpsc::channel(config.queue.max(1));
        let request_timeout = config.request_timeout;
        let peak_in_flight = Arc::new(AtomicUsize::new(0));
        tokio::spawn(run(addr.clone(), config, rx, Arc::clone(&peak_in_flight)));
        NodeClient {
            addr,
            tx,
            request_timeout,
            peak_in_flight,
        }
    }

    /// The most requests that were in flight at once (pipelining at work when above 1).
    pub fn peak_in_flight(&self) -> usize {
        self.peak_in_flight.load(Ordering::Relaxed)
    }

    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// Sends `body` at the highest version both sides support; its response.
    pub async fn call(
        &self,
        body: impl Into<RequestBody>,
    ) -> Result<ResponseBody, NodeClientError> {
        self.send(None, body.into()).await
    }

    /// Sends `body` at `version` (refused locally if the node does not support it).
    pub async fn call_at(
        &self,
        version: i16,
        body: impl Into<RequestBody>,
    ) -> Result<ResponseBody, NodeClientError> {
        self.send(Some(version), body.into()).await
    }

    async fn send(
        &self,
        version: Option<i16>,
        body: RequestBody,
    ) -> Result<ResponseBody, NodeClientError> {
        let (reply, rx) = oneshot::channel();
        self.tx
            .send(Call {
                version,
                body,
                reply,
            })
            .await
            .map_err(|_| NodeClientError::Shutdown)?;
        match tokio::time::timeout(self.request_timeout, rx).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Err(NodeClientError::Shutdown),
            Err(_) => Err(NodeClientError::Timeout {
                addr: self.addr.clone(),
                timeout: self.request_timeout,
            }),
        }
    }
}

/// One request written and not yet answered.
struct InFlight {
    correlation_id: i32,
    key: ApiKey,
    version: i16,
    reply: Reply,
}

/// A live connection: the write half, the frames the reader hands back, what is in flight.
struct Conn {
    write: WriteHalf<Stream>,
    frames: mpsc::Receiver<Result<Bytes, String>>,
    apis: NodeApis,
    in_flight: VecDeque<InFlight>,
}

async fn run(
    addr: String,
    config: NodeClientConfig,
    mut rx: mpsc::Receiver<Call>,
    peak: Arc<AtomicUsize>,
) {
    let mut failures = 0u32;
    let mut next_id = 1i32;
    let mut conn: Option<Conn> = None;
    loop {
        let Some(c) = conn.as_mut() else {
            // Idle: wait for a call, then connect (after the backoff) to send it.
            let Some(call) = rx.recv().await else { return };
            tokio::time::sleep(config.backoff.delay(failures)).await;
            match connect(&addr, &config, &mut next_id).await {
                Ok(new) => {
                    failures = 0;
                    let mut new = new;
                    if let Err(e) = submit(&addr, &config, &mut new, &mut next_id, call).await {
                        fail_all(&mut new, &e);
                        continue;
                    }
                    conn = Some(new);
                }
                Err(e) => {
                    failures = failures.saturating_add(1);
                    if let NodeClientError::Connect { reason, .. } = &e
                        && skiff_raft::transport::is_security_failure(reason)
                        && skiff_raft::transport::worth_logging(failures)
                    {
                        tracing::warn!(node = %addr, error = %reason, failures, "cannot log in to a node (TLS / SASL)");
                    }
                    let _ = call.reply.send(Err(e));
                }
            }
            continue;
        };
        tokio::select! {
            call = rx.recv() => {
                let Some(call) = call else { return };
                if let Err(e) = submit(&addr, &config, c, &mut next_id, call).await {
                    fail_all(c, &e);
                    conn = None;
                } else {
                    peak.fetch_max(c.in_flight.len(), Ordering::Relaxed);
                }
            }
            frame = c.frames.recv() => {
                let result = match frame {
                    Some(Ok(frame)) => answer(&addr, c, frame),
                    Some(Err(reason)) => Err(disconnected(&addr, reason)),
                    None => Err(disconnected(&addr, "reader stopped".into())),
                };
                if let Err(e) = result {
                    fail_all(c, &e);
                    conn = None;
                }
            }
        }
    }
}

fn disconnected(addr: &str, reason: String) -> NodeClientError {
    NodeClientError::Disconnected {
        addr: addr.to_string(),
        reason,
    }
}

fn fail_all(c: &mut Conn, e: &NodeClientError) {
    for f in c.in_flight.drain(..) {
        let _ = f.reply.send(Err(e.clone()));
    }
}

/// Picks the version, encodes and writes one call; a local refusal answers the call and is
/// not a connection error.
async fn submit(
    addr: &str,
    config: &NodeClientConfig,
    c: &mut Conn,
    next_id: &mut i32,
    call: Call,
) -> Result<(), NodeClientError> {
    let key = call.body.api_key();
    let ours = key.supported_versions();
    let theirs = c
        .apis
        .iter()
        .find(|(k, _, _)| *k == key as i16)
        .map(|(_, lo, hi)| (*lo, *hi));
    let version = match call.version {
        Some(v)
            if theirs.is_some_and(|(lo, hi)| (lo..=hi).contains(&v))
                && ours.0 <= v
                && v <= ours.1 =>
        {
            Some(v)
        }
        Some(_) => None,
        None => negotiate(ours, theirs),
    };
    let Some(version) = version else {
        let _ = call.reply.send(Err(NodeClientError::Unsupported {
            addr: addr.to_string(),
            api: key,
            ours,
            theirs,
        }));
        return Ok(());
    };
    let correlation_id = take_id(next_id);
    let frame = encode(config, key, version, correlation_id, &call.body)?;
    write_frame(&mut c.write, &frame)
        .await
        .map_err(|e| disconnected(addr, e.to_string()))?;
    c.in_flight.push_back(InFlight {
        correlation_id,
        key,
        version,
        reply: call.reply,
    });
    Ok(())
}

/// Answers the oldest in-flight call with `frame`; a frame for another correlation id (or
/// none in flight) puts the connection out of step.
fn answer(addr: &str, c: &mut Conn, frame: Bytes) -> Result<(), NodeClientError> {
    let Some(f) = c.in_flight.pop_front() else {
        return Err(disconnected(
            addr,
            "a response with no request in flight".into(),
        ));
    };
    match decode_response(f.key, f.version, frame) {
        Ok((h, body)) if h.correlation_id == f.correlation_id => {
            let _ = f.reply.send(Ok(body));
            Ok(())
        }
        Ok((h, _)) => {
            let e = disconnected(
                addr,
                format!(
                    "response correlation id {} where {} was expected",
                    h.correlation_id, f.correlation_id
                ),
            );
            let _ = f.reply.send(Err(e.clone()));
            Err(e)
        }
        Err(d) => {
            let e = disconnected(addr, format!("undecodable {:?} response: {d}", f.key));
            let _ = f.reply.send(Err(e.clone()));
            Err(e)
        }
    }
}

fn take_id(next_id: &mut i32) -> i32 {
    let id = *next_id;
    *next_id = if id == i32::MAX { 1 } else { id + 1 };
    id
}

fn encode(
    config: &NodeClientConfig,
    key: ApiKey,
    version: i16,
    correlation_id: i32,
    body: &RequestBody,
) -> Result<BytesMut, NodeClientError> {
    let header = RequestHeader {
        request_api_key: key as i16,
        request_api_version: version,
        correlation_id,
        client_id: Some(config.client_id.clone()),
    };
    let mut out = BytesMut::new();
    encode_request(&header, body, &mut out).map_err(|e| NodeClientError::Unsupported {
        addr: format!("(encoding: {e})"),
        api: key,
        ours: key.supported_versions(),
        theirs: None,
    })?;
    Ok(out)
}

/// Connects, starts the reader and negotiates versions.
async fn connect(
    addr: &str,
    config: &NodeClientConfig,
    next_id: &mut i32,
) -> Result<Conn, NodeClientError> {
    let fail = |reason: String| NodeClientError::Connect {
        addr: addr.to_string(),
        reason,
    };
    let (host, port) = skiff_raft::transport::split_addr(addr).map_err(fail)?;
    let stream =
        skiff_raft::transport::connect(host, port, &config.security, config.connect_timeout)
            .await
            .map_err(fail)?;
    let (mut read, mut write) = tokio::io::split(stream);
    let (tx, mut frames) = mpsc::channel(64);
    let max = config.max_frame_bytes;
    tokio::spawn(async move {
        loop {
            // The size is checked before anything is allocated.
            let frame = skiff_raft::transport::read_frame(&mut read, max).await;
            let stop = frame.is_err();
            if tx.send(frame).await.is_err() || stop {
                return;
            }
        }
    });
    // ApiVersions v3, then v0 if the node refuses v3 (it answers in v0 layout then).
    let mut apis = None;
    for version in [3i16, 0] {
        let id = take_id(next_id);
        let body = RequestBody::ApiVersions(ApiVersionsRequest {
            client_software_name: "skiff".into(),
            client_software_version: env!("CARGO_PKG_VERSION").into(),
        });
        let frame = encode(config, ApiKey::ApiVersions, version, id, &body)?;
        write_frame(&mut write, &frame)
            .await
            .map_err(|e| fail(e.to_string()))?;
        let raw = tokio::time::timeout(config.request_timeout, frames.recv())
            .await
            .map_err(|_| fail("no ApiVersions answer".into()))?
            .ok_or_else(|| fail("connection closed during ApiVersions".into()))?
            .map_err(fail)?;
        let r: ApiVersionsResponse = match decode_response(ApiKey::ApiVersions, version, raw) {
            Ok((_, ResponseBody::ApiVersions(r))) => r,
            Ok(_) => return Err(fail("not an ApiVersions response".into())),
            // A v3 request refused: the v0-layout answer does not decode as v3.
            Err(_) if version == 3 => continue,
            Err(e) => return Err(fail(format!("undecodable ApiVersions response: {e}"))),
        };
        if r.error_code == 35 && version == 3 {
            continue;
        }
        if r.error_code != 0 {
            return Err(fail(format!("ApiVersions error code {}", r.error_code)));
        }
        apis = Some(
            r.api_keys
                .iter()
                .map(|a| (a.api_key, a.min_version, a.max_version))
                .collect::<Vec<_>>(),
        );
        break;
    }
    let apis = apis.ok_or_else(|| fail("ApiVersions refused at v3 and v0".into()))?;
    Ok(Conn {
        write,
        frames,
        apis: Arc::new(apis),
        in_flight: VecDeque::new(),
    })
}

/// Writes one frame and flushes it (TLS holds written bytes until flushed).
async fn write_frame(write: &mut WriteHalf<Stream>, frame: &[u8]) -> std::io::Result<()> {
    write.write_all(frame).await?;
    write.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiate_table() {
        // (ours, theirs, version)
        let rows = [
            ((0, 12), Some((0, 12)), Some(12)),
            ((0, 12), Some((0, 9)), Some(9)),
            ((4, 17), Some((0, 13)), Some(13)),
            ((4, 17), Some((0, 3)), None),
            ((3, 11), Some((12, 13)), None),
            ((0, 4), None, None),
        ];
        for (ours, theirs, want) in rows {
            assert_eq!(negotiate(ours, theirs), want, "{ours:?} {theirs:?}");
        }
    }

    #[test]
    fn backoff_doubles_to_the_cap() {
        let b = Backoff::default();
        let ms: Vec<u128> = (0..8).map(|f| b.delay(f).as_millis()).collect();
        assert_eq!(ms, [0, 50, 100, 200, 400, 800, 1000, 1000]);
        assert_eq!(b.delay(u32::MAX), Duration::from_millis(1000));
    }

    #[test]
    fn correlation_ids_wrap_to_one() {
        let mut id = i32::MAX;
        assert_eq!(take_id(&mut id), i32::MAX);
        assert_eq!(take_id(&mut id), 1);
    }
}
