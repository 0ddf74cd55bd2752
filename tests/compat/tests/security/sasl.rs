//! SASL_PLAINTEXT with PLAIN users from the listener's JAAS text, with stock clients and raw
//! frames: the right password works, a wrong one is SASL_AUTHENTICATION_FAILED and the
//! connection closes; an unknown mechanism is UNSUPPORTED_SASL_MECHANISM with the enabled
//! list; nothing but ApiVersions / SaslHandshake is served before authentication.

use std::time::Instant;

use serde_json::json;
use skiff_compat::Python;
use skiff_protocol::{ApiVersionsRequest, MetadataRequest, ResponseBody};
use skiff_testkit::client::Conn;

use crate::common::*;
use crate::raw;

#[test]
fn sasl_plain_right_password_works_wrong_one_fails_and_closes() {
    let t0 = Instant::now();
    let s = Setup::new(&["SASL_PLAINTEXT"]).mechanisms("PLAIN").start();
    let addr = s.addr("SASL_PLAINTEXT");
    let port = s.port("SASL_PLAINTEXT");
    let alice = s.rd(
        "SASL_PLAINTEXT",
        Some(("PLAIN", "alice", "alice-secret")),
        None,
    );
    let alice_kp = s.kp(
        "SASL_PLAINTEXT",
        Some(("PLAIN", "alice", "alice-secret")),
        None,
    );
    phase(t0, "SASL_PLAINTEXT broker up");

    let vals = ["p-1", "p-2"];
    let r = ck(
        Python::PyPi,
        "roundtrip",
        &addr,
        &alice,
        json!({"topic": "plain-ck-pypi", "messages": vals}),
    );
    assert_ck_roundtrip(&r, &vals, "PyPI confluent-kafka PLAIN");
    let r = ck(
        Python::Debian,
        "roundtrip",
        &addr,
        &alice,
        json!({"topic": "plain-ck-debian", "messages": vals}),
    );
    assert_ck_roundtrip(&r, &vals, "Debian confluent-kafka PLAIN");
    let r = ck(
        Python::PyPi,
        "create_topics",
        &addr,
        &alice,
        json!({"topics": ["plain-kcat", "plain-kp"]}),
    );
    assert_eq!(
        r["results"],
        json!({"plain-kcat": null, "plain-kp": null}),
        "{r}"
    );
    assert_eq!(
        kcat_roundtrip(&addr, &alice, "plain-kcat", &vals),
        vals,
        "kcat PLAIN"
    );
    let r = kp(
        "roundtrip",
        &addr,
        &alice_kp,
        json!({"topic": "plain-kp", "messages": vals}),
    );
    assert_kp_roundtrip(&r, &vals, "kafka-python PLAIN");
    phase(
        t0,
        "right password: confluent-kafka PyPI + Debian, kcat, kafka-python",
    );

    // Wrong password: librdkafka reports SASL_AUTHENTICATION_FAILED as _AUTHENTICATION with
    // the broker's message.
    let wrong = s.rd("SASL_PLAINTEXT", Some(("PLAIN", "alice", "nope")), None);
    for py in [Python::PyPi, Python::Debian] {
        let r = ck(py, "probe", &addr, &wrong, json!({"timeout_s": 10}));
        assert_eq!(r["ok"], json!(false), "{py:?} wrong password: {r}");
        let text = cb_text(&r);
        assert!(
            text.contains("_AUTHENTICATION")
                && text.contains("SASL authentication error")
                && text.contains("Invalid username or password"),
            "{py:?} wrong password: {r}"
        );
    }
    let unknown = s.rd(
        "SASL_PLAINTEXT",
        Some(("PLAIN", "mallory", "alice-secret")),
        None,
    );
    let r = ck(
        Python::PyPi,
        "probe",
        &addr,
        &unknown,
        json!({"timeout_s": 10}),
    );
    assert!(cb_text(&r).contains("_AUTHENTICATION"), "unknown user: {r}");
    let out = kcat_list(&addr, &wrong);
    assert!(!out.status.success(), "kcat wrong password: {}", out.stdout);
    assert!(
        out.stderr.contains("SASL authentication error"),
        "kcat: {}",
        out.stderr
    );
    phase(
        t0,
        "wrong password / unknown user refused (confluent-kafka, kcat)",
    );

    // Raw: error 58 with a message, then the broker closes the connection.
    let mut c = Conn::open(port);
    let h = raw::handshake(&mut c, "PLAIN");
    assert_eq!(
        (h.error_code, h.mechanisms.clone()),
        (0, vec!["PLAIN".to_owned()]),
        "{h:?}"
    );
    let a = raw::plain_authenticate(&mut c, "alice", "nope");
    assert_eq!(a.error_code, SASL_AUTHENTICATION_FAILED, "{a:?}");
    assert!(
        a.error_message.as_deref().is_some_and(|m| !m.is_empty()),
        "SASL_AUTHENTICATION_FAILED carries a message: {a:?}"
    );
    raw::assert_closed(&c, "after a failed SaslAuthenticate");
    // The right password on a fresh connection works and serves Metadata.
    let mut c = raw::plain_conn(port, "alice", "alice-secret");
    let topics = raw::metadata_named(&mut c, &["plain-kp"]);
    assert_eq!(topics, [("plain-kp".to_owned(), 0)]);
    phase(
        t0,
        "raw: SaslAuthenticate error 58 + message, connection closed",
    );

    // kafka-python: refused; whether it names the error depends on a client race (see
    // assert_kp_refused).
    let r = kp(
        "probe",
        &addr,
        &s.kp("SASL_PLAINTEXT", Some(("PLAIN", "alice", "nope")), None),
        json!({"timeout_s": 4}),
    );
    assert_kp_refused(&r, "SaslAuthenticationFailedError", "kafka-python");
    phase(t0, "kafka-python: SaslAuthenticationFailedError");
}

