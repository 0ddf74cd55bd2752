//! A node of a cluster (issue 16): the shell around the metadata quorum.
//!
//! Mental model: with several voters (`ServerSettings::quorum`) the metadata store writes
//! through the Raft quorum (`skiff_raft::Quorum`) and its image is fed by the quorum's state
//! machine on every node. Around it run four tasks:
//! - **the broker lifecycle**: register with the active controller at every start (fresh
//!   incarnation id, this node's broker listeners), then heartbeat every
//!   `broker.heartbeat.interval.ms` with the applied metadata offset; NOT_CONTROLLER or a
//!   lost connection sends the next attempt to whoever leads then, a stale epoch or an
//!   unknown broker re-registers. Kafka's BrokerRegistration / BrokerHeartbeat over the
//!   inter-node client (to the leader's CONTROLLER listener), or straight into the store
//!   when this node leads;
//! - **the controller timer**: while this node leads, fences brokers whose session expired,
//!   and (issue 17) runs the periodic elections: preferred-leader balancing
//!   (`auto.leader.rebalance.enable`, every `leader.imbalance.check.interval.seconds`) and the
//!   unclean check for topics with `unclean.leader.election.enable`;
//! - **the partition reconciler**: whenever the applied image moves, hosts the partitions it
//!   assigns here and drops those of deleted topics (logs follow the image, never requests);
//! - a forwarder for admin requests lives in [`forward`] (handlers call it when this node is
//!   not the active controller).
//!
//! Pure parts: none worth a table (the decisions are the controller's); the loops only carry
//! answers back and forth, each wait bounded.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use skiff_metadata::{ImageSink, MetadataStore};
use skiff_protocol::{
    BrokerHeartbeatRequest, BrokerRegistrationRequest,
    BrokerRegistrationRequestListener as Listener, RequestBody, ResponseBody,
};
use skiff_raft::{Member, Observer, ObserverConfig, Quorum, QuorumConfig};
use skiff_types::ErrorCode;
use uuid::Uuid;

use crate::broker::Broker;
use crate::error::ServerError;
use crate::node_client::NodeClientError;
use crate::server::BoundListener;
use crate::settings::{QuorumSettings, ServerSettings};

/// Opens the quorum over `metadata_dir` and the store writing through it (blocking: called
/// from `Broker::open` on the blocking pool).
pub fn open_quorum(
    settings: &ServerSettings,
    q: &QuorumSettings,
    metadata_dir: &Path,
) -> Result<(MetadataStore, Quorum), ServerError> {
    let log_dir = metadata_dir.parent().unwrap_or_else(|| Path::new("."));
    let cluster_id = skiff_metadata::first_log_dir_cluster_id(log_dir, settings.node_id, true)?;
    let clock = settings.log_manager.clock.clone();
    let sink = ImageSink::new();
    let lead_wait = Duration::from_millis(q.election_timeout_ms.saturating_mul(3).max(1000));
    let cfg = QuorumConfig {
        node_id: settings.node_id,
        cluster_id: cluster_id.clone(),
        voters: q.voters.clone(),
        election_timeout_ms: q.election_timeout_ms,
        dir: metadata_dir.to_path_buf(),
        clock: clock.clone(),
        lead_wait,
        snapshots: q.snapshots,
        security: client_security(&settings.security.controller),
    };
    let voters = cfg.voter_string();
    let quorum = tokio::runtime::Handle::current()
        .block_on(Quorum::start(cfg, sink.clone()))
        .map_err(|e| match e.raw_os_error() {
            // An I/O error names the metadata log dir (a refusal already says what is wrong).
            Some(_) => ServerError::Quorum(format!("{}: {e}", metadata_dir.display())),
            None => ServerError::Quorum(e.to_string()),
        })?;
    tracing::info!(%voters, node = settings.node_id, "metadata quorum started");
    let store = MetadataStore::open_quorum(
        Box::new(quorum.metadata_log(lead_wait)),
        &sink,
        cluster_id,
        settings.node_id,
        clock,
        i64::try_from(q.session_timeout_ms).unwrap_or(i64::MAX),
    );
    Ok((store, quorum))
}

