//! Repair by re-fetching (issue 17 item 8): a replica that is not the leader cuts its log at
//! its first quarantined range and fetches everything from there again from the leader, so
//! the repaired prefix is the leader's bytes, byte for byte.
//!
//! Mental model: a quarantined range records where the damage starts (`segment`,
//! `position`) and the first offset no good batch accounts for (`start_offset`); the batches
//! before it in that segment end exactly at `start_offset`. The cut is made at that byte
//! position, never by a header scan (which would read the damaged header), and every later
//! segment goes, as a replica truncation. The quarantine then holds nothing at or above the
//! new log end (`after_truncation` prunes it). `.corrupt` files stay for the operator.
//!
//! Invariant: only a follower cuts (the caller checks the role): a leader's committed data is
//! never cut here; a leader with a hole hands leadership over instead (`skiff_server::replica`).

use crate::error::Result;
use crate::log::{Log, remove_files};
use crate::segment::DELETED_SUFFIX;

impl Log {
    /// The first quarantined range's start, if any: where a repair cut would go.
    pub fn first_quarantined_offset(&self) -> Option<i64> {
        self.integrity
            .lock()
            .quarantine
            .ranges()
            .first()
            .map(|q| q.start_offset)
    }

    /// Cuts the log at its first quarantined range (module docs); returns the new log end,
    /// `None` when nothing is quarantined.
    pub(crate) fn cut_at_first_quarantined_unguarded(&mut self) -> Result<Option<i64>> {
        let first = self.integrity.lock().quarantine.ranges().first().copied();
        let Some(q) = first else {
            return Ok(None);
        };
        if !self.segments.contains_key(&q.segment) || q.start_offset < q.segment {
            // The range's segment is gone or the record is odd: an offset truncation.
            self.truncate_to_unguarded(q.start_offset)?;
            self.prune_quarantine();
            return Ok(Some(self.log_end_offset));
        }
        let doomed: Vec<i64> = self
            .segments
            .range(q.segment + 1..)
            .map(|(b, _)| *b)
            .collect();
        for base in doomed {
            if let Some(mut seg) = self.segments.remove(&base) {
                let paths = seg.rename_with_suffix(DELETED_SUFFIX)?;
                remove_files(&paths);
            }
        }
        let max_index = self.config.segment_index_bytes;
        let active = self.active_mut();
        active.truncate_at(q.position, q.start_offset, q.start_offset)?;
        active.make_active(max_index)?;
        self.log_end_offset = q.start_offset;
        self.truncate_producer_state()?;
        self.after_truncation()?;
        tracing::warn!(
            tp = %self.tp,
            from = q.start_offset,
            segment = q.segment,
            position = q.position,
            "cut the log at its quarantined range, to fetch it again from the leader"
        );
        Ok(Some(self.log_end_offset))
    }
}
