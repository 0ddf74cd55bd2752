//! AlterUserScramCredentials (51), v0 (issue 19, KIP-554): at the active controller
//! (forwarded there from a broker-only node, `cluster::is_forwarded`).
//!
//! ALTER on the cluster, else Kafka's error response: every distinct user of the request
//! (sorted) with CLUSTER_AUTHORIZATION_FAILED. Otherwise the controller's rules per user
//! (`skiff_metadata` `controller/security.rs`: duplicates, empty names, unknown mechanisms,
//! iterations 4096..=16384, deleting what does not exist); the stored and server keys are
//! computed from the client's salted password, which is never stored. Successes carry a
//! null message, as Kafka's. The answer comes once the change is committed. No authorizer
//! is needed: SCRAM credentials serve authentication.

use std::collections::BTreeSet;

use skiff_auth::acl::AclOperation;
use skiff_metadata::{ScramDeletion, ScramUpsertion};
use skiff_protocol::{
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse,
    AlterUserScramCredentialsResult, ResponseBody,
};
use skiff_types::ErrorCode;

use super::create_acls::NOT_AUTHORIZED;
use super::{Reply, RequestContext};

fn result(
    user: String,
    code: ErrorCode,
    message: Option<String>,
) -> AlterUserScramCredentialsResult {
    AlterUserScramCredentialsResult {
        user,
        error_code: code as i16,
        error_message: message,
    }
}

fn answer(results: Vec<AlterUserScramCredentialsResult>) -> Reply {
    Reply::Now(ResponseBody::AlterUserScramCredentials(
        AlterUserScramCredentialsResponse {
            results,
            ..AlterUserScramCredentialsResponse::default()
        },
    ))
}

pub fn handle(ctx: &RequestContext<'_>, req: AlterUserScramCredentialsRequest) -> Reply {
    let users: BTreeSet<&str> = req
        .deletions
        .iter()
        .map(|d| d.name.as_str())
        .chain(req.upsertions.iter().map(|u| u.name.as_str()))
        .collect();
    let all = |code: ErrorCode, message: &str| {
        answer(
            users
                .iter()
                .map(|u| result(u.to_string(), code, Some(message.to_string())))
                .collect(),
        )
    };
    if !ctx.authorize_cluster(AclOperation::Alter) {
        return all(ErrorCode::ClusterAuthorizationFailed, NOT_AUTHORIZED);
    }
    let deletions = req
        .deletions
        .iter()
        .map(|d| ScramDeletion {
            name: d.name.clone(),
            mechanism: d.mechanism,
        })
        .collect();
    let upsertions = req
        .upsertions
        .iter()
        .map(|u| ScramUpsertion {
            name: u.name.clone(),
            mechanism: u.mechanism,
            iterations: u.iterations,
            salt: u.salt.to_vec(),
            salted_password: u.salted_password.to_vec(),
        })
        .collect();
    match ctx
        .broker
        .metadata
        .alter_scram_credentials(deletions, upsertions)
    {
        Ok(results) => answer(
            results
                .into_iter()
                .map(|(user, r)| match r {
                    Ok(()) => result(user, ErrorCode::None, None),
                    Err(e) => result(user, e.code, e.message),
                })
                .collect(),
        ),
        Err(e) => all(e.error_code(), &e.to_string()),
    }
}

/// AlterUserScramCredentials and DescribeUserScramCredentials through dispatch.
#[cfg(test)]
mod tests {
    use skiff_auth::sasl::{ScramCredential, ScramMechanism};
    use skiff_protocol::{
        AlterUserScramCredentialsRequest, DescribeUserScramCredentialsRequest,
        DescribeUserScramCredentialsResponse, RequestBody, ResponseBody, ScramCredentialDeletion,
        ScramCredentialUpsertion, UserName,
    };
    use skiff_types::ErrorCode;

    use crate::acl_sync::testing::{Fixture, call, fixture};

    fn up(name: &str, m: ScramMechanism, iterations: i32) -> ScramCredentialUpsertion {
        ScramCredentialUpsertion {
            name: name.into(),
            mechanism: m.code(),
            iterations,
            salt: b"salty".to_vec().into(),
            salted_password: vec![3u8; 32].into(),
        }
    }

    fn del(name: &str, m: ScramMechanism) -> ScramCredentialDeletion {
        ScramCredentialDeletion {
            name: name.into(),
            mechanism: m.code(),
        }
    }

    fn alter(
        f: &Fixture,
        user: &str,
        deletions: Vec<ScramCredentialDeletion>,
        upsertions: Vec<ScramCredentialUpsertion>,
    ) -> Vec<(String, i16, Option<String>)> {
        let body = RequestBody::AlterUserScramCredentials(AlterUserScramCredentialsRequest {
            deletions,
            upsertions,
        });
        match call(f, user, 0, body) {
            ResponseBody::AlterUserScramCredentials(r) => r
                .results
                .into_iter()
                .map(|r| (r.user, r.error_code, r.error_message))
                .collect(),
            other => panic!("{other:?}"),
        }
    }

    fn describe(
        f: &Fixture,
        user: &str,
        users: Option<&[&str]>,
    ) -> DescribeUserScramCredentialsResponse {
        let users = users.map(|u| {
            u.iter()
                .map(|n| UserName {
                    name: n.to_string(),
                })
                .collect()
        });
        let body = RequestBody::DescribeUserScramCredentials(DescribeUserScramCredentialsRequest {
            users,
        });
        match call(f, user, 0, body) {
            ResponseBody::DescribeUserScramCredentials(r) => r,
            other => panic!("{other:?}"),
        }
    }

