//! Leaders and ISRs when a broker is fenced, unfenced or enters controlled shutdown (Kafka's
//! `ReplicationControlManager.generateLeaderAndIsrUpdates` with `PartitionChangeBuilder`,
//! metadata version 4.0-IV0: no ELR, clean elections only).
//!
//! Mental model: for each selected partition, the target ISR is the ISR without the broker
//! being removed; the leader is kept if it is in the target ISR and acceptable, else the first
//! replica (replica-list order) in the target ISR that is acceptable, else [`NO_LEADER`].
//! Acceptable = not the broker being removed, and either the broker being added or active
//! (registered, unfenced, not in controlled shutdown) in the image.
//!
//! Invariants (Kafka 4.0 without ELR): the ISR is never written empty (a lone replica that
//! is fenced stays in its ISR, the partition just loses its leader); a partition whose leader
//! and ISR would not change gets no record; any leader change (also to -1) bumps the leader
//! epoch on replay, every record the partition epoch. Fenced brokers are not re-added to an
//! ISR on unfence (the leader's AlterPartition does that). Partitions are visited by topic
//! name, then partition id, so the records are deterministic.
//!
//! Not modelled: unclean leader election (`unclean.leader.election.enable`), ELR,
//! reassignments in flight (`adding`/`removing` replicas are left as they are).

use skiff_protocol::PartitionChangeRecord;
use uuid::Uuid;

use crate::frame::Record;
use crate::image::{MetadataImage, NO_LEADER, NO_LEADER_CHANGE, PartitionInfo};

/// Registered, unfenced and not in controlled shutdown (Kafka's `ClusterControlManager.isActive`).
pub(crate) fn is_active(image: &MetadataImage, id: i32) -> bool {
    image
        .broker(id)
        .is_some_and(|b| !b.fenced && !b.in_controlled_shutdown)
}

/// The `PartitionChangeRecord`s for the partitions `select` picks, with `remove` leaving
/// the ISR and leadership and `add` acceptable as leader although not yet active.
pub(crate) fn leader_and_isr_updates(
    image: &MetadataImage,
    remove: Option<i32>,
    add: Option<i32>,
    select: impl Fn(&PartitionInfo) -> bool,
) -> Vec<Record> {
    let acceptable = |r: i32| Some(r) != remove && (Some(r) == add || is_active(image, r));
    let mut out = Vec::new();
    for t in image.topics.values() {
        let topic_id = Uuid::from_bytes(t.id);
        for (partition_id, p) in image.partitions(&t.name) {
            if !select(p) {
                continue;
            }
            let target_isr: Vec<i32> = p
                .isr
                .iter()
                .copied()
                .filter(|r| Some(*r) != remove)
                .collect();
            let leader = if target_isr.contains(&p.leader) && acceptable(p.leader) {
                p.leader
            } else {
                p.replicas
                    .iter()
                    .copied()
                    .find(|r| target_isr.contains(r) && acceptable(*r))
                    .unwrap_or(NO_LEADER)
            };
            let isr_changes = target_isr != p.isr && !target_isr.is_empty();
            if leader == p.leader && !isr_changes {
                continue;
            }
            out.push(Record::PartitionChange(PartitionChangeRecord {
                partition_id,
                topic_id,
                isr: isr_changes.then_some(target_isr),
                leader: if leader == p.leader {
                    NO_LEADER_CHANGE
                } else {
                    leader
                },
                ..PartitionChangeRecord::default()
            }));
        }
    }
    out
}

/// Whether `broker` leads any partition.
pub(crate) fn leads_any(image: &MetadataImage, broker: i32) -> bool {
    image
        .topics
        .values()
        .any(|t| image.partitions(&t.name).any(|(_, p)| p.leader == broker))
}
