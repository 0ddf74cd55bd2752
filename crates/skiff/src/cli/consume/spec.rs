//! Where to start reading: the `--offset` of `consume` and the `--to` of `group seek`.
//!
//! Mental model: a spec names a position relative to a partition's log: its start, its end,
//! an absolute offset, the first record at or after a time (`@ms`), or N records before the
//! end (`-N`). [`resolve`] turns it into an offset given the partition's earliest and latest
//! offsets and, for a time, ListOffsets' answer.
//! Invariants: a resolved offset always lies within `[earliest, latest]` (an absolute offset
//! outside is clamped, as Kafka's `--reset-offsets` does, and the caller is told).

use std::fmt;
use std::str::FromStr;

/// A start position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OffsetSpec {
    /// The log start offset.
    Beginning,
    /// The end (high watermark, or LSO at read_committed).
    End,
    /// An absolute offset.
    Exact(i64),
    /// The first record whose timestamp is at or after this many ms since the epoch.
    Timestamp(i64),
    /// This many records before the end.
    FromEnd(i64),
}

impl FromStr for OffsetSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        let bad = || {
            format!(
                "bad offset {s:?}: use beginning|end|N|@timestamp_ms|-N \
                 (e.g. 42, @1700000000000, -10)"
            )
        };
        match s {
            "beginning" | "start" | "earliest" | "oldest" => return Ok(OffsetSpec::Beginning),
            "end" | "latest" | "newest" => return Ok(OffsetSpec::End),
            _ => {}
        }
        if let Some(ts) = s.strip_prefix('@') {
            return ts
                .parse::<i64>()
                .ok()
                .filter(|t| *t >= 0)
                .map(OffsetSpec::Timestamp)
                .ok_or_else(bad);
        }
        if let Some(n) = s.strip_prefix('-') {
            return n
                .parse::<i64>()
                .ok()
                .filter(|n| *n >= 0)
                .map(OffsetSpec::FromEnd)
                .ok_or_else(bad);
        }
        s.parse::<i64>()
            .ok()
            .filter(|n| *n >= 0)
            .map(OffsetSpec::Exact)
            .ok_or_else(bad)
    }
}

impl fmt::Display for OffsetSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OffsetSpec::Beginning => write!(f, "beginning"),
            OffsetSpec::End => write!(f, "end"),
            OffsetSpec::Exact(n) => write!(f, "{n}"),
            OffsetSpec::Timestamp(t) => write!(f, "@{t}"),
            OffsetSpec::FromEnd(n) => write!(f, "-{n}"),
        }
    }
}

/// The ListOffsets timestamp the spec needs answered besides earliest/latest, if any.
pub fn lookup_timestamp(spec: OffsetSpec) -> Option<i64> {
    match spec {
        OffsetSpec::Timestamp(t) => Some(t),
        _ => None,
    }
}

/// The offset `spec` names in a partition whose log spans `[earliest, latest)`.
/// `by_time` is ListOffsets' answer for a [`OffsetSpec::Timestamp`] (-1: no record at or after
/// the time, which resolves to the end). Returns the offset and whether it was clamped.
pub fn resolve(spec: OffsetSpec, earliest: i64, latest: i64, by_time: Option<i64>) -> (i64, bool) {
    let latest = latest.max(earliest);
    match spec {
        OffsetSpec::Beginning => (earliest, false),
        OffsetSpec::End => (latest, false),
        OffsetSpec::Exact(n) => {
            let c = n.clamp(earliest, latest);
            (c, c != n)
        }
        OffsetSpec::Timestamp(_) => match by_time {
            Some(o) if o >= 0 => (o.clamp(earliest, latest), false),
            _ => (latest, false),
        },
        OffsetSpec::FromEnd(n) => (latest.saturating_sub(n).max(earliest), false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_form() {
        let cases: &[(&str, Option<OffsetSpec>)] = &[
            ("beginning", Some(OffsetSpec::Beginning)),
            ("start", Some(OffsetSpec::Beginning)),
            ("earliest", Some(OffsetSpec::Beginning)),
            ("end", Some(OffsetSpec::End)),
            ("latest", Some(OffsetSpec::End)),
            ("42", Some(OffsetSpec::Exact(42))),
            ("0", Some(OffsetSpec::Exact(0))),
            (
                "@1700000000000",
                Some(OffsetSpec::Timestamp(1_700_000_000_000)),
            ),
            ("-2", Some(OffsetSpec::FromEnd(2))),
            ("@", None),
            ("@-5", None),
            ("--3", None),
            ("x", None),
            ("", None),
        ];
        for (text, want) in cases {
            assert_eq!(text.parse::<OffsetSpec>().ok(), *want, "{text}");
        }
    }

    #[test]
    fn resolves_within_the_log() {
        // log spans [10, 20)
        let cases: &[(OffsetSpec, Option<i64>, (i64, bool))] = &[
            (OffsetSpec::Beginning, None, (10, false)),
            (OffsetSpec::End, None, (20, false)),
            (OffsetSpec::Exact(15), None, (15, false)),
            (OffsetSpec::Exact(3), None, (10, true)),
            (OffsetSpec::Exact(99), None, (20, true)),
            (OffsetSpec::Timestamp(5), Some(13), (13, false)),
            (OffsetSpec::Timestamp(5), Some(-1), (20, false)),
            (OffsetSpec::FromEnd(2), None, (18, false)),
            (OffsetSpec::FromEnd(50), None, (10, false)),
            (OffsetSpec::FromEnd(0), None, (20, false)),
        ];
        for (spec, by_time, want) in cases {
            assert_eq!(resolve(*spec, 10, 20, *by_time), *want, "{spec}");
        }
    }
}
