//! Table tests of leader elections at the controller (`controller/election.rs`,
//! `controller/elect_leaders.rs`, the unclean paths of `leadership.rs`): every ElectLeaders
//! code with the state that picks it, the records written, and "handle then replay" giving the
//! new leader with the leader epoch (and partition epoch) bumped by one; where a topic's
//! `unclean.leader.election.enable` comes from; unclean elections on fence and unfence;
//! automatic balancing and the unclean sweep with their bounds.

use std::collections::BTreeMap;

use skiff_protocol::{ConfigRecord, PartitionChangeRecord, PartitionRecord, TopicRecord};
use skiff_types::ErrorCode;
use uuid::Uuid;

use crate::heartbeat_tests::{change, reg};
use crate::{
    BrokerHeartbeats, Ctx, ElectionConfig, ElectionRun, Heartbeat, MetadataError, MetadataImage,
    NO_LEADER, NO_LEADER_CHANGE, OfflineReplicas, PartitionElection, PartitionInfo, Record,
    Request, Response, TopicElection, handle, replay,
};

const T: Uuid = Uuid::from_u128(0x7);
const U: Uuid = Uuid::from_u128(0x8);
const NOT_NEEDED: &str = "Leader election not needed for topic partition.";
const NO_PREFERRED: &str = "The preferred leader was not available.";
const NO_ELIGIBLE: &str = "Eligible topic partition leaders are not available.";

fn part(topic: Uuid, p: i32, replicas: &[i32], isr: &[i32], leader: i32) -> Record {
    Record::Partition(PartitionRecord {
        partition_id: p,
        topic_id: topic,
        replicas: replicas.to_vec(),
        isr: isr.to_vec(),
        leader,
        leader_epoch: 5,
        partition_epoch: 7,
        ..PartitionRecord::default()
    })
}

fn config(resource_type: i8, name: &str, value: &str) -> Record {
    Record::Config(ConfigRecord {
        resource_type,
        resource_name: name.into(),
        name: "unclean.leader.election.enable".into(),
        value: Some(value.into()),
    })
}

/// Brokers 1, 2, 3 active (epochs 10, 20, 30), 4 fenced, 5 in controlled shutdown, 6 never
/// registered. Topic "t" (leader epoch 5, partition epoch 7 everywhere):
/// p0 [1,2,3] ISR [1,2,3] led by 1 (the preferred replica);
/// p1 [1,2,3] ISR [1,2,3] led by 2;
/// p2 [1,2,3] ISR [2,3] led by 2 (the preferred replica is out of the ISR);
/// p3 [4,2] ISR [4,2] led by 2 (the preferred replica is fenced);
/// p4 [5,1] ISR [5,1] led by 1 (the preferred replica is shutting down);
/// p5 [1,2] ISR [1] leaderless (a live ISR member);
/// p6 [4,2] ISR [4] leaderless (only a live replica outside the ISR);
/// p7 [4,6] ISR [4] leaderless (nobody live);
/// p8 [4,2,3] ISR [4,3] leaderless (a live ISR member that is not preferred).
fn image() -> MetadataImage {
    replay(
        &MetadataImage::default(),
        &[
            reg(1, 10, false),
            reg(2, 20, false),
            reg(3, 30, false),
            reg(4, 40, true),
            reg(5, 50, false),
            change(5, 50, 0, 1),
            Record::Topic(TopicRecord {
                name: "t".into(),
                topic_id: T,
            }),
            part(T, 0, &[1, 2, 3], &[1, 2, 3], 1),
            part(T, 1, &[1, 2, 3], &[1, 2, 3], 2),
            part(T, 2, &[1, 2, 3], &[2, 3], 2),
            part(T, 3, &[4, 2], &[4, 2], 2),
            part(T, 4, &[5, 1], &[5, 1], 1),
            part(T, 5, &[1, 2], &[1], NO_LEADER),
            part(T, 6, &[4, 2], &[4], NO_LEADER),
            part(T, 7, &[4, 6], &[4], NO_LEADER),
            part(T, 8, &[4, 2, 3], &[4, 3], NO_LEADER),
        ],
    )
}

fn ctx(hb: &BrokerHeartbeats) -> Ctx<'_> {
    Ctx {
        node_id: 1,
        now_ms: 1_700_000_000_000,
        cluster_id: "c",
        next_offset: 100,
        placement_start: 0,
        heartbeats: hb,
    }
}

