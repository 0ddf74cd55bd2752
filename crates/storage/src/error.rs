//! The storage layer's error type. Handlers map these to Kafka error codes; the mapping that
//! storage itself can decide is [`StorageError::error_code`].

use skiff_types::ErrorCode;

/// Errors from partition-log operations.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error("I/O error on {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("offset {offset} is out of range [{log_start}, {log_end}]")]
    OffsetOutOfRange {
        offset: i64,
        log_start: i64,
        log_end: i64,
    },
    #[error("append of {size} bytes is larger than segment.bytes={segment_bytes}")]
    RecordListTooLarge { size: usize, segment_bytes: u64 },
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    #[error("corrupt batch in {path} at position {position}: {reason}")]
    Corrupt {
        path: String,
        position: u64,
        reason: String,
    },
    /// Offsets `[start, end)` are quarantined as corrupt (issue 12): answered with
    /// CORRUPT_MESSAGE, never served.
    #[error("offsets [{start}, {end}) are quarantined as corrupt ({reason})")]
    Quarantined {
        start: i64,
        end: i64,
        reason: &'static str,
    },
    #[error("the log for {0} is closed or deleted")]
    Closed(String),
    /// This broker hosts no log of the partition (AlterReplicaLogDirs: REPLICA_NOT_AVAILABLE).
    #[error("this broker hosts no replica of {0}")]
    NotHosted(String),
    /// issue 12: the partition's log dir is offline after a failed write (see
    /// [`crate::log_dir`]); nothing is read or written until it is back.
    #[error("the log dir {dir} of {tp} is offline: {reason}")]
    LogDirOffline {
        tp: String,
        dir: String,
        reason: String,
    },
    /// An idempotent-producer check refused a leader append (45, 47 or 87).
    #[error(transparent)]
    Producer(#[from] crate::producer_state::ProducerError),
}

impl StorageError {
    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> Self {
        StorageError::Io {
            path: path.display().to_string(),
            source,
        }
    }

    /// The Kafka error code a request handler should answer with.
    pub fn error_code(&self) -> ErrorCode {
        match self {
            StorageError::Io { .. }
            | StorageError::Corrupt { .. }
            | StorageError::Closed(_)
            | StorageError::LogDirOffline { .. } => ErrorCode::KafkaStorageError,
            StorageError::OffsetOutOfRange { .. } => ErrorCode::OffsetOutOfRange,
            StorageError::NotHosted(_) => ErrorCode::ReplicaNotAvailable,
            StorageError::Quarantined { .. } => ErrorCode::CorruptMessage,
            StorageError::RecordListTooLarge { .. } => ErrorCode::RecordListTooLarge,
            StorageError::InvalidArgument(_) => ErrorCode::InvalidRequest,
            StorageError::Producer(e) => e.error_code(),
        }
    }
}

/// Result alias for storage operations.
pub type Result<T, E = StorageError> = std::result::Result<T, E>;

/// Attaches a path to an `io::Result`.
pub(crate) trait IoContext<T> {
    fn at(self, path: &std::path::Path) -> Result<T>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn at(self, path: &std::path::Path) -> Result<T> {
        self.map_err(|e| StorageError::io(path, e))
    }
}
