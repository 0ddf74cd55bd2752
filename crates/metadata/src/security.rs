//! Issue 19: ACLs and SCRAM credentials in the image (Kafka's `AclsImage` and `ScramImage`).
//!
//! Mental model: two maps beside the topics, each behind an `Arc` so that cloning an image
//! (every replay does) copies two pointers, and a replay that touches neither leaves them
//! pointer-equal ([`MetadataImage::acls_ptr_eq`]: the broker rebuilds its authorizer only
//! when the ACL map really changed). ACLs are keyed by their id (`AccessControlEntryRecord`,
//! removed by id); SCRAM credentials by user, then mechanism (`UserScramCredentialRecord`,
//! removed by name + mechanism). A credential holds salt, stored key, server key and
//! iterations, never a password.
//!
//! Invariants: replay never fails: removing an absent ACL or credential, or a credential of a
//! mechanism code Skiff does not know, is skipped with a warning (Kafka's replay would throw);
//! a binding is stored exactly as recorded (codes Kafka does not define become `Unknown`).
//! [`AclFilter`] is skiff-auth's `AclBindingFilter` (Kafka's matching; [`validate_filter`]
//! is Kafka's `validateFilter`), used by DeleteAcls here and DescribeAcls in the server.

use std::collections::BTreeMap;
use std::sync::Arc;

use skiff_auth::acl::{AclBinding, AclId, AclOperation, AclPermission, PatternType, ResourceType};
use skiff_auth::sasl::{ScramCredential, ScramMechanism};
use skiff_protocol::{
    AccessControlEntryRecord, RemoveAccessControlEntryRecord, RemoveUserScramCredentialRecord,
    UserScramCredentialRecord,
};
use skiff_types::ErrorCode;
use uuid::Uuid;

use crate::image::MetadataImage;

/// Every ACL by id.
pub type AclMap = BTreeMap<AclId, AclBinding>;
/// Every SCRAM credential: user -> mechanism -> credential.
pub type ScramMap = BTreeMap<String, BTreeMap<ScramMechanism, ScramCredential>>;

/// AlterUserScramCredentials' outcome for one user.
pub type ScramResult = (String, Result<(), ApiError>);
/// DeleteAcls' outcome for one filter: the ACLs it matched (and removed), or its error.
pub type AclDeleteResult = Result<Vec<AclBinding>, ApiError>;

/// A per-item failure as Kafka answers it: an error code and an optional message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiError {
    pub code: ErrorCode,
    pub message: Option<String>,
}

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: Some(message.into()),
        }
    }

    /// INVALID_REQUEST with `message`.
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidRequest, message)
    }
}

/// Kafka's `AclBindingFilter` (skiff-auth's: matching as Kafka's, `validate_filter`).
pub type AclFilter = skiff_auth::acl::AclBindingFilter;

/// Kafka's `AclControlManager.validateFilter`: a filter with an unknown part is refused.
pub fn validate_filter(f: &AclFilter) -> Result<(), ApiError> {
    skiff_auth::acl::validate_filter(f).map_err(|e| ApiError::invalid_request(e.to_string()))
}

/// The record storing `binding` under `id`.
pub fn acl_record(id: AclId, b: &AclBinding) -> AccessControlEntryRecord {
    AccessControlEntryRecord {
        id: Uuid::from_bytes(id),
        resource_type: b.resource_type.code(),
        resource_name: b.resource_name.clone(),
        pattern_type: b.pattern_type.code(),
        principal: b.principal.clone(),
        host: b.host.clone(),
        operation: b.operation.code(),
        permission_type: b.permission.code(),
    }
}

/// The binding an `AccessControlEntryRecord` stores.
pub fn acl_binding(r: &AccessControlEntryRecord) -> AclBinding {
    AclBinding {
        resource_type: ResourceType::from_code(r.resource_type),
        resource_name: r.resource_name.clone(),
        pattern_type: PatternType::from_code(r.pattern_type),
        principal: r.principal.clone(),
        host: r.host.clone(),
        operation: AclOperation::from_code(r.operation),
        permission: AclPermission::from_code(r.permission_type),
    }
}

/// The record storing `user`'s credential.
pub fn scram_record(user: &str, c: &ScramCredential) -> UserScramCredentialRecord {
    UserScramCredentialRecord {
        name: user.to_string(),
        mechanism: c.mechanism.code(),
        salt: c.salt.clone().into(),
        stored_key: c.stored_key.clone().into(),
        server_key: c.server_key.clone().into(),
        iterations: c.iterations,
    }
}

impl MetadataImage {
    /// Every ACL by id.
    pub fn acls(&self) -> &Arc<AclMap> {
        &self.acls
    }

    /// Whether `other` holds the very same ACL map (no ACL change between the two images).
    pub fn acls_ptr_eq(&self, other: &MetadataImage) -> bool {
        Arc::ptr_eq(&self.acls, &other.acls)
    }

    /// Every SCRAM credential by user and mechanism.
    pub fn scram_credentials(&self) -> &Arc<ScramMap> {
        &self.scram
    }

    /// One user's credential for one mechanism.
    pub fn scram_credential(&self, user: &str, m: ScramMechanism) -> Option<&ScramCredential> {
        self.scram.get(user)?.get(&m)
    }

    pub(crate) fn apply_acl(&mut self, r: &AccessControlEntryRecord) {
        Arc::make_mut(&mut self.acls).insert(*r.id.as_bytes(), acl_binding(r));
    }

    pub(crate) fn apply_remove_acl(&mut self, r: &RemoveAccessControlEntryRecord) {
        if !self.acls.contains_key(r.id.as_bytes()) {
            tracing::warn!(id = %r.id, "removal of an unknown ACL skipped");
            return;
        }
        Arc::make_mut(&mut self.acls).remove(r.id.as_bytes());
    }

    pub(crate) fn apply_scram(&mut self, r: &UserScramCredentialRecord) {
        let Some(mechanism) = ScramMechanism::from_code(r.mechanism) else {
            tracing::warn!(
                mechanism = r.mechanism,
                "SCRAM credential of an unknown mechanism skipped"
            );
            return;
        };
        let credential = ScramCredential {
            mechanism,
            salt: r.salt.to_vec(),
            stored_key: r.stored_key.to_vec(),
            server_key: r.server_key.to_vec(),
            iterations: r.iterations,
        };
        Arc::make_mut(&mut self.scram)
            .entry(r.name.clone())
            .or_default()
            .insert(mechanism, credential);
    }

    pub(crate) fn apply_remove_scram(&mut self, r: &RemoveUserScramCredentialRecord) {
        let present = ScramMechanism::from_code(r.mechanism)
            .filter(|m| self.scram_credential(&r.name, *m).is_some());
        let Some(m) = present else {
            tracing::warn!(
                mechanism = r.mechanism,
                "removal of an unknown SCRAM credential skipped"
            );
            return;
        };
        let map = Arc::make_mut(&mut self.scram);
        if let Some(user) = map.get_mut(&r.name) {
            user.remove(&m);
            if user.is_empty() {
                map.remove(&r.name);
            }
        }
    }
}
