//! What the server needs to know from the broker configuration, as plain typed data.
//!
//! Mental model: the binary loads Kafka-named properties (the `skiff-config` crate) and fills a
//! [`ServerSettings`] once at start; handlers read it without locks. Topic-level configuration
//! (defaults overlaid with a topic's overrides, validation messages, the described list for
//! CreateTopics v5+) goes through the [`TopicConfigs`] trait so the server does not depend on
//! how keys are parsed; [`StorageTopicConfigs`] is a small implementation over storage's own
//! `LogConfig::set`, used by tests and as a fallback.
//!
//! Invariants: every limit is named with its unit; values are validated by the config layer
//! before they get here (the server only clamps to sane minimums).

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::path::PathBuf;

use skiff_storage::config::LOG_CONFIG_KEYS;
use skiff_storage::{LogConfig, LogManagerConfig};

/// One listener: where to bind and what to advertise to clients connecting through it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListenerSettings {
    /// Listener name, e.g. `PLAINTEXT`.
    pub name: String,
    /// Host to bind; empty = all interfaces.
    pub bind_host: String,
    /// Port to bind; 0 = ephemeral.
    pub bind_port: u16,
    /// Host clients are told to connect to (Metadata brokers list).
    pub advertised_host: String,
    /// Port clients are told to connect to; 0 = the port actually bound.
    pub advertised_port: u16,
    /// A KRaft controller listener (named in `controller.listener.names`): DescribeCluster
    /// answers there as a controller endpoint (KIP-919).
    pub controller: bool,
}

impl ListenerSettings {
    /// A plaintext listener on 127.0.0.1 with an ephemeral port, advertised as `localhost`.
    pub fn loopback_ephemeral() -> Self {
        Self {
            name: "PLAINTEXT".into(),
            bind_host: "127.0.0.1".into(),
            bind_port: 0,
            advertised_host: "localhost".into(),
            advertised_port: 0,
            controller: false,
        }
    }
}

pub use skiff_raft::quorum::SnapshotSettings;

/// The static Raft quorum this node is a voter or an observer of (Kafka's KRaft keys).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuorumSettings {
    /// `controller.quorum.voters`: (node id, host, port) of every voter's CONTROLLER listener.
    pub voters: Vec<(i32, String, u16)>,
    /// `controller.quorum.election.timeout.ms`
    pub election_timeout_ms: u64,
    /// `broker.heartbeat.interval.ms`
    pub heartbeat_interval_ms: u64,
    /// `broker.session.timeout.ms`
    pub session_timeout_ms: u64,
    /// `process.roles` has `broker`: the node registers, heartbeats and hosts partitions.
    pub broker: bool,
    /// `process.roles` has `controller`: a voter; otherwise an observer of the voters.
    pub voter: bool,
    /// `metadata.log.max.record.bytes.between.snapshots`, `metadata.log.max.snapshot.interval.ms`
    /// and `skiff.metadata.log.snapshot.keep.entries`.
    pub snapshots: SnapshotSettings,
    /// `inter.broker.listener.name` and `replica.fetch.*`: how this broker's fetchers reach
    /// the leaders of the partitions it follows.
    pub fetcher: crate::replica::fetcher::FetcherSettings,
    /// `unclean.leader.election.enable`, `auto.leader.rebalance.enable` and
    /// `leader.imbalance.check.interval.seconds`: how this node elects leaders while it is
    /// the active controller.
    pub elections: ElectionSettings,
}

/// The active controller's election keys (Kafka's names and defaults).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ElectionSettings {
    /// `unclean.leader.election.enable` (static layer; topic overrides and dynamic broker
    /// configs in the metadata win): a live replica outside the ISR may lead a partition that
    /// has no live ISR member.
    pub unclean_leader_election_enable: bool,
    /// `auto.leader.rebalance.enable`: periodically move leadership back to the first replica.
    pub auto_leader_rebalance_enable: bool,
    /// `leader.imbalance.check.interval.seconds`, in ms.
    pub leader_imbalance_check_interval_ms: u64,
}

