//! `process.roles` other than combined (issue 16), as real processes: nodes 1 and 2 are
//! combined, node 3 is controller-only and node 4 broker-only (an observer of the quorum):
//! - the brokers are 1, 2 and 4 (a controller-only node never registers), the controller is
//!   one of the voters 1-3, and every broker agrees;
//! - a topic created through the broker-only node (forwarded to the active controller) has
//!   its partitions on brokers 1, 2 and 4 only; each takes a produce at its leader;
//! - InitProducerId through every broker: ids from AllocateProducerIds blocks, none twice;
//! - InitProducerId through every broker: ids from AllocateProducerIds blocks, none twice;
//! - kill -9 of the active controller: the broker-only node learns the new one and a
//!   CreateTopics through it commits within 15 s;
//! - the broker-only node restarted: it fetches the metadata log from the voters again,
//!   re-registers, leads its partitions again and still has its data.
//!
//! Every wait polls with a deadline; per-phase timings are printed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use skiff_testkit::Conn;
use skiff_testkit::cluster::{COMBINED, Cluster, batch, leaders};

/// The broker nodes (0-based) and their ids.
const BROKERS: [usize; 3] = [0, 1, 3];
const BROKER_IDS: [i32; 3] = [1, 2, 4];

fn produce_at_leader(c: &Cluster, topic: &str, p: i32, leader: i32, value: &str) {
    let port = c.ports[(leader - 1) as usize].0;
    let until = Instant::now() + Duration::from_secs(15);
    loop {
        let (code, _) = Conn::open(port).produce(topic, p, batch(value));
        if code == 0 {
            return;
        }
        assert!(
            Instant::now() < until,
            "produce {topic}-{p} at {leader}: {code}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn e2e_controller_only_and_broker_only_nodes() {
    let t0 = Instant::now();
    let mut c = Cluster::start_roles(&[COMBINED, COMBINED, "controller", "broker"], &[]);
    c.wait_brokers(&BROKERS, &BROKER_IDS, Duration::from_secs(30));
    for i in BROKERS {
        let id = c.metadata(i).controller_id;
        assert!(
            (1..=3).contains(&id),
            "node {} names controller {id}",
            i + 1
        );
    }
    eprintln!("phase start+register: {:?}", t0.elapsed());

    // Created through the broker-only node; partitions only on brokers.
    let t = Instant::now();
    c.create_via(3, "roles", 6, Duration::from_secs(15));
    let m = c.wait_metadata(3, Duration::from_secs(15), "roles with leaders", |m| {
        let l = leaders(m, "roles");
        l.len() == 6 && l.iter().all(|(_, leader)| *leader > 0)
    });
    let spread = leaders(&m, "roles");
    let mut on: Vec<i32> = spread.iter().map(|(_, l)| *l).collect();
    on.sort_unstable();
    on.dedup();
    assert_eq!(on, BROKER_IDS.to_vec(), "only brokers lead: {spread:?}");
    for (p, leader) in &spread {
        produce_at_leader(&c, "roles", *p, *leader, &format!("v{p}"));
    }
    eprintln!(
        "phase create via the broker-only node + produce: {:?}",
        t.elapsed()
    );

    // Producer ids: every broker hands out its own (a block from the controller through
    // AllocateProducerIds, or the controller's own); none is issued twice.
    let t = Instant::now();
    let mut ids = Vec::new();
    for i in BROKERS {
        for _ in 0..3 {
            ids.push(Conn::open(c.ports[i].0).init_producer_id());
        }
    }
    let mut unique = ids.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "producer ids: {ids:?}");
    assert!(ids.iter().all(|id| *id >= 0), "{ids:?}");
    eprintln!(
        "phase producer ids from every broker {ids:?}: {:?}",
        t.elapsed()
    );

    // kill -9 the active controller; the observer follows the new one.
    let t = Instant::now();
    let controller = c.metadata(3).controller_id;
    let dead = (controller - 1) as usize;
    c.nodes[dead].kill9();
    c.create_via(3, "after-failover", 1, Duration::from_secs(15));
    let now = c.metadata(3).controller_id;
    assert!(
        now != controller && (1..=3).contains(&now),
        "controller {controller} -> {now}"
    );
    eprintln!(
        "phase failover seen by the broker-only node (controller {controller} -> {now}): {:?}",
        t.elapsed()
    );
    c.nodes[dead].restart();
    c.wait_brokers(&BROKERS, &BROKER_IDS, Duration::from_secs(30));

    // The broker-only node restarts: metadata from the voters, its partitions and data back.
    let t = Instant::now();
    let mine: Vec<i32> = spread
        .iter()
        .filter(|(_, l)| *l == 4)
        .map(|(p, _)| *p)
        .collect();
    assert!(!mine.is_empty());
    assert!(c.nodes[3].sigterm().success());
    c.nodes[3].restart();
    c.wait_brokers(&BROKERS, &BROKER_IDS, Duration::from_secs(30));
    c.wait_metadata(
        3,
        Duration::from_secs(15),
        "its partitions led again",
        |m| {
            leaders(m, "roles").iter().all(|(_, l)| *l > 0)
                && leaders(m, "after-failover").len() == 1
        },
    );
    for p in &mine {
        let until = Instant::now() + Duration::from_secs(15);
        loop {
            let got = Conn::open(c.ports[3].0).fetch("roles", *p, 0, 1 << 20);
            if got.error_code == 0 && got.high_watermark == 1 {
                break;
            }
            assert!(
                Instant::now() < until,
                "roles-{p} on the restarted broker: {} hw {}",
                got.error_code,
                got.high_watermark
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    let views: Vec<_> = BROKERS
        .iter()
        .map(|i| leaders(&c.metadata(*i), "roles"))
        .collect();
    assert!(views.iter().all(|v| *v == views[0]), "{views:?}");
    eprintln!("phase broker-only restart: {:?}", t.elapsed());

    for n in &mut c.nodes {
        assert!(n.sigterm().success());
    }
    eprintln!("total: {:?}", t0.elapsed());
}
