//! State-transition tables for the transaction coordinator: the happy paths, every EndTxn
//! answer by state, fencing, timeouts, expiry, timeouts out of range, verify_only, and the
//! per-version error mapping. Each test drives a [`common::Harness`] (records always durable).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{COORDINATOR_EPOCH, Harness};
use skiff_txn::{TxnConfig, TxnResult, TxnState};

const NONE: i16 = 0;
const UNKNOWN_TOPIC: i16 = 3;
const INVALID_REQUEST: i16 = 42;
const INVALID_PRODUCER_EPOCH: i16 = 47;
const INVALID_TXN_STATE: i16 = 48;
const INVALID_PRODUCER_ID_MAPPING: i16 = 49;
const INVALID_TRANSACTION_TIMEOUT: i16 = 50;
const CONCURRENT_TRANSACTIONS: i16 = 51;
const OPERATION_NOT_ATTEMPTED: i16 = 55;
const PRODUCER_FENCED: i16 = 90;
const TRANSACTION_ABORTABLE: i16 = 120;

#[test]
fn commit_path_empty_ongoing_prepare_complete() {
    let mut h = Harness::new();
    let (err, pid, epoch) = h.init("tx");
    assert_eq!((err, epoch), (NONE, 0));
    assert_eq!(h.log.len(), 1, "InitProducerId writes Empty");
    assert_eq!(h.state("tx"), "Empty");
    assert_eq!(h.view("tx").start_timestamp_ms, -1);

    h.now += 5;
    assert_eq!(h.add("tx", pid, epoch, &[("t", 0), ("t", 1)]), [NONE, NONE]);
    let v = h.view("tx");
    assert_eq!((v.state, v.start_timestamp_ms), (TxnState::Ongoing, h.now));
    let start = h.now;
    h.now += 5;
    assert_eq!(h.add("tx", pid, epoch, &[("u", 3)]), [NONE]);
    assert_eq!(
        h.view("tx").start_timestamp_ms,
        start,
        "start is the first add"
    );
    let records = h.log.len();
    assert_eq!(h.add("tx", pid, epoch, &[("t", 1)]), [NONE]);
    assert_eq!(h.log.len(), records, "already present: no record");
    assert_eq!(h.add_offsets_v("tx", pid, epoch, 12, 3), NONE);

    assert_eq!(h.end("tx", pid, epoch, true), NONE);
    assert_eq!(h.state("tx"), "PrepareCommit");
    assert_eq!(
        h.last.records.len(),
        1,
        "PrepareCommit record in the same call"
    );
    assert_eq!(h.markers.len(), 1);
    let job = h.markers[0].clone();
    assert_eq!(job.result, TxnResult::Commit);
    assert_eq!((job.producer_id, job.producer_epoch), (pid, epoch));
    assert_eq!(job.coordinator_epoch, COORDINATOR_EPOCH);
    assert_eq!(
        job.partitions,
        [
            ("__consumer_offsets".to_string(), 12),
            ("t".to_string(), 0),
            ("t".to_string(), 1),
            ("u".to_string(), 3)
        ]
    );
    assert_eq!(h.write_markers(), 1);
    let v = h.view("tx");
    assert_eq!(v.state, TxnState::CompleteCommit);
    assert!(v.partitions.is_empty());
    assert_eq!(v.start_timestamp_ms, start);

    // Retries answer as Kafka: same result NONE, other result INVALID_TXN_STATE.
    let records = h.log.len();
    assert_eq!(h.end("tx", pid, epoch, true), NONE);
    assert_eq!(h.end("tx", pid, epoch, false), INVALID_TXN_STATE);
    assert_eq!(h.log.len(), records);
    // A stale marker completion is ignored.
    assert!(
        h.shard
            .markers_written("tx", pid, epoch, h.now)
            .records
            .is_empty()
    );

    // The next transaction on the same epoch.
    assert_eq!(h.add("tx", pid, epoch, &[("t", 0)]), [NONE]);
    assert_eq!(h.end("tx", pid, epoch, false), NONE);
    assert_eq!(h.markers[0].result, TxnResult::Abort);
    h.write_markers();
    assert_eq!(h.state("tx"), "CompleteAbort");
}

