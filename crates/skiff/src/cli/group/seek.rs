//! `skiff group seek GROUP --to start|end|OFFSET|@timestamp_ms|-N [--topic T] [--execute]`.
//!
//! Mental model: the partitions are those of `--topic` (all of them), else every partition the
//! group has a committed offset for. For each, the new offset is `--to` resolved against the
//! partition's log (earliest/latest, ListOffsets by time), clamped into it. Without
//! `--execute` nothing is written: the table shows current -> new. With `--execute` the new
//! offsets are committed as a simple client (generation -1), which needs the group Empty.
//! Invariants: the group's state is checked before anything is committed, and a group with
//! members is refused with a sentence saying so; a dry run never commits.

use std::collections::{BTreeMap, BTreeSet};
use std::process::ExitCode;

use serde::Serialize;

use super::describe::describe_group;
use super::offsets::{self, not_empty};
use crate::cli::client::Cluster;
use crate::cli::consume::meta;
use crate::cli::consume::spec::{self, OffsetSpec, resolve};
use crate::cli::output::{emit, table};
use crate::cli::{CliError, CliResult, ClientArgs};

#[derive(clap::Args, Debug)]
pub struct SeekArgs {
    /// The group id.
    pub group: String,
    /// The new position: start|end|OFFSET|@timestamp_ms|-N (N before the end).
    #[arg(long, allow_hyphen_values = true)]
    pub to: OffsetSpec,
    /// Seek this topic's partitions (default: every topic the group has offsets for).
    #[arg(long)]
    pub topic: Option<String>,
    /// Apply the change (default: a dry run that only shows it).
    #[arg(long)]
    pub execute: bool,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// One partition's move.
#[derive(Debug, Serialize)]
pub struct SeekRow {
    pub topic: String,
    pub partition: i32,
    pub current_offset: Option<i64>,
    pub new_offset: i64,
}

/// `group seek`'s document.
#[derive(Debug, Serialize)]
pub struct SeekResult {
    pub group: String,
    pub state: String,
    pub executed: bool,
    pub partitions: Vec<SeekRow>,
}

pub fn run(args: &SeekArgs) -> CliResult {
    let group = args.group.as_str();
    let mut cluster = Cluster::connect(&args.client)?;
    let info = describe_group(&mut cluster, group)?;
    if args.execute && !info.may_commit() {
        return Err(not_empty(group));
    }
    let committed = offsets::fetch_committed(&mut cluster, group, None)?;
    let mut wanted: BTreeMap<String, BTreeSet<i32>> = BTreeMap::new();
    match &args.topic {
        Some(t) => {
            let info = meta::topic_info(&mut cluster, t)?;
            wanted.insert(t.clone(), info.partitions.keys().copied().collect());
        }
        None => {
            for (t, p) in committed.keys() {
                wanted.entry(t.clone()).or_default().insert(*p);
            }
        }
    }
    if wanted.is_empty() {
        return Err(CliError::Usage(format!(
            "group {group} has no committed offsets: name the topic to seek with --topic"
        )));
    }
    let mut rows = Vec::new();
    let mut new_offsets = offsets::Offsets::new();
    for (topic, parts) in &wanted {
        let info = meta::topic_info(&mut cluster, topic)?;
        let parts: Vec<i32> = parts.iter().copied().collect();
        let marks = meta::watermarks(&mut cluster, &info, &parts, 0)?;
        let by_time = match spec::lookup_timestamp(args.to) {
            Some(ts) => {
                let specs: Vec<(i32, i64)> = parts.iter().map(|p| (*p, ts)).collect();
                meta::list_offsets(&mut cluster, &info, &specs, 0)?
            }
            None => BTreeMap::new(),
        };
        for p in parts {
            let (earliest, latest) = marks.get(&p).copied().unwrap_or((0, 0));
            let (new_offset, _) =
                resolve(args.to, earliest, latest, by_time.get(&p).map(|a| a.offset));
            rows.push(SeekRow {
                topic: topic.clone(),
                partition: p,
                current_offset: committed.get(&(topic.clone(), p)).copied(),
                new_offset,
            });
            new_offsets.insert((topic.clone(), p), new_offset);
        }
    }
    if args.execute {
        offsets::commit(&mut cluster, group, &new_offsets)?;
    } else {
        eprintln!(
            "skiff: dry run: nothing changed; add --execute to commit these offsets{}",
            if info.may_commit() {
                String::new()
            } else {
                format!(
                    " (the group is {} with members: --execute needs it Empty)",
                    info.state
                )
            }
        );
    }
    let result = SeekResult {
        group: group.to_owned(),
        state: info.state,
        executed: args.execute,
        partitions: rows,
    };
    emit(args.client.format, &result, |r| {
        let rows: Vec<Vec<String>> = r
            .partitions
            .iter()
            .map(|p| {
                vec![
                    r.group.clone(),
                    p.topic.clone(),
                    p.partition.to_string(),
                    p.current_offset
                        .map_or_else(|| "-".into(), |o| o.to_string()),
                    p.new_offset.to_string(),
                ]
            })
            .collect();
        table(
            &[
                "GROUP",
                "TOPIC",
                "PARTITION",
                "CURRENT-OFFSET",
                "NEW-OFFSET",
            ],
            &rows,
        )
    })?;
    Ok(ExitCode::SUCCESS)
}
