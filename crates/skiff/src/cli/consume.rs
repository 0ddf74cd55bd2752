//! `skiff consume` (stub: being written).

use super::{CliError, CliResult, ClientArgs};

#[derive(clap::Args, Debug)]
pub struct ConsumeArgs {
    #[command(flatten)]
    pub client: ClientArgs,
}

pub fn run(_args: ConsumeArgs) -> CliResult {
    Err(CliError::Other(
        "skiff consume is not implemented yet".into(),
    ))
}
