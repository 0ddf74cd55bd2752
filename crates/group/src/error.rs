//! The crate's one error enum. Request-level failures are not errors here: they become Kafka
//! error codes inside the responses a shard emits. [`GroupError`] covers what the caller must
//! handle itself: a malformed `__consumer_offsets` record met during replay, or a bad config.

use thiserror::Error;

/// Why a shard refused a call.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum GroupError {
    /// A `__consumer_offsets` key or value could not be decoded.
    #[error("malformed __consumer_offsets record: {0}")]
    MalformedRecord(String),
    /// The key's int16 version prefix names no record type this coordinator knows.
    #[error("unknown __consumer_offsets record type (key version {0})")]
    UnknownRecordType(i16),
    /// A value in [`crate::GroupConfig`] is out of bounds.
    #[error("invalid group coordinator config: {0}")]
    InvalidConfig(String),
}

impl From<skiff_protocol::DecodeError> for GroupError {
    fn from(e: skiff_protocol::DecodeError) -> Self {
        GroupError::MalformedRecord(e.to_string())
    }
}