/// `process.roles=broker,controller` and the only voter: a quorum of one that depends on no
/// other node.
pub fn is_single_combined_voter(q: &QuorumSettings) -> bool {
    q.voter && q.broker && q.voters.len() == 1
}

/// Whether a single combined voter (`process.roles=broker,controller`, the only voter) keeps
/// the local metadata log an earlier Skiff wrote in `metadata_dir` instead of the Raft quorum:
/// until broker-only nodes could follow one, such a node ran without Raft. Its log (batches,
/// but none of the Raft state files) is not a Raft log, so it stays local, and broker-only
/// nodes cannot follow it. A fresh dir, or one the Raft log store wrote, runs the quorum.
pub fn keeps_local_metadata_log(q: &QuorumSettings, metadata_dir: &Path) -> bool {
    use skiff_raft::state_files::{COMMITTED_FILE, LOG_START_FILE, QUORUM_STATE_FILE};
    if !is_single_combined_voter(q) {
        return false;
    }
    if [QUORUM_STATE_FILE, COMMITTED_FILE, LOG_START_FILE]
        .iter()
        .any(|f| metadata_dir.join(f).exists())
    {
        return false;
    }
    let Ok(entries) = std::fs::read_dir(metadata_dir) else {
        return false;
    };
    entries.filter_map(Result::ok).any(|e| {
        e.path().extension().is_some_and(|x| x == "log") && e.metadata().is_ok_and(|m| m.len() > 0)
    })
}

/// A broker-only node: follows the voters' committed log as an observer (blocking until it
/// has caught up, as a KRaft broker does before it registers) and a store that never decides.
pub fn open_observer(
    settings: &ServerSettings,
    q: &QuorumSettings,
    metadata_dir: &Path,
) -> Result<(MetadataStore, Observer), ServerError> {
    let log_dir = metadata_dir.parent().unwrap_or_else(|| Path::new("."));
    let cluster_id = skiff_metadata::first_log_dir_cluster_id(log_dir, settings.node_id, true)?;
    let sink = ImageSink::new();
    let voter_string = skiff_raft::quorum::voter_string(&q.voters);
    let observer = Observer::start(
        ObserverConfig {
            node_id: settings.node_id,
            cluster_id: cluster_id.clone(),
            voters: q.voters.clone(),
            request_timeout: request_timeout(q),
            security: client_security(&settings.security.controller),
        },
        sink.clone(),
    );
    let wait = Duration::from_millis(q.session_timeout_ms.saturating_mul(10).max(60_000));
    tracing::info!(voters = %voter_string, "broker-only node: fetching the metadata log from the voters");
    if let Err(e) = tokio::runtime::Handle::current().block_on(observer.caught_up(wait)) {
        observer.shutdown();
        return Err(ServerError::Quorum(e));
    }
    tracing::info!(applied = sink.applied_end(), "metadata caught up");
    let store = MetadataStore::open_quorum(
        Box::new(observer.metadata_log()),
        &sink,
        cluster_id,
        settings.node_id,
        settings.log_manager.clock.clone(),
        i64::try_from(q.session_timeout_ms).unwrap_or(i64::MAX),
    );
    Ok((store, observer))
}

pub use peers::{Peers, client_security};

fn request_timeout(q: &QuorumSettings) -> Duration {
    Duration::from_millis(q.session_timeout_ms.clamp(1000, 30_000))
}

/// The active controller's CONTROLLER endpoint (`host:port`), if a leader is known and it
/// is not this node.
pub fn controller_addr(broker: &Broker) -> Option<String> {
    let q = broker.quorum.as_ref()?;
    let leader = q.leader()?;
    if leader == q.node_id() {
        return None;
    }
    let (host, port) = q.voter_endpoint(leader)?;
    Some(format!("{host}:{port}"))
}

