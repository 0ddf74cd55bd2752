//! The `skiff` binary: `skiff serve [--config FILE] [--override KEY=VALUE]...`, the storage
//! formatter `skiff format --cluster-id ID [--config FILE]` / `skiff format --random-cluster-id`
//! (module [`format`], Kafka's `kafka-storage.sh`), the local cluster `skiff dev [--nodes N]`
//! (module [`dev`]) and the operator CLI
//! `skiff admin [--url URL] [--json] partitions | partition TOPIC PARTITION` (module [`admin`]).
//!
//! Mental model: parse the command line (clap), load the configuration (precedence
//! `--override` > `KAFKA_*` environment > `--config` file > defaults; any error exits 2 with the
//! message on stderr), set up tracing on stderr (`RUST_LOG` filter, `--log-format json`
//! optional), start the server on a tokio runtime (a worker per CPU of the affinity mask), print one
//! `skiff ready listener=... bind=... advertised=...` line per listener on stdout (then
//! `skiff ready admin bind=...` if `skiff.admin.listener` is set), then wait for
//! SIGTERM/SIGINT and shut down cleanly (flush, checkpoints, clean-shutdown marker), exiting 0.
//! stdout carries only the ready lines; logs go to stderr.

mod admin;
mod cli;
mod dev;
mod format;
mod security;
mod settings;
mod summary;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};
use skiff_config::{BrokerConfig, ConfigSources};
use skiff_server::Server;

/// Exit code for configuration errors (and bad command lines, as clap does).
pub(crate) const EXIT_CONFIG: u8 = 2;
/// Exit code when the broker fails at runtime (bind, storage).
pub(crate) const EXIT_FAILURE: u8 = 1;
/// Shutdown must finish well within the 30 s an orchestrator waits.
const SHUTDOWN_MS_MAX: u64 = 25_000;

#[derive(Parser, Debug)]
#[command(name = "skiff", version, about = "A Kafka-compatible broker")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a broker in the foreground.
    Serve(ServeArgs),
    /// Format the log dirs of a node for a cluster (Kafka's `kafka-storage.sh format`), or
    /// print a new cluster id.
    Format(format::FormatArgs),
    /// Run a local cluster of combined nodes as child processes (one node today).
    Dev(dev::DevArgs),
    /// Inspect a running broker through its admin HTTP port (`skiff.admin.listener`).
    Admin(admin::AdminArgs),
    #[command(flatten)]
    Client(cli::CliCommand),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completion { shell: clap_complete::Shell },
    /// Write man pages (skiff.1 and one per subcommand) into a directory.
    Man {
        /// The directory to write into (created if missing).
        #[arg(long, default_value = "man")]
        out: PathBuf,
    },
}

#[derive(clap::Args, Debug)]
struct ServeArgs {
    /// A Kafka server.properties file.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Set one configuration key (repeatable); the value is everything after the first `=`.
    #[arg(long = "override", value_name = "KEY=VALUE")]
    overrides: Vec<String>,
    /// Log line format on stderr.
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(args) => serve(args),
        Command::Format(args) => format::run(args),
        Command::Dev(args) => dev::run(args),
        Command::Admin(args) => admin::run(args),
        Command::Client(c) => cli::run(c),
        Command::Completion { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut cmd, "skiff", &mut std::io::stdout());
            ExitCode::SUCCESS
        }
        Command::Man { out } => match write_man_pages(&out) {
            Ok(n) => {
                println!("wrote {n} man pages to {}", out.display());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("skiff: cannot write man pages to {}: {e}", out.display());
                ExitCode::from(EXIT_FAILURE)
            }
        },
    }
}

/// Writes `skiff.1` and `skiff-<sub>[-<subsub>].1` for every subcommand into `dir`; the count.
fn write_man_pages(dir: &std::path::Path) -> std::io::Result<usize> {
    fn walk(cmd: &clap::Command, name: String, dir: &std::path::Path) -> std::io::Result<usize> {
        let mut buf = Vec::new();
        clap_mangen::Man::new(cmd.clone())
            .title(name.to_uppercase())
            .render(&mut buf)?;
        std::fs::write(dir.join(format!("{name}.1")), buf)?;
        let mut n = 1;
        for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
            n += walk(sub, format!("{name}-{}", sub.get_name()), dir)?;
        }
        Ok(n)
    }
    std::fs::create_dir_all(dir)?;
    let mut cmd = <Cli as clap::CommandFactory>::command();
    cmd.build();
    walk(&cmd, "skiff".into(), dir)
}

