//! The one error type of this crate. Every variant's Display is a sentence that says what is
//! wrong and what to change, because it is printed verbatim on stderr at startup (exit 2) or
//! returned as the error message of DescribeConfigs/AlterConfigs/CreateTopics.

use skiff_types::ErrorCode;

/// A configuration problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A name Kafka does not know (and Skiff does not define).
    #[error("unknown configuration `{key}` (from {origin}){}", suggestion_text(.suggestion))]
    UnknownKey {
        key: String,
        origin: String,
        suggestion: Option<String>,
    },
    /// A topic-level name that is not a topic config.
    #[error("Unknown topic config name: {key}{}", suggestion_text(.suggestion))]
    UnknownTopicKey {
        key: String,
        suggestion: Option<String>,
    },
    /// A value that does not parse or is out of range (Kafka's wording).
    #[error("Invalid value {value} for configuration {key}: {reason}")]
    InvalidValue {
        key: String,
        value: String,
        reason: String,
    },
    /// A topic config combination that is inconsistent.
    #[error("{0}")]
    InvalidTopicConfig(String),
    /// A listener entry that is not `NAME://host:port`.
    #[error(
        "invalid listener `{entry}` in {key}: {reason}; use NAME://host:port, e.g. PLAINTEXT://127.0.0.1:9092 (empty host = all interfaces, port 0 = any free port)"
    )]
    BadListener {
        key: String,
        entry: String,
        reason: String,
    },
    /// The config file could not be read or parsed.
    #[error("cannot read config file {path}: {reason}")]
    File { path: String, reason: String },
    /// Two environment variables name one key with different values.
    #[error(
        "environment variables {first} and {second} both set `{key}` with different values; unset one of them"
    )]
    EnvConflict {
        key: String,
        first: String,
        second: String,
    },
    /// `--override` without `=`.
    #[error("malformed --override `{0}`: expected KEY=VALUE")]
    BadOverride(String),
    /// A KRaft-mode rule broken (Kafka's `KafkaConfig` / `QuorumConfig` wording), or a quorum
    /// shape Skiff refuses to run yet.
    #[error("{0}")]
    Kraft(String),
    /// AlterConfigs on keys that are read-only (Kafka's wording, plus the fix).
    #[error(
        "Cannot update these configs dynamically: Set({}); they are read-only: set them in the config file and restart the broker",
        .keys.join(", ")
    )]
    ReadOnly { keys: Vec<String> },
    /// AlterConfigs at the cluster default for per-broker keys (Kafka's wording).
    #[error(
        "Cannot update these configs at default cluster level, broker id must be specified: Set({})",
        .keys.join(", ")
    )]
    PerBrokerOnly { keys: Vec<String> },
}

fn suggestion_text(s: &Option<String>) -> String {
    match s {
        Some(s) => format!("; did you mean `{s}`?"),
        None => String::new(),
    }
}

impl ConfigError {
    /// The Kafka error code a request handler should answer with.
    pub fn error_code(&self) -> ErrorCode {
        match self {
            // KRaft brokers answer read-only / per-broker refusals with INVALID_REQUEST
            // (ConfigAdminManager wraps DynamicBrokerConfig's ConfigException, KAFKA-13609).
            ConfigError::ReadOnly { .. } | ConfigError::PerBrokerOnly { .. } => {
                ErrorCode::InvalidRequest
            }
            _ => ErrorCode::InvalidConfig,
        }
    }

    pub(crate) fn invalid(key: &str, value: &str, reason: impl Into<String>) -> Self {
        ConfigError::InvalidValue {
            key: key.to_string(),
            value: value.to_string(),
            reason: reason.into(),
        }
    }
}

impl From<skiff_storage::config::ConfigError> for ConfigError {
    fn from(e: skiff_storage::config::ConfigError) -> Self {
        ConfigError::InvalidTopicConfig(e.0)
    }
}
