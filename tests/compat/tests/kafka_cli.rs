//! Apache Kafka's command-line tools against Skiff (issue 14 item 2), run through their main
//! classes from the pinned Kafka of `scripts/kafka-reference.sh` (`kafka_tool`), the way an
//! operator runs `bin/kafka-*.sh`. Each assertion reads the tool's own output (not a log line):
//! - `kafka-configs` (`kafka.admin.ConfigCommand`): add, describe and delete topic overrides;
//!   describe the broker's configs with `--all` (values, sensitivity, synonyms);
//! - `kafka-console-producer` / `kafka-console-consumer`: keyed lines in, the same lines out,
//!   consumed as a group that commits;
//! - `kafka-consumer-groups` (`ConsumerGroupCommand`): describe (current offset, end, lag),
//!   `--reset-offsets` dry run, to-earliest, to-offset and shift-by, list;
//! - `kafka-get-offsets` (`GetOffsetShell`): latest, earliest, max-timestamp;
//! - `kafka-delete-records` (`DeleteRecordsCommand`): the low watermark moves and
//!   get-offsets sees it;
//! - `kafka-log-dirs` (`LogDirsCommand`): the partitions with their sizes;
//! - `kafka-producer-perf-test` / `kafka-consumer-perf-test`: smoke runs that move every
//!   record;
//! - `kafka-transactions` (`TransactionsCommand`, issue 18): list, describe and
//!   describe-producers with a committed and an open transaction.
//!
//! `kafka-metadata-quorum` runs in `kraft_storage.rs` (against a KRaft node);
//! `kafka-acls` and `kafka-configs` for SCRAM users in `kafka_tools_security.rs` (issue 19);
//! `kafka-leader-election` (`LeaderElectionCommand`) runs here against one node, where every
//! election is a no-op the tool must report as such; the elections themselves, forwarded
//! and with leadership moving, are checked over the wire in `e2e_cluster_elections.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use serde_json::Value;
use skiff_compat::{Broker, Output, kafka_tool, kafka_tool_input};

const CONFIGS: &str = "kafka.admin.ConfigCommand";
const TOPICS: &str = "org.apache.kafka.tools.TopicCommand";
const GROUPS: &str = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand";
const OFFSETS: &str = "org.apache.kafka.tools.GetOffsetShell";

/// Runs `class` and asserts it exited 0: its output.
fn tool(class: &str, args: &[&str]) -> Output {
    let out = kafka_tool(class, args);
    out.assert_success(&format!("{class} {}", args.join(" ")));
    out
}

/// The `topic:partition:offset` lines of kafka-get-offsets: partition -> offset.
fn offsets(bootstrap: &str, topic: &str, time: &str) -> BTreeMap<i32, i64> {
    let out = tool(
        OFFSETS,
        &[
            "--bootstrap-server",
            bootstrap,
            "--topic",
            topic,
            "--time",
            time,
        ],
    );
    out.stdout
        .lines()
        .filter_map(|l| {
            let mut f = l.trim().rsplitn(3, ':');
            let offset = f.next()?.parse().ok()?;
            let partition = f.next()?.parse().ok()?;
            (f.next()? == topic).then_some((partition, offset))
        })
        .collect()
}

/// The rows of `kafka-consumer-groups --describe` (or a reset's table) for `topic`:
/// partition -> (current offset, log end offset, lag), "-" read as -1.
fn group_rows(stdout: &str, topic: &str) -> BTreeMap<i32, (i64, i64, i64)> {
    let mut header: Vec<&str> = Vec::new();
    let mut rows = BTreeMap::new();
    for line in stdout.lines() {
        let cols: Vec<&str> = line.split_whitespace().collect();
        if cols.first() == Some(&"GROUP") {
            header = cols;
            continue;
        }
        let at = |name: &str| header.iter().position(|h| *h == name);
        let num = |i: Option<usize>| -> i64 {
            i.and_then(|i| cols.get(i))
                .and_then(|v| v.parse().ok())
                .unwrap_or(-1)
        };
        if header.is_empty() || cols.get(at("TOPIC").unwrap_or(1)) != Some(&topic) {
            continue;
        }
        let Some(partition) = at("PARTITION")
            .and_then(|i| cols.get(i))
            .and_then(|v| v.parse().ok())
        else {
            continue;
        };
        let current = num(at("CURRENT-OFFSET").or(at("NEW-OFFSET")));
        rows.insert(
            partition,
            (current, num(at("LOG-END-OFFSET")), num(at("LAG"))),
        );
    }
    rows
}

