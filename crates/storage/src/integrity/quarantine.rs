//! The quarantine record of one partition: offset ranges whose data is damaged and must never
//! be served, and where their bytes are.
//!
//! Mental model: a small list of [`QuarantinedRange`]s, kept sorted by start offset and
//! non-overlapping, persisted as `quarantine-checkpoint` in the partition directory
//! (Kafka's checkpoint text format, atomically replaced: see [`crate::checkpoint`]), so a
//! quarantine survives restarts. Segments stay the truth for good data: the record only says
//! which offsets no good batch accounts for. `segment`/`position`/`len` locate the damaged
//! bytes in the current segment file: `len > 0` while they are still there (found on a
//! running broker by the scrubber or a read: reads skip `[position, position + len)` and stop
//! before `position`), `len == 0` once recovery moved them aside into a `.corrupt` file
//! (`position` is then where the gap is).
//!
//! Line format: `<start> <end> <segment base> <position> <len> <reason> <found by>`; reason is
//! `crc`, `framing` or `offsets`, found by `recovery`, `scrub` or `read`.
//!
//! Invariant: lookups are range lookups over a handful of entries (no I/O, no CRC); a range
//! below the log start offset is dropped, a range is never served.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::checkpoint::{CHECKPOINT_VERSION, CheckpointEntry, CheckpointFile, fields};
use crate::integrity::verify::DamageReason;

/// The per-partition quarantine file.
pub const QUARANTINE_FILE: &str = "quarantine-checkpoint";

/// Who found a damaged range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FoundBy {
    Recovery,
    Scrub,
    Read,
}

impl FoundBy {
    pub fn as_str(self) -> &'static str {
        match self {
            FoundBy::Recovery => "recovery",
            FoundBy::Scrub => "scrub",
            FoundBy::Read => "read",
        }
    }
    fn parse(s: &str) -> Option<Self> {
        match s {
            "recovery" => Some(FoundBy::Recovery),
            "scrub" => Some(FoundBy::Scrub),
            "read" => Some(FoundBy::Read),
            _ => None,
        }
    }
}

/// One quarantined offset range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct QuarantinedRange {
    /// Offsets `[start_offset, end_offset)`; never served.
    pub start_offset: i64,
    pub end_offset: i64,
    /// Base offset of the segment that held the damaged bytes.
    pub segment: i64,
    /// Where the damaged bytes are (`len > 0`) or were (`len == 0`, moved to a `.corrupt`
    /// file) in that segment's `.log`.
    pub position: u64,
    pub len: u64,
    #[serde(serialize_with = "reason_str")]
    pub reason: DamageReason,
    pub found_by: FoundBy,
}

fn reason_str<S: serde::Serializer>(r: &DamageReason, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(r.as_str())
}

impl QuarantinedRange {
    pub fn records(&self) -> i64 {
        self.end_offset - self.start_offset
    }
}

impl CheckpointEntry for QuarantinedRange {
    fn to_line(&self) -> String {
        format!(
            "{} {} {} {} {} {} {}",
            self.start_offset,
            self.end_offset,
            self.segment,
            self.position,
            self.len,
            self.reason.as_str(),
            self.found_by.as_str()
        )
    }

    fn from_line(line: &str) -> Result<Self, String> {
        let [s, e, seg, pos, len, reason, by] = fields::<7>(line)?;
        let num = |v: &str| v.parse::<i64>().map_err(|_| format!("bad number {v:?}"));
        let unum = |v: &str| v.parse::<u64>().map_err(|_| format!("bad number {v:?}"));
        let r = QuarantinedRange {
            start_offset: num(s)?,
            end_offset: num(e)?,
            segment: num(seg)?,
            position: unum(pos)?,
            len: unum(len)?,
            reason: DamageReason::parse(reason).ok_or_else(|| format!("bad reason {reason:?}"))?,
            found_by: FoundBy::parse(by).ok_or_else(|| format!("bad finder {by:?}"))?,
        };
        if r.end_offset < r.start_offset {
            return Err(format!("empty range {line:?}"));
        }
        Ok(r)
    }
}

/// A partition's quarantined ranges (sorted, non-overlapping) and their file.
#[derive(Debug)]
pub struct Quarantine {
    path: PathBuf,
    ranges: Vec<QuarantinedRange>,
}

impl Quarantine {
    /// Loads `dir/quarantine-checkpoint` (missing: empty; unreadable: empty with an ERROR, the
    /// scrubber and recovery find the damage again).
    pub fn load(dir: &Path) -> Quarantine {
        let path = dir.join(QUARANTINE_FILE);
        let ranges = match CheckpointFile::new(path.clone(), CHECKPOINT_VERSION).read() {
            Ok(r) => r,
            Err(e) => {
                tracing::error!(path = %path.display(), error = %e, "unreadable quarantine record; starting it empty");
                Vec::new()
            }
        };
        let mut q = Quarantine {
            path,
            ranges: Vec::new(),
        };
        for r in ranges {
            q.insert(r);
        }
        q
    }

