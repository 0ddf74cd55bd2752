//! Corruption handling over TCP with the real binary (issue 12 items 7 and 8): records are
//! produced, the broker is stopped (SIGTERM or kill -9), one byte of a batch in a sealed
//! segment is flipped on disk and the broker is started again. A consumer (raw Fetch v12)
//! then gets CORRUPT_MESSAGE (2) for exactly the damaged batch's offsets and every other
//! record intact. After a clean stop recovery does not look at sealed segments: the scrubber
//! (short timers here) finds the damage on the running broker and the admin view shows it;
//! after kill -9 recovery finds it at load.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::Value;
use skiff_testkit::client::{DEADLINE, records_of};
use skiff_testkit::{Broker, Conn};

const TOPIC: &str = "corrupt";
const BATCHES: usize = 500;
const PER_BATCH: usize = 10;
const CORRUPT_MESSAGE: i16 = 2;

/// A broker on `data`; `scrub` runs the scrubber. The first broker of a scenario does not:
/// a segment it verified before the stop would not be verified again after the restart
/// (progress survives restarts), so whether the damage is found would depend on timing.
fn spawn(data: &Path, scrub: bool) -> Broker {
    Broker::builder()
        .binary(env!("CARGO_BIN_EXE_skiff"))
        .log_dirs(&[data])
        .admin(true)
        .set(
            "skiff.log.scrub.enable",
            if scrub { "true" } else { "false" },
        )
        .set("skiff.log.scrub.backoff.ms", "50")
        // The recovery point stays at 0 (written once, at the first start), so that recovery
        // after kill -9 re-validates every segment deterministically.
        .set("log.flush.offset.checkpoint.interval.ms", "3600000")
        .set("replica.high.watermark.checkpoint.interval.ms", "3600000")
        .set("log.flush.start.offset.checkpoint.interval.ms", "3600000")
        .rust_log("warn")
        .start()
}

fn stop(mut b: Broker, clean: bool) {
    if clean {
        assert!(b.sigterm().success());
    } else {
        assert!(!b.kill9().success());
    }
}

fn produce(c: &mut Conn, n: usize) {
    let mut b = skiff_record::BatchBuilder::new(skiff_record::BatchOptions::default());
    for i in 0..PER_BATCH {
        b.append(
            1_700_000_000_000,
            Some(format!("{n}/{i}").as_bytes()),
            Some(&[b'v'; 1000]),
            &[],
        );
    }
    let (code, base) = c.produce(TOPIC, 0, Bytes::from(b.build().unwrap()));
    assert_eq!((code, base), (0, (n * PER_BATCH) as i64));
}

/// Records served as (offset, key) and offsets answered with an error (with its code).
type Consumed = (Vec<(i64, String)>, Vec<(i64, i16)>);

/// Consumes everything: (offset, key) of every record served, and every offset answered with
/// an error (with its code). After an error the consumer seeks to the next offset, as an
/// application handling CORRUPT_MESSAGE would.
fn consume(port: u16) -> Consumed {
    let mut c = Conn::open(port);
    let mut out = Vec::new();
    let mut errors = Vec::new();
    let mut offset = 0i64;
    let end = (BATCHES * PER_BATCH) as i64;
    while offset < end {
        let p = &c.fetch(TOPIC, 0, offset, 1 << 20);
        if p.error_code != 0 {
            errors.push((offset, p.error_code));
            offset += 1;
            continue;
        }
        let bytes = records_of(p);
        let before = out.len();
        for b in skiff_record::batches(&bytes) {
            let Ok((_, view)) = b else { break };
            view.verify_crc().expect("no corrupt batch is ever served");
            let data = view.records_data(1 << 20).unwrap();
            for rec in skiff_record::records(&data, view.records_count()) {
                let rec = rec.unwrap();
                let o = view.base_offset() + i64::from(rec.offset_delta);
                if o >= offset {
                    out.push((o, String::from_utf8(rec.key.unwrap().to_vec()).unwrap()));
                    offset = o + 1;
                }
            }
        }
        assert!(out.len() > before, "no progress at {offset}");
    }
    (out, errors)
}

