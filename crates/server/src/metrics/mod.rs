//! Prometheus metrics (issue 20): what `GET /metrics` on the admin port serves, as OpenMetrics
//! text written by the `prometheus-client` crate (never formatted by hand).
//!
//! Mental model: two kinds of series.
//! - *Recorded* on the hot path, as events happen: per-topic bytes and records in and out
//!   (produce and fetch handlers), per-API requests, errors and latency phases (the
//!   connection's reader and writer), connections by listener and client software. They live
//!   in [`Metrics`] (one per broker, `Broker::metrics`) as `prometheus-client` families whose
//!   handles are *cached*: a topic's counters are looked up once per topic per request in a
//!   small map of `Arc`s (never the family's label hash), a connection keeps its listener's
//!   dense per-(API, version) counter table for its life, the per-API histograms are a dense
//!   table indexed by API key. Every update is an atomic add (histograms: a short uncontended
//!   mutex inside the crate's `Histogram`).
//! - *Computed at scrape* from the broker's state ([`scrape`]): partitions, leaders,
//!   under-replicated / under-min-ISR / offline partitions, fetch sessions, sendfile vs copied
//!   bytes, cleaner and delayed-delivery backlogs, consumer-group lag, controller and quorum
//!   state. Nothing on the hot path pays for these.
//!
//! Cardinality is bounded: labels are topics, APIs, versions, listeners, error names and a
//! top-few set of client software names ([`client_software`]); per-partition series exist only
//! when `skiff.metrics.partition.series.enable=true` (read at each scrape).
//!
//! Compiled out: without the `metrics` cargo feature (or with `bench-no-metrics`, the
//! benchmark's baseline, for a binary that cannot turn a dependency's default feature off)
//! the same API is made of zero-sized types whose methods are empty `#[inline(always)]`
//! functions, so every recording call compiles to nothing and `/metrics` answers 404.
//!
//! Invariants: recording never blocks on I/O, never allocates after a handle is cached, and
//! never panics; a scrape only reads (short log locks, one at a time, off the async workers).

#[cfg(all(feature = "metrics", not(feature = "bench-no-metrics")))]
pub mod client_software;
#[cfg(all(feature = "metrics", not(feature = "bench-no-metrics")))]
pub mod cost;
#[cfg(all(feature = "metrics", not(feature = "bench-no-metrics")))]
pub mod errors;
#[cfg(all(feature = "metrics", not(feature = "bench-no-metrics")))]
mod on;
#[cfg(all(feature = "metrics", not(feature = "bench-no-metrics")))]
pub mod scrape;
#[cfg(all(feature = "metrics", not(feature = "bench-no-metrics")))]
pub use on::*;
#[cfg(all(feature = "metrics", not(feature = "bench-no-metrics")))]
pub use scrape::render;

#[cfg(not(all(feature = "metrics", not(feature = "bench-no-metrics"))))]
mod off;
#[cfg(not(all(feature = "metrics", not(feature = "bench-no-metrics"))))]
pub use off::*;

/// Whether this build records metrics (the `metrics` feature, without `bench-no-metrics`).
pub const ENABLED: bool = cfg!(all(feature = "metrics", not(feature = "bench-no-metrics")));

/// The broker key that turns per-partition series on (off by default: bounded cardinality).
pub const PARTITION_SERIES_KEY: &str = "skiff.metrics.partition.series.enable";

/// How a committed ISR change moved the ISR (Kafka's IsrShrinksPerSec / IsrExpandsPerSec).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IsrChange {
    Shrink,
    Expand,
}

/// The change from an ISR of `before` members to one of `after` (none when the size holds).
pub fn isr_change(before: usize, after: usize) -> Option<IsrChange> {
    match after.cmp(&before) {
        std::cmp::Ordering::Less => Some(IsrChange::Shrink),
        std::cmp::Ordering::Greater => Some(IsrChange::Expand),
        std::cmp::Ordering::Equal => None,
    }
}

/// The content type of the OpenMetrics text exposition.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[cfg(all(test, feature = "metrics", not(feature = "bench-no-metrics")))]
mod tests;
