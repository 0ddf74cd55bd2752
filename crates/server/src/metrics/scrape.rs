//! `GET /metrics`: the recorded families of [`super::Metrics`] followed by the series computed
//! now from the broker's state, as one OpenMetrics text document.
//!
//! Mental model: the computed series are built into a fresh [`Registry`] at every scrape
//! (gauges set, counters bumped to the current totals of [`crate::stats::ServerStats`] and
//! the cleaner's stats), encoded after the recorded registry, then `# EOF`. The state is
//! read with short locks, one log at a time; [`render`] blocks (it reads a batch header per
//! lagging group partition for the lag in seconds), so the HTTP handler runs it on the
//! blocking pool.
//!
//! Consumer-group lag: for every group this node coordinates (its loaded shards), every
//! committed partition this node hosts: `lag = max(0, high watermark - committed)`, summed per
//! (group, topic) into `skiff_group_lag_records`. `skiff_group_lag_seconds` is the largest,
//! over the topic's lagging partitions, of `now - first timestamp of the batch holding the
//! committed offset` (how old the oldest unconsumed data is; 0 when nothing lags; partitions
//! this node does not lead are left out of the seconds). The aggregation is the pure
//! [`aggregate_lag`].

use std::collections::BTreeMap;
use std::sync::Arc;

use prometheus_client::encoding::text::{encode_eof, encode_registry};
use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use skiff_replication::{Isolation, Reader};
use skiff_storage::flush_times::{FINITE_BUCKETS, FlushSnapshot, bound_ns};
use skiff_types::TopicPartition;

use super::on::Labels;
use crate::broker::Broker;
use crate::replica::read::ReadParams;

/// Byte offset of `baseTimestamp` in a v2 record-batch header.
const BATCH_BASE_TIMESTAMP_AT: usize = 27;

/// One committed partition of a group, with what the log says now.
#[derive(Clone, Debug, PartialEq)]
pub struct LagRow {
    pub group: String,
    pub topic: String,
    pub partition: i32,
    pub committed: i64,
    /// The partition's high watermark on this node.
    pub end: i64,
    /// First timestamp (ms) of the batch holding the committed offset, when it was read.
    pub oldest_unconsumed_ms: Option<i64>,
}

/// Lag of one (group, topic): records summed over partitions, seconds the largest.
#[derive(Clone, Debug, PartialEq)]
pub struct TopicLag {
    pub records: i64,
    pub seconds: f64,
}

/// Partition lag in records: `end - committed`, never negative; a partition with no commit
/// (`committed < 0`) is not lagging by this measure (it has no position yet).
pub fn partition_lag(committed: i64, end: i64) -> i64 {
    if committed < 0 {
        0
    } else {
        (end - committed).max(0)
    }
}

/// Sums rows per (group, topic); seconds from `now_ms` (0 when nothing lags).
pub fn aggregate_lag(rows: &[LagRow], now_ms: i64) -> BTreeMap<(String, String), TopicLag> {
    let mut out: BTreeMap<(String, String), TopicLag> = BTreeMap::new();
    for r in rows {
        let lag = partition_lag(r.committed, r.end);
        let e = out
            .entry((r.group.clone(), r.topic.clone()))
            .or_insert(TopicLag {
                records: 0,
                seconds: 0.0,
            });
        e.records += lag;
        if lag > 0
            && let Some(ts) = r.oldest_unconsumed_ms
        {
            let secs = (now_ms - ts).max(0) as f64 / 1000.0;
            e.seconds = e.seconds.max(secs);
        }
    }
    out
}

fn gauge(reg: &mut Registry, name: &str, help: &str, v: i64) {
    let g: Gauge = Gauge::default();
    g.set(v);
    reg.register(name, help, g);
}

fn counter(reg: &mut Registry, name: &str, help: &str, v: u64) {
    let c: Counter = Counter::default();
    c.inc_by(v);
    reg.register(name, help, c);
}

fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The whole `/metrics` document (blocking: run it off the async workers).
pub fn render(broker: &Arc<Broker>) -> Option<String> {
    let image = broker.image();
    broker.metrics.retain_topics(|t| image.topic(t).is_some());
    let mut reg = Registry::with_prefix("skiff");
    let partition_series = broker
        .topic_configs
        .live()
        .and_then(|l| l.current().get_bool(super::PARTITION_SERIES_KEY))
        .unwrap_or(false);
    let info = Family::<Labels, Gauge>::default();
    info.get_or_create(&vec![("version", env!("CARGO_PKG_VERSION").to_string())])
        .set(1);
    reg.register("build_info", "1, labelled with the Skiff version.", info);
    stats(broker, &mut reg);
    partitions(broker, &image, partition_series, &mut reg);
    client_software(broker, &mut reg);
    cleaner(broker, &mut reg);
    group_lag(broker, &image, partition_series, &mut reg);
    quorum(broker, &mut reg);
    reg.register(
        "log_flush_duration_seconds",
        "Time of a log flush: the fdatasync of segment data and indexes, periodic (flush.ms / flush.messages) or durable-mode group commit (Kafka's LogFlushRateAndTimeMs; this process's logs).",
        FlushHistogram(skiff_storage::flush_times::FLUSH_TIMES.snapshot()),
    );
    let mut out = String::new();
    encode_registry(&mut out, broker.metrics.registry()).ok()?;
    encode_registry(&mut out, &reg).ok()?;
    encode_eof(&mut out).ok()?;
    Some(out)
}

/// A snapshot of the storage's flush-time histogram, encoded as an OpenMetrics histogram.
#[derive(Debug)]
struct FlushHistogram(FlushSnapshot);

