//! `logcheck`: a Jepsen-style checker for Kafka queue histories (issue 17; the design note
//! `design/reliability.md`, "History checking").
//!
//! Mental model: a workload driver (`tests/compat/py/logcheck_driver.py`) runs real clients
//! against the broker while faults are injected and writes every client call as JSON lines
//! ([`history`]). Because a partition is a log with offsets, the clients' answers pin values to
//! positions, and most of Kafka's promises become checks on those positions, exact and fast (no
//! search, unlike a linearizability checker). The pipeline is pure: text -> [`history::parse`]
//! -> [`model::Model`] (writes paired with their completions, reads, transactions) ->
//! [`version::Orders`] (each key's log: offset -> values, dense indices) -> the checks, in the
//! note's order:
//!
//! 1. `inconsistent-offsets`, `duplicate` ([`version`]);
//! 2. `G1a`, aborted reads; only *definite* failures count, see [`outcome`] ([`writes`]);
//! 3. `lost-write` ([`writes`]);
//! 4. unseen writes: liveness, reported apart ([`writes`]);
//! 5. `poll-skip`, `nonmonotonic-poll` (assign mode), `int-poll-skip`,
//!    `int-nonmonotonic-poll` ([`order`]);
//! 6. `nonmonotonic-send`, `int-nonmonotonic-send`: idempotent producers ([`order`]);
//! 7. `precommitted-read`, `torn-transaction`; aborted values visible are G1a ([`txn`]);
//! 8. not done: the G1c dependency graph (optional in the note);
//! 9. heal-to-recovery times and the longest per-key unavailability ([`liveness`]).
//!
//! The [`report::Report`] says `valid: false` iff a safety anomaly was found; unseen writes
//! only clear `all_seen`. Invariant: no I/O and no clock here (the binary reads the file), and
//! no panic on any input: a malformed history is a [`HistoryError`] naming its line.

pub mod history;
pub mod liveness;
pub mod model;
pub mod order;
pub mod outcome;
pub mod report;
pub mod txn;
pub mod version;
pub mod writes;

pub use history::{Event, HistoryError};
pub use report::{Anomaly, Report};

use model::Model;
use outcome::Outcome;
use report::{Findings, Stats};

/// Parses and checks a JSON-lines history.
pub fn check_str(text: &str) -> Result<Report, HistoryError> {
    check(&history::parse(text)?)
}

/// Checks a parsed history (events in history order).
pub fn check(events: &[Event]) -> Result<Report, HistoryError> {
    let m = Model::build(events)?;
    let orders = version::Orders::build(&m);
    let mut findings = Findings::default();
    let mut notes = Vec::new();

    version::check(&orders, &mut findings);
    writes::check_aborted_reads(&m, &mut findings);
    let unseen = writes::check_lost_and_unseen(&m, &orders, &mut findings);
    order::check_consumers(events, &m, &orders, &mut findings);
    order::check_producers(&m, &mut findings);
    txn::check_precommitted(&m, &mut findings);
    let drained = txn::check_torn(&m, &mut findings);
    if !drained {
        notes.push(
            "no final drain (polls marked \"final\"): unseen writes may just be unread, and \
             torn transactions were not checked"
                .to_string(),
        );
    }
    if m.heals.is_empty() {
        notes.push("no heal marker: the heal-to-recovery figures are null".to_string());
    }
    let liveness = liveness::measure(&m);
    let stats = stats(&m, &orders, drained);
    Ok(Report::new(findings, unseen, liveness, stats, notes))
}

fn stats(m: &Model, orders: &version::Orders, final_drain: bool) -> Stats {
    let mut s = Stats {
        events: m.events,
        keys: orders.logs.len(),
        downgraded_failures: m.downgraded,
        final_drain,
        polls_ok: m.polls.len(),
        records_polled: m
            .polls
            .iter()
            .flat_map(|p| &p.reads)
            .map(|(_, r)| r.len())
            .sum(),
        ..Stats::default()
    };
    for w in m.writers.iter().filter(|w| w.txn.is_none()) {
        match w.outcome {
            Outcome::Ok => s.sends_ok += 1,
            Outcome::Fail => s.sends_fail += 1,
            Outcome::Info | Outcome::Pending => s.sends_indefinite += 1,
        }
    }
    for t in &m.txns {
        match t.outcome {
            Outcome::Ok => s.txns_ok += 1,
            Outcome::Fail => s.txns_fail += 1,
            Outcome::Info | Outcome::Pending => s.txns_indefinite += 1,
        }
    }
    s
}
