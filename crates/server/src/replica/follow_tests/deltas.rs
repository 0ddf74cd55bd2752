//! ReplicaManagerTest's metadata deltas (roles, epochs and follow targets from a changed image;
//! parked produces and fetches completed on the way) and PartitionTest's leader side of a
//! follower's fetch (KIP-320 divergence, epoch checks, the HW and parked acks), over the
//! replica manager (see `follow_tests.rs` for the harness).

use std::sync::Arc;

use skiff_replication::{Acks, Isolation, Reader, Role};
use skiff_storage::StorageError;
use skiff_types::ErrorCode;
use tokio::sync::Notify;

use super::{FollowTarget, NOW, Node, PartitionRead, batch, change, image, tp};

/// (role, leader epoch, partition epoch, ISR) of partition 0.
fn registration(node: &Node) -> (Role, i32, i32, Vec<i32>) {
    let st = node.state(0);
    let st = st.lock();
    (
        st.role(),
        st.leader_epoch(),
        st.partition_epoch(),
        st.isr().to_vec(),
    )
}

/// The log end the leader last heard from follower `id` (-1: never).
fn follower_log_end(node: &Node, id: i32) -> i64 {
    let st = node.state(0);
    let st = st.lock();
    st.followers()
        .iter()
        .find(|f| f.id == id)
        .map_or(-1, |f| f.log_end_offset)
}

/// ReplicaManagerTest.testDeltaFromLeaderToFollower
#[test]
fn test_delta_from_leader_to_follower() {
    let img = image(&[(1, 0, &[1, 2], &[1, 2])]);
    let node = Node::open(1, &img);
    assert_eq!(registration(&node), (Role::Leader, 0, 0, vec![1, 2]));
    assert!(node.rm.following().is_empty(), "no fetcher");

    // A produce with acks=-1 is answered once replica 2 fetched past it; the HW move also
    // wakes the long polls waiting on the partition.
    let mut ack = node.produce(3, Acks::All).unwrap().ack.expect("parked");
    assert!(ack.try_recv().is_err(), "not before replica 2 has it");
    let waiter = Arc::new(Notify::new());
    node.rm.waiters.register([&tp(0)], &waiter);
    let read = node.replica_fetch(2, 3, 0, 0).unwrap();
    assert_eq!(read.diverging, None);
    assert_eq!(read.bound.high_watermark, 3);
    assert_eq!(ack.try_recv(), Ok(ErrorCode::None));
    assert_eq!(
        node.rm.waiters.partitions_waited_on(),
        0,
        "long polls woken"
    );

    node.reconcile(&change(&img, |r| r.leader = 2));
    let err = node.produce(3, Acks::All).unwrap_err();
    assert_eq!(err.code, ErrorCode::NotLeaderOrFollower);
    assert_eq!(
        registration(&node),
        (Role::Follower { leader: 2 }, 1, 1, vec![1, 2])
    );
    let target = FollowTarget {
        leader: 2,
        leader_epoch: 1,
    };
    assert_eq!(node.rm.following(), vec![(tp(0), target)], "fetcher of 2");
}

/// ReplicaManagerTest.testDeltaFromFollowerToLeader
#[test]
fn test_delta_from_follower_to_leader() {
    let img = image(&[(2, 0, &[1, 2], &[1, 2])]);
    let node = Node::open(1, &img);
    assert_eq!(
        registration(&node),
        (Role::Follower { leader: 2 }, 0, 0, vec![1, 2])
    );
    let target = FollowTarget {
        leader: 2,
        leader_epoch: 0,
    };
    assert_eq!(node.rm.following(), vec![(tp(0), target)]);
    let err = node.produce(3, Acks::All).unwrap_err();
    assert_eq!(err.code, ErrorCode::NotLeaderOrFollower);

    node.reconcile(&change(&img, |r| r.leader = 1));
    assert_eq!(registration(&node), (Role::Leader, 1, 1, vec![1, 2]));
    assert!(node.rm.following().is_empty(), "fetcher removed");
    assert_eq!(node.epochs(), vec![(1, 0)], "the epoch's start recorded");

    let mut ack = node.produce(3, Acks::All).unwrap().ack.expect("parked");
    let read = node.replica_fetch(2, 3, 1, 1).unwrap();
    assert_eq!((read.diverging, read.bound.high_watermark), (None, 3));
    assert_eq!(ack.try_recv(), Ok(ErrorCode::None));
    assert_eq!(node.hw(), 3);
}