fn elect(kind: i8, partitions: Option<Vec<(&str, Vec<i32>)>>) -> Request {
    Request::ElectLeaders {
        election_type: kind,
        partitions: partitions.map(|l| l.into_iter().map(|(t, p)| (t.into(), p)).collect()),
        offline: OfflineReplicas::new(),
    }
}

fn answer(partition: i32, error: ErrorCode, message: Option<&str>) -> PartitionElection {
    PartitionElection {
        partition,
        error,
        message: message.map(String::from),
    }
}

/// The outcome of an election: the code, and on success (leader, ISR, leader recovery state)
/// after replay.
type Want = (ErrorCode, Option<(i32, Vec<i32>, i8)>);

fn ok(leader: i32, isr: &[i32], recovery: i8) -> Want {
    (ErrorCode::None, Some((leader, isr.to_vec(), recovery)))
}

/// Elects one partition of "t" in `image` and checks the code, the message, the record and
/// the replayed registration (epochs bumped by one, replicas untouched).
fn check_one(name: &str, image: &MetadataImage, kind: i8, p: i32, want: &Want) {
    let hb = BrokerHeartbeats::new(0, 9000);
    let (records, response) = handle(image, &elect(kind, Some(vec![("t", vec![p])])), &ctx(&hb))
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let Response::ElectLeaders(topics) = response else {
        panic!("{name}: {response:?}")
    };
    let got = &topics[0].partitions[0];
    assert_eq!((topics.len(), topics[0].topic.as_str()), (1, "t"), "{name}");
    assert_eq!((got.partition, got.error), (p, want.0), "{name}: {got:?}");
    let message = match want.0 {
        ErrorCode::None => None,
        ErrorCode::ElectionNotNeeded => Some(NOT_NEEDED),
        ErrorCode::PreferredLeaderNotAvailable => Some(NO_PREFERRED),
        ErrorCode::EligibleLeadersNotAvailable => Some(NO_ELIGIBLE),
        other => panic!("{name}: unexpected {other:?}"),
    };
    assert_eq!(got.message.as_deref(), message, "{name}");
    let before = image.partition("t", p).unwrap();
    let after = replay(image, &records);
    let now = after.partition("t", p).unwrap();
    match &want.1 {
        None => assert!(records.is_empty(), "{name}: {records:?}"),
        Some((leader, isr, recovery)) => {
            assert_eq!(records.len(), 1, "{name}: {records:?}");
            let Record::PartitionChange(r) = &records[0] else {
                panic!("{name}: {records:?}")
            };
            assert_eq!(
                (r.topic_id, r.partition_id, r.leader),
                (T, p, *leader),
                "{name}"
            );
            assert_eq!(
                (now.leader, &now.isr, now.leader_recovery_state),
                (*leader, isr, *recovery),
                "{name}"
            );
            assert_eq!(now.leader_epoch, before.leader_epoch + 1, "{name}");
            assert_eq!(now.partition_epoch, before.partition_epoch + 1, "{name}");
            assert_eq!(now.replicas, before.replicas, "{name}");
        }
    }
}

#[test]
fn elect_leaders_table() {
    use ErrorCode as E;
    let cases: Vec<(&str, i8, i32, Want)> = vec![
        (
            "preferred already leads",
            0,
            0,
            (E::ElectionNotNeeded, None),
        ),
        (
            "preferred in the ISR, active: elected",
            0,
            1,
            ok(1, &[1, 2, 3], 0),
        ),
        (
            "preferred outside the ISR",
            0,
            2,
            (E::PreferredLeaderNotAvailable, None),
        ),
        (
            "preferred fenced",
            0,
            3,
            (E::PreferredLeaderNotAvailable, None),
        ),
        (
            "preferred in controlled shutdown",
            0,
            4,
            (E::PreferredLeaderNotAvailable, None),
        ),
        (
            "leaderless, preferred live in the ISR",
            0,
            5,
            ok(1, &[1], 0),
        ),
        (
            "leaderless, only a live non-ISR replica",
            0,
            6,
            (E::PreferredLeaderNotAvailable, None),
        ),
        // Kafka's PREFERRED falls back to another ISR member when there is no leader.
        (
            "leaderless, a live ISR member after the first",
            0,
            8,
            ok(3, &[4, 3], 0),
        ),
        (
            "unclean with a leader (preferred)",
            1,
            0,
            (E::ElectionNotNeeded, None),
        ),
        (
            "unclean with a leader (not preferred)",
            1,
            1,
            (E::ElectionNotNeeded, None),
        ),
        (
            "unclean: a live ISR member first (clean)",
            1,
            5,
            ok(1, &[1], 0),
        ),
        (
            "unclean: a live non-ISR replica, ISR = it, RECOVERING",
            1,
            6,
            ok(2, &[2], 1),
        ),
        (
            "unclean: nobody live",
            1,
            7,
            (E::EligibleLeadersNotAvailable, None),
        ),
        (
            "unclean: a live ISR member in replica order",
            1,
            8,
            ok(3, &[4, 3], 0),
        ),
    ];
    let img = image();
    for (name, kind, p, want) in &cases {
        check_one(name, &img, *kind, *p, want);
    }
}

