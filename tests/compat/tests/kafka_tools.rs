//! Apache Kafka's own tools against Skiff (issue 14 item 2), run through their main classes
//! from the pinned Kafka that `scripts/kafka-reference.sh` fetches with Maven:
//! - `kafka-topics` (`org.apache.kafka.tools.TopicCommand`) creates a topic on Skiff with a
//!   config override and describes it;
//! - `kafka-dump-log` (`kafka.tools.DumpLogSegments --deep-iteration --print-data-log`) reads
//!   Skiff's `.log`, `.index` and `.timeindex` files after a clean shutdown and agrees with what
//!   kcat produced: every offset in order with its key and value, every batch valid (CRC), the
//!   codecs stored as sent, Kafka's own checks print no mismatch, and every offset-index and
//!   time-index entry Kafka reads points at the batch it should (last offset and position; max
//!   timestamp). This is the byte-compatible-files promise checked by Kafka's code. (A wrong
//!   index position fails the test; that was checked by corrupting one entry.)
//! - issue 18: DumpLogSegments reads Skiff's COMMIT/ABORT control records (type, coordinator
//!   epoch) and its `.txnindex` entries (Kafka's AbortedTxn layout).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use skiff_compat::{Broker, Output, kcat, repo_root, run};

const INSTALL: &str = "run ./scripts/test.sh (it fetches Apache Kafka with Maven) or \
                       scripts/kafka-reference.sh fetch";

/// Runs a Kafka main class through the reference script.
fn kafka(class: &str, args: &[&str]) -> Output {
    let mut cmd = Command::new(repo_root().join("scripts/kafka-reference.sh"));
    cmd.arg("run").arg(class).args(args);
    run(&mut cmd, b"", Duration::from_secs(90), class, INSTALL)
}

const PER_CODEC: usize = 400;
const CODECS: [&str; 5] = ["none", "gzip", "snappy", "lz4", "zstd"];

/// Record `i`'s value: 1,200 pseudo-random letters (xorshift seeded by `i`), so 2,000 of them
/// still fill more than one 1 MiB segment after compression.
fn value_of(i: usize) -> String {
    let mut x = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut v = format!("value-{i:05}-");
    for _ in 0..1200 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.push(char::from(b'a' + (x % 26) as u8));
    }
    v
}

fn segment_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("log" | "index" | "timeindex")
            )
        })
        .collect();
    files.sort();
    files
}

