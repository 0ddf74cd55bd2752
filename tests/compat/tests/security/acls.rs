//! ACLs through confluent-kafka's AdminClient (create / describe / delete) with Kafka's
//! StandardAuthorizer semantics, as seen by stock clients: the super user bypasses, a user
//! without READ gets TOPIC_AUTHORIZATION_FAILED and does not see the topic (named Metadata
//! answers 29 whether the topic exists or not), GROUP READ gates offset commits, PREFIXED
//! grants a family of topics, DENY beats ALLOW, a deleted grant stops an already-open
//! connection, and a non-super user cannot create ACLs.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use skiff_compat::Python;
use skiff_testkit::wait_until;

use crate::common::*;
use crate::raw;

fn acl(resource_type: &str, name: &str, pattern: &str, op: &str, permission: &str) -> Value {
    json!({"resource_type": resource_type, "name": name, "pattern": pattern,
           "principal": "User:alice", "host": "*", "operation": op, "permission": permission})
}

#[test]
fn acls_via_admin_client_read_metadata_groups_prefixed_deny_super_and_live_revocation() {
    let t0 = Instant::now();
    let s = Setup::new(&["SASL_PLAINTEXT"])
        .mechanisms("PLAIN")
        .acls()
        .start();
    let addr = s.addr("SASL_PLAINTEXT");
    let port = s.port("SASL_PLAINTEXT");
    let admin = s.rd(
        "SASL_PLAINTEXT",
        Some(("PLAIN", "admin", "admin-secret")),
        None,
    );
    let alice = s.rd(
        "SASL_PLAINTEXT",
        Some(("PLAIN", "alice", "alice-secret")),
        None,
    );
    let admin_ck = |cmd: &str, p: Value| ck(Python::PyPi, cmd, &addr, &admin, p);
    let alice_ck = |cmd: &str, p: Value| ck(Python::PyPi, cmd, &addr, &alice, p);
    phase(t0, "SASL_PLAINTEXT broker with StandardAuthorizer up");

    // The super user needs no ACL: creates topics, produces and reads.
    let topics = ["secret", "shared-a", "shared-b"];
    let r = admin_ck("create_topics", json!({"topics": topics}));
    assert_eq!(
        r["results"],
        json!({"secret": null, "shared-a": null, "shared-b": null}),
        "{r}"
    );
    for t in topics {
        let r = admin_ck(
            "roundtrip",
            json!({"topic": t, "messages": [format!("{t}-0")], "create": false}),
        );
        assert_ck_roundtrip(&r, &[&format!("{t}-0")], &format!("super user on {t}"));
    }
    phase(
        t0,
        "super user (User:admin) bypasses: topics created, produced, read",
    );

    // alice has no ACL: nothing visible, 29 for a named topic existing or not.
    let r = alice_ck("metadata", json!({"named": ["secret", "no-such-topic"]}));
    assert_eq!(
        r["all"],
        json!([]),
        "all-topics Metadata omits unauthorized topics: {r}"
    );
    assert_eq!(
        r["named"],
        json!({"secret": "TOPIC_AUTHORIZATION_FAILED", "no-such-topic": "TOPIC_AUTHORIZATION_FAILED"}),
        "{r}"
    );
    let mut raw_alice = raw::plain_conn(port, "alice", "alice-secret");
    assert_eq!(
        raw::metadata_named(&mut raw_alice, &["secret", "no-such-topic"]),
        [
            ("secret".to_owned(), TOPIC_AUTHORIZATION_FAILED),
            ("no-such-topic".to_owned(), TOPIC_AUTHORIZATION_FAILED)
        ]
    );
    phase(
        t0,
        "no ACL: hidden from all-topics Metadata, named Metadata 29 existing or not",
    );

    // A non-super user cannot create ACLs.
    let r = alice_ck(
        "acl_create",
        json!({"acls": [acl("TOPIC", "secret", "LITERAL", "READ", "ALLOW")]}),
    );
    assert_eq!(
        r["results"],
        json!(["CLUSTER_AUTHORIZATION_FAILED"]),
        "alice creating ACLs: {r}"
    );
    phase(t0, "create_acls by alice -> CLUSTER_AUTHORIZATION_FAILED");

    // Grants: DESCRIBE (not READ) on "secret", READ on the "shared-" prefix, DESCRIBE (not
    // READ) on group g1.
    let describe_secret = acl("TOPIC", "secret", "LITERAL", "DESCRIBE", "ALLOW");
    let prefixed = acl("TOPIC", "shared-", "PREFIXED", "READ", "ALLOW");
    let group_describe = acl("GROUP", "g1", "LITERAL", "DESCRIBE", "ALLOW");
    let r = admin_ck(
        "acl_create",
        json!({"acls": [describe_secret.clone(), prefixed.clone(), group_describe.clone()]}),
    );
    assert_eq!(r["results"], json!([null, null, null]), "{r}");
    let r = admin_ck(
        "acl_describe",
        json!({"filter": {"principal": "User:alice"}}),
    );
    let mut want = vec![
        describe_secret.clone(),
        group_describe.clone(),
        prefixed.clone(),
    ];
    want.sort_by_key(|b| b.to_string());
    let mut got = r["acls"].as_array().cloned().unwrap_or_default();
    got.sort_by_key(|b| b.to_string());
    assert_eq!(got, want, "describe_acls for User:alice: {r}");
    let r = admin_ck(
        "acl_describe",
        json!({"filter": {"resource_type": "TOPIC", "pattern": "PREFIXED"}}),
    );
    assert_eq!(
        r["acls"],
        json!([prefixed]),
        "describe_acls PREFIXED topics: {r}"
    );
    phase(
        t0,
        "create_acls + describe_acls (by principal, by pattern type)",
    );

    // Without READ, consuming is TOPIC_AUTHORIZATION_FAILED (librdkafka and kafka-python).
    let r = alice_ck("consume", json!({"topic": "secret"}));
    assert_eq!(r["values"], json!([]), "{r}");
    assert_eq!(
        r["errors"],
        json!(["TOPIC_AUTHORIZATION_FAILED"]),
        "alice consumes secret: {r}"
    );
    let alice_kp = s.kp(
        "SASL_PLAINTEXT",
        Some(("PLAIN", "alice", "alice-secret")),
        None,
    );
    let r = kp("consume", &addr, &alice_kp, json!({"topic": "secret"}));
    assert_eq!(r["values"], json!([]), "{r}");
    assert_eq!(
        r["exception"]["error"],
        json!("TopicAuthorizationFailedError"),
        "kafka-python: {r}"
    );
    phase(
        t0,
        "DESCRIBE without READ: TOPIC_AUTHORIZATION_FAILED (confluent-kafka, kafka-python)",
    );

    // PREFIXED grants the family.
    for t in ["shared-a", "shared-b"] {
        let r = alice_ck("consume", json!({"topic": t}));
        assert_eq!(
            (r["values"].clone(), r["errors"].clone()),
            (json!([format!("{t}-0")]), json!([])),
            "{t}: {r}"
        );
    }
    let r = alice_ck("metadata", json!({"named": ["shared-a", "no-such-topic"]}));
    assert_eq!(r["all"], json!(["secret", "shared-a", "shared-b"]), "{r}");
    assert_eq!(
        r["named"],
        json!({"shared-a": null, "no-such-topic": "TOPIC_AUTHORIZATION_FAILED"}),
        "{r}"
    );
    phase(t0, "PREFIXED shared- grants shared-a and shared-b");

    // GROUP READ gates OffsetCommit.
    let r = alice_ck(
        "commit",
        json!({"group": "g1", "topic": "shared-a", "offset": 1}),
    );
    assert_eq!(
        r["error"],
        json!("GROUP_AUTHORIZATION_FAILED"),
        "commit without GROUP READ: {r}"
    );
    let r = admin_ck(
        "acl_create",
        json!({"acls": [acl("GROUP", "g1", "LITERAL", "READ", "ALLOW")]}),
    );
    assert_eq!(r["results"], json!([null]), "{r}");
    let r = alice_ck(
        "commit",
        json!({"group": "g1", "topic": "shared-a", "offset": 1}),
    );
    assert_eq!(r["error"], Value::Null, "commit with GROUP READ: {r}");
    phase(
        t0,
        "OffsetCommit: GROUP_AUTHORIZATION_FAILED without GROUP READ, OK with it",
    );

    // DENY beats ALLOW.
    let deny = acl("TOPIC", "shared-b", "LITERAL", "READ", "DENY");
    let r = admin_ck("acl_create", json!({"acls": [deny.clone()]}));
    assert_eq!(r["results"], json!([null]), "{r}");
    let r = alice_ck("consume", json!({"topic": "shared-b"}));
    assert_eq!(
        r["errors"],
        json!(["TOPIC_AUTHORIZATION_FAILED"]),
        "DENY beats the PREFIXED ALLOW: {r}"
    );
    let r = alice_ck("consume", json!({"topic": "shared-a"}));
    assert_eq!(r["errors"], json!([]), "shared-a unaffected: {r}");
    phase(t0, "DENY READ on shared-b beats the PREFIXED ALLOW");

    // Revocation reaches an already-open connection.
    assert_eq!(
        raw::metadata_named(&mut raw_alice, &["shared-a"]),
        [("shared-a".to_owned(), 0)]
    );
    let r = admin_ck(
        "acl_delete",
        json!({"filters": [{"resource_type": "TOPIC", "name": "shared-", "pattern": "PREFIXED", "principal": "User:alice"}]}),
    );
    assert_eq!(r["deleted"], json!([[prefixed]]), "delete_acls: {r}");
    wait_until(
        "the open connection refused after delete_acls",
        Duration::from_secs(10),
        || {
            let got = raw::metadata_named(&mut raw_alice, &["shared-a"]);
            (got == [("shared-a".to_owned(), TOPIC_AUTHORIZATION_FAILED)]).then_some(())
        },
    );
    let r = alice_ck("metadata", json!({"named": ["shared-a"]}));
    assert_eq!(r["all"], json!(["secret"]), "after delete_acls: {r}");
    assert_eq!(
        r["named"],
        json!({"shared-a": "TOPIC_AUTHORIZATION_FAILED"}),
        "{r}"
    );
    let r = admin_ck(
        "acl_describe",
        json!({"filter": {"resource_type": "TOPIC", "principal": "User:alice"}}),
    );
    let mut got = r["acls"].as_array().cloned().unwrap_or_default();
    got.sort_by_key(|b| b.to_string());
    let mut want = vec![describe_secret, deny];
    want.sort_by_key(|b| b.to_string());
    assert_eq!(
        got, want,
        "the DESCRIBE and the DENY are left on topics: {r}"
    );
    phase(t0, "delete_acls: the same open connection is refused again");
}
