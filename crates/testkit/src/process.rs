//! The process harness: a `skiff serve` child process for one test.
//!
//! Mental model: a [`BrokerBuilder`] describes one node (its `log.dirs`, extra
//! `--override k=v` settings, environment, whether the admin HTTP port is on); `start()`
//! spawns the binary with `listeners=PLAINTEXT://127.0.0.1:0`, waits (with a deadline) for the
//! ready line `skiff ready listener=PLAINTEXT bind=127.0.0.1:P ...` and, with the admin port
//! on, for `skiff ready admin bind=127.0.0.1:A`, and learns the ports from them. Restarts pass
//! the learned port explicitly, so clients reconnect to the same address; the admin port is
//! learned again on each start. stderr (the broker's tracing log) is appended to `broker.log`
//! in the broker's temp dir across restarts ([`Broker::logs`], printed when a test panics);
//! stdout is drained by a thread so the broker never blocks on a full pipe.
//!
//! Ownership: a [`Broker`] owns its child (killed on drop), its temp dir (which also holds the
//! default log dir) and its ports; nothing is process-global, so one test may run several
//! brokers (N nodes). The optional [`BrokerBuilder::one_at_a_time`] lock serialises brokers
//! within one test process for suites run by plain `cargo test` (compat).
//!
//! The binary is, in order: [`BrokerBuilder::binary`], `SKIFF_BIN`, `<target dir>/debug/skiff`
//! (honouring `CARGO_TARGET_DIR`). Tests of the `skiff` package pass
//! `env!("CARGO_BIN_EXE_skiff")`.

use std::fs::OpenOptions;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard, mpsc};
use std::time::Duration;

use tempfile::TempDir;

/// How long a broker may take to print its ready line, and to exit after a signal.
pub const BROKER_DEADLINE: Duration = Duration::from_secs(30);

/// Serialises brokers started with [`BrokerBuilder::one_at_a_time`] within one process.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The workspace root (two levels above this crate).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// The cargo target directory: `CARGO_TARGET_DIR` (relative to the workspace root), else
/// `<root>/target`.
pub fn target_dir() -> PathBuf {
    let root = repo_root();
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

/// A loopback port that was free a moment ago (for a listener a test must name up front,
/// e.g. a KRaft voter's controller port). Picked below the kernel's ephemeral range
/// (`net.ipv4.ip_local_port_range`), so no port-0 bind (a node's admin listener) and no
/// client socket can be handed the same port before the node binds it: that collision
/// failed cluster starts with "Address already in use" (seen in CI runs), and client
/// sockets in TIME_WAIT filled the ephemeral range. Ports are handed out in sequence from a
/// random start per process ([`PORT_CURSOR`]), so one process never hands the same port out
/// twice before wrapping (independent random draws did: two voters of one cluster got the
/// same controller port), and parallel test processes start far apart.
pub fn free_port() -> u16 {
    let below = ephemeral_start().saturating_sub(1);
    if below > 11_000 {
        let span = u32::from(below - 10_000);
        // The first call picks the start; 0 means "not started".
        let _ = PORT_CURSOR.compare_exchange(
            0,
            rand::random_range(1..=span),
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
        for _ in 0..500 {
            let n = PORT_CURSOR.fetch_add(1, Ordering::Relaxed);
            let port = 10_000 + u16::try_from(n % span).unwrap_or(0);
            if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
                return port;
            }
        }
    }
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("no free loopback port: {e}"))
}

/// Where [`free_port`] continues (an offset from port 10000); the one piece of process-wide
/// state here besides the one-at-a-time lock: it only spreads ports, nothing depends on it.
static PORT_CURSOR: AtomicU32 = AtomicU32::new(0);

/// The first port of the kernel's ephemeral range (Linux's default when it cannot be read).
fn ephemeral_start() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(32_768)
}

/// The port in `bind=HOST:PORT` of a ready line.
pub fn port_of(line: &str) -> u16 {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix("bind="))
        .and_then(|b| b.rsplit(':').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("unexpected ready line {line:?}"))
}

/// How a refused start ended: the exit code (`None` if it was still running at the deadline
/// and was killed) and everything it wrote to stderr.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub code: Option<i32>,
    pub stderr: String,
}

