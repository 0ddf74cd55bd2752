//! `skiff config get|set`: dynamic topic and broker configs (`kafka-configs.sh --describe` /
//! `--alter`) through DescribeConfigs and IncrementalAlterConfigs.
//!
//! Mental model: a config resource is a topic (`--topic NAME`), one broker (`--broker ID`, asked
//! at that broker, as Kafka's admin client does) or the cluster-wide broker default
//! (`--broker-default`, resource name ""). `get` shows every key with its value and source
//! (DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG, ...) and the synonyms the value
//! was resolved from; `set` is one IncrementalAlterConfigs of SET and DELETE operations.
//! Invariants: a sensitive value is never printed (null in JSON, `[sensitive]` in text), even if
//! a broker sent it; `set` without any key is refused before anything is sent.

use std::collections::BTreeMap;
use std::process::ExitCode;

use serde::Serialize;
use skiff_protocol::{
    DescribeConfigsRequest, DescribeConfigsResource, IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsRequestAlterConfigsResource,
    IncrementalAlterConfigsRequestAlterableConfig,
};

use super::client::{Cluster, Conn, call_as};
use super::output::{emit, table};
use super::topic::{kafka_check, parse_kv};
use super::{CliError, CliResult, ClientArgs};

/// Kafka's ConfigResource type of a topic.
pub const RESOURCE_TOPIC: i8 = 2;
/// Kafka's ConfigResource type of a broker.
pub const RESOURCE_BROKER: i8 = 4;

/// Which resource a `config` command is about.
#[derive(clap::Args, Debug, Clone)]
#[group(required = true, multiple = false)]
pub struct Resource {
    /// A topic's configs.
    #[arg(long)]
    pub topic: Option<String>,
    /// One broker's configs (by node id).
    #[arg(long)]
    pub broker: Option<i32>,
    /// The cluster-wide dynamic broker defaults.
    #[arg(long)]
    pub broker_default: bool,
}

impl Resource {
    /// (resource type, resource name, the node to ask if it must be a specific one).
    fn target(&self) -> (i8, String, Option<i32>) {
        match (&self.topic, self.broker) {
            (Some(t), _) => (RESOURCE_TOPIC, t.clone(), None),
            (None, Some(id)) => (RESOURCE_BROKER, id.to_string(), Some(id)),
            (None, None) => (RESOURCE_BROKER, String::new(), None),
        }
    }
}

#[derive(clap::Subcommand, Debug)]
pub enum ConfigCommand {
    /// Show configs with their values, sources and synonyms (DescribeConfigs).
    Get {
        #[command(flatten)]
        resource: Resource,
        /// Only these keys (repeatable).
        #[arg(long = "key", short = 'k')]
        keys: Vec<String>,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Set and delete dynamic configs (IncrementalAlterConfigs).
    Set {
        #[command(flatten)]
        resource: Resource,
        /// `KEY=VALUE` pairs to set.
        #[arg(value_name = "KEY=VALUE")]
        pairs: Vec<String>,
        /// A key whose dynamic value is removed (repeatable).
        #[arg(long = "delete", short = 'd', value_name = "KEY")]
        delete: Vec<String>,
        #[command(flatten)]
        client: ClientArgs,
    },
}

/// A synonym a value was resolved from.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Synonym {
    pub name: String,
    pub value: Option<String>,
    pub source: String,
}

/// One config as `config get` shows it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ConfigEntry {
    pub name: String,
    /// `None` for a sensitive or unset value.
    pub value: Option<String>,
    pub source: String,
    pub read_only: bool,
    pub sensitive: bool,
    pub synonyms: Vec<Synonym>,
}

/// The result of `config get`.
#[derive(Debug, Serialize)]
pub struct Configs {
    pub resource_type: String,
    pub resource_name: String,
    pub configs: Vec<ConfigEntry>,
}

