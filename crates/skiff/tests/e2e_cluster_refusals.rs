//! Bad input to a three-node cluster (issue 16), over TCP against real `skiff serve` processes:
//! - a BrokerRegistration from another cluster is refused with INCONSISTENT_CLUSTER_ID, one
//!   for a live broker's id with another incarnation with DUPLICATE_BROKER_REGISTRATION, and a
//!   controller listener that is not the active controller answers NOT_CONTROLLER;
//! - a fourth node whose `controller.quorum.voters` disagrees with the cluster's stops itself
//!   (exit 2, both lists named) when the voters refuse it, and the cluster stays up: no split
//!   brain and no healthy voter taken down;
//! - a voter restarted with a changed voter list refuses to start (exit 2) and rejoins once
//!   its list is restored.
//!
//! Every wait polls with a deadline; per-phase timings are printed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;
use std::time::{Duration, Instant};

use skiff_protocol::{BrokerRegistrationRequest, BrokerRegistrationRequestListener, ResponseBody};
use skiff_testkit::client::Conn;
use skiff_testkit::cluster::{CLUSTER_ID, Cluster, node_properties};
use skiff_testkit::process::{Broker, free_port, skiff_binary};

const NOT_CONTROLLER: i16 = 41;
const DUPLICATE_BROKER_REGISTRATION: i16 = 101;
const INCONSISTENT_CLUSTER_ID: i16 = 104;

fn register(port: u16, cluster_id: &str, broker_id: i32) -> i16 {
    let req = BrokerRegistrationRequest {
        broker_id,
        cluster_id: cluster_id.into(),
        incarnation_id: Default::default(),
        listeners: vec![BrokerRegistrationRequestListener {
            name: "PLAINTEXT".into(),
            host: "127.0.0.1".into(),
            port: 1,
            security_protocol: 0,
        }],
        ..BrokerRegistrationRequest::default()
    };
    match Conn::open(port).call(4, req) {
        ResponseBody::BrokerRegistration(r) => r.error_code,
        other => panic!("BrokerRegistration answered {other:?}"),
    }
}

#[test]
fn e2e_cluster_refuses_foreign_duplicate_and_misconfigured_nodes() {
    let t0 = Instant::now();
    let mut c = Cluster::start(3, &[]);
    c.wait_brokers(&[0, 1, 2], &[1, 2, 3], Duration::from_secs(30));
    eprintln!("phase start+register: {:?}", t0.elapsed());

    // Registrations the active controller must refuse.
    let t = Instant::now();
    let controller = c.metadata(0).controller_id;
    assert!((1..=3).contains(&controller), "controller {controller}");
    let cport = c.ports[(controller - 1) as usize].1;
    assert_eq!(
        register(cport, "AAAAAAAAAAAAAAAAAAAAAA", 7),
        INCONSISTENT_CLUSTER_ID,
        "another cluster's id"
    );
    let live = controller % 3 + 1;
    assert_eq!(
        register(cport, CLUSTER_ID, live),
        DUPLICATE_BROKER_REGISTRATION,
        "broker {live} is alive with another incarnation"
    );
    let other = (controller % 3) as usize;
    assert_eq!(
        register(c.ports[other].1, CLUSTER_ID, 7),
        NOT_CONTROLLER,
        "node {} is not the active controller",
        other + 1
    );
    // Nothing of it reached the image: still brokers 1-3, all alive.
    c.wait_brokers(&[0, 1, 2], &[1, 2, 3], Duration::from_secs(10));
    eprintln!("phase registrations refused: {:?}", t.elapsed());

    // A fourth node whose voter list disagrees: voters 1 and 2 refuse its vote requests; it
    // stops itself with both lists named, and the cluster stays whole.
    let t = Instant::now();
    let rogue_dir = c.temp_dir().join("rogue");
    std::fs::create_dir_all(&rogue_dir).unwrap();
    let (rport, rcport) = (free_port(), free_port());
    let rogue_ports = [c.ports[0], c.ports[1], (0, 0), (rport, rcport)];
    let props = node_properties(4, &rogue_ports, &rogue_dir.join("data"), &[])
        .replace(&format!(",3@127.0.0.1:{}", 0), "");
    assert!(
        props.contains(&format!(
            "controller.quorum.voters=1@127.0.0.1:{},2@127.0.0.1:{},4@127.0.0.1:{rcport}",
            c.ports[0].1, c.ports[1].1
        )),
        "{props}"
    );
    let file = rogue_dir.join("node-4.properties");
    std::fs::write(&file, props).unwrap();
    let out = Command::new(skiff_binary())
        .args(["format", "-t", CLUSTER_ID, "-c"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let refused = Broker::builder()
        .log_dirs(&[&rogue_dir.join("data")])
        .serve_args(&["--config", &file.display().to_string()])
        .set(
            "listeners",
            &format!("PLAINTEXT://127.0.0.1:{rport},CONTROLLER://127.0.0.1:{rcport}"),
        )
        .run_refused();
    assert_eq!(refused.code, Some(2), "{}", refused.stderr);
    let cluster_list = c
        .ports
        .iter()
        .enumerate()
        .map(|(i, (_, cp))| format!("{}@127.0.0.1:{cp}", i + 1))
        .collect::<Vec<_>>()
        .join(",");
    assert!(
        refused.stderr.contains("controller.quorum.voters disagree")
            && refused.stderr.contains(&cluster_list)
            && refused.stderr.contains(&format!("4@127.0.0.1:{rcport}")),
        "names both voter lists ({cluster_list} and the rogue's): {}",
        refused.stderr
    );
    for (i, n) in c.nodes.iter_mut().enumerate() {
        assert!(n.try_wait().is_none(), "node {} still runs", i + 1);
    }
    c.create_via(0, "after-rogue", 1, Duration::from_secs(15));
    c.wait_brokers(&[0, 1, 2], &[1, 2, 3], Duration::from_secs(10));
    eprintln!(
        "phase rogue voter list stopped, cluster whole: {:?}",
        t.elapsed()
    );

    // A voter restarted with another voter list refuses to start; restored, it rejoins.
    let t = Instant::now();
    let controller = c.metadata(0).controller_id;
    let victim = (0..3).find(|i| *i as i32 + 1 != controller).unwrap();
    assert!(c.nodes[victim].sigterm().success());
    let voters: Vec<String> = c
        .ports
        .iter()
        .enumerate()
        .map(|(i, (_, cp))| {
            let port = if i == victim { free_port() } else { *cp };
            format!("{}@127.0.0.1:{port}", i + 1)
        })
        .collect();
    let (port, cport) = c.ports[victim];
    let data = c
        .temp_dir()
        .join(format!("node-{}", victim + 1))
        .join("data");
    let refused = Broker::builder()
        .log_dirs(&[&data])
        .serve_args(&["--config", &c.configs[victim].display().to_string()])
        .set(
            "listeners",
            &format!("PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{cport}"),
        )
        .set("controller.quorum.voters", &voters.join(","))
        .run_refused();
    assert_eq!(refused.code, Some(2), "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains("differs from the voters this node's metadata log was formed with"),
        "{}",
        refused.stderr
    );
    c.nodes[victim].restart();
    c.wait_brokers(&[0, 1, 2], &[1, 2, 3], Duration::from_secs(30));
    c.create_via(victim, "after-restore", 1, Duration::from_secs(15));
    eprintln!(
        "phase changed voter list refused, restored: {:?}",
        t.elapsed()
    );

    for n in &mut c.nodes {
        assert!(n.sigterm().success());
    }
    eprintln!("total: {:?}", t0.elapsed());
}
