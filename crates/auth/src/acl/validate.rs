//! Validation of a CreateAcls binding and of a DescribeAcls / DeleteAcls filter, with
//! Kafka's error code (INVALID_REQUEST, 42) and messages.
//!
//! # Mental model
//!
//! Kafka checks a new ACL in three places: the request parser and `AclBinding`'s
//! constructors refuse UNKNOWN codes and the filter-only values (`ANY`, `MATCH`) for the
//! whole request; `AclApis.handleCreateAcls` refuses a CLUSTER resource not named
//! `kafka-cluster` and an empty name; the controller's `AclControlManager.validateNewAcl`
//! refuses the same enums with per-ACL messages, an empty name, and (KAFKA-18051) a
//! principal with no `:`. [`validate_new_binding`] gives each binding its own answer, in
//! that order: the enum checks (with `validateNewAcl`'s messages), then the `AclApis`
//! checks, then the principal.
//!
//! Invariant: every binding that passes is storable: a known resource type other than
//! `Any`, pattern `Literal` or `Prefixed`, a concrete operation, `Allow` or `Deny`, a
//! non-empty name (`kafka-cluster` for CLUSTER), a `Type:name` principal.

use super::filter::AclBindingFilter;
use super::types::*;

/// Why Kafka refuses an ACL or a filter. Every case is INVALID_REQUEST
/// ([`AclValidationError::INVALID_REQUEST`]); [`std::fmt::Display`] is Kafka's message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AclValidationError {
    /// `validateNewAcl`: resource type UNKNOWN or ANY.
    #[error("Invalid resourceType {0}")]
    InvalidResourceType(ResourceType),
    /// `validateNewAcl`: pattern type other than LITERAL or PREFIXED.
    #[error("Invalid patternType {0}")]
    InvalidPatternType(PatternType),
    /// `validateNewAcl`: operation UNKNOWN or ANY.
    #[error("Invalid operation {0}")]
    InvalidOperation(AclOperation),
    /// `validateNewAcl`: permission other than ALLOW or DENY.
    #[error("Invalid permissionType {0}")]
    InvalidPermissionType(AclPermission),
    /// `AclApis.handleCreateAcls`: a CLUSTER ACL must name `kafka-cluster`.
    #[error("The only valid name for the CLUSTER resource is kafka-cluster")]
    InvalidClusterResourceName,
    /// `AclApis.handleCreateAcls`: an empty resource name (the controller's own check,
    /// "Resource name should not be empty", is never reached after it).
    #[error("Invalid empty resource name")]
    EmptyResourceName,
    /// `validateNewAcl` (KAFKA-18051): the principal has no `:` between type and name.
    #[error(
        "Could not parse principal from `{0}` (no colon is present separating the principal type from the principal name)"
    )]
    PrincipalWithoutColon(String),
    /// `validateFilter`: the resource type or the pattern type is UNKNOWN.
    #[error("Unknown patternFilter.")]
    UnknownPatternFilter,
    /// `validateFilter`: the operation or the permission is UNKNOWN.
    #[error("Unknown entryFilter.")]
    UnknownEntryFilter,
}

impl AclValidationError {
    /// Kafka's INVALID_REQUEST error code.
    pub const INVALID_REQUEST: i16 = 42;

    /// The Kafka error code to answer with (always INVALID_REQUEST).
    pub fn code(&self) -> i16 {
        Self::INVALID_REQUEST
    }
}

/// May a CreateAcls request store `b`? (See the module doc for the order of the checks.)
pub fn validate_new_binding(b: &AclBinding) -> Result<(), AclValidationError> {
    use AclValidationError as E;
    if matches!(b.resource_type, ResourceType::Unknown | ResourceType::Any) {
        return Err(E::InvalidResourceType(b.resource_type));
    }
    if !matches!(b.pattern_type, PatternType::Literal | PatternType::Prefixed) {
        return Err(E::InvalidPatternType(b.pattern_type));
    }
    if matches!(b.operation, AclOperation::Unknown | AclOperation::Any) {
        return Err(E::InvalidOperation(b.operation));
    }
    if !matches!(b.permission, AclPermission::Allow | AclPermission::Deny) {
        return Err(E::InvalidPermissionType(b.permission));
    }
    if b.resource_type == ResourceType::Cluster && b.resource_name != CLUSTER_RESOURCE_NAME {
        return Err(E::InvalidClusterResourceName);
    }
    if b.resource_name.is_empty() {
        return Err(E::EmptyResourceName);
    }
    if !b.principal.contains(':') {
        return Err(E::PrincipalWithoutColon(b.principal.clone()));
    }
    Ok(())
}

/// May a DescribeAcls / DeleteAcls request use `f`? (Kafka's `AclControlManager.validateFilter`.)
pub fn validate_filter(f: &AclBindingFilter) -> Result<(), AclValidationError> {
    if f.pattern_filter_is_unknown() {
        return Err(AclValidationError::UnknownPatternFilter);
    }
    if f.entry_filter_is_unknown() {
        return Err(AclValidationError::UnknownEntryFilter);
    }
    Ok(())
}
