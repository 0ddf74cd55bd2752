//! Tests of the ACL authorizer: a table per semantic rule ([`authorize`], [`by_type`]),
//! filters ([`filter`]), validation ([`validate`]), the index against a linear reference on
//! random ACL sets ([`reference`]), and the release benchmark ([`bench`], ignored).
//!
//! Tables write an ACL as `PERMISSION PRINCIPAL HOST OPERATION RESOURCE_TYPE PATTERN NAME`
//! with Kafka's names (`ALLOW User:alice * READ TOPIC PREFIXED team-`; `""` is the empty
//! name) and a check as `PRINCIPAL HOST OPERATION RESOURCE_TYPE NAME`.

use std::fmt::Display;

use super::*;
use crate::principal::KafkaPrincipal;

mod authorize;
mod bench;
mod by_type;
mod filter;
mod reference;
mod validate;

/// The value of `all` whose Kafka name is `s`.
fn named<T: Copy + Display>(all: &[T], s: &str) -> T {
    *all.iter()
        .find(|v| v.to_string() == s)
        .unwrap_or_else(|| panic!("no value named {s}"))
}

fn name_token(s: &str) -> String {
    if s == "\"\"" {
        String::new()
    } else {
        s.to_string()
    }
}

/// `ALLOW User:alice * READ TOPIC LITERAL foo`.
pub(super) fn binding(spec: &str) -> AclBinding {
    let w: Vec<&str> = spec.split(' ').collect();
    assert_eq!(w.len(), 7, "{spec}");
    AclBinding {
        permission: named(AclPermission::ALL, w[0]),
        principal: w[1].to_string(),
        host: w[2].to_string(),
        operation: named(AclOperation::ALL, w[3]),
        resource_type: named(ResourceType::ALL, w[4]),
        pattern_type: named(PatternType::ALL, w[5]),
        resource_name: name_token(w[6]),
    }
}

pub(super) fn id(i: u64) -> AclId {
    let mut id = [0u8; 16];
    id[8..].copy_from_slice(&i.to_be_bytes());
    id
}

pub(super) fn principal(s: &str) -> KafkaPrincipal {
    KafkaPrincipal::parse(s).unwrap()
}

/// An index with these super users, default and ACLs (ids 1, 2, ...).
pub(super) fn index(super_users: &[&str], allow_if_none: bool, acls: &[&str]) -> AclIndex {
    let mut idx = AclIndex::new(AuthorizerConfig {
        super_users: super_users.iter().map(|s| principal(s)).collect(),
        allow_everyone_if_no_acl_found: allow_if_none,
    });
    for (i, a) in acls.iter().enumerate() {
        idx.add(id(i as u64 + 1), binding(a));
    }
    idx
}

/// `User:alice 1.2.3.4 READ TOPIC foo` against `idx`.
pub(super) fn check(idx: &AclIndex, query: &str) -> AuthorizationResult {
    let w: Vec<&str> = query.split(' ').collect();
    assert_eq!(w.len(), 5, "{query}");
    idx.authorize(
        &principal(w[0]),
        w[1],
        named(AclOperation::ALL, w[2]),
        named(ResourceType::ALL, w[3]),
        &name_token(w[4]),
    )
}

pub(super) const ALLOWED: AuthorizationResult = AuthorizationResult::Allowed;
pub(super) const DENIED: AuthorizationResult = AuthorizationResult::Denied;