#[test]
fn kafka_tools_topics_creates_and_dump_log_reads_skiff_segments() {
    let mut b = Broker::start();
    let bootstrap = b.bootstrap();
    let topic = "dumped";
    kafka(
        "org.apache.kafka.tools.TopicCommand",
        &[
            "--bootstrap-server",
            &bootstrap,
            "--create",
            "--topic",
            topic,
            "--partitions",
            "1",
            "--config",
            "segment.bytes=1048576",
        ],
    )
    .assert_success("kafka-topics --create");
    let described = kafka(
        "org.apache.kafka.tools.TopicCommand",
        &[
            "--bootstrap-server",
            &bootstrap,
            "--describe",
            "--topic",
            topic,
        ],
    );
    described.assert_success("kafka-topics --describe");
    assert!(
        described.stdout.contains("segment.bytes=1048576")
            && described.stdout.contains("Leader: 1"),
        "{}",
        described.stdout
    );

    let mut i = 0;
    for codec in CODECS {
        let mut input = String::new();
        for _ in 0..PER_CODEC {
            input.push_str(&format!("k{i}\t{}\n", value_of(i)));
            i += 1;
        }
        kcat(
            &[
                "-P",
                "-b",
                &bootstrap,
                "-t",
                topic,
                "-p",
                "0",
                "-K",
                "\t",
                "-z",
                codec,
                "-X",
                "linger.ms=20",
                "-X",
                "batch.num.messages=10",
            ],
            input.as_bytes(),
        )
        .assert_success("kcat -P");
    }
    let total = i;
    let dir = b.partition_dir(topic, 0);
    assert!(b.sigterm().success(), "clean shutdown");

    let files = segment_files(&dir);
    assert!(
        files
            .iter()
            .filter(|f| f.extension().unwrap() == "log")
            .count()
            >= 2,
        "the segment rolled: {files:?}"
    );
    let list = files
        .iter()
        .map(|f| f.display().to_string())
        .collect::<Vec<_>>()
        .join(",");
    let out = kafka(
        "kafka.tools.DumpLogSegments",
        &["--deep-iteration", "--print-data-log", "--files", &list],
    );
    out.assert_success("kafka-dump-log");
    let text = &out.stdout;
    // DumpLogSegments may print its index verdicts ("Mismatches in :...") on either stream.
    let both = format!("{}\n{}", out.stdout, out.stderr);
    for bad in [
        "Mismatches in",
        "Found timestamp mismatch",
        "Found out of order",
        "isvalid: false",
        "corrupt",
    ] {
        assert!(
            !both.contains(bad),
            "DumpLogSegments reports {bad:?}:\n{}",
            out.stderr
        );
    }
    // Every record, in offset order, with its key and value.
    let mut next = 0usize;
    for line in text.lines().filter(|l| l.starts_with("| offset: ")) {
        let offset: usize = line["| offset: ".len()..]
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(offset, next, "{line}");
        assert!(line.contains(&format!(" key: k{offset} ")), "{line}");
        assert!(
            line.ends_with(&format!("payload: {}", value_of(offset))),
            "{line}"
        );
        next += 1;
    }
    assert_eq!(next, total, "every produced record is in the dump");
    // Batches: valid, and the producer's codecs stored as sent (librdkafka compresses every
    // batch here: the values compress well).
    let batches: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("baseOffset: "))
        .collect();
    assert!(batches.len() >= CODECS.len(), "{}", batches.len());
    for codec in CODECS {
        assert!(
            batches
                .iter()
                .any(|l| l.contains(&format!("compresscodec: {codec} "))),
            "no {codec} batch in the dump"
        );
    }
    // Kafka read Skiff's offset and time indexes; every entry it printed points at a batch it
    // printed: an offset-index entry (offset O, position P) at the batch starting at byte P of
    // that segment whose last offset is O, a time-index entry (T, O) at the batch ending at O
    // whose max timestamp is T.
    let dump = sections(text);
    let (mut index_entries, mut time_entries) = (0, 0);
    for (file, lines) in &dump {
        let Some(base) = file
            .strip_suffix(".index")
            .or(file.strip_suffix(".timeindex"))
        else {
            continue;
        };
        let log = &dump[&format!("{base}.log")];
        let batch_at = |key: &str, value: &str| {
            log.iter()
                .find(|l| l.starts_with("baseOffset: ") && field(l, key) == value)
                .unwrap_or_else(|| panic!("no batch with {key} {value} in {base}.log"))
        };
        for l in lines {
            if file.ends_with(".index") && l.starts_with("offset: ") {
                let b = batch_at("position:", field(l, "position:"));
                assert_eq!(field(b, "lastOffset:"), field(l, "offset:"), "{file}: {l}");
                index_entries += 1;
            } else if l.starts_with("timestamp: ") {
                let b = batch_at("lastOffset:", field(l, "offset:"));
                assert_eq!(
                    field(b, "CreateTime:"),
                    field(l, "timestamp:"),
                    "{file}: {l}"
                );
                time_entries += 1;
            }
        }
    }
    assert!(index_entries > 10, "{index_entries} offset-index entries");
    assert!(time_entries > 10, "{time_entries} time-index entries");
}

/// DumpLogSegments' output split by "Dumping <path>" headers: file name -> its lines.
fn sections(text: &str) -> std::collections::BTreeMap<String, Vec<&str>> {
    let mut out = std::collections::BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if let Some(path) = line.strip_prefix("Dumping ") {
            let name = Path::new(path.trim())
                .file_name()
                .unwrap()
                .to_string_lossy()
                .to_string();
            out.insert(name.clone(), Vec::new());
            current = Some(name);
        } else if let Some(c) = &current {
            out.get_mut(c).unwrap().push(line);
        }
    }
    out
}

/// The value after `key` in a DumpLogSegments line (`key value key value ...`).
fn field<'a>(line: &'a str, key: &str) -> &'a str {
    let mut words = line.split(' ');
    while let Some(w) = words.next() {
        if w == key {
            return words.next().unwrap_or("");
        }
    }
    ""
}

