//! AlterConfigs (33), v0-2: the legacy, non-incremental config change.
//!
//! Each resource's configs REPLACE its whole set: for a topic, every override not named is
//! removed; for a BROKER resource ("" = the cluster-wide default, this node's id = this
//! broker), the named keys become the entire dynamic layer. Null values are refused (use
//! IncrementalAlterConfigs DELETE). Checks, validation, persistence and effect are the shared
//! rules of [`super::config_changes`]; `validate_only` runs every check and changes nothing.
//! Each resource succeeds or fails on its own.
//! Authorization (issue 19): after the duplicate check, ALTER_CONFIGS per resource
//! ([`super::config_changes::config_authz`]); BROKER_LOGGER is not authorized here (the
//! legacy API refuses it as Kafka's controller does).

use std::collections::BTreeMap;

use skiff_auth::acl::AclOperation;
use skiff_protocol::{
    AlterConfigsRequest, AlterConfigsRequestAlterConfigsResource, AlterConfigsResponse,
    AlterConfigsResponseAlterConfigsResourceResponse, ResponseBody,
};
use skiff_types::ErrorCode;

use super::config_changes::{
    RESOURCE_BROKER, RESOURCE_BROKER_LOGGER, RESOURCE_GROUP, RESOURCE_TOPIC, alter_guard,
    apply_broker, apply_group, apply_topic, broker_layer, broker_target, check_group_name,
    check_keys, check_topic_name, config_authz, duplicate_resource_error, duplicate_resources,
    require_live,
};
use super::{Reply, RequestContext};
use crate::broker::TopicError;

pub fn handle(ctx: &RequestContext<'_>, req: AlterConfigsRequest) -> Reply {
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
            } else if r.resource_type == RESOURCE_BROKER_LOGGER {
                alter_one(ctx, r, req.validate_only)
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
                    tracing::info!(resource_type = r.resource_type, resource = %r.resource_name, error = %e.message, "AlterConfigs refused");
                    (e.code, Some(e.message))
                }
            };
            AlterConfigsResponseAlterConfigsResourceResponse {
                error_code: code as i16,
                error_message: message,
                resource_type: r.resource_type,
                resource_name: r.resource_name.clone(),
            }
        })
        .collect();
    Reply::Now(ResponseBody::AlterConfigs(AlterConfigsResponse {
        responses,
        ..AlterConfigsResponse::default()
    }))
}

fn alter_one(
    ctx: &RequestContext<'_>,
    r: &AlterConfigsRequestAlterConfigsResource,
    validate_only: bool,
) -> Result<(), TopicError> {
    let broker = ctx.broker;
    let nulls: Vec<&str> = r
        .configs
        .iter()
        .filter(|c| c.value.is_none())
        .map(|c| c.name.as_str())
        .collect();
    check_keys(r.configs.iter().map(|c| c.name.as_str()), &nulls)?;
    let set: BTreeMap<String, String> = r
        .configs
        .iter()
        .filter_map(|c| c.value.as_ref().map(|v| (c.name.clone(), v.clone())))
        .collect();
    match r.resource_type {
        RESOURCE_TOPIC => {
            check_topic_name(&r.resource_name)?;
            let _guard = alter_guard(broker);
            apply_topic(broker, &r.resource_name, set, validate_only)
        }
        RESOURCE_BROKER => {
            let target = broker_target(&r.resource_name, broker.node_id(), false)?;
            let live = require_live(broker)?;
            let _guard = alter_guard(broker);
            let old = broker_layer(live, &target);
            let mut changed: Vec<(String, Option<String>)> = set
                .iter()
                .map(|(k, v)| (k.clone(), Some(v.clone())))
                .collect();
            // Keys dropped from the layer are changes too (a read-only key cannot be there).
            changed.extend(
                old.keys()
                    .filter(|k| !set.contains_key(*k))
                    .map(|k| (k.clone(), None)),
            );
            apply_broker(broker, live, &target, set, &changed, validate_only)
        }
        RESOURCE_GROUP => {
            check_group_name(&r.resource_name)?;
            let _guard = alter_guard(broker);
            apply_group(broker, &r.resource_name, set, validate_only)
        }
        other => Err(TopicError::new(
            ErrorCode::InvalidRequest,
            format!("Unknown resource type {other}"),
        )),
    }
}
