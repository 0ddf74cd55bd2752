//! Issue 17: `min.insync.replicas` through a stock client, with real processes. Three Skiff
//! nodes (combined KRaft broker + controller), one topic with one partition, replication
//! factor 3 and `min.insync.replicas=3`, and confluent-kafka from PyPI producing with
//! acks=all, no idempotence and no retries (so the broker's error code reaches the delivery
//! report unchanged; `tests/compat/py/min_isr.py probe`, one producer for the whole test).
//!
//! 1. A follower of the partition is killed (kill -9): every record produced while it is down
//!    fails (REQUEST_TIMED_OUT until the controller fences it and the ISR shrinks, then
//!    NOT_ENOUGH_REPLICAS, which the client must see); restarted, it rejoins the ISR and
//!    acks=all writes are acknowledged again.
//! 2. A follower is stopped (SIGSTOP) until the ISR has shrunk: every record produced meanwhile
//!    fails with REQUEST_TIMED_OUT, NOT_ENOUGH_REPLICAS or NOT_ENOUGH_REPLICAS_AFTER_APPEND,
//!    never an acknowledgement; continued (SIGCONT), it rejoins and writes are acknowledged.
//! 3. Afterwards the partition is read to its high watermark (confluent-kafka, `min_isr.py
//!    read`): every acknowledged record is there exactly once at its acknowledged offset, no
//!    value is stored twice and nothing stored was never sent. A record refused with
//!    NOT_ENOUGH_REPLICAS was never appended, so it is not stored either; one that timed out
//!    (or got NOT_ENOUGH_REPLICAS_AFTER_APPEND) was appended and may be committed once the ISR
//!    is whole again: the test counts those. The three replicas end with the same batches.
//!
//! Every error the client sees anywhere must be one of those three Kafka codes (a local
//! librdkafka timeout fails the test: the broker must answer before the client gives up, which
//! the client's timeouts leave room for). Budget: a multi-node scenario, 120 s
//! (`.config/nextest.toml`); about 10 s here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use skiff_compat::{Background, Python, finish_json, python, python_background, read_batches};
use skiff_protocol::ResponseBody;
use skiff_testkit::client::Conn;
use skiff_testkit::cluster::Cluster;

const TOPIC: &str = "min-isr";
const REQUEST_TIMED_OUT: i64 = 7;
const NOT_ENOUGH_REPLICAS: i64 = 19;
const NOT_ENOUGH_REPLICAS_AFTER_APPEND: i64 = 20;
/// The error codes an acks=all produce may get while the ISR cannot hold 3 replicas.
const REFUSALS: [i64; 3] = [
    REQUEST_TIMED_OUT,
    NOT_ENOUGH_REPLICAS,
    NOT_ENOUGH_REPLICAS_AFTER_APPEND,
];
/// Records per probe (one Produce request: they share an answer).
const PER_PROBE: usize = 3;

/// The probe producer's librdkafka settings: acks=all, and the broker's answer unchanged in the
/// delivery report (no idempotence, no retries). The broker parks an acks=all produce up to
/// the request's timeout (`request.timeout.ms`, 1.5 s); the client's own deadline for the
/// request is the message timeout (10 s), so a parked produce ends with the broker's
/// REQUEST_TIMED_OUT, not with a local timeout.
const PRODUCER: &[(&str, &str)] = &[
    ("acks", "all"),
    ("enable.idempotence", "false"),
    ("message.send.max.retries", "0"),
    ("request.timeout.ms", "1500"),
    ("message.timeout.ms", "10000"),
    ("linger.ms", "5"),
    ("retry.backoff.ms", "50"),
    ("reconnect.backoff.ms", "50"),
    ("reconnect.backoff.max.ms", "500"),
    ("topic.metadata.refresh.interval.ms", "1000"),
];

