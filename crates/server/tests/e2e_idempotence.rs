//! End-to-end tests of idempotent producers over real TCP (issue 5): InitProducerId hands out
//! fresh ids at epoch 0; the same produce request sent twice (sequentially and pipelined)
//! yields one copy and the same offsets; a sequence gap is OUT_OF_ORDER_SEQUENCE_NUMBER (45), a
//! stale epoch INVALID_PRODUCER_EPOCH (47), a negative sequence INVALID_RECORD (87), all
//! with a message and nothing appended; duplicates on LogAppendTime topics answer the original
//! append time; DescribeProducers lists what the partitions know.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use bytes::Bytes;
use common::*;
use skiff_protocol::*;
use skiff_record::{BatchBuilder, BatchOptions};

const OUT_OF_ORDER_SEQUENCE_NUMBER: i16 = 45;
const INVALID_PRODUCER_EPOCH: i16 = 47;
const INVALID_RECORD: i16 = 87;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;

fn now_ms() -> i64 {
    skiff_types::Clock::system().now_ms()
}

/// One idempotent batch of `values` from producer `pid` at `epoch`, first sequence `seq`.
fn idem_batch(pid: i64, epoch: i16, seq: i32, values: &[&str]) -> Bytes {
    let mut b = BatchBuilder::new(BatchOptions {
        producer_id: pid,
        producer_epoch: epoch,
        base_sequence: seq,
        ..BatchOptions::default()
    });
    let now = now_ms();
    for v in values {
        b.append(now, Some(b"key"), Some(v.as_bytes()), &[]);
    }
    Bytes::from(b.build().unwrap())
}

async fn init_producer_id(c: &mut Client, version: i16, pid: i64, epoch: i16) -> (i16, i64, i16) {
    let req = InitProducerIdRequest {
        transactional_id: None,
        transaction_timeout_ms: 60_000,
        producer_id: pid,
        producer_epoch: epoch,
    };
    let ResponseBody::InitProducerId(r) = c.call(version, req).await else {
        panic!("not an InitProducerId response")
    };
    (r.error_code, r.producer_id, r.producer_epoch)
}

async fn new_producer(c: &mut Client) -> i64 {
    let (code, pid, epoch) = init_producer_id(c, 4, -1, -1).await;
    assert_eq!((code, epoch), (0, 0));
    assert!(pid >= 0);
    pid
}

async fn produce_to(
    c: &mut Client,
    topic: &str,
    partition: i32,
    records: Bytes,
) -> PartitionProduceResponse {
    match c
        .call(11, produce_request(topic, partition, records, -1))
        .await
    {
        ResponseBody::Produce(r) => r.responses[0].partition_responses[0].clone(),
        other => panic!("unexpected {other:?}"),
    }
}

/// Every (offset, value) of partition 0 of `topic` from offset 0.
async fn read_all(c: &mut Client, topic: &str) -> Vec<(i64, String)> {
    let resp = c.call(12, fetch_request(topic, 0, 0, 0)).await;
    let p = fetched(&resp);
    assert_eq!(p.error_code, 0);
    values(p)
}

fn numbered(vals: &[(i64, String)]) -> Vec<(i64, &str)> {
    vals.iter().map(|(o, v)| (*o, v.as_str())).collect()
}

#[tokio::test]
async fn e2e_init_producer_id_is_fresh_at_epoch_0_whatever_the_request_carries() {
    let t = start().await;
    let mut c = Client::connect(t.addr).await;
    let (code, first, epoch) = init_producer_id(&mut c, 2, -1, -1).await;
    assert_eq!((code, epoch), (0, 0));
    // v3+ may carry the producer's current id and epoch: a non-transactional producer still
    // gets a fresh id at epoch 0 (no epoch bump).
    for version in [3i16, 4, 5] {
        let (code, pid, epoch) = init_producer_id(&mut c, version, first, 7).await;
        assert_eq!((code, epoch), (0, 0), "v{version}");
        assert_ne!(pid, first, "v{version}: a fresh id, not the one carried");
    }
    t.server.shutdown().await.unwrap();
}

