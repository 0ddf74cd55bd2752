//! Kafka principals (`<type>:<name>`, e.g. `User:alice`) and, later in issue 19, the mapping
//! of a certificate subject to one (`ssl.principal.mapping.rules`).
//!
//! Invariant: a principal's type and name are compared exactly (case-sensitive), as Kafka's
//! `KafkaPrincipal.equals` does.

use std::fmt;

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
}
