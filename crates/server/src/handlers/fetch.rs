//! Fetch (1), v4-17: consumer reads, long-polling, incremental fetch sessions, zero-copy data.
//!
//! Flow: resolve the requested partitions (by name, or by topic id from v13: unknown ids ->
//! UNKNOWN_TOPIC_ID), apply the session rules ([`crate::fetch_session`]), then read every
//! partition of the plan once, in order: each read is capped by its `partition_max_bytes` and
//! by what is left of the request's `max_bytes` (itself capped by `fetch.max.bytes`); until some
//! partition returned data, a read may exceed those caps to return one whole batch (Kafka's
//! `minOneMessage`), so a consumer never stalls behind a batch bigger than its limits. Reads
//! stop at the high watermark (read_uncommitted) or the last stable offset (read_committed; it
//! equals the high watermark until transactions exist). A read never starts inside a batch: a
//! fetch offset inside a batch returns that whole batch.
//! If fewer than `min_bytes` came back, no partition failed and `max_wait_ms > 0`, the answer
//! is deferred: the fetch registers with [`crate::waiters::AppendWaiters`] and re-reads when an
//! append moves a high watermark, until `min_bytes` or the deadline (or shutdown).
//! Delayed delivery (issue 8): consumer reads also stop at the partition's delivery stable
//! offset (a batch boundary, so still one sendfile region); the response's LastStableOffset
//! is min(LSO, DSO) while HighWatermark stays the real one; the DSO timer
//! ([`crate::delivery`]) wakes long polls when it moves. Replica fetches ignore it.
//! Corruption (issue 12): a fetch offset inside a quarantined range answers the partition with
//! CORRUPT_MESSAGE (2) and no bytes; a read before the range stops at its first byte, a read
//! after it is served. Why 2 and not KAFKA_STORAGE_ERROR (56): stock clients treat 56 as a
//! retriable leadership problem and retry silently for ever (Java's FetchCollector requests a
//! metadata update, librdkafka's fetcher the same), while 2 reaches the application (Java
//! throws "Encountered corrupt message when fetching offset N", librdkafka delivers a consumer
//! error), which can then seek past the range; Kafka's own broker answers a
//! CorruptRecordException on a read with 2 as well. The check is a range lookup: no CRC work
//! on the sendfile path.
//! Record data is returned as `Records::File` regions of segment files, which the connection
//! sends with `sendfile`, never copied through user space. Sessions created and incremental
//! fetches served are counted in [`crate::stats::ServerStats`].
//! Authorization (issue 19, Kafka's `handleFetchRequest`), over the session's whole plan,
//! decided once per request: a follower (replica id >= 0) needs CLUSTER_ACTION on the
//! cluster, else every partition answers TOPIC_AUTHORIZATION_FAILED; a consumer needs READ on
//! each topic, else its partitions answer TOPIC_AUTHORIZATION_FAILED whether the topic exists
//! or not. A topic id this broker does not know answers UNKNOWN_TOPIC_ID first (ids are not
//! secret, and there is no name to check).

use std::collections::HashSet;
use std::sync::Arc;

use skiff_auth::acl::AclOperation;
use skiff_metadata::MetadataImage;
use skiff_protocol::{
    FetchRequest, FetchResponse, FetchResponsePartitionData, FetchableTopicResponse, FileRegion,
    Records, ResponseBody,
};
use skiff_storage::StorageError;
use skiff_types::{ErrorCode, TopicPartition};
use tokio::sync::Notify;
use tokio::time::Instant;
use uuid::Uuid;

use super::authz_ops::Checker;
use super::{Reply, RequestContext};
use crate::broker::Broker;
use crate::fetch_session::{PartKey, PartRequest, Reported, SessionMode, has_news};
use crate::replica::read::ReadParams;
use skiff_replication::{Isolation, Reader};

/// First Fetch version that names topics by id.
const TOPIC_ID_MIN_VERSION: i16 = 13;
const READ_COMMITTED: i8 = 1;

/// The request-wide read limits.
#[derive(Clone, Copy, Debug)]
struct Limits {
    max_bytes: usize,
    min_bytes: usize,
    read_committed: bool,
    /// Who reads: a consumer (isolation level) or a replica id (>= 0).
    reader: Reader,
}

/// One partition's read.
#[derive(Debug)]
struct PartResult {
    req: PartRequest,
    error: ErrorCode,
    reported: Reported,
    records: Option<FileRegion>,
    /// A follower's log diverges: (epoch, end offset), answered at once (KIP-320).
    diverging: Option<(i32, i64)>,
    /// read_committed: the aborted transactions overlapping the read (issue 18).
    aborted: Vec<skiff_protocol::AbortedTransaction>,
}

impl PartResult {
    fn bytes(&self) -> usize {
        self.records.as_ref().map_or(0, |r| r.len as usize)
    }
}

