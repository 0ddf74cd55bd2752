//! Kafka principals (`<type>:<name>`, e.g. `User:alice`) and the mapping of a certificate
//! subject to one (`ssl.principal.mapping.rules`, Kafka's `SslPrincipalMapper`).
//!
//! Invariants: a principal's type and name are compared exactly (case-sensitive), as Kafka's
//! `KafkaPrincipal.equals` does. A mapping is a list of rules tried in order; the first rule
//! that matches the whole distinguished name gives the name; `DEFAULT` gives the name
//! unchanged; no rule matching is an error (Kafka fails the authentication), never a fallback.
//!
//! Rules are split and parsed with Kafka's own two regexes (`RULE_SPLITTER`, `RULE_PARSER`),
//! so the same text yields the same rules. Patterns are compiled by the `regex` crate instead
//! of `java.util.regex`; the differences an operator can meet:
//! - no backreferences (`\1`) and no lookaround in patterns: such a rule is refused at
//!   start-up with the regex error;
//! - `\w`, `\d`, `\s` and `\b` are Unicode-aware (Java's are ASCII unless `(?U)`);
//! - `$` matches only at the end of the name (Java's also before a final line terminator);
//! - the replacement uses Java's syntax (`$n`, `\` escapes), expanded here; `${name}` refers to
//!   a named group (`(?<name>...)`). As Kafka does, `$n` beyond the group count is literal.
//! - lower/upper-casing (`/L`, `/U`) is Unicode's, Java's is `Locale.ENGLISH` (the same for
//!   the ASCII names certificates carry).

use regex::{Captures, Regex};
use std::fmt;
use std::sync::LazyLock;

/// A Kafka principal: `User:alice`, `User:ANONYMOUS`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KafkaPrincipal {
    pub principal_type: String,
    pub name: String,
}

/// Kafka's principal type for users.
pub const USER_TYPE: &str = "User";

impl KafkaPrincipal {
    pub fn user(name: impl Into<String>) -> Self {
        Self {
            principal_type: USER_TYPE.to_string(),
            name: name.into(),
        }
    }

    /// `User:ANONYMOUS`: an unauthenticated connection.
    pub fn anonymous() -> Self {
        Self::user("ANONYMOUS")
    }

    /// Parses `Type:name` (Kafka's `SecurityUtils.parseKafkaPrincipal`): the first `:` splits.
    pub fn parse(s: &str) -> Option<Self> {
        let (t, n) = s.split_once(':')?;
        if t.is_empty() {
            return None;
        }
        Some(Self {
            principal_type: t.to_string(),
            name: n.to_string(),
        })
    }
}

impl fmt::Display for KafkaPrincipal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.principal_type, self.name)
    }
}

/// Kafka's default `ssl.principal.mapping.rules`.
pub const DEFAULT_SSL_PRINCIPAL_MAPPING_RULES: &str = "DEFAULT";

/// Kafka's `RULE_PATTERN` (SslPrincipalMapper), verbatim.
const RULE_PATTERN: &str = r"(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)";

/// Constant patterns: they compile (every test uses them), but a failure would be an error,
/// not a panic.
type Compiled = LazyLock<Result<Regex, regex::Error>>;
static RULE_SPLITTER: Compiled =
    LazyLock::new(|| Regex::new(&format!(r"\s*({RULE_PATTERN})\s*(,\s*|$)")));
static RULE_PARSER: Compiled = LazyLock::new(|| Regex::new(&format!(r"\A(?:{RULE_PATTERN})")));
static BACK_REF: Compiled = LazyLock::new(|| Regex::new(r"\$(\d+)"));

fn compiled(re: &'static Compiled) -> Result<&'static Regex, PrincipalMappingError> {
    re.as_ref().map_err(|e| PrincipalMappingError::BadPattern {
        rule: "(built-in)".into(),
        reason: e.to_string(),
    })
}

/// A bad `ssl.principal.mapping.rules` value, or a name no rule maps.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PrincipalMappingError {
    #[error("Invalid rule: `{rule}`, unmatched substring: `{rest}`")]
    InvalidRule { rule: String, rest: String },
    #[error("Invalid rule: `{rule}`: its pattern does not compile: {reason}")]
    BadPattern { rule: String, reason: String },
    #[error("Invalid rule: `{rule}`: bad replacement: {reason}")]
    BadReplacement { rule: String, reason: String },
    /// Kafka's `NoMatchingRule` text.
    #[error("No rules apply to {dn}, rules {rules}")]
    NoMatchingRule { dn: String, rules: String },
}

