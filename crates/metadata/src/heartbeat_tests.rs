//! Table tests of the broker lifecycle: registration (cluster id, duplicate registration,
//! epochs), heartbeats (caught up / unfence, stale epochs, want-fence, want-shutdown,
//! controlled shutdown), session expiry order, and the leadership records of fencing and
//! unfencing, each checked against the image the records replay to.

use skiff_protocol::{
    BrokerRegistrationChangeRecord, PartitionChangeRecord, PartitionRecord, RegisterBrokerRecord,
    TopicRecord,
};
use skiff_types::ErrorCode;
use uuid::Uuid;

use crate::{
    BrokerHeartbeats, Ctx, Heartbeat, HeartbeatReply, MetadataImage, NO_LEADER, NO_LEADER_CHANGE,
    Record, Request, Response, handle, replay,
};

const A: Uuid = Uuid::from_u128(0xa);
const B: Uuid = Uuid::from_u128(0xb);

fn inc(id: i32) -> Uuid {
    Uuid::from_u128(0x100 + id as u128)
}

pub(crate) fn reg(id: i32, epoch: i64, fenced: bool) -> Record {
    Record::RegisterBroker(RegisterBrokerRecord {
        broker_id: id,
        incarnation_id: inc(id),
        broker_epoch: epoch,
        fenced,
        rack: None,
        ..RegisterBrokerRecord::default()
    })
}

pub(crate) fn change(id: i32, epoch: i64, fenced: i8, cs: i8) -> Record {
    Record::BrokerRegistrationChange(BrokerRegistrationChangeRecord {
        broker_id: id,
        broker_epoch: epoch,
        fenced,
        in_controlled_shutdown: cs,
        ..BrokerRegistrationChangeRecord::default()
    })
}

fn part(topic: Uuid, p: i32, replicas: &[i32], isr: &[i32], leader: i32) -> Record {
    Record::Partition(PartitionRecord {
        partition_id: p,
        topic_id: topic,
        replicas: replicas.to_vec(),
        isr: isr.to_vec(),
        leader,
        leader_epoch: 0,
        partition_epoch: 0,
        ..PartitionRecord::default()
    })
}

fn pchange(topic: Uuid, p: i32, leader: i32, isr: Option<&[i32]>) -> Record {
    Record::PartitionChange(PartitionChangeRecord {
        partition_id: p,
        topic_id: topic,
        leader,
        isr: isr.map(<[i32]>::to_vec),
        ..PartitionChangeRecord::default()
    })
}

fn topics(parts: Vec<Record>) -> Vec<Record> {
    let mut out = vec![
        Record::Topic(TopicRecord {
            name: "a".into(),
            topic_id: A,
        }),
        Record::Topic(TopicRecord {
            name: "b".into(),
            topic_id: B,
        }),
    ];
    out.extend(parts);
    out
}

fn image(records: Vec<Record>) -> MetadataImage {
    replay(&MetadataImage::default(), &records)
}

fn ctx<'a>(hb: &'a BrokerHeartbeats, now_ms: i64) -> Ctx<'a> {
    Ctx {
        node_id: 1,
        now_ms,
        cluster_id: "c",
        next_offset: 100,
        placement_start: 0,
        heartbeats: hb,
    }
}

fn hb(id: i32, epoch: i64, offset: i64, want_fence: bool, want_shut_down: bool) -> Heartbeat {
    Heartbeat {
        broker_id: id,
        broker_epoch: epoch,
        current_metadata_offset: offset,
        want_fence,
        want_shut_down,
    }
}

fn register(cluster: &str, id: i32, incarnation: Uuid) -> Request {
    Request::RegisterBroker {
        cluster_id: cluster.into(),
        broker_id: id,
        incarnation_id: incarnation,
        endpoints: vec![],
        rack: None,
    }
}