#[test]
fn unclean_election_keeps_recovering_once_set() {
    // Already RECOVERING (an earlier unclean election): the record does not repeat it.
    let recovering = Record::PartitionChange(PartitionChangeRecord {
        partition_id: 6,
        topic_id: T,
        leader_recovery_state: 1,
        ..PartitionChangeRecord::default()
    });
    let img = replay(&image(), &[recovering]);
    let hb = BrokerHeartbeats::new(0, 9000);
    let (records, _) = handle(&img, &elect(1, Some(vec![("t", vec![6])])), &ctx(&hb)).unwrap();
    let Record::PartitionChange(r) = &records[0] else {
        panic!("{records:?}")
    };
    assert_eq!(
        (r.leader, r.isr.as_deref(), r.leader_recovery_state),
        (2, Some(&[2][..]), -1)
    );
}

#[test]
fn elect_leaders_request_shapes() {
    use ErrorCode as E;
    let img = image();
    let hb = BrokerHeartbeats::new(0, 9000);
    let run = |r: Request| handle(&img, &r, &ctx(&hb));

    // Unknown topic, unknown partitions, answered in request order beside an election.
    let (records, response) = run(elect(
        0,
        Some(vec![("nope", vec![0]), ("t", vec![9, -1, 1, 0])]),
    ))
    .unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(
        response,
        Response::ElectLeaders(vec![
            TopicElection {
                topic: "nope".into(),
                partitions: vec![answer(
                    0,
                    E::UnknownTopicOrPartition,
                    Some("No such topic as nope")
                )],
            },
            TopicElection {
                topic: "t".into(),
                partitions: vec![
                    answer(
                        9,
                        E::UnknownTopicOrPartition,
                        Some("No such partition as t-9")
                    ),
                    answer(
                        -1,
                        E::UnknownTopicOrPartition,
                        Some("No such partition as t--1")
                    ),
                    answer(1, E::None, None),
                    answer(0, E::ElectionNotNeeded, Some(NOT_NEEDED)),
                ],
            },
        ])
    );

    // A partition listed twice is elected once; the second entry sees the first's change.
    let (records, response) = run(elect(0, Some(vec![("t", vec![1]), ("t", vec![1])]))).unwrap();
    assert_eq!(records.len(), 1);
    let Response::ElectLeaders(topics) = response else {
        panic!()
    };
    assert_eq!(topics[1].partitions[0].error, E::ElectionNotNeeded);

    // An unknown election type fails the request; an empty list does nothing.
    match run(elect(2, Some(vec![("t", vec![1])]))) {
        Err(MetadataError::InvalidRequest(m)) => assert_eq!(m, "Unknown election type 2"),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        run(elect(0, Some(vec![]))).unwrap(),
        (vec![], Response::ElectLeaders(vec![]))
    );

    // Null = every partition: ELECTION_NOT_NEEDED left out, each topic still listed.
    let (records, response) = run(elect(0, None)).unwrap();
    let codes = |response: Response| match response {
        Response::ElectLeaders(topics) => topics
            .into_iter()
            .map(|t| {
                let ps: Vec<(i32, ErrorCode)> = t
                    .partitions
                    .iter()
                    .map(|p| (p.partition, p.error))
                    .collect();
                (t.topic, ps)
            })
            .collect::<Vec<_>>(),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        codes(response),
        vec![(
            "t".to_string(),
            vec![
                (1, E::None),
                (2, E::PreferredLeaderNotAvailable),
                (3, E::PreferredLeaderNotAvailable),
                (4, E::PreferredLeaderNotAvailable),
                (5, E::None),
                (6, E::PreferredLeaderNotAvailable),
                (7, E::PreferredLeaderNotAvailable),
                (8, E::None),
            ]
        )]
    );
    assert_eq!(records.len(), 3);
    let (records, response) = run(elect(1, None)).unwrap();
    assert_eq!(
        codes(response),
        vec![(
            "t".to_string(),
            vec![
                (5, E::None),
                (6, E::None),
                (7, E::EligibleLeadersNotAvailable),
                (8, E::None)
            ]
        )]
    );
    assert_eq!(records.len(), 3);
}

