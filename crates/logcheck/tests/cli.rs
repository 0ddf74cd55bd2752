//! The binary (`logcheck check FILE`): exit codes and output; and malformed histories, which
//! are errors naming their line, never panics or silent guesses.

use std::path::PathBuf;
use std::process::Command;

const VALID: &str = r#"{"t":1,"proc":1,"type":"invoke","f":"send","value":[["send",0,1]]}
{"t":2,"proc":1,"type":"ok","f":"send","value":[["send",0,[0,1]]]}
{"t":3,"proc":2,"type":"ok","f":"poll","value":[["poll",{"0":[[0,1]]}]],"final":true}
"#;

const UNSEEN: &str = r#"{"t":1,"proc":1,"type":"invoke","f":"send","value":[["send",0,1]]}
{"t":2,"proc":1,"type":"ok","f":"send","value":[["send",0,[0,1]]]}
"#;

const G1A: &str = r#"{"t":1,"proc":1,"type":"invoke","f":"send","value":[["send",0,1]]}
{"t":2,"proc":1,"type":"fail","f":"send","value":[["send",0,1]],"error":"INVALID_RECORD"}
{"t":3,"proc":2,"type":"ok","f":"poll","value":[["poll",{"0":[[0,1]]}]]}
"#;

fn write(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("logcheck-cli-{}", std::process::id()));
    let path = dir.join(name);
    if let Err(e) = std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, text)) {
        panic!("cannot write {}: {e}", path.display());
    }
    path
}

/// (exit code, stdout, stderr)
fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_logcheck"))
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run logcheck: {e}"));
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn report(stdout: &str) -> serde_json::Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("report is not JSON ({e}): {stdout}"))
}

#[test]
fn a_valid_history_exits_0_with_valid_true() {
    let p = write("valid.jsonl", VALID);
    let (code, out, _) = run(&["check", p.to_str().expect("utf-8")]);
    assert_eq!(code, 0, "{out}");
    let r = report(&out);
    assert_eq!(r["valid"], true);
    assert_eq!(r["counts"]["lost-write"], 0);
    assert_eq!(r["stats"]["final_drain"], true);
}

#[test]
fn unseen_writes_alone_exit_0_unless_asked() {
    let p = write("unseen.jsonl", UNSEEN);
    let path = p.to_str().expect("utf-8");
    let (code, out, _) = run(&["check", path]);
    assert_eq!(code, 0, "{out}");
    let r = report(&out);
    assert_eq!(
        (r["valid"].clone(), r["all_seen"].clone()),
        (true.into(), false.into())
    );
    assert_eq!(r["unseen"]["count"], 1);
    let (code, _, _) = run(&["check", path, "--fail-on-unseen"]);
    assert_eq!(code, 1);
}

#[test]
fn a_safety_anomaly_exits_1_with_examples() {
    let p = write("g1a.jsonl", G1A);
    let (code, out, _) = run(&["check", p.to_str().expect("utf-8")]);
    assert_eq!(code, 1, "{out}");
    let r = report(&out);
    assert_eq!(r["valid"], false);
    assert_eq!(r["counts"]["G1a"], 1);
    assert_eq!(r["anomalies"]["G1a"][0]["values"], serde_json::json!([1]));
    assert_eq!(r["anomalies"]["G1a"][0]["key"], "0");
}

#[test]
fn usage_missing_files_and_malformed_histories_exit_2() {
    assert_eq!(run(&[]).0, 2);
    assert_eq!(run(&["verify", "x"]).0, 2);
    let (code, _, err) = run(&["check", "/nonexistent/history.jsonl"]);
    assert_eq!(code, 2);
    assert!(err.contains("cannot read"), "{err}");
    let p = write("bad.jsonl", &format!("{VALID}\n{{\"t\":4,\"proc\":1}}\n"));
    let (code, out, err) = run(&["check", p.to_str().expect("utf-8")]);
    assert_eq!((code, out.as_str()), (2, ""));
    assert!(err.contains("line 5: missing `type`"), "{err}");
}

