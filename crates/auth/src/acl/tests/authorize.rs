//! `AclIndex::authorize`: one table row per rule of the module doc of `index.rs`; each row
//! fails if its rule breaks.

use super::*;

/// (rule, super users, allow.everyone.if.no.acl.found, ACLs, check, expected)
type Row = (
    &'static str,
    &'static [&'static str],
    bool,
    &'static [&'static str],
    &'static str,
    AuthorizationResult,
);

fn run(rows: &[Row]) {
    for (rule, supers, allow_if_none, acls, query, want) in rows {
        let idx = index(supers, *allow_if_none, acls);
        assert_eq!(check(&idx, query), *want, "{rule}: {query} with {acls:?}");
    }
}

#[test]
fn super_users() {
    run(&[
        (
            "a super user bypasses a DENY ALL",
            &["User:admin"],
            false,
            &[
                "DENY User:admin * ALL TOPIC LITERAL t",
                "DENY User:* * ALL TOPIC LITERAL *",
            ],
            "User:admin 10.0.0.1 WRITE TOPIC t",
            ALLOWED,
        ),
        (
            "a super user needs no ACL",
            &["User:admin"],
            false,
            &[],
            "User:admin 10.0.0.1 ALTER CLUSTER kafka-cluster",
            ALLOWED,
        ),
        (
            "User:* in super.users is not a wildcard",
            &["User:*"],
            false,
            &[],
            "User:alice 10.0.0.1 READ TOPIC t",
            DENIED,
        ),
        (
            "User:* in super.users names the principal User:*",
            &["User:*"],
            false,
            &[],
            "User:* 10.0.0.1 READ TOPIC t",
            ALLOWED,
        ),
        (
            "super users compare the principal type",
            &["User:admin"],
            false,
            &[],
            "Group:admin 10.0.0.1 READ TOPIC t",
            DENIED,
        ),
        (
            "super users compare case-sensitively",
            &["User:Admin"],
            false,
            &[],
            "User:admin 10.0.0.1 READ TOPIC t",
            DENIED,
        ),
    ]);
}