/// Starts the cluster tasks (see the module docs); `listeners` as bound.
pub fn start(broker: &Arc<Broker>, listeners: &[BoundListener]) {
    let (Some(quorum), Some(q)) = (broker.quorum.clone(), broker.settings.quorum.clone()) else {
        return;
    };
    let controller_names: Vec<String> = broker
        .settings
        .listeners
        .iter()
        .filter(|l| l.controller)
        .map(|l| l.name.clone())
        .collect();
    let endpoints: Vec<Listener> = listeners
        .iter()
        .filter(|l| !controller_names.contains(&l.name))
        .map(|l| Listener {
            name: l.name.clone(),
            host: l.advertised_host.clone(),
            port: l.advertised_port,
            security_protocol: 0,
        })
        .collect();
    tokio::spawn(reconcile_loop(Arc::clone(broker), quorum.clone()));
    if q.broker {
        crate::replica::fetcher::start(broker, q.fetcher.clone());
        crate::replica::isr::start(broker, q.fetcher.lag_time_max_ms);
        tokio::spawn(lifecycle(
            Arc::clone(broker),
            quorum.clone(),
            q.clone(),
            endpoints,
        ));
    }
    if let Member::Voter(voter) = quorum {
        tokio::spawn(controller_timer(Arc::clone(broker), voter, q));
    }
}

