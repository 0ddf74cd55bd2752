//! End-to-end transactions over TCP with raw requests (issue 18), the paths stock clients
//! never take on purpose: the KIP-890 part 1 verification refuses a transactional batch for
//! a partition never added to the transaction (B17) and a late batch of an ended transaction
//! (F18's shape) with INVALID_TRANSACTION_STATE, appending nothing; a fenced epoch's EndTxn is
//! refused; while a transaction is open the LSO (Fetch's LastStableOffset, ListOffsets
//! read_committed latest) stays at its first offset and read_committed fetches stop there,
//! then the commit moves it past the marker; DescribeProducers shows the open transaction;
//! with delayed delivery (issue 8) a consumer stops at min(LSO, DSO).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use bytes::Bytes;
use common::*;
use skiff_protocol::*;
use skiff_record::{BatchBuilder, BatchOptions};

const INVALID_TXN_STATE: i16 = 48;

fn txn_batch(pid: i64, epoch: i16, seq: i32, values: &[&str]) -> Bytes {
    let mut b = BatchBuilder::new(BatchOptions {
        producer_id: pid,
        producer_epoch: epoch,
        base_sequence: seq,
        is_transactional: true,
        ..BatchOptions::default()
    });
    let now = skiff_types::Clock::system().now_ms();
    for v in values {
        b.append(now, Some(b"k"), Some(v.as_bytes()), &[]);
    }
    Bytes::from(b.build().unwrap())
}