#[test]
fn resource_patterns() {
    run(&[
        (
            "literal: equal name",
            &[],
            false,
            &["ALLOW User:alice * READ TOPIC LITERAL foo"],
            "User:alice 10.0.0.1 READ TOPIC foo",
            ALLOWED,
        ),
        (
            "literal: another name",
            &[],
            false,
            &["ALLOW User:alice * READ TOPIC LITERAL foo"],
            "User:alice 10.0.0.1 READ TOPIC bar",
            DENIED,
        ),
        (
            "literal: not a prefix",
            &[],
            false,
            &["ALLOW User:alice * READ TOPIC LITERAL foo"],
            "User:alice 10.0.0.1 READ TOPIC foobar",
            DENIED,
        ),
        (
            "literal: a deny on foo leaves foobar alone",
            &[],
            false,
            &[
                "ALLOW User:alice * READ TOPIC LITERAL *",
                "DENY User:alice * READ TOPIC LITERAL foo",
            ],
            "User:alice 10.0.0.1 READ TOPIC foobar",
            ALLOWED,
        ),
        (
            "literal: ... and denies foo",
            &[],
            false,
            &[
                "ALLOW User:alice * READ TOPIC LITERAL *",
                "DENY User:alice * READ TOPIC LITERAL foo",
            ],
            "User:alice 10.0.0.1 READ TOPIC foo",
            DENIED,
        ),
        (
            "literal *: every name",
            &[],
            false,
            &["ALLOW User:alice * READ TOPIC LITERAL *"],
            "User:alice 10.0.0.1 READ TOPIC anything",
            ALLOWED,
        ),
        (
            "literal *: the name *",
            &[],
            false,
            &["ALLOW User:alice * READ TOPIC LITERAL *"],
            "User:alice 10.0.0.1 READ TOPIC *",
            ALLOWED,
        ),
        (
            "prefixed: longer name",
            &[],
            false,
            &["ALLOW User:alice * READ TOPIC PREFIXED foo"],
            "User:alice 10.0.0.1 READ TOPIC foobar",
            ALLOWED,
        ),
        (
            "prefixed: equal name",
            &[],
            false,
            &["ALLOW User:alice * READ TOPIC PREFIXED foo"],
            "User:alice 10.0.0.1 READ TOPIC foo",
            ALLOWED,
        ),
        (
            "prefixed: shorter name",
            &[],
            false,
            &["ALLOW User:alice * READ TOPIC PREFIXED foo"],
            "User:alice 10.0.0.1 READ TOPIC fo",
            DENIED,
        ),
        (
            "prefixed: the prefix inside the name",
            &[],
            false,
            &["ALLOW User:alice * READ TOPIC PREFIXED foo"],
            "User:alice 10.0.0.1 READ TOPIC xfoo",
            DENIED,
        ),
        (
            "prefixed *: not a wildcard",
            &[],
            false,
            &["ALLOW User:alice * READ TOPIC PREFIXED *"],
            "User:alice 10.0.0.1 READ TOPIC foo",
            DENIED,
        ),
        (
            "prefixed *: names starting with *",
            &[],
            false,
            &["ALLOW User:alice * READ TOPIC PREFIXED *"],
            "User:alice 10.0.0.1 READ TOPIC *foo",
            ALLOWED,
        ),
        (
            "prefixed: one of several nested prefixes",
            &[],
            false,
            &[
                "ALLOW User:bob * READ TOPIC PREFIXED a",
                "ALLOW User:alice * READ TOPIC PREFIXED ab",
                "ALLOW User:bob * READ TOPIC PREFIXED abc",
            ],
            "User:alice 10.0.0.1 READ TOPIC abcd",
            ALLOWED,
        ),
        (
            "prefixed: multi-byte names",
            &[],
            false,
            &["ALLOW User:alice * READ TOPIC PREFIXED café"],
            "User:alice 10.0.0.1 READ TOPIC café-1",
            ALLOWED,
        ),
        (
            "resource type: a GROUP ACL is not a TOPIC ACL",
            &[],
            false,
            &["ALLOW User:alice * READ GROUP LITERAL foo"],
            "User:alice 10.0.0.1 READ TOPIC foo",
            DENIED,
        ),
        (
            "resource type: a GROUP wildcard is not a TOPIC wildcard",
            &[],
            false,
            &["ALLOW User:alice * READ GROUP LITERAL *"],
            "User:alice 10.0.0.1 READ TOPIC foo",
            DENIED,
        ),
    ]);
}

#[test]
fn principals_and_hosts() {
    run(&[
        (
            "principal: equal",
            &[],
            false,
            &["ALLOW User:alice * READ TOPIC LITERAL t"],
            "User:alice 10.0.0.1 READ TOPIC t",
            ALLOWED,
        ),
        (
            "principal: another user",
            &[],
            false,
            &["ALLOW User:bob * READ TOPIC LITERAL t"],
            "User:alice 10.0.0.1 READ TOPIC t",
            DENIED,
        ),
        (
            "principal: User:* matches every user",
            &[],
            false,
            &["ALLOW User:* * READ TOPIC LITERAL t"],
            "User:alice 10.0.0.1 READ TOPIC t",
            ALLOWED,
        ),
        (
            "principal: User:* matches every principal type",
            &[],
            false,
            &["ALLOW User:* * READ TOPIC LITERAL t"],
            "Group:devs 10.0.0.1 READ TOPIC t",
            ALLOWED,
        ),
        (
            "principal: Group:* is no wildcard",
            &[],
            false,
            &["ALLOW Group:* * READ TOPIC LITERAL t"],
            "Group:devs 10.0.0.1 READ TOPIC t",
            DENIED,
        ),
        (
            "principal: the type counts",
            &[],
            false,
            &["ALLOW Group:alice * READ TOPIC LITERAL t"],
            "User:alice 10.0.0.1 READ TOPIC t",
            DENIED,
        ),
        (
            "principal: case-sensitive",
            &[],
            false,
            &["ALLOW User:Alice * READ TOPIC LITERAL t"],
            "User:alice 10.0.0.1 READ TOPIC t",
            DENIED,
        ),
        (
            "principal: split at the first colon",
            &[],
            false,
            &["ALLOW User:CN=a:b * READ TOPIC LITERAL t"],
            "User:CN=a:b 10.0.0.1 READ TOPIC t",
            ALLOWED,
        ),
        (
            "principal: no colon never applies",
            &[],
            true,
            &["ALLOW alice * READ TOPIC LITERAL t"],
            "User:alice 10.0.0.1 READ TOPIC t",
            DENIED,
        ),
        (
            "host: equal",
            &[],
            false,
            &["ALLOW User:alice 10.0.0.1 READ TOPIC LITERAL t"],
            "User:alice 10.0.0.1 READ TOPIC t",
            ALLOWED,
        ),
        (
            "host: another host",
            &[],
            false,
            &["ALLOW User:alice 10.0.0.2 READ TOPIC LITERAL t"],
            "User:alice 10.0.0.1 READ TOPIC t",
            DENIED,
        ),
        (
            "host: * is every host",
            &[],
            false,
            &["ALLOW User:alice * READ TOPIC LITERAL t"],
            "User:alice 192.168.1.1 READ TOPIC t",
            ALLOWED,
        ),
    ]);
}

