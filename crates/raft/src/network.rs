//! The quorum's wire: openraft's three RPCs between voters, carried on the CONTROLLER
//! listener in Kafka's framing under Skiff-private API keys (design/replication.md §1.4).
//!
//! Mental model: a request is a Kafka request frame (size, api key, api version 0,
//! correlation id, null client id: request header v1) whose body is a JSON [`Envelope`]: the
//! sender's cluster id, node id and voter list, and the openraft request. The response is a
//! Kafka response frame (size, correlation id: header v0) whose body is a JSON
//! `Result<response, refusal>`. The listener's connection loop hands frames with a private key
//! to [`crate::Quorum::handle_rpc`] instead of the Kafka decoder; a broker listener refuses
//! them. Each openraft replication stream ([`Net`]) owns one connection, used one call at a
//! time (openraft drives it that way), reconnected after a failure. Connections are made by
//! [`crate::transport::connect`]: TLS and a SASL login first when the CONTROLLER listener
//! demands them (issue 19; the listener refuses these keys before the login).
//!
//! Refusals: a request from another cluster or with another voter list is refused, never
//! served; a refused voter list stops a node that has not yet joined a working quorum, on
//! either side (the quorum reports it and the node stops with a message naming both lists),
//! since two nodes that disagree on the voters could each elect a leader; a node that is
//! already part of a working quorum refuses and logs it, so one misconfigured node cannot
//! stop a healthy quorum (`quorum::MismatchReport`).
//!
//! JSON, not Kafka's KRaft RPCs: openraft's messages are not Kafka's (design note §1.4); Kafka
//! tools never speak them; metadata entries are small.

use std::future::Future;
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use openraft::errors::{NetworkError, RPCError, ReplicationClosed, StreamingError, Unreachable};
use openraft::impls::BasicNode;
use openraft::network::{RPCOption, RaftNetworkFactory, RaftNetworkV2};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, VoteRequest, VoteResponse,
};
use openraft::storage::Snapshot;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::transport::{ClientSecurity, Stream};
use crate::types::{Epoch, NodeId, SkiffRaft, Vote};

/// Skiff-private API keys (outside Kafka's range, never advertised by ApiVersions); 32258 is
/// a full snapshot sent to a lagging voter ([`SnapshotRpc`]); 32259 is a broker-only node's
/// metadata fetch ([`crate::observer`]).
pub const RAFT_APPEND_KEY: i16 = 32_256;
pub const RAFT_VOTE_KEY: i16 = 32_257;
pub const RAFT_SNAPSHOT_KEY: i16 = 32_258;
pub const RAFT_OBSERVE_KEY: i16 = 32_259;

/// Whether `key` is one of the quorum's private API keys.
pub fn is_raft_key(key: i16) -> bool {
    (RAFT_APPEND_KEY..=RAFT_OBSERVE_KEY).contains(&key)
}

/// The largest response frame a voter accepts.
const MAX_RESPONSE_BYTES: usize = 64 << 20;

pub(crate) type SkiffSnapshot =
    Snapshot<openraft::vote::leader_id_std::CommittedLeaderId<Epoch>, NodeId, BasicNode, Vec<u8>>;

/// Who sends a request: checked by the receiver before anything is served.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sender {
    pub cluster_id: String,
    pub node_id: i32,
    /// `controller.quorum.voters` in id order (`QuorumSettings::voter_string`'s form).
    pub voters: String,
}

/// A request body.
#[derive(Debug, Serialize, Deserialize)]
pub struct Envelope<T> {
    pub from: Sender,
    pub rpc: T,
}

/// Why a receiver refused a request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Refusal {
    /// Another cluster's node.
    InconsistentClusterId { ours: String, theirs: String },
    /// The voter lists disagree (fatal on a side that has not joined a working quorum).
    VotersMismatch { ours: String, theirs: String },
    /// openraft refused (e.g. the node is shutting down).
    Raft(String),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::InconsistentClusterId { ours, theirs } => write!(
                f,
                "INCONSISTENT_CLUSTER_ID: the voter belongs to cluster {ours}, the sender to {theirs}"
            ),
            Refusal::VotersMismatch { ours, theirs } => write!(
                f,
                "controller.quorum.voters disagree between voters: {ours} here, {theirs} on the sender; give every node the same list"
            ),
            Refusal::Raft(m) => f.write_str(m),
        }
    }
}

/// Encodes a request frame.
pub fn encode_request(key: i16, correlation_id: i32, body: &[u8]) -> Bytes {
    let mut b = BytesMut::with_capacity(14 + body.len());
    let size = i32::try_from(10 + body.len()).unwrap_or(i32::MAX);
    b.put_i32(size);
    b.put_i16(key);
    b.put_i16(0);
    b.put_i32(correlation_id);
    b.put_i16(-1); // null client id
    b.put_slice(body);
    b.freeze()
}

