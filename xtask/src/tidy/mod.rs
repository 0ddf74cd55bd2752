//! `tidy`: repository rules that neither rustc nor clippy state, checked from the files alone.
//!
//! Mental model: each check is a pure function from file texts (and paths) to
//! [`Violation`]s; [`run`] only walks the tree and reads files. The four rules:
//!
//! - `layering` ([`layering`]): the `Ln` column of the crate table at the top of
//!   ARCHITECTURE.md is the layer of each `crates/<dir>/`. Every `skiff-*` dependency of a crate
//!   (`[dependencies]`, `[dev-dependencies]`, `[build-dependencies]`, target-specific ones
//!   included: a test that needs a higher crate belongs to that crate) must be at a strictly
//!   lower layer. A `crates/*` dir missing from the table, or a table row without a dir, is a
//!   violation.
//! - `clock` ([`source`]): `SystemTime::now` / `Instant::now` (std's and tokio's) only in
//!   files whose path contains `clock`, or under a `tests/` directory; `bench/`, `xtask/` and
//!   `tests/compat/` are not checked. Comment lines (`//`) are not code and are skipped.
//! - `file-length` ([`source`]): every `.rs` file of the workspace (crates, bench, xtask,
//!   tests/compat; not target/ or fuzz/) has at most [`source::MAX_LINES`] lines, except files
//!   whose first line contains `@generated`.
//! - `unwrap` ([`lints`]): clippy's `unwrap_used` / `expect_used` do the real work; tidy checks
//!   that nobody can opt out silently: both lints are set (warn or deny; the test command runs
//!   clippy with `-D warnings`) in the root `[workspace.lints.clippy]`, `clippy.toml` allows them
//!   in tests (`allow-unwrap-in-tests`, `allow-expect-in-tests`), every workspace member has
//!   `[lints] workspace = true`, and no `allow(clippy::unwrap_used|expect_used)` appears in
//!   non-test code (`cfg_attr(test, ...)`, an item right under `#[cfg(test)]`, and files under
//!   `tests/` or named `tests.rs` are test code).
//!
//! Output: one `path:line: rule: message` per violation (paths relative to the root); the
//! command exits 1 if there is any, 0 otherwise.

pub mod layering;
pub mod lints;
pub mod source;

use std::fmt;
use std::path::{Path, PathBuf};

/// One broken rule at one place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Relative to the repository root, `/`-separated.
    pub path: String,
    /// 1-based.
    pub line: usize,
    pub rule: &'static str,
    pub message: String,
}

impl Violation {
    pub fn new(path: &str, line: usize, rule: &'static str, message: impl Into<String>) -> Self {
        Self {
            path: path.to_string(),
            line,
            rule,
            message: message.into(),
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: {}: {}",
            self.path, self.line, self.rule, self.message
        )
    }
}

/// Runs every check over the tree at `root`. Errors are I/O errors reading it.
pub fn run(root: &Path) -> std::io::Result<Vec<Violation>> {
    let mut out = Vec::new();
    let read = |rel: &str| std::fs::read_to_string(root.join(rel));

    // layering + the per-crate half of the lints check
    let arch = read("ARCHITECTURE.md")?;
    let mut crates = Vec::new();
    for dir in sorted_dirs(&root.join("crates"))? {
        let Some(name) = dir.file_name().and_then(|n| n.to_str()).map(str::to_string) else {
            continue;
        };
        let rel = format!("crates/{name}/Cargo.toml");
        if let Ok(text) = read(&rel) {
            crates.push((name, rel, text));
        }
    }
    out.extend(layering::check(&arch, &crates));

    let mut members: Vec<(String, String)> = crates
        .iter()
        .map(|(_, rel, text)| (rel.clone(), text.clone()))
        .collect();
    for rel in [
        "bench/Cargo.toml",
        "xtask/Cargo.toml",
        "tests/compat/Cargo.toml",
    ] {
        if let Ok(text) = read(rel) {
            members.push((rel.to_string(), text));
        }
    }
    let root_manifest = read("Cargo.toml")?;
    let clippy_toml = read("clippy.toml").ok();
    out.extend(lints::check_config(
        &root_manifest,
        clippy_toml.as_deref(),
        &members,
    ));

    // source files
    for top in ["crates", "bench", "xtask", "tests/compat"] {
        let mut files = Vec::new();
        collect_rs(root, &root.join(top), &mut files)?;
        for rel in files {
            let text = read(&rel)?;
            out.extend(source::check_length(&rel, &text));
            if rel.starts_with("crates/") {
                out.extend(source::check_clock(&rel, &text));
                out.extend(lints::check_opt_outs(&rel, &text));
            } else if rel.starts_with("bench/src/") || rel.starts_with("tests/compat/src/") {
                out.extend(lints::check_opt_outs(&rel, &text));
            }
        }
    }
    Ok(out)
}

fn sorted_dirs(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    out.sort();
    Ok(out)
}

/// Every `.rs` file under `dir` (relative to `root`), skipping `target/` and `fuzz/`.
fn collect_rs(root: &Path, dir: &Path, out: &mut Vec<String>) -> std::io::Result<()> {
    if !dir.is_dir() {
        return Ok(());
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    entries.sort();
    for p in entries {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if p.is_dir() {
            if name == "target" || name == "fuzz" || name.starts_with('.') || name == "node_modules"
            {
                continue;
            }
            collect_rs(root, &p, out)?;
        } else if name.ends_with(".rs")
            && let Ok(rel) = p.strip_prefix(root)
        {
            let rel: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            out.push(rel.join("/"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn violation_format_is_path_line_rule_message() {
        let v = Violation::new("crates/a/src/lib.rs", 3, "clock", "no");
        assert_eq!(v.to_string(), "crates/a/src/lib.rs:3: clock: no");
    }
}
