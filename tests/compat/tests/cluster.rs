//! A three-node Skiff cluster (issue 16) through stock clients: confluent-kafka and
//! kafka-python (PyPI), each bootstrapped from one node, see all three brokers and the
//! controller; a topic created through one node has its partitions led by every node; each
//! client produces to every partition's leader and reads back what both produced; a consumer
//! group commits through the coordinator that leads the group's `__consumer_offsets`
//! partition, and every other node answers that group NOT_COORDINATOR.
//!
//! Issue 17: an RF=3 cluster keeps every acknowledged record of four idempotent acks=all
//! producers (confluent-kafka from PyPI and Debian, kafka-python, the `rdkafka` crate) exactly
//! once through leader kills (`cluster/failover.rs`); a consumer group's offsets survive the
//! coordinator's death.
//!
//! Scripts: `tests/compat/py/cluster.py`, and `produce_continuously` of `ck.py` and `kp.py`.
//! The cluster is the testkit's one multi-node harness (`skiff format` + `skiff serve` per
//! node, short timers). Budget: a multi-node scenario, 120 s (`.config/nextest.toml`); the
//! first test takes about 5 s here, the leader kills 20 to 40 s (2 or 3 kill rounds).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "cluster/failover.rs"]
mod failover;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use skiff_compat::{Python, python, read_batches};
use skiff_protocol::{
    FindCoordinatorRequest, MetadataRequest, OffsetFetchRequest, OffsetFetchRequestGroup,
    RequestBody, ResponseBody,
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

/// Issue 17: RF=3, min.insync.replicas=2, and one topic (one partition) per stock client:
/// confluent-kafka from PyPI and from Debian, kafka-python, and the `rdkafka` crate, all four
/// producing idempotently with acks=all at the same time while partition leaders are killed
/// (kill -9) one node at a time, each killed node restarted and back in every ISR before the
/// next kill, until every topic has lost its leader at least once under its producer. Then,
/// per client: every sent record was acknowledged and is stored exactly once (the new leader
/// has the producer state its followers replicated, so retried batches are duplicates), the
/// offsets are contiguous, and every acknowledged record is at its acknowledged offset; every
/// stored batch carries a producer id, and the three replicas store the same batches.
#[test]
fn cluster_idempotent_acks_all_producer_survives_leader_kills() {
    let t0 = Instant::now();
    let mut cluster = Cluster::start(3, &[("replica.fetch.backoff.ms", "100")]);
    cluster.wait_brokers(&[0, 1, 2], &[1, 2, 3], Duration::from_secs(30));
    let topic_of = |i: usize| format!("replicated-{i}");
    for i in 0..4 {
        let mut req = skiff_testkit::client::create_topics_request(
            &topic_of(i),
            1,
            &[("min.insync.replicas", "2")],
        );
        req.topics[0].replication_factor = 3;
        match Conn::open(cluster.ports[0].0).call(7, req) {
            ResponseBody::CreateTopics(r) => assert_eq!(r.topics[0].error_code, 0, "{r:?}"),
            other => panic!("CreateTopics answered {other:?}"),
        }
    }
    let in_sync = |cluster: &Cluster, ask: usize| {
        (0..4).all(|i| {
            let (l, isr) = leader_of(cluster, ask, &topic_of(i), 0);
            l > 0 && isr == 3
        })
    };
    wait_for("4 leaders, 3 in sync", Duration::from_secs(15), || {
        in_sync(&cluster, 0).then_some(())
    });
    phase(t0, "4 RF=3 topics, min.insync.replicas=2");

    let mut clients = failover::start_all(&cluster.bootstrap(), topic_of);
    // Every replica of every partition starts replicating (read from its own log files): a
    // follower that never fetches a partition holds acks=all until the leader drops it from
    // the ISR (replica.lag.time.max.ms, 30 s) and leaves it under-replicated after that.
    let until = Instant::now() + Duration::from_secs(15);
    loop {
        let empty: Vec<(&str, usize)> = clients
            .iter()
            .flat_map(|c| (0..3).map(move |i| (c, i)))
            .filter(|(c, i)| {
                // Not even created yet on that node counts as empty.
                let dir = cluster.nodes[*i].partition_dir(&c.topic, 0);
                !dir.is_dir() || read_batches(&dir).is_empty()
            })
            .map(|(c, i)| (c.name, i + 1))
            .collect();
        if empty.is_empty() {
            break;
        }
        assert!(
            Instant::now() < until,
            "nothing replicated within 15 s ((client, node) with an empty log): {empty:?}; leaders: {:?}",
            clients
                .iter()
                .map(|c| (c.name, leader_of(&cluster, 0, &c.topic, 0).0))
                .collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    phase(t0, "4 producers started; every replica has records");
    for c in &mut clients {
        c.wait_acked(100, Duration::from_secs(30));
    }
    phase(t0, "4 producers acknowledged");

    let mut not_yet: BTreeSet<String> = clients.iter().map(|c| c.topic.clone()).collect();
    // At least two kills, and until every topic has lost its leader (one topic more per
    // round at worst: at most 4 rounds).
    for round in 1.. {
        if not_yet.is_empty() && round > 2 {
            break;
        }
        assert!(round <= 4, "leaders never killed: {not_yet:?}");
        // Every node is up: kill the one leading most of the topics not yet failed over, or
        // else most topics (as all three nodes agree, so no stale answer names the wrong
        // victim).
        let leaders: Vec<(String, i32)> = wait_for(
            "all nodes agreeing on the leaders",
            Duration::from_secs(10),
            || {
                let by: Vec<Vec<i32>> = (0..3)
                    .map(|i| {
                        let of = |c: &failover::Client| leader_of(&cluster, i, &c.topic, 0).0;
                        clients.iter().map(of).collect()
                    })
                    .collect();
                (by.iter().all(|b| *b == by[0]) && by[0].iter().all(|l| *l > 0)).then(|| {
                    let topics = clients.iter().map(|c| c.topic.clone());
                    topics.zip(by[0].iter().copied()).collect()
                })
            },
        );
        let victim = (1..=3)
            .max_by_key(|n| {
                let led = leaders.iter().filter(|(_, l)| l == n);
                (
                    led.clone().filter(|(t, _)| not_yet.contains(t)).count(),
                    led.count(),
                )
            })
            .unwrap();
        let led: Vec<&String> = leaders
            .iter()
            .filter(|(_, l)| *l == victim)
            .map(|(t, _)| t)
            .collect();
        let v = (victim - 1) as usize;
        cluster.nodes[v].kill9();
        let ask = (v + 1) % 3;
        wait_for("new leaders", Duration::from_secs(20), || {
            led.iter()
                .all(|t| {
                    let (l, _) = leader_of(&cluster, ask, t, 0);
                    l > 0 && l != victim
                })
                .then_some(())
        });
        let names: Vec<&str> = clients
            .iter()
            .filter(|c| led.contains(&&c.topic))
            .map(|c| c.name)
            .collect();
        phase(
            t0,
            &format!("round {round}: node {victim} killed; new leaders for {names:?}"),
        );
        // Each producer acknowledges 200 records after the new leaders (after its own wait
        // begins); how long each took, in order.
        let took: Vec<String> = clients
            .iter_mut()
            .map(|c| {
                let t = Instant::now();
                c.wait_acked(200, Duration::from_secs(30));
                format!("{:.1}s", t.elapsed().as_secs_f64())
            })
            .collect();
        phase(
            t0,
            &format!("round {round}: every producer acknowledged 200 more ({took:?})"),
        );
        cluster.nodes[v].restart();
        wait_for(
            "the killed node back in every ISR",
            Duration::from_secs(30),
            || in_sync(&cluster, ask).then_some(()),
        );
        for t in led {
            not_yet.remove(t);
        }
        let acked: Vec<i64> = clients.iter().map(|c| c.acked).collect();
        phase(
            t0,
            &format!("round {round}: node {victim} back in sync (acked so far: {acked:?})"),
        );
    }
    for c in &mut clients {
        c.wait_acked(200, Duration::from_secs(30));
    }

    let outcomes: Vec<(&str, String, failover::Outcome)> = clients
        .into_iter()
        .map(|c| (c.name, c.topic.clone(), c.finish(Duration::from_secs(60))))
        .collect();
    let sent: Vec<i64> = outcomes.iter().map(|(_, _, o)| o.sent).collect();
    phase(t0, &format!("producers done: {sent:?} sent"));
    let topics: Vec<&str> = outcomes.iter().map(|(_, t, _)| t.as_str()).collect();
    // On a failed read-back: what each node says (asked with a short deadline, so a node that
    // stopped answering shows as such) and the tail of its log.
    let diagnose = || {
        let mut out = String::new();
        for i in 0..3 {
            let mut c = Conn::open(cluster.ports[i].0);
            let _ = c
                .client
                .stream()
                .set_read_timeout(Some(Duration::from_secs(3)));
            let request = MetadataRequest {
                topics: None,
                ..MetadataRequest::default()
            };
            let said = match c.client.call(12, RequestBody::from(request)) {
                Ok(ResponseBody::Metadata(m)) => {
                    let parts: Vec<String> = m
                        .topics
                        .iter()
                        .filter(|t| t.name.as_deref().is_some_and(|n| topics.contains(&n)))
                        .flat_map(|t| t.partitions.iter().map(move |p| (t.name.clone(), p)))
                        .map(|(n, p)| {
                            let (l, e, isr) = (p.leader_id, p.leader_epoch, &p.isr_nodes);
                            format!("{n:?} leader {l} epoch {e} isr {isr:?}")
                        })
                        .collect();
                    format!("{parts:?}")
                }
                Ok(other) => format!("Metadata answered {other:?}"),
                Err(e) => format!("no Metadata answer within 3 s: {e}"),
            };
            let logs = cluster.nodes[i].logs_tail(40);
            out += &format!("--- node {}: {said}\n{logs}\n", i + 1);
        }
        out
    };
    let stored = failover::read_all(&cluster.bootstrap(), &topics, diagnose);
    for (name, topic, out) in &outcomes {
        let got = stored.get(topic).map_or(&[][..], Vec::as_slice);
        failover::check_exactly_once(name, out, got);
    }
    phase(
        t0,
        "every client's acknowledged records read back once, at their offsets",
    );

    // Stored: every batch idempotent (a producer id and a sequence), and the three replicas
    // of each partition hold the same batches once the followers have caught up.
    for (name, topic, _) in &outcomes {
        let on = |i: usize| read_batches(&cluster.nodes[i].partition_dir(topic, 0));
        let batches = wait_for(
            &format!("the 3 replicas of {name}'s partition identical"),
            Duration::from_secs(15),
            || {
                let (a, b, c) = (on(0), on(1), on(2));
                (a == b && b == c).then_some(a)
            },
        );
        let plain: Vec<_> = batches
            .iter()
            .filter(|b| b.producer_id < 0 || b.base_sequence < 0)
            .take(5)
            .collect();
        assert!(plain.is_empty(), "{name}: non-idempotent batches {plain:?}");
    }
    phase(t0, "replicas identical, every batch idempotent");
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
