//! From Kafka-named configuration (`skiff-config`) to the server's typed settings.
//!
//! Mental model: [`server_settings`] reads every key the server acts on once at start;
//! topic-level questions (effective log config, validation messages, the described list) and
//! runtime config changes are answered by `skiff_server::LiveConfig` over the same
//! [`BrokerConfig`]. Listeners and advertised listeners are paired by name; an advertised port
//! of 0 follows the bound port.

use skiff_config::BrokerConfig;
use skiff_server::coordinator::GroupSettings;
use skiff_server::{ListenerSettings, ServerSettings};

/// The server settings of a loaded configuration, on the broker's one `clock` (issue 13).
pub fn server_settings(cfg: &BrokerConfig, clock: skiff_types::Clock) -> ServerSettings {
    let mut log_manager = cfg.log_manager_config();
    log_manager.clock = clock;
    let mut s = ServerSettings::with_log_dir(
        log_manager
            .log_dirs
            .first()
            .cloned()
            .unwrap_or_else(|| "./skiff-data".into()),
    );
    s.log_manager = log_manager;
    s.node_id = cfg.node_id();
    s.kraft_mode = cfg.kraft().is_some();
    s.quorum_voter_endpoint = cfg.kraft().and_then(|k| {
        let voter = k.voters.iter().find(|v| v.id == k.node_id)?;
        let name = k.controller_listener_names.first()?;
        Some((name.clone(), voter.host.clone(), voter.port))
    });
    // Every KRaft node runs the Raft quorum (a broker-only node observes it), a single
    // combined voter too: broker-only nodes may follow it, as in Kafka. `Broker::open` keeps
    // the local metadata log of a single combined voter whose dir already holds one.
    s.quorum = cfg.kraft().map(|k| {
        let ms = |key: &str, fallback: u64| {
            cfg.get_i64(key)
                .and_then(|v| u64::try_from(v).ok())
                .unwrap_or(fallback)
        };
        skiff_server::settings::QuorumSettings {
            voters: k
                .voters
                .iter()
                .map(|v| (v.id, v.host.clone(), v.port))
                .collect(),
            election_timeout_ms: ms("controller.quorum.election.timeout.ms", 1000),
            heartbeat_interval_ms: ms("broker.heartbeat.interval.ms", 2000),
            session_timeout_ms: ms("broker.session.timeout.ms", 9000),
            broker: k.broker,
            voter: k.controller,
            snapshots: skiff_server::settings::SnapshotSettings {
                max_bytes_between: ms(
                    "metadata.log.max.record.bytes.between.snapshots",
                    20 * 1024 * 1024,
                )
                .max(1),
                max_interval_ms: ms("metadata.log.max.snapshot.interval.ms", 3_600_000),
                keep_entries: ms("skiff.metadata.log.snapshot.keep.entries", 1000),
            },
            fetcher: skiff_server::replica::fetcher::FetcherSettings {
                listener: cfg
                    .get_str("inter.broker.listener.name")
                    .or_else(|| {
                        cfg.listeners()
                            .iter()
                            .find(|l| !k.is_controller_listener(&l.name))
                            .map(|l| l.name.clone())
                    })
                    .unwrap_or_else(|| "PLAINTEXT".to_string()),
                wait_max_ms: i32::try_from(ms("replica.fetch.wait.max.ms", 500)).unwrap_or(500),
                partition_max_bytes: i32::try_from(ms("replica.fetch.max.bytes", 1 << 20))
                    .unwrap_or(1 << 20),
                response_max_bytes: i32::try_from(ms("replica.fetch.response.max.bytes", 10 << 20))
                    .unwrap_or(10 << 20),
                backoff_ms: ms("replica.fetch.backoff.ms", 1000),
                lag_time_max_ms: ms("replica.lag.time.max.ms", 30_000),
            },
            elections: election_settings(cfg),
        }
    });
    s.listeners = cfg
        .listeners()
        .iter()
        .map(|l| {
            let adv = cfg.advertised_listeners().iter().find(|a| a.name == l.name);
            ListenerSettings {
                name: l.name.clone(),
                bind_host: if l.is_wildcard() {
                    String::new()
                } else {
                    l.host.clone()
                },
                bind_port: l.port,
                advertised_host: adv.map_or_else(|| "localhost".to_string(), |a| a.host.clone()),
                advertised_port: adv.map_or(0, |a| a.port),
                controller: cfg
                    .kraft()
                    .is_some_and(|k| k.is_controller_listener(&l.name)),
            }
        })
        .collect();
    s.socket_request_bytes_max = cfg.socket_request_max_bytes();
    s.connection_idle_ms_max = u64::try_from(cfg.connections_max_idle_ms()).unwrap_or(600_000);
    s.connections_max = usize::try_from(cfg.max_connections()).unwrap_or(1).max(1);
    s.connections_per_ip_max = usize::try_from(cfg.max_connections_per_ip())
        .unwrap_or(1)
        .max(1);
    s.auto_create_topics = cfg.auto_create_topics_enable();
    s.default_partitions = cfg.num_partitions();
    s.default_replication_factor = cfg.default_replication_factor();
    if let Some(v) = cfg.get_i64("fetch.max.bytes") {
        s.fetch_bytes_max = i32::try_from(v).unwrap_or(i32::MAX);
    }
    if let Some(v) = cfg.get_i64("max.incremental.fetch.session.cache.slots") {
        s.fetch_session_slots = usize::try_from(v).unwrap_or(0);
    }
    s.groups = group_settings(cfg);
    s.txns = txn_settings(cfg);
    s
}

