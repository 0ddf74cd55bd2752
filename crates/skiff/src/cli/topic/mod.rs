//! `skiff topic create|list|describe|alter-config|add-partitions|delete|trim`: Kafka's
//! `kafka-topics.sh`, `kafka-configs.sh --entity-type topics` and `kafka-delete-records.sh`
//! (rpk's `topic` commands) over the Kafka protocol, against any broker.
//!
//! Mental model: each subcommand is one admin round (CreateTopics, Metadata, DeleteTopics,
//! CreatePartitions, IncrementalAlterConfigs to any broker, which forwards to the controller;
//! ListOffsets and DeleteRecords to each partition's leader), then one serializable result
//! printed by `output::emit`. Kafka error codes become a sentence plus what to do
//! ([`explain`]).
//! Invariants: a failed request is an error (exit 1), never a success line; a command that
//! would change nothing (alter-config without keys, delete without confirmation) is refused
//! before anything is sent; `topic list` hides internal topics unless `--internal`.

mod describe;
mod modify;

use std::collections::BTreeMap;
use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;

use serde::Serialize;
use skiff_protocol::{
    CreatableTopic, CreatableTopicConfig, CreateTopicsRequest, DeleteTopicState,
    DeleteTopicsRequest, MetadataResponse,
};

use super::client::{Cluster, call_as};
use super::output::{emit, table};
use super::{CliError, CliResult, ClientArgs};

pub(crate) use modify::{Altered, render_altered};