/// One node's settings; [`BrokerBuilder::start`] runs it.
#[derive(Debug, Clone)]
pub struct BrokerBuilder {
    binary: Option<PathBuf>,
    log_dirs: Option<Vec<PathBuf>>,
    overrides: Vec<String>,
    env: Vec<(String, String)>,
    admin: bool,
    one_at_a_time: bool,
    rust_log: Option<String>,
    serve_args: Vec<String>,
}

impl Default for BrokerBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl BrokerBuilder {
    pub fn new() -> BrokerBuilder {
        BrokerBuilder {
            binary: None,
            log_dirs: None,
            overrides: Vec::new(),
            env: Vec::new(),
            admin: false,
            one_at_a_time: false,
            rust_log: None,
            serve_args: Vec::new(),
        }
    }

    /// The `skiff` binary to run (default: `SKIFF_BIN`, else the target dir's debug build).
    pub fn binary(mut self, path: impl Into<PathBuf>) -> Self {
        self.binary = Some(path.into());
        self
    }

    /// Caller-supplied `log.dirs` (one or several, e.g. on a tmpfs); default: `<temp>/data`.
    pub fn log_dirs(mut self, dirs: &[&Path]) -> Self {
        self.log_dirs = Some(dirs.iter().map(|d| d.to_path_buf()).collect());
        self
    }

    /// One extra `--override KEY=VALUE`.
    pub fn set(mut self, key: &str, value: &str) -> Self {
        self.overrides.push(format!("{key}={value}"));
        self
    }

    /// Extra `--override` settings.
    pub fn overrides(mut self, kvs: &[(&str, &str)]) -> Self {
        for (k, v) in kvs {
            self.overrides.push(format!("{k}={v}"));
        }
        self
    }

    /// One environment variable of the broker process.
    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.env.push((key.to_owned(), value.to_owned()));
        self
    }

    /// Turns the admin HTTP port on (`skiff.admin.listener=127.0.0.1:0`).
    pub fn admin(mut self, on: bool) -> Self {
        self.admin = on;
        self
    }

    /// Holds a process-wide lock while the broker lives (brokers of this process run one at a
    /// time; two in one test would deadlock).
    pub fn one_at_a_time(mut self, on: bool) -> Self {
        self.one_at_a_time = on;
        self
    }

    /// Extra arguments of `skiff serve` (e.g. `--log-format json`), before the overrides.
    pub fn serve_args(mut self, args: &[&str]) -> Self {
        self.serve_args.extend(args.iter().map(|a| (*a).to_owned()));
        self
    }

    /// The broker's `RUST_LOG` (default `SKIFF_TEST_LOG`, else `info`).
    pub fn rust_log(mut self, filter: &str) -> Self {
        self.rust_log = Some(filter.to_owned());
        self
    }

    /// Whether the broker will print an admin ready line: the admin port is on through
    /// [`BrokerBuilder::admin`], an override or the Bitnami-style environment variable.
    fn admin_on(&self) -> bool {
        self.admin
            || self
                .overrides
                .iter()
                .any(|o| o.starts_with("skiff.admin.listener="))
            || self
                .env
                .iter()
                .any(|(k, _)| k == "KAFKA_CFG_SKIFF_ADMIN_LISTENER")
    }

    /// The `skiff serve` command for `log_dirs` and listener port `port` (0: any).
    fn serve(&self, log_dirs: &[PathBuf], port: u16) -> Command {
        let bin = self.binary.clone().unwrap_or_else(skiff_binary);
        let dirs: Vec<String> = log_dirs.iter().map(|d| d.display().to_string()).collect();
        let mut cmd = Command::new(bin);
        cmd.arg("serve")
            .args(&self.serve_args)
            .arg("--override")
            .arg(format!("listeners=PLAINTEXT://127.0.0.1:{port}"))
            .arg("--override")
            .arg(format!("log.dirs={}", dirs.join(",")));
        if self.admin {
            cmd.args(["--override", "skiff.admin.listener=127.0.0.1:0"]);
        }
        for o in &self.overrides {
            cmd.arg("--override").arg(o);
        }
        let filter = self.rust_log.clone().unwrap_or_else(|| {
            std::env::var("SKIFF_TEST_LOG").unwrap_or_else(|_| "info".to_owned())
        });
        cmd.env("RUST_LOG", filter);
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd.stdin(Stdio::null());
        cmd
    }

    /// The `skiff serve` command this builder would run (needs caller-supplied log dirs), for
    /// tests that drive the process themselves.
    pub fn command(&self) -> Command {
        let Some(dirs) = &self.log_dirs else {
            panic!("BrokerBuilder::command needs log_dirs")
        };
        self.serve(dirs, 0)
    }

    /// Runs a broker that must refuse to start (needs caller-supplied log dirs): waits at most
    /// 20 s for it to exit, then kills it.
    pub fn run_refused(&self) -> Refused {
        run_refused(&mut self.command())
    }

    /// Starts the broker and waits for its ready line(s).
    pub fn start(self) -> Broker {
        // A test that panicked while holding the lock poisons it; the next test may still run.
        let turn = self.one_at_a_time.then(|| {
            ONE_AT_A_TIME
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        });
        let dir = tempfile::Builder::new()
            .prefix("skiff-test-")
            .tempdir()
            .unwrap_or_else(|e| panic!("cannot create a temp dir: {e}"));
        let log_dirs = self
            .log_dirs
            .clone()
            .unwrap_or_else(|| vec![dir.path().join("data")]);
        let mut b = Broker {
            child: None,
            port: 0,
            admin_port: None,
            ready: String::new(),
            lines: None,
            log_dirs,
            starts: 0,
            settings: self,
            dir,
            _turn: turn,
        };
        b.spawn();
        b
    }
}

