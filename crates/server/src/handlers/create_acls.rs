//! CreateAcls (30), v1-3 (issue 19): at the active controller (forwarded there from a
//! broker-only node, `cluster::is_forwarded`).
//!
//! Kafka's order (`AclApis.handleCreateAcls`, the request's own checks, `AclControlManager`):
//! 1. a creation with an UNKNOWN (code 0) resource type, pattern type, operation or
//!    permission fails Kafka's request parse: the connection is closed;
//! 2. ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED for every creation;
//! 3. no authorizer configured: SECURITY_DISABLED "No Authorizer is configured." for every
//!    creation;
//! 4. a resource type ANY, a pattern type ANY or MATCH, an operation ANY or a permission ANY
//!    cannot even be turned into a binding in Kafka (its `ResourcePattern` /
//!    `AccessControlEntry` constructors throw): every creation fails UNKNOWN_SERVER_ERROR
//!    without a message;
//! 5. per creation, the controller's checks and messages (`skiff_metadata::validate_new_acl`,
//!    INVALID_REQUEST); a binding already stored succeeds without a second copy.
//!
//! The answer comes once the new ACLs are committed; `crate::acl_sync` has then updated this
//! node's authorizer.

use skiff_auth::acl::{AclBinding, AclOperation, AclPermission, PatternType, ResourceType};
use skiff_protocol::{
    AclCreation, AclCreationResult, CreateAclsRequest, CreateAclsResponse, ResponseBody,
};
use skiff_types::ErrorCode;

use super::{Reply, RequestContext};

/// The message of a refused cluster operation (Kafka's names the request in it).
pub const NOT_AUTHORIZED: &str = "Request is not authorized.";
/// Kafka's answer to Create/DeleteAcls without an authorizer.
pub const NO_AUTHORIZER: &str = "No Authorizer is configured.";

/// Whether any of these wire codes is Kafka's UNKNOWN (0): such a request fails Kafka's parse.
pub(crate) fn any_unknown(codes: &[i8]) -> bool {
    codes.contains(&0)
}

/// The binding a creation names.
fn binding(c: &AclCreation) -> AclBinding {
    AclBinding {
        resource_type: ResourceType::from_code(c.resource_type),
        resource_name: c.resource_name.clone(),
        pattern_type: PatternType::from_code(c.resource_pattern_type),
        principal: c.principal.clone(),
        host: c.host.clone(),
        operation: AclOperation::from_code(c.operation),
        permission: AclPermission::from_code(c.permission_type),
    }
}

/// Whether Kafka's `CreateAclsRequest.aclBinding` would throw on this creation.
fn not_a_binding(c: &AclCreation) -> bool {
    c.resource_type == ResourceType::Any.code()
        || c.resource_pattern_type == PatternType::Any.code()
        || c.resource_pattern_type == PatternType::Match.code()
        || c.operation == AclOperation::Any.code()
        || c.permission_type == AclPermission::Any.code()
}

fn result(code: ErrorCode, message: Option<String>) -> AclCreationResult {
    AclCreationResult {
        error_code: code as i16,
        error_message: message,
    }
}

fn answer(results: Vec<AclCreationResult>) -> Reply {
    Reply::Now(ResponseBody::CreateAcls(CreateAclsResponse {
        results,
        ..CreateAclsResponse::default()
    }))
}

pub fn handle(ctx: &RequestContext<'_>, req: CreateAclsRequest) -> Reply {
    let unknown = req.creations.iter().any(|c| {
        any_unknown(&[
            c.resource_type,
            c.resource_pattern_type,
            c.operation,
            c.permission_type,
        ])
    });
    if unknown {
        return Reply::Close("CreateAcls with UNKNOWN elements".into());
    }
    let n = req.creations.len();
    let all = |code: ErrorCode, message: Option<&str>| {
        answer(vec![result(code, message.map(str::to_string)); n])
    };
    if !ctx.authorize_cluster(AclOperation::Alter) {
        return all(ErrorCode::ClusterAuthorizationFailed, Some(NOT_AUTHORIZED));
    }
    if !ctx.broker.authz.is_enabled() {
        return all(ErrorCode::SecurityDisabled, Some(NO_AUTHORIZER));
    }
    if req.creations.iter().any(not_a_binding) {
        return all(ErrorCode::UnknownServerError, None);
    }
    let bindings = req.creations.iter().map(binding).collect();
    match ctx.broker.metadata.create_acls(bindings) {
        Ok(results) => answer(
            results
                .into_iter()
                .map(|r| match r {
                    // Kafka leaves the message at its default ("") on success.
                    Ok(()) => AclCreationResult::default(),
                    Err(e) => result(e.code, e.message),
                })
                .collect(),
        ),
        Err(e) => all(e.error_code(), Some(&e.to_string())),
    }
}

