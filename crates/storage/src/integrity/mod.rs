//! Corruption handling (issue 12): Skiff never serves a damaged batch and never deletes good
//! data because of one.
//!
//! Mental model: damage is found in three places and recorded in one per-partition
//! [`quarantine::Quarantine`]: (1) recovery after an unclean shutdown re-validates every batch
//! past the recovery point ([`crate::recovery`]); a damaged region is moved aside into a
//! `.corrupt` file, the scan resynchronises at the next good batch ([`verify`]) and goes on, so
//! later batches and segments are kept; only the torn tail of the last segment is cut, as
//! Kafka does; (2) the background scrubber ([`scrubber`]) verifies every sealed segment's CRCs,
//! throttled, once and then every `skiff.log.scrub.interval.ms`, on a running broker; (3) a
//! read whose header scan stops inside a sealed segment (lost framing, e.g. a damaged length
//! field) records the offsets it cannot account for instead of silently jumping to the next
//! segment. A quarantined range answers CORRUPT_MESSAGE to fetches (see
//! `skiff_server::handlers::fetch`); bytes before it are served, reads after it are served,
//! the damaged bytes never are. The fetch path pays a range lookup, never a CRC.
//!
//! `.corrupt` files are named `<20-digit segment base>.log.<position>.corrupt`: load neither
//! opens them as segments nor deletes them as leftovers; they stay for the operator.

pub mod quarantine;
mod repair;
pub mod scrub;
pub mod scrubber;
pub mod verify;

use std::path::{Path, PathBuf};

use quarantine::{FoundBy, Quarantine, QuarantinedRange};
use scrub::{ScrubState, ScrubStatus};
use serde::Serialize;

use crate::log::Log;

/// Suffix of files holding damaged bytes moved out of a segment.
pub const CORRUPT_SUFFIX: &str = ".corrupt";

/// `<dir>/<base>.log.<position>.corrupt`.
pub fn corrupt_file(dir: &Path, base: i64, position: u64) -> PathBuf {
    dir.join(format!("{base:020}.log.{position}{CORRUPT_SUFFIX}"))
}

/// A partition's integrity state, behind one mutex inside its [`Log`] (reads record what they
/// find through `&Log`).
#[derive(Debug)]
pub struct Integrity {
    pub quarantine: Quarantine,
    pub scrub: ScrubState,
}

impl Integrity {
    pub fn load(dir: &Path) -> Integrity {
        Integrity {
            quarantine: Quarantine::load(dir),
            scrub: ScrubState::load(dir),
        }
    }
}

/// The admin view of a partition's integrity.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct IntegrityStatus {
    /// Quarantined offset ranges (at most [`RANGES_LISTED_MAX`]; `quarantined_records` is
    /// exact).
    pub quarantined: Vec<QuarantinedRange>,
    pub quarantined_ranges: usize,
    pub quarantined_records: i64,
    pub truncated: bool,
    pub sealed_segments: usize,
    pub scrub: ScrubStatus,
}

/// The most ranges the admin view lists.
pub const RANGES_LISTED_MAX: usize = 100;

impl Log {
    /// Records a quarantined range (logged at ERROR once, persisted). Returns whether it was
    /// new.
    pub fn quarantine(&self, r: QuarantinedRange) -> bool {
        let mut i = self.integrity.lock();
        if !i.quarantine.insert(r) {
            return false;
        }
        tracing::error!(
            tp = %self.tp,
            start_offset = r.start_offset,
            end_offset = r.end_offset,
            records = r.records(),
            segment = r.segment,
            position = r.position,
            len = r.len,
            reason = r.reason.as_str(),
            found_by = r.found_by.as_str(),
            "corrupt data quarantined: these offsets answer CORRUPT_MESSAGE"
        );
        if let Err(e) = i.quarantine.persist() {
            tracing::error!(tp = %self.tp, error = %e, "could not write the quarantine record");
        }
        true
    }

    /// The partition's quarantined ranges.
    pub fn quarantined(&self) -> Vec<QuarantinedRange> {
        self.integrity.lock().quarantine.ranges().to_vec()
    }

    /// The admin view of this partition's integrity.
    pub fn integrity_status(&self) -> IntegrityStatus {
        let i = self.integrity.lock();
        let all = i.quarantine.ranges();
        IntegrityStatus {
            quarantined: all.iter().take(RANGES_LISTED_MAX).copied().collect(),
            quarantined_ranges: all.len(),
            quarantined_records: all.iter().map(QuarantinedRange::records).sum(),
            truncated: all.len() > RANGES_LISTED_MAX,
            sealed_segments: self.segments.len().saturating_sub(1),
            scrub: i.scrub.status(),
        }
    }

    /// Drops quarantined ranges outside the log (after retention, truncation, load).
    pub(crate) fn prune_quarantine(&self) {
        let mut i = self.integrity.lock();
        if i.quarantine
            .retain_within(self.log_start_offset, self.log_end_offset)
            && let Err(e) = i.quarantine.persist()
        {
            tracing::error!(tp = %self.tp, error = %e, "could not write the quarantine record");
        }
    }

    /// A read found lost framing in `segment` at `position`: records the offsets from the last
    /// good batch before it to the next segment's base (or the log end) and returns the range.
    pub(crate) fn quarantine_from_read(
        &self,
        segment: i64,
        position: u64,
        start_offset: i64,
    ) -> QuarantinedRange {
        let next_base = self
            .segments
            .range(segment + 1..)
            .next()
            .map_or(self.log_end_offset, |(b, _)| *b);
        let size = self.segments.get(&segment).map_or(position, |s| s.size());
        let r = QuarantinedRange {
            start_offset,
            end_offset: next_base.max(start_offset),
            segment,
            position,
            len: size.saturating_sub(position),
            reason: verify::DamageReason::Framing,
            found_by: FoundBy::Read,
        };
        self.quarantine(r);
        // The scrubber verifies this segment next and narrows the range to the damaged bytes.
        self.integrity.lock().scrub.unmark(segment);
        r
    }
}
