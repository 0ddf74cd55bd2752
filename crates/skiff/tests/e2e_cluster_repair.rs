//! Quarantined batches on replicas (issue 17 item 8), as real processes: 3 combined nodes, a
//! topic with replication factor 3 over several 1 MiB segments, the scrubber on short timers.
//! One byte of a batch in a sealed segment is flipped on disk under a running node:
//! - on a follower: its scrubber quarantines the batch, the follower cuts its log there and
//!   fetches the rest again from the leader; the leader sees its fetch offset go back below
//!   the HW and takes it out of the ISR (partition epoch +1) until it is whole again (+1);
//! - on the leader: it hands leadership over to another ISR member (AlterPartition with an
//!   ISR without itself, Skiff's hand-over), then repairs as a follower.
//!
//! The followers fetch in incremental fetch sessions (the leader's stats count them).
//! After each repair every replica holds the same batches, byte for byte, none quarantined,
//! and a consumer reads every record from the (new) leader with no CORRUPT_MESSAGE.
//! Every wait polls with a deadline; per-phase timings are printed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::Value;
use skiff_protocol::ResponseBody;
use skiff_testkit::client::{DEADLINE, create_topics_request, records_of};
use skiff_testkit::cluster::{ADMIN_KEY, Cluster};
use skiff_testkit::logfiles::{batches_in, segment_files};
use skiff_testkit::{Conn, wait_until};

const TOPIC: &str = "repair";
const BATCHES: usize = 400;
const PER_BATCH: usize = 10;

/// The partition's admin view on node `i` (`/api/v1/partitions/repair/0`).
fn view(c: &Cluster, i: usize) -> Value {
    let admin = c.nodes[i].admin_port().expect("admin port on");
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(DEADLINE))
        .build()
        .into();
    let body = agent
        .get(format!(
            "http://127.0.0.1:{admin}/api/v1/partitions/{TOPIC}/0"
        ))
        .call()
        .and_then(|mut r| r.body_mut().read_to_string())
        .unwrap_or_default();
    serde_json::from_str(&body).unwrap_or(Value::Null)
}

/// Node `i`'s `/api/v1/stats` counters.
fn stats(c: &Cluster, i: usize) -> Value {
    let admin = c.nodes[i].admin_port().expect("admin port on");
    let body = ureq::get(format!("http://127.0.0.1:{admin}/api/v1/stats"))
        .call()
        .and_then(|mut r| r.body_mut().read_to_string())
        .unwrap_or_default();
    serde_json::from_str(&body).unwrap_or(Value::Null)
}

/// (leader, leader epoch, partition epoch, sorted ISR) in node `i`'s replication view.
fn replication(c: &Cluster, i: usize) -> (i64, i64, i64, Vec<i64>) {
    let v = view(c, i);
    let r = &v["sections"]["replication"];
    let mut isr: Vec<i64> = r["isr"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_i64).collect())
        .unwrap_or_default();
    isr.sort_unstable();
    (
        r["leader"].as_i64().unwrap_or(-1),
        r["leader_epoch"].as_i64().unwrap_or(-1),
        r["partition_epoch"].as_i64().unwrap_or(-1),
        isr,
    )
}

fn partition_dir(c: &Cluster, i: usize) -> PathBuf {
    c.partition_dir(i, TOPIC, 0)
}

/// Flips one byte in the records of the `nth` batch of the 2nd segment (sealed) of node `i`;
/// returns the batch's offsets.
fn flip_a_byte(c: &Cluster, i: usize, nth: usize) -> (i64, i64) {
    let logs = segment_files(&partition_dir(c, i));
    assert!(logs.len() >= 3, "several segments: {logs:?}");
    let bytes = std::fs::read(&logs[1]).unwrap();
    let (pos, view) = skiff_record::batches(&bytes).nth(nth).unwrap().unwrap();
    let range = (view.base_offset(), view.last_offset() + 1);
    let at = pos + view.size() - 7;
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&logs[1])
        .unwrap();
    f.write_all_at(&[bytes[at] ^ 0x20], at as u64).unwrap();
    range
}

fn batch_of(n: usize) -> Bytes {
    let mut b = skiff_record::BatchBuilder::new(skiff_record::BatchOptions::default());
    for i in 0..PER_BATCH {
        b.append(
            1_700_000_000_000,
            Some(format!("{n}/{i}").as_bytes()),
            Some(&[b'v'; 1000]),
            &[],
        );
    }
    Bytes::from(b.build().unwrap())
}

