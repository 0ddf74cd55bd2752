//! A group's committed offsets: OffsetFetch and OffsetCommit at the group's coordinator, either
//! as a simple (non-member) client: generation -1 and member id "", which the coordinator
//! accepts only while the group has no members (Empty, or unknown); or as a member of a
//! generation ([`commit_as`], `skiff consume --group`).
//!
//! Mental model: committed offsets are keyed by `(topic, partition)`; -1 ("none committed") is
//! left out of what [`fetch_committed`] returns. [`commit`] sends all offsets in one request
//! and fails on the first partition the coordinator refused, saying why in a sentence.
//! Invariants: the coordinator is found for every call (FindCoordinator), and a
//! coordinator-moved or still-loading answer is retried a bounded number of times.

use std::collections::BTreeMap;
use std::time::Duration;

use skiff_protocol::{
    ApiKey, OffsetCommitRequest, OffsetCommitRequestPartition, OffsetCommitRequestTopic,
    OffsetFetchRequest, OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics,
};
use skiff_types::ErrorCode;

use crate::cli::CliError;
use crate::cli::client::{Cluster, call_as};

/// `(topic, partition) -> offset`.
pub type Offsets = BTreeMap<(String, i32), i64>;

/// How often a coordinator answer that means "ask again" is retried.
const COORDINATOR_RETRIES: u32 = 10;

fn coordinator_retriable(code: i16) -> bool {
    [
        ErrorCode::CoordinatorLoadInProgress,
        ErrorCode::CoordinatorNotAvailable,
        ErrorCode::NotCoordinator,
    ]
    .iter()
    .any(|e| e.code() == code)
}

fn backoff(attempt: u32) {
    std::thread::sleep(Duration::from_millis(100 * u64::from(attempt.min(5) + 1)));
}

/// The error for a group with members that a simple client tried to commit for.
pub fn not_empty(group: &str) -> CliError {
    CliError::Other(format!(
        "group {group} has active members: offsets can only be set while the group is Empty \
         (stop its consumers first; `skiff group describe {group}` lists them)"
    ))
}

/// The committed offsets of `group` (for `topics`, or all of them when `None`), -1s dropped.
pub fn fetch_committed(
    cluster: &mut Cluster,
    group: &str,
    topics: Option<&BTreeMap<String, Vec<i32>>>,
) -> Result<Offsets, CliError> {
    let mut attempt = 0;
    loop {
        let conn = cluster.coordinator(0, group)?;
        let v8 = conn.version(ApiKey::OffsetFetch).is_some_and(|v| v >= 8);
        // v1-7 name one group at the top level, v8+ a list of groups: the other stays default.
        let request = if v8 {
            OffsetFetchRequest {
                group_id: String::new(),
                topics: OffsetFetchRequest::default().topics,
                groups: vec![OffsetFetchRequestGroup {
                    group_id: group.into(),
                    topics: topics.map(|t| {
                        t.iter()
                            .map(|(name, parts)| OffsetFetchRequestTopics {
                                name: name.clone(),
                                partition_indexes: parts.clone(),
                            })
                            .collect()
                    }),
                    ..Default::default()
                }],
                require_stable: false,
            }
        } else {
            OffsetFetchRequest {
                group_id: group.into(),
                topics: topics.map(|t| {
                    t.iter()
                        .map(|(name, parts)| OffsetFetchRequestTopic {
                            name: name.clone(),
                            partition_indexes: parts.clone(),
                        })
                        .collect()
                }),
                groups: Vec::new(),
                require_stable: false,
            }
        };
        let r = call_as!(conn, request, OffsetFetch)?;
        // v8+ answers per group, older versions at the top level: the same fields in two
        // generated types, flattened by one macro.
        macro_rules! flat_rows {
            ($topics:expr) => {
                $topics
                    .iter()
                    .flat_map(|t| {
                        t.partitions.iter().map(|p| {
                            let name = t.name.clone();
                            (name, p.partition_index, p.committed_offset, p.error_code)
                        })
                    })
                    .collect()
            };
        }
        let (code, rows): (i16, Vec<(String, i32, i64, i16)>) = match r.groups.first() {
            Some(g) => (g.error_code, flat_rows!(g.topics)),
            None => (r.error_code, flat_rows!(r.topics)),
        };
        if coordinator_retriable(code) && attempt < COORDINATOR_RETRIES {
            attempt += 1;
            backoff(attempt);
            continue;
        }
        if let Some(e) =
            CliError::from_code(format!("reading the offsets of group {group}"), code, None)
        {
            return Err(e);
        }
        let mut out = Offsets::new();
        for (topic, partition, offset, code) in rows {
            let context = format!("reading the offset of group {group} for {topic}-{partition}");
            if let Some(e) = CliError::from_code(context, code, None) {
                return Err(e);
            }
            if offset >= 0 {
                out.insert((topic, partition), offset);
            }
        }
        return Ok(out);
    }
}

/// Commits `offsets` for `group` as a simple client (generation -1, member "").
pub fn commit(cluster: &mut Cluster, group: &str, offsets: &Offsets) -> Result<(), CliError> {
    commit_as(cluster, group, -1, "", offsets)
}

/// Commits `offsets` for `group` as member `member_id` of `generation` (-1 and "": a simple
/// client, which the coordinator accepts only while the group has no members).
pub fn commit_as(
    cluster: &mut Cluster,
    group: &str,
    generation: i32,
    member_id: &str,
    offsets: &Offsets,
) -> Result<(), CliError> {
    let mut by_topic: BTreeMap<&str, Vec<OffsetCommitRequestPartition>> = BTreeMap::new();
    for ((topic, partition), offset) in offsets {
        by_topic
            .entry(topic)
            .or_default()
            .push(OffsetCommitRequestPartition {
                partition_index: *partition,
                committed_offset: *offset,
                ..Default::default()
            });
    }
    let request = OffsetCommitRequest {
        group_id: group.into(),
        generation_id_or_member_epoch: generation,
        member_id: member_id.into(),
        topics: by_topic
            .into_iter()
            .map(|(name, partitions)| OffsetCommitRequestTopic {
                name: name.into(),
                partitions,
            })
            .collect(),
        ..Default::default()
    };
    let mut attempt = 0;
    loop {
        let conn = cluster.coordinator(0, group)?;
        let r = call_as!(conn, request.clone(), OffsetCommit)?;
        let mut retry = false;
        for t in &r.topics {
            for p in &t.partitions {
                if coordinator_retriable(p.error_code) && attempt < COORDINATOR_RETRIES {
                    retry = true;
                    continue;
                }
                if [
                    ErrorCode::UnknownMemberId,
                    ErrorCode::IllegalGeneration,
                    ErrorCode::RebalanceInProgress,
                ]
                .iter()
                .any(|e| e.code() == p.error_code)
                {
                    if generation >= 0 {
                        return Err(CliError::Other(format!(
                            "group {group} rebalanced before the offsets were committed \
                             (generation {generation} is over); the partitions' new owners \
                             start from the previous commit"
                        )));
                    }
                    return Err(not_empty(group));
                }
                let context = format!(
                    "committing offsets of group {group} for {}-{}",
                    t.name, p.partition_index
                );
                if let Some(e) = CliError::from_code(context, p.error_code, None) {
                    return Err(e);
                }
            }
        }
        if !retry {
            return Ok(());
        }
        attempt += 1;
        backoff(attempt);
    }
}
