//! Leader appends and their acks (`append_client` for Produce, `append_records` for the group
//! coordinator's `__consumer_offsets` batches).
//!
//! Order of one append, under the log lock then the state lock: the core checks the append
//! (`check_append`: leader? enough replicas for acks=-1?), storage appends at the core's leader
//! epoch, the core hears the new log end (`on_leader_append`: HW = LEO unless durable), and the
//! acks condition is asked (`await_acks`): answered at once, or parked with a oneshot the
//! caller awaits. A durable append also starts the group-commit driver: the fsync runs on the
//! blocking pool, then `on_local_synced` (or `on_local_sync_failed`) moves the HW and completes
//! the parked acks, whether or not anyone waits (acks=0 still moves the HW after the fsync).
//!
//! Produce appends go through the partition's [`ProduceCombiner`] (issue 14, flat combining):
//! a producer that finds another one appending leaves its validated batch in the queue and
//! sleeps; whoever holds the locks takes every queued batch, runs the steps above once for the
//! whole group (one `pwritev` for the batches, `Log::append_validated_group`) and answers each
//! producer exactly as a lone append would have. A queued batch owns the request's `Bytes`
//! (no copy), so the queue can outlive any one request.

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use skiff_record::BATCH_HEADER_BYTES;
use skiff_replication::{AckDecision, Acks, WaitId};
use skiff_storage::combine::{Combiner, GroupBatch};
use skiff_storage::validate::{RecordErrorEntry, ValidatedBatch, validate_client_batch};
use skiff_storage::{AppendInfo, Log, StorageError};
use skiff_types::{ErrorCode, TopicPartition};
use tokio::sync::oneshot;

use super::{Hosted, ReplicaManager};
use skiff_metadata::TopicInfo;

/// A refused append: Kafka's code, a message, and per-record errors (INVALID_RECORD and
/// INVALID_TIMESTAMP carry them).
#[derive(Debug)]
pub struct AppendError {
    pub code: ErrorCode,
    pub message: String,
    pub record_errors: Vec<RecordErrorEntry>,
}

impl AppendError {
    pub fn code(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            record_errors: Vec::new(),
        }
    }
}

/// The answer to await when the acks condition did not hold yet (durable topics): the final
/// code (NONE, or KAFKA_STORAGE_ERROR when the fsync failed).
pub type AckWait = oneshot::Receiver<ErrorCode>;

/// What an accepted append returns.
#[derive(Debug)]
pub struct Appended {
    pub base_offset: i64,
    pub next_offset: i64,
    /// The batch's max timestamp (a duplicate's: the original's).
    pub max_timestamp: i64,
    pub duplicate: bool,
    pub log_start_offset: i64,
    /// `Some` while the acks condition waits for the group-commit fsync.
    pub ack: Option<AckWait>,
}

/// A validated produce batch owning its bytes: the request's `Bytes` (sliced, not copied) or
/// the recompressed buffer.
pub(crate) struct SharedBatch {
    header: [u8; BATCH_HEADER_BYTES],
    body: Bytes,
    deliver_after_ms: Option<i64>,
}

impl SharedBatch {
    /// `v` validated from `src` (its body, when borrowed, lies inside `src`).
    fn new(v: ValidatedBatch<'_>, src: &Bytes) -> Self {
        let body = match v.body {
            Cow::Borrowed(b) => {
                let (start, end) = (src.as_ptr() as usize, src.as_ptr() as usize + src.len());
                let at = b.as_ptr() as usize;
                if at >= start && at + b.len() <= end {
                    src.slice(at - start..at - start + b.len())
                } else {
                    Bytes::copy_from_slice(b)
                }
            }
            Cow::Owned(v) => Bytes::from(v),
        };
        Self {
            header: v.header,
            body,
            deliver_after_ms: v.deliver_after_ms,
        }
    }
}

impl GroupBatch for SharedBatch {
    fn header(&self) -> &[u8; BATCH_HEADER_BYTES] {
        &self.header
    }
    fn body(&self) -> &[u8] {
        &self.body
    }
    fn deliver_after_ms(&self) -> Option<i64> {
        self.deliver_after_ms
    }
}

