//! The `layering` rule: the crate table of ARCHITECTURE.md, parsed, against every
//! `crates/*/Cargo.toml`.
//!
//! Table format (the first fenced block of ARCHITECTURE.md, under its `crates/` line): a row is
//! a line of exactly two spaces, a dir name with a trailing `/`, spaces, and the layer `L<n>`;
//! everything after is free text, and deeper-indented lines are descriptions or sub-modules.
//!
//! Manifests are read line by line (no TOML parser): a section header `[...dependencies]`
//! (any `target.*` prefix) opens a dependency table, in which a key starting `skiff-` is a
//! workspace crate; `[dependencies.skiff-x]` headers count too. A crate is known by its
//! `[package] name`, mapped back to its dir.

use std::collections::BTreeMap;

use super::Violation;

const RULE: &str = "layering";
const ARCH: &str = "ARCHITECTURE.md";

/// `dir name -> (layer, line in ARCHITECTURE.md)`.
pub type Layers = BTreeMap<String, (u32, usize)>;

/// Parses the table. Errors when there is no table at all.
pub fn parse_layers(arch: &str) -> Result<Layers, Violation> {
    let mut out = Layers::new();
    let mut in_block = false;
    for (i, line) in arch.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            if in_block {
                break;
            }
            in_block = true;
            continue;
        }
        if !in_block {
            continue;
        }
        let Some(rest) = line.strip_prefix("  ") else {
            continue;
        };
        if rest.starts_with(' ') {
            continue;
        }
        let mut words = rest.split_whitespace();
        let (Some(dir), Some(layer)) = (words.next(), words.next()) else {
            continue;
        };
        let Some(dir) = dir.strip_suffix('/') else {
            continue;
        };
        if let Some(n) = layer.strip_prefix('L').and_then(|n| n.parse::<u32>().ok()) {
            out.insert(dir.to_string(), (n, i + 1));
        }
    }
    if out.is_empty() {
        return Err(Violation::new(
            ARCH,
            1,
            RULE,
            "no crate table (`  <dir>/  L<n>  ...` rows in the first code block)",
        ));
    }
    Ok(out)
}

/// The `[package] name` of a manifest.
pub fn package_name(manifest: &str) -> Option<String> {
    let mut in_package = false;
    for line in manifest.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            in_package = t == "[package]";
            continue;
        }
        if in_package && let Some(v) = t.strip_prefix("name") {
            let v = v.trim_start();
            if let Some(v) = v.strip_prefix('=') {
                return Some(v.trim().trim_matches('"').to_string());
            }
        }
    }
    None
}

/// `(dependency name, line, section)` for every `skiff-*` dependency.
pub fn skiff_dependencies(manifest: &str) -> Vec<(String, usize, String)> {
    let mut out = Vec::new();
    let mut section = String::new();
    for (i, line) in manifest.lines().enumerate() {
        let t = line.trim();
        if t.starts_with('[') {
            section = t.trim_matches(|c| c == '[' || c == ']').to_string();
            // `[dependencies.skiff-x]`
            if let Some((table, name)) = section.rsplit_once('.')
                && is_dep_table(table)
                && name.starts_with("skiff-")
            {
                out.push((name.to_string(), i + 1, table.to_string()));
            }
            continue;
        }
        if !is_dep_table(&section) || t.starts_with('#') {
            continue;
        }
        let key: String = t
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
            .collect();
        if key.starts_with("skiff-") {
            out.push((key, i + 1, section.clone()));
        }
    }
    out
}

fn is_dep_table(section: &str) -> bool {
    let last = section.rsplit('.').next().unwrap_or(section);
    let last = if section.starts_with("target.") {
        last
    } else {
        section
    };
    matches!(
        last,
        "dependencies" | "dev-dependencies" | "build-dependencies"
    )
}

