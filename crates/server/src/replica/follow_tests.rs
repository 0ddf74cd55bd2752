//! The replica manager against Kafka's own unit tests (issue 17 "Tests that must exist", design
//! note replication.md §4.4), over real logs in temp dirs: the follower's side
//! (AbstractFetcherThreadTest) and the checkpoints (HighwatermarkPersistenceTest) here, the
//! metadata deltas and the leader's side of a follower's fetch (ReplicaManagerTest,
//! PartitionTest) in `follow_tests/deltas.rs`. Tests are named after the Kafka test they mirror,
//! in snake_case, with a doc line naming it.
//!
//! A node is a `LogManager` in its own temp dir and a `ReplicaManager` opened over a metadata
//! image built by replaying KRaft records (brokers 1-3 registered and unfenced, topic `foo`).
//! [`fetch_once`] plays Kafka's `fetcher.doWork()` for one partition: it asks the follower for
//! its position, reads from the leader's replica manager as replica `follower.id` (the leader's
//! Fetch handling), and hands the answer to the follower exactly as `fetcher.rs` does
//! (records -> `append_fetched`, DivergingEpoch -> `truncate_diverged`, OFFSET_OUT_OF_RANGE ->
//! the leader's log end as a replica's ListOffsets, then `reset_out_of_range`).

mod deltas;

use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;
use skiff_metadata::{MetadataImage, NO_LEADER, Record, TopicInfo, replay};
use skiff_protocol::{PartitionChangeRecord, PartitionRecord, RegisterBrokerRecord, TopicRecord};
use skiff_record::{BatchBuilder, BatchOptions};
use skiff_replication::{Acks, Partition, Reader, Role};
use skiff_storage::checkpoint::OffsetCheckpointFile;
use skiff_storage::log_manager::REPLICATION_OFFSET_CHECKPOINT;
use skiff_storage::{LogConfig, LogManager, LogManagerConfig, StorageError};
use skiff_types::{Clock, ErrorCode, TopicPartition};
use uuid::Uuid;

use super::ReplicaManager;
use super::append::{AppendError, Appended};
use super::follow::{FollowError, FollowTarget};
use super::read::{PartitionRead, ReadParams};

const TOPIC: &str = "foo";
const FOO: Uuid = Uuid::from_u128(0xf00);
/// Every node's manual clock (record timestamps too).
const NOW: i64 = 1_700_000_000_000;

fn tp(partition: i32) -> TopicPartition {
    TopicPartition::new(TOPIC, partition)
}

/// One partition's registration: (leader, leader epoch, replicas, ISR), partition epoch 0.
type Registration<'a> = (i32, i32, &'a [i32], &'a [i32]);