/// One producer's append waiting in its partition's combiner.
pub(crate) struct ProduceJob {
    batch: SharedBatch,
    acks: Acks,
    now: i64,
}

/// The queue in front of a partition's locks for produce appends.
pub(crate) type ProduceCombiner = Combiner<ProduceJob, Result<Appended, AppendError>>;

impl ReplicaManager {
    /// Produce: validates a client batch against the topic's config (outside the log lock:
    /// CRC, decompression, timestamps), then appends it as leader with `acks` (already valid),
    /// combined with the batches other producers queued meanwhile (see the module doc).
    /// Returns the validated batch's LogAppendTime (or -1) beside the append.
    pub fn append_client(
        self: &Arc<Self>,
        info: &TopicInfo,
        partition: i32,
        bytes: &Bytes,
        acks: Acks,
        now: i64,
    ) -> Result<(Appended, i64), AppendError> {
        let h = self.hosted(info, partition).map_err(|code| {
            AppendError::code(
                code,
                format!("cannot use partition {}-{partition}", info.name),
            )
        })?;
        let vcfg = h.log.lock().config().validation_config();
        let validated = validate_client_batch(bytes, &vcfg, now).map_err(|e| AppendError {
            code: e.code,
            message: e.message,
            record_errors: e.record_errors,
        })?;
        let log_append_time_ms = validated.log_append_time_ms;
        let job = ProduceJob {
            batch: SharedBatch::new(validated, bytes),
            acks,
            now,
        };
        let appended = h.combiner.run(job, |jobs| self.append_group(&h, jobs))?;
        Ok((appended, log_append_time_ms))
    }

    /// The combiner's group: [`Self::append_with`]'s steps once for all `jobs`, with one
    /// answer per job, in order.
    fn append_group(
        self: &Arc<Self>,
        h: &Hosted,
        jobs: Vec<ProduceJob>,
    ) -> Vec<Result<Appended, AppendError>> {
        let mut l = h.log.lock();
        let mut st = h.state.lock();
        let now = jobs.iter().map(|j| j.now).max().unwrap_or(0);
        let mut answers: Vec<Option<Result<Appended, AppendError>>> =
            jobs.iter().map(|_| None).collect();
        let mut accepted = Vec::with_capacity(jobs.len());
        for (i, job) in jobs.iter().enumerate() {
            match st.check_append(job.acks) {
                Ok(()) => accepted.push(i),
                Err(code) => {
                    answers[i] = Some(Err(AppendError::code(
                        code,
                        format!("{} refuses the append: {code:?}", h.tp),
                    )));
                }
            }
        }
        let group: Vec<&SharedBatch> = accepted.iter().map(|&i| &jobs[i].batch).collect();
        let results = l.append_validated_group(&group, st.leader_epoch(), now);
        let fx = st.on_leader_append(l.log_end_offset(), now);
        let (mut sync_to, mut delayed) = (None, false);
        let mut done = Vec::with_capacity(accepted.len());
        for (&i, result) in accepted.iter().zip(results) {
            let info = match result {
                Ok(info) => info,
                Err(e) => {
                    answers[i] = Some(Err(append_failure(&h.tp, e)));
                    continue;
                }
            };
            let end = info.last_offset + 1;
            let wait = WaitId(self.next_wait.fetch_add(1, Ordering::Relaxed));
            let ack = match st.await_acks(wait, jobs[i].acks, end, i64::MAX) {
                AckDecision::Done(ErrorCode::None) => None,
                AckDecision::Done(code) => {
                    answers[i] = Some(Err(AppendError::code(code, format!("{}: {code:?}", h.tp))));
                    continue;
                }
                AckDecision::Parked => {
                    let (tx, rx) = oneshot::channel();
                    self.acks.lock().insert(wait, tx);
                    Some(rx)
                }
            };
            if info.needs_sync {
                sync_to = Some(sync_to.unwrap_or(end).max(end));
            }
            delayed |= jobs[i].batch.deliver_after_ms.is_some();
            done.push((i, info, ack));
        }
        self.apply(&mut l, fx);
        // delivery delay (issue 8): the partition's next DSO move, for the timer
        if delayed && let Some(due) = l.delivery_next_due() {
            self.delivery.schedule(h.tp.clone(), due);
        }
        let log_start_offset = l.log_start_offset();
        drop(st);
        drop(l);
        if let Some(end) = sync_to {
            self.spawn_sync(h.clone(), end);
        }
        for (i, info, ack) in done {
            answers[i] = Some(Ok(Appended {
                base_offset: info.base_offset,
                next_offset: info.last_offset + 1,
                max_timestamp: info.max_timestamp,
                duplicate: info.duplicate,
                log_start_offset,
                ack,
            }));
        }
        answers
            .into_iter()
            .map(|a| {
                a.unwrap_or_else(|| {
                    Err(AppendError::code(
                        ErrorCode::UnknownServerError,
                        "a combined append got no answer",
                    ))
                })
            })
            .collect()
    }

