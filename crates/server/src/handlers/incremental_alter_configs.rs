//! IncrementalAlterConfigs (44), v0-1: per-key SET / DELETE / APPEND / SUBTRACT.
//!
//! Each resource's operations are applied to its current set (a topic's overrides, or one
//! dynamic broker layer: "" = the cluster-wide default, this node's id = this broker):
//! SET stores the value, DELETE removes the key (back to the inherited value), APPEND and
//! SUBTRACT edit a comma-separated LIST value, starting from the current value or, when unset,
//! the key's Kafka default. APPEND/SUBTRACT on a key that is not a LIST -> INVALID_CONFIG with
//! Kafka's message ("Can't APPEND to key K because its type is not LIST." for topics, "Config
//! value append is not allowed for config key: K" for brokers); an unknown operation id ->
//! INVALID_REQUEST; a null value on anything but DELETE -> INVALID_REQUEST. GROUP resources
//! (32) take SET and DELETE (no group key is a LIST). The resulting set
//! then goes through the shared validation, persistence and effect of
//! [`super::config_changes`]; `validate_only` changes nothing. Resources are independent.
//! Authorization (issue 19): after the duplicate check, ALTER_CONFIGS per resource
//! ([`super::config_changes::config_authz`]: BROKER and BROKER_LOGGER on the cluster).

use std::collections::BTreeMap;

use skiff_auth::acl::AclOperation;
use skiff_config::keys::{self, ConfigType};
use skiff_protocol::{
    IncrementalAlterConfigsRequest, IncrementalAlterConfigsRequestAlterConfigsResource,
    IncrementalAlterConfigsResponse, IncrementalAlterConfigsResponseAlterConfigsResourceResponse,
    ResponseBody,
};
use skiff_types::ErrorCode;

use super::config_changes::{
    Op, RESOURCE_BROKER, RESOURCE_GROUP, RESOURCE_TOPIC, alter_guard, apply_broker, apply_group,
    apply_topic, broker_layer, broker_target, check_group_name, check_keys, check_topic_name,
    config_authz, config_error, duplicate_resource_error, duplicate_resources, group_configs,
    list_op, require_live, topic_overrides,
};
use super::{Reply, RequestContext};
use crate::broker::TopicError;

/// One decoded operation.
struct KeyOp<'a> {
    name: &'a str,
    op: Op,
    value: Option<&'a str>,
}

pub fn handle(ctx: &RequestContext<'_>, req: IncrementalAlterConfigsRequest) -> Reply {
    let dups = duplicate_resources(
        req.resources
            .iter()
            .map(|r| (r.resource_type, r.resource_name.as_str())),
    );
    let authz = super::authz_ops::Checker::new(ctx);
    let responses = req
        .resources
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let result = if dups.contains(&i) {
                Err(duplicate_resource_error())
            } else {
                config_authz(
                    &authz,
                    AclOperation::AlterConfigs,
                    r.resource_type,
                    &r.resource_name,
                )
                .and_then(|()| alter_one(ctx, r, req.validate_only))
            };
            let (code, message) = match result {
                Ok(()) => (ErrorCode::None, None),
                Err(e) => {
                    tracing::info!(resource_type = r.resource_type, resource = %r.resource_name, error = %e.message, "IncrementalAlterConfigs refused");
                    (e.code, Some(e.message))
                }
            };
            IncrementalAlterConfigsResponseAlterConfigsResourceResponse {
                error_code: code as i16,
                error_message: message,
                resource_type: r.resource_type,
                resource_name: r.resource_name.clone(),
            }
        })
        .collect();
    Reply::Now(ResponseBody::IncrementalAlterConfigs(
        IncrementalAlterConfigsResponse {
            responses,
            ..IncrementalAlterConfigsResponse::default()
        },
    ))
}

fn decode_ops(
    r: &IncrementalAlterConfigsRequestAlterConfigsResource,
) -> Result<Vec<KeyOp<'_>>, TopicError> {
    let nulls: Vec<&str> = r
        .configs
        .iter()
        .filter(|c| c.value.is_none() && c.config_operation != 1)
        .map(|c| c.name.as_str())
        .collect();
    check_keys(r.configs.iter().map(|c| c.name.as_str()), &nulls)?;
    r.configs
        .iter()
        .map(|c| {
            let op = Op::from_id(c.config_operation).ok_or_else(|| {
                TopicError::new(
                    ErrorCode::InvalidRequest,
                    format!("Unknown operations type {}", c.config_operation),
                )
            })?;
            Ok(KeyOp {
                name: c.name.as_str(),
                op,
                value: c.value.as_deref(),
            })
        })
        .collect()
}

