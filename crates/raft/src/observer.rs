//! Broker-only nodes (`process.roles=broker`, issue 16): they follow the metadata quorum as
//! observers, without a vote.
//!
//! Mental model: an observer asks a voter (the leader when it knows one, else the voters in
//! turn) for the committed entries from its next index on, under the private key
//! [`RAFT_OBSERVE_KEY`] on the voter's CONTROLLER listener; the voter answers with what it
//! has applied (so only committed entries), waiting up to `max_wait_ms` for more when the
//! observer is caught up (a long poll). The observer applies each entry to its
//! [`ImageSink`] exactly as a voter's state machine does (records of a normal entry, the
//! applied end after every entry), so its image is the voters' image. It keeps nothing on
//! disk: a restarted observer fetches the log again from index 0 (metadata is small; KRaft
//! brokers keep a copy, Skiff's do not yet). The answer names the voter's known leader and
//! term, which tells the broker where the active controller is.
//!
//! When the entries it needs were purged behind a snapshot, the voter answers with its newest
//! `.checkpoint` file instead; the observer checks it, replaces its image with the snapshot's
//! and asks again from the entry after it.
//!
//! Refusals: a voter of another cluster or with another voter list refuses; that is fatal for
//! the observer (it stops with the message), since it was configured for another quorum.
//!
//! Invariants: entries are applied in index order, each once (an answer that skips an index is
//! dropped and asked again); an entry whose records do not decode stops the observer (fatal)
//! rather than applying half of it.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use skiff_metadata::{
    Committed, ImageSink, MetadataError, MetadataLog, QuorumState, Record as MetaRecord,
};
use tokio::sync::watch;

use crate::network::{Envelope, RAFT_OBSERVE_KEY, Refusal, Sender, round_trip};
use crate::transport::{ClientSecurity, Stream};

/// How many entries one answer carries at most.
pub const OBSERVE_MAX_ENTRIES: usize = 512;

/// An observer's request.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ObserveRequest {
    /// The first Raft index the observer has not applied.
    pub next_index: u64,
    pub max_entries: usize,
    /// How long the voter may wait for a new entry when it has none past `next_index`.
    pub max_wait_ms: u64,
}

/// A voter's answer.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ObserveAnswer {
    /// The leader the voter knows (the active controller) and its term.
    pub leader: Option<i32>,
    pub epoch: i32,
    /// The last index the voter has applied: everything up to it is committed.
    pub applied_index: Option<u64>,
    pub entries: Vec<ObservedEntry>,
    /// Set instead of entries when the observer's next entry was purged: the voter's newest
    /// `.checkpoint` file ([`crate::checkpoint`]).
    #[serde(default)]
    pub snapshot: Option<Vec<u8>>,
}

/// One committed entry: its Raft index, its base offset in `__cluster_metadata-0`, and its
/// KRaft-framed records (`None`: a control entry, leader change or membership, one offset).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ObservedEntry {
    pub index: u64,
    pub base_offset: i64,
    pub records: Option<Vec<Bytes>>,
}

/// How an observer runs.
#[derive(Clone, Debug)]
pub struct ObserverConfig {
    pub node_id: i32,
    pub cluster_id: String,
    /// (id, host, port) of every voter's CONTROLLER listener.
    pub voters: Vec<(i32, String, u16)>,
    /// Connect and request timeout; the long poll waits a quarter of it.
    pub request_timeout: Duration,
    /// How the voters' CONTROLLER listener is reached (TLS, SASL; issue 19).
    pub security: ClientSecurity,
}

#[derive(Debug, Default)]
struct State {
    next_index: u64,
    leader: Option<i32>,
    epoch: i32,
    caught_up: bool,
}

/// A broker-only node's view of the quorum (cheap to clone).
#[derive(Clone, Debug)]
pub struct Observer {
    me: Sender,
    voters: BTreeMap<i32, (String, u16)>,
    sink: ImageSink,
    state: Arc<Mutex<State>>,
    applied_tx: Arc<watch::Sender<i64>>,
    caught_up_tx: Arc<watch::Sender<bool>>,
    fatal: Arc<watch::Sender<Option<String>>>,
    stop: Arc<watch::Sender<bool>>,
    request_timeout: Duration,
    security: ClientSecurity,
}

impl Observer {
    /// Starts following the quorum into `sink` (on the current tokio runtime).
    pub fn start(cfg: ObserverConfig, sink: ImageSink) -> Observer {
        let o = Observer {
            me: Sender {
                cluster_id: cfg.cluster_id,
                node_id: cfg.node_id,
                voters: crate::quorum::voter_string(&cfg.voters),
            },
            voters: cfg
                .voters
                .iter()
                .map(|(id, h, p)| (*id, (h.clone(), *p)))
                .collect(),
            sink,
            state: Arc::default(),
            applied_tx: Arc::new(watch::channel(0).0),
            caught_up_tx: Arc::new(watch::channel(false).0),
            fatal: Arc::new(watch::channel(None).0),
            stop: Arc::new(watch::channel(false).0),
            request_timeout: cfg.request_timeout,
            security: cfg.security,
        };
        tokio::spawn(o.clone().run());
        o
    }