/// Kafka's `transaction.*` / `transactional.id.*` keys onto the transaction coordinator's
/// settings (issue 18; defaults: Kafka's).
fn txn_settings(cfg: &BrokerConfig) -> skiff_server::txn::TxnSettings {
    let d = skiff_server::txn::TxnSettings::default();
    let int = |key: &str, fallback: i64| cfg.get_i64(key).unwrap_or(fallback);
    skiff_server::txn::TxnSettings {
        max_timeout_ms: i32::try_from(int(
            "transaction.max.timeout.ms",
            i64::from(d.max_timeout_ms),
        ))
        .unwrap_or(d.max_timeout_ms),
        id_expiration_ms: int("transactional.id.expiration.ms", d.id_expiration_ms),
        abort_timed_out_interval_ms: int(
            "transaction.abort.timed.out.transaction.cleanup.interval.ms",
            d.abort_timed_out_interval_ms,
        )
        .max(1),
        remove_expired_interval_ms: int(
            "transaction.remove.expired.transaction.cleanup.interval.ms",
            d.remove_expired_interval_ms,
        )
        .max(1),
        topic_partitions: cfg.transaction_state_log_num_partitions().max(1),
        topic_replication_factor: cfg.transaction_state_log_replication_factor(),
        topic_min_isr: cfg.transaction_state_log_min_isr(),
        topic_segment_bytes: int("transaction.state.log.segment.bytes", d.topic_segment_bytes),
        partition_verification: cfg
            .get_bool("transaction.partition.verification.enable")
            .unwrap_or(d.partition_verification),
    }
}

/// The active controller's election keys (defaults: Kafka's).
fn election_settings(cfg: &BrokerConfig) -> skiff_server::settings::ElectionSettings {
    let d = skiff_server::settings::ElectionSettings::default();
    skiff_server::settings::ElectionSettings {
        unclean_leader_election_enable: cfg
            .get_bool("unclean.leader.election.enable")
            .unwrap_or(d.unclean_leader_election_enable),
        auto_leader_rebalance_enable: cfg
            .get_bool("auto.leader.rebalance.enable")
            .unwrap_or(d.auto_leader_rebalance_enable),
        leader_imbalance_check_interval_ms: cfg
            .get_i64("leader.imbalance.check.interval.seconds")
            .and_then(|s| u64::try_from(s).ok())
            .map_or(d.leader_imbalance_check_interval_ms, |s| {
                // Kafka's range: at least 1.
                s.max(1).saturating_mul(1000)
            }),
    }
}

/// `skiff.admin.listener` as (host, port); `None` when unset or empty (no admin port).
pub fn admin_bind(cfg: &BrokerConfig) -> Result<Option<(String, u16)>, String> {
    skiff_server::admin_http::model::parse_bind(
        cfg.value("skiff.admin.listener").as_deref().unwrap_or(""),
    )
}