/// Runs `cmd` (a start that must be refused): its exit code within 20 s (else it is killed:
/// `None`) and its stderr.
pub fn run_refused(cmd: &mut Command) -> Refused {
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    let Some(mut pipe) = child.stderr.take() else {
        panic!("stderr is not piped")
    };
    let reader = std::thread::spawn(move || {
        let mut out = String::new();
        let _ = pipe.read_to_string(&mut out);
        out
    });
    let deadline = skiff_types::Clock::system().now() + Duration::from_secs(20);
    let code = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status.code(),
            Ok(None) if skiff_types::Clock::system().now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => panic!("waiting for {cmd:?}: {e}"),
        }
    };
    let stderr = reader.join().unwrap_or_default();
    Refused { code, stderr }
}

/// One running (or stopped, between restarts) broker process.
#[derive(Debug)]
pub struct Broker {
    child: Option<Child>,
    port: u16,
    admin_port: Option<u16>,
    ready: String,
    /// stdout lines of the current run after its ready line(s).
    lines: Option<mpsc::Receiver<String>>,
    log_dirs: Vec<PathBuf>,
    starts: u32,
    settings: BrokerBuilder,
    dir: TempDir,
    // Declared last: released after the process is gone (fields drop after `Drop::drop`).
    _turn: Option<MutexGuard<'static, ()>>,
}

impl Broker {
    /// A builder with default settings.
    pub fn builder() -> BrokerBuilder {
        BrokerBuilder::new()
    }

    /// Starts a broker with default settings, one at a time in this process.
    pub fn start() -> Broker {
        Broker::start_with(&[])
    }

    /// Starts a broker with extra `--override KEY=VALUE` settings, one at a time in this
    /// process (the compat suite's entry point).
    pub fn start_with(overrides: &[(&str, &str)]) -> Broker {
        BrokerBuilder::new()
            .overrides(overrides)
            .one_at_a_time(true)
            .rust_log(&std::env::var("SKIFF_COMPAT_LOG").unwrap_or_else(|_| "info".to_owned()))
            .start()
    }

    /// `127.0.0.1:PORT`, for `bootstrap.servers`.
    pub fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The listener port (the same across restarts).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The admin HTTP port of the current run, when the admin port is on.
    pub fn admin_port(&self) -> Option<u16> {
        self.admin_port
    }

    /// The listener ready line of the current run.
    pub fn ready_line(&self) -> &str {
        &self.ready
    }

    /// The process id of the current run.
    pub fn pid(&self) -> u32 {
        match &self.child {
            Some(c) => c.id(),
            None => panic!("broker is not running"),
        }
    }

    /// The first `log.dirs` entry.
    pub fn log_dir(&self) -> PathBuf {
        self.log_dirs[0].clone()
    }

