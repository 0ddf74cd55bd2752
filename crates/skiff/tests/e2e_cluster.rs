//! Three combined KRaft nodes as real processes (issue 16), driven over TCP with Kafka's
//! protocol (the stock-client side is `tests/compat/tests/cluster.rs`):
//! - formatted with `skiff format`, started with `skiff serve`: every node's Metadata lists
//!   brokers 1, 2, 3 and one controller;
//! - a topic created through a node that is not the controller lands with its partitions
//!   spread over all three nodes; each partition takes a produce at its leader and answers
//!   NOT_LEADER_OR_FOLLOWER elsewhere; every node's image shows the same topics and leaders;
//! - kill -9 of the active controller: another node leads and a CreateTopics through a
//!   survivor succeeds within 15 s; the killed node restarts and rejoins as a follower;
//! - a node stopped with SIGTERM is fenced within `broker.session.timeout.ms` (plus one check
//!   period) and its partitions show no leader until it returns.
//!
//! Every wait polls with a deadline; per-phase timings are printed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use skiff_protocol::{MetadataRequest, MetadataResponse, ResponseBody};
use skiff_testkit::Conn;
use skiff_testkit::cluster::{Cluster, batch, leaders};

const NOT_LEADER_OR_FOLLOWER: i16 = 6;
const LEADER_NOT_AVAILABLE: i16 = 5;

/// The cluster-wide part of Metadata: topics with partitions, leaders, replicas (sorted).
type TopicView = (String, Vec<(i32, i32, Vec<i32>)>);

fn image_view(m: &MetadataResponse) -> Vec<TopicView> {
    let mut v: Vec<_> = m
        .topics
        .iter()
        .map(|t| {
            let mut ps: Vec<_> = t
                .partitions
                .iter()
                .map(|p| (p.partition_index, p.leader_id, p.replica_nodes.clone()))
                .collect();
            ps.sort();
            (t.name.clone().unwrap_or_default(), ps)
        })
        .collect();
    v.sort();
    v
}

/// One batch of a metadata log: (base offset, last offset, leader epoch, control?, records).
type LogBatch = (i64, i64, i32, bool, Vec<u8>);

/// The batches of `<data>/__cluster_metadata-0`, segment by segment (a torn or unwritten tail
/// ends the walk). Record timestamps are written relative to the batch, so the records'
/// bytes of one entry are the same on every voter.
fn metadata_log(data: &std::path::Path) -> Vec<LogBatch> {
    let dir = data.join("__cluster_metadata-0");
    assert!(dir.is_dir(), "{} is not a directory", dir.display());
    let mut out = Vec::new();
    for seg in skiff_testkit::logfiles::segment_files(&dir) {
        let bytes = std::fs::read(&seg).unwrap();
        let mut at = 0;
        while let Ok(Some(size)) = skiff_record::peek_batch_size(&bytes[at..]) {
            let Some(slice) = bytes.get(at..at + size) else {
                break;
            };
            let Ok(b) = skiff_record::BatchView::new(slice) else {
                break;
            };
            out.push((
                b.base_offset(),
                b.last_offset(),
                b.partition_leader_epoch(),
                b.is_control(),
                b.records_bytes().to_vec(),
            ));
            at += size;
        }
    }
    out
}

