//! kcat's balanced consumer (`kcat -G`, Debian's librdkafka 2.0.2, which enables it only if
//! FindCoordinator/JoinGroup/SyncGroup/Heartbeat/LeaveGroup include v0): it joins, gets every
//! partition, consumes, commits on exit, and a second run resumes at the commits.

use std::collections::BTreeSet;

use serde_json::json;
use skiff_compat::{Python, kcat};

use crate::{by_partition, ck, create_topic, group_broker};

fn kcat_group(bootstrap: &str, count: usize) -> BTreeSet<(i64, i64)> {
    let n = count.to_string();
    let out = kcat(
        &[
            "-b",
            bootstrap,
            "-G",
            "kcat-group",
            "-X",
            "auto.offset.reset=earliest",
            "-c",
            &n,
            "-f",
            "%p %o %s\\n",
            "kc",
        ],
        b"",
    );
    out.assert_success("kcat -G");
    let got: BTreeSet<(i64, i64)> = out
        .stdout
        .lines()
        .map(|l| {
            let mut it = l.split(' ');
            let p = it.next().unwrap().parse().unwrap();
            let o = it.next().unwrap().parse().unwrap();
            (p, o)
        })
        .collect();
    assert_eq!(
        got.len(),
        count,
        "kcat output:\n{}\n{}",
        out.stdout,
        out.stderr
    );
    got
}

#[test]
fn kcat_balanced_consumer_consumes_commits_and_resumes() {
    let b = group_broker();
    create_topic(&b, "kc", 4);
    let p =
        json!({"bootstrap": b.bootstrap(), "topic": "kc", "partitions": 4, "group": "kcat-group"});
    let produce = |count: i64| {
        let mut q = p.clone();
        q["count"] = json!(count);
        ck(Python::PyPi, "produce", &q);
    };
    produce(20);
    let first = kcat_group(&b.bootstrap(), 20);
    assert_eq!(
        first,
        (0..4).flat_map(|p| (0..5).map(move |o| (p, o))).collect()
    );
    assert_eq!(
        by_partition(&ck(Python::PyPi, "committed", &p)["committed"], 4),
        vec![5; 4]
    );
    produce(12);
    let second = kcat_group(&b.bootstrap(), 12);
    assert!(
        second.iter().all(|(_, o)| *o >= 5),
        "re-read committed records: {second:?}"
    );
    assert_eq!(
        by_partition(&ck(Python::PyPi, "committed", &p)["committed"], 4),
        vec![8; 4]
    );
}