/// Replicas on an offline log dir may not lead, and a leader among them counts as no leader
/// (the single-node case: PREFERRED_LEADER_NOT_AVAILABLE / ELIGIBLE_LEADERS_NOT_AVAILABLE).
#[test]
fn offline_replicas_do_not_lead() {
    use ErrorCode as E;
    let img = replay(
        &image(),
        &[
            Record::Topic(TopicRecord {
                name: "s".into(),
                topic_id: U,
            }),
            part(U, 0, &[1], &[1], 1),
        ],
    );
    let hb = BrokerHeartbeats::new(0, 9000);
    let run = |kind: i8, topic: &str, p: i32, offline: &[(&str, i32, i32)]| {
        let request = Request::ElectLeaders {
            election_type: kind,
            partitions: Some(vec![(topic.into(), vec![p])]),
            offline: offline
                .iter()
                .map(|(t, p, b)| ((*t).to_string(), *p, *b))
                .collect(),
        };
        let (records, response) = handle(&img, &request, &ctx(&hb)).unwrap();
        let Response::ElectLeaders(topics) = response else {
            panic!()
        };
        (topics[0].partitions[0].error, records.len())
    };
    // (name, election type, topic, partition, offline replicas, (code, records))
    type Case<'a> = (
        &'a str,
        i8,
        &'a str,
        i32,
        &'a [(&'a str, i32, i32)],
        (ErrorCode, usize),
    );
    let cases: Vec<Case<'_>> = vec![
        (
            "single node, online, preferred",
            0,
            "s",
            0,
            &[],
            (E::ElectionNotNeeded, 0),
        ),
        (
            "single node, online, unclean",
            1,
            "s",
            0,
            &[],
            (E::ElectionNotNeeded, 0),
        ),
        (
            "single node, offline dir, preferred",
            0,
            "s",
            0,
            &[("s", 0, 1)],
            (E::PreferredLeaderNotAvailable, 0),
        ),
        (
            "single node, offline dir, unclean",
            1,
            "s",
            0,
            &[("s", 0, 1)],
            (E::EligibleLeadersNotAvailable, 0),
        ),
        (
            "preferred replica offline",
            0,
            "t",
            1,
            &[("t", 1, 1)],
            (E::PreferredLeaderNotAvailable, 0),
        ),
        (
            "another replica's offline dir is irrelevant",
            0,
            "t",
            1,
            &[("t", 1, 3)],
            (E::None, 1),
        ),
        (
            "offline leader: unclean elects the next ISR member",
            1,
            "t",
            1,
            &[("t", 1, 2)],
            (E::None, 1),
        ),
    ];
    for (name, kind, topic, p, offline, want) in cases {
        assert_eq!(run(kind, topic, p, offline), want, "{name}");
    }
}

