//! Issue 19: CreateAcls, DeleteAcls and AlterUserScramCredentials at the controller (Kafka's
//! `AclControlManager`, the controller side of `AclApis.handleCreateAcls`, and
//! `ScramControlManager`).
//!
//! Mental model: each request is a list of independent items answered one by one; the
//! records of every item that succeeds form one atomic change.
//!
//! Invariants:
//! - CreateAcls checks a binding in Kafka's order and words (`AclApis`: the CLUSTER resource is
//!   only `kafka-cluster`, a name is not empty; `validateNewAcl`: resource type, pattern
//!   type, operation, permission, the principal has a `:`), all INVALID_REQUEST. A binding
//!   equal to a stored ACL, or to an earlier one of the same request, succeeds without a
//!   record. New ids are derived from `ctx.next_offset` and the record's place in the change
//!   (never nil, never an id in use), so `handle` stays pure. More than
//!   [`MAX_RECORDS_PER_USER_OP`] new ACLs fail every creation with POLICY_VIOLATION.
//! - DeleteAcls: per filter, its validation error or every ACL it matches (id order); an ACL
//!   matched by several filters is removed by one record.
//! - AlterUserScramCredentials: a user named twice anywhere in the request fails
//!   DUPLICATE_RESOURCE (and nothing of it is done); empty name UNACCEPTABLE_CREDENTIAL;
//!   an unknown mechanism UNSUPPORTED_SASL_MECHANISM; iterations outside 4096..=16384
//!   UNACCEPTABLE_CREDENTIAL ("Too few iterations" / "Too many iterations"); deleting an absent
//!   credential RESOURCE_NOT_FOUND. Stored and server keys come from the salted password
//!   ([`ScramCredential::from_salted_password`]); the password never reaches the log.

use std::collections::{BTreeSet, HashSet};

use skiff_auth::acl::{
    AclBinding, AclId, CLUSTER_RESOURCE_NAME, ResourceType, validate_new_binding,
};
use skiff_auth::sasl::{ScramCredential, ScramMechanism};
use skiff_protocol::{RemoveAccessControlEntryRecord, RemoveUserScramCredentialRecord};
use skiff_types::ErrorCode;
use uuid::Uuid;

use super::{Ctx, Response};
use crate::frame::Record;
use crate::image::MetadataImage;
use crate::security::{
    AclFilter, ApiError, ScramResult, acl_record, scram_record, validate_filter,
};

/// Kafka's `QuorumController.MAX_RECORDS_PER_USER_OP`.
pub const MAX_RECORDS_PER_USER_OP: usize = 10_000;

/// One AlterUserScramCredentials upsertion (mechanism as its wire code).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScramUpsertion {
    pub name: String,
    pub mechanism: i8,
    pub iterations: i32,
    pub salt: Vec<u8>,
    pub salted_password: Vec<u8>,
}

/// One AlterUserScramCredentials deletion (mechanism as its wire code).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScramDeletion {
    pub name: String,
    pub mechanism: i8,
}

/// Kafka's checks of a new ACL (see the module docs), first failure first: the broker's
/// `AclApis` checks (the CLUSTER resource's name, an empty name) come before the
/// controller's (skiff-auth's `validate_new_binding`: the enums, then the principal), as a
/// request meets them in Kafka.
pub fn validate_new_acl(b: &AclBinding) -> Result<(), ApiError> {
    if b.resource_type == ResourceType::Cluster && b.resource_name != CLUSTER_RESOURCE_NAME {
        return Err(ApiError::invalid_request(format!(
            "The only valid name for the CLUSTER resource is {CLUSTER_RESOURCE_NAME}"
        )));
    }
    if b.resource_name.is_empty() {
        return Err(ApiError::invalid_request("Invalid empty resource name"));
    }
    validate_new_binding(b).map_err(|e| ApiError::invalid_request(e.to_string()))
}

/// A fresh ACL id for the `n`th record of this change.
fn new_acl_id(image: &MetadataImage, ctx: &Ctx<'_>, n: &mut u64, taken: &HashSet<AclId>) -> AclId {
    loop {
        // 0xAC1 tags Skiff's derived ACL ids; the low bits count records of the change.
        let low = (0xAC1u64 << 52) | (*n & ((1 << 52) - 1));
        *n += 1;
        let id = *Uuid::from_u64_pair(ctx.next_offset as u64, low).as_bytes();
        if !image.acls.contains_key(&id) && !taken.contains(&id) {
            return id;
        }
    }
}

pub(super) fn create_acls(
    image: &MetadataImage,
    ctx: &Ctx<'_>,
    acls: &[AclBinding],
) -> (Vec<Record>, Response) {
    let existing: HashSet<&AclBinding> = image.acls.values().collect();
    let mut added: HashSet<&AclBinding> = HashSet::new();
    let mut ids = HashSet::new();
    let mut n = 0u64;
    let mut records = Vec::new();
    let mut results = Vec::with_capacity(acls.len());
    for b in acls {
        if let Err(e) = validate_new_acl(b) {
            results.push(Err(e));
            continue;
        }
        if !existing.contains(b) && added.insert(b) {
            let id = new_acl_id(image, ctx, &mut n, &ids);
            ids.insert(id);
            records.push(Record::AccessControlEntry(acl_record(id, b)));
        }
        results.push(Ok(()));
    }
    if records.len() > MAX_RECORDS_PER_USER_OP {
        let e = ApiError::new(
            ErrorCode::PolicyViolation,
            "Unable to perform excessively large batch operation.",
        );
        return (Vec::new(), Response::AclsCreated(vec![Err(e); acls.len()]));
    }
    (records, Response::AclsCreated(results))
}

