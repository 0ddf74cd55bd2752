//! Corruption handling (issue 12): starts the background log scrubber
//! ([`skiff_storage::integrity::scrubber::Scrubber`]) over the broker's logs.
//!
//! Mental model: one std thread of its own (nice 10, never a tokio worker). Its settings
//! (`skiff.log.scrub.*`) are read from the live broker config at every round, so dynamic
//! changes apply at the next segment. What it finds is in each partition's `integrity` admin
//! section.

use std::sync::Arc;

use skiff_config::BrokerConfig;
use skiff_storage::integrity::scrubber::{ScrubSettings, Scrubber};

use crate::broker::Broker;

/// `skiff.log.scrub.*` from a broker config (defaults for anything unset or unparsable).
pub fn scrub_settings(config: Option<&BrokerConfig>) -> ScrubSettings {
    let d = ScrubSettings::default();
    let Some(c) = config else {
        return d;
    };
    ScrubSettings {
        enable: c.get_bool("skiff.log.scrub.enable").unwrap_or(d.enable),
        interval_ms: c
            .get_i64("skiff.log.scrub.interval.ms")
            .filter(|v| *v >= 0)
            .unwrap_or(d.interval_ms),
        io_max_bytes_per_second: c
            .value("skiff.log.scrub.io.max.bytes.per.second")
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|v| !v.is_nan() && *v > 0.0)
            .unwrap_or(d.io_max_bytes_per_second),
        backoff_ms: c
            .get_i64("skiff.log.scrub.backoff.ms")
            .and_then(|v| u64::try_from(v).ok())
            .unwrap_or(d.backoff_ms),
    }
}

/// Starts the scrubber over the broker's logs.
pub fn start(broker: &Arc<Broker>) -> Scrubber {
    let configs = Arc::clone(&broker.topic_configs);
    let settings = move || scrub_settings(configs.live().map(|l| l.current()).as_deref());
    Scrubber::start(Arc::clone(broker.replicas.log_manager()), settings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_from_broker_config() {
        assert_eq!(scrub_settings(None), ScrubSettings::default());
        let sources = skiff_config::ConfigSources {
            file: None,
            env: Vec::new(),
            overrides: [
                "skiff.log.scrub.enable=false",
                "skiff.log.scrub.interval.ms=1000",
                "skiff.log.scrub.io.max.bytes.per.second=1e6",
                "skiff.log.scrub.backoff.ms=50",
            ]
            .map(String::from)
            .to_vec(),
        };
        let c = BrokerConfig::load(sources).unwrap();
        let s = scrub_settings(Some(&c));
        assert_eq!(
            s,
            ScrubSettings {
                enable: false,
                interval_ms: 1000,
                io_max_bytes_per_second: 1e6,
                backoff_ms: 50
            }
        );
        // Defaults as the catalogue documents them.
        let d = BrokerConfig::load(skiff_config::ConfigSources::default()).unwrap();
        assert_eq!(scrub_settings(Some(&d)), ScrubSettings::default());
    }
}
