//! The broker under test: the workspace's one process harness
//! ([`skiff_testkit::process`]), re-exported. Compat tests start brokers with
//! [`Broker::start`] / [`Broker::start_with`], which take the process-wide one-at-a-time lock
//! (plain `cargo test` runs threads in one process) and honour `SKIFF_COMPAT_LOG` as the
//! broker's `RUST_LOG`.

pub use skiff_testkit::process::{
    BROKER_DEADLINE, Broker, BrokerBuilder, skiff_binary, target_dir,
};