/// Splits a request frame (without its size prefix) into (key, correlation id, body).
pub fn decode_request(mut frame: Bytes) -> Option<(i16, i32, Bytes)> {
    if frame.len() < 10 {
        return None;
    }
    let key = frame.get_i16();
    let _version = frame.get_i16();
    let correlation_id = frame.get_i32();
    let client_id_len = frame.get_i16();
    if client_id_len > 0 {
        let n = usize::try_from(client_id_len).ok()?;
        if frame.len() < n {
            return None;
        }
        frame.advance(n);
    }
    Some((key, correlation_id, frame))
}

/// Encodes a response frame (size, correlation id, body).
pub fn encode_response(correlation_id: i32, body: &[u8]) -> Bytes {
    let mut b = BytesMut::with_capacity(8 + body.len());
    b.put_i32(i32::try_from(4 + body.len()).unwrap_or(i32::MAX));
    b.put_i32(correlation_id);
    b.put_slice(body);
    b.freeze()
}

/// How a call failed, as openraft wants to hear it.
#[derive(Debug)]
enum Fail {
    /// Not connected: back off before retrying.
    Unreachable(String),
    /// Failed mid-call: retry.
    Network(String),
    /// The receiver refused.
    Refused(Refusal),
}

impl Fail {
    fn into_rpc<E: std::error::Error>(self) -> RPCError<SkiffRaft, E> {
        match self {
            Fail::Unreachable(m) => RPCError::Unreachable(Unreachable::from_string(m)),
            Fail::Network(m) => RPCError::Network(NetworkError::from_string(m)),
            Fail::Refused(r) => RPCError::Unreachable(Unreachable::from_string(r.to_string())),
        }
    }
}

/// Makes the connections to the other voters.
#[derive(Clone)]
pub struct Network {
    pub(crate) me: Sender,
    /// Told of every peer that answered with matching voters, and of voter-list refusals
    /// (fatal until a majority has agreed with this node).
    pub(crate) report: crate::quorum::MismatchReport,
    pub(crate) connect_timeout: Duration,
    /// How the voters' CONTROLLER listener is reached (TLS, SASL).
    pub(crate) security: ClientSecurity,
}

impl std::fmt::Debug for Network {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Network").field("me", &self.me).finish()
    }
}

impl RaftNetworkFactory<SkiffRaft> for Network {
    type Network = Net;

    async fn new_client(&mut self, target: NodeId, node: &BasicNode) -> Net {
        Net {
            target,
            addr: node.addr.clone(),
            conn: None,
            next_correlation: 0,
            failed_connects: 0,
            net: self.clone(),
        }
    }
}

/// One replication stream's connection to `target`.
pub struct Net {
    target: NodeId,
    addr: String,
    conn: Option<Stream>,
    next_correlation: i32,
    /// Failed connects in a row (a TLS / SASL refusal is logged at 1, 2, 4, ...).
    failed_connects: u32,
    net: Network,
}

impl std::fmt::Debug for Net {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Net")
            .field("target", &self.target)
            .field("addr", &self.addr)
            .field("connected", &self.conn.is_some())
            .finish()
    }
}

impl Net {
    async fn call<Req: Serialize, Resp: DeserializeOwned>(
        &mut self,
        key: i16,
        rpc: Req,
        ttl: Duration,
    ) -> Result<Resp, Fail> {
        let body = serde_json::to_vec(&Envelope {
            from: self.net.me.clone(),
            rpc,
        })
        .map_err(|e| Fail::Network(format!("encode: {e}")))?;
        let outcome = tokio::time::timeout(ttl, self.exchange(key, &body)).await;
        let frame = match outcome {
            Ok(Ok(frame)) => frame,
            Ok(Err(f)) => {
                self.conn = None;
                return Err(f);
            }
            Err(_) => {
                self.conn = None;
                return Err(Fail::Network(format!(
                    "no answer from voter {} at {} within {ttl:?}",
                    self.target, self.addr
                )));
            }
        };
        let answer: Result<Resp, Refusal> = serde_json::from_slice(&frame)
            .map_err(|e| Fail::Network(format!("voter {} answered garbage: {e}", self.target)))?;
        match answer {
            Ok(r) => {
                self.net.report.agreed(self.target.0);
                Ok(r)
            }
            Err(refusal) => {
                if matches!(refusal, Refusal::VotersMismatch { .. }) {
                    self.net
                        .report
                        .report(format!("voter {} refused: {refusal}", self.target));
                } else {
                    tracing::warn!(voter = %self.target, %refusal, "voter refused a quorum request");
                }
                Err(Fail::Refused(refusal))
            }
        }
    }

