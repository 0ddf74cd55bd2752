//! The `unwrap` rule: clippy's `unwrap_used` / `expect_used` enforce "no unwrap/expect outside
//! tests" (the test command runs clippy with `-D warnings`); this checks that the configuration
//! that makes them apply everywhere is in place and that no source opts out.

use super::Violation;

const RULE: &str = "unwrap";
const LINTS: &[&str] = &["unwrap_used", "expect_used"];
const TEST_KEYS: &[&str] = &["allow-unwrap-in-tests", "allow-expect-in-tests"];

/// Root `[workspace.lints.clippy]`, `clippy.toml` (None = absent) and every member's
/// `[lints] workspace = true` (`(manifest path, text)`).
pub fn check_config(
    root_manifest: &str,
    clippy_toml: Option<&str>,
    members: &[(String, String)],
) -> Vec<Violation> {
    let mut out = Vec::new();
    let section = section_lines(root_manifest, "workspace.lints.clippy");
    let at = section.first().map_or(1, |(i, _)| *i);
    for lint in LINTS {
        let level = section.iter().find_map(|(_, l)| value_of(l, lint));
        let ok = level.as_deref().is_some_and(|v| {
            ["warn", "deny", "forbid"]
                .iter()
                .any(|w| v.contains(&format!("\"{w}\"")))
        });
        if !ok {
            out.push(Violation::new(
                "Cargo.toml",
                at,
                RULE,
                format!("`{lint}` is not set to \"warn\" or \"deny\" in [workspace.lints.clippy] (found {level:?})"),
            ));
        }
    }
    match clippy_toml {
        None => out.push(Violation::new(
            "clippy.toml",
            1,
            RULE,
            "missing: it must set allow-unwrap-in-tests = true and allow-expect-in-tests = true",
        )),
        Some(text) => {
            let lines: Vec<(usize, &str)> =
                text.lines().enumerate().map(|(i, l)| (i + 1, l)).collect();
            for key in TEST_KEYS {
                let v = lines.iter().find_map(|(_, l)| value_of(l, key));
                if v.as_deref() != Some("true") {
                    out.push(Violation::new(
                        "clippy.toml",
                        1,
                        RULE,
                        format!("`{key} = true` is missing (found {v:?})"),
                    ));
                }
            }
        }
    }
    for (path, text) in members {
        let lints = section_lines(text, "lints");
        if !lints
            .iter()
            .any(|(_, l)| value_of(l, "workspace").as_deref() == Some("true"))
        {
            out.push(Violation::new(
                path,
                lints.first().map_or(1, |(i, _)| *i),
                RULE,
                "no `[lints] workspace = true`: the crate would escape the workspace lints",
            ));
        }
    }
    out
}

/// The uncommented lines of `[name]` (with their 1-based numbers; the header first).
fn section_lines<'a>(text: &'a str, name: &str) -> Vec<(usize, &'a str)> {
    let mut out = Vec::new();
    let mut inside = false;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.starts_with('[') {
            inside = t.trim_matches(|c| c == '[' || c == ']').trim() == name;
            if inside {
                out.push((i + 1, line));
            }
            continue;
        }
        if inside && !t.starts_with('#') && !t.is_empty() {
            out.push((i + 1, line));
        }
    }
    out
}

/// `key = value` -> `value` (trimmed, comment cut), for an uncommented line.
fn value_of(line: &str, key: &str) -> Option<String> {
    let t = line.trim();
    let rest = t.strip_prefix(key)?.trim_start();
    let v = rest.strip_prefix('=')?;
    let v = v.split('#').next().unwrap_or("");
    Some(v.trim().to_string())
}