/// Waits (at most `within`) until a single combined voter serves as a broker: registered with
/// itself and unfenced, its partitions in their roles. It depends on no other node, so its
/// listeners become ready serving, as a node with a local metadata log does (voters of a
/// larger quorum cannot wait: they elect only once their peers are up). Returns at once on
/// any other node.
pub async fn until_single_voter_serves(broker: &Broker, within: Duration) {
    if !broker
        .settings
        .quorum
        .as_ref()
        .is_some_and(is_single_combined_voter)
    {
        return;
    }
    let serving = async {
        while !broker.replicas.roles_open() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    if tokio::time::timeout(within, serving).await.is_err() {
        tracing::warn!(
            waited_ms = within.as_millis(),
            "the single voter has not registered as a broker yet; serving anyway"
        );
    }
}

/// At a clean shutdown of a single combined voter (after the lifecycle task stopped): fences
/// its own registration through its own controller (Kafka's way out), so the next start's
/// registration is not refused as a duplicate until the old session expires. Bounded; a
/// failure only costs that wait.
pub async fn fence_self_at_shutdown(broker: &Arc<Broker>) {
    let epoch = *broker.producer_ids.registered_epoch.lock();
    if let Some(epoch) = epoch {
        fence_own_registration(broker, epoch, "for the shutdown").await;
    }
}

/// A single combined voter's registration refused as a duplicate: the registration in the
/// image is this node's earlier incarnation (killed without its shutdown fence; this process
/// holds the node's dirs and is the only voter), so it fences it instead of waiting for its
/// session to expire. Whether it did (then register again now).
async fn fence_earlier_incarnation(broker: &Arc<Broker>) -> bool {
    let earlier = broker
        .image()
        .broker(broker.node_id())
        .filter(|b| !b.fenced)
        .map(|b| b.epoch);
    match earlier {
        Some(epoch) => fence_own_registration(broker, epoch, "(an earlier incarnation)").await,
        None => false,
    }
}

/// On a single combined voter that leads: a BrokerHeartbeat to itself for registration
/// `epoch` with `want_fence` and `want_shut_down` (fenced at once); whether it was answered
/// without error.
async fn fence_own_registration(broker: &Arc<Broker>, epoch: i64, why: &str) -> bool {
    let single = broker
        .settings
        .quorum
        .as_ref()
        .is_some_and(is_single_combined_voter);
    let Some(quorum) = broker.quorum.as_ref().filter(|_| single) else {
        return false;
    };
    if !is_controller(broker) {
        return false;
    }
    let body: RequestBody = BrokerHeartbeatRequest {
        broker_id: broker.node_id(),
        broker_epoch: epoch,
        current_metadata_offset: *quorum.applied().borrow(),
        want_fence: true,
        want_shut_down: true,
        ..BrokerHeartbeatRequest::default()
    }
    .into();
    let version = body.api_key().supported_versions().1;
    match tokio::time::timeout(Duration::from_secs(5), local_call(broker, version, body)).await {
        Ok(ResponseBody::BrokerHeartbeat(r)) if r.error_code == 0 => {
            tracing::info!(broker_epoch = epoch, "fenced this broker {why}");
            true
        }
        Ok(other) => {
            tracing::warn!(?other, "fencing this broker {why} failed");
            false
        }
        Err(_) => {
            tracing::warn!("fencing this broker {why} timed out");
            false
        }
    }
}

async fn reconcile_loop(broker: Arc<Broker>, quorum: Member) {
    let mut applied = quorum.applied();
    let mut shutdown = broker.shutdown_signal();
    loop {
        let b = Arc::clone(&broker);
        let _ = tokio::task::spawn_blocking(move || {
            let image = b.image();
            let registered = *b.producer_ids.registered_epoch.lock();
            b.replicas.open_roles_when_registered(&image, registered);
            b.replicas.reconcile(&image, &|t| b.log_config(t));
            b.groups.reconcile(&b, &image);
            b.txns.reconcile(&b, &image);
        })
        .await;
        tokio::select! {
            r = applied.changed() => if r.is_err() { return },
            _ = shutdown.changed() => return,
        }
    }
}

/// Registration, then heartbeats (see the module docs).
async fn lifecycle(
    broker: Arc<Broker>,
    quorum: Member,
    q: QuorumSettings,
    endpoints: Vec<Listener>,
) {
    let peers = broker.peers.sibling();
    let interval = Duration::from_millis(q.heartbeat_interval_ms.max(10));
    let retry = Duration::from_millis((q.heartbeat_interval_ms / 4).clamp(10, 500));
    let incarnation_id = Uuid::new_v4();
    let mut shutdown = broker.shutdown_signal();
    let mut epoch: Option<i64> = None;
    loop {
        if broker.is_shutting_down() {
            return;
        }
        let body: RequestBody = match epoch {
            None => BrokerRegistrationRequest {
                broker_id: broker.node_id(),
                cluster_id: broker.cluster_id().to_string(),
                incarnation_id,
                listeners: endpoints.clone(),
                rack: None,
                ..BrokerRegistrationRequest::default()
            }
            .into(),
            Some(e) => BrokerHeartbeatRequest {
                broker_id: broker.node_id(),
                broker_epoch: e,
                current_metadata_offset: *quorum.applied().borrow(),
                want_fence: false,
                want_shut_down: false,
                ..BrokerHeartbeatRequest::default()
            }
            .into(),
        };
        let wait = match call_controller_with(&broker, &peers, &q, body).await {
            Ok(ResponseBody::BrokerRegistration(r)) => match ErrorCode::from_code(r.error_code) {
                Some(ErrorCode::None) => {
                    tracing::info!(
                        broker_epoch = r.broker_epoch,
                        "registered with the controller"
                    );
                    epoch = Some(r.broker_epoch);
                    *broker.producer_ids.registered_epoch.lock() = epoch;
                    Duration::ZERO
                }
                // Not at once: a node with the same id elsewhere must not make this spin.
                Some(ErrorCode::DuplicateBrokerRegistration)
                    if fence_earlier_incarnation(&broker).await =>
                {
                    retry
                }
                code => {
                    tracing::warn!(?code, "broker registration refused; retrying");
                    retry.max(interval / 2)
                }
            },
            Ok(ResponseBody::BrokerHeartbeat(r)) => match ErrorCode::from_code(r.error_code) {
                Some(ErrorCode::None) => {
                    if !broker.replicas.roles_open() {
                        // Unfenced by now, perhaps before the image woke the reconciler.
                        let b = Arc::clone(&broker);
                        let _ = tokio::task::spawn_blocking(move || {
                            let image = b.image();
                            if b.replicas.open_roles_when_registered(&image, epoch) {
                                b.replicas.reconcile(&image, &|t| b.log_config(t));
                            }
                        })
                        .await;
                    }
                    interval
                }
                Some(ErrorCode::StaleBrokerEpoch | ErrorCode::BrokerIdNotRegistered) => {
                    tracing::warn!(code = r.error_code, "heartbeat refused; registering again");
                    epoch = None;
                    *broker.producer_ids.registered_epoch.lock() = None;
                    retry
                }
                _ => retry,
            },
            Ok(other) => {
                tracing::warn!(api = ?other.api_key(), "unexpected answer from the controller");
                retry
            }
            Err(e) => {
                tracing::debug!(error = %e, "controller not reachable; retrying");
                retry
            }
        };
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = shutdown.changed() => {}
        }
    }
}