/// Kafka's layers: topic override, the controller node's dynamic config, the cluster's
/// dynamic default, the controller's static config, false; only "true" (any case) is true.
#[test]
fn unclean_config_resolution_table() {
    let cfg = |node: Option<i32>, stat: bool| ElectionConfig {
        node_id: node,
        unclean_leader_election_enable: stat,
    };
    let cases: Vec<(&str, Vec<Record>, ElectionConfig, bool)> = vec![
        ("nothing set: false", vec![], cfg(Some(1), false), false),
        ("static true", vec![], cfg(Some(1), true), true),
        (
            "topic override beats static",
            vec![config(2, "t", "false")],
            cfg(Some(1), true),
            false,
        ),
        (
            "topic override TRUE (any case)",
            vec![config(2, "t", "TRUE")],
            cfg(Some(1), false),
            true,
        ),
        (
            "not a boolean is false",
            vec![config(2, "t", "yes")],
            cfg(Some(1), true),
            false,
        ),
        (
            "cluster default beats static",
            vec![config(4, "", "true")],
            cfg(Some(1), false),
            true,
        ),
        (
            "node layer beats the cluster default",
            vec![config(4, "", "true"), config(4, "1", "false")],
            cfg(Some(1), true),
            false,
        ),
        (
            "another node's layer does not apply",
            vec![config(4, "2", "true")],
            cfg(Some(1), false),
            false,
        ),
        (
            "topic beats every broker layer",
            vec![
                config(4, "", "false"),
                config(4, "1", "false"),
                config(2, "t", "true"),
            ],
            cfg(Some(1), false),
            true,
        ),
        (
            "no node id: its layer skipped",
            vec![config(4, "1", "true")],
            cfg(None, false),
            false,
        ),
    ];
    for (name, configs, cfg, want) in cases {
        let img = replay(&image(), &configs);
        let hb = BrokerHeartbeats::new(0, 9000).with_election_config(cfg);
        // The unclean sweep elects p6 (a live replica outside the ISR) only when allowed.
        let (records, response) =
            handle(&img, &Request::ElectUncleanLeaders { max: 100 }, &ctx(&hb)).unwrap();
        let elected = records.iter().any(
            |r| matches!(r, Record::PartitionChange(c) if c.partition_id == 6 && c.leader == 2),
        );
        assert_eq!(elected, want, "{name}: {records:?}");
        assert_eq!(
            response,
            Response::Elections(ElectionRun {
                elected: records.len(),
                more: false
            }),
            "{name}"
        );
    }
}

fn two_replicas(
    unclean: Option<&str>,
    isr: &[i32],
    leader: i32,
    fenced: (bool, bool),
) -> MetadataImage {
    let mut records = vec![
        reg(1, 10, fenced.0),
        reg(2, 20, fenced.1),
        Record::Topic(TopicRecord {
            name: "u".into(),
            topic_id: U,
        }),
        part(U, 0, &[1, 2], isr, leader),
    ];
    if let Some(v) = unclean {
        records.push(config(2, "u", v));
    }
    replay(&MetadataImage::default(), &records)
}

fn hb(id: i32, epoch: i64, want_fence: bool) -> Heartbeat {
    Heartbeat {
        broker_id: id,
        broker_epoch: epoch,
        current_metadata_offset: 1000,
        want_fence,
        want_shut_down: false,
    }
}

/// Fencing the last ISR member, and unfencing a replica outside the ISR of a leaderless
/// partition: an unclean election where the topic allows it, none otherwise.
#[test]
fn fence_and_unfence_elect_uncleanly_when_allowed() {
    // (name, image, heartbeat, static config, the partition after replay: leader, ISR, state)
    type Case = (
        &'static str,
        MetadataImage,
        Heartbeat,
        bool,
        (i32, Vec<i32>, i8),
    );
    let cases: Vec<Case> = vec![
        (
            "fence the lone ISR leader, unclean allowed: the other replica leads",
            two_replicas(Some("true"), &[1], 1, (false, false)),
            hb(1, 10, true),
            false,
            (2, vec![2], 1),
        ),
        (
            "fence the lone ISR leader, unclean off: offline, ISR kept",
            two_replicas(None, &[1], 1, (false, false)),
            hb(1, 10, true),
            false,
            (NO_LEADER, vec![1], 0),
        ),
        (
            "fence the lone ISR leader, static config true",
            two_replicas(None, &[1], 1, (false, false)),
            hb(1, 10, true),
            true,
            (2, vec![2], 1),
        ),
        (
            "unfence the old follower, unclean allowed: it leads",
            two_replicas(Some("true"), &[1], NO_LEADER, (true, true)),
            hb(2, 20, false),
            false,
            (2, vec![2], 1),
        ),
        (
            "unfence the old follower, unclean off: still offline",
            two_replicas(Some("false"), &[1], NO_LEADER, (true, true)),
            hb(2, 20, false),
            true,
            (NO_LEADER, vec![1], 0),
        ),
        (
            "unfence the ISR member: a clean election",
            two_replicas(Some("true"), &[1], NO_LEADER, (true, true)),
            hb(1, 10, false),
            false,
            (1, vec![1], 0),
        ),
    ];
    for (name, img, beat, stat, (leader, isr, state)) in cases {
        let cfg = ElectionConfig {
            node_id: Some(1),
            unclean_leader_election_enable: stat,
        };
        let mut tracker = BrokerHeartbeats::new(0, 9000).with_election_config(cfg);
        let (records, _) = tracker.heartbeat(&img, &beat, 1, 100).unwrap();
        let after = replay(&img, &records);
        let p: &PartitionInfo = after.partition("u", 0).unwrap();
        assert_eq!(
            (p.leader, &p.isr, p.leader_recovery_state),
            (leader, &isr, state),
            "{name}"
        );
        let before = img.partition("u", 0).unwrap();
        let bump = i32::from(leader != before.leader);
        assert_eq!(p.leader_epoch, before.leader_epoch + bump, "{name}");
    }
}

