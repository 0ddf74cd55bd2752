//! The extension point of `GET /api/v1/partitions/{topic}/{partition}`: per-partition
//! sections contributed by subsystems: producer state, the log cleaner (issue 7), delayed
//! delivery (issue 8), integrity (quarantined ranges and scrub progress, issue 12),
//! replication (role, ISR, followers' lag, issue 17) and transactions (the LSO and the open
//! transactions, issue 18).
//!
//! Mental model: [`SECTION_PROVIDERS`] is a static list of plain functions. For a partition
//! the broker hosts, the detail handler calls each provider in list order and puts every
//! `Some((name, value))` under `"sections": {name: value}`; `None` means "nothing to say for
//! this partition" (e.g. the topic is not compacted) and the section is left out. The CLI
//! prints every section it gets, so a new provider shows up in `skiff admin partition` too.
//!
//! Adding a section (one line in the list below plus the function, anywhere):
//!
//! ```ignore
//! pub fn cleaner(broker: &Broker, tp: &TopicPartition) -> Option<(&'static str, Value)> {
//!     let log = broker.replicas.log_manager().get(tp)?;
//!     let state = log.lock().cleaner_state();      // copy under the lock, then release it
//!     Some(("cleaner", serde_json::to_value(state).ok()?))
//! }
//! // SECTION_PROVIDERS: &[producers, crate::cleaner::admin_section]
//! ```
//!
//! Rules for a provider: it runs on the blocking pool (it may take a partition's log lock,
//! briefly, and copy what it needs; never hold a lock while serialising or doing I/O); it
//! must not panic; its name is unique in the list (a test checks it) and stable (scripts key
//! on it); its value is a JSON object with snake_case fields and bounded size (cap long lists
//! and say so, as `producers` does with `truncated`).

use serde_json::{Value, json};
use skiff_types::TopicPartition;

use crate::broker::Broker;

