//! InitProducerId (22), v0-5, for idempotent (non-transactional) producers.
//!
//! With a null `transactional_id` Kafka always hands out a fresh producer id with epoch 0
//! (even when the request carries an old id/epoch, v3+). Ids come from blocks recorded in the
//! metadata log, so they are never reused after a restart. In a cluster a broker that is not
//! the active controller takes them from a block it got with AllocateProducerIds
//! (`crate::producer_ids`), as Kafka's brokers do. Transactional ids need the
//! transaction coordinator (a later issue): refused with INVALID_REQUEST for now.

use skiff_protocol::{InitProducerIdRequest, InitProducerIdResponse, ResponseBody};
use skiff_types::ErrorCode;

use super::{Reply, RequestContext};

pub fn handle(ctx: &RequestContext<'_>, req: InitProducerIdRequest) -> Reply {
    if req.transactional_id.is_none()
        && ctx.broker.quorum.is_some()
        && !crate::cluster::is_controller(ctx.broker)
    {
        let broker = std::sync::Arc::clone(ctx.broker);
        return Reply::Later(Box::pin(async move {
            let response = match crate::producer_ids::next_producer_id(&broker).await {
                Ok(id) => InitProducerIdResponse {
                    error_code: 0,
                    producer_id: id,
                    producer_epoch: 0,
                    ..InitProducerIdResponse::default()
                },
                Err(code) => error(code),
            };
            ResponseBody::InitProducerId(response)
        }));
    }
    let response = if req.transactional_id.is_some() {
        error(ErrorCode::InvalidRequest)
    } else {
        match ctx.broker.metadata.allocate_producer_id() {
            Ok(id) => InitProducerIdResponse {
                error_code: 0,
                producer_id: id,
                producer_epoch: 0,
                ..InitProducerIdResponse::default()
            },
            Err(e) => {
                tracing::error!(error = %e, "producer id allocation failed");
                error(ErrorCode::CoordinatorNotAvailable)
            }
        }
    };
    Reply::Now(ResponseBody::InitProducerId(response))
}

fn error(code: ErrorCode) -> InitProducerIdResponse {
    InitProducerIdResponse {
        error_code: code as i16,
        producer_id: -1,
        producer_epoch: -1,
        ..InitProducerIdResponse::default()
    }
}