/// Why a call to the controller failed.
#[derive(Debug, thiserror::Error)]
pub enum ForwardError {
    #[error("no controller is known yet")]
    NoController,
    #[error(transparent)]
    Client(#[from] NodeClientError),
}

/// Sends `body` to the active controller: the leader's CONTROLLER listener, or this node's
/// own handlers (through the store) when it leads.
pub(crate) async fn call_controller(
    broker: &Arc<Broker>,
    body: RequestBody,
) -> Result<ResponseBody, ForwardError> {
    let q = broker
        .settings
        .quorum
        .as_ref()
        .ok_or(ForwardError::NoController)?;
    call_controller_with(broker, &broker.peers, q, body).await
}

async fn call_controller_with(
    broker: &Arc<Broker>,
    peers: &Peers,
    q: &QuorumSettings,
    body: RequestBody,
) -> Result<ResponseBody, ForwardError> {
    let quorum = broker.quorum.as_ref().ok_or(ForwardError::NoController)?;
    let leader = quorum.leader().ok_or(ForwardError::NoController)?;
    if leader == quorum.node_id() {
        let version = body.api_key().supported_versions().1;
        return Ok(local_call(broker, version, body).await);
    }
    let (host, port) = quorum
        .voter_endpoint(leader)
        .ok_or(ForwardError::NoController)?;
    let client = peers.client(&format!("{host}:{port}"), request_timeout(q));
    Ok(client.call(body).await?)
}

/// The listener name of requests a node hands to its own handlers (never forwarded again).
pub const LOCAL_LISTENER: &str = "SKIFF-LOCAL";

/// A request this node answers itself, as if it had arrived on its controller listener.
async fn local_call(broker: &Arc<Broker>, version: i16, body: RequestBody) -> ResponseBody {
    let listener = crate::handlers::ListenerInfo {
        name: LOCAL_LISTENER.into(),
        advertised_host: String::new(),
        advertised_port: 0,
        controller: true,
    };
    let peer = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    let reply = {
        let ctx = crate::handlers::RequestContext {
            broker,
            listener: &listener,
            peer,
            api_version: version,
            correlation_id: 0,
            principal: &skiff_auth::principal::KafkaPrincipal::anonymous(),
            client_id: None,
        };
        crate::handlers::dispatch(&ctx, body)
    };
    match reply {
        crate::handlers::Reply::Now(b) => b,
        crate::handlers::Reply::Later(f) | crate::handlers::Reply::Hold(f) => f.await,
        other => {
            tracing::error!(?other, "a controller RPC gave no answer");
            ResponseBody::BrokerHeartbeat(skiff_protocol::BrokerHeartbeatResponse {
                error_code: ErrorCode::UnknownServerError as i16,
                ..Default::default()
            })
        }
    }
}

/// The active controller's periodic work (voters only): fences brokers whose session
/// expired, and runs the elections of [`ElectionTimers`]. The store elects with this node's
/// `unclean.leader.election.enable` (set once here, before the first tick).
async fn controller_timer(broker: Arc<Broker>, quorum: Quorum, q: QuorumSettings) {
    let period = Duration::from_millis((q.session_timeout_ms / 8).clamp(50, 1000));
    broker
        .metadata
        .set_election_config(skiff_metadata::ElectionConfig {
            node_id: Some(quorum.node_id()),
            unclean_leader_election_enable: q.elections.unclean_leader_election_enable,
        });
    let mut elections = ElectionTimers::new(&q.elections);
    let mut shutdown = broker.shutdown_signal();
    loop {
        tokio::select! {
            _ = tokio::time::sleep(period) => {}
            _ = shutdown.changed() => return,
        }
        if quorum.leader() != Some(quorum.node_id()) {
            elections.resign();
            continue;
        }
        let b = Arc::clone(&broker);
        match tokio::task::spawn_blocking(move || b.metadata.fence_expired()).await {
            Ok(Ok(Some(id))) => tracing::warn!(broker = id, "broker session expired: fenced"),
            Ok(Ok(None)) | Ok(Err(skiff_metadata::MetadataError::NotController)) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "fencing expired brokers failed"),
            Err(e) => tracing::error!(error = %e, "controller timer task failed"),
        }
        elections.tick(&broker).await;
    }
}