/// Brokers 1-3 registered and unfenced; topic `foo` with one partition per registration.
fn image(partitions: &[Registration<'_>]) -> MetadataImage {
    let mut records: Vec<Record> = (1..=3)
        .map(|id| {
            Record::RegisterBroker(RegisterBrokerRecord {
                broker_id: id,
                broker_epoch: 100 + i64::from(id),
                fenced: false,
                ..RegisterBrokerRecord::default()
            })
        })
        .collect();
    records.push(Record::Topic(TopicRecord {
        name: TOPIC.into(),
        topic_id: FOO,
    }));
    for (i, (leader, leader_epoch, replicas, isr)) in (0..).zip(partitions) {
        records.push(Record::Partition(PartitionRecord {
            partition_id: i,
            topic_id: FOO,
            replicas: replicas.to_vec(),
            isr: isr.to_vec(),
            leader: *leader,
            leader_epoch: *leader_epoch,
            partition_epoch: 0,
            ..PartitionRecord::default()
        }));
    }
    replay(&MetadataImage::default(), &records)
}

/// `image` after one `PartitionChangeRecord` of partition 0 (set `partition_id` for another);
/// a `leader` set (even to the same one) bumps the leader epoch, any change the partition epoch.
fn change(image: &MetadataImage, f: impl FnOnce(&mut PartitionChangeRecord)) -> MetadataImage {
    let mut r = PartitionChangeRecord {
        partition_id: 0,
        topic_id: FOO,
        ..PartitionChangeRecord::default()
    };
    f(&mut r);
    replay(image, &[Record::PartitionChange(r)])
}

/// A batch of `n` records from `base`, stamped with leader epoch `epoch` (as a leader wrote it).
fn batch(base: i64, epoch: i32, n: usize) -> Vec<u8> {
    let mut b = BatchBuilder::new(BatchOptions {
        base_offset: base,
        partition_leader_epoch: epoch,
        ..BatchOptions::default()
    });
    for i in 0..n {
        b.append(NOW, None, Some(format!("v{base}.{i}").as_bytes()), &[]);
    }
    b.build().unwrap()
}

/// One node: its log dir, its replica manager.
struct Node {
    id: i32,
    dir: tempfile::TempDir,
    rm: Arc<ReplicaManager>,
    info: TopicInfo,
}

fn log_manager(dir: &std::path::Path) -> Arc<LogManager> {
    let cfg = LogManagerConfig {
        log_dirs: vec![dir.to_path_buf()],
        clock: Clock::manual(NOW),
        ..LogManagerConfig::default()
    };
    LogManager::open(cfg, &|_| LogConfig::default(), NOW)
        .unwrap()
        .0
}

impl Node {
    /// Node `id` over `image`, its empty partitions created by the replica manager.
    fn open(id: i32, image: &MetadataImage) -> Node {
        Node::with_log(id, image, 0, &[])
    }

    /// Node `id` whose partition 0 already holds `batches` (appended as a follower would, from
    /// `start`) when the replica manager opens over `image`.
    fn with_log(id: i32, image: &MetadataImage, start: i64, batches: &[Vec<u8>]) -> Node {
        let dir = tempfile::tempdir().unwrap();
        let logs = log_manager(dir.path());
        if start > 0 || !batches.is_empty() {
            let log = logs
                .get_or_create(&tp(0), LogConfig::default(), NOW)
                .unwrap();
            let mut l = log.lock();
            if start > 0 {
                l.truncate_fully_and_start_at(start).unwrap();
            }
            for b in batches {
                l.append_as_follower(b, NOW).unwrap();
            }
        }
        let rm = ReplicaManager::open(id, logs, image, &|_| LogConfig::default());
        let info = image.topic(TOPIC).unwrap().clone();
        Node { id, dir, rm, info }
    }

    fn reconcile(&self, image: &MetadataImage) {
        self.rm.reconcile(image, &|_| LogConfig::default());
    }

    fn state(&self, partition: i32) -> Arc<Mutex<Partition>> {
        Arc::clone(&self.rm.states.read().get(&tp(partition)).unwrap().0)
    }

    fn role(&self) -> Role {
        self.state(0).lock().role()
    }

    /// (log start, log end, high watermark) of partition `p`'s log.
    fn offsets_of(&self, p: i32) -> (i64, i64, i64) {
        let log = self.rm.log_manager().get(&tp(p)).unwrap();
        let l = log.lock();
        (l.log_start_offset(), l.log_end_offset(), l.high_watermark())
    }

    fn offsets(&self) -> (i64, i64, i64) {
        self.offsets_of(0)
    }

    fn leo(&self) -> i64 {
        self.offsets().1
    }

    fn hw(&self) -> i64 {
        self.offsets().2
    }

    /// Partition 0's epoch cache as (epoch, start offset).
    fn epochs(&self) -> Vec<(i32, i64)> {
        let log = self.rm.log_manager().get(&tp(0)).unwrap();
        let l = log.lock();
        let entries = l.leader_epochs().entries();
        entries.iter().map(|e| (e.epoch, e.start_offset)).collect()
    }

    /// Partition 0's log bytes, start to end.
    fn bytes(&self) -> Vec<u8> {
        let log = self.rm.log_manager().get(&tp(0)).unwrap();
        let l = log.lock();
        let r = l
            .read(l.log_start_offset(), 1 << 20, l.log_end_offset(), true)
            .unwrap();
        r.slice
            .map(|s| s.read_to_vec().unwrap())
            .unwrap_or_default()
    }

    /// A client's Produce of `n` records to partition 0.
    fn produce(&self, n: usize, acks: Acks) -> Result<Appended, AppendError> {
        let data = Bytes::from(batch(0, -1, n));
        self.rm
            .append_client(&self.info, 0, &data, acks, NOW)
            .map(|(a, _)| a)
    }

    /// A Fetch of partition 0 from replica `from` (the leader's side of a follower's fetch).
    fn replica_fetch(
        &self,
        from: i32,
        fetch_offset: i64,
        current_leader_epoch: i32,
        last_fetched_epoch: i32,
    ) -> Result<PartitionRead, ErrorCode> {
        let params = ReadParams {
            fetch_offset,
            max_bytes: 1 << 20,
            min_one_message: true,
            reader: Reader::Replica(from),
            current_leader_epoch,
            last_fetched_epoch,
        };
        self.rm.read(&self.info, 0, &params)
    }
}

/// What one fetch did to the follower.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Step {
    /// DivergingEpoch{epoch, end} answered; truncated to the offset.
    Truncated { epoch: i32, end: i64, to: i64 },
    /// Records appended; the new log end.
    Appended(i64),
    /// No records (the HW may have moved).
    Nothing,
    /// OFFSET_OUT_OF_RANGE; reset to the offset.
    Reset(i64),
    /// The leader refused the fetch.
    Refused(ErrorCode),
}

