//! A `skiff serve` child process for one test: a temp log dir, a loopback port, the ready line,
//! SIGTERM/SIGKILL restarts on the same port and dir, and kill on drop.
//!
//! Mental model: the binary is the workspace's `target/debug/skiff` (honouring
//! `CARGO_TARGET_DIR`; `SKIFF_BIN` overrides the path), built beforehand by
//! `cargo build --workspace` (nextest builds it with the workspace). The first start binds port
//! 0 and learns the real port from the ready line
//! `skiff ready listener=PLAINTEXT bind=127.0.0.1:P advertised=127.0.0.1:P`; restarts pass that
//! port explicitly so clients reconnect to the same address. stderr (the broker's tracing log)
//! is appended to `broker.log` in the temp dir across restarts and shown by [`Broker::logs`];
//! stdout is drained by a thread (the ready line goes to a channel). `RUST_LOG` defaults to
//! `info` and can be overridden with `SKIFF_COMPAT_LOG`.
//!
//! One broker at a time per test process: a [`Broker`] holds a process-wide lock for its
//! lifetime, so plain `cargo test` (threads in one process) runs these tests serially as nextest
//! does (a process per test, group `e2e`); two brokers in one test would deadlock, so don't.

use std::fs::OpenOptions;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Mutex, MutexGuard, mpsc};
use std::time::{Duration, Instant};

use tempfile::TempDir;

/// How long a broker may take to print its ready line, and to exit after SIGTERM.
pub const BROKER_DEADLINE: Duration = Duration::from_secs(30);

/// Serialises brokers (and so the tests using them) within one process.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// One running (or stopped, between restarts) broker process.
#[derive(Debug)]
pub struct Broker {
    child: Option<Child>,
    port: u16,
    dir: TempDir,
    overrides: Vec<String>,
    starts: u32,
    /// The admin HTTP port when `skiff.admin.listener` is among the overrides (per start).
    admin_port: Option<u16>,
    // Declared last: released after the process is gone (fields drop after `Drop::drop`).
    _turn: MutexGuard<'static, ()>,
}

/// The cargo target directory: `CARGO_TARGET_DIR` (relative to the workspace root), else
/// `<root>/target`.
pub fn target_dir() -> PathBuf {
    let root = crate::clients::repo_root();
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(t) => {
            let t = PathBuf::from(t);
            if t.is_absolute() { t } else { root.join(t) }
        }
        None => root.join("target"),
    }
}

/// The broker binary: `SKIFF_BIN`, else `<target dir>/debug/skiff`.
pub fn skiff_binary() -> PathBuf {
    if let Some(bin) = std::env::var_os("SKIFF_BIN") {
        return PathBuf::from(bin);
    }
    let bin = target_dir().join("debug").join("skiff");
    assert!(
        bin.is_file(),
        "broker binary {} not found: run `cargo build --workspace` first (or set SKIFF_BIN)",
        bin.display()
    );
    bin
}

impl Broker {
    /// Starts a broker with default settings (plus a loopback listener and a temp log dir).
    pub fn start() -> Broker {
        Broker::start_with(&[])
    }

    /// Starts a broker with extra `--override KEY=VALUE` settings.
    pub fn start_with(overrides: &[(&str, &str)]) -> Broker {
        // A test that panicked while holding the lock poisons it; the next test may still run.
        let turn = ONE_AT_A_TIME
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let dir = tempfile::Builder::new()
            .prefix("skiff-compat-")
            .tempdir()
            .unwrap_or_else(|e| panic!("cannot create a temp dir: {e}"));
        let mut b = Broker {
            child: None,
            port: 0,
            dir,
            overrides: overrides.iter().map(|(k, v)| format!("{k}={v}")).collect(),
            starts: 0,
            admin_port: None,
            _turn: turn,
        };
        b.spawn();
        b
    }

    /// `127.0.0.1:PORT`, for `bootstrap.servers`.
    pub fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The listener port (the same across restarts).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The broker's `log.dirs` directory.
    pub fn log_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The directory of one partition's segment files.
    pub fn partition_dir(&self, topic: &str, partition: i32) -> PathBuf {
        self.log_dir().join(format!("{topic}-{partition}"))
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("broker.log")
    }

