//! DescribeUserScramCredentials (50), v0 (issue 19): answered from this node's metadata image
//! (Kafka's `KafkaApis.handleDescribeUserScramCredentialsRequest` + `ScramImage.describe`).
//!
//! DESCRIBE on the cluster, else Kafka's error response: top-level
//! CLUSTER_AUTHORIZATION_FAILED without a message, and one result per requested user, with
//! that code and an empty user name (Kafka's `getErrorResponse` does not copy the names).
//! A null or empty user list describes every user with a credential; otherwise each distinct
//! name once, in request order: DUPLICATE_RESOURCE when named more than once,
//! RESOURCE_NOT_FOUND when it has no credential, else its mechanisms and iteration counts
//! (SCRAM-SHA-256 first). Salts and keys are never answered. No authorizer is needed.

use std::collections::HashMap;

use skiff_auth::acl::AclOperation;
use skiff_auth::sasl::ScramMechanism;
use skiff_protocol::{
    CredentialInfo, DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse,
    DescribeUserScramCredentialsResult, ResponseBody,
};
use skiff_types::ErrorCode;

use super::{Reply, RequestContext};

fn answer(r: DescribeUserScramCredentialsResponse) -> Reply {
    Reply::Now(ResponseBody::DescribeUserScramCredentials(r))
}

pub fn handle(ctx: &RequestContext<'_>, req: DescribeUserScramCredentialsRequest) -> Reply {
    let requested: Vec<String> = req
        .users
        .unwrap_or_default()
        .into_iter()
        .map(|u| u.name)
        .collect();
    if !ctx.authorize_cluster(AclOperation::Describe) {
        let code = ErrorCode::ClusterAuthorizationFailed as i16;
        let result = DescribeUserScramCredentialsResult {
            error_code: code,
            error_message: None,
            ..DescribeUserScramCredentialsResult::default()
        };
        return answer(DescribeUserScramCredentialsResponse {
            error_code: code,
            error_message: None,
            results: vec![result; requested.len()],
            ..DescribeUserScramCredentialsResponse::default()
        });
    }
    let image = ctx.broker.image();
    let creds = image.scram_credentials();
    // (user, named more than once), distinct, in order.
    let users: Vec<(String, bool)> = if requested.is_empty() {
        creds.keys().map(|u| (u.clone(), false)).collect()
    } else {
        let mut seen: Vec<(String, bool)> = Vec::new();
        let mut at: HashMap<String, usize> = HashMap::new();
        for u in requested {
            match at.get(&u).copied() {
                Some(i) => {
                    if let Some(entry) = seen.get_mut(i) {
                        entry.1 = true;
                    }
                }
                None => {
                    at.insert(u.clone(), seen.len());
                    seen.push((u, false));
                }
            }
        }
        seen
    };
    let results = users
        .into_iter()
        .map(|(user, twice)| {
            let mut r = DescribeUserScramCredentialsResult {
                user,
                ..DescribeUserScramCredentialsResult::default()
            };
            let infos: Vec<CredentialInfo> = ScramMechanism::ALL
                .iter()
                .filter_map(|m| image.scram_credential(&r.user, *m))
                .map(|c| CredentialInfo {
                    mechanism: c.mechanism.code(),
                    iterations: c.iterations,
                })
                .collect();
            if twice {
                r.error_code = ErrorCode::DuplicateResource as i16;
                r.error_message = Some(format!(
                    "Cannot describe SCRAM credentials for the same user twice in a single request: {}",
                    r.user
                ));
            } else if infos.is_empty() {
                r.error_code = ErrorCode::ResourceNotFound as i16;
                r.error_message = Some(format!(
                    "Attempt to describe a user credential that does not exist: {}",
                    r.user
                ));
            } else {
                r.credential_infos = infos;
            }
            r
        })
        .collect();
    answer(DescribeUserScramCredentialsResponse {
        results,
        ..DescribeUserScramCredentialsResponse::default()
    })
}
