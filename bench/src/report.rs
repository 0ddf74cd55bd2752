//! Summaries (median [min-max]) and the one result table a benchmark prints.
//!
//! Mental model: every measured figure becomes one [`Row`]: what, the value as text, its ratio
//! to the relevant machine limit (if any), and the target with a verdict (if any). The table is
//! printed as Markdown so it can be pasted into `docs/performance.md` unchanged.
//! Plain data, single-threaded.

use std::fmt::Write as _;

/// Bytes per MB in every figure (the unit `dd` reports).
pub const MB: f64 = 1_000_000.0;

/// Median, minimum and maximum of a set of samples.
#[derive(Clone, Copy, Debug)]
pub struct Summary {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub n: usize,
}

impl Summary {
    /// Summarises `samples` (the median of an even count is the mean of the middle two).
    pub fn of(samples: &[f64]) -> Summary {
        let mut v: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        if n == 0 {
            return Summary {
                median: f64::NAN,
                min: f64::NAN,
                max: f64::NAN,
                n,
            };
        }
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Summary {
            median,
            min: v[0],
            max: v[n - 1],
            n,
        }
    }

    /// `median [min-max]` with `prec` decimals, or just the value when there is one sample.
    pub fn fmt(&self, prec: usize) -> String {
        if self.n <= 1 {
            format!("{:.prec$}", self.median)
        } else {
            format!(
                "{:.prec$} [{:.prec$}-{:.prec$}]",
                self.median, self.min, self.max
            )
        }
    }
}

/// One line of the result table.
#[derive(Clone, Debug)]
pub struct Row {
    pub section: &'static str,
    pub what: String,
    pub value: String,
    pub ratio: String,
    pub target: String,
}

/// Collects rows and free-form notes, prints them as Markdown.
#[derive(Debug, Default)]
pub struct Report {
    pub rows: Vec<Row>,
    pub notes: Vec<String>,
}

impl Report {
    pub fn row(
        &mut self,
        section: &'static str,
        what: impl Into<String>,
        value: impl Into<String>,
        ratio: impl Into<String>,
        target: impl Into<String>,
    ) {
        let row = Row {
            section,
            what: what.into(),
            value: value.into(),
            ratio: ratio.into(),
            target: target.into(),
        };
        // Progress output as the run goes, the full table at the end.
        eprintln!(
            "  [{}] {}: {} {} {}",
            row.section, row.what, row.value, row.ratio, row.target
        );
        self.rows.push(row);
    }

    pub fn note(&mut self, note: impl Into<String>) {
        self.notes.push(note.into());
    }

    /// The table as Markdown.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "| section | measurement | value | ratio to limit | target |"
        );
        let _ = writeln!(out, "|---|---|---|---|---|");
        for r in &self.rows {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                r.section, r.what, r.value, r.ratio, r.target
            );
        }
        if !self.notes.is_empty() {
            out.push('\n');
            for n in &self.notes {
                let _ = writeln!(out, "- {n}");
            }
        }
        out
    }
}

/// `a / b` as a percentage string, `-` when undefined.
pub fn pct(a: f64, b: f64) -> String {
    if b > 0.0 && a.is_finite() && b.is_finite() {
        format!("{:.0}%", 100.0 * a / b)
    } else {
        "-".to_string()
    }
}

/// Human size: `16 KiB`, `1 MiB`.
pub fn size_name(bytes: usize) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else if bytes >= 1 << 10 && bytes.is_multiple_of(1 << 10) {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{bytes} B")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_median_min_max() {
        let s = Summary::of(&[3.0, 1.0, 2.0]);
        assert_eq!((s.median, s.min, s.max, s.n), (2.0, 1.0, 3.0, 3));
        let s = Summary::of(&[4.0, 1.0, 2.0, 3.0]);
        assert_eq!(s.median, 2.5);
        assert_eq!(s.fmt(1), "2.5 [1.0-4.0]");
        assert!(Summary::of(&[]).median.is_nan());
        assert_eq!(Summary::of(&[7.0]).fmt(0), "7");
    }

    #[test]
    fn sizes_and_ratios() {
        assert_eq!(size_name(16 << 10), "16 KiB");
        assert_eq!(size_name(1 << 20), "1 MiB");
        assert_eq!(size_name(100), "100 B");
        assert_eq!(pct(80.0, 100.0), "80%");
        assert_eq!(pct(1.0, 0.0), "-");
    }
}
