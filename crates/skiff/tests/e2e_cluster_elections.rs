//! Leader elections beyond fencing (issue 17 item 5), as real processes:
//! - ElectLeaders PREFERRED through a node that is not the active controller (forwarded):
//!   after a kill -9 of the leader, its restart and its return to the ISR, leadership moves
//!   back to the preferred replica (Metadata shows it, a produce to it works); a second call
//!   answers ELECTION_NOT_NEEDED, as do UNCLEAN and v0, and a null partition list answers no
//!   partition;
//! - automatic balancing (`leader.imbalance.check.interval.seconds=1`): the leader returns to
//!   the preferred replica by itself;
//! - unclean elections (RF=2 on a controller-only voter and two brokers): kill one replica,
//!   then the other (now the whole ISR), restart only the first: it leads the topic that
//!   allows unclean elections (ISR = itself, RECOVERING, writable); the other topic stays
//!   offline; when the other replica returns, both topics are whole again;
//! - one node (no quorum): every election is not needed; unknown partitions and election
//!   types as in a cluster.
//!
//! Every wait polls with a deadline; per-phase timings are printed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use skiff_protocol::{
    ElectLeadersRequest, ElectLeadersRequestTopicPartitions, ElectLeadersResponse, ResponseBody,
};
use skiff_testkit::client::create_topics_request;
use skiff_testkit::cluster::{Cluster, batch};
use skiff_testkit::{Conn, wait_until};

const TOPIC: &str = "elect";
const ELECTION_NOT_NEEDED: i16 = 84;

/// (leader, replicas in order, ISR sorted) of `topic`-0 in node `i`'s Metadata (leader -1
/// and nothing else while the node does not list it).
fn registration(c: &Cluster, i: usize, topic: &str) -> (i32, Vec<i32>, Vec<i32>) {
    let m = c.metadata(i);
    let Some(p) = m
        .topics
        .iter()
        .find(|t| t.name.as_deref() == Some(topic))
        .and_then(|t| t.partitions.first())
    else {
        return (-1, Vec::new(), Vec::new());
    };
    let mut isr = p.isr_nodes.clone();
    isr.sort_unstable();
    (p.leader_id, p.replica_nodes.clone(), isr)
}

/// ElectLeaders at `version` to node `i`: `partitions` of [`TOPIC`] (`None` = every
/// partition).
fn elect(
    c: &Cluster,
    i: usize,
    version: i16,
    kind: i8,
    partitions: Option<Vec<i32>>,
) -> ElectLeadersResponse {
    let req = ElectLeadersRequest {
        election_type: kind,
        topic_partitions: partitions.map(|ps| {
            vec![ElectLeadersRequestTopicPartitions {
                topic: TOPIC.into(),
                partitions: ps,
            }]
        }),
        timeout_ms: 30_000,
    };
    match Conn::open(c.ports[i].0).call(version, req) {
        ResponseBody::ElectLeaders(r) => r,
        other => panic!("ElectLeaders answered {other:?}"),
    }
}

/// The code answered for [`TOPIC`]-0.
fn code_of(r: &ElectLeadersResponse) -> i16 {
    assert_eq!(r.error_code, 0, "{r:?}");
    assert_eq!(r.replica_election_results.len(), 1, "{r:?}");
    let t = &r.replica_election_results[0];
    assert_eq!(
        (t.topic.as_str(), t.partition_result.len()),
        (TOPIC, 1),
        "{r:?}"
    );
    t.partition_result[0].error_code
}

/// Produces to node `i` until it accepts (its image may lag the commit): the time it took.
fn produce_until_ok(c: &Cluster, i: usize, topic: &str, value: &str) -> Duration {
    let t = Instant::now();
    wait_until(
        &format!("node {} taking a produce", i + 1),
        Duration::from_secs(15),
        || {
            let (code, _) = Conn::open(c.ports[i].0).produce(topic, 0, batch(value));
            (code == 0).then_some(())
        },
    );
    t.elapsed()
}