/// Every record from `port`'s leader: the count; `None` if that node does not lead (yet or
/// any more: NOT_LEADER_OR_FOLLOWER); panics on any other error or a corrupt batch.
fn consume_all(port: u16) -> Option<usize> {
    const NOT_LEADER_OR_FOLLOWER: i16 = 6;
    let mut conn = Conn::open(port);
    let mut offset = 0i64;
    let end = (BATCHES * PER_BATCH) as i64;
    let mut seen = 0;
    while offset < end {
        let p = conn.fetch(TOPIC, 0, offset, 1 << 20);
        if p.error_code == NOT_LEADER_OR_FOLLOWER {
            return None;
        }
        assert_eq!(p.error_code, 0, "fetch at {offset}");
        let bytes = records_of(&p);
        let before = offset;
        for b in skiff_record::batches(&bytes) {
            let Ok((_, view)) = b else { break };
            view.verify_crc().expect("no corrupt batch is ever served");
            seen += (view.last_offset() + 1 - offset.max(view.base_offset())) as usize;
            offset = view.last_offset() + 1;
        }
        assert!(offset > before, "no progress at {offset}");
    }
    Some(seen)
}

/// Waits until every replica holds the leader's batches and is in the ISR with nothing
/// quarantined; returns the leader's batches.
fn wait_whole(c: &Cluster, leader: usize, what: &str) -> Vec<Vec<u8>> {
    wait_until(what, Duration::from_secs(30), || {
        let want = batches_in(&partition_dir(c, leader));
        let same = (0..3).all(|i| batches_in(&partition_dir(c, i)) == want);
        let (_, _, _, isr) = replication(c, leader);
        let clean = (0..3)
            .all(|i| view(c, i)["sections"]["integrity"]["quarantined_ranges"].as_u64() == Some(0));
        (same && clean && isr == vec![1, 2, 3] && want.len() == BATCHES).then_some(want)
    })
}

