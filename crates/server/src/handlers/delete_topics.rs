//! DeleteTopics (20), v1-6: by name (v1-5 `topic_names`), by name or id (v6 `topics`).
//!
//! Deletes the topic from metadata (durable) and then its partition logs. Unknown names ->
//! UNKNOWN_TOPIC_OR_PARTITION, unknown ids -> UNKNOWN_TOPIC_ID; a v6 entry naming both a name
//! and an id, or neither -> INVALID_REQUEST. Error messages from v5.

use skiff_protocol::{
    DeletableTopicResult, DeleteTopicsRequest, DeleteTopicsResponse, ResponseBody,
};
use skiff_types::ErrorCode;
use uuid::Uuid;

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
    let responses = targets
        .into_iter()
        .map(|(name, id)| {
            let result = delete_one(ctx, name.as_deref(), id);
            let (name, id, error) = match result {
                Ok((name, id)) => (Some(name), id, None),
                Err(e) => (name, id, Some(e)),
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

fn delete_one(
    ctx: &RequestContext<'_>,
    name: Option<&str>,
    id: Uuid,
) -> Result<(String, Uuid), TopicError> {
    let image = ctx.broker.image();
    let info = match (name, id.is_nil()) {
        (Some(n), true) => image.topic(n).ok_or_else(|| {
            TopicError::new(
                ErrorCode::UnknownTopicOrPartition,
                "This server does not host this topic-partition.",
            )
        })?,
        (None, false) => image.topic_by_id(id.as_bytes()).ok_or_else(|| {
            TopicError::new(
                ErrorCode::UnknownTopicId,
                "This server does not host this topic ID.",
            )
        })?,
        _ => {
            return Err(TopicError::new(
                ErrorCode::InvalidRequest,
                "Each topic must be named by exactly one of a name or an id.",
            ));
        }
    };
    let deleted = ctx.broker.delete_topic(&info.name)?;
    Ok((deleted.name, Uuid::from_bytes(deleted.id)))
}
