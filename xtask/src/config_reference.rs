//! `cargo run -p xtask -- config-reference [--check]`: writes (or checks) `docs/configuration.md`.
//!
//! Mental model: the reference is rendered by `skiff_config::reference::render_reference`
//! (pure, deterministic); xtask does not link the broker's crates, so it runs the
//! `config_reference` example of skiff-config (`cargo run -q -p skiff-config --example
//! config_reference`), takes its stdout and writes it to the file, or with `--check` compares.
//! The test `crates/config/tests/reference_current.rs` makes the same comparison in CI.

use std::path::Path;
use std::process::Command;

/// The reference's path relative to the repository root (same as skiff-config's constant).
pub const REFERENCE_PATH: &str = "docs/configuration.md";

/// What happened.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Written,
    UpToDate,
    Drift,
}

/// Renders the reference through the example and writes or compares it.
pub fn run(root: &Path, check: bool) -> Result<Outcome, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let out = Command::new(cargo)
        .current_dir(root)
        .args([
            "run",
            "-q",
            "-p",
            "skiff-config",
            "--example",
            "config_reference",
        ])
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "the config_reference example failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let rendered =
        String::from_utf8(out.stdout).map_err(|e| format!("the rendering is not UTF-8: {e}"))?;
    let path = root.join(REFERENCE_PATH);
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    if on_disk == rendered {
        return Ok(Outcome::UpToDate);
    }
    if check {
        return Ok(Outcome::Drift);
    }
    std::fs::write(&path, rendered).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(Outcome::Written)
}
