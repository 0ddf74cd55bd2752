//! `skiff produce` (stub: being written).

use super::{CliError, CliResult, ClientArgs};

#[derive(clap::Args, Debug)]
pub struct ProduceArgs {
    #[command(flatten)]
    pub client: ClientArgs,
}

pub fn run(_args: ProduceArgs) -> CliResult {
    Err(CliError::Other(
        "skiff produce is not implemented yet".into(),
    ))
}
