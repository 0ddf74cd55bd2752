//! Questions to the nodes that never hang the harness: every socket has a short timeout, so
//! a node that is stopped (SIGSTOP) or hung costs seconds, not the test. Plus the polling and
//! formatting helpers the chaos tests share.

use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use skiff_protocol::{
    BlockingClient, MetadataRequest, MetadataResponse, RequestBody, ResponseBody,
};

use crate::harness::TOPIC;

/// `GET path` from the admin port `127.0.0.1:port`: the body, or `None` within ~2 s.
pub fn http_get(port: u16, path: &str) -> Option<String> {
    use std::io::{Read, Write};
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(1)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    out.split_once("\r\n\r\n").map(|(_, body)| body.to_string())
}

/// One request to `127.0.0.1:port` on a fresh connection: the answer, or `None` if there is
/// none within about two seconds.
pub fn call(port: u16, version: i16, body: impl Into<RequestBody>) -> Option<ResponseBody> {
    Persistent::new(port).call(version, body)
}

/// A client that keeps its connection between calls and reconnects after a failed one: for
/// request loops (a connection per call leaves a TIME_WAIT socket each, tens of thousands in
/// a tight loop, which starves later tests of free ports).
pub struct Persistent {
    port: u16,
    client: Option<BlockingClient<TcpStream>>,
}

impl Persistent {
    pub fn new(port: u16) -> Persistent {
        Persistent { port, client: None }
    }

    /// One request; `None` when it fails (the next call reconnects).
    pub fn call(&mut self, version: i16, body: impl Into<RequestBody>) -> Option<ResponseBody> {
        if self.client.is_none() {
            let addr = SocketAddr::from(([127, 0, 0, 1], self.port));
            let s = TcpStream::connect_timeout(&addr, Duration::from_secs(1)).ok()?;
            s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
            s.set_write_timeout(Some(Duration::from_secs(2))).ok()?;
            self.client = Some(BlockingClient::new(s, "chaos-nemesis"));
        }
        let answer = self.client.as_mut()?.call(version, body).ok();
        if answer.is_none() {
            self.client = None;
        }
        answer
    }
}

/// Metadata v12 of all topics from `127.0.0.1:port`, or `None` if it cannot answer within
/// about two seconds.
pub fn metadata(port: u16) -> Option<MetadataResponse> {
    let req = MetadataRequest {
        topics: None,
        ..MetadataRequest::default()
    };
    match call(port, 12, req)? {
        ResponseBody::Metadata(m) => Some(m),
        _ => None,
    }
}

/// (partition, leader, ISR) of [`TOPIC`] in `m`, by partition.
pub fn partitions(m: &MetadataResponse) -> Vec<(i32, i32, Vec<i32>)> {
    let mut v: Vec<(i32, i32, Vec<i32>)> = m
        .topics
        .iter()
        .filter(|t| t.name.as_deref() == Some(TOPIC))
        .flat_map(|t| &t.partitions)
        .map(|p| (p.partition_index, p.leader_id, p.isr_nodes.clone()))
        .collect();
    v.sort_unstable();
    v
}

/// Polls `f` every 100 ms until it returns `Some` or `within` passes (then `None`).
pub fn poll<T>(within: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let until = Instant::now() + within;
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if Instant::now() >= until {
            return None;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Seconds, for humans.
pub fn secs(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

pub fn ns_secs(ns: Option<i64>) -> String {
    ns.map_or("-".to_string(), |n| format!("{:.2} s", n as f64 / 1e9))
}

/// Writes every thread's stack of process `pid` to `path` (gdb, bounded to 60 s); says
/// where, or why not.
pub fn stacks(pid: u32, path: &Path) -> String {
    let pid = pid.to_string();
    let mut cmd = std::process::Command::new("timeout");
    cmd.args([
        "60",
        "gdb",
        "-p",
        &pid,
        "-batch",
        "-ex",
        "thread apply all bt",
    ]);
    match cmd.output() {
        Ok(out) if out.status.success() => match std::fs::write(path, &out.stdout) {
            Ok(()) => format!("its threads' stacks: {}", path.display()),
            Err(e) => format!("cannot write {}: {e}", path.display()),
        },
        Ok(out) => format!("gdb failed ({}): no stacks", out.status),
        Err(e) => format!("no gdb ({e}): no stacks"),
    }
}
