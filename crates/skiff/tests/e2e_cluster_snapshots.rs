//! Metadata snapshots (issue 16 item 1), as real processes: 3 combined voters and one
//! broker-only observer with `metadata.log.max.record.bytes.between.snapshots=1024` and
//! `skiff.metadata.log.snapshot.keep.entries=0`, so every few metadata operations a voter
//! writes a KRaft `.checkpoint` file and purges its log behind it:
//! - voter 3 and the observer are stopped while 16 topics are created: the leader writes a
//!   snapshot (a `<endOffset:020>-<epoch:010>.checkpoint` file framed by KRaft's snapshot
//!   header and footer control records) and its log start moves past what they have;
//! - restarted, voter 3 is caught up by the leader's snapshot (openraft's full snapshot over
//!   the CONTROLLER listener) and the observer by a voter's snapshot (its metadata fetch):
//!   both list every topic, and their logs say a snapshot was installed;
//! - the leader restarted rebuilds its image from its own snapshot plus the log after it;
//! - every node's Metadata shows the same topics and leaders, and a CreateTopics after all
//!   this commits.
//!
//! Every wait polls with a deadline; per-phase timings are printed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use skiff_testkit::cluster::{COMBINED, Cluster, leaders};

const TOPICS: usize = 16;

fn metadata_dir(c: &Cluster, i: usize) -> PathBuf {
    c.temp_dir()
        .join(format!("node-{}", i + 1))
        .join("data")
        .join("__cluster_metadata-0")
}

fn checkpoints(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".checkpoint"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// `startOffset` of the `raft-log-start` file: the Kafka offset the log starts at after a
/// purge (0 when there is none).
fn log_start_offset(dir: &Path) -> i64 {
    let Ok(text) = std::fs::read_to_string(dir.join("raft-log-start")) else {
        return 0;
    };
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["startOffset"].as_i64().unwrap()
}

/// The end offset a `.checkpoint` file name stands for.
fn end_offset_of(name: &str) -> i64 {
    name[..20].parse().unwrap()
}

/// The offset after the last batch of a (stopped) node's metadata log segments.
fn log_end_offset(dir: &Path) -> i64 {
    let mut end = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_some_and(|x| x == "log") {
            let bytes = std::fs::read(&path).unwrap();
            for b in skiff_record::batches(&bytes) {
                let Ok((_, view)) = b else { break };
                end = end.max(view.next_offset());
            }
        }
    }
    end
}

/// The control type of a control batch's one record.
fn control_type(view: &skiff_record::BatchView<'_>) -> i16 {
    let data = view.records_data(1 << 20).unwrap();
    let rec = skiff_record::records(&data, view.records_count())
        .next()
        .unwrap()
        .unwrap();
    let key = rec.key.unwrap();
    i16::from_be_bytes([key[2], key[3]])
}

fn topic_names(c: &Cluster, i: usize) -> Vec<String> {
    let mut v: Vec<String> = c
        .metadata(i)
        .topics
        .iter()
        .filter_map(|t| t.name.clone())
        .filter(|n| n.starts_with("snap-"))
        .collect();
    v.sort();
    v
}

