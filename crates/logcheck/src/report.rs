//! The report: anomaly counts with a few examples each, unseen writes, liveness figures.
//!
//! Mental model: every check pushes [`Case`]s into one [`Findings`] under an [`Anomaly`]
//! kind; the findings keep a count per kind and the first [`MAX_EXAMPLES`] cases (in history
//! order, so a report is deterministic). The [`Report`] is what the binary prints as JSON.
//!
//! Invariants: `valid` is false iff some safety anomaly has a non-zero count; unseen writes
//! are a liveness matter (they may simply not have been read yet) and only clear
//! `all_seen`, never `valid`. Every kind appears in `counts`, zeros included, so "G1a = 0" is
//! visible in the output rather than implied by absence.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::history::{Key, Proc};
use crate::liveness::Liveness;

/// The safety anomalies, in the order of the design note's checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Anomaly {
    /// One offset of a key carries two different values.
    #[serde(rename = "inconsistent-offsets")]
    InconsistentOffsets,
    /// One value sits at two offsets of a key.
    #[serde(rename = "duplicate")]
    Duplicate,
    /// A polled value whose send definitely failed, or whose transaction aborted.
    #[serde(rename = "G1a")]
    G1a,
    /// An acknowledged send below the highest polled index of its key that nobody polled.
    #[serde(rename = "lost-write")]
    LostWrite,
    /// An assign-mode consumer's next poll of a key skipped over known records.
    #[serde(rename = "poll-skip")]
    PollSkip,
    /// An assign-mode consumer's next poll of a key went back (or repeated a record).
    #[serde(rename = "nonmonotonic-poll")]
    NonmonotonicPoll,
    /// Two consecutive records of one key in one poll skip over known records.
    #[serde(rename = "int-poll-skip")]
    IntPollSkip,
    /// Two consecutive records of one key in one poll go back (or repeat).
    #[serde(rename = "int-nonmonotonic-poll")]
    IntNonmonotonicPoll,
    /// An idempotent producer's later acknowledged send to a key got a lower offset.
    #[serde(rename = "nonmonotonic-send")]
    NonmonotonicSend,
    /// The same, for two sends of one transaction.
    #[serde(rename = "int-nonmonotonic-send")]
    IntNonmonotonicSend,
    /// A transaction polled a value it sent itself (uncommitted).
    #[serde(rename = "precommitted-read")]
    PrecommittedRead,
    /// Some but not all of a transaction's sends to a key are visible to the final drain.
    #[serde(rename = "torn-transaction")]
    TornTransaction,
}

/// Every anomaly kind.
pub const ALL: [Anomaly; 12] = [
    Anomaly::InconsistentOffsets,
    Anomaly::Duplicate,
    Anomaly::G1a,
    Anomaly::LostWrite,
    Anomaly::PollSkip,
    Anomaly::NonmonotonicPoll,
    Anomaly::IntPollSkip,
    Anomaly::IntNonmonotonicPoll,
    Anomaly::NonmonotonicSend,
    Anomaly::IntNonmonotonicSend,
    Anomaly::PrecommittedRead,
    Anomaly::TornTransaction,
];

/// Examples kept per kind.
pub const MAX_EXAMPLES: usize = 8;

/// One instance of an anomaly: where it is and who was involved.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Case {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<Key>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub offsets: Vec<i64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<i64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub procs: Vec<Proc>,
    /// History lines of the events involved.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lines: Vec<usize>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub note: String,
}

impl Case {
    pub fn on(key: &Key) -> Case {
        Case {
            key: Some(key.clone()),
            ..Case::default()
        }
    }
}

/// Counts and examples, filled by the checks.
#[derive(Clone, Debug, Default)]
pub struct Findings {
    counts: BTreeMap<Anomaly, usize>,
    examples: BTreeMap<Anomaly, Vec<Case>>,
}

impl Findings {
    pub fn add(&mut self, kind: Anomaly, case: Case) {
        *self.counts.entry(kind).or_default() += 1;
        let examples = self.examples.entry(kind).or_default();
        if examples.len() < MAX_EXAMPLES {
            examples.push(case);
        }
    }

    pub fn count(&self, kind: Anomaly) -> usize {
        self.counts.get(&kind).copied().unwrap_or(0)
    }
}

/// Acknowledged writes nobody polled, above every polled index of their key (below it they
/// are lost writes instead).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Unseen {
    pub count: usize,
    pub by_key: BTreeMap<Key, usize>,
    pub examples: Vec<Case>,
}

/// Sizes of the history, for judging what a clean report means.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Stats {
    pub events: usize,
    pub keys: usize,
    pub sends_ok: usize,
    pub sends_fail: usize,
    /// `info` completions plus invokes that never completed.
    pub sends_indefinite: usize,
    pub polls_ok: usize,
    pub records_polled: usize,
    pub txns_ok: usize,
    pub txns_fail: usize,
    pub txns_indefinite: usize,
    /// `fail` completions whose error is indefinite, counted as `info`.
    pub downgraded_failures: usize,
    /// The history has polls marked `final` (without them, unseen writes say little and the
    /// torn-transaction check is skipped).
    pub final_drain: bool,
}

/// The checker's verdict.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// No safety anomaly.
    pub valid: bool,
    /// No unseen write (liveness; see [`Unseen`]).
    pub all_seen: bool,
    pub counts: BTreeMap<Anomaly, usize>,
    /// Up to [`MAX_EXAMPLES`] cases of every kind that occurred.
    pub anomalies: BTreeMap<Anomaly, Vec<Case>>,
    pub unseen: Unseen,
    pub liveness: Liveness,
    pub stats: Stats,
    /// What the checker could not check, and why.
    pub notes: Vec<String>,
}

impl Report {
    pub fn new(
        findings: Findings,
        unseen: Unseen,
        liveness: Liveness,
        stats: Stats,
        notes: Vec<String>,
    ) -> Report {
        let counts: BTreeMap<Anomaly, usize> =
            ALL.iter().map(|&k| (k, findings.count(k))).collect();
        Report {
            valid: counts.values().all(|&n| n == 0),
            all_seen: unseen.count == 0,
            counts,
            anomalies: findings.examples,
            unseen,
            liveness,
            stats,
            notes,
        }
    }

    /// The kinds with a non-zero count.
    pub fn found(&self) -> BTreeSet<Anomaly> {
        self.counts
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(k, _)| *k)
            .collect()
    }
}
