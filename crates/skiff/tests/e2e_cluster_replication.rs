//! Data replication (issue 17), as real processes: 3 combined nodes, a topic with replication
//! factor 3.
//! - acks=all produces to the leader are answered only once the high watermark passes them,
//!   which needs both followers to have fetched them (their fetches report their log ends);
//! - the followers' logs hold the same batches as the leader's, byte for byte;
//! - kill -9 of the leader: the controller fences it and elects a follower from the ISR,
//!   which serves every acknowledged record and takes new acks=all writes;
//! - the old leader restarts as a follower and catches up from its log end (it does not
//!   fetch from 0: its log keeps its prefix), then rejoins the ISR (AlterPartition).
//!
//! Every wait polls with a deadline; per-phase timings are printed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use skiff_protocol::ResponseBody;
use skiff_testkit::client::create_topics_request;
use skiff_testkit::cluster::{Cluster, batch};
use skiff_testkit::logfiles::{batches_in, segment_files};
use skiff_testkit::{Conn, wait_until};

const TOPIC: &str = "rep";

/// Issue 20: the value of the unlabelled series `name` on node `i`'s `/metrics` (admin port).
fn scraped(c: &Cluster, i: usize, name: &str) -> Option<f64> {
    let admin = c.nodes[i].admin_port().expect("admin port on");
    let text = ureq::get(format!("http://127.0.0.1:{admin}/metrics"))
        .call()
        .and_then(|mut r| r.body_mut().read_to_string())
        .ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

/// (leader, replicas, isr) of partition 0 of [`TOPIC`] in node `i`'s Metadata (leader -1
/// and nothing else while the node does not list it yet).
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

fn partition_dir(c: &Cluster, i: usize) -> std::path::PathBuf {
    c.partition_dir(i, TOPIC, 0)
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
fn e2e_cluster_replication_acks_all_failover_and_catch_up() {
    let t0 = Instant::now();
    let mut c = Cluster::start(3, &[("replica.fetch.backoff.ms", "100")]);
    c.wait_brokers(&[0, 1, 2], &[1, 2, 3], Duration::from_secs(30));
    let mut req = create_topics_request(TOPIC, 1, &[]);
    req.topics[0].replication_factor = 3;
    let ResponseBody::CreateTopics(r) = Conn::open(c.ports[0].0).call(7, req) else {
        panic!("not a CreateTopics response")
    };
    assert_eq!(r.topics[0].error_code, 0, "{:?}", r.topics[0].error_message);
    let (leader, replicas, isr) =
        wait_until("the topic with a leader", Duration::from_secs(15), || {
            let r = registration(&c, 0);
            (r.0 > 0).then_some(r)
        });
    assert_eq!(replicas, vec![1, 2, 3]);
    assert_eq!(isr, vec![1, 2, 3]);
    eprintln!(
        "phase start + RF=3 topic (leader {leader}): {:?}",
        t0.elapsed()
    );

    // acks=all: each answer needs both followers to have fetched the batch.
    let t = Instant::now();
    let l = (leader - 1) as usize;
    let mut conn = Conn::open(c.ports[l].0);
    // The leader hosts the partition once its own image shows it.
    wait_until(
        "the leader hosting the partition",
        Duration::from_secs(10),
        || {
            let f = Conn::open(c.ports[l].0).fetch(TOPIC, 0, 0, 1024);
            (f.error_code == 0).then_some(())
        },
    );
    for i in 0..20 {
        let (code, offset) = conn.produce(TOPIC, 0, batch(&format!("v{i:02}")));
        assert_eq!((code, offset), (0, i), "acks=all produce {i}");
    }
    eprintln!("phase 20 acks=all produces: {:?}", t.elapsed());

    // A replica fetch from a broker id that is not a follower of the partition is refused
    // (Kafka's NOT_LEADER_OR_FOLLOWER), as is a follower's fetch to a node that does not lead.
    for (node, replica) in [(l, 7), ((l + 1) % 3, ((l + 2) % 3 + 1) as i32)] {
        let mut req = skiff_testkit::client::fetch_request(TOPIC, 0, 0, 1 << 20, -1);
        req.replica_id = replica;
        let ResponseBody::Fetch(r) = Conn::open(c.ports[node].0).call(12, req.clone()) else {
            panic!("not a Fetch response")
        };
        let code = r.responses[0].partitions[0].error_code;
        assert_eq!(code, 6, "replica fetch by {replica} to node {}", node + 1);
    }

    // Every replica's log holds the same batches.
    let leader_batches = batches_in(&partition_dir(&c, l));
    assert_eq!(leader_batches.len(), 20);
    for i in (0..3).filter(|i| *i != l) {
        wait_until(
            &format!("node {} holding the leader's batches", i + 1),
            Duration::from_secs(10),
            || (batches_in(&partition_dir(&c, i)) == leader_batches).then_some(()),
        );
    }

    // kill -9 the leader: a follower from the ISR takes over with every acknowledged record.
    let t = Instant::now();
    c.nodes[l].kill9();
    let other = (0..3).find(|i| *i != l).unwrap();
    let (new_leader, _, isr) = wait_until("a new leader", Duration::from_secs(15), || {
        let r = registration(&c, other);
        (r.0 > 0 && r.0 != leader).then_some(r)
    });
    assert!(
        !isr.contains(&leader),
        "the dead leader left the ISR: {isr:?}"
    );
    // Its replica is offline (fenced broker), as KRaft's Metadata says.
    let m = c.metadata(other);
    let p = &m
        .topics
        .iter()
        .find(|t| t.name.as_deref() == Some(TOPIC))
        .unwrap()
        .partitions[0];
    assert_eq!(p.offline_replicas, vec![leader], "offline replicas");
    let nl = (new_leader - 1) as usize;
    let got = wait_until("the new leader serving", Duration::from_secs(10), || {
        let f = Conn::open(c.ports[nl].0).fetch(TOPIC, 0, 0, 1 << 20);
        (f.error_code == 0 && f.high_watermark == 20).then_some(f)
    });
    let want: Vec<String> = (0..20).map(|i| format!("v{i:02}")).collect();
    assert_eq!(values(&skiff_testkit::client::records_of(&got)), want);
    let mut conn = Conn::open(c.ports[nl].0);
    for i in 20..30 {
        let (code, offset) = conn.produce(TOPIC, 0, batch(&format!("v{i:02}")));
        assert_eq!(
            (code, offset),
            (0, i),
            "acks=all produce {i} to the new leader"
        );
    }
    eprintln!(
        "phase kill -9 leader {leader} -> leader {new_leader}, 10 more acks=all: {:?}",
        t.elapsed()
    );

    // The old leader returns as a follower and catches up from its own log end.
    let t = Instant::now();
    c.nodes[l].restart();
    wait_until(
        "the old leader holding all 30 batches",
        Duration::from_secs(20),
        || (batches_in(&partition_dir(&c, l)).len() == 30).then_some(()),
    );
    let new_batches = batches_in(&partition_dir(&c, nl));
    assert_eq!(batches_in(&partition_dir(&c, l)), new_batches);
    assert!(
        !c.nodes[l].logs().contains("restarting the log there"),
        "the old leader fetched from scratch"
    );
    eprintln!(
        "phase old leader caught up as a follower: {:?}",
        t.elapsed()
    );

    // Caught up, it rejoins the ISR: the leader's AlterPartition, committed by the controller.
    let t = Instant::now();
    wait_until(
        "the ISR back to 3 replicas",
        Duration::from_secs(15),
        || {
            let (_, _, isr) = registration(&c, other);
            (isr == vec![1, 2, 3]).then_some(())
        },
    );
    eprintln!("phase ISR expanded back to 3: {:?}", t.elapsed());

    for n in &mut c.nodes {
        assert!(n.sigterm().success());
    }
    eprintln!("total: {:?}", t0.elapsed());
}

/// One acks=all produce of `value` to `port` with a 1.5 s timeout: (error code, base offset).
fn produce_all(port: u16, value: &str) -> (i16, i64) {
    let mut req = skiff_testkit::client::produce_request(TOPIC, 0, batch(value), -1);
    req.timeout_ms = 1500;
    let ResponseBody::Produce(r) = Conn::open(port).call(11, req) else {
        panic!("not a Produce response")
    };
    let p = &r.responses[0].partition_responses[0];
    (p.error_code, p.base_offset)
}

/// `min.insync.replicas=3` on RF=3 (Kafka's rules, issue 17 item 3): a SIGSTOPped follower
/// stalls acks=all writes (REQUEST_TIMED_OUT, or NOT_ENOUGH_REPLICAS / _AFTER_APPEND once the
/// ISR shrank), never acknowledging one; SIGCONT: it catches up, rejoins the ISR and writes
/// are acknowledged again; every acknowledged record is read back exactly once.
#[test]
fn e2e_cluster_min_insync_replicas_with_a_stopped_follower() {
    const NOT_ENOUGH_REPLICAS: i16 = 19;
    const NOT_ENOUGH_REPLICAS_AFTER_APPEND: i16 = 20;
    const REQUEST_TIMED_OUT: i16 = 7;
    let t0 = Instant::now();
    let mut c = Cluster::start(
        3,
        &[
            ("replica.fetch.backoff.ms", "100"),
            ("replica.lag.time.max.ms", "1500"),
            (skiff_testkit::cluster::ADMIN_KEY, "on"),
        ],
    );
    c.wait_brokers(&[0, 1, 2], &[1, 2, 3], Duration::from_secs(30));
    let mut req = create_topics_request(TOPIC, 1, &[("min.insync.replicas", "3")]);
    req.topics[0].replication_factor = 3;
    let ResponseBody::CreateTopics(r) = Conn::open(c.ports[0].0).call(7, req) else {
        panic!("not a CreateTopics response")
    };
    assert_eq!(r.topics[0].error_code, 0, "{:?}", r.topics[0].error_message);
    let (leader, _, _) = wait_until("the topic with a leader", Duration::from_secs(15), || {
        let r = registration(&c, 0);
        (r.0 > 0 && r.2.len() == 3).then_some(r)
    });
    let l = (leader - 1) as usize;
    let port = c.ports[l].0;
    let mut acked: Vec<String> = Vec::new();
    // Each attempt writes its own value: an attempt answered with an error (e.g. a timeout
    // while the ISR forms) may still be in the log beside the acknowledged retry.
    let mut attempt = 0;
    let first = wait_until(
        "a first acknowledged write",
        Duration::from_secs(10),
        || {
            attempt += 1;
            let v = format!("first-{attempt}");
            (produce_all(port, &v).0 == 0).then_some(v)
        },
    );
    acked.push(first);
    eprintln!(
        "phase start, RF=3 min.insync.replicas=3: {:?}",
        t0.elapsed()
    );

    // SIGSTOP a follower that is not the active controller (the quorum stays whole).
    let t = Instant::now();
    let controller = c.metadata(l).controller_id;
    let f = (0..3)
        .find(|i| *i != l && (*i as i32 + 1) != controller)
        .unwrap_or_else(|| (0..3).find(|i| *i != l).unwrap());
    c.nodes[f].signal("STOP");
    let mut codes = Vec::new();
    let refused = wait_until("acks=all refused with 19", Duration::from_secs(20), || {
        let (code, _) = produce_all(port, "during");
        codes.push(code);
        assert!(
            [
                REQUEST_TIMED_OUT,
                NOT_ENOUGH_REPLICAS,
                NOT_ENOUGH_REPLICAS_AFTER_APPEND
            ]
            .contains(&code),
            "a write was acknowledged with a follower stopped: {code}"
        );
        (code == NOT_ENOUGH_REPLICAS).then_some(codes.clone())
    });
    eprintln!(
        "phase follower {} stopped: answers {refused:?}: {:?}",
        f + 1,
        t.elapsed()
    );

    // The operator sees it on the leader's admin port: the partition's replication section
    // and the broker's under-replicated / under-min-ISR gauges.
    let view = c.nodes[l].admin_cli(&["partition", TOPIC, "0"]);
    let rep = &view["sections"]["replication"];
    assert_eq!(rep["role"], "leader", "{view}");
    assert_eq!(rep["under_min_isr"], true, "{view}");
    assert_eq!(rep["under_replicated"], true, "{view}");
    assert_eq!(rep["followers"].as_array().map(Vec::len), Some(2), "{view}");
    let stats = c.nodes[l].admin_cli(&["stats"]);
    assert_eq!(
        stats["replication"]["under_min_isr_partitions"], 1,
        "{stats}"
    );
    // Issue 20: the leader counted the committed shrink.
    assert!(
        scraped(&c, l, "skiff_isr_shrinks_total").is_some_and(|n| n >= 1.0),
        "skiff_isr_shrinks_total on the leader after the shrink"
    );
    assert_eq!(
        stats["replication"]["under_replicated_partitions"], 1,
        "{stats}"
    );

    // SIGCONT: it catches up and rejoins; writes are acknowledged again.
    let t = Instant::now();
    c.nodes[f].signal("CONT");
    let after = wait_until(
        "acks=all acknowledged again",
        Duration::from_secs(30),
        || {
            attempt += 1;
            let v = format!("after-{attempt}");
            (produce_all(port, &v).0 == 0).then_some(v)
        },
    );
    acked.push(after);
    let (_, _, isr) = registration(&c, l);
    assert_eq!(isr, vec![1, 2, 3]);
    let stats = c.nodes[l].admin_cli(&["stats"]);
    assert_eq!(
        stats["replication"]["under_replicated_partitions"], 0,
        "{stats}"
    );
    assert!(
        scraped(&c, l, "skiff_isr_expands_total").is_some_and(|n| n >= 1.0),
        "skiff_isr_expands_total on the leader after the follower rejoined"
    );
    eprintln!("phase follower resumed, ISR whole: {:?}", t.elapsed());

    // Every acknowledged record, exactly once (unacknowledged "during" writes may be there
    // too: Kafka keeps them as well).
    let got = Conn::open(port).fetch(TOPIC, 0, 0, 1 << 20);
    let values = values(&skiff_testkit::client::records_of(&got));
    for a in &acked {
        assert_eq!(
            values.iter().filter(|v| *v == a).count(),
            1,
            "{a} in {values:?}"
        );
    }
    for n in &mut c.nodes {
        assert!(n.sigterm().success());
    }
    eprintln!("total: {:?}", t0.elapsed());
}

/// Issue 17: a follower killed with a torn tail (its active segment cut in the middle of the
/// last batch) rejoins by truncation: storage recovery drops the torn batch, the fetcher asks
/// from the recovered log end, and the follower ends byte-identical to the leader without
/// fetching from 0.
#[test]
fn e2e_cluster_follower_with_a_torn_tail_rejoins_by_truncation() {
    let t0 = Instant::now();
    let mut c = Cluster::start(3, &[("replica.fetch.backoff.ms", "100")]);
    c.wait_brokers(&[0, 1, 2], &[1, 2, 3], Duration::from_secs(30));
    let mut req = create_topics_request(TOPIC, 1, &[]);
    req.topics[0].replication_factor = 3;
    let ResponseBody::CreateTopics(r) = Conn::open(c.ports[0].0).call(7, req) else {
        panic!("not a CreateTopics response")
    };
    assert_eq!(r.topics[0].error_code, 0, "{:?}", r.topics[0].error_message);
    let (leader, _, _) = wait_until("the topic led, 3 in sync", Duration::from_secs(15), || {
        let r = registration(&c, 0);
        (r.0 > 0 && r.2.len() == 3).then_some(r)
    });
    let l = (leader - 1) as usize;
    let f = (l + 1) % 3;
    wait_until(
        "the leader hosting the partition",
        Duration::from_secs(10),
        || (Conn::open(c.ports[l].0).fetch(TOPIC, 0, 0, 1024).error_code == 0).then_some(()),
    );
    let mut conn = Conn::open(c.ports[l].0);
    for i in 0..20 {
        assert_eq!(conn.produce(TOPIC, 0, batch(&format!("v{i:02}"))).0, 0);
    }
    let leader_batches = batches_in(&partition_dir(&c, l));
    wait_until(
        "the follower holding 20 batches",
        Duration::from_secs(10),
        || (batches_in(&partition_dir(&c, f)) == leader_batches).then_some(()),
    );
    eprintln!("phase RF=3, 20 writes replicated: {:?}", t0.elapsed());

    // kill -9 the follower and tear its last batch in half.
    let t = Instant::now();
    c.nodes[f].kill9();
    let dir = partition_dir(&c, f);
    let segments = segment_files(&dir);
    let active = segments.last().unwrap();
    let len = std::fs::metadata(active).unwrap().len();
    let last = leader_batches.last().unwrap().len() as u64;
    std::fs::OpenOptions::new()
        .write(true)
        .open(active)
        .unwrap()
        .set_len(len - last / 2)
        .unwrap();
    assert_eq!(batches_in(&dir).len(), 19, "the last batch is torn");
    for i in 20..25 {
        assert_eq!(conn.produce(TOPIC, 0, batch(&format!("v{i:02}"))).0, 0);
    }

    // Restarted, it truncates the torn batch and fetches from there.
    c.nodes[f].restart();
    wait_until(
        "the follower identical to the leader",
        Duration::from_secs(20),
        || {
            let want = batches_in(&partition_dir(&c, l));
            (want.len() == 25 && batches_in(&partition_dir(&c, f)) == want).then_some(())
        },
    );
    let logs = c.nodes[f].logs();
    assert!(
        !logs.contains("restarting the log there"),
        "the follower fetched from scratch"
    );
    eprintln!(
        "phase torn follower rejoined by truncation: {:?}",
        t.elapsed()
    );
    for n in &mut c.nodes {
        assert!(n.sigterm().success());
    }
    eprintln!("total: {:?}", t0.elapsed());
}

/// A one-record batch with `value` and a `__delay_ms` header (delayed delivery, issue 8).
fn delayed_batch(value: &str, delay_ms: u64) -> bytes::Bytes {
    let mut b = skiff_record::BatchBuilder::new(skiff_record::BatchOptions::default());
    let delay = delay_ms.to_string();
    let headers = [skiff_record::Header {
        key: b"__delay_ms",
        value: Some(delay.as_bytes()),
    }];
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    b.append(now, None, Some(value.as_bytes()), &headers);
    bytes::Bytes::from(b.build().unwrap())
}

/// Issue 17 item 7: delayed delivery keeps its order across a failover. A record delayed
/// 6 s, then a plain one, on an RF=3 topic with `delivery.delay.enable=true`: consumers see
/// neither on the leader; the leader is killed; the new leader (whose `.deliverafter` index
/// was built on the replicated appends) still withholds both until the due time, then
/// delivers them in offset order.
#[test]
fn e2e_cluster_delayed_delivery_survives_a_failover() {
    let t0 = Instant::now();
    let mut c = Cluster::start(3, &[("replica.fetch.backoff.ms", "100")]);
    c.wait_brokers(&[0, 1, 2], &[1, 2, 3], Duration::from_secs(30));
    let mut req = create_topics_request(TOPIC, 1, &[("delivery.delay.enable", "true")]);
    req.topics[0].replication_factor = 3;
    let ResponseBody::CreateTopics(r) = Conn::open(c.ports[0].0).call(7, req) else {
        panic!("not a CreateTopics response")
    };
    assert_eq!(r.topics[0].error_code, 0, "{:?}", r.topics[0].error_message);
    let (leader, _, _) = wait_until("the topic led, 3 in sync", Duration::from_secs(15), || {
        let r = registration(&c, 0);
        (r.0 > 0 && r.2.len() == 3).then_some(r)
    });
    let l = (leader - 1) as usize;
    wait_until(
        "the leader hosting the partition",
        Duration::from_secs(10),
        || (Conn::open(c.ports[l].0).fetch(TOPIC, 0, 0, 1024).error_code == 0).then_some(()),
    );
    let mut conn = Conn::open(c.ports[l].0);
    let sent = Instant::now();
    assert_eq!(conn.produce(TOPIC, 0, delayed_batch("late", 6_000)), (0, 0));
    assert_eq!(conn.produce(TOPIC, 0, batch("after")), (0, 1));
    let f = Conn::open(c.ports[l].0).fetch(TOPIC, 0, 0, 1 << 20);
    assert_eq!((f.error_code, f.high_watermark), (0, 2));
    assert!(
        values(&skiff_testkit::client::records_of(&f)).is_empty(),
        "withheld on the leader"
    );
    eprintln!("phase delayed + plain record written: {:?}", t0.elapsed());

    c.nodes[l].kill9();
    let other = (0..3).find(|i| *i != l).unwrap();
    let (new_leader, _, _) = wait_until("a new leader", Duration::from_secs(15), || {
        let r = registration(&c, other);
        (r.0 > 0 && r.0 != leader).then_some(r)
    });
    let nl = (new_leader - 1) as usize;
    // Until the due time the new leader withholds both records; then both, in order.
    let got = wait_until("both records delivered", Duration::from_secs(20), || {
        let f = Conn::open(c.ports[nl].0).fetch(TOPIC, 0, 0, 1 << 20);
        if f.error_code != 0 {
            return None;
        }
        let v = values(&skiff_testkit::client::records_of(&f));
        if sent.elapsed() < Duration::from_millis(5_500) {
            assert!(v.is_empty(), "delivered early by the new leader: {v:?}");
        }
        (!v.is_empty()).then_some(v)
    });
    assert!(
        sent.elapsed() >= Duration::from_millis(5_900),
        "delivered after {:?}",
        sent.elapsed()
    );
    assert_eq!(got, vec!["late".to_string(), "after".to_string()]);
    eprintln!(
        "phase leader {leader} killed; leader {new_leader} delivered both in order after {:?}",
        sent.elapsed()
    );
    for (i, n) in c.nodes.iter_mut().enumerate() {
        if i != l {
            assert!(n.sigterm().success());
        }
    }
    eprintln!("total: {:?}", t0.elapsed());
}
