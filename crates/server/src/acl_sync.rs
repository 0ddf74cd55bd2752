//! Issue 19: the broker's authorizer follows the metadata image's ACLs, and the SASL login
//! path reads SCRAM credentials from the image.
//!
//! Mental model: the image is the truth (ACLs are `AccessControlEntryRecord`s, replicated to
//! every node by the metadata log and its snapshots); [`crate::authz::Authz`] holds an
//! immutable `AclIndex` built from it. [`install`] builds the index once from the current
//! image and registers an image listener (`MetadataStore::add_image_listener`) that rebuilds
//! it whenever a published image carries another ACL map. The image keeps its ACL map behind
//! an `Arc` that replays without ACL records share, so the check per published image is one
//! pointer comparison: a produce-heavy metadata stream (topic creations, ISR changes) never
//! rebuilds the index.
//!
//! Invariants: the index always uses the authorizer's own `AuthorizerConfig` (super users,
//! `allow.everyone.if.no.acl.found`), taken from the current index; without an authorizer
//! nothing is built (and nothing is remembered, so enabling one later and calling [`sync`]
//! or [`install`] builds it); rebuilds are serialised, and each reads the newest image under
//! that lock, so a slow rebuild can never install an older ACL set after a newer one. The
//! listener holds the broker weakly.

use std::sync::Arc;

use parking_lot::Mutex;
use skiff_auth::acl::{AclIndex, AuthorizerConfig};
use skiff_auth::sasl::{ScramCredential, ScramMechanism};
use skiff_metadata::AclMap;

use crate::broker::Broker;

/// The ACL map the authorizer was last built from.
type Last = Mutex<Option<Arc<AclMap>>>;

/// Builds the authorizer's ACLs from the image now and keeps them in step with every image
/// published from now on. Call once at open, after the authorizer is set.
pub fn install(broker: &Arc<Broker>) {
    let last: Arc<Last> = Arc::default();
    sync_with(broker, &last);
    let weak = Arc::downgrade(broker);
    broker
        .metadata
        .add_image_listener(Arc::new(move |_image: &Arc<_>| {
            if let Some(b) = weak.upgrade() {
                sync_with(&b, &last);
            }
        }));
}

/// Turns the authorizer on with `config` and the image's ACLs, and keeps it in step
/// ([`install`]).
pub fn enable(broker: &Arc<Broker>, config: AuthorizerConfig) {
    broker.authz.set(Some(AclIndex::new(config)));
    install(broker);
}

/// Rebuilds the authorizer's ACLs from the current image, unconditionally (no authorizer:
/// nothing to do).
pub fn sync(broker: &Broker) {
    sync_with(broker, &Mutex::new(None));
}

fn sync_with(broker: &Broker, last: &Last) {
    let mut last = last.lock();
    let image = broker.image();
    let acls = image.acls();
    if last.as_ref().is_some_and(|l| Arc::ptr_eq(l, acls)) {
        return;
    }
    let Some(current) = broker.authz.snapshot() else {
        return;
    };
    let mut index = AclIndex::new(current.config().clone());
    for (id, binding) in acls.iter() {
        index.add(*id, binding.clone());
    }
    tracing::debug!(
        acls = acls.len(),
        "authorizer ACLs rebuilt from the metadata image"
    );
    broker.authz.replace(index);
    *last = Some(Arc::clone(acls));
}

/// `user`'s SCRAM credential for `m` in the current image (the SASL SCRAM login path).
pub fn scram_credential(broker: &Broker, user: &str, m: ScramMechanism) -> Option<ScramCredential> {
    broker.image().scram_credential(user, m).cloned()
}

/// Test fixtures of the ACL and SCRAM handlers: a one-node broker, its authorizer on or off.
#[cfg(test)]
pub(crate) mod testing {
    use std::sync::Arc;

    use skiff_auth::acl::AuthorizerConfig;
    use skiff_auth::principal::KafkaPrincipal;
    use skiff_protocol::{RequestBody, ResponseBody};

    use crate::broker::Broker;
    use crate::handlers::Reply;

    pub(crate) struct Fixture {
        _dir: tempfile::TempDir,
        pub(crate) broker: Arc<Broker>,
    }

