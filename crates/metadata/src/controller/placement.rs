//! Replica placement for new partitions (CreateTopic, CreatePartitions).
//!
//! Mental model: Kafka's `StripedReplicaPlacer` for a cluster without racks. The usable
//! brokers are the registered ones not in controlled shutdown, split into two lists sorted by
//! id: unfenced `U` and fenced `F`. New partition `k` (0-based within the request) gets
//! `U[(s+k) % |U|], U[(s+k+1) % |U|], ...` (at most `|U|` of them), then, when the replication
//! factor exceeds `|U|`, fenced brokers `F[(s+k) % |F|], ...` as followers. `s` is
//! [`crate::Ctx::placement_start`], the caller's random draw. The partition's ISR is its active
//! replicas (registered, unfenced, not in controlled shutdown), its leader the first of them.
//!
//! Differences from Kafka's placer: no racks (all brokers form one rack); one start offset
//! for both lists instead of one random draw each; no reshuffle after `|U|` partitions (Kafka
//! shuffles the lists again, Skiff keeps rotating), so placement is a pure function of
//! `(image, start)`.
//!
//! Manual assignments are checked as Kafka's `validateManualPartitionAssignment` (the broker
//! ids in sorted order: unregistered, then duplicate; then a replica count differing from the
//! earlier partitions'), with Kafka's messages; fenced brokers are allowed but left out of the
//! ISR, and a partition with no active replica is refused.
//!
//! Invariants: every placed partition has a non-empty ISR whose first member is the leader;
//! no replica list holds a broker twice; an error produces no partition.

use skiff_protocol::PartitionRecord;
use uuid::Uuid;

use crate::MetadataError;
use crate::controller::Ctx;
use crate::controller::leadership::is_active;
use crate::image::MetadataImage;

/// How new partitions get their replicas.
pub(crate) enum Assignment<'a> {
    /// Placed over the usable brokers. `wrap_errors`: CreateTopic prefixes the placer's
    /// message with "Unable to replicate the partition N time(s): " (Kafka's RCM does; its
    /// CreatePartitions does not).
    Auto {
        replication_factor: i16,
        wrap_errors: bool,
    },
    /// One replica list per new partition. `replication_factor`: the count every list must
    /// have (CreatePartitions: the topic's); `None` = the first list's (CreateTopic).
    Manual {
        replicas: &'a [Vec<i32>],
        replication_factor: Option<usize>,
    },
}

/// The `PartitionRecord`s of partitions `first..first+count` of `topic_id`.
pub(crate) fn place_new_partitions(
    image: &MetadataImage,
    ctx: &Ctx<'_>,
    topic_id: Uuid,
    first: i32,
    count: i32,
    assignment: &Assignment<'_>,
) -> Result<Vec<PartitionRecord>, MetadataError> {
    let lists: Vec<Vec<i32>> = match assignment {
        Assignment::Auto {
            replication_factor,
            wrap_errors,
        } => place(image, ctx.placement_start, count, *replication_factor).map_err(|m| {
            MetadataError::InvalidReplicationFactor(if *wrap_errors {
                format!("Unable to replicate the partition {replication_factor} time(s): {m}")
            } else {
                m
            })
        })?,
        Assignment::Manual {
            replicas,
            replication_factor,
        } => {
            let mut rf = *replication_factor;
            for (i, r) in replicas.iter().enumerate() {
                validate_manual(image, r, rf)?;
                rf = Some(r.len());
                if !r.iter().any(|b| is_active(image, *b)) {
                    return Err(MetadataError::InvalidReplicaAssignment(format!(
                        "All brokers specified in the manual partition assignment for partition {} are fenced or in controlled shutdown.",
                        i64::from(first) + i as i64
                    )));
                }
            }
            replicas.to_vec()
        }
    };
    let mut out = Vec::with_capacity(lists.len());
    for (partition_id, replicas) in (first..).zip(lists) {
        let isr: Vec<i32> = replicas
            .iter()
            .copied()
            .filter(|b| is_active(image, *b))
            .collect();
        let Some(&leader) = isr.first() else {
            return Err(MetadataError::InvalidReplicationFactor(format!(
                "Unable to replicate the partition {} time(s): All brokers are currently fenced or in controlled shutdown.",
                replicas.len()
            )));
        };
        out.push(PartitionRecord {
            partition_id,
            topic_id,
            replicas,
            isr,
            leader,
            leader_epoch: 0,
            partition_epoch: 0,
            ..PartitionRecord::default()
        });
    }
    Ok(out)
}

/// `count` replica lists of `rf` brokers each (module docs), or the placer's message.
pub(crate) fn place(
    image: &MetadataImage,
    start: usize,
    count: i32,
    rf: i16,
) -> Result<Vec<Vec<i32>>, String> {
    let usable = image.brokers().filter(|b| !b.in_controlled_shutdown);
    let (fenced, unfenced): (Vec<_>, Vec<_>) = usable.partition(|b| b.fenced);
    let unfenced: Vec<i32> = unfenced.iter().map(|b| b.id).collect();
    let fenced: Vec<i32> = fenced.iter().map(|b| b.id).collect();
    if rf <= 0 {
        return Err(format!(
            "Invalid replication factor {rf}: the replication factor must be positive."
        ));
    }
    if unfenced.is_empty() {
        return Err("All brokers are currently fenced.".into());
    }
    let total = unfenced.len() + fenced.len();
    let rf = rf as usize;
    if rf > total {
        return Err(format!(
            "The target replication factor of {rf} cannot be reached because only {total} broker(s) are registered."
        ));
    }
    let rotate = |list: &[i32], from: usize, n: usize| -> Vec<i32> {
        (0..n).map(|i| list[(from + i) % list.len()]).collect()
    };
    let lists = (0..count.max(0) as usize)
        .map(|k| {
            let from = start.wrapping_add(k);
            let lead = rf.min(unfenced.len());
            let mut r = rotate(&unfenced, from % unfenced.len(), lead);
            if rf > lead {
                r.extend(rotate(&fenced, from % fenced.len(), rf - lead));
            }
            r
        })
        .collect();
    Ok(lists)
}

fn validate_manual(
    image: &MetadataImage,
    replicas: &[i32],
    rf: Option<usize>,
) -> Result<(), MetadataError> {
    let bad = |m: String| Err(MetadataError::InvalidReplicaAssignment(m));
    if replicas.is_empty() {
        return bad("The manual partition assignment includes an empty replica list.".into());
    }
    let mut sorted = replicas.to_vec();
    sorted.sort_unstable();
    let mut prev = None;
    for id in sorted {
        if image.broker(id).is_none() {
            return bad(format!(
                "The manual partition assignment includes broker {id}, but no such broker is registered."
            ));
        }
        if prev == Some(id) {
            return bad(format!(
                "The manual partition assignment includes the broker {id} more than once."
            ));
        }
        prev = Some(id);
    }
    if let Some(rf) = rf
        && replicas.len() != rf
    {
        return bad(format!(
            "The manual partition assignment includes a partition with {} replica(s), but this is not consistent with previous partitions, which have {rf} replica(s).",
            replicas.len()
        ));
    }
    Ok(())
}
