//! The recording side with metrics compiled in: the families, their cached handles and the
//! request timing stamps (see the module doc of [`crate::metrics`] for the mental model).
//!
//! Invariants: a handle, once cached, is updated with atomics only (histograms: the crate's
//! short mutex); a cache grows by one entry per topic, listener, API or (API, version), and
//! its write lock is taken only on a miss (the first request of that kind). Topic entries
//! of deleted topics are dropped at scrape ([`Metrics::retain_topics`]).

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use parking_lot::{Mutex, RwLock};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use skiff_protocol::{ApiKey, ResponseBody};
use skiff_types::{Clock, ErrorCode};

use super::client_software::ClientSoftware;

/// A label set: (name, value) pairs in a fixed order per family.
pub type Labels = Vec<(&'static str, String)>;

/// A histogram family whose members share one bucket layout.
pub type HistogramFamily = Family<Labels, Histogram, fn() -> Histogram>;

/// Dense tables are indexed by Kafka's api key (the largest Skiff serves is 75).
const API_SLOTS: usize = 128;
/// ... and by version (the largest Skiff serves is 17).
const VERSION_SLOTS: usize = 32;

/// The request phases of Kafka's RequestMetrics, in order.
pub const PHASES: [&str; 4] = ["queue", "local", "remote", "send"];

/// Request latency buckets: 100 us doubling to 13.1 s (18 buckets, then +Inf).
pub fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.000_1, 2.0, 18))
}

/// A monotonic instant taken from the broker's clock (zero-sized when compiled out).
#[derive(Clone, Copy, Debug)]
pub struct Stamp(Instant);

/// Now, on `clock`.
#[inline]
pub fn stamp(clock: &Clock) -> Stamp {
    Stamp(clock.now())
}

/// The reader's stamps of one request: frame read, handler started, handler returned.
#[derive(Clone, Copy, Debug)]
pub struct RequestTimes {
    pub received: Stamp,
    pub started: Stamp,
    pub handled: Stamp,
}

impl RequestTimes {
    pub fn new(received: Stamp, started: Stamp, handled: Stamp) -> Self {
        Self {
            received,
            started,
            handled,
        }
    }
}

fn seconds(from: Stamp, to: Stamp) -> f64 {
    to.0.saturating_duration_since(from.0).as_secs_f64()
}

/// One topic's counters, cached per topic name.
#[derive(Debug)]
struct TopicCounters {
    bytes_in: Counter,
    records_in: Counter,
    bytes_out: Counter,
}

/// A topic's counters (clone freely: one `Arc`).
#[derive(Clone, Debug)]
pub struct TopicMetrics(Arc<TopicCounters>);

impl TopicMetrics {
    /// Record-batch bytes appended by a producer (duplicates excluded).
    #[inline]
    pub fn bytes_in(&self, n: u64) {
        self.0.bytes_in.inc_by(n);
    }

    /// Records appended by a producer.
    #[inline]
    pub fn records_in(&self, n: u64) {
        self.0.records_in.inc_by(n);
    }

    /// Record-batch bytes put into a consumer's Fetch response.
    #[inline]
    pub fn bytes_out(&self, n: u64) {
        self.0.bytes_out.inc_by(n);
    }
}

/// One listener's connection gauges and its dense (API, version) request counters.
#[derive(Debug)]
struct ListenerTable {
    name: String,
    open: Gauge,
    created: Counter,
    closed: Counter,
    requests: Box<[OnceLock<Counter>]>,
    family: Family<Labels, Counter>,
}

/// One connection's view of its listener's counters; dropping it counts the close.
#[derive(Debug)]
pub struct ConnectionMetrics(Arc<ListenerTable>);

impl ConnectionMetrics {
    /// One request of `api` at `version` arrived on this connection.
    #[inline]
    pub fn request(&self, api: ApiKey, version: i16) {
        let t = &self.0;
        let (a, v) = (api as i16, version);
        let slot = usize::try_from(a)
            .ok()
            .zip(usize::try_from(v).ok())
            .filter(|(a, v)| *a < API_SLOTS && *v < VERSION_SLOTS)
            .and_then(|(a, v)| t.requests.get(a * VERSION_SLOTS + v));
        let labels = || -> Labels {
            vec![
                ("api", api.name().to_string()),
                ("version", version.to_string()),
                ("listener", t.name.clone()),
            ]
        };
        match slot {
            Some(slot) => slot
                .get_or_init(|| t.family.get_or_create(&labels()).clone())
                .inc(),
            None => t.family.get_or_create(&labels()).inc(),
        };
    }
}

impl Drop for ConnectionMetrics {
    fn drop(&mut self) {
        self.0.open.dec();
        self.0.closed.inc();
    }
}

/// One API's latency histograms: total and the four phases.
#[derive(Debug)]
struct ApiHistograms {
    total: Histogram,
    phases: [Histogram; 4],
}

