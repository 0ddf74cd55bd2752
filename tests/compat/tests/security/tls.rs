//! TLS listeners with stock clients: server-only TLS (a client must trust the CA), mutual TLS
//! (`ssl.client.auth=required`, the principal from the client certificate is what ACLs see)
//! and wrong-protocol bytes on both kinds of port.

use std::time::Instant;

use serde_json::{Value, json};
use skiff_compat::Python;
use skiff_protocol::{ApiVersionsRequest, ResponseBody};
use skiff_testkit::certs::TestPki;
use skiff_testkit::client::Conn;

use crate::common::*;
use crate::raw;

#[test]
fn tls_server_only_kcat_confluent_kafka_kafka_python_and_an_untrusted_ca_fails() {
    let t0 = Instant::now();
    let s = Setup::new(&["SSL"]).start();
    let addr = s.addr("SSL");
    let rd = s.rd("SSL", None, None);
    let kpc = s.kp("SSL", None, None);
    phase(t0, "SSL broker up");

    let vals = ["tls-1", "tls-2", "tls-3"];
    let r = ck(
        Python::PyPi,
        "roundtrip",
        &addr,
        &rd,
        json!({"topic": "tls-ck-pypi", "messages": vals}),
    );
    assert_ck_roundtrip(&r, &vals, "PyPI confluent-kafka over SSL");
    phase(t0, "PyPI confluent-kafka produce+consume over SSL");
    let r = ck(
        Python::Debian,
        "roundtrip",
        &addr,
        &rd,
        json!({"topic": "tls-ck-debian", "messages": vals}),
    );
    assert_ck_roundtrip(&r, &vals, "Debian confluent-kafka over SSL");
    phase(t0, "Debian confluent-kafka produce+consume over SSL");
    let r = ck(
        Python::PyPi,
        "create_topics",
        &addr,
        &rd,
        json!({"topics": ["tls-kcat", "tls-kp"]}),
    );
    assert_eq!(
        r["results"],
        json!({"tls-kcat": null, "tls-kp": null}),
        "{r}"
    );
    assert_eq!(
        kcat_roundtrip(&addr, &rd, "tls-kcat", &vals),
        vals,
        "kcat over SSL"
    );
    phase(t0, "kcat produce+consume over SSL");
    let r = kp(
        "roundtrip",
        &addr,
        &kpc,
        json!({"topic": "tls-kp", "messages": vals}),
    );
    assert_kp_roundtrip(&r, &vals, "kafka-python over SSL");
    phase(t0, "kafka-python produce+consume over SSL");

    // A client trusting another CA refuses the broker's certificate.
    let other = TestPki::generate(&s.certs.path().join("other-ca"));
    let untrusted = with(
        &rd,
        "ssl.ca.location",
        json!(other.ca_crt.display().to_string()),
    );
    let r = ck(
        Python::PyPi,
        "probe",
        &addr,
        &untrusted,
        json!({"timeout_s": 10}),
    );
    assert_eq!(r["ok"], json!(false), "an untrusted CA must fail: {r}");
    let text = cb_text(&r);
    assert!(
        text.contains("SSL handshake failed") && text.contains("certificate verify failed"),
        "librdkafka's error: {r}"
    );
    let out = kcat_list(&addr, &untrusted);
    assert!(
        !out.status.success(),
        "kcat with an untrusted CA: {}",
        out.stdout
    );
    assert!(
        out.stderr.contains("certificate verify failed"),
        "kcat: {}",
        out.stderr
    );
    let kp_untrusted = with(
        &kpc,
        "ssl_cafile",
        json!(other.ca_crt.display().to_string()),
    );
    let r = kp("probe", &addr, &kp_untrusted, json!({"timeout_s": 4}));
    assert_eq!(
        r["ok"],
        json!(false),
        "kafka-python with an untrusted CA: {r}"
    );
    assert!(
        kp_text(&r).contains("CERTIFICATE_VERIFY_FAILED"),
        "kafka-python: {r}"
    );
    phase(
        t0,
        "an untrusted CA fails (confluent-kafka, kcat, kafka-python)",
    );
}