/// Broker 1 unfenced (epoch 10), broker 3 fenced (epoch 30); tracker activated at 0 with a
/// 9 s session, broker 1 heard from at 5000 only in `fresh_tracker`.
#[test]
fn registration_table() {
    let img = image(vec![reg(1, 10, false), reg(3, 30, true)]);
    let idle = BrokerHeartbeats::new(0, 9000);
    let mut fresh = BrokerHeartbeats::new(0, 9000);
    fresh.registered(&img, 1, inc(1), 5000);
    type Want = Result<(Vec<Record>, i64), (ErrorCode, &'static str)>;
    let new_reg = |id: i32, i: Uuid| {
        Record::RegisterBroker(RegisterBrokerRecord {
            broker_id: id,
            incarnation_id: i,
            broker_epoch: 100,
            fenced: true,
            rack: None,
            ..RegisterBrokerRecord::default()
        })
    };
    let dup = (
        ErrorCode::DuplicateBrokerRegistration,
        "Another broker is registered with that broker id.",
    );
    let cases: Vec<(&str, &BrokerHeartbeats, i64, Request, Want)> = vec![
        (
            "another cluster id, checked before the duplicate rule",
            &idle,
            1000,
            register("x", 1, A),
            Err((
                ErrorCode::InconsistentClusterId,
                "Expected cluster ID c, but got cluster ID x",
            )),
        ),
        (
            "new incarnation, unfenced, session valid -> duplicate",
            &idle,
            1000,
            register("c", 1, A),
            Err(dup),
        ),
        (
            "session valid while last contact + timeout >= now",
            &idle,
            9000,
            register("c", 1, A),
            Err(dup),
        ),
        (
            "session expired: new incarnation, epoch = next offset, fenced",
            &idle,
            9001,
            register("c", 1, A),
            Ok((vec![new_reg(1, A)], 100)),
        ),
        (
            "a later contact keeps the session alive",
            &fresh,
            9001,
            register("c", 1, A),
            Err(dup),
        ),
        (
            "fenced broker: a new incarnation is accepted at once",
            &idle,
            1000,
            register("c", 3, A),
            Ok((vec![new_reg(3, A)], 100)),
        ),
        (
            "same incarnation amends: epoch and unfenced kept",
            &idle,
            1000,
            register("c", 1, inc(1)),
            Ok((vec![reg(1, 10, false)], 10)),
        ),
        (
            "same incarnation of a fenced broker stays fenced",
            &idle,
            1000,
            register("c", 3, inc(3)),
            Ok((vec![reg(3, 30, true)], 30)),
        ),
        (
            "unknown broker: first registration",
            &idle,
            1000,
            register("c", 2, B),
            Ok((vec![new_reg(2, B)], 100)),
        ),
    ];
    for (name, tracker, now, request, want) in cases {
        let got = handle(&img, &request, &ctx(tracker, now));
        match (got, want) {
            (Ok((records, response)), Ok((want_records, epoch))) => {
                assert_eq!(records, want_records, "{name}");
                assert_eq!(
                    response,
                    Response::Registered {
                        broker_epoch: epoch
                    }
                );
                let Request::RegisterBroker { broker_id, .. } = request else {
                    unreachable!()
                };
                let next = replay(&img, &records);
                assert_eq!(next.broker(broker_id).map(|b| b.epoch), Some(epoch));
            }
            (Err(e), Err((code, msg))) => {
                assert_eq!(
                    (e.error_code(), e.to_string().as_str()),
                    (code, msg),
                    "{name}"
                )
            }
            (got, want) => panic!("{name}: got {got:?}, want {want:?}"),
        }
    }
}

/// A new incarnation replacing an unfenced leader moves its leaderships first.
#[test]
fn new_incarnation_of_an_unfenced_leader_moves_its_leaderships() {
    let img = image(topics(vec![
        reg(1, 10, false),
        reg(2, 20, false),
        part(A, 0, &[1, 2], &[1, 2], 1),
        part(B, 0, &[1], &[1], 1),
    ]));
    let tracker = BrokerHeartbeats::new(0, 9000);
    let (records, _) = handle(&img, &register("c", 1, A), &ctx(&tracker, 10_000)).unwrap();
    assert_eq!(records.len(), 3, "{records:?}");
    assert_eq!(records[0], pchange(A, 0, 2, Some(&[2])));
    assert_eq!(records[1], pchange(B, 0, NO_LEADER, None));
    let next = replay(&img, &records);
    assert_eq!(next.partition("a", 0).map(|p| p.leader), Some(2));
    assert_eq!(
        next.partition("b", 0).map(|p| (p.leader, &p.isr)),
        Some((NO_LEADER, &vec![1]))
    );
    assert_eq!(
        next.broker(1).map(|b| (b.epoch, b.fenced)),
        Some((100, true))
    );
}

#[test]
fn heartbeat_errors_are_stale_broker_epoch_and_change_nothing() {
    let img = image(vec![reg(1, 10, true)]);
    let mut tracker = BrokerHeartbeats::new(0, 9000);
    let before = tracker.clone();
    let cases = [
        (
            hb(9, 10, 50, false, false),
            "Receive a heartbeat from broker 9 before registration",
        ),
        (
            hb(1, 11, 50, false, false),
            "Expected broker epoch 10, but got broker epoch 11",
        ),
    ];
    for (h, msg) in cases {
        let e = tracker.heartbeat(&img, &h, 1000, 100).unwrap_err();
        assert_eq!(
            (e.error_code(), e.to_string()),
            (ErrorCode::StaleBrokerEpoch, msg.into())
        );
        assert_eq!(tracker, before, "{msg}");
    }
}

fn reply(caught_up: bool, fenced: bool, shut: bool, cs: bool) -> HeartbeatReply {
    HeartbeatReply {
        is_caught_up: caught_up,
        is_fenced: fenced,
        should_shut_down: shut,
        in_controlled_shutdown: cs,
    }
}

/// One heartbeat from a known state. Fenced world: broker 1 fenced (epoch 10) with "b"-0
/// leaderless; unfenced world: broker 1 leads "a"-0 ([1,2]) and "b"-0 ([1]), broker 2 leads
/// nothing.
#[test]
fn heartbeat_state_table() {
    let fenced = image(topics(vec![
        reg(1, 10, true),
        reg(2, 20, false),
        part(A, 0, &[2, 1], &[2], 2),
        part(B, 0, &[1], &[1], NO_LEADER),
    ]));
    let unfenced = image(topics(vec![
        reg(1, 10, false),
        reg(2, 20, false),
        part(A, 0, &[1, 2], &[1, 2], 1),
        part(B, 0, &[1], &[1], 1),
    ]));
    let fence_1 = vec![
        pchange(A, 0, 2, Some(&[2])),
        pchange(B, 0, NO_LEADER, None),
        change(1, 10, 1, 0),
    ];
    type Case<'a> = (
        &'a str,
        &'a MetadataImage,
        Heartbeat,
        Vec<Record>,
        HeartbeatReply,
    );
    let cases: Vec<Case<'_>> = vec![
        (
            "fenced, behind its registration offset: stays fenced",
            &fenced,
            hb(1, 10, 9, false, false),
            vec![],
            reply(false, true, false, false),
        ),
        (
            "fenced, caught up: unfenced, its leaderless partition gets it back",
            &fenced,
            hb(1, 10, 10, false, false),
            vec![change(1, 10, -1, 0), pchange(B, 0, 1, None)],
            reply(true, false, false, false),
        ),
        (
            "fenced, caught up but wants fence: stays fenced",
            &fenced,
            hb(1, 10, 50, true, false),
            vec![],
            reply(true, true, false, false),
        ),
        (
            "fenced, wants shutdown: shut down now, no record",
            &fenced,
            hb(1, 10, 50, false, true),
            vec![],
            reply(true, true, true, false),
        ),
        (
            "unfenced: nothing changes",
            &unfenced,
            hb(1, 10, 50, false, false),
            vec![],
            reply(true, false, false, false),
        ),
        (
            "unfenced, wants fence: fenced, leaderships move first",
            &unfenced,
            hb(1, 10, 50, true, false),
            fence_1.clone(),
            reply(true, true, false, false),
        ),
        (
            "unfenced, wants fence and shutdown: shut down now",
            &unfenced,
            hb(1, 10, 50, true, true),
            fence_1,
            reply(true, true, true, false),
        ),
        (
            "unfenced, wants shutdown, leads nothing: shut down now",
            &unfenced,
            hb(2, 20, 50, false, true),
            vec![
                pchange(A, 0, NO_LEADER_CHANGE, Some(&[1])),
                change(2, 20, 1, 0),
            ],
            reply(true, true, true, false),
        ),
        (
            "unfenced, wants shutdown, leads: controlled shutdown, leaderships move",
            &unfenced,
            hb(1, 10, 50, false, true),
            vec![
                change(1, 10, 0, 1),
                pchange(A, 0, 2, Some(&[2])),
                pchange(B, 0, NO_LEADER, None),
            ],
            reply(true, false, false, true),
        ),
    ];
    for (name, img, h, want_records, want_reply) in cases {
        let mut tracker = BrokerHeartbeats::new(0, 9000);
        let (records, got) = tracker.heartbeat(img, &h, 1000, 100).unwrap();
        assert_eq!(records, want_records, "{name}");
        assert_eq!(got, want_reply, "{name}");
        assert_eq!(tracker.last_contact_ms(h.broker_id), 1000, "{name}");
        // Handle then replay: the image agrees with the reply; a fenced broker leads nothing.
        let next = replay(img, &records);
        let b = next.broker(h.broker_id).unwrap();
        assert_eq!(b.fenced, got.is_fenced, "{name}");
        assert_eq!(
            b.in_controlled_shutdown, got.in_controlled_shutdown,
            "{name}"
        );
        if b.fenced || b.in_controlled_shutdown {
            for t in ["a", "b"] {
                assert!(
                    next.partitions(t).all(|(_, p)| p.leader != h.broker_id),
                    "{name}"
                );
            }
        }
    }
}