#[test]
fn malformed_lines_name_their_line_and_fault() {
    let cases: &[(&str, &str)] = &[
        ("not json", "not JSON"),
        ("[1,2]", "not a JSON object"),
        (r#"{"proc":1,"type":"ok","f":"send"}"#, "missing `t`"),
        (r#"{"t":1,"type":"ok","f":"send"}"#, "missing `proc`"),
        (
            r#"{"t":1,"proc":[1],"type":"ok","f":"send"}"#,
            "`proc` is neither",
        ),
        (
            r#"{"t":1,"proc":1,"type":"done","f":"send"}"#,
            "unknown type",
        ),
        (
            r#"{"t":1,"proc":1,"type":"ok","f":"read"}"#,
            "unknown f \"read\"",
        ),
        (
            r#"{"t":1,"proc":1,"type":"ok","f":"send","value":7}"#,
            "not a list of micro-ops",
        ),
        (
            r#"{"t":1,"proc":1,"type":"ok","f":"send","value":[["send",0]]}"#,
            "is neither",
        ),
        (
            r#"{"t":1,"proc":1,"type":"ok","f":"send","value":[["send",0,"x"]]}"#,
            "value \"x\"",
        ),
        (
            r#"{"t":1,"proc":1,"type":"ok","f":"send","value":[["poll"]]}"#,
            "in a send event",
        ),
        (
            r#"{"t":1,"proc":1,"type":"ok","f":"poll","value":[["poll",[1]]]}"#,
            "not an object",
        ),
        (
            r#"{"t":1,"proc":1,"type":"ok","f":"poll","value":[["poll",{"0":[[1]]}]]}"#,
            "not [offset, value]",
        ),
        (
            r#"{"t":1,"proc":1,"type":"ok","f":"assign","value":[1.5]}"#,
            "not an integer",
        ),
        (
            r#"{"t":1,"proc":1,"type":"ok","f":"poll","final":"yes"}"#,
            "`final` is not a boolean",
        ),
    ];
    for (line, expected) in cases {
        let text = format!("\n{VALID}{line}\n");
        let err = logcheck::check_str(&text).expect_err(line);
        assert_eq!(err.line, 5, "{line}");
        assert!(err.message.contains(expected), "{line}: {}", err.message);
        assert!(err.to_string().starts_with("history line 5: "), "{err}");
    }
}

#[test]
fn inconsistent_pairings_are_errors() {
    let invoke = r#"{"t":1,"proc":1,"type":"invoke","f":"send","value":[["send",0,1]]}"#;
    let cases: &[(&str, &str)] = &[
        (invoke, "already sent at line 1"),
        (
            r#"{"t":2,"proc":1,"type":"ok","f":"send","value":[["send",0,[0,9]]]}"#,
            "no invoke sent",
        ),
        (
            r#"{"t":2,"proc":1,"type":"ok","f":"send","value":[["send",3,[0,1]]]}"#,
            "sent it to key 0",
        ),
        (
            r#"{"t":2,"proc":2,"type":"ok","f":"send","value":[["send",0,[0,1]]]}"#,
            "another operation",
        ),
        (
            r#"{"t":2,"proc":1,"type":"ok","f":"txn","value":[]}"#,
            "no txn invoke pending",
        ),
    ];
    for (second, expected) in cases {
        let err = logcheck::check_str(&format!("{invoke}\n{second}\n")).expect_err(second);
        assert_eq!(err.line, 2, "{second}");
        assert!(err.message.contains(expected), "{second}: {}", err.message);
    }
    let twice = format!(
        "{invoke}\n{}\n{}\n",
        r#"{"t":2,"proc":1,"type":"ok","f":"send","value":[["send",0,[0,1]]]}"#,
        r#"{"t":3,"proc":1,"type":"ok","f":"send","value":[["send",0,[0,1]]]}"#
    );
    let err = logcheck::check_str(&twice).expect_err("completed twice");
    assert_eq!(err.line, 3);
    assert!(
        err.message.contains("again (first at line 2)"),
        "{}",
        err.message
    );
}
