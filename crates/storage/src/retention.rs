//! Which segments retention deletes: a pure decision (spec §2.6).
//!
//! Mental model: retention only ever removes a *prefix* of whole segments, stopping at the first
//! segment that fails the predicate, and never a segment whose upper bound (next segment's base,
//! or the log end for the last one) is above the high watermark. Three predicates, in Kafka's
//! order: time (`retention.ms` against the segment's largest timestamp), size (`retention.bytes`
//! over the whole partition), and the log-start-offset breach (always, even for compact-only
//! topics). The shell ([`crate::log::Log::apply_retention`]) renames and later deletes the files.

/// What retention needs to know about one segment, in offset order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentFacts {
    pub base_offset: i64,
    pub size: u64,
    pub largest_timestamp: i64,
    /// Next segment's base, or the log end offset for the last segment.
    pub upper_bound: i64,
}

/// Inputs of a retention decision.
#[derive(Clone, Copy, Debug)]
pub struct RetentionInput {
    pub now_ms: i64,
    pub high_watermark: i64,
    pub log_start_offset: i64,
    pub retention_ms: i64,
    pub retention_bytes: i64,
    pub policy_delete: bool,
    /// The delivery bound (delayed delivery): nothing at or above it is removed. `i64::MAX` if none.
    pub max_removable_offset: i64,
}

/// Why segments were chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetentionReason {
    Time,
    Size,
    LogStartOffset,
}

/// How many leading segments to delete and why (`count == 0`: nothing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetentionDecision {
    pub count: usize,
    pub reason: Option<RetentionReason>,
}

fn prefix_while(
    segs: &[SegmentFacts],
    input: &RetentionInput,
    mut pred: impl FnMut(&SegmentFacts) -> bool,
) -> usize {
    segs.iter()
        .take_while(|s| {
            s.upper_bound <= input.high_watermark
                && s.upper_bound <= input.max_removable_offset
                && pred(s)
        })
        .count()
}

/// Decides the deletable prefix.
pub fn decide(segs: &[SegmentFacts], input: &RetentionInput) -> RetentionDecision {
    if input.policy_delete && input.retention_ms >= 0 {
        let n = prefix_while(segs, input, |s| {
            input.now_ms.saturating_sub(s.largest_timestamp) > input.retention_ms
        });
        if n > 0 {
            return RetentionDecision {
                count: n,
                reason: Some(RetentionReason::Time),
            };
        }
    }
    if input.policy_delete && input.retention_bytes >= 0 {
        let total: u64 = segs.iter().map(|s| s.size).sum();
        let mut diff = total as i64 - input.retention_bytes;
        let n = prefix_while(segs, input, |s| {
            if diff - s.size as i64 >= 0 {
                diff -= s.size as i64;
                true
            } else {
                false
            }
        });
        if n > 0 {
            return RetentionDecision {
                count: n,
                reason: Some(RetentionReason::Size),
            };
        }
    }
    let n = prefix_while(segs, input, |s| s.upper_bound <= input.log_start_offset);
    if n > 0 {
        return RetentionDecision {
            count: n,
            reason: Some(RetentionReason::LogStartOffset),
        };
    }
    RetentionDecision {
        count: 0,
        reason: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segs(spec: &[(i64, u64, i64)], leo: i64) -> Vec<SegmentFacts> {
        spec.iter()
            .enumerate()
            .map(|(i, &(base, size, ts))| SegmentFacts {
                base_offset: base,
                size,
                largest_timestamp: ts,
                upper_bound: spec.get(i + 1).map_or(leo, |n| n.0),
            })
            .collect()
    }

    fn input() -> RetentionInput {
        RetentionInput {
            now_ms: 10_000,
            high_watermark: 300,
            log_start_offset: 0,
            retention_ms: -1,
            retention_bytes: -1,
            policy_delete: true,
            max_removable_offset: i64::MAX,
        }
    }

    #[test]
    fn table() {
        let s = segs(
            &[(0, 100, 1_000), (100, 100, 2_000), (200, 100, 9_000)],
            300,
        );
        let cases: Vec<(&str, RetentionInput, usize, Option<RetentionReason>)> = vec![
            ("nothing configured", input(), 0, None),
            (
                "time: two old",
                RetentionInput {
                    retention_ms: 5_000,
                    ..input()
                },
                2,
                Some(RetentionReason::Time),
            ),
            (
                "time: boundary is strict",
                RetentionInput {
                    retention_ms: 8_000,
                    ..input()
                },
                1,
                Some(RetentionReason::Time),
            ),
            (
                "time: all old incl. last",
                RetentionInput {
                    retention_ms: 100,
                    ..input()
                },
                3,
                Some(RetentionReason::Time),
            ),
            (
                "time: stops at HW",
                RetentionInput {
                    retention_ms: 100,
                    high_watermark: 150,
                    ..input()
                },
                1,
                Some(RetentionReason::Time),
            ),
            (
                "time: policy compact only",
                RetentionInput {
                    retention_ms: 100,
                    policy_delete: false,
                    ..input()
                },
                0,
                None,
            ),
            (
                "size: 300 bytes, limit 150: one goes (200 <= 150 + one segment)",
                RetentionInput {
                    retention_bytes: 150,
                    ..input()
                },
                1,
                Some(RetentionReason::Size),
            ),
            (
                "size: exact fit keeps all",
                RetentionInput {
                    retention_bytes: 300,
                    ..input()
                },
                0,
                None,
            ),
            (
                "size: 0 deletes all below HW",
                RetentionInput {
                    retention_bytes: 0,
                    ..input()
                },
                3,
                Some(RetentionReason::Size),
            ),
            (
                "start offset breach",
                RetentionInput {
                    log_start_offset: 250,
                    ..input()
                },
                2,
                Some(RetentionReason::LogStartOffset),
            ),
            (
                "start offset breach on compact topic",
                RetentionInput {
                    log_start_offset: 100,
                    policy_delete: false,
                    ..input()
                },
                1,
                Some(RetentionReason::LogStartOffset),
            ),
            (
                "delivery bound caps",
                RetentionInput {
                    retention_ms: 100,
                    max_removable_offset: 199,
                    ..input()
                },
                1,
                Some(RetentionReason::Time),
            ),
            (
                "first segment young stops prefix",
                RetentionInput {
                    retention_ms: 5_000,
                    now_ms: 5_500,
                    ..input()
                },
                0,
                None,
            ),
        ];
        for (name, inp, count, reason) in cases {
            let d = decide(&s, &inp);
            assert_eq!((d.count, d.reason), (count, reason), "{name}");
        }
    }

    #[test]
    fn time_stops_at_first_young_segment() {
        // A young segment in the middle protects everything after it (prefix only).
        let s = segs(&[(0, 10, 1_000), (10, 10, 9_999), (20, 10, 1_000)], 30);
        let d = decide(
            &s,
            &RetentionInput {
                retention_ms: 5_000,
                high_watermark: 30,
                ..input()
            },
        );
        assert_eq!(d.count, 1);
    }
}