/// Kafka's `unclean.leader.election.interval.ms` (an internal key, not settable here).
const UNCLEAN_SWEEP_INTERVAL: Duration = Duration::from_secs(300);

/// When the active controller next balances leaders (`auto.leader.rebalance.enable`, every
/// `leader.imbalance.check.interval.seconds`) and sweeps leaderless partitions for unclean
/// elections (every 5 min), as Kafka's `QuorumController` schedules
/// `maybeBalancePartitionLeaders` / `maybeElectUncleanLeaders`: the first run one interval
/// after this node became active, the next one interval after a run, or at the next tick when
/// a run stopped at its bound. Losing leadership forgets both deadlines.
struct ElectionTimers {
    balance_every: Option<Duration>,
    next_balance: Option<std::time::Instant>,
    next_sweep: Option<std::time::Instant>,
}

impl ElectionTimers {
    fn new(s: &crate::settings::ElectionSettings) -> Self {
        ElectionTimers {
            balance_every: s
                .auto_leader_rebalance_enable
                .then(|| Duration::from_millis(s.leader_imbalance_check_interval_ms.max(1000))),
            next_balance: None,
            next_sweep: None,
        }
    }

    fn resign(&mut self) {
        self.next_balance = None;
        self.next_sweep = None;
    }

    /// One tick while this node is the active controller: the runs that are due.
    async fn tick(&mut self, broker: &Arc<Broker>) {
        let now = broker.clock.now();
        if let Some(every) = self.balance_every {
            let due = *self.next_balance.get_or_insert(now + every);
            if now >= due {
                let b = Arc::clone(broker);
                let run = election_run("balancing leaders", move || {
                    b.metadata.balance_partition_leaders()
                })
                .await;
                self.next_balance = Some(if run { now } else { now + every });
            }
        }
        let due = *self.next_sweep.get_or_insert(now + UNCLEAN_SWEEP_INTERVAL);
        if now >= due {
            let b = Arc::clone(broker);
            let run =
                election_run("unclean sweep", move || b.metadata.elect_unclean_leaders()).await;
            self.next_sweep = Some(if run {
                now
            } else {
                now + UNCLEAN_SWEEP_INTERVAL
            });
        }
    }
}

/// Runs one bounded election pass on the blocking pool; whether it asks to run again now.
async fn election_run(
    what: &'static str,
    f: impl FnOnce() -> Result<skiff_metadata::ElectionRun, skiff_metadata::MetadataError>
    + Send
    + 'static,
) -> bool {
    match tokio::task::spawn_blocking(f).await {
        Ok(Ok(run)) => {
            if run.elected > 0 {
                tracing::info!(
                    elected = run.elected,
                    more = run.more,
                    "{what}: leaders elected"
                );
            }
            run.more
        }
        Ok(Err(skiff_metadata::MetadataError::NotController)) => false,
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "{what} failed");
            false
        }
        Err(e) => {
            tracing::error!(error = %e, "{what} task failed");
            false
        }
    }
}

/// Whether this node may decide metadata now: always on one node; in a cluster, when it
/// leads the quorum.
pub fn is_controller(broker: &Broker) -> bool {
    broker
        .quorum
        .as_ref()
        .is_none_or(|q| q.leader() == Some(q.node_id()))
}

