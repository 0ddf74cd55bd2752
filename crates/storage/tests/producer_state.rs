//! Idempotent-producer state through the `Log` (issue 5): duplicates answered with the original
//! offsets, sequence/epoch errors, state recovered across clean and unclean restarts (snapshot +
//! log replay), truncation, retention, snapshot files, follower appends and expiry.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use skiff_record::{BatchBuilder, BatchOptions, BatchView};
use skiff_storage::producer_state::snapshot::snapshot_path;
use skiff_storage::{
    AppendInfo, Log, LogConfig, LogManager, LogManagerConfig, LogOpenOptions, StorageError,
};
use skiff_types::TopicPartition;

const T0: i64 = 1_700_000_000_000;
const PID: i64 = 4242;

fn tp() -> TopicPartition {
    TopicPartition::new("idem", 0)
}

fn config() -> LogConfig {
    LogConfig {
        index_interval_bytes: 256,
        retention_ms: -1,
        ..LogConfig::default()
    }
}

fn open_opts(dir: &Path, clean: bool, log_start: i64) -> Log {
    let opts = LogOpenOptions {
        recovery_point: 0,
        log_start_offset: log_start,
        high_watermark: i64::MAX,
        clean_shutdown: clean,
        now_ms: T0,
    };
    Log::open(dir, tp(), config(), opts).unwrap().0
}

fn open(dir: &Path, clean: bool) -> Log {
    open_opts(dir, clean, 0)
}

/// A client batch of `n` records from `pid` at `epoch`, first sequence `seq`.
fn batch(pid: i64, epoch: i16, seq: i32, n: usize) -> Vec<u8> {
    let mut b = BatchBuilder::new(BatchOptions {
        producer_id: pid,
        producer_epoch: epoch,
        base_sequence: seq,
        ..BatchOptions::default()
    });
    for i in 0..n {
        let v = format!("p{pid}-e{epoch}-s{}", i64::from(seq) + i as i64);
        b.append(T0 + i as i64, None, Some(v.as_bytes()), &[]);
    }
    b.build().unwrap()
}

fn plain(n: usize) -> Vec<u8> {
    batch(-1, -1, -1, n)
}

fn append(log: &mut Log, mut b: Vec<u8>) -> Result<AppendInfo, StorageError> {
    log.append_as_leader(&mut b, 0, T0)
}

fn code(r: Result<AppendInfo, StorageError>) -> i16 {
    r.unwrap_err().error_code().code()
}

/// Every batch in the log as (base offset, producer id, base sequence).
fn batches(log: &Log) -> Vec<(i64, i64, i32)> {
    let r = log
        .read(log.log_start_offset(), 1 << 30, i64::MAX, true)
        .unwrap();
    let Some(slice) = r.slice else {
        return Vec::new();
    };
    let bytes = slice.read_to_vec().unwrap();
    skiff_record::batches(&bytes)
        .map(|b| {
            let v: BatchView<'_> = b.unwrap().1;
            (v.base_offset(), v.producer_id(), v.base_sequence())
        })
        .collect()
}

#[test]
fn duplicate_batch_returns_original_offsets_and_appends_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), true);
    append(&mut log, plain(2)).unwrap();
    let first = append(&mut log, batch(PID, 0, 0, 3)).unwrap();
    assert_eq!(
        (first.base_offset, first.last_offset, first.duplicate),
        (2, 4, false)
    );
    let second = append(&mut log, batch(PID, 0, 3, 2)).unwrap();
    assert_eq!((second.base_offset, second.last_offset), (5, 6));
    let (end, size) = (log.log_end_offset(), log.size_bytes());

    for (b, want) in [(batch(PID, 0, 0, 3), (2, 4)), (batch(PID, 0, 3, 2), (5, 6))] {
        let d = append(&mut log, b).unwrap();
        assert!(d.duplicate);
        assert_eq!(
            (d.base_offset, d.last_offset, d.record_count),
            (want.0, want.1, (want.1 - want.0 + 1) as i32)
        );
        assert_eq!(
            d.max_timestamp,
            T0 + i64::from(d.record_count) - 1,
            "original max timestamp"
        );
    }
    assert_eq!(
        (log.log_end_offset(), log.size_bytes()),
        (end, size),
        "nothing appended"
    );
    assert_eq!(batches(&log), vec![(0, -1, -1), (2, PID, 0), (5, PID, 3)]);

    // Non-idempotent batches are never deduplicated.
    append(&mut log, plain(2)).unwrap();
    append(&mut log, plain(2)).unwrap();
    assert_eq!(log.log_end_offset(), end + 4);
}

