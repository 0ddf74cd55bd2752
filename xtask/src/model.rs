//! The JSON schema of Kafka's message definitions, as read from disk.
//!
//! Mental model: a thin serde mirror of the files in `kafka-message-specs/` (see its
//! KAFKA-README.md). Nothing here interprets the definitions beyond parsing: version strings
//! stay strings until [`Versions::parse`] turns them into ranges, defaults stay raw JSON values.
//! The files contain `//` comments, which [`strip_comments`] removes (outside string literals)
//! before parsing. Keys we do not need (`listeners`, `entityType`, `mapKey`, ...) are ignored:
//! they have no wire effect.

use serde::Deserialize;

/// One definition file: a request, response, header or internal record.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageSpec {
    pub api_key: Option<i16>,
    #[serde(rename = "type")]
    pub kind: String,
    pub name: String,
    pub valid_versions: String,
    pub flexible_versions: String,
    #[serde(default)]
    pub fields: Vec<FieldSpec>,
    #[serde(default)]
    pub common_structs: Vec<CommonStructSpec>,
}

/// A struct declared once under `commonStructs` and referenced by type name.
#[derive(Debug, Deserialize)]
pub struct CommonStructSpec {
    pub name: String,
    pub versions: String,
    #[serde(default)]
    pub fields: Vec<FieldSpec>,
}

/// One field of a message or struct.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FieldSpec {
    pub name: String,
    #[serde(rename = "type")]
    pub ty: String,
    /// Absent for a few tagged fields, which then default to their `taggedVersions`.
    pub versions: Option<String>,
    /// Inline struct definition for struct and struct-array fields.
    pub fields: Option<Vec<FieldSpec>>,
    /// Raw default: quoted or unquoted number, boolean, `"null"`, a string, or JSON null.
    pub default: Option<serde_json::Value>,
    pub nullable_versions: Option<String>,
    pub tagged_versions: Option<String>,
    /// A number, or a number in a string (both occur).
    pub tag: Option<serde_json::Value>,
    #[serde(default)]
    pub ignorable: bool,
    pub about: Option<String>,
    /// Field-level override of the message's flexible versions (string/bytes only).
    pub flexible_versions: Option<String>,
}

impl FieldSpec {
    /// The tag number, if any.
    pub fn tag_number(&self) -> Result<Option<u32>, String> {
        match &self.tag {
            None => Ok(None),
            Some(serde_json::Value::Number(n)) => n
                .as_u64()
                .and_then(|v| u32::try_from(v).ok())
                .map(Some)
                .ok_or_else(|| format!("bad tag {n}")),
            Some(serde_json::Value::String(s)) => s
                .trim()
                .parse()
                .map(Some)
                .map_err(|e| format!("bad tag {s:?}: {e}")),
            Some(other) => Err(format!("bad tag {other}")),
        }
    }
}

/// An inclusive, contiguous range of versions; empty when `lo > hi`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Versions {
    pub lo: i16,
    pub hi: i16,
}

impl Versions {
    pub const NONE: Versions = Versions { lo: 1, hi: 0 };

    pub fn new(lo: i16, hi: i16) -> Self {
        Versions { lo, hi }
    }

    /// Parses `"none"`, `"3"`, `"3+"` or `"3-7"`.
    pub fn parse(s: &str) -> Result<Self, String> {
        let s = s.trim();
        let num = |t: &str| {
            t.trim()
                .parse::<i16>()
                .map_err(|e| format!("bad version {t:?} in {s:?}: {e}"))
        };
        if s == "none" {
            Ok(Self::NONE)
        } else if let Some(lo) = s.strip_suffix('+') {
            Ok(Versions::new(num(lo)?, i16::MAX))
        } else if let Some((lo, hi)) = s.split_once('-') {
            Ok(Versions::new(num(lo)?, num(hi)?))
        } else {
            let v = num(s)?;
            Ok(Versions::new(v, v))
        }
    }

    pub fn is_empty(self) -> bool {
        self.lo > self.hi
    }

    pub fn contains(self, v: i16) -> bool {
        self.lo <= v && v <= self.hi
    }

    pub fn intersect(self, other: Versions) -> Versions {
        let r = Versions::new(self.lo.max(other.lo), self.hi.min(other.hi));
        if r.is_empty() { Self::NONE } else { r }
    }

    /// The smallest range covering both.
    pub fn hull(self, other: Versions) -> Versions {
        if self.is_empty() {
            other
        } else if other.is_empty() {
            self
        } else {
            Versions::new(self.lo.min(other.lo), self.hi.max(other.hi))
        }
    }

    /// `self` minus `other`, which must leave a contiguous range.
    pub fn subtract(self, other: Versions) -> Result<Versions, String> {
        let cut = self.intersect(other);
        if cut.is_empty() {
            Ok(self)
        } else if cut == self {
            Ok(Self::NONE)
        } else if cut.lo == self.lo {
            Ok(Versions::new(cut.hi + 1, self.hi))
        } else if cut.hi == self.hi {
            Ok(Versions::new(self.lo, cut.lo - 1))
        } else {
            Err(format!("{self:?} minus {other:?} is not contiguous"))
        }
    }
}

/// Removes `//` comments (outside string literals) so the text parses as JSON.
pub fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            if c == '\\' {
                if let Some(n) = chars.next() {
                    out.push(n);
                }
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else if c == '/' && chars.peek() == Some(&'/') {
            for n in chars.by_ref() {
                if n == '\n' {
                    out.push('\n');
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Reads and parses one definition file.
pub fn load(path: &std::path::Path) -> Result<MessageSpec, String> {
    load_patched(path, None)
}

/// [`load`], with Skiff's widening ([`crate::patches`]) applied to the JSON first.
pub fn load_patched(
    path: &std::path::Path,
    patch: Option<&crate::patches::Patch>,
) -> Result<MessageSpec, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    // Through a `Value` first: Kafka's files are read by Jackson, which keeps the last of a
    // duplicated key (DescribeTopicPartitionsRequest.json repeats a field's "versions"); the
    // derived struct decoder would refuse it.
    let mut value: serde_json::Value = serde_json::from_str(&strip_comments(&text))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if let Some(patch) = patch {
        crate::patches::apply(&mut value, patch, &path.display().to_string())?;
    }
    serde_json::from_value(value).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_and_algebra() {
        assert_eq!(Versions::parse("3+").unwrap(), Versions::new(3, i16::MAX));
        assert_eq!(Versions::parse("0-12").unwrap(), Versions::new(0, 12));
        assert_eq!(Versions::parse("1").unwrap(), Versions::new(1, 1));
        assert!(Versions::parse("none").unwrap().is_empty());
        let r = Versions::new(4, 17);
        assert_eq!(
            r.subtract(Versions::new(12, i16::MAX)).unwrap(),
            Versions::new(4, 11)
        );
        assert!(r.subtract(Versions::new(6, 8)).is_err());
        assert_eq!(r.intersect(Versions::new(0, 3)), Versions::NONE);
    }

    #[test]
    fn comments_are_stripped_outside_strings_only() {
        let s = "{ // note\n \"a\": \"http://x\" // tail\n}";
        let v: serde_json::Value = serde_json::from_str(&strip_comments(s)).unwrap();
        assert_eq!(v["a"], "http://x");
    }
}
