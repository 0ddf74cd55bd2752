//! `skiff format --cluster-id ID [--config FILE] [--override KEY=VALUE]... [--ignore-formatted]`
//! and `skiff format --random-cluster-id`: Kafka's `kafka-storage.sh format -t ID -c FILE`
//! and `kafka-storage.sh random-uuid`.
//!
//! Mental model: load the node's configuration exactly as `skiff serve` does (same sources,
//! same checks, exit 2 on any error), check the cluster id as Kafka's `Uuid.fromString` reads
//! one, lock every log dir (a running broker's dirs are refused, its lock holder named), then
//! format them with `skiff_metadata::format` and print one line per dir on stdout, as Kafka
//! does. Exit codes: 0 formatted (or nothing to do with `--ignore-formatted`), 1 a refusal of
//! the dirs (as `kafka-storage.sh` exits 1), 2 a bad command line, configuration or id.

use std::path::PathBuf;
use std::process::ExitCode;

use skiff_metadata::format::{Step, format_storage};

use crate::{EXIT_CONFIG, EXIT_FAILURE};

#[derive(clap::Args, Debug)]
pub struct FormatArgs {
    /// The cluster id, the same on every node of a cluster (22 characters of URL-safe base64,
    /// as `skiff format --random-cluster-id` or `kafka-storage.sh random-uuid` print).
    #[arg(
        long,
        short = 't',
        value_name = "ID",
        required_unless_present = "random_cluster_id"
    )]
    cluster_id: Option<String>,
    /// Print a new random cluster id and exit (formats nothing).
    #[arg(long, conflicts_with_all = ["cluster_id", "config", "overrides", "ignore_formatted"])]
    random_cluster_id: bool,
    /// The node's server.properties (the one `skiff serve --config` will read).
    #[arg(long, short = 'c', value_name = "FILE")]
    config: Option<PathBuf>,
    /// Set one configuration key (repeatable), as `skiff serve --override`.
    #[arg(long = "override", value_name = "KEY=VALUE")]
    overrides: Vec<String>,
    /// Leave dirs already formatted for this cluster and node as they are and format the others.
    #[arg(long, short = 'g')]
    ignore_formatted: bool,
}

pub fn run(args: FormatArgs) -> ExitCode {
    if args.random_cluster_id {
        println!("{}", skiff_metadata::cluster_id::random());
        return ExitCode::SUCCESS;
    }
    let Some(cluster_id) = args.cluster_id else {
        eprintln!("skiff format: --cluster-id is required");
        return ExitCode::from(EXIT_CONFIG);
    };
    if let Err(e) = skiff_metadata::cluster_id::parse(&cluster_id) {
        eprintln!(
            "skiff format: invalid --cluster-id `{cluster_id}`: {e}; `skiff format --random-cluster-id` prints a valid one"
        );
        return ExitCode::from(EXIT_CONFIG);
    }
    let config = match crate::load_config(args.config, args.overrides) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let dirs = config.log_dirs();
    if dirs.is_empty() {
        eprintln!(
            "skiff: configuration error: At least one log directory must be defined via log.dirs or log.dir."
        );
        return ExitCode::from(EXIT_CONFIG);
    }
    let _locks = match skiff_storage::dir_lock::lock_dirs(&dirs) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("skiff format: {e}");
            return ExitCode::from(EXIT_FAILURE);
        }
    };
    match format_storage(&dirs, &cluster_id, config.node_id(), args.ignore_formatted) {
        Ok(steps) => {
            let mut any = false;
            for (i, (dir, step)) in steps.iter().enumerate() {
                if *step == Step::Format {
                    any = true;
                    let kind = if i == 0 { "metadata" } else { "data" };
                    println!(
                        "Formatting {kind} directory {} with cluster.id {cluster_id}.",
                        dir.display()
                    );
                }
            }
            if !any {
                println!("All of the log directories are already formatted.");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("skiff format: {e}");
            ExitCode::from(EXIT_FAILURE)
        }
    }
}
