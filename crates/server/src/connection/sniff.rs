//! Recognising a client that speaks HTTP or TLS to a plaintext Kafka listener (issue 20 item 4).
//!
//! Mental model: a Kafka frame starts with a 4-byte big-endian size. The first bytes of an HTTP
//! request (`GET `, `POST`, ...) or a TLS record (0x16 0x03 0x0X) read as a size are far above
//! any sane `socket.request.max.bytes` (or negative), so [`super::FrameReader`] rejects them
//! anyway; before it does, [`classify`] looks at what was buffered and names the protocol, and
//! the connection task logs one WARN per kind per process ([`warn_once`]; later ones at DEBUG)
//! saying what the bytes looked like and what the port speaks, then closes as before.
//! [`classify`] is pure and never panics on any input.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};

/// The request line shown in the warning is cut at this many bytes.
const REQUEST_LINE_SHOWN_MAX: usize = 80;

/// A protocol that is not Kafka, recognised from a connection's first bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Foreign {
    /// An HTTP request; its request line as far as it was read (printable ASCII only).
    Http(String),
    /// A TLS handshake record (a ClientHello), with the record's protocol minor version.
    Tls(u8),
}

/// What the first bytes of a connection look like, if they are not Kafka.
pub fn classify(first: &[u8]) -> Option<Foreign> {
    const HTTP: [&[u8; 4]; 5] = [b"GET ", b"POST", b"PUT ", b"HEAD", b"HTTP"];
    match first {
        [0x16, 0x03, minor, ..] if *minor <= 0x04 => Some(Foreign::Tls(*minor)),
        [a, b, c, d, ..] if HTTP.contains(&&[*a, *b, *c, *d]) => {
            let line: String = first
                .iter()
                .take_while(|&&c| c != b'\r' && c != b'\n')
                .take(REQUEST_LINE_SHOWN_MAX)
                .map(|&c| {
                    if c.is_ascii_graphic() || c == b' ' {
                        char::from(c)
                    } else {
                        '?'
                    }
                })
                .collect();
            Some(Foreign::Http(line))
        }
        _ => None,
    }
}

static HTTP_WARNED: AtomicBool = AtomicBool::new(false);
static TLS_WARNED: AtomicBool = AtomicBool::new(false);

/// The warning for `what`: what it looked like, what this listener speaks.
pub fn message(what: &Foreign, listener: &str, admin: Option<(&str, u16)>) -> String {
    match what {
        Foreign::Http(line) => {
            let admin = admin.map_or_else(
                || "no admin HTTP port is configured (skiff.admin.listener)".to_string(),
                |(host, port)| match port {
                    0 => format!(
                        "the admin HTTP port is on {host}, port chosen at start (the `skiff ready admin` line)"
                    ),
                    _ => format!("the admin HTTP port is {host}:{port} (skiff.admin.listener)"),
                },
            );
            format!(
                "looks like an HTTP request: {line:?}; listener {listener} speaks the Kafka protocol; {admin}; closing the connection"
            )
        }
        Foreign::Tls(_) => format!(
            "looks like a TLS ClientHello; listener {listener} is PLAINTEXT (TLS is not implemented by Skiff); closing the connection"
        ),
    }
}

