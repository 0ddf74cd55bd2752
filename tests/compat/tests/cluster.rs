//! A three-node Skiff cluster (issue 16) through stock clients: confluent-kafka and
//! kafka-python (PyPI), each bootstrapped from one node, see all three brokers and the
//! controller; a topic created through one node has its partitions led by every node; each
//! client produces to every partition's leader and reads back what both produced; a consumer
//! group commits through the coordinator that leads the group's `__consumer_offsets`
//! partition, and every other node answers that group NOT_COORDINATOR.
//!
//! Script: `tests/compat/py/cluster.py`. The cluster is the testkit's one multi-node harness
//! (`skiff format` + `skiff serve` per node, short timers). Budget: a multi-node scenario,
//! 120 s (`.config/nextest.toml`); it takes about 20 s here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use skiff_compat::{Python, python};
use skiff_protocol::{
    FindCoordinatorRequest, OffsetFetchRequest, OffsetFetchRequestGroup, ResponseBody,
};
use skiff_testkit::client::Conn;
use skiff_testkit::cluster::Cluster;

const NOT_COORDINATOR: i16 = 16;

fn phase(started: Instant, what: &str) {
    eprintln!("[{:>6.2}s] {what}", started.elapsed().as_secs_f64());
}

#[test]
fn cluster_three_nodes_through_confluent_kafka_and_kafka_python() {
    let t0 = Instant::now();
    let cluster = Cluster::start(3, &[]);
    cluster.wait_brokers(&[0, 1, 2], &[1, 2, 3], Duration::from_secs(30));
    phase(t0, "3 nodes registered");

    // Both clients, bootstrapped from any single node, learn all three brokers.
    let expected: Vec<Value> = cluster
        .ports
        .iter()
        .enumerate()
        .map(|(i, (port, _))| json!([i + 1, "127.0.0.1", port]))
        .collect();
    for (i, (port, _)) in cluster.ports.iter().enumerate() {
        let seen = python(
            Python::PyPi,
            "cluster.py",
            "brokers",
            &json!({"bootstrap": format!("127.0.0.1:{port}")}),
        );
        assert_eq!(
            seen["ck"],
            json!(expected),
            "confluent-kafka via node {}",
            i + 1
        );
        assert_eq!(
            seen["kp"],
            json!(expected),
            "kafka-python via node {}",
            i + 1
        );
        for who in ["ck_controller", "kp_controller"] {
            let id = seen[who].as_i64().unwrap();
            assert!((1..=3).contains(&id), "{who} via node {}: {id}", i + 1);
        }
    }
    phase(t0, "both clients see 3 brokers from every node");

    // Created through node 2; partitions spread; each client writes to each leader.
    let topic = "spread";
    let via = format!("127.0.0.1:{}", cluster.ports[1].0);
    let r = python(
        Python::PyPi,
        "cluster.py",
        "roundtrip",
        &json!({"bootstrap": via, "topic": topic, "partitions": 6}),
    );
    let leaders: BTreeSet<i64> = r["leaders"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_i64().unwrap())
        .collect();
    assert_eq!(
        leaders,
        BTreeSet::from([1, 2, 3]),
        "leaders: {}",
        r["leaders"]
    );
    assert_eq!(
        r["kp_leaders"], r["leaders"],
        "both clients agree on the leaders"
    );
    for p in 0..6 {
        let want = json!([format!("ck-{p}"), format!("kp-{p}")]);
        assert_eq!(
            r["ck"][p.to_string()],
            want,
            "confluent-kafka read partition {p}"
        );
        assert_eq!(
            r["kp"][p.to_string()],
            want,
            "kafka-python read partition {p}"
        );
    }
    phase(t0, "produce/consume to every partition's leader");

    // A consumer group commits through its coordinator (the offsets partition's leader).
    let group = "cluster-group";
    let g = python(
        Python::PyPi,
        "cluster.py",
        "group",
        &json!({"bootstrap": cluster.bootstrap(), "group": group, "topic": topic,
                "partitions": 6, "count": 12}),
    );
    assert_eq!(g["read"], 12, "{g}");
    for p in 0..6 {
        assert_eq!(
            g["committed"][p.to_string()],
            2,
            "committed offset of {p}: {g}"
        );
    }
    phase(t0, "consumer group committed");

    // Every node names the same coordinator; only that node answers for the group.
    let mut coordinators = BTreeSet::new();
    for (port, _) in &cluster.ports {
        let mut c = Conn::open(*port);
        match c.call(
            3,
            FindCoordinatorRequest {
                key: group.into(),
                key_type: 0,
                ..Default::default()
            },
        ) {
            ResponseBody::FindCoordinator(f) => {
                assert_eq!(f.error_code, 0, "{f:?}");
                coordinators.insert(f.node_id);
            }
            other => panic!("FindCoordinator answered {other:?}"),
        }
    }
    assert_eq!(coordinators.len(), 1, "one coordinator: {coordinators:?}");
    let coordinator = *coordinators.first().unwrap();
    for (i, (port, _)) in cluster.ports.iter().enumerate() {
        let mut c = Conn::open(*port);
        let code = match c.call(
            8,
            OffsetFetchRequest {
                groups: vec![OffsetFetchRequestGroup {
                    group_id: group.into(),
                    topics: None,
                    ..Default::default()
                }],
                ..Default::default()
            },
        ) {
            ResponseBody::OffsetFetch(f) => f.groups[0].error_code,
            other => panic!("OffsetFetch answered {other:?}"),
        };
        if i as i32 + 1 == coordinator {
            assert_eq!(code, 0, "the coordinator (node {coordinator}) answers");
        } else {
            assert_eq!(
                code,
                NOT_COORDINATOR,
                "node {} is not the coordinator",
                i + 1
            );
        }
    }
    phase(t0, "one coordinator; the others answer NOT_COORDINATOR");
}

