//! `validate_new_binding` and `validate_filter`: Kafka's messages, INVALID_REQUEST.

use super::*;

#[test]
fn new_bindings() {
    type E = AclValidationError;
    let rows: &[(&str, Result<(), E>, &str)] = &[
        ("ALLOW User:a * READ TOPIC LITERAL t", Ok(()), ""),
        (
            "DENY User:a 10.0.0.1 WRITE TOPIC PREFIXED team-",
            Ok(()),
            "",
        ),
        ("ALLOW User:* * ALL TOPIC LITERAL *", Ok(()), ""),
        (
            "ALLOW User:a * ALTER CLUSTER LITERAL kafka-cluster",
            Ok(()),
            "",
        ),
        ("ALLOW User: * READ GROUP LITERAL g", Ok(()), ""),
        (
            "ALLOW User:CN=a:b * READ TRANSACTIONAL_ID PREFIXED x",
            Ok(()),
            "",
        ),
        (
            "ALLOW User:a * READ UNKNOWN LITERAL t",
            Err(E::InvalidResourceType(ResourceType::Unknown)),
            "Invalid resourceType UNKNOWN",
        ),
        (
            "ALLOW User:a * READ ANY LITERAL t",
            Err(E::InvalidResourceType(ResourceType::Any)),
            "Invalid resourceType ANY",
        ),
        (
            "ALLOW User:a * READ TOPIC UNKNOWN t",
            Err(E::InvalidPatternType(PatternType::Unknown)),
            "Invalid patternType UNKNOWN",
        ),
        (
            "ALLOW User:a * READ TOPIC ANY t",
            Err(E::InvalidPatternType(PatternType::Any)),
            "Invalid patternType ANY",
        ),
        (
            "ALLOW User:a * READ TOPIC MATCH t",
            Err(E::InvalidPatternType(PatternType::Match)),
            "Invalid patternType MATCH",
        ),
        (
            "ALLOW User:a * UNKNOWN TOPIC LITERAL t",
            Err(E::InvalidOperation(AclOperation::Unknown)),
            "Invalid operation UNKNOWN",
        ),
        (
            "ALLOW User:a * ANY TOPIC LITERAL t",
            Err(E::InvalidOperation(AclOperation::Any)),
            "Invalid operation ANY",
        ),
        (
            "UNKNOWN User:a * READ TOPIC LITERAL t",
            Err(E::InvalidPermissionType(AclPermission::Unknown)),
            "Invalid permissionType UNKNOWN",
        ),
        (
            "ANY User:a * READ TOPIC LITERAL t",
            Err(E::InvalidPermissionType(AclPermission::Any)),
            "Invalid permissionType ANY",
        ),
        (
            "ALLOW User:a * ALTER CLUSTER LITERAL my-cluster",
            Err(E::InvalidClusterResourceName),
            "The only valid name for the CLUSTER resource is kafka-cluster",
        ),
        (
            "ALLOW User:a * ALTER CLUSTER PREFIXED kafka",
            Err(E::InvalidClusterResourceName),
            "The only valid name for the CLUSTER resource is kafka-cluster",
        ),
        (
            "ALLOW User:a * ALTER CLUSTER LITERAL \"\"",
            Err(E::InvalidClusterResourceName),
            "The only valid name for the CLUSTER resource is kafka-cluster",
        ),
        (
            "ALLOW User:a * READ TOPIC LITERAL \"\"",
            Err(E::EmptyResourceName),
            "Invalid empty resource name",
        ),
        (
            "ALLOW User:a * READ TOPIC PREFIXED \"\"",
            Err(E::EmptyResourceName),
            "Invalid empty resource name",
        ),
        (
            "ALLOW alice * READ TOPIC LITERAL t",
            Err(E::PrincipalWithoutColon("alice".into())),
            "Could not parse principal from `alice` (no colon is present separating the principal type from the principal name)",
        ),
        // The enum checks come first, in validateNewAcl's order.
        (
            "ANY alice * ANY ANY MATCH \"\"",
            Err(E::InvalidResourceType(ResourceType::Any)),
            "Invalid resourceType ANY",
        ),
        (
            "ANY alice * ANY TOPIC MATCH \"\"",
            Err(E::InvalidPatternType(PatternType::Match)),
            "Invalid patternType MATCH",
        ),
        (
            "ANY alice * ANY TOPIC LITERAL \"\"",
            Err(E::InvalidOperation(AclOperation::Any)),
            "Invalid operation ANY",
        ),
        (
            "ANY alice * READ TOPIC LITERAL \"\"",
            Err(E::InvalidPermissionType(AclPermission::Any)),
            "Invalid permissionType ANY",
        ),
        (
            "ALLOW alice * READ TOPIC LITERAL \"\"",
            Err(E::EmptyResourceName),
            "Invalid empty resource name",
        ),
    ];
    for (spec, want, message) in rows {
        let got = validate_new_binding(&binding(spec));
        assert_eq!(&got, want, "{spec}");
        if let Err(e) = got {
            assert_eq!(e.to_string(), *message, "{spec}");
            assert_eq!(e.code(), 42);
        }
    }
}

#[test]
fn filters() {
    type E = AclValidationError;
    let f = |rt, pt, op, perm| AclBindingFilter {
        resource_type: rt,
        pattern_type: pt,
        operation: op,
        permission: perm,
        ..AclBindingFilter::any()
    };
    use AclOperation as O;
    use AclPermission as P;
    use PatternType as T;
    use ResourceType as R;
    let rows = [
        (f(R::Any, T::Any, O::Any, P::Any), Ok(())),
        (f(R::Topic, T::Match, O::Read, P::Allow), Ok(())),
        (
            f(R::Unknown, T::Any, O::Any, P::Any),
            Err(E::UnknownPatternFilter),
        ),
        (
            f(R::Any, T::Unknown, O::Any, P::Any),
            Err(E::UnknownPatternFilter),
        ),
        (
            f(R::Any, T::Any, O::Unknown, P::Any),
            Err(E::UnknownEntryFilter),
        ),
        (
            f(R::Any, T::Any, O::Any, P::Unknown),
            Err(E::UnknownEntryFilter),
        ),
        (
            f(R::Unknown, T::Any, O::Unknown, P::Any),
            Err(E::UnknownPatternFilter),
        ),
    ];
    for (filter, want) in rows {
        assert_eq!(validate_filter(&filter), want, "{filter:?}");
    }
    assert_eq!(
        E::UnknownPatternFilter.to_string(),
        "Unknown patternFilter."
    );
    assert_eq!(E::UnknownEntryFilter.to_string(), "Unknown entryFilter.");
    assert_eq!(E::UnknownEntryFilter.code(), 42);
}