/// Logs `what` at WARN the first time its kind is seen in this process, at DEBUG after that.
pub fn warn_once(what: &Foreign, peer: SocketAddr, listener: &str, admin: Option<(&str, u16)>) {
    let flag = match what {
        Foreign::Http(_) => &HTTP_WARNED,
        Foreign::Tls(_) => &TLS_WARNED,
    };
    let text = message(what, listener, admin);
    if flag.swap(true, Ordering::Relaxed) {
        tracing::debug!(%peer, "{text}");
    } else {
        tracing::warn!(%peer, "{text} (logged once; later ones at DEBUG)");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classify_table() {
        for (bytes, want) in [
            (
                &b"GET /metrics HTTP/1.1\r\nHost: x\r\n"[..],
                Some(Foreign::Http("GET /metrics HTTP/1.1".into())),
            ),
            (b"POST /api", Some(Foreign::Http("POST /api".into()))),
            (b"PUT ", Some(Foreign::Http("PUT ".into()))),
            (
                b"HEAD / HTTP/1.0\n",
                Some(Foreign::Http("HEAD / HTTP/1.0".into())),
            ),
            (
                b"HTTP/1.1 200 OK\r\n",
                Some(Foreign::Http("HTTP/1.1 200 OK".into())),
            ),
            (b"GET /\x01\xff", Some(Foreign::Http("GET /??".into()))),
            (&[0x16, 0x03, 0x01, 0x02, 0x00][..], Some(Foreign::Tls(1))),
            (&[0x16, 0x03, 0x03, 0x00], Some(Foreign::Tls(3))),
            // not TLS: unknown minor version, or a short read
            (&[0x16, 0x03, 0x09, 0x00], None),
            (&[0x16, 0x03], None),
            // a Kafka frame: small size, then api key and version
            (&[0x00, 0x00, 0x00, 0x20, 0x00, 0x12], None),
            (b"get /", None),
            (b"GE", None),
            (b"", None),
        ] {
            assert_eq!(classify(bytes), want, "{bytes:?}");
        }
        let long = [b"GET /".as_slice(), &[b'a'; 500]].concat();
        assert!(
            matches!(classify(&long), Some(Foreign::Http(l)) if l.len() == REQUEST_LINE_SHOWN_MAX)
        );
    }

    fn reader(data: &[u8], max: usize) -> super::super::FrameReader<std::io::Cursor<Vec<u8>>> {
        super::super::FrameReader::new(
            std::io::Cursor::new(data.to_vec()),
            max,
            std::time::Duration::from_secs(5),
            std::time::Duration::from_secs(5),
            skiff_types::Clock::manual(0),
        )
    }

    /// The sniff runs only where the frame size is rejected: a size within the limits is read
    /// as a Kafka frame whatever its bytes.
    #[tokio::test]
    async fn frame_reader_names_the_protocol_only_for_a_rejected_size() {
        use super::super::FrameError;
        let get = b"GET / HTTP/1.1\r\n\r\n";
        let r = reader(get, 100 << 20).next_frame().await;
        assert!(
            matches!(r, Err(FrameError::Foreign(Foreign::Http(ref l))) if l == "GET / HTTP/1.1"),
            "{r:?}"
        );
        let r = reader(&[0x16, 0x03, 0x01, 0x00, 0xa5, 0x01], 100 << 20)
            .next_frame()
            .await;
        assert!(
            matches!(r, Err(FrameError::Foreign(Foreign::Tls(1)))),
            "{r:?}"
        );
        // Too large but not HTTP/TLS: the old refusal.
        let r = reader(&[0x7f, 0, 0, 0, 1, 2], 100 << 20).next_frame().await;
        assert!(matches!(r, Err(FrameError::TooLarge(..))), "{r:?}");
        // "GET " as a size within a (huge) limit is a frame that never completes here.
        let r = reader(get, usize::MAX).next_frame().await;
        assert!(matches!(r, Err(FrameError::EofMidFrame)), "{r:?}");
    }

    #[test]
    fn messages_say_what_it_looked_like_and_what_the_port_speaks() {
        let m = message(
            &Foreign::Http("GET / HTTP/1.1".into()),
            "PLAINTEXT",
            Some(("127.0.0.1", 9644)),
        );
        assert!(
            m.contains("looks like an HTTP request: \"GET / HTTP/1.1\""),
            "{m}"
        );
        assert!(m.contains("speaks the Kafka protocol"), "{m}");
        assert!(m.contains("the admin HTTP port is 127.0.0.1:9644"), "{m}");
        let m = message(&Foreign::Http("GET /".into()), "PLAINTEXT", None);
        assert!(m.contains("no admin HTTP port"), "{m}");
        let m = message(&Foreign::Tls(1), "CLIENT", None);
        assert!(
            m.contains("looks like a TLS ClientHello; listener CLIENT is PLAINTEXT"),
            "{m}"
        );
    }
}