#[test]
fn e2e_three_nodes_spread_fail_over_and_fence() {
    let t0 = Instant::now();
    let mut c = Cluster::start(3, &[]);
    c.wait_brokers(&[0, 1, 2], &[1, 2, 3], Duration::from_secs(30));
    eprintln!("phase start+register: {:?}", t0.elapsed());

    // A topic created through a node that is not the controller.
    let t = Instant::now();
    let controller = c.metadata(0).controller_id;
    let via = (0..3).find(|i| *i as i32 + 1 != controller).unwrap();
    c.create_via(via, "spread", 6, Duration::from_secs(15));
    for i in 0..3 {
        c.wait_metadata(i, Duration::from_secs(15), "spread with leaders", |m| {
            let l = leaders(m, "spread");
            l.len() == 6 && l.iter().all(|(_, leader)| *leader > 0)
        });
    }
    let m = c.metadata(0);
    let spread = leaders(&m, "spread");
    let mut on: Vec<i32> = spread.iter().map(|(_, l)| *l).collect();
    on.sort_unstable();
    on.dedup();
    assert_eq!(
        on,
        vec![1, 2, 3],
        "partitions spread over every node: {spread:?}"
    );
    eprintln!("phase create+spread: {:?}", t.elapsed());

    // Produce at each partition's leader; any other node refuses.
    let t = Instant::now();
    for (p, leader) in &spread {
        let lport = c.ports[(*leader - 1) as usize].0;
        // The leader hosts the log once its image shows it: retry until then.
        let until = Instant::now() + Duration::from_secs(15);
        loop {
            let (code, _) = Conn::open(lport).produce("spread", *p, batch(&format!("v{p}")));
            if code == 0 {
                break;
            }
            assert!(
                Instant::now() < until,
                "produce spread-{p} at {leader}: {code}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let other = (*leader as usize) % 3;
        let (code, _) = Conn::open(c.ports[other].0).produce("spread", *p, batch("x"));
        assert_eq!(
            code,
            NOT_LEADER_OR_FOLLOWER,
            "spread-{p} at node {}",
            other + 1
        );
        let got = Conn::open(lport).fetch("spread", *p, 0, 1 << 20);
        assert_eq!(got.high_watermark, 1, "spread-{p}");
    }
    let views: Vec<_> = (0..3).map(|i| image_view(&c.metadata(i))).collect();
    assert_eq!(views[0], views[1]);
    assert_eq!(views[1], views[2]);
    eprintln!("phase produce: {:?}", t.elapsed());

    // kill -9 the active controller.
    let t = Instant::now();
    let controller = c.metadata(0).controller_id;
    assert!((1..=3).contains(&controller), "controller {controller}");
    let dead = (controller - 1) as usize;
    c.nodes[dead].kill9();
    let killed = Instant::now();
    let survivor = (dead + 1) % 3;
    let took = c.create_via(survivor, "after-failover", 1, Duration::from_secs(15));
    let m = c.metadata(survivor);
    assert_ne!(m.controller_id, controller, "a new controller");
    eprintln!(
        "phase failover: CreateTopics committed {:?} after kill -9 (controller {} -> {})",
        killed.elapsed(),
        controller,
        m.controller_id
    );
    let _ = took;
    c.nodes[dead].restart();
    c.wait_brokers(&[0, 1, 2], &[1, 2, 3], Duration::from_secs(30));
    for i in 0..3 {
        c.wait_metadata(i, Duration::from_secs(15), "after-failover", |m| {
            leaders(m, "after-failover").len() == 1
        });
    }
    assert_ne!(
        c.metadata(dead).controller_id,
        -1,
        "the restarted node knows the leader"
    );
    eprintln!("phase restart: {:?}", t.elapsed());

    // A stopped node is fenced and its partitions lose their leader until it returns.
    let t = Instant::now();
    let controller = c.metadata(0).controller_id;
    let victim = (0..3).find(|i| *i as i32 + 1 != controller).unwrap();
    let victim_id = victim as i32 + 1;
    let watch = (victim + 1) % 3;
    let owned: Vec<i32> = leaders(&c.metadata(watch), "spread")
        .iter()
        .filter(|(_, l)| *l == victim_id)
        .map(|(p, _)| *p)
        .collect();
    assert!(!owned.is_empty());
    // sigterm() returns once the process has exited: its last heartbeat is about then.
    c.nodes[victim].sigterm();
    let stopped = Instant::now();
    let m = c.wait_metadata(watch, Duration::from_secs(10), "the victim fenced", |m| {
        !m.brokers.iter().any(|b| b.node_id == victim_id)
            && leaders(m, "spread")
                .iter()
                .filter(|(p, _)| owned.contains(p))
                .all(|(_, l)| *l == -1)
    });
    let fenced_after = stopped.elapsed();
    let topic = m
        .topics
        .iter()
        .find(|t| t.name.as_deref() == Some("spread"))
        .unwrap();
    for p in &topic.partitions {
        if owned.contains(&p.partition_index) {
            assert_eq!(p.error_code, LEADER_NOT_AVAILABLE);
        }
    }
    assert!(
        fenced_after < Duration::from_millis(2000 + 1000),
        "fenced {fenced_after:?} after it stopped (session timeout 2000 ms, checks every 250 ms)"
    );
    c.nodes[victim].restart();
    c.wait_metadata(
        watch,
        Duration::from_secs(15),
        "the victim's partitions led again",
        |m| leaders(m, "spread").iter().all(|(_, l)| *l > 0),
    );
    eprintln!(
        "phase fence+return: {:?} (fenced after {fenced_after:?})",
        t.elapsed()
    );

    let views: Vec<_> = (0..3).map(|i| image_view(&c.metadata(i))).collect();
    assert_eq!(views[0], views[1], "images agree");
    assert_eq!(views[1], views[2], "images agree");

    // The metadata logs themselves: once the cluster is quiet, every voter's
    // `__cluster_metadata-0` holds the same batches at the same offsets.
    let t = Instant::now();
    let until = Instant::now() + Duration::from_secs(15);
    let logs = loop {
        let logs: Vec<_> = (1..=3)
            .map(|id| metadata_log(&c.temp_dir().join(format!("node-{id}")).join("data")))
            .collect();
        if logs[0] == logs[1] && logs[1] == logs[2] {
            break logs;
        }
        assert!(
            Instant::now() < until,
            "the voters' metadata logs differ: {:?}",
            logs.iter().map(|l| l.len()).collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let data_batches = logs[0].iter().filter(|b| !b.3).count();
    assert!(
        data_batches >= 4,
        "the log holds the topics and registrations: {data_batches} data batches"
    );
    eprintln!(
        "phase metadata logs equal ({} batches, {data_batches} with records): {:?}",
        logs[0].len(),
        t.elapsed()
    );
    for n in &mut c.nodes {
        assert!(n.sigterm().success());
    }
    eprintln!("total: {:?}", t0.elapsed());
}

/// `n` consecutive free ports (the layout `skiff dev --nodes 3` needs: 3 client ports, then
/// 3 controller ports).
fn free_ports(n: u16) -> u16 {
    for _ in 0..200 {
        let base = skiff_testkit::process::free_port();
        if base > u16::MAX - n {
            continue;
        }
        let all_free =
            (base..base + n).all(|p| std::net::TcpListener::bind(("127.0.0.1", p)).is_ok());
        if all_free {
            return base;
        }
    }
    panic!("no {n} consecutive free ports")
}

#[test]
fn e2e_skiff_dev_three_nodes_ready_line_produce_consume_and_ctrl_c() {
    use std::io::BufRead;
    let t0 = Instant::now();
    let t = tempfile::tempdir().unwrap();
    let data = t.path().join("dev3");
    let port = free_ports(6);
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_skiff"))
        .args([
            "dev",
            "--nodes",
            "3",
            "--base-port",
            &port.to_string(),
            "--data",
        ])
        .arg(&data)
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let out = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let line = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let Ok(line) = rx.recv_timeout(left) else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("no cluster ready line within 60 s");
        };
        if line.starts_with("skiff ready cluster ") {
            break line;
        }
    };
    let id = std::fs::read_to_string(data.join("cluster.id")).unwrap();
    assert_eq!(
        line,
        format!(
            "skiff ready cluster bootstrap=localhost:{},localhost:{},localhost:{} cluster.id={}",
            port,
            port + 1,
            port + 2,
            id.trim()
        )
    );
    eprintln!("phase ready: {:?}", t0.elapsed());
    // At the ready line every node is registered and unfenced.
    let ResponseBody::Metadata(m) = Conn::open(port + 2).call(12, MetadataRequest::default())
    else {
        panic!("not a Metadata response")
    };
    let mut ids: Vec<i32> = m.brokers.iter().map(|b| b.node_id).collect();
    ids.sort_unstable();
    assert_eq!(ids, vec![1, 2, 3], "{m:?}");
    // Produce and consume through the printed bootstrap: a topic of 3 partitions.
    let mut conn = Conn::open(port);
    let t = conn.create_topic_result("dev", 3, &[]);
    assert_eq!(t.error_code, 0, "{:?}", t.error_message);
    let until = Instant::now() + Duration::from_secs(15);
    let spread = loop {
        let all = MetadataRequest {
            topics: None,
            ..MetadataRequest::default()
        };
        let ResponseBody::Metadata(m) = Conn::open(port).call(12, all) else {
            panic!("not a Metadata response")
        };
        let l = leaders(&m, "dev");
        if l.len() == 3 && l.iter().all(|(_, x)| *x > 0) {
            break l;
        }
        assert!(Instant::now() < until, "no leaders for dev: {m:?}");
        std::thread::sleep(Duration::from_millis(50));
    };
    for (p, leader) in &spread {
        let lport = port + (*leader as u16) - 1;
        let until = Instant::now() + Duration::from_secs(15);
        loop {
            let (code, _) = Conn::open(lport).produce("dev", *p, batch("hello"));
            if code == 0 {
                break;
            }
            assert!(Instant::now() < until, "produce dev-{p}: {code}");
            std::thread::sleep(Duration::from_millis(50));
        }
        let got = Conn::open(lport).fetch("dev", *p, 0, 1 << 20);
        assert_eq!(got.high_watermark, 1);
    }
    // Ctrl-C stops all three cleanly.
    std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    for i in 1..=3 {
        assert!(
            data.join(format!("node-{i}/data/.kafka_cleanshutdown"))
                .exists(),
            "node {i} shut down cleanly"
        );
    }
    eprintln!("total: {:?}", t0.elapsed());
}
