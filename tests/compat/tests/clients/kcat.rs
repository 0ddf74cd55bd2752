//! kcat (Debian's 1.7.1, librdkafka 2.0.2) driven through its command line.

use serde_json::Value;
use skiff_compat::{Broker, kcat};

use crate::common::{Got, Rec};

/// Produces one record with kcat to `topic`/`partition` (one kcat run per record, because kcat
/// applies `-H` to every record of a run). Keys and values are split on a tab; `-Z` turns the
/// empty key/value into null, so a record with a null key or value must not also have an empty
/// one.
pub fn produce_one(b: &Broker, topic: &str, partition: i32, r: &Rec, extra: &[&str]) {
    let nulls = r.key.is_none() || r.value.is_none();
    assert!(
        !(nulls && (r.key.as_deref() == Some("") || r.value.as_deref() == Some(""))),
        "kcat cannot mix a null and an empty key/value in one record"
    );
    let bootstrap = b.bootstrap();
    let part = partition.to_string();
    let mut args: Vec<String> = ["-P", "-b", &bootstrap, "-t", topic, "-p", &part, "-K", "\t"]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    if nulls {
        args.push("-Z".into());
    }
    for (k, v) in &r.headers {
        args.push("-H".into());
        args.push(match v {
            Some(v) => format!("{k}={v}"),
            None => k.clone(),
        });
    }
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    let line = format!(
        "{}\t{}\n",
        r.key.as_deref().unwrap_or(""),
        r.value.as_deref().unwrap_or("")
    );
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    kcat(&argv, line.as_bytes()).assert_success("kcat -P");
}

/// Produces newline-separated `lines` (values only, no key) in one kcat run.
pub fn produce_lines(b: &Broker, topic: &str, partition: i32, lines: &[String], extra: &[&str]) {
    let bootstrap = b.bootstrap();
    let part = partition.to_string();
    let mut args = vec!["-P", "-b", &bootstrap, "-t", topic, "-p", &part];
    args.extend_from_slice(extra);
    let mut stdin = lines.join("\n");
    stdin.push('\n');
    kcat(&args, stdin.as_bytes()).assert_success("kcat -P");
}

/// Reads `topic`/`partition` from kcat offset spec `offset` (`beginning`, `N`, `-N` = the last
/// N) to the end with `-J -Z` (JSON envelope, nulls as null) and parses every record.
pub fn read(b: &Broker, topic: &str, partition: i32, offset: &str) -> Vec<Got> {
    let bootstrap = b.bootstrap();
    let part = partition.to_string();
    let out = kcat(
        &[
            "-C", "-b", &bootstrap, "-t", topic, "-p", &part, "-o", offset, "-e", "-J", "-Z",
        ],
        b"",
    );
    out.assert_success("kcat -C");
    out.stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Value = serde_json::from_str(l)
                .unwrap_or_else(|e| panic!("kcat -J printed a non-JSON line ({e}): {l}"));
            let headers = v["headers"]
                .as_array()
                .map(|flat| {
                    flat.chunks(2)
                        .map(|kv| {
                            (
                                kv[0].as_str().unwrap_or_default().to_owned(),
                                kv.get(1).and_then(Value::as_str).map(str::to_owned),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            Got {
                partition: v["partition"].as_i64().unwrap_or(-1) as i32,
                offset: v["offset"].as_i64().unwrap_or(-1),
                rec: Rec {
                    key: v["key"].as_str().map(str::to_owned),
                    value: v["payload"].as_str().map(str::to_owned),
                    headers,
                },
                timestamp_type: v["tstype"].as_str().map(|t| {
                    match t {
                        "create" => "CreateTime",
                        "logappend" => "LogAppendTime",
                        other => other,
                    }
                    .to_owned()
                }),
                timestamp: v["ts"].as_i64().unwrap_or(-1),
            }
        })
        .collect()
}

/// `kcat -Q -t topic:partition:timestamp`: the offset kcat prints for the first record at or
/// after `timestamp` (-1 when there is none).
pub fn query_offset(b: &Broker, topic: &str, partition: i32, timestamp: i64) -> i64 {
    let bootstrap = b.bootstrap();
    let spec = format!("{topic}:{partition}:{timestamp}");
    let out = kcat(&["-Q", "-b", &bootstrap, "-t", &spec], b"");
    out.assert_success("kcat -Q");
    // "<topic> [<partition>] offset <offset>"
    let prefix = format!("{topic} [{partition}] offset ");
    out.stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix(&prefix))
        .and_then(|o| o.trim().parse().ok())
        .unwrap_or_else(|| {
            panic!(
                "kcat -Q {spec} printed no offset: {}{}",
                out.stdout, out.stderr
            )
        })
}