/// EndTxn's answer in every state, for both results (Kafka's `endTransaction`, v1).
#[test]
fn end_txn_table() {
    #[derive(Clone, Copy, Debug)]
    enum Setup {
        Empty,
        Ongoing,
        PrepareCommit,
        PrepareAbort,
        CompleteCommit,
        CompleteAbort,
    }
    let table = [
        // (state, commit?, code, state after)
        (Setup::Empty, true, INVALID_TXN_STATE, "Empty"),
        (Setup::Empty, false, INVALID_TXN_STATE, "Empty"),
        (Setup::Ongoing, true, NONE, "PrepareCommit"),
        (Setup::Ongoing, false, NONE, "PrepareAbort"),
        (
            Setup::PrepareCommit,
            true,
            CONCURRENT_TRANSACTIONS,
            "PrepareCommit",
        ),
        (
            Setup::PrepareCommit,
            false,
            INVALID_TXN_STATE,
            "PrepareCommit",
        ),
        (Setup::PrepareAbort, true, INVALID_TXN_STATE, "PrepareAbort"),
        (
            Setup::PrepareAbort,
            false,
            CONCURRENT_TRANSACTIONS,
            "PrepareAbort",
        ),
        (Setup::CompleteCommit, true, NONE, "CompleteCommit"),
        (
            Setup::CompleteCommit,
            false,
            INVALID_TXN_STATE,
            "CompleteCommit",
        ),
        (
            Setup::CompleteAbort,
            true,
            INVALID_TXN_STATE,
            "CompleteAbort",
        ),
        (Setup::CompleteAbort, false, NONE, "CompleteAbort"),
    ];
    for (setup, commit, code, after) in table {
        let mut h = Harness::new();
        let (_, pid, epoch) = h.init("tx");
        let ongoing = |h: &mut Harness| assert_eq!(h.add("tx", pid, epoch, &[("t", 0)]), [NONE]);
        match setup {
            Setup::Empty => {}
            Setup::Ongoing => ongoing(&mut h),
            Setup::PrepareCommit | Setup::CompleteCommit => {
                ongoing(&mut h);
                assert_eq!(h.end("tx", pid, epoch, true), NONE);
            }
            Setup::PrepareAbort | Setup::CompleteAbort => {
                ongoing(&mut h);
                assert_eq!(h.end("tx", pid, epoch, false), NONE);
            }
        }
        if matches!(setup, Setup::CompleteCommit | Setup::CompleteAbort) {
            h.write_markers();
        }
        h.markers.clear();
        let records = h.log.len();
        assert_eq!(
            h.end("tx", pid, epoch, commit),
            code,
            "{setup:?} commit={commit}"
        );
        assert_eq!(h.state("tx"), after, "{setup:?} commit={commit}");
        let wrote = h.log.len() > records;
        assert_eq!(wrote, matches!(setup, Setup::Ongoing), "{setup:?}");
        assert_eq!(
            h.markers.len(),
            usize::from(wrote),
            "markers only from Ongoing"
        );
        // Producer checks come first, whatever the state.
        assert_eq!(
            h.end("tx", pid + 1, epoch, commit),
            INVALID_PRODUCER_ID_MAPPING
        );
        assert_eq!(h.end("tx", pid, epoch + 1, commit), PRODUCER_FENCED);
        assert_eq!(
            h.end_v("tx", pid, epoch + 1, commit, 1),
            INVALID_PRODUCER_EPOCH
        );
        assert_eq!(
            h.end("nope", pid, epoch, commit),
            INVALID_PRODUCER_ID_MAPPING
        );
        assert_eq!(h.end("", pid, epoch, commit), INVALID_REQUEST);
    }
}