/// CreateAcls, DescribeAcls and DeleteAcls through dispatch (the three share the fixture).
#[cfg(test)]
mod tests {
    use skiff_auth::acl::ResourceType as Rt;
    use skiff_auth::acl::{AclOperation as Op, AclPermission, PatternType as Pt};
    use skiff_protocol::{
        AclCreation, CreateAclsRequest, DeleteAclsFilter, DeleteAclsRequest, DescribeAclsRequest,
        DescribeAclsResponse, RequestBody, ResponseBody,
    };
    use skiff_types::ErrorCode;

    use crate::acl_sync::testing::{Fixture, call, fixture};
    use crate::handlers::Reply;

    fn creation(rt: Rt, name: &str, pt: Pt, user: &str, op: Op) -> AclCreation {
        AclCreation {
            resource_type: rt.code(),
            resource_name: name.into(),
            resource_pattern_type: pt.code(),
            principal: format!("User:{user}"),
            host: "*".into(),
            operation: op.code(),
            permission_type: AclPermission::Allow.code(),
        }
    }

    fn create(f: &Fixture, user: &str, creations: Vec<AclCreation>) -> Vec<(i16, Option<String>)> {
        let body = RequestBody::CreateAcls(CreateAclsRequest { creations });
        match call(f, user, 3, body) {
            ResponseBody::CreateAcls(r) => r
                .results
                .into_iter()
                .map(|r| (r.error_code, r.error_message))
                .collect(),
            other => panic!("{other:?}"),
        }
    }

    fn describe_req(rt: Rt, name: Option<&str>, pt: Pt) -> DescribeAclsRequest {
        DescribeAclsRequest {
            resource_type_filter: rt.code(),
            resource_name_filter: name.map(str::to_string),
            pattern_type_filter: pt.code(),
            principal_filter: None,
            host_filter: None,
            operation: Op::Any.code(),
            permission_type: AclPermission::Any.code(),
        }
    }

    fn describe(f: &Fixture, user: &str, req: DescribeAclsRequest) -> DescribeAclsResponse {
        match call(f, user, 3, RequestBody::DescribeAcls(req)) {
            ResponseBody::DescribeAcls(r) => r,
            other => panic!("{other:?}"),
        }
    }

    /// (resource type, name, pattern type, principal) of every described ACL.
    fn described(r: &DescribeAclsResponse) -> Vec<(i8, String, i8, String)> {
        r.resources
            .iter()
            .flat_map(|res| {
                res.acls.iter().map(|a| {
                    (
                        res.resource_type,
                        res.resource_name.clone(),
                        res.pattern_type,
                        a.principal.clone(),
                    )
                })
            })
            .collect()
    }

    fn delete_filter(rt: Rt, name: Option<&str>, pt: Pt) -> DeleteAclsFilter {
        let d = describe_req(rt, name, pt);
        DeleteAclsFilter {
            resource_type_filter: d.resource_type_filter,
            resource_name_filter: d.resource_name_filter,
            pattern_type_filter: d.pattern_type_filter,
            principal_filter: d.principal_filter,
            host_filter: d.host_filter,
            operation: d.operation,
            permission_type: d.permission_type,
        }
    }

