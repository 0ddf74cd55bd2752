//! The bad-input matrix (design/reliability.md table (c)) over raw TCP: rows B1-B8 (plaintext),
//! B10-B15, B18, B19 (`max.connections`, `max.connections.per.ip`) and B21, each checked for
//! its exact answer (close vs. which error code) while a well-behaved client on another
//! connection keeps producing and fetching successfully (a good produce + fetch after every
//! row, or a background client for the rows that take time). A panic hook counts panics on the
//! server's threads: there must be none.
//!
//! Rows not covered here belong to later work: B9 and the TLS part of B3 (security), B16/B17
//! (idempotence and transactions), B20 (quotas).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod raw_client;

use std::io::{ErrorKind, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use raw_client::*;
use skiff_protocol::*;
use skiff_record::{BatchOptions, Compression, RecordError, decompress};
use skiff_types::ErrorCode;

static PANICS: AtomicUsize = AtomicUsize::new(0);

fn count_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if std::thread::current().name() == Some(SERVER_THREAD) {
                PANICS.fetch_add(1, Ordering::SeqCst);
            }
            prev(info);
        }));
    });
}

/// The well-behaved client: one produce + fetch round trip per call.
struct Good {
    c: Raw,
    n: usize,
}

impl Good {
    fn new(h: &Harness) -> Good {
        let mut c = h.connect();
        create_topic(&mut c, "good", &[]);
        Good { c, n: 0 }
    }

    fn check(&mut self, row: &str) {
        let v = format!("good-{}", self.n);
        let (err, offset) = produce(&mut self.c, 9, "good", batch(&[&v]));
        assert_eq!(err, 0, "good produce after {row}");
        let f = fetch(&mut self.c, "good", offset, 1 << 20, -1);
        assert_eq!(f.error, 0, "good fetch after {row}");
        assert_eq!(
            f.values.first(),
            Some(&(offset, v)),
            "good fetch after {row}"
        );
        self.n += 1;
    }
}

/// Sends `bytes` on a fresh connection and requires the server to close it.
fn must_close(h: &Harness, good: &mut Good, row: &str, bytes: &[u8]) {
    let mut c = h.connect();
    c.send_lossy(bytes);
    assert!(c.closed(), "{row}: the connection must be closed");
    good.check(row);
}

/// Produces `records` and requires `code`, nothing appended, and the connection kept.
fn must_refuse(
    h: &Harness,
    good: &mut Good,
    row: &str,
    version: i16,
    topic: &str,
    records: Vec<u8>,
    code: ErrorCode,
) {
    let mut c = h.connect();
    let before = end_offset(&mut c, topic);
    let (err, _) = produce(&mut c, version, topic, records);
    assert_eq!(err, code as i16, "{row}: error code");
    assert_eq!(end_offset(&mut c, topic), before, "{row}: nothing appended");
    let ResponseBody::ApiVersions(v) = c.call(3, ApiVersionsRequest::default()) else {
        panic!()
    };
    assert_eq!(v.error_code, 0, "{row}: connection kept");
    good.check(row);
}

/// A zstd frame that inflates to `blocks` x 128 KiB of zeros (RLE blocks): a decompression bomb.
fn zstd_bomb(blocks: usize) -> Vec<u8> {
    let mut f = vec![0x28, 0xB5, 0x2F, 0xFD, 0x00, 0x38]; // magic, no FCS, window 128 KiB
    for i in 0..blocks {
        let last = u32::from(i + 1 == blocks);
        let header = last | (1 << 1) | (131_072 << 3); // RLE block of 128 KiB
        f.extend_from_slice(&header.to_le_bytes()[..3]);
        f.push(0);
    }
    f
}

