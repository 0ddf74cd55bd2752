//! Shared test helpers: checking a hand-written history and asserting its exact anomaly set.
#![allow(dead_code)]

pub mod generator;

use std::collections::BTreeSet;

use logcheck::{Anomaly, Report};

/// Checks a history written as JSON lines (leading whitespace of each line ignored).
pub fn check(text: &str) -> Report {
    let text: String = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|l| format!("{l}\n"))
        .collect();
    match logcheck::check_str(&text) {
        Ok(r) => r,
        Err(e) => panic!("history rejected: {e}\n{text}"),
    }
}

/// Asserts the report found exactly `expected` (and says what it found otherwise).
pub fn assert_found(report: &Report, expected: &[Anomaly], context: &str) {
    let expected: BTreeSet<Anomaly> = expected.iter().copied().collect();
    assert_eq!(
        report.found(),
        expected,
        "{context}: report:\n{}",
        pretty(report)
    );
    assert_eq!(report.valid, expected.is_empty(), "{context}: valid");
}

pub fn pretty(report: &Report) -> String {
    serde_json::to_string_pretty(report).unwrap_or_else(|e| e.to_string())
}
