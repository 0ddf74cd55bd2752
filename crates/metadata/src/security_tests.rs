//! Issue 19: ACLs and SCRAM credentials: replay, snapshot round trip, framing, and the
//! controller's CreateAcls / DeleteAcls / AlterUserScramCredentials rules (table tests).

use std::sync::Arc;

use skiff_auth::acl::{AclBinding, AclOperation as Op, AclPermission, PatternType, ResourceType};
use skiff_auth::sasl::{ScramCredential, ScramMechanism};
use skiff_types::ErrorCode;

use crate::snapshot::image_records;
use crate::{
    AclFilter, ApiError, BrokerHeartbeats, Ctx, MetadataImage, Record, Request, Response,
    ScramDeletion, ScramUpsertion, handle, replay,
};

const CTX: Ctx<'static> = Ctx {
    node_id: 1,
    now_ms: 1_700_000_000_000,
    cluster_id: "c",
    next_offset: 100,
    placement_start: 0,
    heartbeats: &BrokerHeartbeats::new(0, 9000),
};

fn acl(rt: ResourceType, name: &str, pt: PatternType, user: &str, op: Op) -> AclBinding {
    AclBinding {
        resource_type: rt,
        resource_name: name.into(),
        pattern_type: pt,
        principal: format!("User:{user}"),
        host: "*".into(),
        operation: op,
        permission: AclPermission::Allow,
    }
}

fn topic_read(name: &str, user: &str) -> AclBinding {
    acl(
        ResourceType::Topic,
        name,
        PatternType::Literal,
        user,
        Op::Read,
    )
}

/// Handles `request` on `image` and returns the records, the response and the next image.
fn run(image: &MetadataImage, request: Request) -> (Vec<Record>, Response, MetadataImage) {
    let (records, response) = handle(image, &request, &CTX).unwrap();
    let next = replay(image, &records);
    (records, response, next)
}

fn create(image: &MetadataImage, acls: Vec<AclBinding>) -> (Vec<Record>, Response, MetadataImage) {
    run(image, Request::CreateAcls { acls })
}

fn err(code: ErrorCode, m: &str) -> ApiError {
    ApiError::new(code, m)
}

#[test]
fn create_acls_records_replay_and_dedup() {
    let a = topic_read("orders", "alice");
    let b = acl(
        ResourceType::Group,
        "g-",
        PatternType::Prefixed,
        "bob",
        Op::Read,
    );
    let (records, response, image) = create(
        &MetadataImage::default(),
        vec![a.clone(), b.clone(), a.clone()],
    );
    // The duplicate in the request succeeds without a second record.
    assert_eq!(records.len(), 2);
    assert_eq!(
        response,
        Response::AclsCreated(vec![Ok(()), Ok(()), Ok(())])
    );
    let stored: Vec<_> = image.acls().values().cloned().collect();
    assert_eq!(stored.len(), 2);
    assert!(stored.contains(&a) && stored.contains(&b));
    // Ids are fresh, distinct, never nil, and derived from ctx (the same inputs, the same ids).
    let ids: Vec<_> = image.acls().keys().copied().collect();
    assert!(ids.iter().all(|id| *id != [0u8; 16]));
    let (again, _, _) = create(&MetadataImage::default(), vec![a.clone(), b.clone()]);
    assert_eq!(records, again);
    // An ACL equal to a stored one is not written again.
    let (records, response, next) = create(&image, vec![a.clone()]);
    assert!(records.is_empty());
    assert_eq!(response, Response::AclsCreated(vec![Ok(())]));
    assert!(next.acls_ptr_eq(&image));
    // A new one beside stored ones gets an id not in use even at the same next offset.
    let c = topic_read("orders", "carol");
    let (records, _, next) = create(&image, vec![c]);
    assert_eq!(records.len(), 1);
    assert_eq!(next.acls().len(), 3);
}

