//! The server layer's error type: failures to start, bind or shut down. Per-request problems
//! never become a `ServerError`: handlers answer them with Kafka error codes, and bad frames
//! close only their own connection.

use std::io;

use skiff_metadata::{LogDirError, MetadataError};

/// Errors starting or stopping the server.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("invalid settings: {0}")]
    Settings(String),
    /// Settings the server refuses to start with (the binary exits 2).
    #[error("invalid configuration: {0}")]
    Config(String),
    #[error("cannot bind listener {name} on {addr}: {source}")]
    Bind {
        name: String,
        addr: String,
        #[source]
        source: io::Error,
    },
    #[error("storage: {0}")]
    Storage(#[from] skiff_storage::StorageError),
    #[error("metadata: {0}")]
    Metadata(#[from] skiff_metadata::MetadataError),
    /// A `log.dirs` entry formatted for another cluster (or unformattable).
    #[error("{0}")]
    LogDir(#[from] LogDirError),
    /// A log dir is locked by another broker (issue 12 item 1).
    #[error("{0}")]
    DirLock(#[from] skiff_storage::dir_lock::DirLockError),
    #[error("I/O: {0}")]
    Io(#[from] io::Error),
    /// The metadata quorum cannot start or go on safely (e.g. its voters disagree).
    #[error("metadata quorum: {0}")]
    Quorum(String),
}

impl ServerError {
    /// Whether the broker cannot start because of what it was configured with (settings the
    /// server refuses, such as group bounds Kafka would refuse, a `log.dirs` entry of another
    /// cluster or with data but no `meta.properties`, or a log dir another broker holds): the
    /// binary exits 2 for these, as for configuration errors.
    pub fn is_configuration(&self) -> bool {
        match self {
            ServerError::Config(_) | ServerError::Quorum(_) => true,
            ServerError::LogDir(e) | ServerError::Metadata(MetadataError::LogDir(e)) => {
                e.is_configuration()
            }
            ServerError::DirLock(e) => {
                matches!(e, skiff_storage::dir_lock::DirLockError::Held { .. })
            }
            _ => false,
        }
    }
}