#[test]
fn second_init_fences_ongoing_txn_with_epoch_bump() {
    let mut h = Harness::new();
    let (_, pid, e0) = h.init("tx");
    assert_eq!(h.add("tx", pid, e0, &[("t", 0)]), [NONE]);
    // A second producer with the same id.
    let (err, ..) = h.init("tx");
    assert_eq!(err, CONCURRENT_TRANSACTIONS);
    let v = h.view("tx");
    assert_eq!(
        (v.state, v.producer_epoch),
        (TxnState::PrepareAbort, e0 + 1)
    );
    assert_eq!(h.markers.len(), 1);
    assert_eq!(h.markers[0].result, TxnResult::Abort);
    assert_eq!(
        h.markers[0].producer_epoch,
        e0 + 1,
        "markers fence the old epoch"
    );
    // While the abort is in flight: CONCURRENT_TRANSACTIONS to InitProducerId.
    assert_eq!(h.init("tx").0, CONCURRENT_TRANSACTIONS);
    // The old producer is fenced (PRODUCER_FENCED from v2, INVALID_PRODUCER_EPOCH before).
    assert_eq!(h.add("tx", pid, e0, &[("t", 1)]), [PRODUCER_FENCED]);
    assert_eq!(
        h.add_v("tx", pid, e0, &[("t", 1)], 1),
        [INVALID_PRODUCER_EPOCH]
    );
    assert_eq!(h.end("tx", pid, e0, true), PRODUCER_FENCED);
    assert_eq!(h.add_offsets_v("tx", pid, e0, 0, 1), INVALID_PRODUCER_EPOCH);
    h.write_markers();
    assert_eq!(h.state("tx"), "CompleteAbort");
    let (err, pid2, e2) = h.init("tx");
    assert_eq!((err, pid2, e2), (NONE, pid, e0 + 2));
    assert_eq!(h.state("tx"), "Empty");
    assert_eq!(h.end("tx", pid, e0 + 1, false), PRODUCER_FENCED);
}

#[test]
fn init_on_idle_id_bumps_the_epoch_and_keeps_the_producer_id() {
    let mut h = Harness::new();
    let (_, pid, e0) = h.init("tx");
    for i in 1..4 {
        assert_eq!(h.init("tx"), (NONE, pid, e0 + i));
    }
    // An empty ongoing transaction (no partitions) completes without markers.
    let (_, pid, e) = h.init("tx");
    assert_eq!(h.add("tx", pid, e, &[]), Vec::<i16>::new());
    assert_eq!(h.state("tx"), "Ongoing");
    let before = h.log.len();
    assert_eq!(h.end("tx", pid, e, true), NONE);
    assert_eq!(h.log.len(), before + 2, "PrepareCommit then CompleteCommit");
    assert!(h.markers.is_empty());
    assert_eq!(h.state("tx"), "CompleteCommit");
}

#[test]
fn transaction_timeout_bounds() {
    let mut h = Harness::with_config(TxnConfig {
        transaction_max_timeout_ms: 5000,
        ..TxnConfig::default()
    });
    for (timeout, code) in [
        (0, INVALID_TRANSACTION_TIMEOUT),
        (-1, INVALID_TRANSACTION_TIMEOUT),
        (5001, INVALID_TRANSACTION_TIMEOUT),
        (5000, NONE),
        (1, NONE),
    ] {
        let id = format!("tx{timeout}");
        assert_eq!(h.init_v(&id, timeout, 1, (-1, -1)).0, code, "{timeout}");
        assert_eq!(h.shard.describe(&id).is_some(), code == NONE);
    }
    let ctx = skiff_txn::RequestContext::new(99, 1);
    let req = skiff_protocol::InitProducerIdRequest {
        transactional_id: None,
        transaction_timeout_ms: 100,
        ..Default::default()
    };
    let e = h.shard.init_producer_id(&ctx, &req, 0, &mut || Ok(5));
    assert_eq!(e.responses[0].1.error_codes(), [INVALID_REQUEST]);
    assert!(e.records.is_empty());
}

#[test]
fn producer_id_allocation_failure_is_answered() {
    let mut h = Harness::new();
    let ctx = skiff_txn::RequestContext::new(1, 4);
    let req = skiff_protocol::InitProducerIdRequest {
        transactional_id: Some("tx".into()),
        transaction_timeout_ms: 100,
        ..Default::default()
    };
    let e = h.shard.init_producer_id(&ctx, &req, 0, &mut || {
        Err(skiff_types::ErrorCode::CoordinatorLoadInProgress)
    });
    assert_eq!(e.responses[0].1.error_codes(), [14]);
    assert!(e.records.is_empty());
    assert!(h.shard.describe("tx").is_none());
    h.now = 0;
    assert_eq!(h.init("tx").0, NONE);
}