#[test]
fn sequence_and_epoch_errors_append_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), true);
    append(&mut log, batch(PID, 2, 0, 3)).unwrap();
    let end = log.log_end_offset();
    assert_eq!(code(append(&mut log, batch(PID, 2, 4, 1))), 45, "gap");
    assert_eq!(
        code(append(&mut log, batch(PID, 2, 1, 1))),
        45,
        "overlap, not a duplicate"
    );
    assert_eq!(
        code(append(&mut log, batch(PID, 1, 3, 1))),
        47,
        "lower epoch"
    );
    assert_eq!(
        code(append(&mut log, batch(PID, 3, 5, 1))),
        45,
        "new epoch must start at 0"
    );
    assert_eq!(
        code(append(&mut log, batch(PID, 2, -1, 1))),
        87,
        "negative sequence"
    );
    assert_eq!(log.log_end_offset(), end);
    assert!(matches!(
        append(&mut log, batch(PID, 2, 4, 1)),
        Err(StorageError::Producer(_))
    ));
    // A new epoch at 0 resets; the old epoch is fenced afterwards.
    append(&mut log, batch(PID, 3, 0, 1)).unwrap();
    assert_eq!(code(append(&mut log, batch(PID, 2, 3, 1))), 47);
    // Unknown producers start anywhere.
    append(&mut log, batch(PID + 1, 0, 777, 1)).unwrap();
    append(&mut log, batch(PID + 1, 0, 778, 1)).unwrap();
    let ps = log.active_producers();
    assert_eq!(ps.len(), 2);
    assert_eq!(
        (ps[0].producer_id, ps[0].producer_epoch, ps[0].last_sequence),
        (PID, 3, 0)
    );
    assert_eq!(
        (ps[1].producer_id, ps[1].producer_epoch, ps[1].last_sequence),
        (PID + 1, 0, 778)
    );
    assert_eq!(ps[1].last_timestamp, T0);
    assert_eq!(
        (ps[1].coordinator_epoch, ps[1].current_txn_start_offset),
        (-1, -1)
    );
}

/// Appends batch A (seq 0..=2) and batch B (seq 3..=4) of PID, with a roll in between so that a
/// roll snapshot exists below the log end. Returns (A's offsets, B's offsets).
fn two_batches_across_a_roll(log: &mut Log) -> ((i64, i64), (i64, i64)) {
    append(log, plain(1)).unwrap();
    let a = append(log, batch(PID, 0, 0, 3)).unwrap();
    log.roll(T0).unwrap();
    append(log, plain(1)).unwrap();
    let b = append(log, batch(PID, 0, 3, 2)).unwrap();
    (
        (a.base_offset, a.last_offset),
        (b.base_offset, b.last_offset),
    )
}

/// After a restart: the next batch is accepted, a retry of the batch before the restart (B) is
/// deduplicated. A retry of the one before it (A) is deduplicated if the state was rebuilt from
/// the log; a snapshot keeps only each producer's last batch (Kafka's format), so after loading
/// one A is out of order, as in Kafka.
fn assert_state_survived(log: &mut Log, a: (i64, i64), b: (i64, i64), a_known: bool, what: &str) {
    let end = log.log_end_offset();
    let d = append(log, batch(PID, 0, 3, 2)).unwrap();
    assert!(d.duplicate, "{what}: retry of B deduplicated");
    assert_eq!(
        (d.base_offset, d.last_offset),
        b,
        "{what}: B's original offsets"
    );
    if a_known {
        let d = append(log, batch(PID, 0, 0, 3)).unwrap();
        assert!(d.duplicate, "{what}: retry of A deduplicated");
        assert_eq!(
            (d.base_offset, d.last_offset),
            a,
            "{what}: A's original offsets"
        );
    } else {
        assert_eq!(
            code(append(log, batch(PID, 0, 0, 3))),
            45,
            "{what}: A is out of order"
        );
    }
    assert_eq!(
        code(append(log, batch(PID, 0, 9, 1))),
        45,
        "{what}: a gap is still refused"
    );
    assert_eq!(log.log_end_offset(), end);
    let next = append(log, batch(PID, 0, 5, 1)).unwrap();
    assert_eq!(
        (next.base_offset, next.duplicate),
        (end, false),
        "{what}: next batch accepted"
    );
}

