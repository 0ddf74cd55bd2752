//! `AclIndex::authorize_by_resource_type` (Kafka's `Authorizer.authorizeByResourceType`):
//! one row per rule of its doc.

use super::*;

/// (rule, super users, allow.everyone.if.no.acl.found, ACLs, principal, operation, expected);
/// the check is from host 10.0.0.1 on resource type TOPIC.
type Row = (
    &'static str,
    &'static [&'static str],
    bool,
    &'static [&'static str],
    &'static str,
    &'static str,
    AuthorizationResult,
);

#[test]
fn by_resource_type() {
    let rows: &[Row] = &[
        (
            "a super user",
            &["User:admin"],
            false,
            &["DENY User:admin * WRITE TOPIC LITERAL *"],
            "User:admin",
            "WRITE",
            ALLOWED,
        ),
        (
            "no ACLs, default allow (the hardcode check)",
            &[],
            true,
            &[],
            "User:alice",
            "WRITE",
            ALLOWED,
        ),
        (
            "no ACLs, default deny",
            &[],
            false,
            &[],
            "User:alice",
            "WRITE",
            DENIED,
        ),
        (
            "a literal allow",
            &[],
            false,
            &["ALLOW User:alice * WRITE TOPIC LITERAL t"],
            "User:alice",
            "WRITE",
            ALLOWED,
        ),
        (
            "ALL counts",
            &[],
            false,
            &["ALLOW User:alice * ALL TOPIC LITERAL t"],
            "User:alice",
            "WRITE",
            ALLOWED,
        ),
        (
            "a User:* allow",
            &[],
            false,
            &["ALLOW User:* * WRITE TOPIC LITERAL t"],
            "User:alice",
            "WRITE",
            ALLOWED,
        ),
        (
            "another principal's allow",
            &[],
            false,
            &["ALLOW User:bob * WRITE TOPIC LITERAL t"],
            "User:alice",
            "WRITE",
            DENIED,
        ),
        (
            "another host's allow",
            &[],
            false,
            &["ALLOW User:alice 10.0.0.2 WRITE TOPIC LITERAL t"],
            "User:alice",
            "WRITE",
            DENIED,
        ),
        (
            "another resource type's allow",
            &[],
            false,
            &["ALLOW User:alice * WRITE GROUP LITERAL t"],
            "User:alice",
            "WRITE",
            DENIED,
        ),
        (
            "no implied operations past the hardcode check",
            &[],
            false,
            &["ALLOW User:alice * READ TOPIC LITERAL t"],
            "User:alice",
            "DESCRIBE",
            DENIED,
        ),
        (
            "implied operations in the hardcode check",
            &[],
            false,
            &["ALLOW User:alice * READ TOPIC PREFIXED hard"],
            "User:alice",
            "DESCRIBE",
            ALLOWED,
        ),
        (
            "a literal deny of the same name",
            &[],
            false,
            &[
                "ALLOW User:alice * WRITE TOPIC LITERAL t",
                "DENY User:alice * WRITE TOPIC LITERAL t",
            ],
            "User:alice",
            "WRITE",
            DENIED,
        ),
        (
            "a literal deny of another name",
            &[],
            false,
            &[
                "ALLOW User:alice * WRITE TOPIC LITERAL t",
                "DENY User:alice * WRITE TOPIC LITERAL u",
            ],
            "User:alice",
            "WRITE",
            ALLOWED,
        ),
        (
            "a prefixed deny dominating a literal allow",
            &[],
            false,
            &[
                "ALLOW User:alice * WRITE TOPIC LITERAL tx",
                "DENY User:alice * WRITE TOPIC PREFIXED t",
            ],
            "User:alice",
            "WRITE",
            DENIED,
        ),
        (
            "a prefixed deny equal to a literal allow",
            &[],
            false,
            &[
                "ALLOW User:alice * WRITE TOPIC LITERAL tx",
                "DENY User:alice * WRITE TOPIC PREFIXED tx",
            ],
            "User:alice",
            "WRITE",
            DENIED,
        ),
        (
            "a longer prefixed deny does not dominate",
            &[],
            false,
            &[
                "ALLOW User:alice * WRITE TOPIC LITERAL tx",
                "DENY User:alice * WRITE TOPIC PREFIXED txy",
            ],
            "User:alice",
            "WRITE",
            ALLOWED,
        ),
        (
            "a prefixed deny dominating a prefixed allow",
            &[],
            false,
            &[
                "ALLOW User:alice * WRITE TOPIC PREFIXED tx",
                "DENY User:alice * WRITE TOPIC PREFIXED t",
            ],
            "User:alice",
            "WRITE",
            DENIED,
        ),
        (
            "a literal deny does not dominate a prefixed allow",
            &[],
            false,
            &[
                "ALLOW User:alice * WRITE TOPIC PREFIXED tx",
                "DENY User:alice * WRITE TOPIC LITERAL tx",
            ],
            "User:alice",
            "WRITE",
            ALLOWED,
        ),
        (
            "one undominated allow is enough",
            &[],
            false,
            &[
                "ALLOW User:alice * WRITE TOPIC LITERAL tx",
                "ALLOW User:alice * WRITE TOPIC LITERAL u",
                "DENY User:alice * WRITE TOPIC PREFIXED t",
            ],
            "User:alice",
            "WRITE",
            ALLOWED,
        ),
        (
            "a User:* deny dominates",
            &[],
            false,
            &[
                "ALLOW User:alice * WRITE TOPIC LITERAL tx",
                "DENY User:* * WRITE TOPIC PREFIXED t",
            ],
            "User:alice",
            "WRITE",
            DENIED,
        ),
        (
            "another principal's deny does not",
            &[],
            false,
            &[
                "ALLOW User:alice * WRITE TOPIC LITERAL tx",
                "DENY User:bob * WRITE TOPIC PREFIXED t",
            ],
            "User:alice",
            "WRITE",
            ALLOWED,
        ),
        (
            "a wildcard deny",
            &[],
            false,
            &[
                "ALLOW User:alice * WRITE TOPIC LITERAL t",
                "DENY User:alice * WRITE TOPIC LITERAL *",
            ],
            "User:alice",
            "WRITE",
            DENIED,
        ),
        (
            "a wildcard deny beats a wildcard allow",
            &[],
            false,
            &[
                "ALLOW User:alice * WRITE TOPIC LITERAL *",
                "DENY User:alice * WRITE TOPIC LITERAL *",
            ],
            "User:alice",
            "WRITE",
            DENIED,
        ),
        (
            "a wildcard allow past a denied hardcode",
            &[],
            false,
            &[
                "ALLOW User:alice * WRITE TOPIC LITERAL *",
                "DENY User:alice * WRITE TOPIC LITERAL hardcode",
            ],
            "User:alice",
            "WRITE",
            ALLOWED,
        ),
        (
            "a wildcard allow is not dominated by prefixes",
            &[],
            false,
            &[
                "ALLOW User:alice * WRITE TOPIC LITERAL *",
                "DENY User:alice * WRITE TOPIC PREFIXED h",
            ],
            "User:alice",
            "WRITE",
            ALLOWED,
        ),
        (
            "a prefixed allow dominated by a one-char deny",
            &[],
            false,
            &[
                "ALLOW User:alice * WRITE TOPIC PREFIXED é-topics",
                "DENY User:alice * WRITE TOPIC PREFIXED é",
            ],
            "User:alice",
            "WRITE",
            DENIED,
        ),
        (
            "a deny for another operation",
            &[],
            false,
            &[
                "ALLOW User:alice * WRITE TOPIC LITERAL tx",
                "DENY User:alice * READ TOPIC PREFIXED t",
            ],
            "User:alice",
            "WRITE",
            ALLOWED,
        ),
    ];
    for (rule, supers, allow_if_none, acls, p, op, want) in rows {
        let idx = index(supers, *allow_if_none, acls);
        let got = idx.authorize_by_resource_type(
            &principal(p),
            "10.0.0.1",
            named(AclOperation::ALL, op),
            ResourceType::Topic,
        );
        assert_eq!(got, *want, "{rule}: {p} {op} with {acls:?}");
    }
}

#[test]
fn filter_values_are_denied() {
    let idx = index(&["User:admin"], true, &[]);
    let admin = principal("User:admin");
    for (op, rt) in [
        (AclOperation::Any, ResourceType::Topic),
        (AclOperation::Unknown, ResourceType::Topic),
        (AclOperation::Write, ResourceType::Any),
        (AclOperation::Write, ResourceType::Unknown),
    ] {
        assert_eq!(
            idx.authorize_by_resource_type(&admin, "h", op, rt),
            DENIED,
            "{op} {rt}"
        );
    }
    let ok = idx.authorize_by_resource_type(&admin, "h", AclOperation::Write, ResourceType::Topic);
    assert_eq!(ok, ALLOWED);
}
