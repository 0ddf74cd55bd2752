//! The active controller core: proposals validated against the pending image, answers only
//! once committed, NOT_CONTROLLER for every waiter on resignation, nothing uncommitted in the
//! committed image.

use std::collections::BTreeMap;

use uuid::Uuid;

use super::*;

const CLUSTER: &str = "MkU3OEVBNTcwNTJENDM2Qg";

fn create(name: &str, n: u8) -> Request {
    Request::CreateTopic {
        name: name.into(),
        topic_id: Uuid::from_bytes([n; 16]),
        partitions: 1,
        replication_factor: 1,
        assignments: Vec::new(),
        configs: BTreeMap::new(),
    }
}

/// An active controller at `epoch` whose committed image holds broker 1, registered and
/// unfenced through its own register + heartbeat proposals (committed).
fn with_broker(epoch: i32) -> ActiveController {
    let mut a = ActiveController::new(1, epoch, CLUSTER, MetadataImage::default(), 0, 0, 9000);
    let register = Request::RegisterBroker {
        cluster_id: CLUSTER.into(),
        broker_id: 1,
        incarnation_id: Uuid::from_bytes([7; 16]),
        endpoints: Vec::new(),
        rack: None,
    };
    let (base, records) = proposal(a.submit(100, &register, 0, 0));
    assert_eq!(a.on_committed(base, &records).unwrap().len(), 1);
    let epoch_of_broker = a.committed().broker(1).unwrap().epoch;
    let hb = Heartbeat {
        broker_id: 1,
        broker_epoch: epoch_of_broker,
        current_metadata_offset: a.committed_end(),
        want_fence: false,
        want_shut_down: false,
    };
    let (step, reply) = a.heartbeat(101, &hb, 1).unwrap();
    assert!(reply.is_caught_up && !reply.is_fenced, "{reply:?}");
    let (base, records) = proposal(step);
    assert_eq!(a.on_committed(base, &records).unwrap().len(), 1);
    assert!(!a.committed().broker(1).unwrap().fenced);
    a
}

fn proposal(s: Submitted) -> (i64, Vec<Record>) {
    match s {
        Submitted::Propose {
            base_offset,
            records,
        } => (base_offset, records),
        other => panic!("expected a proposal, got {other:?}"),
    }
}

#[test]
fn proposals_answer_on_commit_and_validate_against_pending() {
    let mut a = with_broker(3);
    let start = a.committed_end();
    let (base1, r1) = proposal(a.submit(1, &create("a", 1), 0, 0));
    assert_eq!(base1, start);
    // The same name again, before the first commits: refused against the pending image.
    match a.submit(2, &create("a", 2), 0, 0) {
        Submitted::Answer(Err(MetadataError::TopicAlreadyExists(t))) => assert_eq!(t, "a"),
        other => panic!("{other:?}"),
    }
    let (base2, r2) = proposal(a.submit(3, &create("b", 3), 0, 0));
    assert_eq!(base2, base1 + r1.len() as i64);
    // A no-op waits behind the proposals (its answer describes the pending image).
    let same = Request::SetTopicConfigs {
        name: "a".into(),
        configs: BTreeMap::new(),
    };
    assert!(matches!(a.submit(4, &same, 0, 0), Submitted::Wait));
    assert!(a.pending().topics.contains_key("b"));
    assert!(a.committed().topics.is_empty());
    assert_eq!(a.waiting(), 3);

    let answered = a.on_committed(base1, &r1).unwrap();
    assert_eq!(answered.len(), 1);
    assert_eq!(answered[0].0, 1);
    assert!(matches!(&answered[0].1, Response::Topic(t) if t.name == "a"));
    assert!(a.committed().topics.contains_key("a") && !a.committed().topics.contains_key("b"));
    let answered = a.on_committed(base2, &r2).unwrap();
    let tokens: Vec<Token> = answered.iter().map(|(t, _)| *t).collect();
    assert_eq!(tokens, [3, 4]);
    assert_eq!(a.committed(), a.pending());
    assert_eq!(a.committed_end(), a.pending_end());
    // Nothing pending: a no-op answers at once.
    assert!(matches!(
        a.submit(5, &same, 0, 0),
        Submitted::Answer(Ok(Response::Done))
    ));
}

#[test]
fn resigning_refuses_every_waiter_and_keeps_only_the_committed_image() {
    let mut a = with_broker(1);
    let start = a.committed_end();
    let (b1, r1) = proposal(a.submit(1, &create("kept", 1), 0, 0));
    let _ = proposal(a.submit(2, &create("lost", 2), 0, 0));
    assert_eq!(a.on_committed(b1, &r1).unwrap().len(), 1);
    let (refused, image, end) = a.resign();
    assert_eq!(refused.len(), 1);
    assert_eq!(refused[0].0, 2);
    assert!(matches!(refused[0].1, MetadataError::NotController));
    assert_eq!(
        refused[0].1.error_code(),
        skiff_types::ErrorCode::NotController
    );
    assert!(image.topics.contains_key("kept") && !image.topics.contains_key("lost"));
    assert_eq!(end, start + r1.len() as i64);
}

#[test]
fn a_commit_out_of_order_or_past_the_proposals_is_refused_and_changes_nothing() {
    let mut a = with_broker(1);
    let start = a.committed_end();
    let (b1, r1) = proposal(a.submit(1, &create("a", 1), 0, 0));
    assert!(a.on_committed(b1 + 1, &r1).is_err());
    let mut longer = r1.clone();
    longer.extend(r1.iter().cloned());
    assert!(a.on_committed(b1, &longer).is_err());
    assert!(a.committed().topics.is_empty());
    assert_eq!((a.committed_end(), a.waiting()), (start, 1));
    assert_eq!(a.on_committed(b1, &r1).unwrap().len(), 1);
}