#[test]
fn e2e_bad_input_matrix_answers_exactly_and_spares_other_connections() {
    count_panics();
    let h = Harness::start(|s| s.fetch_bytes_max = 64 * 1024);
    let mut good = Good::new(&h);
    good.check("start");

    // B1: a size above socket.request.max.bytes (100 MiB).
    must_close(
        &h,
        &mut good,
        "B1 size > max",
        &(100 * 1024 * 1024 + 1i32).to_be_bytes(),
    );
    must_close(&h, &mut good, "B1 size i32::MAX", &i32::MAX.to_be_bytes());
    // B2: size <= 0 or below the minimum header.
    for size in [0i32, -1, i32::MIN, 3, 7] {
        let mut bytes = size.to_be_bytes().to_vec();
        bytes.extend_from_slice(&[0; 8]);
        must_close(&h, &mut good, &format!("B2 size {size}"), &bytes);
    }
    // B3: HTTP and a TLS ClientHello on the plaintext port.
    must_close(
        &h,
        &mut good,
        "B3 HTTP",
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
    );
    must_close(
        &h,
        &mut good,
        "B3 TLS",
        &[
            0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03,
        ],
    );
    // B5: unknown API keys.
    for key in [32767i16, -1, 7] {
        must_close(
            &h,
            &mut good,
            &format!("B5 api key {key}"),
            &framed(&header(key, 0, 1, false)),
        );
    }
    // B6: unsupported or not-enabled versions, controller-only API.
    let mut c = h.connect();
    let (produce_v2, _) = c.frame(2, raw_client::produce_request("good", 0, batch(&["x"]), -1));
    must_close(&h, &mut good, "B6 Produce v2", &produce_v2);
    must_close(
        &h,
        &mut good,
        "B6 Produce v99",
        &framed(&header(0, 99, 1, false)),
    );
    must_close(
        &h,
        &mut good,
        "B6 Fetch v3",
        &framed(&header(1, 3, 1, false)),
    );
    must_close(
        &h,
        &mut good,
        "B6 Vote (controller-only)",
        &framed(&header(52, 0, 1, false)),
    );

    // B7: ApiVersions newer than ours: v0-format UNSUPPORTED_VERSION with our ranges, kept.
    let mut c = h.connect();
    c.send(&framed(&header(18, 99, 42, true)));
    let resp = c.read_frame().expect("an answer");
    let (hdr, body) = decode_response(ApiKey::ApiVersions, 0, resp).unwrap();
    assert_eq!(hdr.correlation_id, 42);
    let ResponseBody::ApiVersions(v) = body else {
        panic!()
    };
    assert_eq!(v.error_code, ErrorCode::UnsupportedVersion as i16);
    let produce_range = v.api_keys.iter().find(|k| k.api_key == 0).unwrap();
    assert_eq!(
        (produce_range.min_version, produce_range.max_version),
        (0, 11)
    );
    assert!(v.api_keys.len() >= 16);
    let ResponseBody::ApiVersions(v) = c.call(3, ApiVersionsRequest::default()) else {
        panic!()
    };
    assert_eq!(v.error_code, 0, "B7: connection kept");
    good.check("B7");

    // B8: malformed headers and bodies.
    let metadata12 = |body: &[u8]| {
        let mut f = header(3, 12, 1, true);
        f.extend_from_slice(body);
        framed(&f)
    };
    must_close(&h, &mut good, "B8 truncated body", &metadata12(&[0x02]));
    must_close(
        &h,
        &mut good,
        "B8 varint > 5 bytes",
        &metadata12(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x01]),
    );
    let mut long_name = vec![0x02];
    long_name.extend_from_slice(&[0; 16]);
    long_name.extend_from_slice(&[0x7f, b'a', b'b']);
    must_close(
        &h,
        &mut good,
        "B8 compact length >= remaining",
        &metadata12(&long_name),
    );
    let mut absurd = header(3, 1, 1, false);
    absurd.extend_from_slice(&i32::MAX.to_be_bytes());
    must_close(&h, &mut good, "B8 absurd array count", &framed(&absurd));
    let mut tagged = header(18, 3, 1, false);
    tagged.extend_from_slice(&[0x01, 0x00, 0xff, 0xff, 0x03]); // 1 tag, size way past the end
    must_close(&h, &mut good, "B8 bad tagged fields", &framed(&tagged));
    must_close(
        &h,
        &mut good,
        "B8 truncated header",
        &framed(&[0, 3, 0, 12, 0, 0, 0, 1, 0x7f]),
    );

    // B10-B13 and B14: record errors are codes on a kept connection, nothing appended.
    let mut admin = h.connect();
    create_topic(&mut admin, "small", &[("max.message.bytes", "1000")]);
    let ok = batch(&["payload"]);
    let mut bad_crc = ok.clone();
    let last = bad_crc.len() - 1;
    bad_crc[last] ^= 0xff;
    must_refuse(
        &h,
        &mut good,
        "B10 wrong CRC-32C",
        9,
        "good",
        bad_crc,
        ErrorCode::CorruptMessage,
    );
    must_refuse(
        &h,
        &mut good,
        "B11 > max.message.bytes",
        9,
        "small",
        batch(&[&"x".repeat(2000)]),
        ErrorCode::MessageTooLarge,
    );
    let ir = ErrorCode::InvalidRecord;
    must_refuse(
        &h,
        &mut good,
        "B12 magic 1",
        9,
        "good",
        patched(ok.clone(), 16, &[1]),
        ir,
    );
    let mut two = ok.clone();
    two.extend_from_slice(&ok);
    must_refuse(&h, &mut good, "B12 two batches", 9, "good", two, ir);
    must_refuse(&h, &mut good, "B12 zero batches", 9, "good", Vec::new(), ir);
    must_refuse(
        &h,
        &mut good,
        "B12 baseOffset 5",
        9,
        "good",
        patched(ok.clone(), 0, &5i64.to_be_bytes()),
        ir,
    );
    must_refuse(
        &h,
        &mut good,
        "B12 count != lastOffsetDelta+1",
        9,
        "good",
        patched(ok.clone(), 57, &2i32.to_be_bytes()),
        ir,
    );
    must_refuse(
        &h,
        &mut good,
        "B12 control batch",
        9,
        "good",
        patched(ok.clone(), 21, &0x20i16.to_be_bytes()),
        ir,
    );
    must_refuse(
        &h,
        &mut good,
        "B12 producer id, base sequence -1",
        9,
        "good",
        patched(ok.clone(), 43, &7i64.to_be_bytes()),
        ir,
    );
    // B13: valid CRC, malformed records.
    let overflow = [0xffu8; 11];
    must_refuse(
        &h,
        &mut good,
        "B13 varint overflow",
        9,
        "good",
        raw_batch(0, 1, &overflow),
        ir,
    );
    let mut neg_key = Vec::new();
    let body: Vec<u8> = [
        vec![0u8],
        varint(0),
        varint(0),
        varint(-2),
        varint(-1),
        varint(0),
    ]
    .concat();
    neg_key.extend_from_slice(&varint(body.len() as i64));
    neg_key.extend_from_slice(&body);
    must_refuse(
        &h,
        &mut good,
        "B13 key length -2",
        9,
        "good",
        raw_batch(0, 1, &neg_key),
        ir,
    );
    let body: Vec<u8> = [
        vec![0u8],
        varint(0),
        varint(0),
        varint(-1),
        varint(-1),
        varint(5_000_000),
    ]
    .concat();
    let mut headers = varint(body.len() as i64);
    headers.extend_from_slice(&body);
    must_refuse(
        &h,
        &mut good,
        "B13 millions of headers",
        9,
        "good",
        raw_batch(0, 1, &headers),
        ir,
    );
    must_refuse(
        &h,
        &mut good,
        "B13 corrupt gzip",
        9,
        "good",
        raw_batch(1, 1, b"\x1f\x8b\x08\x00 not gzip"),
        ir,
    );
    // The bomb helper is a real zstd frame (4 blocks = 512 KiB), and the cap stops it.
    assert_eq!(
        decompress(Compression::Zstd, &zstd_bomb(4), 1 << 20).unwrap(),
        vec![0u8; 512 * 1024]
    );
    assert!(matches!(
        decompress(Compression::Zstd, &zstd_bomb(4), 1 << 18),
        Err(RecordError::DecompressedTooLarge { .. })
    ));
    must_refuse(
        &h,
        &mut good,
        "B13 zstd bomb (> 256 MiB)",
        9,
        "good",
        raw_batch(4, 1, &zstd_bomb(2100)),
        ir,
    );
    must_refuse(
        &h,
        &mut good,
        "B13 codec id 5",
        9,
        "good",
        raw_batch(5, 1, b"x"),
        ir,
    );
    let zstd = batch_with(
        &["z"],
        BatchOptions {
            compression: Compression::Zstd,
            ..BatchOptions::default()
        },
    );
    must_refuse(
        &h,
        &mut good,
        "B13 zstd on Produce v6",
        6,
        "good",
        zstd.clone(),
        ErrorCode::UnsupportedCompressionType,
    );
    assert_eq!(
        produce(&mut admin, 7, "good", zstd).0,
        0,
        "zstd is fine from v7"
    );
    // B14: acks outside {-1, 0, 1}.
    for acks in [2i16, -2, 100] {
        let ResponseBody::Produce(r) = admin.call(
            9,
            raw_client::produce_request("good", 0, batch(&["a"]), acks),
        ) else {
            panic!()
        };
        assert_eq!(
            r.responses[0].partition_responses[0].error_code,
            ErrorCode::InvalidRequiredAcks as i16,
            "B14 acks {acks}"
        );
        good.check("B14");
    }
    // B15: a failing acks=0 produce closes; a good one answers nothing and keeps the connection.
    let mut c = h.connect();
    let (f, _) = c.frame(
        9,
        raw_client::produce_request("good", 0, batch(&["silent"]), 0),
    );
    c.send(&f);
    let ResponseBody::ApiVersions(v) = c.call(3, ApiVersionsRequest::default()) else {
        panic!()
    };
    assert_eq!(v.error_code, 0, "acks=0 success: no response, kept");
    for (row, topic, records) in [
        ("B15 unknown topic", "nope", batch(&["x"])),
        ("B15 invalid record", "good", patched(ok.clone(), 16, &[1])),
    ] {
        let mut c = h.connect();
        let (f, _) = c.frame(9, raw_client::produce_request(topic, 0, records, 0));
        must_close(&h, &mut good, row, &f);
    }

    // B18: fetch out of range, future leader epoch, absurd max_bytes, thousands of partitions.
    let end = end_offset(&mut admin, "good");
    assert_eq!(
        fetch(&mut admin, "good", end + 1000, 1 << 20, -1).error,
        ErrorCode::OffsetOutOfRange as i16
    );
    assert_eq!(
        fetch(&mut admin, "good", -7, 1 << 20, -1).error,
        ErrorCode::OffsetOutOfRange as i16
    );
    assert_eq!(
        fetch(&mut admin, "good", 0, 1 << 20, 5).error,
        ErrorCode::UnknownLeaderEpoch as i16
    );
    good.check("B18 epochs/offsets");
    create_topic(&mut admin, "big", &[]);
    let chunk = "y".repeat(16 * 1024);
    for _ in 0..8 {
        assert_eq!(produce(&mut admin, 9, "big", batch(&[&chunk])).0, 0);
    }
    let f = fetch(&mut admin, "big", 0, i32::MAX, -1);
    assert_eq!(f.error, 0);
    assert!(
        !f.values.is_empty() && f.bytes <= 64 * 1024,
        "B18 capped at fetch.max.bytes: {}",
        f.bytes
    );
    let mut many = fetch_request("good", 0, i32::MAX, -1);
    many.topics[0].partitions = (0..5000)
        .map(|p| FetchPartition {
            partition: p,
            fetch_offset: 0,
            partition_max_bytes: i32::MAX,
            ..FetchPartition::default()
        })
        .collect();
    let ResponseBody::Fetch(r) = admin.call(12, many) else {
        panic!()
    };
    let parts = &r.responses[0].partitions;
    assert_eq!(parts.len(), 5000);
    assert_eq!(parts[0].error_code, 0);
    assert!(
        parts[1..]
            .iter()
            .all(|p| p.error_code == ErrorCode::UnknownTopicOrPartition as i16)
    );
    good.check("B18 thousands of partitions");

    // B21 (order): hundreds of pipelined requests of mixed APIs come back in request order.
    let mut c = h.connect();
    let mut wire = Vec::new();
    let mut expected = Vec::new();
    for i in 0..300 {
        let (f, cid) = match i % 4 {
            0 => c.frame(3, ApiVersionsRequest::default()),
            1 => c.frame(
                9,
                raw_client::produce_request("good", 0, batch(&["pipelined"]), -1),
            ),
            2 => c.frame(12, fetch_request("good", 0, 4096, -1)),
            _ => c.frame(
                12,
                MetadataRequest {
                    topics: None,
                    ..MetadataRequest::default()
                },
            ),
        };
        wire.extend_from_slice(&f);
        expected.push(cid);
    }
    c.send(&wire);
    for cid in expected {
        let frame = c.read_frame().expect("every pipelined request answered");
        assert_eq!(
            i32::from_be_bytes(frame[..4].try_into().unwrap()),
            cid,
            "B21 order"
        );
    }
    good.check("B21 order");

    drop(c);
    assert_eq!(PANICS.load(Ordering::SeqCst), 0, "something panicked");
}

