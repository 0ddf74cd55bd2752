//! A combined node as the only voter plus a broker-only node (Kafka's smallest mixed layout),
//! as real processes:
//! - node 1 (`process.roles=broker,controller`, the one voter) and node 2
//!   (`process.roles=broker`, an observer of the quorum) both become ready, register and see
//!   each other; node 1 is the controller;
//! - a topic of replication factor 2 created through the broker-only node gets both nodes as
//!   replicas; acks=all produces to its leader are answered (the follower fetched them) and
//!   read back from the leader, and the follower holds them too;
//! - the voter restarts (a single-voter Raft log): it fenced itself at the SIGTERM, so it is
//!   registered again when its ready line is printed; both serve, the data is read back;
//! - the voter is killed (-9) and restarted: it fences its earlier incarnation itself and is
//!   registered again when its ready line is printed.
//!
//! And an upgrade: a single combined voter whose dir holds the local metadata log an earlier
//! Skiff wrote (no Raft state files) starts on it as before (its topic is there), and says
//! that broker-only nodes cannot follow it.
//!
//! Every wait polls with a deadline (the whole test stays well within 120 s); per-phase
//! timings are printed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};

use skiff_metadata::MetadataStore;
use skiff_protocol::{MetadataRequest, ResponseBody};
use skiff_testkit::client::{create_topics_request, records_of};
use skiff_testkit::cluster::{CLUSTER_ID, COMBINED, Cluster, batch};
use skiff_testkit::logfiles::batches_in;
use skiff_testkit::process::free_port;
use skiff_testkit::{Broker, Conn, wait_until};
use skiff_types::Clock;

const TOPIC: &str = "mixed";

/// (leader, replicas sorted, ISR sorted) of [`TOPIC`]-0 in node `i`'s Metadata (leader -1 and
/// nothing else while the node does not list it).
fn registration(c: &Cluster, i: usize) -> (i32, Vec<i32>, Vec<i32>) {
    let m = c.metadata(i);
    let Some(p) = m
        .topics
        .iter()
        .find(|t| t.name.as_deref() == Some(TOPIC))
        .and_then(|t| t.partitions.first())
    else {
        return (-1, Vec::new(), Vec::new());
    };
    let mut replicas = p.replica_nodes.clone();
    replicas.sort_unstable();
    let mut isr = p.isr_nodes.clone();
    isr.sort_unstable();
    (p.leader_id, replicas, isr)
}

/// The values of every record in `data`, in order.
fn values(data: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    for b in skiff_record::batches(data) {
        let Ok((_, view)) = b else { break };
        let recs = view.records_data(1 << 20).unwrap();
        for r in skiff_record::records(&recs, view.records_count()) {
            let r = r.unwrap();
            out.push(String::from_utf8(r.value.unwrap().to_vec()).unwrap());
        }
    }
    out
}

