//! Round trips of the internal records (kafka-protocol has no oracle for these): random values
//! for every version encode, report their exact size, and decode back to the same value.

use std::fmt::Debug;

use bytes::BytesMut;
use proptest::prelude::*;

use crate::testing::{Random, TestRng};
use crate::*;

fn round_trip<O: Codec + Random + PartialEq + Debug>(seed: u64) -> Result<(), TestCaseError> {
    for version in O::MIN_VERSION..=O::MAX_VERSION {
        let mut rng = TestRng::new(seed.wrapping_add(version as u64));
        let value = O::random(&mut rng, version);
        let mut out = BytesMut::new();
        value
            .encode(&mut out, version)
            .map_err(|e| TestCaseError::fail(format!("{} v{version}: {e}", O::NAME)))?;
        prop_assert_eq!(value.encoded_size(version).unwrap(), out.len());
        let mut buf = out.freeze();
        let back = O::decode(&mut buf, version)
            .map_err(|e| TestCaseError::fail(format!("{} v{version}: {e}", O::NAME)))?;
        prop_assert!(buf.is_empty());
        prop_assert_eq!(&back, &value, "{} v{}", O::NAME, version);
    }
    Ok(())
}

macro_rules! round_trips {
    ($($test:ident: $ty:ty;)*) => {
        proptest! {
            #![proptest_config(ProptestConfig::with_cases(32))]
            $(
                #[test]
                fn $test(seed in any::<u64>()) {
                    round_trip::<$ty>(seed)?;
                }
            )*
        }
    };
}

round_trips! {
    topic_record: TopicRecord;
    partition_record: PartitionRecord;
    config_record: ConfigRecord;
    remove_topic_record: RemoveTopicRecord;
    producer_ids_record: ProducerIdsRecord;
    feature_level_record: FeatureLevelRecord;
    partition_change_record: PartitionChangeRecord;
    register_broker_record: RegisterBrokerRecord;
    broker_registration_change_record: BrokerRegistrationChangeRecord;
    no_op_record: NoOpRecord;
    offset_commit_key: OffsetCommitKey;
    offset_commit_value: OffsetCommitValue;
    group_metadata_key: GroupMetadataKey;
    group_metadata_value: GroupMetadataValue;
    consumer_group_current_member_assignment_key: ConsumerGroupCurrentMemberAssignmentKey;
    consumer_group_current_member_assignment_value: ConsumerGroupCurrentMemberAssignmentValue;
    consumer_group_member_metadata_key: ConsumerGroupMemberMetadataKey;
    consumer_group_member_metadata_value: ConsumerGroupMemberMetadataValue;
    consumer_group_metadata_key: ConsumerGroupMetadataKey;
    consumer_group_metadata_value: ConsumerGroupMetadataValue;
    consumer_group_partition_metadata_key: ConsumerGroupPartitionMetadataKey;
    consumer_group_partition_metadata_value: ConsumerGroupPartitionMetadataValue;
    consumer_group_target_assignment_member_key: ConsumerGroupTargetAssignmentMemberKey;
    consumer_group_target_assignment_member_value: ConsumerGroupTargetAssignmentMemberValue;
    consumer_group_target_assignment_metadata_key: ConsumerGroupTargetAssignmentMetadataKey;
    consumer_group_target_assignment_metadata_value: ConsumerGroupTargetAssignmentMetadataValue;
    producer_snapshot: ProducerSnapshot;
    transaction_log_key: TransactionLogKey;
    transaction_log_value: TransactionLogValue;
}
