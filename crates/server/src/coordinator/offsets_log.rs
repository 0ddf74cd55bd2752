//! The `__consumer_offsets` topic as the coordinator uses it: creating it on first use,
//! appending one call's records as one batch, and replaying a partition into a shard.
//!
//! Format: v2 record batches appended through the replica manager (acks=-1), uncompressed,
//! CreateTime; each record's key and value are the shard's encodings (Kafka's
//! `__consumer_offsets` schemas with their int16 version prefixes), a `None` value is a
//! tombstone. One shard call's records form one batch, so they become durable together.
//! A plain batch has no producer id. A TxnOffsetCommit's batch is *transactional*, with the
//! producer's id and epoch (Kafka's coordinator writes it so) and the base sequence the
//! partition's producer state expects next for that producer ([`next_sequence`]: Kafka skips
//! sequence checks for its coordinator's appends, Skiff's log checks every producer batch
//! alike, and only this coordinator writes that producer's batches to this partition, so the
//! sequence it reads under the slot's lock is the one the append will check). Transaction
//! markers (control batches) end a producer's transaction on the partition.
//!
//! Replay by batch kind: a plain batch's records go to `GroupCoordinatorShard::replay`, a
//! transactional batch's to `replay_transactional(producer_id, ..)`, and an end-transaction
//! marker to `replay_end_transaction(producer_id, commit)`; other control batches are skipped.
//! Topic: `offsets.topic.num.partitions` partitions, `cleanup.policy=compact`,
//! `segment.bytes` = `offsets.topic.segment.bytes`. The log cleaner (issue 7) compacts it like
//! any compacted topic: it keeps the last record of each key (tombstones until
//! `delete.retention.ms`), in offset order, never touching the active segment. Replay applies
//! every record it finds in order, last one wins, so a compacted log replays to the same
//! groups, members and offsets as the full one: each key's latest record, and tombstones that
//! win over what they superseded (crates/server/tests/e2e_groups_compaction.rs).
//!
//! Thread-safety: appends happen under the shard's mutex (so the log order is the shard's
//! order) and take the partition log's own short lock inside the replica manager; replay runs on the blocking pool while
//! the shard is marked loading, so nothing appends to the partition meanwhile.

use std::collections::BTreeMap;

use bytes::Bytes;
use skiff_group::GroupCoordinatorShard;
use skiff_record::{BatchBuilder, BatchOptions, ControlType, records};
use skiff_storage::producer_state::{NO_PRODUCER_EPOCH, increment_sequence};
use skiff_types::ErrorCode;
use skiff_types::limits::DECOMPRESSED_BATCH_BYTES_MAX;

use crate::broker::Broker;
use crate::coordinator::settings::{GroupSettings, OFFSETS_TOPIC};
use crate::replica::append::AckWait;
use crate::replica::read::ScanError;

/// How much of the log one replay read takes at a time.
const REPLAY_READ_BYTES: usize = 1024 * 1024;

/// Why the coordinator could not use its topic.
#[derive(Debug, thiserror::Error)]
pub enum OffsetsLogError {
    #[error("cannot create {OFFSETS_TOPIC}: {0}")]
    Create(String),
    #[error("{OFFSETS_TOPIC}-{0} is not available: {1}")]
    Unavailable(i32, String),
    #[error("cannot encode the coordinator batch: {0}")]
    Encode(String),
    #[error("append to {OFFSETS_TOPIC}-{0} failed ({1:?}): {2}")]
    Append(i32, ErrorCode, String),
    #[error("reading {OFFSETS_TOPIC}-{0} failed: {1}")]
    Read(i32, String),
}

