//! The `__transaction_state` topic as the transaction coordinator uses it: creating it on
//! first use, appending one shard call's records as one batch, and replaying a partition
//! into a shard.
//!
//! Format: plain v2 batches appended through the replica manager (acks=-1, so a record is
//! replicated to the ISR before the answer that depends on it), uncompressed, no producer id;
//! keys and values are Kafka's `TransactionLogKey` / `TransactionLogValue` with their int16
//! version prefixes (the shard's encodings); a `None` value is a tombstone (an expired
//! transactional id). Topic: `transaction.state.log.num.partitions` partitions,
//! `cleanup.policy=compact`, `min.insync.replicas` = `transaction.state.log.min.isr`. Replay
//! applies every record in offset order, last one wins, so a compacted log replays to the
//! same state as the full one.

use std::collections::BTreeMap;

use bytes::Bytes;
use skiff_record::{BatchBuilder, BatchOptions, records};
use skiff_txn::TxnShard;
use skiff_types::limits::DECOMPRESSED_BATCH_BYTES_MAX;

use super::settings::{TXN_TOPIC, TxnSettings};
use crate::broker::Broker;
use crate::replica::append::AckWait;
use crate::replica::read::ScanError;

/// How much of the log one replay read takes at a time.
const REPLAY_READ_BYTES: usize = 1024 * 1024;

/// Why the coordinator could not use its topic.
#[derive(Debug, thiserror::Error)]
pub enum TxnLogError {
    #[error("cannot create {TXN_TOPIC}: {0}")]
    Create(String),
    #[error("{TXN_TOPIC}-{0} is not available: {1}")]
    Unavailable(i32, String),
    #[error("cannot encode the transaction log batch: {0}")]
    Encode(String),
    #[error("append to {TXN_TOPIC}-{0} failed: {1}")]
    Append(i32, String),
    #[error("reading {TXN_TOPIC}-{0} failed: {1}")]
    Read(i32, String),
}

/// Creates `__transaction_state` if metadata does not have it yet (idempotent).
pub fn ensure_topic(
    broker: &Broker,
    settings: &TxnSettings,
    partitions: i32,
) -> Result<(), TxnLogError> {
    if broker.image().topic(TXN_TOPIC).is_some() {
        return Ok(());
    }
    let (rf, min_isr) = if broker.quorum.is_some() {
        (settings.topic_replication_factor, settings.topic_min_isr)
    } else {
        (1, 1)
    };
    let configs: BTreeMap<String, String> = [
        ("cleanup.policy".to_string(), "compact".to_string()),
        ("compression.type".to_string(), "uncompressed".to_string()),
        ("min.insync.replicas".to_string(), min_isr.to_string()),
        (
            "segment.bytes".to_string(),
            settings.topic_segment_bytes.to_string(),
        ),
    ]
    .into();
    match broker.create_topic_rf(TXN_TOPIC, partitions, rf, configs) {
        Ok(_) => Ok(()),
        Err(_) if broker.image().topic(TXN_TOPIC).is_some() => Ok(()),
        Err(e) => Err(TxnLogError::Create(e.message)),
    }
}

/// Appends one shard call's records to `__transaction_state-<partition>` as one batch (acks
/// -1). `Ok(Some(_))` when the answer must wait for replication or the fsync.
pub fn append(
    broker: &Broker,
    settings: &TxnSettings,
    partitions: i32,
    partition: i32,
    records: &[(Bytes, Option<Bytes>)],
) -> Result<Option<AckWait>, TxnLogError> {
    ensure_topic(broker, settings, partitions)?;
    let image = broker.image();
    let info = image
        .topic(TXN_TOPIC)
        .ok_or_else(|| TxnLogError::Unavailable(partition, "topic missing".into()))?;
    let now = broker.now_ms();
    let mut builder = BatchBuilder::new(BatchOptions::default());
    for (key, value) in records {
        builder.append(now, Some(key), value.as_deref(), &[]);
    }
    let mut batch = builder
        .build()
        .map_err(|e| TxnLogError::Encode(e.to_string()))?;
    let appended = broker
        .replicas
        .append_records(info, partition, &mut batch, now)
        .map_err(|e| TxnLogError::Append(partition, e.message))?;
    Ok(appended.ack)
}

/// Feeds every record of `__transaction_state-<partition>` to `shard`, in offset order.
/// Records the shard cannot decode are logged and skipped. Returns how many were applied.
pub fn replay(broker: &Broker, partition: i32, shard: &mut TxnShard) -> Result<u64, TxnLogError> {
    let image = broker.image();
    let Some(info) = image.topic(TXN_TOPIC) else {
        return Ok(0);
    };
    let (mut applied, mut skipped) = (0u64, 0u64);
    broker
        .replicas
        .scan_local(info, partition, REPLAY_READ_BYTES, |view, offset| {
            if view.is_control() {
                return Ok(());
            }
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
                match shard.replay(key, rec.value) {
                    Ok(()) => applied += 1,
                    Err(e) => {
                        skipped += 1;
                        tracing::debug!(partition, error = %e, "skipping a {TXN_TOPIC} record");
                    }
                }
            }
            Ok(())
        })
        .map_err(|e| match e {
            ScanError::Unavailable(code) => {
                TxnLogError::Unavailable(partition, format!("{code:?}"))
            }
            ScanError::Read(m) => TxnLogError::Read(partition, m),
        })?;
    if skipped > 0 {
        tracing::warn!(
            partition,
            skipped,
            "{TXN_TOPIC} records skipped during load"
        );
    }
    Ok(applied)
}