pub fn handle(ctx: &RequestContext<'_>, req: FetchRequest) -> Reply {
    let version = ctx.api_version;
    let broker = ctx.broker;
    let image = broker.image();
    let requested = resolve(&image, &req, version);
    let forgotten: Vec<PartKey> = req
        .forgotten_topics_data
        .iter()
        .flat_map(|t| {
            let (id, name) = topic_key(&image, &t.topic, t.topic_id, version);
            t.partitions.iter().map(move |p| PartKey {
                topic_id: id,
                topic: name.clone(),
                partition: *p,
            })
        })
        .collect();
    let now = broker.now_ms();
    let (mode, plan) = {
        let mut sessions = broker.sessions();
        let (mode, mut plan) = sessions.begin(
            req.session_id,
            req.session_epoch,
            requested,
            &forgotten,
            now,
        );
        if let SessionMode::Incremental { id } = mode {
            sessions.resolve_names(id, &mut plan, |id| {
                image.topic_by_id(id.as_bytes()).map(|t| t.name.clone())
            });
        }
        (mode, plan)
    };
    if let SessionMode::Error(code) = mode {
        return Reply::Now(ResponseBody::Fetch(FetchResponse {
            error_code: code as i16,
            session_id: 0,
            ..FetchResponse::default()
        }));
    }
    let limits = Limits {
        max_bytes: req.max_bytes.min(broker.settings.fetch_bytes_max).max(0) as usize,
        min_bytes: req.min_bytes.max(0) as usize,
        read_committed: req.isolation_level == READ_COMMITTED,
        reader: reader_of(
            req.replica_id.max(req.replica_state.replica_id),
            req.isolation_level,
        ),
    };
    let denied = Arc::new(denied_of(ctx, &plan, limits.reader));
    let results = read_plan(broker, &image, &plan, limits, &denied);
    let max_wait_ms = u64::try_from(req.max_wait_ms).unwrap_or(0);
    if ready(&results, limits) || max_wait_ms == 0 || plan.is_empty() {
        return Reply::Now(ResponseBody::Fetch(respond(
            broker, version, mode, results, limits,
        )));
    }
    let broker = Arc::clone(broker);
    let deadline = broker.deadline_after(std::time::Duration::from_millis(max_wait_ms));
    Reply::Later(Box::pin(async move {
        let results = long_poll(&broker, &plan, limits, &denied, deadline, results).await;
        ResponseBody::Fetch(respond(&broker, version, mode, results, limits))
    }))
}

/// Re-reads on every append notification until `min_bytes`, an error, the deadline or shutdown.
async fn long_poll(
    broker: &Arc<Broker>,
    plan: &[PartRequest],
    limits: Limits,
    denied: &Denied,
    deadline: Instant,
    first: Vec<PartResult>,
) -> Vec<PartResult> {
    let waiter = Arc::new(Notify::new());
    let tps: Vec<TopicPartition> = plan
        .iter()
        .map(|r| TopicPartition::new(r.key.topic.clone(), r.key.partition))
        .collect();
    let mut shutdown = broker.shutdown_signal();
    loop {
        // Register before reading: an append between the read and the wait is not lost.
        broker.replicas.waiters.register(&tps, &waiter);
        let image = broker.image();
        let results = read_plan(broker, &image, plan, limits, denied);
        if ready(&results, limits)
            || hw_moved(&first, &results, limits)
            || broker.tokio_now() >= deadline
            || *shutdown.borrow()
        {
            return results;
        }
        tokio::select! {
            _ = waiter.notified() => {}
            _ = tokio::time::sleep_until(deadline) => {}
            _ = shutdown.changed() => {}
        }
    }
}

fn ready(results: &[PartResult], limits: Limits) -> bool {
    let bytes: usize = results.iter().map(PartResult::bytes).sum();
    bytes >= limits.min_bytes
        || results
            .iter()
            .any(|r| r.error != ErrorCode::None || r.diverging.is_some())
}

/// A replica's fetch also returns when a high watermark it was told moved (Kafka waits for
/// the next fetch; followers learn the HW, and so acks=all completes, a round trip sooner).
fn hw_moved(first: &[PartResult], now: &[PartResult], limits: Limits) -> bool {
    matches!(limits.reader, Reader::Replica(_))
        && first
            .iter()
            .zip(now)
            .any(|(a, b)| a.reported.high_watermark != b.reported.high_watermark)
}

/// Topic id and canonical name for a requested topic.
fn topic_key(image: &MetadataImage, name: &str, id: Uuid, version: i16) -> (Uuid, String) {
    if version >= TOPIC_ID_MIN_VERSION {
        let name = image
            .topic_by_id(id.as_bytes())
            .map(|t| t.name.clone())
            .unwrap_or_default();
        (id, name)
    } else {
        (Uuid::nil(), name.to_string())
    }
}

