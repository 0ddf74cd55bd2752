//! [`TxnSettings`]: what the transaction coordinator runtime is configured with, as plain
//! data (Kafka's `transaction.*` and `transactional.id.*` keys, mapped once at start by the
//! binary). The shard's knobs are [`skiff_txn::TxnConfig`]; the rest describes the internal
//! `__transaction_state` topic the runtime creates on first use.

/// The internal topic holding transaction state (Kafka's name).
pub const TXN_TOPIC: &str = "__transaction_state";

/// Transaction coordinator settings (Kafka key names in the field docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxnSettings {
    /// `transaction.max.timeout.ms` (900 000).
    pub max_timeout_ms: i32,
    /// `transactional.id.expiration.ms` (7 days).
    pub id_expiration_ms: i64,
    /// `transaction.abort.timed.out.transaction.cleanup.interval.ms` (10 000).
    pub abort_timed_out_interval_ms: i64,
    /// `transaction.remove.expired.transaction.cleanup.interval.ms` (1 hour).
    pub remove_expired_interval_ms: i64,
    /// `transaction.state.log.num.partitions` (50). An existing topic keeps its count.
    pub topic_partitions: i32,
    /// `transaction.state.log.replication.factor` (a single node caps it at 1).
    pub topic_replication_factor: i16,
    /// `transaction.state.log.min.isr`.
    pub topic_min_isr: i32,
    /// `transaction.state.log.segment.bytes` (100 MiB).
    pub topic_segment_bytes: i64,
    /// `transaction.partition.verification.enable` (KIP-890 part 1: a leader checks with the
    /// coordinator before the first transactional batch of a producer's transaction).
    pub partition_verification: bool,
}

impl Default for TxnSettings {
    fn default() -> Self {
        Self {
            max_timeout_ms: 900_000,
            id_expiration_ms: 604_800_000,
            abort_timed_out_interval_ms: 10_000,
            remove_expired_interval_ms: 3_600_000,
            topic_partitions: 50,
            topic_replication_factor: 1,
            topic_min_isr: 1,
            topic_segment_bytes: 104_857_600,
            partition_verification: true,
        }
    }
}

impl TxnSettings {
    /// The shard's configuration.
    pub fn shard_config(&self) -> skiff_txn::TxnConfig {
        skiff_txn::TxnConfig {
            transaction_max_timeout_ms: self.max_timeout_ms,
            transactional_id_expiration_ms: self.id_expiration_ms,
            abort_timed_out_transaction_cleanup_interval_ms: self.abort_timed_out_interval_ms,
            remove_expired_transaction_cleanup_interval_ms: self.remove_expired_interval_ms,
        }
    }
}
