//! `skiff group seek GROUP --to start|end|OFFSET|@timestamp_ms|-N|shift:±N [--topic T]
//! [--execute]`.
//!
//! Mental model: the partitions are those of `--topic` (all of them), else every partition the
//! group has a committed offset for. For each, the new offset is `--to` resolved against the
//! partition's log (earliest/latest, ListOffsets by time), clamped into it; `shift:-N` /
//! `shift:+N` moves the committed offset by N, clamped into `[log start, end]` (a partition
//! without a committed offset cannot be shifted: an error names it). Without
//! `--execute` nothing is written: the table shows current -> new. With `--execute` the new
//! offsets are committed as a simple client (generation -1), which needs the group Empty.
//! Invariants: the group's state is checked before anything is committed, and a group with
//! members is refused with a sentence saying so; a dry run never commits.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::process::ExitCode;
use std::str::FromStr;

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
    /// The new position: start|end|OFFSET|@timestamp_ms|-N (N before the end)|shift:-N|shift:+N
    /// (N before/after the committed offset, clamped to the log).
    #[arg(long, allow_hyphen_values = true)]
    pub to: SeekTo,
    /// Seek this topic's partitions (default: every topic the group has offsets for).
    #[arg(long)]
    pub topic: Option<String>,
    /// Apply the change (default: a dry run that only shows it).
    #[arg(long)]
    pub execute: bool,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// Where `--to` moves a group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeekTo {
    /// A position in the log, as `consume --offset` names it.
    Spec(OffsetSpec),
    /// Relative to the committed offset.
    Shift(i64),
}

impl FromStr for SeekTo {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().strip_prefix("shift:") {
            Some(n) => n
                .strip_prefix('+')
                .unwrap_or(n)
                .parse::<i64>()
                .map(SeekTo::Shift)
                .map_err(|_| format!("bad shift {s:?}: use shift:-N or shift:+N (e.g. shift:-10)")),
            None => s.parse::<OffsetSpec>().map(SeekTo::Spec).map_err(|e| {
                format!("{e}, or shift:-N|shift:+N (relative to the committed offset)")
            }),
        }
    }
}

impl fmt::Display for SeekTo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SeekTo::Spec(s) => write!(f, "{s}"),
            SeekTo::Shift(n) => write!(f, "shift:{n:+}"),
        }
    }
}

/// The committed offset moved by `by`, clamped into `[earliest, latest]`.
pub fn shifted(committed: i64, by: i64, earliest: i64, latest: i64) -> i64 {
    committed
        .saturating_add(by)
        .clamp(earliest, latest.max(earliest))
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
        let by_time = match spec::lookup_timestamp(match args.to {
            SeekTo::Spec(s) => s,
            SeekTo::Shift(_) => OffsetSpec::End,
        }) {
            Some(ts) => {
                let specs: Vec<(i32, i64)> = parts.iter().map(|p| (*p, ts)).collect();
                meta::list_offsets(&mut cluster, &info, &specs, 0)?
            }
            None => BTreeMap::new(),
        };
        for p in parts {
            let (earliest, latest) = marks.get(&p).copied().unwrap_or((0, 0));
            let current = committed.get(&(topic.clone(), p)).copied();
            let new_offset = match (args.to, current) {
                (SeekTo::Spec(to), _) => {
                    resolve(to, earliest, latest, by_time.get(&p).map(|a| a.offset)).0
                }
                (SeekTo::Shift(by), Some(c)) => shifted(c, by, earliest, latest),
                (SeekTo::Shift(_), None) => {
                    return Err(CliError::Usage(format!(
                        "group {group} has no committed offset for {topic}-{p}: a shift is \
                         relative to it (seek that partition with --to start|end|OFFSET first)"
                    )));
                }
            };
            rows.push(SeekRow {
                topic: topic.clone(),
                partition: p,
                current_offset: current,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seek_targets_parse() {
        let cases: &[(&str, Option<SeekTo>)] = &[
            ("shift:-3", Some(SeekTo::Shift(-3))),
            ("shift:+4", Some(SeekTo::Shift(4))),
            ("shift:5", Some(SeekTo::Shift(5))),
            ("shift:0", Some(SeekTo::Shift(0))),
            ("start", Some(SeekTo::Spec(OffsetSpec::Beginning))),
            ("-2", Some(SeekTo::Spec(OffsetSpec::FromEnd(2)))),
            ("12", Some(SeekTo::Spec(OffsetSpec::Exact(12)))),
            ("shift:", None),
            ("shift:x", None),
            ("shift:--1", None),
            ("sideways", None),
        ];
        for (text, want) in cases {
            assert_eq!(text.parse::<SeekTo>().ok(), *want, "{text}");
        }
        assert_eq!(SeekTo::Shift(-3).to_string(), "shift:-3");
        assert_eq!(SeekTo::Shift(2).to_string(), "shift:+2");
    }

    #[test]
    fn shifts_stay_within_the_log() {
        // log spans [10, 20)
        let cases: &[(i64, i64, i64)] = &[
            (15, -3, 12),
            (15, 3, 18),
            (15, -10, 10),
            (15, 10, 20),
            (15, 0, 15),
            (5, 2, 10),
            (25, -2, 20),
            (15, i64::MIN, 10),
            (15, i64::MAX, 20),
        ];
        for (committed, by, want) in cases {
            assert_eq!(shifted(*committed, *by, 10, 20), *want, "{committed} {by}");
        }
    }
}