    /// Every `log.dirs` entry.
    pub fn log_dirs(&self) -> &[PathBuf] {
        &self.log_dirs
    }

    /// The directory of one partition's segment files (in the first log dir).
    pub fn partition_dir(&self, topic: &str, partition: i32) -> PathBuf {
        self.log_dir().join(format!("{topic}-{partition}"))
    }

    /// The temp dir holding the default log dir and the broker log.
    pub fn temp_dir(&self) -> &Path {
        self.dir.path()
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("broker.log")
    }

    /// The broker's log (stderr of every run so far).
    pub fn logs(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// The last `n` lines of [`Broker::logs`].
    pub fn logs_tail(&self, n: usize) -> String {
        let logs = self.logs();
        let lines: Vec<&str> = logs.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }

    /// Whether the first log dir carries the clean-shutdown marker.
    pub fn has_clean_shutdown_marker(&self) -> bool {
        self.log_dir().join(".kafka_cleanshutdown").exists()
    }

    fn spawn(&mut self) {
        assert!(self.child.is_none(), "broker already running");
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .unwrap_or_else(|e| panic!("cannot open the broker log file: {e}"));
        let mut cmd = self.settings.serve(&self.log_dirs, self.port);
        let mut child = cmd
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
        let line = self.next_ready_line(&rx, "listener");
        // The first listener's line: PLAINTEXT, or CONTROLLER on a controller-only node.
        let (name, port) = line
            .strip_prefix("skiff ready listener=")
            .and_then(|rest| rest.split_once(" bind=127.0.0.1:"))
            .and_then(|(name, rest)| {
                let port = rest.split_whitespace().next()?.parse::<u16>().ok()?;
                Some((name.to_string(), port))
            })
            .unwrap_or_else(|| panic!("unexpected ready line: {line:?}"));
        assert!(
            name != "PLAINTEXT" || line.ends_with(&format!("advertised=127.0.0.1:{port}")),
            "ready line advertises another address: {line:?}"
        );
        if self.port != 0 {
            assert_eq!(port, self.port, "restarted broker bound another port");
        }
        self.port = port;
        self.ready = line;
        self.admin_port = None;
        if self.settings.admin_on() {
            // A combined KRaft node prints its CONTROLLER listener's line first.
            let mut line = self.next_ready_line(&rx, "admin");
            while line.starts_with("skiff ready listener=") {
                line = self.next_ready_line(&rx, "admin");
            }
            let admin = line
                .strip_prefix("skiff ready admin bind=127.0.0.1:")
                .map(|_| port_of(&line))
                .unwrap_or_else(|| panic!("unexpected admin ready line: {line:?}"));
            self.admin_port = Some(admin);
        }
        self.lines = Some(rx);
    }

    /// Every stdout line the last run printed after its ready line(s), up to its exit; call
    /// after the process exited (waits at most [`BROKER_DEADLINE`] for the pipe to close).
    pub fn stdout_after_ready(&mut self) -> Vec<String> {
        let Some(rx) = self.lines.take() else {
            return Vec::new();
        };
        let until = skiff_types::Clock::system().now() + BROKER_DEADLINE;
        let mut out = Vec::new();
        loop {
            let left = until.saturating_duration_since(skiff_types::Clock::system().now());
            match rx.recv_timeout(left) {
                Ok(line) => out.push(line),
                Err(mpsc::RecvTimeoutError::Disconnected) => return out,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    panic!("broker stdout still open after {BROKER_DEADLINE:?}")
                }
            }
        }
    }

    fn next_ready_line(&mut self, rx: &mpsc::Receiver<String>, what: &str) -> String {
        match rx.recv_timeout(BROKER_DEADLINE) {
            Ok(line) => line,
            Err(_) => {
                let status = self
                    .child
                    .as_mut()
                    .and_then(|c| c.try_wait().ok().flatten());
                panic!(
                    "broker (start #{}) printed no {what} ready line within {BROKER_DEADLINE:?} (exit: {status:?}); log:\n{}",
                    self.starts,
                    self.logs_tail(60)
                );
            }
        }
    }

    fn child(&mut self) -> &mut Child {
        match self.child.as_mut() {
            Some(c) => c,
            None => panic!("broker is not running"),
        }
    }