#[test]
fn kip_360_expected_producer_checks() {
    let mut h = Harness::new();
    let (_, pid, e0) = h.init("tx");
    // One of the two set: INVALID_REQUEST.
    assert_eq!(h.init_v("tx", 1000, 4, (pid, -1)).0, INVALID_REQUEST);
    assert_eq!(h.init_v("tx", 1000, 4, (-1, e0)).0, INVALID_REQUEST);
    // The current epoch: bumped, and the old epoch remembered.
    assert_eq!(h.init_v("tx", 1000, 4, (pid, e0)), (NONE, pid, e0 + 1));
    // A retry of that call (response lost): the same epoch again.
    assert_eq!(h.init_v("tx", 1000, 4, (pid, e0)), (NONE, pid, e0 + 1));
    // A stale epoch: fenced (INVALID_PRODUCER_EPOCH before v4).
    assert_eq!(h.init_v("tx", 1000, 4, (pid, e0 + 7)).0, PRODUCER_FENCED);
    assert_eq!(
        h.init_v("tx", 1000, 3, (pid, e0 + 7)).0,
        INVALID_PRODUCER_EPOCH
    );
    // Another producer id: fenced.
    assert_eq!(h.init_v("tx", 1000, 4, (pid + 100, e0)).0, PRODUCER_FENCED);
    // Before v3 the fields are not on the wire: ignored.
    assert_eq!(h.init_v("tx", 1000, 2, (pid + 100, 5)), (NONE, pid, e0 + 2));
}

/// A log record for `id` built with the generated codec (Kafka's layout), for states the API
/// cannot reach quickly.
fn record(id: &str, pid: i64, epoch: i16, status: i8) -> (bytes::Bytes, Option<bytes::Bytes>) {
    use skiff_protocol::{Codec, TransactionLogKey, TransactionLogValue};
    let mut k = vec![0, 0];
    k.extend_from_slice(
        &TransactionLogKey {
            transactional_id: id.into(),
        }
        .to_bytes(0)
        .unwrap(),
    );
    let mut v = vec![0, 0];
    let value = TransactionLogValue {
        producer_id: pid,
        producer_epoch: epoch,
        transaction_timeout_ms: 60_000,
        transaction_status: status,
        transaction_partitions: Some(vec![skiff_protocol::PartitionsSchema {
            topic: "t".into(),
            partition_ids: vec![0],
        }]),
        transaction_last_update_timestamp_ms: 1,
        transaction_start_timestamp_ms: 1,
        ..Default::default()
    };
    v.extend_from_slice(&value.to_bytes(0).unwrap());
    (k.into(), Some(v.into()))
}

#[test]
fn exhausted_epoch_rotates_the_producer_id() {
    let mut h = Harness::new();
    let (k, v) = record("tx", 500, i16::MAX - 2, TxnState::CompleteCommit.id());
    h.shard.replay(&k, v.as_deref()).unwrap();
    // MAX-2 -> MAX-1: still bumped (the last epoch a client gets).
    assert_eq!(h.init("tx"), (NONE, 500, i16::MAX - 1));
    // Exhausted: a new producer id at epoch 0.
    let (err, pid, epoch) = h.init("tx");
    assert_eq!(err, NONE);
    assert_ne!(pid, 500);
    assert_eq!(epoch, 0);
    // A fence of an ongoing transaction at MAX-1 goes to MAX, then rotates on retry.
    let (k, v) = record("ty", 600, i16::MAX - 1, TxnState::Ongoing.id());
    h.shard.replay(&k, v.as_deref()).unwrap();
    assert_eq!(h.init("ty").0, CONCURRENT_TRANSACTIONS);
    assert_eq!(h.view("ty").producer_epoch, i16::MAX);
    h.write_markers();
    let (err, pid, epoch) = h.init("ty");
    assert_eq!(err, NONE);
    assert!(pid != 600 && epoch == 0);
    // KIP-360 retry of a rotation from the previous producer id at the exhausted epoch.
    let (k, v) = record("tz", 700, i16::MAX - 1, TxnState::CompleteAbort.id());
    h.shard.replay(&k, v.as_deref()).unwrap();
    let (err, new_pid, epoch) = h.init_v("tz", 1000, 4, (700, i16::MAX - 1));
    assert_eq!((err, epoch), (NONE, 0));
    assert_eq!(
        h.init_v("tz", 1000, 4, (700, i16::MAX - 1)),
        (NONE, new_pid, 0),
        "the retry gets the same answer"
    );
}