/// Creates `__consumer_offsets` if metadata does not have it yet (idempotent; a concurrent
/// creation by another caller counts as success).
pub fn ensure_topic(
    broker: &Broker,
    settings: &GroupSettings,
    partitions: i32,
) -> Result<(), OffsetsLogError> {
    if broker.image().topic(OFFSETS_TOPIC).is_some() {
        return Ok(());
    }
    // A cluster creates it with offsets.topic.replication.factor replicas (fewer registered
    // brokers: the creation fails and the coordinator is not available, as in Kafka); a
    // single node without KRaft has one broker, so one replica.
    let rf = if broker.quorum.is_some() {
        settings.offsets_topic_replication_factor
    } else {
        if settings.offsets_topic_replication_factor > 1 {
            tracing::warn!(
                requested = settings.offsets_topic_replication_factor,
                "offsets.topic.replication.factor > 1 cannot be met by a single node; using 1"
            );
        }
        1
    };
    let configs: BTreeMap<String, String> = [
        ("cleanup.policy".to_string(), "compact".to_string()),
        (
            "segment.bytes".to_string(),
            settings.offsets_topic_segment_bytes.to_string(),
        ),
    ]
    .into();
    match broker.create_topic_rf(OFFSETS_TOPIC, partitions, rf, configs) {
        Ok(_) => Ok(()),
        Err(_) if broker.image().topic(OFFSETS_TOPIC).is_some() => Ok(()),
        Err(e) => Err(OffsetsLogError::Create(e.message)),
    }
}

/// Appends one shard call's records to `__consumer_offsets-<partition>` as one batch, through
/// the replica manager (acks=-1); a transactional batch of `(producer_id, producer_epoch)`
/// when `transactional` is set. `Ok(Some(_))` when the answer must wait for replication or
/// the group-commit fsync (the receiver yields NONE or an error).
pub fn append(
    broker: &Broker,
    settings: &GroupSettings,
    partitions: i32,
    partition: i32,
    records: &[(Bytes, Option<Bytes>)],
    transactional: Option<(i64, i16)>,
) -> Result<Option<AckWait>, OffsetsLogError> {
    ensure_topic(broker, settings, partitions)?;
    let image = broker.image();
    let info = image
        .topic(OFFSETS_TOPIC)
        .ok_or_else(|| OffsetsLogError::Unavailable(partition, "topic missing".into()))?;
    let now = broker.now_ms();
    let options = match transactional {
        None => BatchOptions::default(),
        Some((producer_id, producer_epoch)) => BatchOptions {
            is_transactional: true,
            producer_id,
            producer_epoch,
            base_sequence: next_sequence(broker, info, partition, producer_id, producer_epoch)?,
            ..BatchOptions::default()
        },
    };
    let mut builder = BatchBuilder::new(options);
    for (key, value) in records {
        builder.append(now, Some(key), value.as_deref(), &[]);
    }
    let mut batch = builder
        .build()
        .map_err(|e| OffsetsLogError::Encode(e.to_string()))?;
    let appended = broker
        .replicas
        .append_records(info, partition, &mut batch, now)
        .map_err(|e| OffsetsLogError::Append(partition, e.code, e.message))?;
    if appended.duplicate {
        // Nothing was written: the shard's memory would be ahead of the log.
        return Err(OffsetsLogError::Append(
            partition,
            ErrorCode::DuplicateSequenceNumber,
            "the transactional batch was taken for a retry".into(),
        ));
    }
    Ok(appended.ack)
}

/// The base sequence the partition's producer state accepts next from `producer_id` at
/// `producer_epoch`: the one after its last batch at that epoch, 0 for a new producer or a
/// new epoch.
fn next_sequence(
    broker: &Broker,
    info: &skiff_metadata::TopicInfo,
    partition: i32,
    producer_id: i64,
    producer_epoch: i16,
) -> Result<i32, OffsetsLogError> {
    let producers = broker
        .replicas
        .active_producers(info, partition)
        .map_err(|code| OffsetsLogError::Unavailable(partition, format!("{code:?}")))?;
    Ok(producers
        .iter()
        .find(|p| p.producer_id == producer_id)
        .filter(|p| p.producer_epoch == producer_epoch && p.producer_epoch != NO_PRODUCER_EPOCH)
        .map_or(0, |p| increment_sequence(p.last_sequence, 1)))
}

/// The epoch the partition's producer state holds for `producer_id`, if it knows the
/// producer (a TxnOffsetCommit from a lower epoch is fenced before it reaches the shard).
pub fn producer_epoch(broker: &Broker, partition: i32, producer_id: i64) -> Option<i16> {
    let image = broker.image();
    let info = image.topic(OFFSETS_TOPIC)?;
    let producers = broker.replicas.active_producers(info, partition).ok()?;
    producers
        .iter()
        .find(|p| p.producer_id == producer_id)
        .map(|p| p.producer_epoch)
        .filter(|e| *e != NO_PRODUCER_EPOCH)
}