#[derive(clap::Subcommand, Debug)]
pub enum TopicCommand {
    /// Create a topic (CreateTopics).
    Create {
        name: String,
        /// Partition count (-1: the broker's num.partitions).
        #[arg(long, short = 'p', default_value_t = -1, allow_negative_numbers = true)]
        partitions: i32,
        /// Replication factor (-1: the broker's default.replication.factor).
        #[arg(long, short = 'r', default_value_t = -1, allow_negative_numbers = true)]
        replication_factor: i16,
        /// A topic config `KEY=VALUE` (repeatable).
        #[arg(long = "config", short = 'c', value_name = "KEY=VALUE")]
        configs: Vec<String>,
        /// Validate only: the broker checks the request and creates nothing.
        #[arg(long)]
        dry_run: bool,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// List topics with their partition count and replication factor.
    List {
        /// Include internal topics (`__consumer_offsets`, `__transaction_state`).
        #[arg(long)]
        internal: bool,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Describe a topic: config overrides and, per partition, leader, replicas, ISR, log start
    /// offset and high watermark.
    Describe {
        name: String,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Set or delete topic config overrides (IncrementalAlterConfigs).
    AlterConfig {
        name: String,
        /// `KEY=VALUE` to set (repeatable).
        #[arg(long = "set", short = 's', value_name = "KEY=VALUE")]
        set: Vec<String>,
        /// A key whose override is removed (repeatable).
        #[arg(long = "delete", short = 'd', value_name = "KEY")]
        delete: Vec<String>,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Grow a topic to `--total` partitions (CreatePartitions).
    AddPartitions {
        name: String,
        /// The new total partition count.
        #[arg(long)]
        total: i32,
        /// Validate only.
        #[arg(long)]
        dry_run: bool,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Delete topics (DeleteTopics). Asks for the names unless `--yes`.
    Delete {
        #[arg(required = true)]
        names: Vec<String>,
        /// Do not ask for confirmation.
        #[arg(long, short = 'y')]
        yes: bool,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Delete the records before an offset (DeleteRecords): the log start offset moves.
    Trim {
        name: String,
        /// Records below this offset are deleted (-1: up to the high watermark).
        #[arg(long, allow_negative_numbers = true)]
        before: i64,
        /// Only this partition (default: every partition).
        #[arg(long)]
        partition: Option<i32>,
        #[command(flatten)]
        client: ClientArgs,
    },
}

pub fn run(cmd: TopicCommand) -> CliResult {
    match cmd {
        TopicCommand::Create {
            name,
            partitions,
            replication_factor,
            configs,
            dry_run,
            client,
        } => create(
            &client,
            &name,
            partitions,
            replication_factor,
            &configs,
            dry_run,
        ),
        TopicCommand::List { internal, client } => list(&client, internal),
        TopicCommand::Describe { name, client } => describe::run(&client, &name),
        TopicCommand::AlterConfig {
            name,
            set,
            delete,
            client,
        } => modify::alter_config(&client, &name, &set, &delete),
        TopicCommand::AddPartitions {
            name,
            total,
            dry_run,
            client,
        } => modify::add_partitions(&client, &name, total, dry_run),
        TopicCommand::Delete { names, yes, client } => delete(&client, &names, yes),
        TopicCommand::Trim {
            name,
            before,
            partition,
            client,
        } => modify::trim(&client, &name, before, partition),
    }
}

/// What to do about a Kafka error code met while working on `subject` (a topic name), if there
/// is more to say than the code's name.
pub(crate) fn explain(code: i16, subject: &str) -> Option<String> {
    Some(match code {
        1 => format!(
            "the offset is beyond the high watermark (see `skiff topic describe {subject}`)"
        ),
        3 => format!("topic {subject} does not exist (see `skiff topic list`)"),
        6 | 41 => "leadership or the controller moved: retry".into(),
        17 => "invalid topic name: use letters, digits, '.', '_' and '-' (at most 249 characters)"
            .into(),
        29 => format!("not authorized for topic {subject}"),
        36 => format!("topic {subject} already exists (use `skiff topic describe {subject}`)"),
        37 => format!(
            "invalid partition count: a topic only grows (see `skiff topic describe {subject}`)"
        ),
        38 => {
            "the replication factor is above the number of live brokers (see `skiff cluster info`)"
                .into()
        }
        40 => {
            "a config key or value is invalid (see `skiff config get --topic` for the keys)".into()
        }
        44 => "the broker's topic policy refused the request".into(),
        73 => "topic deletion is disabled on the broker (delete.topic.enable=false)".into(),
        _ => return None,
    })
}

/// The error for Kafka `code` answered while `context` about `subject`, `None` for 0.
pub(crate) fn kafka_error(
    context: String,
    subject: &str,
    code: i16,
    message: Option<String>,
) -> Option<CliError> {
    let message = message.map(|m| m.trim_end_matches('.').to_owned());
    let message = match (message.filter(|m| !m.is_empty()), explain(code, subject)) {
        (Some(m), Some(h)) => Some(format!("{m}: {h}")),
        (m, h) => m.or(h),
    };
    CliError::from_code(context, code, message)
}

/// [`kafka_error`] as a `Result`: `Ok` for code 0, so a caller writes `kafka_check(..)?`.
pub(crate) fn kafka_check(
    context: String,
    subject: &str,
    code: i16,
    message: Option<String>,
) -> Result<(), CliError> {
    kafka_error(context, subject, code, message).map_or(Ok(()), Err)
}

/// `KEY=VALUE` split at the first `=`.
pub(crate) fn parse_kv(s: &str) -> Result<(String, String), CliError> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_owned(), v.to_owned())),
        _ => Err(CliError::Usage(format!(
            "expected KEY=VALUE, got {s:?} (e.g. retention.ms=3600000)"
        ))),
    }
}

/// The result of `topic create`.
#[derive(Debug, Serialize)]
pub struct Created {
    pub name: String,
    pub topic_id: Option<String>,
    pub partitions: i32,
    pub replication_factor: i16,
    pub configs: BTreeMap<String, String>,
    pub dry_run: bool,
}

fn create(
    args: &ClientArgs,
    name: &str,
    partitions: i32,
    replication_factor: i16,
    configs: &[String],
    dry_run: bool,
) -> CliResult {
    let configs: BTreeMap<String, String> = configs
        .iter()
        .map(|c| parse_kv(c))
        .collect::<Result<_, _>>()?;
    let mut cluster = Cluster::connect(args)?;
    let request = CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: name.into(),
            num_partitions: partitions,
            replication_factor,
            assignments: Vec::new(),
            configs: configs
                .iter()
                .map(|(k, v)| CreatableTopicConfig {
                    name: k.clone(),
                    value: Some(v.clone()),
                })
                .collect(),
        }],
        timeout_ms: timeout_ms(args),
        validate_only: dry_run,
    };
    let response = call_as!(cluster.any(), request, CreateTopics)?;
    let Some(t) = response.topics.into_iter().find(|t| t.name == name) else {
        return Err(CliError::Other(format!(
            "creating topic {name}: the broker answered no result for it"
        )));
    };
    kafka_check(
        format!("creating topic {name}"),
        name,
        t.error_code,
        t.error_message,
    )?;
    // Versions before 5 do not echo the counts: what was asked for.
    let (mut parts, mut rf) = (t.num_partitions, t.replication_factor);
    if parts <= 0 {
        parts = partitions;
    }
    if rf <= 0 {
        rf = replication_factor;
    }
    let created = Created {
        name: name.into(),
        topic_id: (!t.topic_id.is_nil()).then(|| skiff_metadata::cluster_id::display(&t.topic_id)),
        partitions: parts,
        replication_factor: rf,
        configs,
        dry_run,
    };
    emit(args.format, &created, |c| {
        let verb = if c.dry_run {
            "would be created (dry run: nothing changed)"
        } else {
            "created"
        };
        format!(
            "topic {} {verb}: {} partitions, replication factor {}\n",
            c.name, c.partitions, c.replication_factor
        )
    })?;
    Ok(ExitCode::SUCCESS)
}

