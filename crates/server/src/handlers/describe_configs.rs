//! DescribeConfigs (32), v1-4: topic and broker configuration with sources and synonyms.
//!
//! Resources, as a Kafka 4 KRaft broker answers them (`ConfigHelper.describeConfigs`):
//! - TOPIC (2): every topic key with its effective value (override, else the broker-level
//!   default from the current dynamic/static layers, else Kafka's default). Invalid name ->
//!   INVALID_TOPIC_EXCEPTION with Kafka's message; unknown topic -> UNKNOWN_TOPIC_OR_PARTITION.
//! - BROKER (4) named with this node's id: every broker key; named "": the cluster-wide
//!   dynamic default layer (only the keys set there). Another id, or a name that is not a
//!   number -> INVALID_REQUEST with Kafka's message.
//! - GROUP (32): every group config key (`skiff_config::group`), set ones as GROUP_CONFIG,
//!   the others DEFAULT_CONFIG with the broker's value; any group id, existing or not, as
//!   Kafka; "" -> INVALID_REQUEST "Group name must not be empty".
//! - anything else (BROKER_LOGGER, CLIENT_METRICS, unknown) -> INVALID_REQUEST for that
//!   resource: Skiff has no runtime loggers or metrics subscriptions yet.
//!
//! Authorization (issue 19): DESCRIBE_CONFIGS per resource before anything else
//! ([`super::config_changes::config_authz`]: topic, group, or the cluster for broker-level
//! resources); refused -> that resource's Kafka code and message, no configs.
//!
//! `configuration_keys` null or empty means every key. Synonyms are returned only when asked
//! (v1+), documentation only when asked (v3+); `config_type` is filled for v3+. Sensitive
//! (password) values are never returned. The configuration comes from the broker's
//! [`crate::live_config::LiveConfig`]; a broker started without one (some tests) can describe
//! topics from its plain `TopicConfigs` only.

use skiff_auth::acl::AclOperation;
use skiff_config::{AlterTarget, DescribeEntry};
use skiff_protocol::{
    DescribeConfigsRequest, DescribeConfigsResource, DescribeConfigsResourceResult,
    DescribeConfigsResponse, DescribeConfigsResult, DescribeConfigsSynonym, ResponseBody,
};
use skiff_types::ErrorCode;

use super::config_changes::{
    RESOURCE_BROKER, RESOURCE_GROUP, RESOURCE_TOPIC, broker_config_for_groups, broker_target,
    config_authz, group_configs,
};
use super::{Reply, RequestContext};
use crate::broker::TopicError;
use crate::settings::TopicConfigEntry;

/// First version with `config_type` and `documentation`.
const DOCUMENTATION_MIN_VERSION: i16 = 3;

/// What to put in each entry.
#[derive(Clone, Copy)]
struct Detail {
    synonyms: bool,
    documentation: bool,
    config_type: bool,
}

pub fn handle(ctx: &RequestContext<'_>, req: DescribeConfigsRequest) -> Reply {
    let detail = Detail {
        synonyms: req.include_synonyms,
        documentation: req.include_documentation && ctx.api_version >= DOCUMENTATION_MIN_VERSION,
        config_type: ctx.api_version >= DOCUMENTATION_MIN_VERSION,
    };
    let authz = super::authz_ops::Checker::new(ctx);
    let results = req
        .resources
        .iter()
        .map(|r| {
            let allowed = config_authz(
                &authz,
                AclOperation::DescribeConfigs,
                r.resource_type,
                &r.resource_name,
            );
            let configs = allowed
                .and_then(|()| describe_one(ctx, r, detail))
                .map(|entries| {
                    entries
                        .into_iter()
                        .filter(|e| wanted(r, &e.name))
                        .collect::<Vec<_>>()
                });
            match configs {
                Ok(configs) => DescribeConfigsResult {
                    error_code: 0,
                    error_message: None,
                    resource_type: r.resource_type,
                    resource_name: r.resource_name.clone(),
                    configs,
                },
                Err(e) => DescribeConfigsResult {
                    error_code: e.code as i16,
                    error_message: (!e.message.is_empty()).then_some(e.message),
                    resource_type: r.resource_type,
                    resource_name: r.resource_name.clone(),
                    configs: Vec::new(),
                },
            }
        })
        .collect();
    Reply::Now(ResponseBody::DescribeConfigs(DescribeConfigsResponse {
        results,
        ..DescribeConfigsResponse::default()
    }))
}

