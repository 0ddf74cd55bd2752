//! `skiff group describe GROUP`: state, members with their assignments, and per partition the
//! committed offset, the end offset (high watermark) and the lag.
//!
//! Mental model: DescribeGroups (members, decoded `consumer` assignments) and OffsetFetch (all
//! committed offsets) at the coordinator, then ListOffsets latest at each partition's leader.
//! The partitions listed are those with a committed offset plus those assigned to a member.
//! Invariants: `lag = end_offset - committed_offset` exactly, reported only when both are
//! known (a partition assigned but never committed has `committed_offset: null, lag: null`).

use std::collections::{BTreeMap, BTreeSet};
use std::process::ExitCode;

use bytes::Bytes;
use serde::Serialize;
use skiff_protocol::{
    ApiKey, Codec, ConsumerGroupDescribeRequest, ConsumerProtocolAssignment, DescribeGroupsRequest,
};
use skiff_types::ErrorCode;

use super::offsets;
use crate::cli::client::{Cluster, Conn, call_as};
use crate::cli::consume::meta;
use crate::cli::output::{emit, table};
use crate::cli::{CliError, CliResult, ClientArgs};

/// A member's assignment for one topic.
#[derive(Debug, Serialize, Clone, PartialEq, Eq)]
pub struct TopicAssignment {
    pub topic: String,
    pub partitions: Vec<i32>,
}

/// One member of the group.
#[derive(Debug, Serialize)]
pub struct Member {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub assignments: Vec<TopicAssignment>,
}

/// One partition's offsets.
#[derive(Debug, Serialize)]
pub struct PartitionLag {
    pub topic: String,
    pub partition: i32,
    pub committed_offset: Option<i64>,
    pub end_offset: Option<i64>,
    pub lag: Option<i64>,
    /// The member the partition is assigned to, if any.
    pub member_id: Option<String>,
    pub client_id: Option<String>,
    pub client_host: Option<String>,
}

/// `group describe`'s document.
#[derive(Debug, Serialize)]
pub struct GroupDescription {
    pub group: String,
    pub state: String,
    pub protocol_type: String,
    pub protocol: String,
    pub coordinator: i32,
    pub members: Vec<Member>,
    pub partitions: Vec<PartitionLag>,
    /// Sum of the known lags.
    pub total_lag: i64,
}

/// A `consumer` protocol assignment blob by topic; empty for an empty or foreign blob.
pub fn decode_assignment(blob: &Bytes) -> Vec<TopicAssignment> {
    let Some((version, mut buf)) = crate::cli::consume::member::split_version(blob) else {
        return Vec::new();
    };
    let max = <ConsumerProtocolAssignment as Codec>::MAX_VERSION;
    let Ok(a) = ConsumerProtocolAssignment::decode(&mut buf, version.min(max)) else {
        return Vec::new();
    };
    let mut by_topic: BTreeMap<String, BTreeSet<i32>> = BTreeMap::new();
    for tp in a.assigned_partitions {
        by_topic.entry(tp.topic).or_default().extend(tp.partitions);
    }
    by_topic
        .into_iter()
        .map(|(topic, ps)| TopicAssignment {
            topic,
            partitions: ps.into_iter().collect(),
        })
        .collect()
}

/// A group's state and members.
#[derive(Debug)]
pub struct GroupInfo {
    pub coordinator: i32,
    /// As the coordinator spells it: `Empty`, `Stable`, ... (classic), `empty`, `stable`, ...
    /// (KIP-848 `consumer` groups); `Dead` for a group that does not exist.
    pub state: String,
    pub protocol_type: String,
    /// The classic assignor, or the KIP-848 server assignor.
    pub protocol: String,
    pub members: Vec<Member>,
}

impl GroupInfo {
    /// Whether a simple client (generation -1) may commit: no members, and Empty or unknown.
    pub fn may_commit(&self) -> bool {
        self.members.is_empty()
            && ["empty", "dead", ""].contains(&self.state.to_ascii_lowercase().as_str())
    }
}

/// A partition's lag as Kafka's `kafka-consumer-groups` reports it: `end - committed` (end =
/// the high watermark), unknown when either side is. A commit past the end (the log was
/// truncated or recreated) shows as a negative lag rather than hiding it.
pub fn lag(committed: Option<i64>, end: Option<i64>) -> Option<i64> {
    committed.zip(end).map(|(c, e)| e.saturating_sub(c))
}