#[test]
fn deny_wins() {
    run(&[
        (
            "deny and allow on the same literal",
            &[],
            false,
            &[
                "ALLOW User:alice * READ TOPIC LITERAL t",
                "DENY User:alice * READ TOPIC LITERAL t",
            ],
            "User:alice 10.0.0.1 READ TOPIC t",
            DENIED,
        ),
        (
            "a User:* deny beats a personal allow",
            &[],
            false,
            &[
                "ALLOW User:alice * READ TOPIC LITERAL t",
                "DENY User:* * READ TOPIC LITERAL t",
            ],
            "User:alice 10.0.0.1 READ TOPIC t",
            DENIED,
        ),
        (
            "a prefixed deny beats a literal allow",
            &[],
            false,
            &[
                "ALLOW User:alice * READ TOPIC LITERAL team-a",
                "DENY User:alice * READ TOPIC PREFIXED team",
            ],
            "User:alice 10.0.0.1 READ TOPIC team-a",
            DENIED,
        ),
        (
            "a wildcard deny beats a literal allow",
            &[],
            false,
            &[
                "ALLOW User:alice * READ TOPIC LITERAL t",
                "DENY User:alice * READ TOPIC LITERAL *",
            ],
            "User:alice 10.0.0.1 READ TOPIC t",
            DENIED,
        ),
        (
            "a literal deny beats a prefixed allow",
            &[],
            false,
            &[
                "ALLOW User:alice * READ TOPIC PREFIXED t",
                "DENY User:alice * READ TOPIC LITERAL tx",
            ],
            "User:alice 10.0.0.1 READ TOPIC tx",
            DENIED,
        ),
        (
            "a host-specific deny beats an any-host allow",
            &[],
            false,
            &[
                "ALLOW User:alice * READ TOPIC LITERAL t",
                "DENY User:alice 10.0.0.1 READ TOPIC LITERAL t",
            ],
            "User:alice 10.0.0.1 READ TOPIC t",
            DENIED,
        ),
        (
            "another principal's deny",
            &[],
            false,
            &[
                "ALLOW User:alice * READ TOPIC LITERAL t",
                "DENY User:bob * READ TOPIC LITERAL t",
            ],
            "User:alice 10.0.0.1 READ TOPIC t",
            ALLOWED,
        ),
        (
            "another operation's deny",
            &[],
            false,
            &[
                "ALLOW User:alice * READ TOPIC LITERAL t",
                "DENY User:alice * WRITE TOPIC LITERAL t",
            ],
            "User:alice 10.0.0.1 READ TOPIC t",
            ALLOWED,
        ),
        (
            "another host's deny",
            &[],
            false,
            &[
                "ALLOW User:alice * READ TOPIC LITERAL t",
                "DENY User:alice 10.0.0.2 READ TOPIC LITERAL t",
            ],
            "User:alice 10.0.0.1 READ TOPIC t",
            ALLOWED,
        ),
        (
            "a deny alone",
            &[],
            true,
            &["DENY User:alice * READ TOPIC LITERAL t"],
            "User:alice 10.0.0.1 READ TOPIC t",
            DENIED,
        ),
    ]);
}