/// One row of `topic list`.
#[derive(Debug, Serialize)]
pub struct TopicSummary {
    pub name: String,
    pub topic_id: Option<String>,
    pub partitions: usize,
    pub replication_factor: usize,
    pub internal: bool,
}

/// The result of `topic list`.
#[derive(Debug, Serialize)]
pub struct TopicList {
    pub topics: Vec<TopicSummary>,
}

/// The topics of a Metadata answer, sorted by name (internal ones only if `internal`).
pub(crate) fn summaries(m: &MetadataResponse, internal: bool) -> Vec<TopicSummary> {
    let mut topics: Vec<TopicSummary> = m
        .topics
        .iter()
        .filter(|t| t.error_code == 0 && (internal || !t.is_internal))
        .filter_map(|t| {
            Some(TopicSummary {
                name: t.name.clone()?,
                topic_id: (!t.topic_id.is_nil())
                    .then(|| skiff_metadata::cluster_id::display(&t.topic_id)),
                partitions: t.partitions.len(),
                replication_factor: t
                    .partitions
                    .iter()
                    .map(|p| p.replica_nodes.len())
                    .max()
                    .unwrap_or(0),
                internal: t.is_internal,
            })
        })
        .collect();
    topics.sort_by(|a, b| a.name.cmp(&b.name));
    topics
}

fn list(args: &ClientArgs, internal: bool) -> CliResult {
    let mut cluster = Cluster::connect(args)?;
    let m = cluster.metadata(None)?;
    let result = TopicList {
        topics: summaries(&m, internal),
    };
    emit(args.format, &result, |r| {
        let rows: Vec<Vec<String>> = r
            .topics
            .iter()
            .map(|t| {
                vec![
                    t.name.clone(),
                    t.partitions.to_string(),
                    t.replication_factor.to_string(),
                    if t.internal { "yes" } else { "" }.into(),
                ]
            })
            .collect();
        table(&["NAME", "PARTITIONS", "REPLICAS", "INTERNAL"], &rows)
    })?;
    Ok(ExitCode::SUCCESS)
}

