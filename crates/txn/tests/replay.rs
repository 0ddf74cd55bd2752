//! Replay: every record a scripted run emitted, applied to a fresh shard, rebuilds the same
//! views; `on_loaded` resumes the prepared transactions with the same marker jobs (stamped
//! with the new coordinator epoch). Malformed records are errors that change nothing.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{COORDINATOR_EPOCH, Harness};
use skiff_txn::{TxnConfig, TxnShard, TxnState};

fn views(s: &TxnShard) -> Vec<skiff_txn::TxnView> {
    s.transactional_ids()
        .iter()
        .map(|id| s.describe(id).unwrap())
        .collect()
}

/// A run leaving ids in every state.
fn scripted() -> Harness {
    let mut h = Harness::with_config(TxnConfig {
        transactional_id_expiration_ms: 50_000,
        remove_expired_transaction_cleanup_interval_ms: 20_000,
        ..TxnConfig::default()
    });
    h.now = 0;
    let (_, p, e) = h.init("expired");
    let _ = (p, e);
    h.now = 40_000;
    let (_, _, _) = h.init("empty");
    let (_, p, e) = h.init("ongoing");
    h.add("ongoing", p, e, &[("t", 0), ("u", 1)]);
    let (_, p, e) = h.init("commit-done");
    h.add("commit-done", p, e, &[("t", 2)]);
    h.end("commit-done", p, e, true);
    let (_, p, e) = h.init("abort-done");
    h.add("abort-done", p, e, &[("t", 3)]);
    h.end("abort-done", p, e, false);
    h.write_markers();
    let (_, p, e) = h.init("commit-pending");
    h.add("commit-pending", p, e, &[("t", 4)]);
    h.add_offsets_v("commit-pending", p, e, 9, 3);
    h.end("commit-pending", p, e, true);
    let (_, p, e) = h.init("fenced");
    h.add("fenced", p, e, &[("t", 5)]);
    assert_eq!(h.init("fenced").0, 51);
    let (_, p, e) = h.init("abort-pending");
    h.add("abort-pending", p, e, &[("t", 6)]);
    h.end("abort-pending", p, e, false);
    // The expiry sweep at 60 s drops "expired" (idle since 0), nothing else.
    h.tick(60_000);
    assert!(h.shard.describe("expired").is_none());
    h
}

#[test]
fn replay_rebuilds_every_view_and_resumes_markers() {
    let h = scripted();
    let states: Vec<(String, TxnState)> = views(&h.shard)
        .into_iter()
        .map(|v| (v.transactional_id, v.state))
        .collect();
    assert_eq!(
        states,
        [
            ("abort-done".to_string(), TxnState::CompleteAbort),
            ("abort-pending".to_string(), TxnState::PrepareAbort),
            ("commit-done".to_string(), TxnState::CompleteCommit),
            ("commit-pending".to_string(), TxnState::PrepareCommit),
            ("empty".to_string(), TxnState::Empty),
            ("fenced".to_string(), TxnState::PrepareAbort),
            ("ongoing".to_string(), TxnState::Ongoing),
        ]
    );
    let (loaded, effects) = h.reload();
    assert_eq!(views(&loaded), views(&h.shard));
    assert!(effects.records.is_empty(), "resuming writes nothing");
    assert!(effects.responses.is_empty());
    // The same jobs as the ones still outstanding, with the new coordinator epoch.
    let mut expected = h.markers.clone();
    for j in &mut expected {
        j.coordinator_epoch = COORDINATOR_EPOCH + 1;
    }
    expected.sort_by(|a, b| a.transactional_id.cmp(&b.transactional_id));
    assert_eq!(effects.markers, expected);
    assert_eq!(effects.markers.len(), 3);
    assert!(effects.next_deadline.is_some());
}