    pub fn ranges(&self) -> &[QuarantinedRange] {
        &self.ranges
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// The first range ending after `offset` (it contains `offset` if it starts at or below).
    pub fn next_from(&self, offset: i64) -> Option<QuarantinedRange> {
        let i = self.ranges.partition_point(|r| r.end_offset <= offset);
        self.ranges.get(i).copied()
    }

    /// Byte ranges `[position, position + len)` of `segment` still holding damaged bytes.
    pub fn skips_in(&self, segment: i64) -> Vec<(u64, u64)> {
        self.ranges
            .iter()
            .filter(|r| r.segment == segment && r.len > 0)
            .map(|r| (r.position, r.position + r.len))
            .collect()
    }

    /// Adds `r`, replacing every range it overlaps or touches in the same segment (the union
    /// of their offsets, `r`'s location). A range found by a full verification (scrub,
    /// recovery) replaces the conservative ranges reads recorded in its segment (a read only
    /// knows where framing was lost, not where good batches start again). Returns whether
    /// anything changed.
    pub fn insert(&mut self, r: QuarantinedRange) -> bool {
        if self.ranges.contains(&r) {
            return false;
        }
        if r.found_by != FoundBy::Read {
            self.ranges
                .retain(|a| !(a.found_by == FoundBy::Read && a.segment == r.segment));
        }
        let mut merged = r;
        let overlaps = |a: &QuarantinedRange, m: &QuarantinedRange| {
            (a.start_offset < m.end_offset && m.start_offset < a.end_offset)
                || (a.segment == m.segment && a.position == m.position)
        };
        let mut kept = Vec::with_capacity(self.ranges.len() + 1);
        for a in std::mem::take(&mut self.ranges) {
            if overlaps(&a, &merged) {
                merged.start_offset = merged.start_offset.min(a.start_offset);
                merged.end_offset = merged.end_offset.max(a.end_offset);
            } else {
                kept.push(a);
            }
        }
        kept.push(merged);
        kept.sort_by_key(|a| (a.start_offset, a.position));
        self.ranges = kept;
        true
    }

    /// Drops ranges that end at or below `log_start` or start at or past `log_end`; clips the
    /// rest. Returns whether anything changed.
    pub fn retain_within(&mut self, log_start: i64, log_end: i64) -> bool {
        let before = self.ranges.clone();
        self.ranges
            .retain(|r| r.end_offset > log_start && r.start_offset < log_end);
        for r in &mut self.ranges {
            r.end_offset = r.end_offset.min(log_end);
        }
        self.ranges != before
    }

    /// Drops every range of `segment` (the segment was deleted or replaced).
    pub fn forget_segment(&mut self, segment: i64) -> bool {
        let n = self.ranges.len();
        self.ranges.retain(|r| r.segment != segment);
        n != self.ranges.len()
    }

    /// Atomically replaces the file (removes it when empty).
    pub fn persist(&self) -> std::io::Result<()> {
        if self.ranges.is_empty() {
            return match std::fs::remove_file(&self.path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            };
        }
        CheckpointFile::new(self.path.clone(), CHECKPOINT_VERSION).write(self.ranges.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(start: i64, end: i64, position: u64) -> QuarantinedRange {
        QuarantinedRange {
            start_offset: start,
            end_offset: end,
            segment: 0,
            position,
            len: 10,
            reason: DamageReason::Crc,
            found_by: FoundBy::Scrub,
        }
    }

    #[test]
    fn lookups_merges_and_persistence() {
        let dir = tempfile::tempdir().unwrap();
        let mut q = Quarantine::load(dir.path());
        assert!(q.is_empty());
        assert!(q.insert(r(10, 20, 100)));
        assert!(q.insert(r(40, 45, 400)));
        assert!(!q.insert(r(40, 45, 400)), "same range twice");
        assert_eq!(q.next_from(0).map(|x| x.start_offset), Some(10));
        assert_eq!(q.next_from(15).map(|x| x.start_offset), Some(10));
        assert_eq!(q.next_from(20).map(|x| x.start_offset), Some(40));
        assert_eq!(q.next_from(45), None);
        // Overlap merges into one range at the newer location.
        let mut newer = r(18, 25, 180);
        newer.len = 0;
        newer.found_by = FoundBy::Recovery;
        assert!(q.insert(newer));
        assert_eq!(q.ranges().len(), 2);
        assert_eq!(
            (
                q.ranges()[0].start_offset,
                q.ranges()[0].end_offset,
                q.ranges()[0].len
            ),
            (10, 25, 0)
        );
        assert_eq!(q.skips_in(0), vec![(400, 410)]);
        q.persist().unwrap();
        let again = Quarantine::load(dir.path());
        assert_eq!(again.ranges(), q.ranges());
        assert!(q.retain_within(30, 42));
        assert_eq!(
            (q.ranges().len(), q.ranges()[0].end_offset),
            (1, 42),
            "clipped to the log end"
        );
        q.retain_within(50, 60);
        q.persist().unwrap();
        assert!(!dir.path().join(QUARANTINE_FILE).exists());
    }
}