fn resolve(image: &MetadataImage, req: &FetchRequest, version: i16) -> Vec<PartRequest> {
    let mut out = Vec::new();
    for t in &req.topics {
        let (id, name) = topic_key(image, &t.topic, t.topic_id, version);
        for p in &t.partitions {
            out.push(PartRequest {
                key: PartKey {
                    topic_id: id,
                    topic: name.clone(),
                    partition: p.partition,
                },
                fetch_offset: p.fetch_offset,
                partition_max_bytes: p.partition_max_bytes,
                current_leader_epoch: p.current_leader_epoch,
                last_fetched_epoch: p.last_fetched_epoch,
            });
        }
    }
    out
}

/// What the principal may not read (issue 19), decided once per request.
#[derive(Debug, Default)]
enum Denied {
    /// No authorizer, or everything allowed.
    #[default]
    Nothing,
    /// A follower without CLUSTER_ACTION: every partition.
    All,
    /// A consumer's topics (by name) without READ.
    Topics(HashSet<String>),
}

impl Denied {
    fn topic(&self, name: &str) -> bool {
        match self {
            Denied::Nothing => false,
            Denied::All => true,
            Denied::Topics(t) => t.contains(name),
        }
    }
}

/// Kafka's fetch authorization over the plan (one ACL snapshot for the whole request).
fn denied_of(ctx: &RequestContext<'_>, plan: &[PartRequest], reader: Reader) -> Denied {
    let authz = Checker::new(ctx);
    if !authz.enabled() {
        return Denied::Nothing;
    }
    if matches!(reader, Reader::Replica(_)) {
        return if authz.cluster(AclOperation::ClusterAction) {
            Denied::Nothing
        } else {
            Denied::All
        };
    }
    let mut checked: HashSet<&str> = HashSet::new();
    let mut denied = HashSet::new();
    for r in plan {
        let name = r.key.topic.as_str();
        if checked.insert(name) && !authz.topic(AclOperation::Read, name) {
            denied.insert(name.to_string());
        }
    }
    if denied.is_empty() {
        Denied::Nothing
    } else {
        Denied::Topics(denied)
    }
}

fn read_plan(
    broker: &Arc<Broker>,
    image: &MetadataImage,
    plan: &[PartRequest],
    limits: Limits,
    denied: &Denied,
) -> Vec<PartResult> {
    let mut remaining = limits.max_bytes;
    let mut min_one_message = true;
    let mut out = Vec::with_capacity(plan.len());
    for req in plan {
        let cap = usize::try_from(req.partition_max_bytes.max(0))
            .unwrap_or(0)
            .min(remaining);
        let r = read_one(broker, image, req, cap, min_one_message, limits, denied);
        let n = r.bytes();
        if n > 0 {
            min_one_message = false;
            remaining = remaining.saturating_sub(n);
        }
        out.push(r);
    }
    out
}

const UNKNOWN: Reported = Reported {
    high_watermark: -1,
    last_stable_offset: -1,
    log_start_offset: -1,
};

fn read_one(
    broker: &Arc<Broker>,
    image: &MetadataImage,
    req: &PartRequest,
    max_bytes: usize,
    min_one_message: bool,
    limits: Limits,
    denied: &Denied,
) -> PartResult {
    let fail = |error| PartResult {
        req: req.clone(),
        error,
        reported: UNKNOWN,
        records: None,
        diverging: None,
        aborted: Vec::new(),
    };
    let by_id = !req.key.topic_id.is_nil();
    // Kafka: a follower without CLUSTER_ACTION is refused everything; a consumer gets an
    // unknown id first, then authorization, then existence.
    let unknown_id = by_id && req.key.topic.is_empty();
    if denied.topic(&req.key.topic) && (!unknown_id || matches!(denied, Denied::All)) {
        return fail(ErrorCode::TopicAuthorizationFailed);
    }
    let info = match image.topic(&req.key.topic) {
        Some(info) if !by_id || info.id == *req.key.topic_id.as_bytes() => info,
        _ if by_id => return fail(ErrorCode::UnknownTopicId),
        _ => return fail(ErrorCode::UnknownTopicOrPartition),
    };
    let params = ReadParams {
        fetch_offset: req.fetch_offset,
        max_bytes,
        min_one_message,
        reader: limits.reader,
        current_leader_epoch: req.current_leader_epoch,
        last_fetched_epoch: req.last_fetched_epoch,
    };
    let read = match broker.replicas.read(info, req.key.partition, &params) {
        Ok(r) => r,
        Err(code) => return fail(code),
    };
    let reported = Reported {
        high_watermark: read.bound.high_watermark,
        last_stable_offset: read.bound.last_stable_offset,
        log_start_offset: read.bound.log_start_offset,
    };
    match read.result {
        Ok(slice) => {
            let records = slice.and_then(|s| {
                u32::try_from(s.len).ok().map(|len| FileRegion {
                    file: s.file,
                    position: s.position,
                    len,
                })
            });
            PartResult {
                req: req.clone(),
                error: ErrorCode::None,
                reported,
                records,
                diverging: read.diverging,
                aborted: read
                    .aborted
                    .iter()
                    .map(|a| skiff_protocol::AbortedTransaction {
                        producer_id: a.producer_id,
                        first_offset: a.first_offset,
                    })
                    .collect(),
            }
        }
        Err(e) => {
            // A quarantined range was logged at ERROR once, when it was found.
            if !matches!(
                e,
                StorageError::OffsetOutOfRange { .. } | StorageError::Quarantined { .. }
            ) {
                tracing::error!(topic = %req.key.topic, partition = req.key.partition, error = %e, "fetch read failed");
            }
            PartResult {
                reported,
                ..fail(e.error_code())
            }
        }
    }
}

