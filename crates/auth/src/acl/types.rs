//! ACL vocabulary with Kafka's wire codes (`org.apache.kafka.common.acl` and
//! `org.apache.kafka.common.resource`): resource types, pattern types, operations,
//! permissions, and a binding (one ACL) as the metadata log and the ACL APIs carry it.
//!
//! Invariant: `from_code(c).code() == c` for every known code; an unknown code maps to
//! `Unknown`, which no binding stored by the authorizer ever holds.

use std::fmt;

macro_rules! code_enum {
    ($(#[$m:meta])* $name:ident { $($v:ident = $c:expr => $s:expr),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name { $($v),+ }
        impl $name {
            /// Kafka's wire code.
            pub fn code(self) -> i8 { match self { $($name::$v => $c),+ } }
            /// From Kafka's wire code (`Unknown` for a code Kafka does not define).
            pub fn from_code(c: i8) -> Self {
                match c { $($c => $name::$v,)+ _ => $name::Unknown }
            }
            /// Kafka's Java enum constant (`TRANSACTIONAL_ID`), as its messages print it.
            pub fn kafka_name(self) -> &'static str { match self { $($name::$v => $s),+ } }
            /// Every value, `Unknown` first.
            pub const ALL: &'static [$name] = &[$($name::$v),+];
        }
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.kafka_name())
            }
        }
    };
}

code_enum!(
    /// `ResourceType`.
    ResourceType {
        Unknown = 0 => "UNKNOWN",
        Any = 1 => "ANY",
        Topic = 2 => "TOPIC",
        Group = 3 => "GROUP",
        Cluster = 4 => "CLUSTER",
        TransactionalId = 5 => "TRANSACTIONAL_ID",
        DelegationToken = 6 => "DELEGATION_TOKEN",
        User = 7 => "USER",
    }
);

code_enum!(
    /// `PatternType`.
    PatternType {
        Unknown = 0 => "UNKNOWN",
        Any = 1 => "ANY",
        Match = 2 => "MATCH",
        Literal = 3 => "LITERAL",
        Prefixed = 4 => "PREFIXED",
    }
);

code_enum!(
    /// `AclOperation`.
    AclOperation {
        Unknown = 0 => "UNKNOWN",
        Any = 1 => "ANY",
        All = 2 => "ALL",
        Read = 3 => "READ",
        Write = 4 => "WRITE",
        Create = 5 => "CREATE",
        Delete = 6 => "DELETE",
        Alter = 7 => "ALTER",
        Describe = 8 => "DESCRIBE",
        ClusterAction = 9 => "CLUSTER_ACTION",
        DescribeConfigs = 10 => "DESCRIBE_CONFIGS",
        AlterConfigs = 11 => "ALTER_CONFIGS",
        IdempotentWrite = 12 => "IDEMPOTENT_WRITE",
        CreateTokens = 13 => "CREATE_TOKENS",
        DescribeTokens = 14 => "DESCRIBE_TOKENS",
        TwoPhaseCommit = 15 => "TWO_PHASE_COMMIT",
    }
);

code_enum!(
    /// `AclPermissionType`.
    AclPermission {
        Unknown = 0 => "UNKNOWN",
        Any = 1 => "ANY",
        Deny = 2 => "DENY",
        Allow = 3 => "ALLOW",
    }
);

/// The name of the one cluster resource (`kafka-cluster`).
pub const CLUSTER_RESOURCE_NAME: &str = "kafka-cluster";
/// The wildcard resource name and host (`*`).
pub const WILDCARD: &str = "*";
/// The ACL principal that matches every principal (`User:*`; only the `User` type has one).
pub const WILDCARD_PRINCIPAL: &str = "User:*";

/// One ACL: a resource pattern plus an access control entry.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AclBinding {
    pub resource_type: ResourceType,
    pub resource_name: String,
    /// `Literal` or `Prefixed` in a stored binding.
    pub pattern_type: PatternType,
    /// `Type:name`, e.g. `User:alice`, or `User:*`.
    pub principal: String,
    /// An IP address or `*`.
    pub host: String,
    pub operation: AclOperation,
    pub permission: AclPermission,
}

/// The outcome of an authorization check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthorizationResult {
    Allowed,
    Denied,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip() {
        for op in AclOperation::ALL {
            assert_eq!(AclOperation::from_code(op.code()), *op);
        }
        for rt in ResourceType::ALL {
            assert_eq!(ResourceType::from_code(rt.code()), *rt);
        }
        assert_eq!(AclOperation::from_code(99), AclOperation::Unknown);
        assert_eq!(AclOperation::TwoPhaseCommit.code(), 15);
        assert_eq!(ResourceType::User.code(), 7);
        assert_eq!(PatternType::Prefixed.code(), 4);
        assert_eq!(AclPermission::Allow.code(), 3);
    }

    #[test]
    fn kafka_names() {
        assert_eq!(
            ResourceType::TransactionalId.to_string(),
            "TRANSACTIONAL_ID"
        );
        assert_eq!(
            ResourceType::DelegationToken.kafka_name(),
            "DELEGATION_TOKEN"
        );
        assert_eq!(
            AclOperation::IdempotentWrite.to_string(),
            "IDEMPOTENT_WRITE"
        );
        assert_eq!(AclOperation::TwoPhaseCommit.to_string(), "TWO_PHASE_COMMIT");
        assert_eq!(
            AclOperation::DescribeConfigs.to_string(),
            "DESCRIBE_CONFIGS"
        );
        assert_eq!(PatternType::Match.to_string(), "MATCH");
        assert_eq!(AclPermission::Unknown.to_string(), "UNKNOWN");
    }
}
