//! Skiff L5: the async network shell of the broker (the only crate that uses tokio).
//!
//! Mental model: [`Server::start`] opens the broker state ([`Broker`]: metadata store, the
//! [`replica`] manager over the log manager, fetch-session cache), binds every listener and
//! accepts connections.
//! Each connection ([`connection`]) reads size-prefixed Kafka frames, decodes them with
//! `skiff-protocol`, runs one handler per API ([`handlers`], flat dispatch, one table of served
//! APIs and versions) in request order, and writes the responses in that same order. Handlers
//! reach partitions only through the replica manager (connection -> handler -> replica manager
//! -> storage, never back up); fetch data goes from segment files to the socket with `sendfile`.
//!
//! Ownership and threads: a multi-threaded tokio runtime (two workers in the binary). Shared
//! state is behind `Arc<Broker>`; every lock is short and never held across an `.await`.
//! Blocking work that can take long (fsync of durable appends, startup, shutdown) runs on the
//! blocking pool.
//!
//! Invariants: no input from the network can panic the process or affect another connection;
//! bad frames close their own connection (reliability.md table (c)); responses on one
//! connection are always in request order.
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod acl_sync;
pub mod admin_http;
pub mod authz;
pub mod broker;
pub mod cleaner;
pub mod cluster;
pub mod connection;
pub mod coordinator;
pub mod delivery;
pub mod envelope;
pub mod error;
pub mod fetch_session;
pub mod handlers;
pub mod listener;
pub mod live_config;
pub mod metrics;
pub mod node_client;
pub mod producer_ids;
pub mod replica;
pub mod scrubber;
pub mod security;
pub mod sendfile;
pub mod server;
pub mod settings;
pub mod stats;
pub mod tls;
pub mod txn;
pub mod waiters;

pub use broker::Broker;
pub use error::ServerError;
pub use live_config::LiveConfig;
pub use server::{BoundListener, Server};
pub use settings::{
    ListenerSettings, ServerSettings, StorageTopicConfigs, TopicConfigEntry, TopicConfigs,
};
