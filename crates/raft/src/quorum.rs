//! The metadata quorum (issue 16 item 1): openraft over [`KafkaLogStore`], the
//! [`ImageStateMachine`] and the [`Network`], and [`RaftMetadataLog`], the
//! `skiff_metadata::MetadataLog` the store writes through.
//!
//! Mental model: every voter runs one [`Quorum`]. Its log is `__cluster_metadata-0`; its
//! state machine feeds the metadata image on every voter; the leader of the Raft term is
//! the active controller (its store may decide), the others answer NOT_CONTROLLER and the
//! broker forwards to the leader. The static voter set is openraft's membership, written
//! once by every voter on an empty log (all write the same entry); a restarted voter whose
//! configured voters differ from its log's membership refuses to start.
//!
//! Timers: Kafka's `controller.quorum.election.timeout.ms` ("the maximum time without
//! hearing from the leader before a new election") is openraft's maximum election timeout,
//! half of it the minimum, and the leader's heartbeat a quarter of it, so a follower hears
//! the leader several times per window. openraft's leader lease is the maximum: a voter
//! refuses votes until that long after the leader's last heartbeat, so the maximum bounds
//! how soon a dead leader can be replaced (a [T, 2T] window put the median failover at 3.3 s
//! with Kafka's default T = 1000 ms; [T/2, T] puts it under 2 s: docs/performance.md).
//!
//! Invariants: a proposal is answered only after its entry is committed (fsynced on a
//! majority: [`KafkaLogStore`] fsyncs before it reports an append flushed) and applied here;
//! the store decides only once every entry of earlier terms is applied
//! ([`RaftMetadataLog::ready_to_lead`]).

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use openraft::async_runtime::WatchReceiver;
use openraft::errors::{ClientWriteError, InitializeError, RaftError};
use openraft::impls::BasicNode;
use openraft::{Config, Raft, ServerState, SnapshotPolicy};
use parking_lot::Mutex;
use skiff_metadata::{
    BlockingSection, Committed, ImageSink, MetadataError, MetadataLog, QuorumState, Record,
};
use skiff_types::Clock;
use tokio::sync::watch;

use crate::KafkaLogStore;
use crate::image_sm::ImageStateMachine;
use crate::network::{
    Envelope, Network, RAFT_APPEND_KEY, RAFT_OBSERVE_KEY, RAFT_SNAPSHOT_KEY, RAFT_VOTE_KEY,
    Refusal, Sender, SnapshotRpc, decode_request, encode_response,
};
use crate::observer::{OBSERVE_MAX_ENTRIES, ObserveAnswer, ObserveRequest, ObservedEntry};
use crate::types::{NodeId, Op, SkiffRaft};

/// The Raft node of the metadata quorum.
pub type MetaRaft = Raft<SkiffRaft, ImageStateMachine>;

/// How a voter runs.
#[derive(Clone, Debug)]
pub struct QuorumConfig {
    pub node_id: i32,
    pub cluster_id: String,
    /// (id, host, port) of every voter's CONTROLLER listener.
    pub voters: Vec<(i32, String, u16)>,
    /// `controller.quorum.election.timeout.ms`
    pub election_timeout_ms: u64,
    /// `__cluster_metadata-0` in the first log dir.
    pub dir: PathBuf,
    pub clock: Clock,
    /// How long a write waits for this node to become a ready leader.
    pub lead_wait: Duration,
    /// When snapshots are taken and how much log is kept behind them.
    pub snapshots: SnapshotSettings,
    /// How the other voters' CONTROLLER listener is reached (TLS, SASL; issue 19).
    pub security: crate::transport::ClientSecurity,
}