fn alter_one(
    ctx: &RequestContext<'_>,
    r: &IncrementalAlterConfigsRequestAlterConfigsResource,
    validate_only: bool,
) -> Result<(), TopicError> {
    let broker = ctx.broker;
    let ops = decode_ops(r)?;
    match r.resource_type {
        RESOURCE_TOPIC => {
            check_topic_name(&r.resource_name)?;
            let _guard = alter_guard(broker);
            let mut set = topic_overrides(broker, &r.resource_name);
            for o in &ops {
                apply_topic_op(&mut set, o)?;
            }
            apply_topic(broker, &r.resource_name, set, validate_only)
        }
        RESOURCE_BROKER => {
            let target = broker_target(&r.resource_name, broker.node_id(), false)?;
            let live = require_live(broker)?;
            let _guard = alter_guard(broker);
            let mut set = broker_layer(live, &target);
            let mut changed = Vec::with_capacity(ops.len());
            for o in &ops {
                apply_broker_op(&mut set, o, &target)?;
                changed.push((o.name.to_string(), set.get(o.name).cloned()));
            }
            apply_broker(broker, live, &target, set, &changed, validate_only)
        }
        RESOURCE_GROUP => {
            check_group_name(&r.resource_name)?;
            let _guard = alter_guard(broker);
            let mut set = group_configs(broker, &r.resource_name);
            for o in &ops {
                apply_group_op(&mut set, o)?;
            }
            apply_group(broker, &r.resource_name, set, validate_only)
        }
        other => Err(TopicError::new(
            ErrorCode::InvalidRequest,
            format!("Unknown resource type {other}"),
        )),
    }
}

/// SET / DELETE on a group key; no group key is a LIST, so APPEND / SUBTRACT are refused
/// with Kafka's message.
fn apply_group_op(set: &mut BTreeMap<String, String>, o: &KeyOp<'_>) -> Result<(), TopicError> {
    match o.op {
        Op::Set => {
            set.insert(o.name.to_string(), o.value.unwrap_or_default().to_string());
        }
        Op::Delete => {
            set.remove(o.name);
        }
        Op::Append | Op::Subtract => {
            return Err(TopicError::new(
                ErrorCode::InvalidConfig,
                format!(
                    "Can't {} to key {} because its type is not LIST.",
                    o.op.kafka_name(),
                    o.name
                ),
            ));
        }
    }
    Ok(())
}

fn apply_topic_op(set: &mut BTreeMap<String, String>, o: &KeyOp<'_>) -> Result<(), TopicError> {
    let value = o.value.unwrap_or_default();
    match o.op {
        Op::Set => {
            set.insert(o.name.to_string(), value.to_string());
        }
        Op::Delete => {
            set.remove(o.name);
        }
        Op::Append | Op::Subtract => {
            let spec = keys::topic_key(o.name).filter(|k| k.config_type == ConfigType::List);
            let Some(spec) = spec else {
                return Err(TopicError::new(
                    ErrorCode::InvalidConfig,
                    format!(
                        "Can't {} to key {} because its type is not LIST.",
                        o.op.kafka_name(),
                        o.name
                    ),
                ));
            };
            let old = set.get(o.name).map(String::as_str).or(spec.default);
            let new = list_op(old, o.op, value);
            set.insert(o.name.to_string(), new);
        }
    }
    Ok(())
}

fn apply_broker_op(
    set: &mut BTreeMap<String, String>,
    o: &KeyOp<'_>,
    target: &skiff_config::AlterTarget,
) -> Result<(), TopicError> {
    let value = o.value.unwrap_or_default();
    match o.op {
        Op::Set => {
            set.insert(o.name.to_string(), value.to_string());
        }
        Op::Delete => {
            set.remove(o.name);
        }
        Op::Append | Op::Subtract => {
            let Some(spec) = keys::broker_key(o.name) else {
                // Unknown key: the config layer's message (with a did-you-mean).
                return Err(skiff_config::validate_alter(target, o.name, Some(value))
                    .err()
                    .map(|e| config_error(&e))
                    .unwrap_or_else(|| {
                        TopicError::new(
                            ErrorCode::InvalidConfig,
                            format!("Unknown config name: {}", o.name),
                        )
                    }));
            };
            if spec.config_type != ConfigType::List {
                let verb = if o.op == Op::Append {
                    "append"
                } else {
                    "subtract"
                };
                return Err(TopicError::new(
                    ErrorCode::InvalidConfig,
                    format!(
                        "Config value {verb} is not allowed for config key: {}",
                        o.name
                    ),
                ));
            }
            let old = set.get(o.name).map(String::as_str).or(spec.default);
            let new = list_op(old, o.op, value);
            set.insert(o.name.to_string(), new);
        }
    }
    Ok(())
}