#[test]
fn kafka_cli_configs_console_groups_offsets_and_delete_records() {
    let b = Broker::start();
    let bs = b.bootstrap();
    let bs = bs.as_str();
    let topic = "cli";
    tool(
        TOPICS,
        &[
            "--bootstrap-server",
            bs,
            "--create",
            "--topic",
            topic,
            "--partitions",
            "3",
        ],
    );

    // ---- kafka-configs: topic overrides in, described, deleted ---------------------------
    let entity = [
        "--bootstrap-server",
        bs,
        "--entity-type",
        "topics",
        "--entity-name",
        topic,
    ];
    let alter = [
        &entity[..],
        &[
            "--alter",
            "--add-config",
            "retention.ms=3600000,max.message.bytes=2000000",
        ],
    ]
    .concat();
    tool(CONFIGS, &alter);
    let described = tool(CONFIGS, &[&entity[..], &["--describe"]].concat()).stdout;
    assert!(
        described.contains("retention.ms=3600000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=3600000}")
            && described.contains("max.message.bytes=2000000"),
        "kafka-configs --describe after --add-config:\n{described}"
    );
    tool(
        CONFIGS,
        &[&entity[..], &["--alter", "--delete-config", "retention.ms"]].concat(),
    );
    let described = tool(CONFIGS, &[&entity[..], &["--describe"]].concat()).stdout;
    assert!(
        !described.contains("retention.ms=") && described.contains("max.message.bytes=2000000"),
        "kafka-configs --describe after --delete-config:\n{described}"
    );
    let all = tool(CONFIGS, &[&entity[..], &["--describe", "--all"]].concat()).stdout;
    assert!(
        all.contains("  retention.ms=604800000 sensitive=false")
            && all.contains("cleanup.policy=delete"),
        "kafka-configs --describe --all of the topic:\n{all}"
    );
    let broker = tool(
        CONFIGS,
        &[
            "--bootstrap-server",
            bs,
            "--entity-type",
            "brokers",
            "--entity-name",
            "1",
            "--describe",
            "--all",
        ],
    )
    .stdout;
    assert!(
        broker.contains("log.retention.hours=168 sensitive=false synonyms={DEFAULT_CONFIG:log.retention.hours=168}")
            && broker.contains("num.partitions=1"),
        "kafka-configs --describe --all of broker 1:\n{broker}"
    );

    // ---- console producer in, console consumer (as a group) out --------------------------
    let lines: Vec<String> = (0..30).map(|i| format!("key{i}:value-{i}")).collect();
    let input = lines.join("\n") + "\n";
    let produced = kafka_tool_input(
        "org.apache.kafka.tools.ConsoleProducer",
        &[
            "--bootstrap-server",
            bs,
            "--topic",
            topic,
            "--property",
            "parse.key=true",
            "--property",
            "key.separator=:",
        ],
        input.as_bytes(),
    );
    produced.assert_success("kafka-console-producer");
    let consumed = tool(
        "org.apache.kafka.tools.consumer.ConsoleConsumer",
        &[
            "--bootstrap-server",
            bs,
            "--topic",
            topic,
            "--group",
            "cli-group",
            "--from-beginning",
            "--max-messages",
            "30",
            "--timeout-ms",
            "20000",
            "--property",
            "print.key=true",
            "--property",
            "key.separator=:",
        ],
    );
    let mut got: Vec<&str> = consumed
        .stdout
        .lines()
        .filter(|l| l.starts_with("key"))
        .collect();
    got.sort();
    let mut want: Vec<&str> = lines.iter().map(String::as_str).collect();
    want.sort();
    assert_eq!(got, want, "console consumer output:\n{}", consumed.stderr);

    // ---- get-offsets: latest sums to 30, earliest is 0, max-timestamp is in range --------
    let latest = offsets(bs, topic, "-1");
    assert_eq!(latest.len(), 3, "{latest:?}");
    assert_eq!(latest.values().sum::<i64>(), 30, "{latest:?}");
    assert_eq!(
        offsets(bs, topic, "-2"),
        BTreeMap::from([(0, 0), (1, 0), (2, 0)])
    );
    let max_ts = offsets(bs, topic, "-3");
    for (p, o) in &max_ts {
        assert!(
            *o >= 0 && *o < latest[p],
            "max-timestamp offset of {p}: {max_ts:?} / {latest:?}"
        );
    }

    // ---- consumer-groups: the console consumer committed everything (lag 0) -------------
    let group = ["--bootstrap-server", bs, "--group", "cli-group"];
    let list = tool(GROUPS, &["--bootstrap-server", bs, "--list"]).stdout;
    assert!(
        list.lines().any(|l| l.trim() == "cli-group"),
        "--list:\n{list}"
    );
    let rows = group_rows(
        &tool(GROUPS, &[&group[..], &["--describe"]].concat()).stdout,
        topic,
    );
    let want: BTreeMap<i32, (i64, i64, i64)> =
        latest.iter().map(|(p, o)| (*p, (*o, *o, 0))).collect();
    assert_eq!(
        rows, want,
        "kafka-consumer-groups --describe after the console consumer"
    );

    let reset = |how: &[&str], mode: &str| {
        let args = [
            &group[..],
            &["--reset-offsets", "--topic", topic],
            how,
            &[mode],
        ]
        .concat();
        group_rows(&tool(GROUPS, &args).stdout, topic)
    };
    let dry = reset(&["--to-earliest"], "--dry-run");
    assert!(
        dry.values().all(|r| r.0 == 0),
        "dry run plans offset 0: {dry:?}"
    );
    let rows = group_rows(
        &tool(GROUPS, &[&group[..], &["--describe"]].concat()).stdout,
        topic,
    );
    assert_eq!(rows, want, "a dry run changes nothing");
    reset(&["--to-earliest"], "--execute");
    let rows = group_rows(
        &tool(GROUPS, &[&group[..], &["--describe"]].concat()).stdout,
        topic,
    );
    let earliest: BTreeMap<i32, (i64, i64, i64)> =
        latest.iter().map(|(p, o)| (*p, (0, *o, *o))).collect();
    assert_eq!(
        rows, earliest,
        "after --reset-offsets --to-earliest --execute"
    );
    reset(&["--to-offset", "2"], "--execute");
    reset(&["--shift-by", "1"], "--execute");
    let rows = group_rows(
        &tool(GROUPS, &[&group[..], &["--describe"]].concat()).stdout,
        topic,
    );
    for (p, (current, end, lag)) in &rows {
        let expect = 3.min(latest[p]);
        assert_eq!(
            (*current, *lag),
            (expect, end - expect),
            "partition {p}: {rows:?}"
        );
    }

    // ---- delete-records: partition 0's log start moves to 2 -------------------------------
    assert!(
        latest[&0] >= 2,
        "partition 0 got at least two records: {latest:?}"
    );
    let spec = b.temp_dir().join("delete-records.json");
    std::fs::write(
        &spec,
        format!(r#"{{"partitions":[{{"topic":"{topic}","partition":0,"offset":2}}],"version":1}}"#),
    )
    .unwrap();
    let deleted = tool(
        "org.apache.kafka.tools.DeleteRecordsCommand",
        &[
            "--bootstrap-server",
            bs,
            "--offset-json-file",
            spec.to_str().unwrap(),
        ],
    )
    .stdout;
    assert!(
        deleted.contains(&format!("partition: {topic}-0\tlow_watermark: 2")),
        "kafka-delete-records:\n{deleted}"
    );
    let earliest = offsets(bs, topic, "-2");
    assert_eq!(earliest, BTreeMap::from([(0, 2), (1, 0), (2, 0)]));
}

/// The JSON document kafka-log-dirs prints after its two progress lines.
fn log_dirs_json(stdout: &str) -> Value {
    let line = stdout
        .lines()
        .find(|l| l.trim_start().starts_with('{'))
        .unwrap_or_else(|| panic!("kafka-log-dirs printed no JSON:\n{stdout}"));
    serde_json::from_str(line).unwrap_or_else(|e| panic!("kafka-log-dirs JSON: {e}\n{line}"))
}

#[test]
fn kafka_cli_log_dirs_and_perf_tests() {
    let b = Broker::start();
    let bs = b.bootstrap();
    let bs = bs.as_str();
    let topic = "perf";
    tool(
        TOPICS,
        &[
            "--bootstrap-server",
            bs,
            "--create",
            "--topic",
            topic,
            "--partitions",
            "2",
        ],
    );

    // ---- producer perf test: every record acknowledged at acks=all ------------------------
    let produced = tool(
        "org.apache.kafka.tools.ProducerPerformance",
        &[
            "--topic",
            topic,
            "--num-records",
            "5000",
            "--record-size",
            "100",
            "--throughput",
            "-1",
            "--producer-props",
            &format!("bootstrap.servers={bs}"),
            "acks=all",
        ],
    )
    .stdout;
    assert!(
        produced.lines().any(|l| l.starts_with("5000 records sent")),
        "kafka-producer-perf-test:\n{produced}"
    );

    // ---- consumer perf test: all 5000 read back -------------------------------------------
    let consumed = tool(
        "org.apache.kafka.tools.ConsumerPerformance",
        &[
            "--bootstrap-server",
            bs,
            "--topic",
            topic,
            "--messages",
            "5000",
            "--timeout",
            "20000",
        ],
    )
    .stdout;
    // start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, ...
    let row = consumed
        .lines()
        .find(|l| l.split(',').count() >= 6 && !l.starts_with("start.time"))
        .unwrap_or_else(|| panic!("kafka-consumer-perf-test printed no row:\n{consumed}"));
    let messages: i64 = row.split(',').nth(4).unwrap().trim().parse().unwrap();
    assert_eq!(messages, 5000, "kafka-consumer-perf-test:\n{consumed}");

    // ---- log-dirs: both partitions, in the broker's log dir, with their bytes ------------
    let out = tool(
        "org.apache.kafka.tools.LogDirsCommand",
        &[
            "--bootstrap-server",
            bs,
            "--describe",
            "--topic-list",
            topic,
        ],
    )
    .stdout;
    let doc = log_dirs_json(&out);
    let brokers = doc["brokers"].as_array().unwrap();
    assert_eq!(brokers.len(), 1, "{doc}");
    assert_eq!(brokers[0]["broker"], 1, "{doc}");
    let dirs = brokers[0]["logDirs"].as_array().unwrap();
    assert_eq!(dirs.len(), 1, "{doc}");
    assert_eq!(dirs[0]["error"], Value::Null, "{doc}");
    let expect_dir = b.log_dir();
    assert_eq!(dirs[0]["logDir"], expect_dir.display().to_string(), "{doc}");
    let mut sizes: BTreeMap<String, i64> = BTreeMap::new();
    for p in dirs[0]["partitions"].as_array().unwrap() {
        sizes.insert(
            p["partition"].as_str().unwrap().to_string(),
            p["size"].as_i64().unwrap(),
        );
    }
    assert_eq!(
        sizes.keys().collect::<Vec<_>>(),
        ["perf-0", "perf-1"],
        "{doc}"
    );
    let total: i64 = sizes.values().sum();
    // 5000 records of 100 bytes in v2 batches: more than the payload, less than twice it.
    assert!((500_000..1_000_000).contains(&total), "log sizes {sizes:?}");
}

/// kafka-transactions.sh (issue 18): `list`, `describe` and `describe-producers` against a
/// committed and an open transaction (a producer that exits without committing).
#[test]
fn kafka_cli_transactions() {
    use serde_json::json;
    use skiff_compat::{Python, python};
    const TXNS: &str = "org.apache.kafka.tools.TransactionsCommand";
    let b = Broker::start_with(&[("transaction.state.log.num.partitions", "4")]);
    let bs = b.bootstrap();
    let bs = bs.as_str();
    tool(
        TOPICS,
        &[
            "--bootstrap-server",
            bs,
            "--create",
            "--topic",
            "ktx",
            "--partitions",
            "1",
        ],
    );
    let msgs = json!([{"key": "k", "value": "v", "partition": 0}]);
    let done = python(
        Python::PyPi,
        "txn_ck.py",
        "transactions",
        &json!({"bootstrap": bs, "topic": "ktx", "transactional_id": "cli-done",
                "transactions": [{"messages": msgs, "commit": true}]}),
    );
    assert_eq!(
        done["transactions"][0]["outcome"],
        json!("committed"),
        "{done}"
    );
    let open = python(
        Python::PyPi,
        "txn_ck.py",
        "hang",
        &json!({"bootstrap": bs, "topic": "ktx", "transactional_id": "cli-open",
                "transaction_timeout_ms": 600000, "messages": msgs}),
    );
    assert_eq!(open["reports"].as_array().map(Vec::len), Some(1), "{open}");

    let list = tool(TXNS, &["--bootstrap-server", bs, "list"]).stdout;
    let row = |id: &str| {
        list.lines()
            .find(|l| l.split_whitespace().next() == Some(id))
            .unwrap_or_else(|| panic!("kafka-transactions list has no {id}:\n{list}"))
            .to_string()
    };
    assert!(row("cli-done").contains("CompleteCommit"), "{list}");
    assert!(row("cli-open").contains("Ongoing"), "{list}");

    let describe = tool(
        TXNS,
        &[
            "--bootstrap-server",
            bs,
            "describe",
            "--transactional-id",
            "cli-open",
        ],
    )
    .stdout;
    assert!(
        describe.contains("Ongoing") && describe.contains("ktx-0"),
        "kafka-transactions describe:\n{describe}"
    );
    eprintln!("{list}\n{describe}");
    let producers = tool(
        TXNS,
        &[
            "--bootstrap-server",
            bs,
            "describe-producers",
            "--topic",
            "ktx",
            "--partition",
            "0",
        ],
    )
    .stdout;
    eprintln!("{producers}");
    // Two producers: the committed one's CurrentTransactionStartOffset is None, the open
    // one's is its record's offset (2: after the committed record and its marker).
    let last: Vec<&str> = producers
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().last())
        .collect();
    assert_eq!(
        last,
        ["None", "2"],
        "kafka-transactions describe-producers:\n{producers}"
    );
}

#[test]
fn kafka_cli_leader_election_reports_nothing_to_do() {
    const ELECT: &str = "org.apache.kafka.tools.LeaderElectionCommand";
    let b = Broker::start();
    let bs = b.bootstrap();
    let bs = bs.as_str();
    tool(
        TOPICS,
        &[
            "--bootstrap-server",
            bs,
            "--create",
            "--topic",
            "kelect",
            "--partitions",
            "2",
        ],
    );
    for election in ["preferred", "unclean"] {
        let out = tool(
            ELECT,
            &[
                "--bootstrap-server",
                bs,
                "--election-type",
                election,
                "--topic",
                "kelect",
                "--partition",
                "1",
            ],
        );
        assert!(
            out.stdout
                .contains("Valid replica already elected for partitions kelect-1"),
            "{election}: the tool should report ELECTION_NOT_NEEDED as a no-op:\n{}\n{}",
            out.stdout,
            out.stderr
        );
    }
}
