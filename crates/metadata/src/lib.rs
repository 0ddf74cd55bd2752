//! Skiff L3: cluster metadata (topics and their partitions' registrations, topic configs,
//! dynamic broker configs, producer-id blocks, the broker registry) as a state machine over a
//! log of Kafka's own metadata records.
//!
//! Mental model, three rooms:
//! - **Records** ([`Record`], `frame.rs`): `TopicRecord`, `PartitionRecord`,
//!   `PartitionChangeRecord`, `ConfigRecord`, `RemoveTopicRecord`, `ProducerIdsRecord`,
//!   `RegisterBrokerRecord`, `BrokerRegistrationChangeRecord`, and (issue 19, `security.rs`)
//!   `AccessControlEntryRecord`, `RemoveAccessControlEntryRecord`, `UserScramCredentialRecord`,
//!   `RemoveUserScramCredentialRecord`, framed as in KRaft (unsigned-varint frame version 1, record type,
//!   record version, then the record).
//! - **The pure state machine**: [`handle`] (`controller.rs`) turns `(image, request, ctx)`
//!   into the records of one atomic change and the response, validating against the image;
//!   [`replay`] (`image.rs`) turns `(image, committed records)` into the next
//!   [`MetadataImage`]. No I/O, no clock, no randomness: `now_ms`, the node id, the cluster
//!   id, the next log offset and the placement start offset come in [`Ctx`], fresh ids in the
//!   request. Broker liveness is soft state beside the image ([`BrokerHeartbeats`], Kafka's
//!   `BrokerHeartbeatManager`): last contact per broker, rebuilt empty on failover.
//! - **The log** ([`MetadataLog`], `meta_log.rs`): propose records (return once committed),
//!   replay committed records on open. Today [`LocalMetadataLog`]: the partition log
//!   `__cluster_metadata-0`, one v2 batch per change, committed = appended + fsynced. The Raft
//!   quorum of the next issue implements the same trait; nothing above it changes.
//!
//! [`active`] is the active controller's core over a replicated log (the Raft quorum's
//! shell drives it): requests validated against the pending image (committed + proposed),
//! answered once committed, NOT_CONTROLLER to every waiter on lost leadership; a seeded
//! simulation of three controllers over a model quorum checks it (`tests/controller_sim.rs`).
//!
//! [`MetadataStore`] (`store.rs`) is the thin shell: writer lock, image snapshot, `handle`,
//! `propose`, `replay`, publish; plus the wall clock, random ids and the in-memory producer-id
//! block. `log_dir.rs` is the `meta.properties` rule of every `log.dirs` entry, [`format`] the
//! `skiff format` command (Kafka's `kafka-storage.sh format`), [`cluster_id`] Kafka's cluster
//! id strings.
//!
//! Invariants: the published image is the replay of exactly the committed records (a change
//! is applied only after `propose` returned `Ok`; a failed proposal publishes nothing); one
//! change is one batch, committed whole or not at all; replay never fails on a record that
//! names something absent (it is skipped) and skips record types it does not know; after
//! `open` the broker registry holds this node, unfenced (registered once, durably, when
//! absent, fenced as Kafka registers, then unfenced by its own caught-up heartbeat); logs
//! written before the state machine (no `RegisterBrokerRecord`, no `PartitionChangeRecord`)
//! replay to the same topics, configs and producer-id blocks.
//!
//! Threads: [`MetadataStore`] is `Sync`; writers serialise on one mutex; readers take a cheap
//! `Arc` snapshot of the image and never block writers for long.
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod active;
pub mod cluster_id;
mod controller;
pub mod format;
mod frame;
mod image;
mod log_dir;
mod meta_log;
mod security;
pub mod snapshot;
mod store;
mod store_security;

