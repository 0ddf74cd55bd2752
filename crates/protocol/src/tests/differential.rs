//! Differential tests against `kafka-protocol` 0.18 (Kafka 4.1 schemas), the oracle.
//!
//! For every generated API (and the headers, and the consumer-protocol records) and every
//! version we support: build a random value for that version (nulls where nullable, tagged
//! fields sometimes set, empty/short/long arrays, unicode strings), encode it, check the size,
//! decode it and require the same value back. Then, for the versions kafka-protocol also knows
//! (all of ours except Produce v0-2): decode our bytes with theirs (consuming them exactly),
//! compare every field of ours with the same-named field of theirs (through the `Debug`
//! renderings, see `debug_tree`, so even a symmetric misread is caught), re-encode with theirs
//! and require identical bytes and sizes.
//!
//! Schema differences between Kafka 4.0-dev (our JSON) and 4.1 (theirs) inside our ranges
//! would be listed in `SKIPS`; currently there are none.

use std::fmt::Debug;

use bytes::BytesMut;
use kafka_protocol::messages as kp;
use kafka_protocol::protocol::{Decodable, Encodable, Message as KpMessage};
use proptest::prelude::*;

use super::debug_tree;
use crate::testing::{Random, TestRng};
use crate::*;

/// `(type name, version, why)`: versions where the two schemas legitimately differ.
const SKIPS: &[(&str, i16, &str)] = &[];

/// Random values per API and version per proptest case; each case covers every version.
const CASES: u32 = 24;

fn fail(msg: String) -> TestCaseError {
    TestCaseError::fail(msg)
}

fn check<O, T>(seed: u64) -> Result<(), TestCaseError>
where
    O: Codec + Random + PartialEq + Debug,
    T: Decodable + Encodable + KpMessage + Debug,
{
    let name = O::NAME;
    prop_assert!(
        O::MIN_VERSION.max(T::VERSIONS.min) <= O::MAX_VERSION.min(T::VERSIONS.max),
        "{}: no version in common",
        name
    );
    for version in O::MIN_VERSION..=O::MAX_VERSION {
        let mut rng = TestRng::new(seed.wrapping_mul(31).wrapping_add(version as u64));
        let value = O::random(&mut rng, version);
        let mut ours = BytesMut::new();
        value
            .encode(&mut ours, version)
            .map_err(|e| fail(format!("{name} v{version}: encode: {e}")))?;
        let ours = ours.freeze();
        let size = value.encoded_size(version).unwrap();
        prop_assert_eq!(size, ours.len(), "{} v{} size", name, version);

        // Our own round trip, for every version we support.
        let mut cursor = ours.clone();
        let back = O::decode(&mut cursor, version)
            .map_err(|e| fail(format!("{name} v{version}: decode: {e}")))?;
        prop_assert!(
            cursor.is_empty(),
            "{} v{}: {} bytes left",
            name,
            version,
            cursor.len()
        );
        prop_assert_eq!(&back, &value, "{} v{} round trip", name, version);

        // The oracle, for the versions it knows (e.g. not Produce v0-2).
        let in_oracle = (T::VERSIONS.min..=T::VERSIONS.max).contains(&version);
        let skipped = SKIPS.iter().any(|(n, v, _)| *n == name && *v == version);
        if in_oracle && !skipped {
            oracle::<O, T>(&value, &ours, version)?;
        }
    }
    Ok(())
}

/// Their decode of our bytes: consumes them exactly, has the same field values, re-encodes to
/// the same bytes with the same computed size.
fn oracle<O, T>(value: &O, ours: &bytes::Bytes, version: i16) -> Result<(), TestCaseError>
where
    O: Codec + Debug,
    T: Decodable + Encodable + KpMessage + Debug,
{
    let name = O::NAME;
    let mut cursor = ours.clone();
    let theirs = T::decode(&mut cursor, version).map_err(|e| {
        fail(format!(
            "{name} v{version}: kafka-protocol cannot decode ours: {e:#}\n{value:?}"
        ))
    })?;
    prop_assert!(
        cursor.is_empty(),
        "{} v{}: kafka-protocol left {} bytes",
        name,
        version,
        cursor.len()
    );
    let ours_tree = debug_tree::parse(&format!("{value:?}")).map_err(fail)?;
    let theirs_tree = debug_tree::parse(&format!("{theirs:?}")).map_err(fail)?;
    debug_tree::compare(&ours_tree, &theirs_tree, &format!("{name} v{version}")).map_err(fail)?;
    let mut again = BytesMut::new();
    theirs
        .encode(&mut again, version)
        .map_err(|e| fail(format!("{name} v{version}: their encode: {e:#}")))?;
    prop_assert_eq!(
        theirs.compute_size(version).unwrap(),
        ours.len(),
        "{} v{} their size",
        name,
        version
    );
    prop_assert!(
        again.freeze() == *ours,
        "{} v{}: bytes differ after their round trip\n{:?}",
        name,
        version,
        value
    );
    Ok(())
}

macro_rules! differential {
    ($($test:ident: $ours:ty => $theirs:ty;)*) => {
        proptest! {
            #![proptest_config(ProptestConfig::with_cases(CASES))]
            $(
                #[test]
                fn $test(seed in any::<u64>()) {
                    check::<$ours, $theirs>(seed)?;
                }
            )*
        }
    };
}

