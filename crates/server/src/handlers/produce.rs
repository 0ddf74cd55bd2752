//! Produce (0), v3-11 (v0-2 are advertised for librdkafka's sake but close the connection).
//!
//! Per partition, in request order: look the topic up (Produce never auto-creates: unknown ->
//! UNKNOWN_TOPIC_OR_PARTITION), refuse zstd below v7 (UNSUPPORTED_COMPRESSION_TYPE), then hand
//! the bytes to the replica manager (`ReplicaManager::append_client`), which validates them
//! outside the log lock, appends as leader at the partition's epoch and decides the acks. A
//! normal topic's high watermark moves to the log end at once; on a durable topic
//! (`flush.messages=1`) the answer waits for the group-commit fsync (the ack the replica
//! manager parks), and the high watermark moves only to the synced end.
//! `acks` must be -1, 0 or 1 (else INVALID_REQUIRED_ACKS on every partition). With `acks=0`
//! there is no response; if any partition failed the connection is closed, the only signal a
//! fire-and-forget producer gets (Kafka does the same).
//!
//! Idempotent producers (issue 5): the log's producer state decides each batch. A retry of one
//! of the producer's last 5 batches is answered with success and the ORIGINAL base offset
//! (and, on a LogAppendTime topic, the original append time as `LogAppendTimeMs`), appending
//! nothing; a refused batch (sequence gap 45, stale epoch 47, negative sequence 87) gets that
//! code and the storage's message on its partition. Every storage error maps to a specific
//! code: the produce path never answers UNKNOWN_SERVER_ERROR.
//!
//! Transactional batches (issue 18): the first batch of a producer's transaction on a
//! partition is verified with the transaction coordinator first (KIP-890 part 1,
//! `crate::txn::verify`): a partition never added to the transaction, or a late batch of an
//! ended one, is refused with INVALID_TXN_STATE and nothing is appended.
//!
//! Authorization (issue 19, Kafka's `handleProduceRequest`), before anything else: a request
//! carrying transactional batches needs WRITE on its transactional id (none, or refused:
//! TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every partition; with acks=0 the connection
//! closes); then WRITE on each topic, refused -> TOPIC_AUTHORIZATION_FAILED on its partitions,
//! decided before the topic's existence, so a missing topic and a forbidden one look alike.
//! Idempotent (non-transactional) producers need nothing more at produce time.

use std::sync::Arc;

use bytes::Bytes;

use skiff_auth::acl::{AclOperation, ResourceType};
use skiff_metadata::MetadataImage;
use skiff_protocol::{
    BatchIndexAndErrorMessage, PartitionProduceData, PartitionProduceResponse, ProduceRequest,
    ProduceResponse, ResponseBody, TopicProduceResponse,
};
use skiff_record::{BatchView, Compression};
use skiff_replication::Acks;
use skiff_types::ErrorCode;

use super::authz_ops::Checker;
use super::{Reply, RequestContext};
use crate::broker::Broker;
use crate::replica::append::{AckWait, AppendError};
use crate::txn::verify::{self, Verdict};

/// First Produce version allowed to carry zstd batches (KIP-110).
const ZSTD_MIN_VERSION: i16 = 7;

/// An append whose acks wait for the group-commit fsync, before the answer.
struct PendingAck {
    ack: AckWait,
    /// Index of the topic and partition in the response.
    at: (usize, usize),
}

/// The appends of one request, before their acks are awaited.
struct Outcome {
    response: ProduceResponse,
    pending: Vec<PendingAck>,
    failures: Vec<String>,
}

