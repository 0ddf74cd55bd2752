//! compaction (issue 7): starts the log cleaner ([`skiff_compaction::LogCleaner`]) for the
//! broker's logs.
//!
//! Mental model: the cleaner runs `log.cleaner.threads` std threads of its own (never the
//! tokio workers). Its broker settings (`log.cleaner.*`) are read from the live broker config
//! at every round, so dynamic changes apply at the next clean (the thread count is read once).
//! Per-topic settings come from each log's `LogConfig`, which AlterConfigs replaces in place.
//! The cleanable range stops below the partition's delivery stable offset (delayed delivery,
//! issue 8), which the cleaner reads from each log's clean view, so a batch not yet delivered
//! is never compacted. State per log is in [`crate::broker::Broker::cleaner_status`].

use std::sync::Arc;

use skiff_compaction::{CleanerSettings, LogCleaner};
use skiff_config::BrokerConfig;

use crate::broker::Broker;

/// `log.cleaner.*` from a broker config (Kafka defaults for anything unset or unparsable).
pub fn cleaner_settings(config: Option<&BrokerConfig>) -> CleanerSettings {
    let d = CleanerSettings::default();
    let Some(c) = config else {
        return d;
    };
    let f64_of = |k: &str, fallback: f64| {
        c.value(k)
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|v| !v.is_nan() && *v > 0.0)
            .unwrap_or(fallback)
    };
    CleanerSettings {
        enable: c.get_bool("log.cleaner.enable").unwrap_or(d.enable),
        threads: c
            .get_i64("log.cleaner.threads")
            .and_then(|v| usize::try_from(v).ok())
            .unwrap_or(d.threads),
        backoff_ms: c
            .get_i64("log.cleaner.backoff.ms")
            .and_then(|v| u64::try_from(v).ok())
            .unwrap_or(d.backoff_ms),
        dedupe_buffer_bytes: c
            .get_i64("log.cleaner.dedupe.buffer.size")
            .and_then(|v| usize::try_from(v).ok())
            .unwrap_or(d.dedupe_buffer_bytes),
        load_factor: f64_of("log.cleaner.io.buffer.load.factor", d.load_factor),
        io_max_bytes_per_second: f64_of(
            "log.cleaner.io.max.bytes.per.second",
            d.io_max_bytes_per_second,
        ),
    }
}

/// Starts the cleaner over the broker's logs.
pub fn start(broker: &Arc<Broker>) -> LogCleaner {
    let configs = Arc::clone(&broker.topic_configs);
    let settings = move || cleaner_settings(configs.live().map(|l| l.current()).as_deref());
    LogCleaner::start(
        Arc::clone(broker.replicas.log_manager()),
        Arc::clone(&broker.cleaner_stats),
        settings,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_from_broker_config() {
        assert_eq!(cleaner_settings(None), CleanerSettings::default());
        let sources = skiff_config::ConfigSources {
            file: None,
            env: Vec::new(),
            overrides: [
                "log.cleaner.threads=2",
                "log.cleaner.backoff.ms=100",
                "log.cleaner.dedupe.buffer.size=1048576",
                "log.cleaner.io.max.bytes.per.second=1e6",
            ]
            .map(String::from)
            .to_vec(),
        };
        let c = BrokerConfig::load(sources).unwrap();
        let s = cleaner_settings(Some(&c));
        assert_eq!(
            (s.threads, s.backoff_ms, s.dedupe_buffer_bytes),
            (2, 100, 1 << 20)
        );
        assert_eq!(s.io_max_bytes_per_second, 1e6);
        assert!(s.enable);
    }
}
