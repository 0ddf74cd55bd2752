//! The end of a chaos test: the logcheck report's figures printed, then the verdict (no
//! safety anomaly, a complete final drain, every acknowledged write seen, enough writes to
//! mean something, writes acknowledged again after the last heal), each failure naming the
//! kept history.

use std::path::Path;
use std::time::Duration;

use logcheck::Report;
use serde_json::{Value, json};

use crate::probe::{ns_secs, secs};

pub fn summary(
    n: &str,
    r: &Report,
    driver: &Value,
    notes: &[String],
    phases: &[(String, Duration)],
    total: Duration,
) {
    let found: Vec<String> = r
        .counts
        .iter()
        .filter(|(_, c)| **c > 0)
        .map(|(k, c)| format!("{k:?}={c}"))
        .collect();
    let s = &r.stats;
    eprintln!("[{n}] ===== summary =====");
    eprintln!(
        "[{n}] logcheck: valid={} all_seen={} anomalies: {}",
        r.valid,
        r.all_seen,
        if found.is_empty() {
            "none (all 12 kinds 0)".to_string()
        } else {
            found.join(", ")
        }
    );
    eprintln!(
        "[{n}] stats: {} events, {} keys, sends ok/fail/indefinite {}/{}/{}, {} polls, {} records polled, {} downgraded failures, final drain {}",
        s.events,
        s.keys,
        s.sends_ok,
        s.sends_fail,
        s.sends_indefinite,
        s.polls_ok,
        s.records_polled,
        s.downgraded_failures,
        s.final_drain
    );
    let l = &r.liveness;
    let longest = l
        .longest_unavailability
        .as_ref()
        .map_or("-".to_string(), |u| {
            format!("{} on key {}", ns_secs(Some(u.duration)), u.key)
        });
    eprintln!(
        "[{n}] liveness: heal -> first ok send {}, heal -> all seen {}, unseen before heal {}, longest unavailability {longest}",
        ns_secs(l.heal_to_first_ok_send),
        ns_secs(l.heal_to_all_seen),
        l.unseen_before_heal
    );
    eprintln!(
        "[{n}] driver: sent {} ok {} fail {} info {} crashes {} poll errors {} drained {}",
        driver["sent"],
        driver["ok"],
        driver["fail"],
        driver["info"],
        driver["crashes"],
        driver["poll_errors"],
        driver["drained"]
    );
    for note in notes {
        eprintln!("[{n}] note: {note}");
    }
    let phases: Vec<String> = phases
        .iter()
        .map(|(w, d)| format!("{w}: {}", secs(*d)))
        .collect();
    eprintln!("[{n}] phases: {}", phases.join("; "));
    eprintln!("[{n}] total: {}", secs(total));
    for note in &r.notes {
        eprintln!("[{n}] logcheck note: {note}");
    }
}

pub fn verdict(n: &str, r: &Report, driver: &Value, history: &Path) {
    let kept = format!("history: {} (kept with the nodes' logs)", history.display());
    if !r.valid {
        let examples = serde_json::to_string_pretty(&r.anomalies).unwrap_or_else(|e| e.to_string());
        panic!(
            "{n}: logcheck found safety anomalies {:?}\nexamples:\n{examples}\n{kept}",
            r.found()
        );
    }
    assert!(
        r.stats.final_drain && driver["drained"] == json!(true),
        "{n}: the final drain did not reach every high watermark: {}\n{kept}",
        driver["drain_positions"]
    );
    if !r.all_seen {
        let unseen = serde_json::to_string_pretty(&r.unseen).unwrap_or_else(|e| e.to_string());
        panic!("{n}: acknowledged writes never seen after the drain:\n{unseen}\n{kept}");
    }
    assert!(
        r.stats.sends_ok >= 500,
        "{n}: only {} acknowledged sends: the run proved little\n{kept}",
        r.stats.sends_ok
    );
    assert!(
        r.liveness.heal_to_first_ok_send.is_some(),
        "{n}: no acknowledged send after the final heal\n{kept}"
    );
}
