//! KIP-280 strategies: which record of a key wins (spec §3.3, §3.4).
//!
//! Mental model: every record gets a rank `(version, offset)`, compared lexicographically; the
//! highest rank of a key wins. `version` is `None` under `offset` (so the offset decides), the
//! record timestamp under `timestamp`, and the last occurrence of the configured header read as
//! a big-endian `i64` under `header`. `None` sorts below every `Some`, which gives the KIP's
//! rules: both without the header -> the higher offset wins; only one has it -> that one wins;
//! equal versions -> the higher offset wins. A header value that is not exactly 8 bytes (or is
//! null) counts as missing and is reported as invalid (a metric). Tombstones are ranked like
//! any record: what a winning tombstone does next is the filter's business (delete horizon).
//!
//! Pure: no I/O, no clock.

use skiff_record::{BatchView, Record};
use skiff_storage::{CompactionStrategy, LogConfig};

/// The rule a log is compacted by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Strategy {
    Offset,
    Timestamp,
    Header(String),
}

impl Strategy {
    /// The effective strategy of a log config (`header` without a name behaves as `offset`).
    pub fn of(config: &LogConfig) -> Strategy {
        match (&config.compaction_strategy, config.compaction_header()) {
            (CompactionStrategy::Timestamp, _) => Strategy::Timestamp,
            (CompactionStrategy::Header(_), Some(h)) => Strategy::Header(h.to_string()),
            _ => Strategy::Offset,
        }
    }

    /// Whether the key map must cover the whole cleanable range (every strategy but offset:
    /// an older clean record can beat a newer dirty one).
    pub fn needs_whole_range(&self) -> bool {
        !matches!(self, Strategy::Offset)
    }
}

/// A record's version: `None` ranks below any `Some`.
pub type Version = Option<i64>;

/// A record's rank; the highest rank of a key wins.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Rank {
    pub version: Version,
    pub offset: i64,
}

/// Whether `challenger` beats `incumbent`.
pub fn beats(challenger: Rank, incumbent: Rank) -> bool {
    challenger > incumbent
}

/// The version of one record; the `bool` says a header was present but unusable (not 8 bytes,
/// or null), which counts as missing.
pub fn version_of(strategy: &Strategy, batch: &BatchView<'_>, rec: &Record<'_>) -> (Version, bool) {
    match strategy {
        Strategy::Offset => (None, false),
        Strategy::Timestamp => (Some(batch.record_timestamp(rec)), false),
        Strategy::Header(name) => header_version(name.as_bytes(), rec),
    }
}

/// The last occurrence of header `name` as a big-endian `i64`.
pub fn header_version(name: &[u8], rec: &Record<'_>) -> (Version, bool) {
    match rec.headers.iter().rev().find(|h| h.key == name) {
        None => (None, false),
        Some(h) => match h.value.and_then(|v| <[u8; 8]>::try_from(v).ok()) {
            Some(b) => (Some(i64::from_be_bytes(b)), false),
            None => (None, true),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use skiff_record::Header;

    fn rank(version: Option<i64>, offset: i64) -> Rank {
        Rank { version, offset }
    }

    /// The keep-highest decision, every case of the KIP (spec §3.3) and the tombstone rule.
    #[test]
    fn keep_highest_table() {
        // (case, challenger, incumbent, challenger wins)
        let table = [
            (
                "higher version wins",
                rank(Some(5), 1),
                rank(Some(3), 2),
                true,
            ),
            (
                "lower version loses though later",
                rank(Some(3), 9),
                rank(Some(5), 1),
                false,
            ),
            (
                "equal versions: higher offset wins",
                rank(Some(5), 7),
                rank(Some(5), 2),
                true,
            ),
            (
                "equal versions: lower offset loses",
                rank(Some(5), 2),
                rank(Some(5), 7),
                false,
            ),
            (
                "neither has a version: higher offset",
                rank(None, 4),
                rank(None, 3),
                true,
            ),
            (
                "neither has a version: lower offset",
                rank(None, 3),
                rank(None, 4),
                false,
            ),
            (
                "only the challenger has one",
                rank(Some(-100), 1),
                rank(None, 8),
                true,
            ),
            (
                "only the incumbent has one",
                rank(None, 8),
                rank(Some(i64::MIN), 1),
                false,
            ),
            (
                "negative versions compare numerically",
                rank(Some(-1), 1),
                rank(Some(-2), 2),
                true,
            ),
            (
                "same record does not beat itself",
                rank(Some(1), 1),
                rank(Some(1), 1),
                false,
            ),
        ];
        for (case, c, i, want) in table {
            assert_eq!(beats(c, i), want, "{case}");
        }
    }

    fn rec<'a>(headers: Vec<Header<'a>>, value: Option<&'a [u8]>) -> Record<'a> {
        Record {
            attributes: 0,
            timestamp_delta: 0,
            offset_delta: 0,
            key: Some(b"k"),
            value,
            headers,
        }
    }

    #[test]
    fn header_versions() {
        let five = 5i64.to_be_bytes();
        let nine = 9i64.to_be_bytes();
        let h = |k: &'static [u8], v: Option<&'static [u8]>| Header { key: k, value: v };
        let five: &'static [u8] = Box::leak(Box::new(five));
        let nine: &'static [u8] = Box::leak(Box::new(nine));
        let table: Vec<(&str, Vec<Header<'static>>, (Version, bool))> = vec![
            ("missing", vec![h(b"other", Some(five))], (None, false)),
            ("present", vec![h(b"version", Some(five))], (Some(5), false)),
            (
                "last occurrence counts",
                vec![h(b"version", Some(nine)), h(b"version", Some(five))],
                (Some(5), false),
            ),
            (
                "4 bytes is invalid",
                vec![h(b"version", Some(&[0, 0, 0, 1]))],
                (None, true),
            ),
            ("null is invalid", vec![h(b"version", None)], (None, true)),
            (
                "last occurrence invalid",
                vec![h(b"version", Some(five)), h(b"version", Some(b"x"))],
                (None, true),
            ),
        ];
        for (case, headers, want) in table {
            // Tombstones are ranked like any record.
            for value in [Some(&b"v"[..]), None] {
                assert_eq!(
                    header_version(b"version", &rec(headers.clone(), value)),
                    want,
                    "{case}"
                );
            }
        }
    }

    #[test]
    fn strategy_of_config() {
        let mut c = LogConfig::default();
        assert_eq!(Strategy::of(&c), Strategy::Offset);
        c.set("compaction.strategy", "timestamp").unwrap();
        assert_eq!(Strategy::of(&c), Strategy::Timestamp);
        c.set("compaction.strategy", "header").unwrap();
        assert_eq!(Strategy::of(&c), Strategy::Offset, "header without a name");
        c.set("compaction.strategy.header", "version").unwrap();
        assert_eq!(Strategy::of(&c), Strategy::Header("version".into()));
        c.set("compaction.strategy", "header:ver").unwrap();
        assert_eq!(Strategy::of(&c), Strategy::Header("ver".into()));
    }
}
