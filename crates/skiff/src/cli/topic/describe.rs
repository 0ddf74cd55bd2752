//! `skiff topic describe NAME`: the topic's config overrides (DescribeConfigs, source
//! DYNAMIC_TOPIC_CONFIG) and, per partition, leader, replicas, ISR, offline replicas, log start
//! offset and high watermark (ListOffsets earliest and latest, one request each per leader,
//! built by [`meta::list_offsets_at`] like every other ListOffsets of the CLI).
//!
//! Mental model: Metadata gives the partitions and their leaders; the offsets come from the
//! leaders themselves (what a consumer would be told). A partition without a leader, or whose
//! leader did not answer, keeps `null` offsets and says why in `error`; the command still
//! succeeds, because describing a sick topic is what the command is for.
//! Invariants: partitions are listed in index order; an unknown topic is an error (exit 1).

use std::collections::BTreeMap;
use std::process::ExitCode;

use serde::Serialize;
use skiff_protocol::MetadataResponseTopic;

use super::super::client::Cluster;
use super::super::config::{RESOURCE_TOPIC, describe_configs};
use super::super::consume::meta;
use super::super::output::{emit, table};
use super::super::{CliError, CliResult, ClientArgs};
use super::kafka_check;

/// One partition as `topic describe` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct PartitionInfo {
    pub partition: i32,
    /// `None` when the partition has no leader (offline).
    pub leader: Option<i32>,
    pub leader_epoch: i32,
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
    pub offline_replicas: Vec<i32>,
    pub log_start_offset: Option<i64>,
    pub high_watermark: Option<i64>,
    /// Why a field is missing (a partition error, an unreachable leader).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The result of `topic describe`.
#[derive(Debug, Serialize)]
pub struct TopicDescription {
    pub name: String,
    pub topic_id: Option<String>,
    pub internal: bool,
    pub partition_count: usize,
    pub replication_factor: usize,
    /// The topic's overrides (source DYNAMIC_TOPIC_CONFIG), key -> value (sensitive: null).
    pub configs: BTreeMap<String, Option<String>>,
    pub partitions: Vec<PartitionInfo>,
}

/// The partitions of a Metadata topic, in index order, without offsets.
pub(crate) fn partitions_of(t: &MetadataResponseTopic) -> Vec<PartitionInfo> {
    let mut v: Vec<PartitionInfo> = t
        .partitions
        .iter()
        .map(|p| PartitionInfo {
            partition: p.partition_index,
            leader: (p.leader_id >= 0).then_some(p.leader_id),
            leader_epoch: p.leader_epoch,
            replicas: p.replica_nodes.clone(),
            isr: p.isr_nodes.clone(),
            offline_replicas: p.offline_replicas.clone(),
            log_start_offset: None,
            high_watermark: None,
            error: CliError::from_code("partition", p.error_code, None).map(|e| e.to_string()),
        })
        .collect();
    v.sort_by_key(|p| p.partition);
    v
}

/// Fills `log_start_offset` and `high_watermark` of `partitions` from their leaders
/// (ListOffsets earliest and latest through [`meta::list_offsets_at`]); a failure is kept in
/// the partition's `error` instead of failing the command.
pub(crate) fn fill_offsets(cluster: &mut Cluster, topic: &str, partitions: &mut [PartitionInfo]) {
    let mut by_leader: BTreeMap<i32, Vec<(i32, i64)>> = BTreeMap::new();
    for p in partitions.iter() {
        if let Some(l) = p.leader {
            by_leader.entry(l).or_default().push((p.partition, 0));
        }
    }
    for (leader, specs) in by_leader {
        for timestamp in [meta::EARLIEST, meta::LATEST] {
            let specs: Vec<(i32, i64)> = specs.iter().map(|&(p, _)| (p, timestamp)).collect();
            let answers = match meta::list_offsets_at(cluster, leader, topic, &specs, 0) {
                Ok(a) => a,
                Err(e) => {
                    for info in partitions.iter_mut().filter(|x| x.leader == Some(leader)) {
                        info.error = Some(format!("leader {leader}: {e}"));
                    }
                    continue;
                }
            };
            for (partition, answer) in answers {
                let Some(info) = partitions.iter_mut().find(|x| x.partition == partition) else {
                    continue;
                };
                match answer {
                    Err(e) => info.error = Some(e.to_string()),
                    Ok(a) if timestamp == meta::EARLIEST => info.log_start_offset = Some(a.offset),
                    Ok(a) => info.high_watermark = Some(a.offset),
                }
            }
        }
    }
}

pub(super) fn run(args: &ClientArgs, name: &str) -> CliResult {
    let mut cluster = Cluster::connect(args)?;
    let m = cluster.metadata(Some(&[name.to_owned()]))?;
    let Some(t) = m.topics.iter().find(|t| t.name.as_deref() == Some(name)) else {
        return Err(CliError::Other(format!(
            "describing topic {name}: the broker answered no such topic (see `skiff topic list`)"
        )));
    };
    kafka_check(format!("describing topic {name}"), name, t.error_code, None)?;
    let mut partitions = partitions_of(t);
    fill_offsets(&mut cluster, name, &mut partitions);
    let configs = describe_configs(cluster.any(), RESOURCE_TOPIC, name, None)?
        .into_iter()
        .filter(|c| c.source == "DYNAMIC_TOPIC_CONFIG")
        .map(|c| (c.name, c.value))
        .collect();
    let d = TopicDescription {
        name: name.into(),
        topic_id: (!t.topic_id.is_nil()).then(|| skiff_metadata::cluster_id::display(&t.topic_id)),
        internal: t.is_internal,
        partition_count: partitions.len(),
        replication_factor: partitions
            .iter()
            .map(|p| p.replicas.len())
            .max()
            .unwrap_or(0),
        configs,
        partitions,
    };
    emit(args.format, &d, render)?;
    Ok(ExitCode::SUCCESS)
}

fn ids(v: &[i32]) -> String {
    v.iter().map(i32::to_string).collect::<Vec<_>>().join(",")
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(|| "-".into(), |v| v.to_string())
}

fn render(d: &TopicDescription) -> String {
    let mut out = format!(
        "NAME         {}\nTOPIC ID     {}\nINTERNAL     {}\nPARTITIONS   {}\nREPLICAS     {}\n",
        d.name,
        d.topic_id.as_deref().unwrap_or("-"),
        d.internal,
        d.partition_count,
        d.replication_factor
    );
    if d.configs.is_empty() {
        out.push_str("CONFIGS      (no overrides)\n");
    } else {
        out.push_str("CONFIGS\n");
        for (k, v) in &d.configs {
            out.push_str(&format!(
                "  {k}={}\n",
                v.as_deref().unwrap_or("[sensitive]")
            ));
        }
    }
    out.push('\n');
    let rows: Vec<Vec<String>> = d
        .partitions
        .iter()
        .map(|p| {
            vec![
                p.partition.to_string(),
                opt(p.leader),
                p.leader_epoch.to_string(),
                ids(&p.replicas),
                ids(&p.isr),
                opt(p.log_start_offset),
                opt(p.high_watermark),
                p.error.clone().unwrap_or_default(),
            ]
        })
        .collect();
    out.push_str(&table(
        &[
            "PARTITION",
            "LEADER",
            "EPOCH",
            "REPLICAS",
            "ISR",
            "LOG-START",
            "HIGH-WATERMARK",
            "ERROR",
        ],
        &rows,
    ));
    out
}
