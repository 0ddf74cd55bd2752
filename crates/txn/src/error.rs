//! The crate's one error enum. Request-level failures are not errors here: they become Kafka
//! error codes inside the responses a shard emits. [`TxnError`] covers what the caller handles
//! itself: a malformed `__transaction_state` record met during replay (the runtime logs and
//! skips it), or a bad config.

use thiserror::Error;

/// Why a shard refused a call.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum TxnError {
    /// A `__transaction_state` key or value could not be decoded, or holds impossible values.
    #[error("malformed __transaction_state record: {0}")]
    MalformedRecord(String),
    /// The key's int16 version prefix is not a `TransactionLogKey` version.
    #[error("unknown __transaction_state key version {0}")]
    UnknownKeyVersion(i16),
    /// The value's int16 version prefix is not a `TransactionLogValue` version this reads.
    #[error("unknown __transaction_state value version {0}")]
    UnknownValueVersion(i16),
    /// The value's `transaction_status` names no transaction state.
    #[error("unknown transaction state id {0}")]
    UnknownState(i8),
    /// A value in [`crate::TxnConfig`] is out of bounds.
    #[error("invalid transaction coordinator config: {0}")]
    InvalidConfig(String),
}

impl From<skiff_protocol::DecodeError> for TxnError {
    fn from(e: skiff_protocol::DecodeError) -> Self {
        TxnError::MalformedRecord(e.to_string())
    }
}