    async fn exchange(&mut self, key: i16, body: &[u8]) -> Result<Bytes, Fail> {
        if self.conn.is_none() {
            let (host, port) =
                crate::transport::split_addr(&self.addr).map_err(Fail::Unreachable)?;
            let c =
                crate::transport::connect(host, port, &self.net.security, self.net.connect_timeout)
                    .await;
            let c = match c {
                Ok(c) => c,
                Err(e) => {
                    self.failed_connects = self.failed_connects.saturating_add(1);
                    if crate::transport::is_security_failure(&e)
                        && crate::transport::worth_logging(self.failed_connects)
                    {
                        tracing::warn!(voter = %self.target, error = %e, failures = self.failed_connects, "cannot log in to a voter's controller listener");
                    }
                    return Err(Fail::Unreachable(e));
                }
            };
            self.failed_connects = 0;
            self.conn = Some(c);
        }
        let Some(conn) = self.conn.as_mut() else {
            return Err(Fail::Unreachable("not connected".into()));
        };
        self.next_correlation = self.next_correlation.wrapping_add(1);
        round_trip(conn, key, self.next_correlation, body)
            .await
            .map_err(|e| Fail::Network(format!("{}: {e}", self.addr)))
    }
}

/// Sends one request frame on `conn` and reads its response (the body after the
/// correlation id, which is checked).
pub(crate) async fn round_trip<S: AsyncRead + AsyncWrite + Unpin + ?Sized>(
    conn: &mut S,
    key: i16,
    correlation_id: i32,
    body: &[u8],
) -> Result<Bytes, String> {
    let frame = encode_request(key, correlation_id, body);
    let io = |e: std::io::Error| e.to_string();
    conn.write_all(&frame).await.map_err(io)?;
    conn.flush().await.map_err(io)?;
    let size = conn.read_i32().await.map_err(io)?;
    let size = usize::try_from(size)
        .ok()
        .filter(|s| (4..=MAX_RESPONSE_BYTES).contains(s))
        .ok_or_else(|| format!("bad response size {size}"))?;
    let mut buf = vec![0u8; size];
    conn.read_exact(&mut buf).await.map_err(io)?;
    let mut buf = Bytes::from(buf);
    let got = buf.get_i32();
    if got != correlation_id {
        return Err(format!(
            "response correlation id {got}, expected {correlation_id}"
        ));
    }
    Ok(buf)
}

impl RaftNetworkV2<SkiffRaft> for Net {
    type SnapshotData = Vec<u8>;

    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<SkiffRaft>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<SkiffRaft>, RPCError<SkiffRaft>> {
        self.call(RAFT_APPEND_KEY, rpc, option.hard_ttl())
            .await
            .map_err(Fail::into_rpc)
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<SkiffRaft>,
        option: RPCOption,
    ) -> Result<VoteResponse<SkiffRaft>, RPCError<SkiffRaft>> {
        self.call(RAFT_VOTE_KEY, rpc, option.hard_ttl())
            .await
            .map_err(Fail::into_rpc)
    }

    async fn full_snapshot(
        &mut self,
        vote: Vote,
        snapshot: SkiffSnapshot,
        cancel: impl Future<Output = ReplicationClosed> + Send + 'static,
        option: RPCOption,
    ) -> Result<SnapshotResponse<SkiffRaft>, StreamingError<SkiffRaft>> {
        // The whole `.checkpoint` file in one request (metadata snapshots are small); the
        // receiver checks it as it checks a file read from disk (crate::checkpoint).
        let rpc = SnapshotRpc {
            vote,
            meta: snapshot.meta,
            data: snapshot.snapshot,
        };
        let ttl = option.hard_ttl();
        tokio::select! {
            closed = cancel => Err(StreamingError::Closed(closed)),
            r = self.call(RAFT_SNAPSHOT_KEY, rpc, ttl) => r.map_err(|f| match f {
                Fail::Unreachable(m) => StreamingError::Unreachable(Unreachable::from_string(m)),
                Fail::Network(m) => StreamingError::Network(NetworkError::from_string(m)),
                Fail::Refused(r) => {
                    StreamingError::Unreachable(Unreachable::from_string(r.to_string()))
                }
            }),
        }
    }
}

/// A full snapshot sent to a lagging voter: the leader's vote, openraft's meta and the
/// `.checkpoint` file's bytes.
#[derive(Debug, Serialize, Deserialize)]
pub struct SnapshotRpc {
    pub vote: Vote,
    pub meta: crate::checkpoint::Meta,
    pub data: Vec<u8>,
}
