//! SASL_SSL with SCRAM-SHA-256 and SCRAM-SHA-512: users created, described and deleted with
//! confluent-kafka's AdminClient (AlterUserScramCredentials / DescribeUserScramCredentials,
//! as the PLAIN user `admin`), used to log in by librdkafka (PyPI's confluent-kafka) and
//! kafka-python, kept across restarts (they are metadata records), refused once deleted.
//! Debian's librdkafka 2.0.2 (confluent-kafka 1.7.0, kcat 1.7.1) cannot log in with SCRAM to
//! Kafka 4 (it repeats the client nonce, librdkafka#4895, fixed in 2.6.1): the test checks
//! that Skiff refuses it the same way.

use std::time::Instant;

use serde_json::{Value, json};
use skiff_compat::Python;

use crate::common::*;

fn upsert(user: &str, mechanism: &str, iterations: u32, password: &str) -> Value {
    json!({"user": user, "mechanism": mechanism, "iterations": iterations, "password": password})
}

#[test]
fn scram_users_via_admin_client_log_in_survive_restart_and_deletion_refuses() {
    let t0 = Instant::now();
    let mut s = Setup::new(&["SASL_SSL"]).start();
    let addr = s.addr("SASL_SSL");
    let admin = s.rd("SASL_SSL", Some(("PLAIN", "admin", "admin-secret")), None);
    let alice = s.rd(
        "SASL_SSL",
        Some(("SCRAM-SHA-256", "alice", "alice-scram")),
        None,
    );
    let bob = s.rd(
        "SASL_SSL",
        Some(("SCRAM-SHA-512", "bob", "bob-scram")),
        None,
    );
    phase(
        t0,
        "SASL_SSL broker (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) up",
    );

    // Before any credential exists, SCRAM logins fail.
    let r = ck(
        Python::PyPi,
        "probe",
        &addr,
        &alice,
        json!({"timeout_s": 10}),
    );
    assert!(
        cb_text(&r).contains("_AUTHENTICATION"),
        "SCRAM before the user exists: {r}"
    );

    let r = ck(
        Python::PyPi,
        "scram_alter",
        &addr,
        &admin,
        json!({"upserts": [
            upsert("alice", "SCRAM-SHA-256", 4096, "alice-scram"),
            upsert("bob", "SCRAM-SHA-512", 8192, "bob-scram"),
        ]}),
    );
    assert_eq!(r["results"], json!({"alice": null, "bob": null}), "{r}");
    let described = json!({
        "alice": [["SCRAM-SHA-256", 4096]],
        "bob": [["SCRAM-SHA-512", 8192]],
    });
    let r = ck(
        Python::PyPi,
        "scram_describe",
        &addr,
        &admin,
        json!({"users": ["alice", "bob"]}),
    );
    assert_eq!(r["users"], described, "{r}");
    phase(
        t0,
        "alter_user_scram_credentials + describe (mechanism, iterations)",
    );

    let vals = ["s-1", "s-2"];
    let r = ck(
        Python::PyPi,
        "roundtrip",
        &addr,
        &alice,
        json!({"topic": "scram-ck", "messages": vals}),
    );
    assert_ck_roundtrip(&r, &vals, "PyPI confluent-kafka SCRAM-SHA-256");
    let r = ck(
        Python::PyPi,
        "roundtrip",
        &addr,
        &bob,
        json!({"topic": "scram-ck-512", "messages": vals}),
    );
    assert_ck_roundtrip(&r, &vals, "PyPI confluent-kafka SCRAM-SHA-512");
    let r = ck(
        Python::PyPi,
        "create_topics",
        &addr,
        &admin,
        json!({"topics": ["scram-kp"]}),
    );
    assert_eq!(r["results"], json!({"scram-kp": null}), "{r}");
    let alice_kp = s.kp(
        "SASL_SSL",
        Some(("SCRAM-SHA-256", "alice", "alice-scram")),
        None,
    );
    let bob_kp = s.kp(
        "SASL_SSL",
        Some(("SCRAM-SHA-512", "bob", "bob-scram")),
        None,
    );
    let r = kp(
        "roundtrip",
        &addr,
        &alice_kp,
        json!({"topic": "scram-kp", "messages": vals}),
    );
    assert_kp_roundtrip(&r, &vals, "kafka-python SCRAM-SHA-256");
    let r = kp("probe", &addr, &bob_kp, json!({"timeout_s": 8}));
    assert_eq!(r["ok"], json!(true), "kafka-python SCRAM-SHA-512: {r}");
    phase(
        t0,
        "SCRAM-SHA-256/512 logins: confluent-kafka PyPI (librdkafka 2.16), kafka-python",
    );

    // librdkafka before 2.6.1 (Debian's 2.0.2: confluent-kafka 1.7.0 and kcat) repeats the
    // client nonce in its client-final-message (librdkafka#4895); Kafka 4 compares the nonce
    // strictly (RFC 5802, CVE-2024-56128) and refuses it as invalid credentials, so must we.
    for (who, c) in [("alice", &alice), ("bob", &bob)] {
        let r = ck(Python::Debian, "probe", &addr, c, json!({"timeout_s": 10}));
        assert_eq!(
            r["ok"],
            json!(false),
            "Debian librdkafka 2.0.2 SCRAM as {who}: {r}"
        );
        assert!(
            cb_text(&r).contains("invalid credentials"),
            "Debian librdkafka 2.0.2 SCRAM as {who}: {r}"
        );
    }
    let out = kcat_list(&addr, &bob);
    assert!(
        !out.status.success(),
        "kcat (librdkafka 2.0.2) SCRAM: {}",
        out.stdout
    );
    assert!(
        out.stderr.contains("invalid credentials"),
        "kcat: {}",
        out.stderr
    );
    phase(
        t0,
        "librdkafka 2.0.2 (Debian confluent-kafka, kcat): refused as by Kafka 4",
    );

    // A wrong password, and a mechanism the user has no credential for, are refused.
    let wrong = with(&alice, "sasl.password", json!("nope"));
    let r = ck(
        Python::PyPi,
        "probe",
        &addr,
        &wrong,
        json!({"timeout_s": 10}),
    );
    assert!(
        cb_text(&r).contains("_AUTHENTICATION"),
        "SCRAM wrong password: {r}"
    );
    let other_mech = with(&alice, "sasl.mechanism", json!("SCRAM-SHA-512"));
    let r = ck(
        Python::PyPi,
        "probe",
        &addr,
        &other_mech,
        json!({"timeout_s": 10}),
    );
    assert!(
        cb_text(&r).contains("_AUTHENTICATION"),
        "alice has no SCRAM-SHA-512: {r}"
    );
    let r = kp(
        "probe",
        &addr,
        &with(&alice_kp, "sasl_plain_password", json!("nope")),
        json!({"timeout_s": 4}),
    );
    assert_kp_refused(&r, "SaslAuthenticationFailedError", "kafka-python");
    phase(t0, "wrong SCRAM password / mechanism refused");

    // Credentials are metadata records: they survive a restart.
    assert_eq!(s.broker.stop().code(), Some(0), "clean stop");
    s.broker.restart();
    phase(t0, "broker restarted");
    let r = ck(
        Python::PyPi,
        "scram_describe",
        &addr,
        &admin,
        json!({"users": ["alice", "bob"]}),
    );
    assert_eq!(r["users"], described, "after restart: {r}");
    let r = ck(
        Python::PyPi,
        "probe",
        &addr,
        &alice,
        json!({"timeout_s": 10}),
    );
    assert_eq!(r["ok"], json!(true), "alice after restart: {r}");
    let r = kp("probe", &addr, &bob_kp, json!({"timeout_s": 8}));
    assert_eq!(r["ok"], json!(true), "kafka-python bob after restart: {r}");
    phase(
        t0,
        "after restart: described the same, alice and bob log in",
    );

    // Deleting alice's credential refuses her login; bob is untouched.
    let r = ck(
        Python::PyPi,
        "scram_alter",
        &addr,
        &admin,
        json!({"deletions": [{"user": "alice", "mechanism": "SCRAM-SHA-256"}]}),
    );
    assert_eq!(r["results"], json!({"alice": null}), "{r}");
    let r = ck(
        Python::PyPi,
        "scram_describe",
        &addr,
        &admin,
        json!({"users": ["alice"]}),
    );
    assert_eq!(
        r["users"]["alice"]["error"],
        json!("RESOURCE_NOT_FOUND"),
        "{r}"
    );
    let r = ck(
        Python::PyPi,
        "probe",
        &addr,
        &alice,
        json!({"timeout_s": 10}),
    );
    assert_eq!(r["ok"], json!(false), "deleted alice: {r}");
    assert!(
        cb_text(&r).contains("_AUTHENTICATION"),
        "deleted alice: {r}"
    );
    let r = kp("probe", &addr, &alice_kp, json!({"timeout_s": 4}));
    assert_kp_refused(&r, "SaslAuthenticationFailedError", "kafka-python");
    let r = ck(Python::PyPi, "probe", &addr, &bob, json!({"timeout_s": 10}));
    assert_eq!(r["ok"], json!(true), "bob after alice's deletion: {r}");
    phase(
        t0,
        "deleted credential refused (confluent-kafka, kafka-python); bob works",
    );

    // The deletion survives a restart too.
    assert_eq!(s.broker.stop().code(), Some(0), "clean stop");
    s.broker.restart();
    let r = ck(
        Python::PyPi,
        "probe",
        &addr,
        &alice,
        json!({"timeout_s": 10}),
    );
    assert!(
        cb_text(&r).contains("_AUTHENTICATION"),
        "deleted alice after restart: {r}"
    );
    let r = ck(Python::PyPi, "probe", &addr, &bob, json!({"timeout_s": 10}));
    assert_eq!(r["ok"], json!(true), "bob after the second restart: {r}");
    phase(t0, "after a second restart: alice still refused, bob works");
}