fn init_tracing(format: LogFormat) {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

/// The configuration from `--config`, the `KAFKA_*` environment and `--override`s; an error
/// is printed (`skiff: configuration error: ...`) and is exit code 2.
pub(crate) fn load_config(
    file: Option<PathBuf>,
    overrides: Vec<String>,
) -> Result<BrokerConfig, ExitCode> {
    let mut sources = ConfigSources::from_process_env();
    sources.file = file;
    sources.overrides = overrides;
    BrokerConfig::load(sources).map_err(|e| {
        eprintln!("skiff: configuration error: {e}");
        ExitCode::from(EXIT_CONFIG)
    })
}

fn serve(args: ServeArgs) -> ExitCode {
    init_tracing(args.log_format);
    let config = match load_config(args.config, args.overrides) {
        Ok(c) => c,
        Err(code) => return code,
    };
    // The one clock of this broker (issue 13 item 3): everything below reads time through it.
    let clock = skiff_types::Clock::system();
    let mut server_settings = settings::server_settings(&config, clock);
    match security::security_settings(&config) {
        Ok(sec) => server_settings.security = sec,
        Err(e) => {
            eprintln!("skiff: configuration error: {e}");
            return ExitCode::from(EXIT_CONFIG);
        }
    }
    match settings::admin_bind(&config) {
        Ok(bind) => server_settings.admin_bind = bind,
        Err(e) => {
            eprintln!("skiff: configuration error: {e}");
            return ExitCode::from(EXIT_CONFIG);
        }
    }
    let summary_config = config.clone();
    let topic_configs = Arc::new(skiff_server::LiveConfig::new(config));
    let workers = match worker_threads(std::env::var("TOKIO_WORKER_THREADS").ok().as_deref()) {
        Ok(n) => n,
        Err(e) => {
            eprintln!("skiff: configuration error: {e}");
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .thread_name("skiff-worker")
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("skiff: cannot start the async runtime: {e}");
            return ExitCode::from(EXIT_FAILURE);
        }
    };
    let code = runtime.block_on(async move {
        // Signal handlers first: a SIGTERM that arrives right after the ready line (or during
        // start-up) must shut down cleanly, not hit the default action and kill the process.
        let signals = match Signals::install() {
            Ok(s) => Some(s),
            Err(e) => {
                tracing::error!(error = %e, "cannot listen for signals");
                None
            }
        };
        let server = match Server::start(server_settings, topic_configs).await {
            Ok(s) => s,
            Err(e) if e.is_configuration() => {
                tracing::error!(error = %e, "startup refused");
                eprintln!("skiff: configuration error: {e}");
                return ExitCode::from(EXIT_CONFIG);
            }
            Err(e) => {
                tracing::error!(error = %e, "startup failed");
                eprintln!("skiff: startup failed: {e}");
                return ExitCode::from(EXIT_FAILURE);
            }
        };
        summary::log(&summary_config, &server);
        {
            let mut out = std::io::stdout().lock();
            for l in server.listeners() {
                let _ = writeln!(out, "{}", l.ready_line());
            }
            if let Some(line) = server.admin_ready_line() {
                let _ = writeln!(out, "{line}");
            }
            let _ = out.flush();
        }
        let mut fatal = None;
        match signals {
            Some(mut s) => tokio::select! {
                _ = s.wait() => {}
                m = server.fatal() => fatal = Some(m),
            },
            None => tracing::error!("no signal handlers; shutting down"),
        }
        if let Some(m) = &fatal {
            tracing::error!(error = %m, "the metadata quorum cannot go on safely; stopping");
            eprintln!("skiff: configuration error: {m}");
        }
        match tokio::time::timeout(Duration::from_millis(SHUTDOWN_MS_MAX), server.shutdown()).await
        {
            Ok(Ok(())) if fatal.is_some() => ExitCode::from(EXIT_CONFIG),
            Ok(Ok(())) => ExitCode::SUCCESS,
            Ok(Err(e)) => {
                tracing::error!(error = %e, "shutdown failed");
                ExitCode::from(EXIT_FAILURE)
            }
            Err(_) => {
                tracing::error!("shutdown did not finish in time");
                ExitCode::from(EXIT_FAILURE)
            }
        }
    });
    // Connections still draining must not hold the process open.
    runtime.shutdown_timeout(Duration::from_secs(1));
    code
}

/// SIGTERM and SIGINT streams, installed before the server starts.
struct Signals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

impl Signals {
    fn install() -> std::io::Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Self {
            term: signal(SignalKind::terminate())?,
            int: signal(SignalKind::interrupt())?,
        })
    }

    async fn wait(&mut self) {
        tokio::select! {
            _ = self.term.recv() => tracing::info!("SIGTERM received"),
            _ = self.int.recv() => tracing::info!("SIGINT received"),
        }
    }
}

/// The runtime's worker threads: one per CPU this process may run on (the affinity mask, so a
/// broker pinned to one core runs one worker and pays no cross-worker wake-ups), or
/// `TOKIO_WORKER_THREADS` (a positive integer) when set.
fn worker_threads(env: Option<&str>) -> Result<usize, String> {
    match env {
        None => Ok(std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)),
        Some(v) => match v.trim().parse::<usize>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(format!(
                "TOKIO_WORKER_THREADS={v:?}: expected a positive number of worker threads"
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::worker_threads;

    #[test]
    fn worker_threads_from_affinity_or_env() {
        assert!(worker_threads(None).is_ok_and(|n| n >= 1));
        assert_eq!(worker_threads(Some("3")), Ok(3));
        assert_eq!(worker_threads(Some(" 1 ")), Ok(1));
        for bad in ["0", "-1", "two", ""] {
            let e = worker_threads(Some(bad)).unwrap_err();
            assert!(e.contains("positive number"), "{bad}: {e}");
        }
    }
}