pub(super) fn delete_acls(image: &MetadataImage, filters: &[AclFilter]) -> (Vec<Record>, Response) {
    let mut removed: BTreeSet<AclId> = BTreeSet::new();
    let mut results = Vec::with_capacity(filters.len());
    for f in filters {
        if let Err(e) = validate_filter(f) {
            results.push(Err(e));
            continue;
        }
        let matched: Vec<(&AclId, &AclBinding)> =
            image.acls.iter().filter(|(_, b)| f.matches(b)).collect();
        let new = matched
            .iter()
            .filter(|(id, _)| !removed.contains(*id))
            .count();
        if removed.len() + new > MAX_RECORDS_PER_USER_OP {
            results.push(Err(ApiError::invalid_request(format!(
                "Cannot remove more than {MAX_RECORDS_PER_USER_OP} acls in a single delete operation."
            ))));
            continue;
        }
        removed.extend(matched.iter().map(|(id, _)| **id));
        results.push(Ok(matched.into_iter().map(|(_, b)| b.clone()).collect()));
    }
    let records = removed
        .into_iter()
        .map(|id| {
            Record::RemoveAccessControlEntry(RemoveAccessControlEntryRecord {
                id: Uuid::from_bytes(id),
            })
        })
        .collect();
    (records, Response::AclsDeleted(results))
}

fn validate_user_and_mechanism(name: &str, mechanism: i8) -> Result<ScramMechanism, ApiError> {
    if name.is_empty() {
        return Err(ApiError::new(
            ErrorCode::UnacceptableCredential,
            "Username must not be empty",
        ));
    }
    ScramMechanism::from_code(mechanism).ok_or_else(|| {
        ApiError::new(
            ErrorCode::UnsupportedSaslMechanism,
            "Unknown SCRAM mechanism",
        )
    })
}

fn duplicate() -> ApiError {
    ApiError::new(
        ErrorCode::DuplicateResource,
        "A user credential cannot be altered twice in the same request",
    )
}

/// Kafka's `ScramControlManager.alterCredentials` (see the module docs): per user, the outcome;
/// successful deletions first, then successful upsertions (request order), then failures
/// (in the order their users first appeared).
pub(super) fn alter_scram(
    image: &MetadataImage,
    deletions: &[ScramDeletion],
    upsertions: &[ScramUpsertion],
) -> (Vec<Record>, Response) {
    let mut errors: Vec<(String, ApiError)> = Vec::new();
    let mut failed: HashSet<String> = HashSet::new();
    fn fail(
        errors: &mut Vec<(String, ApiError)>,
        failed: &mut HashSet<String>,
        name: &str,
        e: ApiError,
    ) {
        failed.insert(name.to_string());
        errors.push((name.to_string(), e));
    }
    let mut dels: Vec<(&ScramDeletion, ScramMechanism)> = Vec::new();
    for d in deletions {
        if failed.contains(&d.name) {
            continue;
        }
        if let Some(i) = dels.iter().position(|(x, _)| x.name == d.name) {
            dels.remove(i);
            fail(&mut errors, &mut failed, &d.name, duplicate());
            continue;
        }
        let checked = validate_user_and_mechanism(&d.name, d.mechanism).and_then(|m| {
            image
                .scram_credential(&d.name, m)
                .map(|_| m)
                .ok_or_else(|| {
                    ApiError::new(
                        ErrorCode::ResourceNotFound,
                        "Attempt to delete a user credential that does not exist",
                    )
                })
        });
        match checked {
            Ok(m) => dels.push((d, m)),
            Err(e) => fail(&mut errors, &mut failed, &d.name, e),
        }
    }
    let mut ups: Vec<(&ScramUpsertion, ScramMechanism)> = Vec::new();
    for u in upsertions {
        if failed.contains(&u.name) {
            continue;
        }
        let in_dels = dels.iter().position(|(x, _)| x.name == u.name);
        let in_ups = ups.iter().position(|(x, _)| x.name == u.name);
        if in_dels.is_some() || in_ups.is_some() {
            if let Some(i) = in_dels {
                dels.remove(i);
            }
            if let Some(i) = in_ups {
                ups.remove(i);
            }
            fail(&mut errors, &mut failed, &u.name, duplicate());
            continue;
        }
        let checked = validate_user_and_mechanism(&u.name, u.mechanism).and_then(|m| {
            if u.iterations < ScramMechanism::MIN_ITERATIONS {
                Err(ApiError::new(
                    ErrorCode::UnacceptableCredential,
                    "Too few iterations",
                ))
            } else if u.iterations > ScramMechanism::MAX_ITERATIONS {
                Err(ApiError::new(
                    ErrorCode::UnacceptableCredential,
                    "Too many iterations",
                ))
            } else {
                Ok(m)
            }
        });
        match checked {
            Ok(m) => ups.push((u, m)),
            Err(e) => fail(&mut errors, &mut failed, &u.name, e),
        }
    }
    let mut records = Vec::new();
    let mut results: Vec<ScramResult> = Vec::new();
    for (d, m) in dels {
        records.push(Record::RemoveUserScramCredential(
            RemoveUserScramCredentialRecord {
                name: d.name.clone(),
                mechanism: m.code(),
            },
        ));
        results.push((d.name.clone(), Ok(())));
    }
    for (u, m) in ups {
        let c = ScramCredential::from_salted_password(m, &u.salt, &u.salted_password, u.iterations);
        records.push(Record::UserScramCredential(scram_record(&u.name, &c)));
        results.push((u.name.clone(), Ok(())));
    }
    results.extend(errors.into_iter().map(|(user, e)| (user, Err(e))));
    (records, Response::ScramAltered(results))
}
