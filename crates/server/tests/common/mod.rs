//! Test support: the in-process server (re-exported from `skiff_testkit::in_process`, the
//! workspace's one in-process harness) and a raw async Kafka protocol client with request
//! builders; every read is bounded by [`DEADLINE`].
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use bytes::{Buf, Bytes, BytesMut};
use skiff_protocol::*;
use skiff_record::{BatchBuilder, BatchOptions, Compression, batches, records};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

// The in-process harness is the workspace's one (`skiff-testkit`).
#[allow(unused_imports)]
pub use skiff_testkit::in_process::{DEADLINE, TestServer, start, start_with};

/// A raw client: encodes requests with the protocol crate, reads frames back.
pub struct Client {
    pub stream: TcpStream,
    next_correlation: i32,
}

impl Client {
    pub async fn connect(addr: std::net::SocketAddr) -> Client {
        let stream = tokio::time::timeout(DEADLINE, TcpStream::connect(addr))
            .await
            .unwrap()
            .unwrap();
        Client {
            stream,
            next_correlation: 1,
        }
    }

    /// Encodes a request frame (size prefix included); returns it and its correlation id.
    pub fn frame(&mut self, version: i16, body: impl Into<RequestBody>) -> (Bytes, i32) {
        let body = body.into();
        let correlation_id = self.next_correlation;
        self.next_correlation += 1;
        let header = RequestHeader {
            request_api_key: body.api_key() as i16,
            request_api_version: version,
            correlation_id,
            client_id: Some("skiff-test".into()),
        };
        let mut out = BytesMut::new();
        encode_request(&header, &body, &mut out).unwrap();
        (out.freeze(), correlation_id)
    }

    pub async fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).await.unwrap();
    }

    /// Reads one response frame (without its size), or `None` if the server closed.
    pub async fn read_frame(&mut self) -> Option<Bytes> {
        let read = async {
            let mut size = [0u8; 4];
            if self.stream.read_exact(&mut size).await.is_err() {
                return None;
            }
            let n = i32::from_be_bytes(size) as usize;
            let mut buf = vec![0u8; n];
            self.stream.read_exact(&mut buf).await.ok()?;
            Some(Bytes::from(buf))
        };
        tokio::time::timeout(DEADLINE, read)
            .await
            .expect("response within the deadline")
    }

    /// Whether the server closed the connection (EOF or reset) within the deadline.
    pub async fn is_closed(&mut self) -> bool {
        let mut buf = [0u8; 64];
        match tokio::time::timeout(DEADLINE, self.stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => true,
            Ok(Ok(_)) => false,
            Err(_) => false,
        }
    }

    /// Sends a request and decodes its response.
    pub async fn call(&mut self, version: i16, body: impl Into<RequestBody>) -> ResponseBody {
        let body = body.into();
        let key = body.api_key();
        let (frame, cid) = self.frame(version, body);
        self.send_raw(&frame).await;
        let resp = self.read_frame().await.expect("a response");
        decode(key, version, cid, resp)
    }
}

/// Decodes a response frame and checks its correlation id.
pub fn decode(key: ApiKey, version: i16, correlation_id: i32, frame: Bytes) -> ResponseBody {
    let (header, body) = decode_response(key, version, frame).unwrap();
    assert_eq!(header.correlation_id, correlation_id);
    body
}

/// The correlation id at the front of a response frame.
pub fn correlation_of(frame: &Bytes) -> i32 {
    (&frame[..4]).get_i32()
}

// ---- request builders and response readers shared by the e2e tests ----

pub fn batch(values: &[&str]) -> Bytes {
    batch_with(values, Compression::None)
}

pub fn batch_with(values: &[&str], compression: Compression) -> Bytes {
    let mut b = BatchBuilder::new(BatchOptions {
        compression,
        ..BatchOptions::default()
    });
    let now = skiff_types::Clock::system().now_ms();
    for v in values {
        b.append(now, Some(b"key"), Some(v.as_bytes()), &[]);
    }
    Bytes::from(b.build().unwrap())
}

pub async fn create_topic(c: &mut Client, name: &str, partitions: i32) -> CreatableTopicResult {
    let req = CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: name.into(),
            num_partitions: partitions,
            replication_factor: -1,
            ..CreatableTopic::default()
        }],
        timeout_ms: 10_000,
        ..CreateTopicsRequest::default()
    };
    match c.call(7, req).await {
        ResponseBody::CreateTopics(r) => r.topics.into_iter().next().unwrap(),
        other => panic!("unexpected {other:?}"),
    }
}

pub use skiff_testkit::client::produce_request;

pub async fn produce(
    c: &mut Client,
    version: i16,
    topic: &str,
    records: Bytes,
) -> PartitionProduceResponse {
    match c
        .call(version, produce_request(topic, 0, records, -1))
        .await
    {
        ResponseBody::Produce(r) => r.responses[0].partition_responses[0].clone(),
        other => panic!("unexpected {other:?}"),
    }
}