/// One mapping rule.
#[derive(Clone, Debug)]
enum Rule {
    Default,
    Rule {
        /// The pattern as written (for Display) and compiled twice: anchored for Java's
        /// `matches()` and free for `replaceAll`.
        source: String,
        full: Regex,
        free: Regex,
        replacement: String,
        lower: bool,
        upper: bool,
    },
}

impl fmt::Display for Rule {
    /// Kafka's `Rule.toString` (the replacement's trailing `/` is not printed).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rule::Default => f.write_str("DEFAULT"),
            Rule::Rule {
                source,
                replacement,
                lower,
                upper,
                ..
            } => {
                write!(f, "RULE:{source}/{replacement}")?;
                if *lower {
                    f.write_str("/L")
                } else if *upper {
                    f.write_str("/U")
                } else {
                    Ok(())
                }
            }
        }
    }
}

/// Kafka's `SslPrincipalMapper`: `ssl.principal.mapping.rules` parsed once, applied to the
/// RFC 2253 subject of each client certificate.
#[derive(Clone, Debug)]
pub struct SslPrincipalMapper {
    rules: Vec<Rule>,
}

impl Default for SslPrincipalMapper {
    fn default() -> Self {
        Self {
            rules: vec![Rule::Default],
        }
    }
}

impl fmt::Display for SslPrincipalMapper {
    /// Kafka's `toString`: `SslPrincipalMapper(rules = [RULE:..., DEFAULT])`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SslPrincipalMapper(rules = {})", self.rules_text())
    }
}

impl SslPrincipalMapper {
    /// Parses the rules (`None` = Kafka's default, `DEFAULT`). Rules are separated by commas
    /// (whitespace and line breaks around them are ignored); empty rules are ignored.
    pub fn from_rules(rules: Option<&str>) -> Result<Self, PrincipalMappingError> {
        let text = rules.unwrap_or(DEFAULT_SSL_PRINCIPAL_MAPPING_RULES).trim();
        let mut out = Vec::new();
        for caps in compiled(&RULE_SPLITTER)?.captures_iter(text) {
            let Some(rule) = caps.get(1) else { continue };
            if let Some(r) = parse_rule(rule.as_str())? {
                out.push(r);
            }
        }
        Ok(Self { rules: out })
    }

    /// The principal name for a distinguished name: the first rule that matches wins.
    pub fn apply(&self, dn: &str) -> Result<String, PrincipalMappingError> {
        for rule in &self.rules {
            if let Some(name) = apply_rule(rule, dn) {
                return Ok(name);
            }
        }
        Err(PrincipalMappingError::NoMatchingRule {
            dn: dn.to_string(),
            rules: self.rules_text(),
        })
    }

    fn rules_text(&self) -> String {
        let parts: Vec<String> = self.rules.iter().map(Rule::to_string).collect();
        format!("[{}]", parts.join(", "))
    }
}

fn parse_rule(rule: &str) -> Result<Option<Rule>, PrincipalMappingError> {
    let invalid = |end: usize| PrincipalMappingError::InvalidRule {
        rule: rule.to_string(),
        rest: rule.get(end..).unwrap_or_default().to_string(),
    };
    let Some(caps) = compiled(&RULE_PARSER)?.captures(rule) else {
        return Err(invalid(0));
    };
    let end = caps.get(0).map_or(0, |m| m.end());
    if end != rule.len() {
        return Err(invalid(end));
    }
    if caps.get(1).is_some() {
        return Ok(Some(Rule::Default));
    }
    let (Some(pattern), Some(replacement)) = (caps.get(2), caps.get(4)) else {
        return Ok(None); // the empty rule
    };
    let flag = caps.get(6).map_or("", |m| m.as_str());
    let pattern = pattern.as_str();
    let compile = |p: String| {
        Regex::new(&p).map_err(|e| PrincipalMappingError::BadPattern {
            rule: rule.to_string(),
            reason: e.to_string(),
        })
    };
    let free = compile(pattern.to_string())?;
    let full = compile(format!(r"\A(?:{pattern})\z"))?;
    let replacement = replacement.as_str().to_string();
    // Refuse a replacement Java would refuse at the first match, now rather than per client.
    check_replacement(&replacement, &free).map_err(|reason| {
        PrincipalMappingError::BadReplacement {
            rule: rule.to_string(),
            reason,
        }
    })?;
    Ok(Some(Rule::Rule {
        source: pattern.to_string(),
        full,
        free,
        replacement,
        lower: flag == "L",
        upper: flag == "U",
    }))
}