/// The result of `topic delete`.
#[derive(Debug, Serialize)]
pub struct Deleted {
    pub deleted: Vec<String>,
}

/// Asks on the terminal for the names to be typed again; false if they were not.
fn confirmed(names: &[String]) -> Result<bool, CliError> {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return Err(CliError::Usage(format!(
            "refusing to delete {} without confirmation: pass --yes",
            names.join(", ")
        )));
    }
    let want = names.join(" ");
    eprint!("type `{want}` to delete (every record is lost): ");
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    stdin
        .lock()
        .read_line(&mut line)
        .map_err(|e| CliError::Other(format!("cannot read the confirmation: {e}")))?;
    Ok(line.trim() == want)
}

fn delete(args: &ClientArgs, names: &[String], yes: bool) -> CliResult {
    if !yes && !confirmed(names)? {
        return Err(CliError::Other("not confirmed: nothing deleted".into()));
    }
    let mut cluster = Cluster::connect(args)?;
    let request = DeleteTopicsRequest {
        topics: names
            .iter()
            .map(|n| DeleteTopicState {
                name: Some(n.clone()),
                ..Default::default()
            })
            .collect(),
        topic_names: names.to_vec(),
        timeout_ms: timeout_ms(args),
    };
    let response = call_as!(cluster.any(), request, DeleteTopics)?;
    let mut deleted = Vec::new();
    let mut errors = Vec::new();
    for r in response.responses {
        let name = r.name.clone().unwrap_or_default();
        match kafka_error(
            format!("deleting topic {name}"),
            &name,
            r.error_code,
            r.error_message,
        ) {
            Some(e) => errors.push(e.to_string()),
            None => deleted.push(name),
        }
    }
    if !errors.is_empty() {
        if !deleted.is_empty() {
            eprintln!("skiff: deleted {}", deleted.join(", "));
        }
        return Err(CliError::Other(errors.join("; ")));
    }
    deleted.sort();
    emit(args.format, &Deleted { deleted }, |d| {
        d.deleted
            .iter()
            .map(|n| format!("topic {n} deleted\n"))
            .collect()
    })?;
    Ok(ExitCode::SUCCESS)
}

/// The request timeout sent to the broker: the client's, capped to i32.
pub(crate) fn timeout_ms(args: &ClientArgs) -> i32 {
    i32::try_from(args.timeout_ms).unwrap_or(i32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafka_codes_become_sentences_with_a_next_step() {
        let cases: &[(i16, &str)] = &[
            (36, "topic t already exists (use `skiff topic describe t`)"),
            (3, "topic t does not exist (see `skiff topic list`)"),
            (37, "a topic only grows"),
            (38, "live brokers"),
            (73, "delete.topic.enable=false"),
            (1, "beyond the high watermark"),
        ];
        for (code, want) in cases {
            let got = explain(*code, "t").unwrap_or_default();
            assert!(got.contains(want), "{code}: {got}");
        }
        assert_eq!(explain(0, "t"), None);
        let e = kafka_error(
            "creating topic t".into(),
            "t",
            36,
            Some("Topic exists.".into()),
        );
        let text = e.map(|e| e.to_string()).unwrap_or_default();
        assert_eq!(
            text,
            "creating topic t: TOPIC_ALREADY_EXISTS (36): Topic exists: topic t already exists \
             (use `skiff topic describe t`)"
        );
        assert!(kafka_error("x".into(), "t", 0, None).is_none());
    }

    #[test]
    fn key_values_split_at_the_first_equals() {
        assert_eq!(
            parse_kv("a.b=c=d").ok(),
            Some(("a.b".to_owned(), "c=d".to_owned()))
        );
        assert_eq!(parse_kv("k=").ok(), Some(("k".to_owned(), String::new())));
        assert!(parse_kv("novalue").is_err());
        assert!(parse_kv("=v").is_err());
    }
}
