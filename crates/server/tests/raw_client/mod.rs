//! Test support for the bad-input tests: an in-process server on its own tokio runtime, a
//! blocking `std::net::TcpStream` client that can send anything (well-formed requests encoded
//! by the protocol crate, or hand-made bytes), and hand-built v2 record batches whose CRC-32C
//! is recomputed with `skiff_record` so that only the intended defect remains.
//!
//! The server is the workspace's in-process harness ([`Harness`], re-exported from
//! `skiff_testkit::in_process`). Every read on a client is bounded by [`DEADLINE`]; a server
//! is shut down when its [`Harness`] is dropped.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};

use bytes::{BufMut, Bytes, BytesMut};
use skiff_protocol::*;
use skiff_record::{BatchBuilder, BatchOptions, batches, recompute_crc, records};

// The in-process harness is the workspace's one (`skiff-testkit`).
#[allow(unused_imports)]
pub use skiff_testkit::in_process::{DEADLINE, Harness, SERVER_THREAD};

/// Raw connections to a [`Harness`].
pub trait Connect {
    fn connect(&self) -> Raw;
}

impl Connect for Harness {
    fn connect(&self) -> Raw {
        Raw::connect(self.addr)
    }
}

/// A blocking raw client.
pub struct Raw {
    pub s: TcpStream,
    next_correlation: i32,
}

impl Raw {
    pub fn connect(addr: SocketAddr) -> Raw {
        let s = TcpStream::connect_timeout(&addr, DEADLINE).unwrap();
        s.set_read_timeout(Some(DEADLINE)).unwrap();
        s.set_write_timeout(Some(DEADLINE)).unwrap();
        s.set_nodelay(true).unwrap();
        Raw {
            s,
            next_correlation: 1,
        }
    }

    /// A request frame (size prefix included) and its correlation id.
    pub fn frame(&mut self, version: i16, body: impl Into<RequestBody>) -> (Vec<u8>, i32) {
        self.frame_with_client_id(version, body, "bad-input")
    }

    /// [`Raw::frame`] with a chosen client id.
    pub fn frame_with_client_id(
        &mut self,
        version: i16,
        body: impl Into<RequestBody>,
        client_id: &str,
    ) -> (Vec<u8>, i32) {
        let body = body.into();
        let correlation_id = self.next_correlation;
        self.next_correlation += 1;
        let header = RequestHeader {
            request_api_key: body.api_key() as i16,
            request_api_version: version,
            correlation_id,
            client_id: Some(client_id.into()),
        };
        let mut out = BytesMut::new();
        encode_request(&header, &body, &mut out).unwrap();
        (out.to_vec(), correlation_id)
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.s.write_all(bytes).unwrap();
    }

    /// Sends without failing if the server already closed (it may close mid-write).
    pub fn send_lossy(&mut self, bytes: &[u8]) {
        let _ = self.s.write_all(bytes);
    }

    /// One response frame (without its size), or `None` once the server closed.
    pub fn read_frame(&mut self) -> Option<Bytes> {
        read_frame_from(&mut self.s)
    }

    /// Sends a request and decodes its response (panics if the connection closed).
    pub fn call(&mut self, version: i16, body: impl Into<RequestBody>) -> ResponseBody {
        let body = body.into();
        let key = body.api_key();
        let (frame, cid) = self.frame(version, body);
        self.send(&frame);
        let resp = self
            .read_frame()
            .unwrap_or_else(|| panic!("{} v{version}: connection closed", key.name()));
        let (header, body) = decode_response(key, version, resp).unwrap();
        assert_eq!(header.correlation_id, cid);
        body
    }

    /// Whether the server closes the connection (EOF or reset) within the deadline; any data
    /// arriving first means it did not.
    pub fn closed(&mut self) -> bool {
        let mut buf = [0u8; 256];
        match self.s.read(&mut buf) {
            Ok(0) => true,
            Ok(_) => false,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => false,
            Err(_) => true,
        }
    }
}

/// One response frame (without its size) from `s`, or `None` once the server closed; panics
/// if nothing arrives within the stream's read timeout.
pub fn read_frame_from(s: &mut TcpStream) -> Option<Bytes> {
    let mut size = [0u8; 4];
    if let Err(e) = s.read_exact(&mut size) {
        assert!(
            !matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
            "no response within {DEADLINE:?}"
        );
        return None;
    }
    let n = i32::from_be_bytes(size) as usize;
    let mut buf = vec![0u8; n];
    s.read_exact(&mut buf).ok()?;
    Some(Bytes::from(buf))
}

/// A size-prefixed frame around `payload`.
pub fn framed(payload: &[u8]) -> Vec<u8> {
    let mut out = (payload.len() as i32).to_be_bytes().to_vec();
    out.extend_from_slice(payload);
    out
}

/// A request header: v1 (classic) or v2 (flexible, with an empty tagged-field section).
pub fn header(api_key: i16, version: i16, correlation_id: i32, flexible: bool) -> Vec<u8> {
    let mut h = BytesMut::new();
    h.put_i16(api_key);
    h.put_i16(version);
    h.put_i32(correlation_id);
    h.put_i16(3);
    h.extend_from_slice(b"bad");
    if flexible {
        h.put_u8(0);
    }
    h.to_vec()
}

// ---- record batches ----

/// A valid uncompressed batch of `values`, timestamps now.
pub fn batch(values: &[&str]) -> Vec<u8> {
    batch_with(values, BatchOptions::default())
}