#[test]
fn timed_out_transaction_is_aborted_with_an_epoch_bump() {
    let mut h = Harness::new();
    h.now = 0;
    let (_, pid, e0) = h.init_v("tx", 1000, 4, (-1, -1));
    let (_, pid2, e2) = h.init_v("slow", 60_000, 4, (-1, -1));
    assert_eq!(h.add("tx", pid, e0, &[("t", 0)]), [NONE]);
    assert_eq!(h.add("slow", pid2, e2, &[("t", 1)]), [NONE]);
    // The sweep runs every 10 s (first at 10 s).
    assert_eq!(h.shard.next_deadline(), Some(10_000));
    assert!(h.tick(9_999).records.is_empty());
    let e = h.tick(10_000);
    assert_eq!(e.records.len(), 1, "only the timed-out txn");
    assert_eq!(e.next_deadline, Some(20_000));
    let v = h.view("tx");
    assert_eq!(
        (v.state, v.producer_epoch),
        (TxnState::PrepareAbort, e0 + 1)
    );
    assert_eq!(h.markers.len(), 1);
    assert_eq!(h.markers[0].producer_epoch, e0 + 1);
    assert_eq!(h.state("slow"), "Ongoing");
    // The old producer: fenced, however it ends.
    assert_eq!(h.end("tx", pid, e0, true), PRODUCER_FENCED);
    assert_eq!(h.end_v("tx", pid, e0, true, 0), INVALID_PRODUCER_EPOCH);
    h.write_markers();
    assert_eq!(h.state("tx"), "CompleteAbort");
    assert_eq!(h.add("tx", pid, e0, &[("t", 0)]), [PRODUCER_FENCED]);
    // The slow one times out at its own timeout.
    h.tick(60_000);
    assert_eq!(h.state("slow"), "Ongoing");
    h.tick(70_000);
    assert_eq!(h.state("slow"), "PrepareAbort");
}

#[test]
fn idle_ids_expire_with_a_tombstone() {
    let mut h = Harness::with_config(TxnConfig {
        transactional_id_expiration_ms: 5_000,
        remove_expired_transaction_cleanup_interval_ms: 1_000,
        abort_timed_out_transaction_cleanup_interval_ms: 1_000_000,
        ..TxnConfig::default()
    });
    h.now = 0;
    let (_, pid, e) = h.init("idle");
    let (_, pid2, e2) = h.init("busy");
    let (_, pid3, e3) = h.init("done");
    assert_eq!(h.add("busy", pid2, e2, &[("t", 0)]), [NONE]);
    assert_eq!(h.add("done", pid3, e3, &[("t", 1)]), [NONE]);
    assert_eq!(h.end("done", pid3, e3, true), NONE);
    h.write_markers();
    assert!(h.tick(4_000).records.is_empty());
    let e5 = h.tick(5_000);
    assert_eq!(
        e5.records.len(),
        2,
        "idle and done expire; ongoing never does"
    );
    assert!(e5.records.iter().all(|(_, v)| v.is_none()), "tombstones");
    assert!(h.shard.describe("idle").is_none());
    assert!(h.shard.describe("done").is_none());
    assert_eq!(h.state("busy"), "Ongoing");
    // A forgotten id is unknown, and starts over.
    assert_eq!(
        h.add("idle", pid, e, &[("t", 0)]),
        [INVALID_PRODUCER_ID_MAPPING]
    );
    let (err, new_pid, epoch) = h.init("idle");
    assert_eq!((err, epoch), (NONE, 0));
    assert_ne!(new_pid, pid);
    // The tombstones replay: a reloaded shard forgets them too.
    let (s, _) = h.reload();
    assert!(s.describe("done").is_none());
    assert!(s.describe("idle").is_some());
}

