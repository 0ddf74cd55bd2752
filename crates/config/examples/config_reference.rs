//! Prints the configuration reference (`docs/configuration.md`) on stdout.
//!
//! Mental model: a thin wrapper over [`skiff_config::reference::render_reference`] so that
//! `cargo run -p xtask -- config-reference` can write the file without xtask depending on the
//! broker's crates. Deterministic: the output depends only on the key catalogue.

use std::io::Write;

fn main() -> std::process::ExitCode {
    let doc = skiff_config::reference::render_reference();
    match std::io::stdout().lock().write_all(doc.as_bytes()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("config_reference: cannot write stdout: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