pub fn batch_with(values: &[&str], opts: BatchOptions) -> Vec<u8> {
    let mut b = BatchBuilder::new(opts);
    let now = skiff_types::Clock::system().now_ms();
    for v in values {
        b.append(now, Some(b"k"), Some(v.as_bytes()), &[]);
    }
    b.build().unwrap()
}

/// `batch` with bytes patched at `at`, CRC recomputed (so only the patched defect remains).
pub fn patched(mut batch: Vec<u8>, at: usize, bytes: &[u8]) -> Vec<u8> {
    batch[at..at + bytes.len()].copy_from_slice(bytes);
    recompute_crc(&mut batch);
    batch
}

/// A batch header for `count` records with the given raw records section, valid CRC.
pub fn raw_batch(attributes: i16, count: i32, records_section: &[u8]) -> Vec<u8> {
    let now = skiff_types::Clock::system().now_ms();
    let mut b = BytesMut::new();
    b.put_i64(0); // base offset
    b.put_i32((49 + records_section.len()) as i32); // batch length
    b.put_i32(-1); // partition leader epoch
    b.put_i8(2); // magic
    b.put_u32(0); // crc, below
    b.put_i16(attributes);
    b.put_i32(count - 1); // last offset delta
    b.put_i64(now);
    b.put_i64(now);
    b.put_i64(-1); // producer id
    b.put_i16(-1);
    b.put_i32(-1);
    b.put_i32(count);
    b.extend_from_slice(records_section);
    let mut v = b.to_vec();
    recompute_crc(&mut v);
    v
}

/// Zig-zag varint bytes of `v`.
pub fn varint(v: i64) -> Vec<u8> {
    let mut out = Vec::new();
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    loop {
        let byte = (z & 0x7f) as u8;
        z >>= 7;
        if z == 0 {
            out.push(byte);
            return out;
        }
        out.push(byte | 0x80);
    }
}

// ---- requests ----

pub fn produce_request(topic: &str, partition: i32, records: Vec<u8>, acks: i16) -> ProduceRequest {
    ProduceRequest {
        acks,
        timeout_ms: 10_000,
        topic_data: vec![TopicProduceData {
            name: topic.into(),
            partition_data: vec![PartitionProduceData {
                index: partition,
                records: Some(Records::Bytes(Bytes::from(records))),
            }],
        }],
        ..ProduceRequest::default()
    }
}

/// Produces `records` to partition 0 at `version`: (error code, base offset).
pub fn produce(c: &mut Raw, version: i16, topic: &str, records: Vec<u8>) -> (i16, i64) {
    match c.call(version, produce_request(topic, 0, records, -1)) {
        ResponseBody::Produce(r) => {
            let p = &r.responses[0].partition_responses[0];
            (p.error_code, p.base_offset)
        }
        other => panic!("unexpected {other:?}"),
    }
}

pub fn fetch_request(topic: &str, offset: i64, max_bytes: i32, current_epoch: i32) -> FetchRequest {
    skiff_testkit::client::fetch_request(topic, 0, offset, max_bytes, current_epoch)
}

/// Fetch v12 of partition 0: (error code, high watermark, record bytes, values).
pub fn fetch(c: &mut Raw, topic: &str, offset: i64, max_bytes: i32, epoch: i32) -> Fetched {
    match c.call(12, fetch_request(topic, offset, max_bytes, epoch)) {
        ResponseBody::Fetch(r) => {
            let p = &r.responses[0].partitions[0];
            let bytes = p
                .records
                .as_ref()
                .and_then(|r| r.as_bytes())
                .cloned()
                .unwrap_or_default();
            let mut values = Vec::new();
            // A response may end with a partial batch (cut at the byte limit): skip it.
            for b in batches(&bytes) {
                let Ok((_, view)) = b else { break };
                let data = view.records_data(1 << 24).unwrap();
                for r in records(&data, view.records_count()) {
                    let r = r.unwrap();
                    values.push((
                        view.base_offset() + i64::from(r.offset_delta),
                        String::from_utf8(r.value.unwrap().to_vec()).unwrap(),
                    ));
                }
            }
            Fetched {
                error: p.error_code,
                high_watermark: p.high_watermark,
                bytes: bytes.len(),
                values,
            }
        }
        other => panic!("unexpected {other:?}"),
    }
}

pub struct Fetched {
    pub error: i16,
    pub high_watermark: i64,
    pub bytes: usize,
    pub values: Vec<(i64, String)>,
}

/// Creates a topic with config overrides; panics unless it worked.
pub fn create_topic(c: &mut Raw, name: &str, configs: &[(&str, &str)]) {
    let req = skiff_testkit::client::create_topics_request(name, 1, configs);
    match c.call(7, req) {
        ResponseBody::CreateTopics(r) => {
            assert_eq!(r.topics[0].error_code, 0, "{:?}", r.topics[0].error_message)
        }
        other => panic!("unexpected {other:?}"),
    }
}

/// The log end offset of partition 0 (ListOffsets latest).
pub fn end_offset(c: &mut Raw, topic: &str) -> i64 {
    let req = ListOffsetsRequest {
        replica_id: -1,
        topics: vec![ListOffsetsTopic {
            name: topic.into(),
            partitions: vec![ListOffsetsPartition {
                partition_index: 0,
                timestamp: -1,
                ..ListOffsetsPartition::default()
            }],
        }],
        ..ListOffsetsRequest::default()
    };
    match c.call(5, req) {
        ResponseBody::ListOffsets(r) => r.topics[0].partitions[0].offset,
        other => panic!("unexpected {other:?}"),
    }
}