/// Controlled shutdown ends once the broker leads nothing and every active broker has seen
/// the offset of the change that began it.
#[test]
fn controlled_shutdown_waits_for_the_active_brokers() {
    let mut img = image(topics(vec![
        reg(1, 10, false),
        reg(2, 20, false),
        part(A, 0, &[1, 2], &[1, 2], 1),
    ]));
    let mut tracker = BrokerHeartbeats::new(0, 9000);
    tracker
        .heartbeat(&img, &hb(2, 20, 40, false, false), 1000, 50)
        .unwrap();
    // The CS change lands at offsets 50 (registration change) and 51 (partition change).
    let (records, r) = tracker
        .heartbeat(&img, &hb(1, 10, 49, false, true), 1000, 50)
        .unwrap();
    assert_eq!(
        records,
        vec![change(1, 10, 0, 1), pchange(A, 0, 2, Some(&[2]))]
    );
    assert!(r.in_controlled_shutdown && !r.should_shut_down && !r.is_fenced);
    img = replay(&img, &records);
    // Broker 2 has seen 40 < 51: stay.
    let (records, r) = tracker
        .heartbeat(&img, &hb(1, 10, 52, false, true), 1100, 52)
        .unwrap();
    assert_eq!((records, r), (vec![], reply(true, false, false, true)));
    // Broker 2 sees 51: broker 1 may go, fenced.
    tracker
        .heartbeat(&img, &hb(2, 20, 51, false, false), 1200, 52)
        .unwrap();
    let (records, r) = tracker
        .heartbeat(&img, &hb(1, 10, 52, false, true), 1300, 52)
        .unwrap();
    assert_eq!(
        (records.clone(), r),
        (vec![change(1, 10, 1, 0)], reply(true, true, true, false))
    );
    img = replay(&img, &records);
    assert_eq!(img.broker(1).map(|b| b.fenced), Some(true));
}