#[test]
fn mtls_required_client_certs_and_the_certificate_principal_under_acls() {
    let t0 = Instant::now();
    let s = Setup::new(&["SSL"]).client_auth("required").acls().start();
    let addr = s.addr("SSL");
    let admin_cert = s.client_cert("admin");
    let alice_cert = s.client_cert("alice");
    let admin = s.rd("SSL", None, Some(&admin_cert));
    let alice = s.rd("SSL", None, Some(&alice_cert));
    let alice_kp = s.kp("SSL", None, Some(&alice_cert));
    phase(t0, "mTLS broker with ACLs up");

    // CN=admin maps to User:admin, the super user: no ACL needed.
    let r = ck(
        Python::PyPi,
        "create_topics",
        &addr,
        &admin,
        json!({"topics": ["granted", "refused"]}),
    );
    assert_eq!(
        r["results"],
        json!({"granted": null, "refused": null}),
        "{r}"
    );
    let grants = ["WRITE", "READ"].map(|op| {
        json!({"resource_type": "TOPIC", "name": "granted", "pattern": "LITERAL",
               "principal": "User:alice", "operation": op, "permission": "ALLOW"})
    });
    let r = ck(
        Python::PyPi,
        "acl_create",
        &addr,
        &admin,
        json!({ "acls": grants }),
    );
    assert_eq!(r["results"], json!([null, null]), "{r}");
    phase(t0, "admin (CN=admin) created topics and alice's ACLs");

    let vals = ["m-1", "m-2"];
    let r = ck(
        Python::PyPi,
        "roundtrip",
        &addr,
        &alice,
        json!({"topic": "granted", "messages": vals, "create": false}),
    );
    assert_ck_roundtrip(
        &r,
        &vals,
        "PyPI confluent-kafka as CN=alice on an allowed topic",
    );
    let r = ck(
        Python::Debian,
        "consume",
        &addr,
        &alice,
        json!({"topic": "granted"}),
    );
    assert_eq!(
        r["values"],
        json!(vals),
        "Debian confluent-kafka as CN=alice: {r}"
    );
    assert_eq!(
        kcat_roundtrip(&addr, &alice, "granted", &["m-3"]),
        ["m-1", "m-2", "m-3"]
    );
    let r = kp(
        "roundtrip",
        &addr,
        &alice_kp,
        json!({"topic": "granted", "messages": ["m-4"], "expect": 4}),
    );
    assert_eq!(r["exception"], Value::Null, "kafka-python as CN=alice: {r}");
    assert_eq!(r["reports"], json!([null]), "{r}");
    assert_eq!(
        r["values"],
        json!(["m-1", "m-2", "m-3", "m-4"]),
        "kafka-python reads: {r}"
    );
    phase(
        t0,
        "client certificates work (confluent-kafka PyPI + Debian, kcat, kafka-python)",
    );

    // The certificate's principal is what the authorizer sees: alice is refused elsewhere.
    let r = ck(
        Python::PyPi,
        "roundtrip",
        &addr,
        &alice,
        json!({"topic": "refused", "messages": ["x"], "create": false}),
    );
    assert_eq!(
        r["reports"],
        json!(["TOPIC_AUTHORIZATION_FAILED"]),
        "CN=alice producing elsewhere: {r}"
    );
    let r = ck(
        Python::PyPi,
        "metadata",
        &addr,
        &alice,
        json!({"named": ["refused"]}),
    );
    assert_eq!(
        r["all"],
        json!(["granted"]),
        "alice sees only her topic: {r}"
    );
    assert_eq!(
        r["named"]["refused"],
        json!("TOPIC_AUTHORIZATION_FAILED"),
        "{r}"
    );
    phase(
        t0,
        "CN=alice is User:alice to the ACLs (allowed on one topic, refused on another)",
    );

    // Without a client certificate the handshake fails.
    let r = ck(
        Python::PyPi,
        "probe",
        &addr,
        &s.rd("SSL", None, None),
        json!({"timeout_s": 10}),
    );
    assert_eq!(
        r["ok"],
        json!(false),
        "no client certificate must fail: {r}"
    );
    assert!(!cb_text(&r).is_empty(), "{r}");
    let out = kcat_list(&addr, &s.rd("SSL", None, None));
    assert!(
        !out.status.success(),
        "kcat without a client certificate: {}",
        out.stdout
    );
    let r = kp(
        "probe",
        &addr,
        &s.kp("SSL", None, None),
        json!({"timeout_s": 4}),
    );
    assert_eq!(
        r["ok"],
        json!(false),
        "kafka-python without a client certificate: {r}"
    );
    // A certificate from another CA is refused too.
    let other = TestPki::generate(&s.certs.path().join("other-ca"));
    let mallory = other.client_cert("admin", &s.certs.path().join("other-ca"));
    let r = ck(
        Python::PyPi,
        "probe",
        &addr,
        &s.rd("SSL", None, Some(&mallory)),
        json!({"timeout_s": 10}),
    );
    assert_eq!(
        r["ok"],
        json!(false),
        "CN=admin from another CA must fail: {r}"
    );
    phase(
        t0,
        "no client certificate / a foreign CA's certificate: handshake fails",
    );
}

