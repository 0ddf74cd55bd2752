//! Raw-protocol helpers: what no stock client lets a test see exactly (the error code and
//! mechanism list of a SaslHandshake, that the broker closed the connection, that one
//! already-open connection is refused after an ACL change).
//!
//! Mental model: a [`Conn`] (skiff-testkit's blocking connection) over plain TCP, driven one
//! request at a time; "closed" means a read returns end-of-stream or a reset within the
//! deadline, with no Kafka response in between (a TLS alert record is allowed on a TLS port).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use bytes::Bytes;
use skiff_protocol::{
    MetadataRequest, MetadataRequestTopic, ResponseBody, SaslAuthenticateRequest,
    SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
};
use skiff_testkit::client::Conn;

/// Reads `s` until end of stream (or a reset) within 10 s; returns the bytes received
/// before; panics if the connection stays open.
pub fn read_until_closed(mut s: &TcpStream) -> Vec<u8> {
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("set_read_timeout");
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return got,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return got,
            Err(e) => panic!(
                "the connection was not closed ({e}); received so far: {:?}",
                &got[..got.len().min(64)]
            ),
        }
    }
}

/// Asserts the broker closed `c` without sending anything more.
pub fn assert_closed(c: &Conn, what: &str) {
    let rest = read_until_closed(c.client.stream());
    assert!(
        rest.is_empty(),
        "{what}: the broker sent {} more bytes before closing",
        rest.len()
    );
}

/// SaslHandshake v1.
pub fn handshake(c: &mut Conn, mechanism: &str) -> SaslHandshakeResponse {
    let req = SaslHandshakeRequest {
        mechanism: mechanism.to_owned(),
    };
    match c.call(1, req) {
        ResponseBody::SaslHandshake(r) => r,
        other => panic!("not a SaslHandshake response: {other:?}"),
    }
}

/// SaslAuthenticate v2 with PLAIN's `\0user\0password`.
pub fn plain_authenticate(c: &mut Conn, user: &str, password: &str) -> SaslAuthenticateResponse {
    let req = SaslAuthenticateRequest {
        auth_bytes: Bytes::from(format!("\0{user}\0{password}")),
    };
    match c.call(2, req) {
        ResponseBody::SaslAuthenticate(r) => r,
        other => panic!("not a SaslAuthenticate response: {other:?}"),
    }
}

/// A connection to `port` authenticated with PLAIN as `user`; panics if refused.
pub fn plain_conn(port: u16, user: &str, password: &str) -> Conn {
    let mut c = Conn::open(port);
    let h = handshake(&mut c, "PLAIN");
    assert_eq!(h.error_code, 0, "SaslHandshake PLAIN: {h:?}");
    let a = plain_authenticate(&mut c, user, password);
    assert_eq!(a.error_code, 0, "SaslAuthenticate as {user}: {a:?}");
    c
}

/// Metadata v12 for the named topics: (name, error code) per topic answered.
pub fn metadata_named(c: &mut Conn, topics: &[&str]) -> Vec<(String, i16)> {
    let req = MetadataRequest {
        topics: Some(
            topics
                .iter()
                .map(|t| MetadataRequestTopic {
                    name: Some((*t).to_owned()),
                    ..Default::default()
                })
                .collect(),
        ),
        allow_auto_topic_creation: false,
        ..Default::default()
    };
    match c.call(12, req) {
        ResponseBody::Metadata(r) => r
            .topics
            .into_iter()
            .map(|t| (t.name.unwrap_or_default(), t.error_code))
            .collect(),
        other => panic!("not a Metadata response: {other:?}"),
    }
}

/// An ApiVersions v0 request frame (correlation id 7, client id "skiff-compat").
pub fn api_versions_frame() -> Vec<u8> {
    let client = b"skiff-compat";
    let mut body = Vec::new();
    body.extend_from_slice(&18i16.to_be_bytes());
    body.extend_from_slice(&0i16.to_be_bytes());
    body.extend_from_slice(&7i32.to_be_bytes());
    body.extend_from_slice(&(client.len() as i16).to_be_bytes());
    body.extend_from_slice(client);
    let mut frame = (body.len() as i32).to_be_bytes().to_vec();
    frame.extend_from_slice(&body);
    frame
}

/// The start of a TLS 1.2 ClientHello record (content type 22, version 3.1, a handshake).
pub const CLIENT_HELLO: &[u8] = &[
    0x16, 0x03, 0x01, 0x00, 0xa5, 0x01, 0x00, 0x00, 0xa1, 0x03, 0x03, 0x5a, 0x5b, 0x5c, 0x5d,
];

/// Connects to `port`, writes `bytes` and returns what came back before the close.
pub fn send_and_wait_close(port: u16, bytes: &[u8]) -> Vec<u8> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.write_all(bytes).expect("write");
    read_until_closed(&s)
}
