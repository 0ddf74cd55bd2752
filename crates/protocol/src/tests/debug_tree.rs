//! Field-by-field comparison of our values with kafka-protocol's, through their `Debug` output.
//!
//! Both sides derive `Debug` with snake_case field names taken from the same JSON, so parsing
//! the two renderings into trees and matching fields by name compares every field's value
//! without a hand-written conversion per API. Normalisation: keyword fields (`type_` here,
//! `_type` there) compare equal; kafka-protocol's `unknown_tagged_fields` is ignored; their
//! newtypes (`BrokerId`, `TopicName`) already print transparently; our `Records` (which prints
//! its length, not its bytes) matches anything, the byte-level check covers it.

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Node {
    Atom(String),
    Struct(Vec<(String, Node)>),
    Tuple(String, Vec<Node>),
    Seq(Vec<Node>),
    Map,
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.s.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> Result<(), String> {
        if self.peek() == Some(c) {
            self.i += 1;
            Ok(())
        } else {
            Err(format!("expected {:?} at {}", c as char, self.i))
        }
    }

    fn string(&mut self) -> String {
        let start = self.i;
        if self.s[self.i] == b'b' {
            self.i += 1;
        }
        self.i += 1; // opening quote
        while self.i < self.s.len() && self.s[self.i] != b'"' {
            if self.s[self.i] == b'\\' {
                self.i += 1;
            }
            self.i += 1;
        }
        self.i += 1;
        String::from_utf8_lossy(&self.s[start..self.i.min(self.s.len())]).into_owned()
    }

    /// A field name (`ident: value`).
    fn ident(&mut self) -> String {
        self.ws();
        let start = self.i;
        while self.i < self.s.len()
            && (self.s[self.i].is_ascii_alphanumeric() || self.s[self.i] == b'_')
        {
            self.i += 1;
        }
        String::from_utf8_lossy(&self.s[start..self.i]).into_owned()
    }

    /// An atom or a type name: numbers, identifiers, paths (`Records::Bytes`), uuids.
    fn word(&mut self) -> String {
        let start = self.i;
        while self.i < self.s.len() {
            let c = self.s[self.i];
            let path = c == b':' && self.s.get(self.i + 1) == Some(&b':');
            if path {
                self.i += 2;
            } else if c.is_ascii_alphanumeric() || b"_-.+".contains(&c) {
                self.i += 1;
            } else {
                break;
            }
        }
        String::from_utf8_lossy(&self.s[start..self.i]).into_owned()
    }

    fn items(&mut self, close: u8) -> Result<Vec<Node>, String> {
        let mut items = Vec::new();
        loop {
            if self.peek() == Some(close) {
                self.i += 1;
                return Ok(items);
            }
            items.push(self.node()?);
            if self.peek() == Some(b',') {
                self.i += 1;
            }
        }
    }

    fn node(&mut self) -> Result<Node, String> {
        match self.peek() {
            None => Err("unexpected end".into()),
            Some(b'"') => Ok(Node::Atom(self.string())),
            Some(b'b') if self.s.get(self.i + 1) == Some(&b'"') => Ok(Node::Atom(self.string())),
            Some(b'[') => {
                self.i += 1;
                Ok(Node::Seq(self.items(b']')?))
            }
            Some(b'{') => {
                let mut depth = 0;
                while self.i < self.s.len() {
                    match self.s[self.i] {
                        b'{' => depth += 1,
                        b'}' => depth -= 1,
                        b'"' => {
                            self.string();
                            continue;
                        }
                        _ => {}
                    }
                    self.i += 1;
                    if depth == 0 {
                        break;
                    }
                }
                Ok(Node::Map)
            }
            Some(_) => {
                let w = self.word();
                if w.is_empty() {
                    return Err(format!(
                        "unexpected {:?} at {}",
                        self.s[self.i] as char, self.i
                    ));
                }
                match self.peek() {
                    Some(b'{') => {
                        self.i += 1;
                        let mut fields = Vec::new();
                        loop {
                            if self.peek() == Some(b'}') {
                                self.i += 1;
                                return Ok(Node::Struct(fields));
                            }
                            let name = self.ident();
                            self.eat(b':')?;
                            fields.push((name, self.node()?));
                            if self.peek() == Some(b',') {
                                self.i += 1;
                            }
                        }
                    }
                    Some(b'(') => {
                        self.i += 1;
                        Ok(Node::Tuple(w, self.items(b')')?))
                    }
                    _ => Ok(Node::Atom(w)),
                }
            }
        }
    }
}

pub(crate) fn parse(s: &str) -> Result<Node, String> {
    Parser {
        s: s.as_bytes(),
        i: 0,
    }
    .node()
}

fn norm(name: &str) -> &str {
    name.trim_start_matches('_').trim_end_matches('_')
}

/// Every field of `ours` must exist in `theirs` with an equal value (fields only they have,
/// from newer schemas, are not checked).
pub(crate) fn compare(ours: &Node, theirs: &Node, path: &str) -> Result<(), String> {
    match (ours, theirs) {
        (Node::Tuple(name, _), _) if name.starts_with("Records::") => Ok(()),
        (Node::Struct(of), Node::Struct(tf)) => {
            for (name, ov) in of {
                let here = format!("{path}.{name}");
                let Some((_, tv)) = tf.iter().find(|(n, _)| norm(n) == norm(name)) else {
                    return Err(format!("{here}: no such field in kafka-protocol"));
                };
                compare(ov, tv, &here)?;
            }
            Ok(())
        }
        // A struct with no fields prints as its bare name.
        (Node::Atom(a), Node::Struct(_)) if a.starts_with(|c: char| c.is_ascii_uppercase()) => {
            Ok(())
        }
        (Node::Seq(a), Node::Seq(b)) => {
            if a.len() != b.len() {
                return Err(format!("{path}: {} elements vs {}", a.len(), b.len()));
            }
            a.iter()
                .zip(b)
                .enumerate()
                .try_for_each(|(i, (x, y))| compare(x, y, &format!("{path}[{i}]")))
        }
        (Node::Tuple(n1, a), Node::Tuple(n2, b)) if n1 == n2 && a.len() == b.len() => {
            a.iter().zip(b).try_for_each(|(x, y)| compare(x, y, path))
        }
        (Node::Atom(a), Node::Atom(b)) if a == b => Ok(()),
        (Node::Map, Node::Map) => Ok(()),
        _ => Err(format!("{path}: ours {ours:?} vs theirs {theirs:?}")),
    }
}

#[test]
fn parses_and_compares_debug_renderings() {
    let ours = parse(
        r#"X { a: 1, type_: "q\"x", b: [Y { c: Some(Records::Bytes(3 bytes)) }], d: Empty }"#,
    )
    .unwrap();
    let theirs = parse(r#"Z { a: 1, _type: "q\"x", b: [W { c: Some(b"abc"), unknown_tagged_fields: {} }], d: E { unknown_tagged_fields: {} }, extra: 5 }"#).unwrap();
    compare(&ours, &theirs, "X").unwrap();
    let differs = parse(r#"Z { a: 2, _type: "q\"x", b: [], d: E {} }"#).unwrap();
    assert!(compare(&ours, &differs, "X").is_err());
}
