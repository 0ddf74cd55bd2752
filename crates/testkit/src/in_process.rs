//! The in-process harness: a [`Server`] (broker + listeners) started inside the test process,
//! on an ephemeral loopback port and a fresh temp dir.
//!
//! Mental model: [`start_with`] (and [`start_on`], for a caller-owned dir and topic-config
//! source) builds [`ServerSettings`] for `<temp>/data`, lets the test
//! adjust them (short timers, small limits) and starts the server on the caller's tokio
//! runtime; the [`TestServer`] owns the server and the temp dir (dropping it removes the dir;
//! call `server.shutdown()` for an orderly stop). [`Harness`] is the same for blocking tests:
//! it owns a two-worker runtime of its own, whose threads are all named [`SERVER_THREAD`], and
//! shuts the server down on drop. Nothing is process-global: a test may start several.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use skiff_server::{Broker, Server, ServerSettings, StorageTopicConfigs, TopicConfigs};

/// Every wait of an in-process test is bounded by this.
pub const DEADLINE: Duration = Duration::from_secs(20);

/// Name of every thread of a [`Harness`] runtime (the server's tasks run there).
pub const SERVER_THREAD: &str = "server-under-test";

/// A server started on the test's own runtime.
#[derive(Debug)]
pub struct TestServer {
    pub server: Server,
    pub dir: tempfile::TempDir,
    /// The first listener's bound address.
    pub addr: SocketAddr,
}

/// Starts a server with default settings on a temp dir.
pub async fn start() -> TestServer {
    start_with(|_| {}).await
}

fn temp_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("skiff-test-")
        .tempdir()
        .unwrap_or_else(|e| panic!("cannot create a temp dir: {e}"))
}

/// Starts a server whose settings `f` adjusted (log dir: `<temp>/data`).
pub async fn start_with(f: impl FnOnce(&mut ServerSettings)) -> TestServer {
    let dir = temp_dir();
    let (server, addr) = start_on(
        &dir.path().join("data"),
        f,
        Arc::new(StorageTopicConfigs::default()),
    )
    .await;
    TestServer { server, dir, addr }
}

/// Starts a server on a caller-owned log dir `data` (e.g. to restart on it) with the given
/// topic-config source (the binary passes a live configuration); returns it and its first
/// listener's address.
pub async fn start_on(
    data: &Path,
    f: impl FnOnce(&mut ServerSettings),
    topic_configs: Arc<dyn TopicConfigs>,
) -> (Server, SocketAddr) {
    let mut settings = ServerSettings::with_log_dir(data);
    f(&mut settings);
    let server = Server::start(settings, topic_configs)
        .await
        .unwrap_or_else(|e| panic!("cannot start the server: {e}"));
    let addr = server.listeners()[0].local_addr;
    (server, addr)
}

/// A server running on its own two-worker runtime, for blocking tests.
#[derive(Debug)]
pub struct Harness {
    pub rt: tokio::runtime::Runtime,
    pub server: Option<Server>,
    pub addr: SocketAddr,
    pub dir: tempfile::TempDir,
}

impl Harness {
    /// Starts a server whose settings `f` adjusted, on a new runtime.
    pub fn start(f: impl FnOnce(&mut ServerSettings)) -> Harness {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name(SERVER_THREAD)
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("cannot build a runtime: {e}"));
        let t = rt.block_on(start_with(f));
        Harness {
            rt,
            server: Some(t.server),
            addr: t.addr,
            dir: t.dir,
        }
    }

    /// The running server.
    pub fn server(&self) -> &Server {
        match &self.server {
            Some(s) => s,
            None => panic!("the server was shut down"),
        }
    }

    /// The server's broker.
    pub fn broker(&self) -> &Arc<Broker> {
        self.server().broker()
    }

    /// Shuts the server down now (instead of on drop).
    pub fn shutdown(&mut self) {
        if let Some(s) = self.server.take() {
            self.rt
                .block_on(s.shutdown())
                .unwrap_or_else(|e| panic!("server shutdown: {e}"));
        }
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        if let Some(s) = self.server.take() {
            let _ = self.rt.block_on(s.shutdown());
        }
    }
}
