//! Test harness for Skiff's client-compatibility tests (the integration tests under
//! `tests/compat/tests/` are the real content of this crate).
//!
//! Mental model: every test starts its own `skiff` broker process ([`Broker`], the workspace's
//! process harness from `skiff-testkit`) on a free
//! loopback port with a fresh temporary log directory, drives it with a *stock* client over TCP
//! (kcat, Debian's or PyPI's confluent-kafka, kafka-python, kafkajs, the Apache Kafka Java
//! client ([`java_client`]), or the `rdkafka` crate) and
//! checks what the client saw. External clients run as child processes with a deadline
//! ([`run`]); the Python and node scripts under `tests/compat/py` and `tests/compat/js` take
//! one command and one JSON argument and print ONE JSON line of results ([`python`],
//! [`node`]). [`segments`] reads the broker's `.log` files directly, to check what was stored
//! (codec bits, producer ids) independently of any client; [`wire`] asks the broker which APIs
//! it advertises.
//!
//! Ownership and threads: a [`Broker`] owns its child process and temp dir and kills the
//! process on drop; output readers are background threads that end with the pipes. Nothing here
//! is shared between tests; nextest runs this package serially (`.config/nextest.toml`, group
//! `e2e`). Every helper panics with a precise message on failure: this is test support code,
//! and a panic is how a test reports.

pub mod broker;
pub mod clients;
pub mod java;
pub mod kafka_ref;
pub mod process;
pub mod segments;
pub mod wire;

pub use broker::{Broker, BrokerBuilder};
pub use clients::{Python, finish_json, kcat, node, python, python_background, repo_root};
pub use java::java_client;
pub use kafka_ref::{KafkaCluster, KafkaNode, kafka_tool, kafka_tool_input};
pub use process::{Background, Output, run};
pub use segments::{BatchInfo, read_batches};
pub use wire::api_versions;
