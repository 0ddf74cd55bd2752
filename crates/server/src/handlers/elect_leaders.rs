//! ElectLeaders (43), v0-2: preferred (0) or unclean (1) leader election per partition.
//!
//! Kafka's controller semantics (`ReplicationControlManager.electLeaders`), answered from the
//! metadata image: a partition whose leader is already its preferred replica (PREFERRED) or
//! that has a leader (UNCLEAN) answers ELECTION_NOT_NEEDED; with a null partition list
//! (every partition) those are left out of the results, each topic still listed. A unknown
//! topic or partition answers UNKNOWN_TOPIC_OR_PARTITION. On a single node the only replica
//! is the leader unless its log dir is offline (issue 12): then PREFERRED answers
//! PREFERRED_LEADER_NOT_AVAILABLE and UNCLEAN ELIGIBLE_LEADERS_NOT_AVAILABLE (no other replica
//! could lead). An election type other than 0 or 1 is INVALID_REQUEST. The cluster issues
//! widen this to a real election through the controller.

use skiff_protocol::{
    ElectLeadersRequest, ElectLeadersResponse, PartitionResult, ReplicaElectionResult, ResponseBody,
};
use skiff_types::{ErrorCode, TopicPartition};

use super::{Reply, RequestContext};
use crate::broker::Broker;

const PREFERRED: i8 = 0;
const UNCLEAN: i8 = 1;

pub fn handle(ctx: &RequestContext<'_>, req: ElectLeadersRequest) -> Reply {
    let broker = ctx.broker;
    // v0 has no election type field: PREFERRED.
    let kind = req.election_type;
    if kind != PREFERRED && kind != UNCLEAN {
        return Reply::Now(ResponseBody::ElectLeaders(ElectLeadersResponse {
            error_code: ErrorCode::InvalidRequest as i16,
            ..ElectLeadersResponse::default()
        }));
    }
    let results = match &req.topic_partitions {
        None => {
            let image = broker.image();
            image
                .topics
                .values()
                .map(|info| ReplicaElectionResult {
                    topic: info.name.clone(),
                    partition_result: (0..info.partitions)
                        .map(|p| result(p, elect(broker, &info.name, p, kind)))
                        .filter(|r| r.error_code != ErrorCode::ElectionNotNeeded as i16)
                        .collect(),
                })
                .collect()
        }
        Some(topics) => topics
            .iter()
            .map(|t| ReplicaElectionResult {
                topic: t.topic.clone(),
                partition_result: t
                    .partitions
                    .iter()
                    .map(|&p| result(p, elect(broker, &t.topic, p, kind)))
                    .collect(),
            })
            .collect(),
    };
    Reply::Now(ResponseBody::ElectLeaders(ElectLeadersResponse {
        replica_election_results: results,
        ..ElectLeadersResponse::default()
    }))
}

/// One partition's outcome, with Kafka's message.
fn elect(broker: &Broker, topic: &str, partition: i32, kind: i8) -> (ErrorCode, String) {
    let image = broker.image();
    let Some(info) = image.topic(topic) else {
        return (
            ErrorCode::UnknownTopicOrPartition,
            format!("No such topic as {topic}"),
        );
    };
    if !(0..info.partitions).contains(&partition) {
        return (
            ErrorCode::UnknownTopicOrPartition,
            format!("No such partition as {topic}-{partition}"),
        );
    }
    let online = broker
        .replicas
        .is_partition_online(&TopicPartition::new(topic.to_string(), partition));
    let registration = image.partition(topic, partition);
    let leader = registration.map_or(-1, |r| r.leader);
    let preferred = registration.and_then(|r| r.replicas.first().copied());
    let has_leader = online && leader >= 0;
    let needed = match kind {
        PREFERRED => !(has_leader && Some(leader) == preferred),
        _ => !has_leader,
    };
    if !needed {
        return (
            ErrorCode::ElectionNotNeeded,
            "Leader election not needed for topic partition.".into(),
        );
    }
    // A single node has no other replica that could take over.
    if kind == PREFERRED {
        (
            ErrorCode::PreferredLeaderNotAvailable,
            "The preferred leader was not available.".into(),
        )
    } else {
        (
            ErrorCode::EligibleLeadersNotAvailable,
            "Eligible topic partition leaders are not available.".into(),
        )
    }
}

fn result(partition: i32, (code, message): (ErrorCode, String)) -> PartitionResult {
    PartitionResult {
        partition_id: partition,
        error_code: code as i16,
        error_message: Some(message),
    }
}