impl EncodeMetric for FlushHistogram {
    fn encode(&self, mut encoder: MetricEncoder<'_>) -> Result<(), std::fmt::Error> {
        let s = &self.0;
        let buckets: Vec<(f64, u64)> = s
            .buckets
            .iter()
            .enumerate()
            .map(|(i, &n)| {
                let le = if i < FINITE_BUCKETS {
                    bound_ns(i) as f64 / 1e9
                } else {
                    f64::INFINITY
                };
                (le, n)
            })
            .collect();
        encoder.encode_histogram::<NoLabelSet>(s.sum_ns as f64 / 1e9, s.count, &buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Histogram
    }
}

/// The fetch-session and zero-copy counters of [`crate::stats::ServerStats`].
fn stats(broker: &Broker, reg: &mut Registry) {
    let cached = broker.fetch_sessions.lock().len();
    let s = broker.stats.snapshot(cached);
    counter(
        reg,
        "fetch_sessions_created",
        "Incremental fetch sessions created (KIP-227).",
        s.fetch_sessions.created,
    );
    counter(
        reg,
        "fetch_sessions_incremental_fetches",
        "Fetches served incrementally within a session.",
        s.fetch_sessions.incremental_fetches,
    );
    gauge(
        reg,
        "fetch_sessions",
        "Fetch sessions in the cache (Kafka's NumIncrementalFetchSessions).",
        i64::try_from(s.fetch_sessions.cached).unwrap_or(i64::MAX),
    );
    let by_path = Family::<Labels, Counter>::default();
    by_path
        .get_or_create(&vec![("path", "sendfile".to_string())])
        .inc_by(s.sendfile.bytes);
    by_path
        .get_or_create(&vec![("path", "copied".to_string())])
        .inc_by(s.copied_bytes);
    reg.register(
        "response_bytes",
        "Response bytes written to clients: sendfile (record data from segment files, zero-copy) or copied (from user-space buffers).",
        by_path,
    );
    counter(
        reg,
        "sendfile_regions",
        "Segment-file regions sent with sendfile (one per partition with records in a response).",
        s.sendfile.regions,
    );
}

/// Partitions hosted, led, under-replicated, under min ISR, offline; log dirs offline.
fn partitions(
    broker: &Broker,
    image: &skiff_metadata::MetadataImage,
    per_partition: bool,
    reg: &mut Registry,
) {
    let snapshot = broker.replicas.snapshot();
    let r = broker.replicas.replication_stats();
    gauge(
        reg,
        "partitions",
        "Partitions with a log on this node (Kafka's PartitionCount).",
        count(snapshot.len()),
    );
    let as_i64 = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    gauge(
        reg,
        "partitions_leader",
        "Partitions this node leads (Kafka's LeaderCount).",
        as_i64(r.leader_partitions),
    );
    gauge(
        reg,
        "partitions_under_replicated",
        "Partitions led here whose ISR is smaller than the replica set (Kafka's UnderReplicatedPartitions).",
        as_i64(r.under_replicated_partitions),
    );
    gauge(
        reg,
        "partitions_under_min_isr",
        "Partitions led here whose ISR is below min.insync.replicas (Kafka's UnderMinIsrPartitionCount).",
        as_i64(r.under_min_isr_partitions),
    );
    let offline = image
        .topics
        .keys()
        .flat_map(|t| image.partitions(t))
        .filter(|(_, p)| p.leader < 0)
        .count();
    gauge(
        reg,
        "partitions_offline",
        "Partitions without a leader in this node's metadata image (Kafka's OfflinePartitionsCount).",
        count(offline),
    );
    gauge(
        reg,
        "log_dirs_offline",
        "Log dirs taken offline after an I/O error (Kafka's OfflineLogDirectoryCount).",
        count(broker.replicas.log_manager().offline_dirs().len()),
    );
    let (mut pending, mut held) = (0i64, 0i64);
    for p in &snapshot {
        if let Some(d) = broker.delivery_status(&p.tp) {
            pending += count(d.pending_batches);
            if let Some(dso) = d.delivery_stable_offset {
                held += (d.high_watermark - dso).max(0);
            }
        }
    }
    gauge(
        reg,
        "delivery_pending_batches",
        "Delayed-delivery batches not yet due, over the partitions hosted here.",
        pending,
    );
    gauge(
        reg,
        "delivery_held_records",
        "Offsets between the delivery stable offset and the high watermark (written, not yet delivered to consumers).",
        held,
    );
    if !per_partition {
        return;
    }
    let start = Family::<Labels, Gauge>::default();
    let leo = Family::<Labels, Gauge>::default();
    let hw = Family::<Labels, Gauge>::default();
    let size = Family::<Labels, Gauge>::default();
    for p in &snapshot {
        let labels: Labels = vec![
            ("topic", p.tp.topic.clone()),
            ("partition", p.tp.partition.to_string()),
        ];
        start.get_or_create(&labels).set(p.log_start_offset);
        leo.get_or_create(&labels).set(p.log_end_offset);
        hw.get_or_create(&labels).set(p.high_watermark);
        size.get_or_create(&labels)
            .set(i64::try_from(p.size_bytes).unwrap_or(i64::MAX));
    }
    reg.register(
        "log_start_offset",
        "Log start offset per partition (Kafka's Log LogStartOffset; skiff.metrics.partition.series.enable).",
        start,
    );
    reg.register(
        "log_end_offset",
        "Log end offset per partition (Kafka's Log LogEndOffset; skiff.metrics.partition.series.enable).",
        leo,
    );
    reg.register(
        "log_high_watermark",
        "High watermark per partition (skiff.metrics.partition.series.enable).",
        hw,
    );
    reg.register(
        "log_size_bytes",
        "Bytes of a partition's segments (Kafka's Log Size; skiff.metrics.partition.series.enable).",
        size,
    );
}

fn client_software(broker: &Broker, reg: &mut Registry) {
    let family = Family::<Labels, Counter>::default();
    for ((name, version), n) in broker.metrics.client_software_top() {
        family
            .get_or_create(&vec![
                ("software_name", name),
                ("software_version", version),
            ])
            .inc_by(n);
    }
    reg.register(
        "client_connections",
        "Connections that named their client software (ApiVersions v3+); the most frequent few by name, the rest as \"other\".",
        family,
    );
}

/// The log cleaner's backlog: the dirtiest compacted log and what was cleaned.
fn cleaner(broker: &Broker, reg: &mut Registry) {
    let all = broker.cleaner_stats.all();
    let max_dirty = all
        .iter()
        .map(|(_, s)| s.dirty_ratio)
        .fold(0.0f64, f64::max);
    let g = Gauge::<f64, std::sync::atomic::AtomicU64>::default();
    g.set(max_dirty);
    reg.register(
        "cleaner_max_dirty_ratio",
        "The largest dirty ratio of a compacted log (Kafka's max-dirty-percent / 100).",
        g,
    );
    gauge(
        reg,
        "cleaner_dirty_logs",
        "Compacted logs with a dirty section (the cleaner's backlog).",
        count(all.iter().filter(|(_, s)| s.dirty_ratio > 0.0).count()),
    );
    counter(
        reg,
        "cleaner_bytes_cleaned",
        "Bytes the cleaner has cleaned over the logs it tracks.",
        all.iter().map(|(_, s)| s.bytes_cleaned).sum(),
    );
}

/// The committed partitions of every group this node coordinates, with their logs' state.
fn lag_rows(broker: &Arc<Broker>, image: &skiff_metadata::MetadataImage) -> Vec<LagRow> {
    let (per_shard, _loading) = broker.groups.read_all(broker, |shard| {
        let mut rows = Vec::new();
        for group in shard.group_ids() {
            let answer = shard.fetch_offsets(&group, None, None);
            for t in answer.topics {
                for p in t.partitions {
                    rows.push((
                        group.clone(),
                        t.name.clone(),
                        p.partition_index,
                        p.committed_offset,
                    ));
                }
            }
        }
        rows
    });
    let mut out = Vec::new();
    for (group, topic, partition, committed) in per_shard.into_iter().flatten() {
        if committed < 0 {
            continue;
        }
        let tp = TopicPartition::new(topic.clone(), partition);
        let Some(snap) = broker.replicas.partition_snapshot(&tp) else {
            continue;
        };
        let end = snap.high_watermark;
        let oldest_unconsumed_ms = (partition_lag(committed, end) > 0)
            .then(|| batch_timestamp(broker, image, &tp, committed))
            .flatten();
        out.push(LagRow {
            group,
            topic,
            partition,
            committed,
            end,
            oldest_unconsumed_ms,
        });
    }
    out
}

/// First timestamp of the batch holding `offset` (a consumer read of one batch header).
fn batch_timestamp(
    broker: &Broker,
    image: &skiff_metadata::MetadataImage,
    tp: &TopicPartition,
    offset: i64,
) -> Option<i64> {
    let info = image.topic(&tp.topic)?;
    let params = ReadParams {
        fetch_offset: offset,
        max_bytes: 0,
        min_one_message: true,
        reader: Reader::Consumer(Isolation::ReadUncommitted),
        current_leader_epoch: -1,
        last_fetched_epoch: -1,
    };
    let read = broker.replicas.read(info, tp.partition, &params).ok()?;
    let slice = read.result.ok()??;
    let mut ts = [0u8; 8];
    if slice.len < (BATCH_BASE_TIMESTAMP_AT + 8) as u64 {
        return None;
    }
    std::os::unix::fs::FileExt::read_exact_at(
        &*slice.file,
        &mut ts,
        slice.position + BATCH_BASE_TIMESTAMP_AT as u64,
    )
    .ok()?;
    Some(i64::from_be_bytes(ts))
}

fn group_lag(
    broker: &Arc<Broker>,
    image: &skiff_metadata::MetadataImage,
    per_partition: bool,
    reg: &mut Registry,
) {
    let rows = lag_rows(broker, image);
    let records = Family::<Labels, Gauge>::default();
    let seconds = Family::<Labels, Gauge<f64, std::sync::atomic::AtomicU64>>::default();
    for ((group, topic), lag) in aggregate_lag(&rows, broker.now_ms()) {
        let labels: Labels = vec![("group", group), ("topic", topic)];
        records.get_or_create(&labels).set(lag.records);
        seconds.get_or_create(&labels).set(lag.seconds);
    }
    reg.register(
        "group_lag_records",
        "Consumer-group lag in records: high watermark minus committed offset, summed over the topic's partitions (groups this node coordinates).",
        records,
    );
    reg.register(
        "group_lag_seconds",
        "Consumer-group lag in seconds: age of the oldest unconsumed batch over the topic's partitions (0 when nothing lags).",
        seconds,
    );
    if per_partition {
        let family = Family::<Labels, Gauge>::default();
        for r in &rows {
            family
                .get_or_create(&vec![
                    ("group", r.group.clone()),
                    ("topic", r.topic.clone()),
                    ("partition", r.partition.to_string()),
                ])
                .set(partition_lag(r.committed, r.end));
        }
        reg.register(
            "group_partition_lag_records",
            "Consumer-group lag per partition in records (skiff.metrics.partition.series.enable).",
            family,
        );
    }
}

/// Controller and metadata-quorum state.
fn quorum(broker: &Broker, reg: &mut Registry) {
    gauge(
        reg,
        "controller_active",
        "1 when this node is the active controller (Kafka's ActiveControllerCount).",
        i64::from(crate::cluster::is_controller(broker)),
    );
    let Some(q) = broker.quorum.as_ref() else {
        return;
    };
    gauge(
        reg,
        "metadata_quorum_voter",
        "1 when this node is a voter of the metadata quorum, 0 for an observer.",
        i64::from(q.is_voter()),
    );
    gauge(
        reg,
        "metadata_quorum_leader",
        "Node id of the metadata quorum's leader as this node knows it (-1: none).",
        i64::from(q.leader().unwrap_or(-1)),
    );
    gauge(
        reg,
        "metadata_quorum_epoch",
        "The metadata quorum's epoch (Raft term) as this node knows it.",
        i64::from(q.epoch()),
    );
    gauge(
        reg,
        "metadata_log_offset",
        "The last metadata log offset applied to this node's image.",
        *q.applied().borrow(),
    );
}
