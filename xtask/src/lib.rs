//! Skiff's developer tasks.
//!
//! - `cargo run -p xtask -- codegen [--check]` turns Kafka's JSON message definitions
//!   (`../shared/kafka-message-specs`, override with `SKIFF_MESSAGE_SPECS`) into the Rust codec
//!   in `crates/protocol/src/generated/`.
//! - `cargo run -p xtask -- tidy` checks the repository rules rustc and clippy do not state:
//!   crate layering (the table in ARCHITECTURE.md), clock reads only in the clock module, files
//!   of at most 800 lines, and the configuration that makes clippy refuse `unwrap`/`expect`
//!   outside tests ([`tidy`]). It prints `path:line: rule: message` per violation and exits 1
//!   if there is any.
//!
//! Codegen pipeline: [`model`] (serde mirror of the JSON, comment stripping, version ranges)
//! -> [`ir`] (resolved structs with versions clipped to what Skiff generates) -> [`emit`] /
//! [`emit_random`] / [`emit_files`] (Rust source as strings) -> rustfmt -> write or compare
//! ([`codegen`]). What gets generated, and for which versions, is the one table in [`table`];
//! versions newer than the shared definitions come from Skiff's patches ([`patches`],
//! `xtask/specs/`).

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod codegen;
pub mod emit;
pub mod emit_files;
pub mod emit_random;
pub mod ir;
pub mod model;
pub mod names;
pub mod patches;
pub mod table;
pub mod tidy;

/// The repository root (the parent of this crate's directory). Prefers the `CARGO_MANIFEST_DIR`
/// cargo sets at run time over the compile-time one, so a moved checkout still finds itself.
pub fn repo_root() -> std::path::PathBuf {
    let here = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    here.parent()
        .map(std::path::Path::to_path_buf)
        .unwrap_or(here)
}