#[tokio::test]
async fn e2e_same_produce_request_twice_is_one_copy_with_the_same_offsets() {
    let t = start().await;
    let mut c = Client::connect(t.addr).await;
    assert_eq!(create_topic(&mut c, "idem", 1).await.error_code, 0);
    let pid = new_producer(&mut c).await;
    let req = produce_request("idem", 0, idem_batch(pid, 0, 0, &["a", "b", "c"]), -1);

    // Sequentially: the retry is answered with success and the original offsets.
    for attempt in 0..2 {
        let ResponseBody::Produce(r) = c.call(11, req.clone()).await else {
            panic!()
        };
        let p = &r.responses[0].partition_responses[0];
        assert_eq!(
            (
                p.error_code,
                p.base_offset,
                p.log_append_time_ms,
                p.log_start_offset
            ),
            (0, 0, -1, 0),
            "attempt {attempt}: {:?}",
            p.error_message
        );
    }
    // The next batch continues the sequence.
    let p = produce_to(&mut c, "idem", 0, idem_batch(pid, 0, 3, &["d", "e"])).await;
    assert_eq!((p.error_code, p.base_offset), (0, 3));

    // Pipelined: the same request twice before reading either answer (an in-flight retry).
    let next = produce_request("idem", 0, idem_batch(pid, 0, 5, &["f"]), -1);
    let (f1, c1) = c.frame(11, next.clone());
    let (f2, c2) = c.frame(11, next);
    c.send_raw(&f1).await;
    c.send_raw(&f2).await;
    for cid in [c1, c2] {
        let frame = c.read_frame().await.unwrap();
        let ResponseBody::Produce(r) = decode(ApiKey::Produce, 11, cid, frame) else {
            panic!()
        };
        let p = &r.responses[0].partition_responses[0];
        assert_eq!((p.error_code, p.base_offset), (0, 5), "correlation {cid}");
    }
    // An older batch, still among the last 5, is still deduplicated to its own offsets.
    let p = produce_to(&mut c, "idem", 0, idem_batch(pid, 0, 0, &["a", "b", "c"])).await;
    assert_eq!((p.error_code, p.base_offset), (0, 0));
    let p = produce_to(&mut c, "idem", 0, idem_batch(pid, 0, 3, &["d", "e"])).await;
    assert_eq!((p.error_code, p.base_offset), (0, 3));

    // Exactly one copy of each record.
    let got = read_all(&mut c, "idem").await;
    assert_eq!(
        numbered(&got),
        vec![(0, "a"), (1, "b"), (2, "c"), (3, "d"), (4, "e"), (5, "f")]
    );
    assert_eq!(list_offset(&mut c, 9, "idem", -1).await, (0, 6, -1));
    t.server.shutdown().await.unwrap();
}

#[tokio::test]
async fn e2e_sequence_gap_is_out_of_order_and_appends_nothing() {
    let t = start().await;
    let mut c = Client::connect(t.addr).await;
    create_topic(&mut c, "gap", 1).await;
    let pid = new_producer(&mut c).await;
    let p = produce_to(&mut c, "gap", 0, idem_batch(pid, 0, 0, &["a", "b"])).await;
    assert_eq!((p.error_code, p.base_offset), (0, 0));
    // Expected 2; 5 leaves a gap, 1 overlaps without matching a batch.
    for seq in [5, 1] {
        let p = produce_to(&mut c, "gap", 0, idem_batch(pid, 0, seq, &["x"])).await;
        assert_eq!(p.error_code, OUT_OF_ORDER_SEQUENCE_NUMBER, "seq {seq}");
        assert_eq!(p.base_offset, -1);
        let msg = p.error_message.unwrap_or_default();
        assert!(msg.contains("out of order sequence"), "seq {seq}: {msg}");
    }
    // The producer carries on at the expected sequence.
    let p = produce_to(&mut c, "gap", 0, idem_batch(pid, 0, 2, &["c"])).await;
    assert_eq!((p.error_code, p.base_offset), (0, 2));
    assert_eq!(
        numbered(&read_all(&mut c, "gap").await),
        vec![(0, "a"), (1, "b"), (2, "c")]
    );
    t.server.shutdown().await.unwrap();
}