    /// (user, code, [(mechanism, iterations)]) per result.
    /// A described user: (user, code, [(mechanism, iterations)]).
    type Row = (String, i16, Vec<(i8, i32)>);

    fn rows(r: &DescribeUserScramCredentialsResponse) -> Vec<Row> {
        r.results
            .iter()
            .map(|x| {
                let infos = x
                    .credential_infos
                    .iter()
                    .map(|c| (c.mechanism, c.iterations))
                    .collect();
                (x.user.clone(), x.error_code, infos)
            })
            .collect()
    }

    #[test]
    fn upsert_describe_and_delete() {
        let f = fixture(false);
        use ScramMechanism::{Sha256, Sha512};
        let got = alter(
            &f,
            "anyone",
            vec![],
            vec![up("alice", Sha256, 4096), up("bob", Sha512, 8192)],
        );
        assert_eq!(
            got,
            vec![("alice".into(), 0, None), ("bob".into(), 0, None)]
        );
        alter(&f, "anyone", vec![], vec![up("alice", Sha512, 10000)]);
        let want = ScramCredential::from_salted_password(Sha256, b"salty", &[3; 32], 4096);
        assert_eq!(
            crate::acl_sync::scram_credential(&f.broker, "alice", Sha256),
            Some(want)
        );
        // Everyone (null and empty lists alike), mechanisms and iterations only.
        for users in [None, Some(&[][..])] {
            let d = describe(&f, "anyone", users);
            assert_eq!((d.error_code, d.error_message.as_deref()), (0, Some("")));
            assert_eq!(
                rows(&d),
                vec![
                    ("alice".into(), 0, vec![(1, 4096), (2, 10000)]),
                    ("bob".into(), 0, vec![(2, 8192)]),
                ]
            );
        }
        let d = describe(&f, "anyone", Some(&["bob", "nobody", "alice", "bob"]));
        assert_eq!(
            rows(&d),
            vec![
                ("bob".into(), ErrorCode::DuplicateResource as i16, vec![]),
                ("nobody".into(), ErrorCode::ResourceNotFound as i16, vec![]),
                ("alice".into(), 0, vec![(1, 4096), (2, 10000)]),
            ]
        );
        assert_eq!(
            d.results[0].error_message.as_deref(),
            Some(
                "Cannot describe SCRAM credentials for the same user twice in a single request: bob"
            )
        );
        assert_eq!(
            d.results[1].error_message.as_deref(),
            Some("Attempt to describe a user credential that does not exist: nobody")
        );
        // Deletion, and the controller's refusals in Kafka's words.
        let got = alter(
            &f,
            "anyone",
            vec![del("alice", Sha256), del("ghost", Sha256)],
            vec![
                up("carol", Sha256, 100),
                up("bob", Sha256, 4096),
                up("bob", Sha512, 4096),
            ],
        );
        assert_eq!(
            got,
            vec![
                ("alice".into(), 0, None),
                (
                    "ghost".into(),
                    ErrorCode::ResourceNotFound as i16,
                    Some("Attempt to delete a user credential that does not exist".into())
                ),
                (
                    "carol".into(),
                    ErrorCode::UnacceptableCredential as i16,
                    Some("Too few iterations".into())
                ),
                (
                    "bob".into(),
                    ErrorCode::DuplicateResource as i16,
                    Some("A user credential cannot be altered twice in the same request".into())
                ),
            ]
        );
        let d = describe(&f, "anyone", Some(&["alice"]));
        assert_eq!(rows(&d), vec![("alice".into(), 0, vec![(2, 10000)])]);
    }

    #[test]
    fn cluster_authorization_of_the_scram_apis() {
        use skiff_auth::acl::{AclOperation, AclPermission, PatternType, ResourceType};
        let f = fixture(true);
        let got = alter(
            &f,
            "alice",
            vec![del("zed", ScramMechanism::Sha256)],
            vec![
                up("bob", ScramMechanism::Sha256, 4096),
                up("amy", ScramMechanism::Sha256, 4096),
            ],
        );
        let refused = |u: &str| {
            (
                u.to_string(),
                ErrorCode::ClusterAuthorizationFailed as i16,
                Some(super::NOT_AUTHORIZED.to_string()),
            )
        };
        assert_eq!(got, vec![refused("amy"), refused("bob"), refused("zed")]);
        assert!(f.broker.image().scram_credentials().is_empty());
        let d = describe(&f, "alice", Some(&["x", "y"]));
        assert_eq!((d.error_code, d.error_message.clone()), (31, None));
        assert_eq!(
            rows(&d),
            vec![(String::new(), 31, vec![]), (String::new(), 31, vec![])]
        );
        // The super user may; then ALTER + DESCRIBE on the cluster let alice.
        let ok = alter(
            &f,
            "admin",
            vec![],
            vec![up("bob", ScramMechanism::Sha256, 4096)],
        );
        assert_eq!(ok, vec![("bob".into(), 0, None)]);
        let cluster = |op| {
            crate::authz::testing::acl(
                "alice",
                AclPermission::Allow,
                op,
                ResourceType::Cluster,
                PatternType::Literal,
                "kafka-cluster",
            )
        };
        f.broker
            .metadata
            .create_acls(vec![
                cluster(AclOperation::Alter),
                cluster(AclOperation::Describe),
            ])
            .unwrap();
        let ok = alter(
            &f,
            "alice",
            vec![],
            vec![up("amy", ScramMechanism::Sha256, 4096)],
        );
        assert_eq!(ok, vec![("amy".into(), 0, None)]);
        assert_eq!(describe(&f, "alice", None).results.len(), 2);
    }
}
