//! DeleteTopics (20), v1-6: by name (v1-5 `topic_names`), by name or id (v6 `topics`).
//!
//! Deletes the topic from metadata (durable) and then its partition logs. Unknown names ->
//! UNKNOWN_TOPIC_OR_PARTITION, unknown ids -> UNKNOWN_TOPIC_ID; a v6 entry naming both a name
//! and an id, or neither -> INVALID_REQUEST. Error messages from v5.
//! Authorization (issue 19, Kafka 4's `ControllerApis.deleteTopics`): DELETE on the cluster
//! allows every topic; otherwise by name, DESCRIBE first (refused -> TOPIC_AUTHORIZATION_FAILED
//! whether the topic exists or not), then existence, then DELETE (refused -> 29); by id, an
//! unknown id -> UNKNOWN_TOPIC_ID, a known one without DELETE -> 29, named in the answer only
//! when the principal may DESCRIBE it.

use skiff_auth::acl::AclOperation;
use skiff_protocol::{
    DeletableTopicResult, DeleteTopicsRequest, DeleteTopicsResponse, ResponseBody,
};
use skiff_types::ErrorCode;
use uuid::Uuid;

use super::authz_ops::Checker;
use super::{Reply, RequestContext};
use crate::broker::TopicError;

/// First version that may name topics by id.
const BY_ID_MIN_VERSION: i16 = 6;

pub fn handle(ctx: &RequestContext<'_>, req: DeleteTopicsRequest) -> Reply {
    let v = ctx.api_version;
    let targets: Vec<(Option<String>, Uuid)> = if v >= BY_ID_MIN_VERSION {
        req.topics
            .iter()
            .map(|t| (t.name.clone(), t.topic_id))
            .collect()
    } else {
        req.topic_names
            .iter()
            .map(|n| (Some(n.clone()), Uuid::nil()))
            .collect()
    };
    let authz = Checker::new(ctx);
    let cluster_delete = authz.cluster(AclOperation::Delete);
    let may = |op, name: &str| cluster_delete || authz.topic(op, name);
    let responses = targets
        .into_iter()
        .map(|(name, id)| {
            let result = delete_one(ctx, name.as_deref(), id, &may);
            let (name, id, error) = match result {
                Ok((name, id)) => (Some(name), id, None),
                Err((e, Some(shown))) => (Some(shown), id, Some(e)),
                Err((e, None)) => (name, id, Some(e)),
            };
            DeletableTopicResult {
                // Names are only nullable from v6.
                name: if v >= BY_ID_MIN_VERSION {
                    name
                } else {
                    Some(name.unwrap_or_default())
                },
                topic_id: if v >= BY_ID_MIN_VERSION {
                    id
                } else {
                    Uuid::nil()
                },
                error_code: error.as_ref().map_or(0, |e| e.code as i16),
                error_message: error.map(|e| e.message),
            }
        })
        .collect();
    Reply::Now(ResponseBody::DeleteTopics(DeleteTopicsResponse {
        responses,
        ..DeleteTopicsResponse::default()
    }))
}

fn denied() -> TopicError {
    TopicError::new(
        ErrorCode::TopicAuthorizationFailed,
        "Topic authorization failed.",
    )
}

/// Deletes one topic; an error carries the name to show when it is not the request's own
/// (a topic named by id that the principal may describe).
fn delete_one(
    ctx: &RequestContext<'_>,
    name: Option<&str>,
    id: Uuid,
    may: &dyn Fn(AclOperation, &str) -> bool,
) -> Result<(String, Uuid), (TopicError, Option<String>)> {
    let image = ctx.broker.image();
    let info = match (name, id.is_nil()) {
        (Some(n), true) => {
            if !may(AclOperation::Describe, n) {
                return Err((denied(), None));
            }
            let info = image.topic(n).ok_or_else(|| {
                let e = TopicError::new(
                    ErrorCode::UnknownTopicOrPartition,
                    "This server does not host this topic-partition.",
                );
                (e, None)
            })?;
            if !may(AclOperation::Delete, n) {
                return Err((denied(), None));
            }
            info
        }
        (None, false) => {
            let info = image.topic_by_id(id.as_bytes()).ok_or_else(|| {
                let e = TopicError::new(
                    ErrorCode::UnknownTopicId,
                    "This server does not host this topic ID.",
                );
                (e, None)
            })?;
            if !may(AclOperation::Delete, &info.name) {
                let shown = may(AclOperation::Describe, &info.name).then(|| info.name.clone());
                return Err((denied(), shown));
            }
            info
        }
        _ => {
            return Err((
                TopicError::new(
                    ErrorCode::InvalidRequest,
                    "Each topic must be named by exactly one of a name or an id.",
                ),
                None,
            ));
        }
    };
    let deleted = ctx.broker.delete_topic(&info.name).map_err(|e| (e, None))?;
    Ok((deleted.name, Uuid::from_bytes(deleted.id)))
}
