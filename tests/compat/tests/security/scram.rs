//! SASL_SSL with SCRAM-SHA-256 and SCRAM-SHA-512: users created, described and deleted with
//! confluent-kafka's AdminClient (AlterUserScramCredentials / DescribeUserScramCredentials,
//! as the PLAIN user `admin`), used to log in by librdkafka (confluent-kafka, kcat) and
//! kafka-python, kept across restarts (they are metadata records), refused once deleted.

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
        Python::Debian,
        "roundtrip",
        &addr,
        &bob,
        json!({"topic": "scram-ck-debian", "messages": vals}),
    );
    assert_ck_roundtrip(&r, &vals, "Debian confluent-kafka SCRAM-SHA-512");
    let r = ck(
        Python::PyPi,
        "create_topics",
        &addr,
        &admin,
        json!({"topics": ["scram-kcat", "scram-kp"]}),
    );
    assert_eq!(
        r["results"],
        json!({"scram-kcat": null, "scram-kp": null}),
        "{r}"
    );
    assert_eq!(
        kcat_roundtrip(&addr, &bob, "scram-kcat", &vals),
        vals,
        "kcat SCRAM-SHA-512"
    );
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
        "SCRAM logins: confluent-kafka PyPI + Debian, kcat, kafka-python",
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
    kcat_list(&addr, &bob).assert_success("kcat bob SCRAM-SHA-512 after restart");
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
    let out = kcat_list(&addr, &alice);
    assert!(!out.status.success(), "kcat deleted alice: {}", out.stdout);
    let r = kp("probe", &addr, &alice_kp, json!({"timeout_s": 4}));
    assert_kp_refused(&r, "SaslAuthenticationFailedError", "kafka-python");
    kcat_list(&addr, &bob).assert_success("kcat bob after alice's deletion");
    phase(
        t0,
        "deleted credential refused (confluent-kafka, kcat, kafka-python); bob works",
    );

    // The deletion survives a restart too.
    s.broker.stop();
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
