//! `producer.id.expiration.ms` reaches the log manager (issue 5): the default is Kafka's one
//! day, an override and the environment variable both replace it, and validation applies.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use skiff_config::{BrokerConfig, ConfigSources};

fn load(env: &[(&str, &str)], overrides: &[&str]) -> Result<BrokerConfig, String> {
    BrokerConfig::load(ConfigSources {
        file: None,
        env: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        overrides: overrides.iter().map(|s| s.to_string()).collect(),
    })
    .map_err(|e| e.to_string())
}

#[test]
fn default_is_one_day() {
    let m = load(&[], &[]).unwrap().log_manager_config();
    assert_eq!(m.producer_id_expiration_ms, 86_400_000);
}

#[test]
fn override_reaches_log_manager_config() {
    let m = load(&[], &["producer.id.expiration.ms=60000"])
        .unwrap()
        .log_manager_config();
    assert_eq!(m.producer_id_expiration_ms, 60_000);
}

#[test]
fn environment_variable_reaches_log_manager_config() {
    let m = load(&[("KAFKA_PRODUCER_ID_EXPIRATION_MS", "1234")], &[])
        .unwrap()
        .log_manager_config();
    assert_eq!(m.producer_id_expiration_ms, 1234);
}

#[test]
fn below_minimum_is_refused() {
    let e = load(&[], &["producer.id.expiration.ms=0"]).unwrap_err();
    assert!(e.contains("producer.id.expiration.ms"), "{e}");
}
