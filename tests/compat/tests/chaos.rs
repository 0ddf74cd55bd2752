//! Fault scenarios with history checking (issue 17; design/reliability.md, "(b) Fault
//! matrix"): F1 leader kill -9 during produce, F2 all nodes kill -9 at once, F4 zombie leader
//! (SIGSTOP beyond the session timeout), F5 follower pauses (one, then two), F13 torn tail.
//!
//! Each test starts three combined KRaft nodes (the testkit's short timers: broker session
//! 2 s, election 1 s), creates `chaos` (3 partitions, RF=3, `min.insync.replicas=2`), runs the
//! W1 workload (`tests/compat/py/logcheck_driver.py`: idempotent acks=all confluent-kafka
//! producers, assign-mode consumers, a JSON-lines history), injects the scenario's faults with
//! `fault`/`heal` markers in the history, heals everything, waits until every node has
//! registered and every partition is led with a full ISR, stops the driver (it drains every
//! partition to its high watermark) and checks the history with `logcheck`: no safety
//! anomaly, every acknowledged write seen, writes acknowledged again after the last heal.
//!
//! Every scenario runs in CI. The bugs they found are fixed, each named at its test: a
//! restarted node leading from its stale image (F13 on leaders), a controller hang (the
//! startup test), a follower that stopped fetching a partition after all nodes restarted (F2).
//!
//! Budget: CI fault windows of 10-20 s (a test takes 15-30 s; the multi-node 120 s override
//! of `.config/nextest.toml`). `SKIFF_CHAOS_SECONDS=N` runs the faults for N seconds instead:
//! `cargo run -p xtask -- chaos --scenario F1 --seconds 120` (profile `chaos`). The harness is
//! `chaos/harness.rs`; the history and the nodes' logs are kept (under `target/tmp/chaos-*`)
//! when a test fails, or always with `SKIFF_CHAOS_KEEP=1`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "chaos/harness.rs"]
mod harness;
#[path = "chaos/probe.rs"]
mod probe;
#[path = "chaos/verdict.rs"]
mod verdict;

