//! `AclBindingFilter::matches` (Kafka's `ResourcePatternFilter` and
//! `AccessControlEntryFilter`) and `AclIndex::matching`.

use super::*;

fn filter(rt: &str, name: Option<&str>, pattern: &str) -> AclBindingFilter {
    AclBindingFilter {
        resource_type: named(ResourceType::ALL, rt),
        resource_name: name.map(str::to_string),
        pattern_type: named(PatternType::ALL, pattern),
        ..AclBindingFilter::any()
    }
}

#[test]
fn resource_pattern_filter() {
    // (filter: type, name, pattern type) -> the stored patterns it selects, out of these.
    let stored = [
        "TOPIC LITERAL foo",
        "TOPIC LITERAL foobar",
        "TOPIC LITERAL *",
        "TOPIC PREFIXED foo",
        "TOPIC PREFIXED fo",
        "TOPIC PREFIXED foobarx",
        "TOPIC PREFIXED *",
        "GROUP LITERAL foo",
    ];
    type Row = (
        &'static str,
        Option<&'static str>,
        &'static str,
        &'static [usize],
    );
    let rows: &[Row] = &[
        ("ANY", None, "ANY", &[0, 1, 2, 3, 4, 5, 6, 7]),
        ("TOPIC", None, "ANY", &[0, 1, 2, 3, 4, 5, 6]),
        ("GROUP", None, "MATCH", &[7]),
        ("TOPIC", None, "LITERAL", &[0, 1, 2]),
        ("TOPIC", None, "PREFIXED", &[3, 4, 5, 6]),
        ("ANY", Some("foo"), "ANY", &[0, 3, 7]),
        ("TOPIC", Some("foo"), "LITERAL", &[0]),
        ("TOPIC", Some("*"), "LITERAL", &[2]),
        ("TOPIC", Some("*"), "ANY", &[2, 6]),
        ("TOPIC", Some("foo"), "PREFIXED", &[3]),
        ("TOPIC", Some("foobar"), "MATCH", &[1, 2, 3, 4]),
        ("TOPIC", Some("foo"), "MATCH", &[0, 2, 3, 4]),
        ("TOPIC", Some("*"), "MATCH", &[2, 6]),
        ("TOPIC", Some("*x"), "MATCH", &[2, 6]),
        ("TOPIC", Some("bar"), "MATCH", &[2]),
        ("ANY", Some("foo"), "MATCH", &[0, 2, 3, 4, 7]),
    ];
    for (rt, name, pattern, want) in rows {
        let f = filter(rt, *name, pattern);
        let got: Vec<usize> = stored
            .iter()
            .enumerate()
            .filter(|(_, s)| f.matches(&binding(&format!("ALLOW User:a * READ {s}"))))
            .map(|(i, _)| i)
            .collect();
        assert_eq!(got, *want, "filter {rt} {name:?} {pattern}");
    }
}

#[test]
fn access_control_entry_filter() {
    let stored = [
        "ALLOW User:alice * READ TOPIC LITERAL t",
        "DENY User:alice 10.0.0.1 WRITE TOPIC LITERAL t",
        "ALLOW User:* * ALL TOPIC LITERAL t",
        "ALLOW User:bob 10.0.0.1 READ TOPIC LITERAL t",
    ];
    type Row = (
        Option<&'static str>,
        Option<&'static str>,
        &'static str,
        &'static str,
        &'static [usize],
    );
    let rows: &[Row] = &[
        (None, None, "ANY", "ANY", &[0, 1, 2, 3]),
        (Some("User:alice"), None, "ANY", "ANY", &[0, 1]),
        (Some("User:*"), None, "ANY", "ANY", &[2]),
        (Some("alice"), None, "ANY", "ANY", &[]),
        (None, Some("10.0.0.1"), "ANY", "ANY", &[1, 3]),
        (None, Some("*"), "ANY", "ANY", &[0, 2]),
        (None, None, "READ", "ANY", &[0, 3]),
        (None, None, "ALL", "ANY", &[2]),
        (None, None, "ANY", "DENY", &[1]),
        (None, None, "ANY", "ALLOW", &[0, 2, 3]),
        (Some("User:alice"), Some("10.0.0.1"), "WRITE", "DENY", &[1]),
        (Some("User:alice"), Some("10.0.0.1"), "WRITE", "ALLOW", &[]),
    ];
    for (p, h, op, perm, want) in rows {
        let f = AclBindingFilter {
            principal: p.map(str::to_string),
            host: h.map(str::to_string),
            operation: named(AclOperation::ALL, op),
            permission: named(AclPermission::ALL, perm),
            ..AclBindingFilter::any()
        };
        let got: Vec<usize> = stored
            .iter()
            .enumerate()
            .filter(|(_, s)| f.matches(&binding(s)))
            .map(|(i, _)| i)
            .collect();
        assert_eq!(got, *want, "filter {p:?} {h:?} {op} {perm}");
    }
}

#[test]
fn exact_filter_and_index_matching() {
    let acls = [
        "ALLOW User:alice * READ TOPIC LITERAL t",
        "ALLOW User:alice * READ TOPIC PREFIXED t",
        "DENY User:bob * WRITE GROUP LITERAL g",
        "ALLOW User:alice * READ TOPIC LITERAL *",
    ];
    let idx = index(&[], false, &acls);
    for (i, a) in acls.iter().enumerate() {
        let b = binding(a);
        assert_eq!(
            idx.matching(&AclBindingFilter::exact(&b)),
            [(id(i as u64 + 1), b)]
        );
    }
    let all = idx.matching(&AclBindingFilter::default());
    assert_eq!(all.len(), 4);
    assert!(all.windows(2).all(|w| w[0].0 < w[1].0), "id order");
    let topic_t = idx.matching(&filter("TOPIC", Some("tx"), "MATCH"));
    let ids: Vec<AclId> = topic_t.iter().map(|(id, _)| *id).collect();
    assert_eq!(ids, [id(2), id(4)]);
    assert!(!AclBindingFilter::any().is_unknown());
    assert!(filter("UNKNOWN", None, "ANY").is_unknown());
}