#[test]
fn operations() {
    // (rule, ALLOW operations, DENY operations, checked operation, expected); all for
    // User:alice on the topic t.
    type OpRow = (
        &'static str,
        &'static [&'static str],
        &'static [&'static str],
        &'static str,
        AuthorizationResult,
    );
    let rows: &[OpRow] = &[
        ("ALL allows any operation", &["ALL"], &[], "WRITE", ALLOWED),
        (
            "ALL denies any operation",
            &["READ"],
            &["ALL"],
            "READ",
            DENIED,
        ),
        (
            "an allow is for its operation",
            &["READ"],
            &[],
            "WRITE",
            DENIED,
        ),
        ("READ implies DESCRIBE", &["READ"], &[], "DESCRIBE", ALLOWED),
        (
            "WRITE implies DESCRIBE",
            &["WRITE"],
            &[],
            "DESCRIBE",
            ALLOWED,
        ),
        (
            "DELETE implies DESCRIBE",
            &["DELETE"],
            &[],
            "DESCRIBE",
            ALLOWED,
        ),
        (
            "ALTER implies DESCRIBE",
            &["ALTER"],
            &[],
            "DESCRIBE",
            ALLOWED,
        ),
        (
            "DESCRIBE implies no READ",
            &["DESCRIBE"],
            &[],
            "READ",
            DENIED,
        ),
        (
            "CREATE implies no DESCRIBE",
            &["CREATE"],
            &[],
            "DESCRIBE",
            DENIED,
        ),
        (
            "ALTER_CONFIGS implies no DESCRIBE",
            &["ALTER_CONFIGS"],
            &[],
            "DESCRIBE",
            DENIED,
        ),
        (
            "READ implies no DESCRIBE_CONFIGS",
            &["READ"],
            &[],
            "DESCRIBE_CONFIGS",
            DENIED,
        ),
        (
            "ALTER implies no ALTER_CONFIGS",
            &["ALTER"],
            &[],
            "ALTER_CONFIGS",
            DENIED,
        ),
        (
            "DESCRIBE_CONFIGS implies no DESCRIBE",
            &["DESCRIBE_CONFIGS"],
            &[],
            "DESCRIBE",
            DENIED,
        ),
        (
            "ALTER_CONFIGS implies DESCRIBE_CONFIGS",
            &["ALTER_CONFIGS"],
            &[],
            "DESCRIBE_CONFIGS",
            ALLOWED,
        ),
        (
            "a DENY of READ does not deny DESCRIBE",
            &["DESCRIBE"],
            &["READ"],
            "DESCRIBE",
            ALLOWED,
        ),
        (
            "an ALLOW of READ implies DESCRIBE past a DENY of READ",
            &["READ"],
            &["READ"],
            "DESCRIBE",
            ALLOWED,
        ),
        (
            "a DENY of ALTER_CONFIGS does not deny DESCRIBE_CONFIGS",
            &["DESCRIBE_CONFIGS"],
            &["ALTER_CONFIGS"],
            "DESCRIBE_CONFIGS",
            ALLOWED,
        ),
        (
            "a DENY of DESCRIBE beats an implying ALLOW",
            &["WRITE"],
            &["DESCRIBE"],
            "DESCRIBE",
            DENIED,
        ),
    ];
    for (rule, allows, denies, op, want) in rows {
        let acls: Vec<String> = allows
            .iter()
            .map(|o| format!("ALLOW User:alice * {o} TOPIC LITERAL t"))
            .chain(
                denies
                    .iter()
                    .map(|o| format!("DENY User:alice * {o} TOPIC LITERAL t")),
            )
            .collect();
        let acls: Vec<&str> = acls.iter().map(String::as_str).collect();
        let idx = index(&[], false, &acls);
        let query = format!("User:alice 10.0.0.1 {op} TOPIC t");
        assert_eq!(check(&idx, &query), *want, "{rule}: {query} with {acls:?}");
    }
}