/// One fetch of partition 0 by `follower` from `leader` at leader epoch `epoch` (Kafka's
/// `doWork()` for one partition; see the module docs).
fn fetch_once(leader: &Node, follower: &Node, epoch: i32) -> Step {
    let pos = follower.rm.follower_position(&tp(0), epoch).unwrap();
    let read =
        match leader.replica_fetch(follower.id, pos.fetch_offset, epoch, pos.last_fetched_epoch) {
            Ok(r) => r,
            Err(code) => return Step::Refused(code),
        };
    if let Some((e, end)) = read.diverging {
        let to = follower
            .rm
            .truncate_diverged(&tp(0), epoch, e, end)
            .unwrap();
        return Step::Truncated { epoch: e, end, to };
    }
    match read.result {
        Ok(slice) => {
            let data = slice.map(|s| s.read_to_vec().unwrap()).unwrap_or_default();
            let hw = read.bound.high_watermark;
            let leo = follower
                .rm
                .append_fetched(&tp(0), epoch, &data, hw)
                .unwrap();
            if data.is_empty() {
                Step::Nothing
            } else {
                Step::Appended(leo)
            }
        }
        Err(StorageError::OffsetOutOfRange { .. }) => {
            let latest = leader
                .rm
                .offset_for_timestamp(&leader.info, 0, epoch, Reader::Replica(follower.id), -1)
                .unwrap()
                .unwrap();
            let start = read.bound.log_start_offset;
            let to = follower
                .rm
                .reset_out_of_range(&tp(0), epoch, start, latest.offset)
                .unwrap();
            Step::Reset(to)
        }
        Err(e) => panic!("leader read failed: {e}"),
    }
}

/// Kafka's `waitUntilTrue(doWork(); logs equal)`: fetches until a fetch brings nothing and the
/// follower's HW is the leader's (at most 20 fetches). Returns the steps.
fn fetch_until_in_sync(leader: &Node, follower: &Node, epoch: i32) -> Vec<Step> {
    let mut steps = Vec::new();
    for _ in 0..20 {
        let step = fetch_once(leader, follower, epoch);
        let done = step == Step::Nothing && follower.hw() == leader.hw();
        steps.push(step);
        if done {
            return steps;
        }
    }
    panic!("not in sync after 20 fetches: {steps:?}");
}