/// Starts 3 combined nodes with `extra`, creates [`TOPIC`] (RF=3), writes to it; the
/// preferred replica (first in the list, the leader) as a 0-based node index and its id.
fn rf3_cluster(extra: &[(&str, &str)]) -> (Cluster, usize, i32) {
    let t = Instant::now();
    let mut keys = vec![("replica.fetch.backoff.ms", "100")];
    keys.extend_from_slice(extra);
    let c = Cluster::start(3, &keys);
    c.wait_brokers(&[0, 1, 2], &[1, 2, 3], Duration::from_secs(30));
    let mut req = create_topics_request(TOPIC, 1, &[]);
    req.topics[0].replication_factor = 3;
    let ResponseBody::CreateTopics(r) = Conn::open(c.ports[0].0).call(7, req) else {
        panic!("not a CreateTopics response")
    };
    assert_eq!(r.topics[0].error_code, 0, "{:?}", r.topics[0].error_message);
    let (leader, replicas, isr) =
        wait_until("the topic with a leader", Duration::from_secs(15), || {
            let r = registration(&c, 0, TOPIC);
            (r.0 > 0).then_some(r)
        });
    assert_eq!((leader, isr), (replicas[0], vec![1, 2, 3]));
    let p = (leader - 1) as usize;
    produce_until_ok(&c, p, TOPIC, "first");
    eprintln!(
        "phase start + RF=3 topic (preferred leader {leader}): {:?}",
        t.elapsed()
    );
    (c, p, leader)
}

/// kill -9 of the preferred leader, a new leader, its restart, back in the ISR.
fn fail_over_and_back(c: &mut Cluster, p: usize, preferred: i32) -> usize {
    let t = Instant::now();
    c.nodes[p].kill9();
    let other = (p + 1) % 3;
    let (new_leader, _, _) = wait_until("a new leader", Duration::from_secs(15), || {
        let r = registration(c, other, TOPIC);
        (r.0 > 0 && r.0 != preferred).then_some(r)
    });
    produce_until_ok(c, (new_leader - 1) as usize, TOPIC, "after failover");
    eprintln!(
        "phase kill -9 {preferred} -> leader {new_leader}: {:?}",
        t.elapsed()
    );
    let t = Instant::now();
    c.nodes[p].restart();
    wait_until(
        "the old leader back in the ISR",
        Duration::from_secs(30),
        || {
            let (_, _, isr) = registration(c, other, TOPIC);
            (isr == vec![1, 2, 3]).then_some(())
        },
    );
    eprintln!(
        "phase restart {preferred}, back in the ISR: {:?}",
        t.elapsed()
    );
    other
}

#[test]
fn e2e_cluster_elections_preferred_through_a_forwarding_node() {
    let t0 = Instant::now();
    let (mut c, p, preferred) = rf3_cluster(&[]);
    let other = fail_over_and_back(&mut c, p, preferred);
    let (leader, _, _) = registration(&c, other, TOPIC);
    assert_ne!(leader, preferred, "no automatic balancing within 300 s");

    // ElectLeaders PREFERRED through a node that is not the active controller.
    let t = Instant::now();
    let controller = c.metadata(other).controller_id;
    let via = (0..3).find(|i| (*i as i32 + 1) != controller).unwrap();
    let r = elect(&c, via, 2, 0, Some(vec![0]));
    assert_eq!(code_of(&r), 0, "{r:?}");
    assert_eq!(
        r.replica_election_results[0].partition_result[0].error_message,
        None
    );
    for i in 0..3 {
        wait_until(
            &format!("node {} showing the preferred leader", i + 1),
            Duration::from_secs(10),
            || (registration(&c, i, TOPIC).0 == preferred).then_some(()),
        );
    }
    let took = produce_until_ok(&c, p, TOPIC, "on the preferred leader again");
    eprintln!(
        "phase ElectLeaders PREFERRED via node {} (controller {controller}), produce after {took:?}: {:?}",
        via + 1,
        t.elapsed()
    );

    // Nothing left to do: ELECTION_NOT_NEEDED (PREFERRED, UNCLEAN, v0); a null list answers
    // the topic with no partition.
    let t = Instant::now();
    for (version, kind) in [(2, 0), (1, 1), (0, 0)] {
        for i in 0..3 {
            let r = elect(&c, i, version, kind, Some(vec![0]));
            if version == 0 {
                let t = &r.replica_election_results[0];
                assert_eq!(
                    t.partition_result[0].error_code, ELECTION_NOT_NEEDED,
                    "{r:?}"
                );
            } else {
                assert_eq!(
                    code_of(&r),
                    ELECTION_NOT_NEEDED,
                    "v{version} type {kind}: {r:?}"
                );
            }
        }
    }
    let all = elect(&c, via, 2, 0, None);
    assert_eq!(all.error_code, 0, "{all:?}");
    assert!(
        all.replica_election_results
            .iter()
            .any(|t| t.topic == TOPIC)
            && all
                .replica_election_results
                .iter()
                .all(|t| t.partition_result.is_empty()),
        "{all:?}"
    );
    // An unknown partition, and an unknown election type (the whole request).
    let r = elect(&c, via, 2, 0, Some(vec![5]));
    assert_eq!(code_of(&r), 3, "{r:?}");
    let r = elect(&c, via, 2, 2, Some(vec![0]));
    assert_eq!(r.error_code, 42, "{r:?}");
    assert_eq!(
        r.replica_election_results[0].partition_result[0].error_code,
        42
    );
    eprintln!("phase second calls: {:?}", t.elapsed());

    for n in &mut c.nodes {
        assert!(n.sigterm().success());
    }
    eprintln!("total: {:?}", t0.elapsed());
}

