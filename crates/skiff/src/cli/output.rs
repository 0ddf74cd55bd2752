//! Printing a command's result: a human table for `--format text`, one JSON or YAML document
//! otherwise, written from the same serializable value (so the machine formats carry every
//! field the table shows, and more).
//!
//! Invariants: only results go to stdout; JSON output is one document (or one object per line
//! for streams, [`json_line`]).

use std::io::Write;

use serde::Serialize;

use super::{CliError, Format};

/// Prints `value` in `format`; `text` renders the human form.
pub fn emit<T: Serialize>(
    format: Format,
    value: &T,
    text: impl FnOnce(&T) -> String,
) -> Result<(), CliError> {
    let rendered = match format {
        Format::Text => text(value),
        Format::Json => {
            let mut s = serde_json::to_string_pretty(value)
                .map_err(|e| CliError::Other(format!("cannot write JSON: {e}")))?;
            s.push('\n');
            s
        }
        Format::Yaml => serde_norway::to_string(value)
            .map_err(|e| CliError::Other(format!("cannot write YAML: {e}")))?,
    };
    write_stdout(rendered.as_bytes())
}

/// One JSON object on one line (streams such as `consume --format json`).
pub fn json_line<T: Serialize>(value: &T) -> Result<String, CliError> {
    serde_json::to_string(value).map_err(|e| CliError::Other(format!("cannot write JSON: {e}")))
}

/// Writes to stdout; a closed pipe (`| head`) is not an error worth a message.
pub fn write_stdout(bytes: &[u8]) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(CliError::Other(format!("cannot write to stdout: {e}"))),
    }
}

/// A left-aligned table with a header row, columns separated by two spaces.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(cell.chars().count());
            }
        }
    }
    let mut out = String::new();
    let mut line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut l = String::new();
        for (i, cell) in cells.enumerate() {
            let w = widths.get(i).copied().unwrap_or(0);
            if i > 0 {
                l.push_str("  ");
            }
            l.push_str(cell);
            l.extend(std::iter::repeat_n(
                ' ',
                w.saturating_sub(cell.chars().count()),
            ));
        }
        out.push_str(l.trim_end());
        out.push('\n');
    };
    line(&mut headers.iter().copied());
    for row in rows {
        line(&mut row.iter().map(String::as_str));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::table;

    #[test]
    fn table_aligns_columns() {
        let t = table(
            &["TOPIC", "PARTITIONS"],
            &[
                vec!["a".into(), "3".into()],
                vec!["longer-name".into(), "12".into()],
            ],
        );
        assert_eq!(
            t,
            "TOPIC        PARTITIONS\na            3\nlonger-name  12\n"
        );
    }
}