#[test]
fn clean_restart_loads_the_close_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), true);
    let (a, b) = two_batches_across_a_roll(&mut log);
    let end = log.log_end_offset();
    log.close(T0).unwrap();
    assert!(
        snapshot_path(dir.path(), end).exists(),
        "clean close snapshots at the log end"
    );
    drop(log);
    let mut log = open(dir.path(), true);
    assert_eq!(log.producer_snapshot_offsets().last(), Some(&end));
    assert_state_survived(&mut log, a, b, false, "clean restart");
}

#[test]
fn unclean_restart_replays_the_log_after_the_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), true);
    let (a, b) = two_batches_across_a_roll(&mut log);
    let roll_base = log.segments().last().unwrap().base_offset();
    assert_eq!(
        log.producer_snapshot_offsets(),
        vec![roll_base],
        "roll snapshot only"
    );
    drop(log); // kill -9: no close, no snapshot at the end, no clean marker.
    let mut log = open(dir.path(), false);
    assert_state_survived(
        &mut log,
        a,
        b,
        true,
        "unclean restart, roll snapshot + replay",
    );
}

#[test]
fn unclean_restart_without_any_snapshot_replays_the_whole_log() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), true);
    let (a, b) = two_batches_across_a_roll(&mut log);
    drop(log);
    for o in [0, a.1 + 1, b.1 + 1] {
        let _ = std::fs::remove_file(snapshot_path(dir.path(), o));
    }
    let mut log = open(dir.path(), false);
    assert_state_survived(&mut log, a, b, true, "unclean restart, no snapshot");
}

#[test]
fn a_corrupt_snapshot_is_deleted_and_the_older_one_used() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), true);
    let (a, b) = two_batches_across_a_roll(&mut log);
    let end = log.log_end_offset();
    log.close(T0).unwrap();
    drop(log);
    let newest = snapshot_path(dir.path(), end);
    let mut bytes = std::fs::read(&newest).unwrap();
    *bytes.last_mut().unwrap() ^= 0x40;
    std::fs::write(&newest, &bytes).unwrap();
    let mut log = open(dir.path(), true);
    assert_state_survived(
        &mut log,
        a,
        b,
        true,
        "corrupt newest snapshot: roll snapshot + replay",
    );
    // The corrupt file was replaced by a fresh snapshot at the log end of the load.
    let fresh = std::fs::read(&newest).unwrap();
    assert_ne!(fresh, bytes);
}

#[test]
fn unclean_restart_replays_after_recovery_truncation() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), true);
    let (a, b) = two_batches_across_a_roll(&mut log);
    let active = log.segments().last().unwrap().log_path().to_path_buf();
    let size = log.segments().last().unwrap().size();
    drop(log);
    // Tear B: the crash lost its last bytes. Recovery cuts it; B must not be remembered.
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&active)
        .unwrap();
    f.set_len(size - 3).unwrap();
    drop(f);
    let mut log = open(dir.path(), false);
    assert_eq!(log.log_end_offset(), b.0);
    let retry_a = append(&mut log, batch(PID, 0, 0, 3)).unwrap();
    assert!(retry_a.duplicate);
    assert_eq!((retry_a.base_offset, retry_a.last_offset), a);
    let retry_b = append(&mut log, batch(PID, 0, 3, 2)).unwrap();
    assert!(
        !retry_b.duplicate,
        "the torn batch is appended again, not deduplicated"
    );
    assert_eq!((retry_b.base_offset, retry_b.last_offset), b);
}

