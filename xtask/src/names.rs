//! Naming: JSON names (PascalCase or camelCase) to Rust snake_case identifiers.
//!
//! Rust keywords get a trailing underscore (`type` -> `type_`), consistently everywhere.

const KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern",
    "false", "fn", "for", "gen", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut",
    "pub", "ref", "return", "self", "static", "struct", "super", "trait", "true", "try", "type",
    "unsafe", "use", "where", "while", "abstract", "become", "box", "do", "final", "macro",
    "override", "priv", "typeof", "unsized", "virtual", "yield",
];

/// `ThrottleTimeMs` -> `throttle_time_ms`, `ISRNodes` -> `isr_nodes`, `group` -> `group`.
pub fn snake_case(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    let mut out = String::with_capacity(name.len() + 4);
    for (i, &c) in chars.iter().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_ascii_lowercase());
            if prev.is_ascii_lowercase()
                || prev.is_ascii_digit()
                || (prev.is_ascii_uppercase() && next_lower)
            {
                out.push('_');
            }
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// A field identifier: snake_case, keywords suffixed with `_`.
pub fn field_ident(name: &str) -> String {
    let s = snake_case(name);
    if KEYWORDS.contains(&s.as_str()) {
        format!("{s}_")
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snake_cases() {
        assert_eq!(snake_case("ThrottleTimeMs"), "throttle_time_ms");
        assert_eq!(snake_case("ISRNodes"), "isr_nodes");
        assert_eq!(snake_case("group"), "group");
        assert_eq!(snake_case("TopicId"), "topic_id");
        assert_eq!(snake_case("Version2Field"), "version2_field");
        assert_eq!(field_ident("Type"), "type_");
        assert_eq!(field_ident("Match"), "match_");
    }
}
