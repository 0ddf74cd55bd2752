//! Transactions across nodes (issue 18), as real processes: in a 3-node cluster the
//! transactional id's coordinator and the partition's leader are different nodes, so
//! - the leader verifies a transaction's first batch with the remote coordinator (KIP-890
//!   part 1, AddPartitionsToTxn v4 verify_only): a partition never added is refused with
//!   INVALID_TXN_STATE and nothing is appended; once added, the batch is accepted;
//! - the coordinator writes the COMMIT marker to the remote leader (WriteTxnMarkers): the
//!   leader's LSO moves past it and read_committed sees the record;
//! - a late batch of the ended transaction is refused by the remote verification.
//!
//! Every wait polls with a deadline; per-phase timings are printed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use bytes::Bytes;
use skiff_protocol::*;
use skiff_record::{BatchBuilder, BatchOptions};
use skiff_testkit::Conn;
use skiff_testkit::client::produce_request;
use skiff_testkit::cluster::{Cluster, leaders};

const TOPIC: &str = "ctx";
const TID: &str = "tx-cluster";
const INVALID_TXN_STATE: i16 = 48;

fn txn_batch(pid: i64, epoch: i16, seq: i32, value: &str) -> Bytes {
    let mut b = BatchBuilder::new(BatchOptions {
        producer_id: pid,
        producer_epoch: epoch,
        base_sequence: seq,
        is_transactional: true,
        ..BatchOptions::default()
    });
    b.append(1_700_000_000_000, Some(b"k"), Some(value.as_bytes()), &[]);
    Bytes::from(b.build().unwrap())
}

/// Retries `f` until it returns `Some` (deadline 30 s).
fn until<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(t) = f() {
            return t;
        }
        assert!(Instant::now() < deadline, "timed out: {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn produce(conn: &mut Conn, partition: i32, batch: Bytes) -> i16 {
    let mut req = produce_request(TOPIC, partition, batch, -1);
    req.transactional_id = Some(TID.into());
    let ResponseBody::Produce(r) = conn.call(9, req) else {
        panic!()
    };
    r.responses[0].partition_responses[0].error_code
}

/// (HW, LSO) of a read_committed fetch of `partition` from its leader.
fn committed_bounds(conn: &mut Conn, partition: i32) -> (i64, i64) {
    let req = FetchRequest {
        replica_id: -1,
        max_wait_ms: 0,
        min_bytes: 0,
        max_bytes: 1 << 20,
        isolation_level: 1,
        topics: vec![FetchTopic {
            topic: TOPIC.into(),
            partitions: vec![FetchPartition {
                partition,
                fetch_offset: 0,
                partition_max_bytes: 1 << 20,
                current_leader_epoch: -1,
                log_start_offset: -1,
                last_fetched_epoch: -1,
                ..FetchPartition::default()
            }],
            ..FetchTopic::default()
        }],
        ..FetchRequest::default()
    };
    let ResponseBody::Fetch(r) = conn.call(12, req) else {
        panic!()
    };
    let p = &r.responses[0].partitions[0];
    assert_eq!(p.error_code, 0, "{p:?}");
    (p.high_watermark, p.last_stable_offset)
}

#[test]
fn e2e_cluster_txn_remote_verification_and_markers() {
    let t0 = Instant::now();
    let c = Cluster::start(
        3,
        &[
            ("transaction.state.log.num.partitions", "1"),
            ("transaction.state.log.replication.factor", "3"),
            ("transaction.state.log.min.isr", "2"),
        ],
    );
    eprintln!("[phase] cluster up {:?}", t0.elapsed());
    c.wait_brokers(&[0], &[1, 2, 3], Duration::from_secs(30));
    c.create_via(0, TOPIC, 3, Duration::from_secs(30));
    let parts = until("every partition has a leader", || {
        let l = leaders(&c.metadata(0), TOPIC);
        (l.len() == 3 && l.iter().all(|(_, n)| *n > 0)).then_some(l)
    });
    // The coordinator (FindCoordinator creates __transaction_state on first use).
    let coordinator = until("a transaction coordinator", || {
        let req = FindCoordinatorRequest {
            key: TID.into(),
            key_type: 1,
            ..FindCoordinatorRequest::default()
        };
        match Conn::open(c.ports[0].0).call(3, req) {
            ResponseBody::FindCoordinator(f) if f.error_code == 0 => Some(f.node_id),
            _ => None,
        }
    });
    let node = |id: i32| usize::try_from(id - 1).unwrap();
    let (partition, leader) = *parts
        .iter()
        .find(|(_, l)| *l != coordinator)
        .unwrap_or_else(|| panic!("a partition led by another node than {coordinator}: {parts:?}"));
    eprintln!(
        "[phase] coordinator {coordinator}, partition {partition} led by {leader}: {:?}",
        t0.elapsed()
    );
    let mut coord = Conn::open(c.ports[node(coordinator)].0);
    let (pid, epoch) = until("InitProducerId", || {
        let req = InitProducerIdRequest {
            transactional_id: Some(TID.into()),
            transaction_timeout_ms: 60_000,
            producer_id: -1,
            producer_epoch: -1,
        };
        match coord.call(4, req) {
            ResponseBody::InitProducerId(r) if r.error_code == 0 => {
                Some((r.producer_id, r.producer_epoch))
            }
            _ => None,
        }
    });
    let mut lead = Conn::open(c.ports[node(leader)].0);

    // Never added: the remote coordinator says so; nothing appended.
    assert_eq!(
        produce(&mut lead, partition, txn_batch(pid, epoch, 0, "x")),
        INVALID_TXN_STATE
    );
    assert_eq!(committed_bounds(&mut lead, partition), (0, 0));

    let add = AddPartitionsToTxnRequest {
        v3_and_below_transactional_id: TID.into(),
        v3_and_below_producer_id: pid,
        v3_and_below_producer_epoch: epoch,
        v3_and_below_topics: vec![AddPartitionsToTxnTopic {
            name: TOPIC.into(),
            partitions: vec![partition],
        }],
        ..AddPartitionsToTxnRequest::default()
    };
    let ResponseBody::AddPartitionsToTxn(r) = coord.call(3, add) else {
        panic!()
    };
    assert_eq!(
        r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code,
        0
    );
    assert_eq!(
        produce(&mut lead, partition, txn_batch(pid, epoch, 0, "a")),
        0
    );
    let (hw, lso) = until("the record replicated", || {
        let b = committed_bounds(&mut lead, partition);
        (b.0 == 1).then_some(b)
    });
    assert_eq!(
        (hw, lso),
        (1, 0),
        "open transaction: LSO at its first offset"
    );

    let end = EndTxnRequest {
        transactional_id: TID.into(),
        producer_id: pid,
        producer_epoch: epoch,
        committed: true,
    };
    let ResponseBody::EndTxn(r) = coord.call(3, end) else {
        panic!()
    };
    assert_eq!(r.error_code, 0);
    // The COMMIT marker reaches the remote leader: LSO = HW = 2.
    until("the remote COMMIT marker", || {
        (committed_bounds(&mut lead, partition) == (2, 2)).then_some(())
    });
    eprintln!("[phase] committed across nodes {:?}", t0.elapsed());

    // A late batch of the ended transaction: refused by the remote verification.
    assert_eq!(
        produce(&mut lead, partition, txn_batch(pid, epoch, 1, "late")),
        INVALID_TXN_STATE
    );
    assert_eq!(committed_bounds(&mut lead, partition), (2, 2));
    eprintln!("[phase] done {:?}", t0.elapsed());
}