#[test]
fn truncation_removes_state_above_the_point() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("p");
    let mut log = open(&dir, true);
    // PID: seq 0 at offset 0, then a roll (snapshot at 1), then seq 1..=5 one per batch.
    append(&mut log, batch(PID, 0, 0, 1)).unwrap();
    log.roll(T0).unwrap();
    for s in 1..=5 {
        append(&mut log, batch(PID, 0, s, 1)).unwrap();
    }
    // Another producer whose only batch is above the truncation point.
    let other = append(&mut log, batch(77, 0, 0, 1)).unwrap();
    log.roll(T0).unwrap();
    assert_eq!(
        log.producer_snapshot_offsets(),
        vec![1, other.last_offset + 1]
    );

    // On a copy: truncation inside PID's batches keeps seq 0..=2 and forgets 77.
    let mut trimmed = open_copy(&dir, &root.path().join("copy"));
    trimmed.truncate_to(3).unwrap();
    assert_eq!(trimmed.log_end_offset(), 3);
    assert!(trimmed.producer_snapshot_offsets().iter().all(|o| *o <= 3));
    assert_eq!(code(append(&mut trimmed, batch(PID, 0, 4, 1))), 45);
    let d = append(&mut trimmed, batch(PID, 0, 2, 1)).unwrap();
    assert_eq!((d.duplicate, d.base_offset), (true, 2));
    let again = append(&mut trimmed, batch(PID, 0, 3, 1)).unwrap();
    assert_eq!(
        (again.duplicate, again.base_offset),
        (false, 3),
        "seq 3 was truncated"
    );
    assert!(
        trimmed
            .active_producers()
            .iter()
            .all(|p| p.producer_id != 77)
    );
    append(&mut trimmed, batch(77, 0, 40, 1)).unwrap();

    // Every remembered batch of PID above the point: rebuilt from the snapshot at 1 + replay.
    log.truncate_to(1).unwrap();
    assert_eq!(log.log_end_offset(), 1);
    assert_eq!(log.producer_snapshot_offsets(), vec![1]);
    let d = append(&mut log, batch(PID, 0, 0, 1)).unwrap();
    assert_eq!(
        (d.duplicate, d.base_offset),
        (true, 0),
        "seq 0 is below the point"
    );
    assert_eq!(code(append(&mut log, batch(PID, 0, 2, 1))), 45);
    let n = append(&mut log, batch(PID, 0, 1, 1)).unwrap();
    assert_eq!((n.duplicate, n.base_offset), (false, 1));

    // Truncating everything forgets everything.
    log.truncate_fully_and_start_at(50).unwrap();
    assert!(log.active_producers().is_empty());
    assert!(log.producer_snapshot_offsets().is_empty());
    append(&mut log, batch(PID, 0, 9, 1)).unwrap();
}

/// Copies a live partition directory to `to` (as a crash would leave it) and opens the copy.
fn open_copy(from: &Path, to: &Path) -> Log {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
    open(to, false)
}

#[test]
fn snapshots_on_roll_keep_the_newest_two() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), true);
    let mut bases = Vec::new();
    for s in 0..4 {
        append(&mut log, batch(PID, 0, 2 * s, 2)).unwrap();
        log.roll(T0).unwrap();
        bases.push(log.log_end_offset());
    }
    assert_eq!(log.producer_snapshot_offsets(), bases[2..].to_vec());
    let on_disk: Vec<String> = {
        let mut v: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".snapshot"))
            .collect();
        v.sort();
        v
    };
    assert_eq!(
        on_disk,
        vec![
            "00000000000000000006.snapshot",
            "00000000000000000008.snapshot"
        ]
    );
    // The roll snapshot at 8 holds PID at seq 7 (last offset 7), in Kafka's layout.
    let bytes = std::fs::read(snapshot_path(dir.path(), 8)).unwrap();
    let entries = skiff_storage::producer_state::snapshot::decode(&bytes).unwrap();
    assert_eq!(entries.len(), 1);
    let e = entries[0];
    assert_eq!(
        (
            e.producer_id,
            e.epoch,
            e.last_sequence,
            e.last_offset,
            e.offset_delta
        ),
        (PID, 0, 7, 7, 1)
    );
    assert_eq!((e.coordinator_epoch, e.current_txn_first_offset), (-1, -1));
}