fn phase(started: Instant, what: &str) {
    eprintln!("[{:>6.2}s] {what}", started.elapsed().as_secs_f64());
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

/// (leader, ISR, controller) of the partition in node `i`'s Metadata (leader -1 if unknown).
fn view(cluster: &Cluster, i: usize) -> (i32, Vec<i32>, i32) {
    let m = cluster.metadata(i);
    let (leader, mut isr) = m
        .topics
        .iter()
        .find(|t| t.name.as_deref() == Some(TOPIC))
        .and_then(|t| t.partitions.iter().find(|x| x.partition_index == 0))
        .map_or((-1, Vec::new()), |x| (x.leader_id, x.isr_nodes.clone()));
    isr.sort_unstable();
    (leader, isr, m.controller_id)
}

/// One delivery report of the probe producer.
#[derive(Clone, Debug)]
struct Report {
    value: String,
    /// The acknowledged offset (acknowledgements only).
    offset: Option<i64>,
    /// 0 for an acknowledgement, else `KafkaError.code()`.
    code: i64,
    name: String,
}

fn reports_of(v: &Value) -> Vec<Report> {
    v.as_array()
        .unwrap_or_else(|| panic!("not a list of reports: {v}"))
        .iter()
        .map(|r| Report {
            value: r[0].as_str().unwrap().to_owned(),
            offset: r[1].as_i64(),
            code: r[2].as_i64().unwrap(),
            name: r[3].as_str().unwrap_or("ack").to_owned(),
        })
        .collect()
}

/// The probe producer and every report it gave, by phase.
struct Probe {
    bg: Background,
    probes: usize,
    seen: Vec<(&'static str, Report)>,
}

impl Probe {
    fn start(bootstrap: &str) -> Probe {
        let config: serde_json::Map<String, Value> = PRODUCER
            .iter()
            .map(|(k, v)| ((*k).to_owned(), json!(v)))
            .collect();
        let bg = python_background(
            Python::PyPi,
            "min_isr.py",
            "probe",
            &json!({"bootstrap": bootstrap, "topic": TOPIC, "config": config}),
        );
        Probe {
            bg,
            probes: 0,
            seen: Vec::new(),
        }
    }

    /// Produces [`PER_PROBE`] new records (after this call began) and returns their reports.
    /// Any error that is not one of [`REFUSALS`] fails the test.
    fn send(&mut self, label: &'static str) -> Vec<Report> {
        self.probes += 1;
        let tag = format!("p{}", self.probes);
        self.bg.send_line(&format!("{tag} {PER_PROBE}"));
        let line: Value = self.bg.wait_for(Duration::from_secs(30), |l| {
            let v: Value = serde_json::from_str(l).ok()?;
            (v["tag"] == json!(tag)).then_some(v)
        });
        assert_eq!(
            line["unflushed"], 0,
            "{label}: probe {tag} unresolved: {line}"
        );
        let reports = reports_of(&line["reports"]);
        assert_eq!(reports.len(), PER_PROBE, "{label}: {line}");
        for r in &reports {
            assert!(
                r.code == 0 || REFUSALS.contains(&r.code),
                "{label}: {} failed with {} ({}), not a Kafka refusal (7, 19 or 20)",
                r.value,
                r.code,
                r.name
            );
            self.seen.push((label, r.clone()));
        }
        reports
    }

    /// Probes until one probe is acknowledged in full (within `within`); the probes it took.
    fn until_acknowledged(&mut self, label: &'static str, within: Duration) -> usize {
        let until = Instant::now() + within;
        for n in 1.. {
            if self.send(label).iter().all(|r| r.code == 0) {
                return n;
            }
            let last: Vec<_> = self.seen.iter().rev().take(PER_PROBE).collect();
            assert!(
                Instant::now() < until,
                "{label}: no acknowledgement within {within:?}; last reports {last:?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        unreachable!()
    }

    /// Probes while a replica is out of reach until `done(reports)` (within `within`): every
    /// report must be a refusal (an acknowledgement here is a write the broker had to refuse).
    fn while_degraded(
        &mut self,
        label: &'static str,
        within: Duration,
        mut done: impl FnMut(&[Report]) -> bool,
    ) -> usize {
        let until = Instant::now() + within;
        for n in 1.. {
            let reports = self.send(label);
            let acked: Vec<&Report> = reports.iter().filter(|r| r.code == 0).collect();
            assert!(
                acked.is_empty(),
                "{label}: the broker acknowledged {acked:?} with acks=all while only 2 of 3 \
                 replicas could have it (min.insync.replicas=3)"
            );
            if done(&reports) {
                return n;
            }
            assert!(
                Instant::now() < until,
                "{label}: not done within {within:?}; counts {:?}",
                self.counts()
            );
        }
        unreachable!()
    }

    /// (phase, outcome name) -> count.
    fn counts(&self) -> BTreeMap<(&'static str, String), usize> {
        let mut out = BTreeMap::new();
        for (label, r) in &self.seen {
            *out.entry((*label, r.name.clone())).or_insert(0) += 1;
        }
        out
    }
}

/// The follower of the partition to take down: one that is not the active controller when
/// there is one (keeps the quorum's leader, so the fence comes after one session timeout).
fn pick_follower(cluster: &Cluster, leader: i32) -> usize {
    let (_, _, controller) = view(cluster, (leader - 1) as usize);
    let followers: Vec<i32> = (1..=3).filter(|n| *n != leader).collect();
    let id = followers
        .iter()
        .copied()
        .find(|n| *n != controller)
        .unwrap_or(followers[0]);
    (id - 1) as usize
}

/// Waits until node `ask` shows leader `leader` with the full ISR {1, 2, 3}.
fn wait_full_isr(cluster: &Cluster, ask: usize, leader: i32, within: Duration, what: &str) {
    wait_for(what, within, || {
        let (l, isr, _) = view(cluster, ask);
        (l == leader && isr == [1, 2, 3]).then_some(())
    });
}

#[test]
fn cluster_min_insync_replicas_refuses_acks_all_writes_while_a_replica_is_out() {
    let t0 = Instant::now();
    let mut cluster = Cluster::start(3, &[("replica.fetch.backoff.ms", "100")]);
    cluster.wait_brokers(&[0, 1, 2], &[1, 2, 3], Duration::from_secs(30));
    let mut req =
        skiff_testkit::client::create_topics_request(TOPIC, 1, &[("min.insync.replicas", "3")]);
    req.topics[0].replication_factor = 3;
    match Conn::open(cluster.ports[0].0).call(7, req) {
        ResponseBody::CreateTopics(r) => assert_eq!(r.topics[0].error_code, 0, "{r:?}"),
        other => panic!("CreateTopics answered {other:?}"),
    }
    let leader = wait_for(
        "one leader and an ISR of 3 on every node",
        Duration::from_secs(15),
        || {
            let views: Vec<_> = (0..3).map(|i| view(&cluster, i)).collect();
            let (l, isr, _) = &views[0];
            let agree = views.iter().all(|(l2, isr2, _)| l2 == l && isr2 == isr);
            (agree && *l > 0 && *isr == [1, 2, 3]).then_some(*l)
        },
    );
    let ask = (leader - 1) as usize;
    phase(
        t0,
        &format!("topic {TOPIC}: RF=3, min.insync.replicas=3, leader {leader}"),
    );

    let mut probe = Probe::start(&cluster.bootstrap());
    let n = probe.until_acknowledged("healthy", Duration::from_secs(20));
    phase(t0, &format!("acks=all acknowledged ({n} probes)"));

    // 1. kill -9 of a follower.
    let v = pick_follower(&cluster, leader);
    cluster.nodes[v].kill9();
    let killed = Instant::now();
    phase(t0, &format!("node {} (a follower) killed", v + 1));
    let n = probe.while_degraded("killed", Duration::from_secs(20), |reports| {
        reports.iter().any(|r| r.code == NOT_ENOUGH_REPLICAS)
    });
    let (l, isr, _) = view(&cluster, ask);
    assert_eq!(l, leader, "the leader moved when a follower died");
    assert!(
        !isr.contains(&(v as i32 + 1)),
        "NOT_ENOUGH_REPLICAS, yet the leader's Metadata shows node {} in the ISR {isr:?}",
        v + 1
    );
    phase(
        t0,
        &format!(
            "NOT_ENOUGH_REPLICAS after {:.1}s ({n} probes); ISR {isr:?}",
            killed.elapsed().as_secs_f64()
        ),
    );
    // Once the ISR has shrunk, the refusal is immediate and always NOT_ENOUGH_REPLICAS.
    for r in probe.send("killed") {
        assert_eq!(r.code, NOT_ENOUGH_REPLICAS, "with ISR {isr:?}: {r:?}");
    }
    cluster.nodes[v].restart();
    let restarted = Instant::now();
    wait_full_isr(
        &cluster,
        ask,
        leader,
        Duration::from_secs(30),
        "the restarted node back in the ISR",
    );
    phase(
        t0,
        &format!(
            "node {} restarted, back in the ISR after {:.1}s",
            v + 1,
            restarted.elapsed().as_secs_f64()
        ),
    );
    let n = probe.until_acknowledged("rejoined", Duration::from_secs(20));
    phase(t0, &format!("acks=all acknowledged again ({n} probes)"));

    // 2. SIGSTOP of a follower, until the ISR has shrunk and the broker says so.
    let (leader2, _, _) = view(&cluster, ask);
    assert_eq!(leader2, leader, "the leader moved after the restart");
    let s = pick_follower(&cluster, leader);
    cluster.nodes[s].signal("STOP");
    let stopped = Instant::now();
    phase(t0, &format!("node {} (a follower) stopped", s + 1));
    let mut shrunk = None;
    let n = probe.while_degraded("stopped", Duration::from_secs(20), |reports| {
        if shrunk.is_none() {
            let (_, isr, _) = view(&cluster, ask);
            if !isr.contains(&(s as i32 + 1)) {
                shrunk = Some((stopped.elapsed(), isr));
            }
        }
        shrunk.is_some() && reports.iter().all(|r| r.code == NOT_ENOUGH_REPLICAS)
    });
    let (after, isr) = shrunk.unwrap();
    phase(
        t0,
        &format!(
            "stopped {:.1}s ({n} probes, none acknowledged); ISR {isr:?} after {:.1}s",
            stopped.elapsed().as_secs_f64(),
            after.as_secs_f64()
        ),
    );
    cluster.nodes[s].signal("CONT");
    let resumed = Instant::now();
    wait_full_isr(
        &cluster,
        ask,
        leader,
        Duration::from_secs(30),
        "the continued node back in the ISR",
    );
    phase(
        t0,
        &format!(
            "node {} continued, back in the ISR after {:.1}s",
            s + 1,
            resumed.elapsed().as_secs_f64()
        ),
    );
    let n = probe.until_acknowledged("resumed", Duration::from_secs(20));
    phase(t0, &format!("acks=all acknowledged again ({n} probes)"));

    // 3. Every acknowledged record is stored once, at its offset.
    let counts = probe.counts();
    let out = finish_json(probe.bg, Duration::from_secs(30));
    let all = reports_of(&out["reports"]);
    assert_eq!(out["unflushed"], 0, "{out}");
    assert_eq!(all.len(), probe.seen.len(), "the script's reports: {out}");
    phase(t0, &format!("probe producer done: {counts:?}"));
    let read = python(
        Python::PyPi,
        "min_isr.py",
        "read",
        &json!({"bootstrap": cluster.bootstrap(), "topic": TOPIC}),
    );
    let stored: Vec<(i64, String)> = read["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r[0].as_i64().unwrap(), r[1].as_str().unwrap().to_owned()))
        .collect();
    let verdict = check_stored(&probe.seen, &stored);
    let verdict = verdict.unwrap_or_else(|e| panic!("{e}\ncounts {counts:?}\nstored {stored:?}"));
    phase(
        t0,
        &format!(
            "read to the high watermark {}: {} records; every one of the {} acknowledged \
             once at its offset; {} of the {} refused stored anyway",
            read["high"],
            stored.len(),
            verdict.acked,
            verdict.refused_stored,
            verdict.refused
        ),
    );
    let on = |i: usize| read_batches(&cluster.nodes[i].partition_dir(TOPIC, 0));
    let batches = wait_for("the 3 replicas identical", Duration::from_secs(15), || {
        let (a, b, c) = (on(0), on(1), on(2));
        (a == b && b == c).then_some(a)
    });
    let records: i32 = batches.iter().map(|b| b.record_count).sum();
    assert_eq!(records as usize, stored.len(), "{batches:?}");
    phase(
        t0,
        &format!("3 replicas hold the same {} batches", batches.len()),
    );
}

/// What [`check_stored`] counted.
#[derive(Debug, PartialEq)]
struct Verdict {
    acked: usize,
    refused: usize,
    refused_stored: usize,
}

/// Every acknowledged record is stored at its acknowledged offset; no value is stored twice;
/// every stored value was sent; no value refused with NOT_ENOUGH_REPLICAS (refused before
/// the append) is stored.
fn check_stored(seen: &[(&str, Report)], stored: &[(i64, String)]) -> Result<Verdict, String> {
    let sent: BTreeMap<&str, &Report> = seen.iter().map(|(_, r)| (r.value.as_str(), r)).collect();
    let mut at: BTreeMap<&str, Vec<i64>> = BTreeMap::new();
    for (o, v) in stored {
        if !sent.contains_key(v.as_str()) {
            return Err(format!("offset {o} holds {v:?}, never sent"));
        }
        at.entry(v.as_str()).or_default().push(*o);
    }
    let dups: Vec<_> = at.iter().filter(|(_, o)| o.len() > 1).take(10).collect();
    if !dups.is_empty() {
        return Err(format!("stored more than once (value, offsets): {dups:?}"));
    }
    let mut v = Verdict {
        acked: 0,
        refused: 0,
        refused_stored: 0,
    };
    let mut lost = BTreeSet::new();
    for (label, r) in seen {
        match r.offset {
            Some(o) => {
                v.acked += 1;
                if at.get(r.value.as_str()) != Some(&vec![o]) {
                    lost.insert(format!(
                        "{label} {} acknowledged at {o}, stored at {:?}",
                        r.value,
                        at.get(r.value.as_str())
                    ));
                }
            }
            None if r.code == NOT_ENOUGH_REPLICAS && at.contains_key(r.value.as_str()) => {
                return Err(format!(
                    "{label} {} was refused with NOT_ENOUGH_REPLICAS, yet stored at {:?}",
                    r.value,
                    at.get(r.value.as_str())
                ));
            }
            None => {
                v.refused += 1;
                v.refused_stored += usize::from(at.contains_key(r.value.as_str()));
            }
        }
    }
    if lost.is_empty() {
        Ok(v)
    } else {
        Err(format!(
            "acknowledged records not where acknowledged: {lost:?}"
        ))
    }
}

/// The read-back check itself (no cluster): a clean log passes (a refused record may be
/// stored or not); a lost, a misplaced, a duplicated and a never-sent record fail, and so
/// does a stored record the broker refused with NOT_ENOUGH_REPLICAS.
#[test]
fn min_isr_check_rejects_lost_duplicated_and_foreign_records() {
    let r = |value: &str, offset: Option<i64>| Report {
        value: value.to_owned(),
        offset,
        code: if offset.is_some() {
            0
        } else {
            REQUEST_TIMED_OUT
        },
        name: String::new(),
    };
    let seen = vec![
        ("a", r("p1-0", Some(0))),
        ("b", r("p2-0", None)),
        ("c", r("p3-0", Some(2))),
    ];
    let log = |v: &[(i64, &str)]| -> Vec<(i64, String)> {
        v.iter().map(|(o, s)| (*o, (*s).to_owned())).collect()
    };
    let clean = check_stored(&seen, &log(&[(0, "p1-0"), (1, "p2-0"), (2, "p3-0")]));
    assert_eq!(
        clean,
        Ok(Verdict {
            acked: 2,
            refused: 1,
            refused_stored: 1
        })
    );
    let seen2 = vec![("a", r("p1-0", Some(0))), ("c", r("p3-0", Some(1)))];
    assert!(check_stored(&seen2, &log(&[(0, "p1-0"), (1, "p3-0")])).is_ok());
    let mut refused = seen.clone();
    refused[1].1.code = NOT_ENOUGH_REPLICAS;
    let log3 = log(&[(0, "p1-0"), (1, "p2-0"), (2, "p3-0")]);
    let verdict = check_stored(&refused, &log3);
    assert!(
        verdict.is_err(),
        "a NOT_ENOUGH_REPLICAS record stored passed"
    );
    eprintln!("a refused record stored: {}", verdict.unwrap_err());
    for (what, stored) in [
        ("a lost record", log(&[(0, "p1-0"), (1, "p2-0")])),
        ("a misplaced record", log(&[(0, "p1-0"), (1, "p3-0")])),
        ("a duplicate", log(&[(0, "p1-0"), (1, "p1-0"), (2, "p3-0")])),
        (
            "a foreign record",
            log(&[(0, "p1-0"), (1, "x"), (2, "p3-0")]),
        ),
    ] {
        let verdict = check_stored(&seen, &stored);
        assert!(verdict.is_err(), "{what} passed");
        eprintln!("{what}: {}", verdict.unwrap_err());
    }
}
