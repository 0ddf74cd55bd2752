//! The transaction coordinator's configuration: Kafka's `transaction.*` / `transactional.id.*`
//! keys a shard acts on, with Kafka's defaults.
//!
//! Mental model: plain data owned by one shard, fixed between calls (a dynamic change replaces
//! the shard's copy with [`crate::TxnShard::set_config`]). Names carry units; each field names
//! its Kafka property.

use crate::error::TxnError;

/// Configuration of one transaction coordinator shard.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxnConfig {
    /// `transaction.max.timeout.ms` (default 900000): the largest `transaction_timeout_ms` an
    /// InitProducerId may ask for (larger: INVALID_TRANSACTION_TIMEOUT).
    pub transaction_max_timeout_ms: i32,
    /// `transactional.id.expiration.ms` (default 604800000, 7 days): an idle transactional id
    /// (`Empty` / `Complete*`) not updated for this long is forgotten (tombstone).
    pub transactional_id_expiration_ms: i64,
    /// `transaction.abort.timed.out.transaction.cleanup.interval.ms` (default 10000): how often
    /// `Ongoing` transactions past their timeout are aborted.
    pub abort_timed_out_transaction_cleanup_interval_ms: i64,
    /// `transaction.remove.expired.transaction.cleanup.interval.ms` (default 3600000): how often
    /// expired transactional ids are removed.
    pub remove_expired_transaction_cleanup_interval_ms: i64,
}

impl Default for TxnConfig {
    fn default() -> Self {
        Self {
            transaction_max_timeout_ms: 900_000,
            transactional_id_expiration_ms: 604_800_000,
            abort_timed_out_transaction_cleanup_interval_ms: 10_000,
            remove_expired_transaction_cleanup_interval_ms: 3_600_000,
        }
    }
}

impl TxnConfig {
    /// Kafka's bounds: every value at least 1.
    pub fn validate(&self) -> Result<(), TxnError> {
        let checks = [
            (
                "transaction.max.timeout.ms",
                i64::from(self.transaction_max_timeout_ms),
            ),
            (
                "transactional.id.expiration.ms",
                self.transactional_id_expiration_ms,
            ),
            (
                "transaction.abort.timed.out.transaction.cleanup.interval.ms",
                self.abort_timed_out_transaction_cleanup_interval_ms,
            ),
            (
                "transaction.remove.expired.transaction.cleanup.interval.ms",
                self.remove_expired_transaction_cleanup_interval_ms,
            ),
        ];
        for (name, value) in checks {
            if value < 1 {
                return Err(TxnError::InvalidConfig(format!(
                    "{name} must be at least 1, got {value}"
                )));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_kafkas_and_valid() {
        let c = TxnConfig::default();
        assert_eq!(c.transaction_max_timeout_ms, 900_000);
        assert_eq!(c.transactional_id_expiration_ms, 604_800_000);
        assert!(c.validate().is_ok());
        let bad = TxnConfig {
            abort_timed_out_transaction_cleanup_interval_ms: 0,
            ..c
        };
        assert!(bad.validate().is_err());
    }
}
