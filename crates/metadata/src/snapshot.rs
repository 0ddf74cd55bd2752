//! The records that rebuild an image (issue 16, KRaft snapshots): what a `.checkpoint` file
//! holds between its header and footer (`skiff_raft::checkpoint`), and what a lagging node
//! installs instead of the log prefix a snapshot replaces.
//!
//! Mental model: [`image_records`] is the inverse of [`crate::replay`] from an empty image:
//! `replay(&MetadataImage::default(), &image_records(&image)) == image` for every image
//! replay can produce (checked by `snapshot_tests.rs` over hand-built and simulated images).
//! Each entity is written as the record that creates it in its current state, as Kafka's
//! `MetadataImage.write` does: brokers as `RegisterBrokerRecord`s (with their fenced and
//! controlled-shutdown flags), topics as `TopicRecord` + one `PartitionRecord` per partition
//! (with its epochs) + its `ConfigRecord`s, broker and group config layers as `ConfigRecord`s,
//! the producer-id block as one `ProducerIdsRecord`, and (issue 19) every ACL as its
//! `AccessControlEntryRecord` (by id) and every SCRAM credential as its
//! `UserScramCredentialRecord` (by user, then mechanism).
//!
//! Invariants: pure; deterministic order (brokers by id, topics by name, partitions by id,
//! configs by key), so two nodes with equal images write equal snapshots.

use skiff_protocol::{
    BrokerEndpoint as WireEndpoint, ConfigRecord, PartitionRecord, ProducerIdsRecord,
    RegisterBrokerRecord, TopicRecord,
};
use uuid::Uuid;

use crate::image::{RESOURCE_BROKER, RESOURCE_GROUP, RESOURCE_TOPIC};
use crate::{MetadataImage, Record};

/// The records that rebuild `image` from an empty one (see the module docs).
pub fn image_records(image: &MetadataImage) -> Vec<Record> {
    let mut out = Vec::new();
    for b in image.brokers() {
        out.push(Record::RegisterBroker(RegisterBrokerRecord {
            broker_id: b.id,
            incarnation_id: b.incarnation_id,
            broker_epoch: b.epoch,
            end_points: b
                .endpoints
                .iter()
                .map(|e| WireEndpoint {
                    name: e.name.clone(),
                    host: e.host.clone(),
                    port: e.port,
                    security_protocol: e.security_protocol,
                })
                .collect(),
            rack: b.rack.clone(),
            fenced: b.fenced,
            in_controlled_shutdown: b.in_controlled_shutdown,
            ..RegisterBrokerRecord::default()
        }));
    }
    for t in image.topics.values() {
        let topic_id = Uuid::from_bytes(t.id);
        out.push(Record::Topic(TopicRecord {
            name: t.name.clone(),
            topic_id,
        }));
        for (partition_id, p) in image.partitions(&t.name) {
            out.push(Record::Partition(PartitionRecord {
                partition_id,
                topic_id,
                replicas: p.replicas.clone(),
                isr: p.isr.clone(),
                removing_replicas: p.removing_replicas.clone(),
                adding_replicas: p.adding_replicas.clone(),
                leader: p.leader,
                leader_recovery_state: p.leader_recovery_state,
                leader_epoch: p.leader_epoch,
                partition_epoch: p.partition_epoch,
                ..PartitionRecord::default()
            }));
        }
        push_configs(&mut out, RESOURCE_TOPIC, &t.name, &t.configs);
    }
    for (name, layer) in &image.broker_configs {
        push_configs(&mut out, RESOURCE_BROKER, name, layer);
    }
    for (name, layer) in &image.group_configs {
        push_configs(&mut out, RESOURCE_GROUP, name, layer);
    }
    if image.next_producer_id_block > 0 {
        out.push(Record::ProducerIds(ProducerIdsRecord {
            broker_id: -1,
            broker_epoch: -1,
            next_producer_id: image.next_producer_id_block,
        }));
    }
    for (id, b) in image.acls().iter() {
        out.push(Record::AccessControlEntry(crate::security::acl_record(
            *id, b,
        )));
    }
    for (user, creds) in image.scram_credentials().iter() {
        for c in creds.values() {
            out.push(Record::UserScramCredential(crate::security::scram_record(
                user, c,
            )));
        }
    }
    out
}

fn push_configs(
    out: &mut Vec<Record>,
    resource_type: i8,
    resource_name: &str,
    configs: &std::collections::BTreeMap<String, String>,
) {
    for (name, value) in configs {
        out.push(Record::Config(ConfigRecord {
            resource_type,
            resource_name: resource_name.to_string(),
            name: name.clone(),
            value: Some(value.clone()),
        }));
    }
}
