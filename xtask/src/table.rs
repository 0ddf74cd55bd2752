//! The one table of what Skiff generates: APIs with the version ranges Skiff advertises,
//! the two headers, and internal records. Adding an API is a one-line change here.
//!
//! Requests and responses get Skiff's range (decode/encode refuse other versions even when the
//! JSON knows them); headers and internal records get every version their file defines.

/// An API: its definition files are `<name>Request.json` and `<name>Response.json`.
#[derive(Debug)]
pub struct ApiEntry {
    pub name: &'static str,
    pub min: i16,
    pub max: i16,
}

const fn api(name: &'static str, min: i16, max: i16) -> ApiEntry {
    ApiEntry { name, min, max }
}

/// APIs Skiff implements, with the version ranges it advertises in ApiVersions. A range above
/// the shared definitions' comes with a patch in `xtask/specs/` ([`crate::patches`]).
pub const APIS: &[ApiEntry] = &[
    api("ApiVersions", 0, 4),
    api("Metadata", 0, 12),
    // Produce v0-2 decode but Skiff answers them with UNSUPPORTED_VERSION.
    api("Produce", 0, 11),
    api("Fetch", 4, 17),
    api("ListOffsets", 1, 10),
    api("CreateTopics", 2, 7),
    api("DeleteTopics", 1, 6),
    api("InitProducerId", 0, 5),
    api("DescribeConfigs", 1, 4),
    api("AlterConfigs", 0, 2),
    api("IncrementalAlterConfigs", 0, 1),
    api("CreatePartitions", 0, 3),
    api("DeleteRecords", 0, 2),
    api("DescribeCluster", 0, 1),
    api("DescribeLogDirs", 1, 4),
    api("OffsetForLeaderEpoch", 2, 4),
    api("DescribeProducers", 0, 0),
    api("FindCoordinator", 0, 6),
    api("JoinGroup", 0, 9),
    api("SyncGroup", 0, 5),
    api("Heartbeat", 0, 4),
    api("LeaveGroup", 0, 5),
    api("OffsetCommit", 2, 9),
    api("OffsetFetch", 1, 9),
    api("OffsetDelete", 0, 0),
    api("ListGroups", 0, 5),
    api("DescribeGroups", 0, 6),
    api("DeleteGroups", 0, 2),
    api("ConsumerGroupHeartbeat", 0, 1),
    api("ConsumerGroupDescribe", 0, 1),
    // Issue 15 item 4: admin APIs a single node answers trivially (widened by the cluster).
    api("DescribeTopicPartitions", 0, 0),
    api("ElectLeaders", 0, 2),
    api("AlterPartitionReassignments", 0, 1),
    api("ListPartitionReassignments", 0, 0),
    // Kafka 4 removed v0.
    api("AlterReplicaLogDirs", 1, 2),
    api("DescribeQuorum", 0, 2),
    // Kafka 4.1 renamed it ListConfigResources; v1 (resource types) is Skiff's patch.
    api("ListClientMetricsResources", 0, 1),
    // Issue 16: KRaft's broker lifecycle RPCs, served on controller listeners only.
    api("BrokerRegistration", 0, 4),
    api("BrokerHeartbeat", 0, 1),
    // Issue 17: a partition leader's ISR change, at the active controller.
    api("AlterPartition", 0, 3),
    // Issue 16: a broker's producer id block from the active controller.
    api("AllocateProducerIds", 0, 0),
    // Issue 18: transactions (KIP-98, KIP-890 part 1). EndTxn v5 and TxnOffsetCommit v5 are
    // transactions v2 (KIP-890 part 2), not built: `transaction.version` is not advertised.
    api("AddPartitionsToTxn", 0, 5),
    api("AddOffsetsToTxn", 0, 4),
    api("EndTxn", 0, 4),
    api("WriteTxnMarkers", 1, 1),
    api("TxnOffsetCommit", 0, 4),
    api("DescribeTransactions", 0, 0),
    api("ListTransactions", 0, 1),
    // Issue 19: security. Kafka 4 removed the ACL APIs' v0 (KIP-896).
    api("SaslHandshake", 0, 1),
    api("SaslAuthenticate", 0, 2),
    api("DescribeAcls", 1, 3),
    api("CreateAcls", 1, 3),
    api("DeleteAcls", 1, 3),
    api("DescribeUserScramCredentials", 0, 0),
    api("AlterUserScramCredentials", 0, 0),
    // Issue 19: forwarded admin requests carry the client's principal and address (KIP-590),
    // on controller listeners only.
    api("Envelope", 0, 0),
    // Issue 19: `kafka-configs --describe --entity-type users` asks for quotas beside the
    // SCRAM credentials; Skiff has no client quotas, so the answer is always empty.
    api("DescribeClientQuotas", 0, 1),
];

/// Header definitions (all versions).
pub const HEADERS: &[&str] = &["RequestHeader.json", "ResponseHeader.json"];

/// Internal record definitions (all versions), relative to the specs directory.
pub const INTERNAL: &[&str] = &[
    "internal/metadata/TopicRecord.json",
    "internal/metadata/PartitionRecord.json",
    "internal/metadata/ConfigRecord.json",
    "internal/metadata/RemoveTopicRecord.json",
    "internal/metadata/ProducerIdsRecord.json",
    "internal/metadata/FeatureLevelRecord.json",
    "internal/metadata/PartitionChangeRecord.json",
    "internal/metadata/RegisterBrokerRecord.json",
    "internal/metadata/BrokerRegistrationChangeRecord.json",
    "internal/metadata/NoOpRecord.json",
    "internal/metadata/AccessControlEntryRecord.json",
    "internal/metadata/RemoveAccessControlEntryRecord.json",
    "internal/metadata/UserScramCredentialRecord.json",
    "internal/metadata/RemoveUserScramCredentialRecord.json",
    "internal/group-coordinator/OffsetCommitKey.json",
    "internal/group-coordinator/OffsetCommitValue.json",
    "internal/group-coordinator/GroupMetadataKey.json",
    "internal/group-coordinator/GroupMetadataValue.json",
    "internal/group-coordinator/ConsumerGroupCurrentMemberAssignmentKey.json",
    "internal/group-coordinator/ConsumerGroupCurrentMemberAssignmentValue.json",
    "internal/group-coordinator/ConsumerGroupMemberMetadataKey.json",
    "internal/group-coordinator/ConsumerGroupMemberMetadataValue.json",
    "internal/group-coordinator/ConsumerGroupMetadataKey.json",
    "internal/group-coordinator/ConsumerGroupMetadataValue.json",
    "internal/group-coordinator/ConsumerGroupPartitionMetadataKey.json",
    "internal/group-coordinator/ConsumerGroupPartitionMetadataValue.json",
    "internal/group-coordinator/ConsumerGroupTargetAssignmentMemberKey.json",
    "internal/group-coordinator/ConsumerGroupTargetAssignmentMemberValue.json",
    "internal/group-coordinator/ConsumerGroupTargetAssignmentMetadataKey.json",
    "internal/group-coordinator/ConsumerGroupTargetAssignmentMetadataValue.json",
    "internal/storage/ProducerSnapshot.json",
    "internal/transaction-coordinator/TransactionLogKey.json",
    "internal/transaction-coordinator/TransactionLogValue.json",
    "ConsumerProtocolSubscription.json",
    "ConsumerProtocolAssignment.json",
];
