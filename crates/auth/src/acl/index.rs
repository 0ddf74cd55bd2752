//! The authorizer's ACL set (Kafka's `StandardAuthorizerData`): bindings by id, and the
//! authorization decision.
//!
//! PLACEHOLDER (seam for issue 19's parallel work): a linear scan with the right signatures;
//! the ACL work replaces the inside with an index and the full semantics.

use std::collections::BTreeMap;

use super::types::*;
use crate::principal::KafkaPrincipal;

/// Authorizer settings (`super.users`, `allow.everyone.if.no.acl.found`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuthorizerConfig {
    pub super_users: Vec<KafkaPrincipal>,
    pub allow_everyone_if_no_acl_found: bool,
}

/// An ACL's id in the metadata log (`AccessControlEntryRecord.Id`, a Kafka Uuid).
pub type AclId = [u8; 16];

/// Every ACL, and the decision over them.
#[derive(Clone, Debug, Default)]
pub struct AclIndex {
    config: AuthorizerConfig,
    acls: BTreeMap<AclId, AclBinding>,
}

impl AclIndex {
    pub fn new(config: AuthorizerConfig) -> Self {
        Self {
            config,
            acls: BTreeMap::new(),
        }
    }

    pub fn config(&self) -> &AuthorizerConfig {
        &self.config
    }

    /// Adds (or replaces) the ACL with this id.
    pub fn add(&mut self, id: AclId, binding: AclBinding) {
        self.acls.insert(id, binding);
    }

    /// Removes the ACL with this id.
    pub fn remove(&mut self, id: &AclId) -> Option<AclBinding> {
        self.acls.remove(id)
    }

    pub fn len(&self) -> usize {
        self.acls.len()
    }

    pub fn is_empty(&self) -> bool {
        self.acls.is_empty()
    }

    /// Every ACL with its id.
    pub fn iter(&self) -> impl Iterator<Item = (&AclId, &AclBinding)> {
        self.acls.iter()
    }

    /// May `principal` connecting from `host` (an IP address as text) perform `op` on the
    /// resource `(resource_type, name)`?
    pub fn authorize(
        &self,
        principal: &KafkaPrincipal,
        host: &str,
        op: AclOperation,
        resource_type: ResourceType,
        name: &str,
    ) -> AuthorizationResult {
        if self.config.super_users.contains(principal) {
            return AuthorizationResult::Allowed;
        }
        let p = principal.to_string();
        let mut any = false;
        let mut allowed = false;
        for b in self.acls.values() {
            let matches_resource = b.resource_type == resource_type
                && match b.pattern_type {
                    PatternType::Literal => b.resource_name == name || b.resource_name == WILDCARD,
                    PatternType::Prefixed => name.starts_with(&b.resource_name),
                    _ => false,
                };
            if !matches_resource {
                continue;
            }
            any = true;
            if (b.principal != p && b.principal != "User:*")
                || (b.host != host && b.host != WILDCARD)
            {
                continue;
            }
            if b.operation != op && b.operation != AclOperation::All {
                continue;
            }
            match b.permission {
                AclPermission::Deny => return AuthorizationResult::Denied,
                AclPermission::Allow => allowed = true,
                _ => {}
            }
        }
        if allowed || (!any && self.config.allow_everyone_if_no_acl_found) {
            AuthorizationResult::Allowed
        } else {
            AuthorizationResult::Denied
        }
    }

    /// Kafka's `authorizeByResourceType`: may `principal` perform `op` on at least one
    /// resource of this type (e.g. IDEMPOTENT_WRITE falls back to WRITE on any topic)?
    pub fn authorize_by_resource_type(
        &self,
        principal: &KafkaPrincipal,
        host: &str,
        op: AclOperation,
        resource_type: ResourceType,
    ) -> AuthorizationResult {
        if self.config.super_users.contains(principal) {
            return AuthorizationResult::Allowed;
        }
        let p = principal.to_string();
        let allowed = self.acls.values().any(|b| {
            b.resource_type == resource_type
                && (b.principal == p || b.principal == "User:*")
                && (b.host == host || b.host == WILDCARD)
                && (b.operation == op || b.operation == AclOperation::All)
                && b.permission == AclPermission::Allow
        });
        if allowed {
            AuthorizationResult::Allowed
        } else {
            AuthorizationResult::Denied
        }
    }
}
