//! Skiff L3: cluster metadata (topics, partitions, topic configs, dynamic broker configs,
//! producer-id blocks).
//!
//! Mental model: the metadata is a log of Kafka's own metadata records (`TopicRecord`,
//! `PartitionRecord`, `ConfigRecord`, `RemoveTopicRecord`, `ProducerIdsRecord`, framed as in
//! KRaft: unsigned-varint frame version 1, record type, record version, then the record) stored as
//! record values in v2 batches of the partition log `__cluster_metadata-0`. Every change is
//! appended and fsynced before it is applied; on start the log is replayed into an immutable
//! [`MetadataImage`]. These are the same records a Raft quorum will replicate later: only the
//! log underneath changes.
//!
//! Threads: [`MetadataStore`] is `Sync`; writers serialise on one mutex; readers take a cheap
//! `Arc` snapshot of the image and never block writers for long.
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod controller;
mod frame;
mod image;
mod log_dir;
mod meta_log;
mod store;

pub use controller::{Ctx, Request, Response, handle};
pub use frame::Record;
pub use image::{
    BrokerEndpoint, BrokerRegistration, MetadataImage, NO_LEADER, NO_LEADER_CHANGE, PartitionInfo,
    TopicId, TopicInfo, replay,
};
pub use log_dir::{
    Decision as LogDirDecision, LogDirError, META_PROPERTIES, MetaState, decide as decide_log_dir,
    first_log_dir_cluster_id, format_log_dir, partition_data_in,
};
pub use meta_log::{Committed, LocalMetadataLog, METADATA_TOPIC, MetadataLog};
pub use store::{MetadataStore, PRODUCER_ID_BLOCK_SIZE};

use skiff_types::ErrorCode;

/// Errors of metadata operations.
#[derive(Debug, thiserror::Error)]
pub enum MetadataError {
    #[error("Topic '{0}' already exists.")]
    TopicAlreadyExists(String),
    #[error("This server does not host this topic: {0}")]
    UnknownTopic(String),
    #[error("{0}")]
    InvalidPartitions(String),
    #[error("{0}")]
    InvalidTopic(String),
    #[error("{0}")]
    InvalidRequest(String),
    /// A request the controller cannot serve for a reason of its own (an exhausted id space).
    #[error("{0}")]
    Internal(String),
    #[error("metadata log: {0}")]
    Storage(String),
    /// The first log dir cannot be used (its `meta.properties`).
    #[error("{0}")]
    LogDir(#[from] LogDirError),
}

impl MetadataError {
    /// The Kafka error code for this error.
    pub fn error_code(&self) -> ErrorCode {
        match self {
            MetadataError::TopicAlreadyExists(_) => ErrorCode::TopicAlreadyExists,
            MetadataError::UnknownTopic(_) => ErrorCode::UnknownTopicOrPartition,
            MetadataError::InvalidPartitions(_) => ErrorCode::InvalidPartitions,
            MetadataError::InvalidTopic(_) => ErrorCode::InvalidTopicException,
            MetadataError::InvalidRequest(_) => ErrorCode::InvalidRequest,
            MetadataError::Internal(_) => ErrorCode::UnknownServerError,
            MetadataError::Storage(_) | MetadataError::LogDir(_) => ErrorCode::KafkaStorageError,
        }
    }
}

/// Kafka's topic-name rules (`org.apache.kafka.common.internals.Topic.validate`).
pub fn validate_topic_name(name: &str) -> Result<(), MetadataError> {
    if name.is_empty() {
        return Err(MetadataError::InvalidTopic(
            "Topic name is illegal, it can't be empty".into(),
        ));
    }
    if name == "." || name == ".." {
        return Err(MetadataError::InvalidTopic(
            "Topic name cannot be \".\" or \"..\"".into(),
        ));
    }
    if name.len() > 249 {
        return Err(MetadataError::InvalidTopic(format!(
            "Topic name is illegal, it can't be longer than 249 characters, topic name: {name}"
        )));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
    {
        return Err(MetadataError::InvalidTopic(format!(
            "Topic name \"{name}\" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod controller_tests;
#[cfg(test)]
mod image_tests;
#[cfg(test)]
mod store_tests;
#[cfg(test)]
mod tests;