fn apply_rule(rule: &Rule, dn: &str) -> Option<String> {
    let Rule::Rule {
        full,
        free,
        replacement,
        lower,
        upper,
        ..
    } = rule
    else {
        return Some(dn.to_string());
    };
    if !full.is_match(dn) {
        return None;
    }
    let groups = free.captures_len() - 1;
    let replacement = escape_literal_back_references(replacement, groups);
    let result = replace_all_java(free, dn, &replacement);
    Some(if *lower {
        result.to_lowercase()
    } else if *upper {
        result.to_uppercase()
    } else {
        result
    })
}

/// Kafka's `escapeLiteralBackReferences` (from NiFi): `$n` naming no group becomes the
/// literal `\$n` (after trying the shorter prefixes of `n`, as Kafka does).
fn escape_literal_back_references(unescaped: &str, groups: usize) -> String {
    if groups == 0 {
        return unescaped.to_string();
    }
    let mut value = unescaped.to_string();
    let Ok(back_ref) = compiled(&BACK_REF) else {
        return value;
    };
    let mut from = 0;
    // Kafka's loop keeps the first string's positions after an insertion, which misplaces the
    // `\` of a second invalid reference; here each one is escaped where it is.
    while let Some(caps) = back_ref.captures_at(&value, from) {
        let (Some(whole), Some(num)) = (caps.get(0), caps.get(1)) else {
            break;
        };
        let (start, mut next) = (whole.start(), whole.end());
        let digits = num.as_str();
        if !digits.starts_with('0') {
            let mut index: u128 = digits.parse().unwrap_or(u128::MAX);
            while index > groups as u128 && index >= 10 {
                index /= 10;
            }
            if index > groups as u128 {
                value.insert(start, '\\');
                next += 1;
            }
        }
        from = next;
    }
    value
}

/// Expands a Java replacement (`$n`, `${name}`, `\x`) for one match.
fn expand_java(caps: &Captures<'_>, re: &Regex, replacement: &str, out: &mut String) {
    let groups = re.captures_len() - 1;
    let mut chars = replacement.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(n) = chars.next() {
                    out.push(n);
                }
            }
            '$' => {
                if chars.peek() == Some(&'{') {
                    chars.next();
                    let name: String = chars.by_ref().take_while(|&c| c != '}').collect();
                    out.push_str(caps.name(&name).map_or("", |m| m.as_str()));
                    continue;
                }
                // Java: the first digit is always a group number, more digits are taken while
                // the number stays a valid group.
                let Some(first) = chars.peek().and_then(|c| c.to_digit(10)) else {
                    continue;
                };
                chars.next();
                let mut index = first as usize;
                while let Some(d) = chars.peek().and_then(|c| c.to_digit(10)) {
                    let longer = index * 10 + d as usize;
                    if longer > groups {
                        break;
                    }
                    index = longer;
                    chars.next();
                }
                out.push_str(caps.get(index).map_or("", |m| m.as_str()));
            }
            c => out.push(c),
        }
    }
}

/// Java's `replaceAll` refuses a trailing `\`, `$` followed by no digit nor `{`, an unknown
/// `${name}` and a first digit beyond the group count.
fn check_replacement(replacement: &str, re: &Regex) -> Result<(), String> {
    let groups = re.captures_len() - 1;
    let names: Vec<&str> = re.capture_names().flatten().collect();
    let escaped = escape_literal_back_references(replacement, groups);
    let mut chars = escaped.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.next().is_none() => {
                return Err("character to be escaped is missing".into());
            }
            '$' => match chars.next() {
                Some('{') => {
                    let name: String = chars.by_ref().take_while(|&c| c != '}').collect();
                    if !names.contains(&name.as_str()) {
                        return Err(format!("no group with name {{{name}}}"));
                    }
                }
                Some(d) if d.is_ascii_digit() => {
                    if d.to_digit(10).unwrap_or(0) as usize > groups {
                        return Err(format!("no group {d}"));
                    }
                }
                _ => return Err("illegal group reference".into()),
            },
            _ => {}
        }
    }
    Ok(())
}