#[test]
fn e2e_cluster_elections_automatic_rebalance() {
    let t0 = Instant::now();
    let (mut c, p, preferred) = rf3_cluster(&[("leader.imbalance.check.interval.seconds", "1")]);
    let other = fail_over_and_back(&mut c, p, preferred);
    let t = Instant::now();
    wait_until(
        "the preferred leader back by itself",
        Duration::from_secs(15),
        || (registration(&c, other, TOPIC).0 == preferred).then_some(()),
    );
    let took = produce_until_ok(&c, p, TOPIC, "rebalanced");
    eprintln!(
        "phase automatic rebalance, produce after {took:?}: {:?}",
        t.elapsed()
    );
    for n in &mut c.nodes {
        assert!(n.sigterm().success());
    }
    eprintln!("total: {:?}", t0.elapsed());
}

#[test]
fn e2e_cluster_elections_unclean_only_where_enabled() {
    const ON: &str = "unclean-on";
    const OFF: &str = "unclean-off";
    let t0 = Instant::now();
    // Node 1 a controller-only voter (it answers Metadata on its CONTROLLER port: the topics,
    // no broker), brokers 2 and 3: killing both brokers keeps the quorum.
    let mut c = Cluster::start_roles(
        &["controller", "broker", "broker"],
        &[("replica.fetch.backoff.ms", "100")],
    );
    c.wait_brokers(&[1, 2], &[2, 3], Duration::from_secs(30));
    for (name, configs) in [
        (ON, &[("unclean.leader.election.enable", "true")][..]),
        (OFF, &[]),
    ] {
        let mut req = create_topics_request(name, 1, configs);
        req.topics[0].replication_factor = 2;
        let ResponseBody::CreateTopics(r) = Conn::open(c.ports[1].0).call(7, req) else {
            panic!("not a CreateTopics response")
        };
        assert_eq!(
            r.topics[0].error_code, 0,
            "{name}: {:?}",
            r.topics[0].error_message
        );
        let leader = wait_until(
            &format!("{name} with a leader, ISR [2, 3]"),
            Duration::from_secs(15),
            || {
                let (leader, _, isr) = registration(&c, 0, name);
                (leader > 0 && isr == vec![2, 3]).then_some(leader)
            },
        );
        produce_until_ok(&c, (leader - 1) as usize, name, "both replicas");
    }
    eprintln!("phase start + two RF=2 topics: {:?}", t0.elapsed());

    // Node 3 dies: fenced, it leaves both ISRs (it may have led one: 2 takes over, cleanly).
    // Whichever replica dies first, the one that dies second is then the whole ISR.
    let t = Instant::now();
    c.nodes[2].kill9();
    for name in [ON, OFF] {
        wait_until(&format!("{name} ISR [2]"), Duration::from_secs(15), || {
            let (leader, _, isr) = registration(&c, 0, name);
            (leader == 2 && isr == vec![2]).then_some(())
        });
        produce_until_ok(&c, 1, name, "only on 2");
    }
    eprintln!("phase kill -9 node 3, ISR [2]: {:?}", t.elapsed());

    // Then node 2: both partitions offline, ISR [2] kept.
    let t = Instant::now();
    c.nodes[1].kill9();
    for name in [ON, OFF] {
        wait_until(&format!("{name} offline"), Duration::from_secs(15), || {
            let (leader, _, isr) = registration(&c, 0, name);
            (leader == -1 && isr == vec![2]).then_some(())
        });
    }
    eprintln!("phase kill -9 node 2, both offline: {:?}", t.elapsed());

    // Only node 3 returns, outside both ISRs: unfencing elects it uncleanly where allowed
    // (the same batch decides both topics, so OFF is final once ON has its leader).
    let t = Instant::now();
    c.nodes[2].restart();
    wait_until(
        "unclean-on led by 3, ISR [3]",
        Duration::from_secs(30),
        || {
            let (leader, _, isr) = registration(&c, 0, ON);
            (leader == 3 && isr == vec![3]).then_some(())
        },
    );
    let (leader, _, isr) = registration(&c, 0, OFF);
    assert_eq!((leader, isr), (-1, vec![2]), "unclean-off stays offline");
    let took = produce_until_ok(&c, 2, ON, "after the unclean election");
    let (code, _) = Conn::open(c.ports[2].0).produce(OFF, 0, batch("refused"));
    assert_ne!(code, 0, "a produce to the offline partition");
    eprintln!(
        "phase restart 3: unclean election where enabled, produce after {took:?}: {:?}",
        t.elapsed()
    );

    // Node 2 returns: the offline topic's ISR member leads it again (cleanly); on the other,
    // it follows 3 (dropping what 3 never had) and rejoins the ISR, which ends the recovery
    // (the leader's AlterPartition RECOVERED with the larger ISR).
    let t = Instant::now();
    c.nodes[1].restart();
    wait_until(
        "unclean-off led by 2 again",
        Duration::from_secs(30),
        || (registration(&c, 0, OFF).0 == 2).then_some(()),
    );
    wait_until(
        "unclean-on: 2 back in the ISR",
        Duration::from_secs(30),
        || {
            let (leader, _, isr) = registration(&c, 0, ON);
            (leader == 3 && isr == vec![2, 3]).then_some(())
        },
    );
    produce_until_ok(&c, 2, ON, "both replicas again");
    eprintln!("phase restart 2: both topics whole: {:?}", t.elapsed());

    for n in &mut c.nodes {
        assert!(n.sigterm().success());
    }
    eprintln!("total: {:?}", t0.elapsed());
}