#[test]
fn a_reloaded_shard_carries_on() {
    let h = scripted();
    let (mut s, effects) = h.reload();
    for j in &effects.markers {
        let e = s.markers_written(&j.transactional_id, j.producer_id, j.producer_epoch, h.now);
        assert_eq!(e.records.len(), 1);
    }
    for id in ["commit-pending", "abort-pending", "fenced"] {
        assert!(
            matches!(
                s.describe(id).unwrap().state,
                TxnState::CompleteCommit | TxnState::CompleteAbort
            ),
            "{id}"
        );
    }
    assert_eq!(
        s.describe("commit-pending").unwrap().state,
        TxnState::CompleteCommit
    );
}

#[test]
fn prepared_without_partitions_and_epoch_fence_resume() {
    use skiff_protocol::{Codec, PartitionsSchema, TransactionLogKey, TransactionLogValue};
    let rec = |id: &str, status: i8, parts: Vec<PartitionsSchema>| {
        let mut k = vec![0u8, 0];
        k.extend_from_slice(
            &TransactionLogKey {
                transactional_id: id.into(),
            }
            .to_bytes(0)
            .unwrap(),
        );
        let mut v = vec![0u8, 0];
        let value = TransactionLogValue {
            producer_id: 5,
            producer_epoch: 2,
            transaction_timeout_ms: 1000,
            transaction_status: status,
            transaction_partitions: Some(parts),
            transaction_last_update_timestamp_ms: 1,
            transaction_start_timestamp_ms: 1,
            ..Default::default()
        };
        v.extend_from_slice(&value.to_bytes(0).unwrap());
        (k, v)
    };
    let mut s = TxnShard::new(TxnConfig::default(), 3);
    let (k, v) = rec("empty-prepared", TxnState::PrepareCommit.id(), vec![]);
    s.replay(&k, Some(&v)).unwrap();
    let parts = vec![PartitionsSchema {
        topic: "t".into(),
        partition_ids: vec![1],
    }];
    let (k, v) = rec("fence", TxnState::PrepareEpochFence.id(), parts);
    s.replay(&k, Some(&v)).unwrap();
    let (k, v) = rec("dead", TxnState::Dead.id(), vec![]);
    s.replay(&k, Some(&v)).unwrap();
    assert!(s.describe("dead").is_none(), "Dead is forgotten");
    let e = s.on_loaded(100);
    assert_eq!(
        s.describe("empty-prepared").unwrap().state,
        TxnState::CompleteCommit
    );
    assert_eq!(s.describe("fence").unwrap().state, TxnState::PrepareAbort);
    assert_eq!(
        e.records.len(),
        2,
        "CompleteCommit and PrepareAbort records"
    );
    assert_eq!(e.markers.len(), 1);
    assert_eq!(e.markers[0].transactional_id, "fence");
    assert_eq!(e.markers[0].coordinator_epoch, 3);
    assert!(!e.markers[0].result.is_commit());
}

#[test]
fn malformed_records_are_errors_and_change_nothing() {
    let h = scripted();
    let mut s = TxnShard::new(TxnConfig::default(), 1);
    for (k, v) in &h.log {
        s.replay(k, v.as_deref()).unwrap();
    }
    let before = views(&s);
    let (key, value) = h
        .log
        .iter()
        .rev()
        .find(|(_, v)| v.is_some())
        .cloned()
        .unwrap();
    let value = value.unwrap();
    assert!(
        s.replay(&[0, 5, 0, 1, b'x'], None).is_err(),
        "unknown key version"
    );
    assert!(s.replay(&key[..3], None).is_err(), "truncated key");
    assert!(
        s.replay(&key, Some(&value[..10])).is_err(),
        "truncated value"
    );
    assert!(
        s.replay(&key, Some(&[0, 9])).is_err(),
        "unknown value version"
    );
    let mut bad_state = value.to_vec();
    bad_state[16] = 99;
    assert!(s.replay(&key, Some(&bad_state)).is_err(), "unknown state");
    let mut bad_pid = value.to_vec();
    bad_pid[2..10].copy_from_slice(&(-5i64).to_be_bytes());
    assert!(
        s.replay(&key, Some(&bad_pid)).is_err(),
        "negative producer id"
    );
    assert_eq!(views(&s), before);
}
