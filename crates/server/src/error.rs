//! The server layer's error type: failures to start, bind or shut down. Per-request problems
//! never become a `ServerError`: handlers answer them with Kafka error codes, and bad frames
//! close only their own connection.

use std::io;

/// Errors starting or stopping the server.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("invalid settings: {0}")]
    Settings(String),
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
    #[error("I/O: {0}")]
    Io(#[from] io::Error),
}