/// Only unfenced brokers expire; the one heard from longest ago first (lowest id on a tie),
/// strictly after last contact + timeout; one per call.
#[test]
fn expiry_fences_the_oldest_session_first() {
    let mut img = image(topics(vec![
        reg(1, 10, false),
        reg(2, 20, false),
        reg(3, 30, false),
        reg(4, 40, true),
        reg(5, 50, false),
        part(A, 0, &[2, 1], &[2, 1], 2),
    ]));
    let mut t = BrokerHeartbeats::new(0, 9000);
    for (id, epoch, at) in [(1, 10, 5000), (2, 20, 3000), (3, 30, 4000), (5, 50, 4000)] {
        t.heartbeat(&img, &hb(id, epoch, 100, false, false), at, 100)
            .unwrap();
    }
    assert_eq!(t.expired(&img, 12_000), None, "3000 + 9000 is not < 12000");
    assert_eq!(t.expired(&img, 12_001), Some(2));
    let (id, records) = t.fence_expired(&img, 12_001).unwrap();
    assert_eq!(id, 2);
    assert_eq!(
        records,
        vec![pchange(A, 0, 1, Some(&[1])), change(2, 20, 1, 0)]
    );
    img = replay(&img, &records);
    assert_eq!(
        t.expired(&img, 12_001),
        None,
        "one per run; 3 is still valid"
    );
    let mut order = Vec::new();
    while let Some((id, records)) = t.fence_expired(&img, 20_000) {
        order.push(id);
        img = replay(&img, &records);
    }
    assert_eq!(
        order,
        vec![3, 5, 1],
        "tie at 4000: lowest id first; 4 (fenced) never"
    );
    assert!(img.brokers().all(|b| b.fenced));
    assert_eq!(
        img.partition("a", 0).map(|p| (p.leader, &p.isr)),
        Some((NO_LEADER, &vec![1]))
    );
}