/// The end of the follower's reconciliation: the same bytes, offsets and epochs as the leader.
fn assert_same_log(leader: &Node, follower: &Node) {
    assert_eq!(follower.bytes(), leader.bytes(), "log bytes");
    assert_eq!(follower.offsets(), leader.offsets(), "(start, end, HW)");
    assert_eq!(follower.epochs(), leader.epochs(), "epoch caches");
}

/// AbstractFetcherThreadTest.testTruncation
#[test]
fn test_truncation() {
    let img = image(&[(1, 5, &[1, 2], &[1, 2])]);
    let leader_log = [batch(0, 1, 1), batch(1, 3, 1), batch(2, 5, 1)];
    let replica_log = [batch(0, 0, 1), batch(1, 2, 1), batch(2, 4, 1)];
    let leader = Node::with_log(1, &img, 0, &leader_log);
    let follower = Node::with_log(2, &img, 0, &replica_log);
    assert_eq!(
        follower
            .rm
            .follower_position(&tp(0), 5)
            .unwrap()
            .fetch_offset,
        3
    );

    let steps = fetch_until_in_sync(&leader, &follower, 5);
    // KIP-320: each answer names the largest leader epoch at or below the follower's latest;
    // no epoch is shared, so the follower walks back to offset 0, then copies the leader.
    #[rustfmt::skip]
    assert_eq!(steps[..4], [
        Step::Truncated { epoch: 3, end: 2, to: 2 },
        Step::Truncated { epoch: 1, end: 1, to: 1 },
        Step::Truncated { epoch: 0, end: 0, to: 0 },
        Step::Appended(3),
    ]);
    assert_same_log(&leader, &follower);
    assert_eq!(follower.hw(), 3);
}

/// AbstractFetcherThreadTest.testDivergingEpochs
#[test]
fn test_diverging_epochs() {
    let img = image(&[(1, 5, &[1, 2], &[1, 2])]);
    let leader_log = [batch(0, 0, 1), batch(1, 2, 1), batch(2, 5, 1)];
    let replica_log = [batch(0, 0, 1), batch(1, 2, 1), batch(2, 4, 1)];
    let leader = Node::with_log(1, &img, 0, &leader_log);
    let follower = Node::with_log(2, &img, 0, &replica_log);
    let last_fetched_epoch = |n: &Node| {
        let pos = n.rm.follower_position(&tp(0), 5).unwrap();
        pos.last_fetched_epoch
    };
    assert_eq!(follower.leo(), 3);
    assert_eq!(last_fetched_epoch(&follower), 4);

    let first = fetch_once(&leader, &follower, 5);
    assert_eq!(
        first,
        Step::Truncated {
            epoch: 2,
            end: 2,
            to: 2
        }
    );
    assert_eq!(last_fetched_epoch(&follower), 2);

    let steps = fetch_until_in_sync(&leader, &follower, 5);
    assert_eq!(steps[0], Step::Appended(3), "{steps:?}");
    assert_same_log(&leader, &follower);
    assert_eq!(last_fetched_epoch(&follower), 5);
}

/// One-record batches from offset 0: `count` of each `(epoch, count)` in turn.
fn single_record_batches(epochs: &[(i32, i64)]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for &(epoch, count) in epochs {
        for _ in 0..count {
            out.push(batch(i64::try_from(out.len()).unwrap(), epoch, 1));
        }
    }
    out
}

/// A follower of node 1 at leader epoch 6 whose log holds `batches`.
fn follower_with(batches: &[Vec<u8>]) -> Node {
    let img = image(&[(1, 6, &[1, 2], &[1, 2])]);
    Node::with_log(2, &img, 0, batches)
}

/// (name, the follower's log, the DivergingEpoch answer, the offset truncated to, the epoch
/// cache after).
type TruncationCase<'a> = (&'a str, &'a [Vec<u8>], (i32, i64), i64, &'a [(i32, i64)]);

