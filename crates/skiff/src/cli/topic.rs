//! `skiff topic ...` (stub: being written).

use super::{CliError, CliResult, ClientArgs};

#[derive(clap::Subcommand, Debug)]
pub enum TopicCommand {
    /// (stub)
    List {
        #[command(flatten)]
        client: ClientArgs,
    },
}

pub fn run(_cmd: TopicCommand) -> CliResult {
    Err(CliError::Other("skiff topic is not implemented yet".into()))
}