/// One section provider: `Some((section name, JSON document))` or `None` to leave it out.
pub type SectionProvider = fn(&Broker, &TopicPartition) -> Option<(&'static str, Value)>;

/// Every section provider, in the order they run. Add one line per subsystem.
pub static SECTION_PROVIDERS: &[SectionProvider] = &[
    producers,
    cleaner,
    delivery,
    integrity,
    replication,
    transactions,
];

/// The most producers the `producers` section lists (the count is always exact).
pub const PRODUCERS_LISTED_MAX: usize = 100;

/// `producers`: the partition's idempotent-producer state (what DescribeProducers reports):
/// `{"active": N, "producers": [{producer_id, producer_epoch, last_sequence, last_timestamp,
/// current_txn_start_offset}...], "truncated": bool}`, in producer-id order.
pub fn producers(broker: &Broker, tp: &TopicPartition) -> Option<(&'static str, Value)> {
    let log = broker.replicas.log_manager().get(tp)?;
    let all = log.lock().active_producers();
    let listed: Vec<Value> = all
        .iter()
        .take(PRODUCERS_LISTED_MAX)
        .map(|p| {
            json!({
                "producer_id": p.producer_id,
                "producer_epoch": p.producer_epoch,
                "last_sequence": p.last_sequence,
                "last_timestamp": p.last_timestamp,
                "current_txn_start_offset": p.current_txn_start_offset,
            })
        })
        .collect();
    Some((
        "producers",
        json!({
            "active": all.len(),
            "producers": listed,
            "truncated": all.len() > PRODUCERS_LISTED_MAX,
        }),
    ))
}

/// `cleaner`: the log cleaner's state for a compacted partition (issue 7), as
/// [`skiff_compaction::CleanerStatus`]: dirty ratio, first dirty offset, strategy, last clean
/// time and duration, cleans, bytes cleaned/read/written, records and tombstones removed,
/// invalid header values, last error. Left out until the cleaner has looked at the log.
pub fn cleaner(broker: &Broker, tp: &TopicPartition) -> Option<(&'static str, Value)> {
    let status = broker.cleaner_status(tp)?;
    Some(("cleaner", serde_json::to_value(status).ok()?))
}

/// `delivery`: delayed delivery (issue 8) on topics with `delivery.delay.enable=true`:
/// `{"enabled", "pending_batches", "next_due_ms", "delivery_stable_offset", "high_watermark",
/// "index_entries"}` ([`skiff_storage::DeliveryStatus`]); left out on other topics unless
/// entries from an earlier enabled period are still pending.
pub fn delivery(broker: &Broker, tp: &TopicPartition) -> Option<(&'static str, Value)> {
    let status = broker.delivery_status(tp)?;
    if !status.enabled && status.pending_batches == 0 {
        return None;
    }
    Some(("delivery", serde_json::to_value(status).ok()?))
}

/// `integrity`: corruption handling (issue 12), as [`skiff_storage::integrity::IntegrityStatus`]:
/// `{"quarantined": [{start_offset, end_offset, segment, position, len, reason, found_by}...],
/// "quarantined_ranges", "quarantined_records", "truncated", "sealed_segments", "scrub":
/// {last_scrub_ms, segments_verified, corrupt_batches_found, bytes_verified}}`. Always present.
pub fn integrity(broker: &Broker, tp: &TopicPartition) -> Option<(&'static str, Value)> {
    let log = broker.replicas.log_manager().get(tp)?;
    let status = log.lock().integrity_status();
    Some(("integrity", serde_json::to_value(status).ok()?))
}

/// `replication` (issue 17): role, leader, epochs, replicas, ISR, effective min ISR, HW and
/// log end; on the leader each follower's log end, lag, last fetch and last caught-up time;
/// `under_replicated` and `under_min_isr`.
pub fn replication(broker: &Broker, tp: &TopicPartition) -> Option<(&'static str, Value)> {
    let view = broker.replicas.replication_view(tp)?;
    Some(("replication", serde_json::to_value(view).ok()?))
}

/// The most open transactions the `transactions` section lists (the count is exact).
pub const OPEN_TXNS_LISTED_MAX: usize = 100;

/// `transactions` (issue 18): `{"last_stable_offset", "first_unstable_offset" (null when no
/// transaction is unstable), "open": N, "open_transactions": [{producer_id, producer_epoch,
/// first_offset}...], "truncated": bool}`; left out while the partition has never had an
/// unstable transaction to show (no open one and the LSO equals the high watermark).
pub fn transactions(broker: &Broker, tp: &TopicPartition) -> Option<(&'static str, Value)> {
    let log = broker.replicas.log_manager().get(tp)?;
    let (hw, first_unstable, open) = {
        let l = log.lock();
        (
            l.high_watermark(),
            l.first_unstable_offset(),
            l.open_transactions(),
        )
    };
    if first_unstable.is_none() && open.is_empty() {
        return None;
    }
    let lso = first_unstable.map_or(hw, |u| u.min(hw));
    let listed: Vec<Value> = open
        .iter()
        .take(OPEN_TXNS_LISTED_MAX)
        .map(|t| {
            json!({
                "producer_id": t.producer_id,
                "producer_epoch": t.producer_epoch,
                "first_offset": t.first_offset,
            })
        })
        .collect();
    Some((
        "transactions",
        json!({
            "last_stable_offset": lso,
            "first_unstable_offset": first_unstable,
            "open": open.len(),
            "open_transactions": listed,
            "truncated": open.len() > OPEN_TXNS_LISTED_MAX,
        }),
    ))
}

/// Runs every provider for one partition.
pub fn collect(broker: &Broker, tp: &TopicPartition) -> std::collections::BTreeMap<String, Value> {
    SECTION_PROVIDERS
        .iter()
        .filter_map(|provider| provider(broker, tp))
        .map(|(name, value)| (name.to_string(), value))
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::sync::Arc;

    use super::*;
    use crate::settings::{ServerSettings, StorageTopicConfigs};

    fn broker(dir: &std::path::Path) -> Arc<Broker> {
        let (_tx, rx) = tokio::sync::watch::channel(false);
        Broker::open(
            ServerSettings::with_log_dir(dir),
            Arc::new(StorageTopicConfigs::default()),
            rx,
        )
        .unwrap()
    }

    #[test]
    fn section_names_are_unique() {
        let dir = tempfile::tempdir().unwrap();
        let b = broker(dir.path());
        b.create_topic("t", 1, Default::default()).unwrap();
        let tp = TopicPartition::new("t", 0);
        let mut names = BTreeSet::new();
        for p in SECTION_PROVIDERS {
            if let Some((name, _)) = p(&b, &tp) {
                assert!(names.insert(name), "duplicate section {name}");
            }
        }
    }

    #[test]
    fn producers_section_counts_the_producers_of_a_partition() {
        let dir = tempfile::tempdir().unwrap();
        let b = broker(dir.path());
        b.create_topic("t", 1, Default::default()).unwrap();
        let tp = TopicPartition::new("t", 0);
        let sections = collect(&b, &tp);
        assert_eq!(
            sections.get("producers"),
            Some(&json!({"active": 0, "producers": [], "truncated": false}))
        );
        let log = b.replicas.log_manager().get(&tp).unwrap();
        let mut builder = skiff_record::BatchBuilder::new(skiff_record::BatchOptions {
            producer_id: 7,
            producer_epoch: 0,
            base_sequence: 0,
            ..skiff_record::BatchOptions::default()
        });
        builder.append(1_700_000_000_000, None, Some(b"v"), &[]);
        let mut batch = builder.build().unwrap();
        log.lock()
            .append_as_leader(&mut batch, 0, b.now_ms())
            .unwrap();
        let v = &collect(&b, &tp)["producers"];
        assert_eq!(v["active"], 1);
        assert_eq!(v["producers"][0]["producer_id"], 7);
        assert_eq!(v["producers"][0]["last_sequence"], 0);
        assert!(
            collect(&b, &TopicPartition::new("t", 1)).is_empty(),
            "no section for a partition the broker does not host"
        );
    }

    #[test]
    fn transactions_section_shows_the_open_transaction_and_the_lso() {
        let dir = tempfile::tempdir().unwrap();
        let b = broker(dir.path());
        b.create_topic("t", 1, Default::default()).unwrap();
        let tp = TopicPartition::new("t", 0);
        assert!(
            !collect(&b, &tp).contains_key("transactions"),
            "nothing unstable yet"
        );
        let log = b.replicas.log_manager().get(&tp).unwrap();
        let mut plain = skiff_record::BatchBuilder::new(skiff_record::BatchOptions::default());
        plain.append(1_700_000_000_000, None, Some(b"p"), &[]);
        let mut plain = plain.build().unwrap();
        let mut txn = skiff_record::BatchBuilder::new(skiff_record::BatchOptions {
            producer_id: 9,
            producer_epoch: 2,
            base_sequence: 0,
            is_transactional: true,
            ..skiff_record::BatchOptions::default()
        });
        txn.append(1_700_000_000_000, None, Some(b"t"), &[]);
        let mut txn = txn.build().unwrap();
        {
            let mut l = log.lock();
            l.append_as_leader(&mut plain, 0, b.now_ms()).unwrap();
            l.append_as_leader(&mut txn, 0, b.now_ms()).unwrap();
            l.set_high_watermark(2);
        }
        let v = &collect(&b, &tp)["transactions"];
        assert_eq!(
            v,
            &json!({"last_stable_offset": 1, "first_unstable_offset": 1, "open": 1,
                    "open_transactions": [{"producer_id": 9, "producer_epoch": 2, "first_offset": 1}],
                    "truncated": false})
        );
    }
}