differential! {
    api_versions_request: ApiVersionsRequest => kp::ApiVersionsRequest;
    api_versions_response: ApiVersionsResponse => kp::ApiVersionsResponse;
    metadata_request: MetadataRequest => kp::MetadataRequest;
    metadata_response: MetadataResponse => kp::MetadataResponse;
    produce_request: ProduceRequest => kp::ProduceRequest;
    produce_response: ProduceResponse => kp::ProduceResponse;
    fetch_request: FetchRequest => kp::FetchRequest;
    fetch_response: FetchResponse => kp::FetchResponse;
    list_offsets_request: ListOffsetsRequest => kp::ListOffsetsRequest;
    list_offsets_response: ListOffsetsResponse => kp::ListOffsetsResponse;
    create_topics_request: CreateTopicsRequest => kp::CreateTopicsRequest;
    create_topics_response: CreateTopicsResponse => kp::CreateTopicsResponse;
    delete_topics_request: DeleteTopicsRequest => kp::DeleteTopicsRequest;
    delete_topics_response: DeleteTopicsResponse => kp::DeleteTopicsResponse;
    init_producer_id_request: InitProducerIdRequest => kp::InitProducerIdRequest;
    init_producer_id_response: InitProducerIdResponse => kp::InitProducerIdResponse;
    describe_configs_request: DescribeConfigsRequest => kp::DescribeConfigsRequest;
    describe_configs_response: DescribeConfigsResponse => kp::DescribeConfigsResponse;
    alter_configs_request: AlterConfigsRequest => kp::AlterConfigsRequest;
    alter_configs_response: AlterConfigsResponse => kp::AlterConfigsResponse;
    incremental_alter_configs_request: IncrementalAlterConfigsRequest => kp::IncrementalAlterConfigsRequest;
    incremental_alter_configs_response: IncrementalAlterConfigsResponse => kp::IncrementalAlterConfigsResponse;
    create_partitions_request: CreatePartitionsRequest => kp::CreatePartitionsRequest;
    create_partitions_response: CreatePartitionsResponse => kp::CreatePartitionsResponse;
    delete_records_request: DeleteRecordsRequest => kp::DeleteRecordsRequest;
    delete_records_response: DeleteRecordsResponse => kp::DeleteRecordsResponse;
    describe_cluster_request: DescribeClusterRequest => kp::DescribeClusterRequest;
    describe_cluster_response: DescribeClusterResponse => kp::DescribeClusterResponse;
    describe_log_dirs_request: DescribeLogDirsRequest => kp::DescribeLogDirsRequest;
    describe_log_dirs_response: DescribeLogDirsResponse => kp::DescribeLogDirsResponse;
    offset_for_leader_epoch_request: OffsetForLeaderEpochRequest => kp::OffsetForLeaderEpochRequest;
    offset_for_leader_epoch_response: OffsetForLeaderEpochResponse => kp::OffsetForLeaderEpochResponse;
    describe_producers_request: DescribeProducersRequest => kp::DescribeProducersRequest;
    describe_producers_response: DescribeProducersResponse => kp::DescribeProducersResponse;
    find_coordinator_request: FindCoordinatorRequest => kp::FindCoordinatorRequest;
    find_coordinator_response: FindCoordinatorResponse => kp::FindCoordinatorResponse;
    join_group_request: JoinGroupRequest => kp::JoinGroupRequest;
    join_group_response: JoinGroupResponse => kp::JoinGroupResponse;
    sync_group_request: SyncGroupRequest => kp::SyncGroupRequest;
    sync_group_response: SyncGroupResponse => kp::SyncGroupResponse;
    heartbeat_request: HeartbeatRequest => kp::HeartbeatRequest;
    heartbeat_response: HeartbeatResponse => kp::HeartbeatResponse;
    leave_group_request: LeaveGroupRequest => kp::LeaveGroupRequest;
    leave_group_response: LeaveGroupResponse => kp::LeaveGroupResponse;
    offset_commit_request: OffsetCommitRequest => kp::OffsetCommitRequest;
    offset_commit_response: OffsetCommitResponse => kp::OffsetCommitResponse;
    offset_fetch_request: OffsetFetchRequest => kp::OffsetFetchRequest;
    offset_fetch_response: OffsetFetchResponse => kp::OffsetFetchResponse;
    offset_delete_request: OffsetDeleteRequest => kp::OffsetDeleteRequest;
    offset_delete_response: OffsetDeleteResponse => kp::OffsetDeleteResponse;
    list_groups_request: ListGroupsRequest => kp::ListGroupsRequest;
    list_groups_response: ListGroupsResponse => kp::ListGroupsResponse;
    describe_groups_request: DescribeGroupsRequest => kp::DescribeGroupsRequest;
    describe_groups_response: DescribeGroupsResponse => kp::DescribeGroupsResponse;
    delete_groups_request: DeleteGroupsRequest => kp::DeleteGroupsRequest;
    delete_groups_response: DeleteGroupsResponse => kp::DeleteGroupsResponse;
    consumer_group_heartbeat_request: ConsumerGroupHeartbeatRequest => kp::ConsumerGroupHeartbeatRequest;
    consumer_group_heartbeat_response: ConsumerGroupHeartbeatResponse => kp::ConsumerGroupHeartbeatResponse;
    consumer_group_describe_request: ConsumerGroupDescribeRequest => kp::ConsumerGroupDescribeRequest;
    consumer_group_describe_response: ConsumerGroupDescribeResponse => kp::ConsumerGroupDescribeResponse;
    request_header: RequestHeader => kp::RequestHeader;
    response_header: ResponseHeader => kp::ResponseHeader;
    consumer_protocol_subscription: ConsumerProtocolSubscription => kp::ConsumerProtocolSubscription;
    consumer_protocol_assignment: ConsumerProtocolAssignment => kp::ConsumerProtocolAssignment;
}