pub fn handle(ctx: &RequestContext<'_>, req: ProduceRequest) -> Reply {
    let broker = ctx.broker;
    let version = ctx.api_version;
    let tid = req.transactional_id.as_deref();
    // issue 19: authorization first (transactional id, then WRITE per topic).
    let authz = Checker::new(ctx);
    let mut denied: Vec<bool> = Vec::new();
    if authz.enabled() {
        if has_transactional_records(&req)
            && !tid.is_some_and(|t| {
                authz.allows(AclOperation::Write, ResourceType::TransactionalId, t)
            })
        {
            if req.acks == 0 {
                return Reply::Close("transactional produce not authorized (acks=0)".into());
            }
            return Reply::Now(ResponseBody::Produce(refuse_all(
                &req,
                ErrorCode::TransactionalIdAuthorizationFailed,
                "Transactional Id authorization failed.",
            )));
        }
        denied = req
            .topic_data
            .iter()
            .map(|t| !authz.topic(AclOperation::Write, &t.name))
            .collect();
    }
    let denied = Denied(denied);
    // issue 18: the transaction verification of every partition's batch, first.
    let image = broker.image();
    let mut verdicts: Vec<Vec<Verdict>> = req
        .topic_data
        .iter()
        .enumerate()
        .map(|(ti, t)| {
            t.partition_data
                .iter()
                .map(|d| match image.topic(&t.name) {
                    Some(_) if denied.topic(ti) => Verdict::Pass,
                    Some(info) => verify::check(broker, tid, info, d.index, records_of(d)),
                    None => Verdict::Pass,
                })
                .collect()
        })
        .collect();
    let remote: Vec<(usize, usize, i64, i16)> = verdicts
        .iter()
        .enumerate()
        .flat_map(|(ti, ps)| {
            ps.iter().enumerate().filter_map(move |(pi, v)| match v {
                Verdict::Remote(pid, epoch) => Some((ti, pi, *pid, *epoch)),
                _ => None,
            })
        })
        .collect();
    if let (Some(tid), Some(&(_, _, pid, epoch)), false) = (tid, remote.first(), req.acks == 0) {
        // The coordinator is another node: ask it, then append, while the connection waits
        // (the producer's next request must not overtake this batch).
        let broker = Arc::clone(broker);
        let tid = tid.to_string();
        return Reply::Hold(Box::pin(async move {
            let parts: Vec<(String, i32)> = remote
                .iter()
                .map(|&(ti, pi, _, _)| {
                    let t = &req.topic_data[ti];
                    (t.name.clone(), t.partition_data[pi].index)
                })
                .collect();
            let answers = verify::verify_remote(&broker, &tid, pid, epoch, &parts).await;
            for (&(ti, pi, _, _), v) in remote.iter().zip(answers) {
                verdicts[ti][pi] = v;
            }
            let out = append_all(&broker, &req, version, &verdicts, &denied);
            let deadline = ack_deadline(&broker, &req);
            finish(out, deadline).await
        }));
    }
    let out = append_all(broker, &req, version, &verdicts, &denied);
    if req.acks == 0 {
        // Nobody waits: the replica manager's fsync driver still moves the HW.
        return if out.failures.is_empty() {
            Reply::Nothing
        } else {
            Reply::Close(format!(
                "acks=0 produce failed: {}",
                out.failures.join("; ")
            ))
        };
    }
    if out.pending.is_empty() {
        return Reply::Now(ResponseBody::Produce(out.response));
    }
    let deadline = ack_deadline(broker, &req);
    Reply::Later(Box::pin(finish(out, deadline)))
}

/// acks=-1 waits at most the request's timeout_ms (Kafka's DelayedProduce); acks=1 only
/// ever waits for the leader's own fsync on a durable topic, which has no deadline.
fn ack_deadline(broker: &Broker, req: &ProduceRequest) -> Option<tokio::time::Instant> {
    (req.acks == -1).then(|| {
        broker.deadline_after(std::time::Duration::from_millis(
            u64::try_from(req.timeout_ms).unwrap_or(0),
        ))
    })
}

async fn finish(mut out: Outcome, deadline: Option<tokio::time::Instant>) -> ResponseBody {
    complete_acks(out.pending, &mut out.response, deadline).await;
    ResponseBody::Produce(out.response)
}

