//! Skiff's configuration layer: Kafka-named broker and topic configuration.
//!
//! Mental model: [`keys`] is the catalogue (every Kafka 4.1 broker key and topic key, plus
//! Skiff's own), [`sources`] reads `--config` / `KAFKA_*` / `--override`, [`BrokerConfig`]
//! merges them with precedence and validates every value, [`dynamic`] holds the runtime layers
//! changed by AlterConfigs, and [`describe`] renders DescribeConfigs entries the way Kafka does.
//! Topic overrides are validated here and turned into storage's [`skiff_storage::LogConfig`].
//! [`group`] holds the per-group keys (ConfigResource GROUP) with their validation.
//! [`kraft`] checks the KRaft-mode keys (`process.roles`, voters, controller listeners) with
//! Kafka's rules and refuses quorums Skiff cannot run yet.
//! [`reference`] renders `docs/configuration.md` from the catalogue.
//! [`security`] refuses configuration that demands protection Skiff does not implement yet
//! (TLS/SASL listeners, an authorizer, ...), so nothing less safe than configured starts.
//! Everything is plain data or pure functions; callers own the locking.
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod broker;
pub mod describe;
pub mod dynamic;
pub mod error;
pub mod group;
pub mod keys;
pub mod kraft;
pub mod listeners;
pub mod reference;
pub mod security;
pub mod sources;
pub mod validate;

pub use broker::{BrokerConfig, DEFAULT_ADVERTISED, IgnoredSetting, SKIFF_SHIPPED_DEFAULTS};
pub use describe::{ConfigSource, DescribeEntry, SynonymEntry};
pub use dynamic::{AlterTarget, DynamicConfigs, validate_alter, validate_alter_all};
pub use error::ConfigError;
pub use keys::{ConfigType, DynamicMode, KeySpec, Support};
pub use listeners::Listener;
pub use sources::{ConfigSources, Origin};
