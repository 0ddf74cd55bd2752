//! franz-go's own integration tests against Skiff (issue 14 item 3): the `kgo` package's test
//! binary (franz-go v1.22.3, built by `scripts/franz-go-kgo.sh` into target/franz-go/kgo.test)
//! runs with `KGO_SEEDS` pointing at a Skiff broker, and every test's outcome is compared
//! with `tests/compat/franz-go/expectations.txt`.
//!
//! Mental model: the expectations file lists each kgo test that talks to a broker with its
//! expected outcome (pass, fail with the issue that fixes it, or skip with why) and the run it
//! belongs to. Runs `a`, `b` and `t` are CI (each under a minute on two cores, kgo's own
//! `t.Parallel` inside); run `full`, expected failures that take long to fail, runs only with
//! `SKIFF_FRANZ_FULL=1` (the opt-in tier), each test in its own process with a deadline. A
//! test whose outcome differs from the file fails the Rust test, which names it "newly
//! passing" (remove its expectation) or "newly failing" and prints the kgo output.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use skiff_compat::{Broker, repo_root, run};

const BUILD: &str =
    "run scripts/franz-go-kgo.sh (./scripts/test.sh does) to build franz-go's kgo tests";

/// Records per kgo ETL test (KGO_TEST_RECORDS): small, for CI.
const RECORDS: &str = "500";

#[derive(Debug)]
struct Expectation {
    outcome: String,
    run: String,
    note: String,
}

fn expectations() -> BTreeMap<String, Expectation> {
    let path = repo_root().join("tests/compat/franz-go/expectations.txt");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut f = line.split_whitespace();
        let (name, outcome, run) = (f.next().unwrap(), f.next().unwrap(), f.next().unwrap());
        assert!(
            matches!(outcome, "pass" | "fail" | "skip") && matches!(run, "a" | "b" | "t" | "full"),
            "bad expectation line: {line}"
        );
        let note: Vec<&str> = f.collect();
        assert!(
            outcome != "fail" || note.first().is_some_and(|n| n.starts_with('#')),
            "an expected failure names its issue: {line}"
        );
        let e = Expectation {
            outcome: outcome.into(),
            run: run.into(),
            note: note.join(" "),
        };
        assert!(
            out.insert(name.to_string(), e).is_none(),
            "listed twice: {name}"
        );
    }
    out
}

fn kgo_test() -> (PathBuf, PathBuf) {
    // Where scripts/franz-go-kgo.sh builds it (like target/kafka-ref, always under the
    // repository's own target/).
    let dir = repo_root().join("target/franz-go");
    let bin = dir.join("kgo.test");
    let src = std::fs::read_to_string(dir.join("kgo.src")).unwrap_or_default();
    assert!(
        bin.exists() && !src.trim().is_empty(),
        "{} is missing: {BUILD}",
        bin.display()
    );
    (bin, PathBuf::from(src.trim()))
}

/// Runs the kgo tests `names` against `broker`: name -> outcome ("pass"/"fail"/"skip") of
/// every top-level test that reported one, and the whole output.
fn run_kgo(
    broker: &Broker,
    names: &[&str],
    timeout: Duration,
) -> (BTreeMap<String, String>, String) {
    let (bin, src) = kgo_test();
    let pattern = format!("^({})$", names.join("|"));
    let mut cmd = Command::new(bin);
    cmd.current_dir(src)
        .arg("-test.v")
        .arg("-test.run")
        .arg(&pattern)
        // kgo's tests are t.Parallel and mostly wait on the broker (group timers): more than
        // GOMAXPROCS (2 here) at once.
        .arg("-test.parallel")
        .arg("8")
        .arg("-test.timeout")
        .arg(format!("{}s", timeout.as_secs()))
        .env("KGO_SEEDS", broker.bootstrap())
        .env("KGO_TEST_RF", "1")
        .env("KGO_TEST_RECORDS", RECORDS);
    let out = run(
        &mut cmd,
        b"",
        timeout + Duration::from_secs(15),
        "kgo.test",
        BUILD,
    );
    let mut outcomes = BTreeMap::new();
    for line in out.stdout.lines() {
        // Top-level results only ("--- PASS: Name (1.2s)"); subtests are indented.
        let Some(rest) = line.strip_prefix("--- ") else {
            continue;
        };
        let Some((verdict, tail)) = rest.split_once(": ") else {
            continue;
        };
        let name = tail.split_whitespace().next().unwrap_or_default();
        outcomes.insert(name.to_string(), verdict.to_lowercase());
    }
    (outcomes, out.stdout + &out.stderr)
}