/// The bytes of one partition's records (empty if none).
fn records_of(data: &PartitionProduceData) -> &[u8] {
    data.records
        .as_ref()
        .and_then(|r| r.as_bytes())
        .map_or(&[], |b| &b[..])
}

/// Topics (by index in the request) refused WRITE; empty without an authorizer.
struct Denied(Vec<bool>);

impl Denied {
    fn topic(&self, ti: usize) -> bool {
        self.0.get(ti).copied().unwrap_or(false)
    }
}

/// Kafka's `RequestUtils.hasTransactionalRecords`: any batch of any partition transactional.
fn has_transactional_records(req: &ProduceRequest) -> bool {
    req.topic_data.iter().any(|t| {
        t.partition_data.iter().any(|d| {
            skiff_record::batches(records_of(d))
                .map_while(Result::ok)
                .any(|(_, b)| b.is_transactional())
        })
    })
}

/// Kafka's `ProduceRequest.getErrorResponse`: every partition answers `code`.
fn refuse_all(req: &ProduceRequest, code: ErrorCode, message: &str) -> ProduceResponse {
    ProduceResponse {
        responses: req
            .topic_data
            .iter()
            .map(|t| TopicProduceResponse {
                name: t.name.clone(),
                partition_responses: t
                    .partition_data
                    .iter()
                    .map(|d| failed_partition(d.index, AppendError::code(code, message)))
                    .collect(),
            })
            .collect(),
        ..ProduceResponse::default()
    }
}

/// Appends every partition's batch (those authorized and that the verification passed), in
/// request order.
fn append_all(
    broker: &Arc<Broker>,
    req: &ProduceRequest,
    version: i16,
    verdicts: &[Vec<Verdict>],
    denied: &Denied,
) -> Outcome {
    let acks = req.acks;
    let now = broker.now_ms();
    let image = broker.image();
    let acks_valid = Acks::from_wire(acks).ok();
    let mut responses = Vec::with_capacity(req.topic_data.len());
    let mut pending = Vec::new();
    let mut failures = Vec::new();
    for (ti, topic) in req.topic_data.iter().enumerate() {
        let mut parts = Vec::with_capacity(topic.partition_data.len());
        for (pi, data) in topic.partition_data.iter().enumerate() {
            let verdict = verdicts
                .get(ti)
                .and_then(|v| v.get(pi))
                .unwrap_or(&Verdict::Pass);
            let result = match (acks_valid, verdict) {
                _ if denied.topic(ti) => Err(AppendError::code(
                    ErrorCode::TopicAuthorizationFailed,
                    format!("Not authorized to access topics: [{}]", topic.name),
                )),
                (None, _) => Err(AppendError::code(
                    ErrorCode::InvalidRequiredAcks,
                    format!("Invalid required acks value {acks}: must be -1, 0 or 1"),
                )),
                (Some(_), Verdict::Refuse(code, message)) => {
                    Err(AppendError::code(*code, message.clone()))
                }
                (Some(acks), _) => {
                    produce_one(broker, &image, &topic.name, data, version, acks, now)
                }
            };
            let resp = match result {
                Ok(ok) => {
                    if let Some(ack) = ok.ack {
                        pending.push(PendingAck { ack, at: (ti, pi) });
                    }
                    PartitionProduceResponse {
                        index: data.index,
                        error_code: 0,
                        base_offset: ok.base_offset,
                        log_append_time_ms: ok.log_append_time_ms,
                        log_start_offset: ok.log_start_offset,
                        ..PartitionProduceResponse::default()
                    }
                }
                Err(f) => {
                    failures.push(format!("{}-{}: {}", topic.name, data.index, f.message));
                    failed_partition(data.index, f)
                }
            };
            parts.push(resp);
        }
        responses.push(TopicProduceResponse {
            name: topic.name.clone(),
            partition_responses: parts,
        });
    }
    Outcome {
        response: ProduceResponse {
            responses,
            ..ProduceResponse::default()
        },
        pending,
        failures,
    }
}