/// One node (no quorum): every partition has one replica, the node is the controller, so
/// every election is not needed; unknown partitions and topics, an unknown election type,
/// and a null list (each topic, no partition) as in a cluster.
#[test]
fn e2e_cluster_elections_single_node() {
    let t0 = Instant::now();
    let b = skiff_testkit::Broker::builder()
        .binary(env!("CARGO_BIN_EXE_skiff"))
        .rust_log("warn")
        .start();
    let mut conn = Conn::open(b.port());
    conn.create_topic(TOPIC, 2, &[]);
    let call = |version: i16, kind: i8, topics: Option<Vec<(&str, Vec<i32>)>>| {
        let req = ElectLeadersRequest {
            election_type: kind,
            topic_partitions: topics.map(|ts| {
                ts.into_iter()
                    .map(|(t, ps)| ElectLeadersRequestTopicPartitions {
                        topic: t.into(),
                        partitions: ps,
                    })
                    .collect()
            }),
            timeout_ms: 30_000,
        };
        match Conn::open(b.port()).call(version, req) {
            ResponseBody::ElectLeaders(r) => r,
            other => panic!("ElectLeaders answered {other:?}"),
        }
    };
    let codes = |r: &ElectLeadersResponse| -> Vec<(String, Vec<(i32, i16)>)> {
        r.replica_election_results
            .iter()
            .map(|t| {
                let ps = t
                    .partition_result
                    .iter()
                    .map(|p| (p.partition_id, p.error_code))
                    .collect();
                (t.topic.clone(), ps)
            })
            .collect()
    };
    for kind in [0, 1] {
        let r = call(
            2,
            kind,
            Some(vec![(TOPIC, vec![0, 1, 7]), ("nope", vec![0])]),
        );
        assert_eq!(r.error_code, 0, "{r:?}");
        assert_eq!(
            codes(&r),
            vec![
                (TOPIC.to_string(), vec![(0, 84), (1, 84), (7, 3)]),
                ("nope".to_string(), vec![(0, 3)]),
            ],
            "type {kind}"
        );
        let r = call(2, kind, None);
        assert_eq!(codes(&r), vec![(TOPIC.to_string(), vec![])], "type {kind}");
    }
    let r = call(0, 0, Some(vec![(TOPIC, vec![0])]));
    assert_eq!(codes(&r), vec![(TOPIC.to_string(), vec![(0, 84)])]);
    let r = call(2, 5, Some(vec![(TOPIC, vec![0])]));
    assert_eq!(r.error_code, 42, "{r:?}");
    assert_eq!(codes(&r), vec![(TOPIC.to_string(), vec![(0, 42)])]);
    assert_eq!(
        r.replica_election_results[0].partition_result[0]
            .error_message
            .as_deref(),
        Some("Unknown election type 5")
    );
    let r = call(2, 0, Some(vec![]));
    assert_eq!((r.error_code, r.replica_election_results.len()), (0, 0));
    eprintln!("total: {:?}", t0.elapsed());
}