/// When the quorum writes a metadata snapshot (Kafka's keys) and what it purges then.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SnapshotSettings {
    /// `metadata.log.max.record.bytes.between.snapshots`: a snapshot once this many batch
    /// bytes were applied since the last one.
    pub max_bytes_between: u64,
    /// `metadata.log.max.snapshot.interval.ms`: a snapshot at least this often while entries
    /// are applied (0: only by bytes).
    pub max_interval_ms: u64,
    /// `skiff.metadata.log.snapshot.keep.entries`: entries kept in the log behind the newest
    /// snapshot (a voter lagging by fewer is sent entries, by more the snapshot).
    pub keep_entries: u64,
}

impl Default for SnapshotSettings {
    fn default() -> Self {
        SnapshotSettings {
            max_bytes_between: 20 * 1024 * 1024,
            max_interval_ms: 3_600_000,
            keep_entries: 1000,
        }
    }
}

impl QuorumConfig {
    /// The voters as `id@host:port,...` in id order (what every voter must agree on).
    pub fn voter_string(&self) -> String {
        voter_string(&self.voters)
    }
}

/// `id@host:port,...` in id order: the voter list every voter and observer must agree on.
pub fn voter_string(voters: &[(i32, String, u16)]) -> String {
    let mut v = voters.to_vec();
    v.sort();
    v.iter()
        .map(|(id, h, p)| format!("{id}@{h}:{p}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// One voter of the metadata quorum (cheap to clone).
#[derive(Clone)]
pub struct Quorum {
    raft: MetaRaft,
    store: KafkaLogStore,
    sm: ImageStateMachine,
    me: Sender,
    voters: BTreeMap<i32, (String, u16)>,
    fatal: MismatchReport,
}

/// Where a voter-list mismatch goes. Until this node has exchanged quorum RPCs with enough
/// peers that agree on the voters to form a majority with it (in this process: a restart
/// starts over), a mismatch is fatal: the node stops with a message naming both lists, since
/// it may be the misconfigured one and must not help elect a second leader. Once a majority
/// agrees with it, a mismatch is refused and logged at ERROR but does not stop it: one
/// misconfigured node that starts (or restarts) later must not take a working quorum down
/// with it; that node stops itself.
#[derive(Clone)]
pub(crate) struct MismatchReport {
    fatal: watch::Sender<Option<String>>,
    agreed: Arc<Mutex<BTreeSet<i32>>>,
    /// Voters needed for a majority, this node included.
    majority: usize,
}

impl MismatchReport {
    fn new(voters: usize) -> MismatchReport {
        MismatchReport {
            fatal: watch::channel(None).0,
            agreed: Arc::new(Mutex::new(BTreeSet::new())),
            majority: voters / 2 + 1,
        }
    }

    /// A peer exchanged an RPC with matching cluster id and voters.
    pub(crate) fn agreed(&self, peer: i32) {
        self.agreed.lock().insert(peer);
    }

    /// Whether a majority (this node and the peers that agreed) shares this node's voters.
    pub(crate) fn joined(&self) -> bool {
        self.agreed.lock().len() + 1 >= self.majority
    }

    pub(crate) fn report(&self, message: String) {
        if self.joined() {
            tracing::error!(%message, "refused a quorum peer whose voter list differs (this node stays: a majority of the voters agrees with it; fix the other node's controller.quorum.voters)");
        } else {
            self.fatal.send_replace(Some(message));
        }
    }
}

impl std::fmt::Debug for Quorum {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Quorum").field("me", &self.me).finish()
    }
}

fn other(e: impl std::fmt::Display) -> io::Error {
    io::Error::other(e.to_string())
}

impl Quorum {
    /// Opens the log, starts the Raft node and writes the voters' membership on an empty log;
    /// waits until the state machine has applied everything the log says is committed, so the
    /// image is the durable one before the broker opens its partitions.
    pub async fn start(cfg: QuorumConfig, sink: ImageSink) -> io::Result<Quorum> {
        let store = KafkaLogStore::open(&cfg.dir, cfg.clock.clone())?;
        let sm = ImageStateMachine::new(sink, store.clone());
        let election = cfg.election_timeout_ms.max(50);
        let config = Config {
            cluster_name: cfg.cluster_id.clone(),
            election_timeout_min: (election / 2).max(25),
            election_timeout_max: election,
            heartbeat_interval: (election / 4).max(10),
            // Snapshots are triggered by `snapshot_trigger` (Kafka's byte and time bounds).
            snapshot_policy: SnapshotPolicy::Never,
            max_in_snapshot_log_to_keep: cfg.snapshots.keep_entries,
            install_snapshot_timeout: election.saturating_mul(10),
            ..Config::default()
        }
        .validate()
        .map_err(other)?;
        let me = Sender {
            cluster_id: cfg.cluster_id.clone(),
            node_id: cfg.node_id,
            voters: cfg.voter_string(),
        };
        let fatal = MismatchReport::new(cfg.voters.len());
        let network = Network {
            me: me.clone(),
            report: fatal.clone(),
            connect_timeout: Duration::from_millis(election),
            security: cfg.security.clone(),
        };
        let raft = Raft::new(
            NodeId(cfg.node_id),
            Arc::new(config),
            network,
            store.clone(),
            sm.clone(),
        )
        .await
        .map_err(other)?;
        let members: BTreeMap<NodeId, BasicNode> = cfg
            .voters
            .iter()
            .map(|(id, h, p)| (NodeId(*id), BasicNode::new(format!("{h}:{p}"))))
            .collect();
        // A log that ever held entries holds the membership written first (or a snapshot
        // does); the metrics show it once the core has loaded the log, which may be after
        // `Raft::new` returns.
        let (_, log_end, _) = store.offsets();
        let stored = if log_end > 0 {
            raft.wait(Some(Duration::from_secs(30)))
                .metrics(
                    |m| m.membership_config.log_id().is_some(),
                    "the stored membership is loaded",
                )
                .await
                .map_err(other)?
                .membership_config
                .clone()
        } else {
            raft.metrics().borrow_watched().membership_config.clone()
        };
        let stored_nodes: BTreeMap<NodeId, BasicNode> = stored
            .membership()
            .nodes()
            .map(|(id, n)| (*id, n.clone()))
            .collect();
        if stored_nodes.is_empty() {
            match raft.initialize(members.clone()).await {
                Ok(()) | Err(RaftError::APIError(InitializeError::NotAllowed(_))) => {}
                Err(e) => return Err(other(format!("cannot initialize the quorum: {e}"))),
            }
        } else if stored_nodes != members {
            let _ = raft.shutdown().await;
            let theirs: Vec<String> = stored_nodes
                .iter()
                .map(|(id, n)| format!("{id}@{}", n.addr))
                .collect();
            return Err(other(format!(
                "controller.quorum.voters={} differs from the voters this node's metadata log was formed with ({}); a static quorum cannot change its voters: restore the original list",
                cfg.voter_string(),
                theirs.join(",")
            )));
        }
        let committed = store.committed_index();
        if let Some(index) = committed {
            raft.wait(Some(Duration::from_secs(60)))
                .applied_index_at_least(Some(index), "the committed metadata is applied")
                .await
                .map_err(other)?;
        }
        tokio::spawn(snapshot_trigger(
            raft.clone(),
            sm.clone(),
            cfg.snapshots,
            cfg.clock.clone(),
        ));
        Ok(Quorum {
            raft,
            store,
            sm,
            me,
            voters: cfg
                .voters
                .iter()
                .map(|(id, h, p)| (*id, (h.clone(), *p)))
                .collect(),
            fatal,
        })
    }

    pub fn node_id(&self) -> i32 {
        self.me.node_id
    }

    /// The current leader (the active controller), if known.
    pub fn leader(&self) -> Option<i32> {
        self.raft
            .metrics()
            .borrow_watched()
            .current_leader
            .map(|n| n.0)
    }

    /// The current Raft term (KRaft's leader epoch).
    pub fn epoch(&self) -> i32 {
        self.raft.metrics().borrow_watched().current_term.0
    }

    /// A voter's CONTROLLER endpoint.
    pub fn voter_endpoint(&self, id: i32) -> Option<(String, u16)> {
        self.voters.get(&id).cloned()
    }

    pub fn voter_ids(&self) -> Vec<i32> {
        self.voters.keys().copied().collect()
    }

    /// The applied end offset of the metadata image, as it moves.
    pub fn applied(&self) -> watch::Receiver<i64> {
        self.sm.applied()
    }

    /// Set (once) when the quorum cannot go on safely (voters disagree): the node must stop.
    pub fn fatal(&self) -> watch::Receiver<Option<String>> {
        self.fatal.fatal.subscribe()
    }

    /// Whether a majority of the voters has agreed with this node's voter list since it
    /// started (see [`MismatchReport`]).
    pub fn joined(&self) -> bool {
        self.fatal.joined()
    }

    /// `(log start, log end, high watermark)` of the Raft log in Kafka offsets.
    pub fn offsets(&self) -> (i64, i64, i64) {
        self.store.offsets()
    }

    /// The metadata log the store writes through.
    pub fn metadata_log(&self, lead_wait: Duration) -> RaftMetadataLog {
        RaftMetadataLog {
            quorum: self.clone(),
            runtime: tokio::runtime::Handle::current(),
            lead_wait,
        }
    }

    /// Serves one private-key request frame (its size prefix removed): the response frame.
    pub async fn handle_rpc(&self, frame: Bytes) -> Option<Bytes> {
        let (key, correlation_id, body) = decode_request(frame)?;
        let answer = match key {
            RAFT_APPEND_KEY => self.serve(&body, |rpc| self.raft.append_entries(rpc)).await,
            RAFT_VOTE_KEY => self.serve(&body, |rpc| self.raft.vote(rpc)).await,
            RAFT_SNAPSHOT_KEY => {
                self.serve(&body, |rpc: SnapshotRpc| {
                    tracing::info!(leader = %rpc.vote.leader_id.voted_for, bytes = rpc.data.len(), "a metadata snapshot from the leader");
                    let snapshot = openraft::storage::Snapshot {
                        meta: rpc.meta,
                        snapshot: rpc.data,
                    };
                    self.raft.install_full_snapshot(rpc.vote, snapshot)
                })
                .await
            }
            RAFT_OBSERVE_KEY => self.serve_observer(&body).await,
            _ => return None,
        };
        Some(encode_response(correlation_id, &answer))
    }

    /// A broker-only node's metadata fetch ([`crate::observer`]): the applied (so committed)
    /// entries from its next index on, after waiting up to its `max_wait_ms` (at most 5 s)
    /// for one when there is none yet.
    async fn serve_observer(&self, body: &[u8]) -> Vec<u8> {
        let answer: Result<ObserveAnswer, Refusal> =
            match serde_json::from_slice::<Envelope<ObserveRequest>>(body) {
                Err(e) => Err(Refusal::Raft(format!("undecodable observer request: {e}"))),
                Ok(env) => match self.check_sender(&env.from) {
                    Err(r) => Err(r),
                    Ok(()) => self.observe(env.rpc).await,
                },
            };
        serde_json::to_vec(&answer).unwrap_or_else(|e| {
            format!("{{\"Err\":{{\"Raft\":\"cannot encode the answer: {e}\"}}}}").into_bytes()
        })
    }

    async fn observe(&self, req: ObserveRequest) -> Result<ObserveAnswer, Refusal> {
        let next = req.next_index;
        let has_next = move |m: &openraft::RaftMetrics<SkiffRaft>| {
            m.last_applied.is_some_and(|l| l.index >= next)
        };
        if req.max_wait_ms > 0 && !has_next(&self.raft.metrics().borrow_watched()) {
            let wait = Duration::from_millis(req.max_wait_ms.min(5000));
            let _ = self
                .raft
                .wait(Some(wait))
                .metrics(has_next, "an entry for an observer")
                .await;
        }
        let (leader, epoch, applied) = {
            let m = self.raft.metrics().borrow_watched().clone();
            (
                m.current_leader.map(|l| l.0),
                m.current_term.0,
                m.last_applied.map(|l| l.index),
            )
        };
        let mut answer = ObserveAnswer {
            leader,
            epoch,
            applied_index: applied,
            entries: Vec::new(),
            snapshot: None,
        };
        let Some(last) = applied.filter(|a| *a >= next) else {
            return Ok(answer);
        };
        if next < self.store.start_index() {
            // The entries it needs were purged: it gets the newest snapshot instead.
            let dir = self.store.dir();
            let latest = tokio::task::spawn_blocking(move || crate::checkpoint::latest(&dir))
                .await
                .map_err(|e| Refusal::Raft(e.to_string()))?
                .map_err(|e| Refusal::Raft(format!("reading the metadata snapshot: {e}")))?;
            let Some((_, bytes)) = latest else {
                return Err(Refusal::Raft(format!(
                    "metadata entry {next} was purged and no snapshot covers it"
                )));
            };
            answer.snapshot = Some(bytes);
            return Ok(answer);
        }
        let to =
            last.min(next.saturating_add(req.max_entries.clamp(1, OBSERVE_MAX_ENTRIES) as u64 - 1));
        let store = self.store.clone();
        let entries = tokio::task::spawn_blocking(move || store.read_range(&(next..=to)))
            .await
            .map_err(|e| Refusal::Raft(e.to_string()))?
            .map_err(|e| Refusal::Raft(format!("reading the metadata log: {e}")))?;
        for e in entries {
            let index = e.log_id.index;
            let Some(base_offset) = self.store.base_offset_of(index) else {
                break;
            };
            let records = match e.payload {
                openraft::EntryPayload::Normal(op) => Some(op.0),
                _ => None,
            };
            answer.entries.push(ObservedEntry {
                index,
                base_offset,
                records,
            });
        }
        Ok(answer)
    }

    async fn serve<Req, Resp, E, F, Fut>(&self, body: &[u8], call: F) -> Vec<u8>
    where
        Req: serde::de::DeserializeOwned,
        Resp: serde::Serialize,
        E: std::fmt::Display,
        F: FnOnce(Req) -> Fut,
        Fut: Future<Output = Result<Resp, E>>,
    {
        let answer: Result<Resp, Refusal> = match serde_json::from_slice::<Envelope<Req>>(body) {
            Err(e) => Err(Refusal::Raft(format!("undecodable quorum request: {e}"))),
            Ok(env) => match self.check(&env.from) {
                Err(r) => Err(r),
                Ok(()) => call(env.rpc)
                    .await
                    .map_err(|e| Refusal::Raft(e.to_string())),
            },
        };
        serde_json::to_vec(&answer).unwrap_or_else(|e| {
            format!("{{\"Err\":{{\"Raft\":\"cannot encode the answer: {e}\"}}}}").into_bytes()
        })
    }

    /// A voter's request: the sender checked, and counted as agreeing.
    fn check(&self, from: &Sender) -> Result<(), Refusal> {
        self.check_sender(from)?;
        if from.node_id != self.me.node_id {
            self.fatal.agreed(from.node_id);
        }
        Ok(())
    }

    /// Same cluster id and the same voter list, or a refusal (a voter-list mismatch is also
    /// reported: see [`MismatchReport`]).
    fn check_sender(&self, from: &Sender) -> Result<(), Refusal> {
        if from.cluster_id != self.me.cluster_id {
            tracing::warn!(node = from.node_id, theirs = %from.cluster_id, ours = %self.me.cluster_id, "refused a quorum request from another cluster");
            return Err(Refusal::InconsistentClusterId {
                ours: self.me.cluster_id.clone(),
                theirs: from.cluster_id.clone(),
            });
        }
        if from.voters != self.me.voters {
            let r = Refusal::VotersMismatch {
                ours: self.me.voters.clone(),
                theirs: from.voters.clone(),
            };
            self.fatal
                .report(format!("node {} sent a quorum request: {r}", from.node_id));
            return Err(r);
        }
        Ok(())
    }

    /// Stops the Raft node and closes the log.
    pub async fn shutdown(&self) -> io::Result<()> {
        self.raft.shutdown().await.map_err(other)?;
        self.store.close()
    }

    /// Waits (up to `wait`) until this node leads with its term's first entry applied; the
    /// term. `Err(leader)` when it does not.
    async fn ready(&self, wait: Duration) -> Result<i32, Option<i32>> {
        let ready = |m: &openraft::RaftMetrics<SkiffRaft>| {
            m.state == ServerState::Leader
                && m.last_applied
                    .is_some_and(|l| l.leader_id.term == m.current_term)
        };
        let me = self.me.node_id;
        {
            let m = self.raft.metrics().borrow_watched().clone();
            if ready(&m) {
                return Ok(m.current_term.0);
            }
            if let Some(l) = m.current_leader
                && l.0 != me
            {
                return Err(Some(l.0));
            }
        }
        match self
            .raft
            .wait(Some(wait))
            .metrics(
                move |m| ready(m) || m.current_leader.is_some_and(|l| l.0 != me),
                "leading or led",
            )
            .await
        {
            Ok(m) if ready(&m) => Ok(m.current_term.0),
            Ok(m) => Err(m.current_leader.map(|l| l.0)),
            Err(_) => Err(None),
        }
    }
}

/// Takes a snapshot when `settings` say one is due: once the applied batch bytes since the
/// last one reach `max_bytes_between`, or `max_interval_ms` after the last one while entries
/// were applied since (Kafka's `metadata.log.max.record.bytes.between.snapshots` and
/// `metadata.log.max.snapshot.interval.ms`). Ends when the Raft node shuts down.
async fn snapshot_trigger(
    raft: MetaRaft,
    sm: ImageStateMachine,
    settings: SnapshotSettings,
    clock: Clock,
) {
    let mut applied = sm.applied();
    let interval = i64::try_from(settings.max_interval_ms).unwrap_or(i64::MAX);
    let tick = Duration::from_secs(1);
    let mut last = clock.now_ms();
    loop {
        tokio::select! {
            r = applied.changed() => if r.is_err() { return },
            _ = tokio::time::sleep(tick) => {}
        }
        if raft.metrics().borrow_watched().state == ServerState::Shutdown {
            return;
        }
        let (bytes, entries) = sm.since_snapshot();
        let by_time = interval > 0 && clock.now_ms().saturating_sub(last) >= interval;
        if entries == 0 || !(bytes >= settings.max_bytes_between || by_time) {
            continue;
        }
        let Some(index) = sm.last_applied_index() else {
            continue;
        };
        if raft.trigger().snapshot().await.is_err() {
            return;
        }
        last = clock.now_ms();
        // One at a time: wait for it (or give up after a while and look again).
        let _ = raft
            .wait(Some(Duration::from_secs(30)))
            .metrics(
                move |m| m.snapshot.is_some_and(|s| s.index >= index),
                "the metadata snapshot is built",
            )
            .await;
    }
}

/// [`MetadataLog`] over the quorum (see the module docs): proposals block the calling thread
/// (a tokio worker is handed off with `block_in_place`) until committed and applied.
#[derive(Debug)]
pub struct RaftMetadataLog {
    quorum: Quorum,
    runtime: tokio::runtime::Handle,
    lead_wait: Duration,
}

impl RaftMetadataLog {
    fn block<F: Future>(&self, f: F) -> Result<F::Output, MetadataError> {
        match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
            Ok(tokio::runtime::RuntimeFlavor::CurrentThread) => Err(MetadataError::Internal(
                "the metadata quorum cannot be written from a current-thread runtime".into(),
            )),
            Ok(_) => Ok(tokio::task::block_in_place(|| self.runtime.block_on(f))),
            Err(_) => Ok(self.runtime.block_on(f)),
        }
    }
}

impl MetadataLog for RaftMetadataLog {
    fn propose(&mut self, records: &[Record], _now_ms: i64) -> Result<Committed, MetadataError> {
        let mut values: Vec<Bytes> = Vec::with_capacity(records.len());
        for r in records {
            values.push(r.encode()?);
        }
        let n = values.len() as i64;
        let raft = self.quorum.raft.clone();
        let written = self.block(async move { raft.client_write(Op(values)).await })?;
        match written {
            Ok(resp) => {
                let base = self
                    .quorum
                    .store
                    .base_offset_of(resp.log_id.index)
                    .unwrap_or(-1);
                Ok(Committed {
                    base_offset: base,
                    end_offset: base + n,
                })
            }
            Err(RaftError::APIError(ClientWriteError::ForwardToLeader(_))) => {
                Err(MetadataError::NotController)
            }
            Err(e) => Err(MetadataError::Storage(format!(
                "the metadata quorum failed: {e}"
            ))),
        }
    }

    fn replay(&mut self, _apply: &mut dyn FnMut(Record)) -> Result<i64, MetadataError> {
        // The state machine replays the log into the image sink.
        Ok(self.quorum.store.offsets().2)
    }

    fn close(&mut self, _now_ms: i64) -> Result<(), MetadataError> {
        let q = self.quorum.clone();
        self.block(async move { q.shutdown().await })?
            .map_err(|e| MetadataError::Storage(e.to_string()))
    }

    fn quorum_state(&self) -> QuorumState {
        let (_, leo, hw) = self.quorum.store.offsets();
        QuorumState {
            leader_epoch: self.quorum.epoch(),
            high_watermark: hw,
            log_end_offset: leo,
        }
    }

    fn ready_to_lead(&mut self) -> Result<i32, MetadataError> {
        let q = self.quorum.clone();
        let wait = self.lead_wait;
        match self.block(async move { q.ready(wait).await })? {
            Ok(term) => Ok(term),
            Err(_) => Err(MetadataError::NotController),
        }
    }

    fn applies_through_sink(&self) -> bool {
        true
    }

    fn blocking_section(&self) -> BlockingSection {
        hand_off_worker
    }
}

/// Runs `f` with this tokio worker handed off (`block_in_place`) when called on a
/// multi-thread runtime's worker, so the tasks queued on it (openraft's among them) run
/// elsewhere while `f` blocks; inline anywhere else.
fn hand_off_worker(f: &mut dyn FnMut()) {
    match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(f),
        _ => f(),
    }
}

#[cfg(test)]
mod tests {
    use super::MismatchReport;

    #[test]
    fn a_mismatch_is_fatal_until_a_majority_agrees() {
        // (voters, peers that agreed before the mismatch, fatal?)
        let table: &[(usize, &[i32], bool)] = &[
            (1, &[], false), // a single voter is its own majority
            (3, &[], true),
            (3, &[2], false),
            (3, &[2, 2], false),
            (5, &[2], true),
            (5, &[2, 3], false),
        ];
        for (voters, agreed, fatal) in table {
            let r = MismatchReport::new(*voters);
            let rx = r.fatal.subscribe();
            for p in *agreed {
                r.agreed(*p);
            }
            r.report("voters differ".into());
            assert_eq!(
                rx.borrow().is_some(),
                *fatal,
                "{voters} voters, agreed {agreed:?}"
            );
            assert_eq!(r.joined(), !*fatal);
        }
    }
}
