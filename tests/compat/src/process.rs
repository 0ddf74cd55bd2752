//! Child processes with deadlines: [`run`] for a client command that runs to completion, and
//! [`Background`] for one that keeps running while the test does something else (the
//! continuous producer of the restart tests).
//!
//! Mental model: stdout and stderr are drained by reader threads as they arrive (a full pipe
//! must never block the child), stdin is written by its own thread and then closed. Waiting
//! polls `try_wait` every few milliseconds until the deadline; at the deadline the child is
//! killed and the test panics with everything the child printed. A [`Background`] child is
//! killed on drop, so a failing test never leaves a client running.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often a waiting helper looks at its child.
const POLL: Duration = Duration::from_millis(5);

/// What a finished child printed.
#[derive(Debug)]
pub struct Output {
    /// Its exit status.
    pub status: ExitStatus,
    /// Everything it wrote to stdout (lossy UTF-8).
    pub stdout: String,
    /// Everything it wrote to stderr (lossy UTF-8).
    pub stderr: String,
}

impl Output {
    /// Panics with the command's output unless it exited 0.
    pub fn assert_success(&self, what: &str) -> &Self {
        assert!(
            self.status.success(),
            "{what} failed with {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.status,
            self.stdout,
            self.stderr
        );
        self
    }
}

fn spawn(cmd: &mut Command, what: &str, install_hint: &str) -> Child {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    match cmd.spawn() {
        Ok(child) => child,
        Err(e) => panic!("cannot start {what} ({cmd:?}): {e}. {install_hint}"),
    }
}

fn drain(mut r: impl Read + Send + 'static) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.read_to_end(&mut buf);
        String::from_utf8_lossy(&buf).into_owned()
    })
}

fn feed(mut w: ChildStdin, data: Vec<u8>) -> JoinHandle<()> {
    std::thread::spawn(move || {
        // A child that exits without reading everything closes the pipe: not our error.
        let _ = w.write_all(&data);
    })
}

/// Runs `cmd` to completion with `stdin` as its standard input, killing it (and panicking with
/// its output) if it is still running after `timeout`. `install_hint` is added to the panic
/// message if the program cannot be started at all.
pub fn run(
    cmd: &mut Command,
    stdin: &[u8],
    timeout: Duration,
    what: &str,
    install_hint: &str,
) -> Output {
    let mut child = spawn(cmd, what, install_hint);
    let feeder = child.stdin.take().map(|w| feed(w, stdin.to_vec()));
    let out = child.stdout.take().map(drain);
    let err = child.stderr.take().map(drain);
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() >= deadline => break None,
            Ok(None) => std::thread::sleep(POLL),
            Err(e) => panic!("waiting for {what}: {e}"),
        }
    };
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    if let Some(f) = feeder {
        let _ = f.join();
    }
    let stdout = out
        .map(|h| h.join().unwrap_or_default())
        .unwrap_or_default();
    let stderr = err
        .map(|h| h.join().unwrap_or_default())
        .unwrap_or_default();
    match status {
        Some(status) => Output {
            status,
            stdout,
            stderr,
        },
        None => panic!(
            "{what} did not finish within {timeout:?} (killed)\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}"
        ),
    }
}

/// A child process running in the background. Its stderr lines are delivered through a
/// channel (progress reports), its stdout is collected for the end. Killed on drop.
#[derive(Debug)]
pub struct Background {
    what: String,
    child: Option<Child>,
    stdin: Option<ChildStdin>,
    stderr_lines: Receiver<String>,
    stderr_seen: Vec<String>,
    stdout: Option<JoinHandle<String>>,
}

impl Background {
    /// Starts `cmd` with piped stdio.
    pub fn start(cmd: &mut Command, what: &str, install_hint: &str) -> Background {
        let mut child = spawn(cmd, what, install_hint);
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().map(drain);
        let (tx, rx) = mpsc::channel();
        if let Some(err) = child.stderr.take() {
            std::thread::spawn(move || {
                for line in BufReader::new(err).lines() {
                    let Ok(line) = line else { break };
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
        }
        Background {
            what: what.to_owned(),
            child: Some(child),
            stdin,
            stderr_lines: rx,
            stderr_seen: Vec::new(),
            stdout,
        }
    }

    /// Waits (at most `timeout`) for a stderr line for which `accept` returns `Some`, and
    /// returns that value. Every line seen is kept for failure messages.
    pub fn wait_for<T>(
        &mut self,
        timeout: Duration,
        mut accept: impl FnMut(&str) -> Option<T>,
    ) -> T {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stderr_lines.recv_timeout(left) {
                Ok(line) => {
                    let found = accept(&line);
                    self.stderr_seen.push(line);
                    if let Some(v) = found {
                        return v;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    let tail = self.stderr_tail();
                    panic!(
                        "{}: expected progress line did not come within {timeout:?}; stderr so far:\n{tail}",
                        self.what
                    )
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let tail = self.stderr_tail();
                    panic!(
                        "{}: exited before the expected progress line; stderr:\n{tail}",
                        self.what
                    )
                }
            }
        }
    }

    /// Writes `line` and a newline to the child's stdin (a command to a running script, e.g.
    /// the workload driver's fault markers); panics with its stderr if the child is gone.
    pub fn send_line(&mut self, line: &str) {
        let sent = match self.stdin.as_mut() {
            Some(w) => w
                .write_all(format!("{line}\n").as_bytes())
                .and_then(|()| w.flush()),
            None => Err(std::io::Error::other("stdin already closed")),
        };
        if let Err(e) = sent {
            let tail = self.stderr_tail();
            panic!(
                "{}: cannot write {line:?} to its stdin ({e}); stderr:\n{tail}",
                self.what
            );
        }
    }

    /// Closes the child's stdin (the scripts take that as "stop"), waits at most `timeout` for
    /// it to exit, and returns its output.
    pub fn finish(mut self, timeout: Duration) -> Output {
        drop(self.stdin.take());
        let Some(mut child) = self.child.take() else {
            panic!("{}: already finished", self.what)
        };
        let deadline = Instant::now() + timeout;
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if Instant::now() >= deadline => {
                    let _ = child.kill();
                    let _ = child.wait();
                    let tail = self.stderr_tail();
                    panic!(
                        "{} did not exit within {timeout:?} after stdin closed; stderr:\n{tail}",
                        self.what
                    );
                }
                Ok(None) => std::thread::sleep(POLL),
                Err(e) => panic!("waiting for {}: {e}", self.what),
            }
        };
        let stdout = self
            .stdout
            .take()
            .map(|h| h.join().unwrap_or_default())
            .unwrap_or_default();
        while let Ok(line) = self.stderr_lines.recv_timeout(Duration::from_millis(200)) {
            self.stderr_seen.push(line);
        }
        Output {
            status,
            stdout,
            stderr: self.stderr_seen.join("\n"),
        }
    }

    fn stderr_tail(&mut self) -> String {
        while let Ok(line) = self.stderr_lines.try_recv() {
            self.stderr_seen.push(line);
        }
        let from = self.stderr_seen.len().saturating_sub(40);
        self.stderr_seen[from..].join("\n")
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