    /// The broker's log (stderr of every run so far), for failure messages.
    pub fn logs(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// The last `n` lines of [`Broker::logs`].
    pub fn logs_tail(&self, n: usize) -> String {
        let logs = self.logs();
        let lines: Vec<&str> = logs.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }

    fn spawn(&mut self) {
        assert!(self.child.is_none(), "broker already running");
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .unwrap_or_else(|e| panic!("cannot open the broker log file: {e}"));
        let filter = std::env::var("SKIFF_COMPAT_LOG").unwrap_or_else(|_| "info".to_owned());
        let mut cmd = Command::new(skiff_binary());
        cmd.arg("serve")
            .arg("--override")
            .arg(format!("log.dirs={}", self.log_dir().display()))
            .arg("--override")
            .arg(format!("listeners=PLAINTEXT://127.0.0.1:{}", self.port));
        for o in &self.overrides {
            cmd.arg("--override").arg(o);
        }
        let mut child = cmd
            .env("RUST_LOG", filter)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log))
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
        self.starts += 1;
        let Some(stdout) = child.stdout.take() else {
            panic!("broker stdout is not piped")
        };
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                // Keep draining after the test stops listening.
                let _ = tx.send(line);
            }
        });
        self.child = Some(child);
        let line = match rx.recv_timeout(BROKER_DEADLINE) {
            Ok(line) => line,
            Err(_) => {
                let status = self
                    .child
                    .as_mut()
                    .and_then(|c| c.try_wait().ok().flatten());
                panic!(
                    "broker (start #{}) printed no ready line within {BROKER_DEADLINE:?} (exit: {status:?}); log:\n{}",
                    self.starts,
                    self.logs_tail(60)
                );
            }
        };
        let port = line
            .strip_prefix("skiff ready listener=PLAINTEXT bind=127.0.0.1:")
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|p| p.parse::<u16>().ok())
            .unwrap_or_else(|| panic!("unexpected ready line: {line:?}"));
        assert!(
            line.ends_with(&format!("advertised=127.0.0.1:{port}")),
            "ready line advertises another address: {line:?}"
        );
        if self.port != 0 {
            assert_eq!(port, self.port, "restarted broker bound another port");
        }
        self.port = port;
        self.admin_port = None;
        if self
            .overrides
            .iter()
            .any(|o| o.starts_with("skiff.admin.listener="))
        {
            let line = rx
                .recv_timeout(BROKER_DEADLINE)
                .unwrap_or_else(|_| panic!("no admin ready line; log:\n{}", self.logs_tail(60)));
            let admin = line
                .strip_prefix("skiff ready admin bind=")
                .and_then(|addr| addr.rsplit(':').next())
                .and_then(|p| p.trim().parse::<u16>().ok())
                .unwrap_or_else(|| panic!("unexpected admin ready line: {line:?}"));
            self.admin_port = Some(admin);
        }
    }

    /// The admin HTTP port of the current run, when `skiff.admin.listener` is among the
    /// overrides (learned from the admin ready line).
    pub fn admin_port(&self) -> Option<u16> {
        self.admin_port
    }

    /// `skiff admin --url <this broker's admin port> --json <args...>`, parsed: the operator
    /// CLI's view (needs `skiff.admin.listener=127.0.0.1:0` among the overrides).
    pub fn admin_cli(&self, args: &[&str]) -> serde_json::Value {
        let port = self
            .admin_port
            .unwrap_or_else(|| panic!("start the broker with skiff.admin.listener"));
        let out = Command::new(skiff_binary())
            .arg("admin")
            .arg("--url")
            .arg(format!("http://127.0.0.1:{port}"))
            .arg("--json")
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("cannot run skiff admin: {e}"));
        assert!(
            out.status.success(),
            "skiff admin {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "skiff admin {args:?} printed no JSON ({e}): {}",
                String::from_utf8_lossy(&out.stdout)
            )
        })
    }

    fn child(&mut self) -> &mut Child {
        match self.child.as_mut() {
            Some(c) => c,
            None => panic!("broker is not running"),
        }
    }

    /// Sends SIGTERM and waits (at most 30 s) for the process to exit; returns its status.
    pub fn stop(&mut self) -> ExitStatus {
        let pid = self.child().id();
        let sent = Command::new("kill")
            .arg("-TERM")
            .arg(pid.to_string())
            .status()
            .unwrap_or_else(|e| panic!("cannot run kill: {e}"));
        assert!(sent.success(), "kill -TERM {pid} failed");
        let deadline = Instant::now() + BROKER_DEADLINE;
        loop {
            match self.child().try_wait() {
                Ok(Some(status)) => {
                    self.child = None;
                    return status;
                }
                Ok(None) if Instant::now() >= deadline => panic!(
                    "broker did not exit within {BROKER_DEADLINE:?} of SIGTERM; log:\n{}",
                    self.logs_tail(60)
                ),
                Ok(None) => std::thread::sleep(Duration::from_millis(10)),
                Err(e) => panic!("waiting for the broker: {e}"),
            }
        }
    }

    /// Kills the process with SIGKILL (`kill -9`) and reaps it.
    pub fn kill9(&mut self) {
        let child = self.child();
        child
            .kill()
            .unwrap_or_else(|e| panic!("cannot SIGKILL the broker: {e}"));
        let _ = child.wait();
        self.child = None;
    }

    /// Starts the broker again on the same port and log dir (after [`Broker::stop`] or
    /// [`Broker::kill9`]) and waits for its ready line.
    pub fn restart(&mut self) {
        self.spawn();
    }

    /// Whether the log dir carries the clean-shutdown marker.
    pub fn has_clean_shutdown_marker(&self) -> bool {
        self.log_dir().join(".kafka_cleanshutdown").exists()
    }

    /// The temp dir holding the log dir and the broker log.
    pub fn temp_dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        if std::thread::panicking() {
            eprintln!(
                "--- skiff broker log (last 80 lines, {}) ---\n{}",
                self.log_path().display(),
                self.logs_tail(80)
            );
        }
    }
}
