//! Stock Kafka clients run as child processes: kcat, Python scripts under Debian's or the
//! project venv's interpreter, and node scripts using kafkajs.
//!
//! Mental model: each script under `tests/compat/py/` or `tests/compat/js/` is called as
//! `SCRIPT COMMAND JSON` and prints exactly ONE JSON line on stdout (its results; expected
//! client-side errors such as a failed delivery are data in that JSON, not a failed exit).
//! Anything else is a harness failure and panics with the script's output. Where the clients
//! come from (installed by `./scripts/test.sh`): kcat and `python3-confluent-kafka` are Debian
//! packages (librdkafka 2.0.2, run with `/usr/bin/python3`); confluent-kafka, kafka-python and
//! their codec libraries are pinned in `compat/requirements.txt` and live in `<repo>/.venv`;
//! kafkajs is pinned in `compat/package-lock.json` and lives in `<repo>/compat/node_modules`.
//!
//! Every client runs without the cargo build directories on `LD_LIBRARY_PATH`
//! ([`client_library_path`]): `cargo test`/`nextest` put the build-script output of `rdkafka-sys`
//! there, whose `librdkafka.so.1` (2.12) would otherwise replace Debian's 2.0.2 in kcat and in
//! `/usr/bin/python3`'s confluent-kafka, silently testing another client than the one named.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::process::{Background, Output, run};

/// Default deadline for one client command.
pub const CLIENT_DEADLINE: Duration = Duration::from_secs(45);

const INSTALL: &str = "Install the client toolchain with ./scripts/test.sh \
     (apt: kcat python3-confluent-kafka; .venv from compat/requirements.txt; npm ci in compat/).";

/// The workspace root (`tests/compat/../..`).
pub fn repo_root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    match manifest.parent().and_then(|p| p.parent()) {
        Some(root) => root.to_path_buf(),
        None => panic!(
            "CARGO_MANIFEST_DIR {} has no grandparent",
            manifest.display()
        ),
    }
}

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `LD_LIBRARY_PATH` for a client process: the test process's entries minus those inside the
/// cargo target directory (where `rdkafka-sys` builds its own librdkafka); `None` when nothing
/// is left, so the variable is removed.
pub fn client_library_path() -> Option<std::ffi::OsString> {
    let current = std::env::var_os("LD_LIBRARY_PATH")?;
    let target = crate::broker::target_dir();
    let kept: Vec<PathBuf> = std::env::split_paths(&current)
        .filter(|p| !p.starts_with(&target) && !p.as_os_str().is_empty())
        .collect();
    if kept.is_empty() {
        return None;
    }
    std::env::join_paths(kept).ok()
}

/// Applies [`client_library_path`] to a client command.
fn isolate(cmd: &mut Command) {
    match client_library_path() {
        Some(p) => cmd.env("LD_LIBRARY_PATH", p),
        None => cmd.env_remove("LD_LIBRARY_PATH"),
    };
}

/// Runs `kcat ARGS` with `stdin`; panics if kcat is missing or does not finish in time.
/// The exit status is the caller's to check.
pub fn kcat(args: &[&str], stdin: &[u8]) -> Output {
    let mut cmd = Command::new("kcat");
    cmd.args(args);
    isolate(&mut cmd);
    run(&mut cmd, stdin, CLIENT_DEADLINE, "kcat", INSTALL)
}

/// Which Python interpreter (and so which client build) runs a script.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Python {
    /// `/usr/bin/python3` with Debian's python3-confluent-kafka 1.7.0 (librdkafka 2.0.2).
    Debian,
    /// `<repo>/.venv/bin/python` with the PyPI clients of `compat/requirements.txt`.
    PyPi,
}

impl Python {
    /// The interpreter's path.
    pub fn interpreter(self) -> PathBuf {
        match self {
            Python::Debian => PathBuf::from("/usr/bin/python3"),
            Python::PyPi => repo_root().join(".venv/bin/python"),
        }
    }
}

fn python_command(py: Python, script: &str, command: &str, params: &Value) -> Command {
    let interp = py.interpreter();
    assert!(
        interp.exists(),
        "{} not found (needed for {py:?} clients). {INSTALL}",
        interp.display()
    );
    let mut cmd = Command::new(interp);
    cmd.arg(crate_dir().join("py").join(script))
        .arg(command)
        .arg(params.to_string())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONUNBUFFERED", "1");
    isolate(&mut cmd);
    cmd
}

pub(crate) fn parse_result(out: &Output, what: &str) -> Value {
    let hint =
        if out.stderr.contains("No module named") || out.stderr.contains("Cannot find module") {
            format!("\nA client library is missing. {INSTALL}")
        } else {
            String::new()
        };
    out.assert_success(&format!("{what}{hint}"));
    let Some(line) = out.stdout.lines().rev().find(|l| !l.trim().is_empty()) else {
        panic!("{what} printed no result line; stderr:\n{}", out.stderr)
    };
    serde_json::from_str(line).unwrap_or_else(|e| {
        panic!(
            "{what} printed a result line that is not JSON ({e}): {line}\nstderr:\n{}",
            out.stderr
        )
    })
}

/// Runs `tests/compat/py/SCRIPT COMMAND PARAMS` under `py` and returns its JSON result line.
pub fn python(py: Python, script: &str, command: &str, params: &Value) -> Value {
    let mut cmd = python_command(py, script, command, params);
    let what = format!("{py:?} python {script} {command}");
    let out = run(&mut cmd, b"", CLIENT_DEADLINE, &what, INSTALL);
    parse_result(&out, &what)
}

/// Starts `tests/compat/py/SCRIPT COMMAND PARAMS` under `py` in the background (progress on
/// stderr; closing its stdin asks it to stop; see [`finish_json`]).
pub fn python_background(py: Python, script: &str, command: &str, params: &Value) -> Background {
    let mut cmd = python_command(py, script, command, params);
    Background::start(
        &mut cmd,
        &format!("{py:?} python {script} {command}"),
        INSTALL,
    )
}

/// Stops a background script (closes its stdin) and returns its JSON result line.
pub fn finish_json(bg: Background, timeout: Duration) -> Value {
    let out = bg.finish(timeout);
    parse_result(&out, "background script")
}

/// Runs `node tests/compat/js/SCRIPT COMMAND PARAMS` with kafkajs from `compat/node_modules`
/// and returns its JSON result line.
pub fn node(script: &str, command: &str, params: &Value) -> Value {
    let modules = repo_root().join("compat/node_modules");
    assert!(
        modules.join("kafkajs").is_dir(),
        "{} not found. {INSTALL}",
        modules.join("kafkajs").display()
    );
    let mut cmd = Command::new("node");
    cmd.arg(crate_dir().join("js").join(script))
        .arg(command)
        .arg(params.to_string())
        .env("NODE_PATH", &modules)
        .env("KAFKAJS_NO_PARTITIONER_WARNING", "1");
    isolate(&mut cmd);
    let what = format!("node {script} {command}");
    let out = run(&mut cmd, b"", CLIENT_DEADLINE, &what, INSTALL);
    parse_result(&out, &what)
}