/// B4: a trickled partial frame is closed at the partial-frame deadline (trickling does not
/// extend it), an idle connection at `connections.max.idle.ms`; a busy client is untouched.
#[test]
fn e2e_bad_input_slowloris_and_idle_connections_are_closed() {
    count_panics();
    let h = Harness::start(|s| {
        s.partial_frame_ms_max = 1000;
        s.connection_idle_ms_max = 2000;
    });
    let stop = Arc::new(AtomicBool::new(false));
    let rounds = Arc::new(AtomicUsize::new(0));
    let busy = {
        let mut good = Good::new(&h);
        let (stop, rounds) = (Arc::clone(&stop), Arc::clone(&rounds));
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                good.check("B4 background");
                rounds.fetch_add(1, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(50)); // pacing only
            }
        })
    };
    let mut slow = h.connect();
    let mut writer = slow.s.try_clone().unwrap();
    let started = Instant::now();
    let trickle = std::thread::spawn(move || {
        let _ = writer.write_all(&[0, 0, 0, 40]);
        for _ in 0..100 {
            std::thread::sleep(Duration::from_millis(100)); // one byte every 100 ms
            if writer.write_all(&[0]).is_err() {
                return;
            }
        }
    });
    assert!(slow.closed(), "B4 trickled frame: closed");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(900) && waited < Duration::from_secs(8),
        "B4 trickle closed after {waited:?}"
    );
    trickle.join().unwrap();

    let mut idle = h.connect();
    let started = Instant::now();
    assert!(idle.closed(), "B4 idle: closed");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(1900),
        "B4 idle closed after {waited:?}"
    );

    stop.store(true, Ordering::SeqCst);
    busy.join().unwrap();
    assert!(
        rounds.load(Ordering::SeqCst) >= 10,
        "the busy client kept working"
    );
    assert_eq!(PANICS.load(Ordering::SeqCst), 0, "something panicked");
}

