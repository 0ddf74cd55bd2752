//! `skiff config ...` (stub: being written).

use super::{CliError, CliResult, ClientArgs};

#[derive(clap::Subcommand, Debug)]
pub enum ConfigCommand {
    /// (stub)
    List {
        #[command(flatten)]
        client: ClientArgs,
    },
}

pub fn run(_cmd: ConfigCommand) -> CliResult {
    Err(CliError::Other(
        "skiff config is not implemented yet".into(),
    ))
}