#[test]
fn balancing_elects_preferred_leaders_within_the_bound() {
    let img = image();
    let hb = BrokerHeartbeats::new(0, 9000);
    let (records, response) = handle(
        &img,
        &Request::BalancePartitionLeaders { max: 1000 },
        &ctx(&hb),
    )
    .unwrap();
    assert_eq!(
        response,
        Response::Elections(ElectionRun {
            elected: 3,
            more: false
        })
    );
    let after = replay(&img, &records);
    let leaders: BTreeMap<i32, i32> = after.partitions("t").map(|(p, i)| (p, i.leader)).collect();
    // p1 back to 1, leaderless p5 to 1, p8 to 3 (Kafka's PREFERRED fallback); others stay.
    let want: BTreeMap<i32, i32> = [
        (0, 1),
        (1, 1),
        (2, 2),
        (3, 2),
        (4, 1),
        (5, 1),
        (6, -1),
        (7, -1),
        (8, 3),
    ]
    .into();
    assert_eq!(leaders, want);
    for r in &records {
        let Record::PartitionChange(c) = r else {
            panic!("{r:?}")
        };
        assert_eq!((c.isr.as_ref(), c.leader_recovery_state), (None, -1));
        assert_ne!(c.leader, NO_LEADER_CHANGE);
    }
    // A second run finds nothing to do.
    let (again, _) = handle(
        &after,
        &Request::BalancePartitionLeaders { max: 1000 },
        &ctx(&hb),
    )
    .unwrap();
    assert!(again.is_empty(), "{again:?}");
    // The bound: one election, and "run again".
    let (one, response) = handle(
        &img,
        &Request::BalancePartitionLeaders { max: 1 },
        &ctx(&hb),
    )
    .unwrap();
    assert_eq!(one.len(), 1);
    assert_eq!(
        response,
        Response::Elections(ElectionRun {
            elected: 1,
            more: true
        })
    );
}

#[test]
fn unclean_sweep_elects_only_where_allowed_and_leaderless() {
    let img = replay(&image(), &[config(2, "t", "true")]);
    let hb = BrokerHeartbeats::new(0, 9000);
    let (records, _) =
        handle(&img, &Request::ElectUncleanLeaders { max: 1000 }, &ctx(&hb)).unwrap();
    let after = replay(&img, &records);
    let got: Vec<(i32, i32, Vec<i32>, i8)> = after
        .partitions("t")
        .filter(|(p, _)| [0, 5, 6, 7, 8].contains(p))
        .map(|(p, i)| (p, i.leader, i.isr.clone(), i.leader_recovery_state))
        .collect();
    assert_eq!(
        got,
        vec![
            (0, 1, vec![1, 2, 3], 0),
            (5, 1, vec![1], 0),
            (6, 2, vec![2], 1),
            (7, NO_LEADER, vec![4], 0),
            (8, 3, vec![4, 3], 0),
        ]
    );
    let (bounded, response) =
        handle(&img, &Request::ElectUncleanLeaders { max: 2 }, &ctx(&hb)).unwrap();
    assert_eq!(bounded.len(), 2);
    assert_eq!(
        response,
        Response::Elections(ElectionRun {
            elected: 2,
            more: true
        })
    );
}
