//! Kafka's JAAS text, as `sasl.jaas.config` and `listener.name.<l>.<mechanism>.sasl.jaas.config`
//! carry it (Kafka's `JaasConfig` + `JaasContext.load`):
//!
//! ```text
//! org.apache.kafka.common.security.plain.PlainLoginModule required
//!     username="admin" password="admin-secret" user_admin="admin-secret";
//! ```
//!
//! # Mental model
//!
//! The text is a sequence of entries `<login module> <control flag> (<key>=<value>)* ;`, tokenized
//! like Java's `StreamTokenizer` as Kafka configures it:
//! - a word starts with a letter, `-`, `_`, `$` or a non-ASCII character (code >= 160) and goes on
//!   with those, digits and `.` (so a class name `a.b.C` is one word);
//! - a quoted string is `"..."` or `'...'` with Java escapes (`\"`, `\\`, `\n`, `\t`, octal
//!   `\123`, any other `\x` is `x`); a line break or the end of the text inside quotes is an error
//!   (Java would silently end the string there);
//! - a number (a token starting with a digit or `.`) has no text, so an unquoted numeric value
//!   (`option1=3`) is an error, as in Kafka; quote it (`option1="3"`);
//! - `//` and a lone `/` start a comment to the end of the line, `/* */` a block comment;
//! - anything else (`=`, `;`, `{`) is a one-character token.
//!
//! # Invariants
//!
//! - Parsing never panics; every error is a [`JaasError`] whose message names the key, flag or
//!   token at fault, never an option's value (values are secrets).
//! - Control flags are case-insensitive (`REQUIRED` = `required`); a repeated option key keeps
//!   its last value (Kafka's `HashMap.put`).
//! - `sasl.jaas.config` holds exactly one entry ([`parse_jaas_config`]); a JAAS file section may
//!   hold several ([`parse_jaas_entries`]).
//! - `Debug` of a [`JaasEntry`] shows option keys but hides their values.

use std::collections::BTreeMap;
use std::fmt;

/// Kafka's login module for SASL/PLAIN.
pub const PLAIN_LOGIN_MODULE: &str = "org.apache.kafka.common.security.plain.PlainLoginModule";
/// Kafka's login module for SASL/SCRAM.
pub const SCRAM_LOGIN_MODULE: &str = "org.apache.kafka.common.security.scram.ScramLoginModule";

/// A JAAS login module control flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ControlFlag {
    Required,
    Requisite,
    Sufficient,
    Optional,
}

impl ControlFlag {
    /// Case-insensitive, as Kafka's `JaasConfig.loginModuleControlFlag`.
    pub fn parse(s: &str) -> Option<Self> {
        match s.to_ascii_uppercase().as_str() {
            "REQUIRED" => Some(ControlFlag::Required),
            "REQUISITE" => Some(ControlFlag::Requisite),
            "SUFFICIENT" => Some(ControlFlag::Sufficient),
            "OPTIONAL" => Some(ControlFlag::Optional),
            _ => None,
        }
    }
}

/// One login module entry: `<login_module> <control_flag> key=value ... ;`.
#[derive(Clone, PartialEq, Eq)]
pub struct JaasEntry {
    pub login_module: String,
    pub control_flag: ControlFlag,
    pub options: BTreeMap<String, String>,
}

