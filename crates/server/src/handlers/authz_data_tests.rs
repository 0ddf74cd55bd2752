//! Authorization of the data-plane and admin handlers (issue 19), through dispatch as a given
//! principal (`crate::authz::testing::call_as`).
//!
//! Mental model: every test opens a one-node broker with topics `t` (allowed to `alice` by the
//! test's ACLs) and `secret` (no ACL for her), then asks as `User:alice` and checks Kafka's
//! code in Kafka's place; a missing topic must answer exactly as `secret` does
//! (authorization before existence); `User:admin` is the super user and bypasses every ACL.
//! Each refused case fails if its handler's check is removed: the same request without the
//! ACL, or as the super user, succeeds.

use std::collections::BTreeMap;
use std::sync::Arc;

use skiff_auth::acl::{AclBinding, AclOperation, AclPermission, PatternType, ResourceType};
use skiff_auth::principal::KafkaPrincipal;
use skiff_protocol::RequestBody;
use skiff_protocol::ResponseBody;

use crate::authz::testing::{acl, call_as, enable_acls};
use crate::broker::Broker;
use crate::handlers::Reply;

mod admin;
mod data;

pub(super) struct Fixture {
    _dir: tempfile::TempDir,
    pub(super) broker: Arc<Broker>,
}

/// A broker with topics `t` and `secret` (one partition each), authorizer off.
pub(super) fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let settings = crate::settings::ServerSettings::with_log_dir(dir.path());
    let (_tx, rx) = tokio::sync::watch::channel(false);
    let broker = Broker::open(
        settings,
        Arc::new(crate::settings::StorageTopicConfigs::default()),
        rx,
    )
    .unwrap();
    for t in ["t", "secret"] {
        broker.create_topic(t, 1, BTreeMap::new()).unwrap();
    }
    Fixture { _dir: dir, broker }
}

pub(super) fn alice() -> KafkaPrincipal {
    KafkaPrincipal::user("alice")
}

pub(super) fn admin() -> KafkaPrincipal {
    KafkaPrincipal::user("admin")
}

/// ALLOW `op` for alice on a literal resource.
pub(super) fn allow(op: AclOperation, rt: ResourceType, name: &str) -> AclBinding {
    acl(
        "alice",
        AclPermission::Allow,
        op,
        rt,
        PatternType::Literal,
        name,
    )
}

/// DENY `op` for alice on a literal resource.
pub(super) fn deny(op: AclOperation, rt: ResourceType, name: &str) -> AclBinding {
    acl(
        "alice",
        AclPermission::Deny,
        op,
        rt,
        PatternType::Literal,
        name,
    )
}

/// ALLOW `op` for alice on the cluster.
pub(super) fn allow_cluster(op: AclOperation) -> AclBinding {
    allow(op, ResourceType::Cluster, "kafka-cluster")
}

impl Fixture {
    /// Turns the authorizer on with exactly these ACLs.
    pub(super) fn acls(&self, acls: Vec<AclBinding>) {
        enable_acls(&self.broker, acls);
    }

    /// The immediate answer to `body` as `who` (a deferred one is awaited).
    pub(super) async fn call(
        &self,
        who: &KafkaPrincipal,
        version: i16,
        body: RequestBody,
    ) -> ResponseBody {
        match call_as(&self.broker, who, version, body) {
            Reply::Now(b) => b,
            Reply::Later(f) | Reply::Hold(f) => f.await,
            other => panic!("expected an answer: {other:?}"),
        }
    }

    pub(super) fn topic_id(&self, name: &str) -> uuid::Uuid {
        uuid::Uuid::from_bytes(self.broker.image().topic(name).unwrap().id)
    }
}