/// B19: beyond `max.connections.per.ip` a connection is accepted and closed at once; beyond
/// `max.connections` the broker stops accepting until a connection ends.
#[test]
fn e2e_bad_input_connection_limits() {
    count_panics();
    let h = Harness::start(|s| s.connections_per_ip_max = 2);
    let mut a = h.connect();
    let mut b = h.connect();
    for c in [&mut a, &mut b] {
        let ResponseBody::ApiVersions(v) = c.call(3, ApiVersionsRequest::default()) else {
            panic!()
        };
        assert_eq!(v.error_code, 0);
    }
    let mut third = h.connect();
    assert!(third.closed(), "B19 per-IP: the third connection is closed");
    let ResponseBody::ApiVersions(_) = b.call(3, ApiVersionsRequest::default()) else {
        panic!()
    };
    drop(a);
    // The slot comes back once the server has seen the close.
    let deadline = Instant::now() + DEADLINE;
    loop {
        let mut c = h.connect();
        let (f, _) = c.frame(3, ApiVersionsRequest::default());
        c.send_lossy(&f);
        if c.read_frame().is_some() {
            break;
        }
        assert!(Instant::now() < deadline, "B19 per-IP slot never came back");
    }
    drop(h);

    let h = Harness::start(|s| s.connections_max = 2);
    let mut a = h.connect();
    let mut b = h.connect();
    for c in [&mut a, &mut b] {
        let ResponseBody::ApiVersions(_) = c.call(3, ApiVersionsRequest::default()) else {
            panic!()
        };
    }
    // The kernel completes the handshake, but the broker does not accept: no answer.
    let mut waiting = h.connect();
    let (f, cid) = waiting.frame(3, ApiVersionsRequest::default());
    waiting.send(&f);
    waiting
        .s
        .set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let mut probe = [0u8; 1];
    let got = std::io::Read::read(&mut waiting.s, &mut probe);
    assert!(
        matches!(&got, Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)),
        "B19 global: not served yet ({got:?})"
    );
    let ResponseBody::ApiVersions(_) = b.call(3, ApiVersionsRequest::default()) else {
        panic!()
    };
    drop(a);
    waiting.s.set_read_timeout(Some(DEADLINE)).unwrap();
    let frame = waiting.read_frame().expect("served once a slot is free");
    assert_eq!(i32::from_be_bytes(frame[..4].try_into().unwrap()), cid);
    assert_eq!(PANICS.load(Ordering::SeqCst), 0, "something panicked");
}

