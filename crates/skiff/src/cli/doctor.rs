//! `skiff doctor` (stub: being written).

use super::{CliError, CliResult, ClientArgs};

#[derive(clap::Args, Debug)]
pub struct DoctorArgs {
    #[command(flatten)]
    pub client: ClientArgs,
}

pub fn run(_args: DoctorArgs) -> CliResult {
    Err(CliError::Other(
        "skiff doctor is not implemented yet".into(),
    ))
}