/// AbstractFetcherThread's `getOffsetTruncationState`, the rule under testTruncation and
/// testDivergingEpochs: a DivergingEpoch{epoch, end} truncates to min(leader's end of the epoch,
/// own end of that epoch, log end); an epoch the follower does not have cuts to the end of its
/// largest epoch below it (the next fetch asks again).
#[test]
fn test_truncation_offsets() {
    // Epochs 0@0, 2@2, 4@5; log end 8 (one record a batch: every offset is a batch boundary,
    // as every epoch start is).
    let log = single_record_batches(&[(0, 2), (2, 3), (4, 3)]);
    // A follower whose first epoch is 3 (epochs 3@0, 5@2; log end 4).
    let late = single_record_batches(&[(3, 2), (5, 2)]);
    #[rustfmt::skip]
    let cases: [TruncationCase<'_>; 9] = [
        ("leader's end of epoch 2 below ours", &log, (2, 4), 4, &[(0, 0), (2, 2)]),
        ("our end of epoch 2 below the leader's", &log, (2, 7), 5, &[(0, 0), (2, 2)]),
        ("latest epoch: leader's end below our log end", &log, (4, 6), 6, &[(0, 0), (2, 2), (4, 5)]),
        ("latest epoch, leader ahead: nothing cut", &log, (4, 9), 8, &[(0, 0), (2, 2), (4, 5)]),
        ("the same end: nothing cut", &log, (4, 8), 8, &[(0, 0), (2, 2), (4, 5)]),
        ("epoch 0 ends at 1 on the leader", &log, (0, 1), 1, &[(0, 0)]),
        ("unknown epoch 3: cut to the end of our epoch 2 (Kafka: min(5, log end))", &log, (3, 6), 5, &[(0, 0), (2, 2)]),
        ("unknown epoch 1 below all ours: our first epoch starts at 0", &late, (1, 3), 0, &[]),
        ("epoch 0 on the leader, ours start at 3@0: everything goes", &late, (0, 0), 0, &[]),
    ];
    for (name, batches, (epoch, end), want, want_epochs) in cases {
        let f = follower_with(batches);
        let before = f.leo();
        let got = f.rm.truncate_diverged(&tp(0), 6, epoch, end).unwrap();
        assert_eq!(got, want, "{name}: returned offset");
        assert_eq!(f.leo(), want.min(before), "{name}: log end");
        assert_eq!(f.epochs(), want_epochs, "{name}: epoch cache");
        let pos = f.rm.follower_position(&tp(0), 6).unwrap();
        assert_eq!(pos.fetch_offset, f.leo(), "{name}: next fetch offset");
        let (start, leo, hw) = f.offsets();
        assert!(start <= hw && hw <= leo, "{name}: {start} <= {hw} <= {leo}");
    }
}

/// AbstractFetcherThread's `getOffsetTruncationState`, its `None` case: the answer's epoch is
/// above every epoch of the follower's cache (its lookup is undefined); Kafka truncates to
/// min(leader's end, log end).
#[test]
fn test_truncation_offsets_for_an_epoch_above_every_local_one() {
    let f = follower_with(&single_record_batches(&[(0, 2), (2, 3), (4, 3)]));
    assert_eq!(f.rm.truncate_diverged(&tp(0), 6, 5, 7).unwrap(), 7);
    assert_eq!(f.leo(), 7);
}

