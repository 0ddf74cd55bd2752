//! The cleaner's bounded key map: key hash -> rank of the winning record (spec §3.1 "Offset
//! map", §3.3 "Cost").
//!
//! Mental model: like Kafka's `SkimpyOffsetMap`, an open-addressing table of fixed 32-byte
//! slots (16-byte key hash, 8-byte offset, 8-byte version), allocated once from a byte budget
//! (`log.cleaner.dedupe.buffer.size / log.cleaner.threads`) and filled up to a load factor.
//! The key itself is not stored: two keys with the same 128-bit hash (xxh3-128, seeded per
//! process so collisions cannot be precomputed) would be treated as one; the chance is
//! negligible (Kafka accepts the same with MD5). When the map is full, [`KeyMap::offer`]
//! answers [`Offer::Full`] for a new key and the cleaner stops its range before that record.
//!
//! Invariants: at most `max_entries` keys; a slot with hash 0 is empty (hashes are forced
//! non-zero); a key's stored rank only ever increases ([`crate::strategy::beats`]).

use crate::strategy::{Rank, beats};

/// Bytes of one slot.
pub const SLOT_BYTES: usize = 32;

#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    hash: u128,
    /// The offset, bitwise-negated when the record has no version.
    offset: i64,
    version: i64,
}

impl Slot {
    fn rank(&self) -> Rank {
        if self.offset < 0 {
            Rank {
                version: None,
                offset: !self.offset,
            }
        } else {
            Rank {
                version: Some(self.version),
                offset: self.offset,
            }
        }
    }

    fn set(&mut self, r: Rank) {
        match r.version {
            Some(v) => {
                self.offset = r.offset;
                self.version = v;
            }
            None => {
                self.offset = !r.offset;
                self.version = 0;
            }
        }
    }
}

/// What [`KeyMap::offer`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Offer {
    /// A new key.
    Inserted,
    /// The record beat the key's previous winner.
    Updated,
    /// The key's previous winner stays.
    Kept,
    /// A new key but no room: nothing changed.
    Full,
}

/// The bounded key map.
#[derive(Debug)]
pub struct KeyMap {
    slots: Vec<Slot>,
    used: usize,
    max_entries: usize,
    seed: u64,
}

impl KeyMap {
    /// A map of at most `budget_bytes / 32` slots, filled to `load_factor`, but no more slots
    /// than `expected_keys` needs (small logs do not allocate the whole budget).
    pub fn new(budget_bytes: usize, load_factor: f64, expected_keys: usize, seed: u64) -> Self {
        let budget_slots = (budget_bytes / SLOT_BYTES).max(4);
        let lf = if load_factor.is_finite() {
            load_factor.clamp(0.1, 0.95)
        } else {
            0.9
        };
        let wanted = ((expected_keys as f64 / lf) as usize).saturating_add(16);
        let n = budget_slots.min(wanted.max(64));
        let max_entries = ((n as f64 * lf) as usize).clamp(1, n - 1);
        Self {
            slots: vec![Slot::default(); n],
            used: 0,
            max_entries,
            seed,
        }
    }

    /// Keys in the map.
    pub fn len(&self) -> usize {
        self.used
    }
    pub fn is_empty(&self) -> bool {
        self.used == 0
    }
    /// Most keys the map can hold.
    pub fn max_entries(&self) -> usize {
        self.max_entries
    }
    /// Bytes allocated.
    pub fn memory_bytes(&self) -> usize {
        self.slots.len() * SLOT_BYTES
    }

    fn hash(&self, key: &[u8]) -> u128 {
        twox_hash::XxHash3_128::oneshot_with_seed(self.seed, key).max(1)
    }

    /// Index of `h`'s slot, or of the empty slot where it would go.
    fn find(&self, h: u128) -> usize {
        let n = self.slots.len();
        let mut i = ((h as u64) ^ ((h >> 64) as u64)) as usize % n;
        loop {
            let s = &self.slots[i];
            if s.hash == 0 || s.hash == h {
                return i;
            }
            i += 1;
            if i == n {
                i = 0;
            }
        }
    }

    /// Offers a record of `key` with `rank`; keeps the higher rank.
    pub fn offer(&mut self, key: &[u8], rank: Rank) -> Offer {
        let h = self.hash(key);
        let i = self.find(h);
        let slot = &mut self.slots[i];
        if slot.hash == 0 {
            if self.used >= self.max_entries {
                return Offer::Full;
            }
            slot.hash = h;
            slot.set(rank);
            self.used += 1;
            return Offer::Inserted;
        }
        if beats(rank, slot.rank()) {
            slot.set(rank);
            Offer::Updated
        } else {
            Offer::Kept
        }
    }

    /// The winning rank of `key`, if mapped.
    pub fn get(&self, key: &[u8]) -> Option<Rank> {
        let h = self.hash(key);
        let s = &self.slots[self.find(h)];
        (s.hash == h).then(|| s.rank())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(version: Option<i64>, offset: i64) -> Rank {
        Rank { version, offset }
    }

    #[test]
    fn keeps_the_highest_rank_and_stops_when_full() {
        let mut m = KeyMap::new(64 * SLOT_BYTES, 0.5, 1000, 7);
        assert_eq!(m.max_entries(), 32);
        assert_eq!(m.offer(b"a", r(Some(5), 1)), Offer::Inserted);
        assert_eq!(m.offer(b"a", r(Some(3), 2)), Offer::Kept);
        assert_eq!(m.offer(b"a", r(Some(5), 3)), Offer::Updated);
        assert_eq!(m.get(b"a"), Some(r(Some(5), 3)));
        assert_eq!(m.offer(b"b", r(None, 4)), Offer::Inserted);
        assert_eq!(m.get(b"b"), Some(r(None, 4)));
        assert_eq!(m.offer(b"b", r(Some(i64::MIN), 0)), Offer::Updated);
        assert_eq!(m.get(b"b"), Some(r(Some(i64::MIN), 0)));
        assert_eq!(m.get(b"c"), None);
        let mut n = 2;
        while m.offer(format!("key{n}").as_bytes(), r(None, n)) != Offer::Full {
            n += 1;
        }
        assert_eq!(m.len(), 32);
        // Known keys can still be updated when full.
        assert_eq!(m.offer(b"a", r(Some(6), 99)), Offer::Updated);
        assert!(m.memory_bytes() <= 64 * SLOT_BYTES);
    }

    #[test]
    fn small_logs_allocate_little() {
        let m = KeyMap::new(128 << 20, 0.9, 10, 1);
        assert!(m.memory_bytes() < 4096, "{}", m.memory_bytes());
    }
}
