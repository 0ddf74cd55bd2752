//! Blocking Kafka client helpers for e2e tests, over skiff-protocol's `BlockingClient`.
//!
//! Mental model: a [`Conn`] is one TCP connection with one request in flight; every read is
//! bounded by [`DEADLINE`]. The helpers build the request a test would otherwise spell out
//! (create a topic, produce one batch, fetch one partition, list offsets, init a producer id)
//! and return the part of the response tests look at; anything the helpers do not cover goes
//! through [`Conn::call`]. Failures panic with the request in the message.

use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use bytes::Bytes;
use skiff_protocol::*;

/// Every read on a [`Conn`], and the connect retry, is bounded by this.
pub const DEADLINE: Duration = Duration::from_secs(30);

/// One blocking protocol connection.
#[derive(Debug)]
pub struct Conn {
    pub client: BlockingClient<TcpStream>,
}

impl Conn {
    /// Connects to `127.0.0.1:port` (retrying refused connects until [`DEADLINE`]).
    pub fn open(port: u16) -> Conn {
        Conn::open_as(SocketAddr::from(([127, 0, 0, 1], port)), "skiff-test")
    }

    /// Connects to `addr` with `client_id` (retrying refused connects until [`DEADLINE`]).
    pub fn open_as(addr: SocketAddr, client_id: &str) -> Conn {
        let until = skiff_types::Clock::system().now() + DEADLINE;
        let stream = loop {
            match TcpStream::connect(addr) {
                Ok(s) => break s,
                Err(e) if skiff_types::Clock::system().now() < until => {
                    let _ = e;
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => panic!("cannot connect to {addr}: {e}"),
            }
        };
        stream
            .set_read_timeout(Some(DEADLINE))
            .unwrap_or_else(|e| panic!("set_read_timeout: {e}"));
        Conn {
            client: BlockingClient::new(stream, client_id),
        }
    }

    /// Sends `body` at `version`; panics on an I/O or decoding error.
    pub fn call(&mut self, version: i16, body: impl Into<RequestBody>) -> ResponseBody {
        let body = body.into();
        let key = body.api_key();
        self.client
            .call(version, body)
            .unwrap_or_else(|e| panic!("{key:?} v{version}: {e}"))
    }

    /// CreateTopics v7 of one topic (replication factor 1): the result entry.
    pub fn create_topic_result(
        &mut self,
        name: &str,
        partitions: i32,
        configs: &[(&str, &str)],
    ) -> CreatableTopicResult {
        let req = create_topics_request(name, partitions, configs);
        let ResponseBody::CreateTopics(r) = self.call(7, req) else {
            panic!("not a CreateTopics response")
        };
        match r.topics.into_iter().next() {
            Some(t) => t,
            None => panic!("CreateTopics answered no topic"),
        }
    }

    /// Creates a topic and asserts success.
    pub fn create_topic(&mut self, name: &str, partitions: i32, configs: &[(&str, &str)]) {
        let t = self.create_topic_result(name, partitions, configs);
        assert_eq!(t.error_code, 0, "create {name}: {:?}", t.error_message);
    }

    /// InitProducerId v4 without a transactional id; asserts success, epoch 0.
    pub fn init_producer_id(&mut self) -> i64 {
        let req = InitProducerIdRequest {
            transactional_id: None,
            transaction_timeout_ms: 60_000,
            producer_id: -1,
            producer_epoch: -1,
        };
        let ResponseBody::InitProducerId(r) = self.call(4, req) else {
            panic!("not an InitProducerId response")
        };
        assert_eq!((r.error_code, r.producer_epoch), (0, 0));
        r.producer_id
    }

    /// Produce (acks=-1) of one batch to one partition: that partition's response.
    pub fn produce_batch(
        &mut self,
        version: i16,
        topic: &str,
        partition: i32,
        records: Bytes,
    ) -> PartitionProduceResponse {
        let req = produce_request(topic, partition, records, -1);
        let ResponseBody::Produce(r) = self.call(version, req) else {
            panic!("not a Produce response")
        };
        r.responses[0].partition_responses[0].clone()
    }

    /// [`Conn::produce_batch`] at v11: (error code, base offset).
    pub fn produce(&mut self, topic: &str, partition: i32, records: Bytes) -> (i16, i64) {
        let p = self.produce_batch(11, topic, partition, records);
        (p.error_code, p.base_offset)
    }

    /// Fetch v12 of one partition from `offset` (no wait, `max_bytes` for the partition and
    /// the response): that partition's data.
    pub fn fetch(
        &mut self,
        topic: &str,
        partition: i32,
        offset: i64,
        max_bytes: i32,
    ) -> FetchResponsePartitionData {
        let unknown_epoch = FetchPartition::default().current_leader_epoch;
        let req = fetch_request(topic, partition, offset, max_bytes, unknown_epoch);
        let ResponseBody::Fetch(r) = self.call(12, req) else {
            panic!("not a Fetch response")
        };
        r.responses[0].partitions[0].clone()
    }

    /// ListOffsets v7 of one partition at `timestamp` (-1 latest, -2 earliest):
    /// (error code, offset).
    pub fn list_offset(&mut self, topic: &str, partition: i32, timestamp: i64) -> (i16, i64) {
        let p = self.list_offset_answer(topic, partition, timestamp);
        (p.error_code, p.offset)
    }

    /// ListOffsets v7 of one partition at `timestamp`: that partition's whole answer
    /// (error, timestamp, offset, leader epoch).
    pub fn list_offset_answer(
        &mut self,
        topic: &str,
        partition: i32,
        timestamp: i64,
    ) -> ListOffsetsPartitionResponse {
        let req = ListOffsetsRequest {
            replica_id: -1,
            topics: vec![ListOffsetsTopic {
                name: topic.into(),
                partitions: vec![ListOffsetsPartition {
                    partition_index: partition,
                    timestamp,
                    ..ListOffsetsPartition::default()
                }],
            }],
            ..ListOffsetsRequest::default()
        };
        let ResponseBody::ListOffsets(r) = self.call(7, req) else {
            panic!("not a ListOffsets response")
        };
        match r
            .topics
            .into_iter()
            .next()
            .and_then(|t| t.partitions.into_iter().next())
        {
            Some(p) => p,
            None => panic!("ListOffsets answered no partition"),
        }
    }
}

/// The record bytes of a fetched partition (empty when none).
pub fn records_of(p: &FetchResponsePartitionData) -> Bytes {
    p.records
        .as_ref()
        .and_then(|r| r.as_bytes())
        .cloned()
        .unwrap_or_default()
}

/// A CreateTopics request (v7 shape) for one topic of `partitions` partitions, replication
/// factor 1, with config overrides: the one builder every harness client uses.
pub fn create_topics_request(
    name: &str,
    partitions: i32,
    configs: &[(&str, &str)],
) -> CreateTopicsRequest {
    CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: name.into(),
            num_partitions: partitions,
            replication_factor: 1,
            configs: configs
                .iter()
                .map(|(k, v)| CreatableTopicConfig {
                    name: (*k).into(),
                    value: Some((*v).into()),
                })
                .collect(),
            ..CreatableTopic::default()
        }],
        timeout_ms: 10_000,
        ..CreateTopicsRequest::default()
    }
}

