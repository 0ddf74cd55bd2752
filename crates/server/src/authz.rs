//! Authorization seam (issue 19): what a handler asks before it acts, and the broker's current
//! ACL set.
//!
//! Mental model: every request carries the connection's principal
//! ([`crate::handlers::RequestContext::principal`]) and peer host. A handler asks
//! [`RequestContext::authorize`] with Kafka's operation and resource for its API (Kafka's
//! "Operations and Resources on Protocols" table). [`Authz`] holds the ACL set as an immutable
//! [`AclIndex`] snapshot, replaced whole when the metadata image's ACLs change, so a check
//! never waits on a writer. With no authorizer configured (`authorizer.class.name` empty)
//! every check is allowed, as in Kafka without an authorizer.
//!
//! Invariants: requests this node makes to itself (the [`crate::cluster::LOCAL_LISTENER`]
//! pseudo-listener) are internal and always allowed; a check never panics.

use std::sync::Arc;

use parking_lot::RwLock;
use skiff_auth::acl::{
    AclIndex, AclOperation, AuthorizationResult, AuthorizerConfig, ResourceType,
};

use crate::handlers::RequestContext;

/// The broker's authorizer: `None` inside when `authorizer.class.name` is empty.
#[derive(Debug, Default)]
pub struct Authz {
    current: RwLock<Option<Arc<AclIndex>>>,
}

impl Authz {
    /// No authorizer: every check is allowed.
    pub fn disabled() -> Self {
        Self::default()
    }

    /// An authorizer with no ACLs yet.
    pub fn enabled(config: AuthorizerConfig) -> Self {
        Self {
            current: RwLock::new(Some(Arc::new(AclIndex::new(config)))),
        }
    }

    pub fn is_enabled(&self) -> bool {
        self.current.read().is_some()
    }

    /// The current ACL set (`None`: no authorizer).
    pub fn snapshot(&self) -> Option<Arc<AclIndex>> {
        self.current.read().clone()
    }

    /// Turns the authorizer on with this ACL set, or off with `None` (start-up, tests).
    pub fn set(&self, index: Option<AclIndex>) {
        *self.current.write() = index.map(Arc::new);
    }

    /// Replaces the ACL set (the metadata image's ACLs changed). Ignored without an authorizer.
    pub fn replace(&self, index: AclIndex) {
        let mut cur = self.current.write();
        if cur.is_some() {
            *cur = Some(Arc::new(index));
        }
    }
}

/// The peer address as ACL hosts name it: Java's `InetAddress.getHostAddress()` (Kafka
/// compares the ACL's host text with it): an IPv4-mapped IPv6 address as IPv4, other IPv6
/// addresses in full form without zero compression (`0:0:0:0:0:0:0:1`).
pub fn java_host_address(ip: std::net::IpAddr) -> String {
    match ip.to_canonical() {
        std::net::IpAddr::V4(v4) => v4.to_string(),
        std::net::IpAddr::V6(v6) => v6
            .segments()
            .iter()
            .map(|s| format!("{s:x}"))
            .collect::<Vec<_>>()
            .join(":"),
    }
}

impl RequestContext<'_> {
    fn internal(&self) -> bool {
        self.listener.name == crate::cluster::LOCAL_LISTENER
    }

    fn host(&self) -> String {
        java_host_address(self.peer.ip())
    }

    /// May this request's principal perform `op` on `(resource_type, name)`?
    pub fn authorize(&self, op: AclOperation, resource_type: ResourceType, name: &str) -> bool {
        if self.internal() {
            return true;
        }
        match self.broker.authz.snapshot() {
            None => true,
            Some(idx) => {
                idx.authorize(self.principal, &self.host(), op, resource_type, name)
                    == AuthorizationResult::Allowed
            }
        }
    }

    /// `op` on the cluster resource (`kafka-cluster`).
    pub fn authorize_cluster(&self, op: AclOperation) -> bool {
        self.authorize(
            op,
            ResourceType::Cluster,
            skiff_auth::acl::CLUSTER_RESOURCE_NAME,
        )
    }

    /// Kafka's `authorizeByResourceType`: `op` on at least one resource of this type.
    pub fn authorize_by_resource_type(
        &self,
        op: AclOperation,
        resource_type: ResourceType,
    ) -> bool {
        if self.internal() {
            return true;
        }
        match self.broker.authz.snapshot() {
            None => true,
            Some(idx) => {
                idx.authorize_by_resource_type(self.principal, &self.host(), op, resource_type)
                    == AuthorizationResult::Allowed
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn hosts_are_written_as_java_writes_them() {
        let h = |s: &str| super::java_host_address(s.parse().unwrap());
        assert_eq!(h("127.0.0.1"), "127.0.0.1");
        assert_eq!(h("::1"), "0:0:0:0:0:0:0:1");
        assert_eq!(h("::ffff:10.0.0.7"), "10.0.0.7");
        assert_eq!(h("fe80::1:abcd"), "fe80:0:0:0:0:0:1:abcd");
    }
}

/// Test helpers: a request as a given principal from a given host, and ACL building.
#[cfg(test)]
#[allow(clippy::unwrap_used, dead_code)] // used by the handlers' authorization tests
pub(crate) mod testing {
    use std::sync::Arc;

    use skiff_auth::acl::{AclBinding, AclIndex, AclOperation, AclPermission, AuthorizerConfig};
    use skiff_auth::acl::{PatternType, ResourceType};
    use skiff_auth::principal::KafkaPrincipal;
    use skiff_protocol::RequestBody;

    use crate::broker::Broker;
    use crate::handlers::{self, ListenerInfo, Reply, RequestContext};

    /// Dispatches `body` as `principal` connecting from `127.0.0.1` on a PLAINTEXT listener.
    pub(crate) fn call_as(
        broker: &Arc<Broker>,
        principal: &KafkaPrincipal,
        version: i16,
        body: RequestBody,
    ) -> Reply {
        let listener = ListenerInfo {
            name: "PLAINTEXT".into(),
            advertised_host: "127.0.0.1".into(),
            advertised_port: 9092,
            controller: false,
        };
        let ctx = RequestContext {
            broker,
            listener: &listener,
            peer: "127.0.0.1:5000".parse().unwrap(),
            api_version: version,
            correlation_id: 1,
            client_id: Some("authz-test"),
            principal,
        };
        handlers::dispatch(&ctx, body)
    }

    /// An ALLOW (or DENY) ACL for `User:<user>` from any host.
    pub(crate) fn acl(
        user: &str,
        permission: AclPermission,
        op: AclOperation,
        resource_type: ResourceType,
        pattern: PatternType,
        name: &str,
    ) -> AclBinding {
        AclBinding {
            resource_type,
            resource_name: name.to_string(),
            pattern_type: pattern,
            principal: format!("User:{user}"),
            host: "*".into(),
            operation: op,
            permission,
        }
    }

    /// Turns the broker's authorizer on with exactly these ACLs (super user `User:admin`).
    pub(crate) fn enable_acls(broker: &Broker, acls: Vec<AclBinding>) {
        let mut idx = AclIndex::new(AuthorizerConfig {
            super_users: vec![KafkaPrincipal::user("admin")],
            allow_everyone_if_no_acl_found: false,
        });
        for (i, a) in acls.into_iter().enumerate() {
            let mut id = [0u8; 16];
            id[..8].copy_from_slice(&(i as u64 + 1).to_be_bytes());
            idx.add(id, a);
        }
        broker.authz.set(Some(idx));
    }
}