pub use controller::{
    BrokerHeartbeats, Ctx, DEFAULT_SESSION_TIMEOUT_MS, ELECTION_PREFERRED, ELECTION_UNCLEAN,
    ElectionConfig, ElectionRun, Heartbeat, HeartbeatReply, IsrChange, IsrChangeResult, IsrState,
    IsrTopic, IsrTopicResult, MAX_ELECTIONS_PER_RUN, OfflineReplicas, PartitionElection, Request,
    Response, TopicElection, TopicRef, UNCHECKED_BROKER_EPOCH, UNCLEAN_LEADER_ELECTION_ENABLE,
    handle,
};
pub use controller::{MAX_RECORDS_PER_USER_OP, ScramDeletion, ScramUpsertion, validate_new_acl};
pub use frame::Record;
pub use image::{
    BrokerEndpoint, BrokerRegistration, MetadataImage, NO_LEADER, NO_LEADER_CHANGE, PartitionInfo,
    TopicId, TopicInfo, replay,
};
pub use log_dir::{
    Decision as LogDirDecision, Expect as LogDirExpect, LogDirError, META_PROPERTIES, MetaState,
    decide as decide_log_dir, decide_for as decide_log_dir_for, first_log_dir_cluster_id,
    format_log_dir, partition_data_in,
};
pub use meta_log::{
    BlockingSection, Committed, LocalMetadataLog, METADATA_TOPIC, MetadataLog, QuorumState,
};
pub use security::{
    AclDeleteResult, AclFilter, AclMap, ApiError, ScramMap, ScramResult, validate_filter,
};
pub use store::{ImageListener, ImageSink, MetadataStore, PRODUCER_ID_BLOCK_SIZE};

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
    #[error("{0}")]
    InvalidReplicationFactor(String),
    #[error("{0}")]
    InvalidReplicaAssignment(String),
    /// A registration from a broker of another cluster.
    #[error("{0}")]
    InconsistentClusterId(String),
    /// A new incarnation while the broker id's previous one still has a live session.
    #[error("{0}")]
    DuplicateBrokerRegistration(String),
    /// A heartbeat (or other broker request) from an unregistered broker or an old epoch.
    #[error("{0}")]
    StaleBrokerEpoch(String),
    /// A request the controller cannot serve for a reason of its own (an exhausted id space).
    #[error("{0}")]
    Internal(String),
    #[error("metadata log: {0}")]
    Storage(String),
    /// This node lost (or never had) the controller's leadership: retry on the new one.
    #[error("No controller appears to be active.")]
    NotController,
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
            MetadataError::InvalidReplicationFactor(_) => ErrorCode::InvalidReplicationFactor,
            MetadataError::InvalidReplicaAssignment(_) => ErrorCode::InvalidReplicaAssignment,
            MetadataError::InconsistentClusterId(_) => ErrorCode::InconsistentClusterId,
            MetadataError::DuplicateBrokerRegistration(_) => ErrorCode::DuplicateBrokerRegistration,
            MetadataError::StaleBrokerEpoch(_) => ErrorCode::StaleBrokerEpoch,
            MetadataError::Internal(_) => ErrorCode::UnknownServerError,
            MetadataError::NotController => ErrorCode::NotController,
            MetadataError::Storage(_) | MetadataError::LogDir(_) => ErrorCode::KafkaStorageError,
        }
    }
}

/// Kafka's topic-name rules (`org.apache.kafka.common.internals.Topic.validate`).
pub fn validate_topic_name(name: &str) -> Result<(), MetadataError> {
    let reason = if name.is_empty() {
        "the empty string is not allowed".to_string()
    } else if name == "." || name == ".." {
        format!("'{name}' is not allowed")
    } else if name.len() > 249 {
        format!("the length of '{name}' is longer than the max allowed length 249")
    } else if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
    {
        format!(
            "'{name}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
        )
    } else {
        return Ok(());
    };
    // Kafka 4.x's wording (`Topic.validate`), checked by tests/compat/tests/kafka_differential.rs.
    Err(MetadataError::InvalidTopic(format!(
        "Topic name is invalid: {reason}"
    )))
}

#[cfg(test)]
mod alter_partition_tests;
#[cfg(test)]
mod controller_tests;
#[cfg(test)]
mod elections_tests;
#[cfg(test)]
mod heartbeat_tests;
#[cfg(test)]
mod image_tests;
#[cfg(test)]
mod placement_tests;
#[cfg(test)]
mod security_tests;
#[cfg(test)]
mod sim_tests;
#[cfg(test)]
mod snapshot_tests;
#[cfg(test)]
mod store_tests;
#[cfg(test)]
mod tests;
