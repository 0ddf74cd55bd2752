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