#[test]
fn add_partitions_errors_table() {
    let mut h = Harness::new();
    let (_, pid, e) = h.init("tx");
    let table: [(&str, i64, i16, i16, i16); 7] = [
        // (id, pid, epoch, version, code)
        ("nope", pid, e, 3, INVALID_PRODUCER_ID_MAPPING),
        ("tx", pid + 1, e, 3, INVALID_PRODUCER_ID_MAPPING),
        ("tx", pid, e + 1, 3, PRODUCER_FENCED),
        ("tx", pid, e + 1, 2, PRODUCER_FENCED),
        ("tx", pid, e + 1, 1, INVALID_PRODUCER_EPOCH),
        ("tx", pid, e + 1, 0, INVALID_PRODUCER_EPOCH),
        ("", pid, e, 3, INVALID_REQUEST),
    ];
    for (id, p, ep, version, code) in table {
        let got = h.add_v(id, p, ep, &[("t", 0), ("u", 1)], version);
        assert_eq!(got, [code, code], "{id} {p} {ep} v{version}");
        assert_eq!(h.state("tx"), "Empty");
    }
    assert_eq!(
        h.add_offsets_v("nope", pid, e, 0, 3),
        INVALID_PRODUCER_ID_MAPPING
    );
    assert_eq!(h.add_offsets_v("tx", pid, e + 1, 0, 2), PRODUCER_FENCED);
    // In Prepare*: CONCURRENT_TRANSACTIONS.
    assert_eq!(h.add("tx", pid, e, &[("t", 0)]), [NONE]);
    assert_eq!(h.end("tx", pid, e, true), NONE);
    assert_eq!(h.add("tx", pid, e, &[("t", 0)]), [CONCURRENT_TRANSACTIONS]);
    assert_eq!(h.add_offsets_v("tx", pid, e, 0, 3), CONCURRENT_TRANSACTIONS);
}

#[test]
fn failed_partition_check_answers_operation_not_attempted() {
    let mut h = Harness::new();
    let (_, pid, e) = h.init("tx");
    let ctx = skiff_txn::RequestContext::new(50, 3);
    let req = skiff_protocol::AddPartitionsToTxnRequest {
        v3_and_below_transactional_id: "tx".into(),
        v3_and_below_producer_id: pid,
        v3_and_below_producer_epoch: e,
        v3_and_below_topics: common::topics(&[("t", 0), ("gone", 0), ("t", 1)]),
        ..Default::default()
    };
    let eff = h
        .shard
        .add_partitions_checked(&ctx, &req, h.now, &mut |topic, _| {
            (topic == "gone").then_some(skiff_types::ErrorCode::UnknownTopicOrPartition)
        });
    // Topics in request order: t (0, 1), gone (0).
    assert_eq!(
        eff.responses[0].1.error_codes(),
        [
            OPERATION_NOT_ATTEMPTED,
            OPERATION_NOT_ATTEMPTED,
            UNKNOWN_TOPIC
        ]
    );
    assert!(eff.records.is_empty());
    assert_eq!(h.state("tx"), "Empty");
}

#[test]
fn verify_only_answers_and_writes_nothing() {
    let mut h = Harness::new();
    let (_, pid, e) = h.init("tx");
    let parts = [("t", 0), ("t", 9)];
    // Not started: nothing is in the transaction.
    assert_eq!(
        h.add_batched("tx", pid, e, &parts, true, 5),
        [TRANSACTION_ABORTABLE, TRANSACTION_ABORTABLE]
    );
    assert_eq!(h.add("tx", pid, e, &[("t", 0)]), [NONE]);
    let records = h.log.len();
    assert_eq!(
        h.add_batched("tx", pid, e, &parts, true, 5),
        [NONE, TRANSACTION_ABORTABLE]
    );
    assert_eq!(
        h.add_batched("tx", pid, e, &parts, true, 4),
        [NONE, INVALID_TXN_STATE],
        "v4 predates TRANSACTION_ABORTABLE"
    );
    assert_eq!(
        h.add_batched("tx", pid, e + 1, &parts, true, 5),
        [PRODUCER_FENCED, PRODUCER_FENCED]
    );
    assert_eq!(
        h.add_batched("tx", pid + 1, e, &parts, true, 5),
        [INVALID_PRODUCER_ID_MAPPING; 2]
    );
    assert_eq!(
        h.add_batched("nope", pid, e, &parts, true, 5),
        [INVALID_PRODUCER_ID_MAPPING; 2]
    );
    assert_eq!(h.log.len(), records, "verification never writes");
    assert_eq!(h.view("tx").partitions.len(), 1);
    // Batched, not verify_only: adds like v3.
    assert_eq!(h.add_batched("tx", pid, e, &parts, false, 4), [NONE, NONE]);
    assert_eq!(h.view("tx").partitions.len(), 2);
    assert_eq!(h.end("tx", pid, e, false), NONE);
    assert_eq!(
        h.add_batched("tx", pid, e, &parts, true, 5),
        [CONCURRENT_TRANSACTIONS; 2]
    );
    h.write_markers();
    assert_eq!(
        h.add_batched("tx", pid, e, &parts, true, 5),
        [TRANSACTION_ABORTABLE; 2],
        "completed: partitions cleared"
    );
}