/// Kafka's ConfigSource names.
pub fn source_name(source: i8) -> &'static str {
    match source {
        1 => "DYNAMIC_TOPIC_CONFIG",
        2 => "DYNAMIC_BROKER_CONFIG",
        3 => "DYNAMIC_DEFAULT_BROKER_CONFIG",
        4 => "STATIC_BROKER_CONFIG",
        5 => "DEFAULT_CONFIG",
        6 => "DYNAMIC_BROKER_LOGGER_CONFIG",
        7 => "CLIENT_METRICS_CONFIG",
        8 => "GROUP_CONFIG",
        _ => "UNKNOWN",
    }
}

fn resource_type_name(t: i8) -> &'static str {
    match t {
        RESOURCE_TOPIC => "topic",
        RESOURCE_BROKER => "broker",
        _ => "unknown",
    }
}

/// DescribeConfigs of one resource (with synonyms) on `conn`, sorted by key.
pub fn describe_configs(
    conn: &mut Conn,
    resource_type: i8,
    name: &str,
    keys: Option<Vec<String>>,
) -> Result<Vec<ConfigEntry>, CliError> {
    let request = DescribeConfigsRequest {
        resources: vec![DescribeConfigsResource {
            resource_type,
            resource_name: name.into(),
            configuration_keys: keys,
        }],
        include_synonyms: true,
        include_documentation: false,
    };
    let response = call_as!(conn, request, DescribeConfigs)?;
    let what = describe_target(resource_type, name);
    let Some(r) = response.results.into_iter().next() else {
        return Err(CliError::Other(format!(
            "describing the configs of {what}: no result"
        )));
    };
    kafka_check(
        format!("describing the configs of {what}"),
        name,
        r.error_code,
        r.error_message,
    )?;
    let mut out: Vec<ConfigEntry> = r
        .configs
        .into_iter()
        .map(|c| {
            let sensitive = c.is_sensitive;
            ConfigEntry {
                name: c.name,
                value: if sensitive { None } else { c.value },
                source: source_name(c.config_source).into(),
                read_only: c.read_only,
                sensitive,
                synonyms: c
                    .synonyms
                    .into_iter()
                    .map(|s| Synonym {
                        name: s.name,
                        value: if sensitive { None } else { s.value },
                        source: source_name(s.source).into(),
                    })
                    .collect(),
            }
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

fn describe_target(resource_type: i8, name: &str) -> String {
    match (resource_type, name) {
        (RESOURCE_BROKER, "") => "the broker defaults".into(),
        (t, n) => format!("{} {n}", resource_type_name(t)),
    }
}

/// One IncrementalAlterConfigs of `set` (SET) and `delete` (DELETE) on a resource.
pub fn alter_configs(
    conn: &mut Conn,
    resource_type: i8,
    name: &str,
    set: &BTreeMap<String, String>,
    delete: &[String],
) -> Result<(), CliError> {
    let mut configs: Vec<IncrementalAlterConfigsRequestAlterableConfig> = set
        .iter()
        .map(|(k, v)| IncrementalAlterConfigsRequestAlterableConfig {
            name: k.clone(),
            config_operation: 0,
            value: Some(v.clone()),
        })
        .collect();
    configs.extend(
        delete
            .iter()
            .map(|k| IncrementalAlterConfigsRequestAlterableConfig {
                name: k.clone(),
                config_operation: 1,
                value: None,
            }),
    );
    let request = IncrementalAlterConfigsRequest {
        resources: vec![IncrementalAlterConfigsRequestAlterConfigsResource {
            resource_type,
            resource_name: name.into(),
            configs,
        }],
        validate_only: false,
    };
    let response = call_as!(conn, request, IncrementalAlterConfigs)?;
    let what = describe_target(resource_type, name);
    for r in response.responses {
        kafka_check(
            format!("altering the configs of {what}"),
            name,
            r.error_code,
            r.error_message,
        )?;
    }
    Ok(())
}

pub fn run(cmd: ConfigCommand) -> CliResult {
    match cmd {
        ConfigCommand::Get {
            resource,
            keys,
            client,
        } => get(&client, &resource, keys),
        ConfigCommand::Set {
            resource,
            pairs,
            delete,
            client,
        } => set(&client, &resource, &pairs, &delete),
    }
}

fn get(args: &ClientArgs, resource: &Resource, keys: Vec<String>) -> CliResult {
    let (rtype, name, node) = resource.target();
    let mut cluster = Cluster::connect(args)?;
    let conn = match node {
        Some(id) => cluster.node(id)?,
        None => cluster.any(),
    };
    let keys = (!keys.is_empty()).then_some(keys);
    let configs = describe_configs(conn, rtype, &name, keys)?;
    let result = Configs {
        resource_type: resource_type_name(rtype).into(),
        resource_name: name,
        configs,
    };
    emit(args.format, &result, render)?;
    Ok(ExitCode::SUCCESS)
}

fn render(c: &Configs) -> String {
    let rows: Vec<Vec<String>> = c
        .configs
        .iter()
        .map(|e| {
            let value = if e.sensitive {
                "[sensitive]".to_owned()
            } else {
                e.value.clone().unwrap_or_else(|| "null".into())
            };
            vec![e.name.clone(), value, e.source.clone()]
        })
        .collect();
    table(&["KEY", "VALUE", "SOURCE"], &rows)
}

fn set(args: &ClientArgs, resource: &Resource, pairs: &[String], delete: &[String]) -> CliResult {
    if pairs.is_empty() && delete.is_empty() {
        return Err(CliError::Usage(
            "nothing to change: give KEY=VALUE pairs and/or --delete KEY".into(),
        ));
    }
    let set: BTreeMap<String, String> = pairs
        .iter()
        .map(|s| parse_kv(s))
        .collect::<Result<_, _>>()?;
    let (rtype, name, node) = resource.target();
    let mut cluster = Cluster::connect(args)?;
    let conn = match node {
        Some(id) => cluster.node(id)?,
        None => cluster.any(),
    };
    alter_configs(conn, rtype, &name, &set, delete)?;
    let altered = super::topic::Altered {
        resource_type: resource_type_name(rtype).into(),
        resource_name: if name.is_empty() {
            "(default)".into()
        } else {
            name
        },
        set,
        deleted: delete.to_vec(),
    };
    emit(args.format, &altered, super::topic::render_altered)?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_have_kafka_names() {
        let cases = [
            (1, "DYNAMIC_TOPIC_CONFIG"),
            (2, "DYNAMIC_BROKER_CONFIG"),
            (3, "DYNAMIC_DEFAULT_BROKER_CONFIG"),
            (4, "STATIC_BROKER_CONFIG"),
            (5, "DEFAULT_CONFIG"),
            (6, "DYNAMIC_BROKER_LOGGER_CONFIG"),
            (0, "UNKNOWN"),
            (42, "UNKNOWN"),
        ];
        for (code, name) in cases {
            assert_eq!(source_name(code), name, "{code}");
        }
    }

    #[test]
    fn resources_name_their_target() {
        let r = |topic: Option<&str>, broker: Option<i32>, broker_default: bool| Resource {
            topic: topic.map(str::to_owned),
            broker,
            broker_default,
        };
        assert_eq!(
            r(Some("t"), None, false).target(),
            (RESOURCE_TOPIC, "t".into(), None)
        );
        assert_eq!(
            r(None, Some(3), false).target(),
            (RESOURCE_BROKER, "3".into(), Some(3))
        );
        assert_eq!(
            r(None, None, true).target(),
            (RESOURCE_BROKER, String::new(), None)
        );
        assert_eq!(describe_target(RESOURCE_BROKER, ""), "the broker defaults");
        assert_eq!(describe_target(RESOURCE_TOPIC, "t"), "topic t");
    }
}
