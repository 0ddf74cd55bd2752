//! Kafka's `AclBindingFilter` (a `ResourcePatternFilter` plus an `AccessControlEntryFilter`):
//! which stored ACLs a DescribeAcls or DeleteAcls filter selects.
//!
//! # Mental model
//!
//! Every field narrows the selection; the enums' `Any` codes and a `None` string select
//! everything. The pattern type is the subtle one:
//! - `Any`: every pattern type, and a name must be equal (`*` is just a name here);
//! - `Match`: every stored ACL that would apply to a resource of that name: the literal
//!   name itself, the literal wildcard `*`, and every prefixed pattern the name starts with;
//! - `Literal` / `Prefixed`: that pattern type, and an equal name.
//!
//! Principal and host compare as exact strings (`User:*` in a filter selects only ACLs
//! written with `User:*`, not every principal's ACLs).
//!
//! Invariant: [`AclBindingFilter::matches`] is a pure function of the filter and the
//! binding; a stored pattern type other than `Literal` / `Prefixed` (which validation never
//! stores) is selected only by `Any` or an equal pattern type, never by `Match` (Kafka
//! throws there).

use super::types::*;

/// A filter over ACL bindings (Kafka's `AclBindingFilter`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AclBindingFilter {
    /// `Any`: every resource type.
    pub resource_type: ResourceType,
    /// `None`: every name.
    pub resource_name: Option<String>,
    /// `Any`, `Match`, `Literal` or `Prefixed` (see the module doc).
    pub pattern_type: PatternType,
    /// `None`: every principal; otherwise the exact `Type:name` string.
    pub principal: Option<String>,
    /// `None`: every host; otherwise the exact host string (`*` selects only `*`).
    pub host: Option<String>,
    /// `Any`: every operation.
    pub operation: AclOperation,
    /// `Any`: every permission.
    pub permission: AclPermission,
}

impl Default for AclBindingFilter {
    fn default() -> Self {
        Self::any()
    }
}

impl AclBindingFilter {
    /// The filter selecting every ACL (Kafka's `AclBindingFilter.ANY`).
    pub fn any() -> Self {
        Self {
            resource_type: ResourceType::Any,
            resource_name: None,
            pattern_type: PatternType::Any,
            principal: None,
            host: None,
            operation: AclOperation::Any,
            permission: AclPermission::Any,
        }
    }

    /// The filter selecting exactly this binding (Kafka's `AclBinding.toFilter`).
    pub fn exact(b: &AclBinding) -> Self {
        Self {
            resource_type: b.resource_type,
            resource_name: Some(b.resource_name.clone()),
            pattern_type: b.pattern_type,
            principal: Some(b.principal.clone()),
            host: Some(b.host.clone()),
            operation: b.operation,
            permission: b.permission,
        }
    }

    /// Does the filter select `b`? (Kafka's `AclBindingFilter.matches`.)
    pub fn matches(&self, b: &AclBinding) -> bool {
        self.matches_pattern(b) && self.matches_entry(b)
    }

    /// Kafka's `ResourcePatternFilter.matches`.
    pub fn matches_pattern(&self, b: &AclBinding) -> bool {
        if self.resource_type != ResourceType::Any && self.resource_type != b.resource_type {
            return false;
        }
        let any_pattern = matches!(self.pattern_type, PatternType::Any | PatternType::Match);
        if !any_pattern && self.pattern_type != b.pattern_type {
            return false;
        }
        let Some(name) = &self.resource_name else {
            return true;
        };
        if self.pattern_type == PatternType::Any || self.pattern_type == b.pattern_type {
            return *name == b.resource_name;
        }
        // `Match` against a stored pattern of another type.
        match b.pattern_type {
            PatternType::Literal => *name == b.resource_name || b.resource_name == WILDCARD,
            PatternType::Prefixed => name.starts_with(b.resource_name.as_str()),
            _ => false,
        }
    }

    /// Kafka's `AccessControlEntryFilter.matches`.
    pub fn matches_entry(&self, b: &AclBinding) -> bool {
        self.principal.as_ref().is_none_or(|p| *p == b.principal)
            && self.host.as_ref().is_none_or(|h| *h == b.host)
            && (self.operation == AclOperation::Any || self.operation == b.operation)
            && (self.permission == AclPermission::Any || self.permission == b.permission)
    }

    /// Has the filter a part Kafka calls unknown (`AclBindingFilter.isUnknown`)?
    pub fn is_unknown(&self) -> bool {
        self.pattern_filter_is_unknown() || self.entry_filter_is_unknown()
    }

    pub(crate) fn pattern_filter_is_unknown(&self) -> bool {
        self.resource_type == ResourceType::Unknown || self.pattern_type == PatternType::Unknown
    }

    pub(crate) fn entry_filter_is_unknown(&self) -> bool {
        self.operation == AclOperation::Unknown || self.permission == AclPermission::Unknown
    }
}