    /// A one-node broker with topic `t`; `authorizer`: on (super user `User:admin`, nobody
    /// else allowed without an ACL) and following the image ([`super::install`]).
    pub(crate) fn fixture(authorizer: bool) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let settings = crate::settings::ServerSettings::with_log_dir(dir.path());
        let (_tx, rx) = tokio::sync::watch::channel(false);
        let broker = Broker::open(
            settings,
            Arc::new(crate::settings::StorageTopicConfigs::default()),
            rx,
        )
        .unwrap();
        broker
            .create_topic("t", 1, std::collections::BTreeMap::new())
            .unwrap();
        if authorizer {
            super::enable(
                &broker,
                AuthorizerConfig {
                    super_users: vec![KafkaPrincipal::user("admin")],
                    allow_everyone_if_no_acl_found: false,
                },
            );
        } else {
            broker.authz.set(None);
        }
        Fixture { _dir: dir, broker }
    }

    /// The response `body` gets from `user` (a `User:` principal).
    pub(crate) fn call(f: &Fixture, user: &str, version: i16, body: RequestBody) -> ResponseBody {
        let p = KafkaPrincipal::user(user);
        match crate::authz::testing::call_as(&f.broker, &p, version, body) {
            Reply::Now(r) => r,
            other => panic!("expected an answer now, got {other:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use skiff_auth::acl::ResourceType;
    use skiff_auth::acl::{AclOperation, AclPermission, AuthorizationResult, PatternType};
    use skiff_auth::principal::KafkaPrincipal;
    use skiff_metadata::AclFilter;

    use super::testing::fixture;

    fn alice_reads_t(b: &crate::broker::Broker) -> bool {
        let idx = b.authz.snapshot().unwrap();
        idx.authorize(
            &KafkaPrincipal::user("alice"),
            "127.0.0.1",
            AclOperation::Read,
            ResourceType::Topic,
            "t",
        ) == AuthorizationResult::Allowed
    }

    #[test]
    fn a_created_acl_reaches_the_authorizer_and_a_deleted_one_leaves_it() {
        let f = fixture(true);
        let b = &f.broker;
        assert!(!alice_reads_t(b));
        let allow = crate::authz::testing::acl(
            "alice",
            AclPermission::Allow,
            AclOperation::Read,
            ResourceType::Topic,
            PatternType::Literal,
            "t",
        );
        b.metadata.create_acls(vec![allow]).unwrap();
        assert!(alice_reads_t(b));
        // Other metadata changes do not rebuild the index (same ACL map).
        let before = b.authz.snapshot().unwrap();
        b.create_topic("u", 1, std::collections::BTreeMap::new())
            .unwrap();
        assert!(std::sync::Arc::ptr_eq(
            &before,
            &b.authz.snapshot().unwrap()
        ));
        b.metadata.delete_acls(vec![AclFilter::any()]).unwrap();
        assert!(!alice_reads_t(b));
        // The super user keeps the authorizer's config through rebuilds.
        let idx = b.authz.snapshot().unwrap();
        assert_eq!(
            idx.config().super_users,
            vec![KafkaPrincipal::user("admin")]
        );
    }

    #[test]
    fn without_an_authorizer_nothing_is_built_and_scram_credentials_are_read_from_the_image() {
        use skiff_auth::sasl::{ScramCredential, ScramMechanism};
        let f = fixture(false);
        let b = &f.broker;
        super::sync(b);
        assert!(b.authz.snapshot().is_none());
        assert!(super::scram_credential(b, "alice", ScramMechanism::Sha256).is_none());
        let up = skiff_metadata::ScramUpsertion {
            name: "alice".into(),
            mechanism: ScramMechanism::Sha256.code(),
            iterations: 4096,
            salt: b"s".to_vec(),
            salted_password: vec![1; 32],
        };
        b.metadata
            .alter_scram_credentials(vec![], vec![up])
            .unwrap();
        let want =
            ScramCredential::from_salted_password(ScramMechanism::Sha256, b"s", &[1; 32], 4096);
        assert_eq!(
            super::scram_credential(b, "alice", ScramMechanism::Sha256),
            Some(want)
        );
        assert!(super::scram_credential(b, "alice", ScramMechanism::Sha512).is_none());
    }
}