/// Issue 18: DumpLogSegments reads Skiff's transaction markers and `.txnindex`: a committed
/// and an aborted confluent-kafka transaction on a 1 MiB segment topic; Kafka prints the
/// COMMIT and ABORT control records with the coordinator epoch, and the aborted
/// transaction's `.txnindex` entry (producer id, first offset, the ABORT marker's offset,
/// last stable offset) matches the log.
#[test]
fn kafka_tools_dump_log_reads_transaction_markers_and_the_txn_index() {
    use serde_json::json;
    use skiff_compat::{Python, python};
    let mut b = Broker::start();
    let bootstrap = b.bootstrap();
    let topic = "dumped-txn";
    kafka(
        "org.apache.kafka.tools.TopicCommand",
        &[
            "--bootstrap-server",
            &bootstrap,
            "--create",
            "--topic",
            topic,
            "--partitions",
            "1",
        ],
    )
    .assert_success("kafka-topics --create");
    let msgs = |p: &str| {
        json!([{"key": format!("{p}0"), "value": "v", "partition": 0},
                               {"key": format!("{p}1"), "value": "v", "partition": 0}])
    };
    let r = python(
        Python::PyPi,
        "txn_ck.py",
        "transactions",
        &json!({"bootstrap": bootstrap, "topic": topic, "transactional_id": "dump-txn",
                "transactions": [{"messages": msgs("c"), "commit": true},
                                 {"messages": msgs("a"), "commit": false}]}),
    );
    assert_eq!(
        r["transactions"],
        json!([{"outcome": "committed", "reports": r["transactions"][0]["reports"]},
               {"outcome": "aborted", "reports": r["transactions"][1]["reports"]}]),
        "{r}"
    );
    // The markers are written after EndTxn is answered: wait for the ABORT marker (offset 5:
    // c0 c1 COMMIT a0 a1 ABORT) before stopping.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let wm = python(
            Python::PyPi,
            "ck.py",
            "watermarks",
            &json!({"bootstrap": bootstrap, "topic": topic, "partitions": [0]}),
        );
        if wm["watermarks"]["0"] == json!([0, 6]) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "markers not written: {wm}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let dir = b.partition_dir(topic, 0);
    assert!(b.sigterm().success(), "clean shutdown");
    let base = dir.join(format!("{:020}", 0));
    let log = format!("{}.log", base.display());
    let txn = format!("{}.txnindex", base.display());
    let out = kafka(
        "kafka.tools.DumpLogSegments",
        &[
            "--deep-iteration",
            "--print-data-log",
            "--files",
            &format!("{log},{txn}"),
        ],
    );
    out.assert_success("kafka-dump-log");
    let dump = sections(&out.stdout);
    let log_lines = &dump["00000000000000000000.log"];
    let markers: Vec<(&str, &str, &str)> = log_lines
        .iter()
        .filter(|l| l.contains("endTxnMarker:"))
        .map(|l| {
            (
                field(l, "offset:"),
                field(l, "endTxnMarker:"),
                field(l, "coordinatorEpoch:"),
            )
        })
        .collect();
    assert_eq!(
        markers,
        [("2", "COMMIT", "0"), ("5", "ABORT", "0")],
        "{}",
        out.stdout
    );
    let batches: Vec<&&str> = log_lines
        .iter()
        .filter(|l| l.starts_with("baseOffset: "))
        .collect();
    assert!(
        batches
            .iter()
            .all(|l| field(l, "isTransactional:") == "true" && field(l, "isvalid:") != "false"),
        "{batches:#?}"
    );
    let pid = field(batches[0], "producerId:");
    let index = &dump["00000000000000000000.txnindex"];
    let entries: Vec<(&str, &str, &str, &str)> = index
        .iter()
        .filter(|l| l.starts_with("version: "))
        .map(|l| {
            (
                field(l, "producerId:"),
                field(l, "firstOffset:"),
                field(l, "lastOffset:"),
                field(l, "lastStableOffset:"),
            )
        })
        .collect();
    assert_eq!(entries, [(pid, "3", "5", "6")], "{}", out.stdout);
}
