//! Read-only views for DescribeTransactions (v0) and ListTransactions (v0-1), and tests.
//!
//! Mental model: a view is a copy of one id's metadata at the time of the call; nothing here
//! changes the shard. ListTransactions filters as Kafka's `listTransactionStates`: by producer
//! id, by state name (unknown names are reported back by [`unknown_state_filters`] and match
//! nothing), and (v1) by duration: with a filter `d >= 0`, only transactions started more than
//! `d` ms ago (Kafka compares `now - start > d`, so `Empty`'s start of -1 always passes).

use skiff_protocol::{
    DescribeTransactionsResponseTopicData, DescribeTransactionsResponseTransactionState,
    ListTransactionsResponseTransactionState,
};
use skiff_types::ErrorCode;

use crate::metadata::{TxnMetadata, TxnState};
use crate::shard::TxnShard;

/// One transactional id as DescribeTransactions shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxnView {
    pub transactional_id: String,
    pub state: TxnState,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub timeout_ms: i32,
    /// -1 when no transaction has started since the last InitProducerId.
    pub start_timestamp_ms: i64,
    pub last_update_timestamp_ms: i64,
    /// The transaction's partitions, sorted (empty unless `Ongoing` / `Prepare*`).
    pub partitions: Vec<(String, i32)>,
}

impl TxnView {
    fn of(id: &str, m: &TxnMetadata) -> Self {
        Self {
            transactional_id: id.to_string(),
            state: m.state,
            producer_id: m.producer_id,
            producer_epoch: m.producer_epoch,
            timeout_ms: m.timeout_ms,
            start_timestamp_ms: m.start_ms,
            last_update_timestamp_ms: m.last_update_ms,
            partitions: m.partitions.iter().cloned().collect(),
        }
    }

    /// The DescribeTransactions entry (error NONE), partitions grouped by topic.
    pub fn to_describe_state(&self) -> DescribeTransactionsResponseTransactionState {
        let mut topics: Vec<DescribeTransactionsResponseTopicData> = Vec::new();
        for (topic, p) in &self.partitions {
            match topics.last_mut() {
                Some(t) if t.topic == *topic => t.partitions.push(*p),
                _ => topics.push(DescribeTransactionsResponseTopicData {
                    topic: topic.clone(),
                    partitions: vec![*p],
                }),
            }
        }
        DescribeTransactionsResponseTransactionState {
            error_code: ErrorCode::None.code(),
            transactional_id: self.transactional_id.clone(),
            transaction_state: self.state.name().to_string(),
            transaction_timeout_ms: self.timeout_ms,
            transaction_start_time_ms: self.start_timestamp_ms,
            producer_id: self.producer_id,
            producer_epoch: self.producer_epoch,
            topics,
        }
    }
}

/// One transactional id as ListTransactions shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxnListing {
    pub transactional_id: String,
    pub producer_id: i64,
    pub state: TxnState,
}

impl TxnListing {
    pub fn to_list_state(&self) -> ListTransactionsResponseTransactionState {
        ListTransactionsResponseTransactionState {
            transactional_id: self.transactional_id.clone(),
            producer_id: self.producer_id,
            transaction_state: self.state.name().to_string(),
        }
    }
}

/// The state filters that name no state (ListTransactions' `unknown_state_filters`).
pub fn unknown_state_filters(states: &[String]) -> Vec<String> {
    states
        .iter()
        .filter(|s| TxnState::from_name(s).is_none())
        .cloned()
        .collect()
}

impl TxnShard {
    /// `transactional_id`'s current state, `None` if this shard does not hold it.
    pub fn describe(&self, transactional_id: &str) -> Option<TxnView> {
        self.txns
            .get(transactional_id)
            .map(|m| TxnView::of(transactional_id, m))
    }

    /// The DescribeTransactions entry for `transactional_id`: its state, INVALID_REQUEST for
    /// an empty id, TRANSACTIONAL_ID_NOT_FOUND when this shard does not hold it.
    pub fn describe_state(
        &self,
        transactional_id: &str,
    ) -> DescribeTransactionsResponseTransactionState {
        let error = |code: ErrorCode| DescribeTransactionsResponseTransactionState {
            error_code: code.code(),
            transactional_id: transactional_id.to_string(),
            ..Default::default()
        };
        if transactional_id.is_empty() {
            return error(ErrorCode::InvalidRequest);
        }
        match self.describe(transactional_id) {
            Some(v) => v.to_describe_state(),
            None => error(ErrorCode::TransactionalIdNotFound),
        }
    }

    /// ListTransactions v0 (no duration filter): ids matching every non-empty filter, sorted.
    pub fn list(&self, states: &[String], producer_ids: &[i64], now_ms: i64) -> Vec<TxnListing> {
        self.list_with_duration(states, producer_ids, -1, now_ms)
    }

    /// ListTransactions v1: as [`TxnShard::list`], plus `duration_filter_ms` (-1 = none).
    pub fn list_with_duration(
        &self,
        states: &[String],
        producer_ids: &[i64],
        duration_filter_ms: i64,
        now_ms: i64,
    ) -> Vec<TxnListing> {
        let wanted: Vec<TxnState> = states
            .iter()
            .filter_map(|s| TxnState::from_name(s))
            .collect();
        self.txns
            .iter()
            .filter(|(_, m)| m.state != TxnState::Dead)
            .filter(|(_, m)| producer_ids.is_empty() || producer_ids.contains(&m.producer_id))
            .filter(|(_, m)| states.is_empty() || wanted.contains(&m.state))
            .filter(|(_, m)| {
                duration_filter_ms < 0 || now_ms.saturating_sub(m.start_ms) > duration_filter_ms
            })
            .map(|(id, m)| TxnListing {
                transactional_id: id.clone(),
                producer_id: m.producer_id,
                state: m.state,
            })
            .collect()
    }
}
