//! `skiff topic alter-config`, `add-partitions` and `trim`: the commands that change an
//! existing topic.
//!
//! Mental model: alter-config is one IncrementalAlterConfigs (SET / DELETE per key) on the topic
//! resource; add-partitions reads the current count (Metadata) and asks CreatePartitions for
//! the new total; trim sends DeleteRecords for the chosen partitions to each partition's leader
//! (a progress bar on a terminal when there are many) and reports each new low watermark.
//! Invariants: nothing is sent for a no-op (no keys; a total equal to the current count);
//! a partition that failed makes the command fail after every leader was asked.

use std::collections::{BTreeMap, HashMap};
use std::io::IsTerminal;
use std::process::ExitCode;

use serde::Serialize;
use skiff_protocol::{
    CreatePartitionsRequest, CreatePartitionsTopic, DeleteRecordsPartition, DeleteRecordsRequest,
    DeleteRecordsTopic,
};

use super::super::client::{Cluster, call_as};
use super::super::config::{RESOURCE_TOPIC, alter_configs};
use super::super::output::{emit, table};
use super::super::{CliError, CliResult, ClientArgs};
use super::{kafka_check, kafka_error, parse_kv, timeout_ms};

/// The result of `topic alter-config` (and `config set`).
#[derive(Debug, Serialize)]
pub struct Altered {
    pub resource_type: String,
    pub resource_name: String,
    pub set: BTreeMap<String, String>,
    pub deleted: Vec<String>,
}

pub(crate) fn render_altered(a: &Altered) -> String {
    let mut out = String::new();
    for (k, v) in &a.set {
        out.push_str(&format!(
            "{} {}: set {k}={v}\n",
            a.resource_type, a.resource_name
        ));
    }
    for k in &a.deleted {
        out.push_str(&format!(
            "{} {}: deleted the override of {k}\n",
            a.resource_type, a.resource_name
        ));
    }
    out
}

pub(super) fn alter_config(
    args: &ClientArgs,
    name: &str,
    set: &[String],
    delete: &[String],
) -> CliResult {
    if set.is_empty() && delete.is_empty() {
        return Err(CliError::Usage(
            "nothing to change: give --set KEY=VALUE and/or --delete KEY".into(),
        ));
    }
    let set: BTreeMap<String, String> =
        set.iter().map(|s| parse_kv(s)).collect::<Result<_, _>>()?;
    let mut cluster = Cluster::connect(args)?;
    alter_configs(cluster.any(), RESOURCE_TOPIC, name, &set, delete)?;
    let altered = Altered {
        resource_type: "topic".into(),
        resource_name: name.into(),
        set,
        deleted: delete.to_vec(),
    };
    emit(args.format, &altered, render_altered)?;
    Ok(ExitCode::SUCCESS)
}

/// The result of `topic add-partitions`.
#[derive(Debug, Serialize)]
pub struct Grown {
    pub name: String,
    pub previous_partitions: usize,
    pub partitions: i32,
    pub dry_run: bool,
}

pub(super) fn add_partitions(
    args: &ClientArgs,
    name: &str,
    total: i32,
    dry_run: bool,
) -> CliResult {
    let mut cluster = Cluster::connect(args)?;
    let m = cluster.metadata(Some(&[name.to_owned()]))?;
    let t = m.topics.iter().find(|t| t.name.as_deref() == Some(name));
    let code = t.map_or(3, |t| t.error_code);
    kafka_check(format!("growing topic {name}"), name, code, None)?;
    let previous = t.map_or(0, |t| t.partitions.len());
    if usize::try_from(total).is_ok_and(|n| n == previous) {
        return Err(CliError::Usage(format!(
            "topic {name} already has {previous} partitions: nothing to do"
        )));
    }
    let request = CreatePartitionsRequest {
        topics: vec![CreatePartitionsTopic {
            name: name.into(),
            count: total,
            assignments: None,
        }],
        timeout_ms: timeout_ms(args),
        validate_only: dry_run,
    };
    let response = call_as!(cluster.any(), request, CreatePartitions)?;
    for r in response.results {
        kafka_check(
            format!("growing topic {name} to {total} partitions"),
            name,
            r.error_code,
            r.error_message,
        )?;
    }
    let grown = Grown {
        name: name.into(),
        previous_partitions: previous,
        partitions: total,
        dry_run,
    };
    emit(args.format, &grown, |g| {
        format!(
            "topic {}: {} -> {} partitions{}\n",
            g.name,
            g.previous_partitions,
            g.partitions,
            if g.dry_run {
                " (dry run: nothing changed)"
            } else {
                ""
            }
        )
    })?;
    Ok(ExitCode::SUCCESS)
}