/// `allow(clippy::unwrap_used)` (or `expect_used`, or `expect(...)`) in non-test code of a
/// source file. Test code: files under a `tests/` dir or named `tests.rs`, `cfg_attr(test, ...)`,
/// and attributes within three lines after `#[cfg(test)]` or `#[test]`.
pub fn check_opt_outs(path: &str, text: &str) -> Vec<Violation> {
    let mut dirs: Vec<&str> = path.split('/').collect();
    let file = dirs.pop().unwrap_or("");
    if dirs.contains(&"tests") || file == "tests.rs" {
        return Vec::new();
    }
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim_start();
        if !(t.starts_with("#[") || t.starts_with("#!["))
            || !(t.contains("allow(") || t.contains("expect("))
        {
            continue;
        }
        let Some(lint) = LINTS.iter().find(|l| t.contains(&format!("clippy::{l}"))) else {
            continue;
        };
        if t.contains("cfg_attr(test") {
            continue;
        }
        let under_test = lines[..i]
            .iter()
            .rev()
            .filter(|l| !l.trim().is_empty())
            .take(3)
            .any(|l| matches!(l.trim(), "#[cfg(test)]" | "#[test]"));
        if !under_test {
            out.push(Violation::new(
                path,
                i + 1,
                RULE,
                format!("`clippy::{lint}` allowed outside test code: return the error instead"),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOT_OK: &str = "[workspace]\nmembers = []\n\n[workspace.lints.clippy]\nunwrap_used = \"warn\"\nexpect_used = { level = \"deny\", priority = 1 }\n";
    const CLIPPY_OK: &str =
        "allow-unwrap-in-tests = true\nallow-expect-in-tests = true # tests may panic\n";

    fn members(extra: &str) -> Vec<(String, String)> {
        vec![
            (
                "crates/a/Cargo.toml".into(),
                "[package]\nname = \"a\"\n\n[lints]\nworkspace = true\n".into(),
            ),
            (
                "crates/b/Cargo.toml".into(),
                format!("[package]\nname = \"b\"\n{extra}"),
            ),
        ]
    }

    #[test]
    fn complete_configuration_passes() {
        assert_eq!(
            check_config(
                ROOT_OK,
                Some(CLIPPY_OK),
                &members("[lints]\nworkspace = true\n")
            ),
            vec![]
        );
    }

    #[test]
    fn commented_or_allowed_lints_and_missing_pieces_are_reported() {
        let root = "[workspace.lints.clippy]\n# TODO unwrap_used = \"warn\"\nexpect_used = \"allow\"\n[profile.release]\nunwrap_used = \"warn\"\n";
        let got: Vec<String> = check_config(root, None, &members("[lints.rust]\nx = 1\n"))
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(got.len(), 4, "{got:#?}");
        assert!(
            got[0].starts_with("Cargo.toml:1: unwrap: `unwrap_used` is not set"),
            "{}",
            got[0]
        );
        assert!(
            got[1].contains("`expect_used` is not set") && got[1].contains("allow"),
            "{}",
            got[1]
        );
        assert!(
            got[2].starts_with("clippy.toml:1: unwrap: missing"),
            "{}",
            got[2]
        );
        assert!(
            got[3].starts_with("crates/b/Cargo.toml:1: unwrap: no `[lints] workspace = true`"),
            "{}",
            got[3]
        );
        let got = check_config(ROOT_OK, Some("allow-unwrap-in-tests = false\n"), &[]);
        assert_eq!(got.len(), 2, "{got:#?}");
    }

    #[test]
    fn opt_outs_outside_tests() {
        let src = "#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]\n\n#[allow(clippy::unwrap_used)]\nfn f() {}\n\n#[cfg(test)]\n#[allow(clippy::unwrap_used)]\nmod tests {}\n\n#[cfg(test)]\nmod t2 {\n    #![allow(clippy::expect_used)]\n}\n\nfn g() {\n    #[expect(clippy::expect_used)]\n    let x = 1;\n}\n#[allow(clippy::too_many_arguments)]\nfn h() {}\n";
        let got: Vec<String> = check_opt_outs("crates/a/src/lib.rs", src)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(got, vec![
            "crates/a/src/lib.rs:3: unwrap: `clippy::unwrap_used` allowed outside test code: return the error instead".to_string(),
            "crates/a/src/lib.rs:16: unwrap: `clippy::expect_used` allowed outside test code: return the error instead".to_string(),
        ]);
        assert!(check_opt_outs("crates/a/tests/e2e.rs", src).is_empty());
        assert!(check_opt_outs("crates/a/src/x/tests.rs", src).is_empty());
    }
}