#[test]
fn create_acls_validation_table() {
    let ok = topic_read("t", "alice");
    let with = |f: &dyn Fn(&mut AclBinding)| {
        let mut b = ok.clone();
        f(&mut b);
        b
    };
    let cases: Vec<(AclBinding, &str)> = vec![
        (
            with(&|b| {
                b.resource_type = ResourceType::Cluster;
                b.resource_name = "other".into();
            }),
            "The only valid name for the CLUSTER resource is kafka-cluster",
        ),
        (
            with(&|b| b.resource_name.clear()),
            "Invalid empty resource name",
        ),
        (
            with(&|b| b.resource_type = ResourceType::Any),
            "Invalid resourceType ANY",
        ),
        (
            with(&|b| b.resource_type = ResourceType::Unknown),
            "Invalid resourceType UNKNOWN",
        ),
        (
            with(&|b| b.pattern_type = PatternType::Match),
            "Invalid patternType MATCH",
        ),
        (
            with(&|b| b.pattern_type = PatternType::Any),
            "Invalid patternType ANY",
        ),
        (with(&|b| b.operation = Op::Any), "Invalid operation ANY"),
        (
            with(&|b| b.operation = Op::Unknown),
            "Invalid operation UNKNOWN",
        ),
        (
            with(&|b| b.permission = AclPermission::Any),
            "Invalid permissionType ANY",
        ),
        (
            with(&|b| b.principal = "alice".into()),
            "Could not parse principal from `alice` (no colon is present separating the principal type from the principal name)",
        ),
    ];
    for (binding, message) in cases {
        let (records, response, _) =
            create(&MetadataImage::default(), vec![binding.clone(), ok.clone()]);
        assert_eq!(
            response,
            Response::AclsCreated(vec![Err(err(ErrorCode::InvalidRequest, message)), Ok(())]),
            "{binding:?}"
        );
        // Only the valid one is written.
        assert_eq!(records.len(), 1, "{binding:?}");
    }
    // The cluster resource by its name is fine.
    let cluster = with(&|b| {
        b.resource_type = ResourceType::Cluster;
        b.resource_name = "kafka-cluster".into();
    });
    let (records, _, _) = create(&MetadataImage::default(), vec![cluster]);
    assert_eq!(records.len(), 1);
}

#[test]
fn create_too_many_acls_is_a_policy_violation() {
    let acls: Vec<_> = (0..=crate::MAX_RECORDS_PER_USER_OP)
        .map(|i| topic_read(&format!("t{i}"), "u"))
        .collect();
    let n = acls.len();
    let (records, response, _) = create(&MetadataImage::default(), acls);
    assert!(records.is_empty());
    let e = err(
        ErrorCode::PolicyViolation,
        "Unable to perform excessively large batch operation.",
    );
    assert_eq!(response, Response::AclsCreated(vec![Err(e); n]));
}

fn filter() -> AclFilter {
    AclFilter::any()
}

#[test]
fn delete_acls_by_filters() {
    let lit = topic_read("orders", "alice");
    let pre = acl(
        ResourceType::Topic,
        "ord",
        PatternType::Prefixed,
        "bob",
        Op::Write,
    );
    let wild = topic_read("*", "carol");
    let grp = acl(
        ResourceType::Group,
        "orders",
        PatternType::Literal,
        "alice",
        Op::Read,
    );
    let (_, _, image) = create(
        &MetadataImage::default(),
        vec![lit.clone(), pre.clone(), wild.clone(), grp.clone()],
    );
    let sorted = |mut v: Vec<AclBinding>| {
        v.sort();
        v
    };
    let matching = |image: &MetadataImage, f: AclFilter| {
        let (_, response, _) = run(image, Request::DeleteAcls { filters: vec![f] });
        match response {
            Response::AclsDeleted(mut r) => sorted(r.remove(0).unwrap()),
            other => panic!("{other:?}"),
        }
    };
    let topic = |name: Option<&str>, pt: PatternType| AclFilter {
        resource_type: ResourceType::Topic,
        resource_name: name.map(str::to_string),
        pattern_type: pt,
        ..filter()
    };
    // MATCH: literal equal, literal wildcard, and prefixes of the name.
    assert_eq!(
        matching(&image, topic(Some("orders"), PatternType::Match)),
        sorted(vec![lit.clone(), pre.clone(), wild.clone()])
    );
    // ANY with a name: exact name of any pattern type.
    assert_eq!(
        matching(&image, topic(Some("ord"), PatternType::Any)),
        vec![pre.clone()]
    );
    // A pattern type: only that type, exact name.
    assert_eq!(
        matching(&image, topic(Some("orders"), PatternType::Literal)),
        vec![lit.clone()]
    );
    assert_eq!(
        matching(&image, topic(None, PatternType::Prefixed)),
        vec![pre.clone()]
    );
    // Entry filters.
    let by_user = AclFilter {
        principal: Some("User:alice".into()),
        ..filter()
    };
    assert_eq!(
        matching(&image, by_user),
        sorted(vec![lit.clone(), grp.clone()])
    );
    let by_op = AclFilter {
        operation: Op::Write,
        ..filter()
    };
    assert_eq!(matching(&image, by_op), vec![pre.clone()]);
    let by_host = AclFilter {
        host: Some("10.0.0.1".into()),
        ..filter()
    };
    assert!(matching(&image, by_host).is_empty());

    // Two overlapping filters: each answers its matches, each ACL is removed once.
    let (records, response, next) = run(
        &image,
        Request::DeleteAcls {
            filters: vec![
                topic(Some("orders"), PatternType::Literal),
                AclFilter {
                    principal: Some("User:alice".into()),
                    ..filter()
                },
                AclFilter {
                    resource_type: ResourceType::Unknown,
                    ..filter()
                },
                AclFilter {
                    permission: AclPermission::Unknown,
                    ..filter()
                },
            ],
        },
    );
    assert_eq!(records.len(), 2);
    let Response::AclsDeleted(r) = response else {
        panic!()
    };
    assert_eq!(r[0], Ok(vec![lit.clone()]));
    assert_eq!(
        r[1].clone().map(sorted),
        Ok(sorted(vec![lit.clone(), grp.clone()]))
    );
    assert_eq!(
        r[2],
        Err(err(ErrorCode::InvalidRequest, "Unknown patternFilter."))
    );
    assert_eq!(
        r[3],
        Err(err(ErrorCode::InvalidRequest, "Unknown entryFilter."))
    );
    assert_eq!(
        sorted(next.acls().values().cloned().collect()),
        sorted(vec![pre, wild])
    );
    // Nothing matched: no records.
    let (records, _, _) = run(
        &next,
        Request::DeleteAcls {
            filters: vec![topic(Some("nope"), PatternType::Literal)],
        },
    );
    assert!(records.is_empty());
}