impl fmt::Debug for JaasEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JaasEntry")
            .field("login_module", &self.login_module)
            .field("control_flag", &self.control_flag)
            .field("option_keys", &self.options.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// A malformed JAAS text: a configuration error with a message for the operator.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid JAAS configuration: {0}")]
pub struct JaasError(pub String);

/// Parses a `sasl.jaas.config` value: exactly one login module entry (Kafka's `JaasContext.load`).
pub fn parse_jaas_config(text: &str) -> Result<JaasEntry, JaasError> {
    let mut entries = parse_jaas_entries(text)?;
    if entries.len() != 1 {
        return Err(JaasError(format!(
            "JAAS config property contains {} login modules, should be 1 module",
            entries.len()
        )));
    }
    entries
        .pop()
        .ok_or_else(|| JaasError("JAAS config property does not contain any login modules".into()))
}

/// Parses one or more login module entries (Kafka's `JaasConfig`); at least one is required.
pub fn parse_jaas_entries(text: &str) -> Result<Vec<JaasEntry>, JaasError> {
    let mut lexer = Lexer::new(text);
    let mut entries = Vec::new();
    while let Some(tok) = lexer.next_token()? {
        entries.push(parse_entry(&mut lexer, tok)?);
    }
    if entries.is_empty() {
        return Err(JaasError(
            "Login module not specified in JAAS config".into(),
        ));
    }
    Ok(entries)
}

/// The PLAIN users of a server entry: every `user_<name>="<password>"` option (Kafka's
/// `PlainServerCallbackHandler`); a bare `user_` (empty name) is ignored.
pub fn plain_users(entry: &JaasEntry) -> BTreeMap<String, String> {
    entry
        .options
        .iter()
        .filter_map(|(k, v)| {
            let name = k.strip_prefix("user_")?;
            (!name.is_empty()).then(|| (name.to_string(), v.clone()))
        })
        .collect()
}

/// The client side's `username` and `password` options (inter-broker or client login), if
/// both are present.
pub fn client_credentials(entry: &JaasEntry) -> Option<(String, String)> {
    let user = entry.options.get("username")?;
    let password = entry.options.get("password")?;
    Some((user.clone(), password.clone()))
}

fn parse_entry(lexer: &mut Lexer<'_>, first: Token) -> Result<JaasEntry, JaasError> {
    let Some(login_module) = first.text() else {
        return Err(JaasError(format!(
            "Login module not specified in JAAS config (found {} where a login module class name was expected)",
            first.describe()
        )));
    };
    let Some(flag_tok) = lexer.next_token()? else {
        return Err(JaasError(format!(
            "Login module control flag not specified in JAAS config for login module '{login_module}'"
        )));
    };
    let Some(flag_text) = flag_tok.text() else {
        return Err(JaasError(format!(
            "Login module control flag is not available in the JAAS config for login module '{login_module}' (found {})",
            flag_tok.describe()
        )));
    };
    let Some(control_flag) = ControlFlag::parse(&flag_text) else {
        return Err(JaasError(format!(
            "Invalid login module control flag '{flag_text}' in JAAS config for login module '{login_module}' (expected required, requisite, sufficient or optional)"
        )));
    };
    let mut options = BTreeMap::new();
    loop {
        let tok = match lexer.next_token()? {
            None => {
                return Err(JaasError(format!(
                    "JAAS config entry not terminated by semi-colon (login module '{login_module}')"
                )));
            }
            Some(Token::Char(';')) => break,
            Some(t) => t,
        };
        let Some(key) = tok.text() else {
            return Err(JaasError(format!(
                "Option name expected in JAAS config for login module '{login_module}', found {}",
                tok.describe()
            )));
        };
        // A quoted name is not echoed: a misplaced quoted value may be a password.
        let k = match tok {
            Token::Word(_) => key.clone(),
            _ => "<quoted name>".to_string(),
        };
        if lexer.next_token()? != Some(Token::Char('=')) {
            return Err(JaasError(format!(
                "Value not specified for key '{k}' in JAAS config (expected {k}=\"value\")"
            )));
        }
        match lexer.next_token()? {
            Some(Token::Number) => {
                return Err(JaasError(format!(
                    "Value not specified for key '{k}' in JAAS config (a numeric value must be quoted: {k}=\"...\")"
                )));
            }
            Some(t) => match t.text() {
                Some(value) => {
                    options.insert(key, value);
                }
                None => {
                    return Err(JaasError(format!(
                        "Value not specified for key '{k}' in JAAS config (found {})",
                        t.describe()
                    )));
                }
            },
            None => {
                return Err(JaasError(format!(
                    "Value not specified for key '{k}' in JAAS config (end of text)"
                )));
            }
        }
    }
    Ok(JaasEntry {
        login_module,
        control_flag,
        options,
    })
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Word(String),
    Quoted(String),
    /// A numeric token: Java's `StreamTokenizer` keeps no text for it.
    Number,
    Char(char),
}

impl Token {
    /// Java's `sval`: the text of a word or a quoted string.
    fn text(&self) -> Option<String> {
        match self {
            Token::Word(s) | Token::Quoted(s) => Some(s.clone()),
            Token::Number | Token::Char(_) => None,
        }
    }

    /// For error messages; never the content of a quoted string (it may be a secret).
    fn describe(&self) -> String {
        match self {
            Token::Word(w) => format!("word '{w}'"),
            Token::Quoted(_) => "a quoted string".to_string(),
            Token::Number => "a number".to_string(),
            Token::Char(c) => format!("'{c}'"),
        }
    }
}

fn is_word_start(c: char) -> bool {
    c.is_ascii_alphabetic() || matches!(c, '-' | '_' | '$') || (c as u32) >= 160
}

fn is_word_part(c: char) -> bool {
    is_word_start(c) || c.is_ascii_digit() || c == '.'
}

struct Lexer<'a> {
    chars: std::iter::Peekable<std::str::Chars<'a>>,
}

impl<'a> Lexer<'a> {
    fn new(text: &'a str) -> Self {
        Self {
            chars: text.chars().peekable(),
        }
    }