pub fn fetch_request(topic: &str, offset: i64, max_wait_ms: i32, min_bytes: i32) -> FetchRequest {
    FetchRequest {
        max_wait_ms,
        min_bytes,
        max_bytes: 1 << 20,
        session_epoch: -1,
        topics: vec![FetchTopic {
            topic: topic.into(),
            partitions: vec![FetchPartition {
                partition: 0,
                fetch_offset: offset,
                partition_max_bytes: 1 << 20,
                ..FetchPartition::default()
            }],
            ..FetchTopic::default()
        }],
        ..FetchRequest::default()
    }
}

pub fn fetched(resp: &ResponseBody) -> &FetchResponsePartitionData {
    match resp {
        ResponseBody::Fetch(r) => &r.responses[0].partitions[0],
        other => panic!("unexpected {other:?}"),
    }
}

/// (offset, value) of every record in a fetched records field.
pub fn values(p: &FetchResponsePartitionData) -> Vec<(i64, String)> {
    let bytes = p
        .records
        .as_ref()
        .and_then(|r| r.as_bytes())
        .cloned()
        .unwrap_or_default();
    let mut out = Vec::new();
    for b in batches(&bytes) {
        let (_, view) = b.unwrap();
        let data = view.records_data(1 << 20).unwrap();
        for r in records(&data, view.records_count()) {
            let r = r.unwrap();
            out.push((
                view.base_offset() + i64::from(r.offset_delta),
                String::from_utf8(r.value.unwrap().to_vec()).unwrap(),
            ));
        }
    }
    out
}

/// One batch of records with explicit timestamps.
pub fn batch_at(values: &[(&str, i64)]) -> Bytes {
    let mut b = BatchBuilder::new(BatchOptions::default());
    for (v, ts) in values {
        b.append(*ts, Some(b"key"), Some(v.as_bytes()), &[]);
    }
    Bytes::from(b.build().unwrap())
}

/// Creates a topic with config overrides; returns the result entry.
pub async fn create_topic_with(
    c: &mut Client,
    name: &str,
    configs: &[(&str, &str)],
) -> CreatableTopicResult {
    let req = skiff_testkit::client::create_topics_request(name, 1, configs);
    match c.call(7, req).await {
        ResponseBody::CreateTopics(r) => r.topics.into_iter().next().unwrap(),
        other => panic!("unexpected {other:?}"),
    }
}

/// ListOffsets for partition 0 of `topic` at `timestamp`: (error, offset, timestamp).
pub async fn list_offset(
    c: &mut Client,
    version: i16,
    topic: &str,
    timestamp: i64,
) -> (i16, i64, i64) {
    let req = ListOffsetsRequest {
        replica_id: -1,
        topics: vec![ListOffsetsTopic {
            name: topic.into(),
            partitions: vec![ListOffsetsPartition {
                partition_index: 0,
                timestamp,
                ..ListOffsetsPartition::default()
            }],
        }],
        ..ListOffsetsRequest::default()
    };
    match c.call(version, req).await {
        ResponseBody::ListOffsets(r) => {
            let p = &r.topics[0].partitions[0];
            (p.error_code, p.offset, p.timestamp)
        }
        other => panic!("unexpected {other:?}"),
    }
}

/// OffsetFetch v8 (batched groups) of `partitions` of `topic` for each group in `groups`.
pub async fn offset_fetch(
    c: &mut Client,
    groups: &[&str],
    topic: &str,
    partitions: &[i32],
) -> OffsetFetchResponse {
    let req = OffsetFetchRequest {
        groups: groups
            .iter()
            .map(|g| OffsetFetchRequestGroup {
                group_id: (*g).into(),
                member_id: None,
                member_epoch: -1,
                topics: Some(vec![OffsetFetchRequestTopics {
                    name: topic.into(),
                    partition_indexes: partitions.to_vec(),
                }]),
            })
            .collect(),
        ..OffsetFetchRequest::default()
    };
    let ResponseBody::OffsetFetch(r) = c.call(8, req).await else {
        panic!("not an OffsetFetch response")
    };
    r
}

/// OffsetCommit v8 of `(partition, offset, metadata)` entries of `topic` for a group member.
pub async fn offset_commit(
    c: &mut Client,
    group: &str,
    generation: i32,
    member: &str,
    topic: &str,
    entries: &[(i32, i64, String)],
) -> OffsetCommitResponse {
    let req = OffsetCommitRequest {
        group_id: group.into(),
        generation_id_or_member_epoch: generation,
        member_id: member.into(),
        group_instance_id: None,
        retention_time_ms: -1,
        topics: vec![OffsetCommitRequestTopic {
            name: topic.into(),
            partitions: entries
                .iter()
                .map(|(p, offset, metadata)| OffsetCommitRequestPartition {
                    partition_index: *p,
                    committed_offset: *offset,
                    committed_leader_epoch: -1,
                    committed_metadata: Some(metadata.clone()),
                })
                .collect(),
        }],
    };
    let ResponseBody::OffsetCommit(r) = c.call(8, req).await else {
        panic!("not an OffsetCommit response")
    };
    r
}