impl Default for ElectionSettings {
    fn default() -> Self {
        ElectionSettings {
            unclean_leader_election_enable: false,
            auto_leader_rebalance_enable: true,
            leader_imbalance_check_interval_ms: 300_000,
        }
    }
}

/// Broker settings the server acts on (Kafka key names in the field docs).
#[derive(Clone, Debug)]
pub struct ServerSettings {
    /// `node.id`
    pub node_id: i32,
    /// `process.roles` is set (a KRaft node, today one combined single-voter node): every log
    /// dir must have been formatted by `skiff format`; an unformatted one is refused.
    pub kraft_mode: bool,
    /// KRaft mode: this node's `controller.quorum.voters` endpoint as
    /// (controller listener name, host, port), what DescribeQuorum reports for the voter.
    pub quorum_voter_endpoint: Option<(String, String, u16)>,
    /// KRaft mode: the Raft metadata quorum (issue 16), also of a single combined voter, so
    /// broker-only nodes can follow it. `None`: the metadata log is local (no
    /// `process.roles`, or a single combined voter whose dir already holds a local log:
    /// [`crate::cluster::keeps_local_metadata_log`]).
    pub quorum: Option<QuorumSettings>,
    /// `listeners` joined with `advertised.listeners`.
    pub listeners: Vec<ListenerSettings>,
    /// `socket.request.max.bytes`
    pub socket_request_bytes_max: usize,
    /// `connections.max.idle.ms`
    pub connection_idle_ms_max: u64,
    /// How long a started but incomplete frame may take to arrive (slowloris guard).
    pub partial_frame_ms_max: u64,
    /// `max.connections`
    pub connections_max: usize,
    /// `max.connections.per.ip`
    pub connections_per_ip_max: usize,
    /// Responses (and the requests behind them) queued on one connection before it stops
    /// reading, in bytes.
    pub queued_response_bytes_max: usize,
    /// Requests in flight on one connection before it stops reading.
    pub in_flight_requests_max: usize,
    /// `auto.create.topics.enable`
    pub auto_create_topics: bool,
    /// `num.partitions`
    pub default_partitions: i32,
    /// `default.replication.factor`
    pub default_replication_factor: i16,
    /// `fetch.max.bytes` (caps a Fetch's `max_bytes`).
    pub fetch_bytes_max: i32,
    /// `max.incremental.fetch.session.cache.slots`
    pub fetch_session_slots: usize,
    /// How long shutdown waits for in-flight requests before closing connections anyway.
    pub shutdown_drain_ms_max: u64,
    /// Log dirs and the log manager's intervals.
    pub log_manager: LogManagerConfig,
    /// The group coordinator (`group.*`, `offsets.*`).
    pub groups: crate::coordinator::GroupSettings,
    /// The transaction coordinator (`transaction.*`, `transactional.id.*`; issue 18).
    pub txns: crate::txn::TxnSettings,
    /// `skiff.admin.listener` parsed: (host, port) of the admin HTTP port; `None` = not bound.
    pub admin_bind: Option<(String, u16)>,
    /// Listener protocols, TLS, SASL and the authorizer (issue 19).
    pub security: crate::security::SecuritySettings,
}