#[test]
fn batched_request_answers_each_transaction() {
    let mut h = Harness::new();
    let (_, pa, ea) = h.init("a");
    let (_, pb, eb) = h.init("b");
    let ctx = skiff_txn::RequestContext::new(77, 5);
    let txn = |id: &str, pid, epoch, verify_only| skiff_protocol::AddPartitionsToTxnTransaction {
        transactional_id: id.into(),
        producer_id: pid,
        producer_epoch: epoch,
        verify_only,
        topics: common::topics(&[("t", 0)]),
    };
    let req = skiff_protocol::AddPartitionsToTxnRequest {
        transactions: vec![txn("a", pa, ea, false), txn("b", pb, eb + 3, false)],
        ..Default::default()
    };
    let e = h.shard.add_partitions(&ctx, &req, h.now);
    match &e.responses[0].1 {
        skiff_txn::Response::AddPartitionsToTxn(r) => {
            assert_eq!((r.error_code, r.throttle_time_ms), (0, 0));
            let ids: Vec<&str> = r
                .results_by_transaction
                .iter()
                .map(|t| t.transactional_id.as_str())
                .collect();
            assert_eq!(ids, ["a", "b"]);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(e.responses[0].1.error_codes(), [NONE, PRODUCER_FENCED]);
    assert_eq!(e.records.len(), 1);
}

#[test]
fn describe_and_list_filters() {
    let mut h = Harness::new();
    h.now = 1_000;
    let (_, pa, ea) = h.init("a");
    let (_, pb, _) = h.init("b");
    assert_eq!(
        h.add("a", pa, ea, &[("t", 1), ("t", 0), ("s", 2)]),
        [NONE; 3]
    );
    let d = h.shard.describe_state("a");
    assert_eq!(d.error_code, 0);
    assert_eq!(d.transaction_state, "Ongoing");
    assert_eq!(d.transaction_start_time_ms, 1_000);
    let topics: Vec<(&str, Vec<i32>)> = d
        .topics
        .iter()
        .map(|t| (t.topic.as_str(), t.partitions.clone()))
        .collect();
    assert_eq!(topics, [("s", vec![2]), ("t", vec![0, 1])]);
    assert_eq!(h.shard.describe_state("zz").error_code, 105);
    assert_eq!(h.shard.describe_state("").error_code, 42);

    let names = |l: Vec<skiff_txn::TxnListing>| -> Vec<String> {
        l.into_iter().map(|x| x.transactional_id).collect()
    };
    assert_eq!(names(h.shard.list(&[], &[], 2_000)), ["a", "b"]);
    assert_eq!(names(h.shard.list(&["Ongoing".into()], &[], 2_000)), ["a"]);
    assert_eq!(
        names(h.shard.list(&["Bogus".into()], &[], 2_000)),
        Vec::<String>::new()
    );
    assert_eq!(names(h.shard.list(&[], &[pb], 2_000)), ["b"]);
    // Duration: strictly longer than the filter; Empty (start -1) always passes.
    assert_eq!(
        names(h.shard.list_with_duration(&[], &[], 1_000, 2_000)),
        ["b"]
    );
    assert_eq!(
        names(h.shard.list_with_duration(&[], &[], 999, 2_000)),
        ["a", "b"]
    );
    assert_eq!(
        skiff_txn::unknown_state_filters(&["Ongoing".into(), "Bogus".into()]),
        ["Bogus"]
    );
}
