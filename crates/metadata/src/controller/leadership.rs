//! Leaders and ISRs when a broker is fenced, unfenced or enters controlled shutdown (Kafka's
//! `ReplicationControlManager.generateLeaderAndIsrUpdates` with `PartitionChangeBuilder`,
//! metadata version 4.0-IV0: no ELR).
//!
//! Mental model: for each selected partition, the target ISR is the ISR without the broker
//! being removed, and the partition holds an ONLINE election (`election.rs`), or an UNCLEAN
//! one when its topic's `unclean.leader.election.enable` is true: the leader is kept if it is
//! in the target ISR and acceptable, else the first replica (replica-list order) in the target
//! ISR that is acceptable, else (unclean only) the first acceptable replica outside the ISR,
//! which then becomes the whole ISR with the leader recovery state RECOVERING, else
//! [`NO_LEADER`]. Acceptable = not the broker being removed, and either the broker being added
//! or active (registered, unfenced, not in controlled shutdown) in the image.
//!
//! Invariants (Kafka 4.0 without ELR): the ISR is never written empty (a lone replica that
//! is fenced stays in its ISR, the partition just loses its leader); a partition whose leader
//! and ISR would not change gets no record; any leader change (also to -1) bumps the leader
//! epoch on replay, every record the partition epoch. Fenced brokers are not re-added to an
//! ISR on unfence (the leader's AlterPartition does that). Partitions are visited by topic
//! name, then partition id, so the records are deterministic.
//!
//! Not modelled: ELR, reassignments in flight (`adding`/`removing` replicas are left as they
//! are).

use crate::controller::election::{Election, ElectionConfig, partition_change, unclean_enabled};
use crate::frame::Record;
use crate::image::{MetadataImage, PartitionInfo};

/// Registered, unfenced and not in controlled shutdown (Kafka's `ClusterControlManager.isActive`).
pub(crate) fn is_active(image: &MetadataImage, id: i32) -> bool {
    image
        .broker(id)
        .is_some_and(|b| !b.fenced && !b.in_controlled_shutdown)
}

/// The `PartitionChangeRecord`s for the partitions `select` picks, with `remove` leaving
/// the ISR and leadership and `add` acceptable as leader although not yet active; `cfg`
/// decides (with the image's configs) which topics allow unclean elections.
pub(crate) fn leader_and_isr_updates(
    image: &MetadataImage,
    remove: Option<i32>,
    add: Option<i32>,
    cfg: &ElectionConfig,
    select: impl Fn(&PartitionInfo) -> bool,
) -> Vec<Record> {
    let acceptable = |r: i32| Some(r) != remove && (Some(r) == add || is_active(image, r));
    let mut out = Vec::new();
    for t in image.topics.values() {
        let election = if unclean_enabled(image, t, cfg) {
            Election::Unclean
        } else {
            Election::Online
        };
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
            if let Some(r) =
                partition_change(t.id, partition_id, p, &target_isr, election, &acceptable)
            {
                out.push(Record::PartitionChange(r));
            }
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