/// AbstractFetcherThreadTest.testFencedFetch
#[test]
fn test_fenced_fetch() {
    let img = image(&[(1, 0, &[1, 2], &[1, 2])]);
    let leader = Node::open(1, &img);
    let follower = Node::open(2, &img);
    leader.produce(2, Acks::Leader).unwrap();
    fetch_until_in_sync(&leader, &follower, 0);
    assert_eq!(follower.leo(), 2, "caught up");

    let fetched_at = |n: &Node| n.state(0).lock().followers()[0].log_end_offset;
    assert_eq!(fetched_at(&leader), 2);

    // The leader's epoch is bumped (its followers' states reset); the follower's image is
    // behind: its fetch is fenced and not counted.
    let bumped = change(&img, |r| r.leader = 1);
    leader.reconcile(&bumped);
    leader.produce(2, Acks::Leader).unwrap();
    assert_eq!(fetched_at(&leader), -1);
    assert_eq!(
        fetch_once(&leader, &follower, 0),
        Step::Refused(ErrorCode::FencedLeaderEpoch)
    );
    assert_eq!(follower.leo(), 2, "no progress");
    assert_eq!(fetched_at(&leader), -1, "not counted");

    // An answer to a fetch of the old epoch that arrives once the follower moved on.
    follower.reconcile(&bumped);
    let late = follower.rm.append_fetched(&tp(0), 0, &batch(2, 0, 2), 4);
    assert!(
        matches!(
            late,
            Err(FollowError::NotFollowing(ErrorCode::FencedLeaderEpoch))
        ),
        "{late:?}"
    );
    assert_eq!((follower.leo(), follower.hw()), (2, 2), "nothing written");

    // At the new epoch it proceeds.
    fetch_until_in_sync(&leader, &follower, 1);
    assert_same_log(&leader, &follower);
}

/// AbstractFetcherThreadTest.testFencedTruncation
#[test]
fn test_fenced_truncation() {
    let img = image(&[(1, 0, &[1, 2], &[1, 2])]);
    let follower = Node::with_log(2, &img, 0, &[batch(0, 0, 2), batch(2, 0, 2)]);
    let bumped = change(&img, |r| r.leader = 1);
    let leader = Node::with_log(1, &bumped, 0, &[batch(0, 0, 1)]);

    // A fetch at the old epoch is fenced before any divergence is looked at.
    let stale = leader.replica_fetch(2, 4, 0, 0);
    assert!(
        matches!(stale, Err(ErrorCode::FencedLeaderEpoch)),
        "{stale:?}"
    );

    // Answers for epoch 0 arriving after the follower moved to epoch 1 change nothing.
    follower.reconcile(&bumped);
    let fenced = |r: Result<i64, FollowError>| {
        matches!(
            r,
            Err(FollowError::NotFollowing(ErrorCode::FencedLeaderEpoch))
        )
    };
    assert!(fenced(follower.rm.truncate_diverged(&tp(0), 0, 0, 1)));
    assert!(fenced(follower.rm.reset_out_of_range(&tp(0), 0, 3, 4)));
    assert!(fenced(
        follower
            .rm
            .follower_position(&tp(0), 0)
            .map(|p| p.fetch_offset)
    ));
    assert_eq!(follower.offsets(), (0, 4, 0));

    // Leader now: no follower operation applies at any epoch.
    follower.reconcile(&change(&bumped, |r| r.leader = 2));
    assert_eq!(follower.role(), Role::Leader);
    let r = follower.rm.truncate_diverged(&tp(0), 2, 0, 1);
    assert!(
        matches!(
            r,
            Err(FollowError::NotFollowing(ErrorCode::NotLeaderOrFollower))
        ),
        "{r:?}"
    );
    assert_eq!(follower.leo(), 4);
}

/// AbstractFetcherThreadTest.testFollowerFetchOutOfRangeHigh (and the other outcomes of
/// `reset_out_of_range`)
#[test]
fn test_follower_fetch_out_of_range_high() {
    let log = [batch(0, 0, 1), batch(1, 2, 1), batch(2, 4, 1)];
    // (name, leader's [start, end), want (start, end, HW))
    #[rustfmt::skip]
    let cases = [
        ("Kafka's case: the leader's log emptied", (0, 0), (0, 0, 0)),
        ("the leader's log is shorter", (0, 2), (0, 2, 2)),
        ("in range: nothing to do", (0, 5), (0, 3, 2)),
    ];
    for (name, (leader_start, leader_end), want) in cases {
        let img = image(&[(1, 4, &[1, 2], &[1, 2])]);
        let f = Node::with_log(2, &img, 0, &log);
        f.rm.append_fetched(&tp(0), 4, &[], 2).unwrap();
        assert_eq!(f.offsets(), (0, 3, 2), "{name}: before");
        let got =
            f.rm.reset_out_of_range(&tp(0), 4, leader_start, leader_end)
                .unwrap();
        assert_eq!(got, want.1, "{name}: returned offset");
        assert_eq!(f.offsets(), want, "{name}: (start, end, HW)");
        let pos = f.rm.follower_position(&tp(0), 4).unwrap();
        assert_eq!(pos.fetch_offset, want.1, "{name}: next fetch offset");
    }
}