/// One partition of `topic trim`'s result.
#[derive(Debug, Serialize)]
pub struct Trimmed {
    pub partition: i32,
    /// The new log start offset.
    pub low_watermark: i64,
}

/// The result of `topic trim`.
#[derive(Debug, Serialize)]
pub struct TrimResult {
    pub name: String,
    pub before: i64,
    pub partitions: Vec<Trimmed>,
}

/// Above this many partitions a terminal shows a progress bar while trimming.
const PROGRESS_FROM: usize = 8;

pub(super) fn trim(
    args: &ClientArgs,
    name: &str,
    before: i64,
    partition: Option<i32>,
) -> CliResult {
    if before < -1 {
        return Err(CliError::Usage(format!(
            "--before {before}: give an offset, or -1 for the high watermark"
        )));
    }
    let mut cluster = Cluster::connect(args)?;
    let m = cluster.metadata(Some(&[name.to_owned()]))?;
    let t = m.topics.iter().find(|t| t.name.as_deref() == Some(name));
    let code = t.map_or(3, |t| t.error_code);
    kafka_check(format!("trimming topic {name}"), name, code, None)?;
    let mut by_leader: HashMap<i32, Vec<i32>> = HashMap::new();
    let mut errors = Vec::new();
    for p in t.map(|t| t.partitions.as_slice()).unwrap_or_default() {
        if partition.is_some_and(|want| want != p.partition_index) {
            continue;
        }
        if p.leader_id < 0 {
            errors.push(format!("partition {} has no leader", p.partition_index));
        } else {
            by_leader
                .entry(p.leader_id)
                .or_default()
                .push(p.partition_index);
        }
    }
    let total: usize = by_leader.values().map(Vec::len).sum();
    if total == 0 && errors.is_empty() {
        return Err(CliError::Usage(format!(
            "topic {name} has no partition {}",
            partition.map_or_else(String::new, |p| p.to_string())
        )));
    }
    let bar = (std::io::stderr().is_terminal() && total >= PROGRESS_FROM)
        .then(|| indicatif::ProgressBar::new(total as u64));
    let mut done = Vec::new();
    for (leader, parts) in by_leader {
        let n = parts.len() as u64;
        let request = DeleteRecordsRequest {
            topics: vec![DeleteRecordsTopic {
                name: name.into(),
                partitions: parts
                    .iter()
                    .map(|&p| DeleteRecordsPartition {
                        partition_index: p,
                        offset: before,
                    })
                    .collect(),
            }],
            timeout_ms: timeout_ms(args),
        };
        let answer = cluster
            .node(leader)
            .and_then(|conn| call_as!(conn, request, DeleteRecords));
        match answer {
            Ok(r) => {
                for p in r.topics.iter().flat_map(|t| &t.partitions) {
                    match kafka_error(
                        format!("trimming {name}-{}", p.partition_index),
                        name,
                        p.error_code,
                        None,
                    ) {
                        Some(e) => errors.push(e.to_string()),
                        None => done.push(Trimmed {
                            partition: p.partition_index,
                            low_watermark: p.low_watermark,
                        }),
                    }
                }
            }
            Err(e) => errors.push(format!("leader {leader}: {e}")),
        }
        if let Some(b) = &bar {
            b.inc(n);
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if !errors.is_empty() {
        return Err(CliError::Other(errors.join("; ")));
    }
    done.sort_by_key(|p| p.partition);
    let result = TrimResult {
        name: name.into(),
        before,
        partitions: done,
    };
    emit(args.format, &result, |r| {
        let rows: Vec<Vec<String>> = r
            .partitions
            .iter()
            .map(|p| vec![p.partition.to_string(), p.low_watermark.to_string()])
            .collect();
        table(&["PARTITION", "LOG-START"], &rows)
    })?;
    Ok(ExitCode::SUCCESS)
}