#[test]
fn wrong_protocol_bytes_on_tls_and_plaintext_ports_are_closed_and_the_broker_serves() {
    let t0 = Instant::now();
    let mut s = Setup::new(&["PLAINTEXT", "SSL"]).start();
    let tls = s.port("SSL");
    let plain = s.port("PLAINTEXT");
    phase(t0, "PLAINTEXT + SSL broker up");

    for _ in 0..3 {
        // Kafka bytes on the TLS port: no Kafka answer; at most a TLS alert record.
        let got = raw::send_and_wait_close(tls, &raw::api_versions_frame());
        assert!(
            got.is_empty() || got[0] == 0x15,
            "the TLS port answered plaintext Kafka with {:?}",
            &got[..got.len().min(32)]
        );
        // A ClientHello on the plaintext port: closed without an answer.
        let got = raw::send_and_wait_close(plain, raw::CLIENT_HELLO);
        assert!(
            got.is_empty(),
            "the plaintext port answered a ClientHello: {got:?}"
        );
    }
    phase(
        t0,
        "raw ApiVersions on SSL and a ClientHello on PLAINTEXT closed",
    );

    // Real clients on the wrong port: a full ClientHello to PLAINTEXT, plaintext to SSL.
    let rd_tls = s.rd("SSL", None, None);
    let out = kcat_list(&s.addr("PLAINTEXT"), &rd_tls);
    assert!(
        !out.status.success(),
        "kcat SSL to the plaintext port: {}",
        out.stdout
    );
    let out = kcat_list(&s.addr("SSL"), &json!({"security.protocol": "PLAINTEXT"}));
    assert!(
        !out.status.success(),
        "kcat plaintext to the TLS port: {}",
        out.stdout
    );
    phase(t0, "kcat on the wrong ports fails");

    // The broker still serves both listeners.
    assert!(s.broker.try_wait().is_none(), "the broker exited");
    let mut c = Conn::open(plain);
    let ResponseBody::ApiVersions(r) = c.call(3, ApiVersionsRequest::default()) else {
        panic!("not an ApiVersions response")
    };
    assert_eq!(r.error_code, 0);
    let out = kcat_list(&s.addr("SSL"), &rd_tls);
    out.assert_success("kcat -L over SSL after the bad connections");
    let r = ck(
        Python::PyPi,
        "roundtrip",
        &s.addr("SSL"),
        &rd_tls,
        json!({"topic": "after", "messages": ["ok"]}),
    );
    assert_ck_roundtrip(
        &r,
        &["ok"],
        "confluent-kafka over SSL after the bad connections",
    );
    phase(t0, "the broker still serves PLAINTEXT and SSL");
}
