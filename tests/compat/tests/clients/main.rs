//! Client-compatibility tests: stock Kafka clients against the `skiff` binary over TCP.
//!
//! One test binary (so librdkafka from the `rdkafka` crate links once). Every test starts its
//! own broker ([`skiff_compat::Broker`]) and finishes well under 60 s; nextest runs them one at a
//! time (group `e2e`). Consumers use assign() with explicit offsets and no auto-commit (consumer
//! groups come with a later issue). Modules by subject:
//! - `roundtrip`: one produce + consume test per client (keys, headers, nulls).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod kcat;
mod roundtrip;