/// The group's state and members: DescribeGroups, and for a group it does not know (Kafka 4
/// answers GROUP_ID_NOT_FOUND for KIP-848 `consumer` groups) ConsumerGroupDescribe where the
/// broker has it. An unknown group is `Dead` with no members.
pub fn describe_group(cluster: &mut Cluster, group: &str) -> Result<GroupInfo, CliError> {
    let coordinator = cluster.coordinator_id(0, group)?;
    let conn = cluster.coordinator(0, group)?;
    let request = DescribeGroupsRequest {
        groups: vec![group.into()],
        include_authorized_operations: false,
    };
    let r = call_as!(conn, request, DescribeGroups)?;
    let Some(g) = r.groups.into_iter().find(|g| g.group_id == group) else {
        return Err(CliError::Other(format!(
            "DescribeGroups answered nothing for {group}"
        )));
    };
    if g.error_code == ErrorCode::GroupIdNotFound.code() {
        if let Some(info) = describe_consumer_group(conn, coordinator, group)? {
            return Ok(info);
        }
        return Ok(GroupInfo {
            coordinator,
            state: "Dead".into(),
            protocol_type: String::new(),
            protocol: String::new(),
            members: Vec::new(),
        });
    }
    if let Some(e) = CliError::from_code(
        format!("describing group {group}"),
        g.error_code,
        g.error_message,
    ) {
        return Err(e);
    }
    let consumer = g.protocol_type == "consumer";
    let members = g
        .members
        .into_iter()
        .map(|m| Member {
            assignments: if consumer {
                decode_assignment(&m.member_assignment)
            } else {
                Vec::new()
            },
            member_id: m.member_id,
            group_instance_id: m.group_instance_id,
            client_id: m.client_id,
            client_host: m.client_host,
        })
        .collect();
    Ok(GroupInfo {
        coordinator,
        state: g.group_state,
        protocol_type: g.protocol_type,
        protocol: g.protocol_data,
        members,
    })
}

/// ConsumerGroupDescribe (KIP-848) of `group`; `None` when the broker lacks the API or does
/// not know the group either.
fn describe_consumer_group(
    conn: &mut Conn,
    coordinator: i32,
    group: &str,
) -> Result<Option<GroupInfo>, CliError> {
    if conn.version(ApiKey::ConsumerGroupDescribe).is_none() {
        return Ok(None);
    }
    let request = ConsumerGroupDescribeRequest {
        group_ids: vec![group.into()],
        include_authorized_operations: false,
    };
    let r = call_as!(conn, request, ConsumerGroupDescribe)?;
    let Some(g) = r.groups.into_iter().find(|g| g.group_id == group) else {
        return Ok(None);
    };
    if g.error_code != 0 {
        return Ok(None);
    }
    let members = g
        .members
        .into_iter()
        .map(|m| Member {
            assignments: m
                .assignment
                .topic_partitions
                .into_iter()
                .map(|tp| {
                    let mut partitions = tp.partitions;
                    partitions.sort_unstable();
                    TopicAssignment {
                        topic: tp.topic_name,
                        partitions,
                    }
                })
                .collect(),
            member_id: m.member_id,
            group_instance_id: m.instance_id,
            client_id: m.client_id,
            client_host: m.client_host,
        })
        .collect();
    Ok(Some(GroupInfo {
        coordinator,
        state: g.group_state,
        protocol_type: "consumer".into(),
        protocol: g.assignor_name,
        members,
    }))
}

/// End offsets (high watermarks) of every `(topic, partition)` in `wanted`; topics that no
/// longer exist are left out (any other failure, e.g. an unreachable broker, is an error,
/// never a silently missing lag).
pub fn end_offsets(
    cluster: &mut Cluster,
    wanted: &BTreeSet<(String, i32)>,
) -> Result<BTreeMap<(String, i32), i64>, CliError> {
    let mut by_topic: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for (t, p) in wanted {
        by_topic.entry(t).or_default().push(*p);
    }
    let mut out = BTreeMap::new();
    for (topic, parts) in by_topic {
        let Some(info) = meta::find_topic(cluster, topic)? else {
            continue; // deleted since the commit: no end offset
        };
        let parts: Vec<i32> = parts
            .into_iter()
            .filter(|p| info.partitions.contains_key(p))
            .collect();
        let specs: Vec<(i32, i64)> = parts.iter().map(|p| (*p, meta::LATEST)).collect();
        for (p, a) in meta::list_offsets(cluster, &info, &specs, 0)? {
            out.insert((topic.to_owned(), p), a.offset);
        }
    }
    Ok(out)
}