/// (leader, ISR size) of partition `p` of `topic` in node `i`'s Metadata ((-1, 0) if unknown).
fn leader_of(cluster: &Cluster, i: usize, topic: &str, p: i32) -> (i32, usize) {
    let m = cluster.metadata(i);
    m.topics
        .iter()
        .find(|t| t.name.as_deref() == Some(topic))
        .and_then(|t| t.partitions.iter().find(|x| x.partition_index == p))
        .map_or((-1, 0), |x| (x.leader_id, x.isr_nodes.len()))
}

fn wait_for<T>(what: &str, within: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let until = Instant::now() + within;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < until, "never {what} within {within:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits until the background producer has acknowledged at least `at_least` records.
fn wait_acked(p: &mut skiff_compat::Background, at_least: i64) -> i64 {
    p.wait_for(Duration::from_secs(60), |line| {
        let v: Value = serde_json::from_str(line).ok()?;
        let acked = v["acked"].as_i64()?;
        (acked >= at_least).then_some(acked)
    })
}

/// Issue 17: RF=3, min.insync.replicas=2, an idempotent acks=all confluent-kafka producer
/// writing continuously while the partition's leader is killed (kill -9) twice, each time
/// restarted and back in the ISR before the next kill. Every acknowledged record is read back
/// exactly once at its acknowledged offset, every sent record is stored once (the new leader
/// has the producer state its followers replicated, so retried batches are duplicates), and
/// the offsets are contiguous.
#[test]
fn cluster_idempotent_acks_all_producer_survives_leader_kills() {
    let t0 = Instant::now();
    let mut cluster = Cluster::start(3, &[("replica.fetch.backoff.ms", "100")]);
    cluster.wait_brokers(&[0, 1, 2], &[1, 2, 3], Duration::from_secs(30));
    let topic = "replicated";
    let mut req =
        skiff_testkit::client::create_topics_request(topic, 1, &[("min.insync.replicas", "2")]);
    req.topics[0].replication_factor = 3;
    match Conn::open(cluster.ports[0].0).call(7, req) {
        ResponseBody::CreateTopics(r) => assert_eq!(r.topics[0].error_code, 0, "{r:?}"),
        other => panic!("CreateTopics answered {other:?}"),
    }
    wait_for("a leader and 3 in sync", Duration::from_secs(15), || {
        let (l, isr) = leader_of(&cluster, 0, topic, 0);
        (l > 0 && isr == 3).then_some(())
    });
    phase(t0, "RF=3 topic, min.insync.replicas=2");

    let mut producer = skiff_compat::python_background(
        Python::PyPi,
        "ck.py",
        "produce_continuously",
        &json!({
            "bootstrap": cluster.bootstrap(), "topic": topic, "partitions": 1,
            "config": {
                "enable.idempotence": true, "acks": "all", "message.timeout.ms": 60_000,
                "request.timeout.ms": 5_000, "retry.backoff.ms": 50,
                "reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 500,
                "topic.metadata.refresh.interval.ms": 1_000, "linger.ms": 5,
            },
        }),
    );
    let mut acked = wait_acked(&mut producer, 200);
    for round in 1..=2 {
        // Every node is up at the start of a round.
        let (leader, _) = leader_of(&cluster, 0, topic, 0);
        let l = (leader - 1) as usize;
        cluster.nodes[l].kill9();
        let other = (0..3).find(|i| *i != l).unwrap();
        wait_for("a new leader", Duration::from_secs(20), || {
            let (nl, _) = leader_of(&cluster, other, topic, 0);
            (nl > 0 && nl != leader).then_some(())
        });
        acked = wait_acked(&mut producer, acked + 200);
        cluster.nodes[l].restart();
        wait_for(
            "the old leader back in the ISR",
            Duration::from_secs(30),
            || (leader_of(&cluster, other, topic, 0).1 == 3).then_some(()),
        );
        phase(
            t0,
            &format!(
                "round {round}: leader {leader} killed, new leader, back in sync ({acked} acked)"
            ),
        );
    }
    acked = wait_acked(&mut producer, acked + 200);
    let result = skiff_compat::finish_json(producer, Duration::from_secs(60));
    assert_eq!(result["unflushed"], json!(0), "{}", result["unflushed"]);
    assert_eq!(result["failures"], json!([]), "deliveries failed");
    let sent = result["sent"].as_i64().unwrap();
    let acks = result["acks"].as_array().unwrap();
    assert_eq!(acks.len() as i64, sent, "every sent record acknowledged");
    phase(
        t0,
        &format!("producer done: {sent} sent, {acked}+ acknowledged during the kills"),
    );

    let r = python(
        Python::PyPi,
        "ck.py",
        "consume",
        &json!({"bootstrap": cluster.bootstrap(), "topic": topic, "assign": [[0, 0]], "timeout_s": 30}),
    );
    assert_eq!(r["eof"], json!(true), "{}", r["errors"]);
    let mut stored: std::collections::BTreeMap<i64, i64> = std::collections::BTreeMap::new();
    let mut copies: std::collections::BTreeMap<i64, usize> = std::collections::BTreeMap::new();
    for m in r["messages"].as_array().unwrap() {
        let v: i64 = m["value"].as_str().unwrap().parse().unwrap();
        stored.insert(m["offset"].as_i64().unwrap(), v);
        *copies.entry(v).or_default() += 1;
    }
    let dups: Vec<_> = copies.iter().filter(|(_, n)| **n > 1).collect();
    assert!(dups.is_empty(), "duplicated by retries: {dups:?}");
    assert_eq!(copies.len() as i64, sent, "every sent record stored once");
    let offsets: Vec<i64> = stored.keys().copied().collect();
    assert_eq!(offsets, (0..sent).collect::<Vec<_>>(), "contiguous offsets");
    for a in acks {
        let off = a[1].as_i64().unwrap();
        let v: i64 = a[2].as_str().unwrap().parse().unwrap();
        assert_eq!(stored.get(&off), Some(&v), "ack {a}");
    }
    phase(t0, "every acknowledged record read back once at its offset");
}

/// The node that coordinates `group`, asked of node `via` (`None` while it has none).
fn coordinator_of(cluster: &Cluster, via: usize, group: &str) -> Option<i32> {
    match Conn::open(cluster.ports[via].0).call(
        3,
        FindCoordinatorRequest {
            key: group.into(),
            key_type: 0,
            ..Default::default()
        },
    ) {
        ResponseBody::FindCoordinator(f) if f.error_code == 0 => Some(f.node_id),
        ResponseBody::FindCoordinator(_) => None,
        other => panic!("FindCoordinator answered {other:?}"),
    }
}

/// Issue 17 item 7: `offsets.topic.replication.factor=3`; a confluent-kafka consumer group
/// commits through its coordinator; the coordinator (leader of the group's
/// `__consumer_offsets` partition) is killed (kill -9); a follower of that partition is
/// elected, loads the group and answers the same committed offsets.
#[test]
fn cluster_group_offsets_survive_the_coordinator_failover() {
    let t0 = Instant::now();
    let mut cluster = Cluster::start(
        3,
        &[
            ("offsets.topic.replication.factor", "3"),
            ("replica.fetch.backoff.ms", "100"),
        ],
    );
    cluster.wait_brokers(&[0, 1, 2], &[1, 2, 3], Duration::from_secs(30));
    let (topic, group) = ("gf", "gf-group");
    python(
        Python::PyPi,
        "cluster.py",
        "roundtrip",
        &json!({"bootstrap": cluster.bootstrap(), "topic": topic, "partitions": 3}),
    );
    let g = python(
        Python::PyPi,
        "cluster.py",
        "group",
        &json!({"bootstrap": cluster.bootstrap(), "group": group, "topic": topic,
                "partitions": 3, "count": 6}),
    );
    for p in 0..3 {
        assert_eq!(g["committed"][p.to_string()], 2, "committed before: {g}");
    }
    let coordinator = coordinator_of(&cluster, 0, group).expect("a coordinator");
    phase(
        t0,
        &format!("group committed through coordinator {coordinator}"),
    );

    let c = (coordinator - 1) as usize;
    cluster.nodes[c].kill9();
    let other = (0..3).find(|i| *i != c).unwrap();
    let (new, offsets) = wait_for(
        "the committed offsets from a new coordinator",
        Duration::from_secs(30),
        || {
            let new = coordinator_of(&cluster, other, group).filter(|n| *n != coordinator)?;
            let ResponseBody::OffsetFetch(f) = Conn::open(cluster.ports[(new - 1) as usize].0)
                .call(
                    8,
                    OffsetFetchRequest {
                        groups: vec![OffsetFetchRequestGroup {
                            group_id: group.into(),
                            topics: None,
                            ..Default::default()
                        }],
                        ..Default::default()
                    },
                )
            else {
                return None;
            };
            let g = &f.groups[0];
            if g.error_code != 0 {
                return None;
            }
            let mut offsets: Vec<(i32, i64)> = g
                .topics
                .iter()
                .filter(|t| t.name == topic)
                .flat_map(|t| {
                    t.partitions
                        .iter()
                        .map(|p| (p.partition_index, p.committed_offset))
                })
                .collect();
            offsets.sort_unstable();
            Some((new, offsets))
        },
    );
    assert_eq!(
        offsets,
        vec![(0, 2), (1, 2), (2, 2)],
        "offsets after the failover"
    );
    phase(
        t0,
        &format!("coordinator {coordinator} killed; {new} answers the same offsets"),
    );
}