#[test]
fn sasl_unknown_mechanism_lists_the_enabled_ones_and_nothing_is_served_before_auth() {
    let t0 = Instant::now();
    let s = Setup::new(&["SASL_PLAINTEXT"]).mechanisms("PLAIN").start();
    let addr = s.addr("SASL_PLAINTEXT");
    let port = s.port("SASL_PLAINTEXT");
    phase(t0, "SASL_PLAINTEXT broker (PLAIN only) up");

    // librdkafka asking for SCRAM-SHA-512 gets UNSUPPORTED_SASL_MECHANISM and shows the list.
    let scram = s.rd(
        "SASL_PLAINTEXT",
        Some(("SCRAM-SHA-512", "alice", "alice-secret")),
        None,
    );
    for py in [Python::PyPi, Python::Debian] {
        let r = ck(py, "probe", &addr, &scram, json!({"timeout_s": 10}));
        assert_eq!(r["ok"], json!(false), "{py:?}: {r}");
        let text = cb_text(&r);
        assert!(
            text.contains("Unsupported SASL mechanism")
                && text.contains("supported mechanisms: PLAIN"),
            "{py:?} SCRAM-SHA-512 against PLAIN only: {r}"
        );
    }
    let out = kcat_list(&addr, &scram);
    assert!(!out.status.success(), "kcat SCRAM-SHA-512: {}", out.stdout);
    assert!(
        out.stderr.contains("supported mechanisms: PLAIN"),
        "kcat: {}",
        out.stderr
    );
    phase(t0, "unknown mechanism: confluent-kafka (list shown), kcat");

    // Raw: SaslHandshake v1 FOO -> 33 + ["PLAIN"], then closed.
    let mut c = Conn::open(port);
    let ResponseBody::ApiVersions(v) = c.call(3, ApiVersionsRequest::default()) else {
        panic!("not an ApiVersions response")
    };
    assert_eq!(
        v.error_code, 0,
        "ApiVersions is served before authentication"
    );
    let h = raw::handshake(&mut c, "FOO");
    assert_eq!(h.error_code, UNSUPPORTED_SASL_MECHANISM, "{h:?}");
    assert_eq!(h.mechanisms, ["PLAIN"], "{h:?}");
    raw::assert_closed(&c, "after an unsupported SaslHandshake");
    phase(t0, "raw: SaslHandshake FOO -> 33 with [PLAIN], closed");

    // Raw: Metadata before authentication -> closed without an answer.
    let mut c = Conn::open(port);
    let r = c.client.call(12, MetadataRequest::default());
    assert!(
        r.is_err(),
        "Metadata before authentication was answered: {r:?}"
    );
    raw::assert_closed(&c, "after Metadata before authentication");
    // After a successful handshake but before SaslAuthenticate, too.
    let mut c = Conn::open(port);
    assert_eq!(raw::handshake(&mut c, "PLAIN").error_code, 0);
    let r = c.client.call(12, MetadataRequest::default());
    assert!(
        r.is_err(),
        "Metadata between handshake and authenticate was answered: {r:?}"
    );
    phase(t0, "raw: Metadata before authentication -> closed");

    // The broker still serves authenticated clients.
    let mut c = raw::plain_conn(port, "bob", "bob-secret");
    let ResponseBody::ApiVersions(v) = c.call(3, ApiVersionsRequest::default()) else {
        panic!("not an ApiVersions response")
    };
    assert_eq!(v.error_code, 0);
    phase(t0, "the broker still serves");

    // kafka-python with OAUTHBEARER raises the error class (it does not show the list).
    let mut oauth = s.kp("SASL_PLAINTEXT", None, None);
    oauth["sasl_mechanism"] = json!("OAUTHBEARER");
    oauth["oauth_token"] = json!("not-a-real-token");
    let r = kp("probe", &addr, &oauth, json!({"timeout_s": 4}));
    assert_kp_refused(&r, "UnsupportedSaslMechanismError", "kafka-python");
    phase(
        t0,
        "kafka-python OAUTHBEARER: UnsupportedSaslMechanismError",
    );
}
