//! `logcheck check HISTORY.jsonl [--fail-on-unseen]`: checks a history and prints the JSON
//! report (see the library docs). The only I/O of the crate: reading the file, printing.
//!
//! Exit codes: 0 valid (unseen writes allowed unless `--fail-on-unseen`), 1 a safety anomaly
//! (or unseen writes with `--fail-on-unseen`), 2 usage, unreadable file or malformed history
//! (the message names the line).

use std::process::ExitCode;

const USAGE: &str = "usage: logcheck check HISTORY.jsonl [--fail-on-unseen]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (path, fail_on_unseen) = match args.as_slice() {
        [cmd, path] if cmd == "check" => (path, false),
        [cmd, path, flag] if cmd == "check" && flag == "--fail-on-unseen" => (path, true),
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("logcheck: cannot read {path}: {e}");
            return ExitCode::from(2);
        }
    };
    let report = match logcheck::check_str(&text) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("logcheck: {path}: {e}");
            return ExitCode::from(2);
        }
    };
    match serde_json::to_string_pretty(&report) {
        Ok(json) => println!("{json}"),
        Err(e) => {
            eprintln!("logcheck: cannot encode the report: {e}");
            return ExitCode::from(2);
        }
    }
    if !report.valid || (fail_on_unseen && !report.all_seen) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