fn partition_dir(data: &Path) -> PathBuf {
    data.join(format!("{TOPIC}-0"))
}

/// Flips one byte in the records of the 6th batch of the 2nd segment; returns its offsets.
fn flip_a_byte(data: &Path) -> (i64, i64) {
    let mut logs: Vec<PathBuf> = std::fs::read_dir(partition_dir(data))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    logs.sort();
    assert!(logs.len() >= 4, "several segments: {logs:?}");
    let bytes = std::fs::read(&logs[1]).unwrap();
    let (pos, view) = skiff_record::batches(&bytes).nth(5).unwrap().unwrap();
    let range = (view.base_offset(), view.last_offset() + 1);
    let at = pos + view.size() - 7;
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&logs[1])
        .unwrap();
    f.write_all_at(&[bytes[at] ^ 0x20], at as u64).unwrap();
    range
}

fn integrity(admin: u16) -> Value {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(DEADLINE))
        .build()
        .into();
    let body = agent
        .get(format!(
            "http://127.0.0.1:{admin}/api/v1/partitions/{TOPIC}/0"
        ))
        .call()
        .unwrap()
        .body_mut()
        .read_to_string()
        .unwrap();
    let v: Value = serde_json::from_str(&body).unwrap();
    v["sections"]["integrity"].clone()
}

fn scenario(clean: bool) {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let b = spawn(&data, false);
    let mut c = Conn::open(b.port());
    c.create_topic(TOPIC, 1, &[("segment.bytes", "1048576")]);
    for n in 0..BATCHES {
        produce(&mut c, n);
    }
    drop(c);
    stop(b, clean);
    let (start, end) = flip_a_byte(&data);

    let b = spawn(&data, true);
    // The damage is quarantined: by the scrubber after a clean stop, by recovery after kill -9.
    let deadline = Instant::now() + DEADLINE;
    let q = loop {
        let v = integrity(b.admin_port().unwrap());
        if v["quarantined_ranges"] == 1 {
            break v;
        }
        assert!(!clean || Instant::now() < deadline, "not found: {v}");
        assert!(clean, "recovery quarantined it at load: {v}");
        std::thread::sleep(Duration::from_millis(50));
    };
    let r = &q["quarantined"][0];
    assert_eq!(
        (r["start_offset"].as_i64(), r["end_offset"].as_i64()),
        (Some(start), Some(end))
    );
    assert_eq!(r["reason"], "crc");
    assert_eq!(r["found_by"], if clean { "scrub" } else { "recovery" });
    if clean {
        assert_eq!(q["scrub"]["corrupt_batches_found"], 1, "{q}");
    }

    let (records, errors) = consume(b.port());
    let want_errors: Vec<(i64, i16)> = (start..end).map(|o| (o, CORRUPT_MESSAGE)).collect();
    assert_eq!(
        errors, want_errors,
        "exactly the damaged batch answers CORRUPT_MESSAGE"
    );
    let want: Vec<(i64, String)> = (0..BATCHES * PER_BATCH)
        .map(|o| o as i64)
        .filter(|o| !(start..end).contains(o))
        .map(|o| {
            (
                o,
                format!("{}/{}", o as usize / PER_BATCH, o as usize % PER_BATCH),
            )
        })
        .collect();
    assert!(records == want, "every other record intact");
    // The .corrupt file exists after recovery (the scrubber leaves the bytes in place).
    let corrupt = std::fs::read_dir(partition_dir(&data))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .to_string_lossy()
                .ends_with(".corrupt")
        })
        .count();
    assert_eq!(corrupt, usize::from(!clean));
    stop(b, true);
}

#[test]
fn e2e_flipped_byte_after_a_clean_stop_is_found_by_the_scrubber() {
    scenario(true);
}

#[test]
fn e2e_flipped_byte_after_kill_9_is_quarantined_by_recovery() {
    scenario(false);
}
