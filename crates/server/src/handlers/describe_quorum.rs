//! DescribeQuorum (55), v0-2: the metadata quorum of `__cluster_metadata`-0 (KIP-595, KIP-853;
//! `kafka-metadata-quorum.sh describe --status` and the Java admin's
//! `describeMetadataQuorum`).
//!
//! A single node is the whole quorum: the one voter, this node, leads at the metadata log's
//! epoch (0: every batch is written at epoch 0); the high watermark is the committed end of
//! the log (everything fsynced), the voter's log end offset the same; its last fetch and
//! last caught-up times are now (Kafka reports the leader's own as the current time); no
//! observers (a combined node is not its own observer). v2 adds the voter's directory id
//! (zero: the static-voter form, as Kafka reports voters without one) and `Nodes`, the
//! voter's endpoint: in KRaft mode its `controller.quorum.voters` entry on the controller
//! listener, as Kafka reports a static voter; without `process.roles`, the listener the
//! request came through. Any topic partition but
//! `__cluster_metadata`-0, or more than one, is answered UNKNOWN_TOPIC_OR_PARTITION per
//! partition, as `KafkaRaftClient` does. The Raft issue replaces the source of these figures,
//! not the handler's shape.
//! Authorization (issue 19): DESCRIBE on the cluster, else CLUSTER_AUTHORIZATION_FAILED top-level.

use skiff_auth::acl::AclOperation;
use skiff_metadata::METADATA_TOPIC;
use skiff_protocol::{
    DescribeQuorumRequest, DescribeQuorumResponse, DescribeQuorumResponseListener as Listener,
    DescribeQuorumResponsePartitionData, DescribeQuorumResponseReplicaState,
    DescribeQuorumResponseTopicData, Node, ResponseBody,
};
use skiff_types::ErrorCode;
use uuid::Uuid;

use super::{Reply, RequestContext};

pub fn handle(ctx: &RequestContext<'_>, req: DescribeQuorumRequest) -> Reply {
    if !ctx.authorize_cluster(AclOperation::Describe) {
        return Reply::Now(ResponseBody::DescribeQuorum(DescribeQuorumResponse {
            error_code: ErrorCode::ClusterAuthorizationFailed as i16,
            error_message: Some("Cluster authorization failed.".into()),
            ..DescribeQuorumResponse::default()
        }));
    }
    let broker = ctx.broker;
    let valid = req.topics.len() == 1
        && req.topics[0].topic_name == METADATA_TOPIC
        && req.topics[0].partitions.len() == 1
        && req.topics[0].partitions[0].partition_index == 0;
    if !valid {
        let topics = req
            .topics
            .iter()
            .map(|t| DescribeQuorumResponseTopicData {
                topic_name: t.topic_name.clone(),
                partitions: t
                    .partitions
                    .iter()
                    .map(|p| DescribeQuorumResponsePartitionData {
                        partition_index: p.partition_index,
                        error_code: ErrorCode::UnknownTopicOrPartition as i16,
                        error_message: Some(
                            "This server does not host this topic-partition.".into(),
                        ),
                        leader_id: -1,
                        leader_epoch: -1,
                        high_watermark: -1,
                        ..DescribeQuorumResponsePartitionData::default()
                    })
                    .collect(),
            })
            .collect();
        return Reply::Now(ResponseBody::DescribeQuorum(DescribeQuorumResponse {
            topics,
            ..DescribeQuorumResponse::default()
        }));
    }
    let node = broker.node_id();
    let state = broker.metadata.quorum_state();
    let now = broker.clock.now_ms();
    let voter = DescribeQuorumResponseReplicaState {
        replica_id: node,
        replica_directory_id: Uuid::nil(),
        log_end_offset: state.log_end_offset,
        last_fetch_timestamp: now,
        last_caught_up_timestamp: now,
    };
    Reply::Now(ResponseBody::DescribeQuorum(DescribeQuorumResponse {
        error_code: 0,
        error_message: None,
        topics: vec![DescribeQuorumResponseTopicData {
            topic_name: METADATA_TOPIC.to_string(),
            partitions: vec![DescribeQuorumResponsePartitionData {
                partition_index: 0,
                error_code: 0,
                error_message: None,
                leader_id: node,
                leader_epoch: state.leader_epoch,
                high_watermark: state.high_watermark,
                current_voters: vec![voter],
                observers: Vec::new(),
            }],
        }],
        nodes: vec![Node {
            node_id: node,
            listeners: vec![voter_endpoint(ctx)],
        }],
    }))
}

/// The voter's endpoint: in KRaft mode its `controller.quorum.voters` entry on the first
/// controller listener (as Kafka reports static voters, e.g. `CONTROLLER://host:9093`); a
/// node without `process.roles` has no controller listener, so the listener the request
/// came through.
fn voter_endpoint(ctx: &RequestContext<'_>) -> Listener {
    match &ctx.broker.settings.quorum_voter_endpoint {
        Some((name, host, port)) => Listener {
            name: name.clone(),
            host: host.clone(),
            port: *port,
        },
        None => Listener {
            name: ctx.listener.name.clone(),
            host: ctx.listener.advertised_host.clone(),
            port: ctx.listener.advertised_port,
        },
    }
}