    fn next_token(&mut self) -> Result<Option<Token>, JaasError> {
        loop {
            let Some(c) = self.chars.next() else {
                return Ok(None);
            };
            if (c as u32) <= 0x20 {
                continue;
            }
            if c == '/' {
                if self.chars.peek() == Some(&'*') {
                    self.chars.next();
                    self.skip_block_comment()?;
                } else {
                    // `//` or a lone `/` (Java's default comment char): to the end of the line.
                    for c in self.chars.by_ref() {
                        if c == '\n' || c == '\r' {
                            break;
                        }
                    }
                }
                continue;
            }
            if is_word_start(c) {
                let mut w = String::from(c);
                while let Some(&n) = self.chars.peek() {
                    if !is_word_part(n) {
                        break;
                    }
                    w.push(n);
                    self.chars.next();
                }
                return Ok(Some(Token::Word(w)));
            }
            if c.is_ascii_digit() || c == '.' {
                while self
                    .chars
                    .peek()
                    .is_some_and(|n| n.is_ascii_digit() || *n == '.')
                {
                    self.chars.next();
                }
                return Ok(Some(Token::Number));
            }
            if c == '"' || c == '\'' {
                return self.quoted(c).map(|s| Some(Token::Quoted(s)));
            }
            return Ok(Some(Token::Char(c)));
        }
    }

    fn skip_block_comment(&mut self) -> Result<(), JaasError> {
        let mut prev = '\0';
        for c in self.chars.by_ref() {
            if prev == '*' && c == '/' {
                return Ok(());
            }
            prev = c;
        }
        Err(JaasError("unterminated /* comment".into()))
    }

    fn quoted(&mut self, quote: char) -> Result<String, JaasError> {
        let mut s = String::new();
        loop {
            let c = match self.chars.next() {
                None | Some('\n') | Some('\r') => {
                    return Err(JaasError(format!(
                        "unterminated quoted string (a {quote} string must close on the same line)"
                    )));
                }
                Some(c) => c,
            };
            if c == quote {
                return Ok(s);
            }
            if c != '\\' {
                s.push(c);
                continue;
            }
            let Some(e) = self.chars.next() else {
                return Err(JaasError(
                    "unterminated quoted string (ends in '\\')".into(),
                ));
            };
            match e {
                'a' => s.push('\u{7}'),
                'b' => s.push('\u{8}'),
                'f' => s.push('\u{c}'),
                'n' => s.push('\n'),
                'r' => s.push('\r'),
                't' => s.push('\t'),
                'v' => s.push('\u{b}'),
                '0'..='7' => s.push(self.octal(e)),
                other => s.push(other),
            }
        }
    }