fn wait_until(what: &str, within: Duration, ok: impl Fn() -> bool) {
    let until = Instant::now() + within;
    while !ok() {
        assert!(Instant::now() < until, "never {what} within {within:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn e2e_cluster_metadata_snapshots_catch_up_voters_and_observers() {
    let t0 = Instant::now();
    let mut c = Cluster::start_roles(
        &[COMBINED, COMBINED, COMBINED, "broker"],
        &[
            ("metadata.log.max.record.bytes.between.snapshots", "1024"),
            ("skiff.metadata.log.snapshot.keep.entries", "0"),
        ],
    );
    c.wait_brokers(&[0, 1, 2, 3], &[1, 2, 3, 4], Duration::from_secs(30));
    eprintln!("phase start+register: {:?}", t0.elapsed());

    // Voter 3 and the observer stop; topics are created through node 1 (forwarded to the
    // controller if it is not node 1; the controller is not node 3 once node 3 is down).
    let t = Instant::now();
    assert!(c.nodes[2].sigterm().success());
    assert!(c.nodes[3].sigterm().success());
    for i in 0..TOPICS {
        c.create_via(0, &format!("snap-{i:02}"), 1, Duration::from_secs(15));
    }
    let controller = c.metadata(0).controller_id;
    assert!(
        controller == 1 || controller == 2,
        "controller {controller}"
    );
    let leader_dir = metadata_dir(&c, (controller - 1) as usize);
    let stopped_end = log_end_offset(&metadata_dir(&c, 2));
    // The leader purges behind a snapshot once no replication to voter 3 is in flight.
    wait_until(
        "the leader's log purged past voter 3's log end",
        Duration::from_secs(15),
        || {
            checkpoints(&leader_dir)
                .last()
                .is_some_and(|n| end_offset_of(n) > stopped_end)
                && log_start_offset(&leader_dir) > stopped_end
        },
    );
    eprintln!(
        "phase {TOPICS} creates with 2 nodes down, leader snapshots {:?}, log starts at offset {} (voter 3 ends at {stopped_end}): {:?}",
        checkpoints(&leader_dir),
        log_start_offset(&leader_dir),
        t.elapsed()
    );

    // The snapshot file is KRaft-shaped: named <end:020>-<epoch:010>.checkpoint, batches from
    // offset 0, a header (control type 3) first and a footer (type 4) last.
    let name = checkpoints(&leader_dir).pop().unwrap();
    let stem = name.strip_suffix(".checkpoint").unwrap();
    let (end, epoch) = stem.split_once('-').unwrap();
    assert_eq!((end.len(), epoch.len()), (20, 10), "{name}");
    let bytes = std::fs::read(leader_dir.join(&name)).unwrap();
    let views: Vec<_> = skiff_record::batches(&bytes)
        .map(|b| b.unwrap().1)
        .collect();
    assert!(views.len() >= 4, "{} batches", views.len());
    assert_eq!(views[0].base_offset(), 0);
    assert!(views.iter().all(|v| v.verify_crc().is_ok()));
    assert_eq!(control_type(&views[0]), 3, "header first");
    assert_eq!(control_type(views.last().unwrap()), 4, "footer last");
    let epoch: i32 = epoch.parse().unwrap();
    assert!(views.iter().all(|v| v.partition_leader_epoch() == epoch));

    // Voter 3 returns: its entries were purged on the leader, so it gets the snapshot.
    let t = Instant::now();
    c.nodes[2].restart();
    let want: Vec<String> = (0..TOPICS).map(|i| format!("snap-{i:02}")).collect();
    wait_until(
        "voter 3 listing every topic",
        Duration::from_secs(30),
        || topic_names(&c, 2) == want,
    );
    assert!(
        c.nodes[2]
            .logs()
            .contains("a metadata snapshot from the leader"),
        "voter 3 did not install a snapshot:\n{}",
        c.nodes[2].logs_tail(40)
    );
    assert!(!checkpoints(&metadata_dir(&c, 2)).is_empty());
    eprintln!("phase voter 3 caught up by a snapshot: {:?}", t.elapsed());

    // The observer returns: it fetches from entry 0, which was purged: a voter's snapshot.
    let t = Instant::now();
    c.nodes[3].restart();
    c.wait_brokers(&[0, 1, 2, 3], &[1, 2, 3, 4], Duration::from_secs(30));
    wait_until(
        "the observer listing every topic",
        Duration::from_secs(30),
        || topic_names(&c, 3) == want,
    );
    assert!(
        c.nodes[3]
            .logs()
            .contains("installed a metadata snapshot from a voter"),
        "the observer did not install a snapshot:\n{}",
        c.nodes[3].logs_tail(40)
    );
    eprintln!("phase observer caught up by a snapshot: {:?}", t.elapsed());

    // The leader restarts from its own snapshot and the log after it.
    let t = Instant::now();
    let l = (controller - 1) as usize;
    assert!(c.nodes[l].sigterm().success());
    c.nodes[l].restart();
    c.wait_brokers(&[0, 1, 2, 3], &[1, 2, 3, 4], Duration::from_secs(30));
    wait_until(
        "the restarted leader listing every topic",
        Duration::from_secs(30),
        || topic_names(&c, l) == want,
    );
    c.create_via(3, "snap-after", 1, Duration::from_secs(15));
    eprintln!(
        "phase node {controller} restarted from its snapshot, create after: {:?}",
        t.elapsed()
    );

    // Every node shows the same topics and leaders.
    let view = |i: usize| {
        let m = c.metadata(i);
        let mut all: Vec<(String, Vec<(i32, i32)>)> = want
            .iter()
            .chain(std::iter::once(&"snap-after".to_string()))
            .map(|t| (t.clone(), leaders(&m, t)))
            .collect();
        all.sort();
        all
    };
    wait_until(
        "every node showing the same topics and leaders",
        Duration::from_secs(15),
        || {
            let v0 = view(0);
            leaders(&c.metadata(0), "snap-after").len() == 1 && (1..4).all(|i| view(i) == v0)
        },
    );

    for n in &mut c.nodes {
        assert!(n.sigterm().success());
    }
    eprintln!("total: {:?}", t0.elapsed());
}