#[tokio::test]
async fn e2e_stale_epoch_is_invalid_producer_epoch_and_higher_epoch_restarts_at_0() {
    let t = start().await;
    let mut c = Client::connect(t.addr).await;
    create_topic(&mut c, "epochs", 1).await;
    let pid = new_producer(&mut c).await;
    let p = produce_to(&mut c, "epochs", 0, idem_batch(pid, 1, 0, &["a"])).await;
    assert_eq!((p.error_code, p.base_offset), (0, 0));
    // A lower epoch is fenced, whatever its sequence.
    for seq in [0, 1] {
        let p = produce_to(&mut c, "epochs", 0, idem_batch(pid, 0, seq, &["stale"])).await;
        assert_eq!(p.error_code, INVALID_PRODUCER_EPOCH, "seq {seq}");
        let msg = p.error_message.unwrap_or_default();
        assert!(msg.contains("smaller than the last seen epoch"), "{msg}");
    }
    // A higher epoch must start at sequence 0.
    let p = produce_to(&mut c, "epochs", 0, idem_batch(pid, 2, 1, &["x"])).await;
    assert_eq!(p.error_code, OUT_OF_ORDER_SEQUENCE_NUMBER);
    let p = produce_to(&mut c, "epochs", 0, idem_batch(pid, 2, 0, &["b"])).await;
    assert_eq!((p.error_code, p.base_offset), (0, 1));
    // The old epoch's batch is no longer a duplicate: it is fenced.
    let p = produce_to(&mut c, "epochs", 0, idem_batch(pid, 1, 0, &["a"])).await;
    assert_eq!(p.error_code, INVALID_PRODUCER_EPOCH);
    assert_eq!(
        numbered(&read_all(&mut c, "epochs").await),
        vec![(0, "a"), (1, "b")]
    );
    t.server.shutdown().await.unwrap();
}

#[tokio::test]
async fn e2e_negative_sequence_with_a_producer_id_is_invalid_record() {
    let t = start().await;
    let mut c = Client::connect(t.addr).await;
    create_topic(&mut c, "negseq", 1).await;
    let pid = new_producer(&mut c).await;
    let p = produce_to(&mut c, "negseq", 0, idem_batch(pid, 0, -1, &["x"])).await;
    assert_eq!(p.error_code, INVALID_RECORD);
    let msg = p.error_message.unwrap_or_default().to_lowercase();
    assert!(msg.contains("invalid sequence number"), "{msg}");
    // A non-idempotent batch (producer id -1, sequence -1) is fine, twice: no deduplication.
    for want in [0, 1] {
        let p = produce_to(&mut c, "negseq", 0, idem_batch(-1, -1, -1, &["plain"])).await;
        assert_eq!((p.error_code, p.base_offset), (0, want));
    }
    t.server.shutdown().await.unwrap();
}

#[tokio::test]
async fn e2e_duplicate_on_log_append_time_topic_answers_the_original_append_time() {
    let t = start().await;
    let mut c = Client::connect(t.addr).await;
    let created = create_topic_with(
        &mut c,
        "lat",
        &[("message.timestamp.type", "LogAppendTime")],
    )
    .await;
    assert_eq!(created.error_code, 0, "{:?}", created.error_message);
    let pid = new_producer(&mut c).await;
    let batch = idem_batch(pid, 0, 0, &["a", "b"]);
    let first = produce_to(&mut c, "lat", 0, batch.clone()).await;
    assert_eq!((first.error_code, first.base_offset), (0, 0));
    assert!(first.log_append_time_ms > 0);
    // Let the clock pass the first append time, so a retry stamped "now" would differ.
    while now_ms() <= first.log_append_time_ms {
        tokio::task::yield_now().await;
    }
    let retry = produce_to(&mut c, "lat", 0, batch).await;
    assert_eq!(
        (
            retry.error_code,
            retry.base_offset,
            retry.log_append_time_ms
        ),
        (0, 0, first.log_append_time_ms)
    );
    // A new batch gets its own (later) append time.
    let next = produce_to(&mut c, "lat", 0, idem_batch(pid, 0, 2, &["c"])).await;
    assert_eq!((next.error_code, next.base_offset), (0, 2));
    assert!(next.log_append_time_ms > first.log_append_time_ms);
    assert_eq!(read_all(&mut c, "lat").await.len(), 3);
    t.server.shutdown().await.unwrap();
}

#[tokio::test]
async fn e2e_duplicate_on_durable_topic_is_acknowledged_after_sync() {
    let t = start().await;
    let mut c = Client::connect(t.addr).await;
    let created = create_topic_with(&mut c, "durable", &[("flush.messages", "1")]).await;
    assert_eq!(created.error_code, 0, "{:?}", created.error_message);
    let pid = new_producer(&mut c).await;
    let batch = idem_batch(pid, 0, 0, &["a"]);
    for _ in 0..2 {
        let p = produce_to(&mut c, "durable", 0, batch.clone()).await;
        assert_eq!((p.error_code, p.base_offset), (0, 0));
    }
    assert_eq!(numbered(&read_all(&mut c, "durable").await), vec![(0, "a")]);
    t.server.shutdown().await.unwrap();
}

