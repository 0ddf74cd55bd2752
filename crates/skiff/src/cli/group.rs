//! `skiff group list|describe|seek|delete`: consumer groups as an operator sees them.
//!
//! Mental model: groups live on their coordinators. `list` asks every broker (ListGroups) and
//! merges; `describe` asks the group's coordinator for its members (DescribeGroups) and
//! committed offsets (OffsetFetch) and each partition's leader for its end offset (ListOffsets)
//! to compute lag = end - committed; `seek` computes new offsets per partition (a position in
//! the log, or `shift:±N` from the committed offset) and shows a dry-run table unless
//! `--execute`, which commits them as a simple client (only possible while the group is
//! Empty); `delete` sends DeleteGroups to each group's coordinator.
//! Invariants: `seek --execute` refuses a group with members before committing anything;
//! `delete` exits non-zero when any group was not deleted (the table says which and why).

pub mod describe;
pub mod offsets;
pub mod seek;

use std::collections::BTreeMap;
use std::process::ExitCode;

use serde::Serialize;
use skiff_protocol::{ApiKey, DeleteGroupsRequest, ListGroupsRequest};
use skiff_types::ErrorCode;

use super::client::{Cluster, call_as};
use super::output::{emit, table};
use super::{CliError, CliResult, ClientArgs};

#[derive(clap::Subcommand, Debug)]
pub enum GroupCommand {
    /// List every group of the cluster (all states, Empty and Dead included).
    List {
        #[command(flatten)]
        client: ClientArgs,
    },
    /// A group's state, members and per-partition committed offset, end offset and lag.
    Describe {
        /// The group id.
        group: String,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Move a group's committed offsets (a dry-run table unless --execute; the group must be
    /// Empty to execute).
    Seek(seek::SeekArgs),
    /// Delete groups (they must have no members).
    Delete {
        /// The group ids.
        #[arg(required = true)]
        groups: Vec<String>,
        #[command(flatten)]
        client: ClientArgs,
    },
}

pub fn run(cmd: GroupCommand) -> CliResult {
    match cmd {
        GroupCommand::List { client } => list(&client),
        GroupCommand::Describe { group, client } => describe::run(&group, &client),
        GroupCommand::Seek(args) => seek::run(&args),
        GroupCommand::Delete { groups, client } => delete(&groups, &client),
    }
}

/// One row of `group list`.
#[derive(Debug, Serialize)]
pub struct ListedGroup {
    pub group: String,
    /// Empty when the broker is older than ListGroups v4.
    pub state: String,
    pub protocol_type: String,
    /// `classic` or `consumer` (KIP-848); empty before ListGroups v5.
    pub group_type: String,
    pub coordinator: i32,
}

#[derive(Debug, Serialize)]
pub struct GroupList {
    pub groups: Vec<ListedGroup>,
}

fn list(client: &ClientArgs) -> CliResult {
    let mut cluster = Cluster::connect(client)?;
    let ids: Vec<i32> = cluster.nodes().iter().map(|n| n.id).collect();
    let mut groups = BTreeMap::new();
    for id in ids {
        let conn = cluster.node(id)?;
        let r = call_as!(conn, ListGroupsRequest::default(), ListGroups)?;
        if let Some(e) =
            CliError::from_code(format!("listing groups on node {id}"), r.error_code, None)
        {
            return Err(e);
        }
        for g in r.groups {
            groups.insert(
                g.group_id.clone(),
                ListedGroup {
                    group: g.group_id,
                    state: g.group_state,
                    protocol_type: g.protocol_type,
                    group_type: g.group_type,
                    coordinator: id,
                },
            );
        }
    }
    let result = GroupList {
        groups: groups.into_values().collect(),
    };
    emit(client.format, &result, |r| {
        let rows: Vec<Vec<String>> = r
            .groups
            .iter()
            .map(|g| {
                vec![
                    g.group.clone(),
                    g.state.clone(),
                    g.protocol_type.clone(),
                    g.group_type.clone(),
                    g.coordinator.to_string(),
                ]
            })
            .collect();
        table(
            &["GROUP", "STATE", "PROTOCOL-TYPE", "TYPE", "COORDINATOR"],
            &rows,
        )
    })?;
    Ok(ExitCode::SUCCESS)
}

/// One row of `group delete`.
#[derive(Debug, Serialize)]
pub struct Deleted {
    pub group: String,
    pub deleted: bool,
    pub error: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct DeleteResult {
    pub groups: Vec<Deleted>,
}

/// A sentence for a DeleteGroups error code.
fn delete_error(group: &str, code: i16) -> String {
    match ErrorCode::from_code(code) {
        Some(ErrorCode::GroupIdNotFound) => {
            format!("group {group} does not exist (see `skiff group list`)")
        }
        Some(ErrorCode::NonEmptyGroup) => format!(
            "group {group} has active members: stop its consumers first \
             (`skiff group describe {group}` lists them)"
        ),
        Some(e) => e.to_string(),
        None => format!("error code {code}"),
    }
}

fn delete(groups: &[String], client: &ClientArgs) -> CliResult {
    let mut cluster = Cluster::connect(client)?;
    let mut rows = Vec::new();
    for group in groups {
        let conn = cluster.coordinator(0, group)?;
        if conn.version(ApiKey::DeleteGroups).is_none() {
            return Err(CliError::Unsupported {
                addr: conn.addr().to_owned(),
                api: "DeleteGroups",
            });
        }
        let request = DeleteGroupsRequest {
            groups_names: vec![group.clone()],
        };
        let r = call_as!(conn, request, DeleteGroups)?;
        let code = r
            .results
            .iter()
            .find(|x| &x.group_id == group)
            .map_or(ErrorCode::UnknownServerError.code(), |x| x.error_code);
        rows.push(Deleted {
            group: group.clone(),
            deleted: code == 0,
            error: (code != 0).then(|| delete_error(group, code)),
        });
    }
    let failed = rows.iter().filter(|r| !r.deleted).count();
    let result = DeleteResult { groups: rows };
    emit(client.format, &result, |r| {
        let rows: Vec<Vec<String>> = r
            .groups
            .iter()
            .map(|g| {
                vec![
                    g.group.clone(),
                    if g.deleted {
                        "deleted".into()
                    } else {
                        g.error.clone().unwrap_or_default()
                    },
                ]
            })
            .collect();
        table(&["GROUP", "RESULT"], &rows)
    })?;
    if failed > 0 {
        return Err(CliError::Other(format!(
            "{failed} of {} groups were not deleted",
            groups.len()
        )));
    }
    Ok(ExitCode::SUCCESS)
}
