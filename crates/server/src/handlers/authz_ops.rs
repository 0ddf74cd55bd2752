//! Batched authorization for handlers that check many resources, and Kafka's
//! `*_authorized_operations` bitfields (issue 19).
//!
//! Mental model: a [`Checker`] is taken once per request. It holds one snapshot of the ACL
//! set (one `RwLock` read), or nothing when no authorizer is configured or the request is the
//! node's own (the local pseudo-listener): then every check is allowed without further work,
//! as [`RequestContext::authorize`] does. Checking a thousand topics costs one lock read.
//!
//! [`Checker::authorized_operations`] is Kafka's `AuthHelper.authorizedOperations`: each
//! operation Kafka supports on the resource type (`AclEntry.supportedOperations`) that the
//! principal may perform on the resource sets the bit at the operation's code
//! (`Utils.to32BitField`); without an authorizer every supported operation is set.
//!
//! Invariants: the answers are exactly those of [`RequestContext::authorize`] /
//! `authorize_by_resource_type` for the same request; nothing here panics.

#![allow(dead_code)] // some helpers are used only by handlers that land later

use std::sync::Arc;

use skiff_auth::acl::{
    AclIndex, AclOperation, AuthorizationResult, CLUSTER_RESOURCE_NAME, ResourceType,
};
use skiff_auth::principal::KafkaPrincipal;

use crate::handlers::RequestContext;

/// Kafka's "authorized operations not requested" value (`Int.MinValue` in the schemas).
pub(crate) const OPS_NOT_REQUESTED: i32 = i32::MIN;

/// The operations Kafka supports on a resource type (`AclEntry.supportedOperations`).
pub(crate) fn supported_operations(resource_type: ResourceType) -> &'static [AclOperation] {
    use AclOperation::*;
    match resource_type {
        ResourceType::Topic => &[
            Read,
            Write,
            Create,
            Describe,
            Delete,
            Alter,
            DescribeConfigs,
            AlterConfigs,
        ],
        ResourceType::Group => &[Read, Describe, Delete, DescribeConfigs, AlterConfigs],
        ResourceType::Cluster => &[
            Create,
            ClusterAction,
            DescribeConfigs,
            AlterConfigs,
            IdempotentWrite,
            Alter,
            Describe,
        ],
        ResourceType::TransactionalId => &[Describe, Write],
        ResourceType::DelegationToken => &[Describe],
        ResourceType::User => &[CreateTokens, DescribeTokens],
        _ => &[],
    }
}

/// A set of operations as Kafka's 32-bit field (bit `code` set per operation).
pub(crate) fn to_bit_field(ops: impl IntoIterator<Item = AclOperation>) -> i32 {
    ops.into_iter()
        .map(|op| op.code())
        .filter(|c| (0..32).contains(c))
        .fold(0u32, |acc, c| acc | (1u32 << c)) as i32
}

/// One request's view of the authorizer (see the module doc).
pub(crate) struct Checker<'a> {
    /// `None`: every check is allowed.
    index: Option<Arc<AclIndex>>,
    principal: &'a KafkaPrincipal,
    host: String,
}

impl<'a> Checker<'a> {
    /// Takes the ACL snapshot for this request.
    pub(crate) fn new(ctx: &RequestContext<'a>) -> Self {
        let internal = ctx.listener.name == crate::cluster::LOCAL_LISTENER;
        let index = if internal {
            None
        } else {
            ctx.broker.authz.snapshot()
        };
        let host = if index.is_some() {
            crate::authz::java_host_address(ctx.peer.ip())
        } else {
            String::new()
        };
        Self {
            index,
            principal: ctx.principal,
            host,
        }
    }

    /// Whether an authorizer is in force for this request.
    pub(crate) fn enabled(&self) -> bool {
        self.index.is_some()
    }

    /// May the principal perform `op` on `(resource_type, name)`?
    pub(crate) fn allows(&self, op: AclOperation, resource_type: ResourceType, name: &str) -> bool {
        match &self.index {
            None => true,
            Some(idx) => {
                idx.authorize(self.principal, &self.host, op, resource_type, name)
                    == AuthorizationResult::Allowed
            }
        }
    }

    /// `op` on a topic.
    pub(crate) fn topic(&self, op: AclOperation, name: &str) -> bool {
        self.allows(op, ResourceType::Topic, name)
    }

    /// `op` on the cluster resource.
    pub(crate) fn cluster(&self, op: AclOperation) -> bool {
        self.allows(op, ResourceType::Cluster, CLUSTER_RESOURCE_NAME)
    }

    /// Kafka's `authorizeByResourceType`.
    pub(crate) fn by_resource_type(&self, op: AclOperation, resource_type: ResourceType) -> bool {
        match &self.index {
            None => true,
            Some(idx) => {
                idx.authorize_by_resource_type(self.principal, &self.host, op, resource_type)
                    == AuthorizationResult::Allowed
            }
        }
    }

    /// Kafka's `authorizedOperations(request, resource)`: the bitfield of supported
    /// operations allowed on `(resource_type, name)`.
    pub(crate) fn authorized_operations(&self, resource_type: ResourceType, name: &str) -> i32 {
        let ops = supported_operations(resource_type);
        to_bit_field(
            ops.iter()
                .copied()
                .filter(|op| self.allows(*op, resource_type, name)),
        )
    }
}

/// [`Checker::authorized_operations`] for a single resource.
pub(crate) fn authorized_operations(
    ctx: &RequestContext<'_>,
    resource_type: ResourceType,
    name: &str,
) -> i32 {
    Checker::new(ctx).authorized_operations(resource_type, name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_fields_match_kafka() {
        // Kafka: all topic operations = 0b1111_1111_1000 (codes 3..=11 minus 9 CLUSTER_ACTION).
        let topic = to_bit_field(supported_operations(ResourceType::Topic).iter().copied());
        assert_eq!(topic, 3576);
        let cluster = to_bit_field(supported_operations(ResourceType::Cluster).iter().copied());
        assert_eq!(
            cluster,
            (1 << 5) | (1 << 7) | (1 << 8) | (1 << 9) | (1 << 10) | (1 << 11) | (1 << 12)
        );
        let group = to_bit_field(supported_operations(ResourceType::Group).iter().copied());
        assert_eq!(
            group,
            (1 << 3) | (1 << 6) | (1 << 8) | (1 << 10) | (1 << 11)
        );
        assert_eq!(to_bit_field([]), 0);
        assert_eq!(
            to_bit_field([AclOperation::Read, AclOperation::Describe]),
            0b1_0000_1000
        );
    }
}
