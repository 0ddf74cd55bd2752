//! Request handlers: one file per Kafka API, all the same shape, and a flat dispatch.
//!
//! Shape of every handler: `pub fn handle(ctx: &RequestContext, req: XRequest) -> Reply`.
//! The synchronous part runs on the connection's reader, in request order (so pipelined
//! requests take effect in the order they were sent: an append, a topic creation). Anything
//! that has to wait (a durable produce's fsync, a fetch long-poll) is returned as
//! [`Reply::Later`], a future the connection's writer awaits in order before writing.
//! Handlers map domain errors to Kafka error codes; they never panic and never touch the
//! socket. [`APIS`] is the one table of what this broker serves: ApiVersions advertises it,
//! the connection closes on anything outside it.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use skiff_protocol::{ApiKey, RequestBody, ResponseBody};

use crate::broker::Broker;

pub mod allocate_producer_ids;
pub mod alter_configs;
pub mod alter_partition;
pub mod alter_partition_reassignments;
pub mod alter_replica_log_dirs;
pub mod alter_user_scram_credentials;
pub mod api_versions;
pub(crate) mod authz_ops;
pub mod broker_heartbeat;
pub mod broker_registration;
mod config_changes;
pub mod create_acls;
pub mod create_partitions;
pub mod create_topics;
pub mod delete_acls;
pub mod delete_records;
pub mod delete_topics;
pub mod describe_acls;
pub mod describe_client_quotas;
pub mod describe_cluster;
pub mod describe_configs;
pub mod describe_log_dirs;
pub mod describe_producers;
pub mod describe_quorum;
pub mod describe_topic_partitions;
pub mod describe_user_scram_credentials;
pub mod elect_leaders;
pub mod fetch;
pub mod incremental_alter_configs;
pub mod init_producer_id;
pub mod list_client_metrics_resources;
pub mod list_offsets;
pub mod list_partition_reassignments;
pub mod metadata;
pub mod offset_for_leader_epoch;
pub mod produce;
// Transactions (issue 18): handed to the transaction coordinator runtime (crate::txn).
pub mod add_offsets_to_txn;
pub mod add_partitions_to_txn;
pub mod describe_transactions;
pub mod end_txn;
pub mod list_transactions;
pub mod txn_offset_commit;
pub mod write_txn_markers;
// Consumer groups (issue 6): handed to the group coordinator runtime (crate::coordinator).
pub mod consumer_group_describe;
pub mod consumer_group_heartbeat;
pub mod delete_groups;
pub mod describe_groups;
pub mod find_coordinator;
pub mod heartbeat;
pub mod join_group;
pub mod leave_group;
pub mod list_groups;
pub mod offset_commit;
pub mod offset_delete;
pub mod offset_fetch;
pub mod sync_group;
// Issue 19: authorization of every handler, tested through dispatch as a given principal.
#[cfg(test)]
mod authz_data_tests;
#[cfg(test)]
mod authz_group_tests;

/// A response that will be ready later.
pub type LaterResponse = Pin<Box<dyn Future<Output = ResponseBody> + Send + 'static>>;

/// What a handler decided.
pub enum Reply {
    /// Answer with this now.
    Now(ResponseBody),
    /// Answer with what this future yields (awaited in request order).
    Later(LaterResponse),
    /// As `Later`, and the connection reads no further request until the future is done:
    /// for a request whose effects must land before the next one's are decided (a produce
    /// whose appends wait for a remote transaction verification, issue 18).
    Hold(LaterResponse),
    /// No response (acks=0 produce).
    Nothing,
    /// Close the connection (the reason is logged).
    Close(String),
}

impl std::fmt::Debug for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reply::Now(b) => write!(f, "Reply::Now({:?})", b.api_key()),
            Reply::Later(_) => f.write_str("Reply::Later"),
            Reply::Hold(_) => f.write_str("Reply::Hold"),
            Reply::Nothing => f.write_str("Reply::Nothing"),
            Reply::Close(r) => write!(f, "Reply::Close({r})"),
        }
    }
}

/// The listener a request arrived on, as clients should see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListenerInfo {
    pub name: String,
    pub advertised_host: String,
    pub advertised_port: u16,
    /// A KRaft controller listener (`ListenerSettings::controller`).
    pub controller: bool,
}

