//! The error codes of a response, as Kafka's `AbstractResponse.errorCounts` walks them: one
//! per partition (or topic, group, transaction) result plus the top-level code, for the APIs
//! clients use most. Other APIs are not walked (their errors are not counted).
//!
//! Pure: reads the response body, calls `f` with every non-zero code; never allocates.

use skiff_protocol::ResponseBody;

/// Calls `f` with every non-zero error code of `body`.
pub fn for_each_error(body: &ResponseBody, mut f: impl FnMut(i16)) {
    let mut e = |code: i16| {
        if code != 0 {
            f(code);
        }
    };
    match body {
        ResponseBody::Produce(r) => r
            .responses
            .iter()
            .flat_map(|t| &t.partition_responses)
            .for_each(|p| e(p.error_code)),
        ResponseBody::Fetch(r) => {
            e(r.error_code);
            r.responses
                .iter()
                .flat_map(|t| &t.partitions)
                .for_each(|p| e(p.error_code));
        }
        ResponseBody::ListOffsets(r) => r
            .topics
            .iter()
            .flat_map(|t| &t.partitions)
            .for_each(|p| e(p.error_code)),
        ResponseBody::Metadata(r) => {
            for t in &r.topics {
                e(t.error_code);
                t.partitions.iter().for_each(|p| e(p.error_code));
            }
        }
        ResponseBody::OffsetCommit(r) => r
            .topics
            .iter()
            .flat_map(|t| &t.partitions)
            .for_each(|p| e(p.error_code)),
        ResponseBody::OffsetFetch(r) => {
            e(r.error_code);
            r.topics
                .iter()
                .flat_map(|t| &t.partitions)
                .for_each(|p| e(p.error_code));
            for g in &r.groups {
                e(g.error_code);
                g.topics
                    .iter()
                    .flat_map(|t| &t.partitions)
                    .for_each(|p| e(p.error_code));
            }
        }
        ResponseBody::TxnOffsetCommit(r) => r
            .topics
            .iter()
            .flat_map(|t| &t.partitions)
            .for_each(|p| e(p.error_code)),
        ResponseBody::FindCoordinator(r) => {
            e(r.error_code);
            r.coordinators.iter().for_each(|c| e(c.error_code));
        }
        ResponseBody::JoinGroup(r) => e(r.error_code),
        ResponseBody::SyncGroup(r) => e(r.error_code),
        ResponseBody::Heartbeat(r) => e(r.error_code),
        ResponseBody::LeaveGroup(r) => {
            e(r.error_code);
            r.members.iter().for_each(|m| e(m.error_code));
        }
        ResponseBody::DescribeGroups(r) => r.groups.iter().for_each(|g| e(g.error_code)),
        ResponseBody::ListGroups(r) => e(r.error_code),
        ResponseBody::ApiVersions(r) => e(r.error_code),
        ResponseBody::CreateTopics(r) => r.topics.iter().for_each(|t| e(t.error_code)),
        ResponseBody::DeleteTopics(r) => r.responses.iter().for_each(|t| e(t.error_code)),
        ResponseBody::InitProducerId(r) => e(r.error_code),
        ResponseBody::EndTxn(r) => e(r.error_code),
        ResponseBody::AddPartitionsToTxn(r) => {
            e(r.error_code);
            r.results_by_transaction
                .iter()
                .flat_map(|t| &t.topic_results)
                .flat_map(|t| &t.results_by_partition)
                .for_each(|p| e(p.partition_error_code));
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use skiff_protocol::{
        FetchResponse, FetchResponsePartitionData, FetchableTopicResponse, HeartbeatResponse,
        PartitionProduceResponse, ProduceResponse, TopicProduceResponse,
    };

    fn codes(body: &ResponseBody) -> Vec<i16> {
        let mut v = Vec::new();
        for_each_error(body, |c| v.push(c));
        v
    }

    #[test]
    fn every_partition_error_and_no_none() {
        let part = |error_code| PartitionProduceResponse {
            error_code,
            ..Default::default()
        };
        let produce = ResponseBody::Produce(ProduceResponse {
            responses: vec![TopicProduceResponse {
                name: "t".into(),
                partition_responses: vec![part(0), part(3), part(6)],
            }],
            ..Default::default()
        });
        assert_eq!(codes(&produce), vec![3, 6]);
        let fpart = |error_code| FetchResponsePartitionData {
            error_code,
            ..Default::default()
        };
        let fetch = ResponseBody::Fetch(FetchResponse {
            error_code: 0,
            responses: vec![FetchableTopicResponse {
                partitions: vec![fpart(1), fpart(0)],
                ..Default::default()
            }],
            ..Default::default()
        });
        assert_eq!(codes(&fetch), vec![1]);
        let hb = ResponseBody::Heartbeat(HeartbeatResponse {
            error_code: 27,
            ..Default::default()
        });
        assert_eq!(codes(&hb), vec![27]);
        let ok = ResponseBody::Heartbeat(HeartbeatResponse::default());
        assert!(codes(&ok).is_empty());
    }
}