/// ReplicaManagerTest.testFetcherAreNotRestartedIfLeaderEpochIsNotBumpedWithKRaftPath
#[test]
fn test_fetcher_are_not_restarted_if_leader_epoch_is_not_bumped_with_kraft_path() {
    let img = image(&[(2, 0, &[1, 2], &[1, 2])]);
    let node = Node::open(1, &img);
    let mut changes = node.rm.following_changes();
    changes.borrow_and_update();
    let target = |leader, leader_epoch| {
        vec![(
            tp(0),
            FollowTarget {
                leader,
                leader_epoch,
            },
        )]
    };
    assert_eq!(node.rm.following(), target(2, 0));

    // A new replica, same leader: only the partition epoch moves.
    let img = change(&img, |r| {
        r.replicas = Some(vec![1, 2, 3]);
        r.isr = Some(vec![1, 2]);
    });
    node.reconcile(&img);
    assert_eq!(
        registration(&node),
        (Role::Follower { leader: 2 }, 0, 1, vec![1, 2])
    );
    assert!(!changes.has_changed().unwrap(), "fetchers untouched");
    assert_eq!(node.rm.following(), target(2, 0));
    assert!(node.rm.follower_position(&tp(0), 0).is_ok());

    // A new leader: a new epoch and target.
    let img = change(&img, |r| {
        r.isr = Some(vec![1, 2, 3]);
        r.leader = 3;
    });
    node.reconcile(&img);
    assert_eq!(
        registration(&node),
        (Role::Follower { leader: 3 }, 1, 2, vec![1, 2, 3])
    );
    assert!(changes.has_changed().unwrap());
    assert_eq!(node.rm.following(), target(3, 1));
}

/// ReplicaManagerTest.testDeltaToFollowerCompletesProduce
#[test]
fn test_delta_to_follower_completes_produce() {
    let img = image(&[(1, 0, &[1, 2], &[1, 2])]);
    let node = Node::open(1, &img);
    let mut ack = node.produce(3, Acks::All).unwrap().ack.expect("parked");
    assert!(ack.try_recv().is_err());

    node.reconcile(&change(&img, |r| r.leader = 2));
    assert_eq!(
        registration(&node),
        (Role::Follower { leader: 2 }, 1, 1, vec![1, 2])
    );
    assert_eq!(ack.try_recv(), Ok(ErrorCode::NotLeaderOrFollower));
}

/// ReplicaManagerTest.testDeltaToFollowerCompletesFetch: a fetch long-polling the leader is
/// answered (NOT_LEADER_OR_FOLLOWER) as soon as the partition is followed instead.
#[test]
fn test_delta_to_follower_completes_fetch() {
    let img = image(&[(1, 0, &[1, 2], &[1, 2])]);
    let node = Node::open(1, &img);
    // A follower's fetch at the log end parks (handlers/fetch.rs registers, then waits).
    assert!(node.replica_fetch(2, 0, 0, -1).is_ok());
    let waiter = Arc::new(Notify::new());
    node.rm.waiters.register([&tp(0)], &waiter);

    node.reconcile(&change(&img, |r| r.leader = 2));
    // Its re-read would answer NOT_LEADER_OR_FOLLOWER, if it were woken.
    let again = node.replica_fetch(2, 0, 1, -1);
    assert!(
        matches!(again, Err(ErrorCode::NotLeaderOrFollower)),
        "{again:?}"
    );
    assert_eq!(node.rm.waiters.partitions_waited_on(), 0, "not woken");
}

/// A leader at epoch 10 of {1, 2} whose log has Kafka's testLastFetchedOffsetValidation epochs:
/// 0@0, 3@2, 4@8, 7@13, 9@14 (log end 17), 10@17 recorded when it became leader.
fn leader_of_many_epochs() -> Node {
    let log = [
        batch(0, 0, 2),
        batch(2, 3, 3),
        batch(5, 3, 3),
        batch(8, 4, 5),
        batch(13, 7, 1),
        batch(14, 9, 3),
    ];
    let img = image(&[(1, 9, &[1, 2], &[1, 2])]);
    let node = Node::with_log(1, &img, 0, &log);
    node.reconcile(&change(&img, |r| r.leader = 1));
    assert_eq!(node.leo(), 17);
    assert_eq!(registration(&node).1, 10);
    node
}

fn is_out_of_range(r: &PartitionRead) -> bool {
    matches!(r.result, Err(StorageError::OffsetOutOfRange { .. }))
}

/// (LastFetchedEpoch, fetch offset, the DivergingEpoch answered).
type DivergenceCase = (i32, i64, Option<(i32, i64)>);