#[test]
fn retention_keeps_producers_but_drops_old_snapshots() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), true);
    let mut offsets = Vec::new();
    for s in 0..4 {
        let a = append(&mut log, batch(PID, 0, s, 1)).unwrap();
        offsets.push(a.base_offset);
        log.roll(T0).unwrap();
    }
    append(&mut log, plain(1)).unwrap();
    log.set_high_watermark(log.log_end_offset());
    assert_eq!(log.producer_snapshot_offsets(), vec![3, 4]);
    assert_eq!(log.delete_records(4).unwrap(), 4);
    assert_eq!(
        log.producer_snapshot_offsets(),
        vec![4],
        "snapshot below the log start deleted"
    );
    log.apply_retention(T0, i64::MAX).unwrap();
    assert_eq!(log.log_start_offset(), 4);
    // KIP-360: the producer is still known, its last batch (now deleted) still dedupes.
    let d = append(&mut log, batch(PID, 0, 3, 1)).unwrap();
    assert_eq!((d.duplicate, d.base_offset), (true, 3));
    assert_eq!(code(append(&mut log, batch(PID, 0, 9, 1))), 45);
    // And so after a clean restart.
    log.close(T0).unwrap();
    drop(log);
    let mut log = open_opts(dir.path(), true, 4);
    let d = append(&mut log, batch(PID, 0, 3, 1)).unwrap();
    assert!(d.duplicate);
    append(&mut log, batch(PID, 0, 4, 1)).unwrap();
}

#[test]
fn follower_appends_update_state_without_checks() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), true);
    let leader_batch = |base: i64, seq: i32| {
        let mut b = BatchBuilder::new(BatchOptions {
            base_offset: base,
            producer_id: PID,
            producer_epoch: 1,
            base_sequence: seq,
            ..BatchOptions::default()
        });
        b.append(T0, None, Some(b"v"), &[]);
        b.append(T0 + 1, None, Some(b"w"), &[]);
        b.build().unwrap()
    };
    log.append_as_follower(&leader_batch(0, 10), T0).unwrap();
    // A gap in sequences is not the follower's business.
    log.append_as_follower(&leader_batch(2, 50), T0).unwrap();
    assert_eq!(log.active_producers()[0].last_sequence, 51);
    // Became leader: the state is there.
    let d = append(&mut log, batch(PID, 1, 50, 2)).unwrap();
    assert_eq!((d.duplicate, d.base_offset, d.last_offset), (true, 2, 3));
    append(&mut log, batch(PID, 1, 52, 1)).unwrap();
}

#[test]
fn log_manager_expires_idle_producers() {
    let dir = tempfile::tempdir().unwrap();
    let exp = 60_000;
    let cfg = LogManagerConfig {
        log_dirs: vec![dir.path().to_path_buf()],
        producer_id_expiration_ms: exp,
        producer_id_expiration_check_interval_ms: 1_000,
        ..LogManagerConfig::default()
    };
    assert_eq!(
        LogManagerConfig::default().producer_id_expiration_ms,
        86_400_000
    );
    let (mgr, _) = LogManager::open(cfg.clone(), &|_| config(), T0).unwrap();
    let log = mgr.get_or_create(&tp(), config(), T0).unwrap();
    // Batch timestamps are T0..: idle time counts from them.
    append(&mut log.lock(), batch(PID, 0, 0, 1)).unwrap();
    append(&mut log.lock(), batch(PID + 1, 0, 0, 1)).unwrap();
    mgr.tick(T0 + exp - 1).unwrap();
    assert_eq!(
        log.lock().active_producers().len(),
        2,
        "not idle long enough"
    );
    {
        // PID + 1 writes again later.
        let mut b = BatchBuilder::new(BatchOptions {
            producer_id: PID + 1,
            producer_epoch: 0,
            base_sequence: 1,
            ..BatchOptions::default()
        });
        b.append(T0 + exp, None, Some(b"late"), &[]);
        log.lock()
            .append_as_leader(&mut b.build().unwrap(), 0, T0)
            .unwrap();
    }
    mgr.tick(T0 + exp + 1_000).unwrap();
    let ps = log.lock().active_producers();
    assert_eq!(
        ps.iter().map(|p| p.producer_id).collect::<Vec<_>>(),
        vec![PID + 1]
    );
    // The expired producer is unknown: any sequence is accepted.
    append(&mut log.lock(), batch(PID, 0, 123, 1)).unwrap();
    mgr.shutdown().unwrap();
    drop(log);
    drop(mgr);
    // Producers that expired while the broker was down are dropped at load.
    let (mgr, _) = LogManager::open(cfg, &|_| config(), T0 + 10 * exp).unwrap();
    let log = mgr.get(&tp()).unwrap();
    assert!(log.lock().active_producers().is_empty());
}