/// AbstractFetcherThreadTest.testFollowerFetchOutOfRangeLow
#[test]
fn test_follower_fetch_out_of_range_low() {
    let img = image(&[(1, 4, &[1, 2], &[1, 2])]);
    // The leader's log starts at 2; the follower's ends at 1.
    let leader = Node::with_log(1, &img, 2, &[batch(2, 4, 1)]);
    let follower = Node::with_log(2, &img, 0, &[batch(0, 0, 1)]);
    assert_eq!(fetch_once(&leader, &follower, 4), Step::Reset(2));
    assert_eq!(follower.offsets().0, 2, "log start moved");
    assert_eq!(follower.leo(), 2);
    assert!(follower.bytes().is_empty(), "the old records are gone");

    let steps = fetch_until_in_sync(&leader, &follower, 4);
    assert_eq!(steps[0], Step::Appended(3), "{steps:?}");
    assert_same_log(&leader, &follower);
}

/// AbstractFetcherThreadTest.testCorruptMessage
#[test]
fn test_corrupt_message() {
    let img = image(&[(1, 0, &[1, 2], &[1, 2])]);
    let f = Node::open(2, &img);
    let corrupt = |mut b: Vec<u8>| {
        let last = b.len() - 1;
        b[last] ^= 0x5a;
        b
    };

    let r = f.rm.append_fetched(&tp(0), 0, &corrupt(batch(0, 0, 2)), 2);
    assert!(matches!(r, Err(FollowError::BadBatch(_))), "{r:?}");
    assert_eq!(f.offsets(), (0, 0, 0), "nothing appended, the HW not taken");

    // The next fetch brings it intact.
    assert_eq!(
        f.rm.append_fetched(&tp(0), 0, &batch(0, 0, 2), 2).unwrap(),
        2
    );
    assert_eq!(f.offsets(), (0, 2, 2));

    // A good batch then a corrupt one: the good one is kept, nothing of the other.
    let mut answer = batch(2, 0, 2);
    answer.extend(corrupt(batch(4, 0, 2)));
    let r = f.rm.append_fetched(&tp(0), 0, &answer, 6);
    assert!(matches!(r, Err(FollowError::BadBatch(_))), "{r:?}");
    assert_eq!(f.leo(), 4);
    assert_eq!(
        f.rm.append_fetched(&tp(0), 0, &batch(4, 0, 2), 6).unwrap(),
        6
    );
    assert_eq!(f.offsets(), (0, 6, 6));
}

/// The `replication-offset-checkpoint` of `node`'s log dir, written now.
fn checkpointed_hws(node: &Node) -> Vec<(i32, i64)> {
    node.rm.log_manager().write_checkpoints().unwrap();
    let file = OffsetCheckpointFile::new(node.dir.path().join(REPLICATION_OFFSET_CHECKPOINT));
    let hws = file.read().unwrap();
    hws.into_iter().map(|(tp, hw)| (tp.partition, hw)).collect()
}

/// HighwatermarkPersistenceTest.testHighWatermarkPersistenceSinglePartition
#[test]
fn test_high_watermark_persistence_single_partition() {
    let img = image(&[(1, 0, &[1, 2], &[1])]);
    let leader = Node::open(1, &img);
    assert_eq!(checkpointed_hws(&leader), vec![(0, 0)]);
    leader.produce(5, Acks::Leader).unwrap();
    assert_eq!(
        checkpointed_hws(&leader),
        vec![(0, 5)],
        "ISR {{1}}: HW = LEO"
    );
    leader.produce(3, Acks::Leader).unwrap();
    assert_eq!(checkpointed_hws(&leader), vec![(0, 8)]);
}