/// Everything a handler may look at besides its request body.
#[derive(Debug)]
pub struct RequestContext<'a> {
    pub broker: &'a Arc<Broker>,
    pub listener: &'a ListenerInfo,
    pub peer: SocketAddr,
    pub api_version: i16,
    pub correlation_id: i32,
    pub client_id: Option<&'a str>,
    /// Who sent the request (issue 19): `User:ANONYMOUS` unless the listener authenticated
    /// the connection (SASL, or a client certificate on mutual TLS).
    pub principal: &'a skiff_auth::principal::KafkaPrincipal,
}

/// Every API this broker serves. Version ranges come from the protocol crate's table (the
/// generated codec supports exactly what we advertise).
pub const APIS: &[ApiKey] = &[
    ApiKey::Produce,
    ApiKey::Fetch,
    ApiKey::ListOffsets,
    ApiKey::Metadata,
    ApiKey::ApiVersions,
    ApiKey::CreateTopics,
    ApiKey::DeleteTopics,
    ApiKey::DeleteRecords,
    ApiKey::InitProducerId,
    ApiKey::OffsetForLeaderEpoch,
    ApiKey::DescribeConfigs,
    ApiKey::AlterConfigs,
    ApiKey::DescribeLogDirs,
    ApiKey::CreatePartitions,
    ApiKey::IncrementalAlterConfigs,
    ApiKey::DescribeCluster,
    ApiKey::DescribeProducers,
    ApiKey::OffsetCommit,
    ApiKey::OffsetFetch,
    ApiKey::FindCoordinator,
    ApiKey::JoinGroup,
    ApiKey::Heartbeat,
    ApiKey::LeaveGroup,
    ApiKey::SyncGroup,
    ApiKey::DescribeGroups,
    ApiKey::ListGroups,
    ApiKey::DeleteGroups,
    ApiKey::OffsetDelete,
    ApiKey::ConsumerGroupHeartbeat,
    ApiKey::ConsumerGroupDescribe,
    ApiKey::DescribeTopicPartitions,
    ApiKey::ElectLeaders,
    ApiKey::AlterPartitionReassignments,
    ApiKey::ListPartitionReassignments,
    ApiKey::AlterReplicaLogDirs,
    ApiKey::DescribeQuorum,
    ApiKey::ListClientMetricsResources,
    ApiKey::AddPartitionsToTxn,
    ApiKey::AddOffsetsToTxn,
    ApiKey::EndTxn,
    ApiKey::WriteTxnMarkers,
    ApiKey::TxnOffsetCommit,
    ApiKey::DescribeTransactions,
    ApiKey::ListTransactions,
    ApiKey::CreateAcls,
    ApiKey::DescribeAcls,
    ApiKey::DeleteAcls,
    ApiKey::DescribeUserScramCredentials,
    ApiKey::AlterUserScramCredentials,
    // Issue 19: answered by the connection itself (`connection::sasl`), not dispatched.
    ApiKey::SaslHandshake,
    ApiKey::SaslAuthenticate,
    ApiKey::DescribeClientQuotas,
];

/// APIs served on controller listeners only (Kafka's `"listeners": ["controller"]`), beside
/// [`APIS`]; a broker listener neither advertises nor serves them.
pub const CONTROLLER_APIS: &[ApiKey] = &[
    ApiKey::BrokerRegistration,
    ApiKey::BrokerHeartbeat,
    ApiKey::AllocateProducerIds,
    ApiKey::AlterPartition,
    // Issue 19: forwarded admin requests with their client's principal (`crate::envelope`).
    ApiKey::Envelope,
];

/// Produce versions below this are advertised (librdkafka needs min 0 to enable compression,
/// KAFKA-18659) but refused by closing the connection, as Kafka 4 does.
pub const PRODUCE_MIN_USABLE_VERSION: i16 = 3;

/// The advertised (min, max) of an API, `None` if this broker does not serve it.
pub fn advertised_versions(key: ApiKey) -> Option<(i16, i16)> {
    APIS.contains(&key).then(|| key.supported_versions())
}

/// The advertised (min, max) of an API on a listener (`controller`: a controller listener).
pub fn advertised_on(key: ApiKey, controller: bool) -> Option<(i16, i16)> {
    advertised_versions(key).or_else(|| {
        (controller && CONTROLLER_APIS.contains(&key)).then(|| key.supported_versions())
    })
}

/// Whether a request of this API and version is served on a listener (else the connection
/// is closed).
pub fn is_served_on(key: ApiKey, version: i16, controller: bool) -> bool {
    if controller && CONTROLLER_APIS.contains(&key) {
        let (min, max) = key.supported_versions();
        return (min..=max).contains(&version);
    }
    is_served(key, version)
}