/// PartitionTest.testLastFetchedOffsetValidation: `DivergingEpoch` is the (epoch, end) of the
/// largest epoch at or below LastFetchedEpoch when that epoch ends below the fetch offset (or is
/// older than asked); no records with it.
#[test]
fn test_last_fetched_offset_validation() {
    let node = leader_of_many_epochs();
    let check = |cases: &[DivergenceCase]| {
        for &(last_fetched_epoch, fetch_offset, want) in cases {
            let r = node
                .replica_fetch(2, fetch_offset, 10, last_fetched_epoch)
                .unwrap();
            let name = format!("LastFetchedEpoch {last_fetched_epoch}, offset {fetch_offset}");
            assert_eq!(r.diverging, want, "{name}");
            if want.is_some() {
                assert!(matches!(r.result, Ok(None)), "{name}: no records");
            }
        }
    };
    #[rustfmt::skip]
    check(&[
        (2, 5, Some((0, 2))),
        (0, 4, Some((0, 2))),
        (6, 6, Some((4, 13))),
        (5, 9, Some((4, 13))),
        (10, 18, Some((10, 17))),
        (0, 2, None),
        (7, 14, None),
        (9, 17, None),
        (10, 17, None),
    ]);
    assert_eq!(node.hw(), 17, "replica 2 fetched at the log end");

    // The log start moves into epoch 3.
    assert_eq!(node.rm.delete_records(&node.info, 0, 5), Ok((5, true)));
    #[rustfmt::skip]
    check(&[
        (2, 8, Some((2, 5))),
        (0, 5, None),
        (3, 5, None),
    ]);
    let r = node.replica_fetch(2, 0, 10, 0).unwrap();
    assert!(is_out_of_range(&r), "below the log start: {:?}", r.result);

    // Into epoch 4: not diverging, below the log start.
    assert_eq!(node.rm.delete_records(&node.info, 0, 10), Ok((10, true)));
    let r = node.replica_fetch(2, 6, 10, 3).unwrap();
    assert!(is_out_of_range(&r), "{:?}", r.result);
}

/// PartitionTest.testLastFetchedOffsetValidation: "reads from epochs larger than we know about
/// should cause an out of range error". Skiff answers DivergingEpoch(-1, -1), which is the
/// wire's "no divergence": the follower fetches again at once, answered the same way.
#[test]
fn test_last_fetched_offset_validation_epoch_above_every_known_one() {
    let node = leader_of_many_epochs();
    let r = node.replica_fetch(2, 5, 10, 11);
    let out_of_range = match &r {
        Err(code) => *code == ErrorCode::OffsetOutOfRange,
        Ok(read) => read.diverging.is_none() && is_out_of_range(read),
    };
    assert!(out_of_range, "{r:?}");
}

/// Node 1 leading partition 0 at `epoch`: opened as leader of `epoch` when `at_open`, else
/// opened as leader of `epoch - 1` and moved by the image. Its log: epochs 0@0 and 5@2, end 4.
fn leader_after_epochs_0_and_5(epoch: i32, at_open: bool) -> Node {
    let log = [batch(0, 0, 2), batch(2, 5, 2)];
    if at_open {
        return Node::with_log(1, &image(&[(1, epoch, &[1, 2], &[1, 2])]), 0, &log);
    }
    let img = image(&[(1, epoch - 1, &[1, 2], &[1, 2])]);
    let node = Node::with_log(1, &img, 0, &log);
    node.reconcile(&change(&img, |r| r.leader = 1));
    node
}

/// PartitionTest.testMakeLeaderUpdatesEpochCache: a new leader records (its epoch, its log
/// end) so that a follower holding a later epoch than any in this log truncates correctly.
fn check_make_leader_updates_epoch_cache(node: &Node) {
    assert_eq!(registration(node).1, 8);
    assert_eq!(node.leo(), 4);
    assert_eq!(
        node.rm.end_offset_for_epoch(&node.info, 0, 8, 8),
        Ok((8, 4))
    );
    assert_eq!(node.epochs().last(), Some(&(8, 4)));
    // A follower with data of epoch 6, which this leader never had.
    let r = node.replica_fetch(2, 6, 8, 6).unwrap();
    assert_eq!(r.diverging, Some((5, 4)));
}

/// PartitionTest.testMakeLeaderUpdatesEpochCache (leader by a metadata change)
#[test]
fn test_make_leader_updates_epoch_cache() {
    check_make_leader_updates_epoch_cache(&leader_after_epochs_0_and_5(8, false));
}

/// PartitionTest.testMakeLeaderUpdatesEpochCache (leader at start: `ReplicaManager::open`)
#[test]
fn test_make_leader_updates_epoch_cache_at_open() {
    check_make_leader_updates_epoch_cache(&leader_after_epochs_0_and_5(8, true));
}