/// Writes `producer_id`'s end-transaction marker (COMMIT when `commit`) to
/// `__consumer_offsets-<partition>` through the replica manager (acks=-1). `Ok(None)` when
/// the topic does not exist (no transactional offset can be pending then). Errors are the
/// log's codes (e.g. INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED): nothing was
/// written.
pub fn append_marker(
    broker: &Broker,
    partition: i32,
    producer_id: i64,
    producer_epoch: i16,
    coordinator_epoch: i32,
    commit: bool,
) -> Result<Option<AckWait>, ErrorCode> {
    let image = broker.image();
    let Some(info) = image.topic(OFFSETS_TOPIC) else {
        return Ok(None);
    };
    let now = broker.now_ms();
    let control = if commit {
        ControlType::Commit
    } else {
        ControlType::Abort
    };
    let mut batch = skiff_record::build_end_txn_marker(
        producer_id,
        producer_epoch,
        coordinator_epoch,
        control,
        now,
    )
    .map_err(|e| {
        tracing::error!(error = %e, "cannot build a transaction marker");
        ErrorCode::UnknownServerError
    })?;
    let appended = broker
        .replicas
        .append_records(info, partition, &mut batch, now)
        .map_err(|e| e.code)?;
    Ok(appended.ack)
}

/// Feeds every record of partition `partition` to `shard`, in offset order. Records the shard
/// cannot decode are logged and skipped (a newer Kafka may have written types we do not know).
/// Returns how many records were applied.
pub fn replay(
    broker: &Broker,
    partition: i32,
    shard: &mut GroupCoordinatorShard,
) -> Result<u64, OffsetsLogError> {
    let image = broker.image();
    let Some(info) = image.topic(OFFSETS_TOPIC) else {
        return Ok(0);
    };
    let mut applied = 0u64;
    let mut skipped = 0u64;
    broker
        .replicas
        .scan_local(info, partition, REPLAY_READ_BYTES, |view, offset| {
            if view.is_control() {
                match skiff_record::parse_end_txn_marker(view) {
                    Ok(Some(m)) => {
                        let commit = m.control_type == ControlType::Commit;
                        shard.replay_end_transaction(view.producer_id(), commit);
                        applied += 1;
                    }
                    Ok(None) => {}
                    Err(e) => {
                        skipped += 1;
                        tracing::debug!(partition, error = %e, "skipping a malformed control batch");
                    }
                }
                return Ok(());
            }
            let txn_producer = view.is_transactional().then(|| view.producer_id());
            let data = view
                .records_data(DECOMPRESSED_BATCH_BYTES_MAX)
                .map_err(|e| e.to_string())?;
            for rec in records(&data, view.records_count()) {
                let rec = rec.map_err(|e| e.to_string())?;
                if view.record_offset(&rec) < offset {
                    continue;
                }
                let Some(key) = rec.key else {
                    skipped += 1;
                    continue;
                };
                let key = Bytes::copy_from_slice(key);
                let value = rec.value.map(Bytes::copy_from_slice);
                let replayed = match txn_producer {
                    None => shard.replay(&key, value.as_ref()),
                    Some(pid) => shard.replay_transactional(pid, &key, value.as_ref()),
                };
                match replayed {
                    Ok(()) => applied += 1,
                    Err(e) => {
                        skipped += 1;
                        tracing::debug!(partition, error = %e, "skipping a __consumer_offsets record");
                    }
                }
            }
            Ok(())
        })
        .map_err(|e| match e {
            ScanError::Unavailable(code) => {
                OffsetsLogError::Unavailable(partition, format!("{code:?}"))
            }
            ScanError::Read(m) => OffsetsLogError::Read(partition, m),
        })?;
    if skipped > 0 {
        tracing::warn!(
            partition,
            skipped,
            "__consumer_offsets records skipped during load"
        );
    }
    Ok(applied)
}