impl ServerSettings {
    /// Kafka's defaults, one loopback listener on an ephemeral port, data in `log_dir`.
    pub fn with_log_dir(log_dir: impl Into<PathBuf>) -> Self {
        Self {
            node_id: 1,
            kraft_mode: false,
            quorum_voter_endpoint: None,
            quorum: None,
            listeners: vec![ListenerSettings::loopback_ephemeral()],
            socket_request_bytes_max: skiff_types::limits::SOCKET_REQUEST_BYTES_MAX,
            connection_idle_ms_max: 600_000,
            partial_frame_ms_max: 60_000,
            connections_max: i32::MAX as usize,
            connections_per_ip_max: i32::MAX as usize,
            queued_response_bytes_max: 64 * 1024 * 1024,
            in_flight_requests_max: 256,
            auto_create_topics: true,
            default_partitions: 1,
            default_replication_factor: 1,
            fetch_bytes_max: 55 * 1024 * 1024,
            fetch_session_slots: 1000,
            shutdown_drain_ms_max: 10_000,
            log_manager: LogManagerConfig {
                log_dirs: vec![log_dir.into()],
                ..LogManagerConfig::default()
            },
            groups: crate::coordinator::GroupSettings::default(),
            txns: crate::txn::TxnSettings::default(),
            admin_bind: None,
            security: crate::security::SecuritySettings::default(),
        }
    }

    /// Where the metadata log lives: `<first log dir>/__cluster_metadata-0`.
    pub fn metadata_dir(&self) -> Option<PathBuf> {
        self.log_manager
            .log_dirs
            .first()
            .map(|d| d.join(METADATA_DIR_NAME))
    }
}

/// Directory name of the metadata log inside the first log dir.
pub const METADATA_DIR_NAME: &str = "__cluster_metadata-0";

/// Kafka's ConfigSource ids (DescribeConfigs / CreateTopics v5+).
pub mod config_source {
    pub const DYNAMIC_TOPIC_CONFIG: i8 = 1;
    pub const DYNAMIC_BROKER_CONFIG: i8 = 2;
    pub const DYNAMIC_DEFAULT_BROKER_CONFIG: i8 = 3;
    pub const STATIC_BROKER_CONFIG: i8 = 4;
    pub const DEFAULT_CONFIG: i8 = 5;
}

/// One described topic config (CreateTopics v5+ `Configs`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopicConfigEntry {
    pub name: String,
    pub value: Option<String>,
    pub read_only: bool,
    /// One of [`config_source`].
    pub source: i8,
    pub sensitive: bool,
}

/// Topic-level configuration: broker defaults overlaid with a topic's overrides.
pub trait TopicConfigs: Send + Sync + Debug {
    /// The effective log config of a topic with these overrides, or the precise message an
    /// INVALID_CONFIG answer carries.
    fn log_config(&self, overrides: &BTreeMap<String, String>) -> Result<LogConfig, String>;

    /// Every topic config with its effective value and source.
    fn describe(&self, overrides: &BTreeMap<String, String>) -> Vec<TopicConfigEntry>;

    /// The full, runtime-changeable broker configuration behind these topic configs, if any
    /// (DescribeConfigs / AlterConfigs of broker resources need it).
    fn live(&self) -> Option<&crate::live_config::LiveConfig> {
        None
    }
}

/// [`TopicConfigs`] over storage's `LogConfig::set`: the storage keys only, Kafka defaults
/// underneath. Unknown keys are rejected.
#[derive(Clone, Debug, Default)]
pub struct StorageTopicConfigs {
    pub defaults: LogConfig,
}

impl TopicConfigs for StorageTopicConfigs {
    fn log_config(&self, overrides: &BTreeMap<String, String>) -> Result<LogConfig, String> {
        let mut cfg = self.defaults.clone();
        for (k, v) in overrides {
            if !LOG_CONFIG_KEYS.contains(&k.as_str()) {
                return Err(format!("Unknown topic config name: {k}"));
            }
            cfg.set(k, v).map_err(|e| e.0)?;
        }
        Ok(cfg)
    }

    fn describe(&self, overrides: &BTreeMap<String, String>) -> Vec<TopicConfigEntry> {
        overrides
            .iter()
            .map(|(k, v)| TopicConfigEntry {
                name: k.clone(),
                value: Some(v.clone()),
                read_only: false,
                source: config_source::DYNAMIC_TOPIC_CONFIG,
                sensitive: false,
            })
            .collect()
    }
}