/// Whether a request of this API and version is served on a broker listener.
pub fn is_served(key: ApiKey, version: i16) -> bool {
    match advertised_versions(key) {
        Some((min, max)) => {
            (min..=max).contains(&version)
                && !(key == ApiKey::Produce && version < PRODUCE_MIN_USABLE_VERSION)
        }
        None => false,
    }
}

/// Routes a decoded request to its handler (in a cluster, admin requests go to the active
/// controller when this node is not it: `crate::cluster::forward`).
///
/// Handlers that write metadata may wait for the store's writer lock, which a Raft commit
/// holds while it needs the tokio workers: the store hands the worker off while it waits
/// (`MetadataStore::lock_writer`), as the Raft log does while it commits.
pub fn dispatch(ctx: &RequestContext<'_>, mut body: RequestBody) -> Reply {
    if ctx.broker.quorum.is_some()
        && ctx.listener.name != crate::cluster::LOCAL_LISTENER
        && crate::cluster::is_forwarded(body.api_key())
        && !crate::cluster::is_controller(ctx.broker)
    {
        let client = (ctx.principal, ctx.peer.ip(), ctx.client_id);
        match crate::cluster::forward(ctx.broker, ctx.api_version, body, Some(client)) {
            Ok(f) => return Reply::Later(f),
            Err(b) => body = b,
        }
    }
    match body {
        RequestBody::ApiVersions(r) => api_versions::handle(ctx, r),
        RequestBody::Metadata(r) => metadata::handle(ctx, r),
        RequestBody::Produce(r) => produce::handle(ctx, r),
        RequestBody::Fetch(r) => fetch::handle(ctx, r),
        RequestBody::ListOffsets(r) => list_offsets::handle(ctx, r),
        RequestBody::CreateTopics(r) => create_topics::handle(ctx, r),
        RequestBody::DeleteTopics(r) => delete_topics::handle(ctx, r),
        RequestBody::InitProducerId(r) => init_producer_id::handle(ctx, r),
        RequestBody::DeleteRecords(r) => delete_records::handle(ctx, r),
        RequestBody::OffsetForLeaderEpoch(r) => offset_for_leader_epoch::handle(ctx, r),
        RequestBody::DescribeConfigs(r) => describe_configs::handle(ctx, r),
        RequestBody::AlterConfigs(r) => alter_configs::handle(ctx, r),
        RequestBody::DescribeLogDirs(r) => describe_log_dirs::handle(ctx, r),
        RequestBody::CreatePartitions(r) => create_partitions::handle(ctx, r),
        RequestBody::IncrementalAlterConfigs(r) => incremental_alter_configs::handle(ctx, r),
        RequestBody::DescribeCluster(r) => describe_cluster::handle(ctx, r),
        RequestBody::DescribeProducers(r) => describe_producers::handle(ctx, r),
        RequestBody::OffsetCommit(r) => offset_commit::handle(ctx, r),
        RequestBody::OffsetFetch(r) => offset_fetch::handle(ctx, r),
        RequestBody::FindCoordinator(r) => find_coordinator::handle(ctx, r),
        RequestBody::JoinGroup(r) => join_group::handle(ctx, r),
        RequestBody::Heartbeat(r) => heartbeat::handle(ctx, r),
        RequestBody::LeaveGroup(r) => leave_group::handle(ctx, r),
        RequestBody::SyncGroup(r) => sync_group::handle(ctx, r),
        RequestBody::DescribeGroups(r) => describe_groups::handle(ctx, r),
        RequestBody::ListGroups(r) => list_groups::handle(ctx, r),
        RequestBody::DeleteGroups(r) => delete_groups::handle(ctx, r),
        RequestBody::OffsetDelete(r) => offset_delete::handle(ctx, r),
        RequestBody::ConsumerGroupHeartbeat(r) => consumer_group_heartbeat::handle(ctx, r),
        RequestBody::ConsumerGroupDescribe(r) => consumer_group_describe::handle(ctx, r),
        RequestBody::DescribeTopicPartitions(r) => describe_topic_partitions::handle(ctx, r),
        RequestBody::ElectLeaders(r) => elect_leaders::handle(ctx, r),
        RequestBody::AlterPartitionReassignments(r) => {
            alter_partition_reassignments::handle(ctx, r)
        }
        RequestBody::ListPartitionReassignments(r) => list_partition_reassignments::handle(ctx, r),
        RequestBody::AlterReplicaLogDirs(r) => alter_replica_log_dirs::handle(ctx, r),
        RequestBody::DescribeQuorum(r) => describe_quorum::handle(ctx, r),
        RequestBody::ListClientMetricsResources(r) => list_client_metrics_resources::handle(ctx, r),
        RequestBody::BrokerRegistration(r) => broker_registration::handle(ctx, r),
        RequestBody::BrokerHeartbeat(r) => broker_heartbeat::handle(ctx, r),
        RequestBody::AllocateProducerIds(r) => allocate_producer_ids::handle(ctx, r),
        RequestBody::AlterPartition(r) => alter_partition::handle(ctx, r),
        RequestBody::Envelope(r) => crate::envelope::handle(ctx, r),
        RequestBody::DescribeClientQuotas(r) => describe_client_quotas::handle(ctx, r),
        RequestBody::AddPartitionsToTxn(r) => add_partitions_to_txn::handle(ctx, r),
        RequestBody::AddOffsetsToTxn(r) => add_offsets_to_txn::handle(ctx, r),
        RequestBody::EndTxn(r) => end_txn::handle(ctx, r),
        RequestBody::WriteTxnMarkers(r) => write_txn_markers::handle(ctx, r),
        RequestBody::TxnOffsetCommit(r) => txn_offset_commit::handle(ctx, r),
        RequestBody::DescribeTransactions(r) => describe_transactions::handle(ctx, r),
        RequestBody::ListTransactions(r) => list_transactions::handle(ctx, r),
        RequestBody::CreateAcls(r) => create_acls::handle(ctx, r),
        RequestBody::DescribeAcls(r) => describe_acls::handle(ctx, r),
        RequestBody::DeleteAcls(r) => delete_acls::handle(ctx, r),
        RequestBody::DescribeUserScramCredentials(r) => {
            describe_user_scram_credentials::handle(ctx, r)
        }
        RequestBody::AlterUserScramCredentials(r) => alter_user_scram_credentials::handle(ctx, r),
        // Every API the codec knows is served today; keep the arm for APIs added later.
        #[allow(unreachable_patterns)]
        other => Reply::Close(format!("{} is not served", other.api_key().name())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advertised_table_is_exactly_the_brief() {
        let got: Vec<_> = APIS
            .iter()
            .map(|k| (*k as i16, advertised_versions(*k)))
            .collect();
        assert_eq!(
            got,
            vec![
                (0, Some((0, 11))),
                (1, Some((4, 17))),
                (2, Some((1, 10))),
                (3, Some((0, 12))),
                (18, Some((0, 4))),
                (19, Some((2, 7))),
                (20, Some((1, 6))),
                (21, Some((0, 2))),
                (22, Some((0, 5))),
                (23, Some((2, 4))),
                (32, Some((1, 4))),
                (33, Some((0, 2))),
                (35, Some((1, 4))),
                (37, Some((0, 3))),
                (44, Some((0, 1))),
                (60, Some((0, 1))),
                (61, Some((0, 0))),
                (8, Some((2, 9))),
                (9, Some((1, 9))),
                (10, Some((0, 6))),
                (11, Some((0, 9))),
                (12, Some((0, 4))),
                (13, Some((0, 5))),
                (14, Some((0, 5))),
                (15, Some((0, 6))),
                (16, Some((0, 5))),
                (42, Some((0, 2))),
                (47, Some((0, 0))),
                (68, Some((0, 1))),
                (69, Some((0, 1))),
                (75, Some((0, 0))),
                (43, Some((0, 2))),
                (45, Some((0, 1))),
                (46, Some((0, 0))),
                (34, Some((1, 2))),
                (55, Some((0, 2))),
                (74, Some((0, 1))),
                (24, Some((0, 5))),
                (25, Some((0, 4))),
                (26, Some((0, 4))),
                (27, Some((1, 1))),
                (28, Some((0, 4))),
                (65, Some((0, 0))),
                (66, Some((0, 1))),
                (30, Some((1, 3))),
                (29, Some((1, 3))),
                (31, Some((1, 3))),
                (50, Some((0, 0))),
                (51, Some((0, 0))),
                (17, Some((0, 1))),
                (36, Some((0, 2))),
                (48, Some((0, 1))),
            ]
        );
        assert!(!is_served(ApiKey::Produce, 2));
        assert!(is_served(ApiKey::Produce, 3));
        assert!(!is_served(ApiKey::Fetch, 3));
        // librdkafka 2.0.2 enables its balanced consumer only if these include v0.
        assert!(is_served(ApiKey::JoinGroup, 0));
        assert!(is_served(ApiKey::FindCoordinator, 0));
    }
}
