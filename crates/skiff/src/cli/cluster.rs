//! `skiff cluster ...` (stub: being written).

use super::{CliError, CliResult, ClientArgs};

#[derive(clap::Subcommand, Debug)]
pub enum ClusterCommand {
    /// (stub)
    List {
        #[command(flatten)]
        client: ClientArgs,
    },
}

pub fn run(_cmd: ClusterCommand) -> CliResult {
    Err(CliError::Other(
        "skiff cluster is not implemented yet".into(),
    ))
}
