//! The operator CLI (issue 20 item 2): `skiff topic|produce|consume|group|cluster|config|doctor`,
//! speaking the Kafka protocol to any broker (Skiff or Apache Kafka).
//!
//! Mental model: every command is a short-lived, blocking client. [`ClientArgs`] (flattened into
//! each command) names the bootstrap brokers (`--brokers`, env `SKIFF_BROKERS`, default
//! `localhost:9092`), the output format (`--format text|json|yaml`) and the timeout; the command
//! opens a [`client::Cluster`] (bootstrap + Metadata, then lazy connections to the nodes it
//! needs: a partition's leader, a group's coordinator), does its requests with the versions both
//! sides support, builds one serializable result and prints it with [`output::emit`] (a human
//! table for `text`, one JSON or YAML document otherwise; `consume` prints JSON lines).
//!
//! Exit codes (rpk's meanings): 0 success, 1 a failure (the message on stderr names the address
//! and the layer that failed: DNS, TCP, protocol, or the Kafka error with what to do), 2 a bad
//! command line, 10 `cluster health` found the cluster unhealthy.
//! Invariants: stdout carries only the command's result (so `--format json` output always
//! parses); diagnostics go to stderr; no command reports success for something it did not do.

pub mod client;
pub mod output;

pub mod cluster;
pub mod config;
pub mod consume;
pub mod doctor;
pub mod group;
pub mod produce;
pub mod topic;

use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Subcommand, ValueEnum};

/// Exit code of a failed command.
pub const EXIT_ERROR: u8 = 1;
/// Exit code of `cluster health` when the cluster is unhealthy (rpk's).
pub const EXIT_UNHEALTHY: u8 = 10;

/// The client commands, flattened into the binary's top-level commands.
#[derive(Subcommand, Debug)]
pub enum CliCommand {
    /// Create, list, describe, alter, grow, trim and delete topics.
    #[command(subcommand)]
    Topic(topic::TopicCommand),
    /// Produce records read from stdin (one per line) or a file.
    Produce(produce::ProduceArgs),
    /// Consume records and print them.
    Consume(consume::ConsumeArgs),
    /// List, describe, seek and delete consumer groups.
    #[command(subcommand)]
    Group(group::GroupCommand),
    /// Cluster information and health.
    #[command(subcommand)]
    Cluster(cluster::ClusterCommand),
    /// Get and set dynamic broker and topic configs.
    #[command(subcommand)]
    Config(config::ConfigCommand),
    /// Check a bootstrap address as a client would and say what to fix.
    Doctor(doctor::DoctorArgs),
}

/// Runs one client command.
pub fn run(cmd: CliCommand) -> ExitCode {
    let result = match cmd {
        CliCommand::Topic(c) => topic::run(c),
        CliCommand::Produce(a) => produce::run(a),
        CliCommand::Consume(a) => consume::run(a),
        CliCommand::Group(c) => group::run(c),
        CliCommand::Cluster(c) => cluster::run(c),
        CliCommand::Config(c) => config::run(c),
        CliCommand::Doctor(a) => doctor::run(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("skiff: {e}");
            ExitCode::from(EXIT_ERROR)
        }
    }
}

/// The output format of a command's result.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Human tables.
    #[default]
    Text,
    /// One JSON document (JSON lines for `consume`).
    Json,
    /// One YAML document.
    Yaml,
}

/// Connection and output flags every client command takes.
#[derive(Args, Debug, Clone)]
pub struct ClientArgs {
    /// Bootstrap brokers, `host:port[,host:port...]`.
    #[arg(
        long,
        short = 'b',
        env = "SKIFF_BROKERS",
        default_value = "localhost:9092"
    )]
    pub brokers: String,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// How long to wait for a connection or an answer, in milliseconds.
    #[arg(long, default_value_t = 15_000)]
    pub timeout_ms: u64,
}

impl ClientArgs {
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms.max(1))
    }

    /// The bootstrap addresses, trimmed, empty entries dropped.
    pub fn bootstrap(&self) -> Vec<String> {
        self.brokers
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect()
    }
}

/// Why a client command failed; the message says which layer and what to do.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error("cannot resolve {addr}: {reason} (check the host name in --brokers / SKIFF_BROKERS)")]
    Dns { addr: String, reason: String },
    #[error("cannot connect to {addr}: {reason} (is a broker listening there?)")]
    Connect { addr: String, reason: String },
    #[error("{addr}: {reason}")]
    Protocol { addr: String, reason: String },
    #[error("{addr} does not support {api} at any version this client speaks")]
    Unsupported { addr: String, api: &'static str },
    #[error("{context}: {code}{}", message.as_deref().map(|m| format!(": {m}")).unwrap_or_default())]
    Kafka {
        context: String,
        code: String,
        message: Option<String>,
    },
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    Other(String),
}

impl CliError {
    /// A Kafka error code answered for `context` (e.g. "creating topic t"), or `None` for 0.
    pub fn from_code(
        context: impl Into<String>,
        code: i16,
        message: Option<String>,
    ) -> Option<Self> {
        if code == 0 {
            return None;
        }
        let code = skiff_types::ErrorCode::from_code(code)
            .map_or_else(|| format!("error code {code}"), |e| e.to_string());
        Some(CliError::Kafka {
            context: context.into(),
            code,
            message,
        })
    }
}

/// What a command returns: its exit code, or an error printed by [`run`].
pub type CliResult = Result<ExitCode, CliError>;
