//! Delayed delivery (issue 8) over raw TCP against an in-process server: what the Fetch and
//! ListOffsets responses say while a delayed batch waits (consumer vs replica reads, the real
//! HighWatermark, LastStableOffset capped at the DSO), a long poll woken by the DSO timer, and
//! `Broker::delivery_status`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod raw_client;

use raw_client::*;
use skiff_protocol::*;
use skiff_record::{BatchBuilder, BatchOptions, Header};
use skiff_types::TopicPartition;

fn batch_with_header(value: &str, header: Option<(&str, &str)>) -> Vec<u8> {
    batch_at(value, header, skiff_types::Clock::system().now_ms())
}

fn batch_at(value: &str, header: Option<(&str, &str)>, ts: i64) -> Vec<u8> {
    let mut b = BatchBuilder::new(BatchOptions::default());
    let hs: Vec<Header<'_>> = header
        .iter()
        .map(|(k, v)| Header {
            key: k.as_bytes(),
            value: Some(v.as_bytes()),
        })
        .collect();
    b.append(ts, None, Some(value.as_bytes()), &hs);
    b.build().unwrap()
}

/// Fetch v12 of partition 0 as `replica_id` with `max_wait_ms`: (HW, LSO, record bytes).
fn fetch_as(c: &mut Raw, replica_id: i32, offset: i64, max_wait_ms: i32) -> (i64, i64, usize) {
    let mut req = fetch_request("dly", offset, 1 << 20, -1);
    req.replica_id = replica_id;
    req.max_wait_ms = max_wait_ms;
    req.min_bytes = 1;
    match c.call(12, req) {
        ResponseBody::Fetch(r) => {
            let p = &r.responses[0].partitions[0];
            assert_eq!(p.error_code, 0);
            let n = p
                .records
                .as_ref()
                .and_then(|r| r.as_bytes())
                .map_or(0, |b| b.len());
            (p.high_watermark, p.last_stable_offset, n)
        }
        other => panic!("unexpected {other:?}"),
    }
}

fn list_latest(c: &mut Raw, replica_id: i32) -> i64 {
    list_at(c, replica_id, -1)
}

/// ListOffsets v5 of partition 0 for `timestamp` (-1 = latest).
fn list_at(c: &mut Raw, replica_id: i32, timestamp: i64) -> i64 {
    let req = ListOffsetsRequest {
        replica_id,
        topics: vec![ListOffsetsTopic {
            name: "dly".into(),
            partitions: vec![ListOffsetsPartition {
                partition_index: 0,
                timestamp,
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

#[test]
fn e2e_delivery_caps_consumers_not_replicas_and_wakes_long_polls() {
    let h = Harness::start(|_| {});
    let mut c = h.connect();
    create_topic(&mut c, "dly", &[("delivery.delay.enable", "true")]);
    let tp = TopicPartition::new("dly", 0);
    let old = skiff_types::Clock::system().now_ms() - 10_000;
    assert_eq!(produce(&mut c, 9, "dly", batch_at("a", None, old)), (0, 0));
    let before = skiff_types::Clock::system().now_ms();
    let (err, base) = produce(
        &mut c,
        9,
        "dly",
        batch_with_header("r", Some(("__delay_ms", "1500"))),
    );
    assert_eq!((err, base), (0, 1));
    assert_eq!(
        produce(&mut c, 9, "dly", batch_with_header("s", None)),
        (0, 2)
    );

    let st = h.broker().delivery_status(&tp).unwrap();
    assert_eq!(
        (
            st.enabled,
            st.pending_batches,
            st.delivery_stable_offset,
            st.high_watermark
        ),
        (true, 1, Some(1), 3)
    );
    let due = st.next_due_ms.unwrap();
    assert!(due >= before + 1_500 && due <= skiff_types::Clock::system().now_ms() + 1_500);
    assert_eq!(st.index_entries, 1);

    // A consumer sees offset 0 only; the real HW, LSO = DSO.
    let (hw, lso, bytes) = fetch_as(&mut c, -1, 0, 0);
    assert_eq!((hw, lso), (3, 1));
    assert!(bytes > 0);
    let (_, _, past) = fetch_as(&mut c, -1, 1, 0);
    assert_eq!(past, 0, "a consumer fetch at the DSO returns nothing");
    assert_eq!(list_latest(&mut c, -1), 1);
    // Offset for a timestamp only R (offset 1) reaches: not found while R waits.
    assert_eq!(list_at(&mut c, -1, old + 5_000), -1);
    assert_eq!(list_at(&mut c, -1, old), 0);
    // A replica's ListOffsets ignores the DSO. (A replica *fetch* from a broker that is not a
    // follower of the partition is refused, as in Kafka; real followers read past the DSO:
    // e2e_cluster_delayed_delivery_survives_a_failover.)
    assert_eq!(list_latest(&mut c, 1), 3);

    // A long poll at the DSO (10 s max wait) is answered promptly once R is due.
    let (_, lso, bytes) = fetch_as(&mut c, -1, 1, 10_000);
    let answered = skiff_types::Clock::system().now_ms();
    assert!(bytes > 0 && lso == 3, "lso {lso} bytes {bytes}");
    assert!(answered >= due, "answered {} ms early", due - answered);
    assert!(
        answered < due + 200,
        "answered {} ms after due",
        answered - due
    );
    let st = h.broker().delivery_status(&tp).unwrap();
    assert_eq!((st.pending_batches, st.delivery_stable_offset), (0, None));
    assert_eq!(list_latest(&mut c, -1), 3);
    assert_eq!(list_at(&mut c, -1, old + 5_000), 1);
}