/// ReplicaManagerTest.testFollowerStateNotUpdatedIfLogReadFails (a fenced and a diverging
/// fetch leave the follower's state alone)
#[test]
fn test_follower_state_not_updated_if_log_read_fails() {
    let img = image(&[(1, 4, &[1, 2], &[1, 2])]);
    let node = Node::open(1, &img);
    node.reconcile(&change(&img, |r| r.leader = 1));
    assert_eq!(follower_log_end(&node, 2), -1, "unknown");
    for _ in 0..5 {
        node.produce(1, Acks::Leader).unwrap();
    }
    assert!(node.replica_fetch(2, 0, 5, -1).is_ok());
    assert_eq!(follower_log_end(&node, 2), 0);

    let r = node.replica_fetch(2, 3, 4, -1);
    assert!(matches!(r, Err(ErrorCode::FencedLeaderEpoch)), "{r:?}");
    assert_eq!(follower_log_end(&node, 2), 0);

    let r = node.replica_fetch(2, 3, 5, 4).unwrap();
    assert_eq!(r.diverging, Some((4, 0)));
    assert_eq!(follower_log_end(&node, 2), 0);
}

/// ReplicaManagerTest.testFollowerStateNotUpdatedIfLogReadFails, a fetch above the log end
/// (no LastFetchedEpoch): OFFSET_OUT_OF_RANGE, and neither the follower's state nor the HW
/// may move.
#[test]
fn test_follower_state_not_updated_if_log_read_fails_out_of_range() {
    let img = image(&[(1, 5, &[1, 2], &[1, 2])]);
    let node = Node::open(1, &img);
    for _ in 0..5 {
        node.produce(1, Acks::Leader).unwrap();
    }
    assert!(node.replica_fetch(2, 0, 5, -1).is_ok());
    assert_eq!((follower_log_end(&node, 2), node.hw()), (0, 0));

    let r = node.replica_fetch(2, 10, 5, -1).unwrap();
    assert!(is_out_of_range(&r), "{:?}", r.result);
    assert_eq!((follower_log_end(&node, 2), node.hw()), (0, 0));
}

/// PartitionTest.testFetchFromUnrecognizedFollower, the request without a leader epoch. With
/// one, Kafka answers UNKNOWN_LEADER_EPOCH (a replica the leader's metadata does not have yet)
/// where Skiff answers NOT_LEADER_OR_FOLLOWER; Skiff's fetcher backs off on both alike.
#[test]
fn test_fetch_from_unrecognized_follower() {
    let img = image(&[(1, 8, &[1, 2], &[1, 2])]);
    let node = Node::open(1, &img);
    let r = node.replica_fetch(3, 0, -1, -1);
    assert!(matches!(r, Err(ErrorCode::NotLeaderOrFollower)), "{r:?}");
    let ids: Vec<i32> = node
        .state(0)
        .lock()
        .followers()
        .iter()
        .map(|f| f.id)
        .collect();
    assert_eq!(ids, vec![2], "no state for replica 3");
    assert!(
        node.replica_fetch(2, 0, -1, -1).is_ok(),
        "a follower's fetch"
    );
}

/// PartitionTest.testMonotonicOffsetsAfterLeaderChange (KIP-207), through ListOffsets.
#[test]
fn test_monotonic_offsets_after_leader_change() {
    let img = image(&[(1, 8, &[1, 2, 3], &[1, 3])]);
    let node = Node::open(1, &img);
    node.produce(2, Acks::None).unwrap();
    node.produce(3, Acks::None).unwrap();
    assert_eq!(node.hw(), 0);
    for f in [2, 3] {
        node.replica_fetch(f, 0, 8, -1).unwrap();
        node.replica_fetch(f, 2, 8, 8).unwrap();
    }
    node.rm.settle_isr(&tp(0), Ok((1, vec![1, 3, 2])));
    assert_eq!(node.hw(), 2);

    let consumer = Reader::Consumer(Isolation::ReadUncommitted);
    let list = |epoch, reader, timestamp| {
        node.rm
            .offset_for_timestamp(&node.info, 0, epoch, reader, timestamp)
            .map(|o| o.map(|o| o.offset))
    };
    assert_eq!(list(8, Reader::Replica(3), -1), Ok(Some(5)), "the log end");
    assert_eq!(list(8, consumer, -1), Ok(Some(2)), "the HW");
    assert_eq!(list(8, consumer, NOW + 1), Ok(None), "beyond the HW");

    // Follower at 9, leader again at 10: the HW (2) is below the epoch's start (5).
    let img = change(&img, |r| r.leader = 3);
    node.reconcile(&img);
    node.reconcile(&change(&img, |r| r.leader = 1));
    assert_eq!(registration(&node).1, 10);
    assert_eq!(list(10, consumer, -1), Err(ErrorCode::OffsetNotAvailable));
    assert_eq!(
        list(10, Reader::Replica(3), -1),
        Ok(Some(5)),
        "not a client"
    );
    assert_eq!(list(10, consumer, -2), Ok(Some(0)), "earliest");
}
