//! `skiff produce --template FMT`: the input layout of each record (like rpk's `produce -f`).
//!
//! Mental model: a template is a sequence of fields and literal text. Fields: `%k` key, `%v`
//! value, `%p` partition (decimal), `%h` headers (`k=v` pairs separated by `,`; empty for
//! none), `%%` a literal `%`; escapes `\n` `\t` `\r` `\\` in the literal text. The input is read
//! as repeated records: a literal must appear exactly where the template has it, a field
//! extends up to the next occurrence of the literal that follows it. So fields need literal
//! text between them (the delimiters), and a template that does not end in literal text gets
//! `\n` appended (one record per line). At the end of the input the final delimiter may be
//! missing (a last line without a newline).
//! Invariants: a template has exactly one `%v` and at most one of each other field; a record
//! that does not match is an error naming its record number and input line (nothing is sent);
//! header keys are non-empty; values and keys are taken byte for byte (no unescaping).

use crate::cli::CliError;
use crate::cli::produce::InputRecord;

/// Header key/value pairs of one record.
pub type Headers = Vec<(Vec<u8>, Vec<u8>)>;

/// One part of a template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Token {
    Literal(Vec<u8>),
    Key,
    Value,
    Partition,
    Headers,
}

/// A parsed template: tokens that alternate fields and literal text and end in literal text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Template {
    pub tokens: Vec<Token>,
}

fn usage(template: &str, why: &str) -> CliError {
    CliError::Usage(format!(
        "bad --template {template:?}: {why} (fields %k key, %v value, %p partition, \
         %h headers k=v,...; %% is a %; \\n \\t \\r \\\\ escapes; fields need literal text \
         between them)"
    ))
}

