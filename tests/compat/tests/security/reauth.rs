//! Re-authentication (KIP-368): with `connections.max.reauth.ms` the broker returns the session
//! lifetime in SaslAuthenticate and a stock client (PyPI confluent-kafka, librdkafka >= 2.2)
//! logs in again on the same connection before the session ends; its produces keep being
//! answered across several lifetimes. Checked on the broker's own counters (`/metrics`):
//! SaslAuthenticate requests grow with each session while the client's connections do not.

use std::io::{Read, Write};
use std::time::Instant;

use serde_json::json;
use skiff_compat::Python;

use crate::common::*;

/// `name{labels...}` sample values of the broker's `/metrics` whose line starts with `name{`
/// and contains every `needle`, summed.
fn metric_sum(admin_port: u16, name: &str, needles: &[&str]) -> f64 {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", admin_port)).expect("admin port");
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")))
        .filter(|l| needles.iter().all(|n| l.contains(n)))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[test]
fn sasl_reauthentication_keeps_a_long_lived_producer_working() {
    let t0 = Instant::now();
    let s = Setup::new(&["SASL_PLAINTEXT"])
        .mechanisms("PLAIN")
        .set("connections.max.reauth.ms", "1500")
        .admin()
        .start();
    let addr = s.addr("SASL_PLAINTEXT");
    let admin = s.broker.admin_port().expect("admin port");
    let alice = s.rd(
        "SASL_PLAINTEXT",
        Some(("PLAIN", "alice", "alice-secret")),
        None,
    );
    let r = ck(
        Python::PyPi,
        "create_topics",
        &addr,
        &alice,
        json!({"topics": ["reauth"]}),
    );
    assert_eq!(r["results"], json!({"reauth": null}), "{r}");
    phase(t0, "broker up, topic created");

    let t = Instant::now();
    let before = metric_sum(admin, "skiff_requests_total", &["api=\"SaslAuthenticate\""]);
    let connections_before = metric_sum(admin, "skiff_connections_created_total", &[]);
    // 24 messages, one every 250 ms: 6 s, four session lifetimes of 1.5 s.
    let r = ck(
        Python::PyPi,
        "produce_for",
        &addr,
        &alice,
        json!({"topic": "reauth", "count": 24, "interval_ms": 250}),
    );
    let reports = r["reports"].as_array().expect("reports");
    assert!(
        reports.iter().all(|x| x == "delivered"),
        "every produce answered across the re-authentications: {r}"
    );
    let auths = metric_sum(admin, "skiff_requests_total", &["api=\"SaslAuthenticate\""]) - before;
    let connections =
        metric_sum(admin, "skiff_connections_created_total", &[]) - connections_before;
    // librdkafka opens a bootstrap and a broker connection (one login each), then
    // re-authenticates them in band before each 1.5 s session ends.
    assert!(
        auths >= connections + 3.0,
        "SaslAuthenticate requests {auths} over {connections} new connections: the client did not re-authenticate in band"
    );
    phase(t, "6 s of produces across 4 session lifetimes");
}