fn up(name: &str, mechanism: i8, iterations: i32) -> ScramUpsertion {
    ScramUpsertion {
        name: name.into(),
        mechanism,
        iterations,
        salt: b"salt".to_vec(),
        salted_password: vec![7; 32],
    }
}

fn del(name: &str, mechanism: i8) -> ScramDeletion {
    ScramDeletion {
        name: name.into(),
        mechanism,
    }
}

fn alter(
    image: &MetadataImage,
    deletions: Vec<ScramDeletion>,
    upsertions: Vec<ScramUpsertion>,
) -> (Vec<Record>, Vec<crate::ScramResult>, MetadataImage) {
    let (records, response, next) = run(
        image,
        Request::AlterScramCredentials {
            deletions,
            upsertions,
        },
    );
    match response {
        Response::ScramAltered(r) => (records, r, next),
        other => panic!("{other:?}"),
    }
}

#[test]
fn scram_upsert_stores_keys_from_the_salted_password() {
    let (records, results, image) = alter(
        &MetadataImage::default(),
        vec![],
        vec![up("alice", 1, 4096), up("bob", 2, 16384)],
    );
    assert_eq!(records.len(), 2);
    assert_eq!(
        results,
        vec![("alice".to_string(), Ok(())), ("bob".to_string(), Ok(()))]
    );
    let want =
        ScramCredential::from_salted_password(ScramMechanism::Sha256, b"salt", &[7; 32], 4096);
    assert_eq!(
        image.scram_credential("alice", ScramMechanism::Sha256),
        Some(&want)
    );
    assert!(
        image
            .scram_credential("alice", ScramMechanism::Sha512)
            .is_none()
    );
    assert_eq!(
        image
            .scram_credential("bob", ScramMechanism::Sha512)
            .map(|c| c.iterations),
        Some(16384)
    );
    // The salted password itself is in no record.
    for r in &records {
        let Record::UserScramCredential(r) = r else {
            panic!("{r:?}")
        };
        assert_ne!(r.stored_key.as_ref(), &[7u8; 32][..]);
        assert_ne!(r.server_key.as_ref(), &[7u8; 32][..]);
    }
    // Deleting one mechanism leaves the other; deleting the last drops the user.
    let (_, _, image) = alter(&image, vec![], vec![up("alice", 2, 8192)]);
    let (records, results, image) = alter(&image, vec![del("alice", 1)], vec![]);
    assert_eq!(records.len(), 1);
    assert_eq!(results, vec![("alice".to_string(), Ok(()))]);
    assert!(
        image
            .scram_credential("alice", ScramMechanism::Sha256)
            .is_none()
    );
    assert!(
        image
            .scram_credential("alice", ScramMechanism::Sha512)
            .is_some()
    );
    let (_, _, image) = alter(&image, vec![del("alice", 2)], vec![]);
    assert!(!image.scram_credentials().contains_key("alice"));
}

