//! ACL vocabulary with Kafka's wire codes (`org.apache.kafka.common.acl` and
//! `org.apache.kafka.common.resource`): resource types, pattern types, operations,
//! permissions, and a binding (one ACL) as the metadata log and the ACL APIs carry it.
//!
//! Invariant: `from_code(c).code() == c` for every known code; an unknown code maps to
//! `Unknown`, which no binding stored by the authorizer ever holds.

macro_rules! code_enum {
    ($(#[$m:meta])* $name:ident { $($v:ident = $c:expr),+ $(,)? }) => {
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
            /// Every value, `Unknown` first.
            pub const ALL: &'static [$name] = &[$($name::$v),+];
        }
    };
}

code_enum!(
    /// `ResourceType`.
    ResourceType {
        Unknown = 0,
        Any = 1,
        Topic = 2,
        Group = 3,
        Cluster = 4,
        TransactionalId = 5,
        DelegationToken = 6,
        User = 7,
    }
);

code_enum!(
    /// `PatternType`.
    PatternType {
        Unknown = 0,
        Any = 1,
        Match = 2,
        Literal = 3,
        Prefixed = 4,
    }
);

code_enum!(
    /// `AclOperation`.
    AclOperation {
        Unknown = 0,
        Any = 1,
        All = 2,
        Read = 3,
        Write = 4,
        Create = 5,
        Delete = 6,
        Alter = 7,
        Describe = 8,
        ClusterAction = 9,
        DescribeConfigs = 10,
        AlterConfigs = 11,
        IdempotentWrite = 12,
        CreateTokens = 13,
        DescribeTokens = 14,
        TwoPhaseCommit = 15,
    }
);

code_enum!(
    /// `AclPermissionType`.
    AclPermission {
        Unknown = 0,
        Any = 1,
        Deny = 2,
        Allow = 3,
    }
);

/// The name of the one cluster resource (`kafka-cluster`).
pub const CLUSTER_RESOURCE_NAME: &str = "kafka-cluster";
/// The wildcard resource name and host (`*`).
pub const WILDCARD: &str = "*";

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
}
