//! `skiff admin`: the operator CLI over a running broker's admin HTTP port.
//!
//! Mental model: each subcommand is one `GET` on the admin API (`--url`, default
//! `http://127.0.0.1:9644`, env `SKIFF_ADMIN_URL`), decoded into the same serde types the
//! server encodes (`skiff_server::admin_http::model`), then rendered by a pure formatter
//! ([`partitions_table`], [`partition_block`]); `--json` prints the response body unchanged.
//! The HTTP client is `ureq` (blocking, plain HTTP only).
//!
//! Exit codes: 0 ok; 1 when the port is unreachable (the message asks whether
//! `skiff.admin.listener` is set), the broker answers an error (its message is printed) or the
//! answer is not the expected JSON; 2 for a bad command line (clap).

use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Subcommand};
use skiff_server::admin_http::model::{ApiError, PartitionDetail, PartitionList};

/// Default admin URL: the loopback address with Skiff's conventional admin port.
pub const DEFAULT_URL: &str = "http://127.0.0.1:9644";
/// Timeout of one admin request (connect + answer).
const REQUEST_MS_MAX: u64 = 10_000;

#[derive(Args, Debug)]
pub struct AdminArgs {
    /// Base URL of the broker's admin HTTP port (`skiff.admin.listener`).
    #[arg(long, global = true, env = "SKIFF_ADMIN_URL", default_value = DEFAULT_URL)]
    url: String,
    /// Print the API's JSON unchanged instead of a table or block.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: AdminCommand,
}

#[derive(Subcommand, Debug)]
enum AdminCommand {
    /// Every hosted partition: offsets, size and segments.
    Partitions,
    /// One partition with every section (producers, replication, ...).
    Partition { topic: String, partition: i32 },
    /// The broker's counters and gauges (fetch sessions, sendfile, under-replicated and
    /// under-min-ISR partitions it leads).
    Stats,
}