#[test]
fn e2e_combined_voter_and_broker_only_node() {
    let t0 = Instant::now();
    let mut c = Cluster::start_roles(
        &[COMBINED, "broker"],
        &[("replica.fetch.backoff.ms", "100")],
    );
    c.wait_brokers(&[0, 1], &[1, 2], Duration::from_secs(30));
    for i in 0..2 {
        assert_eq!(c.metadata(i).controller_id, 1, "node {} names", i + 1);
    }
    eprintln!("phase start + register: {:?}", t0.elapsed());

    // RF=2 through the broker-only node (forwarded to the controller on node 1).
    let t = Instant::now();
    let mut req = create_topics_request(TOPIC, 1, &[]);
    req.topics[0].replication_factor = 2;
    let ResponseBody::CreateTopics(r) = Conn::open(c.ports[1].0).call(7, req) else {
        panic!("not a CreateTopics response")
    };
    assert_eq!(r.topics[0].error_code, 0, "{:?}", r.topics[0].error_message);
    let (leader, replicas, isr) = wait_until(
        "the topic with a leader and both replicas in sync",
        Duration::from_secs(15),
        || {
            let r = registration(&c, 1);
            (r.0 > 0 && r.2.len() == 2).then_some(r)
        },
    );
    assert_eq!((replicas, isr), (vec![1, 2], vec![1, 2]));
    eprintln!("phase RF=2 topic (leader {leader}): {:?}", t.elapsed());

    // acks=all: each answer needs the other replica to have fetched the batch.
    let t = Instant::now();
    let lp = c.ports[(leader - 1) as usize].0;
    let want: Vec<String> = (0..5).map(|i| format!("m{i}")).collect();
    for (i, v) in want.iter().enumerate() {
        let offset = wait_until("an acks=all produce", Duration::from_secs(15), || {
            let (code, offset) = Conn::open(lp).produce(TOPIC, 0, batch(v));
            (code == 0).then_some(offset)
        });
        assert_eq!(offset, i as i64, "acks=all produce {v}");
    }
    let got = Conn::open(lp).fetch(TOPIC, 0, 0, 1 << 20);
    assert_eq!((got.error_code, got.high_watermark), (0, 5));
    assert_eq!(values(&records_of(&got)), want);
    let follower = if leader == 1 { 1 } else { 0 };
    wait_until("the follower's copy", Duration::from_secs(15), || {
        (batches_in(&c.partition_dir(follower, TOPIC, 0)).len() == 5).then_some(())
    });
    eprintln!("phase 5 acks=all produces, read back: {:?}", t.elapsed());

    // The single voter restarts (its Raft log, no peer to vote with): both nodes register
    // again and the data is served.
    let t = Instant::now();
    assert!(c.nodes[0].sigterm().success());
    c.nodes[0].restart();
    // Ready means serving: registered again at once (it fenced itself at the shutdown, so
    // the new incarnation is no duplicate of a live session).
    let m = c.metadata(0);
    assert!(
        m.brokers.iter().any(|b| b.node_id == 1) && m.controller_id == 1,
        "ready before serving: {m:?}"
    );
    assert!(
        !c.nodes[0].logs().contains("Another broker is registered"),
        "{}",
        c.nodes[0].logs()
    );
    c.wait_brokers(&[0, 1], &[1, 2], Duration::from_secs(30));
    wait_until("the topic served again", Duration::from_secs(15), || {
        let (leader, _, _) = registration(&c, 1);
        if leader <= 0 {
            return None;
        }
        let got = Conn::open(c.ports[(leader - 1) as usize].0).fetch(TOPIC, 0, 0, 1 << 20);
        (got.error_code == 0 && values(&records_of(&got)) == want).then_some(())
    });
    eprintln!("phase voter restart: {:?}", t.elapsed());

    // kill -9 (no shutdown fence): the restarted voter's registration is refused as a
    // duplicate of its earlier incarnation, which it fences itself (it is the only voter and
    // holds the node's dirs) instead of waiting for that session to expire.
    let t = Instant::now();
    c.nodes[0].kill9();
    c.nodes[0].restart();
    let m = c.metadata(0);
    assert!(
        m.brokers.iter().any(|b| b.node_id == 1) && m.controller_id == 1,
        "ready before serving: {m:?}"
    );
    assert!(
        c.nodes[0]
            .logs()
            .contains("fenced this broker (an earlier incarnation)"),
        "{}",
        c.nodes[0].logs()
    );
    c.wait_brokers(&[0, 1], &[1, 2], Duration::from_secs(30));
    wait_until("the topic served again", Duration::from_secs(15), || {
        let (leader, _, _) = registration(&c, 1);
        if leader <= 0 {
            return None;
        }
        let got = Conn::open(c.ports[(leader - 1) as usize].0).fetch(TOPIC, 0, 0, 1 << 20);
        (got.error_code == 0 && values(&records_of(&got)) == want).then_some(())
    });
    eprintln!("phase voter kill -9 + restart: {:?}", t.elapsed());

    for n in &mut c.nodes {
        assert!(n.sigterm().success());
    }
    eprintln!("total: {:?}", t0.elapsed());
}

/// The `__cluster_metadata-0` dir of a log dir.
const METADATA_DIR: &str = "__cluster_metadata-0";

#[test]
fn e2e_single_combined_voter_keeps_an_earlier_local_metadata_log() {
    let t = tempfile::tempdir().unwrap();
    let data = t.path().join("data");
    let (port, cport) = (free_port(), free_port());
    let file = t.path().join("node.properties");
    std::fs::write(
        &file,
        format!(
            "process.roles=broker,controller\nnode.id=1\n\
             controller.quorum.voters=1@127.0.0.1:{cport}\n\
             listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{cport}\n\
             controller.listener.names=CONTROLLER\n\
             listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n\
             log.dirs={}\n",
            data.display()
        ),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_skiff"))
        .args(["format", "-t", CLUSTER_ID, "-c"])
        .arg(&file)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // What an earlier Skiff's single combined voter wrote: the local metadata log.
    {
        let store = MetadataStore::open_checked(&data.join(METADATA_DIR), 1, true, Clock::system())
            .unwrap();
        store.create_topic("legacy", 2, BTreeMap::new()).unwrap();
    }
    let b = Broker::builder()
        .log_dirs(&[&data])
        .serve_args(&["--config", file.to_str().unwrap()])
        .set(
            "listeners",
            &format!("PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{cport}"),
        )
        .start();
    let m = wait_until("the legacy topic", Duration::from_secs(15), || {
        let ResponseBody::Metadata(m) = Conn::open(b.port()).call(
            12,
            MetadataRequest {
                topics: None,
                ..MetadataRequest::default()
            },
        ) else {
            panic!("not a Metadata response")
        };
        m.topics
            .iter()
            .any(|t| t.name.as_deref() == Some("legacy"))
            .then_some(m)
    });
    assert_eq!(m.cluster_id.as_deref(), Some(CLUSTER_ID));
    assert_eq!(m.brokers.len(), 1);
    let (code, offset) = Conn::open(b.port()).produce("legacy", 1, batch("x"));
    assert_eq!((code, offset), (0, 0));
    assert!(
        b.logs()
            .contains("keeps the local metadata log an earlier Skiff wrote"),
        "{}",
        b.logs()
    );
    assert!(!data.join(METADATA_DIR).join("quorum-state").exists());
}
