//! Producer ids in a cluster (issue 16), as Kafka's `RPCProducerIdManager` hands them out: a
//! broker that is not the active controller serves InitProducerId from a block of ids it got
//! from the controller with AllocateProducerIds (its broker id and epoch; the block is a
//! `ProducerIdsRecord` in the metadata log, so no id is issued twice cluster-wide), and asks
//! for the next block when it runs out. The active controller's own broker takes ids from the
//! store's block directly (`MetadataStore::allocate_producer_id`).
//!
//! Invariants: one block request in flight per broker (the others wait for it); a block is
//! used only after the controller committed it; before this broker has registered (no epoch)
//! or when no controller answers, InitProducerId gets COORDINATOR_LOAD_IN_PROGRESS, which
//! clients retry, as Kafka's broker answers while its block is pending.

use std::ops::Range;
use std::sync::Arc;

use parking_lot::Mutex;
use skiff_protocol::{AllocateProducerIdsRequest, ResponseBody};
use skiff_types::ErrorCode;

use crate::broker::Broker;

/// This broker's current block and its registration epoch.
#[derive(Debug, Default)]
pub struct ProducerIdBlocks {
    block: Mutex<Range<i64>>,
    /// The broker epoch of this node's current registration (`None`: not registered).
    pub registered_epoch: Mutex<Option<i64>>,
    fetching: tokio::sync::Mutex<()>,
}

impl ProducerIdBlocks {
    fn take(&self) -> Option<i64> {
        let mut b = self.block.lock();
        if b.is_empty() {
            return None;
        }
        let id = b.start;
        b.start += 1;
        Some(id)
    }
}

/// The next producer id for an InitProducerId on a broker that is not the controller.
pub async fn next_producer_id(broker: &Arc<Broker>) -> Result<i64, ErrorCode> {
    let blocks = &broker.producer_ids;
    if let Some(id) = blocks.take() {
        return Ok(id);
    }
    let _turn = blocks.fetching.lock().await;
    if let Some(id) = blocks.take() {
        return Ok(id);
    }
    let Some(epoch) = *blocks.registered_epoch.lock() else {
        return Err(ErrorCode::CoordinatorLoadInProgress);
    };
    let request = AllocateProducerIdsRequest {
        broker_id: broker.node_id(),
        broker_epoch: epoch,
    };
    match crate::cluster::call_controller(broker, request.into()).await {
        Ok(ResponseBody::AllocateProducerIds(r)) if r.error_code == 0 && r.producer_id_len > 0 => {
            let start = r.producer_id_start;
            let end = start.saturating_add(i64::from(r.producer_id_len));
            tracing::info!(start, end, "producer id block from the controller");
            *blocks.block.lock() = (start + 1)..end;
            Ok(start)
        }
        Ok(ResponseBody::AllocateProducerIds(r)) => {
            let code = ErrorCode::from_code(r.error_code);
            tracing::warn!(?code, "AllocateProducerIds refused");
            Err(ErrorCode::CoordinatorLoadInProgress)
        }
        Ok(other) => {
            tracing::warn!(answer = ?other.api_key(), "AllocateProducerIds: unexpected answer");
            Err(ErrorCode::CoordinatorLoadInProgress)
        }
        Err(e) => {
            tracing::warn!(error = %e, "AllocateProducerIds: no controller answered");
            Err(ErrorCode::CoordinatorLoadInProgress)
        }
    }
}