/// Builds the response; for sessions, creates the new session or filters to changed partitions.
fn respond(
    broker: &Arc<Broker>,
    version: i16,
    mode: SessionMode,
    results: Vec<PartResult>,
    limits: Limits,
) -> FetchResponse {
    let now = broker.now_ms();
    let mut sessions = broker.sessions();
    let (session_id, results) = match mode {
        SessionMode::Incremental { id } => {
            broker.stats.incremental_fetch();
            let kept = results
                .into_iter()
                .filter(|r| {
                    let news = has_news(r.error, r.bytes(), r.diverging.is_some());
                    sessions.should_report(id, &r.req.key, r.reported, news)
                })
                .collect();
            (id, kept)
        }
        SessionMode::New => {
            let parts: Vec<_> = results
                .iter()
                .map(|r| (r.req.clone(), r.reported))
                .collect();
            let id = sessions.create(&parts, now);
            if id != 0 {
                broker.stats.fetch_session_created();
            }
            (id, results)
        }
        SessionMode::Sessionless | SessionMode::Error(_) => (0, results),
    };
    drop(sessions);
    count_bytes_out(broker, &results, limits.reader);
    let mut topics: Vec<FetchableTopicResponse> = Vec::new();
    for r in results {
        let partition = FetchResponsePartitionData {
            partition_index: r.req.key.partition,
            error_code: r.error as i16,
            high_watermark: r.reported.high_watermark,
            last_stable_offset: r.reported.last_stable_offset,
            log_start_offset: r.reported.log_start_offset,
            aborted_transactions: limits.read_committed.then(|| r.aborted.clone()),
            preferred_read_replica: -1,
            diverging_epoch: match r.diverging {
                Some((epoch, end_offset)) => {
                    skiff_protocol::FetchResponseEpochEndOffset { epoch, end_offset }
                }
                None => Default::default(),
            },
            records: Some(match r.records {
                Some(region) => Records::File(region),
                None => Records::default(),
            }),
            ..FetchResponsePartitionData::default()
        };
        let same_topic = topics
            .last()
            .is_some_and(|t| t.topic == r.req.key.topic && t.topic_id == r.req.key.topic_id);
        if same_topic {
            if let Some(t) = topics.last_mut() {
                t.partitions.push(partition);
            }
        } else {
            topics.push(FetchableTopicResponse {
                topic: if version < TOPIC_ID_MIN_VERSION {
                    r.req.key.topic.clone()
                } else {
                    String::new()
                },
                topic_id: r.req.key.topic_id,
                partitions: vec![partition],
            });
        }
    }
    FetchResponse {
        error_code: 0,
        session_id,
        responses: topics,
        ..FetchResponse::default()
    }
}

/// issue 20: record bytes put into the response, per topic for consumers (one counter
/// lookup per run of a topic's partitions), as replication bytes for a follower.
fn count_bytes_out(broker: &Broker, results: &[PartResult], reader: Reader) {
    let mut current: Option<(&str, crate::metrics::TopicMetrics)> = None;
    for r in results.iter().filter(|r| r.bytes() > 0) {
        let n = r.bytes() as u64;
        if matches!(reader, Reader::Replica(_)) {
            broker.metrics.replication_bytes_out(n);
            continue;
        }
        match &current {
            Some((t, m)) if *t == r.req.key.topic => m.bytes_out(n),
            _ => {
                let m = broker.metrics.topic(&r.req.key.topic);
                m.bytes_out(n);
                current = Some((&r.req.key.topic, m));
            }
        }
    }
}

/// The reader of a Fetch: a replica id >= 0 (a broker), else a consumer at its isolation level.
fn reader_of(replica_id: i32, isolation_level: i8) -> Reader {
    if replica_id >= 0 {
        Reader::Replica(replica_id)
    } else {
        Reader::Consumer(Isolation::from_wire(isolation_level))
    }
}