    /// The exit status if the process has exited (it is then reaped and forgotten).
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        match self.child().try_wait() {
            Ok(Some(status)) => {
                self.child = None;
                Some(status)
            }
            Ok(None) => None,
            Err(e) => panic!("waiting for the broker: {e}"),
        }
    }

    /// Waits at most `deadline` for the process to exit; returns its status.
    pub fn wait_exit(&mut self, deadline: Duration) -> ExitStatus {
        let until = skiff_types::Clock::system().now() + deadline;
        loop {
            if let Some(status) = self.try_wait() {
                return status;
            }
            assert!(
                skiff_types::Clock::system().now() < until,
                "broker did not exit within {deadline:?}; log:\n{}",
                self.logs_tail(60)
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Sends `signal` (a `kill` name: TERM, INT, ...) to the process.
    pub fn signal(&mut self, signal: &str) {
        let pid = self.child().id();
        let sent = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(pid.to_string())
            .status()
            .unwrap_or_else(|e| panic!("cannot run kill: {e}"));
        assert!(sent.success(), "kill -{signal} {pid} failed");
    }

    /// Sends SIGTERM and waits (at most 30 s) for the process to exit; returns its status.
    pub fn sigterm(&mut self) -> ExitStatus {
        self.signal("TERM");
        self.wait_exit(BROKER_DEADLINE)
    }

    /// [`Broker::sigterm`] (the compat suite's name).
    pub fn stop(&mut self) -> ExitStatus {
        self.sigterm()
    }

    /// Kills the process with SIGKILL (`kill -9`), reaps it and returns its status.
    pub fn kill9(&mut self) -> ExitStatus {
        let child = self.child();
        child
            .kill()
            .unwrap_or_else(|e| panic!("cannot SIGKILL the broker: {e}"));
        let status = child
            .wait()
            .unwrap_or_else(|e| panic!("cannot reap the broker: {e}"));
        self.child = None;
        status
    }

    /// Starts the broker again on the same port and log dirs (after a stop or a kill) and
    /// waits for its ready line(s).
    pub fn restart(&mut self) {
        self.spawn();
    }

    /// `skiff admin --url <this broker's admin port> --json <args...>`, parsed: the operator
    /// CLI's view (needs the admin port on).
    pub fn admin_cli(&self, args: &[&str]) -> serde_json::Value {
        let port = self
            .admin_port
            .unwrap_or_else(|| panic!("start the broker with the admin port on"));
        let bin = self.settings.binary.clone().unwrap_or_else(skiff_binary);
        let out = Command::new(bin)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_of_reads_the_bind_address_of_both_ready_lines() {
        assert_eq!(
            port_of("skiff ready listener=PLAINTEXT bind=127.0.0.1:9092 advertised=127.0.0.1:9092"),
            9092
        );
        assert_eq!(port_of("skiff ready admin bind=127.0.0.1:9644"), 9644);
    }

    #[test]
    fn serve_command_carries_dirs_overrides_and_env() {
        let b = BrokerBuilder::new()
            .binary("/bin/skiff")
            .log_dirs(&[Path::new("/a"), Path::new("/b")])
            .serve_args(&["--log-format", "json"])
            .set("k", "v")
            .env("E", "1")
            .rust_log("warn");
        let cmd = b.command();
        let args: Vec<String> = cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            args,
            [
                "serve",
                "--log-format",
                "json",
                "--override",
                "listeners=PLAINTEXT://127.0.0.1:0",
                "--override",
                "log.dirs=/a,/b",
                "--override",
                "k=v"
            ]
        );
        let envs: Vec<(String, String)> = cmd
            .get_envs()
            .filter_map(|(k, v)| Some((k.to_str()?.to_owned(), v?.to_str()?.to_owned())))
            .collect();
        assert!(
            envs.contains(&("RUST_LOG".into(), "warn".into())),
            "{envs:?}"
        );
        assert!(envs.contains(&("E".into(), "1".into())), "{envs:?}");
        assert!(!b.admin_on());
        assert!(
            b.env("KAFKA_CFG_SKIFF_ADMIN_LISTENER", "127.0.0.1:0")
                .admin_on()
        );
    }
}