/// Checks `crates`: `(dir name, manifest path, manifest text)` for every `crates/*` dir.
/// The crate (dir) that holds the test harnesses: a dev-dependency on it is never upward.
const TEST_SUPPORT: &str = "testkit";

pub fn check(arch: &str, crates: &[(String, String, String)]) -> Vec<Violation> {
    let layers = match parse_layers(arch) {
        Ok(l) => l,
        Err(v) => return vec![v],
    };
    let mut out = Vec::new();
    let by_package: BTreeMap<String, String> = crates
        .iter()
        .filter_map(|(dir, _, text)| package_name(text).map(|n| (n, dir.clone())))
        .collect();
    for (dir, (_, line)) in &layers {
        if !crates.iter().any(|(d, _, _)| d == dir) {
            out.push(Violation::new(
                ARCH,
                *line,
                RULE,
                format!("the table lists `{dir}/` but there is no crates/{dir}/Cargo.toml"),
            ));
        }
    }
    for (dir, path, text) in crates {
        let Some((layer, _)) = layers.get(dir) else {
            out.push(Violation::new(
                path,
                1,
                RULE,
                format!("crates/{dir}/ is missing from the crate table in {ARCH}"),
            ));
            continue;
        };
        for (dep, line, section) in skiff_dependencies(text) {
            let Some(dep_dir) = by_package.get(&dep) else {
                out.push(Violation::new(
                    path,
                    line,
                    RULE,
                    format!("`{dep}` is not a crate under crates/"),
                ));
                continue;
            };
            let Some((dep_layer, _)) = layers.get(dep_dir) else {
                continue; // reported as missing from the table above
            };
            // The test-support crate sits above everything; tests of any crate may use it.
            if section == "dev-dependencies" && dep_dir == TEST_SUPPORT {
                continue;
            }
            if dep_layer >= layer {
                out.push(Violation::new(
                    path,
                    line,
                    RULE,
                    format!("[{section}] {dir}/ (L{layer}) depends on {dep_dir}/ (L{dep_layer}): dependencies must point to a strictly lower layer"),
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const ARCH_MD: &str = "# x\n\ntext `L9` here\n\n```\ncrates/\n  types/      L0  Aliases,\n                  more text L5.\n  record/     L1  Batches\n                    sub/  L7 not a row\n  storage/    L2  Logs\n  server/     L5  The server\ntests/compat/     not a crate\n```\n\n```\n  late/ L0  after the first block\n```\n";

    fn manifest(name: &str, deps: &str) -> String {
        format!(
            "[package]\nname = \"{name}\"\nversion.workspace = true\n\n{deps}\n[lints]\nworkspace = true\n"
        )
    }

    #[test]
    fn parses_rows_only() {
        let l = parse_layers(ARCH_MD).unwrap();
        let got: Vec<(&str, u32)> = l.iter().map(|(k, (n, _))| (k.as_str(), *n)).collect();
        assert_eq!(
            got,
            vec![("record", 1), ("server", 5), ("storage", 2), ("types", 0)]
        );
        assert_eq!(l["types"].1, 7, "line of the row");
        assert!(parse_layers("# nothing\n").is_err());
    }

    #[test]
    fn finds_dependencies_in_every_table_form() {
        let m = "[package]\nname = \"a\"\n[dependencies]\nskiff-types.workspace = true\nserde = \"1\"\n# skiff-x = 1\n[dev-dependencies]\nskiff-server = { workspace = true }\n[target.'cfg(unix)'.dependencies]\nskiff-record.workspace = true\n[dependencies.skiff-storage]\nworkspace = true\n[features]\nskiff-nope = []\n";
        let got: Vec<(String, usize)> = skiff_dependencies(m)
            .into_iter()
            .map(|(n, l, _)| (n, l))
            .collect();
        assert_eq!(
            got,
            vec![
                ("skiff-types".into(), 4),
                ("skiff-server".into(), 8),
                ("skiff-record".into(), 10),
                ("skiff-storage".into(), 11)
            ]
        );
        assert_eq!(package_name(m).as_deref(), Some("a"));
    }

    #[test]
    fn flags_upward_sideways_unknown_and_missing() {
        let crates = vec![
            (
                "types".to_string(),
                "crates/types/Cargo.toml".to_string(),
                manifest("skiff-types", ""),
            ),
            (
                "record".to_string(),
                "crates/record/Cargo.toml".to_string(),
                manifest(
                    "skiff-record",
                    "[dependencies]\nskiff-types.workspace = true\n",
                ),
            ),
            // storage (L2) -> server (L5) in dev-deps: upward
            (
                "storage".to_string(),
                "crates/storage/Cargo.toml".to_string(),
                manifest(
                    "skiff-storage",
                    "[dependencies]\nskiff-record.workspace = true\n[dev-dependencies]\nskiff-server.workspace = true\n",
                ),
            ),
            // server (L5) -> storage fine, -> itself-level crate via unknown name
            (
                "server".to_string(),
                "crates/server/Cargo.toml".to_string(),
                manifest(
                    "skiff-server",
                    "[dependencies]\nskiff-storage.workspace = true\nskiff-ghost.workspace = true\n",
                ),
            ),
            (
                "extra".to_string(),
                "crates/extra/Cargo.toml".to_string(),
                manifest("skiff-extra", ""),
            ),
        ];
        let got: Vec<String> = check(ARCH_MD, &crates)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(got.len(), 3, "{got:#?}");
        assert!(got[0].starts_with("crates/storage/Cargo.toml:8: layering: [dev-dependencies] storage/ (L2) depends on server/ (L5)"), "{}", got[0]);
        assert!(
            got[1].starts_with("crates/server/Cargo.toml:7: layering: `skiff-ghost`"),
            "{}",
            got[1]
        );
        assert!(
            got[2].starts_with("crates/extra/Cargo.toml:1: layering: crates/extra/ is missing"),
            "{}",
            got[2]
        );
    }

    #[test]
    fn same_layer_is_refused_and_a_row_without_a_crate_is_reported() {
        let arch = "```\n  a/  L1 x\n  b/  L1 y\n  gone/ L0 z\n```\n";
        let crates = vec![
            (
                "a".to_string(),
                "crates/a/Cargo.toml".to_string(),
                manifest("skiff-a", "[dependencies]\nskiff-b.workspace = true\n"),
            ),
            (
                "b".to_string(),
                "crates/b/Cargo.toml".to_string(),
                manifest("skiff-b", ""),
            ),
        ];
        let got: Vec<String> = check(arch, &crates)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(got.len(), 2, "{got:#?}");
        assert!(
            got[0].starts_with("ARCHITECTURE.md:4: layering: the table lists `gone/`"),
            "{}",
            got[0]
        );
        assert!(got[1].contains("a/ (L1) depends on b/ (L1)"), "{}", got[1]);
    }

    #[test]
    fn a_clean_tree_passes() {
        let crates = vec![
            (
                "types".to_string(),
                "crates/types/Cargo.toml".to_string(),
                manifest("skiff-types", ""),
            ),
            (
                "record".to_string(),
                "crates/record/Cargo.toml".to_string(),
                manifest(
                    "skiff-record",
                    "[dependencies]\nskiff-types.workspace = true\n",
                ),
            ),
            (
                "storage".to_string(),
                "crates/storage/Cargo.toml".to_string(),
                manifest(
                    "skiff-storage",
                    "[dependencies]\nskiff-record.workspace = true\n",
                ),
            ),
            (
                "server".to_string(),
                "crates/server/Cargo.toml".to_string(),
                manifest(
                    "skiff-server",
                    "[dependencies]\nskiff-storage.workspace = true\n",
                ),
            ),
        ];
        assert_eq!(check(ARCH_MD, &crates), vec![]);
    }
}