/// Every recorded series of one broker.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    topic_bytes_in: Family<Labels, Counter>,
    topic_bytes_out: Family<Labels, Counter>,
    topic_records_in: Family<Labels, Counter>,
    replication_bytes_out: Counter,
    isr_shrinks: Counter,
    isr_expands: Counter,
    requests: Family<Labels, Counter>,
    request_errors: Family<Labels, Counter>,
    request_duration: HistogramFamily,
    request_phase: HistogramFamily,
    connections: Family<Labels, Gauge>,
    connections_created: Family<Labels, Counter>,
    connections_closed: Family<Labels, Counter>,
    topics: RwLock<HashMap<String, TopicMetrics>>,
    listeners: RwLock<HashMap<String, Arc<ListenerTable>>>,
    apis: Box<[OnceLock<ApiHistograms>]>,
    client_software: Mutex<ClientSoftware>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("skiff");
        let topic_bytes_in = Family::<Labels, Counter>::default();
        let topic_bytes_out = Family::<Labels, Counter>::default();
        let topic_records_in = Family::<Labels, Counter>::default();
        let replication_bytes_out = Counter::default();
        let isr_shrinks = Counter::default();
        let isr_expands = Counter::default();
        let requests = Family::<Labels, Counter>::default();
        let request_errors = Family::<Labels, Counter>::default();
        let request_duration: HistogramFamily =
            Family::new_with_constructor(latency_histogram as fn() -> Histogram);
        let request_phase: HistogramFamily =
            Family::new_with_constructor(latency_histogram as fn() -> Histogram);
        let connections = Family::<Labels, Gauge>::default();
        let connections_created = Family::<Labels, Counter>::default();
        let connections_closed = Family::<Labels, Counter>::default();
        registry.register(
            "topic_bytes_in",
            "Record-batch bytes appended to the topic by producers (Kafka's BytesInPerSec).",
            topic_bytes_in.clone(),
        );
        registry.register(
            "topic_bytes_out",
            "Record-batch bytes of the topic put into consumers' Fetch responses (Kafka's BytesOutPerSec; replica fetches excluded).",
            topic_bytes_out.clone(),
        );
        registry.register(
            "topic_records_in",
            "Records appended to the topic by producers (Kafka's MessagesInPerSec).",
            topic_records_in.clone(),
        );
        registry.register(
            "replication_bytes_out",
            "Record-batch bytes put into follower replicas' Fetch responses (Kafka's ReplicationBytesOutPerSec).",
            replication_bytes_out.clone(),
        );
        registry.register(
            "isr_shrinks",
            "Committed ISR changes that removed replicas, counted by the partition's leader (Kafka's IsrShrinksPerSec).",
            isr_shrinks.clone(),
        );
        registry.register(
            "isr_expands",
            "Committed ISR changes that added replicas, counted by the partition's leader (Kafka's IsrExpandsPerSec).",
            isr_expands.clone(),
        );
        registry.register(
            "requests",
            "Requests received, by API, version and listener (Kafka's RequestsPerSec).",
            requests.clone(),
        );
        registry.register(
            "request_errors",
            "Error codes in responses, by API and error name, one per partition or resource that failed (Kafka's ErrorsPerSec; NONE not counted).",
            request_errors.clone(),
        );
        registry.register(
            "request_duration_seconds",
            "Time from a request's frame read to its response written (Kafka's TotalTimeMs).",
            request_duration.clone(),
        );
        registry.register(
            "request_phase_duration_seconds",
            "Time per request phase: queue (frame read to handler start), local (handler), remote (deferred work and the wait behind earlier responses), send (encode and write) (Kafka's RequestMetrics).",
            request_phase.clone(),
        );
        registry.register(
            "connections",
            "Open client connections, by listener (Kafka's connection-count).",
            connections.clone(),
        );
        registry.register(
            "connections_created",
            "Connections accepted, by listener (Kafka's connection-creation-total).",
            connections_created.clone(),
        );
        registry.register(
            "connections_closed",
            "Connections closed, by listener (Kafka's connection-close-total).",
            connections_closed.clone(),
        );
        Self {
            registry,
            topic_bytes_in,
            topic_bytes_out,
            topic_records_in,
            replication_bytes_out,
            isr_shrinks,
            isr_expands,
            requests,
            request_errors,
            request_duration,
            request_phase,
            connections,
            connections_created,
            connections_closed,
            topics: RwLock::new(HashMap::new()),
            listeners: RwLock::new(HashMap::new()),
            apis: (0..API_SLOTS).map(|_| OnceLock::new()).collect(),
            client_software: Mutex::new(ClientSoftware::default()),
        }
    }

    /// The registry of the recorded families (the scrape adds its own computed ones).
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// `topic`'s counters: a read-locked map lookup once cached.
    pub fn topic(&self, topic: &str) -> TopicMetrics {
        if let Some(t) = self.topics.read().get(topic) {
            return t.clone();
        }
        let mut map = self.topics.write();
        map.entry(topic.to_string())
            .or_insert_with(|| {
                let labels: Labels = vec![("topic", topic.to_string())];
                TopicMetrics(Arc::new(TopicCounters {
                    bytes_in: self.topic_bytes_in.get_or_create(&labels).clone(),
                    records_in: self.topic_records_in.get_or_create(&labels).clone(),
                    bytes_out: self.topic_bytes_out.get_or_create(&labels).clone(),
                }))
            })
            .clone()
    }

    /// A producer's batch of `bytes` and `records` appended to `topic`: counted under the
    /// map's read lock (no `Arc` clone on the produce path once the topic is cached).
    #[inline]
    pub fn produced(&self, topic: &str, bytes: u64, records: u64) {
        if let Some(t) = self.topics.read().get(topic) {
            t.bytes_in(bytes);
            t.records_in(records);
            return;
        }
        let t = self.topic(topic);
        t.bytes_in(bytes);
        t.records_in(records);
    }

    /// Drops the series of topics that no longer exist (called at scrape).
    pub fn retain_topics(&self, exists: impl Fn(&str) -> bool) {
        let gone: Vec<String> = self
            .topics
            .read()
            .keys()
            .filter(|t| !exists(t))
            .cloned()
            .collect();
        if gone.is_empty() {
            return;
        }
        let mut map = self.topics.write();
        for t in gone {
            map.remove(&t);
            let labels: Labels = vec![("topic", t)];
            self.topic_bytes_in.remove(&labels);
            self.topic_records_in.remove(&labels);
            self.topic_bytes_out.remove(&labels);
        }
    }

    /// Record-batch bytes served to a follower replica.
    #[inline]
    pub fn replication_bytes_out(&self, n: u64) {
        self.replication_bytes_out.inc_by(n);
    }

    /// This leader took a committed ISR change from `before` to `after` members.
    pub fn isr_changed(&self, before: usize, after: usize) {
        match super::isr_change(before, after) {
            Some(super::IsrChange::Shrink) => self.isr_shrinks.inc(),
            Some(super::IsrChange::Expand) => self.isr_expands.inc(),
            None => return,
        };
    }

    /// A connection was accepted on `listener`; the value counts its close when dropped.
    pub fn connection_opened(&self, listener: &str) -> ConnectionMetrics {
        let table = self.listener_table(listener);
        table.open.inc();
        table.created.inc();
        ConnectionMetrics(table)
    }

    fn listener_table(&self, listener: &str) -> Arc<ListenerTable> {
        if let Some(t) = self.listeners.read().get(listener) {
            return Arc::clone(t);
        }
        let mut map = self.listeners.write();
        let t = map.entry(listener.to_string()).or_insert_with(|| {
            let labels: Labels = vec![("listener", listener.to_string())];
            Arc::new(ListenerTable {
                name: listener.to_string(),
                open: self.connections.get_or_create(&labels).clone(),
                created: self.connections_created.get_or_create(&labels).clone(),
                closed: self.connections_closed.get_or_create(&labels).clone(),
                requests: (0..API_SLOTS * VERSION_SLOTS)
                    .map(|_| OnceLock::new())
                    .collect(),
                family: self.requests.clone(),
            })
        });
        Arc::clone(t)
    }

    fn api(&self, api: ApiKey) -> Option<&ApiHistograms> {
        let slot = self.apis.get(usize::try_from(api as i16).ok()?)?;
        Some(slot.get_or_init(|| {
            let name = api.name().to_string();
            let phase = |p: &'static str| -> Histogram {
                self.request_phase
                    .get_or_create(&vec![("api", name.clone()), ("phase", p.to_string())])
                    .clone()
            };
            ApiHistograms {
                total: self
                    .request_duration
                    .get_or_create(&vec![("api", name.clone())])
                    .clone(),
                phases: PHASES.map(phase),
            }
        }))
    }

    /// A response of `api` was written at `sent`; its body was ready at `ready`.
    pub fn latency(&self, api: ApiKey, times: &RequestTimes, ready: Stamp, sent: Stamp) {
        let Some(h) = self.api(api) else {
            return;
        };
        h.total.observe(seconds(times.received, sent));
        let bounds = [
            (times.received, times.started),
            (times.started, times.handled),
            (times.handled, ready),
            (ready, sent),
        ];
        for (hist, (from, to)) in h.phases.iter().zip(bounds) {
            hist.observe(seconds(from, to));
        }
    }

    /// Counts the error codes of a response (NONE is not counted).
    pub fn errors(&self, api: ApiKey, body: &ResponseBody) {
        super::errors::for_each_error(body, |code| self.error(api, code));
    }

    /// One error `code` in a response of `api`.
    pub fn error(&self, api: ApiKey, code: i16) {
        if code == 0 {
            return;
        }
        let name = ErrorCode::from_code(code).map_or_else(|| code.to_string(), |e| e.name().into());
        self.request_errors
            .get_or_create(&vec![("api", api.name().to_string()), ("error", name)])
            .inc();
    }

    /// An ApiVersions v3+ request named its client software.
    pub fn client_software(&self, name: &str, version: &str) {
        self.client_software.lock().add(name, version);
    }

    /// The client-software counts as exported: the most frequent few, the rest "other".
    pub fn client_software_top(&self) -> Vec<((String, String), u64)> {
        self.client_software.lock().top()
    }
}