/// Admin requests a node that is not the active controller forwards to it (Kafka forwards
/// them too, KIP-590), answered with the controller's response once committed.
pub fn is_forwarded(key: skiff_protocol::ApiKey) -> bool {
    use skiff_protocol::ApiKey as K;
    matches!(
        key,
        K::CreateTopics
            | K::DeleteTopics
            | K::CreatePartitions
            | K::AlterConfigs
            | K::IncrementalAlterConfigs
            | K::ElectLeaders
            | K::CreateAcls
            | K::DeleteAcls
            | K::AlterUserScramCredentials
    )
}

/// Forwards `body` (at the client's `version`) to the active controller; `None` when no
/// other node is known to lead (the caller handles it here, which answers NOT_CONTROLLER if
/// this node does not lead by then).
#[allow(clippy::result_large_err)] // the request goes back to the caller unchanged
///
/// A client's request (`client`: its principal, address and client id) goes inside an
/// Envelope so the controller authorizes the client, not this node (`crate::envelope`);
/// this node's own requests (`None`) go as they are.
pub fn forward(
    broker: &Arc<Broker>,
    version: i16,
    body: RequestBody,
    client: Option<(
        &skiff_auth::principal::KafkaPrincipal,
        std::net::IpAddr,
        Option<&str>,
    )>,
) -> Result<crate::handlers::LaterResponse, RequestBody> {
    let (Some(addr), Some(q)) = (controller_addr(broker), broker.settings.quorum.as_ref()) else {
        return Err(body);
    };
    let client_node = broker.peers.client(&addr, request_timeout(q));
    let key = body.api_key();
    let envelope = match client {
        Some((principal, ip, client_id)) => {
            match crate::envelope::wrap(principal, ip, client_id, version, &body) {
                Ok(e) => Some(e),
                Err(e) => {
                    tracing::error!(api = key.name(), error = %e, "cannot wrap a forwarded request");
                    return Err(body);
                }
            }
        }
        None => None,
    };
    let b = Arc::clone(broker);
    Ok(Box::pin(async move {
        let answer = match envelope {
            Some(env) => match client_node.call_at(0, env).await {
                Ok(ResponseBody::Envelope(r)) => crate::envelope::unwrap_response(key, version, r)
                    .map_err(|e| crate::node_client::NodeClientError::Disconnected {
                        addr: addr.clone(),
                        reason: e,
                    }),
                Ok(_) => Err(crate::node_client::NodeClientError::Disconnected {
                    addr: addr.clone(),
                    reason: "not an Envelope response".into(),
                }),
                Err(e) => Err(e),
            },
            None => client_node.call_at(version, body.clone()).await,
        };
        match answer {
            Ok(r) => r,
            Err(e) => {
                // Answered here instead: NOT_CONTROLLER per item unless this node leads by now.
                tracing::warn!(api = key.name(), %addr, error = %e, "forwarding to the controller failed");
                local_call(&b, version, body).await
            }
        }
    }))
}

/// Creates `name` through the active controller in the background (auto-creation on a node
/// that is not the controller); one request in flight per name.
pub fn create_topic_on_controller(
    broker: &Arc<Broker>,
    name: &str,
    partitions: i32,
    replication_factor: i16,
    configs: std::collections::BTreeMap<String, String>,
) {
    if !broker.peers.creating.lock().insert(name.to_string()) {
        return;
    }
    let body: RequestBody = skiff_protocol::CreateTopicsRequest {
        topics: vec![skiff_protocol::CreatableTopic {
            name: name.to_string(),
            num_partitions: partitions,
            replication_factor,
            configs: configs
                .into_iter()
                .map(|(k, v)| skiff_protocol::CreatableTopicConfig {
                    name: k,
                    value: Some(v),
                })
                .collect(),
            ..Default::default()
        }],
        timeout_ms: 30_000,
        ..Default::default()
    }
    .into();
    let b = Arc::clone(broker);
    let name = name.to_string();
    tokio::spawn(async move {
        match forward(&b, 7, body, None) {
            Ok(f) => {
                let _ = f.await;
            }
            Err(_) => tracing::debug!(topic = %name, "no controller to create the topic on yet"),
        }
        b.peers.creating.lock().remove(&name);
    });
}

mod peers;

#[cfg(test)]
#[path = "cluster_tests.rs"]
mod tests;