/// A Produce request of one batch to one partition (10 s timeout).
pub fn produce_request(topic: &str, partition: i32, records: Bytes, acks: i16) -> ProduceRequest {
    ProduceRequest {
        acks,
        timeout_ms: 10_000,
        topic_data: vec![TopicProduceData {
            name: topic.into(),
            partition_data: vec![PartitionProduceData {
                index: partition,
                records: Some(Records::Bytes(records)),
            }],
        }],
        ..ProduceRequest::default()
    }
}

/// A Fetch request of one partition from `offset`: no wait, `max_bytes` for the partition and
/// the response, the fetcher's `current_leader_epoch`.
pub fn fetch_request(
    topic: &str,
    partition: i32,
    offset: i64,
    max_bytes: i32,
    current_leader_epoch: i32,
) -> FetchRequest {
    FetchRequest {
        max_wait_ms: 0,
        min_bytes: 0,
        max_bytes,
        session_epoch: -1,
        topics: vec![FetchTopic {
            topic: topic.into(),
            partitions: vec![FetchPartition {
                partition,
                fetch_offset: offset,
                partition_max_bytes: max_bytes,
                current_leader_epoch,
                ..FetchPartition::default()
            }],
            ..FetchTopic::default()
        }],
        ..FetchRequest::default()
    }
}