    /// Waits (up to `wait`) until the observer has applied everything a voter had applied
    /// when it answered; `Err` with the reason otherwise.
    pub async fn caught_up(&self, wait: Duration) -> Result<(), String> {
        let mut rx = self.caught_up_tx.subscribe();
        let mut fatal = self.fatal.subscribe();
        let done = async {
            loop {
                if *rx.borrow_and_update() {
                    return Ok(());
                }
                if let Some(m) = fatal.borrow_and_update().clone() {
                    return Err(m);
                }
                tokio::select! {
                    r = rx.changed() => if r.is_err() { return Err("stopped".to_string()) },
                    r = fatal.changed() => if r.is_err() { return Err("stopped".to_string()) },
                }
            }
        };
        tokio::time::timeout(wait, done).await.unwrap_or_else(|_| {
            Err(format!(
                "no voter of controller.quorum.voters ({}) served the metadata log within {wait:?}",
                self.me.voters
            ))
        })
    }

    pub fn node_id(&self) -> i32 {
        self.me.node_id
    }

    pub fn leader(&self) -> Option<i32> {
        self.state.lock().leader
    }

    pub fn epoch(&self) -> i32 {
        self.state.lock().epoch
    }

    pub fn voter_endpoint(&self, id: i32) -> Option<(String, u16)> {
        self.voters.get(&id).cloned()
    }

    pub fn voter_ids(&self) -> Vec<i32> {
        self.voters.keys().copied().collect()
    }

    /// The applied end offset of the image, as it moves.
    pub fn applied(&self) -> watch::Receiver<i64> {
        self.applied_tx.subscribe()
    }

    /// Set when the observer cannot go on (another cluster's or quorum's voters).
    pub fn fatal(&self) -> watch::Receiver<Option<String>> {
        self.fatal.subscribe()
    }

    pub fn shutdown(&self) {
        self.stop.send_replace(true);
    }

    /// The metadata log a broker-only node's store uses: it never proposes (everything is
    /// forwarded to the active controller), its image comes through the sink.
    pub fn metadata_log(&self) -> ObserverMetadataLog {
        ObserverMetadataLog {
            observer: self.clone(),
        }
    }