/// Kafka 4.0's worked cases (no ELR): the ISR never empties; a broker returns as leader
/// only of leaderless partitions whose ISR still holds it; every leader change bumps the
/// leader epoch.
#[test]
fn fence_and_unfence_move_leadership() {
    let mut img = image(topics(vec![
        reg(1, 10, false),
        reg(2, 20, false),
        part(A, 0, &[1, 2], &[1, 2], 1),
    ]));
    let mut t = BrokerHeartbeats::new(0, 9000);
    // (heartbeat, records, (leader, ISR, leader epoch, partition epoch) after replay)
    type Step = (Heartbeat, Vec<Record>, (i32, Vec<i32>, i32, i32));
    let steps: Vec<Step> = vec![
        (
            hb(1, 10, 50, true, false),
            vec![pchange(A, 0, 2, Some(&[2])), change(1, 10, 1, 0)],
            (2, vec![2], 1, 1),
        ),
        (
            hb(2, 20, 50, true, false),
            vec![pchange(A, 0, NO_LEADER, None), change(2, 20, 1, 0)],
            (NO_LEADER, vec![2], 2, 2),
        ),
        (
            // 1 is not in the ISR: no leader for it.
            hb(1, 10, 50, false, false),
            vec![change(1, 10, -1, 0)],
            (NO_LEADER, vec![2], 2, 2),
        ),
        (
            hb(2, 20, 50, false, false),
            vec![change(2, 20, -1, 0), pchange(A, 0, 2, None)],
            (2, vec![2], 3, 3),
        ),
    ];
    for (i, (h, want, (leader, isr, leader_epoch, partition_epoch))) in
        steps.into_iter().enumerate()
    {
        let (records, _) = t.heartbeat(&img, &h, 1000, 100).unwrap();
        assert_eq!(records, want, "step {i}");
        img = replay(&img, &records);
        let p = img.partition("a", 0).unwrap();
        assert_eq!(
            (p.leader, &p.isr, p.leader_epoch, p.partition_epoch),
            (leader, &isr, leader_epoch, partition_epoch),
            "step {i}"
        );
        assert_eq!(p.replicas, vec![1, 2], "step {i}");
    }
}