/// FindCoordinator for the id, then InitProducerId with it (retried while the coordinator
/// loads): (producer id, epoch).
async fn init_txn(c: &mut Client, tid: &str) -> (i64, i16) {
    let deadline = std::time::Instant::now() + DEADLINE;
    loop {
        let find = FindCoordinatorRequest {
            key: tid.into(),
            key_type: 1,
            ..FindCoordinatorRequest::default()
        };
        let ResponseBody::FindCoordinator(f) = c.call(3, find).await else {
            panic!()
        };
        assert_eq!(f.error_code, 0, "{f:?}");
        let req = InitProducerIdRequest {
            transactional_id: Some(tid.into()),
            transaction_timeout_ms: 60_000,
            producer_id: -1,
            producer_epoch: -1,
        };
        let ResponseBody::InitProducerId(r) = c.call(4, req).await else {
            panic!()
        };
        if r.error_code == 0 {
            return (r.producer_id, r.producer_epoch);
        }
        assert!(
            std::time::Instant::now() < deadline,
            "InitProducerId kept failing: {r:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

async fn add_partition(c: &mut Client, tid: &str, pid: i64, epoch: i16, topic: &str) -> i16 {
    let req = AddPartitionsToTxnRequest {
        v3_and_below_transactional_id: tid.into(),
        v3_and_below_producer_id: pid,
        v3_and_below_producer_epoch: epoch,
        v3_and_below_topics: vec![AddPartitionsToTxnTopic {
            name: topic.into(),
            partitions: vec![0],
        }],
        ..AddPartitionsToTxnRequest::default()
    };
    let ResponseBody::AddPartitionsToTxn(r) = c.call(3, req).await else {
        panic!()
    };
    r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code
}

async fn end_txn(c: &mut Client, tid: &str, pid: i64, epoch: i16, commit: bool) -> i16 {
    let req = EndTxnRequest {
        transactional_id: tid.into(),
        producer_id: pid,
        producer_epoch: epoch,
        committed: commit,
    };
    let ResponseBody::EndTxn(r) = c.call(3, req).await else {
        panic!()
    };
    r.error_code
}

async fn produce_txn(c: &mut Client, tid: &str, topic: &str, batch: Bytes) -> (i16, i64) {
    let mut req = produce_request(topic, 0, batch, -1);
    req.transactional_id = Some(tid.into());
    let ResponseBody::Produce(r) = c.call(9, req).await else {
        panic!()
    };
    let p = &r.responses[0].partition_responses[0];
    (p.error_code, p.base_offset)
}

/// Data records (control batches left out) of a fetched partition.
fn data_records(p: &FetchResponsePartitionData) -> usize {
    let bytes = p
        .records
        .as_ref()
        .and_then(|r| r.as_bytes())
        .cloned()
        .unwrap_or_default();
    skiff_record::batches(&bytes)
        .map(|b| b.unwrap().1)
        .filter(|v| !v.is_control())
        .map(|v| v.records_count() as usize)
        .sum()
}

/// (HighWatermark, LastStableOffset, data records) of a read_committed Fetch from 0.
async fn fetch_committed(c: &mut Client, topic: &str) -> (i64, i64, usize) {
    let mut req = fetch_request(topic, 0, 0, 0);
    req.isolation_level = 1;
    let resp = c.call(12, req).await;
    let p = fetched(&resp);
    assert_eq!(p.error_code, 0);
    (p.high_watermark, p.last_stable_offset, data_records(p))
}

async fn latest(c: &mut Client, topic: &str, isolation: i8) -> i64 {
    let req = ListOffsetsRequest {
        replica_id: -1,
        isolation_level: isolation,
        topics: vec![ListOffsetsTopic {
            name: topic.into(),
            partitions: vec![ListOffsetsPartition {
                partition_index: 0,
                current_leader_epoch: -1,
                timestamp: -1,
            }],
        }],
        ..ListOffsetsRequest::default()
    };
    let ResponseBody::ListOffsets(r) = c.call(7, req).await else {
        panic!()
    };
    let p = &r.topics[0].partitions[0];
    assert_eq!(p.error_code, 0, "{p:?}");
    p.offset
}

/// Polls until the read_committed LSO reaches `want` (the markers are written after EndTxn
/// is answered).
async fn await_lso(c: &mut Client, topic: &str, want: i64) {
    let deadline = std::time::Instant::now() + DEADLINE;
    loop {
        let (_, lso, _) = fetch_committed(c, topic).await;
        if lso == want {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "LSO stuck at {lso}, want {want}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn e2e_txn_unverified_partition_and_late_batch_are_refused() {
    let t = start().await;
    let mut c = Client::connect(t.addr).await;
    assert_eq!(create_topic(&mut c, "t-verify", 1).await.error_code, 0);
    let (pid, epoch) = init_txn(&mut c, "tx-verify").await;
    // FindCoordinator key type 1 created the compacted transaction log.
    let image = t.server.broker().image();
    let txn_log = image.topic("__transaction_state").expect("created");
    assert_eq!(
        txn_log.configs.get("cleanup.policy").map(String::as_str),
        Some("compact")
    );

    // B17: never added to the transaction.
    let (code, _) = produce_txn(
        &mut c,
        "tx-verify",
        "t-verify",
        txn_batch(pid, epoch, 0, &["x"]),
    )
    .await;
    assert_eq!(code, INVALID_TXN_STATE);
    assert_eq!(
        fetch_committed(&mut c, "t-verify").await,
        (0, 0, 0),
        "nothing appended"
    );

    // Added: accepted; the LSO stays at the transaction's first offset until the commit.
    assert_eq!(
        add_partition(&mut c, "tx-verify", pid, epoch, "t-verify").await,
        0
    );
    let (code, base) = produce_txn(
        &mut c,
        "tx-verify",
        "t-verify",
        txn_batch(pid, epoch, 0, &["a", "b"]),
    )
    .await;
    assert_eq!((code, base), (0, 0));
    assert_eq!(fetch_committed(&mut c, "t-verify").await, (2, 0, 0));
    assert_eq!(
        latest(&mut c, "t-verify", 1).await,
        0,
        "read_committed latest = LSO"
    );
    assert_eq!(
        latest(&mut c, "t-verify", 0).await,
        2,
        "read_uncommitted latest = HW"
    );
    let describe = DescribeProducersRequest {
        topics: vec![DescribeProducersRequestTopicRequest {
            name: "t-verify".into(),
            partition_indexes: vec![0],
        }],
    };
    let ResponseBody::DescribeProducers(d) = c.call(0, describe).await else {
        panic!()
    };
    let open = &d.topics[0].partitions[0].active_producers[0];
    assert_eq!((open.producer_id, open.current_txn_start_offset), (pid, 0));

    assert_eq!(end_txn(&mut c, "tx-verify", pid, epoch, true).await, 0);
    // Two records and the COMMIT marker: the LSO moves past the marker.
    await_lso(&mut c, "t-verify", 3).await;
    assert_eq!(fetch_committed(&mut c, "t-verify").await, (3, 3, 2));

    // F18's shape: a late batch of the ended transaction (same epoch, next sequence) is
    // refused, nothing appended, the LSO not held back.
    let (code, _) = produce_txn(
        &mut c,
        "tx-verify",
        "t-verify",
        txn_batch(pid, epoch, 2, &["late"]),
    )
    .await;
    assert_eq!(code, INVALID_TXN_STATE);
    assert_eq!(fetch_committed(&mut c, "t-verify").await, (3, 3, 2));
    t.server.shutdown().await.unwrap();
}

#[tokio::test]
async fn e2e_txn_abort_hides_records_and_fenced_end_txn_is_refused() {
    let t = start().await;
    let mut c = Client::connect(t.addr).await;
    assert_eq!(create_topic(&mut c, "t-abort", 1).await.error_code, 0);
    let (pid, epoch) = init_txn(&mut c, "tx-abort").await;
    assert_eq!(
        add_partition(&mut c, "tx-abort", pid, epoch, "t-abort").await,
        0
    );
    let (code, _) = produce_txn(
        &mut c,
        "tx-abort",
        "t-abort",
        txn_batch(pid, epoch, 0, &["a", "b"]),
    )
    .await;
    assert_eq!(code, 0);
    assert_eq!(end_txn(&mut c, "tx-abort", pid, epoch, false).await, 0);
    await_lso(&mut c, "t-abort", 3).await;
    // read_committed gets the records with the aborted transaction listed (the client drops
    // them); the AbortedTransactions entry names this producer from offset 0.
    let mut req = fetch_request("t-abort", 0, 0, 0);
    req.isolation_level = 1;
    let resp = c.call(12, req).await;
    let p = fetched(&resp);
    let aborted = p.aborted_transactions.clone().unwrap_or_default();
    assert_eq!(aborted.len(), 1, "{p:?}");
    assert_eq!((aborted[0].producer_id, aborted[0].first_offset), (pid, 0));

    // A new InitProducerId bumps the epoch: the old epoch's EndTxn is fenced.
    let (pid2, epoch2) = init_txn(&mut c, "tx-abort").await;
    assert_eq!((pid2, epoch2), (pid, epoch + 1));
    let code = end_txn(&mut c, "tx-abort", pid, epoch, true).await;
    assert!(
        [47, 90].contains(&code),
        "a fenced EndTxn is PRODUCER_FENCED / INVALID_PRODUCER_EPOCH, got {code}"
    );
    t.server.shutdown().await.unwrap();
}

/// Issue 18 item 3 with issue 8: a consumer's read bound is min(LSO, DSO). An open
/// transaction holds read_committed at its first offset; once it commits, a delayed batch
/// after it still holds every consumer at the delayed batch (the DSO), and the reported
/// LastStableOffset is the capped one.
#[tokio::test]
async fn e2e_txn_and_delayed_delivery_bound_reads_together() {
    let t = start().await;
    let mut c = Client::connect(t.addr).await;
    let created = create_topic_with(&mut c, "t-dd", &[("delivery.delay.enable", "true")]).await;
    assert_eq!(created.error_code, 0);
    let (pid, epoch) = init_txn(&mut c, "tx-dd").await;
    assert_eq!(add_partition(&mut c, "tx-dd", pid, epoch, "t-dd").await, 0);
    let (code, base) = produce_txn(&mut c, "tx-dd", "t-dd", txn_batch(pid, epoch, 0, &["a"])).await;
    assert_eq!((code, base), (0, 0));
    // A plain batch due in ten minutes, at offset 1.
    let mut delayed = BatchBuilder::new(BatchOptions::default());
    let now = skiff_types::Clock::system().now_ms();
    delayed.append(
        now,
        Some(b"d"),
        Some(b"later"),
        &[skiff_record::Header {
            key: b"__delay_ms",
            value: Some(b"600000"),
        }],
    );
    let r = c
        .call(
            9,
            produce_request("t-dd", 0, Bytes::from(delayed.build().unwrap()), -1),
        )
        .await;
    let ResponseBody::Produce(r) = r else {
        panic!()
    };
    assert_eq!(r.responses[0].partition_responses[0].base_offset, 1);
    // Open transaction at 0: read_committed sees nothing, LSO 0.
    assert_eq!(fetch_committed(&mut c, "t-dd").await, (2, 0, 0));
    assert_eq!(end_txn(&mut c, "tx-dd", pid, epoch, true).await, 0);
    // Committed (marker at 2, HW 3), but the delayed batch at 1 caps every consumer at 1.
    let deadline = std::time::Instant::now() + DEADLINE;
    loop {
        let (hw, lso, n) = fetch_committed(&mut c, "t-dd").await;
        if hw == 3 {
            assert_eq!((lso, n), (1, 1), "read_committed: min(LSO 3, DSO 1)");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the commit marker never landed"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(
        latest(&mut c, "t-dd", 1).await,
        1,
        "read_committed latest = min(LSO, DSO)"
    );
    assert_eq!(
        latest(&mut c, "t-dd", 0).await,
        1,
        "read_uncommitted latest = min(HW, DSO)"
    );
    t.server.shutdown().await.unwrap();
}
