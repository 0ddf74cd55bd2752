//! Produce (0), v3-11 (v0-2 are advertised for librdkafka's sake but close the connection).
//!
//! Per partition, in request order: look the topic up (Produce never auto-creates: unknown ->
//! UNKNOWN_TOPIC_OR_PARTITION), refuse zstd below v7 (UNSUPPORTED_COMPRESSION_TYPE), validate
//! the batch against the topic's config *outside* the log lock (CRC, decompression, timestamps),
//! then append it as leader (epoch 0) under the lock. A normal topic's high watermark moves to
//! the log end at once; a durable topic (`flush.messages=1`) is fsynced (group commit) off the
//! async workers and its high watermark moves only to the synced end, before the answer.
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

use std::sync::Arc;

use skiff_metadata::MetadataImage;
use skiff_protocol::{
    BatchIndexAndErrorMessage, PartitionProduceData, PartitionProduceResponse, ProduceRequest,
    ProduceResponse, ResponseBody, TopicProduceResponse,
};
use skiff_record::{BatchView, Compression};
use skiff_storage::sync::SyncState;
use skiff_storage::validate::{RecordErrorEntry, validate_client_batch};
use skiff_storage::{SharedLog, StorageError};
use skiff_types::{ErrorCode, TopicPartition};

use super::{Reply, RequestContext};
use crate::broker::{Broker, LEADER_EPOCH};

/// First Produce version allowed to carry zstd batches (KIP-110).
const ZSTD_MIN_VERSION: i16 = 7;

/// A durable append waiting for its fsync before the answer.
struct PendingSync {
    tp: TopicPartition,
    log: SharedLog,
    sync: Arc<SyncState>,
    target: i64,
    /// Index of the topic and partition in the response.
    at: (usize, usize),
}

struct PartitionFailure {
    code: ErrorCode,
    message: String,
    record_errors: Vec<RecordErrorEntry>,
}

impl PartitionFailure {
    fn code(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            record_errors: Vec::new(),
        }
    }
}