/// (producer id, epoch, last sequence, last timestamp, coordinator epoch, txn start offset).
type Described = (i64, i32, i32, i64, i32, i64);

async fn describe(c: &mut Client, topics: &[(&str, &[i32])]) -> DescribeProducersResponse {
    let req = DescribeProducersRequest {
        topics: topics
            .iter()
            .map(|(name, parts)| DescribeProducersRequestTopicRequest {
                name: (*name).into(),
                partition_indexes: parts.to_vec(),
            })
            .collect(),
    };
    let ResponseBody::DescribeProducers(r) = c.call(0, req).await else {
        panic!("not a DescribeProducers response")
    };
    r
}

#[tokio::test]
async fn e2e_describe_producers_lists_active_producers_per_partition() {
    let t = start().await;
    let mut c = Client::connect(t.addr).await;
    create_topic(&mut c, "dp", 3).await;
    let p1 = new_producer(&mut c).await;
    let p2 = new_producer(&mut c).await;
    // Partition 0: p1 (two batches, 3 records) and p2 (epoch 2, one batch); partition 1: p2;
    // partition 2: only a non-idempotent batch.
    // Recent timestamps: a producer whose last timestamp is older than
    // producer.id.expiration.ms (1 day) is expired by the log manager's periodic check.
    let ts = now_ms() - 60_000;
    let batch_at = |pid: i64, epoch: i16, seq: i32, n: usize, ts: i64| {
        let mut b = BatchBuilder::new(BatchOptions {
            producer_id: pid,
            producer_epoch: epoch,
            base_sequence: seq,
            ..BatchOptions::default()
        });
        for i in 0..n {
            b.append(ts + i as i64, None, Some(b"v"), &[]);
        }
        Bytes::from(b.build().unwrap())
    };
    for (part, batch) in [
        (0, batch_at(p1, 0, 0, 2, ts)),
        (0, batch_at(p2, 2, 0, 1, ts + 10)),
        (0, batch_at(p1, 0, 2, 1, ts + 20)),
        (1, batch_at(p2, 2, 0, 4, ts + 30)),
        (2, batch_at(-1, -1, -1, 1, ts)),
    ] {
        assert_eq!(produce_to(&mut c, "dp", part, batch).await.error_code, 0);
    }
    let r = describe(&mut c, &[("dp", &[0, 1, 2, 3]), ("nope", &[0])]).await;
    assert_eq!(r.topics.len(), 2);
    let dp = &r.topics[0];
    assert_eq!(dp.name, "dp");
    let summary: Vec<(i32, i16, Vec<Described>)> = dp
        .partitions
        .iter()
        .map(|p| {
            (
                p.partition_index,
                p.error_code,
                p.active_producers
                    .iter()
                    .map(|s| {
                        (
                            s.producer_id,
                            s.producer_epoch,
                            s.last_sequence,
                            s.last_timestamp,
                            s.coordinator_epoch,
                            s.current_txn_start_offset,
                        )
                    })
                    .collect(),
            )
        })
        .collect();
    // In producer-id order.
    let mut part0 = vec![(p1, 0, 2, ts + 20, -1, -1), (p2, 2, 0, ts + 10, -1, -1)];
    part0.sort_by_key(|e| e.0);
    assert_eq!(
        summary,
        vec![
            (0, 0, part0),
            (1, 0, vec![(p2, 2, 3, ts + 33, -1, -1)]),
            (2, 0, vec![]),
            (3, UNKNOWN_TOPIC_OR_PARTITION, vec![]),
        ]
    );
    let nope = &r.topics[1];
    assert_eq!(nope.name, "nope");
    assert_eq!(nope.partitions[0].error_code, UNKNOWN_TOPIC_OR_PARTITION);
    assert!(nope.partitions[0].error_message.is_some());

    // A refused batch changes nothing; a duplicate changes nothing.
    let refused = produce_to(&mut c, "dp", 1, batch_at(p2, 2, 9, 1, ts + 40)).await;
    assert_eq!(refused.error_code, OUT_OF_ORDER_SEQUENCE_NUMBER);
    let dup = produce_to(&mut c, "dp", 1, batch_at(p2, 2, 0, 4, ts + 30)).await;
    assert_eq!((dup.error_code, dup.base_offset), (0, 0));
    let r = describe(&mut c, &[("dp", &[1])]).await;
    let s = &r.topics[0].partitions[0].active_producers;
    assert_eq!(s.len(), 1);
    assert_eq!((s[0].last_sequence, s[0].last_timestamp), (3, ts + 33));
    t.server.shutdown().await.unwrap();
}
