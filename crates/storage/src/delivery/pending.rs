//! The pending FIFO of one partition: delayed batches in offset order whose due time has not
//! passed, and the delivery stable offset (DSO) it implies.
//!
//! Pure data: `now` is always an argument. `DSO(now)` = base offset of the first batch, in
//! offset order, with `due > now` (none = no cap). [`PendingDeliveries::advance`] drops the
//! front while it is due; entries behind a not-yet-due front stay even if they are due (they
//! are still blocked by it) and go as soon as the front goes. Each entry is 16 bytes; the deque
//! gives back memory when it shrinks to a quarter of its capacity.
//!
//! Invariant: base offsets strictly increase from front to back (pushes out of order are
//! refused, truncation removes from the back).

use std::collections::VecDeque;

/// One delayed batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PendingBatch {
    pub base_offset: i64,
    pub due_ms: i64,
}

/// The delayed batches of one partition not yet delivered, in offset order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PendingDeliveries {
    queue: VecDeque<PendingBatch>,
}

impl PendingDeliveries {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a delayed batch at the back. Returns `false` (and adds nothing) if `base_offset`
    /// is not above the last entry's.
    pub fn push(&mut self, base_offset: i64, due_ms: i64) -> bool {
        if self
            .queue
            .back()
            .is_some_and(|b| b.base_offset >= base_offset)
        {
            return false;
        }
        self.queue.push_back(PendingBatch {
            base_offset,
            due_ms,
        });
        true
    }

    /// Drops every front entry due at `now`. Returns how many were dropped.
    pub fn advance(&mut self, now_ms: i64) -> usize {
        let before = self.queue.len();
        while self.queue.front().is_some_and(|b| b.due_ms <= now_ms) {
            self.queue.pop_front();
        }
        let dropped = before - self.queue.len();
        if dropped > 0 {
            self.maybe_shrink();
        }
        dropped
    }

    /// The DSO as of the last [`advance`](Self::advance): the front's base offset.
    pub fn stable_offset(&self) -> Option<i64> {
        self.queue.front().map(|b| b.base_offset)
    }

    /// When the DSO moves next (the front's due time).
    pub fn next_due(&self) -> Option<i64> {
        self.queue.front().map(|b| b.due_ms)
    }

    /// Removes entries at or above `offset` (log truncation).
    pub fn truncate_from(&mut self, offset: i64) {
        while self.queue.back().is_some_and(|b| b.base_offset >= offset) {
            self.queue.pop_back();
        }
        self.maybe_shrink();
    }

    /// Removes entries below `offset` (the log start moved past them: DeleteRecords).
    pub fn drop_below(&mut self, offset: i64) {
        while self.queue.front().is_some_and(|b| b.base_offset < offset) {
            self.queue.pop_front();
        }
        self.maybe_shrink();
    }

    pub fn clear(&mut self) {
        self.queue = VecDeque::new();
    }

    pub fn len(&self) -> usize {
        self.queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &PendingBatch> {
        self.queue.iter()
    }

    /// Heap bytes held (capacity), for the memory benchmark.
    pub fn heap_bytes(&self) -> usize {
        self.queue.capacity() * std::mem::size_of::<PendingBatch>()
    }

    fn maybe_shrink(&mut self) {
        let cap = self.queue.capacity();
        if cap > 64 && self.queue.len() < cap / 4 {
            self.queue.shrink_to(self.queue.len() * 2);
        }
    }
}

#[cfg(test)]
impl PendingDeliveries {
    /// The delivery stable offset at `now` by a full scan, without advancing: the tests'
    /// model of what `advance` + `stable_offset` must give.
    fn stable_offset_at(&self, now_ms: i64) -> Option<i64> {
        self.queue
            .iter()
            .find(|b| b.due_ms > now_ms)
            .map(|b| b.base_offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fifo(entries: &[(i64, i64)]) -> PendingDeliveries {
        let mut p = PendingDeliveries::new();
        for &(o, d) in entries {
            assert!(p.push(o, d));
        }
        p
    }

    #[test]
    #[allow(clippy::type_complexity)]
    fn dso_table() {
        // (entries (offset, due), now, DSO after advance, next due, entries left)
        let cases: &[(&[(i64, i64)], i64, Option<i64>, Option<i64>, usize)] = &[
            (&[], 0, None, None, 0),
            (&[(5, 100)], 99, Some(5), Some(100), 1),
            (&[(5, 100)], 100, None, None, 0),
            // a later entry already due is still blocked by the front
            (&[(5, 100), (9, 50)], 60, Some(5), Some(100), 2),
            (&[(5, 100), (9, 50)], 100, None, None, 0),
            // the front goes, the next not-yet-due entry becomes the bound
            (&[(5, 100), (9, 50), (12, 300)], 150, Some(12), Some(300), 1),
            (&[(5, 100), (9, 200), (12, 150)], 160, Some(9), Some(200), 2),
            (&[(5, i64::MAX)], i64::MAX - 1, Some(5), Some(i64::MAX), 1),
        ];
        for (entries, now, dso, next, left) in cases {
            let mut p = fifo(entries);
            assert_eq!(p.stable_offset_at(*now), *dso, "{entries:?} at {now}");
            p.advance(*now);
            assert_eq!(p.stable_offset(), *dso, "{entries:?} at {now}");
            assert_eq!(p.next_due(), *next, "{entries:?} at {now}");
            assert_eq!(p.len(), *left, "{entries:?} at {now}");
        }
    }

    #[test]
    fn pushes_must_increase_and_truncation_trims() {
        let mut p = fifo(&[(5, 100), (9, 200), (12, 300)]);
        assert!(!p.push(12, 400));
        assert!(!p.push(3, 400));
        p.truncate_from(9);
        assert_eq!(p.iter().map(|b| b.base_offset).collect::<Vec<_>>(), [5]);
        assert!(p.push(9, 50));
        p.drop_below(6);
        assert_eq!(p.stable_offset(), Some(9));
        p.clear();
        assert!(p.is_empty());
    }

    #[test]
    fn seeded_simulation_matches_a_scan() {
        // Random pushes and advances; the FIFO's DSO always equals a scan of all batches ever
        // pushed (first one, in offset order, not yet due), and memory is given back.
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut rnd = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let mut p = PendingDeliveries::new();
        let mut all: Vec<(i64, i64)> = Vec::new();
        let (mut now, mut offset) = (1_000i64, 0i64);
        for _ in 0..20_000 {
            match rnd(3) {
                0 | 1 => {
                    offset += 1 + rnd(5) as i64;
                    let due = now + rnd(500) as i64 - 100;
                    if due > now {
                        p.push(offset, due);
                    }
                    all.push((offset, due));
                }
                _ => {
                    now += rnd(50) as i64;
                    p.advance(now);
                    let want = all.iter().find(|(_, d)| *d > now).map(|(o, _)| *o);
                    assert_eq!(p.stable_offset(), want, "at {now}");
                }
            }
        }
        p.advance(i64::MAX);
        assert!(p.is_empty());
        assert!(p.heap_bytes() <= 64 * 16 * 2);
    }
}