pub fn handle(ctx: &RequestContext<'_>, req: ProduceRequest) -> Reply {
    let broker = ctx.broker;
    let acks = req.acks;
    let now = broker.now_ms();
    let image = broker.image();
    let acks_valid = matches!(acks, -1..=1);
    let mut responses = Vec::with_capacity(req.topic_data.len());
    let mut pending = Vec::new();
    let mut failures = Vec::new();
    for (ti, topic) in req.topic_data.iter().enumerate() {
        let mut parts = Vec::with_capacity(topic.partition_data.len());
        for (pi, data) in topic.partition_data.iter().enumerate() {
            let result = if acks_valid {
                produce_one(broker, &image, &topic.name, data, ctx.api_version, now)
            } else {
                Err(PartitionFailure::code(
                    ErrorCode::InvalidRequiredAcks,
                    format!("Invalid required acks value {acks}: must be -1, 0 or 1"),
                ))
            };
            let resp = match result {
                Ok(ok) => {
                    if let Some((log, sync)) = ok.sync {
                        pending.push(PendingSync {
                            tp: TopicPartition::new(topic.name.clone(), data.index),
                            log,
                            sync,
                            target: ok.next_offset,
                            at: (ti, pi),
                        });
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
    let response = ProduceResponse {
        responses,
        ..ProduceResponse::default()
    };
    if acks == 0 {
        if !pending.is_empty() {
            let broker = Arc::clone(broker);
            tokio::spawn(async move {
                let mut response = ProduceResponse::default();
                complete_syncs(&broker, pending, &mut response).await;
            });
        }
        return if failures.is_empty() {
            Reply::Nothing
        } else {
            Reply::Close(format!("acks=0 produce failed: {}", failures.join("; ")))
        };
    }
    if pending.is_empty() {
        return Reply::Now(ResponseBody::Produce(response));
    }
    let broker = Arc::clone(broker);
    Reply::Later(Box::pin(async move {
        let mut response = response;
        complete_syncs(&broker, pending, &mut response).await;
        ResponseBody::Produce(response)
    }))
}

struct Appended {
    base_offset: i64,
    next_offset: i64,
    log_append_time_ms: i64,
    log_start_offset: i64,
    sync: Option<(SharedLog, Arc<SyncState>)>,
}

fn produce_one(
    broker: &Arc<Broker>,
    image: &MetadataImage,
    topic: &str,
    data: &PartitionProduceData,
    version: i16,
    now: i64,
) -> Result<Appended, PartitionFailure> {
    let Some(info) = image.topic(topic) else {
        return Err(PartitionFailure::code(
            ErrorCode::UnknownTopicOrPartition,
            format!(
                "This server does not host this topic-partition: {topic}-{}",
                data.index
            ),
        ));
    };
    let log = broker.partition_log(info, data.index).map_err(|code| {
        PartitionFailure::code(code, format!("cannot use partition {topic}-{}", data.index))
    })?;
    let bytes = data
        .records
        .as_ref()
        .and_then(|r| r.as_bytes())
        .map(|b| &b[..])
        .unwrap_or(&[]);
    if version < ZSTD_MIN_VERSION
        && let Ok(view) = BatchView::new(bytes)
        && matches!(view.compression(), Ok(Compression::Zstd))
    {
        return Err(PartitionFailure::code(
            ErrorCode::UnsupportedCompressionType,
            format!(
                "Produce requests with version {version} cannot use zstd compression (needs v7+)"
            ),
        ));
    }
    let vcfg = log.lock().config().validation_config();
    let validated = validate_client_batch(bytes, &vcfg, now).map_err(|e| PartitionFailure {
        code: e.code,
        message: e.message,
        record_errors: e.record_errors,
    })?;
    let tp = TopicPartition::new(topic, data.index);
    let (info_append, log_start, sync) = {
        let mut l = log.lock();
        let appended = l
            .append_validated(&validated, LEADER_EPOCH, now)
            .map_err(|e| append_failure(&tp, e))?;
        if !appended.needs_sync && !appended.duplicate {
            let leo = l.log_end_offset();
            l.set_high_watermark(leo);
        }
        let sync = appended.needs_sync.then(|| Arc::clone(l.sync()));
        // delivery delay (issue 8): the partition's next DSO move, for the timer
        if validated.deliver_after_ms.is_some()
            && let Some(due) = l.delivery_next_due()
        {
            broker.delivery.schedule(tp.clone(), due);
        }
        (appended, l.log_start_offset(), sync)
    };
    if sync.is_none() && !info_append.duplicate {
        broker.waiters.notify(&tp);
    }
    // A duplicate's offsets and timestamp are the original batch's; on a LogAppendTime topic
    // that timestamp is the original append time (validation stamped this retry with `now`).
    let log_append_time_ms = if info_append.duplicate && validated.log_append_time_ms >= 0 {
        info_append.max_timestamp
    } else {
        validated.log_append_time_ms
    };
    Ok(Appended {
        base_offset: info_append.base_offset,
        next_offset: info_append.last_offset + 1,
        log_append_time_ms,
        log_start_offset: log_start,
        sync: sync.map(|s| (log, s)),
    })
}

/// A refused leader append: producer-state refusals are the client's business and I/O errors
/// are logged once per log dir by storage (both at debug here), anything else is an error. Both carry storage's code and message.
fn append_failure(tp: &TopicPartition, e: StorageError) -> PartitionFailure {
    match &e {
        StorageError::Producer(p) => {
            tracing::debug!(%tp, error = %p, "idempotent producer batch refused");
        }
        // issue 12: the log dir went (or is) offline, logged once at ERROR by storage.
        StorageError::Io { .. } | StorageError::LogDirOffline { .. } => {
            tracing::debug!(%tp, error = %e, "append refused: log dir offline");
        }
        other => tracing::error!(%tp, error = %other, "append failed"),
    }
    PartitionFailure::code(e.error_code(), e.to_string())
}

fn failed_partition(index: i32, f: PartitionFailure) -> PartitionProduceResponse {
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

/// Waits for every durable append's fsync (off the async workers), then moves high watermarks.
/// A failed fsync turns that partition's answer into KAFKA_STORAGE_ERROR.
async fn complete_syncs(
    broker: &Arc<Broker>,
    pending: Vec<PendingSync>,
    response: &mut ProduceResponse,
) {
    for p in pending {
        let sync = Arc::clone(&p.sync);
        let target = p.target;
        let result = tokio::task::spawn_blocking(move || sync.sync_to(target)).await;
        let failed = match result {
            Ok(Ok(_)) => None,
            Ok(Err(e)) => Some(e.to_string()),
            Err(e) => Some(format!("fsync task failed: {e}")),
        };
        match failed {
            None => broker.advance_high_watermark(&p.tp, &p.log),
            Some(message) => {
                tracing::error!(tp = %p.tp, error = %message, "fsync failed");
                if let Some(slot) = response
                    .responses
                    .get_mut(p.at.0)
                    .and_then(|t| t.partition_responses.get_mut(p.at.1))
                {
                    let index = slot.index;
                    *slot = failed_partition(
                        index,
                        PartitionFailure::code(ErrorCode::KafkaStorageError, message),
                    );
                }
            }
        }
    }
}
