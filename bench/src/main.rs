//! `skiff-bench`: the benchmark driver. One command prints one table with every figure of a
//! benchmark and its ratio to the machine limit measured in the same run.
//!
//! Mental model: benchmarks are programs, not tests (they are never run in CI). Each subcommand
//! owns a scratch directory (`--dir`, default `./bench-data`, i.e. on the repository's
//! filesystem), creates everything it measures inside it, and deletes what it created when it
//! is done. Figures are medians with `[min-max]` over repeated runs, as
//! `shared/design/performance.md` asks, and all MB are 10^6 bytes (the unit `dd` prints).
//!
//! Subcommands:
//! - `storage` (issue 2): raw write limit (`dd`), fdatasync loop, append / read throughput,
//!   index and offset-for-timestamp latency, durable mode with group commit. See [`storage`].
//! - `delivery` (issue 8): produce CPU-ms/MB on delay-enabled topics (0/1/100% delayed) vs a
//!   plain topic, and bytes per pending delayed batch at 1M pending. See [`delivery`].
//! - `produce` (issue 5): a pipelining Produce load generator over TCP (idempotent or not,
//!   or transactional: issue 18, [`txn_gen`]) that prints one `produce: key=value ...` line.
//!   See [`produce_gen`].
//! - `fetch` / `topic` (issue 18): a consumer's Fetch loop (read_committed or
//!   read_uncommitted) with the broker's CPU per MB, and CreateTopics / DeleteTopics for the
//!   cells of `bench/transactions/`. See [`fetch_gen`].
//!
//! - `compaction` (issue 7): cleaner throughput against raw read+write, producer CPU with and
//!   without a cleaner. See [`compaction`].
//! - `sendfile-floor` (issue 4, C1): one side of a bare sendfile transfer over TCP, the
//!   kernel's floor for a catch-up read. See [`sendfile_floor`].
//! - `partitions` (issue 12 item 11): runs a `skiff` binary with 5,000 partitions: produce
//!   req/s per 1-s window and latency across all of them, unclean/clean restart to ready,
//!   SIGTERM shutdown. See [`partitions`].
//!
//! - `latency-floor` (issue 14, p99.9/p50): one side of a bare relay (loopback TCP both ways,
//!   a log's writes and roll flushes, no protocol), the machine's floor under the broker
//!   latency phase. See [`latency_floor`].
//! - `cluster` (issue 16): a 3-node KRaft cluster of `skiff` processes: CreateTopics/s through
//!   the metadata quorum (to the controller and forwarded), controller failover time after a
//!   kill -9, idle CPU per node. See [`cluster`].
//!
//! Threads: the driver is single-threaded except the multi-writer durable cell, which shares
//! one `Log` behind a mutex exactly as a broker would.

mod append;
mod cluster;
mod compaction;
mod delivery;
mod durable;
mod fetch_gen;
mod index;
mod latency_floor;
mod machine;
mod partitions;
mod payload;
mod produce_gen;
mod produce_plan;
mod read;
mod report;
mod sendfile_floor;
mod storage;
mod txn_gen;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "skiff-bench",
    about = "Skiff benchmarks: one command, one table of figures."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// The storage engine benchmark (issue 2): raw limits, append, read, index lookups,
    /// offset-for-timestamp and durable mode, in one run.
    Storage {
        /// Scratch directory (created if missing; what the benchmark writes there is deleted
        /// at the end). Keep it on the filesystem you want to measure: not a tmpfs.
        #[arg(long, default_value = "./bench-data")]
        dir: PathBuf,
        /// Shrinks every volume and duration for a smoke run (< 30 s); figures are meaningless.
        #[arg(long)]
        quick: bool,
        /// Runs only these sections (comma-separated; default all).
        #[arg(long, value_enum, value_delimiter = ',')]
        only: Vec<storage::Section>,
        /// Nominal batch sizes in bytes for the append, read and durable sections
        /// (comma-separated; default 16384,262144,1048576).
        #[arg(long, value_delimiter = ',')]
        batch_sizes: Vec<usize>,
    },
    /// Delayed delivery (issue 8): produce CPU on delay-enabled topics vs plain, memory of
    /// 1M pending delayed batches.
    Delivery {
        #[arg(long, default_value = "./bench-data")]
        dir: PathBuf,
        /// Smaller volumes for a smoke run; figures are meaningless.
        #[arg(long)]
        quick: bool,
    },
    /// A Produce load generator (issue 5): one connection, up to --max-in-flight requests
    /// pipelined, every answer checked; prints one `produce: key=value ...` line.
    Produce(produce_gen::Args),
    /// The log cleaner benchmark (issue 7): cleaner MB/s (10%/90% duplicate keys, uncompressed
    /// and lz4) against raw read+write, producer CPU-ms/MB with and without the cleaner.
    Compaction {
        #[arg(long, default_value = "./bench-data")]
        dir: PathBuf,
        #[arg(long)]
        quick: bool,
    },
    /// Many partitions (issue 12 item 11): starts the broker, creates one topic of
    /// --partitions partitions, produces across all of them (req/s per 1-s window, latency),
    /// then times unclean and clean restarts and SIGTERM shutdowns.
    Partitions(partitions::Args),
    /// One side of the sendfile floor of the broker benchmark's C1 cell (used by
    /// bench/broker/limits.py): a page-cache file over TCP in 1 MiB sendfile calls.
    SendfileFloor(sendfile_floor::Args),
    /// One side of the latency floor of the broker benchmark's latency phase (used by
    /// bench/broker/vs_kafka.py): a bare relay with a log's I/O, and its paced client.
    LatencyFloor(latency_floor::Args),
    /// A consumer's Fetch loop over a topic (issue 18): read_uncommitted or read_committed,
    /// N passes, the broker's CPU per MB; prints one `fetch: key=value ...` line.
    Fetch(fetch_gen::Args),
    /// CreateTopics / DeleteTopics of one topic (the transaction benchmark's cells).
    Topic(fetch_gen::TopicArgs),
    /// The metadata quorum of a 3-node cluster (issue 16): CreateTopics/s to the controller
    /// and through a forwarding node, controller failover time, idle CPU per node.
    Cluster(cluster::Args),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Storage {
            dir,
            quick,
            only,
            batch_sizes,
        } => storage::run(
            &dir,
            &storage::Options {
                quick,
                only,
                batch_sizes,
            },
        ),
        Command::Delivery { dir, quick } => delivery::run(&dir, &delivery::Options { quick }),
        Command::Produce(args) => produce_gen::main(args),
        Command::Compaction { dir, quick } => compaction::run(&dir, &compaction::Options { quick }),
        Command::SendfileFloor(args) => sendfile_floor::main(args),
        Command::LatencyFloor(args) => latency_floor::main(args),
        Command::Partitions(args) => partitions::main(args),
        Command::Cluster(args) => cluster::main(args),
        Command::Fetch(args) => fetch_gen::main(args),
        Command::Topic(args) => fetch_gen::topic_main(args),
    }
}