/// HighwatermarkPersistenceTest.testHighWatermarkPersistenceMultiplePartitions (KAFKA-851:
/// every hosted partition, whatever its role, is checkpointed with its HW)
#[test]
fn test_high_watermark_persistence_multiple_partitions() {
    let img = image(&[
        (1, 0, &[1, 2], &[1, 2]),
        (2, 0, &[1, 2], &[1, 2]),
        (2, 0, &[1, 2], &[1, 2]),
    ]);
    let node = Node::open(1, &img);
    assert_eq!(checkpointed_hws(&node), vec![(0, 0), (1, 0), (2, 0)]);

    // Partition 0, led here: HW 5 once follower 2 fetched it.
    node.produce(5, Acks::Leader).unwrap();
    assert_eq!(node.offsets_of(0), (0, 5, 0));
    assert!(node.replica_fetch(2, 5, 0, 0).unwrap().diverging.is_none());
    // Partitions 1 and 2, followed: the leader's HW, capped by the log end.
    node.rm
        .append_fetched(&tp(1), 0, &batch(0, 0, 3), 2)
        .unwrap();
    node.rm
        .append_fetched(&tp(2), 0, &batch(0, 0, 4), 9)
        .unwrap();
    assert_eq!(checkpointed_hws(&node), vec![(0, 5), (1, 2), (2, 4)]);

    // Partition 2 loses its leader: still hosted, still checkpointed.
    node.reconcile(&change(&img, |r| {
        r.partition_id = 2;
        r.leader = NO_LEADER;
    }));
    let following = node.rm.following();
    let target = following.iter().find(|(t, _)| *t == tp(2)).map(|(_, t)| *t);
    assert_eq!(
        target,
        Some(FollowTarget {
            leader: NO_LEADER,
            leader_epoch: 1
        })
    );
    let role = node.state(2).lock().role();
    assert_eq!(role, Role::Follower { leader: NO_LEADER });
    node.rm
        .append_fetched(&tp(1), 0, &batch(3, 0, 2), 5)
        .unwrap();
    assert_eq!(checkpointed_hws(&node), vec![(0, 5), (1, 5), (2, 4)]);

    // A restart reads them back.
    node.rm.log_manager().shutdown().unwrap();
    let reopened = log_manager(node.dir.path());
    let hws: Vec<i64> = (0..3)
        .map(|p| reopened.get(&tp(p)).unwrap().lock().high_watermark())
        .collect();
    assert_eq!(hws, vec![5, 5, 4]);
}

/// The simulation's bug 6: a truncation below the HW lowers it, and the fetcher writes the
/// HW checkpoint at once (`checkpoint_if_hw_lowered`), so a crash before the periodic write
/// cannot bring back the old HW over records written since.
#[test]
fn a_truncation_below_the_hw_writes_the_hw_checkpoint_at_once() {
    let f = follower_with(&single_record_batches(&[(0, 2), (2, 3), (4, 3)]));
    f.rm.append_fetched(&tp(0), 6, &[], 8).unwrap();
    assert_eq!(f.hw(), 8);
    f.rm.checkpoint_if_hw_lowered();
    assert!(!f.rm.hw_lowered_pending());
    f.rm.truncate_diverged(&tp(0), 6, 2, 4).unwrap();
    assert_eq!(f.hw(), 4);
    assert!(f.rm.hw_lowered_pending(), "the lowered HW is noted");
    f.rm.checkpoint_if_hw_lowered();
    assert!(!f.rm.hw_lowered_pending());
    let file = std::fs::read_to_string(f.dir.path().join("replication-offset-checkpoint")).unwrap();
    assert!(
        file.lines().any(|l| l == format!("{TOPIC} 0 4")),
        "the checkpoint holds the lowered HW: {file:?}"
    );
}