/// The tail of kgo's output around `name`'s result (what to read when it changed).
fn excerpt(output: &str, name: &str) -> String {
    let lines: Vec<&str> = output.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("--- ") && l.contains(&format!(" {name} ")))
        .unwrap_or(lines.len());
    lines[at.saturating_sub(25)..(at + 1).min(lines.len())].join("\n")
}

fn check_run(run_name: &str, timeout: Duration) {
    let all = expectations();
    let names: Vec<&str> = all
        .iter()
        .filter(|(_, e)| e.run == run_name)
        .map(|(n, _)| n.as_str())
        .collect();
    assert!(!names.is_empty(), "no test in run {run_name}");
    let broker = Broker::start();
    let started = std::time::Instant::now();
    let (got, output) = run_kgo(&broker, &names, timeout);
    println!(
        "franz-go run {run_name}: {} tests in {:?}",
        names.len(),
        started.elapsed()
    );
    let mut changes = Vec::new();
    for name in &names {
        let want = &all[*name];
        let outcome = got
            .get(*name)
            .map_or("no result (timed out?)", String::as_str);
        if outcome == want.outcome {
            continue;
        }
        let kind = if outcome == "pass" {
            "newly passing"
        } else {
            "newly failing"
        };
        changes.push(format!(
            "{kind}: {name}: expected {} ({}), got {outcome}\n{}",
            want.outcome,
            want.note,
            excerpt(&output, name)
        ));
    }
    assert!(
        changes.is_empty(),
        "franz-go kgo outcomes differ from tests/compat/franz-go/expectations.txt:\n{}\n--- broker log ---\n{}",
        changes.join("\n\n"),
        broker.logs_tail(40)
    );
}

#[test]
fn franz_go_kgo_group_tests() {
    check_run("a", Duration::from_secs(50));
}

#[test]
fn franz_go_kgo_produce_consume_admin_tests() {
    check_run("b", Duration::from_secs(50));
}

/// Run `t` (issue 18): TestTxnEtl, kgo's exactly-once ETL through group transact sessions,
/// alone (22 s on a quiet machine; beside run a's group ETLs it overran a's deadline in CI).
#[test]
fn franz_go_kgo_transaction_tests() {
    check_run("t", Duration::from_secs(55));
}

/// The opt-in tier (`SKIFF_FRANZ_FULL=1`): the expected failures, each alone with a deadline,
/// reported in a table; a newly passing one fails the test so its expectation is removed.
#[test]
fn franz_go_kgo_expected_failures_opt_in() {
    if std::env::var("SKIFF_FRANZ_FULL").as_deref() != Ok("1") {
        println!("skipped: set SKIFF_FRANZ_FULL=1 to run franz-go's expected failures");
        return;
    }
    let all = expectations();
    let broker = Broker::start();
    let mut newly = Vec::new();
    for (name, e) in all.iter().filter(|(_, e)| e.run == "full") {
        let (got, _) = run_kgo(&broker, &[name], Duration::from_secs(120));
        let outcome = got.get(name).map_or("timed out", String::as_str);
        println!(
            "{name:45} expected {:5} got {outcome:10} {}",
            e.outcome, e.note
        );
        if outcome == "pass" && e.outcome != "pass" {
            newly.push(name.clone());
        }
    }
    assert!(
        newly.is_empty(),
        "newly passing (update expectations.txt): {newly:?}"
    );
}