/// The group coordinator's settings from Kafka's `group.*` / `offsets.*` keys (values the
/// coordinator cannot use are caught by `GroupConfig::validate` at start).
pub fn group_settings(cfg: &BrokerConfig) -> GroupSettings {
    let mut g = GroupSettings::default();
    let int = |key: &str, fallback: i32| {
        cfg.get_i64(key)
            .map_or(fallback, |v| i32::try_from(v).unwrap_or(fallback))
    };
    let c = &mut g.config;
    c.session_timeout_ms_min = int("group.min.session.timeout.ms", c.session_timeout_ms_min);
    c.session_timeout_ms_max = int("group.max.session.timeout.ms", c.session_timeout_ms_max);
    c.initial_rebalance_delay_ms = cfg.group_initial_rebalance_delay_ms();
    c.group_size_max = int("group.max.size", c.group_size_max);
    if let Some(minutes) = cfg.get_i64("offsets.retention.minutes") {
        c.offsets_retention_ms = minutes.saturating_mul(60_000);
    }
    if let Some(v) = cfg.get_i64("offsets.retention.check.interval.ms") {
        c.offsets_retention_check_interval_ms = v;
    }
    if let Some(v) = cfg.get_i64("offset.metadata.max.bytes") {
        c.offset_metadata_bytes_max = usize::try_from(v).unwrap_or(0);
    }
    c.consumer_session_timeout_ms = int(
        "group.consumer.session.timeout.ms",
        c.consumer_session_timeout_ms,
    );
    c.consumer_heartbeat_interval_ms = int(
        "group.consumer.heartbeat.interval.ms",
        c.consumer_heartbeat_interval_ms,
    );
    c.consumer_session_timeout_ms_min = int(
        "group.consumer.min.session.timeout.ms",
        c.consumer_session_timeout_ms_min,
    );
    c.consumer_session_timeout_ms_max = int(
        "group.consumer.max.session.timeout.ms",
        c.consumer_session_timeout_ms_max,
    );
    c.consumer_heartbeat_interval_ms_min = int(
        "group.consumer.min.heartbeat.interval.ms",
        c.consumer_heartbeat_interval_ms_min,
    );
    c.consumer_heartbeat_interval_ms_max = int(
        "group.consumer.max.heartbeat.interval.ms",
        c.consumer_heartbeat_interval_ms_max,
    );
    c.consumer_group_size_max = int("group.consumer.max.size", c.consumer_group_size_max);
    if let Some(list) = cfg.value("group.consumer.assignors") {
        let names: Vec<String> = list
            .split(',')
            .map(|n| n.trim().to_string())
            .filter(|n| !n.is_empty())
            .collect();
        if !names.is_empty() {
            c.consumer_assignors = names;
        }
    }
    if let Some(p) = cfg
        .value("group.consumer.migration.policy")
        .and_then(|v| skiff_server::coordinator::MigrationPolicy::parse(&v))
    {
        c.consumer_migration_policy = p;
    }
    g.offsets_topic_partitions = cfg.offsets_topic_num_partitions();
    g.offsets_topic_replication_factor = cfg.offsets_topic_replication_factor();
    if let Some(v) = cfg.get_i64("offsets.topic.segment.bytes") {
        g.offsets_topic_segment_bytes = v;
    }
    g
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::BTreeMap;

    use skiff_config::ConfigSources;
    use skiff_server::{LiveConfig, TopicConfigs};

    use super::*;

    fn load(overrides: &[&str]) -> BrokerConfig {
        BrokerConfig::load(ConfigSources {
            overrides: overrides.iter().map(|s| s.to_string()).collect(),
            ..ConfigSources::default()
        })
        .unwrap()
    }

    #[test]
    fn defaults_map_to_the_documented_listener() {
        let s = server_settings(&load(&[]), skiff_types::Clock::manual(0));
        assert_eq!(
            s.listeners,
            vec![ListenerSettings {
                name: "PLAINTEXT".into(),
                bind_host: "127.0.0.1".into(),
                bind_port: 9092,
                advertised_host: "localhost".into(),
                advertised_port: 9092,
                controller: false,
            }]
        );
        assert!(s.auto_create_topics);
        assert_eq!(s.socket_request_bytes_max, 104_857_600);
        assert_eq!(s.connection_idle_ms_max, 600_000);
        assert_eq!(
            s.log_manager.log_dirs,
            vec![std::path::PathBuf::from("./skiff-data")]
        );
    }

    #[test]
    fn overrides_reach_the_server_settings() {
        let s = server_settings(
            &load(&[
                "listeners=PLAINTEXT://:0",
                "advertised.listeners=PLAINTEXT://example.com:19092",
                "num.partitions=3",
                "auto.create.topics.enable=false",
                "node.id=7",
                "socket.request.max.bytes=1000",
            ]),
            skiff_types::Clock::manual(0),
        );
        let l = &s.listeners[0];
        assert_eq!((l.bind_host.as_str(), l.bind_port), ("", 0));
        assert_eq!(
            (l.advertised_host.as_str(), l.advertised_port),
            ("example.com", 19092)
        );
        assert_eq!(s.default_partitions, 3);
        assert!(!s.auto_create_topics);
        assert_eq!(s.node_id, 7);
        assert_eq!(s.socket_request_bytes_max, 1000);
    }

    #[test]
    fn admin_listener_is_off_by_default_and_parsed_when_set() {
        assert_eq!(admin_bind(&load(&[])), Ok(None));
        assert_eq!(admin_bind(&load(&["skiff.admin.listener="])), Ok(None));
        assert_eq!(
            admin_bind(&load(&["skiff.admin.listener=127.0.0.1:0"])),
            Ok(Some(("127.0.0.1".to_string(), 0)))
        );
        let err = admin_bind(&load(&["skiff.admin.listener=9644"])).unwrap_err();
        assert!(err.contains("host:port"), "{err}");
    }

    #[test]
    fn group_keys_reach_the_coordinator_settings() {
        let g = server_settings(&load(&[]), skiff_types::Clock::manual(0)).groups;
        assert_eq!(g.config.session_timeout_ms_min, 6000);
        assert_eq!(g.config.initial_rebalance_delay_ms, 0, "shipped default");
        assert_eq!(g.config.offsets_retention_ms, 10080 * 60_000);
        assert_eq!(g.offsets_topic_partitions, 50);
        assert_eq!(g.config.consumer_assignors, vec!["uniform", "range"]);
        let g = server_settings(
            &load(&[
                "group.min.session.timeout.ms=1000",
                "group.max.session.timeout.ms=7000",
                "group.initial.rebalance.delay.ms=250",
                "group.max.size=3",
                "offsets.retention.minutes=2",
                "offsets.topic.num.partitions=4",
                "group.consumer.session.timeout.ms=9000",
                "group.consumer.heartbeat.interval.ms=500",
                "group.consumer.min.session.timeout.ms=8000",
                "group.consumer.max.session.timeout.ms=20000",
                "group.consumer.min.heartbeat.interval.ms=400",
                "group.consumer.max.heartbeat.interval.ms=900",
                "group.consumer.assignors=range",
                "group.consumer.migration.policy=UPGRADE",
            ]),
            skiff_types::Clock::manual(0),
        )
        .groups;
        assert_eq!(
            (
                g.config.session_timeout_ms_min,
                g.config.session_timeout_ms_max,
                g.config.initial_rebalance_delay_ms,
                g.config.group_size_max,
            ),
            (1000, 7000, 250, 3)
        );
        assert_eq!(g.config.offsets_retention_ms, 120_000);
        assert_eq!(g.offsets_topic_partitions, 4);
        assert_eq!(
            (
                g.config.consumer_session_timeout_ms,
                g.config.consumer_heartbeat_interval_ms
            ),
            (9000, 500)
        );
        assert_eq!(
            (
                g.config.consumer_session_timeout_ms_min,
                g.config.consumer_session_timeout_ms_max,
                g.config.consumer_heartbeat_interval_ms_min,
                g.config.consumer_heartbeat_interval_ms_max
            ),
            (8000, 20000, 400, 900)
        );
        assert_eq!(g.config.consumer_assignors, vec!["range"]);
        assert_eq!(
            g.config.consumer_migration_policy,
            skiff_server::coordinator::MigrationPolicy::Upgrade
        );
        assert!(g.config.validate().is_ok());
    }

    #[test]
    fn topic_configs_validate_and_describe_everything() {
        let t = LiveConfig::new(load(&["log.retention.hours=1"]));
        let overrides: BTreeMap<String, String> =
            [("segment.bytes".to_string(), "1048576".to_string())].into();
        let cfg = t.log_config(&overrides).unwrap();
        assert_eq!(cfg.segment_bytes, 1_048_576);
        assert_eq!(cfg.retention_ms, 3_600_000, "broker default applies");
        let bad: BTreeMap<String, String> = [("segment.bytes".to_string(), "x".to_string())].into();
        assert!(t.log_config(&bad).unwrap_err().contains("segment.bytes"));
        let described = t.describe(&overrides);
        let find = |n: &str| described.iter().find(|e| e.name == n).unwrap();
        assert_eq!(find("segment.bytes").source, 1, "DYNAMIC_TOPIC_CONFIG");
        // The broker-level log.retention.hours reaches the described topic value.
        assert_eq!(find("retention.ms").value.as_deref(), Some("3600000"));
        assert_eq!(find("cleanup.policy").source, 5, "DEFAULT_CONFIG");
        assert!(described.len() > 20);
    }
}