fn wanted(r: &DescribeConfigsResource, name: &str) -> bool {
    match &r.configuration_keys {
        None => true,
        Some(keys) => keys.is_empty() || keys.iter().any(|k| k == name),
    }
}

fn describe_one(
    ctx: &RequestContext<'_>,
    r: &DescribeConfigsResource,
    detail: Detail,
) -> Result<Vec<DescribeConfigsResourceResult>, TopicError> {
    let broker = ctx.broker;
    let live = broker.topic_configs.live();
    match r.resource_type {
        RESOURCE_TOPIC => {
            skiff_metadata::validate_topic_name(&r.resource_name)
                .map_err(|e| TopicError::new(e.error_code(), e.to_string()))?;
            let image = broker.image();
            let Some(topic) = image.topic(&r.resource_name) else {
                return Err(TopicError::new(ErrorCode::UnknownTopicOrPartition, ""));
            };
            Ok(match live {
                Some(live) => render(live.current().describe_topic(&topic.configs), detail),
                None => plain(broker.topic_configs.describe(&topic.configs)),
            })
        }
        RESOURCE_BROKER => {
            let target = broker_target(&r.resource_name, broker.node_id(), true)?;
            let Some(live) = live else {
                return Err(TopicError::new(
                    ErrorCode::InvalidRequest,
                    "this broker runs without a dynamic configuration",
                ));
            };
            let cfg = live.current();
            Ok(match target {
                AlterTarget::ClusterDefault => render(cfg.describe_cluster_default(), detail),
                _ => render(cfg.describe_broker(), detail),
            })
        }
        RESOURCE_GROUP => {
            if r.resource_name.is_empty() {
                return Err(TopicError::new(
                    ErrorCode::InvalidRequest,
                    "Group name must not be empty",
                ));
            }
            let cfg = broker_config_for_groups(broker)?;
            let set = group_configs(broker, &r.resource_name);
            Ok(render(
                skiff_config::group::describe_group(&cfg, &set),
                detail,
            ))
        }
        other => Err(TopicError::new(
            ErrorCode::InvalidRequest,
            format!(
                "Unsupported resource type {other}: Skiff describes TOPIC (2), BROKER (4) and GROUP (32) configs"
            ),
        )),
    }
}

fn render(entries: Vec<DescribeEntry>, detail: Detail) -> Vec<DescribeConfigsResourceResult> {
    entries
        .into_iter()
        .map(|e| DescribeConfigsResourceResult {
            name: e.name,
            value: if e.sensitive { None } else { e.value },
            read_only: e.read_only,
            config_source: e.source.id(),
            is_sensitive: e.sensitive,
            synonyms: if detail.synonyms {
                e.synonyms
                    .into_iter()
                    .map(|s| DescribeConfigsSynonym {
                        name: s.name,
                        value: if e.sensitive { None } else { s.value },
                        source: s.source.id(),
                    })
                    .collect()
            } else {
                Vec::new()
            },
            config_type: if detail.config_type {
                e.config_type.describe_id()
            } else {
                0
            },
            documentation: detail.documentation.then(|| e.documentation.to_string()),
        })
        .collect()
}

/// Entries of a broker without a live configuration: no synonyms, types or documentation.
fn plain(entries: Vec<TopicConfigEntry>) -> Vec<DescribeConfigsResourceResult> {
    entries
        .into_iter()
        .map(|e| DescribeConfigsResourceResult {
            name: e.name,
            value: if e.sensitive { None } else { e.value },
            read_only: e.read_only,
            config_source: e.source,
            is_sensitive: e.sensitive,
            synonyms: Vec::new(),
            config_type: 0,
            documentation: None,
        })
        .collect()
}