    async fn run(self) {
        let mut stop = self.stop.subscribe();
        let ids: Vec<i32> = self.voters.keys().copied().collect();
        let mut turn = 0usize;
        let mut conn: Option<(i32, Stream)> = None;
        let mut correlation = 0i32;
        let mut backoff = Duration::from_millis(50);
        let mut failures = 0u32;
        loop {
            if *stop.borrow() || ids.is_empty() {
                return;
            }
            let target = self.leader().unwrap_or(ids[turn % ids.len()]);
            if conn.as_ref().is_some_and(|(id, _)| *id != target) {
                conn = None;
            }
            let result = match conn.as_mut() {
                Some((_, c)) => {
                    correlation = correlation.wrapping_add(1);
                    self.ask(c, correlation).await
                }
                None => match self.connect(target).await {
                    Ok(c) => {
                        conn = Some((target, c));
                        continue;
                    }
                    Err(e) => Err(e),
                },
            };
            match result {
                Ok(answer) => {
                    backoff = Duration::from_millis(50);
                    failures = 0;
                    if let Err(e) = self.apply(answer) {
                        tracing::error!(error = %e, "the metadata log cannot be applied; stopping");
                        self.fatal.send_replace(Some(e));
                        return;
                    }
                }
                Err(Failure::Refused(r)) => {
                    let m = format!("voter {target} refused this broker: {r}");
                    if matches!(r, Refusal::Raft(_)) {
                        tracing::warn!(%m, "metadata fetch refused");
                    } else {
                        self.fatal.send_replace(Some(m));
                        return;
                    }
                }
                Err(Failure::Io(e)) => {
                    failures = failures.saturating_add(1);
                    if crate::transport::is_security_failure(&e)
                        && crate::transport::worth_logging(failures)
                    {
                        tracing::warn!(voter = target, error = %e, failures, "cannot log in to a voter's controller listener; the metadata log cannot be fetched");
                    } else {
                        tracing::debug!(voter = target, error = %e, "metadata fetch failed; trying another voter");
                    }
                    conn = None;
                    self.state.lock().leader = None;
                    turn += 1;
                    tokio::select! {
                        _ = tokio::time::sleep(backoff) => {}
                        _ = stop.changed() => return,
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                }
            }
        }
    }

    async fn connect(&self, id: i32) -> Result<Stream, Failure> {
        let (host, port) = self
            .voters
            .get(&id)
            .ok_or_else(|| Failure::Io(format!("no voter {id}")))?;
        crate::transport::connect(host, *port, &self.security, self.request_timeout)
            .await
            .map_err(Failure::Io)
    }

    async fn ask(&self, conn: &mut Stream, correlation: i32) -> Result<ObserveAnswer, Failure> {
        let (next_index, caught_up) = {
            let s = self.state.lock();
            (s.next_index, s.caught_up)
        };
        let wait = if caught_up {
            (self.request_timeout / 4).as_millis() as u64
        } else {
            0
        };
        let body = serde_json::to_vec(&Envelope {
            from: self.me.clone(),
            rpc: ObserveRequest {
                next_index,
                max_entries: OBSERVE_MAX_ENTRIES,
                max_wait_ms: wait,
            },
        })
        .map_err(|e| Failure::Io(format!("encode: {e}")))?;
        let frame = tokio::time::timeout(
            self.request_timeout + Duration::from_millis(wait),
            round_trip(conn, RAFT_OBSERVE_KEY, correlation, &body),
        )
        .await
        .map_err(|_| Failure::Io("no answer in time".into()))?
        .map_err(Failure::Io)?;
        let answer: Result<ObserveAnswer, Refusal> =
            serde_json::from_slice(&frame).map_err(|e| Failure::Io(format!("garbage: {e}")))?;
        answer.map_err(Failure::Refused)
    }

    /// Applies an answer's entries in index order; `Err` only for undecodable records.
    fn apply(&self, answer: ObserveAnswer) -> Result<(), String> {
        let mut s = self.state.lock();
        if let Some(bytes) = &answer.snapshot {
            let d = crate::checkpoint::decode(bytes)
                .map_err(|e| format!("the metadata snapshot a voter sent: {e}"))?;
            let image = crate::ImageStateMachine::image_of(&d.records)
                .map_err(|e| format!("the metadata snapshot a voter sent: {e}"))?;
            let next = d.meta.last_log_id.map_or(0, |l| l.index + 1);
            if next > s.next_index {
                self.sink.reset(image, d.id.end_offset);
                s.next_index = next;
                tracing::info!(file = %d.id.file_name(), "installed a metadata snapshot from a voter");
            }
        }
        for e in &answer.entries {
            if e.index != s.next_index {
                // Not the entry expected next (an answer to an older request): ask again.
                tracing::debug!(
                    got = e.index,
                    want = s.next_index,
                    "metadata entries out of order"
                );
                return Ok(());
            }
            match &e.records {
                None => self.sink.apply(&[], e.base_offset + 1),
                Some(values) => {
                    let mut records = Vec::with_capacity(values.len());
                    for v in values {
                        match MetaRecord::decode(v.clone()) {
                            Ok(Some(r)) => records.push(r),
                            Ok(None) => {}
                            Err(err) => {
                                return Err(format!("metadata entry {}: {err}", e.index));
                            }
                        }
                    }
                    self.sink
                        .apply(&records, e.base_offset + values.len() as i64);
                }
            }
            s.next_index += 1;
        }
        s.leader = answer.leader;
        s.epoch = answer.epoch;
        let caught_up = answer.applied_index.is_none_or(|a| s.next_index > a);
        s.caught_up = caught_up;
        drop(s);
        self.applied_tx.send_replace(self.sink.applied_end());
        if caught_up {
            self.caught_up_tx.send_replace(true);
        }
        Ok(())
    }
}

enum Failure {
    Io(String),
    Refused(Refusal),
}

/// The [`MetadataLog`] of a broker-only node: never the controller.
#[derive(Debug)]
pub struct ObserverMetadataLog {
    observer: Observer,
}

impl MetadataLog for ObserverMetadataLog {
    fn propose(
        &mut self,
        _records: &[MetaRecord],
        _now_ms: i64,
    ) -> Result<Committed, MetadataError> {
        Err(MetadataError::NotController)
    }

    fn replay(&mut self, _apply: &mut dyn FnMut(MetaRecord)) -> Result<i64, MetadataError> {
        Ok(self.observer.sink.applied_end())
    }

    fn close(&mut self, _now_ms: i64) -> Result<(), MetadataError> {
        self.observer.shutdown();
        Ok(())
    }

    fn quorum_state(&self) -> QuorumState {
        let end = self.observer.sink.applied_end();
        QuorumState {
            leader_epoch: self.observer.epoch(),
            high_watermark: end,
            log_end_offset: end,
        }
    }

    fn ready_to_lead(&mut self) -> Result<i32, MetadataError> {
        Err(MetadataError::NotController)
    }

    fn applies_through_sink(&self) -> bool {
        true
    }
}
