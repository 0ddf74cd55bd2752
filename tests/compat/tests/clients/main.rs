//! Client-compatibility tests: stock Kafka clients against the `skiff` binary over TCP.
//!
//! One test binary (so librdkafka from the `rdkafka` crate links once). Every test starts its
//! own broker ([`skiff_compat::Broker`]) and finishes well under 60 s; nextest runs them one at a
//! time (group `e2e`). Consumers use assign() with explicit offsets and no auto-commit (consumer
//! groups come with a later issue). Modules by subject:
//! - `roundtrip`: one produce + consume test per client (keys, headers, nulls);
//! - `codecs`: gzip/snappy/lz4/zstd per producing client, checked on disk;
//! - `timestamps`: CreateTime vs LogAppendTime, out-of-range timestamps rejecting a batch;
//! - `offsets`: offsetsForTimes, ListOffsets, seek to end-m;
//! - `limits`: max.message.bytes boundaries;
//! - `topics`: auto-create, admin create/delete;
//! - `acks`: acks=1 and acks=0 producers, read back;
//! - `idempotent`: kafka-python's default idempotent producer;
//! - `restart`: SIGTERM/SIGKILL restarts in the middle of production;
//! - `pins`: the Debian clients really run librdkafka 2.0.2;
//! - `fetch_paths`: fetch sessions and sendfile really used (broker counters).
//!
//! `common` holds the record model and the in-process rdkafka producer/reader, `kcat` the kcat
//! command lines.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod acks;
mod codecs;
mod common;
mod fetch_paths;
mod idempotent;
mod kcat;
mod limits;
mod offsets;
mod pins;
mod restart;
mod roundtrip;
mod timestamps;
mod topics;