/// One partition's accepted produce.
struct Produced {
    base_offset: i64,
    log_append_time_ms: i64,
    log_start_offset: i64,
    ack: Option<AckWait>,
}

fn produce_one(
    broker: &Arc<Broker>,
    image: &MetadataImage,
    topic: &str,
    data: &PartitionProduceData,
    version: i16,
    acks: Acks,
    now: i64,
) -> Result<Produced, AppendError> {
    let Some(info) = image.topic(topic) else {
        return Err(AppendError::code(
            ErrorCode::UnknownTopicOrPartition,
            format!(
                "This server does not host this topic-partition: {topic}-{}",
                data.index
            ),
        ));
    };
    let empty = Bytes::new();
    let bytes = data
        .records
        .as_ref()
        .and_then(|r| r.as_bytes())
        .unwrap_or(&empty);
    if version < ZSTD_MIN_VERSION
        && let Ok(view) = BatchView::new(&bytes[..])
        && matches!(view.compression(), Ok(Compression::Zstd))
    {
        return Err(AppendError::code(
            ErrorCode::UnsupportedCompressionType,
            format!(
                "Produce requests with version {version} cannot use zstd compression (needs v7+)"
            ),
        ));
    }
    let (appended, log_append_time_ms) = broker
        .replicas
        .append_client(info, data.index, bytes, acks, now)?;
    if !appended.duplicate {
        // issue 20: the batch bytes as the producer sent them, and its records.
        let records = u64::try_from(appended.next_offset - appended.base_offset).unwrap_or(0);
        broker.metrics.produced(topic, bytes.len() as u64, records);
    }
    // A duplicate's offsets and timestamp are the original batch's; on a LogAppendTime topic
    // that timestamp is the original append time (validation stamped this retry with `now`).
    let log_append_time_ms = if appended.duplicate && log_append_time_ms >= 0 {
        appended.max_timestamp
    } else {
        log_append_time_ms
    };
    Ok(Produced {
        base_offset: appended.base_offset,
        log_append_time_ms,
        log_start_offset: appended.log_start_offset,
        ack: appended.ack,
    })
}

fn failed_partition(index: i32, f: AppendError) -> PartitionProduceResponse {
    PartitionProduceResponse {
        index,
        error_code: f.code as i16,
        base_offset: -1,
        log_append_time_ms: -1,
        log_start_offset: -1,
        record_errors: f
            .record_errors
            .into_iter()
            .map(|r| BatchIndexAndErrorMessage {
                batch_index: r.batch_index,
                batch_index_error_message: r.message,
            })
            .collect(),
        error_message: Some(f.message),
        ..PartitionProduceResponse::default()
    }
}

/// Waits for every parked ack (the group-commit fsync of durable topics, the HW passing an
/// acks=-1 batch) until `deadline` (acks=-1 only). A failed fsync turns that partition's answer into
/// KAFKA_STORAGE_ERROR, the deadline into REQUEST_TIMED_OUT (the batch stays in the log, as
/// in Kafka).
async fn complete_acks(
    pending: Vec<PendingAck>,
    response: &mut ProduceResponse,
    deadline: Option<tokio::time::Instant>,
) {
    for p in pending {
        let answer = match deadline {
            Some(d) => tokio::time::timeout_at(d, p.ack).await,
            None => Ok(p.ack.await),
        };
        let code = match answer {
            Ok(answer) => answer.unwrap_or(ErrorCode::KafkaStorageError),
            Err(_) => ErrorCode::RequestTimedOut,
        };
        if code == ErrorCode::None {
            continue;
        }
        if let Some(slot) = response
            .responses
            .get_mut(p.at.0)
            .and_then(|t| t.partition_responses.get_mut(p.at.1))
        {
            let index = slot.index;
            *slot = failed_partition(
                index,
                AppendError::code(code, format!("the append was not acknowledged: {code:?}")),
            );
        }
    }
}
