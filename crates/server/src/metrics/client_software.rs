//! Connections by client software (ApiVersions v3+ `client_software_name/version`), with a
//! bounded label set.
//!
//! Mental model: a count per (name, version) pair for the first [`TRACKED_MAX`] distinct
//! pairs seen; later new pairs only add to an "other" count. The export
//! ([`ClientSoftware::top`]) names the [`EXPORTED_MAX`] most frequent pairs and folds every
//! other into `("other", "other")`, so a scrape never has more than `EXPORTED_MAX + 1`
//! series whatever clients send. Names and versions are cut to [`VALUE_BYTES_MAX`] bytes.
//! Pure: no clock, no I/O.

use std::collections::HashMap;

/// Distinct (name, version) pairs counted individually.
pub const TRACKED_MAX: usize = 64;
/// Pairs exported under their own labels.
pub const EXPORTED_MAX: usize = 5;
/// Longest label value kept (bytes, cut at a char boundary).
pub const VALUE_BYTES_MAX: usize = 64;
/// The label value of everything not exported by name.
pub const OTHER: &str = "other";

/// The counts.
#[derive(Debug, Default)]
pub struct ClientSoftware {
    counts: HashMap<(String, String), u64>,
    other: u64,
}

fn cut(s: &str) -> String {
    let mut end = s.len().min(VALUE_BYTES_MAX);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    if end == 0 {
        return "unknown".to_string();
    }
    s[..end].to_string()
}

impl ClientSoftware {
    /// One connection identified itself as `name` `version`.
    pub fn add(&mut self, name: &str, version: &str) {
        let key = (cut(name), cut(version));
        if let Some(n) = self.counts.get_mut(&key) {
            *n += 1;
        } else if self.counts.len() < TRACKED_MAX {
            self.counts.insert(key, 1);
        } else {
            self.other += 1;
        }
    }

    /// The exported counts: the [`EXPORTED_MAX`] largest (ties by name), then "other" if any.
    pub fn top(&self) -> Vec<((String, String), u64)> {
        let mut all: Vec<(&(String, String), u64)> =
            self.counts.iter().map(|(k, n)| (k, *n)).collect();
        all.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        let mut out: Vec<((String, String), u64)> = all
            .iter()
            .take(EXPORTED_MAX)
            .map(|(k, n)| ((*k).clone(), *n))
            .collect();
        let rest: u64 = self.other + all.iter().skip(EXPORTED_MAX).map(|(_, n)| n).sum::<u64>();
        if rest > 0 {
            out.push(((OTHER.to_string(), OTHER.to_string()), rest));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(n: &str, v: &str) -> (String, String) {
        (n.to_string(), v.to_string())
    }

    #[test]
    fn the_most_frequent_few_are_named_the_rest_is_other() {
        // (connections per client, expected exported)
        let mut c = ClientSoftware::default();
        for i in 0..8u64 {
            for _ in 0..(10 - i) {
                c.add(&format!("client{i}"), "1.0");
            }
        }
        let top = c.top();
        assert_eq!(top.len(), EXPORTED_MAX + 1);
        assert_eq!(top[0], (pair("client0", "1.0"), 10));
        assert_eq!(top[4], (pair("client4", "1.0"), 6));
        // clients 5, 6, 7: 5 + 4 + 3
        assert_eq!(top[5], (pair(OTHER, OTHER), 12));
    }

    #[test]
    fn tracking_is_bounded_and_values_are_cut() {
        let mut c = ClientSoftware::default();
        for i in 0..(TRACKED_MAX + 10) {
            c.add(&format!("c{i}"), "v");
        }
        assert_eq!(c.counts.len(), TRACKED_MAX);
        let total: u64 = c.top().iter().map(|(_, n)| n).sum();
        assert_eq!(total, (TRACKED_MAX + 10) as u64);
        let mut c = ClientSoftware::default();
        c.add(&"é".repeat(100), "");
        let top = c.top();
        assert!(top[0].0.0.len() <= VALUE_BYTES_MAX);
        assert_eq!(top[0].0.1, "unknown");
    }

    #[test]
    fn nothing_seen_exports_nothing() {
        assert!(ClientSoftware::default().top().is_empty());
    }
}
