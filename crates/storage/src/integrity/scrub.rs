//! Scrub bookkeeping: which sealed segments were verified when, and the pure choice of the
//! next one to verify.
//!
//! Mental model: every partition keeps `scrub-checkpoint` in its directory, one line
//! `<segment base> <verified at ms>` per sealed segment whose CRCs were last checked then
//! (Kafka's checkpoint text format, atomically replaced). The scrubber
//! ([`crate::integrity::scrubber`]) asks [`next_segment`] for work: a sealed segment never
//! verified first (oldest partition order, then lowest base), else the one verified longest
//! ago if that is at least `interval_ms` ago, else nothing until [`ScrubDecision::Wait`] says.
//! Progress therefore survives restarts: a restart does not re-verify what was verified within
//! the interval. Entries of segments that no longer exist are dropped when the state is saved.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::checkpoint::{CHECKPOINT_VERSION, CheckpointEntry, CheckpointFile, fields};

/// The per-partition scrub progress file.
pub const SCRUB_FILE: &str = "scrub-checkpoint";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Verified {
    base: i64,
    at_ms: i64,
}

impl CheckpointEntry for Verified {
    fn to_line(&self) -> String {
        format!("{} {}", self.base, self.at_ms)
    }
    fn from_line(line: &str) -> Result<Self, String> {
        let [b, t] = fields::<2>(line)?;
        Ok(Verified {
            base: b.parse().map_err(|_| format!("bad base {b:?}"))?,
            at_ms: t.parse().map_err(|_| format!("bad time {t:?}"))?,
        })
    }
}

/// What the admin view shows of one partition's scrubbing.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ScrubStatus {
    /// When the scrubber last verified a segment of this partition (ms), if ever.
    pub last_scrub_ms: Option<i64>,
    /// Sealed segments verified within the state (at any time).
    pub segments_verified: usize,
    /// Corrupt regions the scrubber found in this partition since the broker started.
    pub corrupt_batches_found: u64,
    /// Bytes verified since the broker started.
    pub bytes_verified: u64,
}

/// One partition's scrub progress.
#[derive(Debug)]
pub struct ScrubState {
    path: PathBuf,
    verified: BTreeMap<i64, i64>,
    pub corrupt_found: u64,
    pub bytes_verified: u64,
}

impl ScrubState {
    pub fn load(dir: &Path) -> ScrubState {
        let path = dir.join(SCRUB_FILE);
        let entries: Vec<Verified> = CheckpointFile::new(path.clone(), CHECKPOINT_VERSION)
            .read()
            .unwrap_or_else(|e| {
                tracing::warn!(path = %path.display(), error = %e, "unreadable scrub progress; segments will be verified again");
                Vec::new()
            });
        ScrubState {
            path,
            verified: entries.into_iter().map(|v| (v.base, v.at_ms)).collect(),
            corrupt_found: 0,
            bytes_verified: 0,
        }
    }

    pub fn verified_at(&self, base: i64) -> Option<i64> {
        self.verified.get(&base).copied()
    }

    /// Forgets that `base` was verified (a read found damage there: verify it next).
    pub fn unmark(&mut self, base: i64) {
        self.verified.remove(&base);
    }

    /// Records a verified segment and saves the state, keeping only `live` segments.
    pub fn mark(&mut self, base: i64, now_ms: i64, live: &[i64]) -> std::io::Result<()> {
        self.verified.insert(base, now_ms);
        self.verified.retain(|b, _| live.binary_search(b).is_ok());
        let entries: Vec<Verified> = self
            .verified
            .iter()
            .map(|(&base, &at_ms)| Verified { base, at_ms })
            .collect();
        CheckpointFile::new(self.path.clone(), CHECKPOINT_VERSION).write(entries.iter())
    }

    pub fn status(&self) -> ScrubStatus {
        ScrubStatus {
            last_scrub_ms: self.verified.values().copied().max(),
            segments_verified: self.verified.len(),
            corrupt_batches_found: self.corrupt_found,
            bytes_verified: self.bytes_verified,
        }
    }
}

/// A sealed segment the scrubber could verify.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// Index of the partition in the caller's list.
    pub partition: usize,
    pub base: i64,
    pub verified_at_ms: Option<i64>,
}

/// What the scrubber should do next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScrubDecision {
    /// Verify this candidate (index into the list).
    Verify(usize),
    /// Nothing due; the earliest candidate falls due at this time (`None`: no candidates).
    Wait(Option<i64>),
}

/// The pure choice: never-verified first (list order), else the least recently verified one
/// whose age reached `interval_ms`.
pub fn next_segment(candidates: &[Candidate], now_ms: i64, interval_ms: i64) -> ScrubDecision {
    if let Some(i) = candidates.iter().position(|c| c.verified_at_ms.is_none()) {
        return ScrubDecision::Verify(i);
    }
    let oldest = candidates
        .iter()
        .enumerate()
        .filter_map(|(i, c)| c.verified_at_ms.map(|t| (t, i)))
        .min();
    match oldest {
        Some((t, i)) if now_ms.saturating_sub(t) >= interval_ms => ScrubDecision::Verify(i),
        Some((t, _)) => ScrubDecision::Wait(Some(t.saturating_add(interval_ms))),
        None => ScrubDecision::Wait(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(partition: usize, base: i64, verified_at_ms: Option<i64>) -> Candidate {
        Candidate {
            partition,
            base,
            verified_at_ms,
        }
    }

    #[test]
    fn next_segment_table() {
        use ScrubDecision::*;
        let day = 86_400_000;
        let cases: Vec<(&str, Vec<Candidate>, i64, ScrubDecision)> = vec![
            ("nothing sealed", vec![], 0, Wait(None)),
            (
                "never verified first, in list order",
                vec![c(0, 0, Some(5)), c(1, 0, None), c(1, 10, None)],
                10,
                Verify(1),
            ),
            (
                "all fresh: wait for the oldest",
                vec![c(0, 0, Some(3 * day)), c(0, 9, Some(day))],
                2 * day,
                Wait(Some(8 * day)),
            ),
            (
                "oldest is due",
                vec![c(0, 0, Some(3 * day)), c(0, 9, Some(day))],
                8 * day,
                Verify(1),
            ),
            (
                "exactly at the interval is due",
                vec![c(0, 0, Some(0))],
                7 * day,
                Verify(0),
            ),
        ];
        for (what, cands, now, want) in cases {
            assert_eq!(next_segment(&cands, now, 7 * day), want, "{what}");
        }
    }

    #[test]
    fn progress_survives_a_reload_and_drops_gone_segments() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = ScrubState::load(dir.path());
        s.mark(0, 100, &[0, 50]).unwrap();
        s.mark(50, 200, &[0, 50]).unwrap();
        let again = ScrubState::load(dir.path());
        assert_eq!(
            (again.verified_at(0), again.verified_at(50)),
            (Some(100), Some(200))
        );
        let mut again = again;
        again.mark(90, 300, &[50, 90]).unwrap();
        let s = ScrubState::load(dir.path());
        assert_eq!(s.verified_at(0), None, "retention deleted segment 0");
        assert_eq!(s.status().segments_verified, 2);
        assert_eq!(s.status().last_scrub_ms, Some(300));
    }
}
