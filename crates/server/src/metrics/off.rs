//! Metrics compiled out: the recording API of [`crate::metrics`] as zero-sized types whose
//! methods do nothing (`#[inline(always)]`), so call sites need no `cfg` and cost nothing.

use skiff_protocol::{ApiKey, ResponseBody};
use skiff_types::Clock;

/// A request time stamp that is never taken.
#[derive(Clone, Copy, Debug)]
pub struct Stamp;

/// Reads no clock.
#[inline(always)]
pub fn stamp(_clock: &Clock) -> Stamp {
    Stamp
}

/// No stamps.
#[derive(Clone, Copy, Debug)]
pub struct RequestTimes;

impl RequestTimes {
    #[inline(always)]
    pub fn new(_received: Stamp, _started: Stamp, _handled: Stamp) -> Self {
        RequestTimes
    }
}

/// No topic counters.
#[derive(Clone, Debug)]
pub struct TopicMetrics;

impl TopicMetrics {
    #[inline(always)]
    pub fn bytes_in(&self, _n: u64) {}
    #[inline(always)]
    pub fn records_in(&self, _n: u64) {}
    #[inline(always)]
    pub fn bytes_out(&self, _n: u64) {}
}

/// No connection counters.
#[derive(Debug)]
pub struct ConnectionMetrics;

impl ConnectionMetrics {
    #[inline(always)]
    pub fn request(&self, _api: ApiKey, _version: i16) {}
}

/// Nothing recorded.
#[derive(Debug, Default)]
pub struct Metrics;

impl Metrics {
    pub fn new() -> Self {
        Metrics
    }
    #[inline(always)]
    pub fn topic(&self, _topic: &str) -> TopicMetrics {
        TopicMetrics
    }
    #[inline(always)]
    pub fn produced(&self, _topic: &str, _bytes: u64, _records: u64) {}
    #[inline(always)]
    pub fn replication_bytes_out(&self, _n: u64) {}
    #[inline(always)]
    pub fn connection_opened(&self, _listener: &str) -> ConnectionMetrics {
        ConnectionMetrics
    }
    #[inline(always)]
    pub fn latency(&self, _api: ApiKey, _times: &RequestTimes, _ready: Stamp, _sent: Stamp) {}
    #[inline(always)]
    pub fn errors(&self, _api: ApiKey, _body: &ResponseBody) {}
    #[inline(always)]
    pub fn client_software(&self, _name: &str, _version: &str) {}
    #[inline(always)]
    pub fn isr_changed(&self, _before: usize, _after: usize) {}
}

/// `/metrics` without metrics compiled in: nothing to serve.
pub fn render(_broker: &crate::broker::Broker) -> Option<String> {
    None
}
