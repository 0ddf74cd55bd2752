//! End-to-end test of the foreign-protocol warning (issue 20 item 4): an HTTP request or a TLS
//! ClientHello sent to the plaintext Kafka port is closed, logged once at WARN with what it
//! looked like (the HTTP one names the admin port), and the broker keeps serving Kafka.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use skiff_protocol::{ApiVersionsRequest, ResponseBody};
use skiff_testkit::Broker;
use skiff_testkit::client::Conn;

/// Sends `bytes` and expects the broker to close the connection without answering.
fn closed_without_answer(port: u16, bytes: &[u8]) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(bytes).unwrap();
    let mut buf = [0u8; 64];
    match s.read(&mut buf) {
        Ok(0) => {}
        Ok(n) => panic!("the broker answered {n} bytes: {:?}", &buf[..n]),
        // A reset is a close too.
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        Err(e) => panic!("the connection was not closed: {e}"),
    }
}

/// The start of a TLS 1.2 ClientHello record (content type 22, version 3.1, then a handshake).
const CLIENT_HELLO: &[u8] = &[
    0x16, 0x03, 0x01, 0x00, 0xa5, 0x01, 0x00, 0x00, 0xa1, 0x03, 0x03, 0x5a, 0x5b, 0x5c, 0x5d,
];

#[test]
fn e2e_http_and_tls_on_the_kafka_port_warn_once_and_close() {
    let mut b = Broker::builder()
        .binary(env!("CARGO_BIN_EXE_skiff"))
        .admin(true)
        .rust_log("info")
        .start();
    let port = b.port();
    assert!(b.admin_port().is_some());
    for _ in 0..3 {
        closed_without_answer(port, b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n");
        closed_without_answer(port, CLIENT_HELLO);
    }
    // Kafka still works on the same port.
    let mut c = Conn::open(port);
    let ResponseBody::ApiVersions(r) = c.call(3, ApiVersionsRequest::default()) else {
        panic!("not an ApiVersions response")
    };
    assert_eq!(r.error_code, 0);
    assert_eq!(b.sigterm().code(), Some(0));

    let logs = b.logs();
    let warns = |needle: &str| {
        logs.lines()
            .filter(|l| l.contains("WARN") && l.contains(needle))
            .count()
    };
    assert_eq!(
        warns("looks like an HTTP request: \"GET /metrics HTTP/1.1\""),
        1,
        "one WARN for HTTP:\n{logs}"
    );
    assert!(
        logs.contains("speaks the Kafka protocol; the admin HTTP port is on 127.0.0.1"),
        "{logs}"
    );
    assert_eq!(
        warns("looks like a TLS ClientHello; listener PLAINTEXT is PLAINTEXT"),
        1,
        "one WARN for TLS:\n{logs}"
    );
}
