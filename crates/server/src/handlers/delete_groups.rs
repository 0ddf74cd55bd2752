//! DeleteGroups (42), v0-2: the named groups are split by shard, each shard deletes its own
//! (NON_EMPTY_GROUP while members exist, GROUP_ID_NOT_FOUND for unknown ones) and the results
//! are merged back into request order. Answered once every shard's tombstones are appended.
//!
//! Authorization (issue 19), as Kafka's `handleDeleteGroupsRequest`: DELETE on each group; the
//! refused groups never reach a shard and answer GROUP_AUTHORIZATION_FAILED, listed (as in
//! Kafka) after the results of the others.

use std::collections::BTreeMap;

use skiff_auth::acl::{AclOperation, ResourceType};
use skiff_group::Response;
use skiff_protocol::{
    DeletableGroupResult, DeleteGroupsRequest, DeleteGroupsResponse, ResponseBody,
};
use skiff_types::ErrorCode;
use tokio::sync::oneshot;

use super::authz_ops::Checker;
use super::{Reply, RequestContext};
use crate::coordinator::{Answer, Caller, ShardResult};

/// One shard's share of the request: the request indexes of its groups and its answer.
struct Part {
    indexes: Vec<usize>,
    outcome: Outcome,
}

enum Outcome {
    Done(Result<Vec<i16>, ErrorCode>),
    Waiting(oneshot::Receiver<ShardResult>),
}

pub fn handle(ctx: &RequestContext<'_>, mut req: DeleteGroupsRequest) -> Reply {
    let authz = Checker::new(ctx);
    let (allowed, refused): (Vec<String>, Vec<String>) = std::mem::take(&mut req.groups_names)
        .into_iter()
        .partition(|id| authz.allows(AclOperation::Delete, ResourceType::Group, id));
    req.groups_names = allowed;
    let refused: Vec<DeletableGroupResult> = refused
        .into_iter()
        .map(|group_id| DeletableGroupResult {
            group_id,
            error_code: ErrorCode::GroupAuthorizationFailed.code(),
        })
        .collect();
    let coordinator = &ctx.broker.groups;
    let mut by_partition: BTreeMap<i32, Vec<usize>> = BTreeMap::new();
    for (i, id) in req.groups_names.iter().enumerate() {
        by_partition
            .entry(coordinator.partition_for(id))
            .or_default()
            .push(i);
    }
    let mut parts = Vec::with_capacity(by_partition.len());
    for (_, indexes) in by_partition {
        let names: Vec<String> = indexes
            .iter()
            .map(|i| req.groups_names[*i].clone())
            .collect();
        let answer = coordinator.call(ctx.broker, &names[0], Caller::of(ctx), |s, c, now| {
            s.handle_delete_groups(c, &names, now)
        });
        let outcome = match answer {
            Err(code) => Outcome::Done(Err(code)),
            Ok(Answer::Ready(r)) => Outcome::Done(codes(Ok(r), names.len())),
            Ok(Answer::Parked(rx)) => Outcome::Waiting(rx),
        };
        parts.push(Part { indexes, outcome });
    }
    let names = req.groups_names;
    if parts.iter().all(|p| matches!(p.outcome, Outcome::Done(_))) {
        return Reply::Now(merge(names, parts, refused));
    }
    Reply::Later(Box::pin(async move {
        let mut done = Vec::with_capacity(parts.len());
        for p in parts {
            let outcome = match p.outcome {
                Outcome::Waiting(rx) => {
                    let r = rx.await.unwrap_or(Err(ErrorCode::NotCoordinator));
                    Outcome::Done(codes(r, p.indexes.len()))
                }
                done => done,
            };
            done.push(Part {
                indexes: p.indexes,
                outcome,
            });
        }
        merge(names, done, refused)
    }))
}

/// One shard's per-group codes, in the order its groups were named.
fn codes(r: ShardResult, n: usize) -> Result<Vec<i16>, ErrorCode> {
    match r? {
        Response::DeleteGroups(r) if r.results.len() == n => {
            Ok(r.results.into_iter().map(|g| g.error_code).collect())
        }
        _ => Err(ErrorCode::UnknownServerError),
    }
}

/// The shards' results in request order, then the refused groups.
fn merge(names: Vec<String>, parts: Vec<Part>, refused: Vec<DeletableGroupResult>) -> ResponseBody {
    let mut code_of = vec![ErrorCode::UnknownServerError.code(); names.len()];
    for p in parts {
        let Outcome::Done(r) = p.outcome else {
            continue;
        };
        for (k, i) in p.indexes.iter().enumerate() {
            if let Some(slot) = code_of.get_mut(*i) {
                *slot = match &r {
                    Ok(codes) => codes.get(k).copied().unwrap_or(*slot),
                    Err(code) => code.code(),
                };
            }
        }
    }
    ResponseBody::DeleteGroups(DeleteGroupsResponse {
        results: names
            .into_iter()
            .zip(code_of)
            .map(|(group_id, error_code)| DeletableGroupResult {
                group_id,
                error_code,
            })
            .chain(refused)
            .collect(),
        ..DeleteGroupsResponse::default()
    })
}
