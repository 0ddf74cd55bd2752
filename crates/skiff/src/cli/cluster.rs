//! `skiff cluster info|health`: what `rpk cluster info` and `rpk cluster health` show, from
//! Metadata (brokers, controller, every topic's partitions) and, with `--api-versions`, each
//! broker's ApiVersions.
//!
//! Mental model: health is a pure judgement of one Metadata answer ([`assess`]): a broker is
//! down when a partition names it as a replica (or offline replica) but the cluster no longer
//! lists it (Kafka lists only live, unfenced brokers); a partition is offline (leaderless)
//! when it has no leader; under-replicated when its ISR is smaller than its replica set; the
//! cluster needs an active controller. Any of these makes the cluster unhealthy, with one
//! reason per finding.
//! Invariants: `cluster health` exits 0 exactly when `healthy` is true and 10 otherwise (the
//! reasons are on stdout, in the text and in JSON); a failure to ask is exit 1, never "healthy".

use std::collections::{BTreeMap, BTreeSet};
use std::process::ExitCode;

use serde::Serialize;
use skiff_protocol::{ApiKey, MetadataResponse};

use super::client::Cluster;
use super::output::{emit, table};
use super::{CliResult, ClientArgs, EXIT_UNHEALTHY};

#[derive(clap::Subcommand, Debug)]
pub enum ClusterCommand {
    /// Cluster id, controller and brokers (host:port, rack).
    Info {
        /// Also ask each broker for its API version ranges.
        #[arg(long)]
        api_versions: bool,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Whether every broker is up and every partition has a leader and a full ISR (exit 10 if
    /// not, with the reasons).
    Health {
        #[command(flatten)]
        client: ClientArgs,
    },
}

pub fn run(cmd: ClusterCommand) -> CliResult {
    match cmd {
        ClusterCommand::Info {
            api_versions,
            client,
        } => info(&client, api_versions),
        ClusterCommand::Health { client } => health(&client),
    }
}

/// One API range a broker advertises.
#[derive(Debug, Serialize)]
pub struct ApiRange {
    pub api_key: i16,
    pub name: String,
    pub min_version: i16,
    pub max_version: i16,
}

/// A broker of `cluster info`.
#[derive(Debug, Serialize)]
pub struct BrokerInfo {
    pub id: i32,
    pub host: String,
    pub port: i32,
    pub rack: Option<String>,
    pub controller: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_versions: Option<Vec<ApiRange>>,
    /// Why the API versions are missing (the broker did not answer at its address).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The result of `cluster info`.
#[derive(Debug, Serialize)]
pub struct ClusterInfo {
    pub cluster_id: Option<String>,
    pub controller_id: i32,
    pub brokers: Vec<BrokerInfo>,
}

fn info(args: &ClientArgs, api_versions: bool) -> CliResult {
    let mut cluster = Cluster::connect(args)?;
    let mut nodes = cluster.nodes().to_vec();
    nodes.sort_by_key(|n| n.id);
    let controller_id = cluster.controller_id();
    let mut brokers = Vec::new();
    for n in nodes {
        let (mut ranges, mut error) = (None, None);
        if api_versions {
            match cluster.node(n.id) {
                Ok(conn) => {
                    let mut v: Vec<ApiRange> = conn
                        .apis()
                        .iter()
                        .map(|(&k, &(lo, hi))| ApiRange {
                            api_key: k,
                            name: ApiKey::from_i16(k)
                                .map_or_else(|| format!("api {k}"), |a| a.name().to_owned()),
                            min_version: lo,
                            max_version: hi,
                        })
                        .collect();
                    v.sort_by_key(|r| r.api_key);
                    ranges = Some(v);
                }
                Err(e) => error = Some(e.to_string()),
            }
        }
        brokers.push(BrokerInfo {
            id: n.id,
            host: n.host,
            port: n.port,
            rack: n.rack,
            controller: n.id == controller_id,
            api_versions: ranges,
            error,
        });
    }
    let result = ClusterInfo {
        cluster_id: cluster.cluster_id().map(str::to_owned),
        controller_id,
        brokers,
    };
    emit(args.format, &result, render_info)?;
    Ok(ExitCode::SUCCESS)
}

fn render_info(c: &ClusterInfo) -> String {
    let mut out = format!(
        "CLUSTER ID   {}\nCONTROLLER   {}\n\n",
        c.cluster_id.as_deref().unwrap_or("-"),
        c.controller_id
    );
    let rows: Vec<Vec<String>> = c
        .brokers
        .iter()
        .map(|b| {
            vec![
                format!("{}{}", b.id, if b.controller { "*" } else { "" }),
                format!("{}:{}", b.host, b.port),
                b.rack.clone().unwrap_or_default(),
            ]
        })
        .collect();
    out.push_str(&table(&["ID", "ADDRESS", "RACK"], &rows));
    for b in &c.brokers {
        if let Some(v) = &b.api_versions {
            out.push_str(&format!("\nbroker {} API versions\n", b.id));
            let rows: Vec<Vec<String>> = v
                .iter()
                .map(|r| {
                    vec![
                        r.api_key.to_string(),
                        r.name.clone(),
                        format!("{}-{}", r.min_version, r.max_version),
                    ]
                })
                .collect();
            out.push_str(&table(&["KEY", "API", "VERSIONS"], &rows));
        }
        if let Some(e) = &b.error {
            out.push_str(&format!("\nbroker {}: {e}\n", b.id));
        }
    }
    out
}

/// A partition named by `cluster health`.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct PartitionRef {
    pub topic: String,
    pub partition: i32,
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
}

/// The result of `cluster health`.
#[derive(Debug, Serialize, PartialEq, Eq)]
pub struct Health {
    pub healthy: bool,
    pub reasons: Vec<String>,
    pub controller_id: i32,
    pub brokers: Vec<i32>,
    pub brokers_down: Vec<i32>,
    pub leaderless_partitions: Vec<PartitionRef>,
    pub under_replicated_partitions: Vec<PartitionRef>,
}

/// Judges one Metadata answer (every topic, internal ones included).
pub fn assess(m: &MetadataResponse) -> Health {
    let brokers: BTreeSet<i32> = m.brokers.iter().map(|b| b.node_id).collect();
    let mut down: BTreeSet<i32> = BTreeSet::new();
    let mut leaderless = Vec::new();
    let mut under = Vec::new();
    let mut topics: BTreeMap<&str, _> = BTreeMap::new();
    for t in &m.topics {
        if let Some(name) = t.name.as_deref() {
            topics.insert(name, t);
        }
    }
    for (name, t) in topics {
        let mut parts: Vec<_> = t.partitions.iter().collect();
        parts.sort_by_key(|p| p.partition_index);
        for p in parts {
            for r in p.replica_nodes.iter().chain(&p.offline_replicas) {
                if !brokers.contains(r) {
                    down.insert(*r);
                }
            }
            let pref = PartitionRef {
                topic: name.to_owned(),
                partition: p.partition_index,
                replicas: p.replica_nodes.clone(),
                isr: p.isr_nodes.clone(),
            };
            if p.leader_id < 0 {
                leaderless.push(pref);
            } else if p.isr_nodes.len() < p.replica_nodes.len() {
                under.push(pref);
            }
        }
    }
    let mut reasons = Vec::new();
    if m.controller_id < 0 {
        reasons.push("no active controller".to_owned());
    }
    for id in &down {
        reasons.push(format!(
            "broker {id} is down: it holds replicas but the cluster does not list it"
        ));
    }
    for p in &leaderless {
        reasons.push(format!(
            "partition {}-{} is offline: no leader (replicas {:?})",
            p.topic, p.partition, p.replicas
        ));
    }
    for p in &under {
        reasons.push(format!(
            "partition {}-{} is under-replicated: ISR {:?} of replicas {:?}",
            p.topic, p.partition, p.isr, p.replicas
        ));
    }
    Health {
        healthy: reasons.is_empty(),
        reasons,
        controller_id: m.controller_id,
        brokers: brokers.into_iter().collect(),
        brokers_down: down.into_iter().collect(),
        leaderless_partitions: leaderless,
        under_replicated_partitions: under,
    }
}

fn health(args: &ClientArgs) -> CliResult {
    let mut cluster = Cluster::connect(args)?;
    let m = cluster.metadata(None)?;
    let h = assess(&m);
    emit(args.format, &h, |h| {
        let mut out = format!(
            "HEALTHY      {}\nCONTROLLER   {}\nBROKERS      {:?}\nDOWN         {:?}\nLEADERLESS   {}\nUNDER-REPLICATED  {}\n",
            h.healthy,
            h.controller_id,
            h.brokers,
            h.brokers_down,
            h.leaderless_partitions.len(),
            h.under_replicated_partitions.len()
        );
        for r in &h.reasons {
            out.push_str(&format!("- {r}\n"));
        }
        out
    })?;
    Ok(if h.healthy {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_UNHEALTHY)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use skiff_protocol::{
        MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
    };

    fn meta(brokers: &[i32], controller: i32, parts: &[(i32, &[i32], &[i32])]) -> MetadataResponse {
        MetadataResponse {
            brokers: brokers
                .iter()
                .map(|&id| MetadataResponseBroker {
                    node_id: id,
                    host: "h".into(),
                    port: 9092,
                    rack: None,
                })
                .collect(),
            controller_id: controller,
            topics: vec![MetadataResponseTopic {
                name: Some("t".into()),
                partitions: parts
                    .iter()
                    .enumerate()
                    .map(|(i, (leader, replicas, isr))| MetadataResponsePartition {
                        partition_index: i32::try_from(i).unwrap_or_default(),
                        leader_id: *leader,
                        replica_nodes: replicas.to_vec(),
                        isr_nodes: isr.to_vec(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn health_judges_brokers_leaders_isr_and_controller() {
        // (case, metadata, healthy, down, leaderless, under-replicated, a reason's words)
        let cases = [
            (
                "healthy",
                meta(&[1, 2], 1, &[(1, &[1, 2], &[1, 2])]),
                true,
                vec![],
                0,
                0,
                "",
            ),
            (
                "offline rf1 on a dead broker",
                meta(&[1], 1, &[(1, &[1], &[1]), (-1, &[2], &[2])]),
                false,
                vec![2],
                1,
                0,
                "partition t-1 is offline",
            ),
            (
                "shrunk isr",
                meta(&[1, 2], 1, &[(1, &[1, 2], &[1])]),
                false,
                vec![],
                0,
                1,
                "t-0 is under-replicated",
            ),
            (
                "no controller",
                meta(&[1], -1, &[(1, &[1], &[1])]),
                false,
                vec![],
                0,
                0,
                "no active controller",
            ),
            ("no topics", meta(&[1], 1, &[]), true, vec![], 0, 0, ""),
        ];
        for (name, m, healthy, down, leaderless, under, words) in cases {
            let h = assess(&m);
            assert_eq!(h.healthy, healthy, "{name}");
            assert_eq!(h.brokers_down, down, "{name}");
            assert_eq!(h.leaderless_partitions.len(), leaderless, "{name}");
            assert_eq!(h.under_replicated_partitions.len(), under, "{name}");
            assert_eq!(h.reasons.is_empty(), healthy, "{name}");
            assert!(
                h.reasons.iter().any(|r| r.contains(words)) || healthy,
                "{name}: {h:?}"
            );
        }
    }
}