    /// The group coordinator: appends `batch` (built by the caller) as leader, acks=-1.
    pub fn append_records(
        self: &Arc<Self>,
        info: &TopicInfo,
        partition: i32,
        batch: &mut [u8],
        now: i64,
    ) -> Result<Appended, AppendError> {
        let h = self.hosted(info, partition).map_err(|code| {
            AppendError::code(
                code,
                format!("cannot use partition {}-{partition}", info.name),
            )
        })?;
        self.append_with(&h, Acks::All, now, |l, epoch| {
            l.append_as_leader(batch, epoch, now)
        })
    }

    fn append_with(
        self: &Arc<Self>,
        h: &Hosted,
        acks: Acks,
        now: i64,
        write: impl FnOnce(&mut Log, i32) -> Result<AppendInfo, StorageError>,
    ) -> Result<Appended, AppendError> {
        let mut l = h.log.lock();
        let mut st = h.state.lock();
        st.check_append(acks).map_err(|code| {
            AppendError::code(code, format!("{} refuses the append: {code:?}", h.tp))
        })?;
        let info = write(&mut l, st.leader_epoch()).map_err(|e| append_failure(&h.tp, e))?;
        let fx = st.on_leader_append(l.log_end_offset(), now);
        let end = info.last_offset + 1;
        let wait = WaitId(self.next_wait.fetch_add(1, Ordering::Relaxed));
        let ack = match st.await_acks(wait, acks, end, i64::MAX) {
            AckDecision::Done(ErrorCode::None) => None,
            AckDecision::Done(code) => {
                return Err(AppendError::code(code, format!("{}: {code:?}", h.tp)));
            }
            AckDecision::Parked => {
                let (tx, rx) = oneshot::channel();
                self.acks.lock().insert(wait, tx);
                Some(rx)
            }
        };
        self.apply(&mut l, fx);
        let log_start_offset = l.log_start_offset();
        drop(st);
        drop(l);
        if info.needs_sync {
            self.spawn_sync(h.clone(), end);
        }
        Ok(Appended {
            base_offset: info.base_offset,
            next_offset: end,
            max_timestamp: info.max_timestamp,
            duplicate: info.duplicate,
            log_start_offset,
            ack,
        })
    }

    /// The group-commit driver of one durable append: fsync to `target` off the async
    /// workers, then tell the core.
    fn spawn_sync(self: &Arc<Self>, h: Hosted, target: i64) {
        let rm = Arc::clone(self);
        tokio::spawn(async move {
            let sync = Arc::clone(h.log.lock().sync());
            let result = tokio::task::spawn_blocking(move || sync.sync_to(target)).await;
            let failed = match result {
                Ok(Ok(_)) => None,
                Ok(Err(e)) => Some(e.to_string()),
                Err(e) => Some(format!("fsync task failed: {e}")),
            };
            let mut l = h.log.lock();
            let mut st = h.state.lock();
            let fx = match failed {
                None => st.on_local_synced(l.sync().synced(), rm.clock.now_ms()),
                Some(message) => {
                    tracing::error!(tp = %h.tp, error = %message, "fsync failed");
                    st.on_local_sync_failed(target)
                }
            };
            rm.apply(&mut l, fx);
        });
    }
}

/// A refused leader append: producer-state refusals are the client's business and I/O errors
/// are logged once per log dir by storage (both at debug here), anything else is an error.
/// Both carry storage's code and message.
fn append_failure(tp: &TopicPartition, e: StorageError) -> AppendError {
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
    AppendError::code(e.error_code(), e.to_string())
}