/// Runs one `skiff admin ...` command.
pub fn run(args: AdminArgs) -> ExitCode {
    match run_inner(&args) {
        Ok(out) => {
            print!("{out}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("skiff admin: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run_inner(args: &AdminArgs) -> Result<String, String> {
    let base = args.url.trim_end_matches('/');
    let path = match &args.command {
        AdminCommand::Partitions => "/api/v1/partitions".to_string(),
        AdminCommand::Partition { topic, partition } => {
            format!("/api/v1/partitions/{}/{partition}", path_segment(topic))
        }
        AdminCommand::Stats => "/api/v1/stats".to_string(),
    };
    let body = get(base, &path)?;
    if args.json {
        return Ok(if body.ends_with('\n') {
            body
        } else {
            format!("{body}\n")
        });
    }
    let bad = |e: serde_json::Error| format!("unexpected answer from {base}{path}: {e}");
    match &args.command {
        AdminCommand::Partitions => Ok(partitions_table(
            &serde_json::from_str::<PartitionList>(&body).map_err(bad)?,
        )),
        AdminCommand::Partition { .. } => Ok(partition_block(
            &serde_json::from_str::<PartitionDetail>(&body).map_err(bad)?,
        )),
        AdminCommand::Stats => {
            let v: serde_json::Value = serde_json::from_str(&body).map_err(bad)?;
            serde_json::to_string_pretty(&v)
                .map(|t| t + "\n")
                .map_err(|e| e.to_string())
        }
    }
}

/// Percent-encodes everything but Kafka's topic-name characters (`[a-zA-Z0-9._-]`), so an
/// odd argument cannot change the request path.
fn path_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-') {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// One GET: the body of a 2xx answer, or a sentence saying what went wrong.
fn get(base: &str, path: &str) -> Result<String, String> {
    let url = format!("{base}{path}");
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_millis(REQUEST_MS_MAX)))
        .build()
        .into();
    let mut resp = agent.get(&url).call().map_err(|e| {
        format!("cannot reach the admin port at {base} ({e}): is skiff.admin.listener set on the broker, and --url pointing at it?")
    })?;
    let status = resp.status();
    let body = resp
        .body_mut()
        .read_to_string()
        .map_err(|e| format!("cannot read the answer from {url}: {e}"))?;
    if status.is_success() {
        return Ok(body);
    }
    Err(match serde_json::from_str::<ApiError>(&body) {
        Ok(e) => format!("{} ({}, HTTP {})", e.message, e.error, status.as_u16()),
        Err(_) => format!("HTTP {} from {url}", status.as_u16()),
    })
}

/// `skiff admin partitions`: one row per partition, columns aligned.
pub fn partitions_table(list: &PartitionList) -> String {
    let header = [
        "TOPIC",
        "PARTITION",
        "LOG-START",
        "LOG-END",
        "HIGH-WATERMARK",
        "SIZE-BYTES",
        "SEGMENTS",
    ];
    let rows: Vec<[String; 7]> = list
        .partitions
        .iter()
        .map(|p| {
            [
                p.topic.clone(),
                p.partition.to_string(),
                p.log_start_offset.to_string(),
                p.log_end_offset.to_string(),
                p.high_watermark.to_string(),
                p.size_bytes.to_string(),
                p.segment_count.to_string(),
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    let mut out = String::new();
    let mut line = |cells: &[&str]| {
        let mut l = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            if i + 1 == cells.len() {
                l.push_str(cell);
            } else {
                let _ = write!(l, "{cell:<w$}  ");
            }
        }
        out.push_str(l.trim_end());
        out.push('\n');
    };
    line(&header);
    for row in &rows {
        line(&row.iter().map(String::as_str).collect::<Vec<_>>());
    }
    out
}

/// `skiff admin partition <topic> <partition>`: the summary, then each section as indented
/// pretty JSON.
pub fn partition_block(d: &PartitionDetail) -> String {
    let s = &d.summary;
    let mut out = format!("partition {}-{}\n", s.topic, s.partition);
    for (name, value) in [
        ("log start offset", s.log_start_offset.to_string()),
        ("log end offset", s.log_end_offset.to_string()),
        ("high watermark", s.high_watermark.to_string()),
        ("size bytes", s.size_bytes.to_string()),
        ("segments", s.segment_count.to_string()),
    ] {
        let _ = writeln!(out, "  {name:<17} {value}");
    }
    for (name, value) in &d.sections {
        let _ = writeln!(out, "section {name}");
        let pretty = serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string());
        for l in pretty.lines() {
            let _ = writeln!(out, "  {l}");
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;
    use skiff_server::admin_http::model::PartitionSummary;

    use super::*;

    fn p(topic: &str, partition: i32, end: i64) -> PartitionSummary {
        PartitionSummary {
            topic: topic.into(),
            partition,
            log_start_offset: 0,
            log_end_offset: end,
            high_watermark: end,
            size_bytes: 77 * end as u64,
            segment_count: 1,
            quarantined_ranges: 0,
        }
    }

    #[test]
    fn table_aligns_columns() {
        let t = partitions_table(&PartitionList {
            partitions: vec![p("a-long-topic-name", 0, 3), p("b", 11, 12345)],
        });
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(
            lines,
            vec![
                "TOPIC              PARTITION  LOG-START  LOG-END  HIGH-WATERMARK  SIZE-BYTES  SEGMENTS",
                "a-long-topic-name  0          0          3        3               231         1",
                "b                  11         0          12345    12345           950565      1",
            ]
        );
        assert_eq!(
            partitions_table(&PartitionList { partitions: vec![] })
                .lines()
                .count(),
            1
        );
    }

    #[test]
    fn block_shows_every_section() {
        let d = PartitionDetail {
            summary: p("demo", 0, 2),
            sections: [
                ("producers".to_string(), json!({"active": 1})),
                ("zeta".to_string(), json!({"x": [1]})),
            ]
            .into(),
        };
        let b = partition_block(&d);
        assert!(b.starts_with("partition demo-0\n"), "{b}");
        assert!(b.contains("  log end offset    2\n"), "{b}");
        assert!(b.contains("  high watermark    2\n"), "{b}");
        assert!(
            b.contains("section producers\n  {\n    \"active\": 1\n  }\n"),
            "{b}"
        );
        assert!(b.contains("section zeta\n"), "{b}");
    }

    #[test]
    fn path_segments_are_escaped() {
        assert_eq!(path_segment("orders.v1_x-y"), "orders.v1_x-y");
        assert_eq!(path_segment("a/b c"), "a%2Fb%20c");
    }
}
