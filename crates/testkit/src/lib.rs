//! Skiff's test kit: the one way to start a broker in a test.
//!
//! Mental model: two harnesses and one client.
//! - [`process`]: a `skiff serve` child process (the real binary, real signals, real restarts)
//!   on a loopback port and a temp dir, learned from its ready line. Used by the binary's e2e
//!   tests (`crates/skiff/tests`), the client-compatibility tests (`tests/compat`) and bench.
//! - [`in_process`]: a [`skiff_server::Server`] started inside the test process on an
//!   ephemeral port and a temp dir, for tests that want the broker's internals or a tokio
//!   runtime of their own (`crates/server/tests`, bench).
//! - [`logfiles`]: a partition dir's segment files and their raw batches, for tests that
//!   compare replicas byte for byte or damage a file under a running broker.
//! - [`client`]: a blocking Kafka connection ([`client::Conn`], over skiff-protocol's
//!   `BlockingClient`) with the few calls every e2e test repeats: create a topic, produce a
//!   batch, fetch, list offsets.
//!
//! Nothing here is process-global except the optional one-at-a-time lock of the process
//! harness: each broker owns its ports, dirs and child, so a test may start several (the way
//! to N nodes later). Everything panics with a precise message on failure: this is test code,
//! and a panic is how a test reports.

pub mod certs;
pub mod client;
pub mod cluster;
pub mod in_process;
pub mod logfiles;
pub mod process;

pub use client::Conn;
pub use process::{Broker, BrokerBuilder, Refused};

/// Polls `f` every 50 ms until it gives a value, which is returned; panics with "never
/// `what` within `within`" at the deadline (the e2e tests' one way to wait: no sleep-and-hope).
pub fn wait_until<T>(
    what: &str,
    within: std::time::Duration,
    mut f: impl FnMut() -> Option<T>,
) -> T {
    let clock = skiff_types::Clock::system();
    let until = clock.now() + within;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(clock.now() < until, "never {what} within {within:?}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}