/// Java's `String.replaceAll`: every match (an empty match right after a non-empty one
/// included, as `Matcher.find` does) replaced by the expanded replacement.
fn replace_all_java(re: &Regex, text: &str, replacement: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let (mut copied, mut pos) = (0, 0);
    while pos <= text.len() {
        let Some(caps) = re.captures_at(text, pos) else {
            break;
        };
        let Some(m) = caps.get(0) else { break };
        out.push_str(&text[copied..m.start()]);
        expand_java(&caps, re, replacement, &mut out);
        copied = m.end();
        pos = if m.is_empty() {
            match text[m.end()..].chars().next() {
                Some(c) => m.end() + c.len_utf8(),
                None => break,
            }
        } else {
            m.end()
        };
    }
    out.push_str(&text[copied..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_display() {
        let p = KafkaPrincipal::parse("User:CN=a:b").unwrap();
        assert_eq!(p.principal_type, "User");
        assert_eq!(p.name, "CN=a:b");
        assert_eq!(p.to_string(), "User:CN=a:b");
        assert!(KafkaPrincipal::parse("nouser").is_none());
        assert!(KafkaPrincipal::parse(":x").is_none());
        assert_eq!(KafkaPrincipal::anonymous().to_string(), "User:ANONYMOUS");
    }

    fn mapper(rules: &str) -> SslPrincipalMapper {
        SslPrincipalMapper::from_rules(Some(rules)).unwrap()
    }

    // Kafka's SslPrincipalMapperTest.testValidRules / testInvalidRules.
    #[test]
    fn valid_and_invalid_rules() {
        let valid = [
            "DEFAULT",
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/",
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
            "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/",
            "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L",
            "RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U",
            "RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/",
            "RULE:^CN=([^,DEFAULT,]+)(,.*|$)/$1/",
        ];
        for rules in valid {
            assert!(
                SslPrincipalMapper::from_rules(Some(rules)).is_ok(),
                "{rules}"
            );
        }
        let invalid = [
            "default",
            "DEFAUL",
            "DEFAULT/L",
            "DEFAULT/U",
            "RULE:CN=(.*?),OU=ServiceUsers.*/$1",
            "rule:^CN=(.*?),OU=ServiceUsers.*$/$1/",
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U",
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/L",
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/U",
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/LU",
            // Not in Kafka's list: refused here at start-up instead of at the first client.
            "RULE:^CN=(.*)$/$/",
            "RULE:^CN=(.*)$/\\/",
            "RULE:^CN=(a)\\1$/x/",
        ];
        for rules in invalid {
            assert!(
                SslPrincipalMapper::from_rules(Some(rules)).is_err(),
                "{rules}"
            );
        }
        let err = SslPrincipalMapper::from_rules(Some("DEFAULT/L")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Invalid rule: `DEFAULT/L`, unmatched substring: `/L`"
        );
    }

    // Kafka's testSslPrincipalMapper.
    #[test]
    fn mapping_table() {
        let m = mapper(
            &[
                "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L",
                "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L",
                "RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U",
                "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U",
                "DEFAULT",
            ]
            .join(", "),
        );
        let cases = [
            ("CN=Duke,OU=ServiceUsers,O=Org,C=US", "duke"),
            ("CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US", "duke@sme"),
            ("cn=duke,ou=sme,dc=mycp,dc=com", "DUKE@SME"),
            ("cN=duke,OU=JavaSoft,O=Sun Microsystems", "DUKE"),
            (
                "OU=JavaSoft,O=Sun Microsystems,C=US",
                "OU=JavaSoft,O=Sun Microsystems,C=US",
            ),
        ];
        for (dn, want) in cases {
            assert_eq!(m.apply(dn).unwrap(), want, "{dn}");
        }
    }

    #[test]
    fn default_and_no_match() {
        let d = SslPrincipalMapper::from_rules(None).unwrap();
        assert_eq!(d.apply("CN=alice,O=acme").unwrap(), "CN=alice,O=acme");
        assert_eq!(d.to_string(), SslPrincipalMapper::default().to_string());
        let m = mapper("RULE:^CN=(.*?),O=acme$/$1/");
        assert_eq!(m.apply("CN=alice,O=acme").unwrap(), "alice");
        assert_eq!(
            m.apply("CN=bob,O=other").unwrap_err().to_string(),
            "No rules apply to CN=bob,O=other, rules [RULE:^CN=(.*?),O=acme$/$1]"
        );
        // Empty rules: nothing maps.
        assert!(mapper("").apply("CN=x").is_err());
    }

    // Kafka's testCommaWithWhitespace.
    #[test]
    fn comma_with_whitespace() {
        let m = mapper("RULE:^CN=((\\\\, *|\\w)+)(,.*|$)/$1/,DEFAULT");
        assert_eq!(
            m.apply("CN=Tkac\\, Adam,OU=ITZ,DC=geodis,DC=cz").unwrap(),
            "Tkac\\, Adam"
        );
    }

    #[test]
    fn replacement_follows_java() {
        let table = [
            // $4 with 3 groups is literal (Kafka's escapeLiteralBackReferences).
            ("RULE:^(a)(b)(c)$/$1@$4/", "abc", "a@$4"),
            // $12 with 2 groups: group 1 then a literal 2 (Java's longest valid group).
            ("RULE:^(a)(b)$/$12/", "ab", "a2"),
            // Two references beyond the group count: both literal.
            ("RULE:^(a)$/$5$6/", "a", "$5$6"),
            // Escapes and named groups.
            ("RULE:^(?<user>[a-z]+)$/\\$${user}/", "bob", "$bob"),
            // Java's replaceAll also replaces the empty match at the end.
            ("RULE:.*/x/", "abc", "xx"),
            ("RULE:^CN=([^,]+).*$/$1/U", "CN=ünï,O=x", "ÜNÏ"),
        ];
        for (rules, dn, want) in table {
            assert_eq!(mapper(rules).apply(dn).unwrap(), want, "{rules} on {dn}");
        }
    }

    // Kafka's testRulesSplitting ("seeing is believing").
    #[test]
    fn rules_splitting() {
        let table = [
            ("[]", ""),
            ("[DEFAULT]", "DEFAULT"),
            ("[RULE:/]", "RULE://"),
            ("[RULE:/.*]", "RULE:/.*/"),
            ("[RULE:/.*/L]", "RULE:/.*/L"),
            ("[RULE:/, DEFAULT]", "RULE://,DEFAULT"),
            ("[RULE:/, DEFAULT]", "  RULE:// ,  DEFAULT  "),
            (
                "[RULE:   /     , DEFAULT]",
                "  RULE:   /     / ,  DEFAULT  ",
            ),
            (
                "[RULE:  /     /U, DEFAULT]",
                "  RULE:  /     /U   ,DEFAULT  ",
            ),
            (
                "[RULE:([A-Z]*)/$1/U, RULE:([a-z]+)/$1, DEFAULT]",
                "  RULE:([A-Z]*)/$1/U   ,RULE:([a-z]+)/$1/,   DEFAULT  ",
            ),
            ("[]", ",   , , ,      , , ,   "),
            ("[RULE:/, DEFAULT]", ",,RULE://,,,DEFAULT,,"),
            (
                "[RULE: /   , DEFAULT]",
                ",  , RULE: /   /    ,,,   DEFAULT, ,   ",
            ),
            (
                "[RULE:   /  /U, DEFAULT]",
                "     ,  , RULE:   /  /U    ,,  ,DEFAULT, ,",
            ),
            (
                "[RULE:\\/\\\\\\(\\)\\n\\t/\\/\\/]",
                "RULE:\\/\\\\\\(\\)\\n\\t/\\/\\//",
            ),
            (
                "[RULE:\\**\\/+/*/L, RULE:\\/*\\**/**]",
                "RULE:\\**\\/+/*/L,RULE:\\/*\\**/**/",
            ),
            (
                "[RULE:,RULE:,/,RULE:,\\//U, RULE:,/RULE:,, RULE:,RULE:,/L,RULE:,/L, RULE:, DEFAULT, /DEFAULT, DEFAULT]",
                "RULE:,RULE:,/,RULE:,\\//U,RULE:,/RULE:,/,RULE:,RULE:,/L,RULE:,/L,RULE:, DEFAULT, /DEFAULT/,DEFAULT",
            ),
            // Line breaks around the commas are whitespace.
            ("[RULE:^x$/y, DEFAULT]", "RULE:^x$/y/,\n  DEFAULT\n"),
        ];
        for (want, rules) in table {
            assert_eq!(
                mapper(rules).to_string(),
                format!("SslPrincipalMapper(rules = {want})"),
                "{rules:?}"
            );
        }
    }
}
