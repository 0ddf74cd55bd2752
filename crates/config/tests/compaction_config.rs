//! compaction (issue 7): topic and broker compaction keys reach storage's `LogConfig`, with
//! KIP-280 broker defaults and Kafka's validation messages.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use skiff_config::{BrokerConfig, ConfigSources};
use skiff_storage::CompactionStrategy;

fn broker(overrides: &[&str]) -> BrokerConfig {
    BrokerConfig::load(ConfigSources {
        file: None,
        env: Vec::new(),
        overrides: overrides.iter().map(|s| s.to_string()).collect(),
    })
    .unwrap()
}

fn topic(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn broker_defaults_and_topic_overrides_reach_the_log_config() {
    let b = broker(&[
        "log.cleaner.compaction.strategy=timestamp",
        "log.cleaner.min.cleanable.ratio=0.2",
        "log.cleaner.delete.retention.ms=1000",
        "log.cleaner.min.compaction.lag.ms=5",
        "log.cleaner.max.compaction.lag.ms=7000",
    ]);
    let c = b.topic_log_config(&BTreeMap::new()).unwrap();
    assert_eq!(c.compaction_strategy, CompactionStrategy::Timestamp);
    assert_eq!(
        (
            c.min_cleanable_dirty_ratio,
            c.delete_retention_ms,
            c.min_compaction_lag_ms,
            c.max_compaction_lag_ms
        ),
        (0.2, 1000, 5, 7000)
    );
    let c = b
        .topic_log_config(&topic(&[
            ("compaction.strategy", "header"),
            ("compaction.strategy.header", "version"),
            ("min.cleanable.dirty.ratio", "0.01"),
        ]))
        .unwrap();
    assert_eq!(c.compaction_header(), Some("version"));
    assert_eq!(c.min_cleanable_dirty_ratio, 0.01);
    let c = b
        .topic_log_config(&topic(&[("compaction.strategy", "header:ver")]))
        .unwrap();
    assert_eq!(c.compaction_header(), Some("ver"));
}

#[test]
fn invalid_compaction_configs_are_rejected_with_the_key_named() {
    let b = broker(&[]);
    for (k, v) in [
        ("compaction.strategy", "newest"),
        ("compaction.strategy", "header:"),
        ("min.cleanable.dirty.ratio", "1.5"),
        ("min.cleanable.dirty.ratio", "x"),
        ("max.compaction.lag.ms", "0"),
        ("delete.retention.ms", "-1"),
        ("min.compaction.lag.ms", "-1"),
    ] {
        let e = b.topic_log_config(&topic(&[(k, v)])).unwrap_err();
        assert!(e.to_string().contains(k), "{k}={v}: {e}");
    }
    let e = b
        .topic_log_config(&topic(&[("compaction.strategy", "header")]))
        .unwrap_err();
    assert!(e.to_string().contains("compaction.strategy.header"), "{e}");
}
