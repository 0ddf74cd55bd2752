//! The metrics cost micro-benchmark (issue 20): the recording work of one Produce and of one
//! Fetch request with metrics on, in nanoseconds per request, so `bench/metrics/run.sh` can
//! turn it into a share of the broker's CPU per MB (the end-to-end on/off runs are too noisy
//! to see 2% on this VM, which has no hardware counters).
//!
//! Mental model: [`produce_request`] and [`fetch_request`] make exactly the calls a request
//! makes (connection.rs: the request counter, three reader stamps, two writer stamps, the
//! error walk of the response, the five latency observations; produce.rs: the topic's bytes
//! and records; fetch.rs: one topic lookup and its bytes out), on one partition of one topic
//! with a warm cache, as in the benchmark's one-partition load. [`measure`] times `iters` of
//! them between two reads of the system [`Clock`] with `black_box` around the inputs, several
//! runs; the caller takes the minimum (the cost) and the maximum (its bound).
//!
//! Invariants: a warm loop, so it measures instructions and uncontended atomics, not the cache
//! misses a busy broker adds; the ignored test below prints one `metrics_cost:` line per API
//! (`cargo test --release -p skiff-server --lib metrics::cost -- --ignored --nocapture`).

use std::hint::black_box;

use skiff_protocol::{
    ApiKey, FetchResponse, FetchResponsePartitionData, FetchableTopicResponse,
    PartitionProduceResponse, ProduceResponse, ResponseBody, TopicProduceResponse,
};
use skiff_types::Clock;

use super::{ConnectionMetrics, Metrics, RequestTimes, stamp};

/// One Produce request's recording (16 KiB batch of 16 records on one partition, acks=all).
#[inline(never)]
pub fn produce_request(m: &Metrics, conn: &ConnectionMetrics, clock: &Clock, body: &ResponseBody) {
    let received = stamp(clock);
    conn.request(ApiKey::Produce, 9);
    let started = stamp(clock);
    m.produced(black_box("t"), black_box(16_384), black_box(16));
    let times = RequestTimes::new(received, started, stamp(clock));
    let ready = stamp(clock);
    m.errors(ApiKey::Produce, black_box(body));
    let sent = stamp(clock);
    m.latency(ApiKey::Produce, &times, ready, sent);
}

/// One consumer Fetch request's recording (one partition with data).
#[inline(never)]
pub fn fetch_request(m: &Metrics, conn: &ConnectionMetrics, clock: &Clock, body: &ResponseBody) {
    let received = stamp(clock);
    conn.request(ApiKey::Fetch, 11);
    let started = stamp(clock);
    let t = m.topic(black_box("t"));
    t.bytes_out(black_box(1_048_576));
    let times = RequestTimes::new(received, started, stamp(clock));
    let ready = stamp(clock);
    m.errors(ApiKey::Fetch, black_box(body));
    let sent = stamp(clock);
    m.latency(ApiKey::Fetch, &times, ready, sent);
}

/// The responses the error walk reads: one topic, one partition, no error.
pub fn responses() -> (ResponseBody, ResponseBody) {
    let produce = ResponseBody::Produce(ProduceResponse {
        responses: vec![TopicProduceResponse {
            name: "t".into(),
            partition_responses: vec![PartitionProduceResponse::default()],
        }],
        ..Default::default()
    });
    let fetch = ResponseBody::Fetch(FetchResponse {
        responses: vec![FetchableTopicResponse {
            partitions: vec![FetchResponsePartitionData::default()],
            ..Default::default()
        }],
        ..Default::default()
    });
    (produce, fetch)
}

/// Nanoseconds per request of `request`, for each of `runs` runs of `iters` requests.
pub fn measure(
    runs: usize,
    iters: u32,
    request: impl Fn(&Metrics, &ConnectionMetrics, &Clock),
) -> Vec<f64> {
    let clock = Clock::system();
    let m = Metrics::new();
    let conn = m.connection_opened("PLAINTEXT");
    for _ in 0..1_000 {
        request(&m, &conn, &clock); // warm the caches (first request per kind takes locks)
    }
    (0..runs)
        .map(|_| {
            let t0 = clock.now();
            for _ in 0..iters {
                request(black_box(&m), &conn, &clock);
            }
            clock.now().saturating_duration_since(t0).as_nanos() as f64 / f64::from(iters)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(api: &str, ns: &[f64]) {
        let min = ns.iter().copied().fold(f64::INFINITY, f64::min);
        let max = ns.iter().copied().fold(0.0, f64::max);
        let runs: Vec<String> = ns.iter().map(|x| format!("{x:.1}")).collect();
        println!(
            "metrics_cost: api={api} ns_per_request_min={min:.1} ns_per_request_max={max:.1} runs={}",
            runs.join(",")
        );
    }

    /// Run in release (see the module doc); a debug build's figures mean nothing.
    #[test]
    #[ignore = "a benchmark: bench/metrics/run.sh runs it in release"]
    fn metrics_cost_per_request() {
        let (produce, fetch) = responses();
        let ns = measure(9, 200_000, |m, c, k| produce_request(m, c, k, &produce));
        line("produce", &ns);
        let ns = measure(9, 200_000, |m, c, k| fetch_request(m, c, k, &fetch));
        line("fetch", &ns);
    }

    #[test]
    fn a_request_records_what_the_handlers_record() {
        let (produce, fetch) = responses();
        let clock = Clock::system();
        let m = Metrics::new();
        let conn = m.connection_opened("PLAINTEXT");
        produce_request(&m, &conn, &clock, &produce);
        fetch_request(&m, &conn, &clock, &fetch);
        let mut s = String::new();
        prometheus_client::encoding::text::encode(&mut s, m.registry()).unwrap();
        assert!(
            s.contains("skiff_topic_bytes_in_total{topic=\"t\"} 16384"),
            "{s}"
        );
        assert!(
            s.contains("skiff_topic_bytes_out_total{topic=\"t\"} 1048576"),
            "{s}"
        );
        assert!(
            s.contains("skiff_request_duration_seconds_count{api=\"Fetch\"} 1"),
            "{s}"
        );
    }
}