/// B21 (back-pressure): a client that pipelines fetches without reading the answers is stopped
/// by the broker no longer reading its socket (its writes block) instead of the broker queueing
/// without bound; every answer still arrives, in order, once it reads.
#[test]
fn e2e_bad_input_deep_pipelining_applies_back_pressure() {
    count_panics();
    let h = Harness::start(|_| {});
    let mut good = Good::new(&h);
    let chunk = "z".repeat(8 * 1024);
    for _ in 0..4 {
        assert_eq!(produce(&mut good.c, 9, "good", batch(&[&chunk])).0, 0);
    }
    let mut c = h.connect();
    // Each request carries an 8 KiB client id so requests, not only answers, weigh something.
    let client_id = "c".repeat(8192);
    let mut w = c.s.try_clone().unwrap();
    w.set_nonblocking(true).unwrap();
    const LIMIT: usize = 64 * 1024 * 1024;
    let mut written = 0usize;
    let mut expected = Vec::new();
    let mut pending: Option<(Vec<u8>, usize)> = None;
    let mut blocked_since: Option<Instant> = None;
    while written < LIMIT {
        let (buf, at) = pending.take().unwrap_or_else(|| {
            let (f, cid) =
                c.frame_with_client_id(12, fetch_request("good", 0, 16 * 1024, -1), &client_id);
            expected.push(cid);
            (f, 0)
        });
        match w.write(&buf[at..]) {
            Ok(n) => {
                written += n;
                blocked_since = None;
                if at + n < buf.len() {
                    pending = Some((buf, at + n));
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                pending = Some((buf, at));
                let since = *blocked_since.get_or_insert_with(Instant::now);
                if since.elapsed() > Duration::from_secs(1) {
                    break; // the broker stopped reading this connection
                }
                std::thread::sleep(Duration::from_millis(1)); // polling
            }
            Err(e) => panic!("write failed: {e}"),
        }
    }
    assert!(
        written < LIMIT,
        "B21: the broker kept reading {written} bytes of requests nobody reads answers to"
    );
    assert!(
        expected.len() > 256,
        "more requests than the in-flight cap were written"
    );
    good.check("B21 while a pipelining client is stalled");
    // Read every answer (in another thread) while the last partial request is completed.
    let mut r = c.s.try_clone().unwrap();
    let count = expected.len();
    let reader = std::thread::spawn(move || {
        let mut got = Vec::with_capacity(count);
        while got.len() < count {
            let Some(f) = read_frame_from(&mut r) else {
                break;
            };
            got.push(i32::from_be_bytes(f[..4].try_into().unwrap()));
        }
        got
    });
    w.set_nonblocking(false).unwrap();
    if let Some((buf, at)) = pending {
        w.write_all(&buf[at..]).unwrap();
    }
    assert_eq!(
        reader.join().unwrap(),
        expected,
        "B21: every answer, in order"
    );
    good.check("B21 after");
    assert_eq!(PANICS.load(Ordering::SeqCst), 0, "something panicked");
}
