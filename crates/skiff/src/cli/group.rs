//! `skiff group ...` (stub: being written).

use super::{CliError, CliResult, ClientArgs};

#[derive(clap::Subcommand, Debug)]
pub enum GroupCommand {
    /// (stub)
    List {
        #[command(flatten)]
        client: ClientArgs,
    },
}

pub fn run(_cmd: GroupCommand) -> CliResult {
    Err(CliError::Other("skiff group is not implemented yet".into()))
}
