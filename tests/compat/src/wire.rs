//! The one raw Kafka request the harness makes itself: ApiVersions v0, to learn which APIs the
//! broker advertises (client behaviour depends on it, e.g. librdkafka's LZ4 feature needs
//! FindCoordinator). Request: size i32 | api_key i16 = 18 | api_version i16 = 0 |
//! correlation_id i32 | client_id i16-length string. Response v0: size i32 | correlation_id i32
//! | error_code i16 | [api_key i16, min_version i16, max_version i16] with an i32 count.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// Kafka API keys the tests ask about.
pub mod api {
    /// FindCoordinator.
    pub const FIND_COORDINATOR: i16 = 10;
}

fn i16_at(b: &[u8], at: usize) -> i16 {
    match b.get(at..at + 2) {
        Some(s) => i16::from_be_bytes([s[0], s[1]]),
        None => panic!("ApiVersions response truncated at byte {at}"),
    }
}

fn i32_at(b: &[u8], at: usize) -> i32 {
    match b.get(at..at + 4) {
        Some(s) => i32::from_be_bytes([s[0], s[1], s[2], s[3]]),
        None => panic!("ApiVersions response truncated at byte {at}"),
    }
}

/// The broker's advertised API ranges: api key -> (min, max).
pub fn api_versions(bootstrap: &str) -> BTreeMap<i16, (i16, i16)> {
    let mut s = TcpStream::connect(bootstrap)
        .unwrap_or_else(|e| panic!("cannot connect to {bootstrap}: {e}"));
    let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
    let client = b"skiff-compat";
    let mut body = Vec::new();
    body.extend_from_slice(&18i16.to_be_bytes());
    body.extend_from_slice(&0i16.to_be_bytes());
    body.extend_from_slice(&7i32.to_be_bytes());
    body.extend_from_slice(&(client.len() as i16).to_be_bytes());
    body.extend_from_slice(client);
    let mut frame = (body.len() as i32).to_be_bytes().to_vec();
    frame.extend_from_slice(&body);
    s.write_all(&frame)
        .unwrap_or_else(|e| panic!("ApiVersions write: {e}"));
    let mut size = [0u8; 4];
    s.read_exact(&mut size)
        .unwrap_or_else(|e| panic!("ApiVersions read: {e}"));
    let len = usize::try_from(i32::from_be_bytes(size)).unwrap_or(0);
    assert!(len < 1 << 20, "absurd ApiVersions response size {len}");
    let mut b = vec![0u8; len];
    s.read_exact(&mut b)
        .unwrap_or_else(|e| panic!("ApiVersions read: {e}"));
    assert_eq!(i32_at(&b, 0), 7, "correlation id");
    assert_eq!(i16_at(&b, 4), 0, "ApiVersions v0 error code");
    let n = usize::try_from(i32_at(&b, 6)).unwrap_or(0);
    (0..n)
        .map(|i| {
            let at = 10 + i * 6;
            (i16_at(&b, at), (i16_at(&b, at + 2), i16_at(&b, at + 4)))
        })
        .collect()
}