#[test]
fn e2e_cluster_scrubber_repairs_a_follower_and_a_leader_from_the_other_replicas() {
    let t0 = Instant::now();
    let c = Cluster::start(
        3,
        &[
            ("replica.fetch.backoff.ms", "100"),
            ("skiff.log.scrub.interval.ms", "200"),
            ("skiff.log.scrub.backoff.ms", "20"),
            (ADMIN_KEY, "127.0.0.1:0"),
        ],
    );
    c.wait_brokers(&[0, 1, 2], &[1, 2, 3], Duration::from_secs(30));
    let mut req = create_topics_request(
        TOPIC,
        1,
        &[("segment.bytes", "1048576"), ("min.insync.replicas", "2")],
    );
    req.topics[0].replication_factor = 3;
    let ResponseBody::CreateTopics(r) = Conn::open(c.ports[0].0).call(7, req) else {
        panic!("not a CreateTopics response")
    };
    assert_eq!(r.topics[0].error_code, 0, "{:?}", r.topics[0].error_message);
    let (leader, _, _, isr) =
        wait_until("a leader with 3 in sync", Duration::from_secs(15), || {
            let r = replication(&c, 0);
            (r.0 > 0 && r.3.len() == 3).then_some(r)
        });
    assert_eq!(isr, vec![1, 2, 3]);
    let l = (leader - 1) as usize;
    wait_until("the leader serving", Duration::from_secs(10), || {
        (Conn::open(c.ports[l].0).fetch(TOPIC, 0, 0, 1024).error_code == 0).then_some(())
    });
    let mut conn = Conn::open(c.ports[l].0);
    for n in 0..BATCHES {
        let (code, base) = conn.produce(TOPIC, 0, batch_of(n));
        assert_eq!(
            (code, base),
            (0, (n * PER_BATCH) as i64),
            "acks=all batch {n}"
        );
    }
    let pristine = wait_whole(&c, l, "3 identical replicas after the produce");
    // The followers fetch in incremental fetch sessions (KIP-227); this test's own fetches
    // are sessionless.
    let s = stats(&c, l);
    let (created, incremental) = (
        s["fetch_sessions"]["created"].as_u64().unwrap_or(0),
        s["fetch_sessions"]["incremental_fetches"]
            .as_u64()
            .unwrap_or(0),
    );
    assert!(
        created >= 2 && incremental > 0,
        "the followers' fetch sessions on the leader: {s}"
    );
    eprintln!(
        "phase start + {BATCHES} acks=all batches on 3 replicas (leader {leader}): {:?}",
        t0.elapsed()
    );

    // New topics join the followers' open sessions (incremental fetches): each is replicated
    // even when a follower lists it before the leader's image knows its id (the bench found
    // UNKNOWN_TOPIC_ID for good there; a race, so this phase is a guard, not a proof).
    let t = Instant::now();
    for n in 0..6 {
        let name = format!("{TOPIC}-new-{n}");
        let mut req = create_topics_request(&name, 1, &[]);
        req.topics[0].replication_factor = 3;
        req.topics[0].assignments = vec![skiff_protocol::CreatableReplicaAssignment {
            partition_index: 0,
            broker_ids: (0..3).map(|k| ((l + k) % 3 + 1) as i32).collect(),
        }];
        req.topics[0].replication_factor = -1;
        req.topics[0].num_partitions = -1;
        let ResponseBody::CreateTopics(r) = Conn::open(c.ports[l].0).call(7, req) else {
            panic!("not a CreateTopics response")
        };
        assert_eq!(r.topics[0].error_code, 0, "{:?}", r.topics[0].error_message);
    }
    for n in 0..6 {
        let name = format!("{TOPIC}-new-{n}");
        wait_until(&format!("{name} served"), Duration::from_secs(15), || {
            let (code, _) = Conn::open(c.ports[l].0).produce(&name, 0, batch_of(n));
            (code == 0).then_some(())
        });
    }
    for n in 0..6 {
        let dir = |i: usize| {
            c.temp_dir()
                .join(format!("node-{}", i + 1))
                .join("data")
                .join(format!("{TOPIC}-new-{n}-0"))
        };
        wait_until(
            &format!("{TOPIC}-new-{n} on every replica"),
            Duration::from_secs(15),
            || {
                let want = batches_in(&dir(l));
                (!want.is_empty() && (0..3).all(|i| batches_in(&dir(i)) == want)).then_some(())
            },
        );
    }
    eprintln!(
        "phase 6 new topics replicated in the open sessions: {:?}",
        t.elapsed()
    );

    // A follower: quarantined by its scrubber, cut, out of the ISR, re-fetched, back in.
    let t = Instant::now();
    let f = (l + 1) % 3;
    let (_, epoch_before, pe_before, _) = replication(&c, l);
    let range = flip_a_byte(&c, f, 5);
    let repaired = wait_whole(&c, l, "the follower repaired from the leader");
    assert!(
        repaired == pristine,
        "the follower's repaired log is the leader's"
    );
    let (now_leader, epoch_after, pe_after, _) = replication(&c, l);
    assert_eq!(
        (now_leader, epoch_after),
        (leader, epoch_before),
        "same leader"
    );
    assert!(
        pe_after >= pe_before + 2,
        "the follower left the ISR and came back: partition epoch {pe_before} -> {pe_after}"
    );
    let found = view(&c, f)["sections"]["integrity"]["scrub"]["corrupt_batches_found"]
        .as_u64()
        .unwrap_or(0);
    assert!(found >= 1, "node {}'s scrubber found it", f + 1);
    eprintln!(
        "phase follower node {} repaired (batch {range:?}), partition epoch {pe_before} -> {pe_after}: {:?}",
        f + 1,
        t.elapsed()
    );

    // The leader: hands over to another ISR member, then repairs as a follower.
    let t = Instant::now();
    let range = flip_a_byte(&c, l, 9);
    let (new_leader, new_epoch) = wait_until(
        "a hand-over to another leader",
        Duration::from_secs(30),
        || {
            let (ld, ep, _, _) = replication(&c, f);
            (ld > 0 && ld != leader).then_some((ld, ep))
        },
    );
    assert!(new_epoch > epoch_before, "a new leader epoch: {new_epoch}");
    let nl = (new_leader - 1) as usize;
    let repaired = wait_whole(&c, nl, "the old leader repaired from the new one");
    assert!(
        repaired == pristine,
        "the old leader's repaired log is the others'"
    );
    // From the leader the metadata names, until it serves: a node can be named leader a
    // moment before it has taken the role (seen once in CI: NOT_LEADER_OR_FOLLOWER at 0).
    let served = wait_until(
        "every record served by the leader",
        Duration::from_secs(15),
        || {
            let (ld, _, _, _) = replication(&c, nl);
            (ld > 0).then(|| consume_all(c.ports[(ld - 1) as usize].0))?
        },
    );
    assert_eq!(served, BATCHES * PER_BATCH);
    eprintln!(
        "phase leader node {leader} handed over to node {new_leader} and repaired (batch {range:?}): {:?}",
        t.elapsed()
    );
    eprintln!("total {:?}", t0.elapsed());
}