#[test]
fn no_acl_found() {
    run(&[
        (
            "no ACLs, default allow",
            &[],
            true,
            &[],
            "User:alice 10.0.0.1 READ TOPIC t",
            ALLOWED,
        ),
        (
            "no ACLs, default deny",
            &[],
            false,
            &[],
            "User:alice 10.0.0.1 READ TOPIC t",
            DENIED,
        ),
        (
            "ACLs only on other names",
            &[],
            true,
            &["ALLOW User:bob * READ TOPIC LITERAL u"],
            "User:alice 10.0.0.1 READ TOPIC t",
            ALLOWED,
        ),
        (
            "ACLs only on another resource type",
            &[],
            true,
            &["ALLOW User:bob * READ GROUP LITERAL t"],
            "User:alice 10.0.0.1 READ TOPIC t",
            ALLOWED,
        ),
        (
            "another principal's ACL on the resource",
            &[],
            true,
            &["ALLOW User:bob * READ TOPIC LITERAL t"],
            "User:alice 10.0.0.1 READ TOPIC t",
            DENIED,
        ),
        (
            "an ACL for another operation",
            &[],
            true,
            &["ALLOW User:alice * WRITE TOPIC LITERAL t"],
            "User:alice 10.0.0.1 READ TOPIC t",
            DENIED,
        ),
        (
            "an ACL from another host",
            &[],
            true,
            &["ALLOW User:alice 10.0.0.2 READ TOPIC LITERAL t"],
            "User:alice 10.0.0.1 READ TOPIC t",
            DENIED,
        ),
        (
            "another principal's prefixed ACL covering the name",
            &[],
            true,
            &["ALLOW User:bob * READ TOPIC PREFIXED t"],
            "User:alice 10.0.0.1 READ TOPIC tx",
            DENIED,
        ),
        (
            "another principal's wildcard ACL",
            &[],
            true,
            &["ALLOW User:bob * READ TOPIC LITERAL *"],
            "User:alice 10.0.0.1 READ TOPIC anything",
            DENIED,
        ),
        (
            "a literal ACL on a prefix of the name is not on the resource",
            &[],
            true,
            &["ALLOW User:bob * READ TOPIC LITERAL t"],
            "User:alice 10.0.0.1 READ TOPIC tx",
            ALLOWED,
        ),
    ]);
}

#[test]
fn add_replace_remove() {
    let mut idx = index(&[], true, &[]);
    let q = "User:alice 10.0.0.1 READ TOPIC team-a";
    assert_eq!(check(&idx, q), ALLOWED);
    idx.add(
        id(1),
        binding("DENY User:alice * READ TOPIC PREFIXED team-"),
    );
    assert_eq!(check(&idx, q), DENIED);
    // Same id: replaces (the deny is gone, an allow for bob is there).
    idx.add(id(1), binding("ALLOW User:bob * READ TOPIC PREFIXED team-"));
    assert_eq!(idx.len(), 1);
    assert_eq!(check(&idx, q), DENIED, "bob's ACL is on the resource");
    assert_eq!(check(&idx, "User:bob 10.0.0.1 READ TOPIC team-a"), ALLOWED);
    idx.add(
        id(2),
        binding("ALLOW User:alice * READ TOPIC LITERAL team-a"),
    );
    idx.add(id(3), binding("ALLOW User:alice * READ TOPIC LITERAL *"));
    assert_eq!(check(&idx, q), ALLOWED);
    assert_eq!(
        idx.remove(&id(1)),
        Some(binding("ALLOW User:bob * READ TOPIC PREFIXED team-"))
    );
    assert_eq!(idx.remove(&id(1)), None);
    assert_eq!(check(&idx, "User:bob 10.0.0.1 READ TOPIC team-a"), DENIED);
    idx.remove(&id(2));
    idx.remove(&id(3));
    assert!(idx.is_empty());
    assert_eq!(check(&idx, q), ALLOWED, "no ACL left: the default again");
    assert_eq!(idx.prefix_nodes(), 8, "only the 8 roots are left");
    assert_eq!(idx.principal_entries(), 0);
    let ids: Vec<AclId> = index(&[], false, &["ALLOW User:a * READ TOPIC LITERAL t"; 3])
        .iter()
        .map(|(id, _)| *id)
        .collect();
    assert_eq!(ids, [id(1), id(2), id(3)], "iter in id order");
}