use std::io::{Seek, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use harness::{Node, Run, Setup};
use probe::secs;

/// The usual nemesis pace: restart after this long.
const DOWN: Duration = Duration::from_secs(2);
/// SIGSTOP at least this long: twice the broker session timeout.
const PAUSE: Duration = Duration::from_secs(4);

fn sleep(d: Duration) {
    std::thread::sleep(d);
}

fn sleep_until(t: Instant) {
    sleep(t.saturating_duration_since(Instant::now()));
}

/// F1: every ~5 s the leader of one partition (round robin) is killed (kill -9) while the
/// producers write, and restarted 2 s later.
#[test]
fn chaos_f1_leader_kill9_during_produce() {
    let mut run = Run::start("F1", Setup::default());
    run.faults(3, Duration::from_secs(18), |run, round| {
        let p = (round % 3) as i32;
        let leader = run.leader(p);
        let i = (leader - 1) as usize;
        let started = Instant::now();
        run.marker("fault", &format!("kill -9 node {leader} (leader of {p})"));
        run.kill(i);
        sleep(DOWN);
        run.restart(i);
        run.marker("heal", &format!("restart node {leader}"));
        sleep_until(started + Duration::from_secs(5));
    });
    run.finish();
}

/// F2: all three nodes killed (kill -9) at once, restarted 2 s later (the metadata quorum
/// comes back too); each round waits for a healthy cluster before the next.
///
/// Found a bug in 4 of 13 runs at `9a028fb`: after the restart the controller fences the old
/// incarnations one by one, so a partition's leadership moves fast (node 2 leader at epoch 1,
/// then follower of 3 at epoch 2, of none at epoch 3, of 3 at epoch 4, within 90 ms), and the
/// follower then never fetched that partition again (the leader's view: `last_fetch_ms: -1`;
/// the ISR short for good). Not seen since the controller-hang fix (`1b810f4`) and the fetcher
/// manager's single snapshot (`da7acbd`): 14 of 14 runs passed on 2026-12-07. The nodes log the
/// fetchers' skipped partitions and divergence answers at debug, kept with the evidence if it
/// comes back.
#[test]
fn chaos_f2_all_nodes_kill9_at_once() {
    let mut run = Run::start("F2", Setup::default());
    run.faults(2, Duration::ZERO, |run, round| {
        run.marker("fault", "kill -9 nodes 1, 2 and 3");
        for i in 0..3 {
            run.kill(i);
        }
        sleep(DOWN);
        let t = Instant::now();
        for i in 0..3 {
            run.restart(i);
        }
        run.marker("heal", "restart nodes 1, 2 and 3");
        let restarted = t.elapsed();
        let healthy = run.wait_healthy(Duration::from_secs(60), "after restarting every node");
        run.note(format!(
            "round {round}: restarts took {}, then every partition led with a full ISR after {}",
            secs(restarted),
            secs(healthy)
        ));
        sleep(DOWN);
    });
    run.finish();
}

/// F4: the leader of one partition is stopped (SIGSTOP) until the others have elected a new
/// leader and at least 4 s (twice the session timeout), then continued (SIGCONT): the zombie
/// must learn the new epoch and truncate its uncommitted tail; no acknowledged write lost.
#[test]
fn chaos_f4_zombie_leader_sigstop() {
    let mut run = Run::start("F4", Setup::default());
    run.faults(2, Duration::from_secs(15), |run, round| {
        let p = (round % 3) as i32;
        let leader = run.leader(p);
        let i = (leader - 1) as usize;
        run.marker("fault", &format!("SIGSTOP node {leader} (leader of {p})"));
        let started = Instant::now();
        run.pause(i);
        let new = run.leader_of(p, Some(leader), Duration::from_secs(20));
        let elected = started.elapsed();
        let Some(new) = new else {
            panic!("F4: no new leader of {p} within 20 s while node {leader} was stopped")
        };
        sleep_until(started + PAUSE);
        let paused = started.elapsed();
        run.resume(i);
        run.marker("heal", &format!("SIGCONT node {leader}"));
        run.note(format!(
            "round {round}: node {leader} stopped {}; partition {p} led by node {new} after {}",
            secs(paused),
            secs(elected)
        ));
        sleep(Duration::from_secs(3));
    });
    run.finish();
}

/// F5: all three partitions led by node 1 (manual assignment); one follower stopped
/// (SIGSTOP) 4 s, then both followers 4 s: acks=all requests wait, time out or get
/// NOT_ENOUGH_REPLICAS (the driver records them as info/fail); no acknowledged write lost,
/// writes resume after SIGCONT.
#[test]
fn chaos_f5_follower_pauses() {
    let mut run = Run::start(
        "F5",
        Setup {
            assignment: Some(vec![vec![1, 2, 3], vec![1, 3, 2], vec![1, 2, 3]]),
        },
    );
    run.faults(1, Duration::from_secs(10), |run, round| {
        // The followers of partition 0 (leadership may have moved in an earlier round).
        let leader = run.leader(0);
        let followers: Vec<usize> = (0..3).filter(|i| *i as i32 + 1 != leader).collect();
        let one = followers[round % 2];
        run.marker(
            "fault",
            &format!("SIGSTOP follower node {} (leader {leader})", one + 1),
        );
        run.pause(one);
        let isr_one = run.smallest_isr(0, PAUSE);
        run.resume(one);
        run.marker("heal", &format!("SIGCONT node {}", one + 1));
        sleep(DOWN);

        let names: Vec<String> = followers.iter().map(|i| (i + 1).to_string()).collect();
        let names = names.join(" and ");
        run.marker(
            "fault",
            &format!("SIGSTOP follower nodes {names} (leader {leader})"),
        );
        for &f in &followers {
            run.pause(f);
        }
        let isr_two = run.smallest_isr(0, PAUSE);
        for &f in &followers {
            run.resume(f);
        }
        run.marker("heal", &format!("SIGCONT nodes {names}"));
        let healthy = run.wait_healthy(Duration::from_secs(60), "after the followers resumed");
        run.note(format!(
            "round {round}: smallest ISR of partition 0 (leader's view) with one follower \
             stopped {isr_one:?}, with two {isr_two:?}; ISR full again {} after SIGCONT",
            secs(healthy)
        ));
        sleep(DOWN);
    });
    run.finish();
}

/// A small deterministic generator for the appended garbage (xorshift64*).
struct Garbage(u64);

impl Garbage {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// The last `.log` segment of a partition dir.
fn last_segment(dir: &std::path::Path) -> PathBuf {
    let mut logs: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    logs.sort();
    logs.pop()
        .unwrap_or_else(|| panic!("no segment in {}", dir.display()))
}

/// F13 on followers: all three partitions led by node 1 (manual assignment); in turn node 2
/// or 3 is killed (kill -9), the last segment of one partition's replica cut by 17 bytes or
/// given 1-200 random bytes, and the node restarted at once. It must come up (no crash loop),
/// truncate the invalid tail (its log says so), register and re-fetch until the ISR is full.
#[test]
fn chaos_f13_torn_tail_on_followers() {
    torn_tail(
        "F13",
        Setup {
            assignment: Some(vec![vec![1, 2, 3], vec![1, 3, 2], vec![1, 2, 3]]),
        },
        false,
    );
}

/// F13 on leaders: the leader of one partition is killed, its last segment damaged, and it is
/// restarted at once (even rounds) or once the controller has fenced it (odd rounds). Both
/// find the bug: a restarted node acts on its metadata image as it was before it died, before
/// it has caught up with the quorum and before its registration is accepted. Restarted within
/// its old broker session (which a controller failover renews), it leads from the recovered,
/// shorter log: the followers (same leader epoch) truncate acknowledged records to its log end
/// or keep theirs where it appends new ones (inconsistent-offsets, lost writes). Restarted
/// after the fencing, it still leads for ~100 ms, answering consumers OFFSET_OUT_OF_RANGE, so
/// they reset to the beginning (nonmonotonic-poll; with auto.offset.reset=latest they would
/// skip records). Kafka's broker applies the image only once it has caught up and registered.
#[test]
// Was ignored for bug A (a restarted node led from its stale image before registering
// again); fixed by the role gate in 73f093a (ReplicaManager::open_gated).
fn chaos_f13_torn_tail_on_leaders() {
    torn_tail("F13-leaders", Setup::default(), true);
}

/// The F13 rounds: damage a follower of partition `round % 3` (or its leader, when `leaders`),
/// restart, check the recovery.
fn torn_tail(name: &'static str, setup: Setup, leaders: bool) {
    let mut run = Run::start(name, setup);
    let seed = std::process::id() as u64 | 1;
    let mut garbage = Garbage(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    run.faults(4, Duration::ZERO, |run, round| {
        let p = (round % 3) as i32;
        let leader = run.leader(p);
        let (victim, role) = if leaders {
            ((leader - 1) as usize, "leader")
        } else {
            ((leader as usize + round % 2) % 3, "follower")
        };
        let truncate = (round + round / 2) % 2 == 0;
        let wait_fenced = leaders && round % 2 == 1;
        run.marker(
            "fault",
            &format!(
                "kill -9 node {} ({role} of {p}), damage its tail",
                victim + 1
            ),
        );
        run.kill(victim);
        let what = damage(&run.partition_dir(victim, p), truncate, &mut garbage);
        if wait_fenced {
            let id = victim as i32 + 1;
            let fenced = run.wait_fenced(id, Duration::from_secs(30));
            run.note(format!(
                "node {id} fenced (leads nothing, in no ISR) after {}",
                secs(fenced)
            ));
        }
        let logged = run.cluster.nodes[victim].logs().len();
        run.restart(victim);
        run.marker("heal", &format!("restart node {}", victim + 1));
        let healthy = run.wait_healthy(Duration::from_secs(60), "after the torn-tail restart");
        assert_eq!(run.state(victim), Node::Up);
        let logs = run.cluster.nodes[victim].logs();
        let since = logs.get(logged..).unwrap_or_default();
        let tp = format!("{}-{p}", harness::TOPIC);
        let recovered = since
            .lines()
            .find(|l| l.contains("recovery truncated a torn tail") && l.contains(&tp));
        assert!(
            recovered.is_some(),
            "{name}: node {} ({what} of {tp}) logged no torn-tail truncation; its log since the restart:\n{since}",
            victim + 1,
        );
        run.note(format!(
            "round {round}: node {} ({role} of {p}): {what} (seed {seed}); recovered, registered, ISR full after {}",
            victim + 1,
            secs(healthy)
        ));
        sleep(Duration::from_secs(1));
    });
    run.finish();
}

/// Cuts 17 bytes off the last segment in `dir`, or appends 1-200 random bytes to it; says
/// which.
fn damage(dir: &std::path::Path, truncate: bool, garbage: &mut Garbage) -> String {
    let segment = last_segment(dir);
    let len = std::fs::metadata(&segment).unwrap().len();
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(&segment)
        .unwrap();
    if truncate {
        assert!(len > 17, "{} holds {len} bytes", segment.display());
        f.set_len(len - 17).unwrap();
        format!("cut 17 of {len} bytes")
    } else {
        let n = 1 + (garbage.next() % 200) as usize;
        let bytes: Vec<u8> = (0..n).map(|_| garbage.next() as u8).collect();
        f.seek(std::io::SeekFrom::End(0)).unwrap();
        f.write_all(&bytes).unwrap();
        format!("appended {n} random bytes to {len}")
    }
}

/// Not a fault scenario: the node hang the harness's `prewarm` once worked around. Three fresh
/// nodes get InitProducerId from several clients on every node at once (the controller hands
/// out producer-id blocks through Raft) and CreateTopics through the controller, for 20 s;
/// every node must keep answering Metadata. Seen in the scenarios (before the fix): the
/// controller stops answering anything, Raft included, for good; its stacks show a tokio
/// worker parked on the metadata store's writer lock (InitProducerId's synchronous
/// `MetadataStore::allocate_producer_id`, CreateTopics' `create_topic_with`) while the lock's
/// holder waits in `RaftMetadataLog::propose` (`Handle::block_on`) for a commit that needs
/// the runtime's I/O driver.
#[test]
// Was ignored for bug B (a controller hung when tokio workers blocked on the metadata store
// lock held across a Raft commit); fixed first for a list of APIs in handlers::dispatch
// (block_in_place), now for every writer in MetadataStore::lock_writer (FindCoordinator's
// __consumer_offsets, not on that list, hung F2).
fn chaos_startup_metadata_writes_do_not_hang_a_node() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    use skiff_protocol::{InitProducerIdRequest, ResponseBody};
    use skiff_testkit::cluster::Cluster;

    let cluster = Cluster::start(3, &[]);
    cluster.wait_brokers(&[0, 1, 2], &[1, 2, 3], Duration::from_secs(30));
    let controller = cluster.metadata(0).controller_id;
    let c = (controller - 1) as usize;
    let stop = Arc::new(AtomicBool::new(false));
    let answered = Arc::new(AtomicUsize::new(0));
    let mut threads = Vec::new();
    for (i, (port, _)) in cluster.ports.iter().enumerate() {
        for _ in 0..if i == c { 3 } else { 2 } {
            let (port, stop, answered) = (*port, Arc::clone(&stop), Arc::clone(&answered));
            threads.push(std::thread::spawn(move || {
                let mut client = probe::Persistent::new(port);
                while !stop.load(Ordering::Relaxed) {
                    let req = InitProducerIdRequest {
                        transactional_id: None,
                        transaction_timeout_ms: 60_000,
                        producer_id: -1,
                        producer_epoch: -1,
                    };
                    if let Some(ResponseBody::InitProducerId(_)) = client.call(4, req) {
                        answered.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }));
        }
    }
    // FindCoordinator creates __consumer_offsets (a metadata write outside the handlers that
    // hand their worker off): several at once on the controller hung it in the F2 scenario.
    for g in 0..3 {
        let (cport, cstop) = (cluster.ports[c].0, Arc::clone(&stop));
        threads.push(std::thread::spawn(move || {
            while !cstop.load(Ordering::Relaxed) {
                let req = skiff_protocol::FindCoordinatorRequest {
                    key: format!("hang-probe-{g}"),
                    key_type: 0,
                    ..Default::default()
                };
                if let Some(ResponseBody::FindCoordinator(f)) = probe::call(cport, 3, req)
                    && f.error_code == 0
                {
                    break;
                }
            }
        }));
    }
    let (cport, cstop) = (cluster.ports[c].0, Arc::clone(&stop));
    threads.push(std::thread::spawn(move || {
        let mut n = 0;
        let mut client = probe::Persistent::new(cport);
        while !cstop.load(Ordering::Relaxed) {
            let req = skiff_testkit::client::create_topics_request(&format!("t{n}"), 1, &[]);
            let _ = client.call(7, req);
            n += 1;
        }
    }));
    let started = Instant::now();
    let mut hung = None;
    while started.elapsed() < Duration::from_secs(20) && hung.is_none() {
        hung = (0..3).find(|&i| {
            let port = cluster.ports[i].0;
            probe::poll(Duration::from_secs(10), || probe::metadata(port)).is_none()
        });
        sleep(Duration::from_millis(500));
    }
    stop.store(true, Ordering::Relaxed);
    if let Some(i) = hung {
        let dir = tempfile::Builder::new()
            .prefix("chaos-hang-")
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .unwrap()
            .keep();
        let stacks = probe::stacks(cluster.nodes[i].pid(), &dir.join("stacks.txt"));
        panic!(
            "node {} (controller: node {controller}) answered no Metadata for 10 s after {} under {} InitProducerId answers: hung; {stacks}",
            i + 1,
            secs(started.elapsed()),
            answered.load(Ordering::Relaxed)
        );
    }
    for t in threads {
        t.join().unwrap();
    }
    eprintln!(
        "no hang in {}: {} InitProducerId answered",
        secs(started.elapsed()),
        answered.load(Ordering::Relaxed)
    );
}