    fn delete(
        f: &Fixture,
        user: &str,
        filters: Vec<DeleteAclsFilter>,
    ) -> skiff_protocol::DeleteAclsResponse {
        match call(
            f,
            user,
            3,
            RequestBody::DeleteAcls(DeleteAclsRequest { filters }),
        ) {
            ResponseBody::DeleteAcls(r) => r,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn without_an_authorizer_the_acl_apis_answer_security_disabled() {
        let f = fixture(false);
        let c = creation(Rt::Topic, "t", Pt::Literal, "alice", Op::Read);
        assert_eq!(
            create(&f, "admin", vec![c.clone(), c]),
            vec![
                (
                    ErrorCode::SecurityDisabled as i16,
                    Some("No Authorizer is configured.".into())
                );
                2
            ]
        );
        let d = describe(&f, "admin", describe_req(Rt::Any, None, Pt::Any));
        assert_eq!(d.error_code, ErrorCode::SecurityDisabled as i16);
        assert_eq!(
            d.error_message.as_deref(),
            Some("No Authorizer is configured on the broker")
        );
        let r = delete(&f, "admin", vec![delete_filter(Rt::Any, None, Pt::Any)]);
        assert_eq!(
            r.filter_results[0].error_code,
            ErrorCode::SecurityDisabled as i16
        );
        assert!(f.broker.image().acls().is_empty());
    }

    #[test]
    fn create_describe_with_filters_and_delete() {
        let f = fixture(true);
        let acls = vec![
            creation(Rt::Topic, "orders", Pt::Literal, "alice", Op::Read),
            creation(Rt::Topic, "ord", Pt::Prefixed, "bob", Op::Write),
            creation(Rt::Topic, "*", Pt::Literal, "carol", Op::Describe),
            creation(Rt::Group, "g", Pt::Literal, "alice", Op::Read),
        ];
        assert_eq!(create(&f, "admin", acls), vec![(0, Some(String::new())); 4]);
        let all = describe(&f, "admin", describe_req(Rt::Any, None, Pt::Any));
        assert_eq!(
            (all.error_code, all.error_message.as_deref()),
            (0, Some(""))
        );
        assert_eq!(described(&all).len(), 4);
        // MATCH: the literal name, the literal wildcard, and prefixes.
        let m = describe(
            &f,
            "admin",
            describe_req(Rt::Topic, Some("orders"), Pt::Match),
        );
        let names: Vec<_> = described(&m)
            .into_iter()
            .map(|(_, n, p, _)| (n, p))
            .collect();
        assert_eq!(
            names,
            vec![
                ("*".to_string(), Pt::Literal.code()),
                ("ord".to_string(), Pt::Prefixed.code()),
                ("orders".to_string(), Pt::Literal.code()),
            ]
        );
        let p = describe(&f, "admin", describe_req(Rt::Topic, None, Pt::Prefixed));
        assert_eq!(
            described(&p),
            vec![(
                Rt::Topic.code(),
                "ord".into(),
                Pt::Prefixed.code(),
                "User:bob".into()
            )]
        );
        let mut by_user = describe_req(Rt::Any, None, Pt::Any);
        by_user.principal_filter = Some("User:alice".into());
        assert_eq!(describe(&f, "admin", by_user).resources.len(), 2);

        // Delete: overlapping filters each list their matches; each ACL goes once.
        let r = delete(
            &f,
            "admin",
            vec![
                delete_filter(Rt::Topic, Some("orders"), Pt::Match),
                delete_filter(Rt::Topic, None, Pt::Prefixed),
                // A code Kafka does not define parses, then fails validation.
                DeleteAclsFilter {
                    resource_type_filter: 99,
                    ..delete_filter(Rt::Any, None, Pt::Any)
                },
            ],
        );
        let counts: Vec<_> = r
            .filter_results
            .iter()
            .map(|fr| (fr.error_code, fr.matching_acls.len()))
            .collect();
        assert_eq!(
            counts,
            vec![(0, 3), (0, 1), (ErrorCode::InvalidRequest as i16, 0)]
        );
        assert_eq!(r.filter_results[0].error_message, None);
        assert_eq!(
            r.filter_results[2].error_message.as_deref(),
            Some("Unknown patternFilter.")
        );
        let left = describe(&f, "admin", describe_req(Rt::Any, None, Pt::Any));
        assert_eq!(
            described(&left),
            vec![(
                Rt::Group.code(),
                "g".into(),
                Pt::Literal.code(),
                "User:alice".into()
            )]
        );
    }

    #[test]
    fn cluster_authorization_of_the_acl_apis() {
        let f = fixture(true);
        let c = creation(Rt::Topic, "t", Pt::Literal, "bob", Op::Read);
        let refused = (
            ErrorCode::ClusterAuthorizationFailed as i16,
            Some(super::NOT_AUTHORIZED.to_string()),
        );
        assert_eq!(
            create(&f, "alice", vec![c.clone(), c.clone()]),
            vec![refused.clone(); 2]
        );
        let d = describe(&f, "alice", describe_req(Rt::Any, None, Pt::Any));
        assert_eq!(d.error_code, ErrorCode::ClusterAuthorizationFailed as i16);
        let r = delete(&f, "alice", vec![delete_filter(Rt::Any, None, Pt::Any)]);
        assert_eq!(
            r.filter_results[0].error_code,
            ErrorCode::ClusterAuthorizationFailed as i16
        );
        assert!(f.broker.image().acls().is_empty());
        // ALTER and DESCRIBE on the cluster for alice (by the super user): now she may.
        let grants = vec![
            creation(
                Rt::Cluster,
                "kafka-cluster",
                Pt::Literal,
                "alice",
                Op::Alter,
            ),
            creation(
                Rt::Cluster,
                "kafka-cluster",
                Pt::Literal,
                "alice",
                Op::Describe,
            ),
        ];
        assert_eq!(
            create(&f, "admin", grants),
            vec![(0, Some(String::new())); 2]
        );
        assert_eq!(create(&f, "alice", vec![c]), vec![(0, Some(String::new()))]);
        let d = describe(&f, "alice", describe_req(Rt::Topic, None, Pt::Any));
        assert_eq!((d.error_code, described(&d).len()), (0, 1));
        let r = delete(&f, "alice", vec![delete_filter(Rt::Topic, None, Pt::Any)]);
        assert_eq!(r.filter_results[0].matching_acls.len(), 1);
        // bob has neither.
        let d = describe(&f, "bob", describe_req(Rt::Any, None, Pt::Any));
        assert_eq!(d.error_code, ErrorCode::ClusterAuthorizationFailed as i16);
    }

    #[test]
    fn invalid_creations_answer_as_kafka() {
        let f = fixture(true);
        let ok = creation(Rt::Topic, "t", Pt::Literal, "alice", Op::Read);
        let mut no_colon = ok.clone();
        no_colon.principal = "alice".into();
        let mut cluster = ok.clone();
        cluster.resource_type = Rt::Cluster.code();
        let mut undefined = ok.clone();
        undefined.operation = 99;
        let got = create(&f, "admin", vec![no_colon, cluster, undefined, ok.clone()]);
        let bad = |m: &str| (ErrorCode::InvalidRequest as i16, Some(m.to_string()));
        assert_eq!(
            got,
            vec![
                bad(
                    "Could not parse principal from `alice` (no colon is present separating the principal type from the principal name)"
                ),
                bad("The only valid name for the CLUSTER resource is kafka-cluster"),
                bad("Invalid operation UNKNOWN"),
                (0, Some(String::new())),
            ]
        );
        // ANY / MATCH cannot be a binding in Kafka: the whole request fails, nothing created.
        let mut any = ok.clone();
        any.resource_pattern_type = Pt::Match.code();
        let other = creation(Rt::Group, "g", Pt::Literal, "alice", Op::Read);
        assert_eq!(
            create(&f, "admin", vec![other, any]),
            vec![(ErrorCode::UnknownServerError as i16, None); 2]
        );
        assert_eq!(f.broker.image().acls().len(), 1);
        // An UNKNOWN (0) code fails Kafka's parse: the connection is closed.
        let mut unknown = ok;
        unknown.resource_type = 0;
        let body = RequestBody::CreateAcls(CreateAclsRequest {
            creations: vec![unknown],
        });
        let p = skiff_auth::principal::KafkaPrincipal::user("admin");
        assert!(matches!(
            crate::authz::testing::call_as(&f.broker, &p, 3, body),
            Reply::Close(_)
        ));
    }
}