#[test]
fn scram_validation_table() {
    let (_, _, image) = alter(
        &MetadataImage::default(),
        vec![],
        vec![up("carol", 1, 4096)],
    );
    let unacceptable = |m: &str| Err(err(ErrorCode::UnacceptableCredential, m));
    let dup = || {
        Err(err(
            ErrorCode::DuplicateResource,
            "A user credential cannot be altered twice in the same request",
        ))
    };
    type Case = (
        Vec<ScramDeletion>,
        Vec<ScramUpsertion>,
        Vec<(&'static str, Result<(), ApiError>)>,
    );
    let cases: Vec<Case> = vec![
        (
            vec![],
            vec![up("a", 1, 4095)],
            vec![("a", unacceptable("Too few iterations"))],
        ),
        (
            vec![],
            vec![up("a", 1, 16385)],
            vec![("a", unacceptable("Too many iterations"))],
        ),
        (
            vec![],
            vec![up("", 1, 4096)],
            vec![("", unacceptable("Username must not be empty"))],
        ),
        (
            vec![del("", 1)],
            vec![],
            vec![("", unacceptable("Username must not be empty"))],
        ),
        (
            vec![],
            vec![up("a", 3, 4096)],
            vec![(
                "a",
                Err(err(
                    ErrorCode::UnsupportedSaslMechanism,
                    "Unknown SCRAM mechanism",
                )),
            )],
        ),
        (
            vec![del("a", 0)],
            vec![],
            vec![(
                "a",
                Err(err(
                    ErrorCode::UnsupportedSaslMechanism,
                    "Unknown SCRAM mechanism",
                )),
            )],
        ),
        (
            vec![del("nobody", 1)],
            vec![],
            vec![(
                "nobody",
                Err(err(
                    ErrorCode::ResourceNotFound,
                    "Attempt to delete a user credential that does not exist",
                )),
            )],
        ),
        // Present for SHA-256 only: deleting SHA-512 is not found.
        (
            vec![del("carol", 2)],
            vec![],
            vec![(
                "carol",
                Err(err(
                    ErrorCode::ResourceNotFound,
                    "Attempt to delete a user credential that does not exist",
                )),
            )],
        ),
        // A user upserted and deleted, or named twice anyhow, in one request.
        (
            vec![del("carol", 1)],
            vec![up("carol", 1, 4096)],
            vec![("carol", dup())],
        ),
        (
            vec![],
            vec![up("a", 1, 4096), up("a", 2, 4096)],
            vec![("a", dup())],
        ),
        (
            vec![del("carol", 1), del("carol", 1)],
            vec![],
            vec![("carol", dup())],
        ),
        // Others in the same request are unaffected; successes come first.
        (
            vec![],
            vec![up("x", 1, 10), up("y", 1, 4096)],
            vec![("y", Ok(())), ("x", unacceptable("Too few iterations"))],
        ),
    ];
    for (deletions, upsertions, want) in cases {
        let what = format!("{deletions:?} {upsertions:?}");
        let (records, results, _) = alter(&image, deletions, upsertions);
        let want: Vec<_> = want.into_iter().map(|(u, r)| (u.to_string(), r)).collect();
        assert_eq!(results, want, "{what}");
        let ok = want.iter().filter(|(_, r)| r.is_ok()).count();
        assert_eq!(records.len(), ok, "{what}");
    }
}

#[test]
fn replay_skips_removals_of_absent_entries() {
    use skiff_protocol::{RemoveAccessControlEntryRecord, RemoveUserScramCredentialRecord};
    let image = MetadataImage::default();
    let next = replay(
        &image,
        &[
            Record::RemoveAccessControlEntry(RemoveAccessControlEntryRecord {
                id: uuid::Uuid::from_u128(9),
            }),
            Record::RemoveUserScramCredential(RemoveUserScramCredentialRecord {
                name: "ghost".into(),
                mechanism: 1,
            }),
        ],
    );
    assert_eq!(next, image);
    // Replays that touch neither map keep both shared.
    assert!(Arc::ptr_eq(next.acls(), image.acls()));
    assert!(Arc::ptr_eq(
        next.scram_credentials(),
        image.scram_credentials()
    ));
}

#[test]
fn acls_and_credentials_survive_snapshot_and_framing() {
    let (_, _, image) = create(
        &MetadataImage::default(),
        vec![
            topic_read("orders", "alice"),
            acl(
                ResourceType::Cluster,
                "kafka-cluster",
                PatternType::Literal,
                "admin",
                Op::All,
            ),
            acl(
                ResourceType::TransactionalId,
                "tx-",
                PatternType::Prefixed,
                "bob",
                Op::Write,
            ),
        ],
    );
    let (_, _, image) = alter(
        &image,
        vec![],
        vec![up("alice", 1, 4096), up("bob", 2, 8192)],
    );
    let (_, _, image) = alter(&image, vec![], vec![up("alice", 2, 5000)]);
    let records = image_records(&image);
    assert_eq!(records.len(), 3 + 3);
    assert_eq!(replay(&MetadataImage::default(), &records), image);
    for r in &records {
        let decoded = Record::decode(r.encode().unwrap()).unwrap();
        assert_eq!(decoded.as_ref(), Some(r));
    }
    // Removals frame too.
    let (removals, _, _) = run(
        &image,
        Request::DeleteAcls {
            filters: vec![filter()],
        },
    );
    let (more, _, _) = alter(&image, vec![del("bob", 2)], vec![]);
    for r in removals.iter().chain(&more) {
        let decoded = Record::decode(r.encode().unwrap()).unwrap();
        assert_eq!(decoded.as_ref(), Some(r));
    }
}

#[test]
fn store_writes_survive_reopen_and_listeners_hear_them() {
    use std::sync::Mutex;
    let t = tempfile::tempdir().unwrap();
    crate::format_log_dir(t.path(), "c", 1, false).unwrap();
    let p = t.path().join("__cluster_metadata-0");
    let clock = || skiff_types::Clock::manual(1_700_000_000_000);
    let s = crate::MetadataStore::open(&p, 1, clock()).unwrap();
    let heard: Arc<Mutex<Vec<usize>>> = Arc::default();
    let h = Arc::clone(&heard);
    s.add_image_listener(Arc::new(move |img: &Arc<MetadataImage>| {
        h.lock().unwrap().push(img.acls().len());
    }));
    let a = topic_read("orders", "alice");
    assert_eq!(s.create_acls(vec![a.clone()]).unwrap(), vec![Ok(())]);
    // Nothing to change: nothing published.
    assert_eq!(s.create_acls(vec![a.clone()]).unwrap(), vec![Ok(())]);
    assert_eq!(*heard.lock().unwrap(), vec![1]);
    let results = s
        .alter_scram_credentials(vec![], vec![up("alice", 1, 4096)])
        .unwrap();
    assert_eq!(results, vec![("alice".to_string(), Ok(()))]);
    assert_eq!(heard.lock().unwrap().len(), 2);
    s.close().unwrap();
    drop(s);
    let s = crate::MetadataStore::open(&p, 1, clock()).unwrap();
    let image = s.image();
    assert_eq!(image.acls().values().cloned().collect::<Vec<_>>(), vec![a]);
    assert!(
        image
            .scram_credential("alice", ScramMechanism::Sha256)
            .is_some()
    );
    let deleted = s.delete_acls(vec![filter()]).unwrap();
    assert_eq!(deleted.len(), 1);
    assert!(s.image().acls().is_empty());
}

#[test]
fn image_sink_tells_listeners_of_applied_entries_and_snapshots() {
    use std::sync::Mutex;
    let sink = crate::ImageSink::new();
    let s = crate::MetadataStore::open_quorum(
        Box::new(NoLog),
        &sink,
        "c".into(),
        1,
        skiff_types::Clock::manual(0),
        9000,
    );
    let heard: Arc<Mutex<Vec<usize>>> = Arc::default();
    let h = Arc::clone(&heard);
    s.add_image_listener(Arc::new(move |img: &Arc<MetadataImage>| {
        h.lock().unwrap().push(img.acls().len());
    }));
    let (records, _, image) = create(&MetadataImage::default(), vec![topic_read("t", "u")]);
    sink.apply(&records, 1);
    sink.apply(&[], 2);
    sink.reset(MetadataImage::default(), 3);
    assert_eq!(*heard.lock().unwrap(), vec![1, 0]);
    sink.reset(image, 4);
    assert_eq!(s.image().acls().len(), 1);
}

/// A metadata log that never commits (the sink feeds the image).
#[derive(Debug)]
struct NoLog;

impl crate::MetadataLog for NoLog {
    fn propose(
        &mut self,
        _records: &[Record],
        _now_ms: i64,
    ) -> Result<crate::Committed, crate::MetadataError> {
        Err(crate::MetadataError::NotController)
    }

    fn replay(&mut self, _apply: &mut dyn FnMut(Record)) -> Result<i64, crate::MetadataError> {
        Ok(0)
    }

    fn close(&mut self, _now_ms: i64) -> Result<(), crate::MetadataError> {
        Ok(())
    }

    fn quorum_state(&self) -> crate::QuorumState {
        crate::QuorumState {
            leader_epoch: 0,
            high_watermark: 0,
            log_end_offset: 0,
        }
    }

    fn applies_through_sink(&self) -> bool {
        true
    }
}