pub fn run(group: &str, client: &ClientArgs) -> CliResult {
    let mut cluster = Cluster::connect(client)?;
    let GroupInfo {
        coordinator,
        state,
        protocol_type,
        protocol,
        members,
    } = describe_group(&mut cluster, group)?;
    let committed = offsets::fetch_committed(&mut cluster, group, None)?;
    if state == "Dead" && committed.is_empty() && members.is_empty() {
        return Err(CliError::Other(format!(
            "group {group} does not exist (see `skiff group list`)"
        )));
    }
    let mut owner: BTreeMap<(String, i32), &Member> = BTreeMap::new();
    for m in &members {
        for a in &m.assignments {
            for p in &a.partitions {
                owner.insert((a.topic.clone(), *p), m);
            }
        }
    }
    let wanted: BTreeSet<(String, i32)> = committed.keys().chain(owner.keys()).cloned().collect();
    let ends = end_offsets(&mut cluster, &wanted)?;
    let partitions: Vec<PartitionLag> = wanted
        .iter()
        .map(|key| {
            let committed_offset = committed.get(key).copied();
            let end_offset = ends.get(key).copied();
            let m = owner.get(key);
            PartitionLag {
                topic: key.0.clone(),
                partition: key.1,
                committed_offset,
                end_offset,
                lag: lag(committed_offset, end_offset),
                member_id: m.map(|m| m.member_id.clone()),
                client_id: m.map(|m| m.client_id.clone()),
                client_host: m.map(|m| m.client_host.clone()),
            }
        })
        .collect();
    let total_lag = partitions.iter().filter_map(|p| p.lag).sum();
    let description = GroupDescription {
        group: group.to_owned(),
        state,
        protocol_type,
        protocol,
        coordinator,
        members,
        partitions,
        total_lag,
    };
    emit(client.format, &description, render)?;
    Ok(ExitCode::SUCCESS)
}

fn render(d: &GroupDescription) -> String {
    let opt = |v: Option<i64>| v.map_or_else(|| "-".to_owned(), |v| v.to_string());
    let mut out = format!(
        "GROUP        {}\nSTATE        {}\nCOORDINATOR  {}\nPROTOCOL     {} {}\nMEMBERS      {}\nTOTAL-LAG    {}\n\n",
        d.group,
        d.state,
        d.coordinator,
        d.protocol_type,
        d.protocol,
        d.members.len(),
        d.total_lag
    );
    let rows: Vec<Vec<String>> = d
        .partitions
        .iter()
        .map(|p| {
            vec![
                p.topic.clone(),
                p.partition.to_string(),
                opt(p.committed_offset),
                opt(p.end_offset),
                opt(p.lag),
                p.member_id.clone().unwrap_or_else(|| "-".into()),
                p.client_id.clone().unwrap_or_else(|| "-".into()),
                p.client_host.clone().unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    out.push_str(&table(
        &[
            "TOPIC",
            "PARTITION",
            "CURRENT-OFFSET",
            "LOG-END-OFFSET",
            "LAG",
            "MEMBER-ID",
            "CLIENT-ID",
            "HOST",
        ],
        &rows,
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lag_is_end_minus_committed_when_both_are_known() {
        let cases: &[(Option<i64>, Option<i64>, Option<i64>)] = &[
            (Some(3), Some(10), Some(7)),
            (Some(10), Some(10), Some(0)),
            (Some(0), Some(0), Some(0)),
            (None, Some(10), None),
            (Some(3), None, None),
            (None, None, None),
            (Some(12), Some(10), Some(-2)),
        ];
        for &(committed, end, want) in cases {
            assert_eq!(lag(committed, end), want, "{committed:?} {end:?}");
        }
    }

    #[test]
    fn only_an_empty_or_unknown_group_without_members_takes_simple_commits() {
        let member = || Member {
            member_id: "m".into(),
            group_instance_id: None,
            client_id: "c".into(),
            client_host: "/127.0.0.1".into(),
            assignments: Vec::new(),
        };
        let cases: &[(&str, usize, bool)] = &[
            ("Empty", 0, true),
            ("empty", 0, true),
            ("Dead", 0, true),
            ("", 0, true),
            ("Stable", 0, false),
            ("stable", 1, false),
            ("PreparingRebalance", 0, false),
            ("CompletingRebalance", 1, false),
            ("assigning", 1, false),
            ("reconciling", 1, false),
            ("Empty", 1, false),
        ];
        for &(state, members, want) in cases {
            let info = GroupInfo {
                coordinator: 1,
                state: state.into(),
                protocol_type: "consumer".into(),
                protocol: "range".into(),
                members: (0..members).map(|_| member()).collect(),
            };
            assert_eq!(info.may_commit(), want, "{state} with {members} members");
        }
    }
}
