//! Topic layout and offset lookups shared by `produce`, `consume` and `group`: which node leads
//! each partition of a topic ([`topic_info`], [`find_topic`]) and ListOffsets by timestamp
//! spec sent to each partition's leader ([`list_offsets`]; [`list_offsets_at`] is the one
//! request builder every ListOffsets of the CLI goes through, `topic describe` included).
//!
//! Mental model: the CLI asks Metadata for one topic, keeps its id (Fetch v13+ names topics by
//! id) and its partitions' leaders, and groups every per-partition request by leader node so a
//! command sends one request per node. ListOffsets timestamps are Kafka's: -2 earliest, -1
//! latest, a time in ms = the first offset whose timestamp is at or after it (-1 answered when
//! there is none).
//! Invariants: a partition without a leader is an error naming the partition (never silently
//! skipped); a per-partition error code becomes a [`CliError`] naming topic and partition.

use std::collections::BTreeMap;

use skiff_protocol::{
    ApiKey, ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic, MetadataResponseTopic,
};
use skiff_types::ErrorCode;

use crate::cli::CliError;
use crate::cli::client::{Cluster, call_as};

/// ListOffsets timestamp: the log start offset.
pub const EARLIEST: i64 = -2;
/// ListOffsets timestamp: the high watermark (or the LSO at read_committed).
pub const LATEST: i64 = -1;

/// One partition's leader as Metadata describes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartitionInfo {
    pub leader: i32,
    pub leader_epoch: i32,
}

/// A topic's id and partitions.
#[derive(Clone, Debug)]
pub struct TopicInfo {
    pub name: String,
    /// The Metadata entry (its `topic_id` is what Fetch v13+ names the topic by).
    pub meta: MetadataResponseTopic,
    pub partitions: BTreeMap<i32, PartitionInfo>,
}

impl TopicInfo {
    /// The leader of `partition`, or an error saying it has none / does not exist.
    pub fn leader(&self, partition: i32) -> Result<i32, CliError> {
        match self.partitions.get(&partition) {
            None => Err(CliError::Usage(format!(
                "topic {} has no partition {partition} (it has {})",
                self.name,
                self.partitions.len()
            ))),
            Some(p) if p.leader < 0 => Err(CliError::Other(format!(
                "partition {}-{partition} has no leader right now (see `skiff topic describe {}`)",
                self.name, self.name
            ))),
            Some(p) => Ok(p.leader),
        }
    }
}

/// The error for a topic the cluster does not have.
pub fn unknown_topic(topic: &str) -> CliError {
    CliError::Other(format!(
        "topic {topic} does not exist (create it with `skiff topic create {topic}`, \
         or list topics with `skiff topic list`)"
    ))
}

/// Metadata of `topic` (no auto-creation); an unknown topic is an error saying how to create it.
pub fn topic_info(cluster: &mut Cluster, topic: &str) -> Result<TopicInfo, CliError> {
    find_topic(cluster, topic)?.ok_or_else(|| unknown_topic(topic))
}

/// Metadata of `topic` (no auto-creation): `None` when the cluster does not have it; any other
/// failure (connection, a topic error other than UNKNOWN_TOPIC_OR_PARTITION) is an error.
pub fn find_topic(cluster: &mut Cluster, topic: &str) -> Result<Option<TopicInfo>, CliError> {
    let response = cluster.metadata(Some(&[topic.to_owned()]))?;
    let Some(meta) = response
        .topics
        .into_iter()
        .find(|t| t.name.as_deref() == Some(topic))
    else {
        return Ok(None);
    };
    if meta.error_code == ErrorCode::UnknownTopicOrPartition.code() {
        return Ok(None);
    }
    if let Some(e) = CliError::from_code(
        format!("reading metadata of {topic}"),
        meta.error_code,
        None,
    ) {
        return Err(e);
    }
    let partitions = meta
        .partitions
        .iter()
        .map(|p| {
            (
                p.partition_index,
                PartitionInfo {
                    leader: p.leader_id,
                    leader_epoch: p.leader_epoch,
                },
            )
        })
        .collect();
    Ok(Some(TopicInfo {
        name: topic.to_owned(),
        meta,
        partitions,
    }))
}

/// Groups `partitions` by their leader.
pub fn by_leader(
    topic: &TopicInfo,
    partitions: impl IntoIterator<Item = i32>,
) -> Result<BTreeMap<i32, Vec<i32>>, CliError> {
    let mut out: BTreeMap<i32, Vec<i32>> = BTreeMap::new();
    for p in partitions {
        out.entry(topic.leader(p)?).or_default().push(p);
    }
    Ok(out)
}