    /// Java's octal escape: up to three digits, three only if the first is 0-3.
    fn octal(&mut self, first: char) -> char {
        let max_digits = if first <= '3' { 3 } else { 2 };
        let mut v = first as u32 - '0' as u32;
        for _ in 1..max_digits {
            match self.chars.peek() {
                Some(&d @ '0'..='7') => {
                    v = v * 8 + (d as u32 - '0' as u32);
                    self.chars.next();
                }
                _ => break,
            }
        }
        char::from_u32(v).unwrap_or('\u{fffd}')
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn parses_valid_configs() {
        // (text, login module, flag, options)
        type Case<'a> = (&'a str, &'a str, ControlFlag, &'a [(&'a str, &'a str)]);
        let cases: &[Case<'_>] = &[
            // Kafka's docs: a PLAIN broker with inter-broker credentials and users.
            (
                r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";"#,
                PLAIN_LOGIN_MODULE,
                ControlFlag::Required,
                &[
                    ("username", "admin"),
                    ("password", "admin-secret"),
                    ("user_admin", "admin-secret"),
                    ("user_alice", "alice-secret"),
                ],
            ),
            // Kafka's docs: a SCRAM client.
            (
                "org.apache.kafka.common.security.scram.ScramLoginModule required \n    username=\"alice\" \n    password=\"alice-secret\";",
                SCRAM_LOGIN_MODULE,
                ControlFlag::Required,
                &[("username", "alice"), ("password", "alice-secret")],
            ),
            (
                "test.Module required;",
                "test.Module",
                ControlFlag::Required,
                &[],
            ),
            (
                "a.B REQUISITE propName=propValue;",
                "a.B",
                ControlFlag::Requisite,
                &[("propName", "propValue")],
            ),
            (
                "a.B Sufficient x=y;",
                "a.B",
                ControlFlag::Sufficient,
                &[("x", "y")],
            ),
            (
                "a.B optional x=y ;",
                "a.B",
                ControlFlag::Optional,
                &[("x", "y")],
            ),
            // Quoted values keep spaces, `=` and `,`; quoted keys work too (JaasContextTest).
            (
                r#"m required propName="prop value" propName2="value1 = 1, value2 = 2";"#,
                "m",
                ControlFlag::Required,
                &[
                    ("propName", "prop value"),
                    ("propName2", "value1 = 1, value2 = 2"),
                ],
            ),
            (
                r#"m required "prop name"=propValue;"#,
                "m",
                ControlFlag::Required,
                &[("prop name", "propValue")],
            ),
            (
                r#"m required option1="3";"#,
                "m",
                ControlFlag::Required,
                &[("option1", "3")],
            ),
            // Escapes, single quotes, unquoted words with - _ $ . and digits.
            (
                r#"m required a="q\"uo\\te" b='single' c=my-secret_$1.x d="t\tab\101";"#,
                "m",
                ControlFlag::Required,
                &[
                    ("a", "q\"uo\\te"),
                    ("b", "single"),
                    ("c", "my-secret_$1.x"),
                    ("d", "t\tabA"),
                ],
            ),
            // Comments anywhere; the last of a repeated key wins.
            (
                "// header\nm /* flag next */ required k=\"1\" k=\"2\"; // trailing",
                "m",
                ControlFlag::Required,
                &[("k", "2")],
            ),
            (
                "m required user_=\"x\" é=\"v\";",
                "m",
                ControlFlag::Required,
                &[("user_", "x"), ("é", "v")],
            ),
        ];
        for (text, module, flag, options) in cases {
            let e = parse_jaas_config(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(e.login_module, *module, "{text}");
            assert_eq!(e.control_flag, *flag, "{text}");
            assert_eq!(e.options, opts(options), "{text}");
        }
    }

    #[test]
    fn rejects_invalid_configs() {
        // (text, a fragment the message must contain)
        let cases: &[(&str, &str)] = &[
            ("", "Login module not specified"),
            ("  /* only a comment */ ", "Login module not specified"),
            (
                "  required option1=value1;",
                "Invalid login module control flag 'option1'",
            ),
            (
                "test.loginModule option1=value1;",
                "Invalid login module control flag 'option1'",
            ),
            ("test.loginModule", "control flag not specified"),
            (
                "loginModule required option1;",
                "Value not specified for key 'option1'",
            ),
            (
                "loginModule required option1=;",
                "Value not specified for key 'option1'",
            ),
            (
                "loginModule required option1=",
                "Value not specified for key 'option1'",
            ),
            ("m required option1=value1", "not terminated by semi-colon"),
            ("m required option1=3;", "numeric value must be quoted"),
            ("m { option1=3;", "control flag is not available"),
            ("; required;", "Login module not specified"),
            ("m required = x;", "Option name expected"),
            ("m required k=\"unterminated;", "unterminated quoted string"),
            (
                "m required k=\"line\nbreak\";",
                "unterminated quoted string",
            ),
            ("m required k=v; /* open", "unterminated /* comment"),
            (
                "a required; b required;",
                "contains 2 login modules, should be 1",
            ),
        ];
        for (text, fragment) in cases {
            let err = parse_jaas_config(text).expect_err(text);
            assert!(
                err.0.contains(fragment),
                "{text}: got {err}, want {fragment}"
            );
        }
    }

    #[test]
    fn errors_and_debug_never_show_values() {
        let err = parse_jaas_config(r#"m required password="s3cret" "#).unwrap_err();
        assert!(!err.to_string().contains("s3cret"), "{err}");
        let err = parse_jaas_config(r#"m required "s3cret" x;"#).unwrap_err();
        assert!(!err.to_string().contains("s3cret"), "{err}");
        let e = parse_jaas_config(r#"m required password="s3cret";"#).unwrap();
        let dbg = format!("{e:?}");
        assert!(dbg.contains("password") && !dbg.contains("s3cret"), "{dbg}");
    }

    #[test]
    fn multiple_entries_in_a_file_section() {
        let es = parse_jaas_entries("a.M required x=\"1\"; b.M optional;").unwrap();
        assert_eq!(es.len(), 2);
        assert_eq!(es[0].options, opts(&[("x", "1")]));
        assert_eq!(es[1].control_flag, ControlFlag::Optional);
    }

    #[test]
    fn plain_users_and_client_credentials() {
        let e = parse_jaas_config(
            r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret" user_="ignored";"#,
        )
        .unwrap();
        assert_eq!(
            plain_users(&e),
            opts(&[("admin", "admin-secret"), ("alice", "alice-secret")])
        );
        assert_eq!(
            client_credentials(&e),
            Some(("admin".to_string(), "admin-secret".to_string()))
        );
        let server_only = parse_jaas_config(r#"m required user_bob="b";"#).unwrap();
        assert_eq!(client_credentials(&server_only), None);
        let no_password = parse_jaas_config(r#"m required username="u";"#).unwrap();
        assert_eq!(client_credentials(&no_password), None);
    }
}