/// Parses `FMT` (see the module docs).
pub fn parse_template(template: &str) -> Result<Template, CliError> {
    let mut tokens: Vec<Token> = Vec::new();
    let mut literal = Vec::new();
    let mut chars = template.chars();
    let push_field = |tokens: &mut Vec<Token>, literal: &mut Vec<u8>, t: Token| {
        if !literal.is_empty() {
            tokens.push(Token::Literal(std::mem::take(literal)));
        }
        if tokens.contains(&t) {
            return Err(usage(template, "a field appears twice"));
        }
        if tokens
            .last()
            .is_some_and(|l| !matches!(l, Token::Literal(_)))
        {
            return Err(usage(
                template,
                "two fields without literal text between them",
            ));
        }
        tokens.push(t);
        Ok(())
    };
    while let Some(c) = chars.next() {
        match c {
            '%' => {
                let t = match chars.next() {
                    Some('k') => Token::Key,
                    Some('v') => Token::Value,
                    Some('p') => Token::Partition,
                    Some('h') => Token::Headers,
                    Some('%') => {
                        literal.push(b'%');
                        continue;
                    }
                    Some(other) => return Err(usage(template, &format!("unknown field %{other}"))),
                    None => return Err(usage(template, "a lone % at the end")),
                };
                push_field(&mut tokens, &mut literal, t)?;
            }
            '\\' => {
                let b = match chars.next() {
                    Some('n') => b'\n',
                    Some('t') => b'\t',
                    Some('r') => b'\r',
                    Some('\\') => b'\\',
                    Some(other) => {
                        return Err(usage(template, &format!("unknown escape \\{other}")));
                    }
                    None => return Err(usage(template, "a lone \\ at the end")),
                };
                literal.push(b);
            }
            c => {
                let mut buf = [0u8; 4];
                literal.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
    if literal.is_empty() {
        literal.push(b'\n');
    }
    tokens.push(Token::Literal(literal));
    if !tokens.contains(&Token::Value) {
        return Err(usage(template, "it has no %v"));
    }
    Ok(Template { tokens })
}

/// Where `needle` first occurs in `hay`. Template literals are never empty ([`parse_template`]
/// pushes only non-empty ones); an empty needle still answers 0 instead of panicking in
/// `windows(0)`.
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return Some(0);
    }
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Splits `input` into records laid out as `template` says.
pub fn parse_with_template(
    input: &[u8],
    template: &Template,
) -> Result<Vec<InputRecord>, CliError> {
    let tokens = &template.tokens;
    let last = tokens.len().saturating_sub(1);
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < input.len() {
        let line = input[..pos].iter().filter(|b| **b == b'\n').count() + 1;
        let n = out.len() + 1;
        let bad = |why: String| CliError::Usage(format!("record {n} (line {line}): {why}"));
        let mut record = InputRecord {
            line,
            key: None,
            value: Vec::new(),
            headers: Vec::new(),
            partition: None,
        };
        for (i, token) in tokens.iter().enumerate() {
            let rest = &input[pos..];
            match token {
                Token::Literal(l) => {
                    if rest.starts_with(l) {
                        pos += l.len();
                    } else if !(i == last && rest.is_empty()) {
                        return Err(bad(format!(
                            "expected {:?} at {:?}",
                            String::from_utf8_lossy(l),
                            String::from_utf8_lossy(&rest[..rest.len().min(20)])
                        )));
                    }
                }
                field => {
                    let Some(Token::Literal(next)) = tokens.get(i + 1) else {
                        return Err(bad("template without a delimiter after a field".into()));
                    };
                    let end = match find(rest, next) {
                        Some(at) => at,
                        None if i + 1 == last => rest.len(),
                        None => {
                            return Err(bad(format!(
                                "no {:?} after a field",
                                String::from_utf8_lossy(next)
                            )));
                        }
                    };
                    let text = &rest[..end];
                    pos += end;
                    match field {
                        Token::Key => record.key = Some(text.to_vec()),
                        Token::Value => record.value = text.to_vec(),
                        Token::Partition => {
                            let p = std::str::from_utf8(text)
                                .ok()
                                .and_then(|t| t.trim().parse::<i32>().ok())
                                .filter(|p| *p >= 0)
                                .ok_or_else(|| {
                                    bad(format!(
                                        "partition {:?} is not a number",
                                        String::from_utf8_lossy(text)
                                    ))
                                })?;
                            record.partition = Some(p);
                        }
                        Token::Headers => record.headers = parse_headers(text).map_err(bad)?,
                        Token::Literal(_) => {}
                    }
                }
            }
        }
        out.push(record);
    }
    Ok(out)
}

/// `k=v,k2=v2` (empty: none).
fn parse_headers(text: &[u8]) -> Result<Headers, String> {
    if text.is_empty() {
        return Ok(Vec::new());
    }
    text.split(|b| *b == b',')
        .map(|kv| match kv.iter().position(|b| *b == b'=') {
            Some(at) if at > 0 => Ok((kv[..at].to_vec(), kv[at + 1..].to_vec())),
            _ => Err(format!(
                "header {:?} is not key=value",
                String::from_utf8_lossy(kv)
            )),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_parse_or_say_why() {
        use Token::*;
        let lit = |s: &str| Literal(s.as_bytes().to_vec());
        let cases: &[(&str, Result<Vec<Token>, &str>)] = &[
            ("%v", Ok(vec![Value, lit("\n")])),
            ("%v\\n", Ok(vec![Value, lit("\n")])),
            ("%k %v\\n", Ok(vec![Key, lit(" "), Value, lit("\n")])),
            (
                "%p|%k=%v|%h\\n",
                Ok(vec![
                    Partition,
                    lit("|"),
                    Key,
                    lit("="),
                    Value,
                    lit("|"),
                    Headers,
                    lit("\n"),
                ]),
            ),
            (
                "key:%k\\tv:%v;",
                Ok(vec![lit("key:"), Key, lit("\tv:"), Value, lit(";")]),
            ),
            ("100%% %v", Ok(vec![lit("100% "), Value, lit("\n")])),
            ("%k%v", Err("two fields without literal text")),
            ("%k:%k:%v", Err("appears twice")),
            ("%k\\n", Err("no %v")),
            ("%x %v", Err("unknown field %x")),
            ("%v\\q", Err("unknown escape")),
            ("%v %", Err("lone %")),
        ];
        for (text, want) in cases {
            match (parse_template(text), want) {
                (Ok(t), Ok(tokens)) => assert_eq!(&t.tokens, tokens, "{text}"),
                (Err(e), Err(why)) => assert!(e.to_string().contains(why), "{text}: {e}"),
                (got, _) => panic!("{text}: got {got:?}, want {want:?}"),
            }
        }
    }

    type Rec = (
        Option<&'static str>,
        &'static str,
        Option<i32>,
        Vec<(&'static str, &'static str)>,
    );

    #[test]
    fn input_splits_into_records() {
        type Case = (&'static str, &'static str, Result<Vec<Rec>, &'static str>);
        let cases: &[Case] = &[
            (
                "%k %v\\n",
                "a 1\nb 2 3\n",
                Ok(vec![
                    (Some("a"), "1", None, vec![]),
                    (Some("b"), "2 3", None, vec![]),
                ]),
            ),
            // the last delimiter may be missing at the end of the input
            (
                "%k %v\\n",
                "a 1\nb 2",
                Ok(vec![
                    (Some("a"), "1", None, vec![]),
                    (Some("b"), "2", None, vec![]),
                ]),
            ),
            // an empty line is an empty value
            (
                "%v",
                "x\n\ny\n",
                Ok(vec![
                    (None, "x", None, vec![]),
                    (None, "", None, vec![]),
                    (None, "y", None, vec![]),
                ]),
            ),
            (
                "%p|%k|%v|%h\\n",
                "2|k|v|a=1,b=x=y\n0||w|\n",
                Ok(vec![
                    (Some("k"), "v", Some(2), vec![("a", "1"), ("b", "x=y")]),
                    (Some(""), "w", Some(0), vec![]),
                ]),
            ),
            // records need not be lines
            (
                "<%k>%v;",
                "<a>1;<b>2\n3;",
                Ok(vec![
                    (Some("a"), "1", None, vec![]),
                    (Some("b"), "2\n3", None, vec![]),
                ]),
            ),
            ("%k %v\\n", "a 1\nnospace\n", Err("record 2 (line 2)")),
            ("%p:%v", "x:1\n", Err("not a number")),
            ("%v|%h", "v|novalue\n", Err("not key=value")),
            (
                "<%k>%v;",
                "<a>1;b>2;",
                Err("record 2 (line 1): expected \"<\""),
            ),
            ("%v", "", Ok(vec![])),
        ];
        for (template, input, want) in cases {
            let t = parse_template(template).unwrap();
            match (parse_with_template(input.as_bytes(), &t), want) {
                (Ok(recs), Ok(want)) => {
                    let got: Vec<Rec> = recs
                        .iter()
                        .map(|r| {
                            let s = |b: &[u8]| -> &'static str {
                                Box::leak(String::from_utf8(b.to_vec()).unwrap().into_boxed_str())
                            };
                            (
                                r.key.as_deref().map(s),
                                s(&r.value),
                                r.partition,
                                r.headers.iter().map(|(k, v)| (s(k), s(v))).collect(),
                            )
                        })
                        .collect();
                    assert_eq!(&got, want, "{template} {input:?}");
                }
                (Err(e), Err(why)) => assert!(e.to_string().contains(why), "{template}: {e}"),
                (got, _) => panic!("{template} {input:?}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn line_numbers_count_input_lines() {
        let t = parse_template("%k=%v;").unwrap();
        let recs = parse_with_template(b"a=1;\nb=2;c=3;", &t).unwrap();
        let lines: Vec<usize> = recs.iter().map(|r| r.line).collect();
        // the second record starts with the newline after "a=1;" (keys are byte for byte)
        assert_eq!(lines, [1, 1, 2]);
        assert_eq!(recs[1].key.as_deref(), Some(&b"\nb"[..]));
    }
}