/// One ListOffsets answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OffsetAnswer {
    /// -1 when a timestamp lookup found no record at or after the time.
    pub offset: i64,
    pub timestamp: i64,
}

/// One ListOffsets request to `leader` for `(partition, timestamp)` pairs of `topic`: each
/// asked partition's answer, or its own error (a partition the leader left out is an error
/// too). `Err` only when the request itself failed (connection, protocol). This is the one
/// place the CLI builds ListOffsets; callers decide whether a partition error is fatal
/// ([`list_offsets`]) or shown next to the partition (`topic describe`).
/// `isolation`: 0 read_uncommitted, 1 read_committed (LATEST is then the LSO).
pub fn list_offsets_at(
    cluster: &mut Cluster,
    leader: i32,
    topic: &str,
    specs: &[(i32, i64)],
    isolation: i8,
) -> Result<BTreeMap<i32, Result<OffsetAnswer, CliError>>, CliError> {
    let timeout_ms = i32::try_from(cluster.timeout().as_millis()).unwrap_or(i32::MAX);
    let conn = cluster.node(leader)?;
    let v10 = conn.version(ApiKey::ListOffsets).is_some_and(|v| v >= 10);
    let request = ListOffsetsRequest {
        replica_id: -1,
        isolation_level: isolation,
        timeout_ms: if v10 { timeout_ms } else { 0 },
        topics: vec![ListOffsetsTopic {
            name: topic.to_owned(),
            partitions: specs
                .iter()
                .map(|&(partition_index, timestamp)| ListOffsetsPartition {
                    partition_index,
                    timestamp,
                    ..Default::default()
                })
                .collect(),
        }],
    };
    let response = call_as!(conn, request, ListOffsets)?;
    let mut answered = BTreeMap::new();
    for p in response
        .topics
        .into_iter()
        .filter(|t| t.name == topic)
        .flat_map(|t| t.partitions)
    {
        let context = format!(
            "listing offsets of {topic}-{} at leader {leader}",
            p.partition_index
        );
        let answer = match CliError::from_code(context, p.error_code, None) {
            Some(e) => Err(e),
            None => Ok(OffsetAnswer {
                offset: p.offset,
                timestamp: p.timestamp,
            }),
        };
        answered.insert(p.partition_index, answer);
    }
    Ok(specs
        .iter()
        .map(|&(p, _)| {
            let answer = answered.remove(&p).unwrap_or_else(|| {
                Err(CliError::Other(format!(
                    "ListOffsets: leader {leader} answered nothing for {topic}-{p} \
                     (retry; see `skiff topic describe {topic}`)"
                )))
            });
            (p, answer)
        })
        .collect())
}

/// ListOffsets for `(partition, timestamp)` pairs of `topic`, one request per leader; the
/// first partition error fails the whole lookup.
/// `isolation`: 0 read_uncommitted, 1 read_committed (LATEST is then the LSO).
pub fn list_offsets(
    cluster: &mut Cluster,
    topic: &TopicInfo,
    specs: &[(i32, i64)],
    isolation: i8,
) -> Result<BTreeMap<i32, OffsetAnswer>, CliError> {
    let wanted: BTreeMap<i32, i64> = specs.iter().copied().collect();
    let mut out = BTreeMap::new();
    for (leader, parts) in by_leader(topic, wanted.keys().copied())? {
        let specs: Vec<(i32, i64)> = parts
            .iter()
            .map(|p| (*p, wanted.get(p).copied().unwrap_or(LATEST)))
            .collect();
        for (p, answer) in list_offsets_at(cluster, leader, &topic.name, &specs, isolation)? {
            out.insert(p, answer?);
        }
    }
    Ok(out)
}

/// Earliest and latest offsets of `partitions`: `partition -> (earliest, latest)`.
pub fn watermarks(
    cluster: &mut Cluster,
    topic: &TopicInfo,
    partitions: &[i32],
    isolation: i8,
) -> Result<BTreeMap<i32, (i64, i64)>, CliError> {
    let start: Vec<(i32, i64)> = partitions.iter().map(|p| (*p, EARLIEST)).collect();
    let end: Vec<(i32, i64)> = partitions.iter().map(|p| (*p, LATEST)).collect();
    let start = list_offsets(cluster, topic, &start, isolation)?;
    let end = list_offsets(cluster, topic, &end, isolation)?;
    Ok(partitions
        .iter()
        .filter_map(|p| Some((*p, (start.get(p)?.offset, end.get(p)?.offset))))
        .collect())
}
